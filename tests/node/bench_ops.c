/*
 * bench_ops.c - per-operator timing of a model on the reference kernels
 * (below the public API: nodes run in file order, no passes).
 *
 *   bench_ops MODEL.onnx N C H W [threads]
 *   BENCH_NODES=MS: also list each node slower than MS.
 *   BENCH_IN=FILE.pb: input tensor from a file (N C H W ignored);
 *   BENCH_OUT=FILE.pb: write the first graph output.
 * Times are process CPU time / threads (robust to a loaded machine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt/loader.h"
#include "rt/ops.h"
#include "util/util.h"

/* Process CPU time (ms) divided by threads: robust to other load on the machine. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL.onnx N C H W [threads]\n", argv[0]);
        return 2;
    }
    int threads = argc > 6 ? atoi(argv[6]) : 1;
    lector_error err = {0};
    uint8_t *bytes = NULL;
    size_t size = 0;
    rt_graph *g = NULL;
    if (lector__read_file(argv[1], (size_t)1 << 31, &bytes, &size, &err) != LECTOR_OK ||
        rt_load_onnx(bytes, size, argv[1], &g, &err) != LECTOR_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    lector__free(bytes);
    rt_value *v = &g->values[g->inputs[0]];
    v->dtype = LECTOR_DTYPE_FLOAT32;
    v->ndim = 4;
    for (int i = 0; i < 4; i++) v->dims[i] = atoll(argv[2 + i]);
    lector_tensor *tin0 = NULL;
    if (getenv("BENCH_IN")) {
        if (lector_tensor_read_pb(getenv("BENCH_IN"), &tin0, NULL, &err) != LECTOR_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        for (int i = 0; i < 4; i++) v->dims[i] = tin0->dims[i];
    }
    int64_t n = rt_value_numel(v);
    float *x = lector__malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        x[i] = tin0 ? ((const float *)tin0->data)[i] : (float)((i * 7919) % 1000) / 1000.f - 0.5f;
    lector_tensors_free(tin0, 1);
    v->data = x;
    v->owns_data = true;
    double per_op[RT_OP_COUNT] = {0}, total = 0;
    int count[RT_OP_COUNT] = {0};
    for (int ni = 0; ni < g->n_nodes; ni++) {
        rt_node *nd = &g->nodes[ni];
        const rt_value *ins[64];
        rt_value *outs[64];
        lector_tensor tin[64], tout[64];
        for (int i = 0; i < nd->n_in; i++) {
            ins[i] = nd->in[i] >= 0 ? &g->values[nd->in[i]] : NULL;
            memset(&tin[i], 0, sizeof tin[i]);
            if (ins[i]) tin[i] = rt_value_tensor(ins[i]);
        }
        for (int i = 0; i < nd->n_out; i++) outs[i] = nd->out[i] >= 0 ? &g->values[nd->out[i]] : NULL;
        if (rt_op_table[nd->op].infer(nd, ins, outs, &err) != LECTOR_OK) {
            fprintf(stderr, "infer %s: %s\n", nd->name, err.message);
            return 1;
        }
        for (int i = 0; i < nd->n_out; i++) {
            memset(&tout[i], 0, sizeof tout[i]);
            if (!outs[i]) continue;
            size_t nb = rt_value_nbytes(outs[i]);
            outs[i]->data = lector__malloc(nb ? nb : 1);
            outs[i]->owns_data = true;
            tout[i] = rt_value_tensor(outs[i]);
        }
        rt_kernel_ctx ctx = {threads, &err};
        /* warm-up run: first touch of fresh output pages is not the kernel's cost */
        if (rt_op_table[nd->op].ref(nd, tin, tout, &ctx) != LECTOR_OK) {
            fprintf(stderr, "run %s: %s\n", nd->name, err.message);
            return 1;
        }
        double t0 = cpu_ms();
        if (rt_op_table[nd->op].ref(nd, tin, tout, &ctx) != LECTOR_OK) {
            fprintf(stderr, "run %s: %s\n", nd->name, err.message);
            return 1;
        }
        double dt = (cpu_ms() - t0) / threads;
        if (getenv("BENCH_NODES") && dt > atof(getenv("BENCH_NODES"))) {
            char b1[128], b2[128], b3[128];
            const int64_t *st_v;
            int st_n = rt_attr_ints(nd, "strides", &st_v);
            printf("  %-14s %8.2f ms in %s w %s out %s g=%lld s=%d\n", rt_op_table[nd->op].name, dt,
                   rt_dims_str(tin[0].ndim, tin[0].dims, b1, sizeof b1),
                   nd->n_in > 1 ? rt_dims_str(tin[1].ndim, tin[1].dims, b2, sizeof b2) : "-",
                   rt_dims_str(tout[0].ndim, tout[0].dims, b3, sizeof b3), (long long)rt_attr_int(nd, "group", 1),
                   st_n ? (int)st_v[0] : 1);
        }
        per_op[nd->op] += dt;
        count[nd->op]++;
        total += dt;
    }
    if (getenv("BENCH_OUT")) {
        lector_tensor o = rt_value_tensor(&g->values[g->outputs[0]]);
        if (lector_tensor_write_pb(getenv("BENCH_OUT"), &o, NULL, &err) != LECTOR_OK)
            fprintf(stderr, "%s\n", err.message);
    }
    for (int i = 0; i < RT_OP_COUNT; i++)
        if (count[i]) printf("%-20s %4d nodes %9.2f ms\n", rt_op_table[i].name, count[i], per_op[i]);
    printf("total %.2f ms (threads=%d)\n", total, threads);
    rt_graph_free(g);
    return 0;
}
