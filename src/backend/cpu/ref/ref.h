/*
 * ref.h - helpers shared by the reference CPU kernels (internal).
 */
#ifndef LECTOR_REF_H
#define LECTOR_REF_H

#include "rt/infer_util.h"
#include "rt/ops.h"
#include "util/util.h"

/* LECTOR_ERR_DTYPE naming the node and the type. */
lector_status rt_ref_bad_dtype(const rt_node *n, const rt_kernel_ctx *ctx, lector_dtype dt);
lector_status rt_ref_oom(const rt_node *n, const rt_kernel_ctx *ctx);

/* Broadcast iteration of up to RT_BC_MAX inputs against an output shape:
 * dimensions are merged where possible; the output is walked in rows of
 * `inner` elements, input k advancing by `istep[k]` (0 or 1) in a row. */
#define RT_BC_MAX 4
typedef struct rt_bcast {
    int ndim; /* merged rank (>= 1) */
    int64_t dims[LECTOR_MAX_DIMS];
    int64_t strides[RT_BC_MAX][LECTOR_MAX_DIMS]; /* element strides, 0 = broadcast */
    int n;
    int64_t inner;            /* dims[ndim-1] */
    int64_t rows;             /* product of the other dims */
    int64_t istep[RT_BC_MAX]; /* strides[k][ndim-1] */
} rt_bcast;

void rt_bcast_init(rt_bcast *b, const lector_tensor *out, const lector_tensor *const *ins, int n);
/* Offsets (elements) of each input at the start of output row `row`. */
void rt_bcast_row(const rt_bcast *b, int64_t row, int64_t *off);

/* Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, op = transpose
 * when trans* != 0 (A is then stored [K,M] with row stride lda, ...).
 * Multi-threaded with `threads` OpenMP threads. Returns -1 on allocation
 * failure (C untouched or partially written), 0 on success. */
int rt_gemm_f32(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                const float *B, int64_t ldb, float beta, float *C, int64_t ldc, int threads);

/* Same with B (and optionally A) given pre-packed. B: column j, row k at
 * Bp[(j / RT_GEMM_NR) * K * RT_GEMM_NR + k * RT_GEMM_NR + j % RT_GEMM_NR], the
 * last sliver zero-padded, 64-byte aligned (lector__aligned_alloc); lets Conv
 * write im2col straight into the layout the micro-kernel reads. Ap: NULL
 * (A/lda/transa used) or the output of rt_gemm_pack_a (weights packed once). */
#define RT_GEMM_NR 16
int rt_gemm_f32_packed(int transa, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                       const float *Ap, const float *Bp, float beta, float *C, int64_t ldc, int threads);
/* General form: A and/or B may be given pre-packed (Ap / Bp non-NULL, then
 * A, lda / B, ldb are ignored). threads = 1 runs on the calling thread only
 * (for callers that parallelise at a coarser grain). */
int rt_gemm_f32_ex(int transa, int transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *Ap, const float *B, int64_t ldb, const float *Bp, float beta, float *C, int64_t ldc,
                   int threads);
/* Floats needed by rt_gemm_pack_a for an M x K matrix. */
size_t rt_gemm_pack_a_size(int64_t M, int64_t K);
void rt_gemm_pack_a(int transa, int64_t M, int64_t K, const float *A, int64_t lda, float *Ap);

#endif
