/*
 * test_geometry.c - resize / warp / rotations against hand-computed values
 * and independent floating-point references, and PaddleOCR preprocessing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image/image.h"
#include "ocr/preprocess.h"

static uint32_t rng = 1;
static uint8_t rnd8(void) { return (uint8_t)((rng = rng * 1103515245u + 12345u) >> 16); }

static void make_image(img_image *im, int w, int h, int cn)
{
    assert_int_equal(img_alloc(im, w, h, cn, NULL), LECTOR_OK);
    for (size_t i = 0; i < im->stride * (size_t)h; i++) im->data[i] = rnd8();
}

static uint8_t at(const img_image *im, int x, int y, int c)
{
    return im->data[(size_t)y * im->stride + (size_t)x * im->channels + c];
}

static void test_resize_known(void **state)
{
    img_image s, d;
    assert_int_equal(img_alloc(&s, 2, 1, 1, NULL), LECTOR_OK);
    s.data[0] = 0, s.data[1] = 100;
    assert_int_equal(img_resize(&s, 4, 1, &d, NULL), LECTOR_OK);
    assert_memory_equal(d.data, ((uint8_t[]){0, 25, 75, 100}), 4); /* cv2.resize gives the same */
    img_release(&d);
    img_release(&s);
    /* exact 2x downscale = rounded mean of each 2x2 block */
    make_image(&s, 40, 30, 3);
    assert_int_equal(img_resize(&s, 20, 15, &d, NULL), LECTOR_OK);
    for (int y = 0; y < 15; y++)
        for (int x = 0; x < 20; x++)
            for (int c = 0; c < 3; c++) {
                int sum = at(&s, 2 * x, 2 * y, c) + at(&s, 2 * x + 1, 2 * y, c) + at(&s, 2 * x, 2 * y + 1, c) +
                          at(&s, 2 * x + 1, 2 * y + 1, c);
                assert_int_equal(at(&d, x, y, c), (sum + 2) >> 2);
            }
    img_release(&d);
    /* identity is a copy */
    assert_int_equal(img_resize(&s, 40, 30, &d, NULL), LECTOR_OK);
    assert_memory_equal(d.data, s.data, 40 * 30 * 3);
    img_release(&d);
    img_release(&s);
}

/* Float bilinear with OpenCV's half-pixel mapping and edge clamping. */
static double ref_bilinear(const img_image *s, double fx, double fy, int c)
{
    int x0 = (int)floor(fx), y0 = (int)floor(fy);
    double ax = fx - x0, ay = fy - y0;
    if (x0 < 0) x0 = 0, ax = 0;
    if (x0 >= s->width - 1) x0 = s->width - 1, ax = 0;
    int y1 = y0 + 1;
    y0 = y0 < 0 ? 0 : y0 > s->height - 1 ? s->height - 1 : y0;
    y1 = y1 < 0 ? 0 : y1 > s->height - 1 ? s->height - 1 : y1;
    int x1 = x0 + (ax > 0);
    double top = at(s, x0, y0, c) * (1 - ax) + at(s, x1, y0, c) * ax;
    double bot = at(s, x0, y1, c) * (1 - ax) + at(s, x1, y1, c) * ax;
    return top * (1 - ay) + bot * ay;
}

static void test_resize_vs_float(void **state)
{
    const int sizes[][4] = {{37, 23, 960, 544}, {640, 480, 123, 77},   {100, 48, 48, 48},
                            {5, 7, 320, 48},    {1280, 720, 960, 544}, {33, 1, 17, 3}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        img_image s, d;
        make_image(&s, sizes[k][0], sizes[k][1], 3);
        assert_int_equal(img_resize(&s, sizes[k][2], sizes[k][3], &d, NULL), LECTOR_OK);
        double sx = (double)s.width / d.width, sy = (double)s.height / d.height;
        int worst = 0;
        for (int y = 0; y < d.height; y++)
            for (int x = 0; x < d.width; x++)
                for (int c = 0; c < 3; c++) {
                    double r = ref_bilinear(&s, (x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5, c);
                    int diff = abs(at(&d, x, y, c) - (int)lround(r));
                    if (diff > worst) worst = diff;
                }
        if (worst > 1) fail_msg("resize %dx%d -> %dx%d: max diff %d", s.width, s.height, d.width, d.height, worst);
        img_release(&s);
        img_release(&d);
    }
}

static void test_perspective(void **state)
{
    double src[4][2] = {{10.5, 20}, {200, 15}, {210, 90}, {5, 100}}, dst[4][2] = {{0, 0}, {195, 0}, {195, 80}, {0, 80}};
    double m[9];
    assert_int_equal(img_perspective_transform(src, dst, m), 0);
    for (int i = 0; i < 4; i++) {
        double w = m[6] * src[i][0] + m[7] * src[i][1] + m[8];
        double x = (m[0] * src[i][0] + m[1] * src[i][1] + m[2]) / w;
        double y = (m[3] * src[i][0] + m[4] * src[i][1] + m[5]) / w;
        assert_true(fabs(x - dst[i][0]) < 1e-9 && fabs(y - dst[i][1]) < 1e-9);
    }
    double line[4][2] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
    assert_int_equal(img_perspective_transform(line, dst, m), -1);
}

static double cubic_w(double t)
{
    const double A = -0.75;
    t = fabs(t);
    if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
    if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
    return 0;
}

static void test_warp(void **state)
{
    img_image s, d;
    make_image(&s, 50, 40, 3);
    /* integer translation: exact crop */
    float q[4][2] = {{7, 5}, {27, 5}, {27, 17}, {7, 17}};
    assert_int_equal(img_warp_quad(&s, q, 20, 12, &d, NULL), LECTOR_OK);
    for (int y = 0; y < 12; y++)
        for (int x = 0; x < 20; x++)
            for (int c = 0; c < 3; c++) assert_int_equal(at(&d, x, y, c), at(&s, x + 7, y + 5, c));
    img_release(&d);
    /* partly outside: replicated border */
    float q2[4][2] = {{-3, -2}, {7, -2}, {7, 8}, {-3, 8}};
    assert_int_equal(img_warp_quad(&s, q2, 10, 10, &d, NULL), LECTOR_OK);
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 10; x++) {
            int sx = x - 3 < 0 ? 0 : x - 3, sy = y - 2 < 0 ? 0 : y - 2;
            assert_int_equal(at(&d, x, y, 1), at(&s, sx, sy, 1));
        }
    img_release(&d);
    /* 2x enlargement of a region vs float bicubic (a = -0.75, clamped) */
    float q3[4][2] = {{10, 10}, {30, 10}, {30, 25}, {10, 25}};
    assert_int_equal(img_warp_quad(&s, q3, 40, 30, &d, NULL), LECTOR_OK);
    int worst = 0;
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 40; x++)
            for (int c = 0; c < 3; c++) {
                double fx = 10 + x * 0.5, fy = 10 + y * 0.5, acc = 0;
                int ix = (int)floor(fx), iy = (int)floor(fy);
                for (int j = -1; j <= 2; j++)
                    for (int i = -1; i <= 2; i++)
                        acc += cubic_w(fx - (ix + i)) * cubic_w(fy - (iy + j)) * at(&s, ix + i, iy + j, c);
                int r = (int)lround(acc < 0 ? 0 : acc > 255 ? 255 : acc);
                int diff = abs(at(&d, x, y, c) - r);
                if (diff > worst) worst = diff;
            }
    if (worst > 1) fail_msg("warp vs float bicubic: max diff %d", worst);
    img_release(&d);
    /* degenerate quad */
    float q4[4][2] = {{1, 1}, {1, 1}, {1, 1}, {1, 1}};
    assert_int_equal(img_warp_quad(&s, q4, 10, 10, &d, NULL), LECTOR_ERR_INVALID_ARGUMENT);
    img_release(&s);
}

static void test_rotate(void **state)
{
    img_image s, d;
    assert_int_equal(img_alloc(&s, 3, 2, 1, NULL), LECTOR_OK);
    for (int i = 0; i < 6; i++) s.data[i] = (uint8_t)(i + 1); /* [[1,2,3],[4,5,6]] */
    assert_int_equal(img_rotate90_ccw(&s, &d, NULL), LECTOR_OK);
    assert_int_equal(d.width, 2);
    assert_int_equal(d.height, 3);
    assert_memory_equal(d.data, ((uint8_t[]){3, 6, 2, 5, 1, 4}), 6); /* np.rot90 */
    img_release(&d);
    assert_int_equal(img_rotate180(&s, &d, NULL), LECTOR_OK);
    assert_memory_equal(d.data, ((uint8_t[]){6, 5, 4, 3, 2, 1}), 6);
    img_release(&d);
    img_release(&s);
}

static uint8_t *read_all(const char *path, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    uint8_t *b = malloc(n + 1);
    size_t got = fread(b, 1, n + 1, f);
    fclose(f);
    if (got != n) fail_msg("%s: %zu bytes, expected %zu", path, got, n);
    return b;
}

/* Bit-exact agreement with OpenCV itself: tests/image/opencv holds inputs and
 * OpenCV 4.5's outputs (gen_opencv_oracle.js) for cv.resize INTER_LINEAR
 * and PaddleOCR's perspective crop. */
static void test_opencv_oracle(void **state)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.txt", LECTOR_OPENCV_DIR);
    FILE *m = fopen(path, "r");
    assert_non_null(m);
    char t;
    int id, sw, sh, dw, dh, cases = 0;
    while (fscanf(m, " %c %d %d %d %d %d", &t, &id, &sw, &sh, &dw, &dh) == 6) {
        float q[4][2];
        if (t == 'W')
            for (int k = 0; k < 8; k++) assert_int_equal(fscanf(m, "%f", &q[k / 2][k % 2]), 1);
        snprintf(path, sizeof path, "%s/%c%d.in", LECTOR_OPENCV_DIR, t == 'R' ? 'r' : 'w', id);
        img_image s, d;
        assert_int_equal(img_alloc(&s, sw, sh, 3, NULL), LECTOR_OK);
        uint8_t *in = read_all(path, (size_t)sw * sh * 3);
        memcpy(s.data, in, (size_t)sw * sh * 3);
        free(in);
        snprintf(path, sizeof path, "%s/%c%d.out", LECTOR_OPENCV_DIR, t == 'R' ? 'r' : 'w', id);
        uint8_t *ref = read_all(path, (size_t)dw * dh * 3);
        lector_status st =
            t == 'R' ? img_resize(&s, dw, dh, &d, NULL) : img_warp_quad(&s, (const float(*)[2])q, dw, dh, &d, NULL);
        assert_int_equal(st, LECTOR_OK);
        for (size_t k = 0; k < (size_t)dw * dh * 3; k++)
            if (d.data[k] != ref[k])
                fail_msg("%c%d (%dx%d -> %dx%d): x=%zu y=%zu c=%zu: ours %d, OpenCV %d", t, id, sw, sh, dw, dh,
                         k / 3 % (size_t)dw, k / 3 / (size_t)dw, k % 3, d.data[k], ref[k]);
        free(ref);
        img_release(&s);
        img_release(&d);
        cases++;
    }
    fclose(m);
    assert_true(cases >= 18);
}

static void test_det_dims(void **state)
{
    static const struct {
        int width, height, limit_side_len;
        ocr_det_limit_type type;
        int want_width, want_height;
    } cases[] = {
        {1280, 720, 960, OCR_DET_LIMIT_MAX, 960, 544}, /* 540 -> round(16.875) * 32 */
        /* Python's round() is half-to-even: 80/32 = 2.5 -> 2, 48/32 = 1.5 -> 2 */
        {80, 48, 960, OCR_DET_LIMIT_MAX, 64, 64},
        {10, 10, 960, OCR_DET_LIMIT_MAX, 32, 32},
        {100, 50, 736, OCR_DET_LIMIT_MIN, 1472, 736},
        /* portrait, max: 1000x3000 -> ratio 0.32 -> 320x960 */
        {1000, 3000, 960, OCR_DET_LIMIT_MAX, 320, 960},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int w, h;
        assert_int_equal(
            ocr_det_resize_dims(cases[i].width, cases[i].height, cases[i].limit_side_len, cases[i].type, &w, &h, NULL),
            LECTOR_OK);
        if (w != cases[i].want_width || h != cases[i].want_height)
            fail_msg("%dx%d, limit %d: %dx%d, want %dx%d", cases[i].width, cases[i].height, cases[i].limit_side_len, w,
                     h, cases[i].want_width, cases[i].want_height);
    }
    int w, h;
    assert_int_equal(ocr_det_resize_dims(0, 5, 960, OCR_DET_LIMIT_MAX, &w, &h, NULL), LECTOR_ERR_INVALID_ARGUMENT);
}

static void test_det_preprocess(void **state)
{
    img_image im;
    assert_int_equal(img_alloc(&im, 100, 60, 3, NULL), LECTOR_OK);
    for (int i = 0; i < 100 * 60; i++) im.data[3 * i] = 10, im.data[3 * i + 1] = 20, im.data[3 * i + 2] = 30;
    ocr_det_input in;
    assert_int_equal(ocr_det_preprocess(&im, 960, OCR_DET_LIMIT_MAX, &in, NULL), LECTOR_OK);
    assert_int_equal(in.width, 96);
    assert_int_equal(in.height, 64);
    assert_true(fabsf(in.ratio_w - 0.96f) < 1e-6f && fabsf(in.ratio_h - 64.f / 60) < 1e-6f);
    const float scale = (float)(1.0 / 255.0);
    const float e[3] = {(10 * scale - 0.485f) / 0.229f, (20 * scale - 0.456f) / 0.224f, (30 * scale - 0.406f) / 0.225f};
    size_t plane = 96 * 64;
    for (int c = 0; c < 3; c++) { /* channel 0 is B (PaddleOCR keeps BGR) */
        assert_true(in.data[c * plane] == e[c]);
        assert_true(in.data[c * plane + plane - 1] == e[c]);
    }
    assert_int_equal(in.padded_width, 100);
    ocr_det_input_free(&in);
    img_release(&im);
    /* tiny image: padded with black to 32x32 first (w + h < 64) */
    assert_int_equal(img_alloc(&im, 10, 20, 3, NULL), LECTOR_OK);
    memset(im.data, 255, 10 * 20 * 3);
    assert_int_equal(ocr_det_preprocess(&im, 960, OCR_DET_LIMIT_MAX, &in, NULL), LECTOR_OK);
    assert_int_equal(in.width, 32);
    assert_int_equal(in.height, 32);
    assert_int_equal(in.padded_width, 32);
    assert_int_equal(in.padded_height, 32);
    assert_true(in.ratio_w == 1.0f && in.ratio_h == 1.0f);
    assert_true(in.data[0] == (255 * scale - 0.485f) / 0.229f);
    assert_true(in.data[9] == (255 * scale - 0.485f) / 0.229f);
    assert_true(in.data[10] == (0 * scale - 0.485f) / 0.229f);
    assert_true(in.data[20 * 32] == (0 * scale - 0.485f) / 0.229f);
    ocr_det_input_free(&in);
    img_release(&im);
}

/* The formula of lector_image_input (docs/RUNTIME.md, include/lector_rt_image.h), which the CUDA
 * backend's ck_image_rows computes, written out here from the header's
 * words over ocr_det_image_input's tables: it must give the CPU's detection input
 * (ocr_det_preprocess, itself bit-exact with OpenCV) bit for bit, for
 * downscaling, upscaling and equal sizes. */
static void test_image_input_formula(void **state)
{
    static const int sizes[][2] = {{1280, 720},  {640, 480},  {37, 91}, {96, 64},
                                   {1000, 1000}, {3000, 200}, {64, 33}, {500, 2100}};
    const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        img_image im;
        make_image(&im, sizes[t][0], sizes[t][1], 3);
        for (int limit = 480; limit <= 1280; limit += 800) { /* 480: down; 1280: up for the small ones */
            ocr_det_input ref;
            assert_int_equal(ocr_det_preprocess_norm(&im, limit, OCR_DET_LIMIT_MAX, mean, stdv, &ref, NULL), LECTOR_OK);
            ocr_input_tables tab;
            lector_image_input in;
            assert_int_equal(ocr_det_image_input(&im, limit, OCR_DET_LIMIT_MAX, mean, stdv, &tab, &in, NULL),
                             LECTOR_OK);
            int dw = ref.width, dh = ref.height;
            assert_int_equal(in.out_width, dw);
            assert_int_equal(in.out_height, dh);
            const int *xofs = in.xofs, *yofs = in.yofs;
            const int16_t *alpha = in.alpha, *beta = in.beta;
            const float *lut = in.lut;
            size_t bad = 0;
            for (int y = 0; y < dh; y++)
                for (int x = 0; x < dw; x++) {
                    int x1 = xofs[x] + 1 < im.width ? xofs[x] + 1 : xofs[x];
                    for (int c = 0; c < 3; c++) {
                        int s0 = at(&im, xofs[x], yofs[2 * y], c) * alpha[2 * x] +
                                 at(&im, x1, yofs[2 * y], c) * alpha[2 * x + 1];
                        int s1 = at(&im, xofs[x], yofs[2 * y + 1], c) * alpha[2 * x] +
                                 at(&im, x1, yofs[2 * y + 1], c) * alpha[2 * x + 1];
                        int v = ((((s0 >> 4) * beta[2 * y]) >> 16) + (((s1 >> 4) * beta[2 * y + 1]) >> 16) + 2) >> 2;
                        float f = lut[c * 256 + (v > 255 ? 255 : v)];
                        bad += f != ref.data[((size_t)c * dh + y) * dw + x];
                    }
                }
            if (bad) fprintf(stderr, "%dx%d -> %dx%d: %zu values differ\n", im.width, im.height, dw, dh, bad);
            assert_int_equal(bad, 0);
            ocr_input_tables_free(&tab);
            ocr_det_input_free(&ref);
        }
        img_release(&im);
    }
    /* a tiny page is padded first: the CPU path */
    img_image tiny;
    make_image(&tiny, 10, 20, 3);
    ocr_input_tables tab;
    lector_image_input in;
    assert_int_equal(ocr_det_image_input(&tiny, 960, OCR_DET_LIMIT_MAX, mean, stdv, &tab, &in, NULL),
                     LECTOR_ERR_UNSUPPORTED_OP);
    img_release(&tiny);
}

/* The crop part of lector_image_input's formula (docs/RUNTIME.md),
 * written out here from the header's words, reading only the region that
 * ocr_line_image_input hands over: pixel (x, y) of the turned crop. A
 * tap outside the region counts in *outside. */
static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static double clamp_int(double v)
{
    double r = v < 2147483647.0 ? v : 2147483647.0;
    return -2147483648.0 < r ? r : -2147483648.0;
}

static int crop_px(const lector_image_input *in, int x, int y, int c, size_t *outside)
{
    int sw = in->turns & 1 ? in->crop_height : in->crop_width, sh = in->turns & 1 ? in->crop_width : in->crop_height;
    if (in->turns & 2) x = sw - 1 - x, y = sh - 1 - y;
    if (in->turns & 1) {
        int t = x;
        x = in->crop_width - 1 - y;
        y = t;
    }
    const double *m = in->warp;
    double W = m[6] * x + (m[7] * y + m[8]);
    W = W != 0 ? 32 / W : 0;
    int X = (int)lrint(clamp_int((m[0] * x + (m[1] * y + m[2])) * W));
    int Y = (int)lrint(clamp_int((m[3] * x + (m[4] * y + m[5])) * W));
    int sx = clampi(X >> 5, -32768, 32767) - 1, sy = clampi(Y >> 5, -32768, 32767) - 1;
    const int16_t *wt = in->cubic + ((Y & 31) * 32 + (X & 31)) * 16;
    int sum = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            int px = clampi(sx + j, 0, in->full_width - 1) - in->origin_x;
            int py = clampi(sy + i, 0, in->full_height - 1) - in->origin_y;
            if (px < 0 || px >= in->width || py < 0 || py >= in->height) {
                ++*outside;
                continue;
            }
            sum += in->pixels[(size_t)py * in->stride + (size_t)px * 3 + c] * wt[i * 4 + j];
        }
    return clampi((sum + (1 << 14)) >> 15, 0, 255);
}

/* ocr_line_image_input's row through the header's formula against the
 * CPU path's row (img_warp_quad, the turns, ocr_rec_preprocess):
 * bit for bit, for straight, skewed, perspective and tall boxes, boxes over
 * the page's edge, every turn, and cls and rec widths. */
static void test_line_input_formula(void **state)
{
    img_image page;
    make_image(&page, 400, 260, 3);
    static const float quads[][4][2] = {
        {{10, 20}, {210, 20}, {210, 52}, {10, 52}},                          /* straight */
        {{30.5f, 60.2f}, {250.7f, 80.1f}, {247.3f, 118.9f}, {27.1f, 99.4f}}, /* skewed */
        {{100, 150}, {300, 140}, {320, 190}, {90, 205}},                     /* perspective */
        {{350, 10}, {390, 12}, {388, 200}, {349, 198}},                      /* tall: a quarter turn */
        {{-15, -8}, {120, -3}, {118, 30}, {-14, 26}},                        /* over the top-left edge */
        {{300, 230}, {420, 228}, {421, 275}, {301, 277}},                    /* over the bottom-right edge */
        {{5, 5}, {9, 5}, {9, 8}, {5, 8}},                                    /* tiny */
    };
    static const int widths[] = {192, 320, 640};
    size_t checked = 0;
    for (size_t q = 0; q < sizeof quads / sizeof *quads; q++) {
        const float(*p)[2] = quads[q];
        int w = (int)fmax(hypot(p[0][0] - p[1][0], p[0][1] - p[1][1]), hypot(p[2][0] - p[3][0], p[2][1] - p[3][1]));
        int h = (int)fmax(hypot(p[0][0] - p[3][0], p[0][1] - p[3][1]), hypot(p[1][0] - p[2][0], p[1][1] - p[2][1]));
        double m[9];
        assert_int_equal(img_warp_quad_matrix(p, w, h, m), 0);
        img_image warped;
        assert_int_equal(img_warp_quad(&page, p, w, h, &warped, NULL), LECTOR_OK);
        for (int turns = 0; turns < 4; turns++) {
            img_image crop = warped, t1 = {0}, t2 = {0};
            if (turns & 1) assert_int_equal(img_rotate90_ccw(&crop, &t1, NULL), LECTOR_OK), crop = t1;
            if (turns & 2) assert_int_equal(img_rotate180(&crop, &t2, NULL), LECTOR_OK), crop = t2;
            for (size_t k = 0; k < sizeof widths / sizeof *widths; k++) {
                int tw = widths[k];
                float *ref = calloc((size_t)3 * 48 * tw, sizeof(float));
                assert_int_equal(ocr_rec_preprocess(&crop, 48, tw, ref, 0, NULL), LECTOR_OK);
                ocr_input_tables t;
                lector_image_input in;
                assert_int_equal(ocr_line_image_input(&page, m, w, h, turns, 48, tw, &t, &in, NULL), LECTOR_OK);
                assert_true(in.origin_x >= 0 && in.origin_y >= 0 && in.origin_x + in.width <= page.width &&
                            in.origin_y + in.height <= page.height);
                size_t bad = 0, outside = 0;
                int sw = crop.width;
                for (int y = 0; y < 48; y++)
                    for (int x = 0; x < tw; x++)
                        for (int c = 0; c < 3; c++) {
                            float f = 0;
                            if (x < in.out_width) {
                                int x0 = in.xofs[x], x1 = x0 + 1 < sw ? x0 + 1 : x0;
                                int s0 = crop_px(&in, x0, in.yofs[2 * y], c, &outside) * in.alpha[2 * x] +
                                         crop_px(&in, x1, in.yofs[2 * y], c, &outside) * in.alpha[2 * x + 1];
                                int s1 = crop_px(&in, x0, in.yofs[2 * y + 1], c, &outside) * in.alpha[2 * x] +
                                         crop_px(&in, x1, in.yofs[2 * y + 1], c, &outside) * in.alpha[2 * x + 1];
                                int v = ((((s0 >> 4) * in.beta[2 * y]) >> 16) +
                                         (((s1 >> 4) * in.beta[2 * y + 1]) >> 16) + 2) >>
                                        2;
                                f = in.lut[c * 256 + (v > 255 ? 255 : v)];
                            }
                            bad += f != ref[((size_t)c * 48 + y) * tw + x];
                            checked++;
                        }
                if (bad || outside)
                    fprintf(stderr, "quad %zu turns %d width %d: %zu values differ, %zu taps outside\n", q, turns, tw,
                            bad, outside);
                assert_int_equal(bad, 0);
                assert_int_equal(outside, 0);
                ocr_input_tables_free(&t);
                free(ref);
            }
            img_release(&t1);
            img_release(&t2);
        }
        img_release(&warped);
    }
    img_release(&page);
    assert_true(checked > 1000000);
}

static void test_line_preprocess(void **state)
{
    assert_int_equal(ocr_line_resized_width(100, 20, 48, 192), 192);
    assert_int_equal(ocr_line_resized_width(20, 20, 48, 192), 48);
    assert_int_equal(ocr_line_resized_width(21, 20, 48, 192), 51); /* ceil(50.4) */
    int ws[2] = {100, 400}, hs[2] = {32, 32};
    assert_int_equal(ocr_rec_batch_width(ws, hs, 2, 48, 320), 600);
    assert_int_equal(ocr_rec_batch_width(ws, hs, 1, 48, 320), 320);

    img_image im;
    assert_int_equal(img_alloc(&im, 20, 20, 3, NULL), LECTOR_OK);
    memset(im.data, 200, 20 * 20 * 3);
    float *cls = malloc(sizeof(float) * 3 * 48 * 192);
    assert_int_equal(ocr_cls_preprocess(&im, 48, 192, cls, NULL), LECTOR_OK);
    float v = 200 / 255.0f;
    v -= 0.5f;
    v /= 0.5f;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < 48; y++) {
            assert_true(cls[(c * 48 + y) * 192 + 47] == v);
            assert_true(cls[(c * 48 + y) * 192 + 48] == 0.0f);
        }
    free(cls);
    float *rec = calloc(2 * 3 * 48 * 600, sizeof(float));
    for (size_t i = 0; i < 3 * 48 * 600; i++) rec[i] = 7; /* row 0 must stay untouched */
    assert_int_equal(ocr_rec_preprocess(&im, 48, 600, rec, 1, NULL), LECTOR_OK);
    assert_true(rec[3 * 48 * 600 - 1] == 7);
    const float *r1 = rec + 3 * 48 * 600;
    assert_true(r1[0] == v && r1[47] == v && r1[48] == 0 && r1[2 * 48 * 600 + 47] == v);
    free(rec);
    img_release(&im);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_known),
        cmocka_unit_test(test_resize_vs_float),
        cmocka_unit_test(test_perspective),
        cmocka_unit_test(test_warp),
        cmocka_unit_test(test_rotate),
        cmocka_unit_test(test_opencv_oracle),
        cmocka_unit_test(test_det_dims),
        cmocka_unit_test(test_det_preprocess),
        cmocka_unit_test(test_line_preprocess),
        cmocka_unit_test(test_image_input_formula),
        cmocka_unit_test(test_line_input_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
