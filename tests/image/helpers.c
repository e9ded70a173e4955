/*
 * helpers.c - see helpers.h.
 */
#include "helpers.h"

#include <spng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <unistd.h>

void th_buf_free(th_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->size = 0;
}

int th_read_file(const char *path, th_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->data = malloc(n > 0 ? (size_t)n : 1);
    out->size = n > 0 ? (size_t)n : 0;
    size_t got = out->size ? fread(out->data, 1, out->size, f) : 0;
    fclose(f);
    return got == out->size ? 0 : -1;
}

int th_write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t put = size ? fwrite(data, 1, size, f) : 0;
    fclose(f);
    return put == size ? 0 : -1;
}

int th_png_interlace = 0;

int th_png_encode(th_buf *out, uint32_t w, uint32_t h, int color_type, int bit_depth, const uint8_t *pixels,
                  const uint8_t *palette, int n_palette, const uint8_t *trns, int n_trns)
{
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    if (!ctx) return -1;
    spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    struct spng_ihdr ihdr = {w, h, (uint8_t)bit_depth, (uint8_t)color_type, 0, 0, (uint8_t)th_png_interlace};
    int rc = spng_set_ihdr(ctx, &ihdr);
    if (!rc && color_type == 3) {
        struct spng_plte plte;
        memset(&plte, 0, sizeof(plte));
        plte.n_entries = (uint32_t)n_palette;
        for (int i = 0; i < n_palette; i++) {
            plte.entries[i].red = palette[3 * i];
            plte.entries[i].green = palette[3 * i + 1];
            plte.entries[i].blue = palette[3 * i + 2];
        }
        rc = spng_set_plte(ctx, &plte);
    }
    if (!rc && trns) {
        struct spng_trns t;
        memset(&t, 0, sizeof(t));
        if (color_type == 3) {
            t.n_type3_entries = (uint32_t)n_trns;
            memcpy(t.type3_alpha, trns, (size_t)n_trns);
        } else if (color_type == 0) {
            t.gray = (uint16_t)(trns[0] << 8 | trns[1]);
        } else {
            t.red = (uint16_t)(trns[0] << 8 | trns[1]);
            t.green = (uint16_t)(trns[2] << 8 | trns[3]);
            t.blue = (uint16_t)(trns[4] << 8 | trns[5]);
        }
        rc = spng_set_trns(ctx, &t);
    }
    int channels = color_type == 2 ? 3 : color_type == 4 ? 2 : color_type == 6 ? 4 : 1;
    size_t row = ((size_t)w * channels * bit_depth + 7) / 8;
    if (!rc) rc = spng_encode_image(ctx, pixels, row * h, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    if (!rc) {
        size_t n = 0;
        void *png = spng_get_png_buffer(ctx, &n, &rc);
        if (png) {
            out->data = png; /* malloc'd by libspng's default allocator */
            out->size = n;
        }
    }
    spng_ctx_free(ctx);
    return rc ? -1 : 0;
}

static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

int th_bmp_encode(th_buf *out, int32_t w, int32_t h, int bpp, uint32_t compression, uint32_t header_size,
                  const uint32_t masks[4], const uint8_t *palette_bgrx, int n_palette, const uint8_t *rows,
                  size_t rows_size)
{
    size_t extra = (header_size == 40 && masks) ? 12 : 0;
    size_t off = 14 + header_size + extra + (size_t)n_palette * 4;
    size_t total = off + rows_size;
    uint8_t *b = calloc(1, total);
    if (!b) return -1;
    b[0] = 'B', b[1] = 'M';
    put32(b + 2, (uint32_t)total);
    put32(b + 10, (uint32_t)off);
    put32(b + 14, header_size);
    put32(b + 18, (uint32_t)w);
    put32(b + 22, (uint32_t)h);
    put16(b + 26, 1);
    put16(b + 28, (unsigned)bpp);
    put32(b + 30, compression);
    put32(b + 34, (uint32_t)rows_size);
    put32(b + 46, (uint32_t)n_palette);
    if (masks) {
        for (int i = 0; i < (header_size >= 56 ? 4 : 3); i++) put32(b + 54 + 4 * i, masks[i]);
    }
    if (n_palette) memcpy(b + 14 + header_size + extra, palette_bgrx, (size_t)n_palette * 4);
    memcpy(b + off, rows, rows_size);
    out->data = b;
    out->size = total;
    return 0;
}

int th_tiff_pages(th_buf *out, int n, const int *widths, const int *heights, const uint8_t (*rgb)[3], int compression)
{
    char path[] = "/tmp/lector_tiff_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    close(fd);
    TIFF *t = TIFFOpen(path, "w");
    if (!t) return -1;
    for (int p = 0; p < n; p++) {
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, (uint32_t)widths[p]);
        TIFFSetField(t, TIFFTAG_IMAGELENGTH, (uint32_t)heights[p]);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 3);
        TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_RGB);
        TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
        TIFFSetField(t, TIFFTAG_COMPRESSION, compression);
        TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, (uint32_t)heights[p]);
        TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
        TIFFSetField(t, TIFFTAG_PAGENUMBER, p, n);
        uint8_t *row = malloc((size_t)widths[p] * 3);
        for (int x = 0; x < widths[p]; x++) memcpy(row + 3 * x, rgb[p], 3);
        for (int y = 0; y < heights[p]; y++) TIFFWriteScanline(t, row, (uint32_t)y, 0);
        free(row);
        TIFFWriteDirectory(t);
    }
    TIFFClose(t);
    int rc = th_read_file(path, out);
    unlink(path);
    return rc;
}
