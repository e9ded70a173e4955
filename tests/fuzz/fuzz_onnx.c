/*
 * libFuzzer target: ONNX model bytes and TensorProto bytes, the two
 * untrusted inputs of the runtime. Every input must end in a status, never a
 * crash, leak or undefined behaviour (built with ASan+UBSan).
 *
 * A model is loaded twice: as lector_model_load_memory() loads it, and as the
 * OCR engine loads a recogniser (lector_model_load_memory_top2 with
 * width_masks: outputs rewritten into TopK, the graph rewritten so that each
 * item of a batch reads only its own columns), whose rewrites run on the
 * graph before inference has checked it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lector_rt.h"
#include "lector_rt_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs a loaded model once on a tiny input when its only input is float and
 * small once its unknown dimensions are 1, so that inference and folding get
 * fuzzed too; `masked`: through lector_model_run_masked, each item at the full
 * width. */
static void run_once(lector_model *m, int masked)
{
    lector_error err;
    const lector_value_info *vi = lector_model_input(m, 0);
    if (lector_model_num_inputs(m) != 1 || vi->dtype != LECTOR_DTYPE_FLOAT32) return;
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, vi->ndim, {0}, NULL};
    int64_t n = 1;
    for (int d = 0; d < vi->ndim; d++) {
        in.dims[d] = vi->dims[d] > 0 ? vi->dims[d] : 1;
        n *= in.dims[d];
    }
    if (n > 4096 || (masked && (vi->ndim < 1 || in.dims[0] > 64))) return;
    float *x = calloc((size_t)n, sizeof *x);
    if (!x) return;
    in.data = x;
    lector_tensor *out = NULL;
    size_t n_out = 0;
    lector_status st;
    if (masked) {
        int64_t valid[64], out_valid[64];
        for (int64_t b = 0; b < in.dims[0]; b++) valid[b] = in.dims[in.ndim - 1];
        st = lector_model_run_masked(m, &in, 1, valid, &out, &n_out, out_valid, &err);
    } else {
        st = lector_model_run(m, &in, 1, &out, &n_out, &err);
    }
    if (st == LECTOR_OK) lector_tensors_free(out, n_out);
    free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lector_model *m = NULL;
    lector_error err;
    lector_model_options opt = {.backend = "ref", .threads = 1};
    if (lector_model_load_memory(data, size, "fuzz.onnx", &opt, &m, &err) == LECTOR_OK) {
        run_once(m, 0);
        lector_model_free(m);
    }
    opt.width_masks = 1;
    if (lector_model_load_memory_top2(data, size, "fuzz.onnx", &opt, &m, &err) == LECTOR_OK) {
        run_once(m, 1);
        lector_model_free(m);
    }
    /* the same bytes as a TensorProto file */
    char path[] = "/tmp/lector-fuzz-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        ssize_t w = write(fd, data, size);
        close(fd);
        lector_tensor *t = NULL;
        if (w == (ssize_t)size && lector_tensor_read_pb(path, &t, NULL, &err) == LECTOR_OK) lector_tensors_free(t, 1);
        unlink(path);
    }
    return 0;
}
