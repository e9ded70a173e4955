/*
 * test_plan_lifetimes.c - the memory plan with a backend's plan_lifetimes
 * hook (src/rt/plan.c, src/rt/backend.h).
 *
 * A chain of 8 Relu nodes, every value 16 KiB. Without the hook a value's
 * bytes go back after its one reader, so the arena holds two values. The
 * test backend keeps v1 (written by node 0) until node 2 and v5 (node 4)
 * until node 6, as the CUDA module keeps a depthwise convolution's input
 * through the chain its kernel runs: then v1 must not share bytes with v2 or
 * v3, nor v5 with v6 or v7, and both must be released at the end of their
 * extension, so the arena holds three values, not four (the second
 * extension must not find v1 still held) and no value written after node 2
 * is kept out of v1's bytes for good.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/backend.h"
#include "rt/graph.h"
#include "rt/ops.h"
#include "rt/passes.h"
#include "rt/plan.h"

#define N_NODES 8
#define ELEMS   4096

static int value_of[N_NODES + 1]; /* value_of[k]: the output of node k - 1 (value_of[0]: the input) */

static void keep_longer(rt_backend *be, const rt_plan *p, int *last)
{
    (void)be;
    (void)p;
    if (last[value_of[1]] < 2) last[value_of[1]] = 2;
    if (last[value_of[5]] < 6) last[value_of[5]] = 6;
}

static const rt_backend_iface plain_iface = {
    .api_version = RT_BACKEND_API_VERSION,
    .name = "test",
};

static const rt_backend_iface hook_iface = {
    .api_version = RT_BACKEND_API_VERSION,
    .name = "test",
    .plan_lifetimes = keep_longer,
};

static int overlap(const rt_plan *p, int a, int b)
{
    size_t n = sizeof(float) * ELEMS;
    size_t ao = p->offset[value_of[a]], bo = p->offset[value_of[b]];
    return ao < bo + n && bo < ao + n;
}

static rt_plan *plan(int hook)
{
    rt_graph *g = rt_graph_new("lifetimes");
    if (!g) return NULL;
    g->inputs = malloc(sizeof(int));
    g->outputs = malloc(sizeof(int));
    if (!g->inputs || !g->outputs) {
        rt_graph_free(g);
        return NULL;
    }
    char name[16];
    for (int k = 0; k <= N_NODES; k++) {
        snprintf(name, sizeof name, "v%d", k);
        value_of[k] = rt_graph_add_value(g, name);
    }
    g->values[value_of[0]].is_input = true;
    g->values[value_of[0]].dtype = LECTOR_DTYPE_FLOAT32;
    g->values[value_of[0]].ndim = 2;
    g->values[value_of[0]].dims[0] = 1;
    g->values[value_of[0]].dims[1] = ELEMS;
    g->inputs[g->n_inputs++] = value_of[0];
    g->values[value_of[N_NODES]].is_output = true;
    g->outputs[g->n_outputs++] = value_of[N_NODES];
    for (int k = 0; k < N_NODES; k++) {
        snprintf(name, sizeof name, "relu%d", k);
        rt_node *n = rt_graph_add_node(g, rt_op_find("Relu"), name, 1, 1);
        if (!n) {
            rt_graph_free(g);
            return NULL;
        }
        n->in[0] = value_of[k];
        n->out[0] = value_of[k + 1];
        g->values[value_of[k + 1]].producer = k;
    }
    static float data[ELEMS];
    lector_tensor in = {.dtype = LECTOR_DTYPE_FLOAT32, .ndim = 2, .dims = {1, ELEMS}, .data = data};
    lector_error err = {0};
    if (rt_optimize(g, &in, 0, &err)) {
        fprintf(stderr, "rt_optimize: %s\n", err.message);
        rt_graph_free(g);
        return NULL;
    }
    static rt_backend be;
    be.iface = hook ? &hook_iface : &plain_iface;
    rt_plan *p = NULL;
    if (rt_plan_build(g, &be, &in, &p, &err)) {
        fprintf(stderr, "rt_plan_build: %s\n", err.message);
        return NULL;
    }
    return p;
}

int main(void)
{
    int fails = 0;
    size_t one = sizeof(float) * ELEMS;
    rt_plan *p = plan(0);
    if (!p) return 1;
    printf("without the hook: arena %zu bytes (%zu values)\n", p->arena_size, p->arena_size / one);
    if (p->arena_size != 2 * one) {
        printf("FAIL: a chain of unary nodes should need two values' bytes\n");
        fails++;
    }
    if (!overlap(p, 1, 3)) {
        printf("FAIL: without the hook v3 should reuse v1's bytes (the test would prove nothing)\n");
        fails++;
    }
    rt_plan_free(p);

    p = plan(1);
    if (!p) return 1;
    printf("with the hook: arena %zu bytes (%zu values)\n", p->arena_size, p->arena_size / one);
    for (int k = 2; k <= 3; k++)
        if (overlap(p, 1, k)) {
            printf("FAIL: v1 is kept until node 2 but shares bytes with v%d\n", k);
            fails++;
        }
    for (int k = 6; k <= 7; k++)
        if (overlap(p, 5, k)) {
            printf("FAIL: v5 is kept until node 6 but shares bytes with v%d\n", k);
            fails++;
        }
    if (p->arena_size != 3 * one) {
        printf("FAIL: the arena should hold three values (a kept value released at the end of its extension)\n");
        fails++;
    }
    int reused = 0;
    for (int k = 4; k <= N_NODES; k++) reused |= overlap(p, 1, k);
    if (!reused) {
        printf("FAIL: no value after node 2 reuses v1's bytes: v1 was never released\n");
        fails++;
    }
    rt_plan_free(p);
    printf("plan_lifetimes: %s\n", fails ? "FAILED" : "passed");
    return fails != 0;
}
