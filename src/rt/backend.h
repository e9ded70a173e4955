/*
 * backend.h - the backend interface (ggml-backend style), internal.
 *
 * A backend is a table of function pointers with the API version first;
 * optional entries may be NULL. CPU backends share the executor in plan.c
 * and choose a kernel per node at compile time; a device backend (the CUDA
 * module, loaded with dlopen) implements plan_execute itself and its buffer
 * functions allocate device memory. A loader rejects a table whose
 * api_version differs from RT_BACKEND_API_VERSION with a message, never a
 * crash.
 */
#ifndef LECTOR_RT_BACKEND_H
#define LECTOR_RT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"
#include "rt/plan.h"

#define RT_BACKEND_API_VERSION 2u

enum {
    RT_FEATURE_HOST_MEMORY = 1u << 0, /* buffers are plain host memory */
    RT_FEATURE_FP16 = 1u << 1,        /* can run plans in half precision */
    RT_FEATURE_FUSED_ACT = 1u << 2,   /* honours rt_node.act (wants the fusion passes) */
};

typedef struct rt_backend rt_backend;

typedef struct rt_backend_iface {
    uint32_t api_version;
    const char *name;
    uint32_t features;
    /* Optional: create/destroy per-backend state for `threads` threads. */
    lector_status (*init)(rt_backend *be, lector_error *err);
    void (*shutdown)(rt_backend *be);
    /* Memory of the backend (device memory for device backends). */
    void *(*buffer_alloc)(rt_backend *be, size_t size);
    void (*buffer_free)(rt_backend *be, void *buf);
    /* Copies n bytes; to_device = 1 host->backend, 0 backend->host. */
    lector_status (*buffer_copy)(rt_backend *be, void *dst, const void *src, size_t n, int to_device);
    /* Prepares `plan` (graph already optimised and memory planned): chooses
     * kernels, creates primitives, stores its state in plan->be_plan. */
    lector_status (*plan_compile)(rt_backend *be, rt_plan *plan, lector_error *err);
    /* Runs the plan. `arena` has plan->arena_size bytes of backend memory. */
    lector_status (*plan_execute)(rt_backend *be, const rt_plan *plan, void *arena, const lector_tensor *inputs,
                                  lector_tensor *outputs, lector_error *err);
    void (*plan_free)(rt_backend *be, rt_plan *plan);
    /* Optional extras found by name (NULL if none). Among them "run_images"
     * (rt_run_images_fn): plan_execute with the plan's only input, [batch,
     * C, H, W], made on the device from n_rows lector_image_input rows
     * (lector_model_run_images, which has checked them against the plan's
     * input and their tables against their sources). */
    void *(*get_proc_address)(const char *name);
} rt_backend_iface;

/* Optional extra "plan_lifetimes": called by the memory plan before it places
 * anything. last[v] is the position in plan->order of the last node that reads
 * value v; the backend may raise it (never lower it) to keep v's bytes from
 * being given to a later value, for a kernel of its own that runs several
 * nodes at once and still reads v while it writes their results. */
typedef void (*rt_plan_lifetimes_fn)(rt_backend *be, const struct rt_plan *plan, int *last);

typedef lector_status (*rt_run_images_fn)(rt_backend *be, const struct rt_plan *plan, void *arena,
                                          const lector_image_input *rows, size_t n_rows, lector_tensor *outputs,
                                          lector_error *err);

struct rt_backend {
    const rt_backend_iface *iface;
    int threads;
    void *ctx; /* the backend's own state */
    /* device backends */
    int device;           /* GPU ordinal */
    size_t gpu_mem_limit; /* bytes the process may take on that GPU; 0 = no cap */
    int fp16;             /* run plans in half precision where the backend can */
};

/* ---- the CUDA module ----------------------------------------------------------
 * liblector-cuda.so is loaded with dlopen (cuda_loader.c), so it cannot rely on
 * symbols of the executable that loaded it: what it needs of the core comes
 * through this table, passed to its entry point. */

#define RT_CUDA_ENTRY "lector_cuda_backend"

typedef struct rt_host_api {
    uint32_t api_version; /* RT_BACKEND_API_VERSION */
    const rt_op_def *ops; /* rt_op_table: names and reference kernels (host fallback) */
    int n_ops;
    void *(*aligned_alloc)(size_t size); /* output tensors: freed by the core with lector__free */
    void (*free)(void *p);
    void (*log)(int level, const char *fmt, ...);
    int64_t (*attr_int)(const rt_node *n, const char *name, int64_t dflt);
    float (*attr_float)(const rt_node *n, const char *name, float dflt);
    int (*attr_ints)(const rt_node *n, const char *name, const int64_t **vals);
    const char *(*attr_string)(const rt_node *n, const char *name, const char *dflt);
    int64_t (*node_opset)(const rt_node *n);
} rt_host_api;

/* The module's entry point: returns its table, or NULL when the host's API
 * version is not the one it was built for. */
typedef const rt_backend_iface *(*rt_cuda_entry_fn)(const rt_host_api *host);

/* Loads the CUDA module once per process (cuBLAS and cuDNN found through
 * src/gpuenv and preloaded by absolute path). NULL with the reason in
 * `why` when it cannot be used. Thread-safe. */
const rt_backend_iface *rt_cuda_module(char *why, size_t why_len);

/* Backends compiled into the core. */
const rt_backend_iface *rt_backend_ref(void);
const rt_backend_iface *rt_backend_onednn(void); /* NULL when not compiled in */

/* Creates the backend named `name` ("ref", "cpu", "onednn", "cuda", "cuda:N";
 * NULL = best CPU). For "cuda", gpu_mem_limit and fp16 configure the device. */
lector_status rt_backend_create(const char *name, int threads, rt_backend **out, lector_error *err);
lector_status rt_backend_create_ex(const char *name, int threads, size_t gpu_mem_limit, int fp16, rt_backend **out,
                                   lector_error *err);
void rt_backend_free(rt_backend *be);

/* Bytes of the arena that the plan_execute (run_images, time_plan) running
 * on this thread was given: at least plan->arena_size when the run began.
 * A backend that raises plan->arena_size during a run (a plan variant
 * compiled then) checks what it got here. */
size_t rt_run_arena_size(void);

/* Executor shared by CPU backends: runs plan->kernels[] node by node over
 * host memory. */
lector_status rt_execute_host(rt_backend *be, const rt_plan *plan, void *arena, const lector_tensor *inputs,
                              lector_tensor *outputs, lector_error *err);

#endif
