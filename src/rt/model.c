/*
 * model.c - the public runtime API (lector_rt.h): a loaded model is the
 * immutable base graph, prepared once for its backend (constants folded into
 * what every shape shares), plus a bounded LRU cache of execution plans, one
 * per input shape, and the activation arenas every plan runs in. Plans are
 * reference counted so that eviction never frees a plan another thread is
 * running.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "rt/backend.h"
#include "rt/loader.h"
#include "rt/passes.h"
#include "rt/plan.h"
#include "util/util.h"

typedef struct cache_entry {
    rt_plan *plan; /* plan->refs counts the cache's reference + running calls */
    uint64_t last_used;
} cache_entry;

struct lector_model {
    rt_graph *g;
    rt_backend *be;
    lector_value_info *inputs, *outputs;
    pthread_mutex_t lock;
    cache_entry *cache;
    int n_cache, cap_cache;
    uint64_t tick;
    rt_arena_pool arenas; /* shared by every plan */
    int jit_size;         /* lector_model_options.jit_size */
    int arenas_ready;
    uint64_t plans_compiled, plans_generic; /* under lock */
    _Atomic uint64_t runs;
};

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
    m->jit_size = opt && opt->jit_size > 0 ? opt->jit_size : 0;
    m->cap_cache = opt && opt->plan_cache_size > 0 ? opt->plan_cache_size : RT_PLAN_CACHE_DEFAULT;
    m->cache = lector__calloc((size_t)m->cap_cache, sizeof *m->cache);
    if (!m->cache) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&m->lock, NULL);
    lector_status st = rt_backend_create_ex(opt ? opt->backend : NULL, opt ? opt->threads : 0,
                                            opt ? opt->gpu_mem_limit : 0, opt ? opt->fp16 : 0, &m->be, err);
    if (st) return st;
    rt_arena_pool_init(&m->arenas, m->be);
    m->arenas_ready = 1;
    /* what does not depend on the input shape is done once, on the base graph */
    if (m->be->iface->features & RT_FEATURE_FUSED_ACT) st = rt_prepare_constants(m->g, err);
    return st;
}

/* ---- output_argmax ------------------------------------------------------------ */

static int argmax_candidate(const rt_graph *g, int v)
{
    const rt_value *x = &g->values[v];
    return x->dtype == LECTOR_DTYPE_FLOAT32 && x->ndim >= 2;
}

/* A new value `<src>suffix` written by the last node added, a graph output
 * of type dt and the rank of `src` minus one (dims as the model declares them). */
static int argmax_value(rt_graph *g, int src, const char *suffix, lector_dtype dt)
{
    char name[512];
    snprintf(name, sizeof name, "%s%s", g->values[src].name, suffix);
    int v = rt_graph_add_value(g, name);
    if (v < 0) return -1;
    rt_value *x = &g->values[v];
    const rt_value *s = &g->values[src];
    x->dtype = dt;
    x->ndim = s->ndim - 1;
    memcpy(x->dims, s->dims, sizeof(int64_t) * (size_t)x->ndim);
    x->is_output = true;
    return v;
}

static int attr_int(rt_node *n, const char *name, int64_t i)
{
    rt_attr *a = rt_node_add_attr(n, name, RT_ATTR_INT);
    if (!a) return -1;
    a->i = i;
    return 0;
}

/* Appends ArgMax(axis=-1, keepdims=0) and ReduceMax(axes=[-1], keepdims=0)
 * nodes reading output `src`; their outputs go to *vi / *vm. ReduceMax takes
 * its axes as the graph's opset has it (an attribute before 18, input 1
 * from 18); the kernels read both forms. */
static int argmax_nodes(rt_graph *g, int src, int *vi, int *vm)
{
    char name[512];
    snprintf(name, sizeof name, "%s_argmax", g->values[src].name);
    rt_node *a = rt_graph_add_node(g, RT_OP_ArgMax, name, 1, 1);
    if (!a) return -1;
    a->in[0] = src;
    if (attr_int(a, "axis", -1) || attr_int(a, "keepdims", 0) || attr_int(a, "__opset", g->opset)) return -1;
    if ((*vi = argmax_value(g, src, "_argmax", LECTOR_DTYPE_INT64)) < 0) return -1;
    g->nodes[g->n_nodes - 1].out[0] = *vi;
    g->values[*vi].producer = g->n_nodes - 1;

    int in18 = g->opset >= 18, axes = -1;
    if (in18) {
        int64_t *data = lector__malloc(sizeof *data), one = 1;
        if (!data) return -1;
        *data = -1;
        snprintf(name, sizeof name, "%s_max::axes", g->values[src].name);
        if ((axes = rt_graph_add_const(g, name, LECTOR_DTYPE_INT64, 1, &one, data)) < 0) {
            lector__free(data);
            return -1;
        }
    }
    snprintf(name, sizeof name, "%s_max", g->values[src].name);
    rt_node *r = rt_graph_add_node(g, RT_OP_ReduceMax, name, in18 ? 2 : 1, 1);
    if (!r) return -1;
    r->in[0] = src;
    if (in18) {
        r->in[1] = axes;
    } else {
        rt_attr *at = rt_node_add_attr(r, "axes", RT_ATTR_INTS);
        if (!at || !(at->ints = lector__malloc(sizeof(int64_t)))) return -1;
        at->ints[0] = -1;
        at->n_ints = 1;
    }
    if (attr_int(r, "keepdims", 0) || attr_int(r, "__opset", g->opset)) return -1;
    if ((*vm = argmax_value(g, src, "_max", LECTOR_DTYPE_FLOAT32)) < 0) return -1;
    g->nodes[g->n_nodes - 1].out[0] = *vm;
    g->values[*vm].producer = g->n_nodes - 1;
    return 0;
}

/* lector_model_options.output_argmax, on the base graph before any plan:
 * each float output of rank >= 2 is replaced, in place, by its argmax and
 * max over the last axis. The nodes go at the end (the node order stays
 * topological); the replaced value stops being a graph output but stays
 * live as their input, so the dead-node pass keeps its producer. */
static lector_status add_output_argmax(rt_graph *g, lector_error *err)
{
    int n = 0;
    for (int i = 0; i < g->n_outputs; i++) n += argmax_candidate(g, g->outputs[i]);
    if (!n) return LECTOR_OK;
    int *outs = lector__malloc(sizeof *outs * (size_t)(g->n_outputs + n));
    if (!outs) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", g->name);
    int k = 0;
    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i], vi, vm;
        if (!argmax_candidate(g, v)) {
            outs[k++] = v;
            continue;
        }
        if (argmax_nodes(g, v, &vi, &vm)) {
            lector__free(outs);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", g->name);
        }
        outs[k++] = vi;
        outs[k++] = vm;
    }
    /* a replaced value is no graph output any more (none is listed twice
     * with one occurrence kept: every occurrence of a value is replaced) */
    for (int i = 0; i < g->n_outputs; i++)
        if (argmax_candidate(g, g->outputs[i])) g->values[g->outputs[i]].is_output = false;
    lector__free(g->outputs);
    g->outputs = outs;
    g->n_outputs = k;
    return LECTOR_OK;
}

lector_status lector_model_load_memory(const void *data, size_t size, const char *name, const lector_model_options *opt,
                                       lector_model **out, lector_error *err)
{
    if (!out || (!data && size))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_load: NULL argument");
    *out = NULL;
    lector_model *m = lector__calloc(1, sizeof *m);
    if (!m) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    lector_status st = rt_load_onnx(data, size, name, &m->g, err);
    if (!st && opt && opt->output_argmax) st = add_output_argmax(m->g, err);
    if (!st) st = model_init(m, opt, err);
    if (st) {
        if (m->arenas_ready) rt_arena_pool_destroy(&m->arenas);
        rt_backend_free(m->be);
        if (m->cache) pthread_mutex_destroy(&m->lock);
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

lector_status lector_model_load_file(const char *path, const lector_model_options *opt, lector_model **out,
                                     lector_error *err)
{
    if (!path || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_load_file: NULL argument");
    *out = NULL;
    uint8_t *buf;
    size_t len;
    /* 2 GiB is protobuf's own limit for one message */
    lector_status st = lector__read_file(path, (size_t)2 << 30, &buf, &len, err);
    if (st) return st;
    st = lector_model_load_memory(buf, len, path, opt, out, err);
    lector__free(buf);
    return st;
}

void lector_model_free(lector_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_cache; i++) rt_plan_free(m->cache[i].plan);
    rt_arena_pool_destroy(&m->arenas);
    pthread_mutex_destroy(&m->lock);
    lector__free(m->cache);
    lector__free(m->inputs);
    lector__free(m->outputs);
    rt_backend_free(m->be);
    rt_graph_free(m->g);
    lector__free(m);
}

size_t lector_model_num_inputs(const lector_model *m) { return m ? (size_t)m->g->n_inputs : 0; }
size_t lector_model_num_outputs(const lector_model *m) { return m ? (size_t)m->g->n_outputs : 0; }

const lector_value_info *lector_model_input(const lector_model *m, size_t i)
{
    return m && i < (size_t)m->g->n_inputs ? &m->inputs[i] : NULL;
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
    void (*trim)(rt_backend *) = NULL;
    if (be->iface->get_proc_address) *(void **)&trim = be->iface->get_proc_address("trim");
    if (trim) trim(be);
}

void lector_model_gpu_memory(const lector_model *m, size_t *used, size_t *limit)
{
    *used = *limit = 0;
    if (!m || !m->be->iface->get_proc_address) return;
    void (*usage)(int, size_t *, size_t *) = NULL;
    *(void **)&usage = m->be->iface->get_proc_address("memory_usage");
    if (usage) usage(m->be->device, used, limit);
}

size_t lector_model_gpu_available(const lector_model *m)
{
    if (!m || !m->be->iface->get_proc_address) return 0;
    size_t (*avail)(int) = NULL;
    *(void **)&avail = m->be->iface->get_proc_address("memory_available");
    return avail ? avail(m->be->device) : 0;
}

void lector_model_get_stats(const lector_model *cm, lector_model_stats *out)
{
    memset(out, 0, sizeof *out);
    lector_model *m = (lector_model *)cm; /* counters are internal, locked state */
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    out->plans_compiled = m->plans_compiled;
    out->plans_generic = m->plans_generic;
    out->runs = atomic_load(&m->runs);
    out->plans_cached = m->n_cache;
    pthread_mutex_unlock(&m->lock);
    rt_arena_pool_stats(&m->arenas, &out->arena_bytes, &out->arenas_allocated);
    uint64_t (*kernels)(rt_backend *) = NULL;
    if (m->be->iface->get_proc_address) *(void **)&kernels = m->be->iface->get_proc_address("kernels_compiled");
    if (kernels) out->kernels_compiled = kernels(m->be);
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

/* Drops a reference taken by cache_get/cache_put; the plan is freed when
 * it was evicted meanwhile and this was the last reference. */
static void cache_release(lector_model *m, rt_plan *p)
{
    pthread_mutex_lock(&m->lock);
    int last = --p->refs == 0;
    pthread_mutex_unlock(&m->lock);
    if (last) rt_plan_free(p); /* evicted while it ran */
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
    lector_status st = rt_optimize(g, inputs, fuse, err);
    if (st) {
        rt_graph_free(g);
        return st;
    }
    return shape_gets_jit(m, inputs) ? rt_plan_build(g, m->be, inputs, out, err)
                                     : rt_plan_build_generic(g, m->be, inputs, out, err);
}

/* Returns a referenced plan for these input shapes, compiling it if needed. */
static lector_status acquire_plan(lector_model *m, const lector_tensor *inputs, rt_plan **out, lector_error *err)
{
    int slot;
    pthread_mutex_lock(&m->lock);
    rt_plan *p = cache_get(m, inputs, &slot);
    pthread_mutex_unlock(&m->lock);
    if (p) {
        *out = p;
        return LECTOR_OK;
    }
    /* compile outside the lock: other shapes keep running meanwhile */
    rt_plan *fresh;
    lector_status st = compile_plan(m, inputs, &fresh, err);
    if (st) return st;
    fresh->arenas = &m->arenas;
    pthread_mutex_lock(&m->lock);
    m->plans_compiled++;
    m->plans_generic += fresh->generic;
    p = cache_get(m, inputs, &slot);
    if (p) { /* another thread compiled the same shape first */
        pthread_mutex_unlock(&m->lock);
        rt_plan_free(fresh);
        *out = p;
        return LECTOR_OK;
    }
    rt_plan *evict = NULL;
    int evict_free = 0;
    if (m->n_cache == m->cap_cache) {
        int lru = 0;
        for (int i = 1; i < m->n_cache; i++)
            if (m->cache[i].last_used < m->cache[lru].last_used) lru = i;
        evict = m->cache[lru].plan;
        evict_free = --evict->refs == 0; /* the cache's reference */
        m->cache[lru] = m->cache[--m->n_cache];
    }
    m->cache[m->n_cache].plan = fresh;
    fresh->refs = 2; /* cache + caller */
    m->cache[m->n_cache].last_used = ++m->tick;
    m->n_cache++;
    pthread_mutex_unlock(&m->lock);
    /* an evicted plan still running elsewhere is freed by its last cache_release */
    if (evict && evict_free) rt_plan_free(evict);
    *out = fresh;
    return LECTOR_OK;
}

/* The checks every call with inputs makes: their count, ranks, and data
 * (need_data = 0: only shape operands, whose values key the plan, need it). */
static lector_status check_inputs(const lector_model *m, const lector_tensor *inputs, size_t n_inputs, int need_data,
                                  lector_error *err)
{
    if (n_inputs != (size_t)m->g->n_inputs)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: the model takes %d inputs, got %zu", m->g->name,
                             m->g->n_inputs, n_inputs);
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

/* One run through the plan for these input shapes: with the inputs' data, or
 * (rows non-NULL) the only input made by the backend from n_rows image rows. */
static lector_status run_plan(lector_model *m, const lector_tensor *inputs, const lector_image_input *rows,
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

lector_status lector_model_run(const lector_model *cm, const lector_tensor *inputs, size_t n_inputs,
                               lector_tensor **outputs, size_t *n_outputs, lector_error *err)
{
    lector_model *m = (lector_model *)cm; /* the cache is internal, locked state */
    if (!m || !outputs || !n_outputs || (n_inputs && !inputs))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_run: NULL argument");
    *outputs = NULL;
    *n_outputs = 0;
    lector_status st = check_inputs(m, inputs, n_inputs, 1, err);
    return st ? st : run_plan(m, inputs, NULL, 0, outputs, n_outputs, err);
}

int lector_model_takes_images(const lector_model *m)
{
    if (!m || m->g->n_inputs != 1 || !m->be->iface->get_proc_address || !m->be->iface->get_proc_address("run_images"))
        return 0;
    const rt_value *v = &m->g->values[m->g->inputs[0]];
    return v->dtype == LECTOR_DTYPE_FLOAT32 && (v->ndim < 0 || v->ndim == 4);
}

/* One row against the first (channels, out_height) and the tensor width;
 * its tables against the source they index (the turned crop, or the pixels). */
static lector_status check_row(const lector_model *m, const lector_image_input *im, size_t i,
                               const lector_image_input *first, int width, lector_error *err)
{
    const char *name = m->g->name;
    if (!im->pixels || !im->xofs || !im->alpha || !im->yofs || !im->beta || !im->lut || im->width <= 0 ||
        im->height <= 0 || im->channels < 1 || im->channels > 4 || im->out_width <= 0 || im->out_height <= 0 ||
        im->stride < (size_t)im->width * (size_t)im->channels)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: invalid image input %zu (%dx%d, %d channels)", name,
                             i, im->width, im->height, im->channels);
    if (im->channels != first->channels || im->out_height != first->out_height || im->out_width > width)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                             "%s: image input %zu (%d channels, %dx%d) does not fit the batch (%d channels, "
                             "height %d, width %d)",
                             name, i, im->channels, im->out_width, im->out_height, first->channels, first->out_height,
                             width);
    int sw = im->width, sh = im->height;
    if (im->warp) {
        if (!im->cubic || im->crop_width <= 0 || im->crop_height <= 0 || im->turns < 0 || im->turns > 3 ||
            im->origin_x < 0 || im->origin_y < 0 || im->full_width - im->width < im->origin_x ||
            im->full_height - im->height < im->origin_y)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                                 "%s: image input %zu: invalid crop (%dx%d, turns %d, region %dx%d at %d,%d of "
                                 "%dx%d)",
                                 name, i, im->crop_width, im->crop_height, im->turns, im->width, im->height,
                                 im->origin_x, im->origin_y, im->full_width, im->full_height);
        sw = im->turns & 1 ? im->crop_height : im->crop_width;
        sh = im->turns & 1 ? im->crop_width : im->crop_height;
    }
    for (int x = 0; x < im->out_width; x++)
        if (im->xofs[x] < 0 || im->xofs[x] >= sw)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: image input %zu: column table out of range",
                                 name, i);
    for (int y = 0; y < 2 * im->out_height; y++)
        if (im->yofs[y] < 0 || im->yofs[y] >= sh)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: image input %zu: row table out of range", name,
                                 i);
    return LECTOR_OK;
}

lector_status lector_model_run_images(const lector_model *cm, const lector_image_input *rows, size_t n_rows,
                                      size_t batch, int width, lector_tensor **outputs, size_t *n_outputs,
                                      lector_error *err)
{
    lector_model *m = (lector_model *)cm;
    if (!m || !rows || !outputs || !n_outputs)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_run_images: NULL argument");
    *outputs = NULL;
    *n_outputs = 0;
    if (!lector_model_takes_images(m))
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: the %s backend takes no image input", m->g->name,
                             m->be->iface->name);
    if (!n_rows || batch < n_rows || batch > INT32_MAX || width <= 0)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: %zu image rows in a batch of %zu, width %d",
                             m->g->name, n_rows, batch, width);
    for (size_t i = 0; i < n_rows; i++) {
        lector_status st = check_row(m, &rows[i], i, &rows[0], width, err);
        if (st) return st;
    }
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {(int64_t)batch, rows[0].channels, rows[0].out_height, width}, NULL};
    return run_plan(m, &in, rows, n_rows, outputs, n_outputs, err);
}

lector_status lector_model_run_image(const lector_model *m, const lector_image_input *im, lector_tensor **outputs,
                                     size_t *n_outputs, lector_error *err)
{
    if (!im) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_run_image: NULL argument");
    return lector_model_run_images(m, im, 1, 1, im->out_width, outputs, n_outputs, err);
}

lector_status lector_model_arena_bytes(const lector_model *cm, const lector_tensor *inputs, size_t n_inputs,
                                       size_t *bytes, lector_error *err)
{
    lector_model *m = (lector_model *)cm;
    if (!m || !bytes || (n_inputs && !inputs))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_arena_bytes: NULL argument");
    *bytes = 0;
    lector_status st = check_inputs(m, inputs, n_inputs, 0, err);
    if (st) return st;
    rt_plan *p;
    st = acquire_plan(m, inputs, &p, err);
    if (st) return st;
    *bytes = p->arena_size;
    cache_release(m, p);
    return LECTOR_OK;
}

lector_status lector_model_time(const lector_model *cm, const lector_tensor *inputs, size_t n_inputs, int runs,
                                double *ms, char *mode, size_t mode_len, lector_error *err)
{
    lector_model *m = (lector_model *)cm;
    if (!m || !ms || runs < 1 || (n_inputs && !inputs))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_model_time: NULL argument or runs < 1");
    lector_status st = check_inputs(m, inputs, n_inputs, 1, err);
    if (st) return st;
    rt_plan *p;
    st = acquire_plan(m, inputs, &p, err);
    if (st) return st;
    st = rt_plan_time(p, inputs, runs, ms, mode, mode_len, err);
    cache_release(m, p);
    return st;
}
