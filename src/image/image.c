/*
 * image.c - image buffers, format detection, decode dispatch, raw pixels,
 * EXIF orientation.
 */
#include <string.h>

#include "image/decode_internal.h"
#include "util/util.h"

void img_limits_default(img_limits *limits)
{
    limits->max_pixels = 100000000u;
    limits->max_total_pixels = 400000000u;
    limits->max_file_size = (size_t)512 << 20;
    limits->max_pages = 1000;
}

lector_status img_alloc(img_image *img, int width, int height, int channels, lector_error *err)
{
    memset(img, 0, sizeof(*img));
    size_t stride, total;
    if (width <= 0 || height <= 0 || (channels != 1 && channels != 3 && channels != 4))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "invalid image size %dx%dx%d", width, height, channels);
    if (lector__mul_size((size_t)width, (size_t)channels, &stride) || lector__mul_size(stride, (size_t)height, &total))
        return lector__error(err, LECTOR_ERR_LIMIT, "image size %dx%dx%d overflows", width, height, channels);
    uint8_t *data = lector__calloc(1, total);
    if (!data)
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory allocating a %dx%d image (%zu bytes)", width,
                             height, total);
    img->width = width;
    img->height = height;
    img->channels = channels;
    img->stride = stride;
    img->data = data;
    return LECTOR_OK;
}

void img_release(img_image *img)
{
    if (!img) return;
    lector__free(img->data);
    memset(img, 0, sizeof(*img));
}

void img_pages_free(img_pages *pages)
{
    if (!pages) return;
    for (int i = 0; i < pages->count; i++) img_release(&pages->pages[i]);
    lector__free(pages->pages);
    pages->pages = NULL;
    pages->count = 0;
}

img_format img_detect(const uint8_t *d, size_t n)
{
    if (!d) return IMG_FORMAT_UNKNOWN;
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return IMG_FORMAT_JPEG;
    if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8)) return IMG_FORMAT_PNG;
    if (n >= 4 &&
        (!memcmp(d, "II*\0", 4) || !memcmp(d, "MM\0*", 4) || !memcmp(d, "II+\0", 4) || !memcmp(d, "MM\0+", 4)))
        return IMG_FORMAT_TIFF;
    if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4)) return IMG_FORMAT_WEBP;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return IMG_FORMAT_BMP;
    if (img_pnm_kind(d, n)) return IMG_FORMAT_PNM;
    if (img_jp2_kind(d, n)) return IMG_FORMAT_JP2;
    return IMG_FORMAT_UNKNOWN;
}

const char *img_format_name(img_format format)
{
    switch (format) {
    case IMG_FORMAT_JPEG: return "JPEG";
    case IMG_FORMAT_PNG: return "PNG";
    case IMG_FORMAT_TIFF: return "TIFF";
    case IMG_FORMAT_WEBP: return "WebP";
    case IMG_FORMAT_BMP: return "BMP";
    case IMG_FORMAT_PNM: return "PNM";
    case IMG_FORMAT_JP2: return "JPEG 2000";
    default: return "unknown";
    }
}

lector_status img_check_dims(uint64_t width, uint64_t height, const char *name, const char *format,
                             const img_limits *limits, uint64_t *total, lector_error *err)
{
    if (width == 0 || height == 0)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: %s image has an empty size %llux%llu", name, format,
                             (unsigned long long)width, (unsigned long long)height);
    if (width > INT32_MAX / 4 || height > INT32_MAX / 4 || width * height > limits->max_pixels)
        return lector__error(err, LECTOR_ERR_LIMIT,
                             "%s: %s: %llux%llu pixels, over the limit of %llu pixels per page (max_pixels)", name,
                             format, (unsigned long long)width, (unsigned long long)height,
                             (unsigned long long)limits->max_pixels);
    uint64_t sum = (total ? *total : 0) + width * height;
    if (sum > limits->max_total_pixels)
        return lector__error(err, LECTOR_ERR_LIMIT,
                             "%s: %s: the pages so far total %llu pixels, over the limit of %llu pixels for all "
                             "the pages of one file",
                             name, format, (unsigned long long)sum, (unsigned long long)limits->max_total_pixels);
    if (total) *total = sum;
    return LECTOR_OK;
}

static inline uint8_t over_white(unsigned c, unsigned a)
{
    return (uint8_t)((c * a + 255u * (255u - a) + 127u) / 255u);
}

void img_row_from_rgba(uint8_t *dst, const uint8_t *src, int width, int src_is_bgr)
{
    for (int x = 0; x < width; x++, src += 4, dst += 3) {
        unsigned a = src[3];
        unsigned b = src_is_bgr ? src[0] : src[2], r = src_is_bgr ? src[2] : src[0];
        if (a == 255) {
            dst[0] = (uint8_t)b, dst[1] = src[1], dst[2] = (uint8_t)r;
        } else {
            dst[0] = over_white(b, a), dst[1] = over_white(src[1], a), dst[2] = over_white(r, a);
        }
    }
}

void img_composite(img_image *out, const uint8_t *px, size_t px_stride, int src_is_bgr, int premultiplied)
{
    int w = out->width, h = out->height;
    uint64_t sum_a = 0, sum_ac = 0, transparent = 0;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = px + (size_t)y * px_stride;
        for (int x = 0; x < w; x++, s += 4) {
            unsigned a = s[3], c = (unsigned)s[0] + s[1] + s[2];
            if (a < 255) transparent++;
            sum_a += a;
            sum_ac += premultiplied ? (uint64_t)c * 255 : (uint64_t)c * a;
        }
    }
    /* alpha-weighted mean colour (0..255) of the visible content. Light
     * content (white text on a transparent background) would vanish on
     * white: it is composited on black and then inverted, which gives dark
     * text on white, what the models were trained on (RapidOCR does the
     * same). */
    int light = transparent > 0 && sum_a > 0 && sum_ac > (uint64_t)160 * 3 * sum_a;
    unsigned bg = light ? 0 : 255;
    int bi = src_is_bgr ? 0 : 2, ri = src_is_bgr ? 2 : 0;
    for (int y = 0; y < h; y++) {
        const uint8_t *s = px + (size_t)y * px_stride;
        uint8_t *d = out->data + (size_t)y * out->stride;
        for (int x = 0; x < w; x++, s += 4, d += 3) {
            unsigned a = s[3];
            unsigned c[3] = {s[bi], s[1], s[ri]};
            for (int k = 0; k < 3; k++) {
                unsigned v;
                if (premultiplied)
                    v = c[k] + (bg ? 255 - a : 0);
                else
                    v = (c[k] * a + bg * (255 - a) + 127) / 255;
                v = v > 255 ? 255 : v;
                d[k] = (uint8_t)(light ? 255 - v : v);
            }
        }
    }
}

static lector_status single_page(img_image *img, img_pages *out, const char *name, lector_error *err)
{
    out->pages = lector__malloc(sizeof(img_image));
    if (!out->pages) {
        img_release(img);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
    out->pages[0] = *img;
    out->count = 1;
    return LECTOR_OK;
}

lector_status img_decode(const uint8_t *data, size_t size, const char *name, const img_limits *limits, img_pages *out,
                         lector_error *err)
{
    img_limits def;
    if (!name) name = "image";
    if (!out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: no output", name);
    memset(out, 0, sizeof(*out));
    if (!limits) {
        img_limits_default(&def);
        limits = &def;
    }
    if (!data || size == 0) return lector__error(err, LECTOR_ERR_IMAGE, "%s: empty file (0 bytes)", name);
    if (size > limits->max_file_size)
        return lector__error(err, LECTOR_ERR_LIMIT,
                             "%s: %zu bytes, over the file size limit of %zu bytes (max_file_size)", name, size,
                             limits->max_file_size);
    img_image img;
    memset(&img, 0, sizeof(img));
    lector_status st;
    img_format fmt = img_detect(data, size);
    switch (fmt) {
    case IMG_FORMAT_JPEG: st = img_decode_jpeg(data, size, name, limits, &img, err); break;
    case IMG_FORMAT_PNG: st = img_decode_png(data, size, name, limits, &img, err); break;
    case IMG_FORMAT_WEBP: st = img_decode_webp(data, size, name, limits, &img, err); break;
    case IMG_FORMAT_BMP: st = img_decode_bmp(data, size, name, limits, &img, err); break;
    case IMG_FORMAT_PNM: st = img_decode_pnm(data, size, name, limits, &img, err); break;
    case IMG_FORMAT_JP2: st = img_decode_jp2(data, size, name, limits, &img, err); break;
    case IMG_FORMAT_TIFF: return img_decode_tiff(data, size, name, limits, out, err);
    default:
        return lector__error(err, LECTOR_ERR_IMAGE,
                             "%s: unrecognised image format (not JPEG, PNG, TIFF, WebP, BMP, PNM or JPEG 2000)", name);
    }
    if (st != LECTOR_OK) {
        img_release(&img);
        return st;
    }
    return single_page(&img, out, name, err);
}

lector_status img_decode_file(const char *path, const img_limits *limits, img_pages *out, lector_error *err)
{
    img_limits def;
    if (!path) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "no image path");
    if (out) memset(out, 0, sizeof(*out));
    if (!limits) {
        img_limits_default(&def);
        limits = &def;
    }
    uint8_t *data = NULL;
    size_t size = 0;
    lector_status st = lector__read_file(path, limits->max_file_size, &data, &size, err);
    if (st != LECTOR_OK) return st;
    st = img_decode(data, size, path, limits, out, err);
    lector__free(data);
    return st;
}

lector_status img_from_pixels(const uint8_t *pixels, int width, int height, size_t stride, lector_pixel_format format,
                              const char *name, const img_limits *limits, img_image *out, lector_error *err)
{
    static const int bpp_of[] = {3, 3, 1, 4, 4};
    img_limits def;
    if (!name) name = "pixels";
    if (!out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: no output", name);
    memset(out, 0, sizeof(*out));
    if (!limits) {
        img_limits_default(&def);
        limits = &def;
    }
    if (!pixels || (unsigned)format > LECTOR_PIXEL_BGRA)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: NULL pixels or bad format", name);
    if (width <= 0 || height <= 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: invalid size %dx%d", name, width, height);
    int bpp = bpp_of[format];
    if (stride < (size_t)width * (size_t)bpp)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: stride %zu is smaller than width %d x %d bytes",
                             name, stride, width, bpp);
    lector_status st = img_check_dims((uint64_t)width, (uint64_t)height, name, "raw", limits, NULL, err);
    if (st != LECTOR_OK) return st;
    st = img_alloc(out, width, height, 3, err);
    if (st != LECTOR_OK) return lector__error(err, st, "%s: out of memory for %dx%d pixels", name, width, height);
    if (format == LECTOR_PIXEL_RGBA || format == LECTOR_PIXEL_BGRA) {
        img_composite(out, pixels, stride, format == LECTOR_PIXEL_BGRA, 0);
        return LECTOR_OK;
    }
    for (int y = 0; y < height; y++) {
        const uint8_t *s = pixels + (size_t)y * stride;
        uint8_t *d = out->data + (size_t)y * out->stride;
        switch (format) {
        case LECTOR_PIXEL_BGR: memcpy(d, s, (size_t)width * 3); break;
        case LECTOR_PIXEL_RGB:
            for (int x = 0; x < width; x++)
                d[3 * x] = s[3 * x + 2], d[3 * x + 1] = s[3 * x + 1], d[3 * x + 2] = s[3 * x];
            break;
        case LECTOR_PIXEL_GRAY:
            for (int x = 0; x < width; x++) d[3 * x] = d[3 * x + 1] = d[3 * x + 2] = s[x];
            break;
        default: break;
        }
    }
    return LECTOR_OK;
}

/*
 * EXIF orientation: output pixel (x, y) is input pixel
 *   (ax*x + bx*y + cx, ay*x + by*y + cy) with the table below (W, H = input).
 */
lector_status img_apply_orientation(img_image *img, int o, lector_error *err)
{
    if (o <= 1 || o > 8) return LECTOR_OK;
    int W = img->width, H = img->height, C = img->channels;
    int swap = o >= 5;
    img_image out;
    lector_status st = img_alloc(&out, swap ? H : W, swap ? W : H, C, err);
    if (st != LECTOR_OK) return st;
    for (int y = 0; y < out.height; y++) {
        uint8_t *d = out.data + (size_t)y * out.stride;
        for (int x = 0; x < out.width; x++) {
            int sx, sy;
            switch (o) {
            case 2: sx = W - 1 - x, sy = y; break;
            case 3: sx = W - 1 - x, sy = H - 1 - y; break;
            case 4: sx = x, sy = H - 1 - y; break;
            case 5: sx = y, sy = x; break;
            case 6: sx = y, sy = H - 1 - x; break;
            case 7: sx = W - 1 - y, sy = H - 1 - x; break;
            default: sx = W - 1 - y, sy = x; break; /* 8 */
            }
            memcpy(d + (size_t)x * C, img->data + (size_t)sy * img->stride + (size_t)sx * C, (size_t)C);
        }
    }
    img_release(img);
    *img = out;
    return LECTOR_OK;
}
