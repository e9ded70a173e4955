/*
 * test_shapes.c - a model prepared once runs inputs of any shape: the three
 * PP-OCR models on a backend against the reference backend (the oracle) on
 * seeded random shapes and inputs, and what the model compiles for them.
 *
 *   1. random shapes (det: multiples of 32; rec: any width; cls: its width
 *      and others; batches 1..4), each compared with the reference
 *      backend's output: max abs diff <= tol
 *   2. the same shapes again, in another order: no plan, no kernel and no
 *      activation arena is added (lector_model_get_stats)
 *   3. a plan cache of 2 plans: a shape whose plan was evicted is compiled
 *      again, its kernels are not (they are the model's, shared by plans)
 *   4. jit_size: shapes of the other sizes run generic plans (the reference
 *      kernels, pointwise convolutions on oneDNN matmuls sized at run time,
 *      made with the model's first plan): they compile no kernel, and every
 *      output is within tol of the reference backend's
 *
 * usage: test_shapes MODELS_DIR BACKEND [tol]   (BACKEND cpu or cuda; exit 77
 * when the backend cannot be used here, e.g. cuda without a GPU)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lector_rt.h"

static int failures;

#define CHECK(cond, ...)                           \
    do {                                           \
        if (!(cond)) {                             \
            fprintf(stderr, "FAIL: " __VA_ARGS__); \
            fputc('\n', stderr);                   \
            failures++;                            \
        }                                          \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33) % n;
}

/* values in the range of preprocessed images */
static float *random_input(const int64_t *d)
{
    size_t n = (size_t)(d[0] * d[1] * d[2] * d[3]);
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; x && i < n; i++) x[i] = -2.2f + 4.9f * (float)rnd(1u << 24) / 16777216.f;
    return x;
}

typedef struct shape {
    int64_t d[4];
} shape;

static lector_model *load(const char *dir, const char *file, const char *backend, int cache, int jit_size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    lector_model_options o = {.backend = backend, .threads = 1, .plan_cache_size = cache, .jit_size = jit_size};
    lector_model *m = NULL;
    lector_error err;
    if (lector_model_load_file(path, &o, &m, &err)) {
        if (err.code == LECTOR_ERR_UNAVAILABLE) {
            printf("skipped: backend %s is not available here: %s\n", backend, err.message);
            exit(77);
        }
        fprintf(stderr, "FAIL: load %s on %s: %s\n", file, backend, err.message);
        exit(1);
    }
    return m;
}

static int run(lector_model *m, const shape *s, const float *x, lector_tensor **out, size_t *n_out)
{
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {s->d[0], s->d[1], s->d[2], s->d[3]}, (void *)x};
    lector_error err;
    if (lector_model_run(m, &in, 1, out, n_out, &err)) {
        fprintf(stderr, "FAIL: run %lldx%lldx%lldx%lld: %s\n", (long long)s->d[0], (long long)s->d[1],
                (long long)s->d[2], (long long)s->d[3], err.message);
        failures++;
        return -1;
    }
    return 0;
}

/* One run on random input, its outputs dropped: for what it leaves in the
 * model's plan cache and counters. */
static void run_once(lector_model *m, const shape *s)
{
    float *x = random_input(s->d);
    lector_tensor *o = NULL;
    size_t no = 0;
    if (!run(m, s, x, &o, &no)) lector_tensors_free(o, no);
    free(x);
}

/* max |a - b| over the float outputs; int64 outputs (argmax) must be equal */
static double max_diff(const lector_tensor *a, const lector_tensor *b, size_t n)
{
    double md = 0;
    for (size_t o = 0; o < n; o++) {
        if (lector_tensor_numel(&a[o]) != lector_tensor_numel(&b[o])) return INFINITY;
        int64_t k = lector_tensor_numel(&a[o]);
        if (a[o].dtype == LECTOR_DTYPE_FLOAT32)
            for (int64_t i = 0; i < k; i++)
                md = fmax(md, fabs((double)((float *)a[o].data)[i] - ((float *)b[o].data)[i]));
    }
    return md;
}

/* Part 1 and 2 for one model. */
static void random_shapes(const char *dir, const char *file, const char *backend, double tol, const shape *sh, int n)
{
    lector_model *m = load(dir, file, backend, 0, 0), *ref = load(dir, file, "ref", 0, 0);
    for (int i = 0; i < n; i++) {
        float *x = random_input(sh[i].d);
        lector_tensor *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        if (!run(m, &sh[i], x, &a, &na) && !run(ref, &sh[i], x, &b, &nb)) {
            double md = na == nb ? max_diff(a, b, na) : INFINITY;
            CHECK(md <= tol, "%s %lldx%lldx%lldx%lld on %s: max abs diff %g against the reference (bar %g)", file,
                  (long long)sh[i].d[0], (long long)sh[i].d[1], (long long)sh[i].d[2], (long long)sh[i].d[3], backend,
                  md, tol);
        }
        lector_tensors_free(a, na);
        lector_tensors_free(b, nb);
        free(x);
    }
    lector_model_stats s0, s1;
    lector_model_get_stats(m, &s0);
    for (int i = n - 1; i >= 0; i--) run_once(m, &sh[i]); /* the same shapes, in reverse */
    lector_model_get_stats(m, &s1);
    CHECK(s1.plans_compiled == s0.plans_compiled && s1.kernels_compiled == s0.kernels_compiled,
          "%s on %s: shapes seen before compiled %llu plans and %llu kernels", file, backend,
          (unsigned long long)(s1.plans_compiled - s0.plans_compiled),
          (unsigned long long)(s1.kernels_compiled - s0.kernels_compiled));
    CHECK(s1.arenas_allocated == s0.arenas_allocated, "%s on %s: shapes seen before allocated %llu arenas", file,
          backend, (unsigned long long)(s1.arenas_allocated - s0.arenas_allocated));
    CHECK(s1.runs == s0.runs + (uint64_t)n, "%s: %llu runs counted for %d", file,
          (unsigned long long)(s1.runs - s0.runs), n);
    printf("%s on %s: %d shapes within %g of the reference; %llu plans, %llu kernels compiled, none again\n", file,
           backend, n, tol, (unsigned long long)s1.plans_compiled, (unsigned long long)s1.kernels_compiled);
    lector_model_free(m);
    lector_model_free(ref);
}

/* Part 3: kernels outlive the plans that compiled them. */
static void evicted_plan(const char *dir, const char *backend)
{
    lector_model *m = load(dir, "ch_PP-OCRv4_rec_infer.onnx", backend, 2, 0);
    shape s[3] = {{{1, 3, 48, 200}}, {{1, 3, 48, 240}}, {{1, 3, 48, 280}}};
    lector_model_stats a, b;
    for (int i = 0; i < 3; i++) run_once(m, &s[i]);
    lector_model_get_stats(m, &a);
    CHECK(a.plans_cached == 2, "a plan cache of 2 holds %d plans", a.plans_cached);
    run_once(m, &s[0]);
    lector_model_get_stats(m, &b);
    CHECK(b.plans_compiled == a.plans_compiled + 1, "an evicted shape compiled %llu plans, expected 1",
          (unsigned long long)(b.plans_compiled - a.plans_compiled));
    if (!strcmp(backend, "cpu"))
        CHECK(b.kernels_compiled == a.kernels_compiled, "an evicted shape's plan compiled %llu kernels again",
              (unsigned long long)(b.kernels_compiled - a.kernels_compiled));
    lector_model_free(m);
}

/* Part 4: shapes outside jit_size run generic plans and compile nothing. */
static void jit_size(const char *dir, double tol)
{
    lector_model *m = load(dir, "ch_PP-OCRv4_rec_infer.onnx", "cpu", 0, 320);
    lector_model *ref = load(dir, "ch_PP-OCRv4_rec_infer.onnx", "ref", 0, 0);
    shape hot = {{2, 3, 48, 320}};
    run_once(m, &hot);
    lector_model_stats a, b;
    lector_model_get_stats(m, &a);
    CHECK(a.kernels_compiled > 0 && a.plans_generic == 0, "jit_size 320: width 320 compiled %llu kernels",
          (unsigned long long)a.kernels_compiled);
    int widths[] = {321, 333, 480, 517, 1000};
    for (int i = 0; i < 5; i++) {
        shape s = {{1 + (int64_t)rnd(3), 3, 48, widths[i]}};
        float *x = random_input(s.d);
        lector_tensor *p = NULL, *q = NULL;
        size_t np = 0, nq = 0;
        if (!run(m, &s, x, &p, &np) && !run(ref, &s, x, &q, &nq)) {
            double worst = np == nq ? 0 : 1e9;
            for (size_t k = 0; k < np && k < nq; k++) {
                if (lector_tensor_numel(&p[k]) != lector_tensor_numel(&q[k])) {
                    worst = 1e9;
                    continue;
                }
                const float *u = p[k].data, *v = q[k].data;
                for (int64_t j = 0; j < lector_tensor_numel(&p[k]); j++)
                    if (fabs((double)u[j] - (double)v[j]) > worst) worst = fabs((double)u[j] - (double)v[j]);
            }
            CHECK(worst <= tol, "jit_size 320: width %d differs from the reference backend by %g", widths[i], worst);
        }
        lector_tensors_free(p, np);
        lector_tensors_free(q, nq);
        free(x);
    }
    lector_model_get_stats(m, &b);
    CHECK(b.kernels_compiled == a.kernels_compiled, "jit_size 320: other widths compiled %llu kernels",
          (unsigned long long)(b.kernels_compiled - a.kernels_compiled));
    CHECK(b.plans_generic == a.plans_generic + 5, "jit_size 320: %llu generic plans for 5 widths",
          (unsigned long long)(b.plans_generic - a.plans_generic));
    lector_model_free(m);
    lector_model_free(ref);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_shapes MODELS_DIR BACKEND [tol]\n");
        return 2;
    }
    const char *dir = argv[1], *backend = argv[2];
    double tol = argc > 3 ? atof(argv[3]) : 1e-4;
    shape det[6], rec[10], cls[5];
    for (int i = 0; i < 6; i++) /* DB's input: sides in multiples of 32 */
        det[i] = (shape){{1 + (int64_t)rnd(2), 3, 32 * (1 + (int64_t)rnd(10)), 32 * (1 + (int64_t)rnd(10))}};
    for (int i = 0; i < 10; i++) /* a line at its own width: any width */
        rec[i] = (shape){{1 + (int64_t)rnd(4), 3, 48, 8 + (int64_t)rnd(900)}};
    for (int i = 0; i < 5; i++) cls[i] = (shape){{1 + (int64_t)rnd(4), 3, 48, i < 3 ? 192 : 64 + (int64_t)rnd(300)}};
    random_shapes(dir, "ch_PP-OCRv4_det_infer.onnx", backend, tol, det, 6);
    random_shapes(dir, "ch_PP-OCRv4_rec_infer.onnx", backend, tol, rec, 10);
    random_shapes(dir, "ch_ppocr_mobile_v2.0_cls_infer.onnx", backend, tol, cls, 5);
    evicted_plan(dir, backend);
    if (!strcmp(backend, "cpu")) jit_size(dir, tol);
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
