/*
 * gemm.c - the single-precision GEMM every heavy reference kernel runs on
 * (Conv via im2col, ConvTranspose, MatMul, Gemm), and MatMul/Gemm.
 *
 * Classic three-level blocking: B is packed in NR-column slivers of KC rows
 * (L2-resident), A in MR-row slivers; an MR x NR register-blocked
 * micro-kernel (AVX-512 / AVX2 intrinsics, portable C otherwise) sums float
 * products in float over short runs and the runs in double. Threads split
 * the output into column (or row) blocks, one parallel region per call.
 * Edges are zero-padded in the packed copies, so every shape (tails, 1x1,
 * K=0) takes the same path.
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"
#include "util/testctl.h"

#define MR  6
#define NR  16
#define KC  256
#define NC  2048
#define MCB 1536 /* rows of A packed at once (multiple of MR) */

/*
 * Micro-kernel: C[rows x cols] (row stride ldc) += alpha * sum_k a[k][0..MR)
 * (x) b[k][0..NR), rows <= MR, cols <= NR. `b` is 64-byte aligned. One
 * version per vector width, picked once at run time (AVX-512, AVX2+FMA,
 * portable).
 */
typedef void (*ukernel_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, float alpha, int64_t rows,
                           int64_t cols);

/* Accuracy: products are summed in float over runs of KRUN steps and the
 * runs in double. The reference backend is the oracle of the others, and
 * deep networks (PP-OCR rec) amplify plain float summation noise (~sqrt(K)
 * ulps) to ~1e-4 on some output probabilities; this keeps the error at a
 * few ulps for any K at a fraction of the cost of double products. */
#define KRUN 8

/* C += alpha * acc for the valid part of a tile. */
static void store_tile(const double *acc, float *c, int64_t ldc, float alpha, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        float *cr = c + r * ldc;
        const double *ar = acc + r * NR;
        for (int64_t q = 0; q < cols; q++) cr[q] = (float)((double)cr[q] + (double)alpha * ar[q]);
    }
}

/* Portable version. */
static void ukernel_generic(int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,
                            int64_t ldc, float alpha, int64_t rows, int64_t cols)
{
    double acc[MR * NR] = {0};
    for (int64_t k0 = 0; k0 < kc; k0 += KRUN) {
        int64_t k1 = LECTOR_MIN(kc, k0 + KRUN);
        for (int r = 0; r < MR; r++) {
            float f[NR] = {0};
            for (int64_t k = k0; k < k1; k++) {
                float av = a[k * MR + r];
                for (int q = 0; q < NR; q++) f[q] += av * b[k * NR + q];
            }
            for (int q = 0; q < NR; q++) acc[r * NR + q] += f[q];
        }
    }
    store_tile(acc, c, ldc, alpha, rows, cols);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define RT_X86 1

/* AVX-512: all six rows at once, 6 float + 12 double accumulators. */
#define FOLD512(f, dlo, dhi)                                              \
    dlo = _mm512_add_pd(dlo, _mm512_cvtps_pd(_mm512_castps512_ps256(f))); \
    dhi = _mm512_add_pd(dhi, _mm512_cvtps_pd(_mm512_castps512_ps256(_mm512_shuffle_f32x4(f, f, 0xEE))));

__attribute__((target("avx512f"))) static void ukernel_avx512(int64_t kc, const float *restrict a,
                                                              const float *restrict b, float *restrict c, int64_t ldc,
                                                              float alpha, int64_t rows, int64_t cols)
{
    __m512d d00 = _mm512_setzero_pd(), d01 = d00, d10 = d00, d11 = d00, d20 = d00, d21 = d00;
    __m512d d30 = d00, d31 = d00, d40 = d00, d41 = d00, d50 = d00, d51 = d00;
    for (int64_t k0 = 0; k0 < kc; k0 += KRUN) {
        int64_t k1 = LECTOR_MIN(kc, k0 + KRUN);
        __m512 f0 = _mm512_setzero_ps(), f1 = f0, f2 = f0, f3 = f0, f4 = f0, f5 = f0;
        for (int64_t k = k0; k < k1; k++) {
            __m512 bv = _mm512_load_ps(b + k * NR);
            const float *ak = a + k * MR;
            f0 = _mm512_fmadd_ps(_mm512_set1_ps(ak[0]), bv, f0);
            f1 = _mm512_fmadd_ps(_mm512_set1_ps(ak[1]), bv, f1);
            f2 = _mm512_fmadd_ps(_mm512_set1_ps(ak[2]), bv, f2);
            f3 = _mm512_fmadd_ps(_mm512_set1_ps(ak[3]), bv, f3);
            f4 = _mm512_fmadd_ps(_mm512_set1_ps(ak[4]), bv, f4);
            f5 = _mm512_fmadd_ps(_mm512_set1_ps(ak[5]), bv, f5);
        }
        FOLD512(f0, d00, d01)
        FOLD512(f1, d10, d11)
        FOLD512(f2, d20, d21)
        FOLD512(f3, d30, d31)
        FOLD512(f4, d40, d41)
        FOLD512(f5, d50, d51)
    }
    /* once per tile, after the k loop: the accumulators may go through memory here */
    const __m512d lo[MR] = {d00, d10, d20, d30, d40, d50}, hi[MR] = {d01, d11, d21, d31, d41, d51};
    double acc[MR * NR];
    for (int r = 0; r < MR; r++) {
        _mm512_storeu_pd(acc + r * NR, lo[r]);
        _mm512_storeu_pd(acc + r * NR + 8, hi[r]);
    }
    store_tile(acc, c, ldc, alpha, rows, cols);
}

/* AVX2: two rows per pass, 4 float + 8 double ymm accumulators. */
#define FOLD256(f, dlo, dhi)                                              \
    dlo = _mm256_add_pd(dlo, _mm256_cvtps_pd(_mm256_castps256_ps128(f))); \
    dhi = _mm256_add_pd(dhi, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));

__attribute__((target("avx2,fma"))) static void ukernel_avx2(int64_t kc, const float *restrict a,
                                                             const float *restrict b, float *restrict c, int64_t ldc,
                                                             float alpha, int64_t rows, int64_t cols)
{
    double acc[MR * NR];
    for (int r0 = 0; r0 < rows; r0 += 2) {
        __m256d z = _mm256_setzero_pd();
        __m256d d0a = z, d0b = z, d0c = z, d0d = z, d1a = z, d1b = z, d1c = z, d1d = z;
        for (int64_t k0 = 0; k0 < kc; k0 += KRUN) {
            int64_t k1 = LECTOR_MIN(kc, k0 + KRUN);
            __m256 f00 = _mm256_setzero_ps(), f01 = f00, f10 = f00, f11 = f00;
            for (int64_t k = k0; k < k1; k++) {
                __m256 b0 = _mm256_load_ps(b + k * NR), b1 = _mm256_load_ps(b + k * NR + 8);
                __m256 a0 = _mm256_broadcast_ss(a + k * MR + r0);
                __m256 a1 = _mm256_broadcast_ss(a + k * MR + r0 + 1);
                f00 = _mm256_fmadd_ps(a0, b0, f00);
                f01 = _mm256_fmadd_ps(a0, b1, f01);
                f10 = _mm256_fmadd_ps(a1, b0, f10);
                f11 = _mm256_fmadd_ps(a1, b1, f11);
            }
            FOLD256(f00, d0a, d0b)
            FOLD256(f01, d0c, d0d)
            FOLD256(f10, d1a, d1b)
            FOLD256(f11, d1c, d1d)
        }
        double *r0p = acc + r0 * NR, *r1p = acc + (r0 + 1) * NR;
        _mm256_storeu_pd(r0p, d0a);
        _mm256_storeu_pd(r0p + 4, d0b);
        _mm256_storeu_pd(r0p + 8, d0c);
        _mm256_storeu_pd(r0p + 12, d0d);
        _mm256_storeu_pd(r1p, d1a);
        _mm256_storeu_pd(r1p + 4, d1b);
        _mm256_storeu_pd(r1p + 8, d1c);
        _mm256_storeu_pd(r1p + 12, d1d);
    }
    store_tile(acc, c, ldc, alpha, rows, cols);
}
#endif

/* LECTOR_GEMM_KERNEL=avx2|generic forces a narrower kernel (tests). */
static ukernel_fn pick_ukernel(void)
{
    const char *force = lector__tc_str(LECTOR__TC_GEMM_KERNEL);
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

static void pack_a(int transa, const float *A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float *Ap,
                   int64_t s)
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

static void pack_b(int transb, const float *B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float *Bp,
                   int64_t t)
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

static ukernel_fn get_ukernel(void)
{
    static ukernel_fn uk_cached;
    ukernel_fn uk = __atomic_load_n(&uk_cached, __ATOMIC_ACQUIRE);
    if (!uk) {
        uk = pick_ukernel();
        __atomic_store_n(&uk_cached, uk, __ATOMIC_RELEASE);
    }
    return uk;
}

/* Single-threaded blocked GEMM. Apre / Bpre: A / B already packed as
 * rt_gemm_pack_a() / rt_gemm_f32_packed() describe (then A, lda / B, ldb are
 * unused). Returns -1 on allocation failure. */
static int gemm_core(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *Apre, const float *B, int64_t ldb, const float *Bpre, float beta, float *C,
                     int64_t ldc)
{
    if (M <= 0 || N <= 0) return 0;
    if (beta != 1.f)
        for (int64_t i = 0; i < M; i++) {
            float *c = C + i * ldc;
            if (beta == 0.f)
                memset(c, 0, sizeof(float) * (size_t)N);
            else
                for (int64_t j = 0; j < N; j++) c[j] *= beta;
        }
    if (K <= 0 || alpha == 0.f) return 0;
    ukernel_fn uk = get_ukernel();
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
            if (!Bpre)
                for (int64_t t = 0; t < nbs; t++) pack_b(transb, B, ldb, p0, kc, j0, nc, Bp, t);
            for (int64_t i0 = 0; i0 < M; i0 += MCB) {
                int64_t mc = LECTOR_MIN(MCB, M - i0), mbs = (mc + MR - 1) / MR;
                if (!Apre)
                    for (int64_t s = 0; s < mbs; s++) pack_a(transa, A, lda, i0, mc, p0, kc, Ap, s);
                for (int64_t jt = 0; jt < nbs; jt++) {
                    const float *bs = Bpre ? Bpre + (j0 / NR + jt) * K * NR + p0 * NR : Bp + jt * kc * NR;
                    int64_t cols = LECTOR_MIN(NR, nc - jt * NR);
                    for (int64_t is = 0; is < mbs; is++) {
                        const float *as = Apre ? Apre + (i0 / MR + is) * K * MR + p0 * MR : Ap + is * kc * MR;
                        int64_t rows = LECTOR_MIN(MR, mc - is * MR);
                        uk(kc, as, bs, C + (i0 + is * MR) * ldc + j0 + jt * NR, ldc, alpha, rows, cols);
                    }
                }
            }
        }
    }
    lector__free(Ap);
    lector__free(Bp);
    return 0;
}

/* Multi-threaded GEMM: one parallel region; each thread runs gemm_core on
 * its own block of columns (NR multiples) or, when there are too few
 * columns, of rows (MR multiples). No barrier inside: robust when the
 * machine is oversubscribed. */
static int gemm_par(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                    const float *Apre, const float *B, int64_t ldb, const float *Bpre, float beta, float *C,
                    int64_t ldc, int threads)
{
    if (M <= 0 || N <= 0) return 0;
    int64_t nbs = (N + NR - 1) / NR, mbs = (M + MR - 1) / MR;
    double work = (double)M * (double)N * (double)(K > 0 ? K : 1);
    if (threads <= 1 || work < 262144.0 || (nbs < 2 && mbs < 2))
        return gemm_core(transa, transb, M, N, K, alpha, A, lda, Apre, B, ldb, Bpre, beta, C, ldc);
    int by_cols = nbs >= 2 * (int64_t)threads || nbs >= mbs;
    int64_t parts = by_cols ? nbs : mbs;
    int nt = (int)LECTOR_MIN((int64_t)threads, parts);
    int fail = 0;
#pragma omp parallel num_threads(nt)
    {
        int id = omp_get_thread_num(), n = omp_get_num_threads();
        int64_t s0 = parts * id / n, s1 = parts * (id + 1) / n;
        int rc = 0;
        if (s1 > s0) {
            if (by_cols) {
                int64_t j0 = s0 * NR, j1 = LECTOR_MIN(N, s1 * NR);
                const float *b = B ? (transb ? B + j0 * ldb : B + j0) : NULL;
                rc = gemm_core(transa, transb, M, j1 - j0, K, alpha, A, lda, Apre, b, ldb,
                               Bpre ? Bpre + s0 * K * NR : NULL, beta, C + j0, ldc);
            } else {
                int64_t i0 = s0 * MR, i1 = LECTOR_MIN(M, s1 * MR);
                const float *a = A ? (transa ? A + i0 : A + i0 * lda) : NULL;
                rc = gemm_core(transa, transb, i1 - i0, N, K, alpha, a, lda, Apre ? Apre + s0 * K * MR : NULL, B, ldb,
                               Bpre, beta, C + i0 * ldc, ldc);
            }
        }
        if (rc) __atomic_store_n(&fail, 1, __ATOMIC_RELAXED);
    }
    return fail ? -1 : 0;
}

int rt_gemm_f32(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                const float *B, int64_t ldb, float beta, float *C, int64_t ldc, int threads)
{
    return gemm_par(transa, transb, M, N, K, alpha, A, lda, NULL, B, ldb, NULL, beta, C, ldc, threads);
}

int rt_gemm_f32_packed(int transa, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                       const float *Ap, const float *Bp, float beta, float *C, int64_t ldc, int threads)
{
    return gemm_par(transa, 0, M, N, K, alpha, A, lda, Ap, NULL, 0, Bp, beta, C, ldc, threads);
}

int rt_gemm_f32_ex(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *Ap, const float *B, int64_t ldb, const float *Bp, float beta, float *C, int64_t ldc,
                   int threads)
{
    return gemm_par(transa, transb, M, N, K, alpha, A, lda, Ap, B, ldb, Bp, beta, C, ldc, threads);
}

size_t rt_gemm_pack_a_size(int64_t M, int64_t K) { return (size_t)((M + MR - 1) / MR * MR * (K > 0 ? K : 1)); }

void rt_gemm_pack_a(int transa, int64_t M, int64_t K, const float *A, int64_t lda, float *Ap)
{
    int64_t mbs = (M + MR - 1) / MR;
    for (int64_t s = 0; s < mbs; s++) pack_a(transa, A, lda, 0, M, 0, K, Ap, s);
}

/* ---- MatMul ------------------------------------------------------------- */

lector_status rt_ref_MatMul(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
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
        if (rt_gemm_f32(0, 0, na * M, N, K, 1.f, A, K, B, N, 0.f, C, N, ctx->threads)) return rt_ref_oom(nd, ctx);
    } else {
        /* batches in parallel, each GEMM on one thread (one parallel region);
         * a single batch gets the threaded GEMM */
        int nt = (int)LECTOR_MIN((int64_t)ctx->threads, nbatch);
        int inner = nbatch == 1 ? ctx->threads : 1, fail = 0;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t bi = 0; bi < nbatch; bi++) {
            int64_t rem = bi, oa = 0, ob = 0;
            for (int i = r - 1; i >= 0; i--) {
                int64_t idx = rem % bd[i];
                rem /= bd[i];
                oa += idx * sa[i];
                ob += idx * sb[i];
            }
            if (rt_gemm_f32(0, 0, M, N, K, 1.f, A + oa, K, B + ob, N, 0.f, C + bi * M * N, N, inner))
                __atomic_store_n(&fail, 1, __ATOMIC_RELAXED);
        }
        if (fail) return rt_ref_oom(nd, ctx);
    }
    rt_apply_act(C, total, nd->act, nd->act_alpha, nd->act_beta);
    return st;
}

/* ---- Gemm --------------------------------------------------------------- */

lector_status rt_ref_Gemm(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
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
    if (rt_gemm_f32(ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1], gb, Y, N, ctx->threads))
        return rt_ref_oom(nd, ctx);
    rt_apply_act(Y, M * N, nd->act, nd->act_alpha, nd->act_beta);
    return LECTOR_OK;
}
