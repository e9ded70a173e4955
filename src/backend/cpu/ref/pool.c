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

/* AveragePool: the taps inside the input summed in the order of pool()'s
 * loops below (the same bits), with each window's range along each axis
 * found once per output coordinate instead of tested per tap. */
static lector_status average_pool(const rt_node *nd, const rt_conv_geom *g, const lector_tensor *xt, float *y,
                                  const rt_kernel_ctx *ctx)
{
    int include_pad = (int)rt_attr_int(nd, "count_include_pad", 0);
    int64_t planes = xt->dims[0] * xt->dims[1];
    int64_t isp = g->in[0] * g->in[1] * g->in[2], osp = g->out[0] * g->out[1] * g->out[2];
    pool_span *sp = lector__malloc(sizeof *sp * (size_t)(g->out[0] + g->out[1] + g->out[2] + 1));
    if (!sp) return lector__error(ctx->err, LECTOR_ERR_OUT_OF_MEMORY, "node %s: out of memory", nd->name);
    pool_span *sz = sp, *sy = sz + g->out[0], *sx = sy + g->out[1];
    pool_spans(g, 0, sz);
    pool_spans(g, 1, sy);
    pool_spans(g, 2, sx);
    const float *x = xt->data;
#pragma omp parallel for num_threads(ctx->threads) if (planes * osp > 16384)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * isp;
        float *yp = y + p * osp;
        for (int64_t od = 0; od < g->out[0]; od++)
            for (int64_t oh = 0; oh < g->out[1]; oh++)
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    const pool_span *a = &sz[od], *b = &sy[oh], *c = &sx[ow];
                    float sum = 0.f;
                    for (int64_t kz = a->lo; kz < a->hi; kz++)
                        for (int64_t ky = b->lo; ky < b->hi; ky++) {
                            const float *xr =
                                xp + ((a->start + kz * g->d[0]) * g->in[1] + b->start + ky * g->d[1]) * g->in[2] +
                                c->start;
                            for (int64_t kx = c->lo; kx < c->hi; kx++) sum += xr[kx * g->d[2]];
                        }
                    int64_t cnt = (a->hi - a->lo) * (b->hi - b->lo) * (c->hi - c->lo);
                    yp[(od * g->out[1] + oh) * g->out[2] + ow] =
                        include_pad ? sum / (float)(a->cnt_pad * b->cnt_pad * c->cnt_pad)
                                    : (cnt ? sum / (float)cnt : 0.f);
                }
    }
    lector__free(sp);
    return LECTOR_OK;
}

/* MaxPool, AveragePool: the geometry, then the operator's loops. */
static lector_status pool(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx,
                          int is_max)
{
    const lector_tensor *xt = &in[0];
    if (xt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    rt_conv_geom g;
    lector_status st = rt_conv_geom_make(nd, RT_GEOM_POOL, xt->ndim, xt->dims, NULL, &g, ctx->err);
    if (st) return st;
    if (!is_max) return average_pool(nd, &g, xt, out->data, ctx);
    int64_t planes = xt->dims[0] * xt->dims[1];
    int64_t isp = g.in[0] * g.in[1] * g.in[2], osp = g.out[0] * g.out[1] * g.out[2];
    const float *x = xt->data;
    float *y = out->data;
    /* MaxPool Indices: flat index into the input, row-major (storage_order 0)
     * or with the spatial dims in column-major order (storage_order 1) */
    int64_t *ind = nd->n_out > 1 ? out[1].data : NULL;
    int col_major = (int)rt_attr_int(nd, "storage_order", 0);
#pragma omp parallel for num_threads(ctx->threads) if (planes * osp > 16384)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * isp;
        float *yp = y + p * osp;
        for (int64_t od = 0; od < g.out[0]; od++)
            for (int64_t oh = 0; oh < g.out[1]; oh++)
                for (int64_t ow = 0; ow < g.out[2]; ow++) {
                    int64_t o[3] = {od, oh, ow}, start[3];
                    for (int a = 0; a < 3; a++) start[a] = o[a] * g.s[a] - g.pb[a];
                    float mx = -INFINITY;
                    int64_t arg = -1;
                    for (int64_t kz = 0; kz < g.k[0]; kz++) {
                        int64_t iz = start[0] + kz * g.d[0];
                        if (iz < 0 || iz >= g.in[0]) continue;
                        for (int64_t ky = 0; ky < g.k[1]; ky++) {
                            int64_t iy = start[1] + ky * g.d[1];
                            if (iy < 0 || iy >= g.in[1]) continue;
                            const float *xr = xp + (iz * g.in[1] + iy) * g.in[2];
                            for (int64_t kx = 0; kx < g.k[2]; kx++) {
                                int64_t ix = start[2] + kx * g.d[2];
                                if (ix < 0 || ix >= g.in[2]) continue;
                                float v = xr[ix];
                                if (v > mx || (v != v && mx == mx) || arg < 0) {
                                    mx = v;
                                    arg = col_major ? (ix * g.in[1] + iy) * g.in[0] + iz
                                                    : (iz * g.in[1] + iy) * g.in[2] + ix;
                                }
                            }
                        }
                    }
                    yp[(od * g.out[1] + oh) * g.out[2] + ow] = mx;
                    if (ind) ind[p * osp + (od * g.out[1] + oh) * g.out[2] + ow] = p * isp + arg;
                }
    }
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
