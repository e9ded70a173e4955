/*
 * libFuzzer target: ONNX model bytes and TensorProto bytes, the two
 * untrusted inputs of the runtime. Every input must end in a status, never a
 * crash, leak or undefined behaviour (built with ASan+UBSan).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lector_rt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lector_model *m = NULL;
    lector_error err;
    lector_model_options opt = {.backend = "ref", .threads = 1};
    if (lector_model_load_memory(data, size, "fuzz.onnx", &opt, &m, &err) == LECTOR_OK) {
        /* a loadable model: run it once on a tiny input when its first input
         * is float and fully static, so inference and folding get fuzzed too */
        const lector_value_info *vi = lector_model_input(m, 0);
        if (lector_model_num_inputs(m) == 1 && vi->dtype == LECTOR_DTYPE_FLOAT32) {
            lector_tensor in = {LECTOR_DTYPE_FLOAT32, vi->ndim, {0}, NULL};
            int64_t n = 1;
            for (int d = 0; d < vi->ndim; d++) {
                in.dims[d] = vi->dims[d] > 0 ? vi->dims[d] : 1;
                n *= in.dims[d];
            }
            if (n <= 4096) {
                float *x = calloc((size_t)n, sizeof *x);
                in.data = x;
                lector_tensor *out = NULL;
                size_t n_out = 0;
                if (x && lector_model_run(m, &in, 1, &out, &n_out, &err) == LECTOR_OK) lector_tensors_free(out, n_out);
                free(x);
            }
        }
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
