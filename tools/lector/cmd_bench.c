/*
 * cmd_bench.c - `lector bench models`: median latency of Lector and of ONNX
 * Runtime (onnxruntime-node, driven by bench/ort_bench.js) on the same
 * seeded inputs, same thread count, in the same invocation; one row per
 * model/shape, ratio = ort_ms / lector_ms (> 1: Lector is faster).
 *
 *   lector bench models [--json] [--threads N] [--models DIR] [--runs N]
 *                       [--backend NAME] [--no-ort]
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "lector.h"
#include "lector_rt.h"
#include "util/util.h"

typedef struct bench_row {
    const char *name;
    const char *file;
    int64_t dims[4];
} bench_row;

static const bench_row rows[] = {
    {"det 1x3x960x960", "ch_PP-OCRv4_det_infer.onnx", {1, 3, 960, 960}},
    {"det 1x3x640x640", "ch_PP-OCRv4_det_infer.onnx", {1, 3, 640, 640}},
    {"rec 6x3x48x320", "ch_PP-OCRv4_rec_infer.onnx", {6, 3, 48, 320}},
    {"cls 6x3x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", {6, 3, 48, 192}},
};

/* Seeded values in the range of preprocessed images ([-2.2, 2.7]). */
static void fill_input(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = -2.2f + 4.9f * (float)((s >> 40) & 0xffffff) / 16777216.f;
    }
}

static double cpu_now_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* bench/ort_bench.js: $LECTOR_BENCH_DIR, ./bench, or ../bench next to the binary. */
static int find_ort_script(char *out, size_t len)
{
    const char *env = getenv("LECTOR_BENCH_DIR");
    if (env) {
        snprintf(out, len, "%s/ort_bench.js", env);
        if (file_exists(out)) return 0;
    }
    snprintf(out, len, "bench/ort_bench.js");
    if (file_exists(out)) return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(out, len, "%s/../bench/ort_bench.js", exe);
        if (file_exists(out)) return 0;
    }
    return -1;
}

/* Runs the ONNX Runtime side for one row; returns its median in ms or < 0
 * (*cpu: median process CPU time per run). */
static double ort_time(const char *script, const char *model, const char *input, int threads, int runs, double *cpu)
{
    char cmd[PATH_MAX * 4 + 256];
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' %d %d 2", script, model, input, threads, runs);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    char line[512];
    double ms = -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "\"ort_ms\":");
        if (p) ms = strtod(p + 9, NULL);
        const char *q = strstr(line, "\"ort_cpu_ms\":");
        if (q) *cpu = strtod(q + 13, NULL);
    }
    if (pclose(f) != 0) return -1;
    return ms;
}

static lector_status lector_time(const char *model, const lector_tensor *in, const char *backend, int threads, int runs,
                                 double *ms_out, double *cpu_out, const char **be_name, lector_error *err)
{
    lector_model_options opt = {.backend = backend, .threads = threads};
    lector_model *m;
    lector_status st = lector_model_load_file(model, &opt, &m, err);
    if (st) return st;
    *be_name = lector_model_backend(m);
    double *t = calloc((size_t)runs * 2, sizeof *t), *cpu = t + runs;
    if (!t) {
        lector_model_free(m);
        return LECTOR_ERR_OUT_OF_MEMORY;
    }
    for (int r = -2; r < runs && !st; r++) { /* two warm-up runs: plan compile, caches */
        lector_tensor *out = NULL;
        size_t nout = 0;
        double c0 = cpu_now_ms(), t0 = lector__now_ms();
        st = lector_model_run(m, in, 1, &out, &nout, err);
        double dt = lector__now_ms() - t0, dc = cpu_now_ms() - c0;
        if (!st) lector_tensors_free(out, nout);
        if (r >= 0) {
            t[r] = dt;
            cpu[r] = dc;
        }
    }
    if (!st) {
        *ms_out = cli_median(t, runs);
        *cpu_out = cli_median(cpu, runs);
    }
    free(t);
    lector_model_free(m);
    return st;
}

int cmd_bench(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "gpu") || !strcmp(argv[1], "pipeline"))) return cmd_bench_gpu(argc, argv);
    if (argc < 2 || strcmp(argv[1], "models")) {
        fprintf(stderr, "usage: lector bench models [--json] [--threads N] [--models DIR] [--runs N] "
                        "[--backend NAME] [--no-ort]\n"
                        "       lector bench gpu [--device cuda[:N]] [--batches 1,8,32] [--fp16] [--json]\n"
                        "       lector bench pipeline [--device D] [--workers W] [--rounds R] [--json] IMAGE...\n");
        return 2;
    }
    int json = 0, threads = 0, runs = 10, no_ort = 0;
    const char *models = NULL, *backend = NULL;
    const cli_opt opts[] = {
        {"--json", CLI_FLAG, &json}, {"--no-ort", CLI_FLAG, &no_ort}, {"--threads", CLI_INT, &threads},
        {"--runs", CLI_INT, &runs},  {"--models", CLI_STR, &models},  {"--backend", CLI_STR, &backend},
        {NULL, CLI_FLAG, NULL}};
    if (cli_opts_parse("lector bench", opts, argc, argv, 2, NULL, NULL)) return 2;
    if (runs < 1) runs = 1;
    char models_dir[4096];
    if (cli_models_dir("lector bench", models, models_dir, sizeof models_dir)) return 1;
    models = models_dir;
    char script[PATH_MAX + 64];
    if (!no_ort && find_ort_script(script, sizeof script)) {
        fprintf(stderr, "lector bench: bench/ort_bench.js not found (run from the repository root or set "
                        "LECTOR_BENCH_DIR); --no-ort skips ONNX Runtime\n");
        return 1;
    }
    char tmpl[] = "/tmp/lector-bench-XXXXXX";
    char *tmp = mkdtemp(tmpl);
    if (!tmp) {
        fprintf(stderr, "lector bench: cannot create a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    if (!json)
        printf("%-18s %10s %10s %7s %11s %11s   (threads %d, median of %d runs, backend %s)\n", "name", "lector_ms",
               "ort_ms", "ratio", "lector_cpu", "ort_cpu", threads, runs, backend ? backend : "default");
    int rc = 0;
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        const bench_row *row = &rows[r];
        char model[PATH_MAX + 4096], input[PATH_MAX + 32];
        snprintf(model, sizeof model, "%s/%s", models, row->file);
        snprintf(input, sizeof input, "%s/input_%zu.pb", tmp, r);
        lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {row->dims[0], row->dims[1], row->dims[2], row->dims[3]}, NULL};
        size_t n = (size_t)(row->dims[0] * row->dims[1] * row->dims[2] * row->dims[3]);
        in.data = malloc(n * sizeof(float));
        if (!in.data) return 1;
        fill_input(in.data, n, 1234 + r);
        lector_error err = {0};
        double lms = -1, oms = -1, lcpu = -1, ocpu = -1;
        const char *be = "?";
        lector_status st = lector_tensor_write_pb(input, &in, "x", &err);
        if (!st) st = lector_time(model, &in, backend, threads, runs, &lms, &lcpu, &be, &err);
        free(in.data);
        if (st) {
            fprintf(stderr, "lector bench: %s: %s\n", row->name, err.message);
            rc = 1;
            unlink(input);
            continue;
        }
        if (!no_ort) {
            oms = ort_time(script, model, input, threads > 0 ? threads : 1, runs, &ocpu);
            if (oms < 0) {
                fprintf(stderr, "lector bench: %s: ONNX Runtime failed\n", row->name);
                rc = 1;
            }
        }
        unlink(input);
        double ratio = oms > 0 && lms > 0 ? oms / lms : 0;
        if (json)
            printf("{\"name\": \"%s\", \"lector_ms\": %.3f, \"ort_ms\": %.3f, \"ratio\": %.3f, \"threads\": %d, "
                   "\"backend\": \"%s\", \"lector_cpu_ms\": %.3f, \"ort_cpu_ms\": %.3f}\n",
                   row->name, lms, oms, ratio, threads, be, lcpu, ocpu);
        else
            printf("%-18s %10.2f %10.2f %7.2f %11.2f %11.2f\n", row->name, lms, oms, ratio, lcpu, ocpu);
        fflush(stdout);
    }
    rmdir(tmp);
    return rc;
}
