#include "ocr/geometry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* ---- contours (Suzuki & Abe 1985, as in cv2.findContours RETR_LIST) -------- */

/* Neighbour offsets, counter-clockwise on screen starting east (rows grow
 * downwards): E, NE, N, NW, W, SW, S, SE. */
static const int DI[8] = {0, -1, -1, -1, 0, 1, 1, 1};
static const int DJ[8] = {1, 1, 0, -1, -1, -1, 0, 1};

static int push_pt(ocr_contours *c, int x, int y)
{
    if (c->n_pts == c->cap_pts) {
        size_t cap = c->cap_pts ? c->cap_pts * 2 : 1024;
        ocr_ipt *p = lector__realloc(c->pts, cap * sizeof *p);
        if (!p) return -1;
        c->pts = p;
        c->cap_pts = cap;
    }
    c->pts[c->n_pts].x = x;
    c->pts[c->n_pts].y = y;
    c->n_pts++;
    return 0;
}

static int dir_of(int di, int dj)
{
    for (int d = 0; d < 8; d++)
        if (DI[d] == di && DJ[d] == dj) return d;
    return 0;
}

/* Follows one border starting at (i, j) whose zero neighbour is (i2, j2);
 * f is the padded label image of width W. Appends points to c. */
static int trace(int32_t *f, int W, int i, int j, int i2, int j2, int nbd, ocr_contours *c)
{
    int start_dir = dir_of(i2 - i, j2 - j), d1 = -1;
    /* 3.1: clockwise from (i2, j2) for a non-zero pixel */
    for (int k = 0; k < 8; k++) {
        int d = (start_dir - k + 8) % 8;
        if (f[(i + DI[d]) * W + j + DJ[d]]) {
            d1 = d;
            break;
        }
    }
    if (d1 < 0) { /* isolated pixel */
        f[i * W + j] = -nbd;
        return push_pt(c, j - 1, i - 1);
    }
    int i1 = i + DI[d1], j1 = j + DJ[d1];
    int pi = i1, pj = j1; /* (i2, j2) */
    int ci = i, cj = j;   /* (i3, j3) */
    for (;;) {
        if (push_pt(c, cj - 1, ci - 1)) return -1;
        /* 3.3: counter-clockwise from the element after (i2, j2) */
        int dprev = dir_of(pi - ci, pj - cj), d4 = -1, east_zero = 0;
        for (int k = 1; k <= 8; k++) {
            int d = (dprev + k) % 8;
            int v = f[(ci + DI[d]) * W + cj + DJ[d]];
            if (v) {
                d4 = d;
                break;
            }
            if (d == 0) east_zero = 1;
        }
        /* 3.4 */
        if (east_zero)
            f[ci * W + cj] = -nbd;
        else if (f[ci * W + cj] == 1)
            f[ci * W + cj] = nbd;
        int i4 = ci + DI[d4], j4 = cj + DJ[d4];
        /* 3.5 */
        if (i4 == i && j4 == j && ci == i1 && cj == j1) break;
        pi = ci;
        pj = cj;
        ci = i4;
        cj = j4;
    }
    return 0;
}

int ocr_find_contours(const uint8_t *map, int w, int h, ocr_contours *out)
{
    memset(out, 0, sizeof *out);
    int W = w + 2, H = h + 2;
    int32_t *f = lector__calloc((size_t)W * (size_t)H, sizeof *f);
    if (!f) return -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) f[(y + 1) * W + x + 1] = map[(size_t)y * w + x] != 0;
    int nbd = 1;
    for (int i = 1; i <= h; i++) {
        for (int j = 1; j <= w; j++) {
            int32_t v = f[i * W + j];
            int start = 0, i2 = i, j2 = j;
            if (v == 1 && f[i * W + j - 1] == 0) {
                start = 1;
                j2 = j - 1;
            } else if (v >= 1 && f[i * W + j + 1] == 0) {
                start = 1;
                j2 = j + 1;
            }
            if (!start) continue;
            if (nbd == INT32_MAX - 1) continue; /* absurd images: stop adding */
            nbd++;
            if (out->n == out->cap) {
                size_t cap = out->cap ? out->cap * 2 : 64;
                ocr_contour *l = lector__realloc(out->list, cap * sizeof *l);
                if (!l) goto oom;
                out->list = l;
                out->cap = cap;
            }
            size_t s = out->n_pts;
            if (trace(f, W, i, j, i2, j2, nbd, out)) goto oom;
            out->list[out->n].start = s;
            out->list[out->n].count = out->n_pts - s;
            out->n++;
        }
    }
    lector__free(f);
    return 0;
oom:
    lector__free(f);
    ocr_contours_free(out);
    return -1;
}

void ocr_contours_free(ocr_contours *c)
{
    lector__free(c->pts);
    lector__free(c->list);
    memset(c, 0, sizeof *c);
}

/* ---- hull and minimum-area rectangle ---------------------------------------- */

static int cmp_pt(const void *a, const void *b)
{
    const ocr_pt *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    if (p->y != q->y) return p->y < q->y ? -1 : 1;
    return 0;
}

static double cross(ocr_pt o, ocr_pt a, ocr_pt b)
{
    return ((double)a.x - o.x) * ((double)b.y - o.y) - ((double)a.y - o.y) * ((double)b.x - o.x);
}

int ocr_convex_hull(const ocr_pt *in, int n, ocr_pt *hull)
{
    if (n <= 0) return 0;
    ocr_pt *p = lector__malloc(sizeof *p * (size_t)n);
    ocr_pt *h = lector__malloc(sizeof *h * (size_t)(2 * n + 1));
    if (!p || !h) {
        lector__free(p);
        lector__free(h);
        return -1;
    }
    memcpy(p, in, sizeof *p * (size_t)n);
    qsort(p, (size_t)n, sizeof *p, cmp_pt);
    int k = 0;
    for (int i = 0; i < n; i++) { /* lower hull (Andrew's monotone chain) */
        while (k >= 2 && cross(h[k - 2], h[k - 1], p[i]) <= 0) k--;
        h[k++] = p[i];
    }
    for (int i = n - 2, t = k + 1; i >= 0; i--) {
        while (k >= t && cross(h[k - 2], h[k - 1], p[i]) <= 0) k--;
        h[k++] = p[i];
    }
    if (k > 1) k--; /* last point equals the first */
    memcpy(hull, h, sizeof *h * (size_t)k);
    lector__free(p);
    lector__free(h);
    return k;
}

int ocr_mini_box(const ocr_pt *pts, int n, ocr_pt box[4], float *short_side)
{
    ocr_pt *hull = lector__malloc(sizeof *hull * (size_t)(n > 0 ? n : 1));
    if (!hull) return -1;
    int m = ocr_convex_hull(pts, n, hull);
    if (m < 0) {
        lector__free(hull);
        return -1;
    }
    ocr_pt c[4];
    if (m <= 2) {
        /* a point or a segment: a degenerate rectangle along it */
        ocr_pt a = m > 0 ? hull[0] : (ocr_pt){0, 0}, b = m > 1 ? hull[1] : a;
        c[0] = a;
        c[1] = b;
        c[2] = b;
        c[3] = a;
    } else {
        /* cv2.minAreaRect's rotating calipers start from the axis-aligned
         * box and rotate by the smallest edge angle first; on equal areas
         * (symmetric shapes) the first rotation wins. Reproduce that order:
         * edges by their angle modulo 90 degrees, strict improvement only. */
        const double half_pi = 1.57079632679489661923;
        double best = INFINITY, best_theta = -1;
        for (int e = 0; e < m; e++) {
            ocr_pt a = hull[e], b = hull[(e + 1) % m];
            double ux = (double)b.x - a.x, uy = (double)b.y - a.y, len = sqrt(ux * ux + uy * uy);
            if (len == 0) continue;
            ux /= len;
            uy /= len;
            double theta = fmod(atan2(uy, ux) + 4 * half_pi, half_pi);
            if (theta > half_pi - 1e-9) theta = 0;
            double lo_u = INFINITY, hi_u = -INFINITY, lo_v = INFINITY, hi_v = -INFINITY;
            for (int i = 0; i < m; i++) {
                double pu = hull[i].x * ux + hull[i].y * uy, pv = -hull[i].x * uy + hull[i].y * ux;
                if (pu < lo_u) lo_u = pu;
                if (pu > hi_u) hi_u = pu;
                if (pv < lo_v) lo_v = pv;
                if (pv > hi_v) hi_v = pv;
            }
            double area = (hi_u - lo_u) * (hi_v - lo_v);
            double tol = 1e-6 * (area > 1 ? area : 1);
            int better = area < best - tol || (fabs(area - best) <= tol && theta > best_theta);
            if (better) {
                best = area;
                best_theta = theta;
                double us[4] = {lo_u, hi_u, hi_u, lo_u}, vs[4] = {lo_v, lo_v, hi_v, hi_v};
                for (int k = 0; k < 4; k++) {
                    c[k].x = (float)(us[k] * ux - vs[k] * uy);
                    c[k].y = (float)(us[k] * uy + vs[k] * ux);
                }
            }
        }
    }
    lector__free(hull);
    /* Re-derive the corners the way cv2.boxPoints does from a RotatedRect
     * (float centre, size, angle in degrees): PaddleOCR truncates these
     * corners to integers, so OpenCV's float artefacts (58.99999 for 59)
     * decide pixels of the score mask. */
    {
        float cx = (c[0].x + c[2].x) * 0.5f, cy = (c[0].y + c[2].y) * 0.5f;
        float wd = (float)hypot((double)c[1].x - c[0].x, (double)c[1].y - c[0].y);
        float ht = (float)hypot((double)c[2].x - c[1].x, (double)c[2].y - c[1].y);
        float ang = (float)(atan2((double)c[1].y - c[0].y, (double)c[1].x - c[0].x) * 180.0 / 3.14159265358979323846);
        double rad = ang * 3.14159265358979323846 / 180.;
        float bb = (float)cos(rad) * 0.5f, aa = (float)sin(rad) * 0.5f;
        c[0].x = cx - aa * ht - bb * wd;
        c[0].y = cy + bb * ht - aa * wd;
        c[1].x = cx + aa * ht - bb * wd;
        c[1].y = cy - bb * ht - aa * wd;
        c[2].x = 2 * cx - c[0].x;
        c[2].y = 2 * cy - c[0].y;
        c[3].x = 2 * cx - c[1].x;
        c[3].y = 2 * cy - c[1].y;
    }
    double s1 = hypot((double)c[1].x - c[0].x, (double)c[1].y - c[0].y);
    double s2 = hypot((double)c[2].x - c[1].x, (double)c[2].y - c[1].y);
    *short_side = (float)(s1 < s2 ? s1 : s2);
    /* get_mini_boxes: sort by x (stable), then split left/right pairs by y */
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && c[j].x < c[j - 1].x; j--) {
            ocr_pt t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    int i1, i4, i2, i3;
    if (c[1].y > c[0].y) {
        i1 = 0;
        i4 = 1;
    } else {
        i1 = 1;
        i4 = 0;
    }
    if (c[3].y > c[2].y) {
        i2 = 2;
        i3 = 3;
    } else {
        i2 = 3;
        i3 = 2;
    }
    box[0] = c[i1];
    box[1] = c[i2];
    box[2] = c[i3];
    box[3] = c[i4];
    return 0;
}

/* ---- cv2.fillPoly ------------------------------------------------------------ */

#define XY_SHIFT 16
#define XY_ONE   ((int64_t)1 << XY_SHIFT)

/* cv::clipLine: clips the segment to the image in place (integer
 * arithmetic as OpenCV does it; the Bresenham pixels of a clipped segment
 * differ from those of the unclipped one, so this matters). Returns 0 when
 * nothing is visible. */
static int clip_line(int w, int h, int64_t *x1, int64_t *y1, int64_t *x2, int64_t *y2)
{
    int64_t right = w - 1, bottom = h - 1, a;
    if (w <= 0 || h <= 0) return 0;
    int c1 = (*x1 < 0) + (*x1 > right) * 2 + (*y1 < 0) * 4 + (*y1 > bottom) * 8;
    int c2 = (*x2 < 0) + (*x2 > right) * 2 + (*y2 < 0) * 4 + (*y2 > bottom) * 8;
    if ((c1 & c2) == 0 && (c1 | c2) != 0) {
        if (c1 & 12) {
            a = c1 < 8 ? 0 : bottom;
            *x1 += (int64_t)((double)(a - *y1) * (*x2 - *x1) / (*y2 - *y1));
            *y1 = a;
            c1 = (*x1 < 0) + (*x1 > right) * 2;
        }
        if (c2 & 12) {
            a = c2 < 8 ? 0 : bottom;
            *x2 += (int64_t)((double)(a - *y2) * (*x2 - *x1) / (*y2 - *y1));
            *y2 = a;
            c2 = (*x2 < 0) + (*x2 > right) * 2;
        }
        if ((c1 & c2) == 0 && (c1 | c2) != 0) {
            if (c1) {
                a = c1 == 1 ? 0 : right;
                *y1 += (int64_t)((double)(a - *x1) * (*y2 - *y1) / (*x2 - *x1));
                *x1 = a;
                c1 = 0;
            }
            if (c2) {
                a = c2 == 1 ? 0 : right;
                *y2 += (int64_t)((double)(a - *x2) * (*y2 - *y1) / (*x2 - *x1));
                *x2 = a;
                c2 = 0;
            }
        }
    }
    return (c1 | c2) == 0;
}

/* cv::Line with 8-connectivity (LineIterator: clipped, then left to right). */
static void draw_line(uint8_t *m, int w, int h, ocr_ipt a, ocr_ipt b)
{
    if ((unsigned)a.x >= (unsigned)w || (unsigned)b.x >= (unsigned)w || (unsigned)a.y >= (unsigned)h ||
        (unsigned)b.y >= (unsigned)h) {
        int64_t x1 = a.x, y1 = a.y, x2 = b.x, y2 = b.y;
        if (!clip_line(w, h, &x1, &y1, &x2, &y2)) return;
        a.x = (int)x1;
        a.y = (int)y1;
        b.x = (int)x2;
        b.y = (int)y2;
    }
    if (a.x > b.x) {
        ocr_ipt t = a;
        a = b;
        b = t;
    }
    int dx = b.x - a.x, dy = b.y - a.y;
    int ystep = 1;
    if (dy < 0) {
        dy = -dy;
        ystep = -1;
    }
    int x = a.x, y = a.y;
    int xmajor = dx >= dy;
    int major = xmajor ? dx : dy, minor = xmajor ? dy : dx;
    int err = major - (minor + minor), plus = major + major, minus = -(minor + minor);
    for (int k = 0; k <= major; k++) {
        if ((unsigned)x < (unsigned)w && (unsigned)y < (unsigned)h) m[(size_t)y * w + x] = 1;
        int step_minor = err < 0;
        err += minus + (step_minor ? plus : 0);
        if (xmajor) {
            x++;
            if (step_minor) y += ystep;
        } else {
            y += ystep;
            if (step_minor) x++;
        }
    }
}

typedef struct poly_edge {
    int y0, y1;
    int64_t x, dx;
} poly_edge;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int ocr_fill_poly(uint8_t *mask, int w, int h, const ocr_ipt *poly, int n)
{
    if (n <= 0) return 0;
    poly_edge *e = lector__malloc(sizeof *e * (size_t)n);
    int64_t *xs = lector__malloc(sizeof *xs * (size_t)n);
    if (!e || !xs) {
        lector__free(e);
        lector__free(xs);
        return -1;
    }
    int ne = 0, ymin = INT32_MAX, ymax = INT32_MIN;
    ocr_ipt p0 = poly[n - 1];
    for (int i = 0; i < n; i++) {
        ocr_ipt p1 = poly[i];
        draw_line(mask, w, h, p0, p1);
        if (p0.y != p1.y) {
            int64_t x0 = (int64_t)p0.x * XY_ONE, x1 = (int64_t)p1.x * XY_ONE;
            poly_edge *pe = &e[ne++];
            pe->dx = (x1 - x0) / (p1.y - p0.y);
            if (p0.y < p1.y) {
                pe->y0 = p0.y;
                pe->y1 = p1.y;
                pe->x = x0;
            } else {
                pe->y0 = p1.y;
                pe->y1 = p0.y;
                pe->x = x1;
            }
            if (pe->y0 < ymin) ymin = pe->y0;
            if (pe->y1 > ymax) ymax = pe->y1;
        }
        p0 = p1;
    }
    if (ymax > h) ymax = h;
    for (int y = ymin < 0 ? 0 : ymin; y < ymax && ne >= 2; y++) {
        int k = 0;
        for (int i = 0; i < ne; i++)
            if (e[i].y0 <= y && y < e[i].y1) xs[k++] = e[i].x + (int64_t)(y - e[i].y0) * e[i].dx;
        qsort(xs, (size_t)k, sizeof *xs, cmp_i64);
        for (int i = 0; i + 1 < k; i += 2) {
            int xa = (int)((xs[i] + XY_ONE - 1) >> XY_SHIFT), xb = (int)(xs[i + 1] >> XY_SHIFT);
            if (xa < w && xb >= 0) {
                if (xa < 0) xa = 0;
                if (xb >= w) xb = w - 1;
                for (int x = xa; x <= xb; x++) mask[(size_t)y * w + x] = 1;
            }
        }
    }
    lector__free(e);
    lector__free(xs);
    return 0;
}

/* ---- Clipper offset with round joins -------------------------------------------- */

static int64_t clip_round(double v) { return v < 0 ? (int64_t)(v - 0.5) : (int64_t)(v + 0.5); }

ocr_ipt *ocr_offset_round(const ocr_pt *poly, int n, double delta, int *n_out)
{
    *n_out = 0;
    if (n <= 0 || n > 1 << 20 || !(delta > 0)) return NULL;
    /* pyclipper converts coordinates to integers by truncation */
    int64_t(*src)[2] = lector__malloc(sizeof *src * (size_t)n);
    if (!src) return NULL;
    int m = 0;
    for (int i = 0; i < n; i++) {
        int64_t x = (int64_t)poly[i].x, y = (int64_t)poly[i].y;
        if (m > 0 && src[m - 1][0] == x && src[m - 1][1] == y) continue;
        src[m][0] = x;
        src[m][1] = y;
        m++;
    }
    while (m > 1 && src[0][0] == src[m - 1][0] && src[0][1] == src[m - 1][1]) m--;
    if (m < 3) {
        lector__free(src);
        return NULL;
    }
    /* Clipper's Area(): make the orientation positive */
    double a = 0;
    for (int i = 0, j = m - 1; i < m; j = i++) a += ((double)src[j][0] + src[i][0]) * ((double)src[j][1] - src[i][1]);
    if (-a * 0.5 < 0) {
        for (int i = 0; i < m / 2; i++) {
            int64_t t0 = src[i][0], t1 = src[i][1];
            src[i][0] = src[m - 1 - i][0];
            src[i][1] = src[m - 1 - i][1];
            src[m - 1 - i][0] = t0;
            src[m - 1 - i][1] = t1;
        }
    }
    const double arc_tol = 0.25, pi = 3.14159265358979323846;
    double y = arc_tol > delta * 0.25 ? delta * 0.25 : arc_tol;
    double steps = pi / acos(1 - y / delta);
    if (steps > delta * pi) steps = delta * pi;
    double s_sin = sin(2 * pi / steps), s_cos = cos(2 * pi / steps), per_rad = steps / (2 * pi);
    double(*nrm)[2] = lector__malloc(sizeof *nrm * (size_t)m);
    /* each vertex emits at most steps+3 points */
    size_t cap = (size_t)m * ((size_t)steps + 4) + 16;
    ocr_ipt *out = lector__malloc(sizeof *out * cap);
    if (!nrm || !out) {
        lector__free(src);
        lector__free(nrm);
        lector__free(out);
        return NULL;
    }
    for (int j = 0; j < m; j++) {
        int k = (j + 1) % m;
        double dx = (double)(src[k][0] - src[j][0]), dy = (double)(src[k][1] - src[j][1]);
        if (dx == 0 && dy == 0) {
            nrm[j][0] = nrm[j][1] = 0;
            continue;
        }
        double f = 1.0 / sqrt(dx * dx + dy * dy);
        nrm[j][0] = dy * f;
        nrm[j][1] = -dx * f;
    }
    size_t o = 0;
#define EMIT(px, py)              \
    do {                          \
        if (o < cap) {            \
            out[o].x = (int)(px); \
            out[o].y = (int)(py); \
            o++;                  \
        }                         \
    } while (0)
    for (int j = 0, k = m - 1; j < m; k = j, j++) {
        double sx = (double)src[j][0], sy = (double)src[j][1];
        double sin_a = nrm[k][0] * nrm[j][1] - nrm[j][0] * nrm[k][1];
        double cos_a = nrm[k][0] * nrm[j][0] + nrm[j][1] * nrm[k][1];
        if (fabs(sin_a * delta) < 1.0) {
            if (cos_a > 0) {
                EMIT(clip_round(sx + nrm[k][0] * delta), clip_round(sy + nrm[k][1] * delta));
                continue;
            }
        } else if (sin_a > 1.0)
            sin_a = 1.0;
        else if (sin_a < -1.0)
            sin_a = -1.0;
        if (sin_a * delta < 0) {
            EMIT(clip_round(sx + nrm[k][0] * delta), clip_round(sy + nrm[k][1] * delta));
            EMIT(src[j][0], src[j][1]);
            EMIT(clip_round(sx + nrm[j][0] * delta), clip_round(sy + nrm[j][1] * delta));
        } else {
            double ang = atan2(sin_a, cos_a);
            int st = (int)clip_round(per_rad * fabs(ang));
            if (st < 1) st = 1;
            double X = nrm[k][0], Y = nrm[k][1];
            for (int i = 0; i < st; i++) {
                EMIT(clip_round(sx + X * delta), clip_round(sy + Y * delta));
                double X2 = X;
                X = X * s_cos - s_sin * Y;
                Y = X2 * s_sin + Y * s_cos;
            }
            EMIT(clip_round(sx + nrm[j][0] * delta), clip_round(sy + nrm[j][1] * delta));
        }
    }
#undef EMIT
    lector__free(src);
    lector__free(nrm);
    *n_out = (int)o;
    return out;
}

/* ---- small helpers ---------------------------------------------------------------- */

void ocr_order_clockwise(ocr_pt box[4])
{
    int imin = 0, imax = 0;
    for (int i = 1; i < 4; i++) {
        if (box[i].x + box[i].y < box[imin].x + box[imin].y) imin = i;
        if (box[i].x + box[i].y > box[imax].x + box[imax].y) imax = i;
    }
    ocr_pt r[4], rest[3];
    int nr = 0;
    r[0] = box[imin];
    r[2] = box[imax];
    /* np.delete removes both indices (one if they coincide) */
    for (int i = 0; i < 4; i++)
        if (i != imin && i != imax) rest[nr++] = box[i];
    int dmin = 0, dmax = 0;
    for (int i = 1; i < nr; i++) {
        if (rest[i].y - rest[i].x < rest[dmin].y - rest[dmin].x) dmin = i;
        if (rest[i].y - rest[i].x > rest[dmax].y - rest[dmax].x) dmax = i;
    }
    r[1] = rest[dmin];
    r[3] = rest[dmax];
    memcpy(box, r, sizeof r);
}

double ocr_poly_area(const ocr_pt *p, int n)
{
    double a = 0;
    for (int i = 0, j = n - 1; i < n; j = i++) a += (double)p[j].x * p[i].y - (double)p[i].x * p[j].y;
    return fabs(a) * 0.5;
}

double ocr_poly_length(const ocr_pt *p, int n)
{
    double l = 0;
    for (int i = 0, j = n - 1; i < n; j = i++) l += hypot((double)p[i].x - p[j].x, (double)p[i].y - p[j].y);
    return l;
}
