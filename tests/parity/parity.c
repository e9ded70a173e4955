/*
 * parity.c - model parity of Lector's runtime against ONNX Runtime 1.30.
 *
 * The three PP-OCR models run on real images from ../shared/data,
 * preprocessed exactly as the pipeline does (src/ocr/preprocess.h):
 *   det: whole images, DetResizeForTest (limit 960, max), one per run;
 *   rec: ground-truth line/word quads cropped like pipeline.c's crop_box
 *        (warp, rotate tall crops), sorted by aspect ratio, batches of 6 with
 *        ocr_rec_batch_width, plus a few single-line batches;
 *   cls: the same crops, 48 x 192, batches of 6.
 * Every input is written as an onnx.TensorProto; the oracle
 * (tests/oracle/ort_run.js) runs all of them in one node process; then
 * Lector runs the same tensors in-process on the chosen backend and the
 * outputs are compared: max abs difference <= 1e-4 on every probability,
 * and for rec the per-time-step argmax path identical on every line.
 *
 *   parity --backend NAME --models DIR --data DIR --oracle ort_run.js --work DIR
 *          [--det-images N] [--rec-crops N] [--tol T]
 *
 * --oracle lector:BACKEND uses Lector's own BACKEND (itself checked against
 * ONNX Runtime by parity.ref/parity.cpu) as the reference: the GPU backend's
 * parity on the accelerator machine, which has no node/ONNX Runtime. A GPU
 * backend that cannot be used here exits 77 ("skipped: no GPU").
 *
 * Exit: 0 pass, 1 mismatch or error, 77 skipped (no ../shared/data).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "image/image.h"
#include "lector_rt.h"
#include "ocr/preprocess.h"

static double TOL = 1e-4;
static int FP16;        /* --fp16: the backend under test runs in half precision */
static double MAX_PATH; /* --max-path-mismatch: share of rec lines whose argmax path may differ */
#define SKIP      77
#define BATCH     6
#define REC_H     48
#define REC_W     320
#define CLS_H     48
#define CLS_W     192
#define MAX_CASES 128
#define MAX_CROPS 64

enum { M_DET, M_REC, M_CLS, M_COUNT };
static const char *const model_file[M_COUNT] = {"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx",
                                                "ch_ppocr_mobile_v2.0_cls_infer.onnx"};
static const char *const model_tag[M_COUNT] = {"det", "rec", "cls"};

/* Det images: different sizes, decoders and content (scene, receipt, doc,
 * 1-bit TIFF scan). Relative to the data dir. */
static const char *const det_images[] = {
    "icdar2015_test/ch4_test_images/img_1.jpg", /* 1280x720 -> 960x544 */
    "sroie_subset/img/000.jpg",                 /* tall receipt, scaled down */
    "paddleocr_doc_imgs/imgs/00006737.jpg",     /* 896x528 */
    "tesseract_test/images/phototest.tif",      /* 640x480, 1-bit */
    "rapidocr_tests/images/ch_en_num.jpg",      /* 323x430 */
    "paddleocr_doc_imgs/imgs/00009282.jpg",     /* 350x350 */
};
#define N_DET_IMAGES (int)(sizeof det_images / sizeof det_images[0])

/* Crop sources: rows of SET/gt.tsv (of one image, or any when NULL). The
 * vertical words of img_20 take crop_box's rotation path. */
static const struct {
    const char *set, *image;
    int take;
} crop_sets[] = {
    {"sroie_subset", NULL, 16}, {"icdar2015_test", NULL, 12}, {"icdar2015_test", "ch4_test_images/img_20.jpg", 4}};

typedef struct crop {
    img_image img;
    float ratio;
    int rotated;
    char label[96];
} crop;

typedef struct pcase {
    int model;
    char dir[512];
    lector_tensor in;
    char what[160];
} pcase;

typedef struct stats {
    int tensors;
    double max_diff;
    int violations;
    int path_lines, path_mismatch;
    int failed; /* cases with any failure, including unreadable oracle output */
    double ms;
} stats;

static pcase cases[MAX_CASES];
static int n_cases;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("parity: FAIL: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int mkdir_p(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0777) && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0777) && errno != EEXIST ? -1 : 0;
}

static pcase *add_case(const char *work, int model, float *data, int64_t n, int64_t c, int64_t h, int64_t w)
{
    if (n_cases == MAX_CASES) return NULL;
    pcase *pc = &cases[n_cases];
    snprintf(pc->dir, sizeof pc->dir, "%s/%s_%02d", work, model_tag[model], n_cases);
    n_cases++;
    pc->model = model;
    pc->in = (lector_tensor){LECTOR_DTYPE_FLOAT32, 4, {n, c, h, w}, data};
    return pc;
}

/* ---- inputs ------------------------------------------------------------- */

static int make_det_cases(const char *data_dir, const char *work, int n_images)
{
    for (int i = 0; i < n_images && i < N_DET_IMAGES; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", data_dir, det_images[i]);
        lector_error err;
        img_pages pages;
        if (img_decode_file(path, NULL, &pages, &err)) return fail("decode %s: %s", path, err.message);
        ocr_det_input di;
        lector_status st = ocr_det_preprocess(&pages.pages[0], 960, OCR_DET_LIMIT_MAX, &di, &err);
        int sw = pages.pages[0].width, sh = pages.pages[0].height;
        img_pages_free(&pages);
        if (st) return fail("det preprocess %s: %s", path, err.message);
        size_t bytes = sizeof(float) * 3 * (size_t)di.height * (size_t)di.width;
        float *copy = malloc(bytes);
        if (!copy) return fail("out of memory");
        memcpy(copy, di.data, bytes);
        pcase *pc = add_case(work, M_DET, copy, 1, 3, di.height, di.width);
        if (!pc) return fail("too many cases");
        snprintf(pc->what, sizeof pc->what, "%s (%dx%d -> %dx%d)", det_images[i], sw, sh, di.width, di.height);
        ocr_det_input_free(&di);
    }
    return 0;
}

/* pipeline.c crop_box: warp the quad onto a w x h rectangle, rotate tall crops. */
static int crop_quad(const img_image *img, const float q[4][2], img_image *out, int *rotated)
{
    int w = (int)fmax(hypot(q[0][0] - q[1][0], q[0][1] - q[1][1]), hypot(q[2][0] - q[3][0], q[2][1] - q[3][1]));
    int h = (int)fmax(hypot(q[0][0] - q[3][0], q[0][1] - q[3][1]), hypot(q[1][0] - q[2][0], q[1][1] - q[2][1]));
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    lector_error err;
    img_image warped;
    if (img_warp_quad(img, q, w, h, &warped, &err)) return fail("warp: %s", err.message);
    *rotated = (double)warped.height / warped.width >= 1.5;
    if (*rotated) {
        lector_status st = img_rotate90_ccw(&warped, out, &err);
        img_release(&warped);
        return st ? fail("rotate: %s", err.message) : 0;
    }
    *out = warped;
    return 0;
}

/* Takes the first `take` boxed, legible (not "###") rows of SET/gt.tsv
 * (of image `only` when non-NULL). */
static int load_crops(const char *data_dir, const char *set, const char *only, int take, crop *crops, int *n, int max)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/gt.tsv", data_dir, set);
    FILE *f = fopen(path, "r");
    if (!f) return fail("cannot open %s", path);
    char line[4096], cur_path[1024] = "";
    img_pages pages = {0};
    int got = 0, rc = 0;
    while (got < take && *n < max && fgets(line, sizeof line, f)) {
        char *col[4] = {0};
        char *s = line;
        for (int k = 0; k < 4 && s; k++) {
            col[k] = s;
            s = strchr(s, '\t');
            if (s) *s++ = 0;
        }
        if (!col[3] || strcmp(col[0], "image_path") == 0 || !*col[2] || strcmp(col[3], "###") == 0 ||
            (only && strcmp(col[0], only) != 0))
            continue;
        float v[8];
        if (sscanf(col[2], "%f,%f,%f,%f,%f,%f,%f,%f", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
            continue;
        if (strcmp(cur_path, col[0]) != 0) {
            img_pages_free(&pages);
            char ip[1024];
            snprintf(ip, sizeof ip, "%s/%s/%s", data_dir, set, col[0]);
            lector_error err;
            if (img_decode_file(ip, NULL, &pages, &err)) {
                rc = fail("decode %s: %s", ip, err.message);
                break;
            }
            snprintf(cur_path, sizeof cur_path, "%s", col[0]);
        }
        float q[4][2];
        for (int k = 0; k < 4; k++) {
            q[k][0] = v[2 * k];
            q[k][1] = v[2 * k + 1];
        }
        crop *c = &crops[*n];
        if ((rc = crop_quad(&pages.pages[0], q, &c->img, &c->rotated))) break;
        c->ratio = (float)c->img.width / (float)c->img.height;
        snprintf(c->label, sizeof c->label, "%s/%s \"%.40s\" %dx%d%s", set, col[0], col[3], c->img.width, c->img.height,
                 c->rotated ? " rotated" : "");
        (*n)++;
        got++;
    }
    img_pages_free(&pages);
    fclose(f);
    return rc;
}

static int cmp_ratio(const void *a, const void *b)
{
    const crop *x = a, *y = b;
    if (x->ratio != y->ratio) return x->ratio < y->ratio ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int add_rec_batch(const char *work, crop *c, int nb)
{
    int ws[BATCH] = {0}, hs[BATCH] = {0};
    for (int k = 0; k < nb; k++) {
        ws[k] = c[k].img.width;
        hs[k] = c[k].img.height;
    }
    int bw = ocr_rec_batch_width(ws, hs, nb, REC_H, REC_W);
    float *batch = calloc((size_t)nb * 3 * REC_H * (size_t)bw, sizeof(float));
    if (!batch) return fail("out of memory");
    lector_error err;
    for (int k = 0; k < nb; k++)
        if (ocr_rec_preprocess(&c[k].img, REC_H, bw, batch, k, &err)) {
            free(batch);
            return fail("rec preprocess %s: %s", c[k].label, err.message);
        }
    pcase *pc = add_case(work, M_REC, batch, nb, 3, REC_H, bw);
    if (!pc) return fail("too many cases");
    snprintf(pc->what, sizeof pc->what, "%d line(s), width %d, first %.100s", nb, bw, c[0].label);
    return 0;
}

static int add_cls_batch(const char *work, crop *c, int nb)
{
    float *batch = calloc((size_t)nb * 3 * CLS_H * CLS_W, sizeof(float));
    if (!batch) return fail("out of memory");
    lector_error err;
    for (int k = 0; k < nb; k++)
        if (ocr_cls_preprocess(&c[k].img, CLS_H, CLS_W, batch + (size_t)k * 3 * CLS_H * CLS_W, &err)) {
            free(batch);
            return fail("cls preprocess %s: %s", c[k].label, err.message);
        }
    pcase *pc = add_case(work, M_CLS, batch, nb, 3, CLS_H, CLS_W);
    if (!pc) return fail("too many cases");
    snprintf(pc->what, sizeof pc->what, "%d crop(s), first %.100s", nb, c[0].label);
    return 0;
}

static int make_line_cases(const char *data_dir, const char *work, int max_crops)
{
    static crop crops[MAX_CROPS];
    int n = 0, rc = 0;
    if (max_crops > MAX_CROPS) max_crops = MAX_CROPS;
    for (size_t s = 0; s < sizeof crop_sets / sizeof crop_sets[0] && !rc; s++) {
        int take = crop_sets[s].take;
        if (n + take > max_crops) take = max_crops - n;
        if (take > 0) rc = load_crops(data_dir, crop_sets[s].set, crop_sets[s].image, take, crops, &n, max_crops);
    }
    if (!rc && n < 1) rc = fail("no text-line crops found in %s", data_dir);
    if (!rc) {
        qsort(crops, (size_t)n, sizeof crops[0], cmp_ratio);
        int rot = 0, wmin = crops[0].img.width, wmax = wmin;
        for (int i = 0; i < n; i++) {
            rot += crops[i].rotated;
            if (crops[i].img.width < wmin) wmin = crops[i].img.width;
            if (crops[i].img.width > wmax) wmax = crops[i].img.width;
        }
        printf("parity: %d crops (%d rotated), widths %d..%d, aspect ratios %.2f..%.2f\n", n, rot, wmin, wmax,
               crops[0].ratio, crops[n - 1].ratio);
    }
    /* as the pipeline: sorted by aspect ratio, BATCH per run */
    for (int b0 = 0; b0 < n && !rc; b0 += BATCH) rc = add_rec_batch(work, crops + b0, n - b0 < BATCH ? n - b0 : BATCH);
    /* single lines: narrowest, median, widest */
    int singles[3] = {0, n / 2, n - 1};
    for (int k = 0; k < 3 && !rc && n >= 3; k++) rc = add_rec_batch(work, crops + singles[k], 1);
    for (int b0 = 0; b0 < n && !rc; b0 += BATCH) rc = add_cls_batch(work, crops + b0, n - b0 < BATCH ? n - b0 : BATCH);
    for (int i = 0; i < n; i++) img_release(&crops[i].img);
    return rc;
}

/* ---- oracle --------------------------------------------------------------- */

/* The oracle is a declared dependency of this test: missing means FAIL. */
static int check_oracle(const char *oracle)
{
    char mod_dir[1024];
    snprintf(mod_dir, sizeof mod_dir, "%s", oracle);
    char *slash = strrchr(mod_dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(mod_dir, sizeof mod_dir, ".");
    char probe[1200];
    snprintf(probe, sizeof probe, "%s/node_modules/onnxruntime-node/package.json", mod_dir);
    if (access(probe, R_OK) != 0)
        return fail("the ONNX Runtime oracle is not installed (%s missing): run scripts/fetch_oracle.sh", probe);
    if (system("node --version >/dev/null 2>&1") != 0)
        return fail("`node` is not on PATH; the ONNX Runtime oracle needs it: run scripts/setup.sh "
                    "--test-deps (or install nodejs) and scripts/fetch_oracle.sh");
    return 0;
}

/* The reference outputs from Lector's own `backend`, written where the ORT
 * oracle would write them. */
static int run_lector_oracle(const char *models, const char *backend)
{
    lector_model *m[M_COUNT] = {0};
    lector_model_options opt = {.backend = backend};
    lector_error err;
    int rc = 0;
    double t0 = now_ms();
    for (int k = 0; k < M_COUNT && !rc; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", models, model_file[k]);
        if (lector_model_load_file(path, &opt, &m[k], &err))
            rc = fail("load %s (reference backend %s): %s", path, backend, err.message);
    }
    for (int i = 0; i < n_cases && !rc; i++) {
        lector_tensor *out = NULL;
        size_t n_out = 0;
        char path[700];
        snprintf(path, sizeof path, "%s/ort", cases[i].dir);
        if (mkdir_p(path))
            rc = fail("cannot create %s", path);
        else if (lector_model_run(m[cases[i].model], &cases[i].in, 1, &out, &n_out, &err))
            rc = fail("reference %s: %s", cases[i].what, err.message);
        else {
            snprintf(path, sizeof path, "%s/ort/output_0.pb", cases[i].dir);
            if (lector_tensor_write_pb(path, &out[0], "y", &err)) rc = fail("write %s: %s", path, err.message);
            lector_tensors_free(out, n_out);
        }
    }
    for (int k = 0; k < M_COUNT; k++) lector_model_free(m[k]);
    if (!rc) printf("parity: reference backend %s: %d runs in %.0f ms\n", backend, n_cases, now_ms() - t0);
    return rc;
}

static int run_oracle(const char *models, const char *oracle, const char *work)
{
    if (!strncmp(oracle, "lector:", 7)) return run_lector_oracle(models, oracle + 7);
    char jobs[1024];
    snprintf(jobs, sizeof jobs, "%s/jobs.txt", work);
    FILE *f = fopen(jobs, "w");
    if (!f) return fail("cannot write %s", jobs);
    for (int i = 0; i < n_cases; i++)
        fprintf(f, "%s/%s %s/ort %s/input_0.pb\n", models, model_file[cases[i].model], cases[i].dir, cases[i].dir);
    if (fclose(f)) return fail("cannot write %s", jobs);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "node '%s' --batch '%s'", oracle, jobs);
    double t0 = now_ms();
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return fail("the ONNX Runtime oracle failed (%s, status %d); is it installed? run "
                    "scripts/fetch_oracle.sh",
                    cmd, st);
    printf("parity: ONNX Runtime: %d runs in %.0f ms\n", n_cases, now_ms() - t0);
    return 0;
}

/* ---- comparison ------------------------------------------------------------ */

static int argmax(const float *p, int64_t n)
{
    int best = 0;
    for (int64_t i = 1; i < n; i++)
        if (p[i] > p[best]) best = (int)i;
    return best;
}

/* "[i,j,k] (lector A, ort B)": where a difference is, for the log. */
static void describe_at(const lector_tensor *t, int64_t flat, const float *a, const float *b, char *buf, size_t size)
{
    int64_t idx[LECTOR_MAX_DIMS], rest = flat;
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->dims[d] ? rest % t->dims[d] : 0;
        rest = t->dims[d] ? rest / t->dims[d] : 0;
    }
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->ndim && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? "," : "", (long long)idx[d]);
    if (len < size) snprintf(buf + len, size - len, "] (lector %.8g, ort %.8g)", a[flat], b[flat]);
}

static int compare(const pcase *pc, const lector_tensor *got, stats *s, char *where, size_t wsize, double *case_diff)
{
    char path[600];
    snprintf(path, sizeof path, "%s/ort/output_0.pb", pc->dir);
    lector_tensor *want = NULL;
    lector_error err;
    if (lector_tensor_read_pb(path, &want, NULL, &err))
        return fail("%s: cannot read the oracle's output: %s", pc->what, err.message);
    int rc = 0;
    if (want->dtype != LECTOR_DTYPE_FLOAT32 || got->dtype != LECTOR_DTYPE_FLOAT32 || want->ndim != got->ndim ||
        memcmp(want->dims, got->dims, sizeof(int64_t) * (size_t)got->ndim)) {
        rc = fail("%s %s: output shape/dtype differs from ONNX Runtime's (ndim %d vs %d)", model_tag[pc->model],
                  pc->what, got->ndim, want->ndim);
        goto done;
    }
    const float *a = got->data, *b = want->data;
    int64_t n = lector_tensor_numel(got);
    double md = 0;
    int64_t at = 0, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) d = INFINITY; /* NaN on either side */
        if (d > md) {
            md = d;
            at = i;
        }
        if (d > TOL) bad++;
    }
    s->tensors++;
    *case_diff = md;
    describe_at(got, at, a, b, where, wsize);
    if (md > s->max_diff) s->max_diff = md;
    if (bad) {
        s->violations++;
        rc = fail("%s %s: %lld of %lld values differ by more than %g; max %.3g at %s", model_tag[pc->model], pc->what,
                  (long long)bad, (long long)n, TOL, md, where);
    }
    if (pc->model == M_REC && got->ndim == 3) {
        int64_t lines = got->dims[0], T = got->dims[1], C = got->dims[2];
        int differ = 0;
        for (int64_t l = 0; l < lines; l++) {
            s->path_lines++;
            for (int64_t t = 0; t < T; t++) {
                const float *pa = a + (l * T + t) * C, *pb = b + (l * T + t) * C;
                int ia = argmax(pa, C), ib = argmax(pb, C);
                if (ia != ib) {
                    s->path_mismatch++;
                    if (differ++ < 3) /* the first few; the count follows */
                        fail("rec %s: line %lld, step %lld: argmax %d (p %.6f) vs ONNX Runtime "
                             "%d (p %.6f)",
                             pc->what, (long long)l, (long long)t, ia, pa[ia], ib, pb[ib]);
                    break;
                }
            }
        }
        if (differ && MAX_PATH <= 0)
            rc = fail("rec %s: argmax path differs on %d of %lld lines", pc->what, differ, (long long)lines);
        else if (differ)
            printf("parity: rec %s: argmax path differs on %d of %lld lines (allowed overall: %.1f%%)\n", pc->what,
                   differ, (long long)lines, 100 * MAX_PATH);
    }
done:
    lector_tensors_free(want, 1);
    return rc;
}

static int run_lector(const char *models, const char *backend, stats st[M_COUNT])
{
    lector_model *m[M_COUNT] = {0};
    lector_model_options opt = {.backend = backend, .fp16 = FP16};
    lector_error err;
    int rc = 0;
    for (int k = 0; k < M_COUNT && !rc; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", models, model_file[k]);
        if (lector_model_load_file(path, &opt, &m[k], &err)) {
            if (err.code == LECTOR_ERR_UNAVAILABLE && !strncmp(backend, "cuda", 4)) {
                printf("parity: skipped: no GPU: %s\n", err.message);
                for (int j = 0; j < k; j++) lector_model_free(m[j]);
                return SKIP;
            }
            rc = fail("load %s (backend %s): %s", path, backend, err.message);
        }
    }
    if (!rc) printf("parity: backend \"%s\" resolves to \"%s\"\n", backend, lector_model_backend(m[0]));
    fflush(stdout);
    for (int i = 0; i < n_cases && !rc; i++) {
        pcase *pc = &cases[i];
        lector_tensor *out = NULL;
        size_t n_out = 0;
        double t0 = now_ms();
        if (lector_model_run(m[pc->model], &pc->in, 1, &out, &n_out, &err)) {
            rc = fail("%s %s: lector_model_run: %s", model_tag[pc->model], pc->what, err.message);
            break;
        }
        st[pc->model].ms += now_ms() - t0;
        double ms = now_ms() - t0;
        /* a mismatch is reported and counted, and the remaining cases still run */
        double case_diff = 0;
        char where[200] = "";
        if (compare(pc, &out[0], &st[pc->model], where, sizeof where, &case_diff)) st[pc->model].failed++;
        printf("parity:   %s %s: %.0f ms, max abs diff %.3g at %s\n", model_tag[pc->model], pc->what, ms, case_diff,
               where);
        fflush(stdout);
        lector_tensors_free(out, n_out);
    }
    for (int k = 0; k < M_COUNT; k++) lector_model_free(m[k]);
    return rc;
}

static int write_inputs(void)
{
    for (int i = 0; i < n_cases; i++) {
        char path[600];
        if (mkdir_p(cases[i].dir)) return fail("cannot create %s", cases[i].dir);
        snprintf(path, sizeof path, "%s/ort/output_0.pb", cases[i].dir);
        unlink(path); /* never compare with a previous run's output */
        snprintf(path, sizeof path, "%s/input_0.pb", cases[i].dir);
        lector_error err;
        if (lector_tensor_write_pb(path, &cases[i].in, "x", &err)) return fail("write %s: %s", path, err.message);
    }
    return 0;
}

/* On success the tensors (~100 MB) are removed; on failure they are kept for
 * inspection (`lector run-model`, tests/oracle/ort_run.js). */
static void remove_work(const char *work)
{
    char path[700];
    for (int i = 0; i < n_cases; i++) {
        snprintf(path, sizeof path, "%s/input_0.pb", cases[i].dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/ort/output_0.pb", cases[i].dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/ort", cases[i].dir);
        rmdir(path);
        rmdir(cases[i].dir);
    }
    snprintf(path, sizeof path, "%s/jobs.txt", work);
    unlink(path);
    rmdir(work);
}

static void usage(void)
{
    fprintf(stderr, "usage: parity --backend NAME --models DIR --data DIR --oracle ort_run.js "
                    "--work DIR [--det-images N] [--rec-crops N] [--tol T] [--fp16] [--max-path-mismatch F]\n");
}

int main(int argc, char **argv)
{
    const char *backend = "ref", *models = NULL, *data = NULL, *oracle = NULL, *work = NULL;
    int det_n = N_DET_IMAGES, crops_n = 32;
    for (int i = 1; i < argc && !strcmp(argv[i], "--fp16"); i++) { /* flags first */
        FP16 = 1;
        memmove(&argv[i], &argv[i + 1], sizeof *argv * (size_t)(argc - i));
        argc--;
        i--;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--backend"))
            backend = argv[i + 1];
        else if (!strcmp(argv[i], "--max-path-mismatch"))
            MAX_PATH = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--models"))
            models = argv[i + 1];
        else if (!strcmp(argv[i], "--data"))
            data = argv[i + 1];
        else if (!strcmp(argv[i], "--oracle"))
            oracle = argv[i + 1];
        else if (!strcmp(argv[i], "--work"))
            work = argv[i + 1];
        else if (!strcmp(argv[i], "--det-images"))
            det_n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rec-crops"))
            crops_n = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--tol"))
            TOL = atof(argv[i + 1]);
        else {
            usage();
            return 2;
        }
    }
    if (!models || !data || !oracle || !work || argc % 2 == 0) {
        usage();
        return 2;
    }
    if (!is_dir(data)) {
        printf("parity: SKIPPED: test data %s not found (../shared/data beside the repository)\n", data);
        return SKIP;
    }
    if (strpbrk(work, " \t\n'") || strpbrk(models, " \t\n'") || strpbrk(oracle, " \t\n'"))
        return fail("paths with blanks or quotes are not supported by the oracle's jobs file");
    if (mkdir_p(work)) return fail("cannot create %s", work);

    if (!strncmp(backend, "cuda", 4)) { /* no GPU here: skip before any work */
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", models, model_file[M_CLS]);
        lector_model_options o = {.backend = backend};
        lector_model *probe = NULL;
        lector_error e;
        if (lector_model_load_file(path, &o, &probe, &e) == LECTOR_ERR_UNAVAILABLE) {
            printf("parity: skipped: no GPU: %s\n", e.message);
            return SKIP;
        }
        lector_model_free(probe);
    }
    if (strncmp(oracle, "lector:", 7) && check_oracle(oracle)) return 1;
    double t0 = now_ms();
    int rc = make_det_cases(data, work, det_n);
    if (!rc) rc = make_line_cases(data, work, crops_n);
    if (!rc) rc = write_inputs();
    printf("parity: %d inputs prepared in %.0f ms\n", n_cases, now_ms() - t0);
    fflush(stdout);
    if (!rc) rc = run_oracle(models, oracle, work);
    fflush(stdout);
    stats st[M_COUNT];
    memset(st, 0, sizeof st);
    if (!rc) rc = run_lector(models, backend, st);
    if (rc == SKIP) {
        remove_work(work);
        for (int i = 0; i < n_cases; i++) free(cases[i].in.data);
        return SKIP;
    }
    int bad = rc;
    for (int k = 0; k < M_COUNT && !rc; k++) {
        printf("parity: %s [%s%s]: %d tensors compared, max abs diff %.3g (bar %g), %d over the bar, "
               "lector %.0f ms",
               model_tag[k], backend, FP16 ? ", fp16" : "", st[k].tensors, st[k].max_diff, TOL, st[k].violations,
               st[k].ms);
        if (k == M_REC) printf(", argmax paths: %d lines, %d differ", st[k].path_lines, st[k].path_mismatch);
        printf("\n");
        if (st[k].failed || st[k].violations || st[k].tensors == 0 || st[k].path_mismatch > MAX_PATH * st[k].path_lines)
            bad = 1;
    }
    if (bad)
        printf("parity: inputs and ONNX Runtime outputs kept in %s\n", work);
    else
        remove_work(work);
    for (int i = 0; i < n_cases; i++) free(cases[i].in.data);
    printf("parity: %s (%.1f s)\n", bad ? "FAILED" : "passed", (now_ms() - t0) / 1e3);
    return bad ? 1 : 0;
}
