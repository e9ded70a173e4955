/*
 * decode_bmp.c - a small, careful BMP parser.
 *
 * Supported: BITMAPCOREHEADER (OS/2, 12 bytes) and BITMAPINFOHEADER and its
 * V2..V5 extensions (40..124 bytes); 1/4/8-bit palette, 16-bit (555 or
 * bit fields), 24-bit, 32-bit (BI_RGB: 4th byte ignored, as OpenCV does;
 * BI_BITFIELDS / BI_ALPHABITFIELDS with an alpha mask: composited on white
 * unless every alpha is 0, which writers use for "no alpha");
 * bottom-up and top-down rows. RLE and embedded JPEG/PNG are refused.
 * Every offset and size is checked against the buffer before it is read;
 * palette indices beyond the palette give black.
 */
#include <string.h>

#include "image/decode_internal.h"
#include "util/util.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static unsigned le16(const uint8_t *p) { return p[0] | (unsigned)p[1] << 8; }

typedef struct {
    uint32_t mask;
    int shift;
    int bits;
} bmp_field;

static bmp_field field_of(uint32_t mask)
{
    bmp_field f = {mask, 0, 0};
    if (!mask) return f;
    while (!((mask >> f.shift) & 1)) f.shift++;
    while (f.shift + f.bits < 32 && ((mask >> (f.shift + f.bits)) & 1)) f.bits++;
    return f;
}

static uint8_t field_get(const bmp_field *f, uint32_t v, uint8_t absent)
{
    if (!f->mask) return absent;
    uint64_t x = (v & f->mask) >> f->shift;
    uint64_t max = (f->bits >= 32) ? 0xFFFFFFFFu : ((1ull << f->bits) - 1);
    x &= max;
    return (uint8_t)((x * 255 + max / 2) / max);
}

lector_status img_decode_bmp(const uint8_t *d, size_t n, const char *name, const img_limits *limits, img_image *out,
                             lector_error *err)
{
    if (n < 26) return lector__error(err, LECTOR_ERR_IMAGE, "%s: truncated BMP header (%zu bytes)", name, n);
    uint32_t off = le32(d + 10), hs = le32(d + 14);
    int64_t w, h;
    unsigned bpp;
    uint32_t comp = 0, clr_used = 0;
    size_t pal_entry = 4;
    if (hs == 12) {
        w = le16(d + 18), h = le16(d + 20), bpp = le16(d + 24);
        pal_entry = 3;
    } else if (hs >= 40 && hs <= 124) {
        if (n < 14 + (size_t)hs)
            return lector__error(err, LECTOR_ERR_IMAGE, "%s: truncated BMP header (%zu bytes)", name, n);
        w = (int32_t)le32(d + 18), h = (int32_t)le32(d + 22), bpp = le16(d + 28);
        comp = le32(d + 30), clr_used = le32(d + 46);
    } else {
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: unsupported BMP header size %u", name, (unsigned)hs);
    }
    if (h == INT32_MIN) return lector__error(err, LECTOR_ERR_IMAGE, "%s: invalid BMP height %lld", name, (long long)h);
    int top_down = h < 0;
    if (top_down) h = -h;
    if (w <= 0 || h <= 0)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: invalid BMP size %lldx%lld", name, (long long)w, (long long)h);
    if (comp == 1 || comp == 2)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: RLE-compressed BMP is not supported", name);
    if (comp != 0 && comp != 3 && comp != 6)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: unsupported BMP compression %u", name, (unsigned)comp);
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: unsupported BMP bit depth %u", name, bpp);
    if (comp != 0 && bpp != 16 && bpp != 32)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: BMP bit fields need 16 or 32 bits, not %u", name, bpp);

    /* Bit fields (16/32-bit): masks sit at file offset 54 for every header >= 40. */
    bmp_field fr, fg, fb, fa;
    int use_alpha = 0;
    size_t pal_off = 14 + (size_t)hs;
    if (comp == 3 || comp == 6) {
        size_t need = comp == 6 ? 70 : 66;
        if (n < need) return lector__error(err, LECTOR_ERR_IMAGE, "%s: truncated BMP bit fields", name);
        fr = field_of(le32(d + 54)), fg = field_of(le32(d + 58)), fb = field_of(le32(d + 62));
        fa = field_of((comp == 6 || hs >= 56) ? le32(d + 66) : 0);
        use_alpha = fa.mask != 0;
        if (hs == 40) pal_off += comp == 6 ? 16 : 12;
    } else if (bpp == 16) {
        fr = field_of(0x7C00), fg = field_of(0x03E0), fb = field_of(0x001F), fa = field_of(0);
    } else {
        fr = field_of(0xFF0000), fg = field_of(0xFF00), fb = field_of(0xFF), fa = field_of(0);
    }

    uint8_t palette[256][3];
    int ncolors = 0;
    if (bpp <= 8) {
        uint32_t want = clr_used ? clr_used : (1u << bpp);
        if (want > 256) want = 256;
        size_t end = LECTOR_MIN((size_t)off, n);
        if (pal_off < end)
            want = (uint32_t)LECTOR_MIN((size_t)want, (end - pal_off) / pal_entry);
        else
            want = 0;
        if (want == 0) return lector__error(err, LECTOR_ERR_IMAGE, "%s: BMP palette missing", name);
        ncolors = (int)want;
        for (int i = 0; i < ncolors; i++) memcpy(palette[i], d + pal_off + (size_t)i * pal_entry, 3);
    }

    if (off < 14 + hs || off >= n)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: bogus BMP pixel data offset %u (file is %zu bytes)", name,
                             (unsigned)off, n);
    lector_status st = img_check_dims((uint64_t)w, (uint64_t)h, name, "BMP", limits, NULL, err);
    if (st != LECTOR_OK) return st;
    uint64_t row_bytes = ((uint64_t)w * bpp + 31) / 32 * 4;
    uint64_t last_row = ((uint64_t)w * bpp + 7) / 8;
    if ((uint64_t)(n - off) < row_bytes * (uint64_t)(h - 1) + last_row)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: truncated BMP pixel data (%zu of %llu bytes)", name, n - off,
                             (unsigned long long)(row_bytes * (uint64_t)h));
    const uint8_t *pix = d + off;

    if (use_alpha) { /* all-zero alpha means "no alpha" */
        int any = 0;
        for (int64_t y = 0; y < h && !any; y++) {
            const uint8_t *s = pix + (size_t)(row_bytes * (uint64_t)y);
            for (int64_t x = 0; x < w; x++) {
                uint32_t v = bpp == 32 ? le32(s + x * 4) : le16(s + x * 2);
                if (v & fa.mask) {
                    any = 1;
                    break;
                }
            }
        }
        use_alpha = any;
    }

    st = img_alloc(out, (int)w, (int)h, 3, err);
    if (st != LECTOR_OK) {
        lector__error_prefix(err, "%s", name);
        return st;
    }
    for (int64_t y = 0; y < h; y++) {
        const uint8_t *s = pix + (size_t)(row_bytes * (uint64_t)y);
        uint8_t *o = out->data + (size_t)(top_down ? y : h - 1 - y) * out->stride;
        for (int64_t x = 0; x < w; x++, o += 3) {
            switch (bpp) {
            case 1:
            case 4:
            case 8: {
                unsigned idx;
                if (bpp == 8)
                    idx = s[x];
                else if (bpp == 4)
                    idx = (s[x >> 1] >> ((x & 1) ? 0 : 4)) & 15;
                else
                    idx = (s[x >> 3] >> (7 - (x & 7))) & 1;
                if ((int)idx < ncolors)
                    memcpy(o, palette[idx], 3); /* palette is B,G,R */
                else
                    o[0] = o[1] = o[2] = 0;
                break;
            }
            case 24: memcpy(o, s + x * 3, 3); break;
            default: {
                uint32_t v = bpp == 32 ? le32(s + x * 4) : le16(s + x * 2);
                uint8_t px[4] = {field_get(&fr, v, 0), field_get(&fg, v, 0), field_get(&fb, v, 0),
                                 use_alpha ? field_get(&fa, v, 255) : 255};
                img_row_from_rgba(o, px, 1, 0);
            }
            }
        }
    }
    return LECTOR_OK;
}
