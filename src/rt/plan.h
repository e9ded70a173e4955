/*
 * plan.h - execution plans (internal).
 *
 * A plan is what one (model, input shape) pair compiles to: the optimised
 * graph, the order of live nodes, a liveness-based memory plan (every
 * intermediate value gets an offset in one arena; values whose lifetimes do
 * not overlap share bytes), the kernel chosen for each node, and the
 * backend's own state. Plans are immutable once compiled; the arenas they
 * run in are borrowed per call from the model's pool (arena.h), shared by
 * the plans of every input shape.
 */
#ifndef LECTOR_RT_PLAN_H
#define LECTOR_RT_PLAN_H

#include <pthread.h>
#include <stddef.h>

#include "lector_rt_image.h"
#include "rt/arena.h"
#include "rt/graph.h"
#include "rt/ops.h"

#define RT_ARENA_ALIGN 256 /* every value on a 256-byte boundary: what cuBLASLt assumes of its operands */
#define RT_NO_OFFSET   ((size_t)-1)
/* Plans a model keeps (lector_model_options.plan_cache_size = 0). A plan
 * holds no activation memory (the model's arenas) but is not free: a
 * generic plan of the CPU recogniser is about 0.8 MB, and over 300 distinct
 * pages, where line widths seldom come back, 4,096 plans a model read no
 * faster than 64 for 2.5 times the peak RSS (docs/BENCHMARKS.md, "The CPU's
 * plan cache on distinct pages"). */
#define RT_PLAN_CACHE_DEFAULT 64

typedef struct rt_backend rt_backend;

/* A backend's own kernel for a node of a generic plan (rt_backend_iface's
 * plan_generic), run by the host executor in place of the reference one,
 * with its state. */
typedef struct rt_own_kernel {
    lector_status (*run)(const void *state, const rt_node *n, const lector_tensor *in, lector_tensor *out,
                         const rt_kernel_ctx *ctx);
    const void *state;
} rt_own_kernel;

typedef struct rt_plan {
    rt_graph *g; /* optimised graph, owned */
    int *order;  /* live nodes in execution order */
    int n_order;
    size_t *offset; /* per value: arena offset, RT_NO_OFFSET if none */
    size_t arena_size;
    rt_kernel_fn *kernels;     /* per node (indexed like g->nodes) */
    struct rt_own_kernel *own; /* per node, NULL: a backend's own kernels (plan_generic), where run is set */
    void *be_plan;             /* backend state */
    rt_backend *backend;
    int refs; /* owned by the model's plan cache (under its lock) */
    /* key: the input shapes it was compiled for, and the values of the
     * inputs bound by value (rt_input_bound_by_value) */
    int n_inputs;
    int64_t (*key)[LECTOR_MAX_DIMS + 1];
    void **key_values; /* per input: copy of the bytes, or NULL */
    /* where runs borrow their arena (the model's); NULL: one allocated per run */
    rt_arena_pool *arenas;
    /* 1: the backend compiled nothing; the host executor runs the reference
     * kernels (a shape outside lector_model_options.jit_size) */
    int generic;
    /* host executor: runs of elementwise nodes run in one pass
     * (host_chain.h); chain_at[s]: the chain that starts at position s of
     * order, -1 where none does */
    struct rt_host_chain *chains;
    int n_chains;
    int *chain_at;
} rt_plan;

/* Small integer inputs (<= 64 elements) and tiny float vectors (rank <= 1,
 * <= 8 elements) are bound by value: in models where a graph input carries a
 * shape (Reshape's shape, Slice's starts, Resize's scales), shapes depend on
 * its values, so the plan is keyed on them and they are folded as constants. */
int rt_input_bound_by_value(const lector_tensor *t);

/* Builds a plan from an already optimised graph (takes ownership of g on
 * success and on failure). */
lector_status rt_plan_build(rt_graph *g, rt_backend *be, const lector_tensor *inputs, rt_plan **out, lector_error *err);
/* The same without the backend's compile: the plan runs the reference
 * kernels on the host executor (host backends only). */
lector_status rt_plan_build_generic(rt_graph *g, rt_backend *be, const lector_tensor *inputs, rt_plan **out,
                                    lector_error *err);
void rt_plan_free(rt_plan *p);
/* Where value v of a plan running on the host lives: its constant, its
 * bytes in `arena`, or the caller's input; NULL for a value that has none
 * (one that lives inside a chain of the host executor). */
void *rt_plan_value_data(const rt_plan *p, void *arena, const lector_tensor *inputs, int v);
/* Does the plan match these input shapes? */
int rt_plan_matches(const rt_plan *p, const lector_tensor *inputs, int n_inputs);
/* Runs the plan with an arena borrowed from p->arenas. Thread-safe. */
lector_status rt_plan_run(rt_plan *p, const lector_tensor *inputs, lector_tensor *outputs, lector_error *err);
/* rt_plan_run with the only input made from image rows by the backend
 * (its run_images); LECTOR_ERR_UNSUPPORTED_OP if it has none. Thread-safe. */
lector_status rt_plan_run_images(rt_plan *p, const lector_image_input *rows, size_t n_rows, lector_tensor *outputs,
                                 lector_error *err);
/* lector_model_time() of one plan: the backend's time_plan (device time,
 * inputs uploaded once) or each execution timed on the host. `mode`
 * receives how the plan runs ("fp16 NHWC", or the backend's name). */
lector_status rt_plan_time(rt_plan *p, const lector_tensor *inputs, int runs, double *ms, char *mode, size_t mode_len,
                           lector_error *err);

#endif
