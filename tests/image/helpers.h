/*
 * helpers.h - encoders used by the image tests and make_corpus to create
 * inputs with known pixels (through the libraries' own encoders, or, for
 * BMP, by writing the documented layout byte by byte).
 */
#ifndef LECTOR_TEST_IMAGE_HELPERS_H
#define LECTOR_TEST_IMAGE_HELPERS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data;
    size_t size;
} th_buf;

void th_buf_free(th_buf *b);
/* Reads a whole file; returns 0 on success. */
int th_read_file(const char *path, th_buf *out);
int th_write_file(const char *path, const void *data, size_t size);

/* PNG through libspng: color_type 0/2/3/4/6, bit_depth 1..16; `pixels` rows
 * packed as PNG stores them except that 16-bit samples are in host byte order (libspng's SPNG_FMT_PNG); palette (RGB triplets,
 * n_palette entries) for color type 3; trns: tRNS bytes or NULL. 0 = ok. */
extern int th_png_interlace; /* 1: Adam7 for the next th_png_encode calls */
int th_png_encode(th_buf *out, uint32_t w, uint32_t h, int color_type, int bit_depth, const uint8_t *pixels,
                  const uint8_t *palette, int n_palette, const uint8_t *trns, int n_trns);

/* BMP: writes the headers (BITMAPINFOHEADER when header_size = 40,
 * BITMAPV5HEADER when 124), palette (B,G,R,0 quads) and rows given bottom-up
 * or top-down exactly as supplied (`rows` already padded to 4 bytes). */
int th_bmp_encode(th_buf *out, int32_t w, int32_t h, int bpp, uint32_t compression, uint32_t header_size,
                  const uint32_t masks[4], const uint8_t *palette_bgrx, int n_palette, const uint8_t *rows,
                  size_t rows_size);

/* Multi-page RGB TIFF through libtiff (written to a temporary file and read
 * back): page i is widths[i] x heights[i] filled with rgb[i]. compression:
 * libtiff COMPRESSION_* value. */
int th_tiff_pages(th_buf *out, int n, const int *widths, const int *heights, const uint8_t (*rgb)[3], int compression);

#endif
