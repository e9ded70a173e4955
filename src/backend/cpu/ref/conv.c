/*
 * conv.c - Conv and ConvTranspose, spatial rank 1 to 3 (stored as 3-D with
 * leading size-1 dims, see rt_conv_geom).
 *
 * Conv: depthwise convolutions run a direct loop (one output channel per
 * input channel); everything else is im2col in chunks of output rows
 * (bounded scratch memory) + rt_gemm_f32, 1x1/stride-1/unpadded kernels
 * reading the input in place. ConvTranspose: GEMM (W^T x X) + col2im.
 * Bias and the fused activation are applied per output channel.
 */
#include <string.h>

#include "backend/cpu/ref/ref.h"

#define COL_MAX_FLOATS (4 << 20)

static void bias_act(const rt_node *nd, float *y, int64_t n_img, int64_t m, int64_t sp,
                     const float *bias, int threads)
{
#pragma omp parallel for num_threads(threads) if (n_img * m * sp > 65536)
    for (int64_t i = 0; i < n_img * m; i++) {
        float *p = y + i * sp;
        if (bias) {
            float b = bias[i % m];
            for (int64_t j = 0; j < sp; j++) p[j] += b;
        }
        rt_apply_act(p, sp, nd->act, nd->act_alpha, nd->act_beta);
    }
}

/* One input channel `x` (in[0]*in[1]*in[2]) into col rows for output rows
 * [r0, r1) (a row = one (od, oh) pair, OW columns). */
static void im2col_channel(const rt_conv_geom *g, const float *x, int64_t r0, int64_t r1,
                           float *col, int64_t ldcol)
{
    int64_t OW = g->out[2], OH = g->out[1];
    int64_t row = 0;
    for (int64_t kz = 0; kz < g->k[0]; kz++)
        for (int64_t ky = 0; ky < g->k[1]; ky++)
            for (int64_t kx = 0; kx < g->k[2]; kx++, row++) {
                float *dst = col + row * ldcol;
                for (int64_t r = r0; r < r1; r++) {
                    int64_t od = r / OH, oh = r % OH;
                    int64_t iz = od * g->s[0] - g->pb[0] + kz * g->d[0];
                    int64_t iy = oh * g->s[1] - g->pb[1] + ky * g->d[1];
                    float *o = dst + (r - r0) * OW;
                    if (iz < 0 || iz >= g->in[0] || iy < 0 || iy >= g->in[1]) {
                        memset(o, 0, sizeof(float) * (size_t)OW);
                        continue;
                    }
                    const float *src = x + (iz * g->in[1] + iy) * g->in[2];
                    int64_t off = kx * g->d[2] - g->pb[2], sw = g->s[2];
                    for (int64_t ow = 0; ow < OW; ow++) {
                        int64_t ix = ow * sw + off;
                        o[ow] = (ix >= 0 && ix < g->in[2]) ? src[ix] : 0.f;
                    }
                }
            }
}

static void depthwise(const rt_conv_geom *g, const float *x, const float *w, float *y,
                      int64_t planes, int64_t C, int threads)
{
    int64_t isp = g->in[0] * g->in[1] * g->in[2], osp = g->out[0] * g->out[1] * g->out[2];
    int64_t ks = g->k[0] * g->k[1] * g->k[2];
    int64_t OW = g->out[2], IW = g->in[2], sw = g->s[2];
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        const float *xp = x + p * isp, *wp = w + (p % C) * ks;
        float *yp = y + p * osp;
        memset(yp, 0, sizeof(float) * (size_t)osp);
        for (int64_t od = 0; od < g->out[0]; od++)
            for (int64_t oh = 0; oh < g->out[1]; oh++) {
                float *yr = yp + (od * g->out[1] + oh) * OW;
                for (int64_t kz = 0; kz < g->k[0]; kz++) {
                    int64_t iz = od * g->s[0] - g->pb[0] + kz * g->d[0];
                    if (iz < 0 || iz >= g->in[0]) continue;
                    for (int64_t ky = 0; ky < g->k[1]; ky++) {
                        int64_t iy = oh * g->s[1] - g->pb[1] + ky * g->d[1];
                        if (iy < 0 || iy >= g->in[1]) continue;
                        const float *xr = xp + (iz * g->in[1] + iy) * IW;
                        for (int64_t kx = 0; kx < g->k[2]; kx++) {
                            float wv = wp[(kz * g->k[1] + ky) * g->k[2] + kx];
                            int64_t off = kx * g->d[2] - g->pb[2];
                            /* ow range with 0 <= ow*sw + off < IW */
                            int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                            int64_t hi = IW - off <= 0 ? 0 : (IW - off + sw - 1) / sw;
                            if (hi > OW) hi = OW;
                            if (sw == 1) {
                                const float *xs = xr + off;
                                for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xs[ow];
                            } else {
                                for (int64_t ow = lo; ow < hi; ow++) yr[ow] += wv * xr[ow * sw + off];
                            }
                        }
                    }
                }
            }
    }
}

lector_status rt_ref_Conv(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                          const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0], *wt = &in[1];
    const lector_tensor *bt = nd->n_in > 2 && in[2].data ? &in[2] : NULL;
    if (xt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    if (wt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, wt->dtype);
    if (bt && bt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, bt->dtype);
    rt_conv_geom g;
    lector_status st = rt_conv_geom_make(nd, RT_GEOM_CONV, xt->ndim, xt->dims, wt->dims, &g, ctx->err);
    if (st) return st;
    int64_t N = xt->dims[0], C = xt->dims[1], M = wt->dims[0];
    int64_t G = rt_attr_int(nd, "group", 1), Cg = C / G, Mg = M / G;
    int64_t isp = g.in[0] * g.in[1] * g.in[2], osp = g.out[0] * g.out[1] * g.out[2];
    int64_t ks = g.k[0] * g.k[1] * g.k[2], Kg = Cg * ks;
    const float *x = xt->data, *w = wt->data;
    float *y = out->data;
    if (N * M * osp == 0) return LECTOR_OK;
    if (G == C && G == M && G > 1) {
        depthwise(&g, x, w, y, N * C, C, ctx->threads);
    } else if (ks == 1 && g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1 && !g.pb[0] && !g.pb[1] &&
               !g.pb[2] && !g.pe[0] && !g.pe[1] && !g.pe[2]) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t gi = 0; gi < G; gi++)
                if (rt_gemm_f32(0, 0, Mg, osp, Cg, 1.f, w + gi * Mg * Kg, Kg,
                                x + (n * C + gi * Cg) * isp, isp, 0.f,
                                y + (n * M + gi * Mg) * osp, osp, ctx->threads))
                    return rt_ref_oom(nd, ctx);
    } else {
        int64_t rows = g.out[0] * g.out[1], OW = g.out[2];
        int64_t chunk = COL_MAX_FLOATS / (Kg * OW > 0 ? Kg * OW : 1);
        if (chunk < 1) chunk = 1;
        if (chunk > rows) chunk = rows;
        float *col = lector__aligned_alloc(sizeof(float) * (size_t)(Kg * chunk * OW));
        if (!col) return rt_ref_oom(nd, ctx);
        for (int64_t n = 0; n < N; n++)
            for (int64_t gi = 0; gi < G; gi++)
                for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
                    int64_t r1 = LECTOR_MIN(rows, r0 + chunk), nc = (r1 - r0) * OW;
                    const float *xg = x + (n * C + gi * Cg) * isp;
#pragma omp parallel for num_threads(ctx->threads) if (Cg > 1 && Kg * nc > 65536)
                    for (int64_t c = 0; c < Cg; c++)
                        im2col_channel(&g, xg + c * isp, r0, r1, col + c * ks * nc, nc);
                    if (rt_gemm_f32(0, 0, Mg, nc, Kg, 1.f, w + gi * Mg * Kg, Kg, col, nc, 0.f,
                                    y + (n * M + gi * Mg) * osp + r0 * OW, osp, ctx->threads)) {
                        lector__free(col);
                        return rt_ref_oom(nd, ctx);
                    }
                }
        lector__free(col);
    }
    bias_act(nd, y, N, M, osp, bt ? bt->data : NULL, ctx->threads);
    return LECTOR_OK;
}

lector_status rt_ref_ConvTranspose(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                   const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0], *wt = &in[1];
    const lector_tensor *bt = nd->n_in > 2 && in[2].data ? &in[2] : NULL;
    if (xt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    if (wt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, wt->dtype);
    if (bt && bt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, bt->dtype);
    rt_conv_geom g;
    lector_status st = rt_conv_geom_make(nd, RT_GEOM_CONVT, xt->ndim, xt->dims, wt->dims, &g, ctx->err);
    if (st) return st;
    int64_t N = xt->dims[0], C = xt->dims[1];
    int64_t G = rt_attr_int(nd, "group", 1), Cg = C / G, Mg = wt->dims[1], M = Mg * G;
    int64_t isp = g.in[0] * g.in[1] * g.in[2], osp = g.out[0] * g.out[1] * g.out[2];
    int64_t ks = g.k[0] * g.k[1] * g.k[2], R = Mg * ks;
    const float *x = xt->data, *w = wt->data;
    float *y = out->data;
    if (N * M * osp == 0) return LECTOR_OK;
    memset(y, 0, sizeof(float) * (size_t)(N * M * osp));
    float *col = lector__aligned_alloc(sizeof(float) * (size_t)(R * (isp ? isp : 1)));
    if (!col) return rt_ref_oom(nd, ctx);
    for (int64_t n = 0; n < N; n++)
        for (int64_t gi = 0; gi < G; gi++) {
            if (rt_gemm_f32(1, 0, R, isp, Cg, 1.f, w + gi * Cg * R, R, x + (n * C + gi * Cg) * isp,
                            isp, 0.f, col, isp, ctx->threads)) {
                lector__free(col);
                return rt_ref_oom(nd, ctx);
            }
            float *yg = y + (n * M + gi * Mg) * osp;
#pragma omp parallel for num_threads(ctx->threads) if (Mg > 1 && R * isp > 65536)
            for (int64_t m = 0; m < Mg; m++) {
                float *ym = yg + m * osp;
                for (int64_t kz = 0; kz < g.k[0]; kz++)
                    for (int64_t ky = 0; ky < g.k[1]; ky++)
                        for (int64_t kx = 0; kx < g.k[2]; kx++) {
                            const float *cr = col + ((m * g.k[0] + kz) * g.k[1] * g.k[2] +
                                                     ky * g.k[2] + kx) * isp;
                            for (int64_t iz = 0; iz < g.in[0]; iz++) {
                                int64_t oz = iz * g.s[0] - g.pb[0] + kz * g.d[0];
                                if (oz < 0 || oz >= g.out[0]) continue;
                                for (int64_t iy = 0; iy < g.in[1]; iy++) {
                                    int64_t oy = iy * g.s[1] - g.pb[1] + ky * g.d[1];
                                    if (oy < 0 || oy >= g.out[1]) continue;
                                    const float *cp = cr + (iz * g.in[1] + iy) * g.in[2];
                                    float *yr = ym + (oz * g.out[1] + oy) * g.out[2];
                                    for (int64_t ix = 0; ix < g.in[2]; ix++) {
                                        int64_t ox = ix * g.s[2] - g.pb[2] + kx * g.d[2];
                                        if (ox >= 0 && ox < g.out[2]) yr[ox] += cp[ix];
                                    }
                                }
                            }
                        }
            }
        }
    lector__free(col);
    bias_act(nd, y, N, M, osp, bt ? bt->data : NULL, ctx->threads);
    return LECTOR_OK;
}
