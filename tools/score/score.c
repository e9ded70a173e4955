/* lector-score: detection precision / recall / H-mean and character error rate of an OCR result
 * (JSON Lines in the shape of `lector --format json`) against a gt.tsv of ../shared/data.
 *
 *   lector-score --gt GT.tsv --res RESULT.jsonl [--mode line|word|both|text|all] [--iou 0.5]
 *                [--name LABEL] [--wall SECONDS] [--tsv] [--per-image FILE] [--ignore-case]
 *
 * Definitions (docs/ACCURACY.md has the full text):
 *  - GT: rows of unit 'word' or 'line' with a box.  Text '###' = do-not-care region.
 *  - A detection is ignored (neither TP nor FP) when, for some do-not-care region, IoU >= 0.5 or
 *    intersection / area(detection) >= 0.5.
 *  - Matching: all (care GT, kept detection) pairs with IoU >= --iou, sorted by IoU (descending),
 *    taken greedily one-to-one.  P = TP / kept detections, R = TP / care GT, H = 2PR / (P + R).
 *  - CER = (sum over matched pairs of Levenshtein(gt, det) in Unicode code points
 *          + sum over unmatched care GT of len(gt)) / sum over care GT of len(gt).
 *  - Polygon IoU: exact area of intersection of the two quads (made counter-clockwise; a
 *    non-convex or self-intersecting quad is replaced by its convex hull).
 *  - Mode 'line': detections as produced.  Mode 'word': every detected line is split at
 *    whitespace into words; each word gets the part of the line's quad proportional to its
 *    code-point span (top edge p0->p1 and bottom edge p3->p2 interpolated), score as the line's.
 *    'both' prints both.
 *  - --loose: CER computed on text without whitespace, ASCII case folded (a second view; the
 *    detection figures do not change).
 *  - Mode 'text' (word F1, boxes not used): per image, the bag of words of the GT rows of unit
 *    line, word or cell (with or without a box; '###' skipped) against the bag of words of all
 *    result lines; a word is a run of characters other than whitespace and CJK characters, and
 *    each CJK character (ideographs, CJK and full-width punctuation) is a word of its own, so
 *    '合计 627.99' and '合计627.99' give the same words, 'in videos' and 'invideos' do not.
 *    matched = the size of the bags' intersection; P = matched / result words, R = matched / GT
 *    words, H = word F1, summed over images. --loose folds ASCII case. No CER in this mode.
 *  - --only-present: only GT images that have a result line are scored (partial runs).
 *
 *   lector-score --distance GOT EXPECTED
 *
 *  prints the Levenshtein distance between two strings in Unicode code points and EXPECTED's
 *  length in code points ("3 16"): tests/accuracy/run_suite.sh's similarity rule.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double x, y;
} pt;
typedef struct {
    pt q[4];
    uint32_t *cp; /* code points */
    int ncp;
    int dontcare;
} item;
typedef struct {
    char *name; /* image_path as in gt.tsv */
    item *gt;
    int ngt, capgt;
    item *txt; /* mode text: GT rows of unit line/word/cell, with or without a box */
    int ntxt, captxt;
    item *det;
    int ndet, capdet;
    int found; /* result present */
    int err;   /* result had an error */
} image;

static image *imgs;
static int nimgs, capimgs;
static int ignore_case;
static int only_present;
static int loose; /* CER on case-folded (ASCII) text without whitespace */

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "lector-score: out of memory\n");
        exit(3);
    }
    return q;
}

/* ---------- UTF-8 ---------- */
static int utf8_decode(const char *s, uint32_t **out)
{
    size_t n = strlen(s);
    uint32_t *cp = xrealloc(NULL, (n + 1) * sizeof *cp);
    int k = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c = *p;
        int len = 1;
        if (c >= 0xF0 && c < 0xF8) {
            c &= 0x07;
            len = 4;
        } else if (c >= 0xE0) {
            c &= 0x0F;
            len = 3;
        } else if (c >= 0xC0) {
            c &= 0x1F;
            len = 2;
        } else if (c >= 0x80) {
            len = 1;
        } /* stray continuation: keep as is */
        int i = 1;
        for (; i < len && p[i] && (p[i] & 0xC0) == 0x80; i++) c = (c << 6) | (p[i] & 0x3F);
        if (i < len) {
            c = 0xFFFD;
            len = i;
        }
        if (ignore_case && c < 128) c = (uint32_t)tolower((int)c);
        cp[k++] = c;
        p += len;
    }
    *out = cp;
    return k;
}

static long levenshtein(const uint32_t *a, int na, const uint32_t *b, int nb)
{
    long *row = xrealloc(NULL, (size_t)(nb + 1) * sizeof *row);
    for (int j = 0; j <= nb; j++) row[j] = j;
    for (int i = 1; i <= na; i++) {
        long diag = row[0];
        row[0] = i;
        for (int j = 1; j <= nb; j++) {
            long up = row[j];
            long v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v) v = up + 1;
            if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
        }
    }
    long r = row[nb];
    free(row);
    return r;
}

/* ---------- geometry ---------- */
static double cross(pt o, pt a, pt b) { return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x); }

static double poly_area(const pt *p, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        int j = (i + 1) % n;
        s += p[i].x * p[j].y - p[j].x * p[i].y;
    }
    return s / 2;
}

static int cmp_pt(const void *a, const void *b)
{
    const pt *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    if (p->y != q->y) return p->y < q->y ? -1 : 1;
    return 0;
}

/* convex hull (monotone chain), counter-clockwise (positive area in x-right/y-down numbers) */
static int convex_hull(const pt *in, int n, pt *out)
{
    pt s[8];
    memcpy(s, in, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_pt);
    pt h[16];
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k >= 2 && cross(h[k - 2], h[k - 1], s[i]) <= 0) k--;
        h[k++] = s[i];
    }
    for (int i = n - 2, t = k + 1; i >= 0; i--) {
        while (k >= t && cross(h[k - 2], h[k - 1], s[i]) <= 0) k--;
        h[k++] = s[i];
    }
    k--; /* last point repeats the first */
    if (k < 0) k = 0;
    memcpy(out, h, (size_t)k * sizeof *out);
    return k;
}

/* normalise a quad into a convex polygon with positive orientation; returns vertex count */
static int convex_poly(const pt q[4], pt out[8])
{
    int pos = 0, neg = 0;
    for (int i = 0; i < 4; i++) {
        double c = cross(q[i], q[(i + 1) % 4], q[(i + 2) % 4]);
        if (c > 0)
            pos++;
        else if (c < 0)
            neg++;
    }
    if ((pos == 0 || neg == 0) && (pos + neg) > 0) {
        memcpy(out, q, 4 * sizeof *out);
        if (poly_area(out, 4) < 0) {
            pt t = out[1];
            out[1] = out[3];
            out[3] = t;
        }
        return 4;
    }
    return convex_hull(q, 4, out);
}

/* Sutherland-Hodgman: clip convex subject by convex clip (both positive orientation) */
static int clip_poly(const pt *subj, int ns, const pt *clip, int nc, pt *out)
{
    pt buf1[32], buf2[32];
    pt *in = buf1, *o = buf2;
    int n = ns;
    memcpy(in, subj, (size_t)ns * sizeof *in);
    for (int e = 0; e < nc && n > 0; e++) {
        pt a = clip[e], b = clip[(e + 1) % nc];
        int m = 0;
        for (int i = 0; i < n; i++) {
            pt p = in[i], q = in[(i + 1) % n];
            double cp = cross(a, b, p), cq = cross(a, b, q);
            if (cp >= 0) o[m++] = p;
            if ((cp >= 0) != (cq >= 0)) {
                double t = cp / (cp - cq);
                o[m++] = (pt){p.x + t * (q.x - p.x), p.y + t * (q.y - p.y)};
            }
            if (m >= 30) break;
        }
        pt *t = in;
        in = o;
        o = t;
        n = m;
    }
    memcpy(out, in, (size_t)n * sizeof *out);
    return n;
}

typedef struct {
    pt p[8];
    int n;
    double area;
} cpoly;

static void make_cpoly(const pt q[4], cpoly *c)
{
    c->n = convex_poly(q, c->p);
    c->area = c->n >= 3 ? fabs(poly_area(c->p, c->n)) : 0;
}

static double inter_area(const cpoly *a, const cpoly *b)
{
    if (a->area <= 0 || b->area <= 0) return 0;
    pt out[32];
    int n = clip_poly(a->p, a->n, b->p, b->n, out);
    return n >= 3 ? fabs(poly_area(out, n)) : 0;
}

/* ---------- input ---------- */
static char *unescape(const char *s)
{
    size_t n = strlen(s);
    char *o = xrealloc(NULL, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char c = s[++i];
            o[k++] = c == 'n' ? '\n' : c == 't' ? '\t' : c;
        } else
            o[k++] = s[i];
    }
    o[k] = 0;
    return o;
}

static image *find_image(const char *name, int create)
{
    for (int i = 0; i < nimgs; i++)
        if (!strcmp(imgs[i].name, name)) return &imgs[i];
    if (!create) return NULL;
    if (nimgs == capimgs) {
        capimgs = capimgs ? capimgs * 2 : 64;
        imgs = xrealloc(imgs, (size_t)capimgs * sizeof *imgs);
    }
    image *im = &imgs[nimgs++];
    memset(im, 0, sizeof *im);
    im->name = strdup(name);
    return im;
}

/* result file name -> gt image: exact, or the file path ends with "/" + image_path */
static image *match_image(const char *file)
{
    size_t lf = strlen(file);
    for (int i = 0; i < nimgs; i++) {
        const char *n = imgs[i].name;
        size_t ln = strlen(n);
        if (!strcmp(file, n)) return &imgs[i];
        if (lf > ln && file[lf - ln - 1] == '/' && !strcmp(file + lf - ln, n)) return &imgs[i];
    }
    return NULL;
}

static void push_item(item **arr, int *n, int *cap, const item *it)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *arr = xrealloc(*arr, (size_t)*cap * sizeof **arr);
    }
    (*arr)[(*n)++] = *it;
}

/* Calls fn(line, lineno, path) for each line of the file, its line end
 * stripped; returns the sum of fn's results, or -1 when it cannot be read. */
static int for_each_line(const char *path, int (*fn)(char *line, int lineno, const char *path))
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, sum = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        sum += fn(line, lineno, path);
    }
    free(line);
    fclose(f);
    return sum;
}

/* A ground-truth TSV line (the first is the header): 1 when it adds a box. */
static int gt_line(char *line, int lineno, const char *path)
{
    (void)path;
    if (lineno == 1) return 0; /* header */
    char *col[6] = {0};
    int nc = 0;
    char *p = line;
    col[nc++] = p;
    while (*p && nc < 6) {
        if (*p == '\t') {
            *p = 0;
            col[nc++] = p + 1;
        }
        p++;
    }
    if (nc < 4) return 0;
    image *im = find_image(col[0], 1);
    if (!strcmp(col[1], "word") || !strcmp(col[1], "line") || !strcmp(col[1], "cell")) {
        char *text = unescape(col[3]);
        if (strcmp(text, "###")) {
            item t = {0};
            t.ncp = utf8_decode(text, &t.cp);
            push_item(&im->txt, &im->ntxt, &im->captxt, &t);
        }
        free(text);
    }
    if (strcmp(col[1], "word") && strcmp(col[1], "line")) return 0;
    double v[8];
    if (sscanf(col[2], "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
        return 0;
    item it = {0};
    for (int i = 0; i < 4; i++) it.q[i] = (pt){v[2 * i], v[2 * i + 1]};
    char *text = unescape(col[3]);
    it.dontcare = !strcmp(text, "###");
    it.ncp = utf8_decode(text, &it.cp);
    free(text);
    push_item(&im->gt, &im->ngt, &im->capgt, &it);
    return 1;
}

static int read_gt(const char *path) { return for_each_line(path, gt_line); }

/* A result JSON line: 1 when it names an image of the ground truth. */
static int res_line(char *line, int lineno, const char *path)
{
    if (!*line) return 0;
    cJSON *o = cJSON_Parse(line);
    if (!o) {
        fprintf(stderr, "lector-score: %s:%d: not JSON\n", path, lineno);
        return 0;
    }
    cJSON *file = cJSON_GetObjectItemCaseSensitive(o, "file");
    image *im = cJSON_IsString(file) ? match_image(file->valuestring) : NULL;
    if (!im) {
        fprintf(stderr, "lector-score: %s:%d: file %s not in GT, skipped\n", path, lineno,
                cJSON_IsString(file) ? file->valuestring : "?");
        cJSON_Delete(o);
        return 0;
    }
    im->found = 1;
    cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
    if (cJSON_IsString(err)) im->err = 1;
    cJSON *pages = cJSON_GetObjectItemCaseSensitive(o, "pages");
    cJSON *page = cJSON_IsArray(pages) ? cJSON_GetArrayItem(pages, 0) : NULL;
    cJSON *lines = page ? cJSON_GetObjectItemCaseSensitive(page, "lines") : NULL;
    cJSON *l;
    cJSON_ArrayForEach(l, lines)
    {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "text");
        cJSON *b = cJSON_GetObjectItemCaseSensitive(l, "box");
        if (!cJSON_IsString(t) || !cJSON_IsArray(b) || cJSON_GetArraySize(b) != 4) continue;
        item it = {0};
        int ok = 1;
        for (int i = 0; i < 4; i++) {
            cJSON *p = cJSON_GetArrayItem(b, i);
            cJSON *x = cJSON_GetArrayItem(p, 0), *y = cJSON_GetArrayItem(p, 1);
            if (!cJSON_IsNumber(x) || !cJSON_IsNumber(y)) {
                ok = 0;
                break;
            }
            it.q[i] = (pt){x->valuedouble, y->valuedouble};
        }
        if (!ok) continue;
        it.ncp = utf8_decode(t->valuestring, &it.cp);
        push_item(&im->det, &im->ndet, &im->capdet, &it);
    }
    cJSON_Delete(o);
    return 1;
}

static int read_res(const char *path) { return for_each_line(path, res_line); }

/* ---------- word split ---------- */
static int is_space(uint32_t c) { return c == ' ' || c == '\t' || c == 0x3000 || c == 0xA0; }

static void split_words(const item *in, int nin, item **out, int *nout)
{
    int cap = 0;
    *out = NULL;
    *nout = 0;
    for (int k = 0; k < nin; k++) {
        const item *l = &in[k];
        int L = l->ncp;
        int i = 0;
        int any = 0;
        while (i < L) {
            while (i < L && is_space(l->cp[i])) i++;
            if (i >= L) break;
            int s = i;
            while (i < L && !is_space(l->cp[i])) i++;
            int e = i;
            double a = (double)s / L, b = (double)e / L;
            item w = {0};
            const pt *q = l->q;
            w.q[0] = (pt){q[0].x + a * (q[1].x - q[0].x), q[0].y + a * (q[1].y - q[0].y)};
            w.q[1] = (pt){q[0].x + b * (q[1].x - q[0].x), q[0].y + b * (q[1].y - q[0].y)};
            w.q[2] = (pt){q[3].x + b * (q[2].x - q[3].x), q[3].y + b * (q[2].y - q[3].y)};
            w.q[3] = (pt){q[3].x + a * (q[2].x - q[3].x), q[3].y + a * (q[2].y - q[3].y)};
            w.ncp = e - s;
            w.cp = xrealloc(NULL, (size_t)w.ncp * sizeof *w.cp);
            memcpy(w.cp, l->cp + s, (size_t)w.ncp * sizeof *w.cp);
            push_item(out, nout, &cap, &w);
            any = 1;
        }
        if (!any) { /* empty text: keep the box (it is a detection) */
            item w = *l;
            w.cp = NULL;
            w.ncp = 0;
            push_item(out, nout, &cap, &w);
        }
    }
}

/* ---------- evaluation ---------- */
typedef struct {
    long ngt, ndet, tp, ignored, gtchars, edits;
    int images, missing;
} totals;

/* --loose: drop whitespace, fold ASCII case (CER only; detection matching is unchanged) */
static int loose_copy(const uint32_t *a, int n, uint32_t *out)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        uint32_t c = a[i];
        if (c == ' ' || c == '\t' || c == 0x3000 || c == 0xA0) continue;
        if (c < 128) c = (uint32_t)tolower((int)c);
        out[k++] = c;
    }
    return k;
}

static long text_len(const item *g)
{
    if (!loose) return g->ncp;
    uint32_t *t = xrealloc(NULL, (size_t)(g->ncp + 1) * sizeof *t);
    long n = loose_copy(g->cp, g->ncp, t);
    free(t);
    return n;
}

static long text_dist(const item *g, const item *d)
{
    if (!loose) return levenshtein(g->cp, g->ncp, d->cp, d->ncp);
    uint32_t *a = xrealloc(NULL, (size_t)(g->ncp + 1) * sizeof *a),
             *b = xrealloc(NULL, (size_t)(d->ncp + 1) * sizeof *b);
    int na = loose_copy(g->cp, g->ncp, a), nb = loose_copy(d->cp, d->ncp, b);
    long r = levenshtein(a, na, b, nb);
    free(a);
    free(b);
    return r;
}

typedef struct {
    double iou;
    int g, d;
} pair;

static int cmp_pair(const void *a, const void *b)
{
    const pair *p = a, *q = b;
    if (p->iou != q->iou) return p->iou > q->iou ? -1 : 1;
    if (p->g != q->g) return p->g - q->g;
    return p->d - q->d;
}

static void eval_image(const image *im, const item *det, int ndet, double thr, totals *t, FILE *per, const char *mode)
{
    int ng = im->ngt;
    cpoly *gp = xrealloc(NULL, (size_t)(ng + 1) * sizeof *gp);
    cpoly *dp = xrealloc(NULL, (size_t)(ndet + 1) * sizeof *dp);
    for (int i = 0; i < ng; i++) make_cpoly(im->gt[i].q, &gp[i]);
    for (int j = 0; j < ndet; j++) make_cpoly(det[j].q, &dp[j]);
    int *ign = calloc((size_t)ndet + 1, sizeof *ign);
    int *gm = malloc(((size_t)ng + 1) * sizeof *gm), *dm = malloc(((size_t)ndet + 1) * sizeof *dm);
    for (int i = 0; i < ng; i++) gm[i] = -1;
    for (int j = 0; j < ndet; j++) dm[j] = -1;
    /* do-not-care */
    for (int j = 0; j < ndet; j++)
        for (int i = 0; i < ng && !ign[j]; i++) {
            if (!im->gt[i].dontcare) continue;
            double in = inter_area(&dp[j], &gp[i]);
            double un = dp[j].area + gp[i].area - in;
            if ((un > 0 && in / un >= thr) || (dp[j].area > 0 && in / dp[j].area >= 0.5)) ign[j] = 1;
        }
    pair *pairs = NULL;
    int np = 0, cap = 0;
    for (int i = 0; i < ng; i++) {
        if (im->gt[i].dontcare) continue;
        for (int j = 0; j < ndet; j++) {
            if (ign[j]) continue;
            double in = inter_area(&gp[i], &dp[j]);
            double un = gp[i].area + dp[j].area - in;
            double iou = un > 0 ? in / un : 0;
            if (iou >= thr) {
                if (np == cap) {
                    cap = cap ? cap * 2 : 16;
                    pairs = xrealloc(pairs, (size_t)cap * sizeof *pairs);
                }
                pairs[np++] = (pair){iou, i, j};
            }
        }
    }
    qsort(pairs, (size_t)np, sizeof *pairs, cmp_pair);
    for (int k = 0; k < np; k++)
        if (gm[pairs[k].g] < 0 && dm[pairs[k].d] < 0) {
            gm[pairs[k].g] = pairs[k].d;
            dm[pairs[k].d] = pairs[k].g;
        }
    long ngc = 0, nd = 0, tp = 0, nig = 0, chars = 0, ed = 0;
    for (int i = 0; i < ng; i++) {
        if (im->gt[i].dontcare) continue;
        ngc++;
        long len = text_len(&im->gt[i]);
        chars += len;
        if (gm[i] >= 0) {
            tp++;
            ed += text_dist(&im->gt[i], &det[gm[i]]);
        } else
            ed += len;
    }
    for (int j = 0; j < ndet; j++) {
        if (ign[j])
            nig++;
        else
            nd++;
    }
    t->ngt += ngc;
    t->ndet += nd;
    t->tp += tp;
    t->ignored += nig;
    t->gtchars += chars;
    t->edits += ed;
    t->images++;
    if (per) fprintf(per, "%s\t%s\t%ld\t%ld\t%ld\t%ld\t%ld\t%ld\n", im->name, mode, ngc, nd, nig, tp, chars, ed);
    free(pairs);
    free(gp);
    free(dp);
    free(ign);
    free(gm);
    free(dm);
}

/* ---------- mode text: bags of words ---------- */
static int is_cjk(uint32_t c)
{
    return (c >= 0x2E80 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
           (c >= 0xFF00 && c <= 0xFFEF) || (c >= 0x20000 && c <= 0x2FFFF);
}

typedef struct {
    const uint32_t *cp;
    int n;
} word;

static void add_words(const item *it, word **w, int *n, int *cap)
{
    for (int i = 0; i < it->ncp;) {
        uint32_t c = it->cp[i];
        if (is_space(c)) {
            i++;
            continue;
        }
        int s = i++;
        if (!is_cjk(c))
            while (i < it->ncp && !is_space(it->cp[i]) && !is_cjk(it->cp[i])) i++;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *w = xrealloc(*w, (size_t)*cap * sizeof **w);
        }
        (*w)[(*n)++] = (word){it->cp + s, i - s};
    }
}

static uint32_t fold(uint32_t c) { return loose && c < 128 ? (uint32_t)tolower((int)c) : c; }

static int cmp_word(const void *a, const void *b)
{
    const word *x = a, *y = b;
    for (int i = 0; i < x->n && i < y->n; i++)
        if (fold(x->cp[i]) != fold(y->cp[i])) return fold(x->cp[i]) < fold(y->cp[i]) ? -1 : 1;
    return x->n - y->n;
}

static void eval_text(const image *im, totals *t, FILE *per)
{
    word *g = NULL, *d = NULL;
    int ng = 0, nd = 0, cg = 0, cd = 0;
    for (int i = 0; i < im->ntxt; i++) add_words(&im->txt[i], &g, &ng, &cg);
    for (int j = 0; j < im->ndet; j++) add_words(&im->det[j], &d, &nd, &cd);
    qsort(g, (size_t)ng, sizeof *g, cmp_word);
    qsort(d, (size_t)nd, sizeof *d, cmp_word);
    long tp = 0;
    for (int i = 0, j = 0; i < ng && j < nd;) {
        int c = cmp_word(&g[i], &d[j]);
        if (c == 0) {
            tp++;
            i++;
            j++;
        } else if (c < 0)
            i++;
        else
            j++;
    }
    t->ngt += ng;
    t->ndet += nd;
    t->tp += tp;
    t->images++;
    if (per) fprintf(per, "%s\ttext%s\t%d\t%d\t0\t%ld\t0\t0\n", im->name, loose ? "/loose" : "", ng, nd, tp);
    free(g);
    free(d);
}

static void report(const char *label, const char *mode, const totals *t, double wall, int tsv)
{
    double P = t->ndet ? (double)t->tp / t->ndet : 0, R = t->ngt ? (double)t->tp / t->ngt : 0;
    double H = P + R > 0 ? 2 * P * R / (P + R) : 0;
    double cer = t->gtchars ? (double)t->edits / t->gtchars : 0;
    double ips = wall > 0 ? t->images / wall : 0;
    int text = !strncmp(mode, "text", 4);
    char cers[32] = "-";
    if (!text) snprintf(cers, sizeof cers, "%.4f", cer);
    if (tsv)
        printf("%s\t%s\t%d\t%ld\t%ld\t%ld\t%ld\t%.4f\t%.4f\t%.4f\t%s\t%.3f\n", label, mode, t->images, t->ngt, t->ndet,
               t->ignored, t->tp, P, R, H, cers, ips);
    else if (text)
        printf("%s [%s]: images %d (missing %d)  GT words %ld  result words %ld  matched %ld\n"
               "  precision %.4f  recall %.4f  word F1 %.4f%s",
               label, mode, t->images, t->missing, t->ngt, t->ndet, t->tp, P, R, H, wall > 0 ? "" : "\n");
    else
        printf("%s [%s]: images %d (missing %d)  care GT %ld  detections %ld (+%ld ignored)  matched %ld\n"
               "  precision %.4f  recall %.4f  H-mean %.4f  CER %.4f (%ld edits / %ld GT chars)%s",
               label, mode, t->images, t->missing, t->ngt, t->ndet, t->ignored, t->tp, P, R, H, cer, t->edits,
               t->gtchars, wall > 0 ? "" : "\n");
    if (!tsv && wall > 0) printf("  images/s %.3f\n", ips);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: lector-score --gt GT.tsv --res RESULT.jsonl [--mode line|word|both|text|all] [--iou 0.5]\n"
            "                    [--name LABEL] [--wall SECONDS] [--tsv] [--tsv-header] [--per-image FILE]\n"
            "                    [--ignore-case] [--loose] [--only-present]\n"
            "  --mode text     word F1 of the bags of words per image (boxes not used; see the top of score.c)\n"
            "  --mode all      line, word and text\n"
            "  --loose         CER on text without whitespace and with ASCII case folded\n"
            "  --only-present  score only the GT images that have a result (default: a missing result\n"
            "                  counts as an image with no detections)\n"
            "       lector-score --distance GOT EXPECTED   (edits in code points, then EXPECTED's length)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *gtp = NULL, *resp = NULL, *mode = "line", *label = NULL, *perp = NULL;
    double thr = 0.5, wall = 0;
    int tsv = 0, header = 0;
    if (argc == 4 && !strcmp(argv[1], "--distance")) {
        uint32_t *a, *b;
        int na = utf8_decode(argv[2], &a), nb = utf8_decode(argv[3], &b);
        printf("%ld %d\n", levenshtein(a, na, b, nb), nb);
        free(a);
        free(b);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
#define NEXT() (i + 1 < argc ? argv[++i] : (usage(), ""))
        if (!strcmp(a, "--gt"))
            gtp = NEXT();
        else if (!strcmp(a, "--res"))
            resp = NEXT();
        else if (!strcmp(a, "--mode"))
            mode = NEXT();
        else if (!strcmp(a, "--iou"))
            thr = atof(NEXT());
        else if (!strcmp(a, "--name"))
            label = NEXT();
        else if (!strcmp(a, "--wall"))
            wall = atof(NEXT());
        else if (!strcmp(a, "--per-image"))
            perp = NEXT();
        else if (!strcmp(a, "--tsv"))
            tsv = 1;
        else if (!strcmp(a, "--tsv-header"))
            header = 1;
        else if (!strcmp(a, "--ignore-case"))
            ignore_case = 1;
        else if (!strcmp(a, "--only-present"))
            only_present = 1;
        else if (!strcmp(a, "--loose"))
            loose = 1;
        else
            usage();
    }
    if (header) {
        printf("set\tengine\tmode\timages\tcare_"
               "gt\tdetections\tignored\tmatched\tprecision\trecall\thmean\tcer\timages_per_s\n");
        if (!gtp) return 0;
    }
    if (!gtp || !resp) usage();
    if (strcmp(mode, "line") && strcmp(mode, "word") && strcmp(mode, "both") && strcmp(mode, "text") &&
        strcmp(mode, "all"))
        usage();
    if (read_gt(gtp) < 0) return 2;
    if (read_res(resp) < 0) return 2;
    if (!label) label = resp;
    FILE *per = NULL;
    if (perp) {
        per = fopen(perp, "w");
        if (!per) {
            perror(perp);
            return 2;
        }
        fprintf(per, "image\tmode\tcare_gt\tdetections\tignored\tmatched\tgt_chars\tedits\n");
    }
    int missing = 0;
    for (int i = 0; i < nimgs; i++) missing += !imgs[i].found;
    if (missing && !only_present)
        fprintf(stderr, "lector-score: %d GT images have no result (counted as empty)\n", missing);
    for (int m = 0; m < 3; m++) {
        const char *md0 = m == 0 ? "line" : m == 1 ? "word" : "text";
        int want = !strcmp(mode, md0) || !strcmp(mode, "all") || (m < 2 && !strcmp(mode, "both"));
        if (!want) continue;
        char md[32];
        snprintf(md, sizeof md, "%s%s", md0, loose ? "/loose" : "");
        totals t = {0};
        t.missing = missing;
        for (int i = 0; i < nimgs; i++) {
            if (only_present && !imgs[i].found) continue;
            if (m == 0)
                eval_image(&imgs[i], imgs[i].det, imgs[i].ndet, thr, &t, per, md);
            else if (m == 2)
                eval_text(&imgs[i], &t, per);
            else {
                item *w;
                int nw;
                split_words(imgs[i].det, imgs[i].ndet, &w, &nw);
                eval_image(&imgs[i], w, nw, thr, &t, per, md);
                for (int k = 0; k < nw; k++) free(w[k].cp);
                free(w);
            }
        }
        report(label, md, &t, wall, tsv);
    }
    if (per) fclose(per);
    return 0;
}
