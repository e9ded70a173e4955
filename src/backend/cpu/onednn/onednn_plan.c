/*
 * onednn_plan.c - a plan's compilation: one primitive per node or fused
 * chain, created once per plan (compile_variant: each node's builder chosen
 * by its operator, the reference kernel where none applies), the threads of
 * each node's primitives, the single-thread variant a run on a busy machine
 * uses, LECTOR_ONEDNN_DUMP, and a plan's release.
 */
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "util/testctl.h"
#include "util/util.h"

/* Threads for a node's primitives. A parallel region costs a few
 * microseconds on a quiet machine and a whole time slice when a worker is
 * preempted on a busy one; ops with less work than ~2 MFLOP (or 256 K
 * elements moved) run on the calling thread only. oneDNN sizes some kernels
 * (brgemm convolutions) by omp_get_max_threads() at creation, so the count
 * is set before the primitive is created and again before it runs. */
static int node_threads(dn_cc *c, const rt_node *n)
{
    int T = c->threads;
    if (T == 1 || n->n_out < 1 || n->out[0] < 0) return T;
    const rt_graph *g = c->g;
    double out = (double)rt_value_numel(&g->values[n->out[0]]), work = out * 8;
    if ((n->op == RT_OP_Conv || n->op == RT_OP_ConvTranspose) && n->n_in > 1 && g->values[n->in[1]].ndim == 4) {
        const int64_t *wd = g->values[n->in[1]].dims;
        double G = (double)rt_attr_int(n, "group", 1);
        work = n->op == RT_OP_Conv ? 2.0 * out * (double)(wd[1] * wd[2] * wd[3]) : 2.0 * out * (double)wd[0] / G;
    } else if (n->op == RT_OP_MatMul && n->n_in > 0 && g->values[n->in[0]].ndim > 0) {
        const rt_value *a = &g->values[n->in[0]];
        work = 2.0 * out * (double)a->dims[a->ndim - 1];
    }
    return work < 2e6 ? 1 : T;
}

static void set_threads(dn_cc *c, int nthr)
{
    c->nthr = nthr;
    omp_set_num_threads(nthr);
}

/* ---- plan compile / free ------------------------------------------------------- */

static void dn_destroy(dn_plan *dp)
{
    if (!dp) return;
    dn_destroy(dp->single);
    for (int i = 0; i < dp->n_pool; i++) {
        dn_ctx *x = dp->pool[i];
        for (int k = 0; k < dp->n_mem; k++)
            if (x->mem[k]) dnnl_memory_destroy(x->mem[k]);
        if (x->stream) dnnl_stream_destroy(x->stream);
        lector__free(x->mem);
        lector__free(x->ptr);
        lector__free(x);
    }
    for (int i = 0; i < dp->n_steps; i++) {
        if (dp->steps[i].kern)
            dn_kernel_release(dp->caches, dp->steps[i].kern);
        else if (dp->steps[i].prim)
            dnnl_primitive_destroy(dp->steps[i].prim);
        lector__free(dp->steps[i].md);
    }
    for (int i = 0; i < dp->n_owned; i++) lector__free(dp->owned[i]);
    pthread_mutex_destroy(&dp->lock);
    lector__free(dp->steps);
    lector__free(dp->slots);
    lector__free(dp->owned);
    lector__free(dp->vslot);
    lector__free(dp->vplain);
    lector__free(dp->valt);
    lector__free(dp->out_slot);
    lector__free(dp);
}

void dn_plan_free(rt_backend *be, rt_plan *p)
{
    if (p->generic) {
        dn_generic_free(be, p);
        return;
    }
    dn_destroy(p->be_plan);
    p->be_plan = NULL;
}

static const char *op_name(int op) { return rt_op_table[op].name; }

/* LECTOR_ONEDNN_DUMP=1: the steps and slots of each compiled plan, on stderr. */
static void dump_plan(dn_cc *c)
{
    dn_plan *dp = c->dp;
    for (int i = 0; i < dp->n_steps; i++) {
        dn_step *s = &dp->steps[i];
        const char *impl = "";
        if (s->kind == DN_STEP_PRIM) {
            const_dnnl_primitive_desc_t pd;
            dnnl_primitive_get_primitive_desc(s->prim, &pd);
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        }
        fprintf(stderr, "step %3d %s %-28s", i,
                s->kind == DN_STEP_PRIM  ? "prim"
                : s->kind == DN_STEP_REF ? "ref "
                                         : "act ",
                s->kind == DN_STEP_PRIM  ? impl
                : s->kind == DN_STEP_REF ? c->g->nodes[s->node].name
                                         : "");
        int n = s->kind == DN_STEP_PRIM ? s->n_args : s->n_in + s->n_out;
        for (int a = 0; a < n; a++) {
            int sl = s->kind == DN_STEP_PRIM ? s->slot[a] : a < s->n_in ? s->in_slot[a] : s->out_slot[a - s->n_in];
            if (sl < 0) continue;
            dn_slot *x = &dp->slots[sl];
            fprintf(stderr, " [%d k%d v%s off%zu sz%zu %d-%d]", sl, x->kind,
                    x->value >= 0 ? c->g->values[x->value].name : "-", x->off, x->size, x->first, x->last);
        }
        fprintf(stderr, "\n");
    }
}

/* Compiles the steps of plan p for `threads` OpenMP threads into *out. */
static lector_status compile_variant(rt_backend *be, rt_plan *p, int threads, dn_plan **out, lector_error *err)
{
    dn_backend *db = be->ctx;
    rt_graph *g = p->g;
    *out = NULL;
    dn_plan *dp = lector__calloc(1, sizeof *dp);
    if (!dp) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&dp->lock, NULL);
    dp->threads = threads;
    dp->caches = &db->caches;
    size_t nv = (size_t)g->n_values + 1;
    dp->vslot = lector__malloc(sizeof(int) * nv);
    dp->vplain = lector__malloc(sizeof(int) * nv);
    dp->valt = lector__malloc(sizeof(int) * nv);
    dp->out_slot = lector__malloc(sizeof(int) * ((size_t)g->n_outputs + 1));
    dn_cc c = {be, db->eng, p, g, dp, NULL, NULL, NULL, 0, 1, threads, &db->caches, NULL, 0, 0};
    int omp_before = omp_get_max_threads();
    c.ncons = lector__calloc(nv, sizeof(int));
    c.cons = lector__malloc(sizeof(int) * 2 * nv);
    c.done = lector__calloc((size_t)g->n_nodes + 1, 1);
    if (!dp->vslot || !dp->vplain || !dp->valt || !dp->out_slot || !c.ncons || !c.cons || !c.done) {
        lector__free(c.ncons);
        lector__free(c.cons);
        lector__free(c.done);
        dn_destroy(dp);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t v = 0; v < nv; v++) {
        dp->vslot[v] = dp->vplain[v] = dp->valt[v] = -1;
        c.cons[2 * v] = c.cons[2 * v + 1] = -1;
    }
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0) continue;
            int dup = 0;
            for (int j = 0; j < k; j++) dup |= n->in[j] == v;
            if (dup) continue;
            if (c.ncons[v] < 2) c.cons[2 * v + c.ncons[v]] = p->order[s];
            c.ncons[v]++;
        }
    }
    for (int i = 0; i < g->n_outputs; i++) c.ncons[g->outputs[i]] += 100;
    dp->scratch_slot = dn_slot_new(&c, DN_SLOT_ARENA, -1, NULL, 0);
    lector_status st = LECTOR_OK;
    for (int s = 0; s < p->n_order && !st; s++) {
        int ni = p->order[s];
        if (c.done[ni]) continue;
        const rt_node *n = &g->nodes[ni];
        int r = -1;
        const char *off = lector__tc_str(LECTOR__TC_ONEDNN_OFF); /* debugging: ops left to the reference */
        int skip = 0;
        if (off) {
            const char *q = strstr(off, op_name(n->op));
            size_t ln = strlen(op_name(n->op));
            skip = q && (q == off || q[-1] == ',') && (q[ln] == 0 || q[ln] == ',');
        }
        set_threads(&c, node_threads(&c, n));
        if (!skip) switch (n->op) {
            case RT_OP_Conv: r = dn_build_conv(&c, ni, 0); break;
            case RT_OP_ConvTranspose:
                r = dn_build_deconv_d2s(&c, ni);
                if (r && !c.fail) r = dn_build_conv(&c, ni, 1);
                break;
            case RT_OP_MaxPool:
            case RT_OP_AveragePool: r = dn_build_pool(&c, ni); break;
            case RT_OP_GlobalAveragePool:
                r = dn_build_gap(&c, ni);
                if (r && !c.fail) r = dn_build_pool(&c, ni);
                break;
            case RT_OP_Add:
            case RT_OP_Sub:
            case RT_OP_Mul:
            case RT_OP_Div: r = dn_build_binary(&c, ni); break;
            case RT_OP_Relu:
            case RT_OP_LeakyRelu:
            case RT_OP_Sigmoid:
            case RT_OP_Tanh:
            case RT_OP_Exp:
            case RT_OP_Abs:
            case RT_OP_Sqrt:
            case RT_OP_Log:
            case RT_OP_Neg:
            case RT_OP_HardSwish:
            case RT_OP_HardSigmoid:
            case RT_OP_Clip: r = dn_build_eltwise(&c, ni); break;
            case RT_OP_Concat: r = dn_build_concat(&c, ni); break;
            case RT_OP_Resize: r = dn_build_resize(&c, ni); break;
            case RT_OP_MatMul: r = dn_build_matmul(&c, ni); break;
            case RT_OP_Softmax: r = dn_build_softmax(&c, ni); break;
            case RT_OP_LayerNormalization: r = dn_build_layernorm(&c, ni); break;
            case RT_OP_Transpose: r = dn_build_transpose(&c, ni); break;
            default: break;
            }
        if (c.fail) {
            st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory compiling the plan", g->name);
            break;
        }
        if (r) {
            /* a builder that failed after adding conversion steps leaves them: harmless */
            static const int interesting[] = {RT_OP_Conv, RT_OP_ConvTranspose, RT_OP_MatMul, RT_OP_Add,
                                              RT_OP_Mul,  RT_OP_Softmax,       RT_OP_Resize, RT_OP_Concat};
            for (size_t k = 0; k < sizeof interesting / sizeof *interesting; k++)
                if (n->op == interesting[k])
                    lector__log(LECTOR_LOG_DEBUG, "onednn: node %s (%s) runs on the reference kernel", n->name,
                                op_name(n->op));
            if (dn_build_ref(&c, ni)) {
                st = lector__error(err, c.fail ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                                   "%s: cannot prepare node %s (%s)", g->name, n->name, op_name(n->op));
            }
        }
    }
    for (int i = 0; i < g->n_outputs && !st; i++) {
        int v = g->outputs[i];
        set_threads(&c, rt_value_numel(&g->values[v]) < 256 * 1024 ? 1 : threads);
        dp->out_slot[i] = dn_need_plain(&c, v);
        if (dp->out_slot[i] < 0)
            st = lector__error(err, LECTOR_ERR_BACKEND, "%s: output %s has no layout", g->name, g->values[v].name);
    }
    if (!st && dn_mem_plan(&c)) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    if (!st) {
        dnnl_memory_desc_t smd;
        dnnl_dims_t d = {(dnnl_dim_t)(dp->scratch_size ? dp->scratch_size : 1)};
        dnnl_memory_desc_init_by_tag(&smd, 1, d, dnnl_u8, dnnl_a);
        int base = 0;
        for (int i = 0; i < dp->n_steps; i++) {
            dp->steps[i].mem_base = base;
            base += dp->steps[i].n_args;
        }
        dp->n_mem = base;
    }
    lector__free(c.ncons);
    lector__free(c.cons);
    lector__free(c.done);
    while (c.n_handed > 0) dn_pd_release(&c, c.handed[c.n_handed - 1].pd); /* builders give back what they take */
    lector__free(c.handed);
    omp_set_num_threads(omp_before);
    if (st) {
        dn_destroy(dp);
        return st;
    }
    {
        int np = 0, nr = 0;
        for (int i = 0; i < dp->n_steps; i++)
            np += dp->steps[i].kind == DN_STEP_PRIM, nr += dp->steps[i].kind == DN_STEP_REF;
        if (lector__tc_str(LECTOR__TC_ONEDNN_DUMP)) dump_plan(&c);
        lector__log(LECTOR_LOG_DEBUG,
                    "onednn: %s: %d nodes -> %d primitives, %d reference kernels, arena %zu bytes, %d threads", g->name,
                    p->n_order, np, nr, dp->arena_size, threads);
    }
    *out = dp;
    return LECTOR_OK;
}

lector_status dn_plan_compile(rt_backend *be, rt_plan *p, lector_error *err)
{
    dn_plan *dp;
    lector_status st = compile_variant(be, p, be->threads > 0 ? be->threads : 1, &dp, err);
    if (st) return st;
    p->be_plan = dp;
    p->arena_size = dp->arena_size;
    dn_generic_prepare(be, p);
    return LECTOR_OK;
}

/* ---- load-adaptive threads ---------------------------------------------------------
 * oneDNN splits every primitive statically over its OpenMP threads, so on an
 * oversubscribed machine each parallel region waits for the slowest,
 * preempted worker (a time slice per region, hundreds per run): 2 threads
 * can be much slower than 1 (docs/BENCHMARKS.md). When the other load on the machine (the 1-minute
 * load average minus our own threads, sampled every 0.5 s) leaves fewer free
 * cores than T - 0.5 (T <= 2) or T / 2 (T > 2), a run uses a single-thread
 * variant of the plan, compiled on first need. `threads` stays the upper
 * bound. LECTOR_ADAPTIVE_THREADS=0 turns this off ("always": always one). */

int dn_effective_threads(int T)
{
    static _Atomic double last_ms;
    static _Atomic int last_single;
    if (T <= 1) return T;
    /* "0": off, "always": the single-thread variant always (tests) */
    const char *e = lector__tc_str(LECTOR__TC_ADAPTIVE_THREADS);
    int enabled = e && !strcmp(e, "0") ? 0 : e && !strcmp(e, "always") ? 2 : 1;
    if (enabled != 1) return enabled ? 1 : T;
    double now = lector__now_ms();
    if (now - last_ms < 500) return last_single ? 1 : T;
    last_ms = now;
    double load = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1) load = 0;
        fclose(f);
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set; /* the cores this process may use (taskset, cgroups' cpusets) */
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < ncpu)
        ncpu = CPU_COUNT(&set);
    if (ncpu < 1) ncpu = 1;
    double others = load - T, free_cores = (double)ncpu - others;
    int single = free_cores < (T <= 2 ? T - 0.5 : T / 2.0);
    last_single = single;
    return single ? 1 : T;
}

/* The plan variant for `threads` (the compiled one, or the single-thread one). */
dn_plan *dn_variant(rt_backend *be, const rt_plan *p, int threads)
{
    dn_plan *dp = p->be_plan;
    if (threads == dp->threads) return dp;
    pthread_mutex_lock(&dp->lock);
    if (!dp->single && !dp->single_failed) {
        lector_error e = {0};
        if (compile_variant(be, (rt_plan *)p, 1, &dp->single, &e)) dp->single_failed = 1;
    }
    dn_plan *r = dp->single ? dp->single : dp;
    /* runs borrow arenas of the plan's size: the larger variant's from now on */
    if (r->arena_size > __atomic_load_n(&((rt_plan *)p)->arena_size, __ATOMIC_RELAXED))
        __atomic_store_n(&((rt_plan *)p)->arena_size, r->arena_size, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&dp->lock);
    return r;
}
