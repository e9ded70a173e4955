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

#define RT_BACKEND_API_VERSION 1u

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
    lector_status (*plan_execute)(rt_backend *be, const rt_plan *plan, void *arena,
                                  const lector_tensor *inputs, lector_tensor *outputs,
                                  lector_error *err);
    void (*plan_free)(rt_backend *be, rt_plan *plan);
    /* Optional extras found by name (NULL if none). */
    void *(*get_proc_address)(const char *name);
} rt_backend_iface;

struct rt_backend {
    const rt_backend_iface *iface;
    int threads;
    void *ctx; /* the backend's own state */
};

/* Backends compiled into the core. */
const rt_backend_iface *rt_backend_ref(void);
const rt_backend_iface *rt_backend_onednn(void); /* NULL when not compiled in */

/* Creates the backend named `name` ("ref", "cpu", "onednn"; NULL = best CPU). */
lector_status rt_backend_create(const char *name, int threads, rt_backend **out, lector_error *err);
void rt_backend_free(rt_backend *be);

/* Executor shared by CPU backends: runs plan->kernels[] node by node over
 * host memory. */
lector_status rt_execute_host(rt_backend *be, const rt_plan *plan, void *arena,
                              const lector_tensor *inputs, lector_tensor *outputs, lector_error *err);

#endif
