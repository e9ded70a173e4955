/*
 * engine.c - the OCR engine (lector.h): parameters and their defaults
 * (PaddleOCR's), the three models on the chosen device, batch sizes, and
 * what the engine has compiled. What is done to pages is in stages.c, the
 * order it is done in is driver.c's.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lector_rt_image.h"
#include "ocr/engine.h"
#include "util/testctl.h"
#include "util/util.h"

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
    p.gpu_fp16_margin = 0.05f;
    p.det_letterbox_min_height = 48; /* rec_image_height: docs/ACCURACY.md, "Letterbox before detection" */
    p.det_letterbox_ratio = 8.f;
    return p;
}

lector_read_options lector_default_read_options(void)
{
    lector_read_options o = {0, -1.f, -1, NULL, NULL};
    return o;
}

/* is_det: detection's half precision is its own switch (gpu_fp16_det): its
 * probability map meets a hard threshold, and fp16 moves boxes. */
/* 1 when `backend` names a GPU (half precision is a GPU setting). */
static int gpu_backend(const char *backend)
{
    lector_device_spec spec;
    return backend && !lector_device_parse(backend, &spec, NULL) && spec.device == LECTOR_DEVICE_CUDA;
}

/* 1 when half-precision lines may be read again in fp32 (a second recogniser). */
static int fp16_rechecks(const lector_params *p, const char *backend)
{
    return gpu_backend(backend) && p->gpu_fp16 && (p->gpu_fp16_recheck > 0 || p->gpu_fp16_margin > 0);
}

/* The runs a GPU engine may have in flight at once: its workers', or its
 * callers' when more threads than that read at once (lector_params.callers). */
static int gpu_runs_at_once(const lector_params *p)
{
    int w = ocr_workers(p, 1);
    return p->callers > w ? p->callers : w;
}

/* jit_size: the input size whose shapes get compiled kernels on the CPU
 * (lector_model_options.jit_size). Detection: pages scaled to the side
 * limit, documents' usual case; recognition: lines of rec_image_width, the
 * width of every line shorter than rec_image_width / rec_image_height times
 * its height (most lines); other shapes run on the reference kernels. Both
 * bound what a stream of any page sizes compiles (docs/RUNTIME.md). */
static lector_status load_one(const lector_params *p, const char *backend, const char *override, const char *file,
                              int argmax, int is_det, int fp32, int jit_size, lector_model **out, lector_error *err)
{
    /* plan_cache_bytes: 45% det, 45% rec (halved between the two
     * recognisers of --fp16's recheck), 10% cls */
    int recheck = fp16_rechecks(p, backend);
    size_t share = is_det   ? p->plan_cache_bytes / 20 * 9
                   : argmax ? p->plan_cache_bytes / 20 * 9 / (recheck ? 2 : 1)
                            : p->plan_cache_bytes / 10;
    char path[4096];
    if (override)
        snprintf(path, sizeof path, "%s", override);
    else
        snprintf(path, sizeof path, "%s/%s", p->models_dir, file);
    int on_cpu = !gpu_backend(backend);
    lector_model_options mo = {.backend = backend,
                               /* on the CPU pages and lines run in parallel on the workers (lector_params.workers),
                                * each inference on one thread: unless asked, no thread waits for another */
                               .threads = p->threads > 0 || !on_cpu ? p->threads : 1,
                               .jit_size = jit_size,
                               /* lines of several widths in one batch, each read as alone */
                               .width_masks = argmax && p->rec_width_bucket > 0,
                               .kernel_cache_dir = on_cpu ? NULL : p->gpu_kernel_cache,
                               /* on a GPU every line width (and row count) of rec is a plan of its own:
                                * documents bring hundreds of widths, and a plan compiled again for each
                                * costs more than the read; the plans share the model's arenas and weights */
                               .plan_cache_size = on_cpu   ? 0
                                                  : argmax ? 4096
                                                           : 512,
                               .plan_cache_bytes = share,
                               .gpu_mem_limit = p->gpu_mem_limit,
                               /* half precision is a GPU setting: the CPU fallback ignores it */
                               .fp16 = !on_cpu && p->gpu_fp16 && !fp32 && (!is_det || p->gpu_fp16_det),
                               /* as many runs in flight as workers; the fp32 recogniser beside an fp16
                                * one reads only the lines sent back to it, and makes its workers as
                                * they are needed */
                               .gpu_workers = on_cpu || fp32 ? 0 : gpu_runs_at_once(p)};
    /* the recogniser's argmax and max per step, not its probabilities; with a recheck of half
     * precision's lines, the two best classes per step (their gap is how near another text came) */
    if (argmax && mo.fp16 && recheck && p->gpu_fp16_margin > 0) return lector_model_load_file_top2(path, &mo, out, err);
    return argmax ? lector_model_load_file_argmax(path, &mo, out, err) : lector_model_load_file(path, &mo, out, err);
}

/* lector_params.gpu_kernel_cache into out: the directory as given, or for
 * NULL the user's cache directory (XDG's base directory rule), or "" (none:
 * no such directory, or a path too long). */
static void kernel_cache_resolve(const char *given, char *out, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (given)
        n = snprintf(out, len, "%s", given);
    else if (xdg && xdg[0] == '/') /* relative values are to be ignored */
        n = snprintf(out, len, "%s/lector/kernels", xdg);
    else if (home && home[0] == '/')
        n = snprintf(out, len, "%s/.cache/lector/kernels", home);
    else
        n = snprintf(out, len, "%s", "");
    if (n < 0 || (size_t)n >= len) out[0] = 0;
}

/* One model's load (load_one's arguments), on a thread of its own or not. */
typedef struct {
    const lector_params *p;
    const char *backend, *override, *file;
    int argmax, is_det, fp32, jit_size;
    lector_model **out;
    lector_error err;
    lector_status st;
} load_job;

static void *load_job_run(void *arg)
{
    load_job *j = arg;
    j->st =
        load_one(j->p, j->backend, j->override, j->file, j->argmax, j->is_det, j->fp32, j->jit_size, j->out, &j->err);
    return NULL;
}

/* Loads the models on `backend`; on failure nothing stays loaded. The
 * recogniser loads on this thread; the detector and the classifier on
 * threads of their own beside it, so that parsing, graph passes and the
 * first compiles of one overlap the others', a part of a cold start. The
 * fp32 recogniser of gpu_fp16_recheck follows the recogniser (it takes the
 * same width rule). LECTOR_PARALLEL_LOAD=0 loads them one after another
 * (the comparison docs/BENCHMARKS.md measures); then a model loads only
 * while those before it loaded. Either way the error reported is the first
 * in the order rec, det, rec32, cls. */
static lector_status load_models(lector_engine *e, const char *backend, lector_error *err)
{
    const lector_params *p = &e->p;
    e->p.rec_width_bucket = e->rec_bucket_asked; /* a failed load on another device may have turned it off */
    /* the threads read a copy: a recogniser that cannot take width masks changes e->p below */
    const lector_params pc = e->p;
    enum { DET, REC32, CLS, N_JOBS };
    load_job jobs[N_JOBS] = {
        [DET] = {.p = &pc,
                 .override = p->det_model,
                 .file = LECTOR_DEFAULT_DET_MODEL,
                 .is_det = 1,
                 .jit_size = p->det_limit_type == LECTOR_LIMIT_MAX ? p->det_limit_side_len : 0,
                 .out = &e->det},
        [REC32] = {.p = p,
                   .override = p->rec_model,
                   .file = LECTOR_DEFAULT_REC_MODEL,
                   .argmax = 1,
                   .fp32 = 1,
                   .out = &e->rec32},
        [CLS] = {.p = &pc, .override = p->cls_model, .file = LECTOR_DEFAULT_CLS_MODEL, .out = &e->cls},
    };
    int wanted[N_JOBS] = {[DET] = p->use_det, [REC32] = fp16_rechecks(p, backend), [CLS] = p->use_angle_cls};
    int side_by_side = lector__tc_flag(LECTOR__TC_PARALLEL_LOAD, 1);
    pthread_t tid[N_JOBS];
    int started[N_JOBS] = {0};
    for (int i = 0; i < N_JOBS; i++) {
        jobs[i].backend = backend;
        if (wanted[i] && side_by_side && i != REC32)
            started[i] = pthread_create(&tid[i], NULL, load_job_run, &jobs[i]) == 0;
    }
    /* with width buckets the recogniser's widths are few (multiples of the bucket): each gets
     * compiled kernels, not only rec_image_width's */
    int rec_jit = p->rec_width_bucket > 0 ? 0 : p->rec_image_width;
    lector_status st = load_one(p, backend, p->rec_model, LECTOR_DEFAULT_REC_MODEL, 1, 0, 0, rec_jit, &e->rec, err);
    if (st == LECTOR_ERR_UNSUPPORTED_OP && p->rec_width_bucket > 0) {
        /* a recogniser the width masks cannot cover (mask_width.c names the operator): each line at its own width */
        lector__log(LECTOR_LOG_INFO, "recognition without width buckets: %s", err ? err->message : "");
        e->p.rec_width_bucket = 0;
        rec_jit = p->rec_image_width;
        st = load_one(p, backend, p->rec_model, LECTOR_DEFAULT_REC_MODEL, 1, 0, 0, rec_jit, &e->rec, err);
    }
    jobs[REC32].jit_size = rec_jit;
    /* the rest on this thread, in order, while all before loaded (a thread's job is read after its join) */
    int ok = !st;
    for (int i = 0; i < N_JOBS; i++) {
        if (started[i] || !wanted[i]) continue;
        if (ok) load_job_run(&jobs[i]);
        ok = ok && !jobs[i].st;
    }
    for (int i = 0; i < N_JOBS; i++)
        if (started[i]) pthread_join(tid[i], NULL);
    for (int i = 0; i < N_JOBS && !st; i++)
        if (jobs[i].st) {
            st = jobs[i].st;
            if (err) *err = jobs[i].err;
        }
    if (st) {
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
    /* [N, T, 2] and [N, T, 2] (lector_model_load_file_top2) where the argmax form gives [N, T]
     * (the sizes a model declares may be unknown: rec_batch checks the 2 on every output) */
    e->rec_top2 = e->rec_argmax && o0->ndim == 3 && o1->ndim == 3;
    e->rec_masked = p->rec_width_bucket > 0;
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
    REQUIRE(p->callers >= 0 && p->callers <= 1024, "callers must be in [0, 1024]");
    REQUIRE(p->max_pixels > 0 && p->max_file_size > 0 && p->max_pages > 0, "limits must be > 0");
    REQUIRE(p->gpu_fp16_recheck >= 0 && p->gpu_fp16_recheck <= 1, "gpu_fp16_recheck must be in [0, 1]");
    REQUIRE(p->gpu_fp16_margin >= 0 && p->gpu_fp16_margin <= 1, "gpu_fp16_margin must be in [0, 1]");
    REQUIRE(p->det_letterbox_min_height >= 0 && p->det_letterbox_min_height <= 65536,
            "det_letterbox_min_height must be in [0, 65536]");
    REQUIRE(p->rec_width_bucket >= 0 && p->rec_width_bucket <= 4096, "rec_width_bucket must be in [0, 4096]");
    REQUIRE(p->rec_crop_margin >= 0 && p->rec_crop_margin <= 1, "rec_crop_margin must be in [0, 1]");
    REQUIRE(p->det_letterbox_ratio >= 0 && p->det_letterbox_ratio <= 65536,
            "det_letterbox_ratio must be in [0, 65536]");
#undef REQUIRE
    return LECTOR_OK;
}

/* Rows a batch of `per_row` bytes per row may take out of `avail`: a batch
 * takes at most 1/16 of the GPU's free memory (other workers and plans need
 * theirs), at least `floor` rows (PaddleOCR's batch), at most GPU_MAX_ROWS. */
static int rows_from_memory(size_t avail, size_t per_row, int floor)
{
    size_t rows = per_row ? avail / 16 / per_row : 0;
    if (rows > GPU_MAX_ROWS) rows = GPU_MAX_ROWS;
    return rows < (size_t)floor ? floor : (int)rows;
}

/* On a GPU: every row count is a plan (an arena, CUDA graphs) per input
 * width, and every line width is one too; powers of two keep the plans few
 * (a width's lines come 1, 2, 3... at a time as pages arrive), where every
 * count from 1 to 64 would keep compiling new plans. */
int ocr_batch_rows(const lector_engine *e, int nb, int max)
{
    if (!e->on_gpu) return nb;
    int r = 1;
    while (r < nb) r *= 2;
    return r > max ? (max > nb ? max : nb) : r;
}

int ocr_cls_batch_size(const lector_engine *e)
{
    return e->gpu_cls_rows > e->p.cls_batch_num ? e->gpu_cls_rows : e->p.cls_batch_num;
}

int ocr_rec_batch_size(const lector_engine *e, int tw)
{
    int bs = e->p.rec_batch_num;
    /* On a GPU every (width, rows) pair is a plan, and lines wider than
     * rec_image_width have widths of their own (247 among 37 document
     * pages): batching the few that share one would compile a plan per row
     * count (as many 2-row plans as 1-row ones on those pages) and keep
     * compiling as pages come. They run one row each; the lines read at
     * rec_image_width, most of them, are batched. With width masks
     * (rec_width_bucket) the widths are the buckets': few, so batched. */
    if (e->on_gpu && tw != e->p.rec_image_width && !e->rec_masked) return 1;
    if (e->gpu_rec_rows > bs) { /* a GPU: as many rows as its memory takes at this width */
        int64_t r = (int64_t)e->gpu_rec_rows * e->p.rec_image_width / (tw > 0 ? tw : 1);
        if (r > bs) bs = r > GPU_MAX_ROWS ? GPU_MAX_ROWS : (int)r;
    }
    return bs;
}

void ocr_image_limits(const lector_engine *e, img_limits *l)
{
    img_limits_default(l);
    l->max_pixels = (uint64_t)e->p.max_pixels;
    l->max_file_size = (size_t)e->p.max_file_size;
    l->max_pages = e->p.max_pages;
}

/* Batch sizes on a GPU, from its free memory and what one row of each model
 * needs (the activation arena of a one-row plan, which this compiles), found
 * once, by the engine's GPU warm-up or the first read whose lines are
 * queued (driver.c), whichever comes first; a failure (the GPU out of
 * memory) is that read's and the next read tries again. A cls batch always
 * has the width cls_image_width, and every line of a rec batch is read at
 * its own width, so larger batches give every crop the same input row. */
lector_status ocr_batch_limits(lector_engine *e, lector_error *err)
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

/* The arenas of the line models' full batches for every worker, made
 * ahead (lector_model_reserve): otherwise a model keeps as many arenas as
 * its runs were ever in flight at once, and a new high, which can come
 * after thousands of pages, adds one (the recogniser's: 262 MiB on an
 * H100; docs/BENCHMARKS.md, "Memory over 10,000 reads"). At most half the
 * GPU memory free goes to them, so that pages and the other models find
 * room; a reserve cut short there grows on demand as before. The fp32
 * recogniser of --fp16's recheck reads few lines and is left to grow. */
static void gpu_reserve(lector_engine *e)
{
    const lector_params *p = &e->p;
    struct {
        lector_model *m;
        int rows, h, w;
    } line_models[] = {{e->rec, e->gpu_rec_rows, p->rec_image_height, p->rec_image_width},
                       {p->use_angle_cls ? e->cls : NULL, e->gpu_cls_rows, p->cls_image_height, p->cls_image_width}};
    int workers = gpu_runs_at_once(p);
    for (size_t i = 0; i < sizeof line_models / sizeof line_models[0]; i++) {
        if (!line_models[i].m) continue;
        double t0 = lector__now_ms();
        lector_error err = {0};
        lector_tensor in = {
            LECTOR_DTYPE_FLOAT32, 4, {line_models[i].rows, 3, line_models[i].h, line_models[i].w}, NULL};
        int made = 0;
        lector_status st = lector_model_reserve(line_models[i].m, &in, 1, workers,
                                                lector_model_gpu_available(line_models[i].m) / 2, &made, &err);
        if (st)
            lector__log(LECTOR_LOG_DEBUG, "gpu warm-up: reserve: %s", err.message);
        else
            lector__log(LECTOR_LOG_DEBUG, "gpu warm-up: %d arenas for %d workers made ahead in %.0f ms", made, workers,
                        lector__now_ms() - t0);
    }
}

/* A plan's first run on a GPU waits for the libraries to load the kernels it
 * uses: cuBLAS's half-precision products took 60-80 ms in the first runs of
 * a cold `--fp16` start on an H100, every plan of the first page waiting
 * for it (docs/BENCHMARKS.md, "What first runs wait for"). So a
 * thread started with the engine runs the line models once on a blank line
 * of their base width while the caller reads and detects its first page;
 * the first page's lines then find the kernels loaded (and the plan of
 * that width, and the batch limits, made). Its errors are only logged: a
 * real read meets them again and reports them. */
static void *gpu_warmup_run(void *arg)
{
    lector_engine *e = arg;
    lector_error err = {0};
    double t0 = lector__now_ms();
    if (ocr_batch_limits(e, &err)) {
        lector__log(LECTOR_LOG_DEBUG, "gpu warm-up: %s", err.message);
        return NULL;
    }
    const lector_params *p = &e->p;
    struct {
        lector_model *m;
        int h, w;
    } line_models[] = {{e->rec, p->rec_image_height, p->rec_image_width},
                       {e->rec32, p->rec_image_height, p->rec_image_width},
                       {p->use_angle_cls ? e->cls : NULL, p->cls_image_height, p->cls_image_width}};
    for (size_t i = 0; i < sizeof line_models / sizeof line_models[0]; i++) {
        if (!line_models[i].m) continue;
        int64_t h = line_models[i].h, w = line_models[i].w;
        float *blank = lector__calloc((size_t)(3 * h * w), sizeof(float));
        if (!blank) return NULL;
        lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, h, w}, blank}, *out = NULL;
        size_t n_out = 0;
        if (lector_model_run(line_models[i].m, &in, 1, &out, &n_out, &err))
            lector__log(LECTOR_LOG_DEBUG, "gpu warm-up: %s", err.message);
        lector_tensors_free(out, n_out);
        lector__free(blank);
    }
    lector__log(LECTOR_LOG_DEBUG, "gpu warm-up: the line models ran once in %.0f ms", lector__now_ms() - t0);
    if (lector__tc_flag(LECTOR__TC_GPU_RESERVE, 1)) gpu_reserve(e);
    return NULL;
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
    pthread_mutex_init(&e->threads_lock, NULL);
    e->p = *params;
    e->rec_bucket_asked = params->rec_width_bucket;
    kernel_cache_resolve(params->gpu_kernel_cache, e->kernel_cache, sizeof e->kernel_cache);
    e->p.gpu_kernel_cache = e->kernel_cache;
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
    if (e->on_gpu && !e->rec_masked && lector__tc_flag(LECTOR__TC_GPU_WARMUP, 1))
        e->warmup_started = pthread_create(&e->warmup, NULL, gpu_warmup_run, e) == 0;
    if (e->on_gpu) {
        snprintf(e->device, sizeof e->device, "cuda:%d%s", params->device_id,
                 !params->gpu_fp16      ? ""
                 : params->gpu_fp16_det ? " (fp16)"
                                        : " (fp16 rec/cls)");
    } else {
        int w = lector_engine_workers(e);
        snprintf(e->device, sizeof e->device, "cpu (%s, %d worker%s x %d thread%s)", lector_model_backend(e->rec), w,
                 w > 1 ? "s" : "", params->threads > 0 ? params->threads : 1, params->threads > 1 ? "s" : "");
        if (*e->fallback) lector__log(LECTOR_LOG_INFO, "device auto: running on the CPU: %s", e->fallback);
    }
    *out = e;
    return LECTOR_OK;
}

void lector_engine_free(lector_engine *e)
{
    if (!e) return;
    if (e->warmup_started) pthread_join(e->warmup, NULL);
    ocr_threads_free(e);
    lector_model_free(e->det);
    lector_model_free(e->cls);
    lector_model_free(e->rec);
    lector_model_free(e->rec32);
    ocr_dict_free(&e->dict);
    pthread_mutex_destroy(&e->limits_lock);
    pthread_mutex_destroy(&e->threads_lock);
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

void lector_engine_get_stats(const lector_engine *e, lector_engine_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!e) return;
    lector_model_get_stats(e->det, &s->det);
    lector_model_get_stats(e->cls, &s->cls);
    lector_model_get_stats(e->rec, &s->rec);
    lector_model_get_stats(e->rec32, &s->rec_fp32);
    const lector_model_stats *m[4] = {&s->det, &s->cls, &s->rec, &s->rec_fp32};
    for (int i = 0; i < 4; i++) {
        s->plans_compiled += m[i]->plans_compiled;
        s->kernels_compiled += m[i]->kernels_compiled;
    }
}
