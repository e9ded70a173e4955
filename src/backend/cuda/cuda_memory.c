/*
 * cuda_memory.c - the CUDA module's memory: device allocations counted
 * against a process-wide cap per GPU (gpu_mem_limit), the workers a call
 * borrows (stream, cuDNN and cuBLAS handles, workspace, pinned staging),
 * the constant block a plan compiles into, and weights shared by every plan
 * of the process that holds the same bytes (uploaded once). Fault injection
 * for tests: LECTOR_CUDA_FAIL=alloc:N fails the Nth device allocation,
 * LECTOR_CUDA_FAIL=launch:N the Nth step.
 *
 * Device memory comes from a stream-ordered pool of the module's own
 * (cudaMallocFromPoolAsync / cudaFreeAsync) where the GPU has them, not
 * from cudaMalloc / cudaFree: those make every stream of the GPU wait
 * (CUDA Programming Guide, "Stream-Ordered Memory Allocator"), and a first
 * pass over pages of new sizes grows arenas, image buffers and workspaces
 * while 16 workers keep the GPU busy. LECTOR_CUDA_POOL=0 goes back to them.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

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

int cu_fault_alloc(void)
{
    pthread_once(&fault_once, fault_init);
    return fault_alloc_at > 0 && atomic_fetch_add(&fault_allocs, 1) + 1 == fault_alloc_at;
}

int cu_fault_launch(void)
{
    pthread_once(&fault_once, fault_init);
    return fault_launch_at > 0 && atomic_fetch_add(&fault_launches, 1) + 1 == fault_launch_at;
}

/* ---- device memory under a cap ------------------------------------------------ */

typedef struct dev_block {
    void *p;
    size_t size;
    int device;
    int pooled;       /* from the device's pool (freed with cudaFreeAsync) */
    const char *what; /* a literal: what the memory is for (LECTOR_CUDA_MEM_LOG) */
} dev_block;

/* LECTOR_CUDA_MEM_LOG=1: every allocation and free logged, for where a
 * process's device memory goes (docs/DEBUG.md) */
static int mem_log(void) { return H->testctl_long(LECTOR__TC_CUDA_MEM_LOG, 0) > 0; }

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t mem_used[CU_MAX_DEV], mem_limit[CU_MAX_DEV];
static dev_block *blocks;
static int n_blocks, cap_blocks;

/* The cap of a GPU is process-wide: the last backend created on it with a
 * nonzero cap sets it (an engine's three models share one). */
void cu_mem_set_limit(int dev, size_t limit)
{
    if (!limit) return;
    pthread_mutex_lock(&mem_lock);
    mem_limit[dev] = limit;
    pthread_mutex_unlock(&mem_lock);
}

/* ---- the stream-ordered pool ----------------------------------------------------- */

/* Freed memory the pool keeps for reuse instead of giving it back to the
 * driver at the next synchronisation; none under a cap (gpu_mem_limit), so
 * that what the process holds stays within it. */
#define CU_POOL_KEEP ((size_t)1 << 30)

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int pool_state[CU_MAX_DEV]; /* 0 not yet tried, 1 the pool, -1 cudaMalloc */
static cudaMemPool_t pools[CU_MAX_DEV];
/* The pool's allocations and frees go on a stream of their own: every
 * buffer is freed after the call that used it has synchronised its worker's
 * stream, so no other stream needs ordering with the free, and an
 * allocation is made usable on every stream by synchronising this one. */
static cudaStream_t pool_streams[CU_MAX_DEV];

/* Device memory the host waited for 1 ms or more to allocate or free: logged
 * (debug), since that wait is every stream's when it is cudaMalloc's or
 * cudaFree's. */
#define CU_MEM_WAIT_LOG_MS 1.0

static int pool_ready(int dev)
{
    pthread_mutex_lock(&pool_lock);
    if (!pool_state[dev]) {
        int ok = 0;
        pool_state[dev] = -1;
        if (H->testctl_long(LECTOR__TC_CUDA_POOL, 1) &&
            cudaDeviceGetAttribute(&ok, cudaDevAttrMemoryPoolsSupported, dev) == cudaSuccess && ok) {
            struct cudaMemPoolProps props;
            memset(&props, 0, sizeof props);
            props.allocType = cudaMemAllocationTypePinned;
            props.location.type = cudaMemLocationTypeDevice;
            props.location.id = dev;
            pthread_mutex_lock(&mem_lock);
            size_t lim = mem_limit[dev];
            pthread_mutex_unlock(&mem_lock);
            uint64_t keep = lim ? 0 : CU_POOL_KEEP;
            if (cudaMemPoolCreate(&pools[dev], &props) == cudaSuccess) {
                if (cudaMemPoolSetAttribute(pools[dev], cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess &&
                    cudaStreamCreateWithFlags(&pool_streams[dev], cudaStreamNonBlocking) == cudaSuccess)
                    pool_state[dev] = 1;
                else
                    cudaMemPoolDestroy(pools[dev]);
            }
            if (pool_state[dev] < 0) H->log(2, "cuda: GPU %d: no stream-ordered memory pool; cudaMalloc instead", dev);
        }
        cudaGetLastError(); /* a refusal above is not the next call's error */
    }
    int ready = pool_state[dev] > 0;
    pthread_mutex_unlock(&pool_lock);
    return ready;
}

static cudaError_t raw_alloc(int dev, size_t size, void **p, int *pooled)
{
    cudaError_t e;
    *pooled = pool_ready(dev);
    if (*pooled) {
        e = cudaMallocFromPoolAsync(p, size, pools[dev], pool_streams[dev]);
        if (e == cudaSuccess && (e = cudaStreamSynchronize(pool_streams[dev])) != cudaSuccess) {
            cudaFreeAsync(*p, pool_streams[dev]);
            *p = NULL;
        }
    } else {
        e = cudaMalloc(p, size);
    }
    return e;
}

static void raw_free(void *p, int dev, int pooled, size_t size)
{
    double t0 = cu_now_ms();
    int cur = dev;
    cudaGetDevice(&cur);
    if (cur != dev) cudaSetDevice(dev);
    if (pooled)
        cudaFreeAsync(p, pool_streams[dev]);
    else
        cudaFree(p);
    if (cur != dev) cudaSetDevice(cur);
    double ms = cu_now_ms() - t0;
    if (ms >= CU_MEM_WAIT_LOG_MS)
        H->log(3, "cuda: freeing %zu KiB of device memory (%s) took %.1f ms", size >> 10,
               pooled ? "cudaFreeAsync" : "cudaFree", ms);
}

lector_status cu_dev_alloc(int dev, size_t size, void **out, const char *what, lector_error *err)
{
    *out = NULL;
    if (!size) size = 256;
    if (cu_fault_alloc())
        return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "cuda: injected allocation failure (LECTOR_CUDA_FAIL) for %s",
                       what);
    pthread_mutex_lock(&mem_lock);
    if (mem_limit[dev] && mem_used[dev] + size > mem_limit[dev]) {
        size_t used = mem_used[dev], lim = mem_limit[dev];
        pthread_mutex_unlock(&mem_lock);
        return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY,
                       "cuda: %s needs %zu bytes; the GPU memory cap (gpu_mem_limit) is %zu bytes, %zu in use", what,
                       size, lim, used);
    }
    mem_used[dev] += size; /* reserved before the allocation, so concurrent callers respect the cap */
    pthread_mutex_unlock(&mem_lock);
    cudaSetDevice(dev);
    void *p = NULL;
    int pooled = 0;
    double t0 = cu_now_ms();
    cudaError_t e = raw_alloc(dev, size, &p, &pooled);
    double ms = cu_now_ms() - t0;
    if (ms >= CU_MEM_WAIT_LOG_MS || mem_log())
        H->log(3, "cuda: allocating %zu KiB for %s (%s) took %.1f ms", size >> 10, what,
               pooled ? "cudaMallocFromPoolAsync" : "cudaMalloc", ms);
    pthread_mutex_lock(&mem_lock);
    if (e != cudaSuccess) {
        mem_used[dev] -= size;
        pthread_mutex_unlock(&mem_lock);
        cudaGetLastError(); /* not sticky: clear it */
        char buf[160];
        snprintf(buf, sizeof buf, "allocating %zu bytes for %s", size, what);
        return cu_cuda_fail(err, e, buf);
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
            raw_free(p, dev, pooled, size);
            return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        blocks = nb;
        cap_blocks = cap;
    }
    blocks[n_blocks++] = (dev_block){p, size, dev, pooled, what};
    size_t in_use = mem_used[dev];
    pthread_mutex_unlock(&mem_lock);
    if (mem_log()) H->log(3, "cuda: memory +%zu KiB for %s, %zu KiB in use", size >> 10, what, in_use >> 10);
    *out = p;
    return LECTOR_OK;
}

/* Gives the pool's freed memory back to the driver (lector_engine_trim):
 * what it keeps for reuse is the process's, not counted under the cap. */
void cu_mem_trim(int dev)
{
    pthread_mutex_lock(&pool_lock);
    int ready = pool_state[dev] > 0;
    pthread_mutex_unlock(&pool_lock);
    if (!ready) return;
    uint64_t before = 0, after = 0;
    cudaMemPoolGetAttribute(pools[dev], cudaMemPoolAttrReservedMemCurrent, &before);
    /* a free reaches the pool when its stream does */
    if (cudaStreamSynchronize(pool_streams[dev]) == cudaSuccess) cudaMemPoolTrimTo(pools[dev], 0);
    cudaMemPoolGetAttribute(pools[dev], cudaMemPoolAttrReservedMemCurrent, &after);
    cudaGetLastError();
    H->log(3, "cuda: GPU %d: memory pool trimmed from %llu to %llu KiB", dev, (unsigned long long)(before >> 10),
           (unsigned long long)(after >> 10));
}

/* Frees device memory whose every use has finished (the call that used it
 * synchronised its stream). */
void cu_dev_free(void *p)
{
    if (!p) return;
    dev_block b = {p, 0, -1, 0, NULL};
    size_t in_use = 0;
    pthread_mutex_lock(&mem_lock);
    for (int i = n_blocks - 1; i >= 0; i--)
        if (blocks[i].p == p) {
            b = blocks[i];
            mem_used[b.device] -= b.size;
            blocks[i] = blocks[--n_blocks];
            in_use = mem_used[b.device];
            break;
        }
    pthread_mutex_unlock(&mem_lock);
    if (b.device >= 0 && mem_log())
        H->log(3, "cuda: memory -%zu KiB of %s, %zu KiB in use", b.size >> 10, b.what, in_use >> 10);
    if (b.device >= 0)
        raw_free(p, b.device, b.pooled, b.size);
    else
        cudaFree(p); /* not ours: never expected */
}

/* ---- backend state and workers ------------------------------------------------- */

/* ---- workers ------------------------------------------------------------------- */

void cu_worker_free(cu_worker *w)
{
    if (!w) return;
    for (int i = 0; i < w->n_graphs; i++) cudaGraphExecDestroy(w->graphs[i].exec);
    if (w->dnn) cudnnDestroy(w->dnn);
    if (w->blas) cublasDestroy(w->blas);
    if (w->lt) cublasLtDestroy(w->lt);
    if (w->stream) cudaStreamDestroy(w->stream);
    cu_dev_free(w->ws);
    cu_dev_free(w->img);
    if (w->pin) cudaFreeHost(w->pin);
    cu_free(w);
}

/* A cuDNN handle. The process's first is made alone, as cuDNN's developer
 * guide asks of threads that make handles of their own ("Thread Safety"):
 * models loading side by side make their first workers at the same time. */
static cudnnStatus_t create_dnn(cudnnHandle_t *h)
{
    static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
    static atomic_int made;
    if (atomic_load(&made)) return cudnnCreate(h);
    pthread_mutex_lock(&first_lock);
    cudnnStatus_t ds = cudnnCreate(h);
    if (ds == CUDNN_STATUS_SUCCESS) atomic_store(&made, 1);
    pthread_mutex_unlock(&first_lock);
    return ds;
}

/* The worker each thread last put back, per backend (a thread runs the
 * models of an fp32 and an fp16 backend at most): a thread takes it again
 * when it is idle, so that a worker meets the same arenas (rt/arena.c does
 * the same) and its CUDA graphs, captured per worker and arena, are reused
 * rather than captured anew for every pairing. Only compared. */
#define CU_WORKER_AFFINITY 4
static _Thread_local struct {
    const cu_ctx *c;
    const cu_worker *w;
} last_put[CU_WORKER_AFFINITY];
static _Thread_local unsigned last_next;

/* A new worker: its stream, cuDNN, cuBLAS and cuBLASLt handles. */
static lector_status worker_new(cu_ctx *c, cu_worker **out, lector_error *err)
{
    cu_worker *w = cu_calloc(1, sizeof *w);
    if (!w) return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    cudaError_t e = cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        cu_free(w);
        return cu_cuda_fail(err, e, "creating a stream");
    }
    cudnnStatus_t ds = create_dnn(&w->dnn);
    if (ds != CUDNN_STATUS_SUCCESS) {
        cu_worker_free(w);
        return cu_fail(err, LECTOR_ERR_BACKEND, "cudnn: cudnnCreate: %s", cudnnGetErrorString(ds));
    }
    cudnnSetStream(w->dnn, w->stream);
    cublasStatus_t bs = cublasCreate(&w->blas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        cu_worker_free(w);
        return cu_fail(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                       "cublas: cublasCreate: %s", cublasGetStatusString(bs));
    }
    cublasSetStream(w->blas, w->stream);
    /* fp32 stays fp32: no TF32 unless asked for (parity with the CPU path); half-precision
     * products set the default math mode per call */
    cublasSetMathMode(w->blas, CUBLAS_PEDANTIC_MATH);
    /* without cuBLASLt's handle the half-precision products take cuBLAS's calls (cuda_gemm.c) */
    if ((bs = cublasLtCreate(&w->lt)) != CUBLAS_STATUS_SUCCESS) {
        H->log(2, "cuda: cublasLtCreate: %s", cublasGetStatusString(bs));
        w->lt = NULL;
    }
    w->device = c->device;
    atomic_fetch_add(&c->made, 1);
    *out = w;
    return LECTOR_OK;
}

lector_status cu_worker_get(cu_ctx *c, cu_worker **out, lector_error *err)
{
    const cu_worker *mine = NULL;
    for (int i = 0; i < CU_WORKER_AFFINITY && !mine && H->testctl_long(LECTOR__TC_AFFINITY, 1); i++)
        if (last_put[i].c == c) mine = last_put[i].w;
    pthread_mutex_lock(&c->lock);
    cu_worker **at = &c->idle;
    while (mine && *at && *at != mine) at = &(*at)->next;
    if (!mine || !*at) at = &c->idle; /* not idle (or none): the last one put back */
    cu_worker *w = *at;
    if (w) *at = w->next;
    pthread_mutex_unlock(&c->lock);
    cudaSetDevice(c->device);
    if (w) {
        *out = w;
        return LECTOR_OK;
    }
    return worker_new(c, out, err);
}

/* The workers a backend makes ahead (rt_backend.gpu_workers), on a thread
 * of its own started by cu_init: made by the first runs instead, they were
 * made side by side by 14-16 first plans at once, each waiting 18-52 ms
 * (a cold start's debug log, 2026-12-06), while the models still load
 * here. A run that finds none idle still makes its own; the thread stops
 * once the backend has made as many as asked for, by whichever thread. */
static void *make_ahead(void *arg)
{
    cu_ctx *c = arg;
    cudaSetDevice(c->device);
    cu_worker *first; /* the libraries' first calls first, on the worker cu_init made */
    lector_error err0 = {0};
    if (!cu_worker_get(c, &first, &err0)) {
        cu_prime_libraries(c, first);
        cu_worker_put(c, first);
    }
    double t0 = cu_now_ms();
    int n = 0;
    while (!atomic_load(&c->ahead_stop) && atomic_load(&c->made) < c->ahead) {
        cu_worker *w;
        lector_error err = {0};
        if (worker_new(c, &w, &err)) {
            H->log(3, "cuda: making a worker ahead: %s", err.message);
            break;
        }
        pthread_mutex_lock(&c->lock);
        w->next = c->idle;
        c->idle = w;
        pthread_mutex_unlock(&c->lock);
        n++;
    }
    H->log(3, "cuda: GPU %d: %d workers made ahead in %.1f ms (%d in all)", c->device, n, cu_now_ms() - t0,
           atomic_load(&c->made));
    return NULL;
}

void cu_workers_ahead(cu_ctx *c, int n)
{
    c->ahead = n;
    if (n > 1 && cu_switch(LECTOR__TC_CUDA_WORKERS_AHEAD, 1))
        c->ahead_started = pthread_create(&c->ahead_thread, NULL, make_ahead, c) == 0;
}

void cu_workers_ahead_stop(cu_ctx *c)
{
    atomic_store(&c->ahead_stop, 1);
    if (c->ahead_started) pthread_join(c->ahead_thread, NULL);
    c->ahead_started = 0;
}

void cu_worker_put(cu_ctx *c, cu_worker *w)
{
    int slot = -1;
    for (int i = 0; i < CU_WORKER_AFFINITY && slot < 0; i++)
        if (last_put[i].c == c) slot = i;
    if (slot < 0) slot = (int)(last_next++ % CU_WORKER_AFFINITY);
    last_put[slot].c = c;
    last_put[slot].w = w;
    pthread_mutex_lock(&c->lock);
    w->next = c->idle;
    c->idle = w;
    pthread_mutex_unlock(&c->lock);
}

/* One device workspace per worker: cuBLAS's (fixed, given to the handle so
 * that no allocation happens inside a CUDA graph capture) then the steps'
 * (cuDNN's, the NHWC pooling's partial sums). */
lector_status cu_worker_ws(cu_ctx *c, cu_worker *w, size_t need, lector_error *err)
{
    if (w->ws && need <= w->ws_size) return LECTOR_OK;
    cu_dev_free(w->ws);
    w->ws = NULL;
    w->ws_size = 0;
    lector_status st = cu_dev_alloc(c->device, CU_BLAS_WS + need, &w->ws, "the GPU workspace", err);
    if (st) return st;
    w->ws_size = need;
    cublasStatus_t bs = cublasSetWorkspace(w->blas, w->ws, CU_BLAS_WS);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return cu_fail(err, LECTOR_ERR_BACKEND, "cublas: cublasSetWorkspace: %s", cublasGetStatusString(bs));
    return LECTOR_OK;
}

/* The size a worker's buffer grows to for `need` bytes: half as much again,
 * and no less than any worker of the backend has grown to (`high`, raised). */
static size_t grown_size(_Atomic size_t *high, size_t need, size_t floor)
{
    size_t want = need < floor ? floor : need + need / 2, hi = atomic_load(high);
    if (want < hi) want = hi;
    while (hi < want && !atomic_compare_exchange_weak(high, &hi, want)) {
    }
    return want;
}

lector_status cu_worker_pin(cu_ctx *c, cu_worker *w, size_t need, lector_error *err)
{
    if (need <= w->pin_size) return LECTOR_OK;
    /* both wait for every stream of the GPU, as cudaFree does: timed */
    double t0 = cu_now_ms();
    if (w->pin) cudaFreeHost(w->pin);
    w->pin = NULL;
    w->pin_size = 0;
    size_t sz = grown_size(&c->pin_high, need, (size_t)1 << 20);
    cudaError_t e = cudaMallocHost(&w->pin, sz);
    double ms = cu_now_ms() - t0;
    if (ms >= CU_MEM_WAIT_LOG_MS || mem_log())
        H->log(3, "cuda: pinned staging grown to %zu KiB in %.1f ms", sz >> 10, ms);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cu_cuda_fail(err, e, "allocating pinned host memory");
    }
    w->pin_size = sz;
    return LECTOR_OK;
}

lector_status cu_worker_img(cu_ctx *c, cu_worker *w, size_t need, lector_error *err)
{
    if (need <= w->img_size) return LECTOR_OK;
    cu_dev_free(w->img);
    w->img = NULL;
    w->img_size = 0;
    size_t sz = grown_size(&c->img_high, need, 0);
    lector_status st = cu_dev_alloc(c->device, sz, &w->img, "an image input", err);
    if (!st) w->img_size = sz;
    return st;
}

/* ---- constant blocks ----------------------------------------------------------- */

/* A chunk to share, owned by the block from here on (freed, or its
 * reference put, when there is no room for it). */
static size_t chunk_push(cbuf *b, struct cbuf_chunk ch, int *oom)
{
    if (b->n_big == b->cap_big) {
        int cap = b->cap_big ? 2 * b->cap_big : 32;
        struct cbuf_chunk *nb = cu_realloc(b->big, sizeof *nb * (size_t)cap);
        if (!nb) {
            *oom = 1;
            cu_free(ch.p);
            cu_shared_put(ch.shared);
            return 0;
        }
        b->big = nb;
        b->cap_big = cap;
    }
    b->big[b->n_big] = ch;
    return CU_SHARED | (size_t)b->n_big++;
}

size_t cbuf_add(cbuf *b, const void *data, size_t n, int *oom)
{
    if (n >= CU_SHARE_MIN) { /* a weight: shared with the other plans at upload */
        void *copy = data ? cu_malloc(n) : cu_calloc(1, n);
        if (!copy) {
            *oom = 1;
            return 0;
        }
        if (data) memcpy(copy, data, n);
        return chunk_push(b, (struct cbuf_chunk){.p = copy, .n = n}, oom);
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
    /* the alignment gap zeroed too: the block is compared byte for byte with
     * other plans' (the shared store), and left as realloc gave it, the same
     * constants of two line widths made two blocks, each uploaded */
    memset(b->p + b->n, 0, off - b->n);
    if (data)
        memcpy(b->p + off, data, n);
    else
        memset(b->p + off, 0, n);
    b->n = off + n;
    return off;
}

void cu_cbuf_free(cbuf *b)
{
    for (int i = 0; i < b->n_big; i++) {
        cu_free(b->big[i].p);
        cu_shared_put(b->big[i].shared); /* a memo hit the upload did not take */
    }
    cu_free(b->big);
    cu_free(b->p);
    *b = (cbuf){0};
}

/* ---- shared weights (see CU_SHARED) ------------------------------------------------ */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static cu_shared *shared_list;

/* What this thread's compile spent on the shared store, for its debug line
 * (cu_store_costs): waiting for its locks, and hashing, comparing and
 * uploading bytes. */
static _Thread_local cu_store_cost store_cost;

static void lock_timed(pthread_mutex_t *m)
{
    if (!pthread_mutex_trylock(m)) return;
    double t0 = cu_now_ms();
    pthread_mutex_lock(m);
    store_cost.wait_ms += cu_now_ms() - t0;
}

cu_store_cost cu_store_costs(void)
{
    cu_store_cost c = store_cost;
    store_cost = (cu_store_cost){0};
    return c;
}

/* A hash of the bytes: every 8-byte word up to 1 MiB, every 16th above
 * (and the tail). Equal hashes are compared byte for byte anyway; the
 * large chunks are a model's weights, hashed again by each plan of a new
 * shape (10 MB for the recogniser: 4 ms for every word, on the compile path
 * of every new line width), while the small ones are constant blocks that
 * may differ from one shape to the next in a word or two, and a sampled hash
 * would send each new one through a byte compare with every earlier one. */
static uint64_t bytes_hash(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0, stride = n <= ((size_t)1 << 20) ? 8 : 128;
    for (; i + 8 <= n; i += stride) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (i = n > 8 ? n - 8 : 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* A reference to s, unless its last one is being dropped (refs at 0:
 * cu_shared_put is about to unlink and free it). */
static int shared_ref(cu_shared *s)
{
    int r = atomic_load(&s->refs);
    while (r > 0)
        if (atomic_compare_exchange_weak(&s->refs, &r, r + 1)) return 1;
    return 0;
}

/* The entry holding these bytes on device dev, with a reference taken, or
 * NULL; under shared_lock. */
static cu_shared *shared_find(int dev, uint64_t h, const void *host, size_t n)
{
    for (cu_shared *s = shared_list; s; s = s->next) {
        if (s->device != dev || s->hash != h || s->n != n) continue;
        double t = cu_now_ms();
        int same = !memcmp(s->host, host, n);
        store_cost.compare_ms += cu_now_ms() - t;
        store_cost.compared += n;
        if (same && shared_ref(s)) return s;
    }
    return NULL;
}

/* A reference to the device copy of these bytes, uploading them if no plan
 * on this device holds them yet. Takes ownership of `host`. The upload runs
 * outside the store's lock: under it, 16 compiles of new line widths queued
 * behind each other's uploads (5.4 s of waiting summed over a CLI run of
 * 1,000 distinct pages); two that upload the same bytes at once keep the
 * first one stored. */
static lector_status shared_get(int dev, void *host, size_t n, const char *what, cu_shared **out, lector_error *err)
{
    double t0 = cu_now_ms();
    uint64_t h = bytes_hash(host, n);
    store_cost.hash_ms += cu_now_ms() - t0;
    lock_timed(&shared_lock);
    cu_shared *s = shared_find(dev, h, host, n);
    pthread_mutex_unlock(&shared_lock);
    if (s) {
        cu_free(host);
        *out = s;
        return LECTOR_OK;
    }
    *out = NULL;
    double t1 = cu_now_ms();
    s = cu_calloc(1, sizeof *s);
    char *d = NULL;
    lector_status st =
        s ? cu_dev_alloc(dev, n, (void **)&d, what, err) : cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!st) {
        cudaError_t e = cudaMemcpy(d, host, n, cudaMemcpyHostToDevice);
        if (e != cudaSuccess) {
            char msg[96];
            snprintf(msg, sizeof msg, "uploading %s", what);
            st = cu_cuda_fail(err, e, msg);
            cu_dev_free(d);
        }
    }
    if (st) {
        cu_free(s);
        cu_free(host);
        return st;
    }
    store_cost.upload_ms += cu_now_ms() - t1;
    store_cost.uploaded += n;
    s->hash = h;
    s->n = n;
    s->host = host;
    s->dev = d;
    s->device = dev;
    atomic_init(&s->refs, 1);
    lock_timed(&shared_lock);
    cu_shared *first = shared_find(dev, h, host, n);
    if (!first) {
        s->next = shared_list;
        shared_list = s;
    }
    pthread_mutex_unlock(&shared_lock);
    if (first) { /* another compile stored the same bytes meanwhile */
        cu_dev_free(d);
        cu_free(host);
        cu_free(s);
        s = first;
    }
    *out = s;
    return LECTOR_OK;
}

void cu_shared_put(cu_shared *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
    /* the last reference: no one can take another (shared_ref) */
    pthread_mutex_lock(&shared_lock);
    for (cu_shared **pp = &shared_list; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&shared_lock);
    cu_dev_free(s->dev);
    cu_free(s->host);
    cu_free(s);
}

/* ---- the backend's memo of its model's weights ------------------------------------ */

/* The model's own constants (a plan graph's clone shares them and never
 * frees them) outlive every plan of the backend; a plan graph's own
 * constants do not, and their addresses may come back with other bytes. */
static const void *memo_src(const rt_value *v) { return v && v->data && !v->owns_data ? v->data : NULL; }

/* The device copy memoised for (src, kind, n), or NULL; under memo_lock. */
static cu_shared *memo_find(const cu_ctx *c, const void *src, int kind, size_t n)
{
    for (int i = 0; i < c->n_memo; i++)
        if (c->memo[i].src == src && c->memo[i].kind == kind && c->memo[i].n == n) return c->memo[i].shared;
    return NULL;
}

size_t cu_memo_get(compile_ctx *cc, const rt_value *v, int kind, size_t n)
{
    cu_ctx *c = cc->be->ctx;
    const void *src = memo_src(v);
    if (!src || n < CU_SHARE_MIN) return 0;
    double t0 = cu_now_ms();
    pthread_rwlock_rdlock(&c->memo_lock); /* compiles look up side by side */
    store_cost.wait_ms += cu_now_ms() - t0;
    cu_shared *hit = memo_find(c, src, kind, n);
    if (hit) atomic_fetch_add(&hit->refs, 1); /* the memo holds one: never at 0 here */
    pthread_rwlock_unlock(&c->memo_lock);
    if (!hit) return 0;
    store_cost.memo_hits++;
    return chunk_push(&cc->cb, (struct cbuf_chunk){NULL, n, src, kind, hit}, &cc->oom);
}

size_t cbuf_add_from(compile_ctx *cc, const rt_value *v, int kind, const void *data, size_t n)
{
    size_t off = cbuf_add(&cc->cb, data, n, &cc->oom);
    if (!cc->oom && (off & CU_SHARED)) {
        struct cbuf_chunk *ch = &cc->cb.big[off & ~CU_SHARED];
        ch->src = memo_src(v);
        ch->kind = kind;
    }
    return off;
}

static void memo_put(cu_ctx *c, const struct cbuf_chunk *ch, cu_shared *s)
{
    pthread_rwlock_wrlock(&c->memo_lock);
    if (memo_find(c, ch->src, ch->kind, ch->n)) {
        pthread_rwlock_unlock(&c->memo_lock); /* another plan's compile recorded it first */
        return;
    }
    if (c->n_memo == c->cap_memo) {
        int cap = c->cap_memo ? 2 * c->cap_memo : 64;
        struct cu_memo *nm = cu_realloc(c->memo, sizeof *nm * (size_t)cap);
        if (!nm) { /* no memo: the next plan converts and compares again */
            pthread_rwlock_unlock(&c->memo_lock);
            return;
        }
        c->memo = nm;
        c->cap_memo = cap;
    }
    atomic_fetch_add(&s->refs, 1); /* the caller holds one */
    c->memo[c->n_memo++] = (struct cu_memo){ch->src, ch->n, ch->kind, s};
    pthread_rwlock_unlock(&c->memo_lock);
}

void cu_memo_free(cu_ctx *c)
{
    for (int i = 0; i < c->n_memo; i++) cu_shared_put(c->memo[i].shared);
    cu_free(c->memo);
    c->memo = NULL;
    c->n_memo = c->cap_memo = 0;
    pthread_rwlock_destroy(&c->memo_lock);
}

/* Uploads the staged constants: the plan's own block and its shared chunks. */
lector_status cu_upload_constants(cu_ctx *c, cu_plan *cp, cbuf *cb, lector_error *err)
{
    int device = c->device;
    lector_status st = LECTOR_OK;
    if (cb->n_big) {
        cp->shared = cu_calloc((size_t)cb->n_big, sizeof *cp->shared);
        if (!cp->shared) return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < cb->n_big && !st; i++) {
        struct cbuf_chunk *ch = &cb->big[i];
        if (ch->shared) { /* the memo's: the reference moves to the plan */
            cp->shared[i] = ch->shared;
            ch->shared = NULL;
        } else {
            st = shared_get(device, ch->p, ch->n, "the model's weights", &cp->shared[i], err);
            ch->p = NULL; /* the store's now, or freed */
            if (!st && ch->src) memo_put(c, ch, cp->shared[i]);
        }
        if (!st) cp->n_shared = i + 1;
    }
    /* The block of small constants (biases, folded scales, converted
     * filters) is the same for every shape of a recogniser: plans of new
     * line widths share the first one's copy instead of each allocating
     * and uploading their own (a first pass over documents compiles
     * hundreds; per-shape tables, such as a Resize's, make blocks of their
     * own). */
    if (!st && cb->n) {
        st = shared_get(device, cb->p, cb->n, "the model's constants", &cp->cblock_shared, err);
        cb->p = NULL; /* the store's now, or freed */
        cb->cap = 0;
        if (!st) cp->cblock = cp->cblock_shared->dev;
        cp->cblock_size = cb->n;
    }
    return st;
}

/* Bytes this process holds on the backend's GPU through Lector, and the cap. */
void cu_memory_usage(rt_backend *be, size_t *used, size_t *limit)
{
    int dev = be->device;
    pthread_mutex_lock(&mem_lock);
    *used = dev >= 0 && dev < CU_MAX_DEV ? mem_used[dev] : 0;
    *limit = dev >= 0 && dev < CU_MAX_DEV ? mem_limit[dev] : 0;
    pthread_mutex_unlock(&mem_lock);
}

/* The GPU memory cap of device dev (gpu_mem_limit), 0 for none. */
size_t cu_mem_limit(int dev)
{
    pthread_mutex_lock(&mem_lock);
    size_t lim = dev >= 0 && dev < CU_MAX_DEV ? mem_limit[dev] : 0;
    pthread_mutex_unlock(&mem_lock);
    return lim;
}

/* What this process may still allocate on the device: its free memory,
 * bounded by the cap. */
size_t cu_memory_available(rt_backend *be)
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
