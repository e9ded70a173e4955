/*
 * test_onednn_models.c - the three PP-OCR models on the oneDNN backend
 * against the reference backend, on seeded random inputs in the range of
 * real preprocessed images ([-2.2, 2.7]). Bar: max abs diff <= 1e-4.
 *
 * usage: test_onednn_models MODELS_DIR [det|rec|cls|all] [threads]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "lector_rt.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

static void fill(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = -2.2f + 4.9f * (float)((s >> 40) & 0xffffff) / 16777216.f;
    }
}

static int run_case(const char *dir, const char *file, int64_t n, int64_t h, int64_t w, int threads)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    lector_model *m[2] = {0};
    const char *names[2] = {"ref", "onednn"};
    lector_error err = {0};
    for (int b = 0; b < 2; b++) {
        lector_model_options o = {.backend = names[b], .threads = threads};
        if (lector_model_load_file(path, &o, &m[b], &err)) {
            fprintf(stderr, "FAIL %s: load (%s): %s\n", file, names[b], err.message);
            return 1;
        }
    }
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {n, 3, h, w}, NULL};
    size_t cnt = (size_t)(n * 3 * h * w);
    in.data = malloc(cnt * sizeof(float));
    fill(in.data, cnt, (uint64_t)(n * 131 + h * 7 + w));
    lector_tensor *out[2] = {0};
    size_t nout[2] = {0};
    double ms[2] = {0}, cpu[2] = {0};
    int fail = 0;
    for (int b = 0; b < 2 && !fail; b++) {
        /* second run timed (first compiles the plan) */
        for (int r = 0; r < 2; r++) {
            if (out[b]) lector_tensors_free(out[b], nout[b]);
            out[b] = NULL;
            double t0 = now_ms(), c0 = cpu_ms();
            if (lector_model_run(m[b], &in, 1, &out[b], &nout[b], &err)) {
                fprintf(stderr, "FAIL %s: run (%s): %s\n", file, names[b], err.message);
                fail = 1;
                break;
            }
            ms[b] = now_ms() - t0;
            cpu[b] = cpu_ms() - c0;
        }
    }
    if (!fail) {
        double maxd = 0;
        for (size_t o = 0; o < nout[0]; o++) {
            size_t k = 1;
            for (int d = 0; d < out[0][o].ndim; d++) k *= (size_t)out[0][o].dims[d];
            const float *a = out[0][o].data, *b = out[1][o].data;
            for (size_t i = 0; i < k; i++) {
                double d = fabs((double)a[i] - b[i]);
                if (!(d <= maxd)) maxd = isnan(d) ? INFINITY : d;
            }
        }
        fail = !(maxd <= 1e-4);
        printf("%s %s [%lld,3,%lld,%lld]: max abs diff %.3g (ref %.1f ms, onednn %.1f ms (cpu %.1f ms), %d threads)\n",
               fail ? "FAIL" : "ok", file, (long long)n, (long long)h, (long long)w, maxd, ms[0], ms[1], cpu[1],
               threads);
    }
    for (int b = 0; b < 2; b++) {
        if (out[b]) lector_tensors_free(out[b], nout[b]);
        lector_model_free(m[b]);
    }
    free(in.data);
    return fail;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODELS_DIR [det|rec|cls|all] [threads]\n", argv[0]);
        return 2;
    }
    const char *which = argc > 2 ? argv[2] : "all";
    int threads = argc > 3 ? atoi(argv[3]) : 0;
    int all = !strcmp(which, "all"), fails = 0;
    if (all || !strcmp(which, "cls"))
        fails += run_case(argv[1], "ch_ppocr_mobile_v2.0_cls_infer.onnx", 6, 48, 192, threads);
    if (all || !strcmp(which, "rec")) fails += run_case(argv[1], "ch_PP-OCRv4_rec_infer.onnx", 6, 48, 320, threads);
    if (all || !strcmp(which, "det")) {
        fails += run_case(argv[1], "ch_PP-OCRv4_det_infer.onnx", 1, 640, 640, threads);
        if (all) fails += run_case(argv[1], "ch_PP-OCRv4_det_infer.onnx", 1, 480, 736, threads);
    }
    return fails ? 1 : 0;
}
