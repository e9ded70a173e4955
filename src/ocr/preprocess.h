/*
 * preprocess.h - PaddleOCR's exact input preprocessing for det, cls and rec.
 *
 * Images are BGR (img_image, 3 channels); tensors are float32 NCHW with
 * channels in B, G, R order, because PaddleOCR never converts to RGB.
 * Sources (PaddleOCR 2.x): ppocr/data/imaug/operators.py DetResizeForTest
 * (resize_image_type0) and NormalizeImage, tools/infer/predict_cls.py and
 * predict_rec.py resize_norm_img. Floating-point order of operations follows
 * numpy float32 so the values are bit-identical for identical resized pixels.
 * Built into the img_image library.
 */
#ifndef LECTOR_OCR_PREPROCESS_H
#define LECTOR_OCR_PREPROCESS_H

#include "image/image.h"
#include "lector_rt_image.h" /* lector_image_input */

typedef enum ocr_det_limit_type {
    OCR_DET_LIMIT_MAX = 0,        /* longest side scaled down to limit if above (default) */
    OCR_DET_LIMIT_MIN = 1,        /* shortest side scaled up to limit if below */
    OCR_DET_LIMIT_RESIZE_LONG = 2 /* longest side scaled to limit, always */
} ocr_det_limit_type;

/* Detector input: 1 x 3 x height x width, ImageNet-normalised. */
typedef struct ocr_det_input {
    float *data; /* lector__free'd by ocr_det_input_free */
    int height, width;
    float ratio_h;                   /* height / padded_height */
    float ratio_w;                   /* width / padded_width */
    int padded_height, padded_width; /* source size after PaddleOCR's padding
                                        of tiny images (= source size unless
                                        width + height < 64) */
} ocr_det_input;

/* Target size of DetResizeForTest type 0: ratio from the limit, then
 * side = int(side * ratio) and side = max(round_half_even(side / 32) * 32, 32).
 * Returns LECTOR_ERR_INVALID_ARGUMENT for non-positive sizes or limit. */
lector_status ocr_det_resize_dims(int width, int height, int limit_side_len, ocr_det_limit_type type, int *out_width,
                                  int *out_height, lector_error *err);

/* DetResizeForTest + NormalizeImage + ToCHWImage. An image whose
 * width + height < 64 is first padded with black on the right and bottom to
 * max(32, w) x max(32, h) (DetResizeForTest.image_padding); the ratios are
 * relative to that padded size, as in PaddleOCR.
 * Resize (cv2 INTER_LINEAR) + (x/255 - mean)/std with mean
 * (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225) on B, G, R + HWC->CHW. */
lector_status ocr_det_preprocess(const img_image *img, int limit_side_len, ocr_det_limit_type type, ocr_det_input *out,
                                 lector_error *err);
void ocr_det_input_free(ocr_det_input *in);
/* What a lector_image_input points to besides the pixels: the resize
 * tables (img_resize_columns / img_resize_rows), detection's
 * normalisation table, a crop's warp matrix. Free with
 * ocr_input_tables_free. */
typedef struct ocr_input_tables {
    int *xofs, *yofs;
    int16_t *alpha, *beta;
    float lut[3 * 256];
    double warp[9];
} ocr_input_tables;
void ocr_input_tables_free(ocr_input_tables *t);

/* Detection's input as a lector_image_input, for a backend that makes it on
 * its device (lector_model_run_image): the tables of
 * ocr_det_preprocess_norm's resize and normalisation, so that the
 * device's input is that function's, bit for bit. A page that needs the
 * padding of tiny images (width + height < 64) gets LECTOR_ERR_UNSUPPORTED_OP
 * and takes ocr_det_preprocess_norm. `out` points into `t`, and into
 * `img` for the pixels. */
lector_status ocr_det_image_input(const img_image *img, int limit_side_len, ocr_det_limit_type type,
                                  const float mean[3], const float stdv[3], ocr_input_tables *t,
                                  lector_image_input *out, lector_error *err);

/* The same with the normalisation's mean and std (B, G, R order) given. */
lector_status ocr_det_preprocess_norm(const img_image *img, int limit_side_len, ocr_det_limit_type type,
                                      const float mean[3], const float stdv[3], ocr_det_input *out, lector_error *err);

/* Width a text line is resized to at height img_h inside a tensor of width
 * img_w: min(ceil(img_h * (w / h)), img_w), at least 1. */
int ocr_line_resized_width(int width, int height, int img_h, int img_w);

/* Batch width of the recogniser for crops of sizes (widths[i], heights[i]):
 * int(img_h * max(img_w / img_h, max_i widths[i] / heights[i])) (predict_rec.py). */
int ocr_rec_batch_width(const int *widths, const int *heights, int n, int img_h, int img_w);

/* Classifier input for one crop (predict_cls.py resize_norm_img): resize to
 * img_h (48) x resized width, (x/255 - 0.5)/0.5, zero padding on the right up
 * to img_w (192). Writes 3 * img_h * img_w floats at `dst` (one batch row). */
lector_status ocr_cls_preprocess(const img_image *crop, int img_h, int img_w, float *dst, lector_error *err);

/* Recogniser input for one crop (predict_rec.py resize_norm_img) into row
 * `b` of a batch tensor [n, 3, img_h, batch_w]: same as cls with
 * img_w = batch_w. Writes 3 * img_h * batch_w floats at
 * batch + b * 3 * img_h * batch_w. */
lector_status ocr_rec_preprocess(const img_image *crop, int img_h, int batch_w, float *batch, int b, lector_error *err);

/* Recogniser input for one crop as PaddleOCR makes it for the crop read
 * alone (predict_rec.py with one crop: imgW = line_w, see
 * ocr_rec_batch_width of that crop), into row `b` of a tensor
 * [n, 3, img_h, tw] whose width tw >= line_w: the columns from line_w on are
 * zeros, as are the padding columns of the line's own tensor. */
lector_status ocr_rec_preprocess_line(const img_image *crop, int img_h, int line_w, int tw, float *batch, int b,
                                      lector_error *err);

/* A text line's row of a cls/rec input made on a device
 * (lector_model_run_images), bit for bit the row ocr_cls_preprocess /
 * ocr_rec_preprocess make from the crop that img_warp_quad
 * (warp: img_warp_quad_matrix, crop_width x crop_height) then
 * img_rotate90_ccw (turns bit 0) and img_rotate180
 * (bit 1) make from `page`: only the page's region under the crop goes up.
 * img_w is the tensor's width (cls_image_width, or the rec batch width).
 * `out` points into `t`, `page` and a static normalisation table. */
lector_status ocr_line_image_input(const img_image *page, const double warp[9], int crop_width, int crop_height,
                                   int turns, int img_h, int img_w, ocr_input_tables *t, lector_image_input *out,
                                   lector_error *err);

#endif
