/*
 * cuda_gemm.c - the half-precision products (MatMul, 1x1 convolutions in
 * both layouts) through cuBLASLt, with the algorithm chosen once per size
 * class rather than once per shape.
 *
 * Why: cuBLAS's cublasGemmEx and its strided batched form ask cuBLASLt's
 * heuristic for every product shape they have not met, a synchronous host
 * call of a few milliseconds, and on document pages every new line width is
 * a plan of new product shapes. Over 300 distinct pages `--fp16` paid it in
 * 915 first runs of 1x1 convolutions, about 5.4 ms each, 4.9 s summed over
 * the workers (docs/BENCHMARKS.md, "The start on the GPU"); fp32's
 * cublasSgemm does not (21 such steps).
 *
 * A size class rounds each size (m, n, k and the batch count) up to a power
 * of two; its key also holds the transposes, the result's type and the
 * alignment (in bytes, up to 256) of each operand's address, leading
 * dimension and batch stride, since an algorithm may need them. The first
 * product of a class asks the heuristic for the class's largest shape, and
 * every product of the class runs that algorithm: the choice does not depend
 * on which shape came first, so results do not depend on the order of the
 * pages. cuBLASLt checks an algorithm against the actual shape when it runs
 * it; a shape it refuses gets a choice of its own (an exact entry), and one
 * with no algorithm at all goes to cuBLAS's own call, as does everything
 * with LECTOR_CUDA_LT=0.
 *
 * A plan's step gets its choice while the plan compiles (cu_gemm_choose:
 * every value of a plan starts on a 256-byte boundary, so the operands'
 * alignment is known then), its class's or, when cublasLtMatmulAlgoCheck
 * refuses the class's algorithm for the step's shape, the shape's own; its
 * runs use it without a lock. Only an operand off that boundary, or a
 * refusal at run time all the same, looks again.
 *
 * Descriptors are initialised on the stack per call (a few microseconds);
 * the workspace is the worker's cuBLAS part (CU_BLAS_WS), so no call
 * allocates and every call can be captured in a CUDA graph.
 */
#include <stdint.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

#define MAX_ENTRIES 4096 /* classes and exact shapes kept at most; beyond, cuBLAS's own call */

typedef struct gemm_key {
    int32_t v[14]; /* device, exact, ta, tb, d_half, m, n, k, batch, align a, b, d, strided api, 0 */
} gemm_key;

/* A choice: cuBLASLt's algorithm, or none (cuBLAS's own call). */
typedef struct gemm_value {
    int has_algo, pad;
    cublasLtMatmulAlgo_t algo;
} gemm_value;

/* The choices (choice_table.h): a step keeps a pointer to its class's
 * entry and reads it without a lock. */
static choice_table table = CU_CHOICE_TABLE(gemm_key, gemm_value, MAX_ENTRIES);

static int lt_on(void) { return cu_switch(LECTOR__TC_CUDA_LT, 1); }

/* A size's class: the next power of two (a size above 2^30 is its own class). */
static int32_t size_class(int32_t v)
{
    if (v > (1 << 30)) return v;
    int32_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

/* The largest power of two up to 256 that divides every address the
 * operand's rows and batches start at. */
static int32_t alignment(const void *p, int64_t ld_bytes, int64_t stride_bytes)
{
    uint64_t bits = (uint64_t)(uintptr_t)p | (uint64_t)ld_bytes | (uint64_t)stride_bytes | 256;
    return (int32_t)(bits & -bits);
}

/* The operands' shapes in cuBLAS's column-major terms: D (m x n) = op(A) op(B). */
typedef struct shape {
    int64_t m, n, k, batch;
} shape;

/* The three layouts of shape s; the batch strides are g's (packed, or 0 for a
 * shared operand) or, for a class's largest shape (packed), those of s. */
static void layouts(const cu_gemm *g, const shape *s, int packed, cublasLtMatrixLayoutOpaque_t *la,
                    cublasLtMatrixLayoutOpaque_t *lb, cublasLtMatrixLayoutOpaque_t *ld)
{
    int64_t ar = g->ta == CUBLAS_OP_N ? s->m : s->k, ac = g->ta == CUBLAS_OP_N ? s->k : s->m;
    int64_t br = g->tb == CUBLAS_OP_N ? s->k : s->n, bc = g->tb == CUBLAS_OP_N ? s->n : s->k;
    cublasLtMatrixLayoutInit(la, CUDA_R_16F, (uint64_t)ar, (uint64_t)ac, ar);
    cublasLtMatrixLayoutInit(lb, CUDA_R_16F, (uint64_t)br, (uint64_t)bc, br);
    cublasLtMatrixLayoutInit(ld, g->d_half ? CUDA_R_16F : CUDA_R_32F, (uint64_t)s->m, (uint64_t)s->n, s->m);
    if (s->batch > 1) {
        int32_t count = (int32_t)s->batch;
        cublasLtMatrixLayoutOpaque_t *l[3] = {la, lb, ld};
        int64_t st[3] = {g->sa, g->sb, g->sd};
        if (packed) st[0] = g->sa ? ar * ac : 0, st[1] = g->sb ? br * bc : 0, st[2] = s->m * s->n;
        for (int i = 0; i < 3; i++) {
            cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
            cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st[i], sizeof st[i]);
        }
    }
}

static void op_desc(const cu_gemm *g, cublasLtMatmulDescOpaque_t *d)
{
    cublasLtMatmulDescInit(d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t ta = g->ta, tb = g->tb;
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
}

/* cuBLASLt's heuristic for the shape of key k (its sizes are the class's
 * largest, or the exact ones); 0 and the algorithm, or -1: none. */
static int choose(cublasLtHandle_t lt, const cu_gemm *g, const gemm_key *k, cublasLtMatmulAlgo_t *algo)
{
    shape s = {k->v[5], k->v[6], k->v[7], k->v[8]};
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t la, lb, ld;
    cublasLtMatmulPreferenceOpaque_t pref;
    op_desc(g, &desc);
    layouts(g, &s, 1, &la, &lb, &ld);
    cublasLtMatmulPreferenceInit(&pref);
    uint64_t ws = CU_BLAS_WS;
    /* the sums stay in fp32 even when split: the result's precision is the only rounding, as
     * with cuBLAS's pedantic reductions */
    uint32_t schemes =
        CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    uint32_t al[3] = {(uint32_t)k->v[9], (uint32_t)k->v[10], (uint32_t)k->v[11]};
    cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof schemes);
    cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof al[0]);
    cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof al[1]);
    cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof al[2]);
    cublasLtMatmulPreferenceSetAttribute(&pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2], sizeof al[2]);
    cublasLtMatmulHeuristicResult_t r;
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, &desc, &la, &lb, &ld, &ld, &pref, 1, &r, &found);
    if (st != CUBLAS_STATUS_SUCCESS || found < 1 || r.state != CUBLAS_STATUS_SUCCESS) return -1;
    *algo = r.algo;
    return 0;
}

/* The settled entry for key k, or NULL (the table is full: cuBLAS's own
 * call, which chooses per shape). The first caller of a key chooses it
 * while the others needing the same key wait (choice_claim). */
static const choice_entry *lookup(cublasLtHandle_t lt, const cu_gemm *g, const gemm_key *k)
{
    const choice_entry *e;
    if (choice_claim(&table, k, &e) != CHOICE_CLAIMED) return e;
    gemm_value v = {0, 0, {{0}}};
    v.has_algo = choose(lt, g, k, &v.algo) == 0;
    choice_settle(&table, e, &v);
    H->log(3, "cuda: cuBLASLt %s %dx%dx%d batch %d (%s): %s", k->v[1] ? "shape" : "class", k->v[5], k->v[6], k->v[7],
           k->v[8], g->d_half ? "fp16" : "fp32 result", v.has_algo ? "algorithm chosen" : "none, cuBLAS's call");
    return e;
}

static cublasStatus_t run_lt(const exec_ctx *x, const cu_gemm *g, const cublasLtMatmulAlgo_t *algo, const void *A,
                             const void *B, void *D)
{
    shape s = {g->m, g->n, g->k, g->batch};
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t la, lb, ld;
    op_desc(g, &desc);
    layouts(g, &s, 0, &la, &lb, &ld);
    return cublasLtMatmul(x->w->lt, &desc, &cu_one, A, &la, B, &lb, &cu_zero, D, &ld, D, &ld, algo, x->ws, CU_BLAS_WS,
                          x->w->stream);
}

/* cuBLAS's own call (LECTOR_CUDA_LT=0, or no cuBLASLt algorithm). */
static cublasStatus_t run_blas(const exec_ctx *x, const cu_gemm *g, const void *A, const void *B, void *D)
{
    int lda = g->ta == CUBLAS_OP_N ? g->m : g->k, ldb = g->tb == CUBLAS_OP_N ? g->k : g->n;
    cudaDataType_t dt = g->d_half ? CUDA_R_16F : CUDA_R_32F;
    cublasStatus_t bs;
    cublasSetMathMode(x->w->blas, CUBLAS_DEFAULT_MATH);
    if (g->strided_api)
        bs = cublasGemmStridedBatchedEx(x->w->blas, g->ta, g->tb, g->m, g->n, g->k, &cu_one, A, CUDA_R_16F, lda, g->sa,
                                        B, CUDA_R_16F, ldb, g->sb, &cu_zero, D, dt, g->m, g->sd, g->batch,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        bs = cublasGemmEx(x->w->blas, g->ta, g->tb, g->m, g->n, g->k, &cu_one, A, CUDA_R_16F, lda, B, CUDA_R_16F, ldb,
                          &cu_zero, D, dt, g->m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cublasSetMathMode(x->w->blas, CUBLAS_PEDANTIC_MATH);
    return bs;
}

/* Key of g's class (or with `exact`, of its shape) on GPU `device`, for
 * operands at A, B and D (NULL: on a 256-byte boundary). */
static void make_key(gemm_key *k, int device, const cu_gemm *g, int exact, const void *A, const void *B, const void *D)
{
    int lda = g->ta == CUBLAS_OP_N ? g->m : g->k, ldb = g->tb == CUBLAS_OP_N ? g->k : g->n;
    int64_t es_d = g->d_half ? 2 : 4;
    memset(k, 0, sizeof *k);
    k->v[0] = device;
    k->v[1] = exact;
    k->v[2] = g->ta;
    k->v[3] = g->tb;
    k->v[4] = g->d_half;
    k->v[5] = exact ? g->m : size_class(g->m);
    k->v[6] = exact ? g->n : size_class(g->n);
    k->v[7] = exact ? g->k : size_class(g->k);
    k->v[8] = exact ? g->batch : size_class(g->batch);
    k->v[9] = alignment(A, 2 * (int64_t)lda, 2 * g->sa);
    k->v[10] = alignment(B, 2 * (int64_t)ldb, 2 * g->sb);
    k->v[11] = alignment(D, es_d * g->m, es_d * g->sd);
    k->v[12] = g->strided_api;
}

/* 1 when cuBLASLt takes entry e's algorithm for g's own shape (in the
 * worker's workspace), as cublasLtMatmul would at run time. */
static int fits(cublasLtHandle_t lt, const cu_gemm *g, const choice_entry *e)
{
    const gemm_value *v = choice_value(e);
    if (!v->has_algo) return 1; /* cuBLAS's call takes every shape */
    shape s = {g->m, g->n, g->k, g->batch};
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t la, lb, ld;
    cublasLtMatmulHeuristicResult_t r;
    op_desc(g, &desc);
    layouts(g, &s, 0, &la, &lb, &ld);
    return cublasLtMatmulAlgoCheck(lt, &desc, &la, &lb, &ld, &ld, &v->algo, &r) == CUBLAS_STATUS_SUCCESS &&
           r.workspaceSize <= CU_BLAS_WS;
}

const choice_entry *cu_gemm_choose(const compile_ctx *cc, const cu_gemm *g)
{
    if (!lt_on() || !cc->w->lt) return NULL;
    gemm_key k;
    make_key(&k, cc->w->device, g, 0, NULL, NULL, NULL);
    const choice_entry *e = lookup(cc->w->lt, g, &k);
    if (e && !fits(cc->w->lt, g, e)) { /* the class's algorithm refuses this shape: the shape's own */
        H->log(3, "cuda: cuBLASLt's algorithm for the class of %dx%dx%d does not take it", g->m, g->n, g->k);
        make_key(&k, cc->w->device, g, 1, NULL, NULL, NULL);
        e = lookup(cc->w->lt, g, &k);
    }
    return e;
}

/* cuBLASLt's run of entry e's algorithm; CUBLAS_STATUS_NOT_SUPPORTED when
 * there is none. */
static cublasStatus_t try_entry(const exec_ctx *x, const cu_gemm *g, const choice_entry *e, const void *A,
                                const void *B, void *D)
{
    const gemm_value *v = e ? choice_value(e) : NULL;
    return v && v->has_algo ? run_lt(x, g, &v->algo, A, B, D) : CUBLAS_STATUS_NOT_SUPPORTED;
}

/* A refusal launches nothing: the caller tries the next choice. */
static int refused(cublasStatus_t bs) { return bs == CUBLAS_STATUS_NOT_SUPPORTED || bs == CUBLAS_STATUS_INVALID_VALUE; }

lector_status cu_gemm_half(const exec_ctx *x, const cu_gemm *g, const choice_entry *c, const void *A, const void *B,
                           void *D, const rt_node *n, lector_error *err)
{
    cublasStatus_t bs = CUBLAS_STATUS_NOT_SUPPORTED;
    int misaligned = (((uintptr_t)A | (uintptr_t)B | (uintptr_t)D) & 255) != 0;
    /* no choice for aligned operands: the compile found the table full, so cuBLAS's call at once,
     * not two searches of the full table under its lock at every run */
    if (lt_on() && x->w->lt && (c || misaligned)) {
        gemm_key k;
        if (misaligned) { /* chosen for aligned operands */
            make_key(&k, x->w->device, g, 0, A, B, D);
            c = lookup(x->w->lt, g, &k);
        }
        bs = try_entry(x, g, c, A, B, D);
        if (refused(bs)) { /* the shape's own choice */
            if (c && ((const gemm_value *)choice_value(c))->has_algo)
                H->log(3, "cuda: cuBLASLt refused its class's algorithm for %dx%dx%d", g->m, g->n, g->k);
            make_key(&k, x->w->device, g, 1, A, B, D);
            bs = try_entry(x, g, lookup(x->w->lt, g, &k), A, B, D);
        }
    }
    if (refused(bs)) bs = run_blas(x, g, A, B, D);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return cu_fail(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                       "cublas: node %s: %s", n->name, cublasGetStatusString(bs));
    return LECTOR_OK;
}
