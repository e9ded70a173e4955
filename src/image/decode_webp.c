/*
 * decode_webp.c - still WebP (lossy, lossless, with alpha) through libwebp.
 * Animated WebP is refused with LECTOR_ERR_IMAGE.
 */
#include <string.h>
#include <webp/decode.h>

#include "image/decode_internal.h"
#include "util/util.h"

static const char *vp8_status_str(VP8StatusCode s)
{
    switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated data";
    default: return "error";
    }
}

lector_status img_decode_webp(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                              img_image *out, lector_error *err)
{
    WebPBitstreamFeatures f;
    VP8StatusCode vs = WebPGetFeatures(data, size, &f);
    if (vs != VP8_STATUS_OK)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: invalid WebP: %s", name, vp8_status_str(vs));
    if (f.has_animation) return lector__error(err, LECTOR_ERR_IMAGE, "%s: animated WebP is not supported", name);
    lector_status st = img_check_dims((uint64_t)(f.width > 0 ? f.width : 0), (uint64_t)(f.height > 0 ? f.height : 0),
                                      name, "WebP", limits, NULL, err);
    if (st != LECTOR_OK) return st;
    st = img_alloc(out, f.width, f.height, 3, err);
    if (st != LECTOR_OK) {
        lector__error_prefix(err, "%s", name);
        return st;
    }
    if (!f.has_alpha) {
        if (!WebPDecodeBGRInto(data, size, out->data, out->stride * (size_t)out->height, (int)out->stride)) {
            img_release(out);
            return lector__error(err, LECTOR_ERR_IMAGE, "%s: corrupt WebP data", name);
        }
        return LECTOR_OK;
    }
    size_t n = (size_t)f.width * 4 * (size_t)f.height;
    uint8_t *bgra = lector__malloc(n);
    if (!bgra) {
        img_release(out);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory decoding a WebP", name);
    }
    if (!WebPDecodeBGRAInto(data, size, bgra, n, f.width * 4)) {
        lector__free(bgra);
        img_release(out);
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: corrupt WebP data", name);
    }
    img_composite(out, bgra, (size_t)f.width * 4, 1, 0);
    lector__free(bgra);
    return LECTOR_OK;
}
