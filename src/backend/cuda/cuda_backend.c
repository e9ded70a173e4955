/*
 * cuda_backend.c - the CUDA backend: liblector-cuda.so, loaded with dlopen by
 * the core's module loader (src/rt/module.c), never linked into the core.
 * This file is the module: its table, its entry points, the backend's state
 * and its device entries. The rest, by concern:
 *
 *   cuda_plan.c        a plan's compilation; one step per live node, built by
 *                      its operator's family (a dispatch-only switch):
 *   cuda_conv.c          Conv, ConvTranspose (cuDNN, depthwise, 1x1 as a product)
 *   cuda_matmul.c        MatMul (cuBLAS)
 *   cuda_gemm.c          the half-precision products, through cuBLASLt (an algorithm per size class)
 *   cuda_pool.c          pooling
 *   cuda_reduce.c        Softmax, LayerNormalization, ArgMax / ReduceMax / TopK
 *   cuda_movement.c      Slice, Transpose, Expand, Reshape & co., Concat, Resize
 *   cuda_elementwise.c   elementwise operators, BatchNormalization
 *   cuda_host.c          a node no GPU step covers, on the host
 *   cuda_layout.c      the values' storages (fp16, NHWC)
 *   cuda_fuse.c        elementwise steps fused into chains
 *   cuda_nvrtc.c       chains compiled by NVRTC, cached by source for the process
 *   cuda_kcache.c      NVRTC's kernels kept on disk between processes
 *   cuda_algos.c       cuDNN's algorithm choices, for the process and on disk
 *   choice_table.c     the table of choices both kinds of algorithm are kept in
 *   cuda_memory.c      device memory under a cap, workers, constants, shared weights
 *   cuda_prime.c       the libraries' first calls, made while the models load
 *   cuda_exec.c        running a plan (a dispatch-only switch over step kinds)
 *   cuda_graphs.c      CUDA graphs of the plans that come back
 *   cuda_profile.c     LECTOR_CUDA_PROFILE
 *   cuda_check.c       LECTOR_CUDA_CHECK: every step against the reference kernels
 *   kernels.cu         our kernels
 *
 * Precision and layout: fp32 NCHW by default; with fp16 every float
 * activation is stored in half precision and 4-D tensors are NHWC where
 * their consumers allow (cuda_layout.c), so cuDNN runs its tensor-core
 * convolutions; a plan with anything that mode cannot express (a host step,
 * say) is compiled in fp32 NCHW instead, with a log line.
 *
 * Shapes: a model compiles a plan per input shape; what does not depend on
 * the shape is shared by all of them: weights (uploaded once per process and
 * device), cuDNN's algorithm per signature, NVRTC's chain kernels (their
 * source never holds a size), and the core's activation arenas.
 * Concurrency: each call borrows a worker (stream, cuDNN and cuBLAS handles,
 * workspace, pinned staging) from the backend's pool, so threads never share
 * a stream. Failures (a CUDA error, out of memory, an injected fault) return
 * a status and leave the backend usable.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

const rt_host_api *H;

/* ---- errors -------------------------------------------------------------- */

lector_status cu_fail(lector_error *err, lector_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
lector_status cu_fail(lector_error *err, lector_status code, const char *fmt, ...)
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

lector_status cu_cuda_fail(lector_error *err, cudaError_t e, const char *what)
{
    lector_status code = e == cudaErrorMemoryAllocation ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND;
    return cu_fail(err, code, "cuda: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* ---- fault injection ------------------------------------------------------- */

/* ---- the backend ---------------------------------------------------------------- */

/* LECTOR_CUDA_SYNC: how a thread waits in cudaStreamSynchronize. CUDA spins
 * when the process has fewer contexts than CPUs, so 16 workers waiting on
 * 16 cores take them all from the threads that decode and crop pages; the
 * control measures that (docs/BENCHMARKS.md). Unset: CUDA's choice. */
static void set_sync_mode(int device)
{
    const char *s = H->testctl_str(LECTOR__TC_CUDA_SYNC);
    if (!s || !*s) return;
    unsigned flag = !strcmp(s, "spin")    ? cudaDeviceScheduleSpin
                    : !strcmp(s, "yield") ? cudaDeviceScheduleYield
                    : !strcmp(s, "block") ? cudaDeviceScheduleBlockingSync
                                          : 0;
    if (!flag) {
        H->log(2, "cuda: LECTOR_CUDA_SYNC=%s is not spin, yield or block: left to CUDA", s);
        return;
    }
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaSetDeviceFlags(flag);
    if (e != cudaSuccess) {
        cudaGetLastError();
        H->log(2, "cuda: LECTOR_CUDA_SYNC=%s: %s", s, cudaGetErrorString(e));
    }
}

static lector_status cu_init(rt_backend *be, lector_error *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return cu_fail(err, LECTOR_ERR_UNAVAILABLE, "cuda: no usable GPU: %s (%s)", cudaGetErrorString(e),
                       cudaGetErrorName(e));
    }
    if (be->device < 0 || be->device >= n || be->device >= CU_MAX_DEV)
        return cu_fail(err, LECTOR_ERR_UNAVAILABLE, "cuda: GPU %d does not exist (%d visible)", be->device, n);
    set_sync_mode(be->device);
    cu_ctx *c = cu_calloc(1, sizeof *c);
    if (!c) return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    c->device = be->device;
    pthread_mutex_init(&c->lock, NULL);
    pthread_rwlock_init(&c->memo_lock, NULL);
    struct cudaDeviceProp prop;
    if ((e = cudaGetDeviceProperties(&prop, c->device)) != cudaSuccess) {
        pthread_mutex_destroy(&c->lock);
        pthread_rwlock_destroy(&c->memo_lock);
        cu_free(c);
        return cu_cuda_fail(err, e, "reading the device properties");
    }
    snprintf(c->name, sizeof c->name, "%.63s", prop.name);
    c->sm = prop.major * 10 + prop.minor;
    if (be->gpu_mem_limit) cu_mem_set_limit(c->device, be->gpu_mem_limit);
    /* one worker up front: makes the context and finds a broken stack now, not at the first read */
    cu_worker *w;
    lector_status st = cu_worker_get(c, &w, err);
    if (st) {
        pthread_mutex_destroy(&c->lock);
        pthread_rwlock_destroy(&c->memo_lock);
        cu_free(c);
        return st;
    }
    cu_worker_put(c, w);
    c->algo_ident = cu_algo_ident(c, be->kernel_cache_dir);
    cu_workers_ahead(c, be->gpu_workers);
    be->ctx = c;
    char nvrtc[160];
    cu_nvrtc_describe(nvrtc, sizeof nvrtc);
    H->log(2, "cuda: GPU %d (%s, sm_%d%d, %zu MiB), cuDNN %zu, cap %zu MiB, %s%s", c->device, prop.name, prop.major,
           prop.minor, (size_t)(prop.totalGlobalMem >> 20), cudnnGetVersion(), be->gpu_mem_limit >> 20,
           be->fp16 ? "fp16, " : "", nvrtc);
    return LECTOR_OK;
}

static void cu_shutdown(rt_backend *be)
{
    cu_ctx *c = be->ctx;
    if (!c) return;
    cudaSetDevice(c->device);
    cu_workers_ahead_stop(c);
    cu_algo_save(c->algo_ident, be->kernel_cache_dir, 1);
    while (c->idle) {
        cu_worker *w = c->idle;
        c->idle = w->next;
        cu_worker_free(w);
    }
    cu_memo_free(c);
    pthread_mutex_destroy(&c->lock);
    cu_free(c);
    be->ctx = NULL;
}

static void *cu_buffer_alloc(rt_backend *be, size_t size)
{
    cu_ctx *c = be->ctx;
    void *p;
    lector_error e;
    return cu_dev_alloc(c->device, size, &p, "a plan's activations", &e) ? NULL : p;
}

static void cu_buffer_free(rt_backend *be, void *buf) { cu_dev_free(buf); }

static lector_status cu_buffer_copy(rt_backend *be, void *dst, const void *src, size_t n, int to_device)
{
    cudaError_t e = cudaMemcpy(dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? LECTOR_OK : LECTOR_ERR_BACKEND;
}

/* ---- plans ------------------------------------------------------------------- */

/* ---- device entries ------------------------------------------------------------- */

/* Frees idle workers' workspaces and staging (the core trims plan arenas
 * first), then gives the memory pool's freed memory back. */
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
        cu_worker_free(w);
    }
    cu_mem_trim(c->device);
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
    static const char *const testctls[] = RT_MODULE_TESTCTLS;
    /* the core's operators are indexed by number (H->ops[op]): the same list, or no module */
    if (!host || host->api_version != RT_BACKEND_API_VERSION || host->n_ops != RT_OP_COUNT ||
        !rt_host_testctls_match(host, testctls, (int)(sizeof testctls / sizeof testctls[0])))
        return NULL;
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
