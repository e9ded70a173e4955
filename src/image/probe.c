/*
 * probe.c - lector_probe_image (lector.h): what an encoded image's headers
 * say, read without decoding a pixel, so that a caller can refuse or
 * schedule the work before it costs anything.
 *
 * decode_bytes is the peak of img_decode: every page's BGR image
 * (3 bytes a pixel) and, while one page is decoded, its scratch buffer: the
 * RGBA copy of a PNG or WebP with alpha, a TIFF page's raster, a CMYK JPEG's
 * samples, a JPEG's copy turned by its EXIF orientation (4 bytes a pixel at
 * most), and a JPEG 2000 page's samples as OpenJPEG holds them (4 bytes a
 * component).
 */
#include <string.h>
#include <webp/decode.h>

#include "image/decode_internal.h"
#include "util/util.h"

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* 1 when the PNG's chunks before its image data hold a tRNS (then it is
 * decoded with alpha). */
static int png_has_trns(const uint8_t *d, size_t n)
{
    for (size_t pos = 8; pos + 12 <= n;) {
        uint32_t len = be32(d + pos);
        if (len > n - pos - 12 || !memcmp(d + pos + 4, "IDAT", 4)) return 0;
        if (!memcmp(d + pos + 4, "tRNS", 4)) return 1;
        pos += 12 + (size_t)len;
    }
    return 0;
}

lector_status lector_probe_image(const void *data, size_t size, const char *name, lector_image_info *info,
                                 lector_error *err)
{
    if (!name) name = "image";
    if (!info || (!data && size)) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: NULL argument", name);
    memset(info, 0, sizeof *info);
    const uint8_t *d = data;
    img_format fmt = img_detect(d, size);
    uint64_t w = 0, h = 0, max_page = 0, total = 0;
    int scratch = 0, pages = 1; /* scratch: the page is decoded through a 4-byte-a-pixel buffer */
    int samples = 0;            /* JPEG 2000: OpenJPEG's 4-byte samples a pixel, one per component */
    lector_status st = LECTOR_OK;
    switch (fmt) {
    case IMG_FORMAT_JPEG: {
        unsigned fw, fh, nc;
        if (!img_jpeg_frame(d, size, &fw, &fh, &nc))
            return lector__error(err, LECTOR_ERR_IMAGE, "%s: JPEG without a frame header before its data", name);
        int o = img_jpeg_exif_orientation(d, size);
        w = o >= 5 ? fh : fw, h = o >= 5 ? fw : fh; /* as decoded: upright */
        scratch = nc == 4 || o > 1;                 /* CMYK samples, or the turned copy */
        break;
    }
    case IMG_FORMAT_PNG:
        if (size < 33 || memcmp(d + 12, "IHDR", 4))
            return lector__error(err, LECTOR_ERR_IMAGE, "%s: PNG without its IHDR chunk", name);
        w = be32(d + 16), h = be32(d + 20);
        scratch = d[25] == 4 || d[25] == 6 || png_has_trns(d, size);
        break;
    case IMG_FORMAT_WEBP: {
        WebPBitstreamFeatures f;
        if (WebPGetFeatures(d, size, &f) != VP8_STATUS_OK)
            return lector__error(err, LECTOR_ERR_IMAGE, "%s: invalid WebP header", name);
        w = f.width > 0 ? (uint64_t)f.width : 0, h = f.height > 0 ? (uint64_t)f.height : 0;
        scratch = f.has_alpha;
        break;
    }
    case IMG_FORMAT_BMP: {
        if (size < 26) return lector__error(err, LECTOR_ERR_IMAGE, "%s: truncated BMP header", name);
        uint32_t hs = le32(d + 14);
        int64_t bw, bh;
        if (hs == 12)
            bw = d[18] | d[19] << 8, bh = d[20] | d[21] << 8;
        else if (size >= 30)
            bw = (int32_t)le32(d + 18), bh = (int32_t)le32(d + 22);
        else
            return lector__error(err, LECTOR_ERR_IMAGE, "%s: truncated BMP header", name);
        w = bw > 0 ? (uint64_t)bw : 0, h = bh == INT32_MIN ? 0 : (uint64_t)(bh < 0 ? -bh : bh);
        scratch = hs >= 40 && size >= 30 && (d[28] | d[29] << 8) == 32;
        break;
    }
    case IMG_FORMAT_PNM: {
        img_pnm_info pnm;
        if ((st = img_pnm_header(d, size, name, &pnm, err))) return st;
        w = pnm.width, h = pnm.height;
        break;
    }
    case IMG_FORMAT_JP2: {
        int comps = 0;
        if ((st = img_jp2_size(d, size, name, &w, &h, &comps, err))) return st;
        samples = comps;
        scratch = comps == 2 || comps == 4; /* perhaps an alpha component: the RGBA copy */
        break;
    }
    case IMG_FORMAT_TIFF:
        st = lector__tiff_probe(d, size, name, &pages, &w, &h, &max_page, &total, err);
        if (st) return st;
        scratch = 1; /* a page's RGBA raster */
        break;
    default:
        return lector__error(err, LECTOR_ERR_IMAGE,
                             "%s: unrecognised image format (not JPEG, PNG, TIFF, WebP, BMP, PNM or JPEG 2000)", name);
    }
    if (fmt != IMG_FORMAT_TIFF) max_page = total = w * h;
    if (!w || !h)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: %s image of an empty size", name, img_format_name(fmt));
    info->format = img_format_name(fmt);
    info->pages = pages;
    info->width = w > INT32_MAX ? INT32_MAX : (int)w;
    info->height = h > INT32_MAX ? INT32_MAX : (int)h;
    info->max_page_pixels = (int64_t)(max_page > INT64_MAX / 8 ? INT64_MAX / 8 : max_page);
    info->total_pixels = (int64_t)(total > INT64_MAX / 8 ? INT64_MAX / 8 : total);
    info->decode_bytes = 3 * info->total_pixels + (scratch ? 4 * info->max_page_pixels : 0) +
                         4 * (int64_t)samples * info->max_page_pixels;
    return LECTOR_OK;
}
