/*
 * preprocess.c - see preprocess.h.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "ocr/preprocess.h"
#include "util/util.h"

lector_status ocr_det_resize_dims(int w, int h, int limit, ocr_det_limit_type type, int *ow, int *oh, lector_error *err)
{
    if (w <= 0 || h <= 0 || limit <= 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "det resize: invalid size %dx%d or limit %d", w, h,
                             limit);
    double ratio = 1.0;
    switch (type) {
    case OCR_DET_LIMIT_MAX:
        if (LECTOR_MAX(h, w) > limit) ratio = h > w ? (double)limit / h : (double)limit / w;
        break;
    case OCR_DET_LIMIT_MIN:
        if (LECTOR_MIN(h, w) < limit) ratio = h < w ? (double)limit / h : (double)limit / w;
        break;
    case OCR_DET_LIMIT_RESIZE_LONG: ratio = (double)limit / LECTOR_MAX(h, w); break;
    default: return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "det resize: unknown limit type %d", (int)type);
    }
    double rh = trunc(h * ratio), rw = trunc(w * ratio);
    /* Python 3 round(): half to even, which rint does in the default mode. */
    rh = fmax(rint(rh / 32) * 32, 32);
    rw = fmax(rint(rw / 32) * 32, 32);
    if (rh > 65536 || rw > 65536)
        return lector__error(err, LECTOR_ERR_LIMIT, "det resize: target %.0fx%.0f is too large", rw, rh);
    *oh = (int)rh;
    *ow = (int)rw;
    return LECTOR_OK;
}

void ocr_det_input_free(ocr_det_input *in)
{
    if (!in) return;
    lector__free(in->data);
    memset(in, 0, sizeof(*in));
}

/* NormalizeImage's exact float32 result for each 8-bit value of each of the
 * three channels: lut[c * 256 + v] = (v / 255 - mean[c]) / stdv[c]. */
static void det_norm_lut(const float mean[3], const float stdv[3], float lut[3 * 256])
{
    const float scale = (float)(1.0 / 255.0);
    for (int c = 0; c < 3; c++)
        for (int v = 0; v < 256; v++) lut[c * 256 + v] = ((float)v * scale - mean[c]) / stdv[c];
}

lector_status ocr_det_preprocess_norm(const img_image *img, int limit, ocr_det_limit_type type, const float mean[3],
                                      const float stdv[3], ocr_det_input *out, lector_error *err)
{
    if (!out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "det preprocess: no output");
    memset(out, 0, sizeof(*out));
    if (!img || !img->data || img->channels != 3)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "det preprocess: need a BGR image");
    img_image padded = {0, 0, 0, 0, NULL};
    lector_status st;
    if (img->width + img->height < 64) {
        st = img_alloc(&padded, LECTOR_MAX(32, img->width), LECTOR_MAX(32, img->height), 3, err);
        if (st != LECTOR_OK) return st;
        for (int y = 0; y < img->height; y++)
            memcpy(padded.data + (size_t)y * padded.stride, img->data + (size_t)y * img->stride,
                   (size_t)img->width * 3);
        img = &padded;
    }
    int rw, rh;
    img_image r;
    st = ocr_det_resize_dims(img->width, img->height, limit, type, &rw, &rh, err);
    if (st == LECTOR_OK) st = img_resize(img, rw, rh, &r, err);
    if (st != LECTOR_OK) {
        img_release(&padded);
        return st;
    }
    size_t plane = (size_t)rw * rh;
    out->data = lector__aligned_alloc(plane * 3 * sizeof(float));
    if (!out->data) {
        img_release(&r);
        img_release(&padded);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "det preprocess: out of memory (%dx%d)", rw, rh);
    }
    /* (v / 255 - mean) / std in float32, as PaddleOCR's NormalizeImage: a
     * pixel has 256 possible values per channel, so a table holds the exact
     * results and the pass over the image is lookups instead of a division
     * per element, bit for bit the same */
    float lut[3 * 256];
    det_norm_lut(mean, stdv, lut);
    for (int y = 0; y < rh; y++) {
        const uint8_t *restrict s = r.data + (size_t)y * r.stride;
        float *restrict d0 = out->data + (size_t)y * rw, *restrict d1 = d0 + plane, *restrict d2 = d1 + plane;
        for (int x = 0; x < rw; x++) {
            d0[x] = lut[s[3 * x]];
            d1[x] = lut[256 + s[3 * x + 1]];
            d2[x] = lut[512 + s[3 * x + 2]];
        }
    }
    img_release(&r);
    out->height = rh;
    out->width = rw;
    out->ratio_h = (float)((double)rh / img->height);
    out->ratio_w = (float)((double)rw / img->width);
    out->padded_height = img->height;
    out->padded_width = img->width;
    img_release(&padded);
    return LECTOR_OK;
}

/* t's resize tables for sw x sh -> dw x dh (t zeroed first) */
static lector_status tables_make(ocr_input_tables *t, int sw, int sh, int dw, int dh, const char *what,
                                 lector_error *err)
{
    memset(t, 0, sizeof *t);
    t->xofs = lector__malloc(sizeof(int) * (size_t)dw);
    t->alpha = lector__malloc(sizeof(int16_t) * 2 * (size_t)dw);
    t->yofs = lector__malloc(sizeof(int) * 2 * (size_t)dh);
    t->beta = lector__malloc(sizeof(int16_t) * 2 * (size_t)dh);
    if (!t->xofs || !t->alpha || !t->yofs || !t->beta) {
        ocr_input_tables_free(t);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s preprocess: out of memory (%dx%d)", what, dw, dh);
    }
    img_resize_columns(sw, dw, t->xofs, t->alpha);
    img_resize_rows(sh, dh, t->yofs, t->beta);
    return LECTOR_OK;
}

void ocr_input_tables_free(ocr_input_tables *t)
{
    if (!t) return;
    lector__free(t->xofs);
    lector__free(t->alpha);
    lector__free(t->yofs);
    lector__free(t->beta);
    memset(t, 0, sizeof *t);
}

lector_status ocr_det_image_input(const img_image *img, int limit, ocr_det_limit_type type, const float mean[3],
                                  const float stdv[3], ocr_input_tables *t, lector_image_input *out, lector_error *err)
{
    memset(t, 0, sizeof *t);
    if (!img || !img->data || img->channels != 3)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "det preprocess: need a BGR image");
    if (img->width + img->height < 64)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "det preprocess: a tiny page is padded on the CPU");
    int rw, rh;
    lector_status st = ocr_det_resize_dims(img->width, img->height, limit, type, &rw, &rh, err);
    if (!st) st = tables_make(t, img->width, img->height, rw, rh, "det", err);
    if (st) return st;
    det_norm_lut(mean, stdv, t->lut);
    *out = (lector_image_input){.pixels = img->data,
                                .width = img->width,
                                .height = img->height,
                                .channels = 3,
                                .stride = img->stride,
                                .out_width = rw,
                                .out_height = rh,
                                .xofs = t->xofs,
                                .alpha = t->alpha,
                                .yofs = t->yofs,
                                .beta = t->beta,
                                .lut = t->lut};
    return LECTOR_OK;
}

int ocr_line_resized_width(int w, int h, int img_h, int img_w)
{
    double ratio = (double)w / (double)h;
    double c = ceil(img_h * ratio);
    int rw = c > img_w ? img_w : (int)c;
    return rw < 1 ? 1 : rw;
}

int ocr_rec_batch_width(const int *widths, const int *heights, int n, int img_h, int img_w)
{
    double max_ratio = (double)img_w / img_h;
    for (int i = 0; i < n; i++)
        if (heights[i] > 0) max_ratio = fmax(max_ratio, widths[i] * 1.0 / heights[i]);
    double w = img_h * max_ratio;
    return w > 1 << 20 ? 1 << 20 : (int)w;
}

/* (x/255 - 0.5)/0.5 for the 256 pixel values, in the float operations of
 * PaddleOCR's resize_norm_img, for each of the 3 channels */
static float line_lut[3 * 256];
static pthread_once_t line_lut_once = PTHREAD_ONCE_INIT;

static void line_lut_init(void)
{
    for (int v = 0; v < 256; v++) {
        float f = (float)v / 255.0f;
        f -= 0.5f;
        f /= 0.5f;
        line_lut[v] = line_lut[256 + v] = line_lut[512 + v] = f;
    }
}

/* resize_norm_img with imgW = img_w: resize to img_h x resized_w,
 * (x/255 - 0.5)/0.5 in float32, zero padding to img_w, then on to the
 * tensor's width tw >= img_w. */
static lector_status norm_line(const img_image *crop, int img_h, int img_w, int tw, float *dst, const char *what,
                               lector_error *err)
{
    if (!crop || !crop->data || crop->channels != 3 || crop->width <= 0 || crop->height <= 0 || !dst || img_h <= 0 ||
        img_w <= 0 || tw < img_w)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s preprocess: invalid arguments", what);
    int rw = ocr_line_resized_width(crop->width, crop->height, img_h, img_w);
    img_image r;
    lector_status st = img_resize(crop, rw, img_h, &r, err);
    if (st != LECTOR_OK) return st;
    size_t plane = (size_t)img_h * tw;
    pthread_once(&line_lut_once, line_lut_init);
    const float *lut = line_lut;
    memset(dst, 0, plane * 3 * sizeof(float));
    for (int y = 0; y < img_h; y++) {
        const uint8_t *restrict s = r.data + (size_t)y * r.stride;
        float *restrict d0 = dst + (size_t)y * tw, *restrict d1 = d0 + plane, *restrict d2 = d1 + plane;
        for (int x = 0; x < rw; x++) {
            d0[x] = lut[s[3 * x]];
            d1[x] = lut[s[3 * x + 1]];
            d2[x] = lut[s[3 * x + 2]];
        }
    }
    img_release(&r);
    return LECTOR_OK;
}

lector_status ocr_line_image_input(const img_image *page, const double warp[9], int cw, int ch, int turns, int img_h,
                                   int img_w, ocr_input_tables *t, lector_image_input *out, lector_error *err)
{
    memset(t, 0, sizeof *t);
    if (!page || !page->data || page->channels != 3 || !warp || cw <= 0 || ch <= 0 || turns < 0 || turns > 3 ||
        img_h <= 0 || img_w <= 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "line preprocess: invalid arguments");
    int sw = turns & 1 ? ch : cw, sh = turns & 1 ? cw : ch; /* the turned crop the resize reads */
    int rw = ocr_line_resized_width(sw, sh, img_h, img_w);
    lector_status st = tables_make(t, sw, sh, rw, img_h, "line", err);
    if (st) return st;
    memcpy(t->warp, warp, sizeof t->warp);
    int rect[4];
    img_warp_source_rect(warp, cw, ch, page->width, page->height, rect);
    pthread_once(&line_lut_once, line_lut_init);
    *out = (lector_image_input){.pixels = page->data + (size_t)rect[1] * page->stride + (size_t)rect[0] * 3,
                                .width = rect[2],
                                .height = rect[3],
                                .channels = 3,
                                .stride = page->stride,
                                .out_width = rw,
                                .out_height = img_h,
                                .xofs = t->xofs,
                                .alpha = t->alpha,
                                .yofs = t->yofs,
                                .beta = t->beta,
                                .lut = line_lut,
                                .warp = t->warp,
                                .cubic = img_warp_cubic_table(),
                                .crop_width = cw,
                                .crop_height = ch,
                                .turns = turns,
                                .origin_x = rect[0],
                                .origin_y = rect[1],
                                .full_width = page->width,
                                .full_height = page->height};
    return LECTOR_OK;
}

lector_status ocr_cls_preprocess(const img_image *crop, int img_h, int img_w, float *dst, lector_error *err)
{
    return norm_line(crop, img_h, img_w, img_w, dst, "cls", err);
}

lector_status ocr_rec_preprocess(const img_image *crop, int img_h, int batch_w, float *batch, int b, lector_error *err)
{
    if (!batch || b < 0) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "rec preprocess: invalid batch");
    return norm_line(crop, img_h, batch_w, batch_w, batch + (size_t)b * 3 * img_h * batch_w, "rec", err);
}

lector_status ocr_rec_preprocess_line(const img_image *crop, int img_h, int line_w, int tw, float *batch, int b,
                                      lector_error *err)
{
    if (!batch || b < 0) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "rec preprocess: invalid batch");
    return norm_line(crop, img_h, line_w, tw, batch + (size_t)b * 3 * img_h * tw, "rec", err);
}

lector_status ocr_det_preprocess(const img_image *img, int limit, ocr_det_limit_type type, ocr_det_input *out,
                                 lector_error *err)
{
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
    return ocr_det_preprocess_norm(img, limit, type, mean, stdv, out, err);
}
