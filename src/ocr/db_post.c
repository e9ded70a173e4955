#include "ocr/db_post.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* cv2.mean(prob[y0:y1+1, x0:x1+1], mask) over the polygon (shifted). */
static double poly_mean(const float *prob, int pw, int x0, int y0, int x1, int y1, const ocr_ipt *poly, int n, int *oom)
{
    int mw = x1 - x0 + 1, mh = y1 - y0 + 1;
    uint8_t *mask = lector__calloc((size_t)mw * (size_t)mh, 1);
    if (!mask || ocr_fill_poly(mask, mw, mh, poly, n)) {
        lector__free(mask);
        *oom = 1;
        return 0;
    }
    double sum = 0;
    long cnt = 0;
    for (int y = 0; y < mh; y++)
        for (int x = 0; x < mw; x++)
            if (mask[(size_t)y * mw + x]) {
                sum += prob[(size_t)(y + y0) * pw + x + x0];
                cnt++;
            }
    lector__free(mask);
    return cnt ? sum / cnt : 0;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* box_score_fast: mean inside the (float) box, rasterised with int32 vertices */
static double score_fast(const float *prob, int pw, int ph, const ocr_pt box[4], int *oom)
{
    float xmn = box[0].x, xmx = box[0].x, ymn = box[0].y, ymx = box[0].y;
    for (int i = 1; i < 4; i++) {
        xmn = fminf(xmn, box[i].x);
        xmx = fmaxf(xmx, box[i].x);
        ymn = fminf(ymn, box[i].y);
        ymx = fmaxf(ymx, box[i].y);
    }
    int x0 = clampi((int)floorf(xmn), 0, pw - 1), x1 = clampi((int)ceilf(xmx), 0, pw - 1);
    int y0 = clampi((int)floorf(ymn), 0, ph - 1), y1 = clampi((int)ceilf(ymx), 0, ph - 1);
    ocr_ipt poly[4];
    for (int i = 0; i < 4; i++) {
        poly[i].x = (int)(box[i].x - (float)x0); /* astype(int32) truncates */
        poly[i].y = (int)(box[i].y - (float)y0);
    }
    return poly_mean(prob, pw, x0, y0, x1, y1, poly, 4, oom);
}

static double score_slow(const float *prob, int pw, int ph, const ocr_ipt *c, int n, int *oom)
{
    int xmn = c[0].x, xmx = c[0].x, ymn = c[0].y, ymx = c[0].y;
    for (int i = 1; i < n; i++) {
        xmn = c[i].x < xmn ? c[i].x : xmn;
        xmx = c[i].x > xmx ? c[i].x : xmx;
        ymn = c[i].y < ymn ? c[i].y : ymn;
        ymx = c[i].y > ymx ? c[i].y : ymx;
    }
    int x0 = clampi(xmn, 0, pw - 1), x1 = clampi(xmx, 0, pw - 1);
    int y0 = clampi(ymn, 0, ph - 1), y1 = clampi(ymx, 0, ph - 1);
    ocr_ipt *poly = lector__malloc(sizeof *poly * (size_t)n);
    if (!poly) {
        *oom = 1;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        poly[i].x = c[i].x - x0;
        poly[i].y = c[i].y - y0;
    }
    double s = poly_mean(prob, pw, x0, y0, x1, y1, poly, n, oom);
    lector__free(poly);
    return s;
}

lector_status ocr_db_postprocess(const float *prob, int pw, int ph, int src_w, int src_h, const ocr_db_params *p,
                                 ocr_box **boxes, int *n_boxes, lector_error *err)
{
    *boxes = NULL;
    *n_boxes = 0;
    size_t npix = (size_t)pw * (size_t)ph;
    uint8_t *bitmap = lector__malloc(npix ? npix : 1);
    if (!bitmap) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (det bitmap)");
    for (size_t i = 0; i < npix; i++) bitmap[i] = prob[i] > p->thresh;
    if (p->use_dilation) { /* cv2.dilate with a 2x2 kernel, anchor (1,1) */
        uint8_t *d = lector__malloc(npix ? npix : 1);
        if (!d) {
            lector__free(bitmap);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (det bitmap)");
        }
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                uint8_t v = bitmap[(size_t)y * pw + x];
                if (x > 0) v |= bitmap[(size_t)y * pw + x - 1];
                if (y > 0) v |= bitmap[(size_t)(y - 1) * pw + x];
                if (x > 0 && y > 0) v |= bitmap[(size_t)(y - 1) * pw + x - 1];
                d[(size_t)y * pw + x] = v;
            }
        lector__free(bitmap);
        bitmap = d;
    }
    ocr_contours cs;
    int rc = ocr_find_contours(bitmap, pw, ph, &cs);
    lector__free(bitmap);
    if (rc) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (contours)");
    int n_cand = (int)cs.n < p->max_candidates ? (int)cs.n : p->max_candidates;
    ocr_box *out = lector__malloc(sizeof *out * (size_t)(n_cand > 0 ? n_cand : 1));
    ocr_pt *fp = lector__malloc(sizeof *fp * (cs.n_pts ? cs.n_pts : 1));
    if (!out || !fp) {
        lector__free(out);
        lector__free(fp);
        ocr_contours_free(&cs);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (boxes)");
    }
    int n = 0, oom = 0;
    for (int c = 0; c < n_cand && !oom; c++) {
        const ocr_ipt *cp = &cs.pts[cs.list[c].start];
        int cn = (int)cs.list[c].count;
        for (int i = 0; i < cn; i++) {
            fp[i].x = (float)cp[i].x;
            fp[i].y = (float)cp[i].y;
        }
        ocr_pt box[4];
        float sside;
        if (ocr_mini_box(fp, cn, box, &sside)) {
            oom = 1;
            break;
        }
        if (sside < (float)p->min_size) continue;
        double score = p->slow_score ? score_slow(prob, pw, ph, cp, cn, &oom) : score_fast(prob, pw, ph, box, &oom);
        if ((double)p->box_thresh > score) continue;
        double dist = ocr_poly_area(box, 4) * p->unclip_ratio / ocr_poly_length(box, 4);
        int ne;
        ocr_ipt *ex = ocr_offset_round(box, 4, dist, &ne);
        if (!ex || ne < 3) {
            lector__free(ex);
            continue;
        }
        ocr_pt *exf = lector__malloc(sizeof *exf * (size_t)ne);
        if (!exf) {
            lector__free(ex);
            oom = 1;
            break;
        }
        for (int i = 0; i < ne; i++) {
            exf[i].x = (float)ex[i].x;
            exf[i].y = (float)ex[i].y;
        }
        lector__free(ex);
        rc = ocr_mini_box(exf, ne, box, &sside);
        lector__free(exf);
        if (rc) {
            oom = 1;
            break;
        }
        if (sside < (float)(p->min_size + 2)) continue;
        ocr_box *b = &out[n];
        for (int i = 0; i < 4; i++) {
            /* np.round (half to even) then clip, then int32 */
            double x = rint((double)box[i].x / pw * src_w), y = rint((double)box[i].y / ph * src_h);
            x = x < 0 ? 0 : x > src_w ? src_w : x;
            y = y < 0 ? 0 : y > src_h ? src_h : y;
            b->p[i].x = (float)(int)x;
            b->p[i].y = (float)(int)y;
        }
        b->score = (float)score;
        /* filter_tag_det_res: clockwise order, clip to the image, drop tiny boxes */
        ocr_order_clockwise(b->p);
        for (int i = 0; i < 4; i++) {
            b->p[i].x = (float)(int)fminf(fmaxf(b->p[i].x, 0.f), (float)(src_w - 1));
            b->p[i].y = (float)(int)fminf(fmaxf(b->p[i].y, 0.f), (float)(src_h - 1));
        }
        int rw = (int)hypotf(b->p[0].x - b->p[1].x, b->p[0].y - b->p[1].y);
        int rh = (int)hypotf(b->p[0].x - b->p[3].x, b->p[0].y - b->p[3].y);
        if (rw <= 3 || rh <= 3) continue;
        n++;
    }
    lector__free(fp);
    ocr_contours_free(&cs);
    if (oom) {
        lector__free(out);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory (DB post-processing)");
    }
    *boxes = out;
    *n_boxes = n;
    return LECTOR_OK;
}

static int cmp_box(const void *a, const void *b)
{
    const ocr_box *p = a, *q = b;
    if (p->p[0].y != q->p[0].y) return p->p[0].y < q->p[0].y ? -1 : 1;
    if (p->p[0].x != q->p[0].x) return p->p[0].x < q->p[0].x ? -1 : 1;
    return 0;
}

void ocr_sort_boxes(ocr_box *b, int n)
{
    /* sorted(key=(y, x)) is stable; qsort is not, so sort indices-stably by
     * insertion (n is small). */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && cmp_box(&b[j], &b[j - 1]) < 0; j--) {
            ocr_box t = b[j];
            b[j] = b[j - 1];
            b[j - 1] = t;
        }
    /* PaddleOCR: for i, bubble j from i down while |dy| < 10 and x smaller */
    for (int i = 0; i < n - 1; i++) {
        for (int j = i; j >= 0; j--) {
            if (fabsf(b[j + 1].p[0].y - b[j].p[0].y) < 10 && b[j + 1].p[0].x < b[j].p[0].x) {
                ocr_box t = b[j];
                b[j] = b[j + 1];
                b[j + 1] = t;
            } else
                break;
        }
    }
}
