/*
 * pipeline.c - the OCR engine (lector.h): decode -> detect (DB) -> crop ->
 * classify (optional) -> recognise (CTC), as PaddleOCR's TextSystem does it.
 *
 * The engine owns three immutable models and the dictionary; every read
 * allocates its own buffers, so reads run concurrently on one engine.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "lector.h"
#include "lector_rt_image.h"
#include "ocr/ctc.h"
#include "ocr/db_post.h"
#include "ocr/letterbox.h"
#include "ocr/preprocess.h"
#include "util/testctl.h"
#include "util/util.h"

struct lector_engine {
    lector_params p;
    lector_model *det, *cls, *rec;
    lector_model *rec32; /* gpu_fp16 with gpu_fp16_recheck: the recogniser in fp32, for uncertain lines */
    int rec_argmax;      /* rec gives (argmax, max) per step (lector_model_load_file_argmax), not the probabilities */
    ocr_dict dict;
    char rec_path[4096], dict_path[4096]; /* named when the two do not match */
    char device[128];
    char fallback[560];    /* device auto on the CPU: why */
    char models_dir[4096]; /* p.models_dir points here once found (lector_find_models) */
    int on_gpu;
    /* On a GPU, from its free memory at the first recognition
     * (gpu_batch_limits): rows of a cls batch, and rows of a rec batch at the
     * base width rec_image_width (scaled down for wider batches); 0 on the
     * CPU, where PaddleOCR's cls_batch_num / rec_batch_num hold. */
    int gpu_cls_rows, gpu_rec_rows;
    atomic_int limits_known;
    pthread_mutex_t limits_lock;
};

lector_params lector_default_params(void)
{
    lector_params p;
    memset(&p, 0, sizeof p);
    p.device = LECTOR_DEVICE_CPU;
    p.det_limit_side_len = 960;
    p.det_batch_num = 1;
    p.det_limit_type = LECTOR_LIMIT_MAX;
    p.det_db_thresh = 0.3f;
    p.det_db_box_thresh = 0.6f;
    p.det_db_unclip_ratio = 1.5f;
    p.det_db_score_mode = LECTOR_SCORE_FAST;
    p.det_use_dilation = 0;
    p.det_max_candidates = 1000;
    p.det_min_size = 3;
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
    memcpy(p.det_mean, mean, sizeof mean);
    memcpy(p.det_std, stdv, sizeof stdv);
    p.use_angle_cls = 0;
    p.cls_thresh = 0.9f;
    p.cls_batch_num = 6;
    p.cls_image_height = 48;
    p.cls_image_width = 192;
    p.rec_batch_num = 6;
    p.rec_image_height = 48;
    p.rec_image_width = 320;
    p.drop_score = 0.5f;
    p.use_space_char = 1;
    p.max_pixels = 100000000;
    p.max_file_size = (int64_t)256 << 20;
    p.max_pages = 1000;
    p.use_det = 1;
    p.gpu_fp16_recheck = 0.9f;
    p.det_letterbox_min_height = 30;
    p.det_letterbox_ratio = 8.f;
    return p;
}

lector_read_options lector_default_read_options(void)
{
    lector_read_options o = {0, -1.f, -1, NULL, NULL};
    return o;
}

/* 1 when `backend` names a GPU (half precision is a GPU setting). */
static int gpu_backend(const char *backend)
{
    lector_device_spec spec;
    return backend && !lector_device_parse(backend, &spec, NULL) && spec.device == LECTOR_DEVICE_CUDA;
}

/* is_det: detection's half precision is its own switch (gpu_fp16_det): its
 * probability map meets a hard threshold, and fp16 moves boxes. */
static lector_status load_one(const lector_params *p, const char *backend, const char *override, const char *file,
                              int argmax, int is_det, int fp32, lector_model **out, lector_error *err)
{
    /* plan_cache_bytes: 45% det, 45% rec (halved between the two
     * recognisers of gpu_fp16_recheck), 10% cls */
    int recheck = backend && !strncmp(backend, "cuda", 4) && p->gpu_fp16 && p->gpu_fp16_recheck > 0;
    size_t share = is_det   ? p->plan_cache_bytes / 20 * 9
                   : argmax ? p->plan_cache_bytes / 20 * 9 / (recheck ? 2 : 1)
                            : p->plan_cache_bytes / 10;
    char path[4096];
    if (override)
        snprintf(path, sizeof path, "%s", override);
    else
        snprintf(path, sizeof path, "%s/%s", p->models_dir, file);
    lector_model_options mo = {.backend = backend,
                               .threads = p->threads,
                               .plan_cache_size = 32,
                               .plan_cache_bytes = share,
                               .gpu_mem_limit = p->gpu_mem_limit,
                               /* half precision is a GPU setting: the CPU fallback ignores it */
                               .fp16 = gpu_backend(backend) && p->gpu_fp16 && !fp32 && (!is_det || p->gpu_fp16_det)};
    /* the recogniser's argmax and max per step, not its probabilities */
    return argmax ? lector_model_load_file_argmax(path, &mo, out, err) : lector_model_load_file(path, &mo, out, err);
}

/* Loads the models on `backend`; on failure nothing stays loaded. */
static lector_status load_models(lector_engine *e, const char *backend, lector_error *err)
{
    const lector_params *p = &e->p;
    lector_status st;
    int recheck = gpu_backend(backend) && p->gpu_fp16 && p->gpu_fp16_recheck > 0;
    if ((p->use_det && (st = load_one(p, backend, p->det_model, LECTOR_DEFAULT_DET_MODEL, 0, 1, 0, &e->det, err))) ||
        (st = load_one(p, backend, p->rec_model, LECTOR_DEFAULT_REC_MODEL, 1, 0, 0, &e->rec, err)) ||
        (recheck && (st = load_one(p, backend, p->rec_model, LECTOR_DEFAULT_REC_MODEL, 1, 0, 1, &e->rec32, err))) ||
        (p->use_angle_cls &&
         (st = load_one(p, backend, p->cls_model, LECTOR_DEFAULT_CLS_MODEL, 0, 0, 0, &e->cls, err)))) {
        lector_model_free(e->det);
        lector_model_free(e->rec);
        lector_model_free(e->rec32);
        lector_model_free(e->cls);
        e->det = e->rec = e->rec32 = e->cls = NULL;
        return st;
    }
    /* a recogniser whose output declares no rank keeps its probabilities */
    const lector_value_info *o0 = lector_model_output(e->rec, 0), *o1 = lector_model_output(e->rec, 1);
    e->rec_argmax = o0 && o1 && o0->dtype == LECTOR_DTYPE_INT64 && o1->dtype == LECTOR_DTYPE_FLOAT32;
    return LECTOR_OK;
}

static lector_status check_params(const lector_params *p, lector_error *err)
{
#define REQUIRE(cond, what) \
    if (!(cond)) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "invalid parameter: %s", what)
    REQUIRE(p->det_limit_side_len >= 32 && p->det_limit_side_len <= 16384, "det_limit_side_len must be in [32, 16384]");
    REQUIRE(p->det_db_thresh >= 0 && p->det_db_thresh <= 1, "det_db_thresh must be in [0, 1]");
    REQUIRE(p->det_db_box_thresh >= 0 && p->det_db_box_thresh <= 1, "det_db_box_thresh must be in [0, 1]");
    REQUIRE(p->det_db_unclip_ratio > 0 && p->det_db_unclip_ratio < 100, "det_db_unclip_ratio must be in (0, 100)");
    REQUIRE(p->det_max_candidates > 0, "det_max_candidates must be > 0");
    REQUIRE(p->det_std[0] > 0 && p->det_std[1] > 0 && p->det_std[2] > 0, "det_std must be > 0");
    REQUIRE(p->det_min_size >= 0, "det_min_size must be >= 0");
    REQUIRE(p->cls_batch_num > 0 && p->rec_batch_num > 0, "batch sizes must be > 0");
    REQUIRE(p->rec_batch_num <= 64 && p->cls_batch_num <= 64, "batch sizes must be <= 64");
    REQUIRE(p->det_batch_num >= 1 && p->det_batch_num <= 64, "det_batch_num must be in [1, 64]");
    REQUIRE(p->cls_image_height > 0 && p->cls_image_width > 0, "cls image size must be > 0");
    REQUIRE(p->rec_image_height > 0 && p->rec_image_width > 0, "rec image size must be > 0");
    REQUIRE(p->threads >= 0 && p->threads <= 1024, "threads must be in [0, 1024]");
    REQUIRE(p->max_pixels > 0 && p->max_file_size > 0 && p->max_pages > 0, "limits must be > 0");
    REQUIRE(p->gpu_fp16_recheck >= 0 && p->gpu_fp16_recheck <= 1, "gpu_fp16_recheck must be in [0, 1]");
    REQUIRE(p->det_letterbox_min_height >= 0 && p->det_letterbox_min_height <= 65536,
            "det_letterbox_min_height must be in [0, 65536]");
    REQUIRE(p->det_letterbox_ratio >= 0 && p->det_letterbox_ratio <= 65536,
            "det_letterbox_ratio must be in [0, 65536]");
#undef REQUIRE
    return LECTOR_OK;
}

#define GPU_MAX_ROWS 64 /* the largest batch a run gets (as rec_batch_num's bound) */

/* Rows a batch of `per_row` bytes per row may take out of `avail`: a batch
 * takes at most 1/16 of the GPU's free memory (other workers and plans need
 * theirs), at least `floor` rows (PaddleOCR's batch), at most GPU_MAX_ROWS. */
static int rows_from_memory(size_t avail, size_t per_row, int floor)
{
    size_t rows = per_row ? avail / 16 / per_row : 0;
    if (rows > GPU_MAX_ROWS) rows = GPU_MAX_ROWS;
    return rows < (size_t)floor ? floor : (int)rows;
}

/* Rows a GPU batch of nb crops runs with: nb up to PaddleOCR's batch size
 * `floor`, above it the next power of two (at most `max`), the extra rows
 * zeros whose results are not read. Every row count is a plan (an arena,
 * CUDA graphs) per input width: a few counts keep the service's memory flat
 * where every count from 1 to 64 would keep compiling new plans. */
static int gpu_rows_bucket(int nb, int floor, int max)
{
    if (nb <= floor) return nb;
    int r = 1;
    while (r < nb) r *= 2;
    return r > max ? (max > nb ? max : nb) : r;
}

/* Batch sizes on a GPU, from its free memory and what one row of each model
 * needs (the activation arena of a one-row plan, which this compiles), found
 * once, by the first read that recognises text; a failure (the GPU out of
 * memory) is that read's and the next read tries again. A cls batch always
 * has the width cls_image_width, and the crops of a rec batch keep the batch
 * width PaddleOCR's batches of rec_batch_num give them (recognise), so larger
 * batches give every crop the same input row. */
static lector_status gpu_batch_limits(lector_engine *e, lector_error *err)
{
    if (!e->on_gpu || atomic_load_explicit(&e->limits_known, memory_order_acquire)) return LECTOR_OK;
    pthread_mutex_lock(&e->limits_lock);
    lector_status st = LECTOR_OK;
    if (!atomic_load_explicit(&e->limits_known, memory_order_relaxed)) {
        size_t avail = lector_model_gpu_available(e->rec), cls_row = 0, rec_row = 0;
        lector_tensor cin = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, e->p.cls_image_height, e->p.cls_image_width}, NULL};
        lector_tensor rin = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, e->p.rec_image_height, e->p.rec_image_width}, NULL};
        if (e->p.use_angle_cls) st = lector_model_arena_bytes(e->cls, &cin, 1, &cls_row, err);
        if (!st) st = lector_model_arena_bytes(e->rec, &rin, 1, &rec_row, err);
        if (!st) {
            e->gpu_cls_rows = rows_from_memory(avail, cls_row, e->p.cls_batch_num);
            e->gpu_rec_rows = rows_from_memory(avail, rec_row, e->p.rec_batch_num);
            lector__log(LECTOR_LOG_DEBUG,
                        "gpu: %zu MiB free; a row needs %zu KiB (cls), %zu KiB (rec): batches of up to %d (cls), "
                        "%d (rec)",
                        avail >> 20, cls_row >> 10, rec_row >> 10, e->gpu_cls_rows, e->gpu_rec_rows);
            atomic_store_explicit(&e->limits_known, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&e->limits_lock);
    return st;
}

lector_status lector_engine_create(const lector_params *params, lector_engine **out, lector_error *err)
{
    if (!params || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    lector_status st = check_params(params, err);
    if (st) return st;
    lector_engine *e = lector__calloc(1, sizeof *e);
    if (!e) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&e->limits_lock, NULL);
    e->p = *params;
    /* the directory is searched for only when a file is taken from it */
    if ((params->use_det && !params->det_model) || !params->rec_model || !params->rec_dict ||
        (params->use_angle_cls && !params->cls_model)) {
        if ((st = lector_find_models(params->models_dir, e->models_dir, sizeof e->models_dir, err))) {
            pthread_mutex_destroy(&e->limits_lock);
            lector__free(e);
            return st;
        }
        e->p.models_dir = e->models_dir;
    }
    if (params->device == LECTOR_DEVICE_CUDA || params->device == LECTOR_DEVICE_AUTO) {
        char gpu[32];
        snprintf(gpu, sizeof gpu, "cuda:%d", params->device_id);
        st = load_models(e, gpu, err);
        if (!st) {
            e->on_gpu = 1;
        } else if (params->device == LECTOR_DEVICE_CUDA) {
            pthread_mutex_destroy(&e->limits_lock);
            lector__free(e);
            return st;
        } else {
            snprintf(e->fallback, sizeof e->fallback, "%s", err ? err->message : lector_status_str(st));
        }
    }
    if (!e->on_gpu && (st = load_models(e, params->backend, err))) {
        lector_engine_free(e);
        return st;
    }
    char *dict_path = e->dict_path;
    if (params->rec_dict)
        snprintf(dict_path, sizeof e->dict_path, "%s", params->rec_dict);
    else
        snprintf(dict_path, sizeof e->dict_path, "%s/%s", e->p.models_dir, LECTOR_DEFAULT_REC_DICT);
    if (params->rec_model)
        snprintf(e->rec_path, sizeof e->rec_path, "%s", params->rec_model);
    else
        snprintf(e->rec_path, sizeof e->rec_path, "%s/%s", e->p.models_dir, LECTOR_DEFAULT_REC_MODEL);
    if ((st = ocr_dict_load(dict_path, params->use_space_char, &e->dict, err))) {
        lector_engine_free(e);
        return st;
    }
    if (e->on_gpu) {
        snprintf(e->device, sizeof e->device, "cuda:%d%s", params->device_id,
                 !params->gpu_fp16      ? ""
                 : params->gpu_fp16_det ? " (fp16)"
                                        : " (fp16 rec/cls)");
    } else {
        snprintf(e->device, sizeof e->device, "cpu (%s, %d threads)", lector_model_backend(e->rec),
                 params->threads > 0 ? params->threads : lector__physical_cores());
        if (*e->fallback) lector__log(LECTOR_LOG_INFO, "device auto: running on the CPU: %s", e->fallback);
    }
    *out = e;
    return LECTOR_OK;
}

void lector_engine_free(lector_engine *e)
{
    if (!e) return;
    lector_model_free(e->det);
    lector_model_free(e->cls);
    lector_model_free(e->rec);
    lector_model_free(e->rec32);
    ocr_dict_free(&e->dict);
    pthread_mutex_destroy(&e->limits_lock);
    lector__free(e);
}

const char *lector_engine_device(const lector_engine *e) { return e ? e->device : ""; }

const char *lector_engine_fallback_reason(const lector_engine *e) { return e ? e->fallback : ""; }

int lector_engine_on_gpu(const lector_engine *e) { return e ? e->on_gpu : 0; }

void lector_engine_gpu_memory(const lector_engine *e, size_t *used, size_t *limit)
{
    *used = *limit = 0;
    if (e && e->on_gpu) lector_model_gpu_memory(e->rec, used, limit); /* one count per GPU */
}

size_t lector_engine_cache_bytes(const lector_engine *e)
{
    if (!e) return 0;
    return lector_model_cache_bytes(e->det) + lector_model_cache_bytes(e->cls) + lector_model_cache_bytes(e->rec) +
           lector_model_cache_bytes(e->rec32);
}

void lector_engine_trim(lector_engine *e)
{
    if (!e) return;
    lector_model_trim(e->det);
    lector_model_trim(e->cls);
    lector_model_trim(e->rec);
    lector_model_trim(e->rec32);
}

/* ---- one page ----------------------------------------------------------------- */

typedef struct crop {
    img_image img; /* on the CPU path; empty where the device crops (on_device) */
    int w, h;      /* the crop as cls and rec see it (after the quarter turn of tall boxes) */
    float ratio;   /* width / height */
    /* on_device: the crop is made on the GPU from the page's bytes with these */
    int on_device;
    const img_image *page;
    double warp[9];
    int warp_w, warp_h, turns; /* lector_image_input.turns: bit 0 tall box, bit 1 the classifier's 180 */
    int rotated;
    int skip; /* the box could not be cropped */
    char *text;
    float score;
    int bw;  /* lector_read_batch: the rec batch width this crop gets when its page is read alone */
    int seq; /* lector_read_batch: position over all crops of the batch (stable sort) */
} crop;

/* ---- errors that are not the image's, and cancellation ---------------------- */

/* Prefixes an error of a read with the image's name, unless the image is not
 * to blame: a model that gives NaN or does not fit its dictionary
 * (LECTOR_ERR_INVALID_MODEL, its message names the model) or a read the
 * caller cancelled. */
static void blame_image(lector_status st, lector_error *err, const char *name)
{
    if (st == LECTOR_ERR_INVALID_MODEL || st == LECTOR_ERR_CANCELLED) return;
    lector__error_prefix(err, "%s", name ? name : "image");
}

static int cancelled(const lector_read_options *o) { return o && o->cancel && o->cancel(o->cancel_user); }

static lector_status cancel_error(lector_error *err)
{
    return lector__error(err, LECTOR_ERR_CANCELLED, "the read was cancelled by its caller");
}

/* 1 when any of n floats is NaN: a model with broken weights (or a broken
 * backend) gives NaN everywhere, and NaN would silently read as no text. */
static int has_nan(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] != v[i]) return 1;
    return 0;
}

static lector_status nan_error(lector_error *err, const char *what, const lector_engine *e)
{
    return lector__error(err, LECTOR_ERR_INVALID_MODEL,
                         "the %s model produced NaN (not a number): its weights are broken, or the backend (%s) is",
                         what, e->device);
}

static lector_status run_model1(lector_model *m, float *data, int64_t n, int64_t c, int64_t h, int64_t w,
                                lector_tensor **out, size_t *n_out, lector_error *err)
{
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {n, c, h, w}, data};
    size_t k;
    return lector_model_run(m, &in, 1, out, n_out ? n_out : &k, err);
}

/* DB post-processing of one probability map (ph x pw) into sorted boxes. */
static lector_status det_post(lector_engine *e, const img_image *img, const float *prob, int ph, int pw,
                              ocr_box **boxes, int *n_boxes, lector_error *err)
{
    ocr_db_params dp = {e->p.det_db_thresh,       e->p.det_db_box_thresh,
                        e->p.det_db_unclip_ratio, e->p.det_db_score_mode == LECTOR_SCORE_SLOW,
                        e->p.det_use_dilation,    e->p.det_max_candidates,
                        e->p.det_min_size};
    lector_status st = ocr_db_postprocess(prob, pw, ph, img->width, img->height, &dp, boxes, n_boxes, err);
    if (!st) ocr_sort_boxes(*boxes, *n_boxes);
    return st;
}

/* On a GPU the models' inputs are made there from the pages' bytes, with the
 * CPU path's own tables, so that they are the CPU's bit for bit: detection's
 * resize and normalisation (lector_model_run_image), and the crops' warp,
 * turns, resize and normalisation for cls and rec (lector_model_run_images).
 * LECTOR_GPU_PREPROCESS=0 makes them on the CPU, as before. */
static int gpu_preprocess(void) { return lector__tc_flag(LECTOR__TC_GPU_PREPROCESS, 1); }

/* get_rotate_crop_image's size and corners of box b */
static void crop_geometry(const ocr_box *b, float quad[4][2], int *cw, int *ch)
{
    const ocr_pt *p = b->p;
    int w = (int)fmax(hypot(p[0].x - p[1].x, p[0].y - p[1].y), hypot(p[2].x - p[3].x, p[2].y - p[3].y));
    int h = (int)fmax(hypot(p[0].x - p[3].x, p[0].y - p[3].y), hypot(p[1].x - p[2].x, p[1].y - p[2].y));
    *cw = w < 1 ? 1 : w;
    *ch = h < 1 ? 1 : h;
    for (int i = 0; i < 4; i++) {
        quad[i][0] = p[i].x;
        quad[i][1] = p[i].y;
    }
}

/* get_rotate_crop_image: the warp, and a quarter turn for a tall crop */
static lector_status crop_box(const img_image *img, const ocr_box *b, img_image *out, lector_error *err)
{
    float quad[4][2];
    int w, h;
    crop_geometry(b, quad, &w, &h);
    img_image warped;
    lector_status st = img_warp_quad(img, quad, w, h, &warped, err);
    if (st) return st;
    if ((double)warped.height / warped.width >= 1.5) {
        st = img_rotate90_ccw(&warped, out, err);
        img_release(&warped);
        return st;
    }
    *out = warped;
    return LECTOR_OK;
}

/* crop_box's crop described for the device (made there by cls/rec's input):
 * its warp matrix and turn; LECTOR_ERR_INVALID_ARGUMENT for a degenerate box,
 * as img_warp_quad reports it. */
static lector_status crop_box_device(const img_image *img, const ocr_box *b, crop *c, lector_error *err)
{
    float quad[4][2];
    crop_geometry(b, quad, &c->warp_w, &c->warp_h);
    if (img_warp_quad_matrix(quad, c->warp_w, c->warp_h, c->warp) != 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "warp: degenerate quadrilateral");
    c->on_device = 1;
    c->page = img;
    c->turns = (double)c->warp_h / c->warp_w >= 1.5;
    c->w = c->turns ? c->warp_h : c->warp_w;
    c->h = c->turns ? c->warp_w : c->warp_h;
    return LECTOR_OK;
}

/* Crops made on the GPU: cls/rec's input rows come from the page's bytes
 * (lector_model_run_images) on the same switch as detection's input. */
static int device_crops(const lector_engine *e)
{
    return e->on_gpu && gpu_preprocess() && lector_model_takes_images(e->rec) &&
           (!e->cls || lector_model_takes_images(e->cls));
}

/* Runs cls or rec model m on nb crops in a tensor of `rows` rows (the extra
 * rows zeros) of height img_h and width tw: resize_norm_img of each crop,
 * made on the device from the pages' bytes for crops there
 * (lector_model_run_images), else here. */
static lector_status run_lines(lector_model *m, crop *const *cr, int nb, int rows, int img_h, int tw,
                               lector_tensor **out, size_t *n_out, lector_error *err)
{
    lector_status st = LECTOR_OK;
    if (!cr[0]->on_device) {
        float *batch = lector__calloc((size_t)rows * 3 * img_h * tw, sizeof(float));
        if (!batch) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (a batch of %d lines)", rows);
        for (int k = 0; k < nb && !st; k++) st = ocr_rec_preprocess(&cr[k]->img, img_h, tw, batch, k, err);
        if (!st) st = run_model1(m, batch, rows, 3, img_h, tw, out, n_out, err);
        lector__free(batch);
        return st;
    }
    ocr_input_tables *t = lector__calloc((size_t)nb, sizeof *t);
    lector_image_input *in = lector__calloc((size_t)nb, sizeof *in);
    if (!t || !in) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (a batch of %d lines)", rows);
    for (int k = 0; k < nb && !st; k++)
        st = ocr_line_image_input(cr[k]->page, cr[k]->warp, cr[k]->warp_w, cr[k]->warp_h, cr[k]->turns, img_h, tw,
                                  &t[k], &in[k], err);
    if (!st) st = lector_model_run_images(m, in, (size_t)nb, (size_t)rows, tw, out, n_out, err);
    for (int k = 0; t && k < nb; k++) ocr_input_tables_free(&t[k]);
    lector__free(t);
    lector__free(in);
    return st;
}

static int cmp_ratio(const void *a, const void *b)
{
    const crop *const *x = a, *const *y = b;
    if ((*x)->ratio != (*y)->ratio) return (*x)->ratio < (*y)->ratio ? -1 : 1;
    return *x < *y ? -1 : *x > *y; /* stable: by position */
}

static int cmp_ratio_seq(const void *a, const void *b)
{
    const crop *const *x = a, *const *y = b;
    if ((*x)->ratio != (*y)->ratio) return (*x)->ratio < (*y)->ratio ? -1 : 1;
    return ((*x)->seq > (*y)->seq) - ((*x)->seq < (*y)->seq);
}

/* lector_read_batch's rec order: by the page-alone batch width, then ratio */
static int cmp_bw_ratio_seq(const void *a, const void *b)
{
    const crop *const *x = a, *const *y = b;
    if ((*x)->bw != (*y)->bw) return (*x)->bw < (*y)->bw ? -1 : 1;
    return cmp_ratio_seq(a, b);
}

/* `order`: n crops, sorted here by aspect ratio (cmp: NULL = cmp_ratio) */
static lector_status classify(lector_engine *e, crop **order, int n, int (*cmp)(const void *, const void *),
                              lector_error *err)
{
    lector_status st = gpu_batch_limits(e, err);
    if (st) return st;
    int ih = e->p.cls_image_height, iw = e->p.cls_image_width;
    int bs = e->gpu_cls_rows > e->p.cls_batch_num ? e->gpu_cls_rows : e->p.cls_batch_num;
    qsort(order, (size_t)n, sizeof *order, cmp ? cmp : cmp_ratio);
    for (int b0 = 0; b0 < n && !st; b0 += bs) {
        int nb = n - b0 < bs ? n - b0 : bs, rows = gpu_rows_bucket(nb, e->p.cls_batch_num, bs);
        lector_tensor *out = NULL;
        size_t n_out = 0;
        if ((st = run_lines(e->cls, order + b0, nb, rows, ih, iw, &out, &n_out, err))) break;
        int64_t nc = out[0].dims[out[0].ndim - 1];
        const float *pr = out[0].data;
        for (int k = 0; k < nb; k++) {
            const float *row = pr + (size_t)k * nc;
            int lab = nc > 1 && row[1] > row[0] ? 1 : 0; /* labels ['0', '180'] */
            if (lab == 1 && row[1] > e->p.cls_thresh) {
                crop *cr = order[b0 + k];
                cr->rotated = 1;
                if (cr->on_device) {
                    cr->turns |= 2;
                    continue;
                }
                img_image r;
                if ((st = img_rotate180(&cr->img, &r, err))) break;
                img_release(&cr->img);
                cr->img = r;
            }
        }
        lector_tensors_free(out, n_out);
    }
    return st;
}

/* The rec batch width of every crop of one page read alone (PaddleOCR's
 * rule: sorted by ratio, batches of rec_batch_num, the widest crop of a
 * batch sets its width) into crop->bw. Sorts `order`. */
static void page_batch_widths(lector_engine *e, crop **order, int n)
{
    int ih = e->p.rec_image_height, iw = e->p.rec_image_width, bs = e->p.rec_batch_num;
    qsort(order, (size_t)n, sizeof *order, cmp_ratio);
    for (int b0 = 0; b0 < n; b0 += bs) {
        int nb = n - b0 < bs ? n - b0 : bs;
        int ws[64], hs[64];
        for (int k = 0; k < nb; k++) {
            ws[k] = order[b0 + k]->w;
            hs[k] = order[b0 + k]->h;
        }
        int bw = ocr_rec_batch_width(ws, hs, nb, ih, iw);
        for (int k = 0; k < nb; k++) order[b0 + k]->bw = bw;
    }
}

/* by page-alone batch width, then ratio, then position (one page) */
static int cmp_bw_ratio(const void *a, const void *b)
{
    const crop *const *x = a, *const *y = b;
    if ((*x)->bw != (*y)->bw) return (*x)->bw < (*y)->bw ? -1 : 1;
    return cmp_ratio(a, b);
}

/* Rows of a rec batch of width bw. */
static int rec_rows(const lector_engine *e, int bw)
{
    int bs = e->p.rec_batch_num;
    if (e->gpu_rec_rows > bs) { /* a GPU: as many rows as its memory takes at this width */
        int64_t r = (int64_t)e->gpu_rec_rows * e->p.rec_image_width / (bw > 0 ? bw : 1);
        if (r > bs) bs = r > GPU_MAX_ROWS ? GPU_MAX_ROWS : (int)r;
    }
    return bs;
}

/* One rec batch: nb crops at width bw, in a tensor of `rows` rows (the
 * extra rows zeros), through model m; each crop's text and score replaced. */
static lector_status rec_batch(lector_engine *e, lector_model *m, crop **cr, int nb, int rows, int bw,
                               lector_error *err)
{
    lector_tensor *out = NULL;
    size_t n_out = 0;
    lector_status st = run_lines(m, cr, nb, rows, e->p.rec_image_height, bw, &out, &n_out, err);
    if (st) return st;
    /* lector_model_load_file_argmax: [N,T] class of the maximum (int64) and [N,T] maximum,
     * of the [N,T,C] probabilities; else the probabilities themselves */
    int rank = e->rec_argmax ? out[0].ndim + 1 : out[0].ndim;
    if (rank != 3 || (e->rec_argmax && (n_out < 2 || out[1].ndim != 2 || out[1].dims[1] != out[0].dims[1]))) {
        lector_tensors_free(out, n_out);
        return lector__error(err, LECTOR_ERR_SHAPE, "recognition output has rank %d, expected 3", rank);
    }
    int T = (int)out[0].dims[1], C = e->rec_argmax ? 0 : (int)out[0].dims[2];
    const lector_tensor *probs = e->rec_argmax ? &out[1] : &out[0];
    if (has_nan(probs->data, (size_t)lector_tensor_numel(probs))) {
        lector_tensors_free(out, n_out);
        return nan_error(err, "recognition", e);
    }
    for (int k = 0; k < nb && !st; k++) {
        lector__free(cr[k]->text);
        cr[k]->text = NULL;
        if (e->rec_argmax) /* the number of classes is not known: every index is checked */
            st = ocr_ctc_decode_argmax((const int64_t *)out[0].data + (size_t)k * T,
                                       (const float *)out[1].data + (size_t)k * T, T, C, &e->dict, &cr[k]->text,
                                       &cr[k]->score, err);
        else
            st = ocr_ctc_decode((const float *)out[0].data + (size_t)k * T * C, T, C, &e->dict, &cr[k]->text,
                                &cr[k]->score, err);
    }
    lector_tensors_free(out, n_out);
    if (st == LECTOR_ERR_SHAPE) { /* the classes do not fit the dictionary: not the image's fault */
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err ? err->message : "");
        st = lector__error(err, LECTOR_ERR_INVALID_MODEL, "%s and %s do not match: %s", e->rec_path, e->dict_path, why);
    }
    return st;
}

/* `order`: n crops, sorted here. by_bw = 0: PaddleOCR's batches (one page).
 * by_bw = 1 (lector_read_batch): crops sorted by crop->bw then ratio, a batch
 * never mixes two widths and has crop->bw as its width, so every crop gets
 * exactly the input tensor row it gets when its page is read alone. On a GPU
 * a page read alone goes the same way (its crop->bw from PaddleOCR's
 * batches), so that its batches can be larger than rec_batch_num. */
static lector_status recognise(lector_engine *e, crop **order, int n, int by_bw, lector_error *err)
{
    lector_status st = gpu_batch_limits(e, err);
    if (st) return st;
    int ih = e->p.rec_image_height, iw = e->p.rec_image_width;
    int (*cmp)(const void *, const void *) = by_bw ? cmp_bw_ratio_seq : cmp_ratio;
    if (!by_bw && e->gpu_rec_rows > e->p.rec_batch_num) {
        page_batch_widths(e, order, n);
        by_bw = 1;
        cmp = cmp_bw_ratio;
    }
    qsort(order, (size_t)n, sizeof *order, cmp);
    for (int b0 = 0, nb = 0; b0 < n && !st; b0 += nb) {
        int bs = by_bw ? rec_rows(e, order[b0]->bw) : e->p.rec_batch_num;
        nb = n - b0 < bs ? n - b0 : bs;
        if (by_bw)
            for (int k = 1; k < nb; k++)
                if (order[b0 + k]->bw != order[b0]->bw) {
                    nb = k;
                    break;
                }
        int ws[GPU_MAX_ROWS], hs[GPU_MAX_ROWS];
        for (int k = 0; k < nb; k++) {
            ws[k] = order[b0 + k]->w;
            hs[k] = order[b0 + k]->h;
        }
        int bw = by_bw ? order[b0]->bw : ocr_rec_batch_width(ws, hs, nb, ih, iw);
        int rows = by_bw ? gpu_rows_bucket(nb, e->p.rec_batch_num, bs) : nb; /* the extra rows stay zeros */
        if ((st = rec_batch(e, e->rec, order + b0, nb, rows, bw, err))) break;
        if (!e->rec32) continue;
        crop *again[GPU_MAX_ROWS]; /* uncertain in half precision: once more in fp32 */
        int na = 0;
        for (int k = 0; k < nb; k++)
            if (order[b0 + k]->score < e->p.gpu_fp16_recheck) again[na++] = order[b0 + k];
        if (na) st = rec_batch(e, e->rec32, again, na, gpu_rows_bucket(na, e->p.rec_batch_num, bs), bw, err);
    }
    return st;
}

/* One page between detection and recognition. */
/* A page's detection done ahead, in a batch with pages of the same input
 * size (lector_read_batch with det_batch_num > 1). */
typedef struct det_pre {
    ocr_det_input di;
    ocr_input_tables tab; /* on_device: the input made on the GPU from the page's bytes (im) */
    lector_image_input im;
    img_image letterbox; /* the page with black bands, when it gets them (ocr/letterbox.h) */
    int pad_rows;
    int on_device;
    int have_input;
    ocr_box *boxes;
    int nb;
    lector_status st;
    lector_error err;
    double ms;
} det_pre;

static void detect_pages(lector_engine *e, const img_image *const *imgs, int n, int limit, det_pre *pre);

/* One page's detection: detect_pages of one page. */
static lector_status detect(lector_engine *e, const img_image *img, int limit, ocr_box **boxes, int *n_boxes,
                            lector_error *err)
{
    det_pre d;
    memset(&d, 0, sizeof d);
    detect_pages(e, &img, 1, limit, &d);
    if (d.st) {
        if (err) *err = d.err;
        lector__free(d.boxes);
        return d.st;
    }
    *boxes = d.boxes;
    *n_boxes = d.nb;
    return LECTOR_OK;
}

typedef struct page_work {
    ocr_box *boxes;
    crop *c;
    int nb;
    float drop;
    int use_cls;
} page_work;

static void page_work_free(page_work *w)
{
    for (int i = 0; w->c && i < w->nb; i++) {
        img_release(&w->c[i].img);
        lector__free(w->c[i].text);
    }
    lector__free(w->c);
    lector__free(w->boxes);
    memset(w, 0, sizeof *w);
}

/* Detects and crops: w->c holds the valid crops (w->nb). On error w is empty. */
static lector_status page_prep(lector_engine *e, const img_image *img, const lector_read_options *o, det_pre *pre,
                               page_work *w, lector_timings *tm, lector_error *err)
{
    memset(w, 0, sizeof *w);
    int limit = o && o->det_limit_side_len > 0 ? o->det_limit_side_len : e->p.det_limit_side_len;
    w->drop = o && o->drop_score >= 0 ? o->drop_score : e->p.drop_score;
    w->use_cls = o && o->use_angle_cls >= 0 ? o->use_angle_cls : e->p.use_angle_cls;
    if (w->use_cls && !e->cls)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                             "the angle classifier was not loaded (create the engine with use_angle_cls=1)");
    double t0 = lector__now_ms();
    ocr_box *boxes = NULL;
    int nb = 0;
    lector_status st;
    if (pre) { /* detected in a batch: take its boxes */
        st = pre->st;
        if (st && err) *err = pre->err;
        boxes = pre->boxes;
        nb = pre->nb;
        pre->boxes = NULL;
        tm->det_ms += pre->ms;
    } else if (e->p.use_det) {
        st = detect(e, img, limit, &boxes, &nb, err);
    } else { /* the whole image is one line */
        boxes = lector__calloc(1, sizeof *boxes);
        if (!boxes) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        boxes[0].p[1].x = boxes[0].p[2].x = (float)img->width;
        boxes[0].p[2].y = boxes[0].p[3].y = (float)img->height;
        nb = 1;
        st = LECTOR_OK;
    }
    double t1 = lector__now_ms();
    tm->det_ms += t1 - t0;
    if (st) return st;
    crop *c = lector__calloc((size_t)(nb ? nb : 1), sizeof *c);
    if (!c) {
        lector__free(boxes);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int dev = e->p.use_det && device_crops(e);
    for (int i = 0; i < nb && !st; i++) {
        if (!e->p.use_det) { /* no crop: a copy of the page */
            st = img_alloc(&c[i].img, img->width, img->height, img->channels, err);
            for (int y = 0; !st && y < img->height; y++)
                memcpy(c[i].img.data + (size_t)y * c[i].img.stride, img->data + (size_t)y * img->stride,
                       (size_t)img->width * img->channels);
        } else {
            st = dev ? crop_box_device(img, &boxes[i], &c[i], err) : crop_box(img, &boxes[i], &c[i].img, err);
            if (st && st != LECTOR_ERR_OUT_OF_MEMORY) {
                /* a degenerate box (two corners equal: PaddleOCR's corner
                 * ordering can do that on small boxes at 45 degrees) gives
                 * no line, as OpenCV's blank crop does; the page goes on */
                lector__log(LECTOR_LOG_DEBUG, "box %d skipped: %s", i, err ? err->message : "");
                memset(&c[i], 0, sizeof c[i]);
                c[i].skip = 1;
                st = LECTOR_OK;
                continue;
            }
        }
        if (!st && !c[i].on_device) c[i].w = c[i].img.width, c[i].h = c[i].img.height;
        if (!st) c[i].ratio = (float)c[i].w / (float)c[i].h;
    }
    w->boxes = boxes;
    w->c = c;
    w->nb = nb;
    if (st) {
        page_work_free(w);
        return st;
    }
    /* drop skipped boxes: cls and rec see valid crops only */
    int k = 0;
    for (int i = 0; i < nb; i++) {
        if (c[i].skip) continue;
        c[k] = c[i];
        boxes[k] = boxes[i];
        k++;
    }
    w->nb = k;
    tm->rec_ms += lector__now_ms() - t1; /* cropping counts as recognition, as before */
    return LECTOR_OK;
}

/* Moves the recognised lines into `page` and frees w. */
static lector_status page_finish(page_work *w, const img_image *img, lector_page *page, lector_error *err)
{
    lector_status st = LECTOR_OK;
    page->width = img->width;
    page->height = img->height;
    page->lines = lector__calloc((size_t)(w->nb ? w->nb : 1), sizeof *page->lines);
    if (!page->lines) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < w->nb && !st; i++) {
        crop *c = &w->c[i];
        if (!c->text || c->score < w->drop) continue;
        lector_line *l = &page->lines[page->n_lines++];
        for (int k = 0; k < 4; k++) {
            l->box[k].x = w->boxes[i].p[k].x;
            l->box[k].y = w->boxes[i].p[k].y;
        }
        l->text = c->text;
        c->text = NULL;
        l->score = c->score;
        l->rotated = c->rotated;
    }
    page_work_free(w);
    return st;
}

static lector_status ocr_page(lector_engine *e, const img_image *img, const lector_read_options *o, lector_page *page,
                              lector_timings *tm, lector_error *err)
{
    page->width = img->width;
    page->height = img->height;
    page_work w;
    lector_status st = page_prep(e, img, o, NULL, &w, tm, err);
    if (st) return st;
    crop **order = lector__malloc(sizeof *order * (size_t)(w.nb ? w.nb : 1));
    if (!order) {
        page_work_free(&w);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < w.nb; i++) order[i] = &w.c[i];
    double t2 = lector__now_ms();
    if (w.nb && cancelled(o)) st = cancel_error(err);
    if (!st && w.use_cls && w.nb) st = classify(e, order, w.nb, NULL, err);
    double t3 = lector__now_ms();
    tm->cls_ms += t3 - t2;
    if (!st && w.nb && w.use_cls && cancelled(o)) st = cancel_error(err);
    if (!st && w.nb) st = recognise(e, order, w.nb, 0, err);
    tm->rec_ms += lector__now_ms() - t3;
    lector__free(order);
    if (st) {
        page_work_free(&w);
        return st;
    }
    return page_finish(&w, img, page, err);
}

void lector_result_free(lector_result *r)
{
    if (!r) return;
    for (size_t p = 0; p < r->n_pages; p++) {
        for (size_t i = 0; i < r->pages[p].n_lines; i++) lector__free(r->pages[p].lines[i].text);
        lector__free(r->pages[p].lines);
    }
    lector__free(r->pages);
    lector__free(r);
}

static void limits_of(const lector_engine *e, img_limits *l)
{
    img_limits_default(l);
    l->max_pixels = (uint64_t)e->p.max_pixels;
    l->max_file_size = (size_t)e->p.max_file_size;
    l->max_pages = e->p.max_pages;
}

static lector_status run_pages(lector_engine *e, img_image *pages, int n, double decode_ms, double t_start,
                               const lector_read_options *o, const char *name, lector_result **out, lector_error *err)
{
    lector_result *r = lector__calloc(1, sizeof *r);
    if (!r) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    r->pages = lector__calloc((size_t)(n ? n : 1), sizeof *r->pages);
    if (!r->pages) {
        lector__free(r);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    r->timings.decode_ms = decode_ms;
    lector_status st = LECTOR_OK;
    for (int i = 0; i < n && !st; i++) {
        st = cancelled(o) ? cancel_error(err) : ocr_page(e, &pages[i], o, &r->pages[i], &r->timings, err);
        r->n_pages = (size_t)i + 1;
    }
    if (st) {
        blame_image(st, err, name);
        lector_result_free(r);
        return st;
    }
    r->timings.total_ms = lector__now_ms() - t_start;
    *out = r;
    return LECTOR_OK;
}

lector_status lector_read_memory(lector_engine *e, const void *data, size_t size, const char *name,
                                 const lector_read_options *o, lector_result **out, lector_error *err)
{
    if (!e || !out || (!data && size)) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    double t0 = lector__now_ms();
    img_limits lim;
    limits_of(e, &lim);
    img_pages pages;
    lector_status st = img_decode(data, size, name, &lim, &pages, err);
    if (st) return st;
    st = run_pages(e, pages.pages, pages.count, lector__now_ms() - t0, t0, o, name, out, err);
    img_pages_free(&pages);
    return st;
}

lector_status lector_read_file(lector_engine *e, const char *path, const lector_read_options *o, lector_result **out,
                               lector_error *err)
{
    if (!e || !path || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    double t0 = lector__now_ms();
    img_limits lim;
    limits_of(e, &lim);
    img_pages pages;
    lector_status st = img_decode_file(path, &lim, &pages, err);
    if (st) return st;
    st = run_pages(e, pages.pages, pages.count, lector__now_ms() - t0, t0, o, path, out, err);
    img_pages_free(&pages);
    return st;
}

lector_status lector_read_pixels(lector_engine *e, const uint8_t *px, int width, int height, size_t stride,
                                 lector_pixel_format format, const lector_read_options *o, lector_result **out,
                                 lector_error *err)
{
    if (!e || !px || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    double t0 = lector__now_ms();
    img_limits lim;
    limits_of(e, &lim);
    img_image img;
    lector_status st = img_from_pixels(px, width, height, stride, format, "pixels", &lim, &img, err);
    if (st) return st;
    st = run_pages(e, &img, 1, lector__now_ms() - t0, t0, o, "pixels", out, err);
    img_release(&img);
    return st;
}

/* ---- several images in one call -------------------------------------------------- */

/* Detection of many pages: each page preprocessed as PaddleOCR does (on a
 * GPU the input is made there from the page's bytes); pages whose det input
 * has the same size run through the model together, up to det_batch_num at a
 * time; then DB post-processing per page. */
static void det_pre_free_input(det_pre *d)
{
    if (d->on_device)
        ocr_input_tables_free(&d->tab);
    else
        ocr_det_input_free(&d->di);
    img_release(&d->letterbox);
    d->have_input = 0;
}

static void detect_pages(lector_engine *e, const img_image *const *imgs, int n, int limit, det_pre *pre)
{
    int dev = e->on_gpu && gpu_preprocess() && lector_model_takes_images(e->det);
    ocr_det_limit_type lt = (ocr_det_limit_type)e->p.det_limit_type;
    for (int k = 0; k < n; k++) {
        lector_error e2;
        det_pre *d = &pre[k];
        const img_image *src = imgs[k];
        d->pad_rows = ocr_letterbox_rows(src->width, src->height, e->p.det_letterbox_min_height,
                                         e->p.det_letterbox_ratio, e->p.max_pixels);
        if (d->pad_rows && (d->st = ocr_letterbox_pad(src, d->pad_rows, &d->letterbox, &d->err))) continue;
        if (d->pad_rows) src = &d->letterbox;
        /* on the GPU the page goes up as bytes (a tiny page, padded first, as pixels on the CPU) */
        d->on_device = dev && !ocr_det_image_input(src, limit, lt, e->p.det_mean, e->p.det_std, &d->tab, &d->im, &e2);
        if (d->on_device) {
            d->di.height = d->im.out_height;
            d->di.width = d->im.out_width;
            d->st = LECTOR_OK;
        } else {
            d->st = ocr_det_preprocess_norm(src, limit, lt, e->p.det_mean, e->p.det_std, &d->di, &d->err);
        }
        d->have_input = d->st == LECTOR_OK;
        if (!d->have_input) img_release(&d->letterbox);
    }
    int max_b = e->p.det_batch_num > 0 ? e->p.det_batch_num : 1, runs = 0;
    int *grp = lector__malloc(sizeof *grp * (size_t)(max_b + 1));
    lector_image_input *rows = lector__malloc(sizeof *rows * (size_t)(max_b + 1));
    for (int k = 0; k < n; k++) {
        if (!pre[k].have_input) continue;
        int h = pre[k].di.height, w = pre[k].di.width, on = pre[k].on_device, g = 0;
        if (!grp || !rows) {
            pre[k].st = lector__error(&pre[k].err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
            det_pre_free_input(&pre[k]);
            continue;
        }
        for (int j = k; j < n && g < max_b; j++)
            if (pre[j].have_input && pre[j].on_device == on && pre[j].di.height == h && pre[j].di.width == w)
                grp[g++] = j;
        double t0 = lector__now_ms();
        size_t plane = (size_t)h * (size_t)w, one = 3 * plane;
        lector_status st = LECTOR_OK;
        lector_error err;
        memset(&err, 0, sizeof err);
        lector_tensor *out = NULL;
        size_t n_out = 0;
        if (on) {
            for (int q = 0; q < g; q++) rows[q] = pre[grp[q]].im;
            st = lector_model_run_images(e->det, rows, (size_t)g, (size_t)g, w, &out, &n_out, &err);
        } else {
            float *data = pre[k].di.data;
            if (g > 1) {
                data = lector__malloc(sizeof(float) * one * (size_t)g);
                if (!data) st = lector__error(&err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
                for (int q = 0; data && q < g; q++)
                    memcpy(data + one * (size_t)q, pre[grp[q]].di.data, sizeof(float) * one);
            }
            if (!st) st = run_model1(e->det, data, g, 3, h, w, &out, &n_out, &err);
            if (g > 1) lector__free(data);
        }
        runs++;
        if (!st && has_nan(out[0].data, (size_t)lector_tensor_numel(&out[0]))) st = nan_error(&err, "detection", e);
        double ms = (lector__now_ms() - t0) / g;
        for (int q = 0; q < g; q++) {
            det_pre *d = &pre[grp[q]];
            double tq = lector__now_ms();
            d->st = st;
            if (st)
                d->err = err;
            else {
                int ph = (int)out[0].dims[out[0].ndim - 2], pw = (int)out[0].dims[out[0].ndim - 1];
                d->st = det_post(e, d->pad_rows ? &d->letterbox : imgs[grp[q]],
                                 (const float *)out[0].data + (size_t)q * (size_t)ph * (size_t)pw, ph, pw, &d->boxes,
                                 &d->nb, &d->err);
                if (!d->st)
                    ocr_letterbox_unpad(d->boxes, &d->nb, d->pad_rows, imgs[grp[q]]->width, imgs[grp[q]]->height);
            }
            d->ms = ms + (lector__now_ms() - tq);
            det_pre_free_input(d);
        }
        if (out) lector_tensors_free(out, n_out);
    }
    lector__free(grp);
    lector__free(rows);
    if (n > 1) lector__log(LECTOR_LOG_DEBUG, "det: %d pages in %d model runs (det_batch_num %d)", n, runs, max_b);
}

lector_status lector_read_batch(lector_engine *e, const lector_batch_input *inputs, size_t n,
                                const lector_read_options *o, lector_result **results, lector_status *statuses,
                                lector_error *errs)
{
    if (!e || (n && (!inputs || !results || !statuses)))
        return lector__error(errs, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    for (size_t i = 0; i < n; i++) {
        results[i] = NULL;
        statuses[i] = LECTOR_OK;
        if (errs) memset(&errs[i], 0, sizeof errs[i]);
    }
    if (!n) return LECTOR_OK;
    double t0 = lector__now_ms();
    img_pages *pages = lector__calloc(n, sizeof *pages);
    page_work **works = lector__calloc(n, sizeof *works);
    if (!pages || !works) {
        lector__free(pages);
        lector__free(works);
        return lector__error(errs, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    img_limits lim;
    limits_of(e, &lim);
    size_t total = 0;
    /* per image: decode, detect, crop */
    for (size_t i = 0; i < n; i++) {
        lector_error *err = errs ? &errs[i] : NULL;
        const lector_batch_input *in = &inputs[i];
        const char *name = in->name ? in->name : "image";
        double ti = lector__now_ms();
        lector_status st = !in->data && in->size ? lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument")
                           : cancelled(o)        ? cancel_error(err)
                                                 : img_decode(in->data, in->size, name, &lim, &pages[i], err);
        if (st) {
            statuses[i] = st;
            continue;
        }
        lector_result *r = lector__calloc(1, sizeof *r);
        int np = pages[i].count;
        if (r) r->pages = lector__calloc((size_t)(np ? np : 1), sizeof *r->pages);
        works[i] = lector__calloc((size_t)(np ? np : 1), sizeof **works);
        if (!r || !r->pages || !works[i]) {
            if (r) lector__free(r->pages);
            lector__free(r);
            statuses[i] = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
            continue;
        }
        r->timings.decode_ms = lector__now_ms() - ti;
        results[i] = r;
    }
    /* detection: pages of one input size share model runs (det_batch_num) */
    det_pre *pre = NULL;
    size_t *pre_at = NULL;
    if (e->p.use_det && e->p.det_batch_num > 1) {
        size_t np_all = 0;
        for (size_t i = 0; i < n; i++)
            if (!statuses[i]) np_all += (size_t)pages[i].count;
        pre = lector__calloc(np_all ? np_all : 1, sizeof *pre);
        pre_at = lector__calloc(n, sizeof *pre_at);
        const img_image **imgs = lector__calloc(np_all ? np_all : 1, sizeof *imgs);
        if (pre && pre_at && imgs) {
            size_t k = 0;
            for (size_t i = 0; i < n; i++) {
                pre_at[i] = k;
                if (statuses[i]) continue;
                for (int p = 0; p < pages[i].count; p++) imgs[k++] = &pages[i].pages[p];
            }
            int limit = o && o->det_limit_side_len > 0 ? o->det_limit_side_len : e->p.det_limit_side_len;
            detect_pages(e, imgs, (int)k, limit, pre);
        } else { /* no memory for batching: per page, as lector_read_memory does */
            lector__free(pre);
            lector__free(pre_at);
            pre = NULL;
            pre_at = NULL;
        }
        lector__free(imgs);
    }
    for (size_t i = 0; i < n; i++) {
        if (statuses[i]) continue;
        lector_error *err = errs ? &errs[i] : NULL;
        const char *name = inputs[i].name ? inputs[i].name : "image";
        lector_result *r = results[i];
        int np = pages[i].count;
        lector_status st = LECTOR_OK;
        for (int p = 0; p < np && !st; p++) {
            if (cancelled(o)) {
                st = cancel_error(err);
                break;
            }
            st = page_prep(e, &pages[i].pages[p], o, pre ? &pre[pre_at[i] + (size_t)p] : NULL, &works[i][p],
                           &r->timings, err);
            r->n_pages = (size_t)p + 1;
            if (!st) total += (size_t)works[i][p].nb;
        }
        if (st) {
            for (int p = 0; p < np; p++) {
                total -= (size_t)works[i][p].nb;
                page_work_free(&works[i][p]);
            }
            blame_image(st, err, name);
            statuses[i] = st;
        }
    }
    if (pre) { /* boxes of pages that were never prepared (an earlier page of the file failed) */
        size_t np_all = 0;
        for (size_t i = 0; i < n; i++)
            if (results[i]) np_all = pre_at[i] + (size_t)pages[i].count;
        for (size_t k = 0; k < np_all; k++) lector__free(pre[k].boxes);
    }
    lector__free(pre);
    lector__free(pre_at);
    /* all crops together: classify, then recognise */
    crop **order = lector__malloc(sizeof *order * (total ? total : 1));
    lector_status shared = LECTOR_OK;
    lector_error shared_err;
    memset(&shared_err, 0, sizeof shared_err);
    if (!order) shared = lector__error(&shared_err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    size_t k = 0;
    int use_cls = 0;
    for (size_t i = 0; i < n && order; i++) {
        if (statuses[i]) continue;
        for (int p = 0; p < pages[i].count; p++) {
            page_work *w = &works[i][p];
            for (int c = 0; c < w->nb; c++) order[k + (size_t)c] = &w->c[c];
            if (w->nb) page_batch_widths(e, order + k, w->nb);
            for (int c = 0; c < w->nb; c++) w->c[c].seq = (int)(k + (size_t)c);
            k += (size_t)w->nb;
            use_cls |= w->use_cls; /* one `o` for all: the same everywhere */
        }
    }
    double t2 = lector__now_ms();
    if (!shared && k && cancelled(o)) shared = cancel_error(&shared_err);
    if (!shared && use_cls && k) shared = classify(e, order, (int)k, cmp_ratio_seq, &shared_err);
    double t3 = lector__now_ms();
    if (!shared && k && use_cls && cancelled(o)) shared = cancel_error(&shared_err);
    if (!shared && k) shared = recognise(e, order, (int)k, 1, &shared_err);
    double t4 = lector__now_ms();
    lector__free(order);
    /* per image: lines and timings */
    for (size_t i = 0; i < n; i++) {
        lector_error *err = errs ? &errs[i] : NULL;
        const char *name = inputs[i].name ? inputs[i].name : "image";
        if (!statuses[i]) {
            lector_result *r = results[i];
            r->timings.cls_ms += t3 - t2; /* the shared stages count for every image */
            r->timings.rec_ms += t4 - t3;
            int had_crops = 0;
            for (int p = 0; p < pages[i].count; p++) had_crops |= works[i][p].nb > 0;
            /* an image with no crops took no part in the shared stages */
            lector_status shared_i = had_crops ? shared : LECTOR_OK;
            for (int p = 0; p < pages[i].count; p++) {
                if (shared_i) {
                    page_work_free(&works[i][p]);
                    continue;
                }
                lector_status st = page_finish(&works[i][p], &pages[i].pages[p], &r->pages[p], err);
                if (st && !statuses[i]) {
                    blame_image(st, err, name);
                    statuses[i] = st;
                }
            }
            if (shared_i) {
                statuses[i] = shared;
                if (err) {
                    *err = shared_err;
                    blame_image(shared, err, name);
                }
            }
            r->timings.total_ms = lector__now_ms() - t0;
        }
        if (statuses[i]) {
            lector_result_free(results[i]);
            results[i] = NULL;
        }
        lector__free(works[i]);
        if (pages[i].pages) img_pages_free(&pages[i]);
    }
    lector__free(works);
    lector__free(pages);
    return LECTOR_OK;
}
