/*
 * decode_png.c - PNG through libspng.
 *
 * Opaque PNGs (no alpha channel, no tRNS) are decoded row by row as RGB8
 * straight into the BGR image; others to RGBA8 (tRNS applied), then alpha is
 * composited (img_composite). 16-bit samples are reduced to their
 * high byte, as cv2.imread does. Gamma chunks are ignored (as OpenCV).
 * Dimensions are checked against the limits from IHDR before any pixel
 * memory exists, which defeats decompression bombs; libspng's own chunk
 * limits bound ancillary chunk memory.
 */
#include <spng.h>
#include <string.h>

#include "image/decode_internal.h"
#include "util/util.h"

lector_status img_decode_png(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                             img_image *out, lector_error *err)
{
    lector_status st = LECTOR_OK;
    uint8_t *rgba = NULL;
    spng_ctx *ctx = spng_ctx_new(0);
    if (!ctx) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: cannot create a PNG decoder", name);
    spng_set_image_limits(ctx, INT32_MAX / 4, INT32_MAX / 4);
    spng_set_chunk_limits(ctx, (size_t)16 << 20, (size_t)64 << 20);
    int rc = spng_set_png_buffer(ctx, data, size);
    struct spng_ihdr ihdr;
    if (rc == 0) rc = spng_get_ihdr(ctx, &ihdr);
    if (rc != 0) {
        st = lector__error(err, rc == SPNG_EUSER_WIDTH || rc == SPNG_EUSER_HEIGHT ? LECTOR_ERR_LIMIT : LECTOR_ERR_IMAGE,
                           "%s: invalid PNG header: %s", name, spng_strerror(rc));
        goto done;
    }
    st = img_check_dims(ihdr.width, ihdr.height, name, "PNG", limits, NULL, err);
    if (st != LECTOR_OK) goto done;
    st = img_alloc(out, (int)ihdr.width, (int)ihdr.height, 3, err);
    if (st != LECTOR_OK) {
        lector__error_prefix(err, "%s", name);
        goto done;
    }
    struct spng_trns trns;
    int has_alpha = ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ||
                    ihdr.color_type == SPNG_COLOR_TYPE_TRUECOLOR_ALPHA || spng_get_trns(ctx, &trns) == 0;
    if (!has_alpha) {
        /* opaque: decode rows straight into the BGR image (no RGBA copy) */
        rc = spng_decode_image(ctx, NULL, 0, SPNG_FMT_RGB8, SPNG_DECODE_PROGRESSIVE);
        while (rc == 0) {
            struct spng_row_info ri;
            rc = spng_get_row_info(ctx, &ri);
            if (rc == 0 && ri.row_num >= ihdr.height) rc = SPNG_EINTERNAL;
            if (rc == 0) rc = spng_decode_row(ctx, out->data + (size_t)ri.row_num * out->stride, out->stride);
        }
        if (rc != SPNG_EOI) {
            st = lector__error(err, LECTOR_ERR_IMAGE, "%s: corrupt PNG: %s", name, spng_strerror(rc));
            goto done;
        }
        for (int y = 0; y < out->height; y++) {
            uint8_t *p = out->data + (size_t)y * out->stride;
            for (int x = 0; x < out->width; x++, p += 3) {
                uint8_t t = p[0];
                p[0] = p[2], p[2] = t;
            }
        }
        goto done;
    }
    size_t n = 0;
    rc = spng_decoded_image_size(ctx, SPNG_FMT_RGBA8, &n);
    if (rc != 0) {
        st = lector__error(err, LECTOR_ERR_IMAGE, "%s: PNG: %s", name, spng_strerror(rc));
        goto done;
    }
    rgba = lector__malloc(n);
    if (!rgba) {
        st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory decoding a PNG (%zu bytes)", name, n);
        goto done;
    }
    rc = spng_decode_image(ctx, rgba, n, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS);
    if (rc != 0) {
        st = lector__error(err, LECTOR_ERR_IMAGE, "%s: corrupt PNG: %s", name, spng_strerror(rc));
        goto done;
    }
    img_composite(out, rgba, (size_t)out->width * 4, 0, 0);
done:
    lector__free(rgba);
    spng_ctx_free(ctx);
    if (st != LECTOR_OK) img_release(out);
    return st;
}
