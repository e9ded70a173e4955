/*
 * pool.c - MaxPool, AveragePool (spatial rank 1 to 3, pads, strides,
 * dilations, ceil_mode, count_include_pad), GlobalAveragePool,
 * GlobalMaxPool.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

/* One output coordinate's window along one axis: its first input
 * coordinate, the taps [lo, hi) that fall inside the input, and the
 * number of taps inside the padded input (count_include_pad's divisor). */
typedef struct {
    int64_t start, lo, hi, cnt_pad;
} pool_span;

static void pool_spans(const rt_conv_geom *g, int a, pool_span *sp)
{
    for (int64_t o = 0; o < g->out[a]; o++) {
        int64_t start = o * g->s[a] - g->pb[a], d = g->d[a];
        /* window clipped to the padded input (ORT's divisor) */
        int64_t end = LECTOR_MIN(start + (g->k[a] - 1) * d + 1, g->in[a] + g->pe[a]);
        int64_t last = g->in[a] - 1 - start; /* the last tap offset inside the input */
        sp[o].start = start;
        sp[o].lo = start >= 0 ? 0 : (-start + d - 1) / d;
        sp[o].hi = last < 0 ? 0 : LECTOR_MIN(g->k[a], last / d + 1);
        if (sp[o].hi < sp[o].lo) sp[o].hi = sp[o].lo;
        sp[o].cnt_pad = (end - start + d - 1) / d;
    }
}

/* MaxPool, AveragePool over the taps of each window that fall inside the
 * input, in the order kz, ky, kx, each window's range along each axis
 * found once per output coordinate (pool_spans) instead of tested per tap. */
static lector_status pool(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx,
                          int is_max)
{
    const lector_tensor *xt = &in[0];
    if (xt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    rt_conv_geom g;
    lector_status st = rt_conv_geom_make(nd, RT_GEOM_POOL, xt->ndim, xt->dims, NULL, &g, ctx->err);
    if (st) return st;
    int include_pad = (int)rt_attr_int(nd, "count_include_pad", 0);
    int64_t planes = xt->dims[0] * xt->dims[1];
    int64_t isp = g.in[0] * g.in[1] * g.in[2], osp = g.out[0] * g.out[1] * g.out[2];
    pool_span *sp = lector__malloc(sizeof *sp * (size_t)(g.out[0] + g.out[1] + g.out[2] + 1));
    if (!sp) return lector__error(ctx->err, LECTOR_ERR_OUT_OF_MEMORY, "node %s: out of memory", nd->name);
    pool_span *sz = sp, *sy = sz + g.out[0], *sx = sy + g.out[1];
    pool_spans(&g, 0, sz);
    pool_spans(&g, 1, sy);
    pool_spans(&g, 2, sx);
    const float *x = xt->data;
    float *y = out->data;
    /* MaxPool Indices: flat index into the input, row-major (storage_order 0)
     * or with the spatial dims in column-major order (storage_order 1) */
    int64_t *ind = is_max && nd->n_out > 1 ? out[1].data : NULL;
    int col_major = (int)rt_attr_int(nd, "storage_order", 0);
#pragma omp parallel for num_threads(ctx->threads) if (planes * osp > 16384)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * isp;
        float *yp = y + p * osp;
        for (int64_t od = 0; od < g.out[0]; od++)
            for (int64_t oh = 0; oh < g.out[1]; oh++)
                for (int64_t ow = 0; ow < g.out[2]; ow++) {
                    const pool_span *a = &sz[od], *b = &sy[oh], *c = &sx[ow];
                    int64_t o = (od * g.out[1] + oh) * g.out[2] + ow;
                    float acc = is_max ? -INFINITY : 0.f;
                    int64_t arg = -1;
                    for (int64_t kz = a->lo; kz < a->hi; kz++)
                        for (int64_t ky = b->lo; ky < b->hi; ky++) {
                            int64_t iz = a->start + kz * g.d[0], iy = b->start + ky * g.d[1];
                            const float *xr = xp + (iz * g.in[1] + iy) * g.in[2];
                            if (!is_max) {
                                for (int64_t kx = c->lo; kx < c->hi; kx++) acc += xr[c->start + kx * g.d[2]];
                                continue;
                            }
                            for (int64_t kx = c->lo; kx < c->hi; kx++) {
                                int64_t ix = c->start + kx * g.d[2];
                                float v = xr[ix];
                                if (v > acc || (v != v && acc == acc) || arg < 0) {
                                    acc = v;
                                    arg = col_major ? (ix * g.in[1] + iy) * g.in[0] + iz
                                                    : (iz * g.in[1] + iy) * g.in[2] + ix;
                                }
                            }
                        }
                    if (!is_max) {
                        int64_t cnt = (a->hi - a->lo) * (b->hi - b->lo) * (c->hi - c->lo);
                        acc = include_pad ? acc / (float)(a->cnt_pad * b->cnt_pad * c->cnt_pad)
                                          : (cnt ? acc / (float)cnt : 0.f);
                    }
                    yp[o] = acc;
                    if (ind) ind[p * osp + o] = p * isp + arg;
                }
    }
    lector__free(sp);
    return LECTOR_OK;
}

lector_status rt_ref_MaxPool(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    return pool(nd, in, out, ctx, 1);
}

lector_status rt_ref_AveragePool(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                 const rt_kernel_ctx *ctx)
{
    return pool(nd, in, out, ctx, 0);
}

static lector_status global_pool(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                 const rt_kernel_ctx *ctx, int is_max)
{
    if (in[0].dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int64_t planes = in[0].dims[0] * in[0].dims[1];
    int64_t sp = lector_tensor_numel(&in[0]) / (planes ? planes : 1);
    const float *x = in[0].data;
    float *y = out->data;
#pragma omp parallel for num_threads(ctx->threads) if (planes * sp > 65536)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * sp;
        if (is_max) {
            float m = -INFINITY;
            for (int64_t i = 0; i < sp; i++) m = xp[i] > m ? xp[i] : m;
            y[p] = m;
        } else {
            /* 16 independent float lanes (vectorised), combined in double */
            float lane[16] = {0};
            int64_t i = 0;
            for (; i + 16 <= sp; i += 16)
                for (int q = 0; q < 16; q++) lane[q] += xp[i + q];
            double s = 0;
            for (int q = 0; q < 16; q++) s += lane[q];
            for (; i < sp; i++) s += xp[i];
            y[p] = sp ? (float)(s / (double)sp) : 0.f;
        }
    }
    return LECTOR_OK;
}

lector_status rt_ref_GlobalAveragePool(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                       const rt_kernel_ctx *ctx)
{
    return global_pool(nd, in, out, ctx, 0);
}

lector_status rt_ref_GlobalMaxPool(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                   const rt_kernel_ctx *ctx)
{
    return global_pool(nd, in, out, ctx, 1);
}
