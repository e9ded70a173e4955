/*
 * stages.c - what the OCR engine does to a page and its lines, as
 * PaddleOCR's TextSystem does it: detection's input, the model, DB
 * post-processing and the reading order; the crops (perspective warp, quarter
 * turn of tall boxes); the classifier (180 degree turns); the recogniser and
 * CTC decoding. Each function works on one page or one batch of lines; the
 * driver (driver.c) decides what runs when.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lector_rt_image.h"
#include "ocr/engine.h"
#include "ocr/letterbox.h"
#include "util/testctl.h"
#include "util/util.h"

/* 1 when any of n floats is NaN: a model with broken weights (or a broken
 * backend) gives NaN everywhere, and NaN would silently read as no text. */
static int has_nan(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] != v[i]) return 1;
    return 0;
}

/* The model is to blame, not the image (LECTOR_ERR_INVALID_MODEL: the
 * driver does not prefix it with the input's name). */
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

/* run_model1 of a model with width masks: row k's own width valid[k]; its
 * output steps in out_valid[k]. */
static lector_status run_model1_masked(lector_model *m, float *data, int64_t n, int64_t c, int64_t h, int64_t w,
                                       const int64_t *valid, lector_tensor **out, size_t *n_out, int64_t *out_valid,
                                       lector_error *err)
{
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {n, c, h, w}, data};
    return lector_model_run_masked(m, &in, 1, valid, out, n_out, out_valid, err);
}

/* On a GPU the models' inputs are made there from the pages' bytes, with the
 * CPU path's own tables, so that they are the CPU's bit for bit: detection's
 * resize and normalisation (lector_model_run_image), and the crops' warp,
 * turns, resize and normalisation for cls and rec (lector_model_run_images).
 * LECTOR_GPU_PREPROCESS=0 makes them on the CPU, as before. */
int ocr_gpu_preprocess(void) { return lector__tc_flag(LECTOR__TC_GPU_PREPROCESS, 1); }

/* Crops made on the GPU: cls/rec's input rows come from the page's bytes
 * (lector_model_run_images) on the same switch as detection's input. */
int ocr_device_crops(const lector_engine *e)
{
    return e->on_gpu && ocr_gpu_preprocess() && lector_model_takes_images(e->rec) &&
           (!e->cls || lector_model_takes_images(e->cls));
}

/* ---- detection ------------------------------------------------------------------- */

lector_status ocr_det_prepare(lector_engine *e, const img_image *img, int limit, ocr_det_in *d, lector_error *err)
{
    memset(d, 0, sizeof *d);
    ocr_det_limit_type lt = (ocr_det_limit_type)e->p.det_limit_type;
    /* a small or very wide page: detected in black bands (letterbox.h) */
    d->pad_rows = ocr_letterbox_rows(img->width, img->height, e->p.det_letterbox_min_height, e->p.det_letterbox_ratio,
                                     e->p.max_pixels);
    if (d->pad_rows) {
        lector_status st = ocr_letterbox_pad(img, d->pad_rows, &d->letterbox, err);
        if (st) {
            d->pad_rows = 0;
            return st;
        }
        img = &d->letterbox;
    }
    int dev = e->on_gpu && ocr_gpu_preprocess() && lector_model_takes_images(e->det);
    /* on the GPU the page goes up as bytes (a tiny page, padded first, as pixels on the CPU) */
    lector_error e2;
    if (dev && !ocr_det_image_input(img, limit, lt, e->p.det_mean, e->p.det_std, &d->tab, &d->im, &e2)) {
        d->on_device = 1;
        d->di.height = d->im.out_height;
        d->di.width = d->im.out_width;
        return LECTOR_OK;
    }
    lector_status st = ocr_det_preprocess_norm(img, limit, lt, e->p.det_mean, e->p.det_std, &d->di, err);
    d->valid_h = d->di.height;
    d->valid_w = d->di.width;
    int pad = (int)lector__tc_long(LECTOR__TC_DET_PAD, 0); /* a size bucket's padding, for its measurement */
    if (!st && pad > 32) {
        int H = (d->di.height + pad - 1) / pad * pad, W = (d->di.width + pad - 1) / pad * pad;
        float *x = lector__calloc((size_t)3 * H * W, sizeof(float));
        if (!x) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < d->di.height; y++)
                memcpy(x + ((size_t)c * H + y) * W, d->di.data + ((size_t)c * d->di.height + y) * d->di.width,
                       sizeof(float) * (size_t)d->di.width);
        lector__free(d->di.data);
        d->di.data = x;
        d->di.height = H;
        d->di.width = W;
    }
    return st;
}

void ocr_det_in_free(ocr_det_in *d)
{
    if (d->pad_rows) img_release(&d->letterbox);
    if (d->on_device)
        ocr_input_tables_free(&d->tab);
    else
        ocr_det_input_free(&d->di);
    memset(d, 0, sizeof *d);
}

lector_status ocr_det_run(lector_engine *e, ocr_det_in *const *in, int n, lector_tensor **out, size_t *n_out,
                          lector_error *err)
{
    int h = in[0]->di.height, w = in[0]->di.width;
    *out = NULL;
    *n_out = 0;
    if (in[0]->on_device) {
        lector_image_input rows[64];
        for (int q = 0; q < n && q < 64; q++) rows[q] = in[q]->im;
        return lector_model_run_images(e->det, rows, (size_t)n, (size_t)n, w, out, n_out, err);
    }
    float *data = in[0]->di.data;
    size_t one = 3 * (size_t)h * (size_t)w;
    if (n > 1) {
        data = lector__malloc(sizeof(float) * one * (size_t)n);
        if (!data) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (a detection batch of %d)", n);
        for (int q = 0; q < n; q++) memcpy(data + one * (size_t)q, in[q]->di.data, sizeof(float) * one);
    }
    lector_status st = run_model1(e->det, data, n, 3, h, w, out, n_out, err);
    if (n > 1) lector__free(data);
    if (!st && *n_out && has_nan((*out)[0].data, (size_t)lector_tensor_numel(&(*out)[0]))) {
        lector_tensors_free(*out, *n_out);
        *out = NULL;
        *n_out = 0;
        st = nan_error(err, "detection", e);
    }
    return st;
}

lector_status ocr_det_post(lector_engine *e, const img_image *img, int pad_rows, const lector_tensor *prob, int q,
                           int valid_h, int valid_w, ocr_box **boxes, int *n_boxes, lector_error *err)
{
    if (prob->ndim < 2)
        return lector__error(err, LECTOR_ERR_SHAPE, "detection output has rank %d, expected 4", prob->ndim);
    int ph = (int)prob->dims[prob->ndim - 2], pw = (int)prob->dims[prob->ndim - 1];
    ocr_db_params dp = {e->p.det_db_thresh,       e->p.det_db_box_thresh,
                        e->p.det_db_unclip_ratio, e->p.det_db_score_mode == LECTOR_SCORE_SLOW,
                        e->p.det_use_dilation,    e->p.det_max_candidates,
                        e->p.det_min_size};
    const float *map = (const float *)prob->data + (size_t)q * (size_t)ph * (size_t)pw;
    float *own = NULL;
    if (valid_h > 0 && valid_w > 0 && (valid_h < ph || valid_w < pw)) { /* the page's part of a padded map */
        own = lector__malloc(sizeof(float) * (size_t)valid_h * (size_t)valid_w);
        if (!own) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        for (int y = 0; y < valid_h; y++)
            memcpy(own + (size_t)y * valid_w, map + (size_t)y * pw, sizeof(float) * (size_t)valid_w);
        map = own;
        ph = valid_h;
        pw = valid_w;
    }
    lector_status st =
        ocr_db_postprocess(map, pw, ph, img->width, img->height + 2 * pad_rows, &dp, boxes, n_boxes, err);
    lector__free(own);
    if (!st && pad_rows) ocr_letterbox_unpad(*boxes, n_boxes, pad_rows, img->width, img->height);
    if (!st) ocr_sort_boxes(*boxes, *n_boxes);
    return st;
}

/* ---- crops ----------------------------------------------------------------------- */

/* get_rotate_crop_image's size and corners of box b */
static void crop_geometry(const ocr_box *b, float margin, int img_w, int img_h, float quad[4][2], int *cw, int *ch)
{
    const ocr_pt *p = b->p;
    for (int i = 0; i < 4; i++) {
        quad[i][0] = p[i].x;
        quad[i][1] = p[i].y;
    }
    double fw = fmax(hypot(p[0].x - p[1].x, p[0].y - p[1].y), hypot(p[2].x - p[3].x, p[2].y - p[3].y));
    double fh = fmax(hypot(p[0].x - p[3].x, p[0].y - p[3].y), hypot(p[1].x - p[2].x, p[1].y - p[2].y));
    /* rec_crop_margin: each side moved out by margin * the shorter side, along
     * the box's own directions (its mean top-to-right and top-to-bottom edges),
     * the corners then kept within the image as detection keeps its boxes */
    double ux = (p[1].x - p[0].x + p[2].x - p[3].x) / 2, uy = (p[1].y - p[0].y + p[2].y - p[3].y) / 2;
    double vx = (p[3].x - p[0].x + p[2].x - p[1].x) / 2, vy = (p[3].y - p[0].y + p[2].y - p[1].y) / 2;
    double ul = hypot(ux, uy), vl = hypot(vx, vy), d = margin * fmin(fw, fh);
    if (margin > 0 && ul > 1e-6 && vl > 1e-6 && d > 0) {
        static const int su[4] = {-1, 1, 1, -1}, sv[4] = {-1, -1, 1, 1}; /* tl, tr, br, bl */
        for (int i = 0; i < 4; i++) {
            double x = p[i].x + d * (su[i] * ux / ul + sv[i] * vx / vl);
            double y = p[i].y + d * (su[i] * uy / ul + sv[i] * vy / vl);
            quad[i][0] = (float)fmin(fmax(x, 0), img_w - 1);
            quad[i][1] = (float)fmin(fmax(y, 0), img_h - 1);
        }
        /* the crop's size from the grown corners, as get_rotate_crop_image measures a box */
        fw = fmax(hypot(quad[0][0] - quad[1][0], quad[0][1] - quad[1][1]),
                  hypot(quad[2][0] - quad[3][0], quad[2][1] - quad[3][1]));
        fh = fmax(hypot(quad[0][0] - quad[3][0], quad[0][1] - quad[3][1]),
                  hypot(quad[1][0] - quad[2][0], quad[1][1] - quad[2][1]));
    }
    int w = (int)fw, h = (int)fh;
    *cw = w < 1 ? 1 : w;
    *ch = h < 1 ? 1 : h;
}

/* get_rotate_crop_image: the warp, and a quarter turn for a tall crop */
static lector_status crop_box(const img_image *img, const ocr_box *b, float margin, img_image *out, lector_error *err)
{
    float quad[4][2];
    int w, h;
    crop_geometry(b, margin, img->width, img->height, quad, &w, &h);
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
static lector_status crop_box_device(const img_image *img, const ocr_box *b, float margin, ocr_crop *c,
                                     lector_error *err)
{
    float quad[4][2];
    crop_geometry(b, margin, img->width, img->height, quad, &c->warp_w, &c->warp_h);
    if (img_warp_quad_matrix(quad, c->warp_w, c->warp_h, c->warp) != 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "warp: degenerate quadrilateral");
    c->on_device = 1;
    c->page = img;
    c->turns = (double)c->warp_h / c->warp_w >= 1.5;
    c->w = c->turns ? c->warp_h : c->warp_w;
    c->h = c->turns ? c->warp_w : c->warp_h;
    return LECTOR_OK;
}

void ocr_crops_free(ocr_crop *c, int n)
{
    for (int i = 0; c && i < n; i++) {
        img_release(&c[i].img);
        lector__free(c[i].text);
    }
    lector__free(c);
}

lector_status ocr_crops_make(lector_engine *e, const img_image *img, ocr_box *boxes, int *n, ocr_crop **crops,
                             lector_error *err)
{
    int nb = boxes ? *n : 1;
    *crops = NULL;
    ocr_crop *c = lector__calloc((size_t)(nb ? nb : 1), sizeof *c);
    if (!c) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    int dev = boxes && ocr_device_crops(e), k = 0;
    lector_status st = LECTOR_OK;
    for (int i = 0; i < nb && !st; i++) {
        ocr_crop *ci = &c[k];
        if (!boxes) { /* no detection: the whole page is one line */
            st = img_alloc(&ci->img, img->width, img->height, img->channels, err);
            for (int y = 0; !st && y < img->height; y++)
                memcpy(ci->img.data + (size_t)y * ci->img.stride, img->data + (size_t)y * img->stride,
                       (size_t)img->width * img->channels);
        } else {
            float m = e->p.rec_crop_margin;
            st = dev ? crop_box_device(img, &boxes[i], m, ci, err) : crop_box(img, &boxes[i], m, &ci->img, err);
            if (st && st != LECTOR_ERR_OUT_OF_MEMORY) {
                /* a degenerate box (two corners equal: PaddleOCR's corner
                 * ordering can do that on small boxes at 45 degrees) gives
                 * no line, as OpenCV's blank crop does; the page goes on */
                lector__log(LECTOR_LOG_DEBUG, "box %d skipped: %s", i, err ? err->message : "");
                memset(ci, 0, sizeof *ci);
                st = LECTOR_OK;
                continue;
            }
        }
        if (st) break;
        if (!ci->on_device) {
            ci->w = ci->img.width;
            ci->h = ci->img.height;
        }
        ci->ratio = (float)ci->w / (float)ci->h;
        if (boxes) boxes[k] = boxes[i];
        k++;
    }
    if (st) {
        ocr_crops_free(c, k + 1);
        return st;
    }
    *n = k;
    *crops = c;
    return LECTOR_OK;
}

/* ---- lines ------------------------------------------------------------------------ */

/* Runs cls or rec model m on nb crops in a tensor of `rows` rows (the extra
 * rows zeros) of height img_h and width tw: resize_norm_img of each crop
 * with imgW = tw (cls), or with imgW = the line's own width crop->lw and
 * zeros on to tw (rec: per_line = 1), made on the device from the pages'
 * bytes for crops there (lector_model_run_images), else here. */
static lector_status run_lines(lector_model *m, ocr_crop *const *cr, int nb, int rows, int img_h, int tw, int per_line,
                               int64_t *steps, lector_tensor **out, size_t *n_out, lector_error *err)
{
    lector_status st = LECTOR_OK;
    if (!cr[0]->on_device) {
        float *batch = lector__calloc((size_t)rows * 3 * img_h * tw, sizeof(float));
        int64_t *valid = steps ? lector__malloc(sizeof *valid * (size_t)rows) : NULL;
        if (!batch || (steps && !valid)) {
            lector__free(batch);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (a batch of %d lines)", rows);
        }
        for (int k = 0; k < nb && !st; k++)
            st = ocr_rec_preprocess_line(&cr[k]->img, img_h, per_line ? cr[k]->lw : tw, tw, batch, k, err);
        /* with width masks (steps != NULL) a line is read at its own width lw inside the batch's tw */
        for (int k = 0; valid && k < rows; k++) valid[k] = k < nb ? cr[k]->lw : tw;
        if (!st)
            st = valid ? run_model1_masked(m, batch, rows, 3, img_h, tw, valid, out, n_out, steps, err)
                       : run_model1(m, batch, rows, 3, img_h, tw, out, n_out, err);
        lector__free(valid);
        lector__free(batch);
        return st;
    }
    if (steps) return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "width masks need the lines' crops on the host");
    ocr_input_tables *t = lector__calloc((size_t)nb, sizeof *t);
    lector_image_input *in = lector__calloc((size_t)nb, sizeof *in);
    if (!t || !in) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (a batch of %d lines)", rows);
    for (int k = 0; k < nb && !st; k++)
        st = ocr_line_image_input(cr[k]->page, cr[k]->warp, cr[k]->warp_w, cr[k]->warp_h, cr[k]->turns, img_h,
                                  per_line ? cr[k]->lw : tw, &t[k], &in[k], err);
    if (!st) st = lector_model_run_images(m, in, (size_t)nb, (size_t)rows, tw, out, n_out, err);
    for (int k = 0; t && k < nb; k++) ocr_input_tables_free(&t[k]);
    lector__free(t);
    lector__free(in);
    return st;
}

lector_status ocr_cls_run(lector_engine *e, ocr_crop **cr, int n, lector_error *err)
{
    int rows = ocr_batch_rows(e, n, ocr_cls_batch_size(e));
    lector_tensor *out = NULL;
    size_t n_out = 0;
    lector_status st =
        run_lines(e->cls, cr, n, rows, e->p.cls_image_height, e->p.cls_image_width, 0, NULL, &out, &n_out, err);
    if (st) return st;
    int64_t nc = out[0].dims[out[0].ndim - 1];
    const float *pr = out[0].data;
    for (int k = 0; k < n && !st; k++) {
        const float *row = pr + (size_t)k * nc;
        int lab = nc > 1 && row[1] > row[0] ? 1 : 0; /* labels ['0', '180'] */
        if (lab != 1 || row[1] <= e->p.cls_thresh) continue;
        ocr_crop *c = cr[k];
        c->rotated = 1;
        if (c->on_device) {
            c->turns |= 2;
            continue;
        }
        img_image r;
        if ((st = img_rotate180(&c->img, &r, err))) break;
        img_release(&c->img);
        c->img = r;
    }
    lector_tensors_free(out, n_out);
    return st;
}

/* A line is recognised at its own width: padding it to a coarser width
 * (a bucket) changes its text (docs/RUNTIME.md has the measurement, which
 * LECTOR_REC_PAD makes). */
int ocr_rec_width(int lw)
{
    long q = lector__tc_long(LECTOR__TC_REC_PAD, 1);
    if (q < 1 || q > 4096) q = 1;
    return (int)((lw + q - 1) / q * q);
}

void ocr_rec_widths(const lector_engine *e, ocr_crop *c)
{
    c->lw = ocr_rec_batch_width(&c->w, &c->h, 1, e->p.rec_image_height, e->p.rec_image_width);
    int q = e->p.rec_width_bucket;
    /* with width masks (q > 0) a line keeps its text in a wider tensor: lines share a bucket's width */
    c->tw = e->rec_masked ? (c->lw + q - 1) / q * q : ocr_rec_width(c->lw);
}

/* One rec batch: nb crops in a tensor of width tw and `rows` rows (the
 * extra rows zeros), through model m; each crop's text and score replaced. */
static lector_status rec_batch(lector_engine *e, lector_model *m, ocr_crop **cr, int nb, int rows, int tw,
                               lector_error *err)
{
    lector_tensor *out = NULL;
    size_t n_out = 0;
    int64_t steps[GPU_MAX_ROWS]; /* rows <= GPU_MAX_ROWS: rec_batch_num and a GPU's rows are bounded by it */
    lector_status st =
        run_lines(m, cr, nb, rows, e->p.rec_image_height, tw, 1, e->rec_masked ? steps : NULL, &out, &n_out, err);
    if (st) return st;
    /* lector_model_load_file_argmax: [N,T] class of the maximum (int64) and [N,T] maximum,
     * of the [N,T,C] probabilities; lector_model_load_file_top2 (m == e->rec): [N,T,2] and [N,T,2]
     * the two best; else the probabilities themselves */
    int top2 = m == e->rec && e->rec_top2;
    int rank = e->rec_argmax && !top2 ? out[0].ndim + 1 : out[0].ndim;
    if (rank != 3 || (e->rec_argmax && (n_out < 2 || out[1].ndim != out[0].ndim || out[1].dims[1] != out[0].dims[1]))) {
        lector_tensors_free(out, n_out);
        return lector__error(err, LECTOR_ERR_SHAPE, "recognition output has rank %d, expected 3", rank);
    }
    if (top2 && (out[0].dims[2] != 2 || out[1].dims[2] != 2)) {
        int64_t k = out[0].dims[2];
        lector_tensors_free(out, n_out);
        return lector__error(err, LECTOR_ERR_SHAPE, "recognition output gives %lld classes per step, expected 2",
                             (long long)k);
    }
    const lector_tensor *probs = e->rec_argmax ? &out[1] : &out[0];
    if (has_nan(probs->data, (size_t)lector_tensor_numel(probs))) {
        lector_tensors_free(out, n_out);
        return nan_error(err, "recognition", e);
    }
    int T = (int)out[0].dims[1], C = e->rec_argmax ? 0 : (int)out[0].dims[2];
    for (int k = 0; k < nb && !st; k++) {
        lector__free(cr[k]->text);
        cr[k]->text = NULL;
        int Tk = e->rec_masked && steps[k] > 0 && steps[k] < T ? (int)steps[k] : T; /* its own steps */
        cr[k]->margin = 1.f;
        if (top2)
            st = ocr_ctc_decode_top2((const int64_t *)out[0].data + (size_t)k * T * 2,
                                     (const float *)out[1].data + (size_t)k * T * 2, Tk, C, &e->dict, &cr[k]->text,
                                     &cr[k]->score, &cr[k]->margin, err);
        else if (e->rec_argmax) /* the number of classes is not known: every index is checked */
            st = ocr_ctc_decode_argmax((const int64_t *)out[0].data + (size_t)k * T,
                                       (const float *)out[1].data + (size_t)k * T, Tk, C, &e->dict, &cr[k]->text,
                                       &cr[k]->score, err);
        else
            st = ocr_ctc_decode((const float *)out[0].data + (size_t)k * T * C, Tk, C, &e->dict, &cr[k]->text,
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

lector_status ocr_rec_run(lector_engine *e, ocr_crop **cr, int n, lector_error *err)
{
    int tw = cr[0]->tw, bs = ocr_rec_batch_size(e, tw);
    lector_status st = rec_batch(e, e->rec, cr, n, ocr_batch_rows(e, n, bs), tw, err);
    if (st || !e->rec32) return st;
    ocr_crop *again[GPU_MAX_ROWS]; /* uncertain in half precision: once more in fp32 */
    int na = 0;
    float near = e->p.gpu_fp16_margin;
    for (int k = 0; k < n && na < GPU_MAX_ROWS; k++)
        if (cr[k]->score < e->p.gpu_fp16_recheck || cr[k]->margin < near ||
            fabsf(cr[k]->score - e->p.drop_score) < near)
            again[na++] = cr[k];
    if (na) st = rec_batch(e, e->rec32, again, na, ocr_batch_rows(e, na, bs), tw, err);
    return st;
}

lector_status ocr_page_lines(const img_image *img, const ocr_box *boxes, ocr_crop *crops, int n, float drop,
                             lector_page *page, lector_error *err)
{
    page->width = img->width;
    page->height = img->height;
    page->lines = lector__calloc((size_t)(n ? n : 1), sizeof *page->lines);
    if (!page->lines) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        ocr_crop *c = &crops[i];
        if (!c->text || c->score < drop) continue;
        lector_line *l = &page->lines[page->n_lines++];
        if (boxes) {
            for (int k = 0; k < 4; k++) {
                l->box[k].x = boxes[i].p[k].x;
                l->box[k].y = boxes[i].p[k].y;
            }
        } else { /* the whole page */
            l->box[1].x = l->box[2].x = (float)img->width;
            l->box[2].y = l->box[3].y = (float)img->height;
        }
        l->text = c->text;
        c->text = NULL;
        l->score = c->score;
        l->rotated = c->rotated;
    }
    return LECTOR_OK;
}
