/*
 * geometry.c - resize, perspective warp and rotations that reproduce OpenCV.
 *
 * resize (cv2.resize INTER_LINEAR, 8-bit): OpenCV's resizeGeneric with
 * fixed-point weights: source x of destination column dx is
 * fx = (float)((dx + 0.5) * scale - 0.5) with scale = 1 / (dst/src) in
 * double; sx = floor(fx); weights round((1-fx)*2048) and round(fx*2048)
 * (11 bits); columns left of 0 / right of w-1 are clamped with weight 0;
 * rows are clamped. The horizontal pass gives ints S = a0*p0 + a1*p1.
 * Vertical pass, as OpenCV 4.x does for 8-bit data everywhere (SIMD body
 * and scalar tail): ((S0>>4)*b0 >> 16) + ((S1>>4)*b1 >> 16) + 2 >> 2.
 * Verified bit-exact against OpenCV 4.5 (opencv.js) on 15 size pairs, up
 * and down, 2..1280 px; not reproduced: OpenCV 4.10+'s special path for
 * exact 2x upscaling, and the IPP/OpenCL paths.
 *
 * warp (cv2.warpPerspective INTER_CUBIC, BORDER_REPLICATE): the forward
 * homography is solved like getPerspectiveTransform (8x8 LU with partial
 * pivoting), inverted by cofactors like cv::invert for 3x3, source
 * coordinates are quantised to 1/32 pixel (cvRound), weights come from a
 * 32x32 table of 4x4 cubic weights (a = -0.75) in 15-bit fixed point with
 * OpenCV's sum fix-up, border pixels are replicated. Verified bit-exact
 * against OpenCV 4.5 on PaddleOCR-style crops (tests/image/opencv).
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "image/image.h"
#include "util/util.h"

static lector_status check_src(const img_image *src, const char *what, lector_error *err)
{
    if (!src || !src->data || src->width <= 0 || src->height <= 0 ||
        (src->channels != 1 && src->channels != 3 && src->channels != 4) ||
        src->stride < (size_t)src->width * (size_t)src->channels)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: invalid source image", what);
    return LECTOR_OK;
}

/* ---- resize ------------------------------------------------------------ */

static void hresize_row(const uint8_t *restrict s, int *restrict d, int dw, int cn, const int *restrict xofs,
                        const int16_t *restrict alpha, int sw)
{
    if (cn == 3) {
        for (int dx = 0; dx < dw; dx++) {
            int sx = xofs[dx], a0 = alpha[2 * dx], a1 = alpha[2 * dx + 1];
            const uint8_t *p = s + (size_t)sx * 3;
            const uint8_t *q = sx + 1 < sw ? p + 3 : p; /* weight a1 is 0 there */
            d[3 * dx] = p[0] * a0 + q[0] * a1;
            d[3 * dx + 1] = p[1] * a0 + q[1] * a1;
            d[3 * dx + 2] = p[2] * a0 + q[2] * a1;
        }
        return;
    }
    for (int dx = 0; dx < dw; dx++) {
        int sx = xofs[dx];
        int a0 = alpha[2 * dx], a1 = alpha[2 * dx + 1];
        const uint8_t *p = s + (size_t)sx * cn;
        const uint8_t *q = sx + 1 < sw ? p + cn : p;
        for (int k = 0; k < cn; k++) d[dx * cn + k] = p[k] * a0 + q[k] * a1;
    }
}

static inline uint8_t sat_u8(int v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

static inline int16_t sat_s16(int v) { return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }

/* OpenCV 4.x computes every 8-bit sample this way, in its SIMD body and in
 * its scalar tail alike (VResizeLinear's uchar specialisation). */
static void vresize_row(const int *restrict s0, const int *restrict s1, uint8_t *restrict d, int n, int b0, int b1)
{
    /* S >> 4 <= 255 * 2049 >> 4 fits OpenCV's int16 lanes, so int math is exact */
    for (int x = 0; x < n; x++) {
        int v = ((((s0[x] >> 4) * b0) >> 16) + (((s1[x] >> 4) * b1) >> 16) + 2) >> 2;
        d[x] = (uint8_t)(v > 255 ? 255 : v);
    }
}

void img_resize_columns(int sw, int dw, int *xofs, int16_t *alpha)
{
    double scale_x = 1.0 / ((double)dw / sw);
    for (int dx = 0; dx < dw; dx++) {
        float fx = (float)((dx + 0.5) * scale_x - 0.5);
        int sx = (int)floorf(fx);
        fx -= (float)sx;
        if (sx < 0) fx = 0, sx = 0;
        if (sx >= sw - 1) fx = 0, sx = sw - 1;
        xofs[dx] = sx;
        alpha[2 * dx] = (int16_t)lrintf((1.f - fx) * 2048);
        alpha[2 * dx + 1] = (int16_t)lrintf(fx * 2048);
    }
}

/* Source rows and weights of destination row dy (rows clamped, weights not). */
static void resize_row_of(int sh, int dh, int dy, int r[2], int16_t b[2])
{
    double scale_y = 1.0 / ((double)dh / sh);
    float fy = (float)((dy + 0.5) * scale_y - 0.5);
    int sy = (int)floorf(fy);
    fy -= (float)sy;
    b[0] = (int16_t)lrintf((1.f - fy) * 2048);
    b[1] = (int16_t)lrintf(fy * 2048);
    r[0] = LECTOR_MIN(LECTOR_MAX(sy, 0), sh - 1);
    r[1] = LECTOR_MIN(LECTOR_MAX(sy + 1, 0), sh - 1);
}

void img_resize_rows(int sh, int dh, int *yofs, int16_t *beta)
{
    for (int dy = 0; dy < dh; dy++) resize_row_of(sh, dh, dy, yofs + 2 * dy, beta + 2 * dy);
}

lector_status img_resize(const img_image *src, int dw, int dh, img_image *dst, lector_error *err)
{
    lector_status st = check_src(src, "resize", err);
    if (dst) memset(dst, 0, sizeof(*dst));
    if (st != LECTOR_OK) return st;
    if (!dst || dw <= 0 || dh <= 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "resize: invalid target size %dx%d", dw, dh);
    int sw = src->width, sh = src->height, cn = src->channels;
    st = img_alloc(dst, dw, dh, cn, err);
    if (st != LECTOR_OK) return st;
    if (sw == dw && sh == dh) {
        for (int y = 0; y < sh; y++)
            memcpy(dst->data + (size_t)y * dst->stride, src->data + (size_t)y * src->stride, (size_t)sw * cn);
        return LECTOR_OK;
    }
    int *xofs = lector__malloc(sizeof(int) * (size_t)dw);
    int16_t *alpha = lector__malloc(sizeof(int16_t) * 2 * (size_t)dw);
    int *rows = lector__malloc(sizeof(int) * 2 * (size_t)dw * cn);
    if (!xofs || !alpha || !rows) {
        lector__free(xofs), lector__free(alpha), lector__free(rows);
        img_release(dst);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "resize: out of memory");
    }
    img_resize_columns(sw, dw, xofs, alpha);
    int *buf[2] = {rows, rows + (size_t)dw * cn};
    int have[2] = {-1, -1};
    int n = dw * cn;
    for (int dy = 0; dy < dh; dy++) {
        int r[2];
        int16_t b[2];
        resize_row_of(sh, dh, dy, r, b);
        int b0 = b[0], b1 = b[1];
        int s0 = have[0] == r[0] ? 0 : have[1] == r[0] ? 1 : -1;
        if (s0 < 0) {
            s0 = have[0] == r[1] ? 1 : 0;
            hresize_row(src->data + (size_t)r[0] * src->stride, buf[s0], dw, cn, xofs, alpha, sw);
            have[s0] = r[0];
        }
        int s1 = have[s0] == r[1] ? s0 : have[1 - s0] == r[1] ? 1 - s0 : -1;
        if (s1 < 0) {
            s1 = 1 - s0;
            hresize_row(src->data + (size_t)r[1] * src->stride, buf[s1], dw, cn, xofs, alpha, sw);
            have[s1] = r[1];
        }
        int *p[2] = {buf[s0], buf[s1]};
        vresize_row(p[0], p[1], dst->data + (size_t)dy * dst->stride, n, b0, b1);
    }
    lector__free(xofs), lector__free(alpha), lector__free(rows);
    return LECTOR_OK;
}

/* ---- perspective ------------------------------------------------------- */

int img_perspective_transform(const double src[4][2], const double dst[4][2], double m[9])
{
    double a[8][8], b[8];
    for (int i = 0; i < 4; i++) {
        memset(a[i], 0, sizeof(a[i]));
        memset(a[i + 4], 0, sizeof(a[i + 4]));
        a[i][0] = a[i + 4][3] = src[i][0];
        a[i][1] = a[i + 4][4] = src[i][1];
        a[i][2] = a[i + 4][5] = 1;
        a[i][6] = -src[i][0] * dst[i][0];
        a[i][7] = -src[i][1] * dst[i][0];
        a[i + 4][6] = -src[i][0] * dst[i][1];
        a[i + 4][7] = -src[i][1] * dst[i][1];
        b[i] = dst[i][0];
        b[i + 4] = dst[i][1];
    }
    /* Gaussian elimination with partial pivoting (the LU of OpenCV's solve). */
    for (int i = 0; i < 8; i++) {
        int k = i;
        for (int j = i + 1; j < 8; j++)
            if (fabs(a[j][i]) > fabs(a[k][i])) k = j;
        if (fabs(a[k][i]) < 2.220446049250313e-16 * 100) return -1;
        if (k != i) {
            for (int j = i; j < 8; j++) {
                double t = a[i][j];
                a[i][j] = a[k][j], a[k][j] = t;
            }
            double t = b[i];
            b[i] = b[k], b[k] = t;
        }
        double d = -1 / a[i][i];
        for (int j = i + 1; j < 8; j++) {
            double f = a[j][i] * d;
            for (int c = i + 1; c < 8; c++) a[j][c] += f * a[i][c];
            b[j] += f * b[i];
        }
        a[i][i] = -d;
    }
    for (int i = 7; i >= 0; i--) {
        double s = b[i];
        for (int c = i + 1; c < 8; c++) s -= a[i][c] * b[c];
        b[i] = s * a[i][i];
    }
    for (int i = 0; i < 8; i++) m[i] = b[i];
    m[8] = 1;
    return 0;
}

static int invert3(const double s[9], double t[9])
{
#define S(r, c) s[(r)*3 + (c)]
    double d = S(0, 0) * (S(1, 1) * S(2, 2) - S(1, 2) * S(2, 1)) - S(0, 1) * (S(1, 0) * S(2, 2) - S(1, 2) * S(2, 0)) +
               S(0, 2) * (S(1, 0) * S(2, 1) - S(1, 1) * S(2, 0));
    if (d == 0.) return -1;
    d = 1. / d;
    t[0] = (S(1, 1) * S(2, 2) - S(1, 2) * S(2, 1)) * d;
    t[1] = (S(0, 2) * S(2, 1) - S(0, 1) * S(2, 2)) * d;
    t[2] = (S(0, 1) * S(1, 2) - S(0, 2) * S(1, 1)) * d;
    t[3] = (S(1, 2) * S(2, 0) - S(1, 0) * S(2, 2)) * d;
    t[4] = (S(0, 0) * S(2, 2) - S(0, 2) * S(2, 0)) * d;
    t[5] = (S(0, 2) * S(1, 0) - S(0, 0) * S(1, 2)) * d;
    t[6] = (S(1, 0) * S(2, 1) - S(1, 1) * S(2, 0)) * d;
    t[7] = (S(0, 1) * S(2, 0) - S(0, 0) * S(2, 1)) * d;
    t[8] = (S(0, 0) * S(1, 1) - S(0, 1) * S(1, 0)) * d;
#undef S
    return 0;
}

/* 32x32 fractional positions x 16 weights, 15-bit fixed point, built once
 * (pthread_once) on first use. */
static int16_t cubic_tab[32 * 32][16];

static void cubic_1d(float x, float c[4])
{
    const float A = -0.75f;
    c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
    c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
    c[3] = 1.f - c[0] - c[1] - c[2];
}

static void build_cubic_tab(void)
{
    float t1[32][4];
    for (int i = 0; i < 32; i++) cubic_1d(i * (1.f / 32), t1[i]);
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++) {
            int16_t *it = cubic_tab[i * 32 + j];
            int isum = 0;
            for (int k1 = 0; k1 < 4; k1++)
                for (int k2 = 0; k2 < 4; k2++) {
                    float v = t1[i][k1] * t1[j][k2];
                    long r = lrintf(v * 32768);
                    it[k1 * 4 + k2] = (int16_t)(r < -32768 ? -32768 : r > 32767 ? 32767 : r);
                    isum += it[k1 * 4 + k2];
                }
            if (isum != 32768) {
                int diff = isum - 32768;
                int Mk1 = 2, Mk2 = 2, mk1 = 2, mk2 = 2;
                for (int k1 = 2; k1 < 4; k1++)
                    for (int k2 = 2; k2 < 4; k2++) {
                        if (it[k1 * 4 + k2] < it[mk1 * 4 + mk2])
                            mk1 = k1, mk2 = k2;
                        else if (it[k1 * 4 + k2] > it[Mk1 * 4 + Mk2])
                            Mk1 = k1, Mk2 = k2;
                    }
                if (diff < 0)
                    it[Mk1 * 4 + Mk2] = (int16_t)(it[Mk1 * 4 + Mk2] - diff);
                else
                    it[mk1 * 4 + mk2] = (int16_t)(it[mk1 * 4 + mk2] - diff);
            }
        }
}

/* std::max(INT_MIN, std::min(INT_MAX, v)) including its NaN behaviour (-> INT_MAX) */
static inline double clamp_int_range(double v)
{
    double r = v < (double)INT_MAX ? v : (double)INT_MAX;
    return (double)INT_MIN < r ? r : (double)INT_MIN;
}

static pthread_once_t cubic_once = PTHREAD_ONCE_INIT;

int img_warp_quad_matrix(const float quad[4][2], int w, int h, double m[9])
{
    double sp[4][2], dp[4][2] = {{0, 0}, {w, 0}, {w, h}, {0, h}}, fwd[9];
    for (int i = 0; i < 4; i++) sp[i][0] = quad[i][0], sp[i][1] = quad[i][1];
    return img_perspective_transform(sp, dp, fwd) != 0 || invert3(fwd, m) != 0 ? -1 : 0;
}

const int16_t *img_warp_cubic_table(void)
{
    pthread_once(&cubic_once, build_cubic_tab);
    return &cubic_tab[0][0];
}

/* The source position of destination pixel (x, y) in 1/32 pixel, as the
 * warp computes it (the same operations in the same order). */
static inline void warp_point(const double M[9], int x, int y, int *X, int *Y)
{
    double X0 = M[1] * y + M[2], Y0 = M[4] * y + M[5], W0 = M[7] * y + M[8];
    double W = W0 + M[6] * x;
    W = W != 0 ? 32.0 / W : 0;
    double fX = clamp_int_range((X0 + M[0] * x) * W), fY = clamp_int_range((Y0 + M[3] * x) * W);
    *X = (int)lrint(fX);
    *Y = (int)lrint(fY);
}

void img_warp_source_rect(const double M[9], int w, int h, int sw, int sh, int rect[4])
{
    /* W is affine in (x, y): one sign at the four corners is one sign over
     * the whole rectangle, and the projective image of the rectangle is then
     * the convex quadrilateral of the corners' images. */
    double wc[4] = {M[8], M[6] * (w - 1) + M[8], M[6] * (w - 1) + M[7] * (h - 1) + M[8], M[7] * (h - 1) + M[8]};
    int pos = 0, neg = 0;
    for (int i = 0; i < 4; i++) pos += wc[i] > 0, neg += wc[i] < 0;
    rect[0] = rect[1] = 0;
    rect[2] = sw;
    rect[3] = sh;
    if (pos != 4 && neg != 4) return;
    int x0 = INT_MAX, y0 = INT_MAX, x1 = INT_MIN, y1 = INT_MIN;
    const int cx[4] = {0, w - 1, w - 1, 0}, cy[4] = {0, 0, h - 1, h - 1};
    for (int i = 0; i < 4; i++) {
        int X, Y;
        warp_point(M, cx[i], cy[i], &X, &Y);
        int sx = sat_s16(X >> 5) - 1, sy = sat_s16(Y >> 5) - 1;
        x0 = LECTOR_MIN(x0, sx), x1 = LECTOR_MAX(x1, sx + 3);
        y0 = LECTOR_MIN(y0, sy), y1 = LECTOR_MAX(y1, sy + 3);
    }
    /* two pixels of slack for the rounding of interior points */
    x0 = LECTOR_MIN(LECTOR_MAX(x0 - 2, 0), sw - 1), x1 = LECTOR_MIN(LECTOR_MAX(x1 + 2, 0), sw - 1);
    y0 = LECTOR_MIN(LECTOR_MAX(y0 - 2, 0), sh - 1), y1 = LECTOR_MIN(LECTOR_MAX(y1 + 2, 0), sh - 1);
    rect[0] = x0;
    rect[1] = y0;
    rect[2] = x1 - x0 + 1;
    rect[3] = y1 - y0 + 1;
}

lector_status img_warp_quad(const img_image *src, const float quad[4][2], int w, int h, img_image *dst,
                            lector_error *err)
{
    lector_status st = check_src(src, "warp", err);
    if (dst) memset(dst, 0, sizeof(*dst));
    if (st != LECTOR_OK) return st;
    if (!dst || !quad || w <= 0 || h <= 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "warp: invalid target size %dx%d", w, h);
    double M[9];
    if (img_warp_quad_matrix(quad, w, h, M) != 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "warp: degenerate quadrilateral");
    st = img_alloc(dst, w, h, src->channels, err);
    if (st != LECTOR_OK) return st;
    const int16_t *tab = img_warp_cubic_table();
    int sw = src->width, sh = src->height, cn = src->channels;
    for (int y = 0; y < h; y++) {
        uint8_t *d = dst->data + (size_t)y * dst->stride;
        for (int x = 0; x < w; x++, d += cn) {
            int X, Y;
            warp_point(M, x, y, &X, &Y);
            int sx = sat_s16(X >> 5) - 1, sy = sat_s16(Y >> 5) - 1;
            const int16_t *wt = tab + ((Y & 31) * 32 + (X & 31)) * 16;
            const uint8_t *rows[4];
            int xs[4];
            if (sx >= 0 && sx + 3 < sw && sy >= 0 && sy + 3 < sh) {
                for (int i = 0; i < 4; i++) {
                    rows[i] = src->data + (size_t)(sy + i) * src->stride;
                    xs[i] = (sx + i) * cn;
                }
            } else { /* BORDER_REPLICATE */
                for (int i = 0; i < 4; i++) {
                    rows[i] = src->data + (size_t)LECTOR_MIN(LECTOR_MAX(sy + i, 0), sh - 1) * src->stride;
                    xs[i] = LECTOR_MIN(LECTOR_MAX(sx + i, 0), sw - 1) * cn;
                }
            }
            for (int k = 0; k < cn; k++) {
                int sum = 0;
                for (int i = 0; i < 4; i++) {
                    const uint8_t *row = rows[i] + k;
                    sum += row[xs[0]] * wt[i * 4] + row[xs[1]] * wt[i * 4 + 1] + row[xs[2]] * wt[i * 4 + 2] +
                           row[xs[3]] * wt[i * 4 + 3];
                }
                d[k] = sat_u8((sum + (1 << 14)) >> 15);
            }
        }
    }
    return LECTOR_OK;
}

/* ---- rotations --------------------------------------------------------- */

lector_status img_rotate90_ccw(const img_image *src, img_image *dst, lector_error *err)
{
    lector_status st = check_src(src, "rotate", err);
    if (dst) memset(dst, 0, sizeof(*dst));
    if (st != LECTOR_OK) return st;
    if (!dst) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "rotate: no output");
    int W = src->width, H = src->height, cn = src->channels;
    st = img_alloc(dst, H, W, cn, err);
    if (st != LECTOR_OK) return st;
    /* out(x, y) = in(W-1-y, x) */
    for (int y = 0; y < W; y++) {
        uint8_t *d = dst->data + (size_t)y * dst->stride;
        for (int x = 0; x < H; x++)
            memcpy(d + (size_t)x * cn, src->data + (size_t)x * src->stride + (size_t)(W - 1 - y) * cn, (size_t)cn);
    }
    return LECTOR_OK;
}

lector_status img_rotate180(const img_image *src, img_image *dst, lector_error *err)
{
    lector_status st = check_src(src, "rotate", err);
    if (dst) memset(dst, 0, sizeof(*dst));
    if (st != LECTOR_OK) return st;
    if (!dst) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "rotate: no output");
    int W = src->width, H = src->height, cn = src->channels;
    st = img_alloc(dst, W, H, cn, err);
    if (st != LECTOR_OK) return st;
    for (int y = 0; y < H; y++) {
        uint8_t *d = dst->data + (size_t)y * dst->stride;
        const uint8_t *s = src->data + (size_t)(H - 1 - y) * src->stride;
        for (int x = 0; x < W; x++) memcpy(d + (size_t)x * cn, s + (size_t)(W - 1 - x) * cn, (size_t)cn);
    }
    return LECTOR_OK;
}
