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
#include <omp.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

#define COL_TARGET_FLOATS (384 << 10)

/* im2col of RT_GEMM_NR-column sliver `t` of the output columns [col0, col0 + nc)
 * (column = flattened output position) straight into the packed-B layout of
 * rt_gemm_f32_packed: `dst` receives
 * K = Cg*ks rows of RT_GEMM_NR floats, written sequentially (columns past nc
 * are zero). `xg` is the group's first input channel. */
static void im2col_sliver(const rt_conv_geom *g, const float *xg, int64_t isp, int64_t Cg, int64_t col0, int64_t t,
                          int64_t nc, float *dst)
{
    enum { W = RT_GEMM_NR };
    int64_t OW = g->out[2], OH = g->out[1], IH = g->in[1], IW = g->in[2], ID = g->in[0];
    int64_t cnt = LECTOR_MIN(W, nc - t * W);
    int64_t iz0[W], iy0[W], ix0[W];
    for (int64_t q = 0; q < cnt; q++) {
        int64_t j = col0 + t * W + q, r = j / OW, ow = j % OW;
        iz0[q] = (r / OH) * g->s[0] - g->pb[0];
        iy0[q] = (r % OH) * g->s[1] - g->pb[1];
        ix0[q] = ow * g->s[2] - g->pb[2];
    }
    /* all columns on one output row: each kernel tap reads one strided run */
    int one_row = cnt == W && iz0[0] == iz0[W - 1] && iy0[0] == iy0[W - 1];
    int64_t sw = g->s[2];
    float *p = dst;
    for (int64_t c = 0; c < Cg; c++) {
        const float *xc = xg + c * isp;
        for (int64_t kz = 0; kz < g->k[0]; kz++)
            for (int64_t ky = 0; ky < g->k[1]; ky++)
                for (int64_t kx = 0; kx < g->k[2]; kx++, p += W) {
                    int64_t dz = kz * g->d[0], dy = ky * g->d[1], dx = kx * g->d[2];
                    if (one_row) {
                        int64_t iz = iz0[0] + dz, iy = iy0[0] + dy, ix = ix0[0] + dx;
                        if (iz < 0 || iz >= ID || iy < 0 || iy >= IH) {
                            memset(p, 0, sizeof(float) * W);
                            continue;
                        }
                        const float *src = xc + (iz * IH + iy) * IW;
                        if (sw == 1 && ix >= 0 && ix + W <= IW) {
                            memcpy(p, src + ix, sizeof(float) * W);
                        } else if (sw > 1 && ix >= 0 && ix + (W - 1) * sw < IW) {
                            for (int q = 0; q < W; q++) p[q] = src[ix + q * sw];
                        } else {
                            for (int q = 0; q < W; q++) {
                                int64_t i = ix + q * sw;
                                p[q] = (i >= 0 && i < IW) ? src[i] : 0.f;
                            }
                        }
                        continue;
                    }
                    for (int64_t q = 0; q < cnt; q++) {
                        int64_t iz = iz0[q] + dz, iy = iy0[q] + dy, ix = ix0[q] + dx;
                        p[q] = (iz >= 0 && iz < ID && iy >= 0 && iy < IH && ix >= 0 && ix < IW)
                                   ? xc[(iz * IH + iy) * IW + ix]
                                   : 0.f;
                    }
                    for (int64_t q = cnt; q < W; q++) p[q] = 0.f;
                }
    }
}

/* One output row of a depthwise plane from the zero-padded input. Tap
 * (kz, ky, kx) of output `ow` reads xb[kz*zstep + ky*ystep + kxoff[kx] + ow*step]:
 * with step 1 (unit stride, or stride 2 on a row split into even/odd halves)
 * blocks of 16 and 8 outputs live in one vector register; the rest is scalar.
 * One version per vector width (the portable build targets SSE2 only). */
#define DW_TAPS(VT, N)                                               \
    for (; ow + N <= OW; ow += N) {                                  \
        VT a = {0};                                                  \
        for (int64_t kz = 0; kz < kd; kz++)                          \
            for (int64_t ky = 0; ky < kh; ky++) {                    \
                const float *xr = xb + kz * zstep + ky * ystep + ow; \
                const float *wr = w + (kz * kh + ky) * kw;           \
                for (int64_t kx = 0; kx < kw; kx++) {                \
                    VT xv;                                           \
                    memcpy(&xv, xr + kxoff[kx], sizeof xv);          \
                    a += wr[kx] * xv;                                \
                }                                                    \
            }                                                        \
        memcpy(yr + ow, &a, sizeof a);                               \
    }
#define DW_ROW_BODY                                                                \
    int64_t ow = 0;                                                                \
    if (step == 1) {                                                               \
        DW_TAPS(dw_vec, 16)                                                        \
        DW_TAPS(dw_vec8, 8)                                                        \
    }                                                                              \
    for (; ow < OW; ow++) {                                                        \
        float acc = 0.f;                                                           \
        for (int64_t kz = 0; kz < kd; kz++)                                        \
            for (int64_t ky = 0; ky < kh; ky++) {                                  \
                const float *xr = xb + kz * zstep + ky * ystep + ow * step;        \
                const float *wr = w + (kz * kh + ky) * kw;                         \
                for (int64_t kx = 0; kx < kw; kx++) acc += wr[kx] * xr[kxoff[kx]]; \
            }                                                                      \
        yr[ow] = acc;                                                              \
    }

typedef float dw_vec __attribute__((vector_size(64), aligned(4)));
typedef float dw_vec8 __attribute__((vector_size(32), aligned(4)));
#define DW_ROW_ARGS                                                                                    \
    const float *xb, const float *w, int64_t kd, int64_t kh, int64_t kw, int64_t zstep, int64_t ystep, \
        const int64_t *kxoff, int64_t step, int64_t OW, float *yr
typedef void (*dw_fn)(DW_ROW_ARGS);

static void dw_row_generic(DW_ROW_ARGS) { DW_ROW_BODY }

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx512f"))) static void dw_row_avx512(DW_ROW_ARGS) { DW_ROW_BODY }
__attribute__((target("avx2"))) static void dw_row_avx2(DW_ROW_ARGS) { DW_ROW_BODY }
#endif

static dw_fn pick_dw(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return dw_row_avx512;
    if (__builtin_cpu_supports("avx2")) return dw_row_avx2;
#endif
    return dw_row_generic;
}

/* Padded rows: PW = in + pads; with stride 2 a row is stored as its even
 * then its odd columns (halves of (PW+1)/2), so that stride-2 taps read
 * consecutive floats. */
static int64_t dw_row_len(const rt_conv_geom *g)
{
    int64_t PW = g->in[2] + g->pb[2] + g->pe[2];
    return g->s[2] == 2 ? 2 * ((PW + 1) / 2) : PW;
}

static int64_t dw_plane_size(const rt_conv_geom *g)
{
    return (g->in[0] + g->pb[0] + g->pe[0]) * (g->in[1] + g->pb[1] + g->pe[1]) * dw_row_len(g);
}

/* Depthwise convolution (one output channel per input channel): each input
 * plane is copied once into a zero-padded scratch plane so that every tap
 * reads in bounds (dw_row). `scratch` holds threads * dw_plane_size floats. */
static void depthwise(const rt_node *nd, const rt_conv_geom *g, const float *x, const float *w, const float *bias,
                      float *y, int64_t planes, int64_t C, int threads, float *scratch)
{
    int64_t isp = g->in[0] * g->in[1] * g->in[2], osp = g->out[0] * g->out[1] * g->out[2];
    int64_t ks = g->k[0] * g->k[1] * g->k[2], KW = g->k[2];
    int64_t PH = g->in[1] + g->pb[1] + g->pe[1], RW = dw_row_len(g), psz = dw_plane_size(g);
    int64_t OW = g->out[2], sw = g->s[2], dw = g->d[2], half = RW / 2;
    int split = sw == 2;
    int64_t step = sw <= 2 ? 1 : sw;
    int64_t kxoff[64];
    if (KW > 64) return; /* guarded by the caller */
    for (int64_t kx = 0; kx < KW; kx++) {
        int64_t off = kx * dw;
        kxoff[kx] = split ? (off & 1) * half + (off >> 1) : off;
    }
    dw_fn dw_row = pick_dw();
#pragma omp parallel num_threads(threads)
    {
        float *pad = scratch + (int64_t)omp_get_thread_num() * psz;
#pragma omp for schedule(static)
        for (int64_t p = 0; p < planes; p++) {
            const float *xp = x + p * isp, *wp = w + (p % C) * ks;
            float *yp = y + p * osp;
            memset(pad, 0, sizeof(float) * (size_t)psz);
            for (int64_t z = 0; z < g->in[0]; z++)
                for (int64_t r = 0; r < g->in[1]; r++) {
                    float *dst = pad + ((z + g->pb[0]) * PH + r + g->pb[1]) * RW;
                    const float *src = xp + (z * g->in[1] + r) * g->in[2];
                    if (!split) {
                        memcpy(dst + g->pb[2], src, sizeof(float) * (size_t)g->in[2]);
                    } else {
                        for (int64_t c = 0; c < g->in[2]; c++) {
                            int64_t pc = c + g->pb[2];
                            dst[(pc & 1) * half + (pc >> 1)] = src[c];
                        }
                    }
                }
            for (int64_t od = 0; od < g->out[0]; od++)
                for (int64_t oh = 0; oh < g->out[1]; oh++)
                    dw_row(pad + (od * g->s[0] * PH + oh * g->s[1]) * RW, wp, g->k[0], g->k[1], KW, g->d[0] * PH * RW,
                           g->d[1] * RW, kxoff, step, OW, yp + (od * g->out[1] + oh) * OW);
            if (bias) {
                float bv = bias[p % C];
                for (int64_t i = 0; i < osp; i++) yp[i] += bv;
            }
            rt_apply_act(yp, osp, nd->act, nd->act_alpha, nd->act_beta);
        }
    }
}

/* Conv's and ConvTranspose's operands (x, w and the bias if given, all
 * fp32) checked, and their geometry (kind: RT_GEOM_CONV or RT_GEOM_CONVT). */
static lector_status conv_operands(const rt_node *nd, const lector_tensor *in, const rt_kernel_ctx *ctx,
                                   rt_geom_kind kind, const lector_tensor **bias, rt_conv_geom *g)
{
    const lector_tensor *xt = &in[0], *wt = &in[1];
    const lector_tensor *bt = nd->n_in > 2 && in[2].data ? &in[2] : NULL;
    *bias = bt;
    if (xt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    if (wt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, wt->dtype);
    if (bt && bt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, bt->dtype);
    return rt_conv_geom_make(nd, kind, xt->ndim, xt->dims, wt->dims, g, ctx->err);
}

lector_status rt_ref_Conv(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0], *wt = &in[1], *bt;
    rt_conv_geom g;
    lector_status st = conv_operands(nd, in, ctx, RT_GEOM_CONV, &bt, &g);
    if (st) return st;
    int64_t N = xt->dims[0], C = xt->dims[1], M = wt->dims[0];
    int64_t G = rt_attr_int(nd, "group", 1), Cg = C / G, Mg = M / G;
    int64_t isp = g.in[0] * g.in[1] * g.in[2], osp = g.out[0] * g.out[1] * g.out[2];
    int64_t ks = g.k[0] * g.k[1] * g.k[2], Kg = Cg * ks;
    const float *x = xt->data, *w = wt->data;
    float *y = out->data;
    if (N * M * osp == 0) return LECTOR_OK;
    if (G == C && G == M && G > 1 && g.k[2] <= 64) {
        int64_t psz = dw_plane_size(&g);
        int threads = ctx->threads < 1 ? 1 : ctx->threads;
        float *scratch = lector__malloc(sizeof(float) * (size_t)(psz * threads));
        if (!scratch) return rt_ref_oom(nd, ctx);
        depthwise(nd, &g, x, w, bt ? bt->data : NULL, y, N * C, C, threads, scratch);
        lector__free(scratch);
        return LECTOR_OK;
    }
    /* GEMM path: work items = (image, group, chunk of output columns), one
     * parallel region, each thread with its own im2col buffer running a
     * single-threaded GEMM on packed weights, then bias + activation. */
    int pointwise = ks == 1 && g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1 && !g.pb[0] && !g.pb[1] && !g.pb[2] &&
                    !g.pe[0] && !g.pe[1] && !g.pe[2];
    int threads = ctx->threads < 1 ? 1 : ctx->threads;
    int64_t chunk = LECTOR_MAX(COL_TARGET_FLOATS / (Kg > 0 ? Kg : 1), 512);
    int64_t share = (osp + threads - 1) / threads; /* enough items for every thread */
    if (N * G == 1 && chunk > share) chunk = share;
    chunk = LECTOR_MAX((chunk + RT_GEMM_NR - 1) / RT_GEMM_NR * RT_GEMM_NR, RT_GEMM_NR);
    int64_t nch = (osp + chunk - 1) / chunk, items = N * G * nch;
    size_t wsz = rt_gemm_pack_a_size(Mg, Kg);
    float *wp = lector__aligned_alloc(sizeof(float) * wsz * (size_t)G);
    if (!wp) return rt_ref_oom(nd, ctx);
    for (int64_t gi = 0; gi < G; gi++) rt_gemm_pack_a(0, Mg, Kg, w + gi * Mg * Kg, Kg, wp + gi * wsz);
    const float *bias = bt ? bt->data : NULL;
    int fail = 0;
    int nt = (int)LECTOR_MIN((int64_t)threads, items);
#pragma omp parallel num_threads(nt)
    {
        float *col = pointwise ? NULL : lector__aligned_alloc(sizeof(float) * (size_t)(Kg * chunk));
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; it++) {
            if (!pointwise && !col) {
                __atomic_store_n(&fail, 1, __ATOMIC_RELAXED);
                continue;
            }
            int64_t n = it / (G * nch), gi = (it / nch) % G, c0 = (it % nch) * chunk;
            int64_t nc = LECTOR_MIN(chunk, osp - c0);
            const float *xg = x + (n * C + gi * Cg) * isp;
            float *yg = y + (n * M + gi * Mg) * osp;
            int rc;
            if (pointwise) {
                rc = rt_gemm_f32_ex(0, 0, Mg, nc, Cg, 1.f, NULL, 0, wp + gi * wsz, xg + c0, isp, NULL, 0.f, yg + c0,
                                    osp, 1);
            } else {
                int64_t nbs = (nc + RT_GEMM_NR - 1) / RT_GEMM_NR;
                for (int64_t t = 0; t < nbs; t++) im2col_sliver(&g, xg, isp, Cg, c0, t, nc, col + t * Kg * RT_GEMM_NR);
                rc = rt_gemm_f32_ex(0, 0, Mg, nc, Kg, 1.f, NULL, 0, wp + gi * wsz, NULL, 0, col, 0.f, yg + c0, osp, 1);
            }
            if (rc) {
                __atomic_store_n(&fail, 1, __ATOMIC_RELAXED);
                continue;
            }
            for (int64_t m = 0; m < Mg; m++) {
                float *yr = yg + m * osp + c0;
                if (bias) {
                    float bv = bias[gi * Mg + m];
                    for (int64_t j = 0; j < nc; j++) yr[j] += bv;
                }
                rt_apply_act(yr, nc, nd->act, nd->act_alpha, nd->act_beta);
            }
        }
        lector__free(col);
    }
    lector__free(wp);
    if (fail) return rt_ref_oom(nd, ctx);
    return LECTOR_OK;
}

lector_status rt_ref_ConvTranspose(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                   const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0], *wt = &in[1], *bt;
    rt_conv_geom g;
    lector_status st = conv_operands(nd, in, ctx, RT_GEOM_CONVT, &bt, &g);
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
            if (rt_gemm_f32(1, 0, R, isp, Cg, 1.f, w + gi * Cg * R, R, x + (n * C + gi * Cg) * isp, isp, 0.f, col, isp,
                            ctx->threads)) {
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
                            const float *cr = col + ((m * g.k[0] + kz) * g.k[1] * g.k[2] + ky * g.k[2] + kx) * isp;
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
    rt_apply_bias_act(nd, y, N, M, osp, bt ? bt->data : NULL, ctx->threads);
    return LECTOR_OK;
}
