/*
 * node_compare.c - the comparison of ONNX node-test outputs shared by
 * test_onnx_nodes (public API) and test_node_kernels (kernels directly),
 * and their command line: same dtype and shape, floats within ATOL +
 * RTOL*|expected| (NaN == NaN, infinities exact), integers and booleans
 * exact, float16 bitwise.
 */
#include "node_compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

int node_compare(const char *name, int k, const lector_tensor *got, const lector_tensor *want)
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
            if (isnan(w))
                ok = isnan(g);
            else if (isinf(w))
                ok = g == w;
            else
                ok = fabs(g - w) <= ATOL + RTOL * fabs(w);
        } else {
            ok = g == w;
        }
        if (!ok && bad++ < 5)
            printf("  %s: output %d: element %lld = %.9g, expected %.9g\n", name, k, (long long)i, g, w);
    }
    if (bad) printf("  %s: output %d: %lld of %lld elements differ\n", name, k, (long long)bad, (long long)n);
    return bad != 0;
}

static int node_run_cases(const char *dir, const char *cases_file, const char *op, int with_const, int argc,
                          char **argv, int first, int (*run_case)(const char *dir, const char *name))
{
    int run = 0, failed = 0, skipped = 0;
    for (int i = first; i < argc; i++, run++) {
        int f = run_case(dir, argv[i]);
        printf("%s %s\n", f ? "FAIL" : "ok  ", argv[i]);
        failed += f;
    }
    if (first >= argc) {
        FILE *f = fopen(cases_file, "r");
        if (!f) {
            fprintf(stderr, "cannot open %s\n", cases_file);
            return 2;
        }
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            char name[512], cop[128], flag[32];
            int k = line[0] == '#' ? 0 : sscanf(line, "%511s %127s %31s", name, cop, flag);
            if (k < 1 || (op && (k < 2 || strcmp(cop, op) != 0))) continue;
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

int node_main(int argc, char **argv, int with_const, int (*run_case)(const char *dir, const char *name))
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: %s DATA_DIR CASES_FILE [--with-const] [--op OP] [CASE...]\n", argv[0]);
        return 2;
    }
    const char *op = NULL;
    int first_case = 3;
    if (first_case < argc && !strcmp(argv[first_case], "--with-const")) {
        with_const = 1;
        first_case++;
    }
    if (first_case + 1 < argc && !strcmp(argv[first_case], "--op")) {
        op = argv[first_case + 1];
        first_case += 2;
    }
    return node_run_cases(argv[1], argv[2], op, with_const, argc, argv, first_case, run_case);
}
