/*
 * decode_pnm.c - Netpbm images: PBM, PGM and PPM, plain (P1-P3) and raw
 * (P4-P6). Scanners write them (SANE's scanimage by default), and so do
 * many conversion tools; cv2.imread, and so PaddleOCR, reads them.
 *
 * The pixels are those cv2.imread(path, IMREAD_COLOR) gives (OpenCV's
 * modules/imgcodecs/src/grfmt_pxm.cpp), so that a page reads as it does in
 * PaddleOCR, including where OpenCV departs from the Netpbm specification:
 *
 *   - raw samples of a maxval up to 255 are taken as they are, not scaled
 *     to 255 (a raw PGM of maxval 15 stays dark); plain ones are scaled,
 *     sample * 255 / maxval rounded down, after a sample over maxval is
 *     taken as maxval;
 *   - samples of a maxval over 255 (two bytes, big-endian when raw) keep
 *     their high byte (sample >> 8), not scaled to the maxval either;
 *   - a bitmap's 1 is black, 0 white; plain bitmap digits need no
 *     separators ("0101");
 *   - a header's numbers are separated by whitespace and comments ('#' to
 *     the end of the line); the one byte after the last of them ends it,
 *     and a raw raster starts right after that byte.
 *
 * Departures from OpenCV, where it would refuse a file for no reason a
 * reader could see: a plain file's last number may end the file. PAM (P7)
 * is not read (OpenCV has a separate reader for it). A raster shorter than
 * its header says is an error, as in OpenCV. Every read is checked against
 * the buffer.
 */
#include <string.h>

#include "image/decode_internal.h"
#include "util/util.h"

typedef struct {
    const uint8_t *d;
    size_t n, pos;
} pnm_in;

static int pnm_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

typedef enum { PNM_OK, PNM_END, PNM_BAD_BYTE, PNM_TOO_LARGE } pnm_read;

/* The next decimal number, as OpenCV's ReadNumber: whitespace and comments
 * skipped before it, at most `maxdigits` digits (0: any), and the byte that
 * ends it consumed. The end of the bytes may end a number (not begin one). */
static pnm_read pnm_number(pnm_in *s, int maxdigits, uint32_t *out)
{
    for (;;) {
        if (s->pos >= s->n) return PNM_END;
        int c = s->d[s->pos];
        if (c >= '0' && c <= '9') break;
        s->pos++;
        if (c == '#') {
            while (s->pos < s->n && s->d[s->pos] != '\n' && s->d[s->pos] != '\r') s->pos++;
            s->pos++; /* the line's end: OpenCV reads the next byte without looking at it */
        } else if (!pnm_space(c)) {
            s->pos--;
            return PNM_BAD_BYTE;
        }
    }
    uint64_t v = 0;
    int digits = 0;
    while (s->pos < s->n && s->d[s->pos] >= '0' && s->d[s->pos] <= '9') {
        v = v * 10 + (uint64_t)(s->d[s->pos++] - '0');
        if (v > INT32_MAX) return PNM_TOO_LARGE;
        if (++digits == maxdigits) break;
    }
    if (s->pos < s->n && digits != maxdigits) s->pos++; /* the byte that ended it */
    *out = (uint32_t)v;
    return PNM_OK;
}

static const char *pnm_what(pnm_read r)
{
    return r == PNM_END        ? "ends"
           : r == PNM_BAD_BYTE ? "has a byte that is no digit, space or comment"
                               : "has a number too large";
}

int img_pnm_kind(const uint8_t *d, size_t n)
{
    return n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' && pnm_space(d[2]) ? d[1] - '0' : 0;
}

lector_status img_pnm_header(const uint8_t *d, size_t n, const char *name, img_pnm_info *info, lector_error *err)
{
    memset(info, 0, sizeof *info);
    if (!img_pnm_kind(d, n)) return lector__error(err, LECTOR_ERR_IMAGE, "%s: not a PBM, PGM or PPM header", name);
    info->kind = img_pnm_kind(d, n);
    pnm_in s = {d, n, 2};
    uint32_t v[3] = {0, 0, 1};
    int count = info->kind == 1 || info->kind == 4 ? 2 : 3;
    static const char *const field[3] = {"width", "height", "maxval"};
    for (int i = 0; i < count; i++) {
        pnm_read r = pnm_number(&s, 0, &v[i]);
        if (r != PNM_OK)
            return lector__error(err, LECTOR_ERR_IMAGE, "%s: PNM header %s before its %s", name, pnm_what(r), field[i]);
    }
    if (!v[0] || !v[1])
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: PNM image of an empty size %ux%u", name, v[0], v[1]);
    if (!v[2] || v[2] > 65535)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: PNM maxval %u (1 to 65535)", name, v[2]);
    info->width = v[0];
    info->height = v[1];
    info->maxval = v[2];
    info->offset = s.pos;
    return LECTOR_OK;
}

/* One sample of 8 bits from a plain file's number, as OpenCV maps it. */
static uint8_t plain_sample(uint32_t code, uint32_t maxval)
{
    if (code > maxval) code = maxval;
    return maxval > 255 ? (uint8_t)(code >> 8) : (uint8_t)(code * 255 / maxval);
}

lector_status img_decode_pnm(const uint8_t *d, size_t n, const char *name, const img_limits *limits, img_image *out,
                             lector_error *err)
{
    img_pnm_info h;
    lector_status st = img_pnm_header(d, n, name, &h, err);
    if (st) return st;
    if ((st = img_check_dims(h.width, h.height, name, "PNM", limits, NULL, err))) return st;
    int w = (int)h.width, ht = (int)h.height;
    int bitmap = h.kind == 1 || h.kind == 4, color = h.kind == 3 || h.kind == 6;
    int ch = color ? 3 : 1, wide = h.maxval > 255;
    size_t row_bytes = bitmap ? ((size_t)w + 7) / 8 : (size_t)w * (size_t)ch * (wide ? 2 : 1);
    if (h.kind >= 4 && (n - h.offset) / row_bytes < (size_t)ht)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: PNM raster cut short: %zu bytes of %zu", name, n - h.offset,
                             row_bytes * (size_t)ht);
    if ((st = img_alloc(out, w, ht, 3, err))) return st;
    pnm_in s = {d, n, h.offset};
    for (int y = 0; y < ht; y++) {
        uint8_t *dst = out->data + (size_t)y * out->stride;
        const uint8_t *raw = d + h.offset + (size_t)y * row_bytes;
        for (int x = 0; x < w; x++) {
            uint8_t px[3];
            if (h.kind == 4) {
                px[0] = raw[x >> 3] >> (7 - (x & 7)) & 1 ? 0 : 255;
            } else if (h.kind >= 5) {
                for (int c = 0; c < ch; c++) px[c] = wide ? raw[((size_t)x * ch + c) * 2] : raw[(size_t)x * ch + c];
            } else {
                for (int c = 0; c < ch; c++) {
                    uint32_t code;
                    pnm_read r = pnm_number(&s, bitmap ? 1 : 0, &code);
                    if (r != PNM_OK) {
                        img_release(out);
                        return lector__error(err, LECTOR_ERR_IMAGE, "%s: plain PNM raster %s at pixel (%d, %d)", name,
                                             pnm_what(r), x, y);
                    }
                    px[c] = bitmap ? (code ? 0 : 255) : plain_sample(code, h.maxval);
                }
            }
            /* gray to all three; RGB to BGR */
            dst[3 * x] = px[color ? 2 : 0];
            dst[3 * x + 1] = px[color ? 1 : 0];
            dst[3 * x + 2] = px[0];
        }
    }
    return LECTOR_OK;
}
