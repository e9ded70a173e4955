/*
 * cuda_prime.c - the libraries' first calls, made once per process on a side
 * thread while the models load.
 *
 * Why: the first call of a kind into cuBLASLt, cuBLAS or cuDNN pays once per
 * process for the library's own start (cuBLASLt's heuristic about 120 ms,
 * its first product with an fp32 result 73 ms, cuDNN's first workspace
 * queries; `LECTOR_CUDA_PROFILE`'s first runs, docs/BENCHMARKS.md "What
 * first runs wait for"). Left to the plans, the recogniser's first plan
 * waits for it, and every page's lines wait for that plan (the batch limits,
 * src/ocr/engine.c). Made here with small operands, beside the parsing and
 * uploading of the models, the plans find the libraries started.
 *
 * Nothing here is kept: the operands are freed, the choices discarded (a
 * plan makes its own for its shapes). Failures are only logged: a plan meets
 * the same call again and reports it. LECTOR_CUDA_PRIME=0 turns it off.
 */

#include "backend/cuda/cuda_internal.h"

#define PRIME_N 64 /* the products' sizes and the convolution's channels */

/* cuBLASLt: the heuristic and a product, fp16 operands with an fp16 and an
 * fp32 result (cuda_gemm.c's two kinds). */
static void prime_lt(cu_worker *w, void *a, void *b, void *d)
{
    if (!w->lt) return;
    for (int d_half = 0; d_half < 2; d_half++) {
        cublasLtMatmulDescOpaque_t desc;
        cublasLtMatrixLayoutOpaque_t la, lb, ld;
        cublasLtMatmulPreferenceOpaque_t pref;
        cublasLtMatmulDescInit(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        cublasLtMatrixLayoutInit(&la, CUDA_R_16F, PRIME_N, PRIME_N, PRIME_N);
        cublasLtMatrixLayoutInit(&lb, CUDA_R_16F, PRIME_N, PRIME_N, PRIME_N);
        cublasLtMatrixLayoutInit(&ld, d_half ? CUDA_R_16F : CUDA_R_32F, PRIME_N, PRIME_N, PRIME_N);
        cublasLtMatmulPreferenceInit(&pref);
        uint64_t ws = CU_BLAS_WS;
        cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
        cublasLtMatmulHeuristicResult_t r;
        int found = 0;
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(w->lt, &desc, &la, &lb, &ld, &ld, &pref, 1, &r, &found);
        if (st == CUBLAS_STATUS_SUCCESS && found > 0)
            st = cublasLtMatmul(w->lt, &desc, &cu_one, a, &la, b, &lb, &cu_zero, d, &ld, d, &ld, &r.algo, w->ws,
                                CU_BLAS_WS, w->stream);
        if (st != CUBLAS_STATUS_SUCCESS) H->log(3, "cuda: priming cuBLASLt: %s", cublasGetStatusString(st));
    }
}

/* cuBLAS: fp32's products (cuda_matmul.c, the 1x1 convolutions). */
static void prime_blas(cu_worker *w, const float *a, const float *b, float *d)
{
    cublasStatus_t st = cublasSgemmStridedBatched(w->blas, CUBLAS_OP_N, CUBLAS_OP_N, PRIME_N, PRIME_N, PRIME_N, &cu_one,
                                                  a, PRIME_N, 0, b, PRIME_N, 0, &cu_zero, d, PRIME_N, 0, 1);
    if (st != CUBLAS_STATUS_SUCCESS) H->log(3, "cuda: priming cuBLAS: %s", cublasGetStatusString(st));
}

/* cuDNN: a 3x3 convolution's heuristic, workspace query and run, in fp32
 * NCHW and in fp16 NHWC (the two modes of cuda_conv.c). */
static void prime_dnn(cu_worker *w, void *x, void *f, void *y, void *ws, size_t ws_size)
{
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnFilterDescriptor_t fd = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
    if (cudnnCreateTensorDescriptor(&xd) || cudnnCreateTensorDescriptor(&yd) || cudnnCreateFilterDescriptor(&fd) ||
        cudnnCreateConvolutionDescriptor(&cd))
        goto done;
    for (int half = 0; half < 2; half++) {
        cudnnDataType_t t = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
        cudnnTensorFormat_t fmt = half ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
        const char *what = "descriptors";
        cudnnStatus_t st = cudnnSetTensor4dDescriptor(xd, fmt, t, 1, PRIME_N, 8, 8);
        if (!st) st = cudnnSetTensor4dDescriptor(yd, fmt, t, 1, PRIME_N, 8, 8);
        if (!st) st = cudnnSetFilter4dDescriptor(fd, t, fmt, PRIME_N, PRIME_N, 3, 3);
        if (!st) st = cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
        if (!st) st = cudnnSetConvolutionMathType(cd, half ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH);
        cudnnConvolutionFwdAlgoPerf_t perf;
        int found = 0;
        size_t need = 0;
        if (!st)
            what = "the heuristic",
            st = cudnnGetConvolutionForwardAlgorithm_v7(w->dnn, xd, fd, cd, yd, 1, &found, &perf);
        if (!st && found < 1) st = CUDNN_STATUS_NOT_SUPPORTED;
        if (!st)
            what = "the workspace",
            st = cudnnGetConvolutionForwardWorkspaceSize(w->dnn, xd, fd, cd, yd, perf.algo, &need);
        if (!st && need <= ws_size)
            what = "a run",
            st = cudnnConvolutionForward(w->dnn, &cu_one, xd, x, fd, f, cd, perf.algo, ws, need, &cu_zero, yd, y);
        if (st) H->log(3, "cuda: priming cuDNN (%s): %s", what, cudnnGetErrorString(st));
    }
done:
    if (cd) cudnnDestroyConvolutionDescriptor(cd);
    if (fd) cudnnDestroyFilterDescriptor(fd);
    if (yd) cudnnDestroyTensorDescriptor(yd);
    if (xd) cudnnDestroyTensorDescriptor(xd);
}

void cu_prime_libraries(cu_ctx *c, cu_worker *w)
{
    static atomic_int claimed;
    if (!cu_switch(LECTOR__TC_CUDA_PRIME, 1) || atomic_exchange(&claimed, 1)) return;
    double t0 = cu_now_ms();
    lector_error err = {0};
    const size_t op = (size_t)PRIME_N * PRIME_N * 9 * sizeof(float), dnn_ws = (size_t)1 << 20;
    void *buf = NULL;
    if (cu_worker_ws(c, w, dnn_ws, &err) || cu_dev_alloc(c->device, 3 * op, &buf, "priming the libraries", &err)) {
        H->log(3, "cuda: priming the libraries: %s", err.message);
        return;
    }
    char *a = buf, *b = a + op, *d = b + op;
    /* zeros: no NaN or denormal reaches a kernel whatever the memory held */
    cudaMemsetAsync(buf, 0, 3 * op, w->stream);
    prime_lt(w, a, b, d);
    prime_blas(w, (const float *)a, (const float *)b, (float *)d);
    prime_dnn(w, a, b, d, w->ws + CU_BLAS_WS, dnn_ws);
    cudaError_t e = cudaStreamSynchronize(w->stream);
    if (e != cudaSuccess) {
        cudaGetLastError();
        H->log(3, "cuda: priming the libraries: %s", cudaGetErrorString(e));
    }
    cu_dev_free(buf);
    H->log(3, "cuda: GPU %d: the libraries' first calls made in %.1f ms", c->device, cu_now_ms() - t0);
}
