/*
 * test_onnx_nodes.c - runs ONNX's backend node tests (Debian's
 * libonnx-testdata: DATA/test_x/model.onnx + test_data_set_0/{input,output}_N.pb)
 * through the public API only, on the reference backend.
 *
 *   test_onnx_nodes DATA_DIR CASES_FILE [--with-const] [--op OP] [CASE...]
 *
 * CASES_FILE lists one case per line: "test_dir_name Op [const]" (# comments).
 * With --op only the cases of that operator run; with CASE arguments only
 * those. Cases marked `const` (a shape-determining input is a graph input)
 * are skipped unless --with-const is given; when every selected case is
 * skipped the exit status is 77 (ctest's SKIP_RETURN_CODE).
 * Every output element must satisfy |got - want| <= 1e-4 + 1e-3 * |want|
 * (NaN equals NaN); integer and bool outputs must match exactly.
 * Exit status: 0 when every selected case passes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lector_rt.h"

/* backend under test: LECTOR_NODE_BACKEND (default "ref") */
static const char *backend_name = "ref";

#define RTOL 1e-3
#define ATOL 1e-4
#define MAX_IO 16

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static double at(const lector_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case LECTOR_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case LECTOR_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case LECTOR_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    case LECTOR_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case LECTOR_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case LECTOR_DTYPE_UINT8:
    case LECTOR_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    default: return 0;
    }
}

/* 0 when equal within tolerance; else prints why and returns 1. */
static int compare(const char *name, int k, const lector_tensor *got, const lector_tensor *want)
{
    if (got->dtype != want->dtype) {
        printf("  %s: output %d: dtype %s, expected %s\n", name, k, lector_dtype_name(got->dtype),
               lector_dtype_name(want->dtype));
        return 1;
    }
    int same = got->ndim == want->ndim;
    for (int i = 0; same && i < got->ndim; i++) same = got->dims[i] == want->dims[i];
    if (!same) {
        printf("  %s: output %d: shape [", name, k);
        for (int i = 0; i < got->ndim; i++) printf("%s%lld", i ? "," : "", (long long)got->dims[i]);
        printf("], expected [");
        for (int i = 0; i < want->ndim; i++) printf("%s%lld", i ? "," : "", (long long)want->dims[i]);
        printf("]\n");
        return 1;
    }
    int is_float = want->dtype == LECTOR_DTYPE_FLOAT32 || want->dtype == LECTOR_DTYPE_FLOAT64;
    if (!is_float && want->dtype == LECTOR_DTYPE_FLOAT16) {
        size_t n = (size_t)lector_tensor_numel(want) * 2;
        if (memcmp(got->data, want->data, n) != 0) {
            printf("  %s: output %d: float16 values differ\n", name, k);
            return 1;
        }
        return 0;
    }
    int64_t n = lector_tensor_numel(want), bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = at(got, i), w = at(want, i);
        int ok;
        if (is_float) {
            if (isnan(w)) ok = isnan(g);
            else if (isinf(w)) ok = g == w;
            else ok = fabs(g - w) <= ATOL + RTOL * fabs(w);
        } else {
            ok = g == w;
        }
        if (!ok && bad++ < 5)
            printf("  %s: output %d: element %lld = %.9g, expected %.9g\n", name, k, (long long)i, g, w);
    }
    if (bad) printf("  %s: output %d: %lld of %lld elements differ\n", name, k, (long long)bad, (long long)n);
    return bad != 0;
}

/* Runs one case; 0 = pass. */
static int run_case(const char *dir, const char *name)
{
    char path[4096];
    lector_error err = {0};
    lector_model *m = NULL;
    lector_model_options opt = {0};
    opt.backend = backend_name;
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    if (lector_model_load_file(path, &opt, &m, &err) != LECTOR_OK) {
        printf("  %s: load: %s: %s\n", name, lector_status_str(err.code), err.message);
        return 1;
    }
    lector_tensor *ins[MAX_IO] = {0}, *wants[MAX_IO] = {0};
    lector_tensor in_arr[MAX_IO];
    size_t n_in = 0, n_want = 0;
    int fail = 0;
    for (;;) {
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%zu.pb", dir, name, n_in);
        if (n_in >= MAX_IO || !file_exists(path)) break;
        if (lector_tensor_read_pb(path, &ins[n_in], NULL, &err) != LECTOR_OK) {
            printf("  %s: %s: %s\n", name, path, err.message);
            fail = 1;
            goto done;
        }
        in_arr[n_in] = *ins[n_in];
        n_in++;
    }
    for (;;) {
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_%zu.pb", dir, name, n_want);
        if (n_want >= MAX_IO || !file_exists(path)) break;
        if (lector_tensor_read_pb(path, &wants[n_want], NULL, &err) != LECTOR_OK) {
            printf("  %s: %s: %s\n", name, path, err.message);
            fail = 1;
            goto done;
        }
        n_want++;
    }
    lector_tensor *outs = NULL;
    size_t n_out = 0;
    if (lector_model_run(m, in_arr, n_in, &outs, &n_out, &err) != LECTOR_OK) {
        printf("  %s: run: %s: %s\n", name, lector_status_str(err.code), err.message);
        fail = 1;
        goto done;
    }
    if (n_out != n_want) {
        printf("  %s: %zu outputs, expected %zu\n", name, n_out, n_want);
        fail = 1;
    }
    for (size_t k = 0; k < n_out && k < n_want; k++)
        fail |= compare(name, (int)k, &outs[k], wants[k]);
    lector_tensors_free(outs, n_out);
done:
    for (size_t i = 0; i < n_in; i++) lector_tensors_free(ins[i], 1);
    for (size_t i = 0; i < n_want; i++) lector_tensors_free(wants[i], 1);
    lector_model_free(m);
    return fail;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: %s DATA_DIR CASES_FILE [--op OP] [CASE...]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *op = NULL;
    if (getenv("LECTOR_NODE_BACKEND")) backend_name = getenv("LECTOR_NODE_BACKEND");
    int first_case = 3, with_const = 0;
    if (first_case < argc && !strcmp(argv[first_case], "--with-const")) {
        with_const = 1;
        first_case++;
    }
    if (first_case + 1 < argc && !strcmp(argv[first_case], "--op")) {
        op = argv[first_case + 1];
        first_case += 2;
    }
    int run = 0, failed = 0, skipped = 0;
    if (first_case < argc) {
        for (int i = first_case; i < argc; i++, run++) {
            int f = run_case(dir, argv[i]);
            printf("%s %s\n", f ? "FAIL" : "ok  ", argv[i]);
            failed += f;
        }
    } else {
        FILE *f = fopen(argv[2], "r");
        if (!f) {
            fprintf(stderr, "cannot open %s\n", argv[2]);
            return 2;
        }
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            char name[512], cop[128], flag[32];
            if (line[0] == '#') continue;
            int k = sscanf(line, "%511s %127s %31s", name, cop, flag);
            if (k < 1) continue;
            if (op && (k < 2 || strcmp(cop, op) != 0)) continue;
            if (k == 3 && !strcmp(flag, "const") && !with_const) {
                printf("skip %s (shape-determining graph input; see test_node_kernels)\n", name);
                skipped++;
                continue;
            }
            int fl = run_case(dir, name);
            printf("%s %s\n", fl ? "FAIL" : "ok  ", name);
            failed += fl;
            run++;
        }
        fclose(f);
    }
    printf("%d cases, %d failed, %d skipped\n", run, failed, skipped);
    if (run == 0) {
        if (skipped) return 77;
        fprintf(stderr, "no case selected\n");
        return 2;
    }
    return failed ? 1 : 0;
}
