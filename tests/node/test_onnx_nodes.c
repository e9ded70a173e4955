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
#include "node_compare.h"

/* the reference backend; the others meet the same cases in test_backend_ops */
static const char *backend_name = "ref";

#define MAX_IO 16

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
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
    for (size_t k = 0; k < n_out && k < n_want; k++) fail |= node_compare(name, (int)k, &outs[k], wants[k]);
    lector_tensors_free(outs, n_out);
done:
    for (size_t i = 0; i < n_in; i++) lector_tensors_free(ins[i], 1);
    for (size_t i = 0; i < n_want; i++) lector_tensors_free(wants[i], 1);
    lector_model_free(m);
    return fail;
}

int main(int argc, char **argv) { return node_main(argc, argv, 0, run_case); }
