/*
 * lector_rt_image.h - the runtime's calls for OCR-style models: inputs made
 * on the device from 8-bit pixels, and outputs reduced to the best class
 * per step for CTC decoders. The OCR pipeline (lector.h) uses them; the
 * general runtime is lector_rt.h.
 *
 * Usage (a recogniser on a GPU, its input made there from a page's bytes):
 *
 *     lector_model *rec = NULL;
 *     lector_model_options o = {.backend = "cuda"};
 *     if (lector_model_load_file_argmax("rec.onnx", &o, &rec, &err)) ...
 *     if (lector_model_takes_images(rec)) {
 *         lector_image_input row = {pixels, w, h, 3, stride, 320, 48, ...};
 *         lector_model_run_images(rec, &row, 1, 1, 320, &out, &n_out, &err);
 *         ... out[0]: int64 [1, T] classes, out[1]: float [1, T] their maxima
 *     }
 *
 * Threading and errors: as lector_rt.h.
 */
#ifndef LECTOR_RT_IMAGE_H
#define LECTOR_RT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* lector_model_load_file() / lector_model_load_memory() with every float
 * output of rank >= 2 replaced, in its place, by two outputs: the index of
 * its maximum over the last axis (int64, ONNX ArgMax keepdims=0, first
 * maximum) and that maximum (float, ReduceMax keepdims=0): what a CTC
 * decoder reads of a recogniser's probabilities, without copying the whole
 * tensor off the device. Element type and rank are those the model declares
 * for the output (an output whose rank is not declared stays as it is); the
 * new outputs are named "<output>_argmax" and "<output>_max". */
lector_status lector_model_load_file_argmax(const char *path, const lector_model_options *opt, lector_model **out,
                                            lector_error *err);
lector_status lector_model_load_memory_argmax(const void *data, size_t size, const char *name,
                                              const lector_model_options *opt, lector_model **out, lector_error *err);

/* The same with the two largest instead of the largest: each such output
 * replaced by the indices of its two largest over the last axis (int64,
 * [..., 2], ONNX TopK K=2: the largest first, of equal values the lower
 * index first) and those two values (float, [..., 2]), named
 * "<output>_top2" and "<output>_top2_values". A CTC decoder reads in the
 * gap between them how near a step came to another class: the OCR pipeline
 * reads a half-precision line again in fp32 where that gap is small enough
 * for rounding to have changed the text (lector_params.gpu_fp16_margin). */
lector_status lector_model_load_file_top2(const char *path, const lector_model_options *opt, lector_model **out,
                                          lector_error *err);
lector_status lector_model_load_memory_top2(const void *data, size_t size, const char *name,
                                            const lector_model_options *opt, lector_model **out, lector_error *err);

/* One row of a model's input made on the backend's device from 8-bit
 * pixels, so that a page goes up as bytes, not floats: an interleaved source
 * image (`channels` per pixel, rows `stride` bytes apart) of width x height,
 * resized with OpenCV's fixed-point INTER_LINEAR (the tables xofs, alpha,
 * yofs, beta that lector's image layer makes) and normalised through `lut`
 * into an out_height x out_width row of the input ([rows, channels,
 * out_height, width] float32). With `warp`, the resize reads a crop made on
 * the device first, as lector's perspective warp makes it
 * (cv2.warpPerspective INTER_CUBIC, BORDER_REPLICATE), turned by `turns`.
 * docs/RUNTIME.md ("Image inputs") gives each value's formula. Every array
 * is read during the call only. */
typedef struct lector_image_input {
    const uint8_t *pixels;
    int width, height, channels;
    size_t stride;
    int out_width, out_height;
    const int *xofs;      /* out_width source columns */
    const int16_t *alpha; /* 2 * out_width column weights */
    const int *yofs;      /* 2 * out_height source rows */
    const int16_t *beta;  /* 2 * out_height row weights */
    const float *lut;     /* channels * 256 normalised values */
    /* the crop (warp == NULL: none) */
    const double *warp;   /* 9 values, row-major: crop pixel -> page */
    const int16_t *cubic; /* 32 * 32 * 16 weights */
    int crop_width, crop_height;
    int turns; /* bit 0: 90 degrees counter-clockwise (np.rot90); bit 1: then 180 */
    /* `pixels` is the region of width x height at (origin_x, origin_y) of the
     * full_width x full_height page that every tap of the warp falls in */
    int origin_x, origin_y, full_width, full_height;
} lector_image_input;

/* 1 when the model's backend takes lector_image_input: the CUDA backend, for
 * a model with one float32 input of rank 4. */
int lector_model_takes_images(const lector_model *model);

/* lector_model_run with the model's only input made from `image` on the
 * device, [1, channels, out_height, out_width]; LECTOR_ERR_UNSUPPORTED_OP
 * where lector_model_takes_images is 0. Thread-safe. */
lector_status lector_model_run_image(const lector_model *model, const lector_image_input *image,
                                     lector_tensor **outputs, size_t *n_outputs, lector_error *err);

/* The same for a batch: the input is [batch, channels, out_height, width],
 * row i < n_rows made from rows[i] (its columns from out_width on zero),
 * rows n_rows..batch-1 zero. Every row has the same channels and
 * out_height, and out_width <= width. Thread-safe. */
lector_status lector_model_run_images(const lector_model *model, const lector_image_input *rows, size_t n_rows,
                                      size_t batch, int width, lector_tensor **outputs, size_t *n_outputs,
                                      lector_error *err);

#ifdef __cplusplus
}
#endif
#endif /* LECTOR_RT_IMAGE_H */
