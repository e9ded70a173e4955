/*
 * test_ref_kernels.c - randomised checks of the heavy reference kernels
 * against naive loops: rt_gemm_f32 (all transposes, tails, K = 0, large
 * blocks), Conv (groups, depthwise, strides, dilations, pads, 1x1, fused
 * activation) and ConvTranspose (groups, strides, pads, output_padding,
 * dilations). With --bench, times GEMM and a few PP-OCR-sized convolutions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/ref/ref.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) & 0xffff) / 32768.f - 1.f;
}
static int64_t irand(int64_t lo, int64_t hi) /* [lo, hi] */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (int64_t)((rng >> 20) % (uint64_t)(hi - lo + 1));
}

static float *rand_buf(int64_t n)
{
    float *p = lector__malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

static int close_enough(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        float d = fabsf(got[i] - want[i]);
        if (!(d <= 1e-4f + 1e-4f * fabsf(want[i]))) {
            printf("FAIL %s: element %lld = %.7g, expected %.7g\n", what, (long long)i, got[i], want[i]);
            return 0;
        }
    }
    return 1;
}

static int test_gemm(int threads)
{
    int ok = 1;
    int64_t shapes[][3] = {{1, 1, 1},     {1, 17, 5},     {7, 1, 9},      {6, 16, 256}, {13, 33, 257}, {100, 3, 2},
                           {3, 100, 513}, {257, 130, 70}, {64, 2100, 27}, {5, 5, 0},    {1600, 40, 8}, {37, 4099, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
                float *A = rand_buf((ta ? K : M) * lda), *B = rand_buf((tb ? N : K) * ldb);
                float *C = rand_buf(M * ldc), *R = lector__malloc(sizeof(float) * (size_t)(M * ldc));
                memcpy(R, C, sizeof(float) * (size_t)(M * ldc));
                float alpha = 0.75f, beta = s % 3 == 0 ? 0.f : 0.5f;
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double acc = 0;
                        for (int64_t k = 0; k < K; k++)
                            acc += (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
                                   (double)(tb ? B[j * ldb + k] : B[k * ldb + j]);
                        R[i * ldc + j] = (float)(alpha * acc + (beta == 0.f ? 0.0 : beta * R[i * ldc + j]));
                    }
                if (rt_gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, threads) != 0) ok = 0;
                char what[128];
                snprintf(what, sizeof what, "gemm M=%lld N=%lld K=%lld ta=%d tb=%d threads=%d", (long long)M,
                         (long long)N, (long long)K, ta, tb, threads);
                for (int64_t i = 0; i < M && ok; i++) ok = close_enough(C + i * ldc, R + i * ldc, N, what);
                lector__free(A);
                lector__free(B);
                lector__free(C);
                lector__free(R);
                if (!ok) return 0;
            }
    return ok;
}

/* ---- Conv / ConvTranspose through the op table ------------------------- */

typedef struct conv_cfg {
    int64_t n, c, h, w, m, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, g, oph, opw;
    int act;
} conv_cfg;

static rt_attr mk_ints(const char *name, int64_t *v, int n)
{
    rt_attr a;
    memset(&a, 0, sizeof a);
    a.name = (char *)name;
    a.type = RT_ATTR_INTS;
    a.ints = v;
    a.n_ints = n;
    return a;
}

static rt_attr mk_int(const char *name, int64_t v)
{
    rt_attr a;
    memset(&a, 0, sizeof a);
    a.name = (char *)name;
    a.type = RT_ATTR_INT;
    a.i = v;
    return a;
}

/* A node of one output, for calling a kernel or a shape function directly. */
static rt_node mk_node(int op, const char *name, int n_in, rt_attr *attrs, int n_attrs)
{
    rt_node nd;
    memset(&nd, 0, sizeof nd);
    nd.op = op;
    nd.name = (char *)name;
    nd.n_in = n_in;
    nd.n_out = 1;
    nd.n_attrs = n_attrs;
    nd.attrs = attrs;
    return nd;
}

static int run_conv(const conv_cfg *c, int transpose, int threads)
{
    int64_t kshape[2] = {c->kh, c->kw}, strides[2] = {c->sh, c->sw}, dil[2] = {c->dh, c->dw};
    int64_t pads[4] = {c->pt, c->pl, c->pb, c->pr}, opad[2] = {c->oph, c->opw};
    rt_attr attrs[6];
    attrs[0] = mk_ints("kernel_shape", kshape, 2);
    attrs[1] = mk_ints("strides", strides, 2);
    attrs[2] = mk_ints("dilations", dil, 2);
    attrs[3] = mk_ints("pads", pads, 4);
    attrs[4] = mk_ints("output_padding", opad, 2);
    attrs[5] = mk_int("group", c->g);
    if (!transpose) attrs[4] = attrs[5];
    rt_node nd = mk_node(transpose ? RT_OP_ConvTranspose : RT_OP_Conv, "conv", 3, attrs, transpose ? 6 : 5);
    nd.act = c->act ? RT_ACT_HARDSWISH : RT_ACT_NONE;
    nd.act_alpha = 1.f / 6.f;
    nd.act_beta = 0.5f;
    int64_t cg = c->c / c->g, mg = c->m / c->g;
    lector_tensor in[3], out;
    memset(in, 0, sizeof in);
    in[0] = (lector_tensor){LECTOR_DTYPE_FLOAT32, 4, {c->n, c->c, c->h, c->w}, NULL};
    if (transpose)
        in[1] = (lector_tensor){LECTOR_DTYPE_FLOAT32, 4, {c->c, mg, c->kh, c->kw}, NULL};
    else
        in[1] = (lector_tensor){LECTOR_DTYPE_FLOAT32, 4, {c->m, cg, c->kh, c->kw}, NULL};
    in[2] = (lector_tensor){LECTOR_DTYPE_FLOAT32, 1, {c->m}, NULL};
    in[0].data = rand_buf(lector_tensor_numel(&in[0]));
    in[1].data = rand_buf(lector_tensor_numel(&in[1]));
    in[2].data = rand_buf(c->m);
    int64_t oh, ow;
    if (transpose) {
        oh = c->sh * (c->h - 1) + c->oph + (c->kh - 1) * c->dh + 1 - c->pt - c->pb;
        ow = c->sw * (c->w - 1) + c->opw + (c->kw - 1) * c->dw + 1 - c->pl - c->pr;
    } else {
        oh = (c->h + c->pt + c->pb - (c->kh - 1) * c->dh - 1) / c->sh + 1;
        ow = (c->w + c->pl + c->pr - (c->kw - 1) * c->dw - 1) / c->sw + 1;
    }
    out = (lector_tensor){LECTOR_DTYPE_FLOAT32, 4, {c->n, c->m, oh, ow}, NULL};
    int64_t on = lector_tensor_numel(&out);
    out.data = lector__malloc(sizeof(float) * (size_t)on);
    double *ref = calloc((size_t)on, sizeof(double));
    const float *x = in[0].data, *w = in[1].data, *b = in[2].data;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t gi = 0; gi < c->g; gi++)
            for (int64_t ci = 0; ci < cg; ci++)
                for (int64_t mi = 0; mi < mg; mi++)
                    for (int64_t ky = 0; ky < c->kh; ky++)
                        for (int64_t kx = 0; kx < c->kw; kx++) {
                            int64_t C = gi * cg + ci, M = gi * mg + mi;
                            float wv = transpose ? w[((C * mg + mi) * c->kh + ky) * c->kw + kx]
                                                 : w[((M * cg + ci) * c->kh + ky) * c->kw + kx];
                            if (transpose) {
                                for (int64_t iy = 0; iy < c->h; iy++)
                                    for (int64_t ix = 0; ix < c->w; ix++) {
                                        int64_t oy = iy * c->sh - c->pt + ky * c->dh;
                                        int64_t ox = ix * c->sw - c->pl + kx * c->dw;
                                        if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                                        ref[((n * c->m + M) * oh + oy) * ow + ox] +=
                                            (double)wv * x[((n * c->c + C) * c->h + iy) * c->w + ix];
                                    }
                            } else {
                                for (int64_t oy = 0; oy < oh; oy++)
                                    for (int64_t ox = 0; ox < ow; ox++) {
                                        int64_t iy = oy * c->sh - c->pt + ky * c->dh;
                                        int64_t ix = ox * c->sw - c->pl + kx * c->dw;
                                        if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
                                        ref[((n * c->m + M) * oh + oy) * ow + ox] +=
                                            (double)wv * x[((n * c->c + C) * c->h + iy) * c->w + ix];
                                    }
                            }
                        }
    float *reff = lector__malloc(sizeof(float) * (size_t)on);
    for (int64_t i = 0; i < on; i++) reff[i] = (float)(ref[i] + b[(i / (oh * ow)) % c->m]);
    if (c->act) rt_apply_act(reff, on, RT_ACT_HARDSWISH, 1.f / 6.f, 0.5f);
    lector_error err;
    rt_kernel_ctx ctx = {threads, &err};
    lector_status st = rt_op_table[nd.op].ref(&nd, in, &out, &ctx);
    char what[256];
    snprintf(what, sizeof what,
             "%s n=%lld c=%lld %lldx%lld m=%lld k=%lldx%lld s=%lld,%lld d=%lld,%lld p=%lld,%lld,%lld,%lld g=%lld "
             "op=%lld,%lld",
             transpose ? "ConvTranspose" : "Conv", (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w,
             (long long)c->m, (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw, (long long)c->dh,
             (long long)c->dw, (long long)c->pt, (long long)c->pl, (long long)c->pb, (long long)c->pr, (long long)c->g,
             (long long)c->oph, (long long)c->opw);
    int ok = st == LECTOR_OK;
    if (!ok) printf("FAIL %s: %s\n", what, err.message);
    if (ok) ok = close_enough(out.data, reff, on, what);
    for (int i = 0; i < 3; i++) lector__free(in[i].data);
    lector__free(out.data);
    lector__free(reff);
    free(ref);
    return ok;
}

static int test_convs(int threads)
{
    /* larger shapes: several im2col chunks, edge slivers, both kinds of rows */
    conv_cfg big[] = {
        {1, 64, 40, 37, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
        {2, 64, 41, 29, 14, 3, 3, 2, 2, 1, 1, 1, 0, 1, 1, 2, 0, 0, 0},
        {1, 96, 36, 36, 24, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 0, 0, 0},
        {1, 128, 24, 40, 130, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        if (!run_conv(&big[i], 0, threads)) return 0;
    for (int it = 0; it < 300; it++) {
        conv_cfg c;
        memset(&c, 0, sizeof c);
        c.n = irand(1, 2);
        c.g = it % 4 == 0 ? irand(2, 6) : 1;
        int dw = it % 5 == 1;
        c.c = dw ? irand(1, 12) : c.g * irand(1, 5);
        if (dw) c.g = c.c;
        c.m = dw ? c.c : c.g * irand(1, 6);
        c.kh = irand(1, 5);
        c.kw = irand(1, 5);
        c.sh = irand(1, 3);
        c.sw = irand(1, 3);
        c.dh = it % 3 == 0 ? irand(1, 3) : 1;
        c.dw = it % 3 == 0 ? irand(1, 3) : 1;
        c.pt = irand(0, 2);
        c.pl = irand(0, 2);
        c.pb = irand(0, 2);
        c.pr = irand(0, 2);
        c.h = irand((c.kh - 1) * c.dh + 1, 20);
        c.w = irand((c.kw - 1) * c.dw + 1, 23);
        c.act = it % 2;
        if (!run_conv(&c, 0, threads)) return 0;
        /* ConvTranspose: pads must leave a positive output */
        c.c = c.g * irand(1, 4);
        c.m = c.g * irand(1, 4);
        c.h = irand(1, 9);
        c.w = irand(1, 9);
        c.oph = irand(0, c.sh - 1);
        c.opw = irand(0, c.sw - 1);
        c.pt = c.pb = c.pl = c.pr = 0;
        if (it % 2) {
            c.pt = irand(0, c.kh - 1);
            c.pl = irand(0, c.kw - 1);
        }
        if (!run_conv(&c, 1, threads)) return 0;
    }
    return 1;
}

/* CPU time of the process in ms: with one thread, unaffected by other load. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void bench_conv(int threads, int64_t c, int64_t h, int64_t m, int64_t k, int64_t s, int64_t g)
{
    int64_t kshape[2] = {k, k}, strides[2] = {s, s}, pads[4] = {k / 2, k / 2, k / 2, k / 2};
    rt_attr attrs[4];
    attrs[0] = mk_ints("kernel_shape", kshape, 2);
    attrs[1] = mk_ints("strides", strides, 2);
    attrs[2] = mk_ints("pads", pads, 4);
    attrs[3] = mk_int("group", g);
    rt_node nd = mk_node(RT_OP_Conv, "bench", 2, attrs, 4);
    int64_t oh = (h + 2 * (k / 2) - k) / s + 1;
    lector_tensor in[2] = {{LECTOR_DTYPE_FLOAT32, 4, {1, c, h, h}, NULL},
                           {LECTOR_DTYPE_FLOAT32, 4, {m, c / g, k, k}, NULL}};
    lector_tensor out = {LECTOR_DTYPE_FLOAT32, 4, {1, m, oh, oh}, NULL};
    in[0].data = rand_buf(lector_tensor_numel(&in[0]));
    in[1].data = rand_buf(lector_tensor_numel(&in[1]));
    out.data = rand_buf(lector_tensor_numel(&out));
    lector_error err;
    rt_kernel_ctx ctx = {threads, &err};
    double best = 1e9;
    for (int r = 0; r < 7; r++) {
        double t0 = cpu_ms();
        rt_ref_Conv(&nd, in, &out, &ctx);
        double dt = (cpu_ms() - t0) / threads;
        if (dt < best) best = dt;
    }
    double flops = 2.0 * (double)m * (double)(c / g) * (double)(k * k) * (double)(oh * oh);
    printf("conv c=%lld %lldx%lld m=%lld k=%lld s=%lld g=%lld: %.2f ms, %.1f GFLOP/s (threads=%d)\n", (long long)c,
           (long long)h, (long long)h, (long long)m, (long long)k, (long long)s, (long long)g, best, flops / best / 1e6,
           threads);
    lector__free(in[0].data);
    lector__free(in[1].data);
    lector__free(out.data);
}

/* MatMul with broadcast batch dims and 1-D operands, through the op table
 * (shape inference computes the output shape). */
static int test_matmul(int threads)
{
    struct {
        int an, bn;
        int64_t ad[4], bd[4];
    } cs[] = {
        {4, 3, {2, 1, 3, 4}, {5, 4, 6}}, {3, 3, {3, 7, 5}, {3, 5, 2}}, {3, 2, {4, 33, 17}, {17, 40}},
        {1, 3, {4}, {2, 4, 3}},          {3, 1, {2, 3, 4}, {4}},       {2, 4, {6, 8}, {2, 3, 8, 5}},
    };
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        rt_value va, vb, vo;
        memset(&va, 0, sizeof va);
        memset(&vb, 0, sizeof vb);
        memset(&vo, 0, sizeof vo);
        va.dtype = vb.dtype = LECTOR_DTYPE_FLOAT32;
        va.ndim = cs[c].an;
        vb.ndim = cs[c].bn;
        memcpy(va.dims, cs[c].ad, sizeof cs[c].ad);
        memcpy(vb.dims, cs[c].bd, sizeof cs[c].bd);
        rt_node nd = mk_node(RT_OP_MatMul, "mm", 2, NULL, 0);
        const rt_value *ins[2] = {&va, &vb};
        rt_value *outs[1] = {&vo};
        lector_error err;
        if (rt_infer_MatMul(&nd, ins, outs, &err) != LECTOR_OK) {
            printf("FAIL MatMul infer %zu: %s\n", c, err.message);
            return 0;
        }
        lector_tensor t[2] = {rt_value_tensor(&va), rt_value_tensor(&vb)}, o = rt_value_tensor(&vo);
        t[0].data = rand_buf(lector_tensor_numel(&t[0]));
        t[1].data = rand_buf(lector_tensor_numel(&t[1]));
        int64_t on = lector_tensor_numel(&o);
        o.data = lector__malloc(sizeof(float) * (size_t)on);
        float *want = lector__malloc(sizeof(float) * (size_t)on);
        /* naive: numpy's promotion (a 1-D A is one row [1, K], a 1-D B one
           column [K, 1]: the dims land after, or before, a padding 1), then
           broadcast batch dims */
        int an = LECTOR_MAX(va.ndim, 2), bn = LECTOR_MAX(vb.ndim, 2);
        int64_t ad[8] = {1, 1}, bd[8] = {1, 1};
        memcpy(ad + (an - va.ndim), va.dims, sizeof(int64_t) * (size_t)va.ndim);
        memcpy(bd, vb.dims, sizeof(int64_t) * (size_t)vb.ndim);
        int64_t M = ad[an - 2], K = ad[an - 1], N = bd[bn - 1];
        int rb = LECTOR_MAX(an, bn) - 2;
        int64_t nb = on / (M * N);
        for (int64_t b = 0; b < nb; b++) {
            int64_t rem = b, oa = 0, ob = 0, sa = M * K, sb = K * N;
            for (int i = rb - 1; i >= 0; i--) {
                int ia = i - (rb - (an - 2)), ib = i - (rb - (bn - 2));
                int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1, d = LECTOR_MAX(da, db);
                int64_t idx = rem % d;
                rem /= d;
                oa += (da == 1 ? 0 : idx) * sa;
                ob += (db == 1 ? 0 : idx) * sb;
                sa *= da;
                sb *= db;
            }
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double acc = 0;
                    for (int64_t k = 0; k < K; k++)
                        acc += (double)((float *)t[0].data)[oa + i * K + k] * ((float *)t[1].data)[ob + k * N + j];
                    want[b * M * N + i * N + j] = (float)acc;
                }
        }
        rt_kernel_ctx ctx = {threads, &err};
        int ok = rt_ref_MatMul(&nd, t, &o, &ctx) == LECTOR_OK && close_enough(o.data, want, on, "MatMul");
        lector__free(t[0].data);
        lector__free(t[1].data);
        lector__free(o.data);
        lector__free(want);
        if (!ok) {
            printf("FAIL MatMul case %zu\n", c);
            return 0;
        }
    }
    return 1;
}

/* Softmax: opset < 13 flattens to 2-D at `axis` (default 1), opset 13 uses
 * one axis (default -1); plus the op table and the fused activations. */
static int test_small(void)
{
    int ok = 1;
    float x[24], y[24], want[24];
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 11) * 0.3f - 1.f;
    for (int opset = 11; opset <= 13; opset += 2) {
        rt_attr a = mk_int("__opset", opset);
        rt_node nd = mk_node(RT_OP_Softmax, "sm", 1, &a, 1);
        lector_tensor in = {LECTOR_DTYPE_FLOAT32, 3, {2, 3, 4}, x}, out = {LECTOR_DTYPE_FLOAT32, 3, {2, 3, 4}, y};
        lector_error err;
        rt_kernel_ctx ctx = {1, &err};
        if (rt_ref_Softmax(&nd, &in, &out, &ctx) != LECTOR_OK) return 0;
        int len = opset < 13 ? 12 : 4;
        for (int r = 0; r < 24 / len; r++) {
            double mx = -1e30, sum = 0;
            for (int k = 0; k < len; k++) mx = fmax(mx, x[r * len + k]);
            for (int k = 0; k < len; k++) sum += exp(x[r * len + k] - mx);
            for (int k = 0; k < len; k++) want[r * len + k] = (float)(exp(x[r * len + k] - mx) / sum);
        }
        ok &= close_enough(y, want, 24, opset < 13 ? "Softmax opset 11" : "Softmax opset 13");
    }
    if (rt_op_find("Conv") != RT_OP_Conv || rt_op_find("Where") != RT_OP_Where || rt_op_find("NoSuchOp") != -1 ||
        rt_op_find(NULL) != -1) {
        printf("FAIL rt_op_find\n");
        ok = 0;
    }
    float v[5] = {-4.f, -1.f, 0.f, 0.5f, 4.f}, t[5];
    struct {
        rt_act act;
        float a, b;
        float want[5];
    } acts[] = {
        {RT_ACT_RELU, 0, 0, {0, 0, 0, 0.5f, 4}},
        {RT_ACT_HARDSIGMOID, 0.2f, 0.5f, {0, 0.3f, 0.5f, 0.6f, 1}},
        {RT_ACT_HARDSWISH, 1.f / 6.f, 0.5f, {-0.f, -1.f / 3.f, 0, 0.5f * (0.5f / 6.f + 0.5f), 4}},
        {RT_ACT_CLIP, 0.f, 6.f, {0, 0, 0, 0.5f, 4}},
        {RT_ACT_SIGMOID, 0, 0, {0.01798621f, 0.26894142f, 0.5f, 0.62245933f, 0.98201379f}},
        {RT_ACT_SWISH, 0, 0, {-0.07194484f, -0.26894142f, 0, 0.31122967f, 3.92805516f}},
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        memcpy(t, v, sizeof v);
        rt_apply_act(t, 5, acts[i].act, acts[i].a, acts[i].b);
        ok &= close_enough(t, acts[i].want, 5, "rt_apply_act");
    }
    return ok;
}

static void bench(int threads)
{
    bench_conv(threads, 96, 160, 24, 3, 1, 1);
    bench_conv(threads, 96, 40, 24, 3, 1, 1);
    bench_conv(threads, 32, 320, 32, 3, 2, 32);
    bench_conv(threads, 3, 640, 16, 3, 2, 1);
    bench_conv(threads, 48, 160, 48, 1, 1, 1);
    bench_conv(threads, 16, 320, 16, 3, 1, 16);
    bench_conv(threads, 192, 40, 192, 5, 1, 192);
    bench_conv(threads, 256, 20, 512, 3, 1, 1);
    int64_t M = 512, N = 512, K = 512;
    float *A = rand_buf(M * K), *B = rand_buf(K * N), *C = rand_buf(M * N);
    double ms = 1e9;
    for (int r = 0; r < 10; r++) {
        double t0 = cpu_ms();
        rt_gemm_f32(0, 0, M, N, K, 1.f, A, K, B, N, 0.f, C, N, threads);
        double dt = (cpu_ms() - t0) / threads;
        if (dt < ms) ms = dt;
    }
    printf("gemm 512^3: %.2f ms, %.1f GFLOP/s (threads=%d)\n", ms, 2.0 * M * N * K / ms / 1e6, threads);
    lector__free(A);
    lector__free(B);
    lector__free(C);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int ok = test_small();
    for (int threads = 1; threads <= 2 && ok; threads++) {
        ok = test_gemm(threads) && test_matmul(threads) && test_convs(threads);
    }
    if (argc > 1 && !strcmp(argv[1], "--bench")) bench(1); /* CPU time, one thread */
    printf(ok ? "ok\n" : "FAILED\n");
    return ok ? 0 : 1;
}
