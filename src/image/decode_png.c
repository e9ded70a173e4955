/*
 * decode_png.c - PNG through libspng.
 *
 * Opaque PNGs (no alpha channel, no tRNS) are decoded row by row as RGB8
 * straight into the BGR image; others to RGBA8 (tRNS applied), then alpha is
 * composited (img_composite). 16-bit samples are reduced to their
 * high byte, as cv2.imread does. Gamma chunks are ignored (as OpenCV).
 * Dimensions are checked against the limits from IHDR before any pixel
 * memory exists, which defeats decompression bombs. Ancillary chunks:
 * one over PNG_MAX_CHUNK bytes, stored or decompressed (zTXt, iCCP), or
 * more than PNG_CHUNK_CACHE bytes kept in all, refuse the file with
 * LECTOR_ERR_LIMIT. libspng 0.7.3 also stops at 1000 stored text chunks and
 * cannot be told otherwise (SPNG_CHUNK_COUNT_LIMIT only lowers it), so a file
 * with more text chunks than PNG_TEXT_KEEP is decoded from a copy without
 * them: the pixels never depend on text.
 */
#include <spng.h>
#include <string.h>

#include "image/decode_internal.h"
#include "util/util.h"

#define PNG_MAX_CHUNK   ((size_t)16 << 20)
#define PNG_CHUNK_CACHE ((size_t)64 << 20)
#define PNG_TEXT_KEEP   500

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int is_text_chunk(const uint8_t *type)
{
    return !memcmp(type, "tEXt", 4) || !memcmp(type, "zTXt", 4) || !memcmp(type, "iTXt", 4);
}

/* Walks the chunk chain up to IEND: refuses an ancillary chunk over
 * PNG_MAX_CHUNK bytes, counts text chunks. A broken chain is left to
 * libspng, which says what is wrong. */
static lector_status png_scan(const uint8_t *d, size_t n, const char *name, size_t *n_text, lector_error *err)
{
    *n_text = 0;
    for (size_t pos = 8; pos + 12 <= n;) {
        uint32_t len = be32(d + pos);
        const uint8_t *type = d + pos + 4;
        if (len > n - pos - 12) break;
        if ((type[0] & 0x20) && len > PNG_MAX_CHUNK) /* lowercase first letter: ancillary */
            return lector__error(err, LECTOR_ERR_LIMIT,
                                 "%s: PNG chunk '%c%c%c%c' of %u bytes, over the limit of %zu MiB for an ancillary "
                                 "chunk",
                                 name, type[0] & 0x7f, type[1] & 0x7f, type[2] & 0x7f, type[3] & 0x7f, len,
                                 PNG_MAX_CHUNK >> 20);
        *n_text += is_text_chunk(type);
        if (!memcmp(type, "IEND", 4)) break;
        pos += 12 + (size_t)len;
    }
    return LECTOR_OK;
}

/* A copy of the file without its text chunks (lector__free); NULL when out of memory. */
static uint8_t *png_without_text(const uint8_t *d, size_t n, size_t *out_n)
{
    uint8_t *o = lector__malloc(n);
    if (!o) return NULL;
    memcpy(o, d, 8);
    size_t pos = 8, k = 8;
    while (pos + 12 <= n) {
        uint32_t len = be32(d + pos);
        if (len > n - pos - 12) break;
        size_t whole = 12 + (size_t)len;
        if (!is_text_chunk(d + pos + 4)) {
            memcpy(o + k, d + pos, whole);
            k += whole;
        }
        pos += whole;
    }
    memcpy(o + k, d + pos, n - pos); /* whatever follows (a broken chain) as it is */
    *out_n = k + (n - pos);
    return o;
}

/* The error of a libspng call: chunk limits are LECTOR_ERR_LIMIT and say so. */
static lector_status png_error(lector_error *err, int rc, const char *name, const char *what)
{
    if (rc == SPNG_ECHUNK_LIMITS)
        return lector__error(err, LECTOR_ERR_LIMIT,
                             "%s: PNG ancillary chunks over the decoder's limits (%zu MiB for one decompressed chunk, "
                             "%zu MiB in all)",
                             name, PNG_MAX_CHUNK >> 20, PNG_CHUNK_CACHE >> 20);
    if (rc == SPNG_EUSER_WIDTH || rc == SPNG_EUSER_HEIGHT)
        return lector__error(err, LECTOR_ERR_LIMIT, "%s: %s: %s", name, what, spng_strerror(rc));
    return lector__error(err, rc == SPNG_EMEM ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_IMAGE, "%s: %s: %s", name, what,
                         spng_strerror(rc));
}

lector_status img_decode_png(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                             img_image *out, lector_error *err)
{
    size_t n_text;
    lector_status st = png_scan(data, size, name, &n_text, err);
    if (st != LECTOR_OK) return st;
    uint8_t *rgba = NULL, *stripped = NULL;
    if (n_text > PNG_TEXT_KEEP) {
        if (!(stripped = png_without_text(data, size, &size)))
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        data = stripped;
    }
    spng_ctx *ctx = spng_ctx_new(0);
    if (!ctx) {
        lector__free(stripped);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: cannot create a PNG decoder", name);
    }
    spng_set_image_limits(ctx, INT32_MAX / 4, INT32_MAX / 4);
    spng_set_chunk_limits(ctx, PNG_MAX_CHUNK, PNG_CHUNK_CACHE);
    int rc = spng_set_png_buffer(ctx, data, size);
    struct spng_ihdr ihdr;
    if (rc == 0) rc = spng_get_ihdr(ctx, &ihdr);
    if (rc != 0) {
        st = png_error(err, rc, name, "invalid PNG header");
        goto done;
    }
    st = img_check_dims(ihdr.width, ihdr.height, name, "PNG", limits, NULL, err);
    if (st != LECTOR_OK) goto done;
    st = img_alloc(out, (int)ihdr.width, (int)ihdr.height, 3, err);
    if (st != LECTOR_OK) {
        lector__error_prefix(err, "%s", name);
        goto done;
    }
    /* reads the chunks up to the image data: their errors are reported here,
     * not as the "non-recoverable state" of every later call */
    struct spng_trns trns;
    rc = spng_get_trns(ctx, &trns);
    if (rc != 0 && rc != SPNG_ECHUNKAVAIL) {
        st = png_error(err, rc, name, "corrupt PNG");
        goto done;
    }
    int has_alpha = ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE_ALPHA ||
                    ihdr.color_type == SPNG_COLOR_TYPE_TRUECOLOR_ALPHA || rc == 0;
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
            st = png_error(err, rc, name, "corrupt PNG");
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
        st = png_error(err, rc, name, "PNG");
        goto done;
    }
    rgba = lector__malloc(n);
    if (!rgba) {
        st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory decoding a PNG (%zu bytes)", name, n);
        goto done;
    }
    rc = spng_decode_image(ctx, rgba, n, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS);
    if (rc != 0) {
        st = png_error(err, rc, name, "corrupt PNG");
        goto done;
    }
    img_composite(out, rgba, (size_t)out->width * 4, 0, 0);
done:
    lector__free(rgba);
    spng_ctx_free(ctx);
    lector__free(stripped);
    if (st != LECTOR_OK) img_release(out);
    return st;
}
