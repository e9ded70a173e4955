/*
 * output_argmax.c - the outputs of lector_model_load_*_argmax and
 * lector_model_load_*_top2 (lector_rt_image.h): each float graph output of
 * rank >= 2 becomes ArgMax(axis=-1, keepdims=0) and ReduceMax(axes=[-1],
 * keepdims=0) of it, or the two outputs of TopK(K=2, axis=-1), indices first.
 */
#include <stdio.h>
#include <string.h>

#include "rt/model.h"
#include "util/util.h"

static int argmax_candidate(const rt_graph *g, int v)
{
    const rt_value *x = &g->values[v];
    return x->dtype == LECTOR_DTYPE_FLOAT32 && x->ndim >= 2;
}

/* A new value `<src>suffix` written by the last node added, a graph output
 * of type dt and the rank of `src` minus one (dims as the model declares them),
 * or with `last` >= 0 the rank of `src` and its last dimension `last`. */
static int reduced_value(rt_graph *g, int src, const char *suffix, lector_dtype dt, int64_t last)
{
    char name[512];
    snprintf(name, sizeof name, "%s%s", g->values[src].name, suffix);
    int v = rt_graph_add_value(g, name);
    if (v < 0) return -1;
    rt_value *x = &g->values[v];
    const rt_value *s = &g->values[src];
    x->dtype = dt;
    x->ndim = last >= 0 ? s->ndim : s->ndim - 1;
    memcpy(x->dims, s->dims, sizeof(int64_t) * (size_t)x->ndim);
    if (last >= 0) x->dims[x->ndim - 1] = last;
    x->is_output = true;
    return v;
}

static int attr_int(rt_node *n, const char *name, int64_t i)
{
    rt_attr *a = rt_node_add_attr(n, name, RT_ATTR_INT);
    if (!a) return -1;
    a->i = i;
    return 0;
}

/* Appends ArgMax(axis=-1, keepdims=0) and ReduceMax(axes=[-1], keepdims=0)
 * nodes reading output `src`; their outputs go to *vi / *vm. ReduceMax takes
 * its axes as the graph's opset has it (an attribute before 18, input 1
 * from 18); the kernels read both forms. */
static int argmax_nodes(rt_graph *g, int src, int *vi, int *vm)
{
    char name[512];
    snprintf(name, sizeof name, "%s_argmax", g->values[src].name);
    rt_node *a = rt_graph_add_node(g, RT_OP_ArgMax, name, 1, 1);
    if (!a) return -1;
    a->in[0] = src;
    if (attr_int(a, "axis", -1) || attr_int(a, "keepdims", 0) || attr_int(a, "__opset", g->opset)) return -1;
    if ((*vi = reduced_value(g, src, "_argmax", LECTOR_DTYPE_INT64, -1)) < 0) return -1;
    g->nodes[g->n_nodes - 1].out[0] = *vi;
    g->values[*vi].producer = g->n_nodes - 1;

    int in18 = g->opset >= 18, axes = -1;
    if (in18) {
        int64_t *data = lector__malloc(sizeof *data), one = 1;
        if (!data) return -1;
        *data = -1;
        snprintf(name, sizeof name, "%s_max::axes", g->values[src].name);
        if ((axes = rt_graph_add_const(g, name, LECTOR_DTYPE_INT64, 1, &one, data)) < 0) {
            lector__free(data);
            return -1;
        }
    }
    snprintf(name, sizeof name, "%s_max", g->values[src].name);
    rt_node *r = rt_graph_add_node(g, RT_OP_ReduceMax, name, in18 ? 2 : 1, 1);
    if (!r) return -1;
    r->in[0] = src;
    if (in18) {
        r->in[1] = axes;
    } else {
        rt_attr *at = rt_node_add_attr(r, "axes", RT_ATTR_INTS);
        if (!at || !(at->ints = lector__malloc(sizeof(int64_t)))) return -1;
        at->ints[0] = -1;
        at->n_ints = 1;
    }
    if (attr_int(r, "keepdims", 0) || attr_int(r, "__opset", g->opset)) return -1;
    if ((*vm = reduced_value(g, src, "_max", LECTOR_DTYPE_FLOAT32, -1)) < 0) return -1;
    g->nodes[g->n_nodes - 1].out[0] = *vm;
    g->values[*vm].producer = g->n_nodes - 1;
    return 0;
}

/* Appends TopK(K=2, axis=-1, largest=1, sorted=1) reading output `src`: its
 * indices go to *vi ([..., 2] int64), its values to *vm ([..., 2] float). */
static int top2_nodes(rt_graph *g, int src, int *vi, int *vm)
{
    char name[512];
    int64_t *data = lector__malloc(sizeof *data), one = 1;
    if (!data) return -1;
    *data = 2;
    snprintf(name, sizeof name, "%s_top2::k", g->values[src].name);
    int kv = rt_graph_add_const(g, name, LECTOR_DTYPE_INT64, 1, &one, data);
    if (kv < 0) {
        lector__free(data);
        return -1;
    }
    snprintf(name, sizeof name, "%s_top2", g->values[src].name);
    rt_node *t = rt_graph_add_node(g, RT_OP_TopK, name, 2, 2);
    if (!t) return -1;
    t->in[0] = src;
    t->in[1] = kv;
    if (attr_int(t, "axis", -1) || attr_int(t, "largest", 1) || attr_int(t, "sorted", 1) ||
        attr_int(t, "__opset", g->opset))
        return -1;
    if ((*vm = reduced_value(g, src, "_top2_values", LECTOR_DTYPE_FLOAT32, 2)) < 0) return -1;
    if ((*vi = reduced_value(g, src, "_top2", LECTOR_DTYPE_INT64, 2)) < 0) return -1;
    rt_node *n = &g->nodes[g->n_nodes - 1];
    n->out[0] = *vm;
    n->out[1] = *vi;
    g->values[*vm].producer = g->values[*vi].producer = g->n_nodes - 1;
    return 0;
}

/* On the base graph before any plan. The nodes go at the end (the node
 * order stays topological); the replaced value stops being a graph output
 * but stays live as their input, so the dead-node pass keeps its producer. */
lector_status rt_graph_add_output_argmax(rt_graph *g, int top, lector_error *err)
{
    int n = 0;
    for (int i = 0; i < g->n_outputs; i++) n += argmax_candidate(g, g->outputs[i]);
    if (!n) return LECTOR_OK;
    int *outs = lector__malloc(sizeof *outs * (size_t)(g->n_outputs + n));
    if (!outs) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", g->name);
    int k = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i], vi, vm;
        if (!argmax_candidate(g, v)) {
            outs[k++] = v;
            continue;
        }
        if (top == 2 ? top2_nodes(g, v, &vi, &vm) : argmax_nodes(g, v, &vi, &vm)) {
            lector__free(outs);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", g->name);
        }
        outs[k++] = vi;
        outs[k++] = vm;
    }
    /* a replaced value is no graph output any more (none is listed twice
     * with one occurrence kept: every occurrence of a value is replaced) */
    for (int i = 0; i < g->n_outputs; i++)
        if (argmax_candidate(g, g->outputs[i])) g->values[g->outputs[i]].is_output = false;
    lector__free(g->outputs);
    g->outputs = outs;
    g->n_outputs = k;
    return LECTOR_OK;
}
