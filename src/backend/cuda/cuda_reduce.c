/*
 * cuda_reduce.c - operators that reduce along an axis: Softmax,
 * LayerNormalization, and ArgMax / ReduceMax / TopK (K <= 2) over the last axis.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* The reduced axis of ReduceMax when it is only the last one, else -1. */
static int reduce_last_axis(const compile_ctx *cc, const rt_node *n)
{
    const rt_value *x = val(cc->g, n->in[0]);
    const int64_t *axes = NULL;
    int na = 0;
    if (n->n_in > 1 && n->in[1] >= 0) {
        const rt_value *av = val(cc->g, n->in[1]);
        if (!av->data || av->dtype != LECTOR_DTYPE_INT64) return -1;
        axes = av->data;
        na = (int)numel(av);
    } else {
        na = H->attr_ints(n, "axes", &axes);
    }
    if (na != 1 || x->ndim < 1) return -1;
    int64_t ax = axes[0] < 0 ? axes[0] + x->ndim : axes[0];
    return ax == x->ndim - 1 ? (int)ax : -1;
}

int cu_build_softmax(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]);
    if (!cu_all_f32(g, n)) return 1;
    int rk = x->ndim, old = H->node_opset(n) < 13;
    int axis = (int)H->attr_int(n, "axis", old ? 1 : -1);
    if (axis < 0) axis += rk;
    if (axis < 0 || axis >= (rk ? rk : 1)) return 1;
    s->outer = 1, s->len = 1, s->inner = 1;
    for (int i = 0; i < axis; i++) s->outer *= x->dims[i];
    if (old) {
        for (int i = axis; i < rk; i++) s->len *= x->dims[i];
    } else {
        s->len = x->dims[axis];
        for (int i = axis + 1; i < rk; i++) s->inner *= x->dims[i];
    }
    s->kind = S_SOFTMAX;
    s->half = cu_vh(cc, n->in[0]);
    if (s->half != cu_vh(cc, n->out[0])) return 1;
    return 0;
}

int cu_build_layernorm(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]);
    if (!cu_all_f32(g, n) || n->n_out > 1) return 1;
    int rk = x->ndim, axis = (int)H->attr_int(n, "axis", -1);
    if (axis < 0) axis += rk;
    if (axis < 0 || axis >= rk) return 1;
    int64_t outer = 1;
    for (int i = 0; i < axis; i++) outer *= x->dims[i];
    int64_t inner = numel(x) / (outer ? outer : 1);
    const rt_value *sv = val(g, n->in[1]), *bv = n->n_in > 2 ? val(g, n->in[2]) : NULL;
    s->ns = numel(sv);
    s->nb = bv ? numel(bv) : 0;
    if ((s->ns != inner && s->ns != 1) || (bv && s->nb != inner && s->nb != 1)) return 1;
    s->half = cu_vh(cc, n->in[0]);
    if (s->half != cu_vh(cc, n->out[0])) return 1;
    if (s->half && (!sv->data || (bv && !bv->data))) return 1; /* scale and bias are read as fp32 */
    s->kind = S_LAYERNORM;
    s->outer = outer;
    s->inner = inner;
    s->eps = H->attr_float(n, "epsilon", 1e-5f);
    return 0;
}

/* The row kernel's step over the last axis of n's input: op 0 the index,
 * 1 the maximum, 2 the two largest (cu_run_argmax). */
static int row_step(compile_ctx *cc, const rt_node *n, cu_step *s, int op)
{
    const rt_value *x = val(cc->g, n->in[0]);
    s->kind = S_ARGMAX;
    s->op = op;
    s->len = x->dims[x->ndim - 1];
    s->outer = numel(x) / s->len;
    s->half = cu_vh(cc, n->in[0]);
    return 0;
}

/* ArgMax and ReduceMax over the last axis only: one row kernel, the index
 * (op 0) or the maximum (op 1). */
int cu_build_argmax(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
    if (!is_f32(x) || x->ndim < 1 || numel(x) == 0) return 1;
    if (n->op == RT_OP_ArgMax) {
        int64_t axis = H->attr_int(n, "axis", 0);
        if (axis < 0) axis += x->ndim;
        if (y->dtype != LECTOR_DTYPE_INT64 || axis != x->ndim - 1 || H->attr_int(n, "select_last_index", 0)) return 1;
    } else if (!is_f32(y) || reduce_last_axis(cc, n) < 0) {
        return 1;
    }
    return row_step(cc, n, s, n->op == RT_OP_ReduceMax);
}

/* TopK of the two largest over the last axis (lector_model_load_*_top2):
 * one row kernel for both outputs (op 2); other forms run on the host. */
int cu_build_topk(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *k = val(g, n->in[1]);
    if (!is_f32(x) || x->ndim < 1 || numel(x) == 0 || n->n_out < 2 || n->out[0] < 0 || n->out[1] < 0) return 1;
    int64_t axis = H->attr_int(n, "axis", -1);
    if (axis < 0) axis += x->ndim;
    if (axis != x->ndim - 1 || !H->attr_int(n, "largest", 1) || !k->data || k->dtype != LECTOR_DTYPE_INT64 ||
        *(const int64_t *)k->data != 2 || x->dims[axis] < 2)
        return 1;
    return row_step(cc, n, s, 2);
}

/* ---- running ---------------------------------------------------------------------- */

lector_status cu_run_softmax(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    return cu_kernel_status(
        ck_softmax(x->w->stream, cu_dptr(x, n->in[0]), cu_dptr(x, n->out[0]), s->outer, s->len, s->inner, s->half), n,
        err);
}

lector_status cu_run_layernorm(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    int rc = ck_layernorm(x->w->stream, cu_dptr(x, n->in[0]), cu_dptr(x, n->out[0]), cu_dptr(x, n->in[1]), s->ns,
                          n->n_in > 2 ? cu_dptr(x, n->in[2]) : NULL, s->nb, s->outer, s->inner, s->eps, s->half);
    return cu_kernel_status(rc, n, err);
}

lector_status cu_run_argmax(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    cudaStream_t sm = x->w->stream;
    void *X = cu_dptr(x, n->in[0]), *Y = cu_dptr(x, n->out[0]);
    int rc = s->op == 2
                 ? ck_top2_rows(sm, X, cu_dptr(x, n->out[1]), Y, s->outer, s->len, s->half, x->cp->vhalf[n->out[0]])
             : s->op == 0 ? ck_argmax_rows(sm, X, Y, NULL, s->outer, s->len, s->half, 0)
                          : ck_argmax_rows(sm, X, NULL, Y, s->outer, s->len, s->half, x->cp->vhalf[n->out[0]]);
    return cu_kernel_status(rc, n, err);
}
