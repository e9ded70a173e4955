/*
 * reduce.c - ReduceMean, ReduceSum, ReduceMax over any set of axes (from
 * the `axes` attribute or input 1), keepdims, noop_with_empty_axes; ArgMax
 * over one axis.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

enum { RED_SUM, RED_MEAN, RED_MAX };

/* The largest of x[0..n) (n > 0) as the loops below find it, in 16 lanes
 * the compiler vectorises; 0 when the row holds a NaN or its largest is a
 * zero (whose sign depends on which zero came first), which the loops
 * below then settle. The recogniser's classifier head ends in an ArgMax
 * and a ReduceMax over [steps, 6625] probabilities: element by element
 * they took as long as the Softmax before them. */
#define MAX_LANES 16
__attribute__((target_clones("avx512f", "avx2", "default"))) static int row_max(const float *x, int64_t n, float *out)
{
    float m[MAX_LANES];
    int nan[MAX_LANES];
    for (int q = 0; q < MAX_LANES; q++) {
        m[q] = x[0];
        nan[q] = 0;
    }
    int64_t i = 0;
    for (; i + MAX_LANES <= n; i += MAX_LANES)
        for (int q = 0; q < MAX_LANES; q++) {
            float v = x[i + q];
            m[q] = v > m[q] ? v : m[q];
            nan[q] |= v != v;
        }
    float best = m[0];
    int any_nan = 0;
    for (int q = 0; q < MAX_LANES; q++) {
        best = m[q] > best ? m[q] : best;
        any_nan |= nan[q];
    }
    for (; i < n; i++) {
        best = x[i] > best ? x[i] : best;
        any_nan |= x[i] != x[i];
    }
    if (any_nan || best == 0.f) return 0;
    *out = best;
    return 1;
}

static lector_status reduce(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx,
                            int kind)
{
    const lector_tensor *xt = &in[0];
    int r = xt->ndim, mask[LECTOR_MAX_DIMS];
    const lector_tensor *axes = nd->n_in > 1 && in[1].data ? &in[1] : NULL;
    lector_status st = rt_reduce_mask(nd, r, axes, mask, ctx->err);
    if (st) return st;
    int64_t n_out = lector_tensor_numel(out), n_in = lector_tensor_numel(xt);
    /* output strides in the input's rank, 0 for reduced axes */
    int64_t ost[LECTOR_MAX_DIMS], s = 1, cnt = 1;
    for (int a = r - 1; a >= 0; a--) {
        if (mask[a]) {
            ost[a] = 0;
            cnt *= xt->dims[a];
        } else {
            ost[a] = s;
            s *= xt->dims[a];
        }
    }
#define RED_LOOP(T, ACC, EMPTY_MEAN, EMPTY_MAX)                                                        \
    do {                                                                                               \
        const T *x = xt->data;                                                                         \
        T *y = out->data;                                                                              \
        ACC *acc = lector__malloc(sizeof(ACC) * (size_t)(n_out ? n_out : 1));                          \
        if (!acc) return rt_ref_oom(nd, ctx);                                                          \
        for (int64_t i = 0; i < n_out; i++) acc[i] = (ACC)0;                                           \
        int64_t idx[LECTOR_MAX_DIMS] = {0}, o = 0;                                                     \
        unsigned char *seen = kind == RED_MAX ? lector__calloc((size_t)(n_out ? n_out : 1), 1) : NULL; \
        if (kind == RED_MAX && !seen) {                                                                \
            lector__free(acc);                                                                         \
            return rt_ref_oom(nd, ctx);                                                                \
        }                                                                                              \
        for (int64_t i = 0; i < n_in; i++) {                                                           \
            ACC v = (ACC)x[i];                                                                         \
            if (kind == RED_MAX) {                                                                     \
                if (!seen[o] || v > acc[o] || v != v) acc[o] = v;                                      \
                seen[o] = 1;                                                                           \
            } else {                                                                                   \
                acc[o] += v;                                                                           \
            }                                                                                          \
            for (int a = r - 1; a >= 0; a--) {                                                         \
                o += ost[a];                                                                           \
                if (++idx[a] < xt->dims[a]) break;                                                     \
                o -= ost[a] * xt->dims[a];                                                             \
                idx[a] = 0;                                                                            \
            }                                                                                          \
        }                                                                                              \
        for (int64_t i = 0; i < n_out; i++) {                                                          \
            ACC v = acc[i];                                                                            \
            if (kind == RED_MEAN) v = cnt ? v / (ACC)cnt : (EMPTY_MEAN);                               \
            if (kind == RED_MAX && !seen[i]) v = (EMPTY_MAX);                                          \
            y[i] = (T)v;                                                                               \
        }                                                                                              \
        lector__free(seen);                                                                            \
        lector__free(acc);                                                                             \
    } while (0)
    if (kind == RED_MAX && xt->dtype == LECTOR_DTYPE_FLOAT32 && r > 0 && mask[r - 1] && cnt == xt->dims[r - 1] &&
        cnt > 0) {
        /* over the last axis alone: each row's largest, where row_max can tell it */
        const float *x = xt->data;
        float *y = out->data;
        int all = 1;
        for (int64_t i = 0; i < n_out && all; i++) all = row_max(x + i * cnt, cnt, &y[i]);
        if (all) return LECTOR_OK; /* else the loop below does every row again */
    }
    switch (xt->dtype) {
    case LECTOR_DTYPE_FLOAT32: RED_LOOP(float, double, NAN, -INFINITY); break;
    case LECTOR_DTYPE_FLOAT64: RED_LOOP(double, double, NAN, -INFINITY); break;
    case LECTOR_DTYPE_INT64: RED_LOOP(int64_t, int64_t, 0, INT64_MIN); break;
    case LECTOR_DTYPE_INT32: RED_LOOP(int32_t, int64_t, 0, INT32_MIN); break;
    default: return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    }
#undef RED_LOOP
    return LECTOR_OK;
}

lector_status rt_ref_ReduceMean(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                const rt_kernel_ctx *ctx)
{
    return reduce(nd, in, out, ctx, RED_MEAN);
}

lector_status rt_ref_ReduceSum(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    return reduce(nd, in, out, ctx, RED_SUM);
}

lector_status rt_ref_ReduceMax(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    return reduce(nd, in, out, ctx, RED_MAX);
}

/* ArgMax as numpy's argmax (and ONNX's reference): the first maximum, or
 * the last with select_last_index = 1; NaN is greater than every number
 * (the first NaN, or the last). keepdims only changes the output shape. */
lector_status rt_ref_ArgMax(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0];
    int a = rt_norm_axis(rt_attr_int(nd, "axis", 0), xt->ndim);
    if (a < 0) return lector__error(ctx->err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    int last = rt_attr_int(nd, "select_last_index", 0) != 0;
    int64_t outer = 1, n = xt->dims[a], inner = 1;
    for (int i = 0; i < a; i++) outer *= xt->dims[i];
    for (int i = a + 1; i < xt->ndim; i++) inner *= xt->dims[i];
    int64_t *y = out->data;
    if (n == 0) { /* inference lets this through only for an empty output */
        for (int64_t i = 0; i < outer * inner; i++) y[i] = 0;
        return LECTOR_OK;
    }
    if (xt->dtype == LECTOR_DTYPE_FLOAT32 && inner == 1 && !last) {
        /* the first index of each row's largest, where row_max can tell it */
        const float *x = xt->data;
        int all = 1;
        for (int64_t o = 0; o < outer && all; o++) {
            const float *xr = x + o * n;
            float m;
            all = row_max(xr, n, &m);
            int64_t k = 0;
            while (all && xr[k] != m) k++;
            y[o] = k;
        }
        if (all) return LECTOR_OK; /* else the loop below does every row again */
    }
    /* y[j] holds the best index so far of column j of one outer block; the
     * block is read row by row (contiguous) */
#define ARGMAX_LOOP(T)                                                                            \
    do {                                                                                          \
        const T *x = xt->data;                                                                    \
        for (int64_t o = 0; o < outer; o++) {                                                     \
            const T *xb = x + o * n * inner;                                                      \
            int64_t *yb = y + o * inner;                                                          \
            for (int64_t j = 0; j < inner; j++) yb[j] = 0;                                        \
            for (int64_t k = 1; k < n; k++) {                                                     \
                const T *row = xb + k * inner;                                                    \
                for (int64_t j = 0; j < inner; j++) {                                             \
                    T v = row[j], b = xb[yb[j] * inner + j];                                      \
                    int take = last ? (b == b && v >= b) || v != v : v > b || (v != v && b == b); \
                    if (take) yb[j] = k;                                                          \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    } while (0)
    switch (xt->dtype) {
    case LECTOR_DTYPE_FLOAT32: ARGMAX_LOOP(float); break;
    case LECTOR_DTYPE_FLOAT64: ARGMAX_LOOP(double); break;
    case LECTOR_DTYPE_INT64: ARGMAX_LOOP(int64_t); break;
    case LECTOR_DTYPE_INT32: ARGMAX_LOOP(int32_t); break;
    default: return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    }
#undef ARGMAX_LOOP
    return LECTOR_OK;
}
