/*
 * cuda_matmul.c - MatMul: cuBLAS's strided batched product, fp32 or fp16
 * operands (fp32 accumulation), its constant operand converted once.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* The half-precision product: row-major C = A B is column-major C^T = B^T A^T. */
static cu_gemm matmul_half(const cu_step *s)
{
    return (cu_gemm){.ta = CUBLAS_OP_N,
                     .tb = CUBLAS_OP_N,
                     .m = s->nn,
                     .n = s->m,
                     .k = s->k,
                     .batch = s->batch,
                     .sa = s->sb,
                     .sb = s->sa,
                     .sd = s->sc,
                     .d_half = s->c_half,
                     .strided_api = 1};
}

int cu_build_matmul(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    if (!cu_all_f32(g, n)) return 1;
    const rt_value *a = val(g, n->in[0]), *b = val(g, n->in[1]), *y = val(g, n->out[0]);
    if (a->ndim < 2 || b->ndim < 2) return 1;
    int64_t m = a->dims[a->ndim - 2], k = a->dims[a->ndim - 1], nn = b->dims[b->ndim - 1];
    if (b->dims[b->ndim - 2] != k) return 1;
    int64_t ba = numel(a) / (m * k), bb = numel(b) / (k * nn), by = numel(y) / (m * nn);
    if (m > INT32_MAX || k > INT32_MAX || nn > INT32_MAX) return 1;
    if (bb == 1) {
        /* B shared: fold A's batch into its rows, one GEMM */
        s->batch = 1;
        s->m = (int)(m * ba);
        s->sa = s->sb = s->sc = 0;
        if (by != ba) return 1;
    } else if (ba == bb && by == ba && a->ndim == b->ndim) {
        for (int d = 0; d < a->ndim - 2; d++)
            if (a->dims[d] != b->dims[d]) return 1;
        s->batch = (int)ba;
        s->m = (int)m;
        s->sa = (long long)(m * k);
        s->sb = (long long)(k * nn);
        s->sc = (long long)(m * nn);
    } else if (ba == 1 && by == bb) {
        s->batch = (int)bb;
        s->m = (int)m;
        s->sa = 0;
        s->sb = (long long)(k * nn);
        s->sc = (long long)(m * nn);
    } else {
        return 1;
    }
    s->k = (int)k;
    s->nn = (int)nn;
    s->kind = S_MATMUL;
    s->n = numel(y);
    /* fp16 operands (then constants are converted too) with an fp16 or fp32 result, or all fp32 */
    int ah = a->data ? -1 : cu_vh(cc, n->in[0]), bh = b->data ? -1 : cu_vh(cc, n->in[1]);
    s->half = ah == 1 || bh == 1;
    s->c_half = cu_vh(cc, n->out[0]);
    if ((s->half && (ah == 0 || bh == 0)) || (!s->half && s->c_half)) return 1;
    s->wconv = s->aconv = RT_NO_OFFSET;
    if (s->half) {
        cu_gemm pg = matmul_half(s);
        s->lt = cu_gemm_choose(cc, &pg);
        if (b->data) s->wconv = cu_convert_weights(cc, b, (int64_t[]){1, 1, 1, numel(b)}, 1, 0);
        if (a->data) s->aconv = cu_convert_weights(cc, a, (int64_t[]){1, 1, 1, numel(a)}, 1, 0);
    }
    return 0;
}

/* ---- running ---------------------------------------------------------------------- */

/* Row-major C = A B is column-major C^T = B^T A^T (activation: the chain that follows). */
lector_status cu_run_matmul(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    const void *X = cu_dptr(x, n->in[0]);
    void *Y = cu_dptr(x, n->out[0]);
    cublasStatus_t bs;
    if (s->half) {
        const void *A = s->aconv != RT_NO_OFFSET ? cu_const(x->cp, s->aconv) : X;
        const void *B = s->wconv != RT_NO_OFFSET ? cu_const(x->cp, s->wconv) : cu_dptr(x, n->in[1]);
        cu_gemm g = matmul_half(s);
        return cu_gemm_half(x, &g, s->lt, B, A, Y, n, err);
    } else {
        bs = cublasSgemmStridedBatched(x->w->blas, CUBLAS_OP_N, CUBLAS_OP_N, s->nn, s->m, s->k, &cu_one,
                                       cu_dptr(x, n->in[1]), s->nn, s->sb, X, s->k, s->sa, &cu_zero, Y, s->nn, s->sc,
                                       s->batch);
    }
    if (bs != CUBLAS_STATUS_SUCCESS)
        return cu_fail(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                       "cublas: node %s: %s", n->name, cublasGetStatusString(bs));
    return LECTOR_OK;
}
