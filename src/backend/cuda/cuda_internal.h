/*
 * cuda_internal.h - what the files of the CUDA backend module share
 * (liblector-cuda.so; cuda_backend.c has the map of its files). Nothing here
 * is seen by the core.
 *
 * A plan compiles into steps. Each float activation has a storage: fp32 or
 * fp16 (cu_plan.vhalf) and, for 4-D tensors, NCHW or NHWC (cu_plan.vnhwc).
 * The fp32 NCHW plan is the default; a half-precision plan (fp16 = 1) stores
 * every float activation as fp16 and lays 4-D tensors out NHWC where the
 * consumers allow it (cuda_layout.c), which is what cuDNN's tensor-core
 * convolutions want. Graph inputs arrive from the host as fp32 NCHW and
 * graph outputs leave as fp32 NCHW: conversion steps (S_CONVERT) at both
 * ends translate.
 */
#ifndef LECTOR_CUDA_INTERNAL_H
#define LECTOR_CUDA_INTERNAL_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "backend/cuda/choice_table.h"
#include "backend/cuda/kernels.h"
#include "rt/backend.h"
#include "util/testctl.h"

extern const rt_host_api *H; /* the core's table (cuda_backend.c) */

#define CU_MAX_DEV  64
#define CU_BLAS_WS  ((size_t)4 << 20)   /* cuBLAS's part of a worker's workspace, before cuDNN's */
#define CU_WS_LIMIT ((size_t)256 << 20) /* largest cuDNN workspace an algorithm may ask for */

/* ---- workers: what one call borrows ---------------------------------------- */

/* CUDA graphs a worker keeps (their plans, arenas and workspaces baked in).
 * A full table evicts only a graph unused for CU_GRAPH_IDLE of the worker's
 * runs; otherwise the new plan runs step by step: with a plan per line
 * width (hundreds on document pages) evicting the least recently used one
 * re-captured a graph on nearly every run, which costs more than the run. */
#define CU_GRAPHS     128
#define CU_GRAPH_IDLE 4096
typedef struct cu_graph {
    uint64_t plan;
    const void *arena, *ws;
    cudaGraphExec_t exec;
    uint64_t used;
} cu_graph;

typedef struct cu_worker {
    cu_graph graphs[CU_GRAPHS];
    int n_graphs;
    uint64_t tick; /* runs of this worker through cu_run_steps */
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cublasLtHandle_t lt; /* half-precision products (cuda_gemm.c); NULL: cuBLAS's calls */
    int device;
    void *ws;
    size_t ws_size;
    void *pin;
    size_t pin_size;
    void *img; /* device copy of an image input and its tables (cu_run_image) */
    size_t img_size;
    struct cu_worker *next;
} cu_worker;

/* The backend's state (rt_backend.ctx). */
typedef struct cu_ctx {
    int device;
    int sm;                   /* compute capability, major * 10 + minor */
    _Atomic uint64_t kernels; /* NVRTC kernels compiled for this backend's plans */
    pthread_mutex_t lock;
    cu_worker *idle;
    char name[64];
    /* the model's weights as its plans upload them (cu_memo_*): every new
     * input shape is a plan, and converting, hashing and comparing 10 MB
     * of weights again cost each new line width 5-40 ms */
    pthread_rwlock_t memo_lock;
    struct cu_memo {
        const void *src; /* the model's own constant (never a plan graph's) */
        size_t n;
        int kind;
        struct cu_shared *shared; /* a reference held by the memo */
    } * memo;
    int n_memo, cap_memo;
    _Atomic size_t own_bytes; /* the plans' own arenas (cu_own) */
    /* the largest pinned staging and image buffer any worker has grown to:
     * a worker that must grow grows to at least these, so that 16 workers
     * meeting ever larger pages do not each grow step by step (each growth
     * of pinned memory waits for every stream of the GPU) */
    _Atomic size_t pin_high, img_high;
    /* workers made so far, and those asked for ahead (cu_workers_ahead) */
    atomic_int made;
    int ahead, ahead_started;
    atomic_int ahead_stop;
    pthread_t ahead_thread;
    int algo_ident; /* the kind of GPU its convolution algorithm choices are for (cu_algo_ident) */
} cu_ctx;

/* ---- plans ------------------------------------------------------------------ */

enum {
    S_CONV,
    S_DECONV,
    S_AFFINE,
    S_BINARY,
    S_UNARY,
    S_ROWMEAN,
    S_POOL,
    S_RESIZE,
    S_GATHER,
    S_COPY,
    S_CONCAT,
    S_MATMUL,
    S_SOFTMAX,
    S_LAYERNORM,
    S_CHAIN,
    S_HOST,
    S_GAP_NHWC,
    S_ARGMAX,
    S_CONVERT,
    S_DWCONV,
    S_DECONV_KS,
    S_CONV_GEMM,
    S_KIND_COUNT
};
/* Steps whose bias and activation an epilogue chain applies. */
#define CU_HAS_RAW_OUTPUT(k) \
    ((k) == S_CONV || (k) == S_DECONV || (k) == S_MATMUL || (k) == S_DWCONV || (k) == S_DECONV_KS || (k) == S_CONV_GEMM)
/* S_AFFINE, S_BINARY and S_UNARY exist only while compiling: the fusion pass
 * turns every elementwise step into a chain (S_CHAIN). */

/* The geometry of a 2-D windowed step: a depthwise convolution (S_DWCONV),
 * a pooling (S_POOL) or a ConvTranspose whose kernel equals its stride
 * (S_DECONV_KS: ih, iw, kh, kw only). */
typedef struct cu_window {
    int ih, iw, oh, ow; /* input and output height, width */
    int kh, kw;         /* kernel */
    int sh, sw;         /* strides */
    int ph, pw;         /* leading pads (the trailing ones follow from the sizes) */
    int dh, dw;         /* dilations */
    int max_pool;       /* S_POOL: MaxPool (else AveragePool) */
    int count_pad;      /* S_POOL, AveragePool: count_include_pad */
    int unroll;         /* S_DWCONV: ck_dw_shape's unrolled kernel where it applies */
} cu_window;

typedef struct cu_step {
    int kind, node; /* node: -1 for S_CONVERT */
    int op, act;
    float alpha, beta;
    int64_t n, channels, inner, outer, len;
    int half, nhwc; /* storage of the step's float tensors */
    /* cuDNN */
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int algo;
    size_t ws;    /* workspace bytes the step needs */
    size_t wconv; /* offset of converted weights (fp16 and/or KRSC) in the constant block, or RT_NO_OFFSET */
    ck_gather_desc gd;
    cu_window win; /* S_DWCONV, S_POOL, S_DECONV_KS */
    float eps;
    int64_t ns, nb;
    /* MatMul: C[b] = A[b] (m x k) * B[b] (k x n) */
    int m, nn, k, batch;
    long long sa, sb, sc;
    size_t aconv;     /* MatMul: converted constant A, or RT_NO_OFFSET */
    int c_half;       /* MatMul with fp16 operands: the result is fp16 (else fp32) */
    size_t aux, aux2; /* offsets in the constant block (BN scale/shift, resize tables) */
    size_t elem;
    int no_epilogue;        /* Conv/MatMul: bias and activation are done by the chain that follows */
    const choice_entry *lt; /* fp16 products: cuBLASLt's algorithm for the step (cu_gemm_choose), or NULL */
    /* S_CHAIN, and an S_DWCONV that runs the chain after it in its own kernel (cuda_nvrtc.c) */
    ck_chain *chain;
    int ext_v[CK_CHAIN_EXT], out_v[CK_CHAIN_OUT];
    size_t ext_cb[CK_CHAIN_EXT];  /* an external held in the constant block (BN tables), or RT_NO_OFFSET */
    int chain_node[CK_CHAIN_OPS]; /* node of each op; -1: the epilogue of chain_src */
    int chain_src;                /* the Conv/MatMul node whose epilogue op 0 is, or -1 */
    void *kfn;                    /* the chain's compiled kernel (cudaKernel_t), NULL: the interpreter */
    int kvec;                     /* elements per thread of kfn */
    /* S_CONVERT: arena offsets and storages */
    size_t cv_src, cv_dst;
    int cv_src_half, cv_src_nhwc, cv_dst_half, cv_dst_nhwc;
    int64_t cv_dims[4];
    int cv_value; /* the graph value converted */
} cu_step;

/* A plan runs step by step for its first CU_GRAPH_AFTER runs; from then on
 * each worker captures it as a CUDA graph (once per arena) and replays it.
 * A capture costs more than one step-by-step run and pays only when it is
 * replayed: shapes seen once or twice (a line of an unusual width) never
 * take a worker's graph slot from the shapes that come back. */
#define CU_GRAPH_AFTER 8

/* A plan of at most CU_OWN_ARENA bytes of activations and workspace that
 * has run CU_OWN_AFTER times gets an arena of its own and a CUDA graph
 * captured in it (cuda_graphs.c), which any worker replays: one launch
 * instead of one per step, for a line width seen before whichever thread
 * reads it. All plans' own arenas on a device stay within CU_OWN_BYTES, or
 * a quarter of gpu_mem_limit when that is smaller. */
#define CU_OWN_AFTER 2
#define CU_OWN_ARENA ((size_t)64 << 20)
#define CU_OWN_BYTES ((size_t)4 << 30)
typedef struct cu_own {
    _Atomic int busy;   /* held by the call running in it */
    _Atomic int runs;   /* calls that asked for it, for CU_OWN_AFTER */
    _Atomic int failed; /* no memory or no capture: the plan runs as before */
    char *mem;          /* the arena (rt_plan.arena_size), then the workspace */
    size_t size;
    cudaGraphExec_t exec; /* captured on its first use */
} cu_own;

typedef struct cu_plan {
    uint64_t id;      /* unique in the process: keys the workers' CUDA graphs */
    int no_graph;     /* capture failed once: run step by step */
    _Atomic int runs; /* runs so far, for CU_GRAPH_AFTER */
    int half, nhwc;   /* the plan's mode */
    cu_step *steps;
    int n_steps, cap_steps;
    uint8_t *vhalf;   /* per value: float activation stored as fp16 */
    uint8_t *vnhwc;   /* per value: 4-D activation stored NHWC */
    size_t *coff;     /* per value: offset in the constant block, or RT_NO_OFFSET */
    size_t *in_off;   /* per graph input: offset in the arena of the uploaded (host) tensor */
    size_t *in_conv;  /* per graph input: offset of its converted storage, or RT_NO_OFFSET */
    size_t *out_conv; /* per graph output: offset of its fp32 NCHW copy, or RT_NO_OFFSET */
    char *cblock;     /* device constants: cblock_shared's bytes */
    size_t cblock_size;
    struct cu_shared *cblock_shared; /* plans of other shapes with the same constants share one copy */
    struct cu_shared **shared;       /* the plan's references to shared weights (CU_SHARED offsets) */
    int n_shared;
    size_t ws;       /* largest workspace of a step */
    size_t io_bytes; /* inputs + outputs, for the pinned staging */
    int n_host;
    int prof_runs; /* LECTOR_CUDA_PROFILE: runs so far (under the profile's lock) */
    cu_own own;
} cu_plan;

/* Weights are shared by every plan of the process on one device that holds
 * the same bytes: a model compiles one plan per input shape, and its weights
 * are the same in all of them, so they are uploaded once. A constant of at
 * least CU_SHARE_MIN bytes becomes a shared chunk, counted by reference; its
 * offset carries the CU_SHARED bit and indexes cu_plan.shared. Smaller
 * constants (resize tables, BN pairs, shapes) stay in the plan's own block. */
#define CU_SHARED    ((size_t)1 << 62)
#define CU_SHARE_MIN ((size_t)16 << 10)

typedef struct cu_shared {
    struct cu_shared *next;
    uint64_t hash;
    size_t n;
    void *host; /* the bytes, compared on a hash match */
    char *dev;
    int device;
    _Atomic int refs; /* plans and the memo; the entry is unlinked and freed at 0 */
} cu_shared;

/* Host staging of the constant block while compiling. */
typedef struct cbuf {
    char *p;
    size_t n, cap;
    struct cbuf_chunk {
        void *p;
        size_t n;
        const void *src;          /* for the memo: the model's constant it came from, or NULL */
        int kind;                 /* and how (CU_MEMO_*) */
        struct cu_shared *shared; /* already on the device (a memo hit): p is NULL */
    } * big;                      /* chunks to share, in CU_SHARED index order */
    int n_big, cap_big;
} cbuf;

size_t cbuf_add(cbuf *b, const void *data, size_t n, int *oom);

/* Device address of a constant-block offset (cbuf_add's result). */
static inline char *cu_const(const cu_plan *cp, size_t off)
{
    return off & CU_SHARED ? cp->shared[off & ~CU_SHARED]->dev : cp->cblock + off;
}

typedef struct compile_ctx {
    rt_backend *be;
    const rt_plan *p;
    const rt_graph *g;
    cu_plan *cp;
    cu_worker *w;
    cbuf cb;
    int oom;
    int *need_const; /* per value: a GPU step reads this constant (fp32, as in the graph) */
    int sm;          /* compute capability major * 10 + minor */
    double algo_ms;  /* time in cuDNN's algorithm choice (LECTOR_LOG=debug) */
    double desc_ms;  /* ... in making cuDNN's descriptors */
    double wconv_ms; /* ... in converting filters (or finding them converted) */
} compile_ctx;

/* Weights by the model constant they come from: cu_memo_get adds the
 * device copy a plan of this backend uploaded before (what `kind` of
 * conversion of `v`, n bytes) to the block and returns its offset, or
 * returns 0 (not known, or v is not the model's own constant); the caller
 * then converts and adds it with cbuf_add_from, which the upload records. */
enum { CU_MEMO_RAW = 1, CU_MEMO_CONVERTED = 2 }; /* CU_MEMO_CONVERTED | half << 2 | nhwc << 3 */
size_t cu_memo_get(compile_ctx *cc, const rt_value *v, int kind, size_t n);
size_t cbuf_add_from(compile_ctx *cc, const rt_value *v, int kind, const void *data, size_t n);
void cu_memo_free(cu_ctx *c);

typedef struct exec_ctx {
    const rt_plan *p;
    const cu_plan *cp;
    cu_worker *w;
    char *arena;
    const lector_tensor *inputs;
    char *ws; /* the steps' workspace: CU_BLAS_WS bytes for cuBLAS, then cuDNN's and ours */
    int own;  /* arena and ws are the plan's own (cu_own), held by this call */
} exec_ctx;

/* ---- shared helpers ------------------------------------------------------------ */

static inline double cu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const float cu_one = 1.f, cu_zero = 0.f; /* cuDNN's and cuBLAS's alpha and beta */

static inline const rt_value *val(const rt_graph *g, int v) { return v >= 0 ? &g->values[v] : NULL; }

static inline int64_t numel(const rt_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= v->dims[i];
    return n;
}

static inline int is_f32(const rt_value *v) { return v && v->dtype == LECTOR_DTYPE_FLOAT32; }

/* Host memory through the core's fault-injectable allocator (rt_host_api):
 * every host allocation of the module. */
static inline void *cu_malloc(size_t n) { return H->malloc(n); }
static inline void *cu_calloc(size_t n, size_t size) { return H->calloc(n, size); }
static inline void *cu_realloc(void *p, size_t n) { return H->realloc(p, n); }
static inline void cu_free(void *p) { H->free(p); }
/* A module's table of choices (choice_table.h) in that memory. */
#define CU_CHOICE_TABLE(key_type, value_type, max_entries) \
    CHOICE_TABLE_INIT(sizeof(key_type), sizeof(value_type), max_entries, cu_calloc, cu_realloc, cu_free)

/* A test control of the core (util/testctl.h, docs/DEBUG.md), read once
 * there: unset or empty -> dflt, "0" -> 0, anything else -> 1. */
static inline int cu_switch(lector__tc id, int dflt) { return H->testctl_flag((int)id, dflt); }

/* N, C, H, W of a 4-D value; a flat value as 1, 1, 1, its size (storage conversions). */
static inline void cu_dims4(const rt_value *v, int64_t *d)
{
    if (v->ndim == 4) {
        for (int k = 0; k < 4; k++) d[k] = v->dims[k];
    } else {
        d[0] = d[1] = d[2] = 1;
        d[3] = numel(v);
    }
}

/* Every float input and output of node n is fp32 in the graph. */
static inline int cu_all_f32(const rt_graph *g, const rt_node *n)
{
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && !is_f32(val(g, n->in[k]))) return 0;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && !is_f32(val(g, n->out[k]))) return 0;
    return 1;
}

/* Storage flags of value v (0 for constants: they stay fp32). */
static inline int cu_vh(const compile_ctx *cc, int v) { return v >= 0 && cc->cp->vhalf[v]; }
static inline int cu_vn(const compile_ctx *cc, int v) { return v >= 0 && cc->cp->vnhwc[v]; }

/* Live consumers of each value in the plan's order (calloc'd, n_values + 1; NULL: out of memory). */
int *cu_consumer_counts(const rt_plan *p);

size_t cu_dsize(lector_dtype t);
/* Bytes per element of value v as the plan stores it. */
size_t cu_vsize(const cu_plan *cp, const rt_graph *g, int v);
/* Device address of value v. */
void *cu_dptr(const exec_ctx *x, int v);
const char *cu_op_name(int op);

/* cuda_backend.c: errors. */
lector_status cu_fail(lector_error *err, lector_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
lector_status cu_cuda_fail(lector_error *err, cudaError_t e, const char *what);

/* cuda_memory.c: fault injection (LECTOR_CUDA_FAIL), device memory under the
 * process-wide cap per GPU, workers, constant blocks. */
int cu_fault_alloc(void);
int cu_fault_launch(void);
void cu_mem_set_limit(int dev, size_t limit);
lector_status cu_dev_alloc(int dev, size_t size, void **out, const char *what, lector_error *err);
void cu_dev_free(void *p);
void cu_memory_usage(rt_backend *be, size_t *used, size_t *limit);
size_t cu_mem_limit(int dev);
size_t cu_memory_available(rt_backend *be);
void cu_worker_free(cu_worker *w);
/* The device's memory pool trimmed to what is in use. */
void cu_mem_trim(int dev);
lector_status cu_worker_get(cu_ctx *c, cu_worker **out, lector_error *err);
void cu_worker_put(cu_ctx *c, cu_worker *w);
/* Makes workers on a thread of the backend's until n are made in all (the
 * runs expected in flight at once); cu_workers_ahead_stop ends it (before
 * the idle workers are freed). */
void cu_workers_ahead(cu_ctx *c, int n);
void cu_workers_ahead_stop(cu_ctx *c);
/* cuda_prime.c: the libraries' first calls, once per process, on worker w
 * (make_ahead's thread, while the models load). */
void cu_prime_libraries(cu_ctx *c, cu_worker *w);
/* A workspace of at least `need` bytes after cuBLAS's. */
lector_status cu_worker_ws(cu_ctx *c, cu_worker *w, size_t need, lector_error *err);
/* Pinned staging of at least `need` bytes. */
lector_status cu_worker_pin(cu_ctx *c, cu_worker *w, size_t need, lector_error *err);
/* A device buffer for image inputs of at least `need` bytes (w->img). */
lector_status cu_worker_img(cu_ctx *c, cu_worker *w, size_t need, lector_error *err);
void cu_cbuf_free(cbuf *b);
void cu_shared_put(cu_shared *s);
lector_status cu_upload_constants(cu_ctx *c, cu_plan *cp, cbuf *cb, lector_error *err);

/* What the calling thread spent on the store of shared constants since the
 * last call (reset by it), for a compile's debug line. */
typedef struct cu_store_cost {
    double wait_ms, hash_ms, compare_ms, upload_ms; /* waiting for the store's locks; the bytes' work */
    size_t compared, uploaded;                      /* bytes */
    int memo_hits;
} cu_store_cost;
cu_store_cost cu_store_costs(void);

/* cuda_plan.c: rt_backend_iface's plan_compile and plan_free. */
lector_status cu_plan_compile(rt_backend *be, rt_plan *p, lector_error *err);
void cu_plan_free(rt_backend *be, rt_plan *p);

/* The builders of each operator family (cuda_plan.c's build_step dispatches
 * to them): 0 a step was built, 1 the node runs on the host, -1 out of memory. */
int cu_build_conv(compile_ctx *cc, const rt_node *n, cu_step *s, int transposed); /* cuda_conv.c */
int cu_build_matmul(compile_ctx *cc, const rt_node *n, cu_step *s);               /* cuda_matmul.c */
int cu_build_gap(compile_ctx *cc, const rt_node *n, cu_step *s);                  /* cuda_pool.c */
int cu_build_pool(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_softmax(compile_ctx *cc, const rt_node *n, cu_step *s); /* cuda_reduce.c */
int cu_build_layernorm(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_argmax(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_topk(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_gather(compile_ctx *cc, const rt_node *n, cu_step *s, int out_k); /* cuda_movement.c */
int cu_build_resize(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_copy(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_concat(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_binary(compile_ctx *cc, const rt_node *n, cu_step *s, int op); /* cuda_elementwise.c */
/* The chain op (CK_*) of a unary ONNX operator the chains run, or -1. */
int cu_unary_op(int onnx_op);
int cu_build_unary(compile_ctx *cc, const rt_node *n, cu_step *s);
int cu_build_batchnorm(compile_ctx *cc, const rt_node *n, cu_step *s);

/* The runners of each family (cuda_exec.c's cu_run_step dispatches to them). */
lector_status cu_run_cudnn_conv(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_dwconv(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_conv_gemm(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_deconv_ks(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_matmul(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_rowmean(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_gap_nhwc(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_pool(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_softmax(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_layernorm(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_argmax(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_resize(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_gather(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_copy(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_concat(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err);
lector_status cu_run_host_step(const exec_ctx *x, const rt_node *n, rt_backend *be,
                               lector_error *err); /* cuda_host.c */

/* cuda_exec.c: one step; the steps one by one (LECTOR_CUDA_CHECK, profile);
 * a kernel launch's status (a cudaError_t as int) at node n; the iface's
 * plan_execute, run_images and time_plan. */
lector_status cu_run_step(const exec_ctx *x, const cu_step *s, rt_backend *be, lector_error *err);
lector_status cu_run_eager(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err);
lector_status cu_kernel_status(int rc, const rt_node *n, lector_error *err);
lector_status cu_plan_execute(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                              lector_tensor *outputs, lector_error *err);
lector_status cu_run_images(rt_backend *be, const rt_plan *p, void *arena, const lector_image_input *rows,
                            size_t n_rows, lector_tensor *outputs, lector_error *err);
lector_status cu_time_plan(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs, int runs,
                           double *ms, lector_error *err);

/* cuda_graphs.c: the steps as the plan's own CUDA graph (x->own), the
 * worker's graph of the plan, or one by one. */
lector_status cu_run_steps(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err);
/* Points x at the plan's own arena and workspace when the plan has earned
 * them and no other call holds them (1), else leaves x as it is (0). */
int cu_own_take(rt_backend *be, const rt_plan *p, cu_plan *cp, exec_ctx *x);
/* Gives back what cu_own_take took, once the call's work on the stream is done. */
void cu_own_give(exec_ctx *x);
/* Frees the plan's own arena and graph (cu_plan_free). */
void cu_own_free(cu_ctx *c, cu_plan *cp);

/* cuda_profile.c: LECTOR_CUDA_PROFILE's level (0: off), and a plan's run under it. */
int cu_profiling(void);
lector_status cu_run_profiled(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err);

/* cuda_layout.c: storages of the plan's values (cp->vhalf, cp->vnhwc). */
void cu_assign_storage(compile_ctx *cc);
/* rt_plan_lifetimes_fn: keeps a depthwise convolution's input until the end of
 * the elementwise run after it (its fused epilogue reads the input meanwhile). */
void cu_plan_lifetimes(rt_backend *be, const rt_plan *p, int *last);
/* cuda_layout.c: whether a plan keeps its 4-D activations NHWC (fp16; fp32 text-line models) */
#define CU_LINE_MAX_HEIGHT 64
int cu_plan_nhwc(const rt_backend *be, const rt_plan *p);
/* A 4-D tensor of dims (N, C, H, W), fp32 NCHW weights -> `half`/`nhwc`
 * storage, appended to the constant block; returns its offset. */
size_t cu_convert_weights(compile_ctx *cc, const rt_value *wv, const int64_t *dims, int half, int nhwc);

/* cuda_fuse.c: every elementwise step into a chain, conv/matmul epilogues
 * absorbed. 0 on success; -1 when a step cannot be expressed. */
int cu_fuse_chains(compile_ctx *cc);
/* Runs a chain step, or a depthwise convolution with its chain inside (s->chain set). */
lector_status cu_run_chain(const exec_ctx *x, const cu_step *s, lector_error *err);

/* cuda_nvrtc.c: compiles the plan's chains into their own kernels (s->kfn):
 * shipped compiled, kept in the kernel cache or compiled by NVRTC; a kernel
 * none of them gives runs in the interpreter. Returns
 * the kernels NVRTC compiled for it (0: every one was in the process's
 * cache, which sizes do not key). */
int cu_compile_chains(compile_ctx *cc);
/* cuda_kcache.c: NVRTC's output for the compile whose whole input is
 * key[0..key_len), kept in directory `dir` (NULL: none). load: a cu_malloc'd
 * copy of the image, or NULL; store: best effort. */
void *cu_kcache_load(const char *dir, const char *key, size_t key_len, size_t *image_len);
void cu_kcache_store(const char *dir, const char *key, size_t key_len, const void *image, size_t image_len);
/* The read-only directory of the kernels shipped with the module, looked in
 * before the cache (cuda_kcache.c); NULL: none. */
const char *cu_kcache_shipped_dir(void);
/* The NVRTC that built the shipped kernels ("NVRTC 13.0", their keys' first
 * line; the directory's file NVRTC); NULL: not named, so their keys name
 * this machine's NVRTC, as the cache's do. */
const char *cu_kcache_shipped_nvrtc(void);

/* cuda_gemm.c: a half-precision product, fp32 sums, in cuBLAS's
 * column-major terms: D (m x n) = op(A) op(B), every operand packed (its
 * leading dimension is its row count); batch products at strides sa, sb, sd
 * (elements; 0: shared). d_half: D is fp16, else fp32. strided_api: cuBLAS's
 * strided batched call when it falls back (else cublasGemmEx, batch 1). */
typedef struct cu_gemm {
    cublasOperation_t ta, tb;
    int m, n, k, batch;
    long long sa, sb, sd;
    int d_half, strided_api;
} cu_gemm;
/* The algorithm of g's size class (or of g's own shape, when the class's
 * does not take it), chosen by the compile of a plan (its values on
 * 256-byte boundaries), for its step to keep; NULL: none to keep
 * (LECTOR_CUDA_LT=0, no cuBLASLt handle, a full table). */
const choice_entry *cu_gemm_choose(const compile_ctx *cc, const cu_gemm *g);
/* Runs g on the worker's stream with choice c (NULL: found here). */
lector_status cu_gemm_half(const exec_ctx *x, const cu_gemm *g, const choice_entry *c, const void *A, const void *B,
                           void *D, const rt_node *n, lector_error *err);

/* cuda_algos.c: cuDNN's convolution algorithm choices, one table for the
 * process, kept between processes in the kernel cache's directory. A key is
 * a convolution's signature (cuda_conv.c makes it) with cu_algo_ident's
 * index in v[0]'s bits 8 and up. */
typedef struct cu_algo_key {
    int64_t v[20];
} cu_algo_key;
/* The index of the backend's kind of GPU (its name, cuDNN, CUDA and the
 * driver); the first call for a kind reads its choices from `dir` (NULL:
 * none). */
int cu_algo_ident(const cu_ctx *c, const char *dir);
/* CU_ALGO_HIT: the choice for k is in *algo, *ws (another compile's, waited
 * for when it was being made). CU_ALGO_CLAIMED: the caller makes the choice
 * and must end with cu_algo_settle or cu_algo_abandon on *claim.
 * CU_ALGO_UNTABLED: the table could not grow; the caller chooses and keeps
 * nothing. */
enum { CU_ALGO_HIT, CU_ALGO_CLAIMED, CU_ALGO_UNTABLED };
int cu_algo_claim(const cu_algo_key *k, int *algo, size_t *ws, const choice_entry **claim);
/* Stores the claimed key's choice (algo -1: none) and wakes the compiles
 * waiting for it. */
void cu_algo_settle(const choice_entry *claim, int algo, size_t ws);
/* Gives a claim up without a choice: the next compile needing it tries again. */
void cu_algo_abandon(const choice_entry *claim);
/* Writes kind `id`'s choices to `dir` when some are new: at once with `now`
 * or while the table is small (under 512 choices), else when the last write
 * is 250 ms old. */
void cu_algo_save(int id, const char *dir, int now);
/* Launches a compiled chain; returns a cudaError_t as int. */
int cu_launch_compiled_chain(cudaStream_t sm, const cu_step *s, const void *const *ext, void *const *out);
/* Launches a depthwise convolution (S_DWCONV) whose epilogue chain was compiled
 * into its kernel (s->chain set): input x, weights w; returns a cudaError_t as int. */
int cu_launch_compiled_dw(cudaStream_t sm, const cu_step *s, const void *x, const void *w, const void *const *ext,
                          void *const *out);
/* For the backend's log line, in buf: "NVRTC 13.0", why chains run in the
 * interpreter, or that NVRTC is loaded only for a kernel not shipped.
 * Loads nothing. */
void cu_nvrtc_describe(char *buf, size_t len);

/* cuda_check.c: LECTOR_CUDA_CHECK=1, every step against the reference kernels. */
int cu_check_enabled(void);
lector_status cu_check_step(const exec_ctx *x, const cu_step *s, int index, lector_error *err);
/* Before step s runs: keeps the inputs it overwrites in place, for cu_check_step. */
void cu_check_prepare(const exec_ctx *x, const cu_step *s);

#endif
