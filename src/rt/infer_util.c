/*
 * infer_util.c - helpers of shape inference shared with the kernels
 * (declared in infer_util.h).
 */
#include <string.h>

#include "rt/infer_util.h"

int64_t rt_node_opset(const rt_node *n) { return rt_attr_int(n, "__opset", 13); }

int rt_norm_axis(int64_t axis, int rank)
{
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return -1;
    return (int)axis;
}

int64_t rt_i64_at(lector_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case LECTOR_DTYPE_INT64: return ((const int64_t *)data)[i];
    case LECTOR_DTYPE_INT32: return ((const int32_t *)data)[i];
    case LECTOR_DTYPE_INT8: return ((const int8_t *)data)[i];
    case LECTOR_DTYPE_UINT8: return ((const uint8_t *)data)[i];
    case LECTOR_DTYPE_BOOL: return ((const uint8_t *)data)[i];
    default: return 0;
    }
}

double rt_f64_at(lector_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case LECTOR_DTYPE_FLOAT32: return ((const float *)data)[i];
    case LECTOR_DTYPE_FLOAT64: return ((const double *)data)[i];
    default: return (double)rt_i64_at(dt, data, i);
    }
}

int rt_broadcast_dims(int n, const int *ndims, const int64_t *const *dims, int *out_ndim, int64_t *out_dims)
{
    int r = 0;
    for (int i = 0; i < n; i++) r = LECTOR_MAX(r, ndims[i]);
    if (r > LECTOR_MAX_DIMS) return -1;
    for (int a = 0; a < r; a++) {
        int64_t d = 1;
        for (int i = 0; i < n; i++) {
            int k = a - (r - ndims[i]);
            if (k < 0) continue;
            int64_t di = dims[i][k];
            if (di == 1) continue;
            if (d == 1)
                d = di;
            else if (d != di)
                return -1;
        }
        /* a dimension of size 0 wins over 1 */
        for (int i = 0; i < n; i++) {
            int k = a - (r - ndims[i]);
            if (k >= 0 && dims[i][k] == 0) d = 0;
        }
        out_dims[a] = d;
    }
    *out_ndim = r;
    return 0;
}

lector_status rt_check_dims(const rt_node *n, int ndim, const int64_t *dims, lector_error *err)
{
    int64_t p = 1;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0 || dims[i] > RT_MAX_NUMEL)
            return lector__error(err, LECTOR_ERR_LIMIT, "node %s: dimension %lld out of range", n->name,
                                 (long long)dims[i]);
        if (__builtin_mul_overflow(p, dims[i], &p) || p > RT_MAX_NUMEL)
            return lector__error(err, LECTOR_ERR_LIMIT, "node %s: output of more than 2^40 elements", n->name);
    }
    return LECTOR_OK;
}

void rt_set_out(rt_value *v, lector_dtype dt, int ndim, const int64_t *dims)
{
    v->dtype = dt;
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++) v->dims[i] = dims[i];
}

lector_status rt_need_const_ints(const rt_node *n, const rt_value *const *in, int i, const char *what,
                                 lector_error *err)
{
    if (i >= n->n_in || !in[i])
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: missing input '%s'", n->name, what);
    if (in[i]->dtype != LECTOR_DTYPE_INT64 && in[i]->dtype != LECTOR_DTYPE_INT32)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: input '%s' must be int64, not %s", n->name, what,
                             lector_dtype_name(in[i]->dtype));
    if (!in[i]->data)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP,
                             "node %s: input '%s' must be a constant (it determines a shape)", n->name, what);
    return LECTOR_OK;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

lector_status rt_conv_geom_make(const rt_node *n, rt_geom_kind kind, int xndim, const int64_t *xdims,
                                const int64_t *wdims, rt_conv_geom *g, lector_error *err)
{
    int nsp = xndim - 2;
    if (nsp < 1 || nsp > RT_SPATIAL)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: %d spatial dimensions (1 to 3 supported)",
                             n->name, nsp);
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    const int64_t *ks = NULL, *st = NULL, *dl = NULL, *pd = NULL, *op = NULL, *os = NULL;
    int nk = rt_attr_ints(n, "kernel_shape", &ks);
    int ns = rt_attr_ints(n, "strides", &st);
    int nd = rt_attr_ints(n, "dilations", &dl);
    int np = rt_attr_ints(n, "pads", &pd);
    int nop = rt_attr_ints(n, "output_padding", &op);
    int nos = rt_attr_ints(n, "output_shape", &os);
    if ((nk && nk != nsp) || (ns && ns != nsp) || (nd && nd != nsp) || (np && np != 2 * nsp) || (nop && nop != nsp) ||
        (nos && nos != nsp && nos != nsp + 2))
        return lector__error(err, LECTOR_ERR_INVALID_MODEL,
                             "node %s: kernel_shape/strides/dilations/pads do not match the input rank %d", n->name,
                             xndim);
    if (kind == RT_GEOM_POOL && !nk)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: kernel_shape missing", n->name);
    const char *ap = rt_attr_string(n, "auto_pad", "NOTSET");
    int same_upper = !strcmp(ap, "SAME_UPPER"), same_lower = !strcmp(ap, "SAME_LOWER");
    int valid = !strcmp(ap, "VALID");
    if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET") != 0)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad auto_pad '%s'", n->name, ap);
    int ceil_mode = kind == RT_GEOM_POOL ? (int)rt_attr_int(n, "ceil_mode", 0) : 0;
    for (int i = 0; i < RT_SPATIAL; i++) {
        g->in[i] = g->out[i] = g->k[i] = g->s[i] = g->d[i] = 1;
        g->pb[i] = g->pe[i] = 0;
    }
    int off = RT_SPATIAL - nsp;
    for (int i = 0; i < nsp; i++) {
        int j = off + i;
        g->in[j] = xdims[2 + i];
        g->k[j] = nk ? ks[i] : (wdims ? wdims[2 + i] : 1);
        g->s[j] = ns ? st[i] : 1;
        g->d[j] = nd ? dl[i] : 1;
        g->pb[j] = np ? pd[i] : 0;
        g->pe[j] = np ? pd[nsp + i] : 0;
        /* bounds that keep every size below 2^52 (no overflow anywhere) */
        const int64_t big = (int64_t)1 << 20;
        if (g->k[j] < 1 || g->s[j] < 1 || g->d[j] < 1 || g->pb[j] < 0 || g->pe[j] < 0 || g->k[j] > big ||
            g->s[j] > big || g->d[j] > big || g->pb[j] > big || g->pe[j] > big || g->in[j] > ((int64_t)1 << 31) ||
            (nop && (op[i] < 0 || op[i] > big)) ||
            (nos && (os[nos - nsp + i] < 0 || os[nos - nsp + i] > ((int64_t)1 << 31))))
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad kernel/stride/dilation/pad values",
                                 n->name);
        int64_t dk = (g->k[j] - 1) * g->d[j] + 1;
        int64_t in = g->in[j], s = g->s[j], out;
        if (kind == RT_GEOM_CONVT) {
            int64_t opad = nop ? op[i] : 0;
            if (nos) {
                out = os[nos - nsp + i];
                int64_t total = s * (in - 1) + opad + dk - out;
                if (total < 0) total = 0;
                if (same_upper) {
                    g->pb[j] = total - total / 2;
                    g->pe[j] = total / 2;
                } else {
                    g->pb[j] = total / 2;
                    g->pe[j] = total - total / 2;
                }
            } else if (same_upper || same_lower) {
                out = in * s;
                int64_t total = s * (in - 1) + opad + dk - out;
                if (total < 0) total = 0;
                if (same_upper) {
                    g->pb[j] = total / 2;
                    g->pe[j] = total - total / 2;
                } else {
                    g->pb[j] = total - total / 2;
                    g->pe[j] = total / 2;
                }
            } else {
                if (valid) g->pb[j] = g->pe[j] = 0;
                out = s * (in - 1) + opad + dk - g->pb[j] - g->pe[j];
            }
        } else if (same_upper || same_lower) {
            out = ceil_div(in, s);
            int64_t total = (out - 1) * s + dk - in;
            if (total < 0) total = 0;
            g->pb[j] = same_upper ? total / 2 : total - total / 2;
            g->pe[j] = total - g->pb[j];
        } else {
            if (valid) g->pb[j] = g->pe[j] = 0;
            int64_t span = in + g->pb[j] + g->pe[j] - dk;
            if (span < 0)
                return lector__error(err, LECTOR_ERR_SHAPE, "node %s: input size %lld is smaller than the kernel %lld",
                                     n->name, (long long)in, (long long)dk);
            if (ceil_mode) {
                out = ceil_div(span, s) + 1;
                if ((out - 1) * s >= in + g->pb[j]) out--;
            } else {
                out = span / s + 1;
            }
        }
        if (out < 0 || out > RT_MAX_NUMEL)
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: output size %lld out of range", n->name,
                                 (long long)out);
        g->out[j] = out;
    }
    return LECTOR_OK;
}
