/*
 * test_backend_ops.c - every operator and fused pattern on every registered
 * backend against the reference backend (ggml's test-backend-ops).
 *
 *   test_backend_ops [test|perf] [-b BACKEND] [--fp16] [-o FILTER] [--runs N]
 *                    [--patterns FILE] [--node DATA_DIR CASES_FILE]
 *
 * Cases: the graphs of patterns.txt (fused patterns and single ops on the
 * PP-OCR models' shapes, random inputs; --patterns names another file) and,
 * with --node, ONNX's backend node
 * tests listed in CASES_FILE (tests/node/cases.txt; their own inputs; the
 * cases marked `const` are left out, as node.* leaves them out). Each case
 * runs on the reference backend and on each backend under test (-b: one;
 * default: every backend the registry lists but "ref"), with the same
 * inputs; --fp16 runs the backend in half precision (the patterns only: node
 * cases' values are not chosen for half precision).
 *
 * test: every float output within its NMSE bound of the reference's
 * (sum (a - r)^2 / sum r^2; NaN where the reference has NaN, the same
 * infinities), integer and bool outputs equal; and every operator of the op
 * table met by some case (with --node). Bounds: bound_of() below. A backend
 * that cannot be used here (no GPU) is reported skipped; when every backend
 * under test is, the exit status is 77.
 * perf: each case's median time over --runs runs (lector_model_time: device
 * time on a GPU) on the reference and on each backend, and the speed-up.
 *
 * Exit: 0 pass, 1 fail, 77 skipped, 2 usage.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lector_rt.h"
#include "onnx.pb-c.h"
#include "patterns.h"
#include "rt/backend.h"
#include "rt/ops.h"
#include "util/half.h"

#define MAX_IO 16

typedef struct variant {
    const char *backend;
    int fp16;
    int usable; /* -1 unknown, 0 skipped, 1 ran */
    char why[512];
    int cases, failed;
} variant;

typedef struct bo_case {
    char name[512];
    char op[128]; /* the node case's operator; "" for a pattern */
    uint8_t *model;
    size_t len;
    lector_tensor in[MAX_IO];
    lector_tensor *owned[MAX_IO]; /* read from .pb files */
    size_t n_in;
} bo_case;

static int covered[RT_OP_COUNT];

/* NMSE bounds of float outputs. In fp32 an elementwise operator differs from
 * the reference by rounding alone: 1e-7 (ggml's default); operators that
 * accumulate (and the patterns, which hold such operators) may sum in
 * another order or use other algorithms (Winograd, tensor cores): 1e-6,
 * the bound cuda_check.c holds every step of the three models to. In half
 * precision: 1e-4, cuda_check.c's fp16 bound. */
static double bound_of(const char *op, int fp16)
{
    static const char *const accumulating[] = {"",
                                               "AveragePool",
                                               "BatchNormalization",
                                               "Conv",
                                               "ConvTranspose",
                                               "Gemm",
                                               "GlobalAveragePool",
                                               "LayerNormalization",
                                               "MatMul",
                                               "ReduceMean",
                                               "ReduceSum",
                                               "Resize",
                                               "Softmax"};
    if (fp16) return 1e-4;
    for (size_t i = 0; i < sizeof accumulating / sizeof *accumulating; i++)
        if (!strcmp(op, accumulating[i])) return 1e-6;
    return 1e-7;
}

/* ---- cases -------------------------------------------------------------------- */

static void note_ops(const uint8_t *model, size_t len)
{
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, model);
    if (!mp) return;
    for (size_t i = 0; mp->graph && i < mp->graph->n_node; i++) {
        int op = rt_op_find(mp->graph->node[i]->op_type);
        if (op >= 0) covered[op] = 1;
    }
    onnx__model_proto__free_unpacked(mp, NULL);
}

static void pattern_case(const bo_pattern *pt, bo_case *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", pt->name);
    c->model = pt->model; /* the pattern's: not freed with the case */
    c->len = pt->len;
    c->n_in = (size_t)pt->n_in;
    for (int i = 0; i < pt->n_in; i++) {
        lector_tensor *t = &c->in[i];
        t->dtype = LECTOR_DTYPE_FLOAT32;
        t->ndim = pt->ndim[i];
        size_t n = 1;
        for (int d = 0; d < t->ndim; d++) n *= (size_t)(t->dims[d] = pt->dims[i][d]);
        float *x = malloc(n * sizeof *x);
        uint32_t s = 777u + (uint32_t)i;
        for (size_t j = 0; j < n; j++) {
            s = s * 1664525u + 1013904223u;
            x[j] = -2.2f + 4.9f * (float)(s >> 8) / 16777216.f;
        }
        t->data = x;
    }
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* An ONNX node test: its model and test_data_set_0's inputs. 0 on success. */
static int node_case(const char *dir, const char *name, const char *op, bo_case *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->op, sizeof c->op, "%s", op);
    char path[4096];
    lector_error err = {0};
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return printf("FAIL %s: cannot open %s\n", name, path), -1;
    fseek(f, 0, SEEK_END);
    c->len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    c->model = malloc(c->len ? c->len : 1);
    size_t got = fread(c->model, 1, c->len, f);
    fclose(f);
    if (got != c->len) return printf("FAIL %s: cannot read %s\n", name, path), -1;
    for (;;) {
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%zu.pb", dir, name, c->n_in);
        if (c->n_in >= MAX_IO || !file_exists(path)) break;
        if (lector_tensor_read_pb(path, &c->owned[c->n_in], NULL, &err))
            return printf("FAIL %s: %s: %s\n", name, path, err.message), -1;
        c->in[c->n_in] = *c->owned[c->n_in];
        c->n_in++;
    }
    return 0;
}

static void case_free(bo_case *c, int pattern)
{
    for (size_t i = 0; i < c->n_in; i++) {
        if (pattern)
            free(c->in[i].data);
        else
            lector_tensors_free(c->owned[i], 1);
    }
    if (!pattern) free(c->model);
}

/* ---- comparison ----------------------------------------------------------------- */

static double value_at(const lector_tensor *t, size_t i)
{
    switch (t->dtype) {
    case LECTOR_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case LECTOR_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case LECTOR_DTYPE_FLOAT16: return lector__half_to_float(((const uint16_t *)t->data)[i]);
    default: return 0;
    }
}

static int is_float(lector_dtype dt)
{
    return dt == LECTOR_DTYPE_FLOAT32 || dt == LECTOR_DTYPE_FLOAT64 || dt == LECTOR_DTYPE_FLOAT16;
}

/* 0 when `got` is within the bound of `ref`; else prints why. */
static int compare(const bo_case *c, const variant *v, size_t k, const lector_tensor *got, const lector_tensor *ref,
                   double *nmse_out)
{
    const char *what = c->name;
    if (got->dtype != ref->dtype || got->ndim != ref->ndim ||
        memcmp(got->dims, ref->dims, sizeof(int64_t) * (size_t)ref->ndim)) {
        printf("FAIL %s [%s%s]: output %zu: type or shape differs from the reference's\n", what, v->backend,
               v->fp16 ? " fp16" : "", k);
        return 1;
    }
    size_t n = (size_t)lector_tensor_numel(ref);
    if (!is_float(ref->dtype)) {
        if (n && memcmp(got->data, ref->data, n * lector_dtype_size(ref->dtype))) {
            printf("FAIL %s [%s%s]: output %zu (%s) differs from the reference's\n", what, v->backend,
                   v->fp16 ? " fp16" : "", k, lector_dtype_name(ref->dtype));
            return 1;
        }
        return 0;
    }
    double num = 0, den = 0;
    size_t odd = 0;
    for (size_t i = 0; i < n; i++) {
        double a = value_at(got, i), r = value_at(ref, i);
        if (isnan(r) || isinf(r)) {
            odd += !(isnan(r) ? isnan(a) : a == r);
            continue;
        }
        if (!isfinite(a)) {
            odd++;
            continue;
        }
        num += (a - r) * (a - r);
        den += r * r;
    }
    double nmse = den > 0 ? num / den : num, bound = bound_of(c->op, v->fp16);
    if (nmse_out && nmse > *nmse_out) *nmse_out = nmse;
    if (odd || !(nmse <= bound)) {
        printf("FAIL %s [%s%s]: output %zu: NMSE %.3g (bound %.0e), %zu NaN/Inf mismatches\n", what, v->backend,
               v->fp16 ? " fp16" : "", k, nmse, bound, odd);
        return 1;
    }
    return 0;
}

/* ---- running ---------------------------------------------------------------------- */

static lector_status load(const bo_case *c, const char *backend, int fp16, lector_model **m, lector_error *err)
{
    lector_model_options o = {.backend = backend, .threads = 2, .fp16 = fp16};
    return lector_model_load_memory(c->model, c->len, c->name, &o, m, err);
}

static int run_test(const bo_case *c, variant *vs, size_t nv, int pattern)
{
    lector_model *ref = NULL;
    lector_error err = {0};
    lector_tensor *want = NULL;
    size_t n_want = 0;
    if (load(c, "ref", 0, &ref, &err) || lector_model_run(ref, c->in, c->n_in, &want, &n_want, &err)) {
        printf("FAIL %s [ref]: %s\n", c->name, err.message);
        lector_model_free(ref);
        return 1;
    }
    int fails = 0;
    for (size_t k = 0; k < nv; k++) {
        variant *v = &vs[k];
        if (v->usable == 0 || (v->fp16 && !pattern)) continue;
        lector_model *m = NULL;
        lector_tensor *got = NULL;
        size_t n_got = 0;
        lector_status st = load(c, v->backend, v->fp16, &m, &err);
        if (st == LECTOR_ERR_UNAVAILABLE && v->usable < 0) {
            v->usable = 0;
            snprintf(v->why, sizeof v->why, "%s", err.message);
            printf("skipped: %s%s: %s\n", v->backend, v->fp16 ? " fp16" : "", err.message);
            continue;
        }
        v->usable = 1;
        v->cases++;
        int bad = 0;
        double worst = 0;
        if (!st) st = lector_model_run(m, c->in, c->n_in, &got, &n_got, &err);
        if (st) {
            printf("FAIL %s [%s%s]: %s: %s\n", c->name, v->backend, v->fp16 ? " fp16" : "", lector_status_str(st),
                   err.message);
            bad = 1;
        } else if (n_got != n_want) {
            printf("FAIL %s [%s%s]: %zu outputs, the reference %zu\n", c->name, v->backend, v->fp16 ? " fp16" : "",
                   n_got, n_want);
            bad = 1;
        } else {
            for (size_t o = 0; o < n_got; o++) bad |= compare(c, v, o, &got[o], &want[o], &worst);
        }
        if (!bad) printf("ok   %s [%s%s] NMSE %.2g\n", c->name, v->backend, v->fp16 ? " fp16" : "", worst);
        v->failed += bad;
        fails += bad;
        if (got) lector_tensors_free(got, n_got);
        lector_model_free(m);
    }
    lector_tensors_free(want, n_want);
    lector_model_free(ref);
    return fails;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ms of `runs` runs of the case on one backend; < 0 when it cannot run. */
static double median_ms(const bo_case *c, const char *backend, int fp16, int runs, char *mode, size_t mode_len)
{
    lector_model *m = NULL;
    lector_error err = {0};
    double *ms = calloc((size_t)runs, sizeof *ms), med = -1;
    if (!load(c, backend, fp16, &m, &err) && !lector_model_time(m, c->in, c->n_in, runs, ms, mode, mode_len, &err)) {
        qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
        med = runs % 2 ? ms[runs / 2] : 0.5 * (ms[runs / 2 - 1] + ms[runs / 2]);
    }
    free(ms);
    lector_model_free(m);
    return med;
}

static void run_perf(const bo_case *c, variant *vs, size_t nv, int pattern, int runs)
{
    char mode[64] = "";
    double r = median_ms(c, "ref", 0, runs, mode, sizeof mode);
    printf("%-44s %-14s %10.3f ms\n", c->name, "ref", r);
    for (size_t k = 0; k < nv; k++) {
        variant *v = &vs[k];
        if (v->usable == 0 || (v->fp16 && !pattern)) continue;
        double t = median_ms(c, v->backend, v->fp16, runs, mode, sizeof mode);
        if (t < 0) {
            printf("%-44s %-14s %10s\n", "", v->backend, "-");
            continue;
        }
        v->usable = 1;
        printf("%-44s %-14s %10.3f ms  %6.2fx  (%s)\n", "", v->backend, t, t > 0 ? r / t : 0, mode);
    }
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int perf = 0, fp16 = 0, runs = 10;
    const char *only = NULL, *filter = NULL, *node_dir = NULL, *node_cases = NULL, *patterns = BO_PATTERNS_FILE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "test"))
            perf = 0;
        else if (!strcmp(argv[i], "perf"))
            perf = 1;
        else if (!strcmp(argv[i], "--fp16"))
            fp16 = 1;
        else if (!strcmp(argv[i], "-b") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            filter = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--patterns") && i + 1 < argc)
            patterns = argv[++i];
        else if (!strcmp(argv[i], "--node") && i + 2 < argc) {
            node_dir = argv[++i];
            node_cases = argv[++i];
        } else {
            fprintf(stderr, "usage: test_backend_ops [test|perf] [-b BACKEND] [--fp16] [-o FILTER] [--runs N] "
                            "[--patterns FILE] [--node DATA_DIR CASES_FILE]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    /* the backends under test: the registry's, or the one named */
    variant vs[16];
    size_t nv = 0;
    const char *name;
    for (size_t i = 0; (name = rt_backend_registered(i)) && nv < 16; i++) {
        if (!strcmp(name, "ref") || (only && strcmp(name, only))) continue;
        vs[nv++] = (variant){.backend = name, .fp16 = fp16, .usable = -1};
    }
    if (!nv) {
        fprintf(stderr, "test_backend_ops: no backend '%s' is registered\n", only ? only : "");
        return 2;
    }
    bo_pattern *pts = NULL;
    int n_pts = bo_patterns_read(patterns, &pts);
    if (n_pts < 0) return 2;
    int fails = 0, n_cases = 0;
    for (int p = 0; p < n_pts; p++) {
        if (filter && !strstr(pts[p].name, filter)) continue;
        bo_case c;
        pattern_case(&pts[p], &c);
        note_ops(c.model, c.len);
        if (perf)
            run_perf(&c, vs, nv, 1, runs);
        else
            fails += run_test(&c, vs, nv, 1);
        n_cases++;
        case_free(&c, 1);
    }
    if (node_dir && !fp16) {
        FILE *f = fopen(node_cases, "r");
        if (!f) {
            fprintf(stderr, "test_backend_ops: cannot open %s\n", node_cases);
            return 2;
        }
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            char case_name[512], op[128], flag[32];
            int k = line[0] == '#' ? 0 : sscanf(line, "%511s %127s %31s", case_name, op, flag);
            if (k < 2 || (k == 3 && !strcmp(flag, "const"))) continue;
            if (filter && !strstr(case_name, filter) && strcmp(op, filter)) continue;
            bo_case c;
            if (node_case(node_dir, case_name, op, &c)) {
                fails++;
            } else {
                note_ops(c.model, c.len);
                if (perf)
                    run_perf(&c, vs, nv, 0, runs);
                else
                    fails += run_test(&c, vs, nv, 0);
            }
            n_cases++;
            case_free(&c, 0);
        }
        fclose(f);
    }
    bo_patterns_free(pts, n_pts);
    int skipped = 0;
    for (size_t k = 0; k < nv; k++) {
        if (vs[k].usable == 0)
            skipped++;
        else if (!perf)
            printf("%s%s: %d cases, %d failed\n", vs[k].backend, vs[k].fp16 ? " fp16" : "", vs[k].cases, vs[k].failed);
    }
    /* every operator of the table met by a case (the full corpus only) */
    if (!perf && node_dir && !filter && !fp16) {
        for (int op = 0; op < RT_OP_COUNT; op++)
            if (!covered[op]) {
                printf("FAIL coverage: no case holds %s\n", rt_op_table[op].name);
                fails++;
            }
    }
    if (!n_cases) {
        fprintf(stderr, "test_backend_ops: no case matches '%s'\n", filter ? filter : "");
        return 2;
    }
    if (skipped == (int)nv) return 77;
    return fails ? 1 : 0;
}
