/*
 * image.h - Lector's internal image layer: decoding and geometry.
 *
 * Every image handed to the OCR pipeline is an 8-bit interleaved BGR buffer
 * (3 channels, PaddleOCR reads with cv2.imread, which yields BGR); geometry
 * functions also accept 1-channel (gray) images.
 *
 * Decoding:
 *   - the format is chosen from magic bytes, never from a file name:
 *     JPEG (TurboJPEG), PNG (libspng: 1..16 bit, palette, gray, gray+alpha,
 *     RGB, RGBA; 16-bit samples are reduced to their high byte like
 *     cv2.imread), TIFF (libtiff, every directory is a page), WebP (libwebp,
 *     still images), BMP (own parser: 1/4/8-bit palette, 16/24/32-bit,
 *     BI_RGB and BI_BITFIELDS, bottom-up and top-down);
 *   - JPEG EXIF orientation (1..8) is applied, so the result is upright;
 *   - alpha is composited on white: out = (c*a + 255*(255-a) + 127) / 255,
 *     except when the visible content is light (alpha-weighted mean > 160,
 *     e.g. white text on a transparent background), then on black, so that
 *     text stays readable (RapidOCR inverts such images for the same reason);
 *   - a JPEG that libjpeg decodes with only warnings (e.g. truncated: the
 *     missing part is grey) is accepted, as cv2.imread and PIL do;
 *   - limits (img_limits) are checked from the headers BEFORE any
 *     pixel buffer is allocated.
 *   Errors: LECTOR_ERR_IMAGE (undecodable or unsupported data),
 *   LECTOR_ERR_LIMIT (a limit), LECTOR_ERR_OUT_OF_MEMORY, LECTOR_ERR_IO
 *   (file functions). Messages start with the `name` the caller passed
 *   (usually the file name). Decoders never print: libtiff and libjpeg
 *   diagnostics are captured and become the message.
 *
 * Geometry follows OpenCV so that results agree with PaddleOCR:
 *   - img_resize = cv2.resize(INTER_LINEAR) on 8-bit data,
 *     including OpenCV's 11-bit fixed-point coefficients (see resize.c);
 *   - img_warp_quad = cv2.getPerspectiveTransform +
 *     cv2.warpPerspective(INTER_CUBIC, BORDER_REPLICATE), with OpenCV's
 *     1/32-pixel coordinate quantisation and 15-bit cubic weights;
 *   - img_rotate90_ccw = np.rot90, img_rotate180.
 *
 * Ownership: a img_image owns `data` (lector__free'd by
 * img_release). Functions that produce an image write to an
 * output struct that the caller releases; on failure the output is zeroed.
 * Thread-safety: every function is reentrant; nothing global is touched
 * (libtiff handlers are per-handle, TurboJPEG handles are per-call).
 */
#ifndef LECTOR_IMAGE_H
#define LECTOR_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "lector.h"

typedef struct img_image {
    int width;
    int height;
    int channels;  /* 3 = BGR (PaddleOCR order), 1 = gray */
    size_t stride; /* bytes from one row to the next, >= width*channels */
    uint8_t *data;
} img_image;

/* Multi-page result: TIFF gives one page per directory, others one page. */
typedef struct img_pages {
    img_image *pages;
    int count;
} img_pages;

typedef struct img_limits {
    uint64_t max_pixels;       /* per page, width*height (default 100,000,000) */
    uint64_t max_total_pixels; /* all pages together (default 400,000,000) */
    size_t max_file_size;      /* encoded bytes (default 512 MiB) */
    int max_pages;             /* TIFF directories (default 1000) */
} img_limits;

typedef enum img_format {
    IMG_FORMAT_UNKNOWN = 0,
    IMG_FORMAT_JPEG,
    IMG_FORMAT_PNG,
    IMG_FORMAT_TIFF,
    IMG_FORMAT_WEBP,
    IMG_FORMAT_BMP,
    IMG_FORMAT_PNM,
    IMG_FORMAT_JP2
} img_format;

/* Layouts accepted by img_from_pixels: lector_pixel_format of the
 * public API (lector.h). */

/* Fills `limits` with the defaults above. */
void img_limits_default(img_limits *limits);

/* Allocates a zeroed width x height x channels image (stride = width*channels).
 * Refuses non-positive or overflowing sizes (LECTOR_ERR_INVALID_ARGUMENT). */
lector_status img_alloc(img_image *img, int width, int height, int channels, lector_error *err);
/* Frees img->data and zeroes the struct. NULL and zeroed images are no-ops. */
void img_release(img_image *img);
/* Frees every page and the array; zeroes the struct. NULL is a no-op. */
void img_pages_free(img_pages *pages);

/* Format from the first bytes; UNKNOWN if none matches. */
img_format img_detect(const uint8_t *data, size_t size);
/* "JPEG", "PNG", ...; "unknown". */
const char *img_format_name(img_format format);

/* Decodes encoded bytes into BGR pages. `name` names the input in messages
 * (NULL: "image"); `limits` NULL means defaults. On failure `out` is zeroed. */
lector_status img_decode(const uint8_t *data, size_t size, const char *name, const img_limits *limits, img_pages *out,
                         lector_error *err);
/* Reads `path` (respecting max_file_size) and decodes it; messages name `path`. */
lector_status img_decode_file(const char *path, const img_limits *limits, img_pages *out, lector_error *err);

/* Converts caller pixels (any stride >= width*bytes-per-pixel) into a new BGR
 * image. Checks max_pixels. */
lector_status img_from_pixels(const uint8_t *pixels, int width, int height, size_t stride, lector_pixel_format format,
                              const char *name, const img_limits *limits, img_image *out, lector_error *err);

/* The fixed-point tables of img_resize, for code that resizes the
 * same way elsewhere (the CUDA backend's image input). Columns: for each
 * destination column dx, source column xofs[dx] and weights alpha[2dx],
 * alpha[2dx+1] of it and the next one (the next one is xofs[dx] itself at
 * the right edge, with weight 0). Rows: for each destination row dy, source
 * rows yofs[2dy], yofs[2dy+1] (clamped) and weights beta[2dy], beta[2dy+1].
 * A destination sample is then, with S_k = the column pass of row k,
 * min(255, ((S_0 >> 4) * beta0 >> 16) + ((S_1 >> 4) * beta1 >> 16) + 2 >> 2). */
void img_resize_columns(int src_width, int dst_width, int *xofs, int16_t *alpha);
void img_resize_rows(int src_height, int dst_height, int *yofs, int16_t *beta);

/* cv2.resize(src, (dst_width, dst_height), interpolation=INTER_LINEAR). */
lector_status img_resize(const img_image *src, int dst_width, int dst_height, img_image *dst, lector_error *err);

/* Homography mapping src[i] to dst[i] (i = 0..3), row-major 3x3 with m[8] = 1,
 * as cv2.getPerspectiveTransform. Returns 0, or -1 if the points are
 * degenerate (three collinear, singular system). */
int img_perspective_transform(const double src[4][2], const double dst[4][2], double m[9]);

/* PaddleOCR's get_rotate_crop_image warp: maps quad[0..3] of `src` onto the
 * corners (0,0), (w,0), (w,h), (0,h) of a new w x h image with bicubic
 * interpolation (a = -0.75) and replicated border, as
 * cv2.warpPerspective(src, getPerspectiveTransform(quad, corners), (w, h),
 * flags=INTER_CUBIC, borderMode=BORDER_REPLICATE). */
lector_status img_warp_quad(const img_image *src, const float quad[4][2], int width, int height, img_image *dst,
                            lector_error *err);

/* The warp's pieces, for a device that warps from the page's bytes
 * (lector_image_input.warp): img_warp_quad_matrix gives the inverse
 * map M (destination pixel (x, y, 1) -> source (X, Y, W)) of
 * img_warp_quad(quad, w, h), returns -1 where that reports a
 * degenerate quadrilateral; img_warp_cubic_table its 32 x 32 x 16
 * fixed-point weights (built on first use); img_warp_source_rect the
 * source rectangle (x, y, width, height) every destination pixel's 4 x 4
 * taps fall in, after the border clamp, for a source of sw x sh (the whole
 * source where the map has a pole over the destination). */
int img_warp_quad_matrix(const float quad[4][2], int width, int height, double m[9]);
const int16_t *img_warp_cubic_table(void);
void img_warp_source_rect(const double m[9], int width, int height, int sw, int sh, int rect[4]);

/* np.rot90(src): 90 degrees counter-clockwise; dst is height x width. */
lector_status img_rotate90_ccw(const img_image *src, img_image *dst, lector_error *err);
/* Rotation by 180 degrees (cv2.rotate ROTATE_180). */
lector_status img_rotate180(const img_image *src, img_image *dst, lector_error *err);

#endif
