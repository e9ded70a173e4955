/*
 * decode_internal.h - shared by the per-format decoders (not for the pipeline).
 */
#ifndef LECTOR_IMAGE_DECODE_INTERNAL_H
#define LECTOR_IMAGE_DECODE_INTERNAL_H

#include "image/image.h"

/* Checks width x height against the limits (before allocation): positive
 * sizes, <= max_pixels, and `*total` + pixels <= max_total_pixels (then adds). */
lector_status img_check_dims(uint64_t width, uint64_t height, const char *name, const char *format,
                             const img_limits *limits, uint64_t *total, lector_error *err);

/* Converts one row of RGBA / BGRA (order given by `bgr`) to BGR with the
 * alpha composited on white. */
void img_row_from_rgba(uint8_t *dst, const uint8_t *src, int width, int src_is_bgr);

/* Composites a whole 4-channel buffer (RGBA or BGRA, straight or
 * premultiplied alpha) into the allocated BGR image `out` (same size).
 * Background: white, unless the visible content is light (alpha-weighted
 * mean > 160 and some pixels are transparent), then black, so that white
 * text on a transparent background stays readable (RapidOCR's
 * white_font_color_transparent.png case; RapidOCR inverts instead). */
void img_composite(img_image *out, const uint8_t *px, size_t px_stride, int src_is_bgr, int premultiplied);

/* Per-format decoders: `out` is a zeroed single image (pages for TIFF). */
lector_status img_decode_jpeg(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                              img_image *out, lector_error *err);
lector_status img_decode_png(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                             img_image *out, lector_error *err);
lector_status img_decode_webp(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                              img_image *out, lector_error *err);
lector_status img_decode_bmp(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                             img_image *out, lector_error *err);
lector_status img_decode_pnm(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                             img_image *out, lector_error *err);
lector_status img_decode_jp2(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                             img_image *out, lector_error *err);
lector_status img_decode_tiff(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                              img_pages *out, lector_error *err);

/* The frame header of a JPEG (its first SOFn marker): size and number of
 * components; 0 when there is none before the first scan. */
int img_jpeg_frame(const uint8_t *data, size_t size, unsigned *width, unsigned *height, unsigned *components);
/* A TIFF's directories read without decoding any: the count, the first
 * page's size, the largest page and the sum of all pages' pixels. */
lector_status lector__tiff_probe(const uint8_t *data, size_t size, const char *name, int *pages, uint64_t *width,
                                 uint64_t *height, uint64_t *max_page, uint64_t *total, lector_error *err);

/* The kind of a PBM, PGM or PPM (1..6, the digit after 'P', as OpenCV
 * recognises one: 'P', the digit, whitespace), 0 for none. */
int img_pnm_kind(const uint8_t *data, size_t size);
/* A PBM, PGM or PPM header (decode_pnm.c): kind 1..6 (the digit after 'P'),
 * the size, the maxval (1 for a bitmap) and where the raster starts. */
typedef struct img_pnm_info {
    int kind;
    uint32_t width, height, maxval;
    size_t offset;
} img_pnm_info;
lector_status img_pnm_header(const uint8_t *data, size_t size, const char *name, img_pnm_info *info, lector_error *err);

/* JPEG 2000 (decode_jp2.c): 1 for the JP2 file format, 2 for a bare
 * codestream (J2K), 0 for neither; and the size and component count its
 * header gives, read without decoding a sample. */
int img_jp2_kind(const uint8_t *data, size_t size);
lector_status img_jp2_size(const uint8_t *data, size_t size, const char *name, uint64_t *width, uint64_t *height,
                           int *components, lector_error *err);

/* EXIF orientation (1..8) found in a JPEG's APP1 segment; 1 if none. */
int img_jpeg_exif_orientation(const uint8_t *data, size_t size);
/* Applies an EXIF orientation to `img` in place (may swap width/height). */
lector_status img_apply_orientation(img_image *img, int orientation, lector_error *err);

#endif
