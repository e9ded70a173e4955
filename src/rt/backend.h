/*
 * backend.h - the backend interface (ggml-backend style), internal.
 *
 * A backend is a table of function pointers with the API version first;
 * optional entries, capabilities and device entries may be NULL. CPU
 * backends share the executor in plan.c and choose a kernel per node at
 * compile time; a device backend (the CUDA module, loaded with dlopen)
 * implements plan_execute itself and its buffer functions allocate device
 * memory. Backends are found in a registry filled at build time
 * (backend_reg.c); the module loader (module.c) rejects a table whose
 * api_version differs from RT_BACKEND_API_VERSION with a message, never a
 * crash.
 */
#ifndef LECTOR_RT_BACKEND_H
#define LECTOR_RT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"
#include "lector_rt_image.h"
#include "rt/plan.h"
#include "util/testctl.h"

#define RT_BACKEND_API_VERSION 10u

enum {
    RT_FEATURE_HOST_MEMORY = 1u << 0, /* buffers are plain host memory */
    RT_FEATURE_FP16 = 1u << 1,        /* can run plans in half precision */
    RT_FEATURE_FUSED_ACT = 1u << 2,   /* honours rt_node.act (wants the fusion passes) */
};

typedef struct rt_backend rt_backend;

/* Optional capability: called by the memory plan before it places anything.
 * last[v] is the position in plan->order of the last node that reads value
 * v; the backend may raise it (never lower it) to keep v's bytes from being
 * given to a later value, for a kernel of its own that runs several nodes at
 * once and still reads v while it writes their results. */
typedef void (*rt_plan_lifetimes_fn)(rt_backend *be, const struct rt_plan *plan, int *last);

/* Optional capability: plan_execute with the plan's only input, [batch, C,
 * H, W], made on the device from n_rows lector_image_input rows
 * (lector_model_run_images, which has checked them against the plan's input
 * and their tables against their sources). */
typedef lector_status (*rt_run_images_fn)(rt_backend *be, const struct rt_plan *plan, void *arena,
                                          const lector_image_input *rows, size_t n_rows, lector_tensor *outputs,
                                          lector_error *err);

/* Optional capability: lector_model_time() of one plan on the device, the
 * inputs uploaded once; ms[i] receives run i. */
typedef lector_status (*rt_time_plan_fn)(rt_backend *be, const struct rt_plan *plan, void *arena,
                                         const lector_tensor *inputs, int runs, double *ms, lector_error *err);

/* The device of a device backend (NULL entries for host backends). */
typedef struct rt_device_iface {
    /* The device's name ("NVIDIA H200"). */
    const char *(*name)(rt_backend *be);
    /* Memory this process holds through Lector on the backend's device, and its cap. */
    void (*memory_usage)(rt_backend *be, size_t *used, size_t *limit);
    /* Bytes this process may still allocate there (free memory within the cap). */
    size_t (*memory_available)(rt_backend *be);
    /* Releases idle device memory (workspaces, staging); plans stay compiled. */
    void (*trim)(rt_backend *be);
} rt_device_iface;

typedef struct rt_backend_iface {
    uint32_t api_version;
    const char *name;
    uint32_t features;
    /* Optional: create/destroy per-backend state for `threads` threads. */
    lector_status (*init)(rt_backend *be, lector_error *err);
    void (*shutdown)(rt_backend *be);
    /* Memory of the backend (device memory for device backends); NULL for
     * both: host memory (rt_buffer_alloc / rt_buffer_free). */
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
    /* Optional capabilities (NULL: none). */
    rt_plan_lifetimes_fn plan_lifetimes;
    rt_run_images_fn run_images;
    rt_time_plan_fn time_plan;
    /* How a compiled plan runs ("fp16 NHWC"); NULL: the backend's name. */
    const char *(*plan_mode)(const struct rt_plan *plan);
    rt_device_iface device;
    /* Kernels the backend has built so far (JIT primitives, device kernels),
     * for lector_model_stats; NULL: it builds none. */
    uint64_t (*kernels_compiled)(rt_backend *be);
    /* Optional, host backends: a generic plan (a shape outside
     * lector_model_options.jit_size, run by the host executor on the
     * reference kernels, memory already planned) may have some nodes run by
     * kernels of the backend's own that compile nothing for the shape: it
     * allocates plan->own (freed with the plan) and sets plan->own[i]; the
     * kernels' states belong to plan->be_plan (freed by plan_free). */
    lector_status (*plan_generic)(rt_backend *be, rt_plan *plan, lector_error *err);
} rt_backend_iface;

struct rt_backend {
    const rt_backend_iface *iface;
    int threads;
    void *ctx; /* the backend's own state */
    /* device backends */
    int device;             /* device ordinal (N of "cuda:N") */
    size_t gpu_mem_limit;   /* bytes the process may take on that device; 0 = no cap */
    int fp16;               /* run plans in half precision where the backend can */
    char *kernel_cache_dir; /* where run-time compiled kernels are kept between processes; NULL: nowhere */
    int gpu_workers;        /* runs expected in flight at once: workers made ahead (lector_model_options) */
};

/* ---- module backends ----------------------------------------------------------
 * A module backend (liblector-cuda.so) is loaded with dlopen (module.c), so it
 * cannot rely on symbols of the executable that loaded it: what it needs of
 * the core comes through this table, passed to its init entry point. */

/* Entry points a module exports (C visibility default, nothing else). */
#define RT_MODULE_INIT  "lector_backend_init"
#define RT_MODULE_SCORE "lector_backend_score"

typedef struct rt_host_api {
    uint32_t api_version; /* RT_BACKEND_API_VERSION */
    const rt_op_def *ops; /* rt_op_table: names and reference kernels (host fallback) */
    int n_ops;
    /* the core's fault-injectable allocator (util.h): every host allocation
     * of a module goes through it; output tensors are freed by the core */
    void *(*malloc)(size_t size);
    void *(*calloc)(size_t n, size_t size);
    void *(*realloc)(void *p, size_t size);
    void *(*aligned_alloc)(size_t size);
    void (*free)(void *p);
    void (*log)(int level, const char *fmt, ...);
    /* the test controls (util/testctl.h; ids are lector__tc values), read once by the core;
     * their list as the core was built with it (rt_host_testctls_match) */
    int n_testctls;
    const char *(*testctl_name)(int id);
    int (*testctl_flag)(int id, int dflt);
    long (*testctl_long)(int id, long dflt);
    const char *(*testctl_str)(int id);
    int64_t (*attr_int)(const rt_node *n, const char *name, int64_t dflt);
    float (*attr_float)(const rt_node *n, const char *name, float dflt);
    int (*attr_ints)(const rt_node *n, const char *name, const int64_t **vals);
    const char *(*attr_string)(const rt_node *n, const char *name, const char *dflt);
    int64_t (*node_opset)(const rt_node *n);
    /* Slice's per-axis first index, step and element count (rt_slice_params,
     * ONNX's clamping) from the node's operands in[0..n_in-1] (NULL where
     * absent); 1 when they are not constant integers or not valid. */
    int (*slice_params)(const rt_node *n, const rt_value *const *in, int64_t *start, int64_t *step, int64_t *count);
    /* The path of the optional library lib<stem> (the module descriptor's
     * `wants`) that the core found where installers put it, left for the
     * module to load when it needs it (NVRTC: only for a kernel not shipped
     * compiled); NULL: none found, or a bundle's set was preloaded whole. */
    const char *(*wanted_lib)(const char *stem);
} rt_host_api;

/* 1 when the host's test controls are `names` (n of them), in that order: a
 * module asks for a control by its place in util/testctl.h's list, so a
 * module built with another list would read the wrong controls. A module's
 * init passes its own list (RT_MODULE_TESTCTLS below). */
static inline int rt_host_testctls_match(const rt_host_api *h, const char *const *names, int n)
{
    if (h->n_testctls != n) return 0;
    for (int i = 0; i < n; i++) {
        const char *a = h->testctl_name(i), *b = names[i];
        while (*a && *a == *b) a++, b++;
        if (*a != *b) return 0;
    }
    return 1;
}

/* The test controls' names as this file was compiled with them. */
#define RT_TESTCTL_NAME(id, var, doc) var,
#define RT_MODULE_TESTCTLS                    \
    {                                         \
        LECTOR__TESTCTL_LIST(RT_TESTCTL_NAME) \
    }

/* The init entry point: the module's table, or NULL when the host's API
 * version or its test controls are not those it was built for. */
typedef const rt_backend_iface *(*rt_module_init_fn)(const rt_host_api *host);
/* The score entry point, called after init: 0 when the module cannot run on
 * this machine (the reason in `why`), else how well it fits (higher is
 * better). */
typedef int (*rt_module_score_fn)(char *why, size_t why_len);

/* ---- the registry (backend_reg.c) ---------------------------------------------- */

/* Backends compiled into the core. */
const rt_backend_iface *rt_backend_ref(void);
#ifdef LECTOR_USE_ONEDNN
const rt_backend_iface *rt_backend_onednn(void);
#endif

/* The table of the backend a device string names (lector_device_parse;
 * "cpu" and NULL: the host backend of the highest score), loading a module
 * backend on first use; *index receives the device ordinal (may be NULL).
 * LECTOR_ERR_UNAVAILABLE or LECTOR_ERR_INVALID_ARGUMENT with the reason.
 * Thread-safe. */
lector_status rt_backend_find(const char *name, const rt_backend_iface **out, int *index, lector_error *err);

/* The name of the i-th backend of the registry ("onednn", "ref", "cuda"),
 * NULL past the last. */
const char *rt_backend_registered(size_t i);

/* Creates the backend named by opt->backend, a device string
 * (lector_device_parse: "ref", "cpu", "onednn", "cuda", "cuda:N"; NULL =
 * best CPU), configured by the rest of the options (threads; for a device
 * backend gpu_mem_limit, fp16, kernel_cache_dir, gpu_workers). opt NULL:
 * the defaults. */
lector_status rt_backend_create(const lector_model_options *opt, rt_backend **out, lector_error *err);
void rt_backend_free(rt_backend *be);

/* Bytes of the arena that the plan_execute (run_images, time_plan) running
 * on this thread was given: at least plan->arena_size when the run began.
 * A backend that raises plan->arena_size during a run (a plan variant
 * compiled then) checks what it got here. */
size_t rt_run_arena_size(void);

/* Executor shared by CPU backends: runs plan->kernels[] node by node over
 * host memory. */
/* Memory from the backend's buffer_alloc / buffer_free, or, where it has
 * none, host memory (64-byte aligned, the fault-injectable allocator). */
void *rt_buffer_alloc(rt_backend *be, size_t size);
void rt_buffer_free(rt_backend *be, void *p);

lector_status rt_execute_host(rt_backend *be, const rt_plan *plan, void *arena, const lector_tensor *inputs,
                              lector_tensor *outputs, lector_error *err);

/* The end of a host backend's plan_execute: outputs[i] becomes a new tensor
 * (the caller's, lector_tensors_free) holding graph output i, copied from
 * the host memory src(ctx, i). On failure none is left allocated. */
lector_status rt_outputs_from_host(const rt_graph *g, const void *(*src)(void *ctx, int i), void *ctx,
                                   lector_tensor *outputs, lector_error *err);

#endif
