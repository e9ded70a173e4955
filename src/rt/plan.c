#include "rt/plan.h"

#include <stdio.h>
#include <string.h>

#include "rt/backend.h"
#include "rt/host_chain.h"
#include "rt/host_profile.h"
#include "util/util.h"

/* ---- memory plan ------------------------------------------------------------
 * Greedy best-fit over the node order: a value is allocated when its
 * producer runs and released after its last reader, so buffers of values
 * whose lifetimes do not overlap are reused. Outputs of a node are allocated
 * before its inputs are released: a kernel never sees aliased memory. */

typedef struct block {
    size_t off, size;
} block;

typedef struct freelist {
    block *b;
    int n, cap;
    size_t top; /* arena high-water mark */
} freelist;

static size_t align_up(size_t n) { return (n + RT_ARENA_ALIGN - 1) & ~(size_t)(RT_ARENA_ALIGN - 1); }

static int fl_insert(freelist *fl, size_t off, size_t size)
{
    /* keep sorted by offset, merge neighbours */
    int i = 0;
    while (i < fl->n && fl->b[i].off < off) i++;
    if (i > 0 && fl->b[i - 1].off + fl->b[i - 1].size == off) {
        fl->b[i - 1].size += size;
        if (i < fl->n && fl->b[i - 1].off + fl->b[i - 1].size == fl->b[i].off) {
            fl->b[i - 1].size += fl->b[i].size;
            memmove(&fl->b[i], &fl->b[i + 1], sizeof(block) * (size_t)(fl->n - i - 1));
            fl->n--;
        }
        return 0;
    }
    if (i < fl->n && off + size == fl->b[i].off) {
        fl->b[i].off = off;
        fl->b[i].size += size;
        return 0;
    }
    if (fl->n == fl->cap) {
        int cap = fl->cap ? fl->cap * 2 : 32;
        block *nb = lector__realloc(fl->b, sizeof(block) * (size_t)cap);
        if (!nb) return -1;
        fl->b = nb;
        fl->cap = cap;
    }
    memmove(&fl->b[i + 1], &fl->b[i], sizeof(block) * (size_t)(fl->n - i));
    fl->b[i].off = off;
    fl->b[i].size = size;
    fl->n++;
    return 0;
}

static size_t fl_alloc(freelist *fl, size_t size)
{
    int best = -1;
    for (int i = 0; i < fl->n; i++)
        if (fl->b[i].size >= size && (best < 0 || fl->b[i].size < fl->b[best].size)) best = i;
    if (best >= 0) {
        size_t off = fl->b[best].off;
        fl->b[best].off += size;
        fl->b[best].size -= size;
        if (fl->b[best].size == 0) {
            memmove(&fl->b[best], &fl->b[best + 1], sizeof(block) * (size_t)(fl->n - best - 1));
            fl->n--;
        }
        return off;
    }
    /* grow: extend a free block that ends at the top, else append */
    if (fl->n > 0 && fl->b[fl->n - 1].off + fl->b[fl->n - 1].size == fl->top) {
        size_t off = fl->b[fl->n - 1].off;
        fl->top = off + size;
        fl->n--;
        return off;
    }
    size_t off = fl->top;
    fl->top += size;
    return off;
}

static lector_status memory_plan(rt_plan *p, lector_error *err)
{
    rt_graph *g = p->g;
    int *last = lector__malloc(sizeof(int) * (size_t)(g->n_values + 1));
    p->offset = lector__malloc(sizeof(size_t) * (size_t)(g->n_values + 1));
    if (!last || !p->offset) {
        lector__free(last);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory planning memory");
    }
    for (int v = 0; v < g->n_values; v++) {
        last[v] = -1;
        p->offset[v] = RT_NO_OFFSET;
    }
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) last[n->in[k]] = s;
    }
    for (int i = 0; i < g->n_outputs; i++) last[g->outputs[i]] = p->n_order; /* live to the end */
    /* a backend may keep values longer (plan_lifetimes), and so do the host executor's chains, whose
     * values inside them get no bytes (internal); such a value is released after the node at its new last
     * position, which need not read it: later[s] lists them (next[] links the list) */
    rt_backend *be = p->backend;
    rt_plan_lifetimes_fn lifetimes = be && !p->generic ? be->iface->plan_lifetimes : NULL;
    int host = p->generic || (be && be->iface->plan_execute == rt_execute_host);
    int *before = lector__malloc(sizeof(int) * (size_t)(g->n_values + 1));
    int *later = lector__malloc(sizeof(int) * (size_t)(p->n_order + 1));
    int *next = lector__malloc(sizeof(int) * (size_t)(g->n_values + 1));
    char *internal = lector__calloc((size_t)g->n_values + 1, 1);
    if (!before || !later || !next || !internal) {
        lector__free(before);
        lector__free(later);
        lector__free(next);
        lector__free(internal);
        lector__free(last);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory planning memory");
    }
    memcpy(before, last, sizeof(int) * (size_t)g->n_values);
    lector_status st = host ? rt_host_chains_find(p, internal, last, err) : LECTOR_OK;
    if (lifetimes) lifetimes(be, p, last);
    for (int s = 0; s < p->n_order; s++) later[s] = -1;
    for (int v = 0; v < g->n_values; v++)
        if (last[v] > before[v] && last[v] < p->n_order) {
            next[v] = later[last[v]];
            later[last[v]] = v;
        }
    lector__free(before);
    freelist fl = {0};
    for (int s = 0; s < p->n_order && !st; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->n_out; k++) {
            int v = n->out[k];
            if (v < 0 || g->values[v].data || internal[v]) continue;
            /* every dimension known and the size representable: a model whose shapes
             * inference could not settle (a dimension it declares as dynamic, say)
             * is refused here, not given an absurd arena */
            const rt_value *val = &g->values[v];
            int64_t cnt = 1;
            for (int d = 0; d < val->ndim && !st; d++) {
                if (val->dims[d] < 0 || (val->dims[d] && cnt > INT64_MAX / 16 / val->dims[d])) {
                    char buf[96];
                    st = lector__error(err, LECTOR_ERR_SHAPE, "%s: node '%s': output '%s' has no valid shape (%s)",
                                       g->name, n->name, val->name, rt_dims_str(val->ndim, val->dims, buf, sizeof buf));
                }
                cnt *= val->dims[d];
            }
            if (st) break;
            p->offset[v] = fl_alloc(&fl, align_up(rt_value_nbytes(val)));
            if (last[v] < 0) last[v] = s; /* unused output: free right after */
        }
        /* release values whose last reader is this node (and unused outputs) */
        for (int k = 0; k < n->n_in + n->n_out; k++) {
            int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
            if (v < 0 || p->offset[v] == RT_NO_OFFSET || last[v] != s) continue;
            /* a value read twice by the same node is released once */
            int dup = 0;
            for (int j = 0; j < k; j++) {
                int w = j < n->n_in ? n->in[j] : n->out[j - n->n_in];
                if (w == v) dup = 1;
            }
            if (dup) continue;
            if (fl_insert(&fl, p->offset[v], align_up(rt_value_nbytes(&g->values[v]))))
                st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory planning memory");
        }
        /* values kept until here by the backend that this node does not read (those it reads: above) */
        for (int v = later ? later[s] : -1; v >= 0 && !st; v = next[v]) {
            int seen = 0;
            for (int k = 0; k < n->n_in + n->n_out; k++) seen |= (k < n->n_in ? n->in[k] : n->out[k - n->n_in]) == v;
            if (seen || p->offset[v] == RT_NO_OFFSET) continue;
            if (fl_insert(&fl, p->offset[v], align_up(rt_value_nbytes(&g->values[v]))))
                st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory planning memory");
        }
    }
    p->arena_size = fl.top;
    lector__free(internal);
    lector__free(later);
    lector__free(next);
    lector__free(fl.b);
    lector__free(last);
    return st;
}

/* ---- plan ----------------------------------------------------------------- */

static lector_status plan_build(rt_graph *g, rt_backend *be, const lector_tensor *inputs, int generic, rt_plan **out,
                                lector_error *err)
{
    *out = NULL;
    rt_plan *p = lector__calloc(1, sizeof *p);
    if (!p) {
        rt_graph_free(g);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    p->g = g;
    p->backend = be;
    p->order = lector__malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    p->kernels = lector__calloc((size_t)(g->n_nodes + 1), sizeof(rt_kernel_fn));
    p->n_inputs = g->n_inputs;
    p->key = lector__calloc((size_t)(g->n_inputs + 1), sizeof *p->key);
    if (!p->order || !p->kernels || !p->key) {
        rt_plan_free(p);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    p->key_values = lector__calloc((size_t)(g->n_inputs + 1), sizeof *p->key_values);
    if (!p->key_values) {
        rt_plan_free(p);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < g->n_inputs; i++) {
        p->key[i][0] = inputs[i].ndim;
        for (int d = 0; d < inputs[i].ndim; d++) p->key[i][d + 1] = inputs[i].dims[d];
        if (rt_input_bound_by_value(&inputs[i])) {
            size_t nb = (size_t)lector_tensor_numel(&inputs[i]) * lector_dtype_size(inputs[i].dtype);
            p->key_values[i] = lector__malloc(nb ? nb : 1);
            if (!p->key_values[i]) {
                rt_plan_free(p);
                return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
            }
            if (nb) memcpy(p->key_values[i], inputs[i].data, nb);
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        p->order[p->n_order++] = i;
        p->kernels[i] = rt_op_table[g->nodes[i].op].ref; /* default: the reference kernel */
    }
    p->generic = generic;
    lector_status st = memory_plan(p, err);
    if (!st && !generic && be->iface->plan_compile) st = be->iface->plan_compile(be, p, err);
    if (!st && generic && be->iface->plan_generic) st = be->iface->plan_generic(be, p, err);
    if (st) {
        rt_plan_free(p);
        return st;
    }
    *out = p;
    return LECTOR_OK;
}

lector_status rt_plan_build(rt_graph *g, rt_backend *be, const lector_tensor *inputs, rt_plan **out, lector_error *err)
{
    return plan_build(g, be, inputs, 0, out, err);
}

lector_status rt_plan_build_generic(rt_graph *g, rt_backend *be, const lector_tensor *inputs, rt_plan **out,
                                    lector_error *err)
{
    return plan_build(g, be, inputs, 1, out, err);
}

void rt_plan_free(rt_plan *p)
{
    if (!p) return;
    if (p->be_plan && p->backend && p->backend->iface->plan_free) p->backend->iface->plan_free(p->backend, p);
    rt_graph_free(p->g);
    lector__free(p->order);
    lector__free(p->offset);
    lector__free(p->kernels);
    lector__free(p->own);
    lector__free(p->chains);
    lector__free(p->chain_at);
    for (int i = 0; p->key_values && i < p->n_inputs; i++) lector__free(p->key_values[i]);
    lector__free(p->key_values);
    lector__free(p->key);
    lector__free(p);
}

int rt_plan_matches(const rt_plan *p, const lector_tensor *inputs, int n_inputs)
{
    if (n_inputs != p->n_inputs) return 0;
    for (int i = 0; i < n_inputs; i++) {
        if (p->key[i][0] != inputs[i].ndim) return 0;
        for (int d = 0; d < inputs[i].ndim; d++)
            if (p->key[i][d + 1] != inputs[i].dims[d]) return 0;
        if (p->key_values[i]) {
            size_t nb = (size_t)lector_tensor_numel(&inputs[i]) * lector_dtype_size(inputs[i].dtype);
            if (!rt_input_bound_by_value(&inputs[i]) || (nb && memcmp(p->key_values[i], inputs[i].data, nb))) return 0;
        } else if (rt_input_bound_by_value(&inputs[i])) {
            return 0;
        }
    }
    return 1;
}

int rt_input_bound_by_value(const lector_tensor *t)
{
    int64_t n = lector_tensor_numel(t);
    if (!t->data && n > 0) return 0;
    if (t->dtype == LECTOR_DTYPE_INT64 || t->dtype == LECTOR_DTYPE_INT32) return n <= 64;
    if (t->dtype == LECTOR_DTYPE_FLOAT32) return t->ndim <= 1 && n <= 8;
    return 0;
}

/* The size of the arena given to the backend call running on this thread. */
static _Thread_local size_t run_arena_size;

size_t rt_run_arena_size(void) { return run_arena_size; }

/* An arena of the plan's size: borrowed from the model's pool, or (a plan
 * built without one) allocated for this run. */
static lector_status arena_take(rt_plan *p, rt_arena *out, lector_error *err)
{
    size_t need = __atomic_load_n(&p->arena_size, __ATOMIC_RELAXED);
    lector_status st = LECTOR_OK;
    if (p->arenas) {
        st = rt_arena_take(p->arenas, need, out, p->g->name, err);
    } else {
        rt_backend *be = p->backend;
        out->size = need ? need : RT_ARENA_ALIGN;
        out->ptr = rt_buffer_alloc(be, out->size);
        if (!out->ptr)
            st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes of activation memory",
                               p->g->name, need);
    }
    run_arena_size = st ? 0 : out->size;
    return st;
}

static void arena_give(rt_plan *p, rt_arena a)
{
    if (p->arenas)
        rt_arena_give(p->arenas, a);
    else
        rt_buffer_free(p->backend, a.ptr);
}

lector_status rt_plan_run(rt_plan *p, const lector_tensor *inputs, lector_tensor *outputs, lector_error *err)
{
    rt_backend *be = p->backend;
    rt_arena arena;
    lector_status st = arena_take(p, &arena, err);
    if (st) return st;
    st = p->generic ? rt_execute_host(be, p, arena.ptr, inputs, outputs, err)
                    : be->iface->plan_execute(be, p, arena.ptr, inputs, outputs, err);
    arena_give(p, arena);
    return st;
}

lector_status rt_plan_run_images(rt_plan *p, const lector_image_input *rows, size_t n_rows, lector_tensor *outputs,
                                 lector_error *err)
{
    rt_backend *be = p->backend;
    rt_run_images_fn run = be->iface->run_images;
    if (!run)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: the %s backend takes no image input", p->g->name,
                             be->iface->name);
    rt_arena arena;
    lector_status st = arena_take(p, &arena, err);
    if (st) return st;
    st = run(be, p, arena.ptr, rows, n_rows, outputs, err);
    arena_give(p, arena);
    return st;
}

lector_status rt_plan_time(rt_plan *p, const lector_tensor *inputs, int runs, double *ms, char *mode, size_t mode_len,
                           lector_error *err)
{
    rt_backend *be = p->backend;
    rt_arena arena;
    lector_status st = arena_take(p, &arena, err);
    if (st) return st;
    if (mode && mode_len)
        snprintf(mode, mode_len, "%s",
                 p->generic             ? "generic"
                 : be->iface->plan_mode ? be->iface->plan_mode(p)
                                        : be->iface->name);
    if (be->iface->time_plan && !p->generic) {
        st = be->iface->time_plan(be, p, arena.ptr, inputs, runs, ms, err);
    } else { /* host backends: each run is a whole execution */
        lector_tensor *outs = lector__calloc((size_t)p->g->n_outputs + 1, sizeof *outs);
        if (!outs) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        for (int r = 0; r < runs && !st; r++) {
            double t0 = lector__now_ms();
            st = p->generic ? rt_execute_host(be, p, arena.ptr, inputs, outs, err)
                            : be->iface->plan_execute(be, p, arena.ptr, inputs, outs, err);
            ms[r] = lector__now_ms() - t0;
            for (int i = 0; !st && i < p->g->n_outputs; i++) lector__free(outs[i].data);
        }
        lector__free(outs);
    }
    arena_give(p, arena);
    return st;
}

/* ---- host executor ---------------------------------------------------------- */

void *rt_plan_value_data(const rt_plan *p, void *arena, const lector_tensor *inputs, int v)
{
    const rt_graph *g = p->g;
    if (g->values[v].data) return g->values[v].data;
    if (p->offset[v] != RT_NO_OFFSET) return (char *)arena + p->offset[v];
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return inputs[i].data;
    return NULL;
}

typedef struct host_run {
    const rt_plan *p;
    void *arena;
    const lector_tensor *inputs;
} host_run;

static const void *output_data(void *ctx, int i)
{
    const host_run *r = ctx;
    return rt_plan_value_data(r->p, r->arena, r->inputs, r->p->g->outputs[i]);
}

lector_status rt_execute_host(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                              lector_tensor *outputs, lector_error *err)
{
    const rt_graph *g = p->g;
    rt_kernel_ctx ctx = {be->threads > 0 ? be->threads : 1, err};
    lector_tensor in[16], out[8];
    int prof = rt_host_profiling();
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        double t0 = prof ? lector__now_ms() : 0;
        if (p->chain_at && p->chain_at[s] >= 0) {
            const rt_host_chain *c = &p->chains[p->chain_at[s]];
            lector_status st = rt_host_chain_run(p, c, arena, inputs, &ctx);
            if (prof) rt_host_profile_node(p, s, c->n, RT_PROF_CHAIN, lector__now_ms() - t0);
            if (st) {
                if (err && strncmp(err->message, g->name, strlen(g->name))) lector__error_prefix(err, "%s", g->name);
                return st;
            }
            s += c->n - 1;
            continue;
        }
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] < 0) {
                memset(&in[k], 0, sizeof in[k]);
                continue;
            }
            in[k] = rt_value_tensor(&g->values[n->in[k]]);
            in[k].data = rt_plan_value_data(p, arena, inputs, n->in[k]);
        }
        for (int k = 0; k < n->n_out; k++) {
            if (n->out[k] < 0) {
                memset(&out[k], 0, sizeof out[k]);
                continue;
            }
            out[k] = rt_value_tensor(&g->values[n->out[k]]);
            out[k].data = rt_plan_value_data(p, arena, inputs, n->out[k]);
        }
        const rt_own_kernel *own = p->own && p->own[p->order[s]].run ? &p->own[p->order[s]] : NULL;
        lector_status st = own ? own->run(own->state, n, in, out, &ctx) : p->kernels[p->order[s]](n, in, out, &ctx);
        if (prof) rt_host_profile_node(p, s, 1, own ? RT_PROF_OWN : RT_PROF_REF, lector__now_ms() - t0);
        if (st) {
            if (err && strncmp(err->message, g->name, strlen(g->name))) lector__error_prefix(err, "%s", g->name);
            return st;
        }
    }
    host_run run = {p, arena, inputs};
    return rt_outputs_from_host(g, output_data, &run, outputs, err);
}

lector_status rt_outputs_from_host(const rt_graph *g, const void *(*src)(void *ctx, int i), void *ctx,
                                   lector_tensor *outputs, lector_error *err)
{
    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i];
        outputs[i] = rt_value_tensor(&g->values[v]);
        size_t nb = rt_value_nbytes(&g->values[v]);
        outputs[i].data = lector__aligned_alloc(nb ? nb : 1);
        if (!outputs[i].data) {
            for (int j = 0; j < i; j++) lector__free(outputs[j].data);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory for outputs", g->name);
        }
        memcpy(outputs[i].data, src(ctx, i), nb);
    }
    return LECTOR_OK;
}
