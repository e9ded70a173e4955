/*
 * gemm.c - the single-precision GEMM every heavy reference kernel runs on
 * (Conv via im2col, ConvTranspose, MatMul, Gemm), and MatMul/Gemm.
 *
 * Classic three-level blocking: B is packed in NR-column slivers of KC rows
 * (L2-resident), A in MR-row slivers; an MR x NR register-blocked
 * micro-kernel written with vector extensions accumulates in float. Tiles of
 * the output are spread over OpenMP threads. Edges are zero-padded in the
 * packed copies, so every shape (tails, 1x1, K=0) takes the same path.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

#define MR 6
#define NR 16
#define KC 256
#define NC 2048
#define MCB 1536 /* rows of A packed at once (multiple of MR) */

typedef float v16 __attribute__((vector_size(64), aligned(64)));
typedef float v8 __attribute__((vector_size(32), aligned(32)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));
typedef float v8u __attribute__((vector_size(32), aligned(4)));

/*
 * Micro-kernel: C[MR x NR] (row stride ldc) += alpha * sum_k a[k][0..MR) (x)
 * b[k][0..NR) for a full tile; for an edge tile (rows < MR or cols < NR) the
 * sum goes through a local buffer. `b` is 64-byte aligned. One version per
 * vector width, picked once at run time (AVX-512, AVX2+FMA, portable).
 */
typedef void (*ukernel_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                           float alpha, int64_t rows, int64_t cols);

static void store_tile(const float *acc, float *c, int64_t ldc, float alpha, int64_t rows,
                       int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t q = 0; q < cols; q++) c[r * ldc + q] += alpha * acc[r * NR + q];
}

#define UK_BODY16(ATTR)                                                                        \
    v16 c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0}, c4 = {0}, c5 = {0};                            \
    for (int64_t k = 0; k < kc; k++) {                                                         \
        v16 bv = *(const v16 *)(b + k * NR);                                                   \
        const float *ak = a + k * MR;                                                          \
        c0 += ak[0] * bv;                                                                      \
        c1 += ak[1] * bv;                                                                      \
        c2 += ak[2] * bv;                                                                      \
        c3 += ak[3] * bv;                                                                      \
        c4 += ak[4] * bv;                                                                      \
        c5 += ak[5] * bv;                                                                      \
    }                                                                                          \
    if (rows == MR && cols == NR) {                                                            \
        v16 *acc[MR] = {&c0, &c1, &c2, &c3, &c4, &c5};                                         \
        for (int r = 0; r < MR; r++) {                                                         \
            v16u *cr = (v16u *)(c + r * ldc);                                                  \
            *cr += alpha * *acc[r];                                                            \
        }                                                                                      \
        return;                                                                                \
    }                                                                                          \
    float buf[MR * NR] __attribute__((aligned(64)));                                           \
    memcpy(buf + 0 * NR, &c0, sizeof c0);                                                      \
    memcpy(buf + 1 * NR, &c1, sizeof c1);                                                      \
    memcpy(buf + 2 * NR, &c2, sizeof c2);                                                      \
    memcpy(buf + 3 * NR, &c3, sizeof c3);                                                      \
    memcpy(buf + 4 * NR, &c4, sizeof c4);                                                      \
    memcpy(buf + 5 * NR, &c5, sizeof c5);                                                      \
    store_tile(buf, c, ldc, alpha, rows, cols);

/* FMA contraction (gcc turns it off in ISO C mode; clang contracts
 * within an expression by default). */
#if defined(__clang__)
#define RT_CONTRACT
#else
#define RT_CONTRACT optimize("fp-contract=fast")
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define RT_X86 1
__attribute__((target("avx512f,fma"), RT_CONTRACT))
static void ukernel_avx512(int64_t kc, const float *restrict a, const float *restrict b,
                           float *restrict c, int64_t ldc, float alpha, int64_t rows, int64_t cols)
{
    UK_BODY16()
}

__attribute__((target("avx2,fma"), RT_CONTRACT))
static void ukernel_avx2(int64_t kc, const float *restrict a, const float *restrict b,
                         float *restrict c, int64_t ldc, float alpha, int64_t rows, int64_t cols)
{
    /* 12 ymm accumulators: two 8-wide halves per row */
    v8 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0};
    v8 c30 = {0}, c31 = {0}, c40 = {0}, c41 = {0}, c50 = {0}, c51 = {0};
    for (int64_t k = 0; k < kc; k++) {
        v8 b0 = *(const v8 *)(b + k * NR), b1 = *(const v8 *)(b + k * NR + 8);
        const float *ak = a + k * MR;
        float a0 = ak[0], a1 = ak[1], a2 = ak[2], a3 = ak[3], a4 = ak[4], a5 = ak[5];
        c00 += a0 * b0; c01 += a0 * b1;
        c10 += a1 * b0; c11 += a1 * b1;
        c20 += a2 * b0; c21 += a2 * b1;
        c30 += a3 * b0; c31 += a3 * b1;
        c40 += a4 * b0; c41 += a4 * b1;
        c50 += a5 * b0; c51 += a5 * b1;
    }
    v8 *acc[2 * MR] = {&c00, &c01, &c10, &c11, &c20, &c21, &c30, &c31, &c40, &c41, &c50, &c51};
    if (rows == MR && cols == NR) {
        for (int r = 0; r < MR; r++) {
            v8u *cr = (v8u *)(c + r * ldc);
            cr[0] += alpha * *acc[2 * r];
            cr[1] += alpha * *acc[2 * r + 1];
        }
        return;
    }
    float buf[MR * NR] __attribute__((aligned(64)));
    for (int i = 0; i < 2 * MR; i++) memcpy(buf + i * 8, acc[i], sizeof(v8));
    store_tile(buf, c, ldc, alpha, rows, cols);
}
#endif

/* Portable: the compiler lowers the 16-wide vectors to the target's width. */
static void ukernel_generic(int64_t kc, const float *restrict a, const float *restrict b,
                            float *restrict c, int64_t ldc, float alpha, int64_t rows, int64_t cols)
{
    UK_BODY16()
}

/* LECTOR_GEMM_KERNEL=avx2|generic forces a narrower kernel (tests). */
static ukernel_fn pick_ukernel(void)
{
    const char *force = getenv("LECTOR_GEMM_KERNEL");
    if (force && !strcmp(force, "generic")) return ukernel_generic;
#ifdef RT_X86
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (force && !strcmp(force, "avx2") && avx2) return ukernel_avx2;
    if (__builtin_cpu_supports("avx512f")) return ukernel_avx512;
    if (avx2) return ukernel_avx2;
#endif
    return ukernel_generic;
}

static void pack_a(int transa, const float *A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, float *Ap, int64_t s)
{
    float *dst = Ap + s * kc * MR;
    for (int r = 0; r < MR; r++) {
        int64_t i = i0 + s * MR + r;
        if (s * MR + r >= mc) {
            for (int64_t k = 0; k < kc; k++) dst[k * MR + r] = 0.f;
        } else if (transa) {
            for (int64_t k = 0; k < kc; k++) dst[k * MR + r] = A[(p0 + k) * lda + i];
        } else {
            const float *src = A + i * lda + p0;
            for (int64_t k = 0; k < kc; k++) dst[k * MR + r] = src[k];
        }
    }
}

static void pack_b(int transb, const float *B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
                   int64_t nc, float *Bp, int64_t t)
{
    float *dst = Bp + t * kc * NR;
    int64_t jb = j0 + t * NR, w = LECTOR_MIN(NR, nc - t * NR);
    for (int64_t k = 0; k < kc; k++) {
        float *d = dst + k * NR;
        if (transb) {
            for (int64_t c = 0; c < w; c++) d[c] = B[(jb + c) * ldb + p0 + k];
        } else {
            const float *src = B + (p0 + k) * ldb + jb;
            for (int64_t c = 0; c < w; c++) d[c] = src[c];
        }
        for (int64_t c = w; c < NR; c++) d[c] = 0.f;
    }
}

/* Apre / Bpre: A / B already packed as rt_gemm_pack_a() / rt_gemm_f32_packed()
 * describe (then A, lda / B, ldb are unused). */
static int gemm_core(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *Apre, const float *B, int64_t ldb,
                     const float *Bpre, float beta, float *C, int64_t ldc, int threads)
{
    if (M <= 0 || N <= 0) return 0;
    if (threads < 1) threads = 1;
    if (beta != 1.f) {
#pragma omp parallel for num_threads(threads) if (M * N > 65536)
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * ldc;
            if (beta == 0.f) memset(c, 0, sizeof(float) * (size_t)N);
            else
                for (int64_t j = 0; j < N; j++) c[j] *= beta;
        }
    }
    if (K <= 0 || alpha == 0.f) return 0;
    static ukernel_fn uk_cached;
    ukernel_fn uk = __atomic_load_n(&uk_cached, __ATOMIC_ACQUIRE);
    if (!uk) {
        uk = pick_ukernel();
        __atomic_store_n(&uk_cached, uk, __ATOMIC_RELEASE);
    }
    int64_t mcb = LECTOR_MIN(M, MCB), ncb = LECTOR_MIN(N, NC), kcb = LECTOR_MIN(K, KC);
    int64_t ma = (mcb + MR - 1) / MR * MR, nb = (ncb + NR - 1) / NR * NR;
    float *Ap = Apre ? NULL : lector__aligned_alloc(sizeof(float) * (size_t)(ma * kcb));
    float *Bp = Bpre ? NULL : lector__aligned_alloc(sizeof(float) * (size_t)(nb * kcb));
    if ((!Ap && !Apre) || (!Bp && !Bpre)) {
        lector__free(Ap);
        lector__free(Bp);
        return -1;
    }
    for (int64_t j0 = 0; j0 < N; j0 += NC) {
        int64_t nc = LECTOR_MIN(NC, N - j0), nbs = (nc + NR - 1) / NR;
        for (int64_t p0 = 0; p0 < K; p0 += KC) {
            int64_t kc = LECTOR_MIN(KC, K - p0);
            if (!Bpre) {
#pragma omp parallel for num_threads(threads) if (nbs > 1 && kc * nc > 16384)
                for (int64_t t = 0; t < nbs; t++) pack_b(transb, B, ldb, p0, kc, j0, nc, Bp, t);
            }
            for (int64_t i0 = 0; i0 < M; i0 += MCB) {
                int64_t mc = LECTOR_MIN(MCB, M - i0), mbs = (mc + MR - 1) / MR;
                if (!Apre) {
#pragma omp parallel for num_threads(threads) if (mbs > 1 && kc * mc > 16384)
                    for (int64_t s = 0; s < mbs; s++) pack_a(transa, A, lda, i0, mc, p0, kc, Ap, s);
                }
                int64_t tiles = nbs * mbs;
#pragma omp parallel for num_threads(threads) schedule(static) if (tiles > 1 && mc * nc * kc > 32768)
                for (int64_t t = 0; t < tiles; t++) {
                    int64_t jt = t / mbs, is = t % mbs;
                    int64_t rows = LECTOR_MIN(MR, mc - is * MR), cols = LECTOR_MIN(NR, nc - jt * NR);
                    const float *bs = Bpre ? Bpre + (j0 / NR + jt) * K * NR + p0 * NR
                                           : Bp + jt * kc * NR;
                    const float *as = Apre ? Apre + (i0 / MR + is) * K * MR + p0 * MR
                                           : Ap + is * kc * MR;
                    uk(kc, as, bs,
                       C + (i0 + is * MR) * ldc + j0 + jt * NR, ldc, alpha, rows, cols);
                }
            }
        }
    }
    lector__free(Ap);
    lector__free(Bp);
    return 0;
}

int rt_gemm_f32(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha,
                const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                int64_t ldc, int threads)
{
    return gemm_core(transa, transb, M, N, K, alpha, A, lda, NULL, B, ldb, NULL, beta, C, ldc,
                     threads);
}

int rt_gemm_f32_packed(int transa, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *Ap, const float *Bp, float beta, float *C,
                       int64_t ldc, int threads)
{
    return gemm_core(transa, 0, M, N, K, alpha, A, lda, Ap, NULL, 0, Bp, beta, C, ldc, threads);
}

size_t rt_gemm_pack_a_size(int64_t M, int64_t K)
{
    return (size_t)((M + MR - 1) / MR * MR * (K > 0 ? K : 1));
}

void rt_gemm_pack_a(int transa, int64_t M, int64_t K, const float *A, int64_t lda, float *Ap)
{
    int64_t mbs = (M + MR - 1) / MR;
    for (int64_t s = 0; s < mbs; s++) pack_a(transa, A, lda, 0, M, 0, K, Ap, s);
}

/* ---- MatMul ------------------------------------------------------------- */

lector_status rt_ref_MatMul(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                            const rt_kernel_ctx *ctx)
{
    const lector_tensor *a = &in[0], *b = &in[1];
    if (a->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, a->dtype);
    if (b->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, b->dtype);
    int an = a->ndim, bn = b->ndim;
    int64_t M = an >= 2 ? a->dims[an - 2] : 1, K = a->dims[an - 1];
    int64_t N = bn >= 2 ? b->dims[bn - 1] : 1;
    const float *A = a->data, *B = b->data;
    float *C = out->data;
    int64_t total = lector_tensor_numel(out);
    if (total == 0) return LECTOR_OK;
    /* batch dims: broadcast of a[:-2] and b[:-2] */
    int ra = an > 2 ? an - 2 : 0, rb = bn > 2 ? bn - 2 : 0, r = LECTOR_MAX(ra, rb);
    int64_t bd[LECTOR_MAX_DIMS], sa[LECTOR_MAX_DIMS], sb[LECTOR_MAX_DIMS];
    int64_t nbatch = 1, stra = M * K, strb = K * N;
    for (int i = r - 1; i >= 0; i--) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        bd[i] = LECTOR_MAX(da, db);
        if (da == 0 || db == 0) bd[i] = 0;
        sa[i] = da == 1 ? 0 : stra;
        sb[i] = db == 1 ? 0 : strb;
        stra *= da;
        strb *= db;
        nbatch *= bd[i];
    }
    lector_status st = LECTOR_OK;
    if (rb == 0) {
        /* B shared by every batch: one GEMM with M * batch rows (A is contiguous) */
        int64_t na = 1;
        for (int i = 0; i < ra; i++) na *= a->dims[i];
        if (rt_gemm_f32(0, 0, na * M, N, K, 1.f, A, K, B, N, 0.f, C, N, ctx->threads))
            return rt_ref_oom(nd, ctx);
    } else {
        for (int64_t bi = 0; bi < nbatch; bi++) {
            int64_t rem = bi, oa = 0, ob = 0;
            for (int i = r - 1; i >= 0; i--) {
                int64_t idx = rem % bd[i];
                rem /= bd[i];
                oa += idx * sa[i];
                ob += idx * sb[i];
            }
            if (rt_gemm_f32(0, 0, M, N, K, 1.f, A + oa, K, B + ob, N, 0.f, C + bi * M * N, N,
                            ctx->threads))
                return rt_ref_oom(nd, ctx);
        }
    }
    rt_apply_act(C, total, nd->act, nd->act_alpha, nd->act_beta);
    return st;
}

/* ---- Gemm --------------------------------------------------------------- */

lector_status rt_ref_Gemm(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                          const rt_kernel_ctx *ctx)
{
    const lector_tensor *a = &in[0], *b = &in[1];
    if (a->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, a->dtype);
    if (b->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, b->dtype);
    int ta = (int)rt_attr_int(nd, "transA", 0), tb = (int)rt_attr_int(nd, "transB", 0);
    float alpha = rt_attr_float(nd, "alpha", 1.f), beta = rt_attr_float(nd, "beta", 1.f);
    int64_t M = out->dims[0], N = out->dims[1], K = ta ? a->dims[0] : a->dims[1];
    float *Y = out->data;
    const lector_tensor *c = nd->n_in > 2 && in[2].data ? &in[2] : NULL;
    if (c && c->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, c->dtype);
    float gb = 0.f;
    if (c && beta != 0.f) {
        int64_t rs = 0, cs = 0;
        const float *cd = c->data;
        if (c->ndim == 2) {
            rs = c->dims[0] == 1 ? 0 : c->dims[1];
            cs = c->dims[1] == 1 ? 0 : 1;
        } else if (c->ndim == 1) {
            cs = c->dims[0] == 1 ? 0 : 1;
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) Y[i * N + j] = beta * cd[i * rs + j * cs];
        gb = 1.f;
    }
    if (rt_gemm_f32(ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1], gb, Y, N,
                    ctx->threads))
        return rt_ref_oom(nd, ctx);
    rt_apply_act(Y, M * N, nd->act, nd->act_alpha, nd->act_beta);
    return LECTOR_OK;
}
