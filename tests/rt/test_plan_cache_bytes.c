/*
 * test_plan_cache_bytes.c - lector_model_options.plan_cache_bytes (issue
 * 21) and jit_size (issue 19): the detector run on many distinct input
 * sizes, as the engine configures it, keeps the process's resident memory,
 * as the kernel counts it (/proc/self/statm), within what the cache counts
 * (the shared arenas and the plans) plus slack, and the count within the
 * byte bound; the control with kernels compiled for every size grows well
 * past it, so the setting is what holds memory down. A plan evicted and
 * compiled again gives the same output bit for bit.
 *   test_plan_cache_bytes MODELS_DIR
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lector_rt.h"

static long rss_mib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (!f || fscanf(f, "%ld %ld", &pages, &res) != 2) res = -1;
    if (f) fclose(f);
    return res < 0 ? -1 : res * 4096 / (1 << 20);
}

/* Runs the model on sides 352, 384, ... (n sizes); returns the largest RSS
 * growth seen over `base`, in MiB; -1 on error. */
static long run_sizes(lector_model *m, int n, size_t cap, long base, float *probe_out, int *failed)
{
    long peak = 0;
    for (int i = 0; i < n; i++) {
        int side = 352 + 32 * i;
        float *x = calloc((size_t)3 * side * side, sizeof *x);
        for (size_t k = 0; k < (size_t)3 * side * side; k++) x[k] = (float)((k * 2654435761u) >> 24) / 255.f - 0.5f;
        lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, side, side}, x};
        lector_tensor *out = NULL;
        size_t n_out = 0;
        lector_error err;
        if (lector_model_run(m, &in, 1, &out, &n_out, &err)) {
            fprintf(stderr, "run %dx%d: %s\n", side, side, err.message);
            free(x);
            return -1;
        }
        if (i == 0 && probe_out) memcpy(probe_out, out[0].data, 64 * sizeof(float));
        lector_tensors_free(out, n_out);
        free(x);
        malloc_trim(0);
        long grow = rss_mib() - base;
        if (getenv("PLAN_CACHE_VERBOSE")) {
            struct mallinfo2 mi = mallinfo2();
            printf("%d: +%ld MiB, cache %zu MiB heap %zu mmap %zu free %zu\n", side, grow,
                   lector_model_cache_bytes(m) >> 20, mi.uordblks >> 20, mi.hblkhd >> 20, mi.fordblks >> 20);
        }
        if (grow > peak) peak = grow;
        size_t held = lector_model_cache_bytes(m);
        if (cap && held > cap) {
            fprintf(stderr, "after %dx%d the cache holds %zu bytes, over its bound of %zu\n", side, side, held, cap);
            *failed = 1;
        }
    }
    return peak;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/ch_PP-OCRv4_det_infer.onnx", argv[1]);
    /* as `lector serve` sets it: a fixed mmap threshold (glibc otherwise
     * raises it as large blocks are freed, and freed arenas then stay in the
     * heap as holes the kernel still counts) */
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    /* and oneDNN's own primitive cache off: the plans hold their primitives,
     * and its copies of evicted ones would sit outside the bound */
    setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0", 0);
    /* The activation arenas are the model's, sized by the largest input
     * (about 90 MiB at 960 x 960); each size's plan adds its own state, and
     * with jit_size 0 its compiled kernels, which the model keeps. */
    const size_t cap = (size_t)112 << 20;
    const int sizes = 20; /* 352..960 */
    /* the engine's setting (one side gets compiled kernels, lector_params'
     * det_limit_side_len), with and without the byte bound; then every size
     * compiled, as the control that grows */
    const struct {
        int jit;
        size_t cap;
        const char *what;
    } runs[3] = {{352, cap, "jit_size 352, bounded"}, {352, 0, "jit_size 352"}, {0, 0, "jit_size 0 (control)"}};
    int failed = 0;
    long peak[3];
    float first[64], again[64];
    for (int r = 0; r < 3; r++) {
        lector_model_options o;
        memset(&o, 0, sizeof o);
        o.threads = 1;
        o.plan_cache_size = 64;
        o.plan_cache_bytes = runs[r].cap;
        o.jit_size = runs[r].jit;
        lector_model *m = NULL;
        lector_error err;
        if (lector_model_load_file(path, &o, &m, &err)) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        malloc_trim(0);
        long base = rss_mib();
        peak[r] = run_sizes(m, sizes, o.plan_cache_bytes, base, r == 0 ? first : NULL, &failed);
        if (peak[r] < 0) return 1;
        size_t held = lector_model_cache_bytes(m);
        printf("%s: resident memory grew by at most %ld MiB over %d input sizes, the cache counts %zu MiB\n",
               runs[r].what, peak[r], sizes, held >> 20);
        if (runs[r].jit && peak[r] > (long)(held >> 20) + 48) {
            /* what the cache counts (the arenas, the plans) plus allocator slack and stacks */
            fprintf(stderr, "FAIL: %s: the process grew %ld MiB, the cache counts %zu MiB\n", runs[r].what, peak[r],
                    held >> 20);
            failed = 1;
        }
        if (r == 0) { /* the first size's plan was evicted long ago: compiled again, same output */
            run_sizes(m, 1, cap, base, again, &failed);
            if (memcmp(first, again, sizeof first)) {
                fprintf(stderr, "FAIL: a recompiled plan gives another output\n");
                failed = 1;
            }
        }
        lector_model_free(m);
    }
    if (peak[2] < peak[1] + 48) {
        fprintf(stderr, "FAIL: the control (every size compiled) grew %ld MiB, against %ld: the test proves nothing\n",
                peak[2], peak[1]);
        failed = 1;
    }
    return failed;
}
