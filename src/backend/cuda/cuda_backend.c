/*
 * cuda_backend.c - the CUDA backend: liblector-cuda.so, loaded with dlopen by
 * the core's module loader (src/rt/module.c), never linked into the core.
 *
 * A plan (one model, one input shape) compiles into a list of steps, one per
 * live node: cuDNN for Conv/ConvTranspose (algorithm from cuDNN's heuristic,
 * or a bounded timed search, cached per signature), cuBLAS for MatMul, our
 * kernels (kernels.cu) for the rest, every elementwise op inside a fused
 * chain (cuda_fuse.c, compiled per chain by cuda_nvrtc.c), and for an
 * operator or attribute combination none of these covers, a host step that
 * copies the inputs down, runs the reference kernel and copies the result
 * up (correct, slow, logged once per plan).
 *
 * Precision and layout: fp32 NCHW by default; with fp16 every float
 * activation is stored in half precision and 4-D tensors are NHWC where
 * their consumers allow (cuda_layout.c), so cuDNN runs its tensor-core
 * convolutions; a plan with anything that mode cannot express (a host step,
 * say) is compiled in fp32 NCHW instead, with a log line.
 *
 * Memory: weights are uploaded once per plan into one block; activations
 * live in the plan's arena (the core's memory plan, on the device); every
 * allocation is counted against a process-wide cap per GPU (gpu_mem_limit).
 * Concurrency: each call borrows a worker (stream, cuDNN and cuBLAS handles,
 * workspace, pinned staging) from the backend's pool, so threads never share
 * a stream. Failures (a CUDA error, out of memory, an injected fault) return
 * a status and leave the backend usable.
 *
 * Fault injection for tests: LECTOR_CUDA_FAIL=alloc:N makes the Nth device
 * allocation fail, LECTOR_CUDA_FAIL=launch:N the Nth step (counted from the
 * first use in the process; each fires once).
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

#define CU_MAX_DEV  64
#define CU_WS_LIMIT ((size_t)256 << 20) /* largest cuDNN workspace an algorithm may ask for */

const rt_host_api *H;

/* ---- errors -------------------------------------------------------------- */

static lector_status fail(lector_error *err, lector_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static lector_status fail(lector_error *err, lector_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

static lector_status cuda_fail(lector_error *err, cudaError_t e, const char *what)
{
    lector_status code = e == cudaErrorMemoryAllocation ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND;
    return fail(err, code, "cuda: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* ---- fault injection ------------------------------------------------------- */

static pthread_once_t fault_once = PTHREAD_ONCE_INIT;
static long fault_alloc_at, fault_launch_at;
static atomic_long fault_allocs, fault_launches;

static void fault_init(void)
{
    const char *s = H->testctl_str(LECTOR__TC_CUDA_FAIL);
    if (!s) return;
    if (!strncmp(s, "alloc:", 6))
        fault_alloc_at = atol(s + 6);
    else if (!strncmp(s, "launch:", 7))
        fault_launch_at = atol(s + 7);
}

static int fault_alloc(void)
{
    pthread_once(&fault_once, fault_init);
    return fault_alloc_at > 0 && atomic_fetch_add(&fault_allocs, 1) + 1 == fault_alloc_at;
}

static int fault_launch(void)
{
    pthread_once(&fault_once, fault_init);
    return fault_launch_at > 0 && atomic_fetch_add(&fault_launches, 1) + 1 == fault_launch_at;
}

/* ---- device memory under a cap ------------------------------------------------ */

typedef struct dev_block {
    void *p;
    size_t size;
    int device;
} dev_block;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t mem_used[CU_MAX_DEV], mem_limit[CU_MAX_DEV];
static dev_block *blocks;
static int n_blocks, cap_blocks;

/* The cap of a GPU is process-wide: the last backend created on it with a
 * nonzero cap sets it (an engine's three models share one). */
static void mem_set_limit(int dev, size_t limit)
{
    if (!limit) return;
    pthread_mutex_lock(&mem_lock);
    mem_limit[dev] = limit;
    pthread_mutex_unlock(&mem_lock);
}

static lector_status dev_alloc(int dev, size_t size, void **out, const char *what, lector_error *err)
{
    *out = NULL;
    if (!size) size = 256;
    if (fault_alloc())
        return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "cuda: injected allocation failure (LECTOR_CUDA_FAIL) for %s", what);
    pthread_mutex_lock(&mem_lock);
    if (mem_limit[dev] && mem_used[dev] + size > mem_limit[dev]) {
        size_t used = mem_used[dev], lim = mem_limit[dev];
        pthread_mutex_unlock(&mem_lock);
        return fail(err, LECTOR_ERR_OUT_OF_MEMORY,
                    "cuda: %s needs %zu bytes; the GPU memory cap (gpu_mem_limit) is %zu bytes, %zu in use", what, size,
                    lim, used);
    }
    mem_used[dev] += size; /* reserved before the allocation, so concurrent callers respect the cap */
    pthread_mutex_unlock(&mem_lock);
    cudaSetDevice(dev);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, size);
    pthread_mutex_lock(&mem_lock);
    if (e != cudaSuccess) {
        mem_used[dev] -= size;
        pthread_mutex_unlock(&mem_lock);
        cudaGetLastError(); /* not sticky: clear it */
        char buf[160];
        snprintf(buf, sizeof buf, "allocating %zu bytes for %s", size, what);
        return cuda_fail(err, e, buf);
    }
    /* room for the record is made here, under the lock that appends it: other
     * threads append between the reservation above and this point (checking
     * it before cudaMalloc let two of them write past the array's end) */
    if (n_blocks == cap_blocks) {
        int cap = cap_blocks ? 2 * cap_blocks : 64;
        dev_block *nb = cu_realloc(blocks, sizeof *nb * (size_t)cap);
        if (!nb) {
            mem_used[dev] -= size;
            pthread_mutex_unlock(&mem_lock);
            cudaFree(p);
            return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        blocks = nb;
        cap_blocks = cap;
    }
    blocks[n_blocks++] = (dev_block){p, size, dev};
    pthread_mutex_unlock(&mem_lock);
    *out = p;
    return LECTOR_OK;
}

static void dev_free(void *p)
{
    if (!p) return;
    pthread_mutex_lock(&mem_lock);
    for (int i = n_blocks - 1; i >= 0; i--)
        if (blocks[i].p == p) {
            mem_used[blocks[i].device] -= blocks[i].size;
            blocks[i] = blocks[--n_blocks];
            break;
        }
    pthread_mutex_unlock(&mem_lock);
    cudaFree(p);
}

/* ---- backend state and workers ------------------------------------------------- */

typedef struct cu_ctx {
    int device;
    int sm;                   /* compute capability, major * 10 + minor */
    _Atomic uint64_t kernels; /* NVRTC kernels compiled for this backend's plans */
    pthread_mutex_t lock;
    cu_worker *idle;
    char name[64];
} cu_ctx;

static void worker_free(cu_worker *w)
{
    if (!w) return;
    for (int i = 0; i < w->n_graphs; i++) cudaGraphExecDestroy(w->graphs[i].exec);
    if (w->dnn) cudnnDestroy(w->dnn);
    if (w->blas) cublasDestroy(w->blas);
    if (w->stream) cudaStreamDestroy(w->stream);
    dev_free(w->ws);
    dev_free(w->img);
    if (w->pin) cudaFreeHost(w->pin);
    cu_free(w);
}

static lector_status worker_get(cu_ctx *c, cu_worker **out, lector_error *err)
{
    pthread_mutex_lock(&c->lock);
    cu_worker *w = c->idle;
    if (w) c->idle = w->next;
    pthread_mutex_unlock(&c->lock);
    cudaSetDevice(c->device);
    if (w) {
        *out = w;
        return LECTOR_OK;
    }
    w = cu_calloc(1, sizeof *w);
    if (!w) return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    cudaError_t e = cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        cu_free(w);
        return cuda_fail(err, e, "creating a stream");
    }
    cudnnStatus_t ds = cudnnCreate(&w->dnn);
    if (ds != CUDNN_STATUS_SUCCESS) {
        worker_free(w);
        return fail(err, LECTOR_ERR_BACKEND, "cudnn: cudnnCreate: %s", cudnnGetErrorString(ds));
    }
    cudnnSetStream(w->dnn, w->stream);
    cublasStatus_t bs = cublasCreate(&w->blas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        worker_free(w);
        return fail(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                    "cublas: cublasCreate: %s", cublasGetStatusString(bs));
    }
    cublasSetStream(w->blas, w->stream);
    /* fp32 stays fp32: no TF32 unless asked for (parity with the CPU path); half-precision
     * products set the default math mode per call */
    cublasSetMathMode(w->blas, CUBLAS_PEDANTIC_MATH);
    *out = w;
    return LECTOR_OK;
}

static void worker_put(cu_ctx *c, cu_worker *w)
{
    pthread_mutex_lock(&c->lock);
    w->next = c->idle;
    c->idle = w;
    pthread_mutex_unlock(&c->lock);
}

/* One device workspace per worker: cuBLAS's (fixed, given to the handle so
 * that no allocation happens inside a CUDA graph capture) then the steps'
 * (cuDNN's, the NHWC pooling's partial sums). */
static lector_status worker_ws(cu_ctx *c, cu_worker *w, size_t need, lector_error *err)
{
    if (w->ws && need <= w->ws_size) return LECTOR_OK;
    dev_free(w->ws);
    w->ws = NULL;
    w->ws_size = 0;
    lector_status st = dev_alloc(c->device, CU_BLAS_WS + need, &w->ws, "the GPU workspace", err);
    if (st) return st;
    w->ws_size = need;
    cublasStatus_t bs = cublasSetWorkspace(w->blas, w->ws, CU_BLAS_WS);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return fail(err, LECTOR_ERR_BACKEND, "cublas: cublasSetWorkspace: %s", cublasGetStatusString(bs));
    return LECTOR_OK;
}

static lector_status worker_pin(cu_worker *w, size_t need, lector_error *err)
{
    if (need <= w->pin_size) return LECTOR_OK;
    if (w->pin) cudaFreeHost(w->pin);
    w->pin = NULL;
    w->pin_size = 0;
    size_t sz = need < ((size_t)1 << 20) ? ((size_t)1 << 20) : need + need / 4;
    cudaError_t e = cudaMallocHost(&w->pin, sz);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cuda_fail(err, e, "allocating pinned host memory");
    }
    w->pin_size = sz;
    return LECTOR_OK;
}

static lector_status cu_init(rt_backend *be, lector_error *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return fail(err, LECTOR_ERR_UNAVAILABLE, "cuda: no usable GPU: %s (%s)", cudaGetErrorString(e),
                    cudaGetErrorName(e));
    }
    if (be->device < 0 || be->device >= n || be->device >= CU_MAX_DEV)
        return fail(err, LECTOR_ERR_UNAVAILABLE, "cuda: GPU %d does not exist (%d visible)", be->device, n);
    cu_ctx *c = cu_calloc(1, sizeof *c);
    if (!c) return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    c->device = be->device;
    pthread_mutex_init(&c->lock, NULL);
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, c->device)) != cudaSuccess) {
        cu_free(c);
        return cuda_fail(err, e, "reading the device properties");
    }
    snprintf(c->name, sizeof c->name, "%.63s", prop.name);
    c->sm = prop.major * 10 + prop.minor;
    if (be->gpu_mem_limit) mem_set_limit(c->device, be->gpu_mem_limit);
    /* one worker up front: makes the context and finds a broken stack now, not at the first read */
    cu_worker *w;
    lector_status st = worker_get(c, &w, err);
    if (st) {
        pthread_mutex_destroy(&c->lock);
        cu_free(c);
        return st;
    }
    worker_put(c, w);
    be->ctx = c;
    H->log(2, "cuda: GPU %d (%s, sm_%d%d, %zu MiB), cuDNN %zu, cap %zu MiB, %s%s", c->device, prop.name, prop.major,
           prop.minor, (size_t)(prop.totalGlobalMem >> 20), cudnnGetVersion(), be->gpu_mem_limit >> 20,
           be->fp16 ? "fp16, " : "", cu_nvrtc_status());
    return LECTOR_OK;
}

static void cu_shutdown(rt_backend *be)
{
    cu_ctx *c = be->ctx;
    if (!c) return;
    cudaSetDevice(c->device);
    while (c->idle) {
        cu_worker *w = c->idle;
        c->idle = w->next;
        worker_free(w);
    }
    pthread_mutex_destroy(&c->lock);
    cu_free(c);
    be->ctx = NULL;
}

static void *cu_buffer_alloc(rt_backend *be, size_t size)
{
    cu_ctx *c = be->ctx;
    void *p;
    lector_error e;
    return dev_alloc(c->device, size, &p, "a plan's activations", &e) ? NULL : p;
}

static void cu_buffer_free(rt_backend *be, void *buf) { dev_free(buf); }

static lector_status cu_buffer_copy(rt_backend *be, void *dst, const void *src, size_t n, int to_device)
{
    cudaError_t e = cudaMemcpy(dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? LECTOR_OK : LECTOR_ERR_BACKEND;
}

/* ---- plans ------------------------------------------------------------------- */

size_t cbuf_add(cbuf *b, const void *data, size_t n, int *oom)
{
    if (n >= CU_SHARE_MIN) { /* a weight: shared with the other plans at upload */
        if (b->n_big == b->cap_big) {
            int cap = b->cap_big ? 2 * b->cap_big : 32;
            struct cbuf_chunk *nb = cu_realloc(b->big, sizeof *nb * (size_t)cap);
            if (!nb) {
                *oom = 1;
                return 0;
            }
            b->big = nb;
            b->cap_big = cap;
        }
        void *copy = data ? cu_malloc(n) : cu_calloc(1, n);
        if (!copy) {
            *oom = 1;
            return 0;
        }
        if (data) memcpy(copy, data, n);
        b->big[b->n_big] = (struct cbuf_chunk){copy, n};
        return CU_SHARED | (size_t)b->n_big++;
    }
    size_t off = (b->n + 255) & ~(size_t)255;
    if (off + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < off + n) cap *= 2;
        char *np = cu_realloc(b->p, cap);
        if (!np) {
            *oom = 1;
            return 0;
        }
        b->p = np;
        b->cap = cap;
    }
    if (data)
        memcpy(b->p + off, data, n);
    else
        memset(b->p + off, 0, n);
    b->n = off + n;
    return off;
}

static void cbuf_free(cbuf *b)
{
    for (int i = 0; i < b->n_big; i++) cu_free(b->big[i].p);
    cu_free(b->big);
    cu_free(b->p);
    *b = (cbuf){0};
}

/* ---- shared weights (see CU_SHARED) ------------------------------------------------ */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static cu_shared *shared_list;

static uint64_t bytes_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* A reference to the device copy of these bytes, uploading them if no plan
 * on this device holds them yet. Takes ownership of `host`. */
static lector_status shared_get(int dev, void *host, size_t n, cu_shared **out, lector_error *err)
{
    uint64_t h = bytes_hash(host, n);
    *out = NULL;
    pthread_mutex_lock(&shared_lock);
    for (cu_shared *s = shared_list; s; s = s->next)
        if (s->device == dev && s->hash == h && s->n == n && !memcmp(s->host, host, n)) {
            s->refs++;
            pthread_mutex_unlock(&shared_lock);
            cu_free(host);
            *out = s;
            return LECTOR_OK;
        }
    cu_shared *s = cu_calloc(1, sizeof *s);
    char *d = NULL;
    lector_status st = s ? dev_alloc(dev, n, (void **)&d, "the model's weights", err)
                         : fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!st) {
        cudaError_t e = cudaMemcpy(d, host, n, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            st = cuda_fail(err, e, "uploading the weights");
            dev_free(d);
        }
    }
    if (st) {
        pthread_mutex_unlock(&shared_lock);
        cu_free(s);
        cu_free(host);
        return st;
    }
    *s = (cu_shared){shared_list, h, n, host, d, dev, 1};
    shared_list = s;
    pthread_mutex_unlock(&shared_lock);
    *out = s;
    return LECTOR_OK;
}

static void shared_put(cu_shared *s)
{
    if (!s) return;
    pthread_mutex_lock(&shared_lock);
    int last = --s->refs == 0;
    if (last)
        for (cu_shared **pp = &shared_list; *pp; pp = &(*pp)->next)
            if (*pp == s) {
                *pp = s->next;
                break;
            }
    pthread_mutex_unlock(&shared_lock);
    if (!last) return;
    dev_free(s->dev);
    cu_free(s->host);
    cu_free(s);
}

/* Uploads the staged constants: the plan's own block and its shared chunks. */
static lector_status upload_constants(int device, cu_plan *cp, cbuf *cb, lector_error *err)
{
    lector_status st = LECTOR_OK;
    if (cb->n_big) {
        cp->shared = cu_calloc((size_t)cb->n_big, sizeof *cp->shared);
        if (!cp->shared) return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < cb->n_big && !st; i++) {
        st = shared_get(device, cb->big[i].p, cb->big[i].n, &cp->shared[i], err);
        cb->big[i].p = NULL; /* the store's now, or freed */
        if (!st) cp->n_shared = i + 1;
    }
    if (!st && cb->n) {
        st = dev_alloc(device, cb->n, (void **)&cp->cblock, "the model's constants", err);
        if (!st) {
            cudaError_t e = cudaMemcpy(cp->cblock, cb->p, cb->n, cudaMemcpyHostToDevice);
            if (e != cudaSuccess) st = cuda_fail(err, e, "uploading the constants");
        }
        cp->cblock_size = cb->n;
    }
    return st;
}

size_t cu_dsize(lector_dtype t)
{
    switch (t) {
    case LECTOR_DTYPE_UINT8:
    case LECTOR_DTYPE_INT8:
    case LECTOR_DTYPE_BOOL: return 1;
    case LECTOR_DTYPE_FLOAT16: return 2;
    case LECTOR_DTYPE_FLOAT32:
    case LECTOR_DTYPE_INT32: return 4;
    case LECTOR_DTYPE_INT64:
    case LECTOR_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

size_t cu_vsize(const cu_plan *cp, const rt_graph *g, int v)
{
    return cp->vhalf && cp->vhalf[v] ? 2 : cu_dsize(g->values[v].dtype);
}

const char *cu_op_name(int op) { return op >= 0 && op < H->n_ops ? H->ops[op].name : "?"; }

static int all_f32(const rt_graph *g, const rt_node *n)
{
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && !is_f32(val(g, n->in[k]))) return 0;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && !is_f32(val(g, n->out[k]))) return 0;
    return 1;
}

int *cu_consumer_counts(const rt_plan *p)
{
    const rt_graph *g = p->g;
    int *cons = cu_calloc((size_t)g->n_values + 1, sizeof *cons);
    if (!cons) return NULL;
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) cons[n->in[k]]++;
    }
    return cons;
}

/* Storage flags of value v (0 for constants: they stay fp32). */
static int vh(const compile_ctx *cc, int v) { return v >= 0 && cc->cp->vhalf[v]; }
static int vn(const compile_ctx *cc, int v) { return v >= 0 && cc->cp->vnhwc[v]; }

/* Conv / ConvTranspose padding: symmetric explicit pads, or auto_pad resolved
 * from the shapes. Returns 0 and (ph, pw) when cuDNN can express it. */
static int conv_pads(const rt_node *n, const rt_value *x, const rt_value *y, int kh, int kw, int sh, int sw, int dh,
                     int dw, int transposed, int *ph, int *pw)
{
    const char *ap = H->attr_string(n, "auto_pad", "NOTSET");
    const int64_t *pads;
    int np = H->attr_ints(n, "pads", &pads);
    int r = x->ndim - 2;
    if (!strcmp(ap, "NOTSET") || !strcmp(ap, "VALID")) {
        if (!strcmp(ap, "VALID") || np == 0) {
            *ph = *pw = 0;
            return 0;
        }
        if (np != 2 * r) return -1;
        if (r == 1) {
            if (pads[0] != pads[1]) return -1;
            *ph = 0;
            *pw = (int)pads[0];
            return 0;
        }
        if (pads[0] != pads[2] || pads[1] != pads[3]) return -1;
        *ph = (int)pads[0];
        *pw = (int)pads[1];
        return 0;
    }
    if (transposed) return -1;
    /* SAME_UPPER / SAME_LOWER: total padding from the output size */
    int64_t ih = r == 2 ? x->dims[2] : 1, iw = x->dims[x->ndim - 1];
    int64_t oh = r == 2 ? y->dims[2] : 1, ow = y->dims[y->ndim - 1];
    int64_t th = (oh - 1) * sh + (int64_t)(kh - 1) * dh + 1 - ih, tw = (ow - 1) * sw + (int64_t)(kw - 1) * dw + 1 - iw;
    if (th < 0) th = 0;
    if (tw < 0) tw = 0;
    if (th % 2 || tw % 2) return -1; /* asymmetric */
    *ph = (int)(th / 2);
    *pw = (int)(tw / 2);
    return 0;
}

static int set4d(cudnnTensorDescriptor_t d, const rt_value *v, int half, int nhwc)
{
    int n = (int)v->dims[0], c = (int)v->dims[1];
    int h = v->ndim == 4 ? (int)v->dims[2] : 1, w = (int)v->dims[v->ndim - 1];
    return cudnnSetTensor4dDescriptor(d, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                      half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT, n, c, h, w) != CUDNN_STATUS_SUCCESS;
}

/* ---- convolution algorithms ----
 * cuDNN's heuristic (cheap), or a timed search over its algorithms
 * (cudnnFind*: each algorithm once, bounded), cached per convolution
 * signature (shapes, parameters, storage) for the life of the process. */

typedef struct algo_key {
    int64_t v[20];
} algo_key;

typedef struct algo_entry {
    algo_key key;
    int algo;
    size_t ws;
} algo_entry;

static pthread_mutex_t algo_lock = PTHREAD_MUTEX_INITIALIZER;
static algo_entry *algos;
static int n_algos, cap_algos;

/* LECTOR_CUDA_CONV_SEARCH=1: the timed search. Off by default: on the H200
 * cuDNN's heuristic gave the faster plans in half precision (det batch 32:
 * 17.3 ms against 20.7 with the search; docs/BENCHMARKS.md), and fp32 plans keep
 * the algorithms whose results were checked against the CPU's to the text. */
static int conv_search(void) { return cu_switch(LECTOR__TC_CUDA_CONV_SEARCH, 0); }

static int choose_algo(compile_ctx *cc, cu_step *s, int transposed, const rt_value *x, const rt_value *wv,
                       const rt_value *y, const int *conv)
{
    algo_key k;
    memset(&k, 0, sizeof k);
    k.v[0] = transposed | s->half << 1 | s->nhwc << 2;
    for (int d = 0; d < 4; d++) {
        k.v[1 + d] = d < x->ndim ? x->dims[d] : 1;
        k.v[5 + d] = d < wv->ndim ? wv->dims[d] : 1;
        k.v[9 + d] = d < y->ndim ? y->dims[d] : 1;
    }
    for (int d = 0; d < 7; d++) k.v[13 + d] = conv[d];
    pthread_mutex_lock(&algo_lock);
    for (int i = 0; i < n_algos; i++)
        if (!memcmp(&algos[i].key, &k, sizeof k)) {
            s->algo = algos[i].algo;
            s->ws = algos[i].ws;
            pthread_mutex_unlock(&algo_lock);
            return 0;
        }
    pthread_mutex_unlock(&algo_lock);
    int found = 0, search = conv_search();
    if (!transposed) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        cudnnStatus_t r = search
                              ? cudnnFindConvolutionForwardAlgorithm(cc->w->dnn, s->xd, s->wd, s->cd, s->yd,
                                                                     CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf)
                              : cudnnGetConvolutionForwardAlgorithm_v7(cc->w->dnn, s->xd, s->wd, s->cd, s->yd,
                                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
        if (r) return 1;
        int i = 0;
        while (i < found && (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > CU_WS_LIMIT)) i++;
        if (i == found) return 1;
        s->algo = perf[i].algo;
        if (cudnnGetConvolutionForwardWorkspaceSize(cc->w->dnn, s->xd, s->wd, s->cd, s->yd, perf[i].algo, &s->ws))
            return 1;
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        cudnnStatus_t r =
            search ? cudnnFindConvolutionBackwardDataAlgorithm(cc->w->dnn, s->wd, s->xd, s->cd, s->yd,
                                                               CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf)
                   : cudnnGetConvolutionBackwardDataAlgorithm_v7(cc->w->dnn, s->wd, s->xd, s->cd, s->yd,
                                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf);
        if (r) return 1;
        int i = 0;
        while (i < found && (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > CU_WS_LIMIT)) i++;
        if (i == found) return 1;
        s->algo = perf[i].algo;
        if (cudnnGetConvolutionBackwardDataWorkspaceSize(cc->w->dnn, s->wd, s->xd, s->cd, s->yd, perf[i].algo, &s->ws))
            return 1;
    }
    cudaGetLastError(); /* a search may leave a failed allocation behind */
    pthread_mutex_lock(&algo_lock);
    if (n_algos == cap_algos) {
        int cap = cap_algos ? 2 * cap_algos : 256;
        algo_entry *na = cu_realloc(algos, sizeof *na * (size_t)cap);
        if (na) {
            algos = na;
            cap_algos = cap;
        }
    }
    if (n_algos < cap_algos) algos[n_algos++] = (algo_entry){k, s->algo, s->ws};
    pthread_mutex_unlock(&algo_lock);
    return 0;
}

/* Returns 0 when the step was built, 1 to run the node on the host, -1 on a hard error. */
static int build_conv(compile_ctx *cc, const rt_node *n, cu_step *s, int transposed)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *wv = val(g, n->in[1]), *y = val(g, n->out[0]);
    const rt_value *b = n->n_in > 2 ? val(g, n->in[2]) : NULL;
    if (!all_f32(g, n) || !wv->data || (b && !b->data) || (x->ndim != 4 && x->ndim != 3)) return 1;
    if (transposed && x->ndim != 4) return 1;
    int r = x->ndim - 2;
    const int64_t *a;
    int na;
    int sh = 1, sw = 1, dh = 1, dw = 1;
    if ((na = H->attr_ints(n, "strides", &a)) == r) {
        sh = r == 2 ? (int)a[0] : 1;
        sw = (int)a[r - 1];
    } else if (na)
        return 1;
    if ((na = H->attr_ints(n, "dilations", &a)) == r) {
        dh = r == 2 ? (int)a[0] : 1;
        dw = (int)a[r - 1];
    } else if (na)
        return 1;
    int group = (int)H->attr_int(n, "group", 1);
    int kh = r == 2 ? (int)wv->dims[2] : 1, kw = (int)wv->dims[wv->ndim - 1];
    int ph, pw;
    if (conv_pads(n, x, y, kh, kw, sh, sw, dh, dw, transposed, &ph, &pw)) return 1;
    s->half = vh(cc, n->in[0]);
    s->nhwc = vn(cc, n->in[0]) || vn(cc, n->out[0]);
    if (s->half != vh(cc, n->out[0])) return 1;
    s->n = numel(y);
    s->channels = y->dims[1];
    s->inner = s->n / (y->dims[0] * y->dims[1]);
    s->op = wv->dims[1] == 1 && group > 1 ? 2
            : kh == 1 && kw == 1          ? 1
                                          : 0; /* depthwise, pointwise, dense: for the profile */
    /* our own kernels where cuDNN is slow: depthwise over NHWC, and a ConvTranspose whose
     * kernel equals its stride (DB's upsampling head) */
    int64_t cin = x->dims[1];
    cu_window *q = &s->win;
    if (!transposed && r == 2 && s->nhwc && group == cin && wv->dims[0] == cin && wv->dims[1] == 1 &&
        cu_switch(LECTOR__TC_CUDA_DW, 1)) {
        float *t = cu_malloc(sizeof(float) * (size_t)(cin * kh * kw));
        if (!t) return -1;
        const float *w = wv->data;
        for (int64_t c = 0; c < cin; c++) /* [C][kh][kw] -> [kh][kw][C] */
            for (int k = 0; k < kh * kw; k++) t[(int64_t)k * cin + c] = w[c * kh * kw + k];
        s->wconv = cbuf_add(&cc->cb, t, sizeof(float) * (size_t)(cin * kh * kw), &cc->oom);
        cu_free(t);
        *q = (cu_window){.ih = (int)x->dims[2],
                         .iw = (int)x->dims[3],
                         .oh = (int)y->dims[2],
                         .ow = (int)y->dims[3],
                         .kh = kh,
                         .kw = kw,
                         .sh = sh,
                         .sw = sw,
                         .ph = ph,
                         .pw = pw,
                         .dh = dh,
                         .dw = dw,
                         .unroll = cu_switch(LECTOR__TC_CUDA_DW_UNROLL, 1)};
        s->outer = x->dims[0];
        s->kind = S_DWCONV;
        return 0;
    }
    /* a pointwise convolution over NHWC is one matrix product, Y[pixels][K] = X[pixels][C] W^T:
     * cuBLAS runs these tall, skinny products closer to the memory's speed than cuDNN. Over a
     * 1 x 1 image (the squeeze-and-excitation convolutions after a global pooling) both layouts
     * hold the same bytes and the product is Y[N][K] = X[N][C] W^T in either */
    int one_pixel = r == 2 && x->dims[2] * x->dims[3] == 1;
    if (!transposed && r == 2 && (s->nhwc || one_pixel) && group == 1 && kh == 1 && kw == 1 && sh == 1 && sw == 1 &&
        ph == 0 && pw == 0 && y->dims[2] == x->dims[2] && y->dims[3] == x->dims[3] &&
        cu_switch(LECTOR__TC_CUDA_GEMM1X1, 1) && x->dims[0] * x->dims[2] * x->dims[3] <= INT32_MAX) {
        int64_t d4[4] = {wv->dims[0], wv->dims[1], 1, 1};
        s->wconv = cu_convert_weights(cc, wv->data, d4, s->half, 0); /* [K][C] */
        s->m = (int)(x->dims[0] * x->dims[2] * x->dims[3]);
        s->k = (int)cin;
        s->nn = (int)wv->dims[0];
        s->kind = S_CONV_GEMM;
        return 0;
    }
    /* NHWC has a fast kernel for 2 x 2 and 4 x 4 blocks whose filter fits in shared memory */
    int deconv_nhwc_ok = ((kh == 2 && kw == 2) || (kh == 4 && kw == 4)) &&
                         cin * wv->dims[1] * kh * kw * (int64_t)sizeof(float) <= 48 * 1024;
    if (transposed && group == 1 && kh == sh && kw == sw && ph == 0 && pw == 0 && dh == 1 && dw == 1 &&
        (!s->nhwc || deconv_nhwc_ok) && y->dims[2] == x->dims[2] * kh && y->dims[3] == x->dims[3] * kw &&
        cu_switch(LECTOR__TC_CUDA_DECONV, 1)) {
        q->ih = (int)x->dims[2], q->iw = (int)x->dims[3], q->kh = kh, q->kw = kw;
        s->outer = x->dims[0];
        s->k = (int)cin;
        s->wconv = RT_NO_OFFSET; /* NCHW: the fp32 filter as the graph has it */
        if (s->nhwc) {           /* NHWC: [cin][cout][kh][kw] -> [cin][kh][kw][cout], output channels innermost */
            int64_t cout = wv->dims[1], nw = cin * cout * kh * kw;
            float *t = cu_malloc(sizeof(float) * (size_t)(nw ? nw : 1));
            if (!t) return -1;
            const float *w = wv->data;
            for (int64_t ci = 0; ci < cin; ci++)
                for (int64_t co = 0; co < cout; co++)
                    for (int k = 0; k < kh * kw; k++)
                        t[((ci * kh * kw) + k) * cout + co] = w[(ci * cout + co) * kh * kw + k];
            s->wconv = cbuf_add(&cc->cb, t, sizeof(float) * (size_t)nw, &cc->oom);
            cu_free(t);
        }
        s->kind = S_DECONV_KS;
        return 0;
    }
    if (cudnnCreateTensorDescriptor(&s->xd) || cudnnCreateTensorDescriptor(&s->yd) ||
        cudnnCreateFilterDescriptor(&s->wd) || cudnnCreateConvolutionDescriptor(&s->cd))
        return -1;
    if (set4d(s->xd, x, s->half, s->nhwc) || set4d(s->yd, y, s->half, s->nhwc)) return 1;
    if (cudnnSetFilter4dDescriptor(s->wd, s->half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT,
                                   s->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, (int)wv->dims[0], (int)wv->dims[1],
                                   kh, kw))
        return 1;
    cudnnMathType_t math = s->half                              ? CUDNN_TENSOR_OP_MATH
                           : cu_switch(LECTOR__TC_CUDA_TF32, 0) ? CUDNN_DEFAULT_MATH
                                                                : CUDNN_FMA_MATH;
    /* fp16 data, fp32 accumulation (cuDNN's PSEUDO_HALF_CONFIG) */
    if (cudnnSetConvolution2dDescriptor(s->cd, ph, pw, sh, sw, dh, dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ||
        cudnnSetConvolutionGroupCount(s->cd, group) || cudnnSetConvolutionMathType(s->cd, math))
        return 1;
    /* cuDNN's idea of the output must be ours (the forward direction of a transposed conv maps y to x) */
    int od[4];
    if (cudnnGetConvolutionNdForwardOutputDim(s->cd, transposed ? s->yd : s->xd, s->wd, 4, od)) return 1;
    const rt_value *chk = transposed ? x : y;
    int ch = chk->ndim == 4 ? (int)chk->dims[2] : 1;
    if (od[0] != chk->dims[0] || od[1] != chk->dims[1] || od[2] != ch || od[3] != chk->dims[chk->ndim - 1]) return 1;
    if (choose_algo(cc, s, transposed, x, wv, y, (int[]){ph, pw, sh, sw, dh, dw, group})) return 1;
    s->wconv = RT_NO_OFFSET;
    if (s->half || s->nhwc) { /* the filter in the storage cuDNN reads: fp16, KRSC for NHWC */
        int64_t d4[4] = {wv->dims[0], wv->dims[1], kh, kw};
        s->wconv = cu_convert_weights(cc, wv->data, d4, s->half, s->nhwc);
    }
    s->kind = transposed ? S_DECONV : S_CONV;
    return 0;
}

static int build_binary(compile_ctx *cc, const rt_node *n, cu_step *s, int op)
{
    if (n->n_in != 2 || n->n_out != 1 || !all_f32(cc->g, n) || val(cc->g, n->out[0])->ndim > CK_MAX_DIMS) return 1;
    s->kind = S_BINARY; /* becomes (part of) a chain */
    s->op = op;
    return 0;
}

static int build_unary(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]);
    if (!is_f32(x) || !is_f32(val(g, n->out[0])) || n->n_out != 1) return 1;
    int op;
    float alpha = 0.f, beta = 0.f;
    switch (g->nodes[s->node].op) {
    case RT_OP_Relu: op = CK_RELU; break;
    case RT_OP_Sigmoid: op = CK_SIGMOID; break;
    case RT_OP_Tanh: op = CK_TANH; break;
    case RT_OP_Exp: op = CK_EXP; break;
    case RT_OP_Log: op = CK_LOG; break;
    case RT_OP_Sqrt: op = CK_SQRT; break;
    case RT_OP_Abs: op = CK_ABS; break;
    case RT_OP_Neg: op = CK_NEG; break;
    case RT_OP_Erf: op = CK_ERF; break;
    case RT_OP_Reciprocal: op = CK_RECIPROCAL; break;
    case RT_OP_Floor: op = CK_FLOOR; break;
    case RT_OP_Ceil: op = CK_CEIL; break;
    case RT_OP_HardSigmoid:
        op = CK_HARDSIGMOID;
        alpha = H->attr_float(n, "alpha", 0.2f);
        beta = H->attr_float(n, "beta", 0.5f);
        break;
    case RT_OP_HardSwish:
        op = CK_HARDSWISH;
        alpha = 1.f / 6.f;
        beta = 0.5f;
        break;
    case RT_OP_LeakyRelu:
        op = CK_LEAKYRELU;
        alpha = H->attr_float(n, "alpha", 0.01f);
        break;
    case RT_OP_Clip: {
        op = CK_CLIP;
        alpha = -INFINITY;
        beta = INFINITY;
        for (int k = 1; k < 3 && k < n->n_in; k++) {
            const rt_value *v = val(g, n->in[k]);
            if (!v) continue;
            if (!v->data || !is_f32(v)) return 1;
            if (k == 1)
                alpha = *(const float *)v->data;
            else
                beta = *(const float *)v->data;
        }
        break;
    }
    default: return 1;
    }
    s->kind = S_UNARY; /* becomes (part of) a chain */
    s->op = op;
    s->alpha = alpha;
    s->beta = beta;
    s->n = numel(x);
    return 0;
}

/* Runs a data-movement reference kernel on an index tensor to learn where each
 * output element comes from; when that is affine in the output index (Slice,
 * Transpose, Split, Expand), the step is a strided gather. */
static int build_affine_gather(compile_ctx *cc, const rt_node *n, cu_step *s, int out_k)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[out_k]);
    if (y->ndim > CK_MAX_DIMS || x->dtype != y->dtype) return 1;
    for (int k = 1; k < n->n_in; k++)
        if (n->in[k] >= 0 && !val(g, n->in[k])->data) return 1; /* shape operands must be constants */
    size_t es = cu_vsize(cc->cp, g, n->in[0]);
    int64_t nx = numel(x), ny = numel(y);
    if ((es != 2 && es != 4 && es != 8) || es != cu_vsize(cc->cp, g, n->out[out_k]) || nx == 0 || ny == 0) return 1;
    /* the probe's elements are int64 indices whatever the real type: data
     * movement does not look at values */
    lector_dtype pt = LECTOR_DTYPE_INT64;
    void *xi = cu_malloc((size_t)nx * 8);
    lector_tensor in[8], out[8];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    void *outs[8] = {0};
    int ok = xi != NULL && n->n_in <= 8 && n->n_out <= 8;
    for (int64_t i = 0; ok && i < nx; i++) {
        if (pt == LECTOR_DTYPE_FLOAT32)
            ((float *)xi)[i] = (float)i;
        else if (pt == LECTOR_DTYPE_INT32)
            ((int32_t *)xi)[i] = (int32_t)i;
        else
            ((int64_t *)xi)[i] = i;
    }
    for (int k = 0; ok && k < n->n_in; k++) {
        if (n->in[k] < 0) continue;
        const rt_value *v = val(g, n->in[k]);
        in[k].dtype = k == 0 ? pt : v->dtype;
        in[k].ndim = v->ndim;
        memcpy(in[k].dims, v->dims, sizeof v->dims);
        in[k].data = k == 0 ? xi : v->data;
    }
    for (int k = 0; ok && k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        const rt_value *v = val(g, n->out[k]);
        out[k].dtype = v->dtype == x->dtype ? pt : v->dtype;
        out[k].ndim = v->ndim;
        memcpy(out[k].dims, v->dims, sizeof v->dims);
        outs[k] = cu_malloc((size_t)(numel(v) ? numel(v) : 1) * 8 + 8);
        out[k].data = outs[k];
        if (!outs[k]) ok = 0;
    }
    lector_error e = {0};
    rt_kernel_ctx kc = {1, &e};
    if (ok && H->ops[n->op].ref(n, in, out, &kc)) ok = 0;
    int res = 1;
    if (ok) {
        const void *yo = outs[out_k];
#define AT(i)                                                       \
    (pt == LECTOR_DTYPE_FLOAT32 ? (int64_t)((const float *)yo)[i]   \
     : pt == LECTOR_DTYPE_INT32 ? (int64_t)((const int32_t *)yo)[i] \
                                : ((const int64_t *)yo)[i])
        ck_gather_desc d = {0};
        d.ndim = y->ndim ? y->ndim : 1;
        d.base = AT(0);
        int64_t unit = 1;
        for (int k = y->ndim - 1; k >= 0; k--) {
            d.dims[k] = y->dims[k];
            d.stride[k] = y->dims[k] > 1 ? AT(unit) - d.base : 0;
            unit *= y->dims[k];
        }
        if (!y->ndim) d.dims[0] = 1;
        /* verify: the probe must be exactly affine */
        int affine = 1;
        for (int64_t i = 0; i < ny && affine; i++) {
            int64_t r = i, off = d.base;
            for (int k = d.ndim - 1; k >= 0; k--) {
                int64_t q = r / d.dims[k];
                off += (r - q * d.dims[k]) * d.stride[k];
                r = q;
            }
            affine = off == AT(i);
        }
#undef AT
        if (affine) {
            s->kind = S_GATHER;
            s->gd = d;
            s->elem = es;
            res = 0;
        }
    }
    cu_free(xi);
    for (int k = 0; k < 8; k++) cu_free(outs[k]);
    return res;
}

static int build_resize(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
    if (!all_f32(g, n) && (!is_f32(x) || !is_f32(y))) return 1;
    if (strcmp(H->attr_string(n, "mode", "nearest"), "nearest") || x->ndim != 4 || x->dims[0] != y->dims[0] ||
        x->dims[1] != y->dims[1])
        return 1;
    for (int k = 1; k < n->n_in; k++)
        if (n->in[k] >= 0 && !val(g, n->in[k])->data) return 1;
    /* the probe is one plane: N and C are not resized, so any plane maps alike */
    int64_t H0 = x->dims[2], W0 = x->dims[3], OH = y->dims[2], OW = y->dims[3];
    int64_t nx = H0 * W0, ny = OH * OW;
    if (nx >= (1 << 24) || n->n_in > 4) return 1;
    const rt_value *scales = n->n_in > 2 && n->in[2] >= 0 ? val(g, n->in[2]) : NULL;
    if (scales && numel(scales) == 4 &&
        (!is_f32(scales) || ((const float *)scales->data)[0] != 1.f || ((const float *)scales->data)[1] != 1.f))
        return 1;
    int64_t sizes1[4] = {1, 1, OH, OW};
    float *xi = cu_malloc(sizeof(float) * (size_t)nx), *yo = cu_malloc(sizeof(float) * (size_t)ny);
    int res = 1;
    if (xi && yo) {
        for (int64_t i = 0; i < nx; i++) xi[i] = (float)i;
        lector_tensor in[4], out[1];
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        for (int k = 0; k < n->n_in && k < 4; k++) {
            if (n->in[k] < 0) continue;
            const rt_value *v = val(g, n->in[k]);
            in[k].dtype = v->dtype;
            in[k].ndim = v->ndim;
            memcpy(in[k].dims, v->dims, sizeof v->dims);
            in[k].data = v->data;
            if (k == 3 && numel(v) == 4 && v->dtype == LECTOR_DTYPE_INT64) in[k].data = sizes1;
        }
        in[0].data = xi;
        in[0].dims[0] = in[0].dims[1] = 1;
        out[0].dtype = y->dtype;
        out[0].ndim = 4;
        memcpy(out[0].dims, sizes1, sizeof sizes1);
        out[0].data = yo;
        lector_error e = {0};
        rt_kernel_ctx kc = {1, &e};
        if (n->n_in <= 4 && !H->ops[n->op].ref(n, in, out, &kc)) {
            int *tab = cu_malloc(sizeof(int) * (size_t)(OH + OW));
            if (tab) {
                for (int64_t o = 0; o < OH; o++) tab[o] = (int)((int64_t)yo[o * OW] / W0);
                for (int64_t o = 0; o < OW; o++) tab[OH + o] = (int)((int64_t)yo[o] % W0);
                /* separable: check every element of the first plane */
                int sep = 1;
                for (int64_t i = 0; i < OH * OW && sep; i++)
                    sep = (int64_t)yo[i] == tab[i / OW] * W0 + tab[OH + i % OW];
                if (sep) {
                    s->aux = cbuf_add(&cc->cb, tab, sizeof(int) * (size_t)(OH + OW), &cc->oom);
                    s->kind = S_RESIZE;
                    s->outer = x->dims[0];
                    s->channels = x->dims[1];
                    s->half = vh(cc, n->in[0]);
                    s->nhwc = vn(cc, n->in[0]) || vn(cc, n->out[0]);
                    res = s->half != vh(cc, n->out[0]);
                }
                cu_free(tab);
            }
        }
    }
    cu_free(xi);
    cu_free(yo);
    return res;
}

static int build_matmul(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    if (!all_f32(g, n)) return 1;
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
    int ah = a->data ? -1 : vh(cc, n->in[0]), bh = b->data ? -1 : vh(cc, n->in[1]);
    s->half = ah == 1 || bh == 1;
    s->c_half = vh(cc, n->out[0]);
    if ((s->half && (ah == 0 || bh == 0)) || (!s->half && s->c_half)) return 1;
    s->wconv = s->aconv = RT_NO_OFFSET;
    if (s->half) {
        if (b->data) s->wconv = cu_convert_weights(cc, b->data, (int64_t[]){1, 1, 1, numel(b)}, 1, 0);
        if (a->data) s->aconv = cu_convert_weights(cc, a->data, (int64_t[]){1, 1, 1, numel(a)}, 1, 0);
    }
    return 0;
}

/* The reduced axis of ReduceMax when it is only the last one, else -1. */
static int reduce_last_axis(const compile_ctx *cc, const rt_node *n)
{
    const rt_value *x = val(cc->g, n->in[0]);
    const int64_t *axes = NULL;
    int na = 0;
    if (n->n_in > 1 && n->in[1] >= 0) {
        const rt_value *av = val(cc->g, n->in[1]);
        if (!av->data || av->dtype != LECTOR_DTYPE_INT64) return -1;
        axes = av->data;
        na = (int)numel(av);
    } else {
        na = H->attr_ints(n, "axes", &axes);
    }
    if (na != 1 || x->ndim < 1) return -1;
    int64_t ax = axes[0] < 0 ? axes[0] + x->ndim : axes[0];
    return ax == x->ndim - 1 ? (int)ax : -1;
}

static int build_step(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    int r = 1;
    switch (n->op) {
    case RT_OP_Conv: r = build_conv(cc, n, s, 0); break;
    case RT_OP_ConvTranspose: r = build_conv(cc, n, s, 1); break;
    case RT_OP_Add: r = build_binary(cc, n, s, CK_ADD); break;
    case RT_OP_Sub: r = build_binary(cc, n, s, CK_SUB); break;
    case RT_OP_Mul: r = build_binary(cc, n, s, CK_MUL); break;
    case RT_OP_Div: r = build_binary(cc, n, s, CK_DIV); break;
    case RT_OP_Pow: r = build_binary(cc, n, s, CK_POW); break;
    case RT_OP_Max: r = build_binary(cc, n, s, CK_MAX); break;
    case RT_OP_Min: r = build_binary(cc, n, s, CK_MIN); break;
    case RT_OP_Relu:
    case RT_OP_Sigmoid:
    case RT_OP_Tanh:
    case RT_OP_Exp:
    case RT_OP_Log:
    case RT_OP_Sqrt:
    case RT_OP_Abs:
    case RT_OP_Neg:
    case RT_OP_Erf:
    case RT_OP_Reciprocal:
    case RT_OP_Floor:
    case RT_OP_Ceil:
    case RT_OP_HardSigmoid:
    case RT_OP_HardSwish:
    case RT_OP_LeakyRelu:
    case RT_OP_Clip: r = build_unary(cc, n, s); break;
    case RT_OP_BatchNormalization: {
        if (!all_f32(g, n) || n->n_out != 1 || val(g, n->in[0])->ndim < 2) break;
        int ok = 1;
        for (int k = 1; k < 5; k++) ok &= n->in[k] >= 0 && val(g, n->in[k])->data != NULL;
        if (!ok) break;
        const rt_value *x = val(g, n->in[0]);
        int64_t C = x->dims[1];
        float *t = cu_malloc(sizeof(float) * (size_t)(2 * C));
        if (!t) break;
        const float *sc = val(g, n->in[1])->data, *b = val(g, n->in[2])->data, *mean = val(g, n->in[3])->data,
                    *var = val(g, n->in[4])->data;
        float eps = H->attr_float(n, "epsilon", 1e-5f);
        for (int64_t c = 0; c < C; c++) { /* the reference's arithmetic, to the bit */
            float a = sc[c] / sqrtf(var[c] + eps);
            t[c] = a;
            t[C + c] = b[c] - mean[c] * a;
        }
        s->aux = cbuf_add(&cc->cb, t, sizeof(float) * (size_t)(2 * C), &cc->oom);
        cu_free(t);
        s->kind = S_AFFINE; /* becomes (part of) a chain */
        s->n = numel(x);
        s->channels = C;
        s->inner = s->n / (x->dims[0] * C);
        r = 0;
        break;
    }
    case RT_OP_GlobalAveragePool: {
        const rt_value *x = val(g, n->in[0]);
        if (!all_f32(g, n) || x->ndim < 3) break;
        s->half = vh(cc, n->in[0]);
        if (s->half != vh(cc, n->out[0])) break;
        if (x->ndim == 4 && vn(cc, n->in[0])) {
            s->kind = S_GAP_NHWC;
            s->outer = x->dims[0];
            s->channels = x->dims[1];
            s->inner = x->dims[2] * x->dims[3];
            s->k = ck_gap_nhwc_splits(s->outer, s->inner, s->channels);
            s->ws = (size_t)s->outer * (size_t)s->k * (size_t)s->channels * sizeof(float);
        } else {
            s->kind = S_ROWMEAN;
            s->outer = x->dims[0] * x->dims[1];
            s->inner = numel(x) / s->outer;
        }
        r = 0;
        break;
    }
    case RT_OP_MaxPool:
    case RT_OP_AveragePool: {
        const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
        if (!all_f32(g, n) || x->ndim != 4 || n->n_out != 1) break;
        if (strcmp(H->attr_string(n, "auto_pad", "NOTSET"), "NOTSET")) break;
        const int64_t *ks, *st, *pd, *dl;
        int nk = H->attr_ints(n, "kernel_shape", &ks), ns = H->attr_ints(n, "strides", &st),
            np = H->attr_ints(n, "pads", &pd), nd = H->attr_ints(n, "dilations", &dl);
        if (nk != 2 || (ns && ns != 2) || (np && np != 4) || (nd && nd != 2)) break;
        int cip = (int)H->attr_int(n, "count_include_pad", 0);
        if (np && (pd[0] != pd[2] || pd[1] != pd[3]) && n->op == RT_OP_AveragePool && cip) break;
        s->win = (cu_window){.ih = (int)x->dims[2],
                             .iw = (int)x->dims[3],
                             .oh = (int)y->dims[2],
                             .ow = (int)y->dims[3],
                             .kh = (int)ks[0],
                             .kw = (int)ks[1],
                             .sh = ns ? (int)st[0] : 1,
                             .sw = ns ? (int)st[1] : 1,
                             .ph = np ? (int)pd[0] : 0,
                             .pw = np ? (int)pd[1] : 0,
                             .dh = nd ? (int)dl[0] : 1,
                             .dw = nd ? (int)dl[1] : 1,
                             .max_pool = n->op == RT_OP_MaxPool,
                             .count_pad = cip};
        s->kind = S_POOL;
        s->outer = x->dims[0];
        s->channels = x->dims[1];
        s->half = vh(cc, n->in[0]);
        if (s->half != vh(cc, n->out[0])) break;
        s->nhwc = vn(cc, n->in[0]) || vn(cc, n->out[0]);
        r = 0;
        break;
    }
    case RT_OP_Resize: r = build_resize(cc, n, s); break;
    case RT_OP_Reshape:
    case RT_OP_Squeeze:
    case RT_OP_Unsqueeze:
    case RT_OP_Flatten:
    case RT_OP_Identity:
    case RT_OP_Dropout: {
        const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
        if (x->dtype != y->dtype || numel(x) != numel(y) || !cu_dsize(x->dtype)) break;
        if (n->op == RT_OP_Dropout && n->n_out > 1 && n->out[1] >= 0) break;
        if (cu_vsize(cc->cp, g, n->in[0]) != cu_vsize(cc->cp, g, n->out[0])) break;
        s->kind = S_COPY;
        s->n = numel(x);
        s->elem = cu_vsize(cc->cp, g, n->in[0]);
        r = 0;
        break;
    }
    case RT_OP_Slice:
    case RT_OP_Transpose:
    case RT_OP_Expand: r = build_affine_gather(cc, n, s, 0); break;
    case RT_OP_Concat: {
        const rt_value *y = val(g, n->out[0]);
        int axis = (int)H->attr_int(n, "axis", 0);
        if (axis < 0) axis += y->ndim;
        if (axis < 0 || axis >= y->ndim || !cu_dsize(y->dtype) || n->n_in > CK_CONCAT_MAX) break;
        size_t es = cu_vsize(cc->cp, g, n->out[0]);
        int ok = 1;
        for (int k = 0; k < n->n_in; k++)
            ok &= n->in[k] >= 0 && val(g, n->in[k])->dtype == y->dtype && cu_vsize(cc->cp, g, n->in[k]) == es &&
                  (!cc->cp->half || !val(g, n->in[k])->data || !is_f32(val(g, n->in[k])));
        if (!ok) break;
        /* the axis in memory order: NHWC keeps C innermost */
        int nhwc = y->ndim == 4 && vn(cc, n->out[0]);
        static const int phys_of[4] = {0, 3, 1, 2};
        int64_t pd[4] = {y->dims[0], y->ndim == 4 ? y->dims[2] : 0, y->ndim == 4 ? y->dims[3] : 0, y->dims[1]};
        int pa = nhwc ? phys_of[axis] : axis;
        s->outer = 1;
        s->inner = 1;
        for (int d = 0; d < y->ndim; d++) {
            int64_t dim = nhwc ? pd[d] : y->dims[d];
            if (d < pa)
                s->outer *= dim;
            else if (d > pa)
                s->inner *= dim;
        }
        s->kind = S_CONCAT;
        s->elem = es;
        s->op = axis;
        r = 0;
        break;
    }
    case RT_OP_MatMul: r = build_matmul(cc, n, s); break;
    case RT_OP_Softmax: {
        const rt_value *x = val(g, n->in[0]);
        if (!all_f32(g, n)) break;
        int rk = x->ndim, old = H->node_opset(n) < 13;
        int axis = (int)H->attr_int(n, "axis", old ? 1 : -1);
        if (axis < 0) axis += rk;
        if (axis < 0 || axis >= (rk ? rk : 1)) break;
        s->outer = 1, s->len = 1, s->inner = 1;
        for (int i = 0; i < axis; i++) s->outer *= x->dims[i];
        if (old) {
            for (int i = axis; i < rk; i++) s->len *= x->dims[i];
        } else {
            s->len = x->dims[axis];
            for (int i = axis + 1; i < rk; i++) s->inner *= x->dims[i];
        }
        s->kind = S_SOFTMAX;
        s->half = vh(cc, n->in[0]);
        if (s->half != vh(cc, n->out[0])) break;
        r = 0;
        break;
    }
    case RT_OP_LayerNormalization: {
        const rt_value *x = val(g, n->in[0]);
        if (!all_f32(g, n) || n->n_out > 1) break;
        int rk = x->ndim, axis = (int)H->attr_int(n, "axis", -1);
        if (axis < 0) axis += rk;
        if (axis < 0 || axis >= rk) break;
        int64_t outer = 1;
        for (int i = 0; i < axis; i++) outer *= x->dims[i];
        int64_t inner = numel(x) / (outer ? outer : 1);
        const rt_value *sv = val(g, n->in[1]), *bv = n->n_in > 2 ? val(g, n->in[2]) : NULL;
        s->ns = numel(sv);
        s->nb = bv ? numel(bv) : 0;
        if ((s->ns != inner && s->ns != 1) || (bv && s->nb != inner && s->nb != 1)) break;
        s->half = vh(cc, n->in[0]);
        if (s->half != vh(cc, n->out[0])) break;
        if (s->half && (!sv->data || (bv && !bv->data))) break; /* scale and bias are read as fp32 */
        s->kind = S_LAYERNORM;
        s->outer = outer;
        s->inner = inner;
        s->eps = H->attr_float(n, "epsilon", 1e-5f);
        r = 0;
        break;
    }
    case RT_OP_ArgMax:
    case RT_OP_ReduceMax: { /* over the last axis only: one row kernel, the index (op 0) or the maximum (op 1) */
        const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
        if (!is_f32(x) || x->ndim < 1 || numel(x) == 0) break;
        if (n->op == RT_OP_ArgMax) {
            int64_t axis = H->attr_int(n, "axis", 0);
            if (axis < 0) axis += x->ndim;
            if (y->dtype != LECTOR_DTYPE_INT64 || axis != x->ndim - 1 || H->attr_int(n, "select_last_index", 0)) break;
        } else if (!is_f32(y) || reduce_last_axis(cc, n) < 0) {
            break;
        }
        s->kind = S_ARGMAX;
        s->op = n->op == RT_OP_ReduceMax;
        s->len = x->dims[x->ndim - 1];
        s->outer = numel(x) / s->len;
        s->half = vh(cc, n->in[0]);
        r = 0;
        break;
    }
    default: break;
    }
    if (r == 0) /* a GPU step reads its constant operands from the device (fp32, as in the graph) */
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && val(g, n->in[k])->data) {
                int converted = (k == 1 && CU_HAS_RAW_OUTPUT(s->kind) && s->wconv != RT_NO_OFFSET) ||
                                (k == 0 && s->kind == S_MATMUL && s->aconv != RT_NO_OFFSET);
                if (!converted) cc->need_const[n->in[k]] = 1;
            }
    return r;
}

/* Steps other than chains and MatMul read and write one storage precision
 * (the float activations of the node all fp16 or all fp32):
 * a plan whose storages mix at such a step is refused (and compiled in fp32). */
static int storage_uniform(const compile_ctx *cc, const rt_node *n, const cu_step *s)
{
    switch (s->kind) {
    case S_AFFINE:
    case S_BINARY:
    case S_UNARY:
    case S_CHAIN:
    case S_MATMUL:
    case S_ARGMAX:
    case S_CONVERT:
    case S_HOST: return 1;
    default: break;
    }
    const rt_graph *g = cc->g;
    int storage = -1;
    for (int k = 0; k < n->n_in + n->n_out; k++) {
        int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
        if (v < 0 || !is_f32(&g->values[v]) || g->values[v].data) continue;
        if (storage < 0)
            storage = cc->cp->vhalf[v];
        else if (cc->cp->vhalf[v] != storage)
            return 0;
    }
    return 1;
}

static void cu_plan_free(rt_backend *be, rt_plan *p)
{
    cu_plan *cp = p->be_plan;
    if (!cp) return;
    for (int i = 0; i < cp->n_steps; i++) {
        cu_step *s = &cp->steps[i];
        if (s->xd) cudnnDestroyTensorDescriptor(s->xd);
        if (s->yd) cudnnDestroyTensorDescriptor(s->yd);
        if (s->wd) cudnnDestroyFilterDescriptor(s->wd);
        if (s->cd) cudnnDestroyConvolutionDescriptor(s->cd);
        cu_free(s->chain);
    }
    dev_free(cp->cblock);
    for (int i = 0; i < cp->n_shared; i++) shared_put(cp->shared[i]);
    cu_free(cp->shared);
    cu_free(cp->steps);
    cu_free(cp->coff);
    cu_free(cp->in_off);
    cu_free(cp->in_conv);
    cu_free(cp->out_conv);
    cu_free(cp->vhalf);
    cu_free(cp->vnhwc);
    cu_free(cp);
    p->be_plan = NULL;
}

static cu_step *push_step(cu_plan *cp)
{
    if (cp->n_steps == cp->cap_steps) {
        int cap = cp->cap_steps ? 2 * cp->cap_steps : 64;
        cu_step *ns = cu_realloc(cp->steps, sizeof *ns * (size_t)cap);
        if (!ns) return NULL;
        cp->steps = ns;
        cp->cap_steps = cap;
    }
    cu_step *s = &cp->steps[cp->n_steps++];
    memset(s, 0, sizeof *s);
    s->wconv = s->aconv = RT_NO_OFFSET;
    for (int e = 0; e < CK_CHAIN_EXT; e++) s->ext_cb[e] = RT_NO_OFFSET;
    s->chain_src = -1;
    return s;
}

/* A float graph input or output stored other than fp32 NCHW. */
static int needs_convert(const rt_graph *g, const cu_plan *cp, int v)
{
    return !g->values[v].data && is_f32(&g->values[v]) && (cp->vhalf[v] || cp->vnhwc[v]);
}

/* A conversion step of value v: from fp32 NCHW to its storage (an input,
 * `in` = 1) or from its storage to fp32 NCHW (an output); the arena offsets
 * are set once the arena is laid out. */
static lector_status push_convert(cu_plan *cp, const rt_graph *g, int v, int in, lector_error *err)
{
    cu_step *s = push_step(cp);
    if (!s) return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    s->kind = S_CONVERT;
    s->node = -1;
    s->cv_value = v;
    if (in)
        s->cv_dst_half = cp->vhalf[v], s->cv_dst_nhwc = cp->vnhwc[v];
    else
        s->cv_src_half = cp->vhalf[v], s->cv_src_nhwc = cp->vnhwc[v];
    cu_dims4(&g->values[v], s->cv_dims);
    return LECTOR_OK;
}

/* Compiles plan p in one mode. *unsupported = 1 when it failed only because
 * that mode (fp16, NHWC) cannot express something. */
static lector_status compile_mode(rt_backend *be, rt_plan *p, int half, int nhwc, int *unsupported, lector_error *err)
{
    cu_ctx *c = be->ctx;
    const rt_graph *g = p->g;
    *unsupported = 0;
    cu_plan *cp = cu_calloc(1, sizeof *cp);
    if (!cp) return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    p->be_plan = cp;
    static atomic_ulong next_id;
    cp->id = atomic_fetch_add(&next_id, 1) + 1;
    cp->half = half;
    cp->nhwc = nhwc;
    compile_ctx cc = {.be = be, .p = p, .g = g, .cp = cp, .sm = c->sm};
    size_t nv = (size_t)g->n_values + 1;
    cp->coff = cu_malloc(sizeof(size_t) * nv);
    cp->vhalf = cu_calloc(nv, 1);
    cp->vnhwc = cu_calloc(nv, 1);
    cp->in_off = cu_calloc((size_t)g->n_inputs + 1, sizeof(size_t));
    cp->in_conv = cu_malloc(sizeof(size_t) * ((size_t)g->n_inputs + 1));
    cp->out_conv = cu_malloc(sizeof(size_t) * ((size_t)g->n_outputs + 1));
    cc.need_const = cu_calloc(nv, sizeof(int));
    if (!cp->coff || !cp->vhalf || !cp->vnhwc || !cp->in_off || !cp->in_conv || !cp->out_conv || !cc.need_const) {
        cu_free(cc.need_const);
        cu_plan_free(be, p);
        return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < g->n_inputs; i++) cp->in_conv[i] = RT_NO_OFFSET;
    for (int i = 0; i < g->n_outputs; i++) cp->out_conv[i] = RT_NO_OFFSET;
    if (half || nhwc) cu_assign_storage(&cc);
    lector_status st = worker_get(c, &cc.w, err);
    if (st) {
        cu_free(cc.need_const);
        cu_plan_free(be, p);
        return st;
    }
    /* inputs arrive as fp32 NCHW: convert those stored otherwise */
    for (int i = 0; i < g->n_inputs && !st; i++)
        if (needs_convert(g, cp, g->inputs[i])) st = push_convert(cp, g, g->inputs[i], 1, err);
    /* one compile at a time in the process: cuDNN's heuristics and searches keep
     * process-wide state, and compiles are rare next to runs */
    static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&compile_lock);
    for (int o = 0; o < p->n_order && !st; o++) {
        const rt_node *n = &g->nodes[p->order[o]];
        cu_step *step = push_step(cp);
        if (!step) {
            st = fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        step->node = p->order[o];
        step->kind = S_HOST;
        step->act = n->act;
        step->alpha = n->act_alpha;
        step->beta = n->act_beta;
        int r = build_step(&cc, n, step);
        if (r == 0 && !storage_uniform(&cc, n, step)) r = 1;
        if (r < 0) {
            st = fail(err, LECTOR_ERR_BACKEND, "%s: cannot prepare node %s (%s) for the GPU", g->name, n->name,
                      cu_op_name(n->op));
            break;
        }
        if (r > 0) {
            step->kind = S_HOST;
            cp->n_host++;
            if (half || nhwc) {
                *unsupported = 1;
                st = fail(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s (%s) has no %s GPU kernel", n->name,
                          cu_op_name(n->op), half ? "half-precision" : "NHWC");
                break;
            }
            H->log(3, "cuda: %s: node %s (%s) runs on the host", g->name, n->name, cu_op_name(n->op));
        }
        if (step->ws > cp->ws) cp->ws = step->ws;
    }
    pthread_mutex_unlock(&compile_lock);
    worker_put(c, cc.w);
    if (!st && cu_fuse_chains(&cc)) {
        if (half || nhwc) {
            *unsupported = 1;
            st = fail(err, LECTOR_ERR_UNSUPPORTED_OP, "an elementwise step cannot run as a chain");
        } else {
            st = fail(err, LECTOR_ERR_BACKEND, "%s: an elementwise step cannot run on the GPU", g->name);
        }
    }
    /* outputs leave as fp32 NCHW */
    for (int i = 0; i < g->n_outputs && !st; i++) {
        int v = g->outputs[i];
        if (!needs_convert(g, cp, v)) continue;
        if (p->offset[v] == RT_NO_OFFSET) {
            *unsupported = 1;
            st = fail(err, LECTOR_ERR_UNSUPPORTED_OP, "output %s is not in the arena", g->values[v].name);
            break;
        }
        if (!(st = push_convert(cp, g, v, 0, err))) cp->steps[cp->n_steps - 1].cv_src = p->offset[v];
    }
    /* constants the GPU steps read */
    for (int v = 0; v < g->n_values; v++) {
        cp->coff[v] = RT_NO_OFFSET;
        if (!st && cc.need_const[v] && g->values[v].data) {
            size_t nb =
                (size_t)numel(&g->values[v]) * (cu_dsize(g->values[v].dtype) ? cu_dsize(g->values[v].dtype) : 1);
            cp->coff[v] = cbuf_add(&cc.cb, g->values[v].data, nb ? nb : 1, &cc.oom);
        }
    }
    cu_free(cc.need_const);
    if (!st && cc.oom) st = fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!st) st = upload_constants(c->device, cp, &cc.cb, err);
    size_t shared_bytes = 0;
    for (int i = 0; i < cp->n_shared; i++) shared_bytes += cp->shared[i]->n;
    cbuf_free(&cc.cb);
    if (st) {
        cu_plan_free(be, p);
        return st;
    }
    if (!cp->n_host) atomic_fetch_add(&((cu_ctx *)be->ctx)->kernels, (uint64_t)cu_compile_chains(&cc));
    /* after the planned activations: the uploaded inputs, their converted storage, the outputs' fp32 copies */
    size_t top = (p->arena_size + 255) & ~(size_t)255;
    for (int i = 0; i < g->n_inputs; i++) {
        const rt_value *v = &g->values[g->inputs[i]];
        cp->in_off[i] = top;
        size_t nb = v->data ? 0 : (size_t)numel(v) * cu_dsize(v->dtype);
        top += (nb + 255) & ~(size_t)255;
        cp->io_bytes += nb + 256;
    }
    for (int i = 0; i < cp->n_steps; i++) {
        cu_step *s = &cp->steps[i];
        if (s->kind != S_CONVERT) continue;
        int is_in = !s->cv_src_half && !s->cv_src_nhwc; /* an input's conversion; else an output's, to fp32 */
        size_t nb = (size_t)numel(&g->values[s->cv_value]) * (is_in && s->cv_dst_half ? 2 : 4);
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == s->cv_value && is_in) {
                s->cv_src = cp->in_off[k];
                s->cv_dst = cp->in_conv[k] = top;
            }
        for (int k = 0; k < g->n_outputs; k++)
            if (g->outputs[k] == s->cv_value && !is_in) s->cv_dst = cp->out_conv[k] = top;
        top += (nb + 255) & ~(size_t)255;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const rt_value *v = &g->values[g->outputs[i]];
        cp->io_bytes += (size_t)numel(v) * (cu_dsize(v->dtype) ? cu_dsize(v->dtype) : 8) + 256;
    }
    p->arena_size = top;
    H->log(3,
           "cuda: %s: %d steps (%d on the host), %s %s, weights %zu KiB (shared by the plans), constants %zu KiB, "
           "arena %zu KiB, workspace %zu KiB",
           g->name, cp->n_steps, cp->n_host, half ? "fp16" : "fp32", nhwc ? "NHWC" : "NCHW", shared_bytes >> 10,
           cp->cblock_size >> 10, p->arena_size >> 10, cp->ws >> 10);
    if (cp->n_host)
        H->log(2, "cuda: %s: %d of %d nodes run on the host (LECTOR_LOG=debug names them)", g->name, cp->n_host,
               cp->n_steps);
    return LECTOR_OK;
}

static lector_status cu_plan_compile(rt_backend *be, rt_plan *p, lector_error *err)
{
    int half = be->fp16, nhwc = cu_switch(LECTOR__TC_CUDA_NHWC, half), unsupported = 0;
    size_t arena = p->arena_size;
    if (half || nhwc) {
        lector_error e2 = {0};
        lector_status st = compile_mode(be, p, half, nhwc, &unsupported, &e2);
        if (!st) return LECTOR_OK;
        if (!unsupported) {
            if (err) *err = e2;
            return st;
        }
        H->log(2, "cuda: %s: %s; this plan runs in fp32 NCHW", p->g->name, e2.message);
        p->arena_size = arena;
    }
    return compile_mode(be, p, 0, 0, &unsupported, err);
}

/* ---- execution ------------------------------------------------------------------- */

void *cu_dptr(const exec_ctx *x, int v)
{
    if (v < 0) return NULL;
    const rt_graph *g = x->p->g;
    if (g->values[v].data) return x->cp->coff[v] != RT_NO_OFFSET ? cu_const(x->cp, x->cp->coff[v]) : NULL;
    if (x->p->offset[v] != RT_NO_OFFSET) return x->arena + x->p->offset[v];
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v)
            return x->arena + (x->cp->in_conv[i] != RT_NO_OFFSET ? x->cp->in_conv[i] : x->cp->in_off[i]);
    return NULL;
}

#define dptr cu_dptr
static lector_status run_host_step(const exec_ctx *x, const rt_node *n, rt_backend *be, lector_error *err)
{
    const rt_graph *g = x->p->g;
    lector_tensor in[16], out[8];
    void *tmp[24] = {0};
    lector_status st = LECTOR_OK;
    cudaStream_t sm = x->w->stream;
    if (n->n_in > 16 || n->n_out > 8)
        return fail(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: too many operands", n->name);
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (int k = 0; k < n->n_in && !st; k++) {
        if (n->in[k] < 0) continue;
        const rt_value *v = &g->values[n->in[k]];
        in[k] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(in[k].dims, v->dims, sizeof v->dims);
        if (v->data) {
            in[k].data = v->data;
            continue;
        }
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        tmp[k] = cu_malloc(nb ? nb : 1);
        if (!tmp[k])
            st = fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
        else if (nb && cudaMemcpyAsync(tmp[k], dptr(x, n->in[k]), nb, cudaMemcpyDeviceToHost, sm))
            st = cuda_fail(err, cudaGetLastError(), "copying an operand to the host");
        in[k].data = tmp[k];
    }
    for (int k = 0; k < n->n_out && !st; k++) {
        if (n->out[k] < 0) continue;
        const rt_value *v = &g->values[n->out[k]];
        out[k] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(out[k].dims, v->dims, sizeof v->dims);
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        tmp[16 + k] = cu_malloc(nb ? nb : 1);
        if (!tmp[16 + k]) st = fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
        out[k].data = tmp[16 + k];
    }
    cudaError_t e;
    if (!st && (e = cudaStreamSynchronize(sm)) != cudaSuccess) st = cuda_fail(err, e, "waiting for the GPU");
    if (!st) {
        rt_kernel_ctx kc = {be->threads > 0 ? be->threads : 1, err};
        st = H->ops[n->op].ref(n, in, out, &kc);
    }
    for (int k = 0; k < n->n_out && !st; k++) {
        if (n->out[k] < 0) continue;
        size_t nb = (size_t)numel(&g->values[n->out[k]]) * cu_dsize(g->values[n->out[k]].dtype);
        if (nb && (e = cudaMemcpy(dptr(x, n->out[k]), out[k].data, nb, cudaMemcpyHostToDevice)) != cudaSuccess)
            st = cuda_fail(err, e, "copying a result to the GPU");
    }
    for (int k = 0; k < 24; k++) cu_free(tmp[k]);
    return st;
}

static const float one = 1.f, zero = 0.f;

static lector_status run_step(const exec_ctx *x, const cu_step *s, rt_backend *be, lector_error *err)
{
    const rt_graph *g = x->p->g;
    cudaStream_t sm = x->w->stream;
    if (s->kind == S_CONVERT) {
        if (fault_launch()) return fail(err, LECTOR_ERR_BACKEND, "cuda: injected launch failure (LECTOR_CUDA_FAIL)");
        int rc = ck_convert(sm, x->arena + s->cv_src, x->arena + s->cv_dst, s->cv_dims[0], s->cv_dims[1], s->cv_dims[2],
                            s->cv_dims[3], s->cv_src_half, s->cv_src_nhwc, s->cv_dst_half, s->cv_dst_nhwc);
        return rc ? cuda_fail(err, (cudaError_t)rc, "converting a tensor's storage") : LECTOR_OK;
    }
    const rt_node *n = &g->nodes[s->node];
    if (fault_launch())
        return fail(err, LECTOR_ERR_BACKEND, "cuda: injected launch failure (LECTOR_CUDA_FAIL) at node %s", n->name);
    void *X = dptr(x, n->in[0]), *Y = n->out[0] >= 0 ? dptr(x, n->out[0]) : NULL;
    void *ws = (char *)x->w->ws + CU_BLAS_WS;
    int rc = 0;
    switch (s->kind) {
    case S_HOST: return run_host_step(x, n, be, err);
    case S_CONV:
    case S_DECONV: {
        cudnnStatus_t ds;
        const void *W = s->wconv != RT_NO_OFFSET ? cu_const(x->cp, s->wconv) : dptr(x, n->in[1]);
        if (s->kind == S_CONV)
            ds = cudnnConvolutionForward(x->w->dnn, &one, s->xd, X, s->wd, W, s->cd, (cudnnConvolutionFwdAlgo_t)s->algo,
                                         ws, s->ws, &zero, s->yd, Y);
        else
            ds = cudnnConvolutionBackwardData(x->w->dnn, &one, s->wd, W, s->xd, X, s->cd,
                                              (cudnnConvolutionBwdDataAlgo_t)s->algo, ws, s->ws, &zero, s->yd, Y);
        if (ds != CUDNN_STATUS_SUCCESS)
            return fail(err, ds == CUDNN_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                        "cudnn: node %s: %s", n->name, cudnnGetErrorString(ds));
        break; /* bias and activation: the chain that follows */
    }
    case S_DWCONV: {
        if (s->chain) return cu_run_chain(x, s, err); /* the chain after it runs in its kernel */
        const cu_window *q = &s->win;
        rc = ck_dwconv_nhwc(sm, X, (const float *)(cu_const(x->cp, s->wconv)), Y, s->outer, s->channels, q->ih, q->iw,
                            q->oh, q->ow, q->kh, q->kw, q->sh, q->sw, q->ph, q->pw, q->dh, q->dw, s->half, q->unroll);
        break;
    }
    case S_CONV_GEMM: {
        /* row-major Y[m][nn] = X[m][k] W[nn][k]^T, i.e. column-major Y^T = W^T-as-stored^T X^T */
        const void *W = cu_const(x->cp, s->wconv);
        cublasStatus_t bs;
        if (s->half) {
            cublasSetMathMode(x->w->blas, CUBLAS_DEFAULT_MATH);
            bs = cublasGemmEx(x->w->blas, CUBLAS_OP_T, CUBLAS_OP_N, s->nn, s->m, s->k, &one, W, CUDA_R_16F, s->k, X,
                              CUDA_R_16F, s->k, &zero, Y, CUDA_R_16F, s->nn, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            cublasSetMathMode(x->w->blas, CUBLAS_PEDANTIC_MATH);
        } else {
            bs = cublasSgemm(x->w->blas, CUBLAS_OP_T, CUBLAS_OP_N, s->nn, s->m, s->k, &one, W, s->k, X, s->k, &zero, Y,
                             s->nn);
        }
        if (bs != CUBLAS_STATUS_SUCCESS)
            return fail(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                        "cublas: node %s: %s", n->name, cublasGetStatusString(bs));
        break; /* bias and activation: the chain that follows */
    }
    case S_DECONV_KS:
        if (s->nhwc)
            rc = ck_deconv_ks_nhwc(sm, X, (const float *)(cu_const(x->cp, s->wconv)), Y, s->outer, s->k, s->channels,
                                   s->win.ih, s->win.iw, s->win.kh, s->win.kw, s->half);
        else
            rc = ck_deconv_ks(sm, X, dptr(x, n->in[1]), Y, s->outer, s->k, s->channels, s->win.ih, s->win.iw, s->win.kh,
                              s->win.kw, s->half, 0);
        break;
    case S_ROWMEAN: rc = ck_row_mean(sm, X, Y, s->outer, s->inner, s->half); break;
    case S_GAP_NHWC: rc = ck_gap_nhwc(sm, X, Y, s->outer, s->inner, s->channels, s->half, ws, s->k); break;
    case S_POOL: {
        const cu_window *q = &s->win;
        rc = ck_pool2d(sm, X, Y, s->outer, s->channels, q->ih, q->iw, q->oh, q->ow, q->kh, q->kw, q->sh, q->sw, q->ph,
                       q->pw, q->dh, q->dw, q->max_pool, q->count_pad, s->half, s->nhwc);
        break;
    }
    case S_RESIZE: {
        const rt_value *xv = &g->values[n->in[0]], *yv = &g->values[n->out[0]];
        const int *tab = (const int *)(cu_const(x->cp, s->aux));
        int OH = (int)yv->dims[2];
        rc = ck_resize_nearest(sm, X, Y, s->outer, s->channels, (int)xv->dims[2], (int)xv->dims[3], OH,
                               (int)yv->dims[3], tab, tab + OH, s->half, s->nhwc);
        break;
    }
    case S_GATHER: rc = ck_gather(sm, X, Y, &s->gd, (int)s->elem); break;
    case S_COPY:
        rc = s->n && X != Y ? (int)cudaMemcpyAsync(Y, X, (size_t)s->n * s->elem, cudaMemcpyDeviceToDevice, sm) : 0;
        break;
    case S_CONCAT: {
        const void *ins[CK_CONCAT_MAX];
        int64_t lens[CK_CONCAT_MAX];
        for (int k = 0; k < n->n_in; k++) {
            ins[k] = dptr(x, n->in[k]);
            lens[k] = g->values[n->in[k]].dims[s->op];
        }
        rc = ck_concat(sm, ins, lens, n->n_in, Y, s->outer, s->inner, (int)s->elem);
        break;
    }
    case S_MATMUL: {
        /* row-major C = A B is column-major C^T = B^T A^T */
        cublasStatus_t bs;
        if (s->half) {
            const void *A = s->aconv != RT_NO_OFFSET ? cu_const(x->cp, s->aconv) : X;
            const void *B = s->wconv != RT_NO_OFFSET ? cu_const(x->cp, s->wconv) : dptr(x, n->in[1]);
            cublasSetMathMode(x->w->blas, CUBLAS_DEFAULT_MATH);
            bs = cublasGemmStridedBatchedEx(x->w->blas, CUBLAS_OP_N, CUBLAS_OP_N, s->nn, s->m, s->k, &one, B,
                                            CUDA_R_16F, s->nn, s->sb, A, CUDA_R_16F, s->k, s->sa, &zero, Y,
                                            s->c_half ? CUDA_R_16F : CUDA_R_32F, s->nn, s->sc, s->batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            cublasSetMathMode(x->w->blas, CUBLAS_PEDANTIC_MATH);
        } else {
            bs = cublasSgemmStridedBatched(x->w->blas, CUBLAS_OP_N, CUBLAS_OP_N, s->nn, s->m, s->k, &one,
                                           dptr(x, n->in[1]), s->nn, s->sb, X, s->k, s->sa, &zero, Y, s->nn, s->sc,
                                           s->batch);
        }
        if (bs != CUBLAS_STATUS_SUCCESS)
            return fail(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                        "cublas: node %s: %s", n->name, cublasGetStatusString(bs));
        break; /* activation: the chain that follows */
    }
    case S_SOFTMAX: rc = ck_softmax(sm, X, Y, s->outer, s->len, s->inner, s->half); break;
    case S_CHAIN: return cu_run_chain(x, s, err);
    case S_LAYERNORM:
        rc = ck_layernorm(sm, X, Y, dptr(x, n->in[1]), s->ns, n->n_in > 2 ? dptr(x, n->in[2]) : NULL, s->nb, s->outer,
                          s->inner, s->eps, s->half);
        break;
    case S_ARGMAX:
        rc = s->op == 0 ? ck_argmax_rows(sm, X, Y, NULL, s->outer, s->len, s->half, 0)
                        : ck_argmax_rows(sm, X, NULL, Y, s->outer, s->len, s->half, x->cp->vhalf[n->out[0]]);
        break;
    default: return fail(err, LECTOR_ERR_INTERNAL, "cuda: node %s: step kind %d cannot run", n->name, s->kind);
    }
    if (rc) {
        char buf[160];
        snprintf(buf, sizeof buf, "node %s (%s)", n->name, cu_op_name(n->op));
        return cuda_fail(err, (cudaError_t)rc, buf);
    }
    return LECTOR_OK;
}

static int graphs_enabled(void) { return cu_switch(LECTOR__TC_CUDA_GRAPHS, 1); }

/* LECTOR_CUDA_PROFILE=1: steps run one by one between events, and the time
 * per operator (with its step kind: cudnn/own kernel/host) is printed at exit.
 * A plan's first run is left out: it holds the libraries' lazy loading (cuBLAS
 * loads its kernels on first use), which would swamp a small model's figures.
 * LECTOR_CUDA_PROFILE=2 also prints every step of each plan's second run.
 * LECTOR_CUDA_PROFILE=3 times each step as a CUDA graph of its own, replayed
 * back to back: what the step costs inside the plan's graph, without the host
 * work between events that swamps small steps in eager timing (cuDNN's, most).
 * The replays run a step again over its own results (in-place chains), so the
 * outputs of a profiled run are meaningless. */
static int profiling(void) { return (int)H->testctl_long(LECTOR__TC_CUDA_PROFILE, 0); }

static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
/* kinds, then cuDNN convolutions by class (dense, pointwise, depthwise) */
#define PROF_KINDS (S_KIND_COUNT + 3)
static double prof_ms[RT_OP_COUNT + 1][PROF_KINDS];
static long prof_n[RT_OP_COUNT + 1][PROF_KINDS];

static const char *const prof_kinds[PROF_KINDS] = {
    "cudnn-conv", "cudnn-deconv", "affine",    "binary",  "unary",   "rowmean",    "pool",
    "resize",     "gather",       "copy",      "concat",  "cublas",  "softmax",    "layernorm",
    "chain",      "host",         "gap-nhwc",  "argmax",  "convert", "own-dwconv", "own-deconv",
    "cublas-1x1", "cudnn-dense",  "cudnn-1x1", "cudnn-dw"};

static int prof_kind(const cu_step *sp) { return sp->kind == S_CONV ? S_KIND_COUNT + sp->op : sp->kind; }
static const char *prof_kind_name(const cu_step *sp) { return prof_kinds[prof_kind(sp)]; }

static void prof_report(void)
{
    double total = 0;
    for (int o = 0; o <= RT_OP_COUNT; o++)
        for (int k = 0; k < PROF_KINDS; k++) total += prof_ms[o][k];
    fprintf(stderr, "cuda profile: %.1f ms in steps\n", total);
    for (int o = 0; o <= RT_OP_COUNT; o++)
        for (int k = 0; k < PROF_KINDS; k++)
            if (prof_n[o][k])
                fprintf(stderr, "  %-20s %-12s %8ld steps %10.2f ms %5.1f%%\n", o < RT_OP_COUNT ? H->ops[o].name : "-",
                        prof_kinds[k], prof_n[o][k], prof_ms[o][k], 100 * prof_ms[o][k] / (total > 0 ? total : 1));
}

/* LECTOR_CUDA_PROFILE=3: step s captured alone, the mean of its graph's replays in ms (-1: not capturable). */
static float step_graph_ms(const exec_ctx *x, const cu_step *sp, rt_backend *be, cudaEvent_t a, cudaEvent_t b)
{
    enum { REPLAYS = 20 };
    cudaStream_t sm = x->w->stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    float ms = -1;
    if (sp->kind == S_HOST || cudaStreamBeginCapture(sm, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        return ms;
    }
    lector_status st = run_step(x, sp, be, NULL);
    if (cudaStreamEndCapture(sm, &graph) == cudaSuccess && !st &&
        cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess && cudaGraphLaunch(exec, sm) == cudaSuccess) {
        cudaEventRecord(a, sm);
        for (int r = 0; r < REPLAYS; r++) cudaGraphLaunch(exec, sm);
        cudaEventRecord(b, sm);
        if (cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&ms, a, b) == cudaSuccess) ms /= REPLAYS;
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return ms;
}

static lector_status run_eager(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err)
{
    lector_status st = LECTOR_OK;
    if (cu_check_enabled()) {
        for (int s = 0; s < cp->n_steps && !st; s++) {
            cu_check_prepare(x, &cp->steps[s]);
            st = run_step(x, &cp->steps[s], be, err);
            if (!st) st = cu_check_step(x, &cp->steps[s], s, err);
        }
        return st;
    }
    if (profiling()) {
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        pthread_mutex_lock(&prof_lock);
        int run = ++cp->prof_runs;
        pthread_mutex_unlock(&prof_lock);
        for (int s = 0; s < cp->n_steps && !st; s++) {
            cudaEventRecord(a, x->w->stream);
            st = run_step(x, &cp->steps[s], be, err);
            cudaEventRecord(b, x->w->stream);
            cudaEventSynchronize(b);
            float ms = 0;
            cudaEventElapsedTime(&ms, a, b);
            const cu_step *sp = &cp->steps[s];
            int op = sp->node >= 0 ? x->p->g->nodes[sp->node].op : RT_OP_COUNT;
            if (run == 1) continue;
            if (profiling() >= 3 && !st) {
                float gms = step_graph_ms(x, sp, be, a, b);
                if (gms >= 0) ms = gms;
            }
            if (run == 2 && profiling() >= 2) {
                const rt_node *n = sp->node >= 0 ? &x->p->g->nodes[sp->node] : NULL;
                const rt_value *v = n ? &x->p->g->values[n->out[0]] : NULL;
                char dims[64] = "";
                for (int d = 0, at = 0; v && d < v->ndim && at < (int)sizeof dims - 12; d++)
                    at += snprintf(dims + at, sizeof dims - at, d ? "x%lld" : "%lld", (long long)v->dims[d]);
                fprintf(stderr, "cuda step %3d %-18s %-11s %8.4f ms %-18s %s%s\n", s, n ? H->ops[op].name : "-",
                        prof_kind_name(sp), ms, dims, n ? n->name : "convert", sp->chain ? " +chain" : "");
            }
            pthread_mutex_lock(&prof_lock);
            static int registered;
            if (!registered++) atexit(prof_report);
            int pk = prof_kind(sp);
            prof_ms[op][pk] += ms;
            prof_n[op][pk]++;
            pthread_mutex_unlock(&prof_lock);
        }
        cudaEventDestroy(a);
        cudaEventDestroy(b);
        return st;
    }
    for (int s = 0; s < cp->n_steps && !st; s++) st = run_step(x, &cp->steps[s], be, err);
    return st;
}

/* Runs the steps as a CUDA graph: captured on the first call of a (worker,
 * arena) pair, replayed afterwards (one launch instead of hundreds). A plan
 * with host steps, or whose capture fails, runs step by step. */
static lector_status run_steps(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err)
{
    if (cp->no_graph || cp->n_host || !graphs_enabled() || profiling() || cu_check_enabled() ||
        atomic_fetch_add(&cp->runs, 1) < CU_GRAPH_AFTER)
        return run_eager(x, cp, be, err);
    cu_worker *w = x->w;
    cudaGraphExec_t exec = NULL;
    for (int i = 0; i < w->n_graphs && !exec; i++)
        if (w->graphs[i].plan == cp->id && w->graphs[i].arena == x->arena && w->graphs[i].ws == w->ws) {
            exec = w->graphs[i].exec;
            w->graphs[i].used = ++w->tick;
        }
    if (exec) {
        if (fault_launch()) return fail(err, LECTOR_ERR_BACKEND, "cuda: injected launch failure (LECTOR_CUDA_FAIL)");
        cudaError_t e = cudaGraphLaunch(exec, w->stream);
        return e == cudaSuccess ? LECTOR_OK : cuda_fail(err, e, "launching the plan's CUDA graph");
    }
    cudaStream_t sm = w->stream;
    cudaError_t e = cudaStreamBeginCapture(sm, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        cudaGetLastError();
        cp->no_graph = 1;
        return run_eager(x, cp, be, err);
    }
    lector_status st = run_eager(x, cp, be, err);
    cudaGraph_t graph = NULL;
    e = cudaStreamEndCapture(sm, &graph);
    if (st) { /* a step failed while capturing: nothing ran; report it */
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        return st;
    }
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        cudaGetLastError();
        H->log(2, "cuda: %s: capture as a CUDA graph failed (%s): running step by step", x->p->g->name,
               cudaGetErrorString(e));
        cp->no_graph = 1;
        return run_eager(x, cp, be, err);
    }
    int slot = w->n_graphs;
    if (slot == CU_GRAPHS) { /* evict the least recently used */
        slot = 0;
        for (int i = 1; i < CU_GRAPHS; i++)
            if (w->graphs[i].used < w->graphs[slot].used) slot = i;
        cudaGraphExecDestroy(w->graphs[slot].exec);
    } else {
        w->n_graphs++;
    }
    w->graphs[slot] = (cu_graph){cp->id, x->arena, w->ws, exec, ++w->tick};
    e = cudaGraphLaunch(exec, sm);
    return e == cudaSuccess ? LECTOR_OK : cuda_fail(err, e, "launching the plan's CUDA graph");
}

/* Uploads the inputs (host -> pinned -> device), starting the plan's work on the worker's stream. */
static lector_status upload_inputs(const exec_ctx *x, const lector_tensor *inputs, char **pin_end, lector_error *err)
{
    const rt_graph *g = x->p->g;
    char *pin = x->w->pin;
    for (int i = 0; i < g->n_inputs; i++) {
        const rt_value *v = &g->values[g->inputs[i]];
        if (v->data) continue; /* bound by value: folded into the plan */
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        if (!nb) continue;
        memcpy(pin, inputs[i].data, nb);
        cudaError_t e = cudaMemcpyAsync(x->arena + x->cp->in_off[i], pin, nb, cudaMemcpyHostToDevice, x->w->stream);
        if (e) return cuda_fail(err, e, "uploading an input");
        pin += (nb + 255) & ~(size_t)255;
    }
    *pin_end = pin;
    return LECTOR_OK;
}

static const void *output_src(const exec_ctx *x, int i)
{
    const rt_graph *g = x->p->g;
    if (x->cp->out_conv[i] != RT_NO_OFFSET) return x->arena + x->cp->out_conv[i];
    return dptr(x, g->outputs[i]);
}

static void name_prefix(lector_error *err, const char *name)
{
    if (!err || !strncmp(err->message, name, strlen(name))) return;
    char msg[sizeof err->message];
    size_t ln = strlen(name);
    if (ln + 2 >= sizeof msg) return;
    memcpy(msg, name, ln);
    memcpy(msg + ln, ": ", 2);
    size_t room = sizeof msg - ln - 3, ml = strlen(err->message);
    if (ml > room) ml = room;
    memcpy(msg + ln + 2, err->message, ml);
    msg[ln + 2 + ml] = 0;
    memcpy(err->message, msg, sizeof msg);
}

/* A worker with the workspace and pinned staging plan cp needs. */
static lector_status worker_for_plan(cu_ctx *c, const cu_plan *cp, size_t extra_pin, cu_worker **out, lector_error *err)
{
    lector_status st = worker_get(c, out, err);
    if (st) return st;
    if ((st = worker_ws(c, *out, cp->ws, err)) || (st = worker_pin(*out, cp->io_bytes + extra_pin, err))) {
        worker_put(c, *out);
        *out = NULL;
    }
    return st;
}

/* Downloads the outputs (device -> pinned `pin`, then host memory the caller
 * owns) after the plan's work; `st` is the status so far. */
static lector_status finish_outputs(const exec_ctx *x, char *pin, lector_status st, lector_tensor *outputs,
                                    lector_error *err)
{
    const rt_graph *g = x->p->g;
    cu_worker *w = x->w;
    cudaError_t e = cudaSuccess;
    /* outputs: device -> pinned, then host memory the caller owns */
    char *out_pin = pin;
    for (int i = 0; i < g->n_outputs && !st; i++) {
        const rt_value *v = &g->values[g->outputs[i]];
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        if (v->data)
            memcpy(pin, v->data, nb); /* folded to a constant at compile time */
        else if (nb && (e = cudaMemcpyAsync(pin, output_src(x, i), nb, cudaMemcpyDeviceToHost, w->stream)))
            st = cuda_fail(err, e, "downloading an output");
        pin += (nb + 255) & ~(size_t)255;
    }
    if ((e = cudaStreamSynchronize(w->stream)) != cudaSuccess && !st) st = cuda_fail(err, e, "running the plan");
    /* CUDA keeps the last error per thread until read: read it always, so a
     * failure here is never reported again by the next, healthy call */
    if ((e = cudaGetLastError()) != cudaSuccess && !st) st = cuda_fail(err, e, "running the plan");
    for (int i = 0; i < g->n_outputs && !st; i++) {
        const rt_value *v = &g->values[g->outputs[i]];
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        outputs[i] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(outputs[i].dims, v->dims, sizeof v->dims);
        outputs[i].data = H->aligned_alloc(nb ? nb : 1);
        if (!outputs[i].data) {
            for (int j = 0; j < i; j++) H->free(outputs[j].data);
            st = fail(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory for outputs", g->name);
            break;
        }
        if (nb) memcpy(outputs[i].data, out_pin, nb);
        out_pin += (nb + 255) & ~(size_t)255;
    }
    return st;
}

/* The start of a call: a worker with what plan p needs (and extra_pin more
 * bytes of staging), in x. */
static lector_status call_begin(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                                size_t extra_pin, exec_ctx *x, lector_error *err)
{
    const cu_plan *cp = p->be_plan;
    cu_worker *w;
    lector_status st = worker_for_plan(be->ctx, cp, extra_pin, &w, err);
    if (!st) *x = (exec_ctx){p, cp, w, arena, inputs};
    return st;
}

/* The end of a call once its input is on the device (`st`: the status so
 * far): the steps, the outputs' download, the worker back to the pool. */
static lector_status run_and_download(rt_backend *be, exec_ctx *x, char *pin, lector_status st, lector_tensor *outputs,
                                      lector_error *err)
{
    if (!st) st = run_steps(x, (cu_plan *)x->cp, be, err);
    st = finish_outputs(x, pin, st, outputs, err);
    if (st) name_prefix(err, x->p->g->name);
    worker_put(be->ctx, x->w);
    return st;
}

static lector_status cu_plan_execute(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                                     lector_tensor *outputs, lector_error *err)
{
    exec_ctx x;
    lector_status st = call_begin(be, p, arena, inputs, 0, &x, err);
    if (st) return st;
    char *pin = NULL;
    st = upload_inputs(&x, inputs, &pin, err);
    return run_and_download(be, &x, pin, st, outputs, err);
}

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* cu_plan_execute with the plan's only input made here from rows of 8-bit
 * pixels (lector_image_input): each row's region, its resize tables, the
 * distinct normalisation tables, the row descriptors and (for crops) the
 * warp's weights go up in one copy through the worker's pinned staging;
 * ck_image_rows warps the crops into scratch after them, then writes the
 * fp32 NCHW input where an uploaded one would be,
 * and the plan's steps (its input conversion included) follow. */
static lector_status cu_run_images(rt_backend *be, const rt_plan *p, void *arena, const lector_image_input *rows,
                                   size_t n_rows, lector_tensor *outputs, lector_error *err)
{
    cu_ctx *c = be->ctx;
    const cu_plan *cp = p->be_plan;
    const rt_graph *g = p->g;
    const rt_value *in = g->n_inputs == 1 ? &g->values[g->inputs[0]] : NULL;
    if (!in || in->data || in->dtype != LECTOR_DTYPE_FLOAT32 || in->ndim != 4 || !n_rows ||
        (int64_t)n_rows > in->dims[0] || in->dims[1] != rows[0].channels || in->dims[2] != rows[0].out_height)
        return fail(err, LECTOR_ERR_SHAPE, "%s: the image input does not fit the model's input", g->name);
    int cn = rows[0].channels, any_warp = 0, max_cw = 0, max_ch = 0;
    ck_image_row *d = cu_malloc(sizeof *d * n_rows);
    const float **luts = cu_malloc(sizeof *luts * n_rows);
    if (!d || !luts) {
        cu_free(d);
        cu_free(luts);
        return fail(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory (image rows)", g->name);
    }
    /* the upload's layout: per row pixels and tables, then the luts, the descriptors, the weights */
    size_t off = 0, n_luts = 0, lut_bytes = sizeof(float) * 256 * (size_t)cn;
    for (size_t i = 0; i < n_rows; i++) {
        const lector_image_input *im = &rows[i];
        ck_image_row *r = &d[i];
        memset(r, 0, sizeof *r);
        r->width = im->width;
        r->height = im->height;
        r->out_width = im->out_width;
        r->px = (int64_t)off;
        off = align16(off + (size_t)im->width * cn * (size_t)im->height);
        r->xofs = (int64_t)off;
        off = align16(off + sizeof(int) * (size_t)im->out_width);
        r->alpha = (int64_t)off;
        off = align16(off + sizeof(int16_t) * 2 * (size_t)im->out_width);
        r->yofs = (int64_t)off;
        off = align16(off + sizeof(int) * 2 * (size_t)im->out_height);
        r->beta = (int64_t)off;
        off = align16(off + sizeof(int16_t) * 2 * (size_t)im->out_height);
        r->sw = im->width;
        r->sh = im->height;
        if (im->warp) {
            any_warp = 1;
            r->warp = 1;
            memcpy(r->m, im->warp, sizeof r->m);
            r->crop_width = im->crop_width;
            r->crop_height = im->crop_height;
            max_cw = im->crop_width > max_cw ? im->crop_width : max_cw;
            max_ch = im->crop_height > max_ch ? im->crop_height : max_ch;
            r->turns = im->turns;
            r->origin_x = im->origin_x;
            r->origin_y = im->origin_y;
            r->full_width = im->full_width;
            r->full_height = im->full_height;
            r->sw = im->turns & 1 ? im->crop_height : im->crop_width;
            r->sh = im->turns & 1 ? im->crop_width : im->crop_height;
        }
        size_t k = 0;
        while (k < n_luts && luts[k] != im->lut) k++;
        if (k == n_luts) luts[n_luts++] = im->lut;
        r->lut = (int64_t)k; /* an index until the luts' place is known */
    }
    size_t o_lut = off, o_desc = align16(o_lut + n_luts * lut_bytes), o_cubic = align16(o_desc + sizeof *d * n_rows);
    size_t total = o_cubic + (any_warp ? sizeof(int16_t) * 32 * 32 * 16 : 0), crops = align16(total);
    for (size_t i = 0; i < n_rows; i++) {
        d[i].lut = (int64_t)(o_lut + (size_t)d[i].lut * lut_bytes);
        if (d[i].warp) { /* the warped crops: device scratch after the upload */
            d[i].crop = (int64_t)crops;
            crops = align16(crops + (size_t)rows[i].crop_width * (size_t)rows[i].crop_height * cn);
        }
    }
    exec_ctx x;
    lector_status st = call_begin(be, p, arena, NULL, align256(cp->io_bytes) - cp->io_bytes + total, &x, err);
    if (st) goto out;
    cu_worker *w = x.w;
    if (w->img_size < crops) {
        dev_free(w->img);
        w->img = NULL;
        w->img_size = 0;
        if ((st = dev_alloc(c->device, crops, &w->img, "an image input", err))) {
            worker_put(c, w);
            goto out;
        }
        w->img_size = crops;
    }
    char *stage = (char *)w->pin + align256(cp->io_bytes), *dev = w->img; /* outputs first, then the image */
    for (size_t i = 0; i < n_rows; i++) {
        const lector_image_input *im = &rows[i];
        size_t row = (size_t)im->width * cn;
        for (int y = 0; y < im->height; y++)
            memcpy(stage + d[i].px + (size_t)y * row, im->pixels + (size_t)y * im->stride, row);
        memcpy(stage + d[i].xofs, im->xofs, sizeof(int) * (size_t)im->out_width);
        memcpy(stage + d[i].alpha, im->alpha, sizeof(int16_t) * 2 * (size_t)im->out_width);
        memcpy(stage + d[i].yofs, im->yofs, sizeof(int) * 2 * (size_t)im->out_height);
        memcpy(stage + d[i].beta, im->beta, sizeof(int16_t) * 2 * (size_t)im->out_height);
    }
    for (size_t k = 0; k < n_luts; k++) memcpy(stage + o_lut + k * lut_bytes, luts[k], lut_bytes);
    memcpy(stage + o_desc, d, sizeof *d * n_rows);
    const lector_image_input *wr = NULL;
    for (size_t i = 0; i < n_rows && !wr; i++)
        if (rows[i].warp) wr = &rows[i];
    if (wr) memcpy(stage + o_cubic, wr->cubic, sizeof(int16_t) * 32 * 32 * 16);
    cudaError_t e = cudaMemcpyAsync(dev, stage, total, cudaMemcpyHostToDevice, w->stream);
    if (e != cudaSuccess) st = cuda_fail(err, e, "uploading an image input");
    if (!st) {
        int rc = ck_image_rows(w->stream, dev, (const ck_image_row *)(dev + o_desc), (int)n_rows,
                               (const int16_t *)(dev + o_cubic), cn, max_cw, max_ch, (float *)(x.arena + cp->in_off[0]),
                               (int)in->dims[0], (int)in->dims[2], (int)in->dims[3]);
        if (rc) st = cuda_fail(err, (cudaError_t)rc, "making an image input");
    }
    st = run_and_download(be, &x, w->pin, st, outputs, err);
out:
    cu_free(d);
    cu_free(luts);
    return st;
}

/* Times the plan as a framework benchmark times a model: the inputs are
 * uploaded once, then the plan (its input and output conversions included,
 * a CUDA graph replay when graphs are on) runs `runs` times back to back,
 * each between two events; ms[i] is each run. Nothing is downloaded. */
static lector_status cu_time_plan(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs, int runs,
                                  double *ms, lector_error *err)
{
    exec_ctx x;
    lector_status st = call_begin(be, p, arena, inputs, 0, &x, err);
    if (st) return st;
    const cu_plan *cp = x.cp;
    cu_worker *w = x.w;
    char *pin = NULL;
    cudaEvent_t ev[2] = {0};
    cudaError_t e;
    if ((e = cudaEventCreate(&ev[0])) || (e = cudaEventCreate(&ev[1]))) st = cuda_fail(err, e, "creating events");
    if (!st) st = upload_inputs(&x, inputs, &pin, err);
    if (!st) st = run_steps(&x, (cu_plan *)cp, be, err); /* warm: captures the graph */
    for (int r = 0; r < runs && !st; r++) {
        cudaEventRecord(ev[0], w->stream);
        st = run_steps(&x, (cu_plan *)cp, be, err);
        cudaEventRecord(ev[1], w->stream);
        if (!st && (e = cudaEventSynchronize(ev[1]))) st = cuda_fail(err, e, "running the plan");
        float t = 0;
        if (!st) cudaEventElapsedTime(&t, ev[0], ev[1]);
        ms[r] = t;
    }
    if ((e = cudaStreamSynchronize(w->stream)) != cudaSuccess && !st) st = cuda_fail(err, e, "running the plan");
    if ((e = cudaGetLastError()) != cudaSuccess && !st) st = cuda_fail(err, e, "running the plan");
    for (int k = 0; k < 2; k++)
        if (ev[k]) cudaEventDestroy(ev[k]);
    if (st) name_prefix(err, p->g->name);
    worker_put(be->ctx, w);
    return st;
}

/* ---- extras --------------------------------------------------------------------- */

/* Bytes this process holds on the backend's GPU through Lector, and the cap. */
static void cu_memory_usage(rt_backend *be, size_t *used, size_t *limit)
{
    int dev = be->device;
    pthread_mutex_lock(&mem_lock);
    *used = dev >= 0 && dev < CU_MAX_DEV ? mem_used[dev] : 0;
    *limit = dev >= 0 && dev < CU_MAX_DEV ? mem_limit[dev] : 0;
    pthread_mutex_unlock(&mem_lock);
}

/* What this process may still allocate on the device: its free memory,
 * bounded by the cap. */
static size_t cu_memory_available(rt_backend *be)
{
    int dev = be->device;
    if (dev < 0 || dev >= CU_MAX_DEV) return 0;
    size_t free_b = 0, total = 0;
    cudaSetDevice(dev);
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    pthread_mutex_lock(&mem_lock);
    if (mem_limit[dev]) {
        size_t left = mem_limit[dev] > mem_used[dev] ? mem_limit[dev] - mem_used[dev] : 0;
        if (left < free_b) free_b = left;
    }
    pthread_mutex_unlock(&mem_lock);
    return free_b;
}

/* Frees idle workers' workspaces and staging (the core trims plan arenas). */
static void cu_trim(rt_backend *be)
{
    cu_ctx *c = be->ctx;
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    cu_worker *idle = c->idle;
    c->idle = NULL;
    pthread_mutex_unlock(&c->lock);
    cudaSetDevice(c->device);
    while (idle) {
        cu_worker *w = idle;
        idle = w->next;
        worker_free(w);
    }
}

static const char *cu_device_name(rt_backend *be)
{
    cu_ctx *c = be->ctx;
    return c ? c->name : "";
}

/* "fp16 NHWC" / "fp32 NCHW" for a compiled plan. */
static const char *cu_plan_mode(const rt_plan *p)
{
    const cu_plan *cp = p->be_plan;
    if (!cp) return "";
    return cp->half ? (cp->nhwc ? "fp16 NHWC" : "fp16 NCHW") : (cp->nhwc ? "fp32 NHWC" : "fp32 NCHW");
}

static uint64_t cu_kernels_compiled(rt_backend *be)
{
    cu_ctx *c = be->ctx;
    return c ? atomic_load(&c->kernels) : 0;
}

static const rt_backend_iface cuda_iface = {
    .api_version = RT_BACKEND_API_VERSION,
    .name = "cuda",
    .features = RT_FEATURE_FUSED_ACT | RT_FEATURE_FP16,
    .init = cu_init,
    .shutdown = cu_shutdown,
    .buffer_alloc = cu_buffer_alloc,
    .buffer_free = cu_buffer_free,
    .buffer_copy = cu_buffer_copy,
    .plan_compile = cu_plan_compile,
    .plan_execute = cu_plan_execute,
    .plan_free = cu_plan_free,
    .plan_lifetimes = cu_plan_lifetimes,
    .run_images = cu_run_images,
    .time_plan = cu_time_plan,
    .plan_mode = cu_plan_mode,
    .device = {.name = cu_device_name,
               .memory_usage = cu_memory_usage,
               .memory_available = cu_memory_available,
               .trim = cu_trim},
    .kernels_compiled = cu_kernels_compiled,
};

/* The module's entry points (module.h); nothing else is exported. */
__attribute__((visibility("default"))) const rt_backend_iface *lector_backend_init(const rt_host_api *host);
__attribute__((visibility("default"))) int lector_backend_score(char *why, size_t why_len);

const rt_backend_iface *lector_backend_init(const rt_host_api *host)
{
    if (!host || host->api_version != RT_BACKEND_API_VERSION) return NULL;
    H = host;
    return &cuda_iface;
}

/* The number of GPUs the CUDA runtime sees; 0 with cu_init's reason. */
int lector_backend_score(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, why_len, "cuda: no usable GPU: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return 0;
    }
    if (n <= 0) snprintf(why, why_len, "cuda: no usable GPU: the CUDA runtime sees none");
    return n > 0 ? n : 0;
}
