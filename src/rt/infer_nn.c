/*
 * infer_nn.c - shape inference of the network operators: Conv,
 * ConvTranspose, pools, MatMul, Gemm, normalisations, Softmax, reductions.
 */
#include <string.h>

#include "rt/infer_util.h"

static lector_status need_in(const rt_node *n, const rt_value *const *in, int k, lector_error *err)
{
    for (int i = 0; i < k; i++)
        if (i >= n->n_in || !in[i])
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: input %d is missing", n->name, i);
    return LECTOR_OK;
}

static lector_status need_float(const rt_node *n, const rt_value *v, lector_error *err)
{
    if (v->dtype != LECTOR_DTYPE_FLOAT32)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: %s input (float32 supported)", n->name,
                             lector_dtype_name(v->dtype));
    return LECTOR_OK;
}

static void geom_out(const rt_conv_geom *g, int64_t nb, int64_t c, rt_value *o)
{
    int64_t d[LECTOR_MAX_DIMS];
    d[0] = nb;
    d[1] = c;
    for (int i = 0; i < g->nsp; i++) d[2 + i] = g->out[RT_SPATIAL - g->nsp + i];
    rt_set_out(o, LECTOR_DTYPE_FLOAT32, 2 + g->nsp, d);
}

/* Conv's and ConvTranspose's input and weight: present, float, of one rank >= 3. */
static lector_status conv_inputs(const rt_node *nd, const rt_value *const *in, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = need_float(nd, in[0], err))) return st;
    const rt_value *x = in[0], *w = in[1];
    if (x->ndim < 3 || w->ndim != x->ndim)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: input rank %d / weight rank %d", nd->name, x->ndim,
                             w->ndim);
    return LECTOR_OK;
}

lector_status rt_infer_Conv(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = conv_inputs(nd, in, err);
    if (st) return st;
    const rt_value *x = in[0], *w = in[1];
    int64_t group = rt_attr_int(nd, "group", 1);
    if (group < 1 || group > x->dims[1] || x->dims[1] != w->dims[1] * group || w->dims[0] % group)
        return lector__error(err, LECTOR_ERR_SHAPE,
                             "node %s: %lld input channels do not match weight %lld x group %lld", nd->name,
                             (long long)x->dims[1], (long long)w->dims[1], (long long)group);
    if (nd->n_in > 2 && in[2] && (in[2]->ndim != 1 || in[2]->dims[0] != w->dims[0]))
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: bias shape", nd->name);
    rt_conv_geom g;
    if ((st = rt_conv_geom_make(nd, RT_GEOM_CONV, x->ndim, x->dims, w->dims, &g, err))) return st;
    for (int i = 0; i < g.nsp; i++)
        if (g.k[RT_SPATIAL - g.nsp + i] != w->dims[2 + i])
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: kernel_shape != weight shape", nd->name);
    geom_out(&g, x->dims[0], w->dims[0], out[0]);
    return LECTOR_OK;
}

lector_status rt_infer_ConvTranspose(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                                     lector_error *err)
{
    lector_status st = conv_inputs(nd, in, err);
    if (st) return st;
    const rt_value *x = in[0], *w = in[1];
    int64_t group = rt_attr_int(nd, "group", 1);
    if (group < 1 || group > x->dims[1] || x->dims[1] != w->dims[0] || w->dims[0] % group)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: channels do not match the weight", nd->name);
    int64_t m = w->dims[1] * group;
    if (nd->n_in > 2 && in[2] && (in[2]->ndim != 1 || in[2]->dims[0] != m))
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: bias shape", nd->name);
    rt_conv_geom g;
    if ((st = rt_conv_geom_make(nd, RT_GEOM_CONVT, x->ndim, x->dims, w->dims, &g, err))) return st;
    geom_out(&g, x->dims[0], m, out[0]);
    return LECTOR_OK;
}

static lector_status pool(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st || (st = need_float(nd, in[0], err))) return st;
    rt_conv_geom g;
    if ((st = rt_conv_geom_make(nd, RT_GEOM_POOL, in[0]->ndim, in[0]->dims, NULL, &g, err))) return st;
    geom_out(&g, in[0]->dims[0], in[0]->dims[1], out[0]);
    if (nd->n_out > 1 && out[1]) /* MaxPool Indices */
        rt_set_out(out[1], LECTOR_DTYPE_INT64, out[0]->ndim, out[0]->dims);
    return LECTOR_OK;
}

lector_status rt_infer_MaxPool(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    return pool(nd, in, out, err);
}

lector_status rt_infer_AveragePool(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                                   lector_error *err)
{
    return pool(nd, in, out, err);
}

static lector_status global_pool(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st || (st = need_float(nd, in[0], err))) return st;
    if (in[0]->ndim < 2)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: input rank %d < 2", nd->name, in[0]->ndim);
    int64_t d[LECTOR_MAX_DIMS];
    for (int i = 0; i < in[0]->ndim; i++) d[i] = i < 2 ? in[0]->dims[i] : 1;
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, d);
    return LECTOR_OK;
}

lector_status rt_infer_GlobalAveragePool(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                                         lector_error *err)
{
    return global_pool(nd, in, out, err);
}

lector_status rt_infer_GlobalMaxPool(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                                     lector_error *err)
{
    return global_pool(nd, in, out, err);
}

lector_status rt_infer_MatMul(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = need_float(nd, in[0], err)) || (st = need_float(nd, in[1], err))) return st;
    const rt_value *a = in[0], *b = in[1];
    if (a->ndim < 1 || b->ndim < 1) return lector__error(err, LECTOR_ERR_SHAPE, "node %s: scalar operand", nd->name);
    int64_t ad[LECTOR_MAX_DIMS], bd[LECTOR_MAX_DIMS];
    int an = a->ndim, bn = b->ndim;
    memcpy(ad, a->dims, sizeof ad);
    memcpy(bd, b->dims, sizeof bd);
    if (an == 1) {
        ad[1] = ad[0];
        ad[0] = 1;
        an = 2;
    }
    if (bn == 1) {
        bd[1] = 1;
        bn = 2;
    }
    if (ad[an - 1] != bd[bn - 2]) {
        char b1[128], b2[128];
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: MatMul of %s and %s", nd->name,
                             rt_dims_str(a->ndim, a->dims, b1, sizeof b1),
                             rt_dims_str(b->ndim, b->dims, b2, sizeof b2));
    }
    int nds[2] = {an - 2, bn - 2};
    const int64_t *dd[2] = {ad, bd};
    int64_t od[LECTOR_MAX_DIMS];
    int on;
    if (rt_broadcast_dims(2, nds, dd, &on, od) != 0 || on + 2 > LECTOR_MAX_DIMS)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: batch dims do not broadcast", nd->name);
    if (a->ndim > 1) od[on++] = ad[an - 2];
    if (b->ndim > 1) od[on++] = bd[bn - 1];
    rt_set_out(out[0], LECTOR_DTYPE_FLOAT32, on, od);
    return LECTOR_OK;
}

lector_status rt_infer_Gemm(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = need_float(nd, in[0], err))) return st;
    const rt_value *a = in[0], *b = in[1];
    if (a->ndim != 2 || b->ndim != 2)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: Gemm operands must be 2-D", nd->name);
    int ta = (int)rt_attr_int(nd, "transA", 0), tb = (int)rt_attr_int(nd, "transB", 0);
    int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
    int64_t k2 = tb ? b->dims[1] : b->dims[0], nn = tb ? b->dims[0] : b->dims[1];
    if (k != k2)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: inner dimensions %lld != %lld", nd->name, (long long)k,
                             (long long)k2);
    int64_t d[2] = {m, nn};
    if (nd->n_in > 2 && in[2]) {
        const rt_value *c = in[2];
        int nds[2] = {2, c->ndim};
        const int64_t *dd[2] = {d, c->dims};
        int64_t od[LECTOR_MAX_DIMS];
        int on;
        if (c->ndim > 2 || rt_broadcast_dims(2, nds, dd, &on, od) != 0 || od[0] != m || od[1] != nn)
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: C does not broadcast to [%lld,%lld]", nd->name,
                                 (long long)m, (long long)nn);
    }
    rt_set_out(out[0], LECTOR_DTYPE_FLOAT32, 2, d);
    return LECTOR_OK;
}

lector_status rt_infer_BatchNormalization(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                                          lector_error *err)
{
    lector_status st = need_in(nd, in, 5, err);
    if (st || (st = need_float(nd, in[0], err))) return st;
    if (rt_attr_int(nd, "training_mode", 0) != 0)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: BatchNormalization in training mode", nd->name);
    if (in[0]->ndim < 2) return lector__error(err, LECTOR_ERR_SHAPE, "node %s: input rank < 2", nd->name);
    for (int i = 1; i < 5; i++)
        if (rt_value_numel(in[i]) != in[0]->dims[1] || in[i]->dtype != LECTOR_DTYPE_FLOAT32)
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: parameter %d is not [C] float32", nd->name, i);
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, in[0]->dims);
    /* optional statistics outputs of old opsets: in inference mode the
     * running mean / variance, passed through */
    for (int k = 1; k < nd->n_out && k < 5; k++)
        if (out[k]) rt_set_out(out[k], LECTOR_DTYPE_FLOAT32, 1, &in[0]->dims[1]);
    return LECTOR_OK;
}

lector_status rt_infer_LayerNormalization(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                                          lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = need_float(nd, in[0], err))) return st;
    int r = in[0]->ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", -1), r);
    if (axis < 0) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    rt_set_out(out[0], in[0]->dtype, r, in[0]->dims);
    int64_t d[LECTOR_MAX_DIMS];
    for (int i = 0; i < r; i++) d[i] = i < axis ? in[0]->dims[i] : 1;
    for (int k = 1; k < nd->n_out && k < 3; k++)
        if (out[k]) rt_set_out(out[k], LECTOR_DTYPE_FLOAT32, r, d);
    return LECTOR_OK;
}

lector_status rt_infer_Softmax(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st || (st = need_float(nd, in[0], err))) return st;
    int64_t dflt = rt_node_opset(nd) < 13 ? 1 : -1;
    int r = in[0]->ndim;
    if (r == 0 || rt_norm_axis(rt_attr_int(nd, "axis", dflt), r) < 0)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    rt_set_out(out[0], in[0]->dtype, r, in[0]->dims);
    return LECTOR_OK;
}

lector_status rt_reduce_mask(const rt_node *nd, int r, const lector_tensor *axes, int *mask, lector_error *err)
{
    const int64_t *av = NULL;
    int na = axes ? (int)lector_tensor_numel(axes) : rt_attr_ints(nd, "axes", &av);
    for (int i = 0; i < r; i++) mask[i] = 0;
    if (na == 0) {
        if (!rt_attr_int(nd, "noop_with_empty_axes", 0))
            for (int i = 0; i < r; i++) mask[i] = 1;
        return LECTOR_OK;
    }
    for (int i = 0; i < na; i++) {
        int64_t a = axes ? rt_i64_at(axes->dtype, axes->data, i) : av[i];
        int k = rt_norm_axis(a, r);
        if (k < 0)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: axis %lld out of range", nd->name,
                                 (long long)a);
        mask[k] = 1;
    }
    return LECTOR_OK;
}

static lector_status reduce(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int mask[LECTOR_MAX_DIMS];
    lector_tensor axes;
    int has_axes = nd->n_in > 1 && in[1];
    if (has_axes) {
        if ((st = rt_need_const_ints(nd, in, 1, "axes", err))) return st;
        axes = rt_value_tensor(in[1]);
    }
    if ((st = rt_reduce_mask(nd, in[0]->ndim, has_axes ? &axes : NULL, mask, err))) return st;
    int keep = (int)rt_attr_int(nd, "keepdims", 1);
    int64_t d[LECTOR_MAX_DIMS];
    int r = 0;
    for (int i = 0; i < in[0]->ndim; i++) {
        if (!mask[i])
            d[r++] = in[0]->dims[i];
        else if (keep)
            d[r++] = 1;
    }
    rt_set_out(out[0], in[0]->dtype, r, d);
    return LECTOR_OK;
}

lector_status rt_infer_ReduceMean(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    return reduce(nd, in, out, err);
}

lector_status rt_infer_ReduceSum(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    return reduce(nd, in, out, err);
}

lector_status rt_infer_ReduceMax(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    return reduce(nd, in, out, err);
}

/* The element types whose values ArgMax and TopK order. */
static lector_status need_ordered(const rt_node *nd, const rt_value *x, lector_error *err)
{
    switch (x->dtype) {
    case LECTOR_DTYPE_FLOAT32:
    case LECTOR_DTYPE_FLOAT64:
    case LECTOR_DTYPE_INT64:
    case LECTOR_DTYPE_INT32: return LECTOR_OK;
    default:
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: %s input (float32, float64, int64, int32 supported)",
                             nd->name, lector_dtype_name(x->dtype));
    }
}

/* ArgMax (opsets 1-13): one axis (default 0, negative from the end),
 * keepdims (default 1), select_last_index (default 0); int64 indices. */
lector_status rt_infer_ArgMax(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    const rt_value *x = in[0];
    if ((st = need_ordered(nd, x, err))) return st;
    int r = x->ndim;
    int64_t axis = rt_attr_int(nd, "axis", 0);
    int a = rt_norm_axis(axis, r);
    if (a < 0)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: axis %lld out of range for rank %d", nd->name,
                             (long long)axis, r);
    int keep = rt_attr_int(nd, "keepdims", 1) != 0;
    int64_t d[LECTOR_MAX_DIMS], numel = 1;
    int k = 0;
    for (int i = 0; i < r; i++) {
        if (i != a) {
            d[k++] = x->dims[i];
            numel *= x->dims[i];
        } else if (keep) {
            d[k++] = 1;
        }
    }
    if (x->dims[a] == 0 && numel > 0) /* no maximum to point at */
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: ArgMax over an empty axis %d", nd->name, a);
    rt_set_out(out[0], LECTOR_DTYPE_INT64, k, d);
    return LECTOR_OK;
}

/* TopK (opsets 10-11 form; the loader turns TopK-1's attribute k into input
 * 1): the K largest (or smallest) along one axis (default -1), Values of the
 * input's type and int64 Indices, each the input's shape with K on the axis.
 * K must be a constant: it sets the output shape. */
lector_status rt_infer_TopK(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = rt_need_const_ints(nd, in, 1, "K", err))) return st;
    const rt_value *x = in[0];
    if ((st = need_ordered(nd, x, err))) return st;
    if (rt_value_numel(in[1]) != 1)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: K must hold one value", nd->name);
    int64_t axis = rt_attr_int(nd, "axis", -1), k = rt_i64_at(in[1]->dtype, in[1]->data, 0);
    int a = rt_norm_axis(axis, x->ndim);
    if (a < 0)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: axis %lld out of range for rank %d", nd->name,
                             (long long)axis, x->ndim);
    if (k < 0 || k > x->dims[a])
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: K = %lld outside [0, %lld] (axis %d)", nd->name,
                             (long long)k, (long long)x->dims[a], a);
    int64_t d[LECTOR_MAX_DIMS];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->ndim);
    d[a] = k;
    if (out[0]) rt_set_out(out[0], x->dtype, x->ndim, d);
    if (nd->n_out > 1 && out[1]) rt_set_out(out[1], LECTOR_DTYPE_INT64, x->ndim, d);
    return LECTOR_OK;
}
