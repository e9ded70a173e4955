/*
 * onednn_exec.c - running a plan: the variant for the machine's load, a
 * context (stream and memory objects) borrowed from the plan's pool, the
 * steps in order (primitives, reference kernels, GlobalAveragePool,
 * activations), and the outputs copied out.
 */
#include <omp.h>
#include <string.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "util/util.h"

static void *slot_ptr(const dn_plan *dp, int s, void *arena, const lector_tensor *inputs)
{
    const dn_slot *sl = &dp->slots[s];
    switch (sl->kind) {
    case DN_SLOT_CONST: return sl->ptr;
    case DN_SLOT_INPUT: return inputs[sl->input].data;
    default: return (char *)arena + sl->off;
    }
}

typedef struct dn_run {
    const dn_plan *dp;
    void *arena;
    const lector_tensor *inputs;
} dn_run;

static const void *output_data(void *ctx, int i)
{
    const dn_run *r = ctx;
    return slot_ptr(r->dp, r->dp->out_slot[i], r->arena, r->inputs);
}

static dn_ctx *ctx_get(rt_backend *be, dn_plan *dp)
{
    dn_ctx *x = NULL;
    pthread_mutex_lock(&dp->lock);
    if (dp->n_pool) x = dp->pool[--dp->n_pool];
    pthread_mutex_unlock(&dp->lock);
    if (x) return x;
    dn_backend *db = be->ctx;
    x = lector__calloc(1, sizeof *x);
    if (!x) return NULL;
    x->mem = lector__calloc((size_t)dp->n_mem + 1, sizeof *x->mem);
    x->ptr = lector__calloc((size_t)dp->n_mem + 1, sizeof *x->ptr);
    if (!x->mem || !x->ptr || !dn_ok(dnnl_stream_create(&x->stream, db->eng, dnnl_stream_default_flags))) {
        lector__free(x->mem);
        lector__free(x->ptr);
        lector__free(x);
        return NULL;
    }
    return x;
}

static void ctx_put(dn_plan *dp, dn_ctx *x, int n_mem)
{
    pthread_mutex_lock(&dp->lock);
    if (dp->n_pool < DN_POOL) {
        dp->pool[dp->n_pool++] = x;
        x = NULL;
    }
    pthread_mutex_unlock(&dp->lock);
    if (!x) return;
    for (int k = 0; k < n_mem; k++)
        if (x->mem[k]) dnnl_memory_destroy(x->mem[k]);
    dnnl_stream_destroy(x->stream);
    lector__free(x->mem);
    lector__free(x->ptr);
    lector__free(x);
}

/* Mean over H*W of x [N,C,H,W] (nchw) or [N,H,W,C] (nhwc) into y [N,C]. */
static void gap_f64(const float *x, float *y, const int64_t *d, int nhwc, int threads)
{
    int64_t N = d[0], C = d[1], HW = d[2] * d[3];
    double inv = 1.0 / (double)HW;
    if (!nhwc) {
#pragma omp parallel for num_threads(threads) schedule(static) if (N * C * HW > 65536)
        for (int64_t nc = 0; nc < N * C; nc++) {
            const float *p = x + nc * HW;
            double s = 0;
            for (int64_t i = 0; i < HW; i++) s += p[i];
            y[nc] = (float)(s * inv);
        }
        return;
    }
    enum { CB = 64 };
    int64_t nb = (C + CB - 1) / CB;
#pragma omp parallel for num_threads(threads) schedule(static) if (N * C * HW > 65536)
    for (int64_t t = 0; t < N * nb; t++) {
        int64_t n = t / nb, c0 = (t % nb) * CB, cn = C - c0 < CB ? C - c0 : CB;
        double acc[CB] = {0};
        const float *p = x + n * HW * C + c0;
        for (int64_t i = 0; i < HW; i++, p += C)
            for (int64_t k = 0; k < cn; k++) acc[k] += p[k];
        for (int64_t k = 0; k < cn; k++) y[n * C + c0 + k] = (float)(acc[k] * inv);
    }
}

lector_status dn_plan_execute(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                              lector_tensor *outputs, lector_error *err)
{
    const rt_graph *g = p->g;
    dn_backend *db = be->ctx;
    dn_plan *dp = dn_variant(be, p, dn_effective_threads(((dn_plan *)p->be_plan)->threads));
    int threads = dp->threads, cur = threads;
    void *own_arena = NULL;
    if (dp->arena_size > rt_run_arena_size()) { /* the single-thread variant may need more, once */
        own_arena = arena = lector__aligned_alloc(dp->arena_size);
        if (!arena) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", g->name);
    }
    int omp_before = omp_get_max_threads();
    omp_set_num_threads(threads);
    dn_ctx *x = ctx_get(be, dp);
    if (!x) {
        lector__free(own_arena);
        omp_set_num_threads(omp_before);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", g->name);
    }
    rt_kernel_ctx kctx = {threads, err};
    lector_status st = LECTOR_OK;
    dnnl_exec_arg_t args[DN_MAX_ARGS];
    for (int i = 0; i < dp->n_steps && !st; i++) {
        const dn_step *s = &dp->steps[i];
        int want = s->kind == DN_STEP_PRIM ? s->nthr : threads;
        if (want != cur) {
            omp_set_num_threads(want);
            cur = want;
        }
        if (s->kind == DN_STEP_PRIM) {
            for (int a = 0; a < s->n_args; a++) {
                int k = s->mem_base + a;
                void *ptr = slot_ptr(dp, s->slot[a], arena, inputs);
                if (!x->mem[k]) {
                    if (!dn_ok(dnnl_memory_create(&x->mem[k], &s->md[a], db->eng, ptr))) {
                        x->mem[k] = NULL;
                        st = lector__error(err, LECTOR_ERR_BACKEND, "%s: oneDNN cannot create memory", g->name);
                        break;
                    }
                    x->ptr[k] = ptr;
                } else if (x->ptr[k] != ptr) {
                    dnnl_memory_set_data_handle_v2(x->mem[k], ptr, x->stream);
                    x->ptr[k] = ptr;
                }
                args[a].arg = s->arg[a];
                args[a].memory = x->mem[k];
            }
            if (st) break;
            if (!dn_ok(dnnl_primitive_execute(s->prim, x->stream, s->n_args, args)))
                st = lector__error(err, LECTOR_ERR_BACKEND, "%s: oneDNN primitive failed (step %d)", g->name, i);
        } else if (s->kind == DN_STEP_REF) {
            const rt_node *n = &g->nodes[s->node];
            lector_tensor in[16], out[8];
            for (int k = 0; k < s->n_in; k++) {
                if (s->in_slot[k] < 0) {
                    memset(&in[k], 0, sizeof in[k]);
                    continue;
                }
                in[k] = rt_value_tensor(&g->values[n->in[k]]);
                in[k].data = slot_ptr(dp, s->in_slot[k], arena, inputs);
            }
            for (int k = 0; k < s->n_out; k++) {
                if (s->out_slot[k] < 0) {
                    memset(&out[k], 0, sizeof out[k]);
                    continue;
                }
                out[k] = rt_value_tensor(&g->values[n->out[k]]);
                out[k].data = slot_ptr(dp, s->out_slot[k], arena, inputs);
            }
            dnnl_stream_wait(x->stream);
            st = p->kernels[s->node](n, in, out, &kctx);
            if (st && err && strncmp(err->message, g->name, strlen(g->name))) lector__error_prefix(err, "%s", g->name);
        } else if (s->kind == DN_STEP_GAP) {
            dnnl_stream_wait(x->stream);
            gap_f64(slot_ptr(dp, s->in_slot[0], arena, inputs), slot_ptr(dp, s->out_slot[0], arena, inputs), s->dims,
                    s->node, s->nthr);
        } else {
            dnnl_stream_wait(x->stream);
            const dn_slot *sl = &dp->slots[s->out_slot[0]];
            rt_apply_act(slot_ptr(dp, s->out_slot[0], arena, inputs), (int64_t)(sl->size / sizeof(float)), s->act,
                         s->alpha, s->beta);
        }
    }
    dnnl_stream_wait(x->stream);
    ctx_put(dp, x, dp->n_mem);
    omp_set_num_threads(omp_before);
    if (!st) {
        dn_run run = {dp, arena, inputs};
        st = rt_outputs_from_host(g, output_data, &run, outputs, err);
    }
    lector__free(own_arena);
    return st;
}
