/*
 * test_host_chains.c - runs of elementwise nodes that the host executor runs
 * in one pass (src/rt/host_chain.h) give the same bits as the nodes run one
 * by one: this program runs a set of models and writes every output's bytes
 * to OUT; tests/rt/host_chains.sh runs it with the chains and with
 * LECTOR_HOST_CHAINS=0 and compares the two files byte for byte (the
 * one-by-one path is the one ONNX's node tests and ONNX Runtime check).
 *
 *   - a built graph with what a chain must handle: scalar, per-channel,
 *     per-row (two axes) and whole operands, Clip's bound inputs, a value read
 *     by two nodes of a chain, a graph output in the middle of a run (it
 *     ends a chain), a graph input read again at the end of a chain;
 *   - PP-OCR's recogniser on wide lines and its detector, on the reference
 *     backend (2 threads: tiles in parallel) and on the oneDNN backend's
 *     generic plans (jit_size 1: every shape generic).
 *
 * usage: test_host_chains MODELS_DIR OUT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_builder.h"
#include "lector_rt.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static float rnd_float(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / (float)0x1000000 * 8.f - 4.f;
}

/* Runs model m on one input of dims d, appends the outputs' bytes to f. */
static int run(lector_model *m, const int64_t d[4], FILE *f)
{
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {d[0], d[1], d[2], d[3]}, NULL};
    size_t n = (size_t)(d[0] * d[1] * d[2] * d[3]);
    float *x = malloc(sizeof(float) * n);
    if (!x) return 1;
    for (size_t i = 0; i < n; i++) x[i] = rnd_float();
    in.data = x;
    lector_tensor *out = NULL;
    size_t n_out = 0;
    lector_error err = {0};
    int rc = 0;
    if (lector_model_run(m, &in, 1, &out, &n_out, &err)) {
        fprintf(stderr, "FAIL: %s\n", err.message);
        rc = 1;
    }
    for (size_t k = 0; k < n_out && !rc; k++)
        if (fwrite(out[k].data, lector_dtype_size(out[k].dtype), (size_t)lector_tensor_numel(&out[k]), f) !=
            (size_t)lector_tensor_numel(&out[k]))
            rc = 1;
    lector_tensors_free(out, n_out);
    free(x);
    return rc;
}

static uint8_t *built_graph(size_t *len)
{
    gb *b = gb_new(13);
    int64_t x[4] = {-1, 6, 5, 70}, ch[4] = {1, 6, 1, 1}, rows[4] = {1, 6, 5, 1}, whole[4] = {2, 6, 5, 70};
    gb_input(b, "x", 4, x);
    gb_scalar(b, "s0", 0.75f);
    gb_scalar(b, "three", 3.f);
    gb_scalar(b, "zero", 0.f);
    gb_scalar(b, "six", 6.f);
    gb_init(b, "c", 4, ch, NULL, -1.f, 1.f, 7);
    gb_init(b, "m", 4, rows, NULL, 0.2f, 0.8f, 8);
    gb_init(b, "r", 4, whole, NULL, -0.5f, 0.5f, 9);
    gb_node(b, "Mul", "x,s0", "a", NULL);
    gb_node(b, "Add", "a,c", "bb", NULL); /* bb: a graph output, and read twice below */
    gb_node(b, "Add", "bb,three", "t", NULL);
    gb_node(b, "Clip", "t,zero,six", "u", NULL);
    gb_node(b, "Div", "u,six", "v", NULL);
    gb_node(b, "Mul", "bb,v", "w", NULL);
    gb_node(b, "Sub", "w,r", "z", NULL);
    gb_node(b, "Sigmoid", "z", "y1", NULL);
    gb_node(b, "Max", "y1,m", "y2", NULL);
    gb_node(b, "Add", "y2,x", "y3", NULL);
    gb_node(b, "Relu", "y3", "y", NULL);
    gb_output(b, "y");
    gb_output(b, "bb");
    return gb_finish(b, len);
}

static lector_model *load(const char *path, const char *backend, int threads, int jit_size)
{
    lector_model_options o = {.backend = backend, .threads = threads, .jit_size = jit_size};
    lector_model *m = NULL;
    lector_error err = {0};
    if (lector_model_load_file(path, &o, &m, &err)) fprintf(stderr, "FAIL: %s: %s\n", path, err.message);
    return m;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_host_chains MODELS_DIR OUT\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "wb");
    if (!f) return 1;
    int fail = 0;
    size_t len = 0;
    uint8_t *bytes = built_graph(&len);
    const char *backends[2] = {"ref", "cpu"};
    for (int i = 0; i < 2 && bytes; i++) {
        lector_model_options o = {.backend = backends[i], .threads = 2, .jit_size = 1};
        lector_model *m = NULL;
        lector_error err = {0};
        if (lector_model_load_memory(bytes, len, "chains.onnx", &o, &m, &err)) {
            fprintf(stderr, "FAIL: built graph: %s\n", err.message);
            fail = 1;
            continue;
        }
        int64_t d[4] = {2, 6, 5, 70};
        fail |= run(m, d, f);
        lector_model_free(m);
    }
    free(bytes);
    char path[4096];
    snprintf(path, sizeof path, "%s/ch_PP-OCRv4_rec_infer.onnx", argv[1]);
    for (int i = 0; i < 2; i++) {
        lector_model *m = load(path, backends[i], 2, 1);
        if (!m) {
            fail = 1;
            continue;
        }
        int64_t a[4] = {1, 3, 48, 640}, b[4] = {2, 3, 48, 517};
        fail |= run(m, a, f) | run(m, b, f);
        lector_model_free(m);
    }
    snprintf(path, sizeof path, "%s/ch_PP-OCRv4_det_infer.onnx", argv[1]);
    lector_model *m = load(path, "ref", 1, 0);
    if (m) {
        int64_t a[4] = {1, 3, 96, 160};
        fail |= run(m, a, f);
        lector_model_free(m);
    } else {
        fail = 1;
    }
    if (fclose(f)) fail = 1;
    if (fail) return 1;
    printf("ok\n");
    return 0;
}
