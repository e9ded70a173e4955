/*
 * topk.c - TopK: the K largest (largest = 1, the default) or smallest
 * elements along one axis, as ONNX defines it: Values in order (largest
 * first, or smallest first), and of two equal values the one of the lower
 * index first; Indices int64. sorted = 0 leaves the order to the kernel: this
 * one sorts anyway. NaN orders above every number (as ArgMax takes it for
 * the maximum).
 */
#include <stdlib.h>

#include "backend/cpu/ref/ref.h"

typedef struct topk_item {
    union {
        double f;
        int64_t i;
    } v;
    int64_t at;
} topk_item;

/* qsort's comparators: -1 when item a comes before item b. Among the
 * largest: the greater value, NaN above every number; among the smallest
 * the other way round; ties by the lower index either way. */
static int by_index(const topk_item *a, const topk_item *b) { return a->at < b->at ? -1 : a->at > b->at; }

static int largest_float(const void *pa, const void *pb)
{
    const topk_item *a = pa, *b = pb;
    int an = a->v.f != a->v.f, bn = b->v.f != b->v.f;
    if (an != bn) return an ? -1 : 1;
    if (!an && a->v.f != b->v.f) return a->v.f > b->v.f ? -1 : 1;
    return by_index(a, b);
}

static int largest_int(const void *pa, const void *pb)
{
    const topk_item *a = pa, *b = pb;
    return a->v.i != b->v.i ? (a->v.i > b->v.i ? -1 : 1) : by_index(a, b);
}

static int smallest_float(const void *pa, const void *pb)
{
    const topk_item *a = pa, *b = pb;
    int an = a->v.f != a->v.f, bn = b->v.f != b->v.f;
    if (an != bn) return an ? 1 : -1;
    if (!an && a->v.f != b->v.f) return a->v.f < b->v.f ? -1 : 1;
    return by_index(a, b);
}

static int smallest_int(const void *pa, const void *pb)
{
    const topk_item *a = pa, *b = pb;
    return a->v.i != b->v.i ? (a->v.i < b->v.i ? -1 : 1) : by_index(a, b);
}

lector_status rt_ref_TopK(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0];
    int a = rt_norm_axis(rt_attr_int(nd, "axis", -1), xt->ndim);
    if (a < 0) return lector__error(ctx->err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    const lector_tensor *kt = &in[1];
    if (!kt->data || lector_tensor_numel(kt) != 1 ||
        (kt->dtype != LECTOR_DTYPE_INT64 && kt->dtype != LECTOR_DTYPE_INT32))
        return lector__error(ctx->err, LECTOR_ERR_INVALID_MODEL, "node %s: K must be one int64", nd->name);
    int64_t k = kt->dtype == LECTOR_DTYPE_INT64 ? *(const int64_t *)kt->data : *(const int32_t *)kt->data;
    int64_t n = xt->dims[a], outer = 1, inner = 1;
    if (k < 0 || k > n)
        return lector__error(ctx->err, LECTOR_ERR_SHAPE, "node %s: K = %lld outside [0, %lld]", nd->name, (long long)k,
                             (long long)n);
    for (int i = 0; i < a; i++) outer *= xt->dims[i];
    for (int i = a + 1; i < xt->ndim; i++) inner *= xt->dims[i];
    if (k == 0 || outer * inner == 0) return LECTOR_OK;
    int largest = rt_attr_int(nd, "largest", 1) != 0;
    int is_float = xt->dtype == LECTOR_DTYPE_FLOAT32 || xt->dtype == LECTOR_DTYPE_FLOAT64;
    int (*cmp)(const void *, const void *) =
        largest ? (is_float ? largest_float : largest_int) : (is_float ? smallest_float : smallest_int);
    topk_item *it = lector__malloc(sizeof *it * (size_t)n);
    if (!it) return lector__error(ctx->err, LECTOR_ERR_OUT_OF_MEMORY, "node %s: out of memory", nd->name);
    void *yv = out[0].data;
    int64_t *yi = nd->n_out > 1 ? out[1].data : NULL;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            for (int64_t e = 0; e < n; e++) {
                int64_t src = (o * n + e) * inner + j;
                it[e].at = e;
                switch (xt->dtype) {
                case LECTOR_DTYPE_FLOAT32: it[e].v.f = ((const float *)xt->data)[src]; break;
                case LECTOR_DTYPE_FLOAT64: it[e].v.f = ((const double *)xt->data)[src]; break;
                case LECTOR_DTYPE_INT64: it[e].v.i = ((const int64_t *)xt->data)[src]; break;
                case LECTOR_DTYPE_INT32: it[e].v.i = ((const int32_t *)xt->data)[src]; break;
                default: lector__free(it); return rt_ref_bad_dtype(nd, ctx, xt->dtype);
                }
            }
            if (k <= 16) {     /* a few of many (the recogniser's two of 6625 classes): one pass */
                int64_t m = 0; /* it[0..m) the best so far, in order; every write is at or below e */
                for (int64_t e = 0; e < n; e++) {
                    topk_item x = it[e];
                    if (m == k && cmp(&x, &it[m - 1]) >= 0) continue;
                    int64_t q = m < k ? m++ : k - 1;
                    for (; q > 0 && cmp(&x, &it[q - 1]) < 0; q--) it[q] = it[q - 1];
                    it[q] = x;
                }
            } else { /* a total order (ties by index), so qsort's instability cannot show */
                qsort(it, (size_t)n, sizeof *it, cmp);
            }
            for (int64_t e = 0; e < k; e++) {
                int64_t dst = (o * k + e) * inner + j;
                if (yv) switch (xt->dtype) {
                    case LECTOR_DTYPE_FLOAT32: ((float *)yv)[dst] = (float)it[e].v.f; break;
                    case LECTOR_DTYPE_FLOAT64: ((double *)yv)[dst] = it[e].v.f; break;
                    case LECTOR_DTYPE_INT64: ((int64_t *)yv)[dst] = it[e].v.i; break;
                    default: ((int32_t *)yv)[dst] = (int32_t)it[e].v.i; break;
                    }
                if (yi) yi[dst] = it[e].at;
            }
        }
    lector__free(it);
    return LECTOR_OK;
}
