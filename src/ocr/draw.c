/*
 * draw.c - lector_draw_result: a picture of a result for people, in the
 * manner of PaddleOCR's draw_ocr_box_txt: the page on the left with each
 * line's box outlined and numbered, a white panel on the right with the same
 * boxes and the recognised text written inside them (FreeType, with a CJK
 * font found on the system), saved as PNG (libspng).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <ft2build.h>
#include FT_FREETYPE_H
#include <spng.h>

#include "image/image.h"
#include "lector.h"
#include "util/util.h"

/* Fonts tried in order; the first one that opens is used. Debian packages:
 * fonts-wqy-microhei, fonts-noto-cjk, fonts-dejavu-core. */
static const char *const font_paths[] = {
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
};

typedef struct canvas {
    uint8_t *px; /* RGB */
    int w, h;
} canvas;

static void put(canvas *c, int x, int y, const uint8_t rgb[3], float a)
{
    if ((unsigned)x >= (unsigned)c->w || (unsigned)y >= (unsigned)c->h) return;
    uint8_t *p = c->px + ((size_t)y * c->w + x) * 3;
    for (int k = 0; k < 3; k++) p[k] = (uint8_t)(p[k] * (1 - a) + rgb[k] * a + 0.5f);
}

static void line(canvas *c, float x0, float y0, float x1, float y1, const uint8_t rgb[3], int thick)
{
    float len = hypotf(x1 - x0, y1 - y0);
    int steps = (int)len + 1;
    for (int i = 0; i <= steps; i++) {
        float t = (float)i / steps;
        int x = (int)lroundf(x0 + (x1 - x0) * t), y = (int)lroundf(y0 + (y1 - y0) * t);
        for (int dy = -thick / 2; dy <= thick / 2; dy++)
            for (int dx = -thick / 2; dx <= thick / 2; dx++) put(c, x + dx, y + dy, rgb, 1.f);
    }
}

/* Next code point of UTF-8 text (invalid bytes read as U+FFFD). */
static uint32_t utf8_next(const char **s)
{
    const unsigned char *p = (const unsigned char *)*s;
    uint32_t cp;
    int n;
    if (p[0] < 0x80) {
        cp = p[0];
        n = 1;
    } else if ((p[0] & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80) {
        cp = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
        n = 2;
    } else if ((p[0] & 0xF0) == 0xE0 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
        cp = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
        n = 3;
    } else if ((p[0] & 0xF8) == 0xF0 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
        cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 | (uint32_t)(p[2] & 0x3F) << 6 |
             (p[3] & 0x3F);
        n = 4;
    } else {
        cp = 0xFFFD;
        n = 1;
    }
    *s += n;
    return cp;
}

/* Writes `text` starting at (x, baseline y) with pixel size `size`; returns
 * the advance. */
static int text(canvas *c, FT_Face face, const char *s, int x, int y, int size, const uint8_t rgb[3])
{
    if (!face || FT_Set_Pixel_Sizes(face, 0, (FT_UInt)size)) return 0;
    int pen = x;
    while (*s) {
        uint32_t cp = utf8_next(&s);
        if (FT_Load_Char(face, cp, FT_LOAD_RENDER)) continue;
        FT_GlyphSlot g = face->glyph;
        for (unsigned r = 0; r < g->bitmap.rows; r++)
            for (unsigned q = 0; q < g->bitmap.width; q++) {
                uint8_t a = g->bitmap.buffer[r * (unsigned)g->bitmap.pitch + q];
                if (a) put(c, pen + g->bitmap_left + (int)q, y - g->bitmap_top + (int)r, rgb, a / 255.f);
            }
        pen += (int)(g->advance.x >> 6);
    }
    return pen - x;
}

static const uint8_t palette[6][3] = {{230, 25, 75},  {60, 180, 75},  {0, 130, 200},
                                      {245, 130, 48}, {145, 30, 180}, {0, 128, 128}};

lector_status lector_draw_result(const char *image_path, const lector_result *r, size_t page, const char *out_png,
                                 lector_error *err)
{
    if (!image_path || !r || !out_png || page >= r->n_pages)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_draw_result: bad argument");
    img_pages pages;
    lector_status st = img_decode_file(image_path, NULL, &pages, err);
    if (st) return st;
    if ((size_t)pages.count <= page) {
        img_pages_free(&pages);
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: has no page %zu", image_path, page);
    }
    const img_image *img = &pages.pages[page];
    const lector_page *pg = &r->pages[page];
    canvas c = {NULL, img->width * 2, img->height};
    c.px = lector__malloc((size_t)c.w * c.h * 3);
    if (!c.px) {
        img_pages_free(&pages);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory drawing", out_png);
    }
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            const uint8_t *s = img->data + (size_t)y * img->stride + (size_t)x * img->channels;
            uint8_t *d = c.px + ((size_t)y * c.w + x) * 3;
            if (img->channels == 1)
                d[0] = d[1] = d[2] = s[0];
            else {
                d[0] = s[2];
                d[1] = s[1];
                d[2] = s[0];
            }
            memset(c.px + ((size_t)y * c.w + x + img->width) * 3, 255, 3);
        }
    const int iw = img->width;
    img_pages_free(&pages); /* img is gone from here on */

    FT_Library ft = NULL;
    FT_Face face = NULL;
    if (FT_Init_FreeType(&ft) == 0)
        for (size_t i = 0; i < LECTOR_ARRAY_LEN(font_paths) && !face; i++)
            if (FT_New_Face(ft, font_paths[i], 0, &face)) face = NULL;
    if (!face) lector__log(LECTOR_LOG_WARN, "no font found: drawing boxes and numbers only");

    int thick = c.h > 1500 ? 3 : 2;
    for (size_t i = 0; i < pg->n_lines; i++) {
        const lector_line *l = &pg->lines[i];
        const uint8_t *col = palette[i % 6];
        for (int k = 0; k < 4; k++) {
            const lector_point *a = &l->box[k], *b = &l->box[(k + 1) % 4];
            line(&c, a->x, a->y, b->x, b->y, col, thick);
            line(&c, a->x + iw, a->y, b->x + iw, b->y, col, 1);
        }
        float bh = hypotf(l->box[3].x - l->box[0].x, l->box[3].y - l->box[0].y);
        float bw = hypotf(l->box[1].x - l->box[0].x, l->box[1].y - l->box[0].y);
        int size = (int)fmaxf(10.f, fminf(fminf(bh, bw) * 0.8f, 64.f));
        char num[24];
        snprintf(num, sizeof num, "%zu", i + 1);
        int nsize = size < 14 ? 14 : size / 2 + 7;
        text(&c, face, num, (int)l->box[0].x, (int)l->box[0].y - 2, nsize, col);
        static const uint8_t black[3] = {0, 0, 0};
        text(&c, face, l->text, (int)l->box[0].x + iw + 3, (int)(l->box[0].y + bh * 0.5f + size * 0.35f), size, black);
    }
    if (face) FT_Done_Face(face);
    if (ft) FT_Done_FreeType(ft);

    FILE *f = fopen(out_png, "wb");
    if (!f) {
        lector__free(c.px);
        return lector__error(err, LECTOR_ERR_IO, "%s: cannot create", out_png);
    }
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    struct spng_ihdr ih = {(uint32_t)c.w, (uint32_t)c.h, 8, SPNG_COLOR_TYPE_TRUECOLOR, 0, 0, 0};
    int rc = !ctx || spng_set_png_file(ctx, f) || spng_set_ihdr(ctx, &ih) ||
             spng_encode_image(ctx, c.px, (size_t)c.w * c.h * 3, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    spng_ctx_free(ctx);
    rc |= fclose(f) != 0;
    lector__free(c.px);
    if (rc) return lector__error(err, LECTOR_ERR_IO, "%s: cannot write the PNG", out_png);
    return LECTOR_OK;
}
