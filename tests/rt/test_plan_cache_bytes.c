/*
 * test_plan_cache_bytes.c - lector_model_options.plan_cache_bytes (issue
 * 21): the detector run on many distinct input sizes keeps the process's
 * resident memory, as the kernel counts it (/proc/self/statm), within the
 * byte bound; the same runs without the bound grow well past it, so the
 * bound is what holds memory down. lector_model_cache_bytes stays under the
 * bound between runs, and a plan evicted and compiled again gives the same
 * output bit for bit.
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
    const size_t cap = (size_t)160 << 20;
    const int sizes = 16; /* 352..832: plans of about 20 to 80 MiB each */
    int failed = 0;
    float first[64], again[64];
    for (int bounded = 1; bounded >= 0; bounded--) {
        lector_model_options o;
        memset(&o, 0, sizeof o);
        o.threads = 1;
        o.plan_cache_size = 64;
        o.plan_cache_bytes = bounded ? cap : 0;
        lector_model *m = NULL;
        lector_error err;
        if (lector_model_load_file(path, &o, &m, &err)) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        malloc_trim(0);
        long base = rss_mib();
        long peak = run_sizes(m, sizes, o.plan_cache_bytes, base, bounded ? first : NULL, &failed);
        if (peak < 0) return 1;
        printf("%s: resident memory grew by at most %ld MiB over %d input sizes (bound %zu MiB), cache holds %zu "
               "MiB\n",
               bounded ? "bounded" : "unbounded", peak, sizes, cap >> 20, lector_model_cache_bytes(m) >> 20);
        if (bounded) {
            /* the bound plus one plan's worth of allocator slack and stacks */
            if (peak > (long)(cap >> 20) + 48) {
                fprintf(stderr, "FAIL: with plan_cache_bytes the process grew %ld MiB\n", peak);
                failed = 1;
            }
            /* the first size's plan was evicted long ago: compiled again, same output */
            run_sizes(m, 1, cap, base, again, &failed);
            if (memcmp(first, again, sizeof first)) {
                fprintf(stderr, "FAIL: a recompiled plan gives another output\n");
                failed = 1;
            }
        } else if (peak < 2 * (long)(cap >> 20)) {
            fprintf(stderr, "FAIL: the unbounded control grew only %ld MiB: the test proves nothing\n", peak);
            failed = 1;
        }
        lector_model_free(m);
    }
    return failed;
}
