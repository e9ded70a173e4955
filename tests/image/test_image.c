/*
 * test_image.c - decoding: real images from ../shared/data and generated
 * images with known pixels (PNG/WebP/TIFF through their own encoders, BMP
 * written byte by byte), EXIF orientation, alpha, limits, raw pixels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <tiffio.h>
#include <turbojpeg.h>
#include <webp/encode.h>
#include <zlib.h>

#include "helpers.h"
#include "image/decode_internal.h"
#include "image/image.h"
#include "util/util.h"

static char *data_path(const char *rel)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", LECTOR_DATA_DIR, rel);
    return buf;
}

/* Reads a data file or skips the test when the shared data set is absent. */
static void read_data(const char *rel, th_buf *b)
{
    if (th_read_file(data_path(rel), b) != 0) {
        fprintf(stderr, "skipping: %s not found\n", data_path(rel));
        skip();
    }
}

static const uint8_t *px(const img_image *img, int x, int y)
{
    return img->data + (size_t)y * img->stride + (size_t)x * img->channels;
}

static lector_status decode(const th_buf *b, const char *name, img_pages *pages, lector_error *err)
{
    return img_decode(b->data, b->size, name, NULL, pages, err);
}

static void test_detect(void **state)
{
    assert_int_equal(img_detect((const uint8_t *)"\xFF\xD8\xFF\xE0", 4), IMG_FORMAT_JPEG);
    assert_int_equal(img_detect((const uint8_t *)"\x89PNG\r\n\x1a\n", 8), IMG_FORMAT_PNG);
    assert_int_equal(img_detect((const uint8_t *)"II*\0", 4), IMG_FORMAT_TIFF);
    assert_int_equal(img_detect((const uint8_t *)"MM\0*", 4), IMG_FORMAT_TIFF);
    assert_int_equal(img_detect((const uint8_t *)"RIFF\0\0\0\0WEBP", 12), IMG_FORMAT_WEBP);
    assert_int_equal(img_detect((const uint8_t *)"BM", 2), IMG_FORMAT_BMP);
    assert_int_equal(img_detect((const uint8_t *)"hello", 5), IMG_FORMAT_UNKNOWN);
    assert_int_equal(img_detect(NULL, 0), IMG_FORMAT_UNKNOWN);
    img_pages p;
    lector_error err;
    assert_int_equal(img_decode((const uint8_t *)"hello world", 11, "notes.jpg", NULL, &p, &err), LECTOR_ERR_IMAGE);
    assert_non_null(strstr(err.message, "notes.jpg"));
    assert_int_equal(img_decode((const uint8_t *)"", 0, "empty.png", NULL, &p, &err), LECTOR_ERR_IMAGE);
    assert_non_null(strstr(err.message, "empty.png"));
}

/* ICDAR 2015 test images are all 1280x720 (SOURCE.md); pixels must equal
 * TurboJPEG's own RGB decode with R and B swapped. */
static void test_jpeg_icdar(void **state)
{
    const char *names[] = {"icdar2015_test/ch4_test_images/img_1.jpg", "icdar2015_test/ch4_test_images/img_10.jpg",
                           "icdar2015_test/ch4_test_images/img_500.jpg"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        th_buf b = {0};
        read_data(names[i], &b);
        img_pages p;
        lector_error err;
        assert_int_equal(decode(&b, names[i], &p, &err), LECTOR_OK);
        assert_int_equal(p.count, 1);
        img_image *im = &p.pages[0];
        assert_int_equal(im->width, 1280);
        assert_int_equal(im->height, 720);
        assert_int_equal(im->channels, 3);
        tjhandle tj = tjInitDecompress();
        uint8_t *rgb = malloc(1280 * 720 * 3);
        assert_int_equal(tjDecompress2(tj, b.data, b.size, rgb, 1280, 1280 * 3, 720, TJPF_RGB, 0), 0);
        tjDestroy(tj);
        for (int y = 0; y < 720; y++)
            for (int x = 0; x < 1280; x++) {
                const uint8_t *q = px(im, x, y), *r = rgb + ((size_t)y * 1280 + x) * 3;
                if (q[0] != r[2] || q[1] != r[1] || q[2] != r[0]) fail_msg("%s differs at %d,%d", names[i], x, y);
            }
        free(rgb);
        img_pages_free(&p);
        th_buf_free(&b);
    }
}

/* A 64x32 JPEG with four flat quadrants; EXIF orientation o inserted as an
 * APP1 segment right after SOI. */
static const uint8_t quad_val[4] = {0, 255, 128, 64}; /* TL, TR, BL, BR */

static th_buf make_oriented_jpeg(int o)
{
    int w = 64, h = 32;
    uint8_t *rgb = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) memset(rgb + ((size_t)y * w + x) * 3, quad_val[(y >= h / 2) * 2 + (x >= w / 2)], 3);
    tjhandle tj = tjInitCompress();
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    assert_int_equal(tjCompress2(tj, rgb, w, w * 3, h, TJPF_RGB, &jpg, &n, TJSAMP_444, 100, 0), 0);
    tjDestroy(tj);
    free(rgb);
    /* APP1: "Exif\0\0" + little-endian TIFF header + IFD0 with one entry. */
    uint8_t app1[] = {0xFF, 0xE1, 0,    34,   'E', 'x', 'i', 'f', 0, 0, 'I',        'I', 42, 0, 8, 0, 0, 0,
                      1,    0,    0x12, 0x01, 3,   0,   1,   0,   0, 0, (uint8_t)o, 0,   0,  0, 0, 0, 0, 0};
    th_buf b;
    b.size = n + sizeof app1;
    b.data = malloc(b.size);
    memcpy(b.data, jpg, 2);
    memcpy(b.data + 2, app1, sizeof app1);
    memcpy(b.data + 2 + sizeof app1, jpg + 2, n - 2);
    tjFree(jpg);
    return b;
}

static void test_jpeg_exif_synthetic(void **state)
{
    /* which input quadrant lands at the output's top-left and top-right */
    static const int tl[9] = {0, 0, 1, 3, 2, 0, 2, 3, 1};
    static const int tr[9] = {0, 1, 0, 2, 3, 2, 0, 1, 3};
    for (int o = 1; o <= 8; o++) {
        th_buf b = make_oriented_jpeg(o);
        assert_int_equal(img_jpeg_exif_orientation(b.data, b.size), o);
        img_pages p;
        lector_error err;
        assert_int_equal(decode(&b, "oriented.jpg", &p, &err), LECTOR_OK);
        img_image *im = &p.pages[0];
        assert_int_equal(im->width, o >= 5 ? 32 : 64);
        assert_int_equal(im->height, o >= 5 ? 64 : 32);
        int v_tl = px(im, im->width / 4, im->height / 4)[1];
        int v_tr = px(im, im->width * 3 / 4, im->height / 4)[1];
        if (abs(v_tl - quad_val[tl[o]]) > 3 || abs(v_tr - quad_val[tr[o]]) > 3)
            fail_msg("orientation %d: top-left %d (want %d) top-right %d (want %d)", o, v_tl, quad_val[tl[o]], v_tr,
                     quad_val[tr[o]]);
        img_pages_free(&p);
        th_buf_free(&b);
    }
}

/* rapidocr_tests' img_exif_orientation.jpg: stored 752x306 with an EXIF
 * orientation; the decoded image must carry the rotated size. */
static void test_jpeg_exif_real(void **state)
{
    th_buf b = {0};
    read_data("rapidocr_tests/images/img_exif_orientation.jpg", &b);
    int o = img_jpeg_exif_orientation(b.data, b.size);
    assert_true(o > 1 && o <= 8);
    img_pages p;
    lector_error err;
    assert_int_equal(decode(&b, "img_exif_orientation.jpg", &p, &err), LECTOR_OK);
    if (o >= 5) {
        assert_int_equal(p.pages[0].width, 306);
        assert_int_equal(p.pages[0].height, 752);
    } else {
        assert_int_equal(p.pages[0].width, 752);
        assert_int_equal(p.pages[0].height, 306);
    }
    img_pages_free(&p);
    th_buf_free(&b);
}

static void check_png(uint32_t w, uint32_t h, int ct, int bd, const uint8_t *pixels, const uint8_t *pal, int npal,
                      const uint8_t *trns, int ntrns, const uint8_t *expect_bgr)
{
    th_buf b = {0};
    assert_int_equal(th_png_encode(&b, w, h, ct, bd, pixels, pal, npal, trns, ntrns), 0);
    assert_int_equal(b.data[28], th_png_interlace); /* IHDR interlace method */
    img_pages p;
    lector_error err;
    lector_status st = decode(&b, "gen.png", &p, &err);
    if (st != LECTOR_OK) fail_msg("color type %d depth %d: %s", ct, bd, err.message);
    img_image *im = &p.pages[0];
    assert_int_equal(im->width, (int)w);
    assert_int_equal(im->height, (int)h);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            const uint8_t *q = px(im, (int)x, (int)y), *e = expect_bgr + (y * w + x) * 3;
            if (memcmp(q, e, 3))
                fail_msg("ct %d bd %d at %u,%u: got %d,%d,%d want %d,%d,%d", ct, bd, x, y, q[0], q[1], q[2], e[0], e[1],
                         e[2]);
        }
    img_pages_free(&p);
    th_buf_free(&b);
}

static void test_png_kinds(void **state)
{
    for (th_png_interlace = 0; th_png_interlace <= 1; th_png_interlace++) {
        enum { W = 7, H = 5, N = W * H };
        uint8_t rgb[N * 3], exp[N * 3], gray[N], rgb16[N * 6], ga[N * 2], rgba[N * 4], idx[N];
        uint32_t s = 12345;
        for (int i = 0; i < N * 3; i++) rgb[i] = (uint8_t)((s = s * 1103515245 + 12345) >> 16);
        /* RGB 8 */
        for (int i = 0; i < N; i++)
            exp[3 * i] = rgb[3 * i + 2], exp[3 * i + 1] = rgb[3 * i + 1], exp[3 * i + 2] = rgb[3 * i];
        check_png(W, H, 2, 8, rgb, NULL, 0, NULL, 0, exp);
        /* RGB 16 (libspng takes host-order samples): high byte is kept (as cv2.imread) */
        for (int i = 0; i < N * 3; i++) {
            uint16_t v = (uint16_t)(rgb[i] << 8 | (255 - rgb[i]));
            memcpy(rgb16 + 2 * i, &v, 2);
        }
        check_png(W, H, 2, 16, rgb16, NULL, 0, NULL, 0, exp);
        /* gray 8 */
        for (int i = 0; i < N; i++) gray[i] = rgb[i], memset(exp + 3 * i, rgb[i], 3);
        check_png(W, H, 0, 8, gray, NULL, 0, NULL, 0, exp);
        /* palette with a fully transparent entry 3 (white background) */
        uint8_t pal[4 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9}, trns[4] = {255, 255, 255, 0};
        for (int i = 0; i < N; i++) {
            idx[i] = (uint8_t)(i % 4);
            const uint8_t *c = pal + 3 * idx[i];
            if (idx[i] == 3)
                memset(exp + 3 * i, 255, 3);
            else
                exp[3 * i] = c[2], exp[3 * i + 1] = c[1], exp[3 * i + 2] = c[0];
        }
        check_png(W, H, 3, 8, idx, pal, 4, trns, 4, exp);
        /* gray + alpha: dark content, half transparent -> on white */
        for (int i = 0; i < N; i++) {
            uint8_t g = (uint8_t)(i * 3), a = (uint8_t)(i % 2 ? 255 : 128);
            ga[2 * i] = g, ga[2 * i + 1] = a;
            memset(exp + 3 * i, (g * a + 255 * (255 - a) + 127) / 255, 3);
        }
        check_png(W, H, 4, 8, ga, NULL, 0, NULL, 0, exp);
        /* RGBA, opaque except one transparent pixel; dark content */
        for (int i = 0; i < N; i++) {
            rgba[4 * i] = (uint8_t)(rgb[3 * i] / 2), rgba[4 * i + 1] = (uint8_t)(rgb[3 * i + 1] / 2),
                     rgba[4 * i + 2] = (uint8_t)(rgb[3 * i + 2] / 2), rgba[4 * i + 3] = i == 5 ? 0 : 255;
            if (i == 5)
                memset(exp + 3 * i, 255, 3);
            else
                exp[3 * i] = rgba[4 * i + 2], exp[3 * i + 1] = rgba[4 * i + 1], exp[3 * i + 2] = rgba[4 * i];
        }
        check_png(W, H, 6, 8, rgba, NULL, 0, NULL, 0, exp);
        /* 1-bit gray */
        uint8_t bits[H] = {0xAA, 0x55, 0xAA, 0x55, 0xAA};
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) memset(exp + 3 * (y * W + x), ((bits[y] >> (7 - x)) & 1) ? 255 : 0, 3);
        check_png(W, H, 0, 1, bits, NULL, 0, NULL, 0, exp);
    }
    th_png_interlace = 0;
}

/* RapidOCR's transparent test images: black text -> on white; white text
 * -> composited on black and inverted, so both give dark text on white. */
static void test_png_transparent_real(void **state)
{
    const char *names[2] = {"rapidocr_tests/images/black_font_color_transparent.png",
                            "rapidocr_tests/images/white_font_color_transparent.png"};
    for (int k = 0; k < 2; k++) {
        th_buf b = {0};
        read_data(names[k], &b);
        img_pages p;
        lector_error err;
        assert_int_equal(decode(&b, names[k], &p, &err), LECTOR_OK);
        img_image *im = &p.pages[0];
        assert_int_equal(im->width, 1890);
        assert_int_equal(im->height, 503);
        int bg = px(im, 0, 0)[0];
        assert_int_equal(bg, 255);
        size_t contrast = 0;
        for (int y = 0; y < im->height; y++)
            for (int x = 0; x < im->width; x++) contrast += abs(px(im, x, y)[1] - bg) > 128;
        assert_true(contrast > 1000); /* the text is there */
        img_pages_free(&p);
        th_buf_free(&b);
    }
}

static void test_tiff_real(void **state)
{
    const char *names[] = {"tesseract_test/images/eurotext.tif", "tesseract_test/images/8071_093.3B.tif",
                           "tesseract_test/images/8087_054.3B.tif"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        th_buf b = {0};
        read_data(names[i], &b);
        img_pages p;
        lector_error err;
        lector_status st = decode(&b, names[i], &p, &err);
        if (st != LECTOR_OK) fail_msg("%s", err.message);
        TIFF *t = TIFFOpen(data_path(names[i]), "r");
        assert_non_null(t);
        uint32_t w = 0, h = 0;
        TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
        int ndirs = TIFFNumberOfDirectories(t);
        TIFFClose(t);
        assert_int_equal(p.count, ndirs);
        assert_int_equal(p.pages[0].width, (int)w);
        assert_int_equal(p.pages[0].height, (int)h);
        img_pages_free(&p);
        th_buf_free(&b);
    }
}

static void test_tiff_multipage(void **state)
{
    const int ws[3] = {5, 17, 3}, hs[3] = {4, 2, 9};
    const uint8_t rgb[3][3] = {{10, 20, 30}, {200, 100, 0}, {1, 2, 3}};
    const int comps[3] = {COMPRESSION_NONE, COMPRESSION_LZW, COMPRESSION_ADOBE_DEFLATE};
    for (int c = 0; c < 3; c++) {
        th_buf b = {0};
        assert_int_equal(th_tiff_pages(&b, 3, ws, hs, rgb, comps[c]), 0);
        img_pages p;
        lector_error err;
        lector_status st = decode(&b, "pages.tif", &p, &err);
        if (st != LECTOR_OK) fail_msg("%s", err.message);
        assert_int_equal(p.count, 3);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(p.pages[i].width, ws[i]);
            assert_int_equal(p.pages[i].height, hs[i]);
            const uint8_t *q = px(&p.pages[i], ws[i] - 1, hs[i] - 1);
            assert_int_equal(q[0], rgb[i][2]);
            assert_int_equal(q[1], rgb[i][1]);
            assert_int_equal(q[2], rgb[i][0]);
        }
        img_pages_free(&p);
        /* page limit */
        img_limits lim;
        img_limits_default(&lim);
        lim.max_pages = 2;
        assert_int_equal(img_decode(b.data, b.size, "pages.tif", &lim, &p, &err), LECTOR_ERR_LIMIT);
        assert_non_null(strstr(err.message, "pages.tif"));
        assert_null(p.pages);
        th_buf_free(&b);
    }
}

static void test_webp(void **state)
{
    enum { W = 9, H = 6, N = W * H };
    uint8_t bgr[N * 3], rgba[N * 4];
    for (int i = 0; i < N * 3; i++) bgr[i] = (uint8_t)(i * 37 + 11);
    uint8_t *enc = NULL;
    size_t n = WebPEncodeLosslessBGR(bgr, W, H, W * 3, &enc);
    assert_true(n > 0);
    img_pages p;
    lector_error err;
    assert_int_equal(img_decode(enc, n, "gen.webp", NULL, &p, &err), LECTOR_OK);
    assert_int_equal(p.pages[0].width, W);
    for (int y = 0; y < H; y++) assert_memory_equal(px(&p.pages[0], 0, y), bgr + y * W * 3, W * 3);
    img_pages_free(&p);
    /* truncated */
    assert_int_equal(img_decode(enc, n / 2, "cut.webp", NULL, &p, &err), LECTOR_ERR_IMAGE);
    assert_non_null(strstr(err.message, "cut.webp"));
    WebPFree(enc);
    /* with alpha: dark pixels, alternate transparent -> white */
    for (int i = 0; i < N; i++)
        rgba[4 * i] = 10, rgba[4 * i + 1] = 20, rgba[4 * i + 2] = 30, rgba[4 * i + 3] = i % 2 ? 0 : 255;
    n = WebPEncodeLosslessRGBA(rgba, W, H, W * 4, &enc);
    assert_int_equal(img_decode(enc, n, "alpha.webp", NULL, &p, &err), LECTOR_OK);
    for (int i = 0; i < N; i++) {
        const uint8_t *q = px(&p.pages[0], i % W, i / W);
        if (i % 2)
            assert_true(q[0] == 255 && q[1] == 255 && q[2] == 255);
        else
            assert_true(q[0] == 30 && q[1] == 20 && q[2] == 10);
    }
    img_pages_free(&p);
    WebPFree(enc);
}

/* BMP: 3x2 image, pixel (x,y) = colour cols[y*3+x] (R,G,B). */
static const uint8_t cols[6][3] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}, {40, 50, 60}, {70, 80, 90}};

static void check_bmp(th_buf *b, const char *what)
{
    img_pages p;
    lector_error err;
    lector_status st = img_decode(b->data, b->size, what, NULL, &p, &err);
    if (st != LECTOR_OK) fail_msg("%s: %s", what, err.message);
    assert_int_equal(p.pages[0].width, 3);
    assert_int_equal(p.pages[0].height, 2);
    for (int i = 0; i < 6; i++) {
        const uint8_t *q = px(&p.pages[0], i % 3, i / 3);
        if (q[0] != cols[i][2] || q[1] != cols[i][1] || q[2] != cols[i][0])
            fail_msg("%s pixel %d: %d,%d,%d", what, i, q[0], q[1], q[2]);
    }
    img_pages_free(&p);
    th_buf_free(b);
}

static void test_bmp(void **state)
{
    th_buf b;
    uint8_t rows[2 * 16];
    /* 24-bit bottom-up: row stride 12 (9 bytes + 3 padding) */
    memset(rows, 0xEE, sizeof rows);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) {
            uint8_t *d = rows + (1 - y) * 12 + x * 3;
            d[0] = cols[y * 3 + x][2], d[1] = cols[y * 3 + x][1], d[2] = cols[y * 3 + x][0];
        }
    th_bmp_encode(&b, 3, 2, 24, 0, 40, NULL, NULL, 0, rows, 24);
    check_bmp(&b, "bottomup24.bmp");
    /* 24-bit top-down */
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) {
            uint8_t *d = rows + y * 12 + x * 3;
            d[0] = cols[y * 3 + x][2], d[1] = cols[y * 3 + x][1], d[2] = cols[y * 3 + x][0];
        }
    th_bmp_encode(&b, 3, -2, 24, 0, 40, NULL, NULL, 0, rows, 24);
    check_bmp(&b, "topdown24.bmp");
    /* 32-bit BI_RGB (4th byte ignored) */
    uint8_t rows32[24];
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) {
            uint8_t *d = rows32 + (1 - y) * 12 + x * 4;
            d[0] = cols[y * 3 + x][2], d[1] = cols[y * 3 + x][1], d[2] = cols[y * 3 + x][0], d[3] = 0;
        }
    th_bmp_encode(&b, 3, 2, 32, 0, 40, NULL, NULL, 0, rows32, 24);
    check_bmp(&b, "rgb32.bmp");
    /* 32-bit BI_BITFIELDS, V5 header, masks R=0xFF00 G=0xFF0000 B=0xFF000000 A=0xFF (all opaque) */
    uint32_t masks[4] = {0x0000FF00u, 0x00FF0000u, 0xFF000000u, 0x000000FFu};
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) {
            uint8_t *d = rows32 + (1 - y) * 12 + x * 4;
            d[0] = 255, d[1] = cols[y * 3 + x][0], d[2] = cols[y * 3 + x][1], d[3] = cols[y * 3 + x][2];
        }
    th_bmp_encode(&b, 3, 2, 32, 3, 124, masks, NULL, 0, rows32, 24);
    check_bmp(&b, "bitfields32.bmp");
    /* 8-bit palette: index i -> cols[i]; stride 4 */
    uint8_t pal[6 * 4], rows8[8];
    for (int i = 0; i < 6; i++)
        pal[4 * i] = cols[i][2], pal[4 * i + 1] = cols[i][1], pal[4 * i + 2] = cols[i][0], pal[4 * i + 3] = 0;
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) rows8[(1 - y) * 4 + x] = (uint8_t)(y * 3 + x);
    th_bmp_encode(&b, 3, 2, 8, 0, 40, NULL, pal, 6, rows8, 8);
    check_bmp(&b, "pal8.bmp");
    /* 4-bit palette */
    uint8_t rows4[8] = {0};
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) rows4[(1 - y) * 4 + x / 2] |= (uint8_t)((y * 3 + x) << (x % 2 ? 0 : 4));
    th_bmp_encode(&b, 3, 2, 4, 0, 40, NULL, pal, 6, rows4, 8);
    check_bmp(&b, "pal4.bmp");
    /* truncated pixel data and bogus offset */
    th_bmp_encode(&b, 3, 2, 24, 0, 40, NULL, NULL, 0, rows, 24);
    img_pages p;
    lector_error err;
    assert_int_equal(img_decode(b.data, b.size - 13, "cut.bmp", NULL, &p, &err), LECTOR_ERR_IMAGE);
    assert_non_null(strstr(err.message, "cut.bmp"));
    b.data[10] = 0xFF, b.data[11] = 0xFF, b.data[12] = 0xFF, b.data[13] = 0x7F;
    assert_int_equal(img_decode(b.data, b.size, "offset.bmp", NULL, &p, &err), LECTOR_ERR_IMAGE);
    th_buf_free(&b);
}

static void test_from_pixels(void **state)
{
    /* 2x2 with stride padding */
    uint8_t rgba[2 * 12] = {1, 2, 3, 255, 4, 5, 6, 255, 0, 0, 0, 0, 7, 8, 9, 255, 10, 11, 12, 0, 0, 0, 0, 0};
    img_image im;
    lector_error err;
    assert_int_equal(img_from_pixels(rgba, 2, 2, 12, LECTOR_PIXEL_RGBA, "raw", NULL, &im, &err), LECTOR_OK);
    assert_memory_equal(px(&im, 0, 0), ((uint8_t[]){3, 2, 1}), 3);
    assert_memory_equal(px(&im, 1, 1), ((uint8_t[]){255, 255, 255}), 3);
    img_release(&im);
    assert_int_equal(img_from_pixels(rgba, 2, 2, 12, LECTOR_PIXEL_BGRA, "raw", NULL, &im, &err), LECTOR_OK);
    assert_memory_equal(px(&im, 1, 0), ((uint8_t[]){4, 5, 6}), 3);
    img_release(&im);
    assert_int_equal(img_from_pixels(rgba, 2, 2, 12, LECTOR_PIXEL_RGB, "raw", NULL, &im, &err), LECTOR_OK);
    assert_memory_equal(px(&im, 1, 0), ((uint8_t[]){5, 4, 255}), 3);
    img_release(&im);
    assert_int_equal(img_from_pixels(rgba, 2, 2, 12, LECTOR_PIXEL_BGR, "raw", NULL, &im, &err), LECTOR_OK);
    assert_memory_equal(px(&im, 0, 1), ((uint8_t[]){7, 8, 9}), 3);
    img_release(&im);
    assert_int_equal(img_from_pixels(rgba, 2, 2, 12, LECTOR_PIXEL_GRAY, "raw", NULL, &im, &err), LECTOR_OK);
    assert_memory_equal(px(&im, 1, 1), ((uint8_t[]){8, 8, 8}), 3);
    img_release(&im);
    assert_int_equal(img_from_pixels(rgba, 2, 2, 5, LECTOR_PIXEL_RGBA, "raw", NULL, &im, &err),
                     LECTOR_ERR_INVALID_ARGUMENT);
    img_limits lim;
    img_limits_default(&lim);
    lim.max_pixels = 3;
    assert_int_equal(img_from_pixels(rgba, 2, 2, 12, LECTOR_PIXEL_RGBA, "raw", &lim, &im, &err), LECTOR_ERR_LIMIT);
}

/* 60000x60000 headers in every format are refused before allocation. */
static void test_huge_headers(void **state)
{
    img_pages p;
    lector_error err;
    /* PNG: IHDR only */
    uint8_t px1[1] = {0};
    th_buf b = {0};
    assert_int_equal(th_png_encode(&b, 1, 1, 0, 8, px1, NULL, 0, NULL, 0), 0);
    b.data[16] = 0, b.data[17] = 0, b.data[18] = 0xEA, b.data[19] = 0x60; /* 60000 */
    b.data[20] = 0, b.data[21] = 0, b.data[22] = 0xEA, b.data[23] = 0x60;
    assert_int_equal(img_decode(b.data, b.size, "huge.png", NULL, &p, &err), LECTOR_ERR_LIMIT);
    assert_non_null(strstr(err.message, "huge.png"));
    th_buf_free(&b);
    /* BMP */
    uint8_t rows[4] = {0};
    th_bmp_encode(&b, 60000, 60000, 24, 0, 40, NULL, NULL, 0, rows, 4);
    assert_int_equal(img_decode(b.data, b.size, "huge.bmp", NULL, &p, &err), LECTOR_ERR_LIMIT);
    th_buf_free(&b);
    /* JPEG: patch SOF dimensions of a small JPEG */
    th_buf j = make_oriented_jpeg(1);
    for (size_t i = 2; i + 9 < j.size; i++)
        if (j.data[i] == 0xFF && j.data[i + 1] == 0xC0) {
            j.data[i + 5] = 0xEA, j.data[i + 6] = 0x60, j.data[i + 7] = 0xEA, j.data[i + 8] = 0x60;
            break;
        }
    assert_int_equal(img_decode(j.data, j.size, "huge.jpg", NULL, &p, &err), LECTOR_ERR_LIMIT);
    assert_non_null(strstr(err.message, "huge.jpg"));
    /* file size limit */
    img_limits lim;
    img_limits_default(&lim);
    lim.max_file_size = 100;
    assert_int_equal(img_decode(j.data, j.size, "big.jpg", &lim, &p, &err), LECTOR_ERR_LIMIT);
    th_buf_free(&j);
}

/* Decoding and warping from several threads gives the single-thread result
 * (libtiff handlers are per handle, the cubic table is built once). */
static const char *thread_files[] = {
    "icdar2015_test/ch4_test_images/img_1.jpg", "rapidocr_tests/images/black_font_color_transparent.png",
    "tesseract_test/images/eurotext.tif", "rapidocr_tests/images/img_exif_orientation.jpg"};
enum { N_THREAD_FILES = sizeof thread_files / sizeof thread_files[0] };
static th_buf thread_bufs[N_THREAD_FILES];

static uint64_t digest_all(void)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < N_THREAD_FILES; i++) {
        img_pages p;
        if (img_decode(thread_bufs[i].data, thread_bufs[i].size, thread_files[i], NULL, &p, NULL) != LECTOR_OK)
            return 0;
        img_image w;
        float q[4][2] = {{3.5f, 2}, {60, 4}, {58, 30}, {2, 28}};
        if (img_warp_quad(&p.pages[0], q, 57, 26, &w, NULL) != LECTOR_OK) return 0;
        for (int y = 0; y < p.pages[0].height; y += 7)
            for (int x = 0; x < p.pages[0].width * 3; x += 5)
                h = (h ^ p.pages[0].data[y * p.pages[0].stride + x]) * 1099511628211ull;
        for (size_t k = 0; k < w.stride * (size_t)w.height; k++) h = (h ^ w.data[k]) * 1099511628211ull;
        img_release(&w);
        img_pages_free(&p);
    }
    return h;
}

static void *thread_main(void *arg)
{
    uint64_t *out = arg;
    for (int r = 0; r < 3; r++) {
        uint64_t h = digest_all();
        if (r == 0 || h != *out) *out = r == 0 ? h : 0;
    }
    return NULL;
}

static void test_threads(void **state)
{
    for (int i = 0; i < N_THREAD_FILES; i++) read_data(thread_files[i], &thread_bufs[i]);
    pthread_t t[6];
    uint64_t res[6] = {0};
    for (int i = 0; i < 6; i++) assert_int_equal(pthread_create(&t[i], NULL, thread_main, &res[i]), 0);
    for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
    uint64_t ref = digest_all();
    assert_true(ref != 0);
    for (int i = 0; i < 6; i++) assert_true(res[i] == ref);
    for (int i = 0; i < N_THREAD_FILES; i++) th_buf_free(&thread_bufs[i]);
}

/* ---- issue 21: limits before work, chunk limits ---------------------------- */

/* CRC-32 of the PNG specification (ISO 15948 annex D), written out here so
 * that the chunks below do not depend on the decoder under test. */
static uint32_t png_crc(const uint8_t *type, const uint8_t *d, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < 4 + n; i++) {
        c ^= i < 4 ? type[i] : d[i - 4];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

/* Appends one chunk to buf at *pos. */
static void put_chunk(uint8_t *buf, size_t *pos, const char *type, const uint8_t *d, uint32_t n)
{
    uint8_t *p = buf + *pos;
    p[0] = (uint8_t)(n >> 24), p[1] = (uint8_t)(n >> 16), p[2] = (uint8_t)(n >> 8), p[3] = (uint8_t)n;
    memcpy(p + 4, type, 4);
    if (n) memcpy(p + 8, d, n);
    uint32_t c = png_crc((const uint8_t *)type, d, n);
    p[8 + n] = (uint8_t)(c >> 24), p[9 + n] = (uint8_t)(c >> 16), p[10 + n] = (uint8_t)(c >> 8), p[11 + n] = (uint8_t)c;
    *pos += 12 + (size_t)n;
}

/* A 4x3 RGB PNG (known pixels) with n chunks of `type` (each `len` bytes of
 * "Comment\0..." text) between IHDR and IDAT. */
static th_buf png_with_chunks(const char *type, int n, uint32_t len)
{
    uint8_t rgb[4 * 3 * 3];
    for (int i = 0; i < 36; i++) rgb[i] = (uint8_t)(i * 7);
    th_buf base = {0};
    assert_int_equal(th_png_encode(&base, 4, 3, 2, 8, rgb, NULL, 0, NULL, 0), 0);
    uint8_t *text = calloc(1, len + 1);
    memcpy(text, "Comment", 8); /* keyword, NUL, then the text (zeros are fine for the chunk walk) */
    for (uint32_t i = 8; i < len; i++) text[i] = 'a' + i % 26;
    th_buf b;
    b.size = base.size + (size_t)n * (12 + len);
    b.data = malloc(b.size);
    memcpy(b.data, base.data, 33); /* signature + IHDR */
    size_t pos = 33;
    for (int i = 0; i < n; i++) put_chunk(b.data, &pos, type, text, len);
    memcpy(b.data + pos, base.data + 33, base.size - 33);
    free(text);
    th_buf_free(&base);
    return b;
}

static void check_known_png(const img_pages *p)
{
    assert_int_equal(p->count, 1);
    assert_int_equal(p->pages[0].width, 4);
    assert_int_equal(p->pages[0].height, 3);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            for (int c = 0; c < 3; c++)
                assert_int_equal(px(&p->pages[0], x, y)[2 - c], (uint8_t)(((y * 4 + x) * 3 + c) * 7));
}

/* A valid PNG with many text chunks decodes (libspng alone stops at 1000);
 * an ancillary chunk over 16 MiB, stored or decompressed, is a limit. */
static void test_png_chunk_limits(void **state)
{
    const int counts[] = {0, 600, 2000};
    for (int i = 0; i < 3; i++) {
        th_buf b = png_with_chunks("tEXt", counts[i], 20);
        img_pages p;
        lector_error err;
        lector_status st = decode(&b, "text.png", &p, &err);
        if (st != LECTOR_OK) fail_msg("%d tEXt chunks: %s", counts[i], err.message);
        check_known_png(&p);
        img_pages_free(&p);
        th_buf_free(&b);
    }
    th_buf big = png_with_chunks("tEXt", 1, (17u << 20));
    img_pages p;
    lector_error err;
    assert_int_equal(decode(&big, "bigtext.png", &p, &err), LECTOR_ERR_LIMIT);
    assert_non_null(strstr(err.message, "bigtext.png"));
    assert_non_null(strstr(err.message, "limit"));
    th_buf_free(&big);
    /* zTXt whose text inflates to 32 MiB: a bomb in 32 KiB */
    size_t zn = compressBound(32u << 20);
    uint8_t *zeros = calloc(1, 32u << 20), *z = malloc(9 + zn);
    memcpy(z, "Comment\0", 9); /* keyword, NUL, compression method 0 */
    uLongf zl = zn;
    assert_int_equal(compress2(z + 9, &zl, zeros, 32u << 20, 9), Z_OK);
    free(zeros);
    th_buf zb = png_with_chunks("tEXt", 0, 20);
    th_buf bomb;
    bomb.size = zb.size + 12 + 9 + zl;
    bomb.data = malloc(bomb.size);
    memcpy(bomb.data, zb.data, 33);
    size_t pos = 33;
    put_chunk(bomb.data, &pos, "zTXt", z, (uint32_t)(9 + zl));
    memcpy(bomb.data + pos, zb.data + 33, zb.size - 33);
    free(z);
    th_buf_free(&zb);
    assert_int_equal(decode(&bomb, "ztxt.png", &p, &err), LECTOR_ERR_LIMIT);
    assert_non_null(strstr(err.message, "ztxt.png"));
    th_buf_free(&bomb);
}

/* JPEG frames over the limits are limits, also where libjpeg itself refuses
 * the header first (a side over 65500). */
static void test_jpeg_limit_before_libjpeg(void **state)
{
    const unsigned sizes[][2] = {{65535, 65535}, {65535, 8}, {20000, 20000}};
    for (int i = 0; i < 3; i++) {
        th_buf j = make_oriented_jpeg(1);
        for (size_t k = 2; k + 9 < j.size; k++)
            if (j.data[k] == 0xFF && j.data[k + 1] == 0xC0) {
                j.data[k + 5] = (uint8_t)(sizes[i][1] >> 8), j.data[k + 6] = (uint8_t)sizes[i][1];
                j.data[k + 7] = (uint8_t)(sizes[i][0] >> 8), j.data[k + 8] = (uint8_t)sizes[i][0];
                break;
            }
        img_pages p;
        lector_error err;
        assert_int_equal(decode(&j, "wide.jpg", &p, &err), LECTOR_ERR_LIMIT);
        assert_non_null(strstr(err.message, "wide.jpg"));
        assert_non_null(strstr(err.message, "limit"));
        th_buf_free(&j);
    }
}

/* The pixels of all the pages of a TIFF are checked before any page is
 * decoded: with every allocation failing, the answer is the limit, not
 * "out of memory" (which is what decoding the first page would say). */
static void test_tiff_total_before_decoding(void **state)
{
    const int ws[3] = {300, 300, 300}, hs[3] = {200, 200, 200};
    const uint8_t rgb[3][3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    th_buf b = {0};
    assert_int_equal(th_tiff_pages(&b, 3, ws, hs, rgb, COMPRESSION_ADOBE_DEFLATE), 0);
    img_limits lim;
    img_limits_default(&lim);
    lim.max_total_pixels = 150000; /* pages 1 and 2 fit, page 3 does not */
    img_pages p;
    lector_error err;
    lector__fail_alloc_after(1);
    lector_status st = img_decode(b.data, b.size, "pages.tif", &lim, &p, &err);
    lector__fail_alloc_after(0);
    if (st != LECTOR_ERR_LIMIT) fail_msg("want LECTOR_ERR_LIMIT, got %d: %s", st, err.message);
    assert_non_null(strstr(err.message, "pages.tif"));
    assert_non_null(strstr(err.message, "page 3 of 3"));
    assert_null(p.pages);
    /* and without the allocation failures the pages under the limit decode */
    lim.max_total_pixels = 180000;
    assert_int_equal(img_decode(b.data, b.size, "pages.tif", &lim, &p, &err), LECTOR_OK);
    assert_int_equal(p.count, 3);
    img_pages_free(&p);
    th_buf_free(&b);
}

/* lector_probe_image: the sizes the encoders were given, without decoding
 * (every allocation of the library fails meanwhile), and the decoding peak
 * by the kind of page (3 bytes a pixel, 4 more where a page goes through an
 * RGBA buffer). */
/* Every file of `dir` ending in one of `exts` decodes to the pixels in
 * NAME.bgr beside it ("W H\n", then BGR rows), made by the directory's
 * gen_*_oracle.py from cv2.imread, or, where there is no NAME.bgr, fails
 * with LECTOR_ERR_IMAGE naming the file. Returns the counts. */
static void check_oracle_dir(const char *dir_path, const char *const *exts, int *files, int *refused)
{
    DIR *dir = opendir(dir_path);
    assert_non_null(dir);
    *files = *refused = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        const char *dot = strrchr(de->d_name, '.');
        int ours = 0;
        for (int e = 0; dot && exts[e]; e++) ours |= !strcmp(dot, exts[e]);
        if (!ours) continue;
        char path[1024], want_path[1024];
        snprintf(path, sizeof path, "%s/%s", dir_path, de->d_name);
        snprintf(want_path, sizeof want_path, "%s/%s.bgr", dir_path, de->d_name);
        th_buf b, want;
        assert_int_equal(th_read_file(path, &b), 0);
        img_pages p;
        lector_error err;
        lector_status st = img_decode(b.data, b.size, de->d_name, NULL, &p, &err);
        (*files)++;
        if (th_read_file(want_path, &want) != 0) { /* expected to fail */
            if (st != LECTOR_ERR_IMAGE) fail_msg("%s: expected to fail, Lector: %s", de->d_name, lector_status_str(st));
            assert_non_null(strstr(err.message, de->d_name));
            (*refused)++;
            th_buf_free(&b);
            continue;
        }
        if (st != LECTOR_OK) fail_msg("%s: %s", de->d_name, err.message);
        int w = 0, h = 0; /* "W H\n", then the pixels (which may begin with whitespace bytes) */
        const uint8_t *nl = memchr(want.data, '\n', want.size);
        assert_non_null(nl);
        assert_int_equal(sscanf((const char *)want.data, "%d %d", &w, &h), 2);
        size_t off = (size_t)(nl + 1 - want.data);
        assert_int_equal(p.count, 1);
        assert_int_equal(p.pages[0].width, w);
        assert_int_equal(p.pages[0].height, h);
        assert_int_equal(want.size, off + (size_t)w * h * 3);
        for (int y = 0; y < h; y++)
            for (int i = 0; i < w * 3; i++)
                if (px(&p.pages[0], 0, y)[i] != want.data[off + (size_t)y * w * 3 + i])
                    fail_msg("%s: pixel (%d, %d) channel %d: %d, expected %d", de->d_name, i / 3, y, i % 3,
                             px(&p.pages[0], 0, y)[i], want.data[off + (size_t)y * w * 3 + i]);
        img_pages_free(&p);
        th_buf_free(&want);
        th_buf_free(&b);
    }
    closedir(dir);
}

/* PBM, PGM and PPM against OpenCV: every file of tests/image/pnm (made by
 * its gen_pnm_oracle.py) decodes to the pixels cv2.imread gave for it, or,
 * where OpenCV refused the file, to an error naming it. */
static void test_pnm_opencv(void **state)
{
    static const char *const exts[] = {".pbm", ".pgm", ".ppm", NULL};
    int files, refused;
    check_oracle_dir(LECTOR_PNM_DIR, exts, &files, &refused);
    assert_true(files >= 24);
    assert_true(refused >= 6);
}

/* JPEG 2000 (JP2 and J2K) against OpenCV: tests/image/jp2 (its
 * gen_jp2_oracle.py) holds PIL's and opj_compress's files with the pixels
 * cv2.imread gave, and, for the two files OpenCV refuses and Lector reads
 * (a grey codestream, 4-bit samples), the source pixels under the rule
 * docs/IMAGES.md states; a bare signature and a file cut short fail. */
static void test_jp2_opencv(void **state)
{
    static const char *const exts[] = {".jp2", ".j2k", NULL};
    int files, refused;
    check_oracle_dir(LECTOR_JP2_DIR, exts, &files, &refused);
    assert_true(files >= 10);
    assert_int_equal(refused, 2);
}

/* JPEG 2000's limits and probe: a codestream whose SIZ marker claims
 * 60000 x 60000 is refused from its header (LECTOR_ERR_LIMIT) before
 * OpenJPEG decodes anything; probe reads size, format and the decoder's
 * memory (OpenJPEG's 4-byte samples per component) from the header. */
static void test_jp2_edges(void **state)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/phototest_rgb.j2k", LECTOR_JP2_DIR);
    th_buf b;
    assert_int_equal(th_read_file(path, &b), 0);
    assert_true(b.size > 16 && b.data[0] == 0xFF && b.data[1] == 0x4F && b.data[2] == 0xFF && b.data[3] == 0x51);
    lector_image_info info;
    lector_error err;
    assert_int_equal(lector_probe_image(b.data, b.size, "p.j2k", &info, &err), LECTOR_OK);
    assert_string_equal(info.format, "JPEG 2000");
    assert_int_equal(info.width, 96);
    assert_int_equal(info.height, 40);
    assert_int_equal(info.decode_bytes, (3 + 4 * 3) * 96 * 40);
    /* SIZ: FF51, Lsiz, Rsiz, then Xsiz, Ysiz, XOsiz, YOsiz, XTsiz, YTsiz
     * (big-endian, from byte 8): the image and its one tile 60000 square */
    const uint8_t big[4] = {0, 0, 0xEA, 0x60}; /* 60000 */
    for (int at = 8; at <= 28; at += 4)
        if (at != 16 && at != 20) memcpy(b.data + at, big, 4);
    img_pages p;
    lector__fail_alloc_after(1); /* Lector's first allocation (the page) would fail the expectation */
    lector_status big_st = img_decode(b.data, b.size, "big.j2k", NULL, &p, &err);
    lector__fail_alloc_after(0);
    if (big_st != LECTOR_ERR_LIMIT) fail_msg("%s", err.message);
    assert_non_null(strstr(err.message, "max_pixels")); /* refused from the header, not decoded */
    th_buf_free(&b);
    assert_int_equal(img_detect((const uint8_t *)"\xFF\x4F\xFF\x51", 4), IMG_FORMAT_JP2);
    assert_int_equal(img_detect((const uint8_t *)"\0\0\0\x0CjP  \r\n\x87\n", 12), IMG_FORMAT_JP2);
    assert_int_equal(img_detect((const uint8_t *)"\0\0\0\x0CjP  \r\n\x87", 11), IMG_FORMAT_UNKNOWN);
}

/* Where Lector reads PNM beyond OpenCV, and its limits: a plain file whose
 * last number ends the file; a header over max_pixels refused before any
 * pixel memory; probe's answer; detection needs the whitespace after the kind. */
static void test_pnm_edges(void **state)
{
    img_pages p;
    lector_error err;
    const char plain[] = "P2 2 1 255 9 200";
    assert_int_equal(img_decode((const uint8_t *)plain, sizeof plain - 1, "a.pgm", NULL, &p, &err), LECTOR_OK);
    assert_int_equal(px(&p.pages[0], 0, 0)[1], 9);
    assert_int_equal(px(&p.pages[0], 1, 0)[2], 200);
    img_pages_free(&p);
    const char huge[] = "P6\n60000 60000\n255\n";
    lector__fail_alloc_after(1); /* any allocation would fail the test's expectation */
    assert_int_equal(img_decode((const uint8_t *)huge, sizeof huge - 1, "big.ppm", NULL, &p, &err), LECTOR_ERR_LIMIT);
    lector__fail_alloc_after(0);
    assert_non_null(strstr(err.message, "max_pixels"));
    lector_image_info info;
    const char hdr[] = "P5\n# scanner\n640 480\n255\n";
    assert_int_equal(lector_probe_image(hdr, sizeof hdr - 1, "s.pgm", &info, &err), LECTOR_OK);
    assert_string_equal(info.format, "PNM");
    assert_int_equal(info.width, 640);
    assert_int_equal(info.height, 480);
    assert_int_equal(info.decode_bytes, 3 * 640 * 480);
    assert_int_equal(lector_probe_image("P5\n2", 4, "s.pgm", &info, &err), LECTOR_ERR_IMAGE);
    assert_non_null(strstr(err.message, "s.pgm"));
    assert_int_equal(img_detect((const uint8_t *)"P6\n", 3), IMG_FORMAT_PNM);
    assert_int_equal(img_detect((const uint8_t *)"P7\n", 3), IMG_FORMAT_UNKNOWN);
    assert_int_equal(img_detect((const uint8_t *)"P6x", 3), IMG_FORMAT_UNKNOWN);
    assert_int_equal(img_detect((const uint8_t *)"P6\0", 3), IMG_FORMAT_UNKNOWN);
}

static void test_probe(void **state)
{
    lector_image_info info;
    lector_error err;
    uint8_t rgb[7 * 5 * 4] = {0};
    th_buf b = {0};
    assert_int_equal(th_png_encode(&b, 7, 5, 2, 8, rgb, NULL, 0, NULL, 0), 0);
    lector__fail_alloc_after(1);
    assert_int_equal(lector_probe_image(b.data, b.size, "a.png", &info, &err), LECTOR_OK);
    lector__fail_alloc_after(0);
    assert_string_equal(info.format, "PNG");
    assert_int_equal(info.width, 7);
    assert_int_equal(info.height, 5);
    assert_int_equal(info.pages, 1);
    assert_int_equal(info.decode_bytes, 3 * 35);
    th_buf_free(&b);
    assert_int_equal(th_png_encode(&b, 7, 5, 6, 8, rgb, NULL, 0, NULL, 0), 0);
    assert_int_equal(lector_probe_image(b.data, b.size, "a.png", &info, &err), LECTOR_OK);
    assert_int_equal(info.decode_bytes, 7 * 35);
    th_buf_free(&b);
    th_buf j = make_oriented_jpeg(1); /* 64x32 */
    assert_int_equal(lector_probe_image(j.data, j.size, "a.jpg", &info, &err), LECTOR_OK);
    assert_string_equal(info.format, "JPEG");
    assert_int_equal(info.width, 64);
    assert_int_equal(info.height, 32);
    assert_int_equal(info.decode_bytes, 3 * 64 * 32);
    th_buf_free(&j);
    j = make_oriented_jpeg(6); /* EXIF: turned a quarter: 32x64 upright, through a turned copy */
    assert_int_equal(lector_probe_image(j.data, j.size, "a.jpg", &info, &err), LECTOR_OK);
    assert_int_equal(info.width, 32);
    assert_int_equal(info.height, 64);
    assert_int_equal(info.decode_bytes, 7 * 64 * 32);
    th_buf_free(&j);
    const int ws[3] = {5, 17, 3}, hs[3] = {4, 2, 9};
    const uint8_t col[3][3] = {{10, 20, 30}, {200, 100, 0}, {1, 2, 3}};
    assert_int_equal(th_tiff_pages(&b, 3, ws, hs, col, COMPRESSION_LZW), 0);
    lector__fail_alloc_after(1);
    assert_int_equal(lector_probe_image(b.data, b.size, "p.tif", &info, &err), LECTOR_OK);
    lector__fail_alloc_after(0);
    assert_string_equal(info.format, "TIFF");
    assert_int_equal(info.pages, 3);
    assert_int_equal(info.width, 5);
    assert_int_equal(info.height, 4);
    assert_int_equal(info.max_page_pixels, 34);
    assert_int_equal(info.total_pixels, 20 + 34 + 27);
    assert_int_equal(info.decode_bytes, 3 * 81 + 4 * 34);
    th_buf_free(&b);
    uint8_t bmp_rows[8 * 4] = {0};
    th_bmp_encode(&b, 3, -4, 24, 0, 40, NULL, NULL, 0, bmp_rows, sizeof bmp_rows);
    assert_int_equal(lector_probe_image(b.data, b.size, "a.bmp", &info, &err), LECTOR_OK);
    assert_int_equal(info.width, 3);
    assert_int_equal(info.height, 4);
    th_buf_free(&b);
    uint8_t *webp = NULL;
    size_t n = WebPEncodeLosslessRGB(rgb, 7, 5, 7 * 3, &webp);
    assert_true(n > 0);
    assert_int_equal(lector_probe_image(webp, n, "a.webp", &info, &err), LECTOR_OK);
    assert_int_equal(info.width, 7);
    assert_int_equal(info.height, 5);
    WebPFree(webp);
    assert_int_equal(lector_probe_image("GIF89a....", 10, "a.gif", &info, &err), LECTOR_ERR_IMAGE);
    assert_non_null(strstr(err.message, "a.gif: unrecognised image format"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_jpeg_icdar),
        cmocka_unit_test(test_jpeg_exif_synthetic),
        cmocka_unit_test(test_jpeg_exif_real),
        cmocka_unit_test(test_png_kinds),
        cmocka_unit_test(test_png_transparent_real),
        cmocka_unit_test(test_tiff_real),
        cmocka_unit_test(test_tiff_multipage),
        cmocka_unit_test(test_webp),
        cmocka_unit_test(test_bmp),
        cmocka_unit_test(test_from_pixels),
        cmocka_unit_test(test_huge_headers),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_png_chunk_limits),
        cmocka_unit_test(test_jpeg_limit_before_libjpeg),
        cmocka_unit_test(test_tiff_total_before_decoding),
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_pnm_opencv),
        cmocka_unit_test(test_jp2_opencv),
        cmocka_unit_test(test_jp2_edges),
        cmocka_unit_test(test_pnm_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
