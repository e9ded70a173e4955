/*
 * model.h - a loaded model inside the runtime (internal): what model.c,
 * which implements lector_rt.h, shares with model_image.c, which implements
 * lector_rt_image.h.
 */
#ifndef LECTOR_RT_MODEL_H
#define LECTOR_RT_MODEL_H

#include <pthread.h>
#include <stdint.h>

#include "lector_rt_image.h"
#include "rt/arena.h"
#include "rt/backend.h"
#include "rt/graph.h"
#include "rt/mask_width.h"
#include "rt/plan.h"

#define RT_COMPILING_MAX 64

typedef struct cache_entry {
    rt_plan *plan; /* plan->refs counts the cache's reference + running calls */
    uint64_t last_used;
    size_t fixed_bytes; /* what the plan holds besides its arenas (plan_bytes) */
} cache_entry;

/* A plan evicted while it ran: its bytes count until its last run ends. */
typedef struct retired_plan {
    rt_plan *plan;
    size_t bytes;
} retired_plan;

struct lector_model {
    rt_graph *g;
    rt_backend *be;
    lector_value_info *inputs, *outputs;
    pthread_mutex_t lock;
    cache_entry *cache;
    int n_cache, cap_cache;
    uint64_t tick;
    size_t cap_bytes; /* plan_cache_bytes; 0 = count only */
    retired_plan *retired;
    int n_retired, cap_retired;
    rt_arena_pool arenas; /* activation memory, shared by every plan */
    int arenas_ready;
    int jit_size;                           /* lector_model_options.jit_size */
    uint64_t plans_compiled, plans_generic; /* under lock */
    /* shapes being compiled now (the callers' inputs, valid until their
     * compile ends): a second caller of the same shape waits for the
     * first's plan instead of compiling it again */
    const lector_tensor *compiling[RT_COMPILING_MAX];
    pthread_cond_t compiled; /* broadcast when a compile ends */
    _Atomic uint64_t runs;
    int n_user_inputs;  /* the inputs callers give: the graph's, less the width masks */
    rt_width_masks *wm; /* lector_model_options.width_masks; NULL: off */
};

/* lector_model_load_memory/_file; argmax = 1: with the outputs reduced as
 * lector_model_load_*_argmax says, 2: as lector_model_load_*_top2 says
 * (rt_graph_add_output_argmax). */
lector_status rt_model_load_memory(const void *data, size_t size, const char *name, const lector_model_options *opt,
                                   int argmax, lector_model **out, lector_error *err);
lector_status rt_model_load_file(const char *path, const lector_model_options *opt, int argmax, lector_model **out,
                                 lector_error *err);

/* One run through the plan for these input shapes: with the inputs' data, or
 * (rows non-NULL) the only input made by the backend from n_rows image rows. */
lector_status rt_model_run(lector_model *m, const lector_tensor *inputs, const lector_image_input *rows, size_t n_rows,
                           lector_tensor **outputs, size_t *n_outputs, lector_error *err);

/* Each float graph output of rank >= 2 replaced, in its place, by its argmax
 * and max over the last axis (top 1), or by the indices and values of its
 * two largest over the last axis (top 2) (output_argmax.c). */
lector_status rt_graph_add_output_argmax(rt_graph *g, int top, lector_error *err);

#endif
