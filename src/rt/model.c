/*
 * model.c - the public runtime API (lector_rt.h): a loaded model is the
 * immutable base graph, prepared once for its backend (constants folded into
 * what every shape shares), plus a bounded LRU cache of execution plans, one
 * per input shape, and the activation arenas every plan runs in. Plans are
 * reference counted so that eviction never frees a plan another thread is
 * running. The cache is bounded by a count and, with plan_cache_bytes, by
 * bytes (the plans' own state plus the shared arenas), so that memory does
 * not grow with the number of distinct input shapes. The calls of
 * lector_rt_image.h are in model_image.c.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/backend.h"
#include "rt/loader.h"
#include "rt/model.h"
#include "rt/passes.h"
#include "rt/plan.h"
#include "util/util.h"

static lector_status model_init(lector_model *m, const lector_model_options *opt, lector_error *err)
{
    const rt_graph *g = m->g;
    m->inputs = lector__calloc((size_t)g->n_inputs + 1, sizeof *m->inputs);
    m->outputs = lector__calloc((size_t)g->n_outputs + 1, sizeof *m->outputs);
    if (!m->inputs || !m->outputs) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < g->n_inputs; i++) {
        const rt_value *v = &g->values[g->inputs[i]];
        m->inputs[i].name = v->name;
        m->inputs[i].dtype = v->dtype;
        m->inputs[i].ndim = v->ndim < 0 ? 0 : v->ndim;
        memcpy(m->inputs[i].dims, v->dims, sizeof v->dims);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const rt_value *v = &g->values[g->outputs[i]];
        m->outputs[i].name = v->name;
        m->outputs[i].dtype = v->dtype ? v->dtype : LECTOR_DTYPE_FLOAT32;
        m->outputs[i].ndim = v->ndim < 0 ? 0 : v->ndim;
        for (int d = 0; d < m->outputs[i].ndim; d++) m->outputs[i].dims[d] = -1;
    }
    m->n_user_inputs = g->n_inputs;
    if (opt && opt->width_masks) {
        lector_status st = rt_width_masks_build(m->g, &m->wm, err);
        if (st) return st;
    }
    m->jit_size = opt && opt->jit_size > 0 ? opt->jit_size : 0;
    m->cap_cache = opt && opt->plan_cache_size > 0 ? opt->plan_cache_size : RT_PLAN_CACHE_DEFAULT;
    m->cap_bytes = opt ? opt->plan_cache_bytes : 0;
    m->cache = lector__calloc((size_t)m->cap_cache, sizeof *m->cache);
    if (!m->cache) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->compiled, NULL);
    lector_status st = rt_backend_create(opt, &m->be, err);
    if (st) return st;
    rt_arena_pool_init(&m->arenas, m->be);
    m->arenas_ready = 1;
    /* what does not depend on the input shape is done once, on the base graph */
    if (m->be->iface->features & RT_FEATURE_FUSED_ACT) st = rt_prepare_constants(m->g, err);
    return st;
}

lector_status rt_model_load_memory(const void *data, size_t size, const char *name, const lector_model_options *opt,
                                   int argmax, lector_model **out, lector_error *err)
{
    if (!out || (!data && size))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_load: NULL argument");
    *out = NULL;
    lector_model *m = lector__calloc(1, sizeof *m);
    if (!m) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    lector_status st = rt_load_onnx(data, size, name, &m->g, err);
    if (!st && argmax) st = rt_graph_add_output_argmax(m->g, argmax, err);
    if (!st) st = model_init(m, opt, err);
    if (st) {
        if (m->arenas_ready) rt_arena_pool_destroy(&m->arenas);
        rt_backend_free(m->be);
        if (m->cache) {
            pthread_mutex_destroy(&m->lock);
            pthread_cond_destroy(&m->compiled);
        }
        lector__free(m->cache);
        lector__free(m->inputs);
        lector__free(m->outputs);
        rt_graph_free(m->g);
        lector__free(m);
        return st;
    }
    *out = m;
    return LECTOR_OK;
}

lector_status lector_model_load_memory(const void *data, size_t size, const char *name, const lector_model_options *opt,
                                       lector_model **out, lector_error *err)
{
    return rt_model_load_memory(data, size, name, opt, 0, out, err);
}

lector_status rt_model_load_file(const char *path, const lector_model_options *opt, int argmax, lector_model **out,
                                 lector_error *err)
{
    if (!path || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_load_file: NULL argument");
    *out = NULL;
    uint8_t *buf;
    size_t len;
    /* 2 GiB is protobuf's own limit for one message */
    lector_status st = lector__read_file(path, (size_t)2 << 30, &buf, &len, err);
    if (st) return st;
    st = rt_model_load_memory(buf, len, path, opt, argmax, out, err);
    lector__free(buf);
    return st;
}

lector_status lector_model_load_file(const char *path, const lector_model_options *opt, lector_model **out,
                                     lector_error *err)
{
    return rt_model_load_file(path, opt, 0, out, err);
}

void lector_model_free(lector_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_cache; i++) rt_plan_free(m->cache[i].plan);
    rt_arena_pool_destroy(&m->arenas);
    pthread_mutex_destroy(&m->lock);
    pthread_cond_destroy(&m->compiled);
    lector__free(m->cache);
    lector__free(m->retired);
    lector__free(m->inputs);
    lector__free(m->outputs);
    rt_backend_free(m->be);
    rt_width_masks_free(m->wm);
    rt_graph_free(m->g);
    lector__free(m);
}

size_t lector_model_num_inputs(const lector_model *m) { return m ? (size_t)m->n_user_inputs : 0; }
size_t lector_model_num_outputs(const lector_model *m) { return m ? (size_t)m->g->n_outputs : 0; }

const lector_value_info *lector_model_input(const lector_model *m, size_t i)
{
    return m && i < (size_t)m->n_user_inputs ? &m->inputs[i] : NULL;
}

const lector_value_info *lector_model_output(const lector_model *m, size_t i)
{
    return m && i < (size_t)m->g->n_outputs ? &m->outputs[i] : NULL;
}

const char *lector_model_backend(const lector_model *m) { return m ? m->be->iface->name : ""; }

void lector_model_trim(lector_model *m)
{
    if (!m) return;
    rt_backend *be = m->be;
    rt_arena_pool_trim(&m->arenas);
    if (be->iface->device.trim) be->iface->device.trim(be);
}

void lector_model_gpu_memory(const lector_model *m, size_t *used, size_t *limit)
{
    *used = *limit = 0;
    if (m && m->be->iface->device.memory_usage) m->be->iface->device.memory_usage(m->be, used, limit);
}

size_t lector_model_gpu_available(const lector_model *m)
{
    return m && m->be->iface->device.memory_available ? m->be->iface->device.memory_available(m->be) : 0;
}

void lector_model_get_stats(const lector_model *cm, lector_model_stats *out)
{
    memset(out, 0, sizeof *out);
    lector_model *m = (lector_model *)cm; /* counters are internal, locked state */
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    out->plans_compiled = m->plans_compiled;
    out->plans_generic = m->plans_generic;
    out->plans_cached = m->n_cache;
    pthread_mutex_unlock(&m->lock);
    out->runs = atomic_load(&m->runs);
    rt_arena_pool_stats(&m->arenas, &out->arena_bytes, &out->arenas_allocated);
    if (m->be->iface->kernels_compiled) out->kernels_compiled = m->be->iface->kernels_compiled(m->be);
}

/* ---- plan cache ------------------------------------------------------------- */

/* Finds a plan for these shapes and takes a reference; NULL if absent. */
static rt_plan *cache_get(lector_model *m, const lector_tensor *inputs, int *slot)
{
    for (int i = 0; i < m->n_cache; i++) {
        if (rt_plan_matches(m->cache[i].plan, inputs, m->g->n_inputs)) {
            m->cache[i].plan->refs++;
            m->cache[i].last_used = ++m->tick;
            *slot = i;
            return m->cache[i].plan;
        }
    }
    return NULL;
}

/* Bytes a plan holds of its own (m->lock held): its backend state,
 * estimated when it was compiled. The weights and the activation arenas are
 * the model's, shared by every plan (counted once, in total_bytes). */
static size_t plan_bytes(rt_plan *p, size_t fixed, int in_cache)
{
    (void)p;
    (void)in_cache;
    return fixed;
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
/* glibc sets up its malloc on the first call into it, and mallinfo2 marks
 * it set up before it is (malloc.c, ptmalloc_init): a second thread's
 * mallinfo2 meanwhile reads the arena's empty top chunk and faults. A
 * normal process has called malloc long before its threads start, but
 * under AddressSanitizer (which replaces malloc) mallinfo2 can be that
 * first call, from two compiles at once: the intermittent SIGSEGV of the
 * CLI's batch tests under ASan (2026-12-05). One call, once, first. */
static pthread_once_t heap_probe_once = PTHREAD_ONCE_INIT;
static void heap_probe_init(void) { (void)mallinfo2(); }
#endif

/* Host memory in use by malloc now, all arenas (0 where unknown). */
static size_t heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
    pthread_once(&heap_probe_once, heap_probe_init);
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0;
#endif
}

/* What a new plan holds of its own: its step list, the backend's
 * primitives and what a shape's kernels need besides the model's shared
 * weights. On a host backend that is the heap's growth while it compiled
 * (`grew`), at most the constants of its graph (other threads allocate
 * meanwhile) and at least 64 KiB; on a device, 64 KiB. */
static size_t plan_fixed_bytes(const rt_plan *p, size_t grew)
{
    size_t n = 0;
    for (int v = 0; v < p->g->n_values; v++) {
        const rt_value *x = &p->g->values[v];
        if (!x->data || x->ndim < 0) continue;
        size_t k = lector_dtype_size(x->dtype);
        for (int d = 0; d < x->ndim; d++) k *= x->dims[d] > 0 ? (size_t)x->dims[d] : 0;
        n += k;
    }
    size_t floor = (size_t)64 << 10;
    return grew < floor ? floor : grew > n && n > floor ? n : grew;
}

/* Drops a reference taken by cache_get/cache_put; the plan is freed when
 * it was evicted meanwhile and this was the last reference. */
static void cache_release(lector_model *m, rt_plan *p)
{
    pthread_mutex_lock(&m->lock);
    int last = --p->refs == 0;
    if (last)
        for (int i = 0; i < m->n_retired; i++)
            if (m->retired[i].plan == p) {
                m->retired[i] = m->retired[--m->n_retired];
                break;
            }
    pthread_mutex_unlock(&m->lock);
    if (last) rt_plan_free(p); /* evicted while it ran */
}

/* Takes entry i out of the cache (m->lock held); returns the plan when it
 * is to be freed now, NULL when a run still holds it (it is freed by the
 * last cache_release, and counted as retired until then). */
static rt_plan *cache_evict(lector_model *m, int i)
{
    rt_plan *p = m->cache[i].plan;
    size_t fixed = m->cache[i].fixed_bytes;
    m->cache[i] = m->cache[--m->n_cache];
    if (--p->refs == 0) return p;
    if (m->n_retired == m->cap_retired) {
        int cap = m->cap_retired ? 2 * m->cap_retired : 8;
        retired_plan *r = lector__realloc(m->retired, sizeof *r * (size_t)cap);
        if (!r) return NULL; /* uncounted until freed: only the figure suffers */
        m->retired = r;
        m->cap_retired = cap;
    }
    m->retired[m->n_retired++] = (retired_plan){p, plan_bytes(p, fixed, 0)};
    return NULL;
}

/* Bytes of the cached plans (m->lock held). */
static size_t cached_bytes(lector_model *m)
{
    size_t n = 0;
    for (int i = 0; i < m->n_cache; i++) n += plan_bytes(m->cache[i].plan, m->cache[i].fixed_bytes, 1);
    return n;
}

/* ... and of the plans evicted while they ran, until their runs end, and
 * the activation arenas the model holds for all of them. */
static size_t total_bytes(lector_model *m)
{
    size_t n = cached_bytes(m), arenas = 0;
    uint64_t allocated;
    for (int i = 0; i < m->n_retired; i++) n += m->retired[i].bytes;
    rt_arena_pool_stats(&m->arenas, &arenas, &allocated);
    return n + arenas;
}

size_t lector_model_cache_bytes(const lector_model *cm)
{
    lector_model *m = (lector_model *)cm;
    if (!m) return 0;
    pthread_mutex_lock(&m->lock);
    size_t n = total_bytes(m);
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* lector_model_options.jit_size: does this shape get compiled kernels? */
static int shape_gets_jit(const lector_model *m, const lector_tensor *inputs)
{
    const rt_backend_iface *be = m->be->iface;
    if (!m->jit_size || !be->plan_compile || !(be->features & RT_FEATURE_HOST_MEMORY)) return 1;
    for (int i = 0; i < m->g->n_inputs; i++)
        if (inputs[i].ndim == 4) {
            int64_t a = inputs[i].dims[2], b = inputs[i].dims[3];
            return (a > b ? a : b) == m->jit_size;
        }
    return 1;
}

static lector_status compile_plan(lector_model *m, const lector_tensor *inputs, rt_plan **out, lector_error *err)
{
    rt_graph *g = rt_graph_clone(m->g);
    if (!g) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", m->g->name);
    int fuse = (m->be->iface->features & RT_FEATURE_FUSED_ACT) != 0;
    double t0 = lector__now_ms();
    lector_status st = rt_optimize(g, inputs, fuse, err);
    if (st) {
        rt_graph_free(g);
        return st;
    }
    double t1 = lector__now_ms();
    st = shape_gets_jit(m, inputs) ? rt_plan_build(g, m->be, inputs, out, err)
                                   : rt_plan_build_generic(g, m->be, inputs, out, err);
    if (!st) {
        double t2 = lector__now_ms();
        char shape[96] = "";
        for (int d = 0, k = 0; m->g->n_inputs > 0 && d < inputs[0].ndim && k < (int)sizeof shape - 24; d++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", d ? "x" : "", (long long)inputs[0].dims[d]);
        lector__log(LECTOR_LOG_DEBUG, "%s: plan for %s compiled in %.1f ms (graph passes %.1f ms, backend %.1f ms)%s",
                    m->g->name, shape, t2 - t0, t1 - t0, t2 - t1, (*out)->generic ? ", generic" : "");
    }
    return st;
}

/* Do two calls' inputs have the same shapes (the plan cache's key)? Inputs
 * bound by value (shape operands) never match: their values would have to
 * be compared too, and such inputs are rare. */
static int same_shapes(const lector_tensor *a, const lector_tensor *b, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i].ndim != b[i].ndim || rt_input_bound_by_value(&a[i]) || rt_input_bound_by_value(&b[i])) return 0;
        for (int d = 0; d < a[i].ndim; d++)
            if (a[i].dims[d] != b[i].dims[d]) return 0;
    }
    return 1;
}

/* m->lock held: is another thread compiling these shapes now? */
static int compiling_now(const lector_model *m, const lector_tensor *inputs)
{
    for (int i = 0; i < RT_COMPILING_MAX; i++)
        if (m->compiling[i] && same_shapes(m->compiling[i], inputs, m->g->n_inputs)) return 1;
    return 0;
}

/* m->lock held: this thread's compile ends (slot -1: it was not listed). */
static void compile_ended(lector_model *m, int slot)
{
    if (slot < 0) return;
    m->compiling[slot] = NULL;
    pthread_cond_broadcast(&m->compiled);
}

/* Returns a referenced plan for these input shapes, compiling it if needed. */
static lector_status acquire_plan(lector_model *m, const lector_tensor *inputs, rt_plan **out, lector_error *err)
{
    int slot, listed = -1;
    pthread_mutex_lock(&m->lock);
    rt_plan *p = cache_get(m, inputs, &slot);
    /* the same shape compiling in another thread: its plan, when it is done */
    while (!p && compiling_now(m, inputs)) {
        pthread_cond_wait(&m->compiled, &m->lock);
        p = cache_get(m, inputs, &slot);
    }
    if (!p)
        for (int i = 0; i < RT_COMPILING_MAX && listed < 0; i++)
            if (!m->compiling[i]) m->compiling[listed = i] = inputs;
    pthread_mutex_unlock(&m->lock);
    if (p) {
        *out = p;
        return LECTOR_OK;
    }
    /* compile outside the lock: other shapes keep running meanwhile */
    rt_plan *fresh;
    int host = (m->be->iface->features & RT_FEATURE_HOST_MEMORY) != 0;
    size_t heap0 = host ? heap_in_use() : 0;
    lector_status st = compile_plan(m, inputs, &fresh, err);
    if (st) {
        pthread_mutex_lock(&m->lock);
        compile_ended(m, listed);
        pthread_mutex_unlock(&m->lock);
        return st;
    }
    size_t heap1 = host ? heap_in_use() : 0;
    fresh->arenas = &m->arenas;
    pthread_mutex_lock(&m->lock);
    compile_ended(m, listed);
    m->plans_compiled++;
    m->plans_generic += fresh->generic;
    p = cache_get(m, inputs, &slot);
    if (p) { /* another thread compiled the same shape first */
        pthread_mutex_unlock(&m->lock);
        rt_plan_free(fresh);
        *out = p;
        return LECTOR_OK;
    }
    /* least recently used plans out: one for the count; for the bytes, as
     * many idle ones as it takes (evicting a running plan frees nothing
     * until its run ends). Those no run holds are freed after the lock. */
    rt_plan **freed = lector__malloc(sizeof *freed * (size_t)(m->n_cache + 1));
    int n_freed = 0;
    size_t fixed = plan_fixed_bytes(fresh, heap1 > heap0 ? heap1 - heap0 : 0), want = fixed;
    for (;;) {
        int lru = -1, for_count = m->n_cache == m->cap_cache;
        if (!for_count && !(m->cap_bytes && total_bytes(m) + want > m->cap_bytes)) break;
        for (int i = 0; i < m->n_cache; i++)
            if ((for_count || m->cache[i].plan->refs == 1) &&
                (lru < 0 || m->cache[i].last_used < m->cache[lru].last_used))
                lru = i;
        if (lru < 0) break; /* every cached plan is running: over the bytes until they end */
        rt_plan *old = cache_evict(m, lru);
        if (old && freed)
            freed[n_freed++] = old;
        else if (old)
            rt_plan_free(old); /* no memory for the list: freed under the lock */
    }
    m->cache[m->n_cache].plan = fresh;
    fresh->refs = 2; /* cache + caller */
    m->cache[m->n_cache].last_used = ++m->tick;
    m->cache[m->n_cache].fixed_bytes = fixed;
    m->n_cache++;
    pthread_mutex_unlock(&m->lock);
    /* plans still running elsewhere are freed by their last cache_release */
    for (int i = 0; i < n_freed; i++) rt_plan_free(freed[i]);
    lector__free(freed);
    *out = fresh;
    return LECTOR_OK;
}

/* The checks every call with inputs makes: their count, ranks, and data
 * (need_data = 0: only shape operands, whose values key the plan, need it). */
static lector_status check_inputs(const lector_model *m, const lector_tensor *inputs, size_t n_inputs, int need_data,
                                  lector_error *err)
{
    if (n_inputs != (size_t)m->n_user_inputs)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: the model takes %d inputs, got %zu", m->g->name,
                             m->n_user_inputs, n_inputs);
    for (size_t i = 0; i < n_inputs; i++) {
        if (inputs[i].ndim < 0 || inputs[i].ndim > LECTOR_MAX_DIMS) /* first: the size below reads the dims */
            return lector__error(err, LECTOR_ERR_SHAPE, "%s: input '%s' has invalid rank %d", m->g->name,
                                 m->inputs[i].name, inputs[i].ndim);
        lector_tensor with_data = inputs[i];
        with_data.data = &with_data; /* would it be bound by value if it had data? */
        if (!inputs[i].data && lector_tensor_numel(&inputs[i]) > 0 &&
            (need_data || rt_input_bound_by_value(&with_data)))
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: input '%s' has no data", m->g->name,
                                 m->inputs[i].name);
    }
    return LECTOR_OK;
}

/* One run through the plan for these inputs, all of the graph's. */
static lector_status run_full(lector_model *m, const lector_tensor *inputs, const lector_image_input *rows,
                              size_t n_rows, lector_tensor **outputs, size_t *n_outputs, lector_error *err)
{
    rt_plan *p;
    lector_status st = acquire_plan(m, inputs, &p, err);
    if (st) return st;
    atomic_fetch_add(&m->runs, 1);
    lector_tensor *outs = lector__calloc((size_t)m->g->n_outputs, sizeof *outs);
    if (!outs) {
        cache_release(m, p);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    st = rows ? rt_plan_run_images(p, rows, n_rows, outs, err) : rt_plan_run(p, inputs, outs, err);
    cache_release(m, p);
    if (st) {
        lector__free(outs);
        return st;
    }
    *outputs = outs;
    *n_outputs = (size_t)m->g->n_outputs;
    return LECTOR_OK;
}

/* *full = the inputs of a model with width masks: the caller's, then the
 * masks for the items' widths (valid NULL: each the whole width); free
 * with with_masks_free. */
static lector_status with_masks(lector_model *m, const lector_tensor *inputs, const int64_t *valid, int64_t *out_valid,
                                lector_tensor **full, lector_error *err)
{
    *full = lector__calloc((size_t)m->g->n_inputs, sizeof **full);
    if (!*full) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    lector_status st = rt_width_masks_inputs(m->wm, m->g, inputs, valid, *full, out_valid, err);
    if (st) {
        lector__free(*full);
        *full = NULL;
    }
    return st;
}

static void with_masks_free(lector_model *m, lector_tensor *full)
{
    if (!full) return;
    rt_width_masks_inputs_free(m->wm, full);
    lector__free(full);
}

/* rt_model_run of a model with width masks: its inputs and the masks for
 * the items' widths (valid NULL: each the whole width). */
static lector_status run_masked(lector_model *m, const lector_tensor *inputs, const int64_t *valid,
                                lector_tensor **outputs, size_t *n_outputs, int64_t *out_valid, lector_error *err)
{
    lector_tensor *full;
    lector_status st = with_masks(m, inputs, valid, out_valid, &full, err);
    if (st) return st;
    st = run_full(m, full, NULL, 0, outputs, n_outputs, err);
    with_masks_free(m, full);
    return st;
}

lector_status rt_model_run(lector_model *m, const lector_tensor *inputs, const lector_image_input *rows, size_t n_rows,
                           lector_tensor **outputs, size_t *n_outputs, lector_error *err)
{
    if (!m->wm) return run_full(m, inputs, rows, n_rows, outputs, n_outputs, err);
    if (rows)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: a model with width masks runs tensors only",
                             m->g->name);
    return run_masked(m, inputs, NULL, outputs, n_outputs, NULL, err);
}

lector_status lector_model_run(const lector_model *cm, const lector_tensor *inputs, size_t n_inputs,
                               lector_tensor **outputs, size_t *n_outputs, lector_error *err)
{
    lector_model *m = (lector_model *)cm; /* the cache is internal, locked state */
    if (!m || !outputs || !n_outputs || (n_inputs && !inputs))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_run: NULL argument");
    *outputs = NULL;
    *n_outputs = 0;
    lector_status st = check_inputs(m, inputs, n_inputs, 1, err);
    return st ? st : rt_model_run(m, inputs, NULL, 0, outputs, n_outputs, err);
}

lector_status lector_model_run_masked(const lector_model *cm, const lector_tensor *inputs, size_t n_inputs,
                                      const int64_t *valid, lector_tensor **outputs, size_t *n_outputs,
                                      int64_t *out_valid, lector_error *err)
{
    lector_model *m = (lector_model *)cm;
    if (!m || !outputs || !n_outputs || !valid || (n_inputs && !inputs))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_run_masked: NULL argument");
    *outputs = NULL;
    *n_outputs = 0;
    if (!m->wm) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: loaded without width_masks", m->g->name);
    lector_status st = check_inputs(m, inputs, n_inputs, 1, err);
    return st ? st : run_masked(m, inputs, valid, outputs, n_outputs, out_valid, err);
}

lector_status lector_model_arena_bytes(const lector_model *cm, const lector_tensor *inputs, size_t n_inputs,
                                       size_t *bytes, lector_error *err)
{
    lector_model *m = (lector_model *)cm;
    if (!m || !bytes || (n_inputs && !inputs))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_arena_bytes: NULL argument");
    *bytes = 0;
    lector_status st = check_inputs(m, inputs, n_inputs, 0, err);
    lector_tensor *full = NULL; /* with width masks: the plan of every item at the whole width */
    if (!st && m->wm) st = with_masks(m, inputs, NULL, NULL, &full, err);
    rt_plan *p;
    if (!st) st = acquire_plan(m, full ? full : inputs, &p, err);
    with_masks_free(m, full);
    if (st) return st;
    *bytes = p->arena_size;
    cache_release(m, p);
    return LECTOR_OK;
}

lector_status lector_model_reserve(lector_model *m, const lector_tensor *inputs, size_t n_inputs, int runs,
                                   size_t max_bytes, int *made, lector_error *err)
{
    if (made) *made = 0;
    if (runs < 0) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_reserve: runs < 0");
    size_t bytes = 0;
    lector_status st = lector_model_arena_bytes(m, inputs, n_inputs, &bytes, err);
    if (st) return st;
    if (max_bytes && bytes && (size_t)runs > max_bytes / bytes) runs = (int)(max_bytes / bytes);
    int n = rt_arena_pool_reserve(&m->arenas, runs, bytes);
    if (made) *made = n;
    return LECTOR_OK;
}

lector_status lector_model_time(const lector_model *cm, const lector_tensor *inputs, size_t n_inputs, int runs,
                                double *ms, char *mode, size_t mode_len, lector_error *err)
{
    lector_model *m = (lector_model *)cm;
    if (!m || !ms || runs < 1 || (n_inputs && !inputs))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_time: NULL argument or runs < 1");
    lector_status st = check_inputs(m, inputs, n_inputs, 1, err);
    lector_tensor *full = NULL; /* with width masks: every item at the whole width */
    if (!st && m->wm) st = with_masks(m, inputs, NULL, NULL, &full, err);
    const lector_tensor *in = full ? full : inputs;
    rt_plan *p;
    if (!st && !(st = acquire_plan(m, in, &p, err))) {
        st = rt_plan_time(p, in, runs, ms, mode, mode_len, err);
        cache_release(m, p);
    }
    with_masks_free(m, full);
    return st;
}
