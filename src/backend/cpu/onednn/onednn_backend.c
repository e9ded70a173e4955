/*
 * onednn_backend.c - the CPU backend on oneDNN 2.6 (C API): plan compile
 * (one primitive per node or fused chain, created once per plan), the
 * memory plan of blocked layouts, and the executor. See onednn.h.
 *
 * Fusion done here on top of the graph passes: after a Conv/ConvTranspose/
 * MatMul/binary/eltwise node, a chain of single-consumer followers becomes
 * post-ops of the one primitive: scalar Mul/Add/Sub/Div (linear),
 * activations, x*clip(x+3,0,6)/6 (hardswish, as paddle2onnx writes it), a
 * residual Add of a tensor of the same shape (binary post-op). Before the
 * first non-linearity, per-channel constant Mul/Add and BatchNormalization
 * are folded into the weights and bias instead.
 */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/onednn/onednn.h"
#include "rt/infer_util.h"
#include "util/testctl.h"
#include "util/util.h"

typedef struct dn_backend {
    dnnl_engine_t eng;
    dn_caches caches; /* kernels and converted constants shared by the model's plans */
} dn_backend;

/* ---- compile context ------------------------------------------------------ */

typedef struct dn_cc {
    rt_backend *be;
    dnnl_engine_t eng;
    rt_plan *p;
    rt_graph *g;
    dn_plan *dp;
    int *ncons;  /* live consumers per value (+1 for graph outputs) */
    int *cons;   /* first two consumers per value: cons[2v], cons[2v+1] */
    char *done;  /* per node: consumed by a fused chain */
    int fail;    /* out of memory / oneDNN failure while adding steps */
    int nthr;    /* threads of the primitives being created (see node_threads) */
    int threads; /* threads of the plan variant being compiled */
    dn_caches *caches;
    /* primitive descriptors handed out by the kernel cache during this
     * compile, with their entries (pd_release gives them back) */
    struct {
        dnnl_primitive_desc_t pd;
        dn_kernel *kern;
    } * handed;
    int n_handed, cap_handed;
} dn_cc;

static int ok(dnnl_status_t s) { return s == dnnl_success; }

static const dnnl_format_tag_t plain_tags[7] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};

static void md_make(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag)
{
    dnnl_dims_t d;
    if (nd <= 0) {
        nd = 1;
        d[0] = 1;
    } else {
        for (int i = 0; i < nd; i++) d[i] = dims[i];
    }
    if (tag == dnnl_format_tag_undef) tag = plain_tags[nd];
    dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, tag);
}

static void md_plain(dnnl_memory_desc_t *md, int nd, const int64_t *dims)
{
    md_make(md, nd, dims, dnnl_format_tag_undef);
}

static void md_any(dnnl_memory_desc_t *md, int nd, const int64_t *dims) { md_make(md, nd, dims, dnnl_format_tag_any); }

static int md_eq(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b) { return dnnl_memory_desc_equal(a, b) != 0; }

static int md_is_plain(const dnnl_memory_desc_t *md)
{
    dnnl_memory_desc_t p;
    int64_t d[DNNL_MAX_NDIMS];
    for (int i = 0; i < md->ndims; i++) d[i] = md->dims[i];
    md_plain(&p, md->ndims, d);
    return md_eq(md, &p);
}

static int is_f32(const rt_value *v) { return v->dtype == LECTOR_DTYPE_FLOAT32; }

static int same_dims(const rt_value *a, const rt_value *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* ---- slots and steps ------------------------------------------------------- */

static int slot_new(dn_cc *c, int kind, int value, const dnnl_memory_desc_t *md, size_t size)
{
    dn_plan *dp = c->dp;
    if (dp->n_slots == dp->cap_slots) {
        int cap = dp->cap_slots ? dp->cap_slots * 2 : 256;
        dn_slot *ns = lector__realloc(dp->slots, sizeof *ns * (size_t)cap);
        if (!ns) {
            c->fail = 1;
            return -1;
        }
        dp->slots = ns;
        dp->cap_slots = cap;
    }
    dn_slot *s = &dp->slots[dp->n_slots];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->value = value;
    if (md) {
        s->md = *md;
        s->size = dnnl_memory_desc_get_size(md);
    } else {
        s->size = size;
    }
    s->first = s->last = -1;
    return dp->n_slots++;
}

static dn_step *step_new(dn_cc *c, int kind)
{
    dn_plan *dp = c->dp;
    if (dp->n_steps == dp->cap_steps) {
        int cap = dp->cap_steps ? dp->cap_steps * 2 : 256;
        dn_step *ns = lector__realloc(dp->steps, sizeof *ns * (size_t)cap);
        if (!ns) {
            c->fail = 1;
            return NULL;
        }
        dp->steps = ns;
        dp->cap_steps = cap;
    }
    dn_step *s = &dp->steps[dp->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = -1;
    return s;
}

/* Keeps buffer p (lector__aligned_alloc'd) until the plan is freed. */
static int owned_keep(dn_cc *c, void *p)
{
    dn_plan *dp = c->dp;
    if (dp->n_owned == dp->cap_owned) {
        int cap = dp->cap_owned ? dp->cap_owned * 2 : 64;
        void **no = lector__realloc(dp->owned, sizeof *no * (size_t)cap);
        if (!no) return -1;
        dp->owned = no;
        dp->cap_owned = cap;
    }
    dp->owned[dp->n_owned++] = p;
    return 0;
}

static void key_threads(dn_cc *c, dn_key *k) { dn_key_add(k, &c->nthr, sizeof c->nthr); }

/* Hands out a cached primitive descriptor (remembered for add_prim and
 * pd_release); NULL when the key is not cached. */
static dnnl_primitive_desc_t handed(dn_cc *c, dn_kernel *e)
{
    if (!e) return NULL;
    if (c->n_handed == c->cap_handed) {
        int cap = c->cap_handed ? c->cap_handed * 2 : 16;
        void *nh = lector__realloc(c->handed, sizeof *c->handed * (size_t)cap);
        if (!nh) {
            dn_kernel_release(c->caches, e);
            c->fail = 1;
            return NULL;
        }
        c->handed = nh;
        c->cap_handed = cap;
    }
    c->handed[c->n_handed].pd = e->pd;
    c->handed[c->n_handed].kern = e;
    c->n_handed++;
    return e->pd;
}

/* A primitive descriptor for key k: the cached one, else made by
 * make(ctx, &pd) and cached. NULL when oneDNN refuses. */
static dnnl_primitive_desc_t pd_cached(dn_cc *c, dn_key *k, dnnl_status_t (*make)(void *, dnnl_primitive_desc_t *),
                                       void *ctx)
{
    key_threads(c, k);
    dn_kernel *e = dn_kernel_find(c->caches, k);
    if (!e) {
        dnnl_primitive_desc_t pd = NULL;
        if (!ok(make(ctx, &pd))) return NULL;
        if (k->fail) return pd; /* not keyable: this plan's own */
        e = dn_kernel_insert(c->caches, k, pd);
        if (!e) {
            c->fail = 1;
            return NULL;
        }
    }
    return handed(c, e);
}

/* Gives back a descriptor from pd_create/reorder_pd/concat_pd. */
static void pd_release(dn_cc *c, dnnl_primitive_desc_t pd)
{
    if (!pd) return;
    for (int i = c->n_handed - 1; i >= 0; i--)
        if (c->handed[i].pd == pd) {
            dn_kernel_release(c->caches, c->handed[i].kern);
            c->handed[i] = c->handed[--c->n_handed];
            return;
        }
    dnnl_primitive_desc_destroy(pd); /* not handed out by the cache: this plan's own */
}

/* The primitive of a descriptor from pd_cached (its kernel referenced into
 * *kern), or a new one for an uncached descriptor (*kern NULL). */
static dnnl_primitive_t pd_primitive(dn_cc *c, dnnl_primitive_desc_t pd, dn_kernel **kern)
{
    *kern = NULL;
    for (int i = c->n_handed - 1; i >= 0; i--)
        if (c->handed[i].pd == pd) {
            dnnl_primitive_t pr = dn_kernel_prim(c->caches, c->handed[i].kern);
            if (!pr) return NULL;
            dn_kernel_ref(c->caches, c->handed[i].kern);
            *kern = c->handed[i].kern;
            return pr;
        }
    dnnl_primitive_t pr;
    if (!ok(dnnl_primitive_create(&pr, pd))) return NULL;
    dn_kernels_count(c->caches);
    return pr;
}

typedef struct reorder_args {
    const dnnl_memory_desc_t *s, *d;
    dnnl_engine_t eng;
    const_dnnl_primitive_attr_t at;
} reorder_args;

static dnnl_status_t make_reorder(void *ctx, dnnl_primitive_desc_t *pd)
{
    reorder_args *a = ctx;
    return dnnl_reorder_primitive_desc_create(pd, a->s, a->eng, a->d, a->eng, a->at);
}

static dnnl_status_t reorder_pd(dn_cc *c, dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *smd,
                                const dnnl_memory_desc_t *dmd, const_dnnl_primitive_attr_t at)
{
    dn_key k;
    dn_key_init(&k, "reorder");
    dn_key_add(&k, smd, sizeof *smd);
    dn_key_add(&k, dmd, sizeof *dmd);
    dn_key_attr(&k, at);
    reorder_args a = {smd, dmd, c->eng, at};
    *pd = pd_cached(c, &k, make_reorder, &a);
    dn_key_free(&k);
    return *pd ? dnnl_success : dnnl_runtime_error;
}

typedef struct concat_args {
    const dnnl_memory_desc_t *d, *s;
    int n, axis;
    dnnl_engine_t eng;
    const_dnnl_primitive_attr_t at;
} concat_args;

static dnnl_status_t make_concat(void *ctx, dnnl_primitive_desc_t *pd)
{
    concat_args *a = ctx;
    return dnnl_concat_primitive_desc_create(pd, a->d, a->n, a->axis, a->s, a->at, a->eng);
}

static dnnl_status_t concat_pd(dn_cc *c, dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *dmd, int n, int axis,
                               const dnnl_memory_desc_t *smd, const_dnnl_primitive_attr_t at)
{
    dn_key k;
    dn_key_init(&k, "concat");
    dn_key_add(&k, dmd, sizeof *dmd);
    dn_key_add(&k, &n, sizeof n);
    dn_key_add(&k, &axis, sizeof axis);
    dn_key_add(&k, smd, sizeof *smd * (size_t)n);
    dn_key_attr(&k, at);
    concat_args a = {dmd, smd, n, axis, c->eng, at};
    *pd = pd_cached(c, &k, make_concat, &a);
    dn_key_free(&k);
    return *pd ? dnnl_success : dnnl_runtime_error;
}

/* Runs a reorder now (compile time, constants). */
static int reorder_now(dn_cc *c, const dnnl_memory_desc_t *smd, void *src, const dnnl_memory_desc_t *dmd, void *dst)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t pr = NULL;
    dn_kernel *kern = NULL;
    dnnl_memory_t ms = NULL, md = NULL;
    dnnl_stream_t st = NULL;
    int r = -1;
    if (ok(reorder_pd(c, &pd, smd, dmd, NULL)) && (pr = pd_primitive(c, pd, &kern)) &&
        ok(dnnl_memory_create(&ms, smd, c->eng, src)) && ok(dnnl_memory_create(&md, dmd, c->eng, dst)) &&
        ok(dnnl_stream_create(&st, c->eng, dnnl_stream_default_flags))) {
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
        if (ok(dnnl_primitive_execute(pr, st, 2, a)) && ok(dnnl_stream_wait(st))) r = 0;
    }
    if (st) dnnl_stream_destroy(st);
    if (ms) dnnl_memory_destroy(ms);
    if (md) dnnl_memory_destroy(md);
    if (kern)
        dn_kernel_release(c->caches, kern);
    else if (pr)
        dnnl_primitive_destroy(pr);
    pd_release(c, pd);
    return r;
}

/* Key of a constant's bytes: its address when the model's base graph owns
 * it (stable for the model's life, shared by every plan), else the bytes
 * themselves (a value folded for this plan only, freed with it). */
static void key_const(dn_key *k, const rt_value *v)
{
    int by_address = !v->owns_data;
    dn_key_add(k, &by_address, sizeof by_address);
    if (by_address)
        dn_key_add(k, &v->data, sizeof v->data);
    else
        dn_key_add(k, v->data, rt_value_nbytes(v));
}

/* Primary slot of a value (constants and graph inputs get one lazily). */
static int vslot(dn_cc *c, int v)
{
    dn_plan *dp = c->dp;
    if (dp->vslot[v] >= 0) return dp->vslot[v];
    const rt_value *val = &c->g->values[v];
    dnnl_memory_desc_t md;
    int f = is_f32(val);
    if (f) md_plain(&md, val->ndim, val->dims);
    int s;
    if (val->data) {
        s = slot_new(c, DN_SLOT_CONST, v, f ? &md : NULL, rt_value_nbytes(val));
        if (s >= 0) c->dp->slots[s].ptr = val->data;
    } else {
        int idx = -1;
        for (int i = 0; i < c->g->n_inputs; i++)
            if (c->g->inputs[i] == v) idx = i;
        if (idx < 0) return -1; /* not produced yet: a bug */
        s = slot_new(c, DN_SLOT_INPUT, v, f ? &md : NULL, rt_value_nbytes(val));
        if (s >= 0) c->dp->slots[s].input = idx;
    }
    if (s < 0) return -1;
    dp->vslot[v] = s;
    dp->vplain[v] = s;
    return s;
}

static dnnl_primitive_attr_t attr_new(void)
{
    dnnl_primitive_attr_t a = NULL;
    if (!ok(dnnl_primitive_attr_create(&a))) return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
    return a;
}

/* Appends a primitive step; args[i] reads/writes slot slots[i] with md mds[i]
 * (NULL = the slot's own md). Takes care of the scratchpad. */
static int add_prim(dn_cc *c, dnnl_primitive_desc_t pd, int n, const int *args, const int *slots,
                    const dnnl_memory_desc_t *const *mds)
{
    dn_kernel *kern;
    dnnl_primitive_t pr = pd_primitive(c, pd, &kern);
    if (!pr) return -1;
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sps = sp ? dnnl_memory_desc_get_size(sp) : 0;
    dn_step *s = step_new(c, DN_STEP_PRIM);
    dnnl_memory_desc_t *own = lector__malloc(sizeof *own * (size_t)(n + 1));
    if (!s || !own) {
        lector__free(own);
        if (kern)
            dn_kernel_release(c->caches, kern);
        else
            dnnl_primitive_destroy(pr);
        c->fail = 1;
        return -1;
    }
    s->prim = pr;
    s->kern = kern;
    s->nthr = c->nthr;
    for (int i = 0; i < n; i++) {
        s->arg[i] = args[i];
        s->slot[i] = slots[i];
        own[i] = mds && mds[i] ? *mds[i] : c->dp->slots[slots[i]].md;
    }
    s->n_args = n;
    if (sps) {
        if (sps > c->dp->scratch_size) c->dp->scratch_size = sps;
        s->arg[n] = DNNL_ARG_SCRATCHPAD;
        s->slot[n] = c->dp->scratch_slot;
        own[n] = *sp; /* the shared scratchpad is at least this big */
        s->n_args = n + 1;
    }
    s->md = own;
    return 0;
}

/* A slot of value v in layout `want`, adding a reorder step if needed. */
static int need_md(dn_cc *c, int v, const dnnl_memory_desc_t *want)
{
    dn_plan *dp = c->dp;
    int s = vslot(c, v);
    if (s < 0) return -1;
    if (!is_f32(&c->g->values[v])) return s; /* non-f32 values are always plain */
    if (md_eq(&dp->slots[s].md, want)) return s;
    if (dp->vplain[v] >= 0 && md_eq(&dp->slots[dp->vplain[v]].md, want)) return dp->vplain[v];
    if (dp->valt[v] >= 0 && md_eq(&dp->slots[dp->valt[v]].md, want)) return dp->valt[v];
    int t;
    if (dp->slots[s].kind == DN_SLOT_CONST) {
        dn_key k;
        dn_key_init(&k, "const-reorder");
        if (dp->slots[s].value >= 0 && c->g->values[dp->slots[s].value].data == dp->slots[s].ptr)
            key_const(&k, &c->g->values[dp->slots[s].value]);
        else
            k.fail = 1; /* a buffer converted for this plan: not shared */
        dn_key_add(&k, &dp->slots[s].md, sizeof dp->slots[s].md);
        dn_key_add(&k, want, sizeof *want);
        const dn_const *cv = dn_const_find(c->caches, &k);
        void *buf = cv ? cv->data[0] : NULL;
        if (!buf) {
            buf = lector__aligned_alloc(dnnl_memory_desc_get_size(want));
            if (!buf || reorder_now(c, &dp->slots[s].md, dp->slots[s].ptr, want, buf)) {
                lector__free(buf);
                dn_key_free(&k);
                return -1;
            }
            if (k.fail) { /* kept by the plan */
                if (owned_keep(c, buf)) {
                    lector__free(buf);
                    dn_key_free(&k);
                    return -1;
                }
            } else if (!(cv = dn_const_insert(c->caches, &k, buf, NULL))) {
                dn_key_free(&k);
                return -1;
            } else {
                buf = cv->data[0];
            }
        }
        dn_key_free(&k);
        t = slot_new(c, DN_SLOT_CONST, v, want, 0);
        if (t < 0) return -1;
        dp->slots[t].ptr = buf;
    } else {
        dnnl_primitive_desc_t pd;
        dnnl_primitive_attr_t at = attr_new();
        if (!ok(reorder_pd(c, &pd, &dp->slots[s].md, want, at))) {
            dnnl_primitive_attr_destroy(at);
            return -1;
        }
        dnnl_primitive_attr_destroy(at);
        t = slot_new(c, DN_SLOT_ARENA, v, want, 0);
        int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, sl[2] = {s, t};
        int r = t < 0 ? -1 : add_prim(c, pd, 2, args, sl, NULL);
        pd_release(c, pd);
        if (r) return -1;
    }
    if (md_is_plain(want))
        dp->vplain[v] = t;
    else
        dp->valt[v] = t;
    return t;
}

static int need_plain(dn_cc *c, int v)
{
    const rt_value *val = &c->g->values[v];
    if (!is_f32(val)) return vslot(c, v);
    if (c->dp->vplain[v] >= 0) return c->dp->vplain[v];
    dnnl_memory_desc_t md;
    md_plain(&md, val->ndim, val->dims);
    return need_md(c, v, &md);
}

/* New arena slot for the value v (its primary slot) in layout md. */
static int out_slot(dn_cc *c, int v, const dnnl_memory_desc_t *md)
{
    int s = slot_new(c, DN_SLOT_ARENA, v, md, rt_value_nbytes(&c->g->values[v]));
    if (s < 0) return -1;
    c->dp->vslot[v] = s;
    if (!md || md_is_plain(md)) c->dp->vplain[v] = s;
    return s;
}

/* ---- fused chains ---------------------------------------------------------- */

enum { PO_ELT, PO_BIN };

typedef struct po_ent {
    int kind;
    dnnl_alg_kind_t alg;
    float a, b;
    int value; /* PO_BIN: the other operand */
} po_ent;

typedef struct chain {
    int n_po;
    po_ent po[24];
    int end; /* value the primitive finally writes */
    int consumed[48];
    int n_consumed;
    int C, axis; /* per-channel folding (C > 0: allowed) */
    float *scale, *shift;
    int folded; /* scale/shift differ from identity */
    int nonlin;
    rt_act tail_act; /* an activation no post-op can express: own step */
    float tail_a, tail_b;
} chain;

/* Appends an eltwise post-op. oneDNN 2.6's JIT kernels give every eltwise
 * post-op of one algorithm the parameters of the first one (two linear
 * post-ops (2,0) and (1,1) both compute 2x): consecutive linear ops are
 * composed into one, and a second op of an algorithm already present with
 * other parameters ends the chain (-1). */
static int po_elt(chain *ch, dnnl_alg_kind_t alg, float a, float b)
{
    if (ch->n_po > 0 && alg == dnnl_eltwise_linear) {
        int l = ch->n_po - 1;
        if (ch->po[l].kind == PO_ELT && ch->po[l].alg == dnnl_eltwise_linear) {
            float a1 = ch->po[l].a, b1 = ch->po[l].b;
            ch->po[l].a = a * a1;
            ch->po[l].b = a * b1 + b;
            return 0;
        }
    }
    for (int i = 0; i < ch->n_po; i++)
        if (ch->po[i].kind == PO_ELT && ch->po[i].alg == alg && (ch->po[i].a != a || ch->po[i].b != b)) return -1;
    if (ch->n_po >= 20) return -1;
    ch->po[ch->n_po].kind = PO_ELT;
    ch->po[ch->n_po].alg = alg;
    ch->po[ch->n_po].a = a;
    ch->po[ch->n_po].b = b;
    ch->n_po++;
    return 0;
}

/* Activation as post-ops; -1 (chain unchanged) if it cannot be expressed. */
static int po_act(chain *ch, rt_act act, float a, float b)
{
    int r = 0, n0 = ch->n_po;
    po_ent save[24];
    memcpy(save, ch->po, sizeof save);
    switch (act) {
    case RT_ACT_NONE: return 0;
    case RT_ACT_RELU: r = po_elt(ch, dnnl_eltwise_relu, 0, 0); break;
    case RT_ACT_SIGMOID: r = po_elt(ch, dnnl_eltwise_logistic, 0, 0); break;
    case RT_ACT_SWISH: r = po_elt(ch, dnnl_eltwise_swish, 1.f, 0); break;
    case RT_ACT_HARDSIGMOID:
        r = po_elt(ch, dnnl_eltwise_linear, a, b);
        if (!r) r = po_elt(ch, dnnl_eltwise_clip, 0.f, 1.f);
        break;
    case RT_ACT_HARDSWISH:
        /* 2.6's hardswish is x*relu6(x+3)/6: alpha=1/6, beta=1/2 only */
        if (fabsf(a - 1.f / 6.f) > 1e-6f || fabsf(b - 0.5f) > 1e-6f) return -1;
        r = po_elt(ch, dnnl_eltwise_hardswish, 0, 0);
        break;
    case RT_ACT_CLIP: r = po_elt(ch, dnnl_eltwise_clip, isinf(a) ? -FLT_MAX : a, isinf(b) ? FLT_MAX : b); break;
    default: return -1;
    }
    if (r) {
        ch->n_po = n0;
        memcpy(ch->po, save, sizeof save);
        return -1;
    }
    ch->nonlin = 1;
    return 0;
}

/* Scalar float constant value v -> *s. */
static int const_scalar(const rt_graph *g, int v, float *s)
{
    if (v < 0) return 0;
    const rt_value *val = &g->values[v];
    if (!val->data || !is_f32(val) || rt_value_numel(val) != 1) return 0;
    *s = *(const float *)val->data;
    return 1;
}

/* Constant with C elements along `axis` of a rank-r output, 1 elsewhere. */
static const float *const_per_channel(const rt_graph *g, int v, int r, int axis, int C)
{
    if (v < 0 || C <= 0) return NULL;
    const rt_value *val = &g->values[v];
    if (!val->data || !is_f32(val) || rt_value_numel(val) != C || val->ndim > r) return NULL;
    for (int i = 0; i < val->ndim; i++) {
        int oa = r - val->ndim + i;
        if (val->dims[i] != 1 && oa != axis) return NULL;
    }
    return val->data;
}

static int cons_other(const rt_node *n, int v) { return n->in[0] == v ? n->in[1] : n->in[0]; }

/* Is node c usable as a link of a chain reading value cur? */
static int link_ok(dn_cc *c, const rt_node *n, int cur)
{
    if (n->n_out < 1 || n->out[0] < 0) return 0;
    const rt_value *o = &c->g->values[n->out[0]];
    return is_f32(o) && same_dims(o, &c->g->values[cur]);
}

/* Folds y' = m[k]*y + a[k] (per channel, or the same for all when pc == 0). */
static void fold_affine(chain *ch, const float *m, const float *a, int pc)
{
    for (int k = 0; k < ch->C; k++) {
        float mm = m[pc ? k : 0], aa = a[pc ? k : 0];
        ch->scale[k] *= mm;
        ch->shift[k] = ch->shift[k] * mm + aa;
    }
    ch->folded = 1;
}

/* Walks the followers of node `ni` (already started: ch->end = its output).
 * allow_bin: residual Adds may become binary post-ops. Each link is tried on
 * a copy of the post-op list and committed only when it and its own fused
 * activation are both expressible. */
static void chain_walk(dn_cc *c, int ni, chain *ch, int allow_bin)
{
    rt_graph *g = c->g;
    int nofuse = lector__tc_str(LECTOR__TC_ONEDNN_NOFUSE) != NULL;
    const rt_node *p = &g->nodes[ni];
    int cur = p->out[0];
    ch->end = cur;
    if (p->act != RT_ACT_NONE && po_act(ch, p->act, p->act_alpha, p->act_beta)) {
        ch->tail_act = p->act;
        ch->tail_a = p->act_alpha;
        ch->tail_b = p->act_beta;
        return;
    }
    if (nofuse) return;
    int r = g->values[cur].ndim;
    for (int guard = 0; guard < 16; guard++) {
        if (g->values[cur].is_output || ch->n_consumed > 40 || ch->n_po > 16) return;
        int nc = c->ncons[cur];
        int nofold = lector__tc_str(LECTOR__TC_ONEDNN_NOFOLD) != NULL;
        int foldable = ch->C > 0 && !ch->nonlin && ch->n_po == 0 && !nofold;
        chain t = *ch; /* tentative post-op list */
        float m1 = 1.f, a1 = 0.f;
        const float *pcm = NULL; /* per-channel constant to fold */
        int fold = 0, pc_op = 0, next, add[4], n_add = 0;
        const float *bn[4] = {0};
        float bn_eps = 0;
        if (nc == 1) {
            int ci = c->cons[2 * cur];
            const rt_node *n = &g->nodes[ci];
            if (!link_ok(c, n, cur)) return;
            int op = n->op;
            float s;
            if (op == RT_OP_Add || op == RT_OP_Sub || op == RT_OP_Mul || op == RT_OP_Div) {
                if (n->n_in != 2 || n->in[0] == n->in[1]) return;
                int o = cons_other(n, cur);
                int first = n->in[0] == cur;
                const float *pc;
                if (const_scalar(g, o, &s)) {
                    if (op == RT_OP_Div && (!first || s == 0.f)) return;
                    if (op == RT_OP_Mul)
                        m1 = s;
                    else if (op == RT_OP_Add)
                        a1 = s;
                    else if (op == RT_OP_Sub) {
                        m1 = first ? 1.f : -1.f;
                        a1 = first ? -s : s;
                    } else
                        m1 = 1.f / s;
                    if (foldable)
                        fold = 1;
                    else if (po_elt(&t, dnnl_eltwise_linear, m1, a1))
                        return;
                } else if (foldable && (pc = const_per_channel(g, o, r, ch->axis, ch->C))) {
                    if ((op == RT_OP_Sub || op == RT_OP_Div) && !first) return;
                    if (op == RT_OP_Div)
                        for (int k = 0; k < ch->C; k++)
                            if (pc[k] == 0.f) return;
                    pcm = pc;
                    pc_op = op;
                } else if (allow_bin && op == RT_OP_Add && o >= 0 && !g->values[o].data && is_f32(&g->values[o]) &&
                           same_dims(&g->values[o], &g->values[cur]) && c->dp->vslot[o] >= 0 && t.n_po < 16) {
                    t.po[t.n_po].kind = PO_BIN;
                    t.po[t.n_po].value = o;
                    t.n_po++;
                } else {
                    return;
                }
            } else if (op == RT_OP_BatchNormalization && foldable && n->n_in == 5 && n->in[0] == cur && ch->axis == 1) {
                for (int k = 0; k < 4; k++)
                    if (!(bn[k] = const_per_channel(g, n->in[k + 1], 1, 0, ch->C))) return;
                bn_eps = rt_attr_float(n, "epsilon", 1e-5f);
            } else if (n->in[0] == cur && (op == RT_OP_Relu || op == RT_OP_Sigmoid || op == RT_OP_HardSigmoid ||
                                           op == RT_OP_HardSwish || op == RT_OP_Clip || op == RT_OP_Tanh)) {
                int rr;
                if (op == RT_OP_Relu)
                    rr = po_act(&t, RT_ACT_RELU, 0, 0);
                else if (op == RT_OP_Sigmoid)
                    rr = po_act(&t, RT_ACT_SIGMOID, 0, 0);
                else if (op == RT_OP_Tanh)
                    rr = po_elt(&t, dnnl_eltwise_tanh, 0, 0);
                else if (op == RT_OP_HardSwish)
                    rr = po_act(&t, RT_ACT_HARDSWISH, 1.f / 6.f, 0.5f);
                else if (op == RT_OP_HardSigmoid)
                    rr =
                        po_act(&t, RT_ACT_HARDSIGMOID, rt_attr_float(n, "alpha", 0.2f), rt_attr_float(n, "beta", 0.5f));
                else {
                    float lo = -INFINITY, hi = INFINITY;
                    if (n->n_in > 1 && n->in[1] >= 0 && !const_scalar(g, n->in[1], &lo)) return;
                    if (n->n_in > 2 && n->in[2] >= 0 && !const_scalar(g, n->in[2], &hi)) return;
                    rr = po_act(&t, RT_ACT_CLIP, lo, hi);
                }
                if (rr) return;
                t.nonlin = 1;
            } else {
                return;
            }
            if (n->act != RT_ACT_NONE) {
                /* the link's own activation comes after a fold: fold first on t's view */
                if ((fold || pcm || bn[0]) && t.n_po) return;
                if (po_act(&t, n->act, n->act_alpha, n->act_beta)) return;
            }
            add[n_add++] = ci;
            next = n->out[0];
        } else if (nc == 2 && !lector__tc_str(LECTOR__TC_ONEDNN_NOHSWISH)) {
            /* hardswish: a = Add(x, 3); k = Clip(a, 0, 6); m = Mul(x, k); Div(m, 6) or Mul(m, 1/6) */
            int i0 = c->cons[2 * cur], i1 = c->cons[2 * cur + 1];
            if (g->nodes[i0].op != RT_OP_Add) {
                int ti = i0;
                i0 = i1;
                i1 = ti;
            }
            const rt_node *na = &g->nodes[i0], *nm = &g->nodes[i1];
            float s3, lo, hi, s6;
            if (na->op != RT_OP_Add || nm->op != RT_OP_Mul || nm->act) return;
            if (!link_ok(c, na, cur) || !link_ok(c, nm, cur)) return;
            if (!const_scalar(g, cons_other(na, cur), &s3) || s3 != 3.f) return;
            int av = na->out[0], ki = -1, kv;
            if (na->act == RT_ACT_CLIP) { /* the fusion pass put the Clip into the Add */
                if (na->act_alpha != 0.f || na->act_beta != 6.f) return;
                kv = av;
            } else {
                if (na->act || c->ncons[av] != 1 || g->values[av].is_output) return;
                ki = c->cons[2 * av];
                const rt_node *nk = &g->nodes[ki];
                if (nk->op != RT_OP_Clip || nk->in[0] != av || nk->n_in < 3 || nk->act) return;
                if (!const_scalar(g, nk->in[1], &lo) || !const_scalar(g, nk->in[2], &hi) || lo != 0.f || hi != 6.f)
                    return;
                kv = nk->out[0];
            }
            if (c->ncons[kv] != 1 || g->values[kv].is_output || cons_other(nm, cur) != kv) return;
            int mv = nm->out[0];
            if (c->ncons[mv] != 1 || g->values[mv].is_output) return;
            int di = c->cons[2 * mv];
            const rt_node *nd = &g->nodes[di];
            if (!link_ok(c, nd, mv) || nd->act) return;
            if (nd->op == RT_OP_Div && nd->in[0] == mv && const_scalar(g, nd->in[1], &s6) && s6 == 6.f) {
            } else if (nd->op == RT_OP_Mul && const_scalar(g, cons_other(nd, mv), &s6) &&
                       fabsf(s6 - 1.f / 6.f) < 1e-7f) {
            } else {
                return;
            }
            if (po_act(&t, RT_ACT_HARDSWISH, 1.f / 6.f, 0.5f)) return;
            add[n_add++] = i0;
            if (ki >= 0) add[n_add++] = ki;
            add[n_add++] = i1;
            add[n_add++] = di;
            next = nd->out[0];
        } else {
            return;
        }
        /* commit */
        if (fold) fold_affine(ch, &m1, &a1, 0);
        if (pcm) {
            float *mm = lector__malloc(sizeof(float) * (size_t)ch->C * 2);
            if (!mm) return;
            for (int k = 0; k < ch->C; k++) {
                mm[k] = pc_op == RT_OP_Mul ? pcm[k] : pc_op == RT_OP_Div ? 1.f / pcm[k] : 1.f;
                mm[ch->C + k] = pc_op == RT_OP_Add ? pcm[k] : pc_op == RT_OP_Sub ? -pcm[k] : 0.f;
            }
            fold_affine(ch, mm, mm + ch->C, 1);
            lector__free(mm);
        }
        if (bn[0]) {
            float *mm = lector__malloc(sizeof(float) * (size_t)ch->C * 2);
            if (!mm) return;
            for (int k = 0; k < ch->C; k++) {
                mm[k] = bn[0][k] / sqrtf(bn[3][k] + bn_eps);
                mm[ch->C + k] = bn[1][k] - bn[2][k] * mm[k];
            }
            fold_affine(ch, mm, mm + ch->C, 1);
            lector__free(mm);
        }
        t.scale = ch->scale;
        t.shift = ch->shift;
        t.folded = ch->folded;
        *ch = t;
        for (int k = 0; k < n_add; k++) ch->consumed[ch->n_consumed++] = add[k];
        cur = next;
        ch->end = cur;
    }
}

static int chain_init(chain *ch, int C, int axis)
{
    memset(ch, 0, sizeof *ch);
    ch->C = C;
    ch->axis = axis;
    if (C > 0) {
        ch->scale = lector__malloc(sizeof(float) * (size_t)C);
        ch->shift = lector__calloc((size_t)C, sizeof(float));
        if (!ch->scale || !ch->shift) {
            lector__free(ch->scale);
            lector__free(ch->shift);
            return -1;
        }
        for (int k = 0; k < C; k++) ch->scale[k] = 1.f;
    }
    return 0;
}

static void chain_clear(chain *ch)
{
    lector__free(ch->scale);
    lector__free(ch->shift);
    ch->scale = ch->shift = NULL;
}

/* Post-ops of the chain into a new attr; bin_md[i] = layout of each binary operand. */
static dnnl_primitive_attr_t chain_attr(dn_cc *c, const chain *ch, dnnl_memory_desc_t *bin_md,
                                        const dnnl_memory_desc_t *dst_view)
{
    dnnl_primitive_attr_t at = attr_new();
    if (!at) return NULL;
    if (!ch || !ch->n_po) return at;
    dnnl_post_ops_t po;
    if (!ok(dnnl_post_ops_create(&po))) {
        dnnl_primitive_attr_destroy(at);
        return NULL;
    }
    for (int i = 0; i < ch->n_po; i++) {
        if (ch->po[i].kind == PO_ELT) {
            dnnl_post_ops_append_eltwise(po, 1.f, ch->po[i].alg, ch->po[i].a, ch->po[i].b);
        } else {
            int v = ch->po[i].value;
            if (dst_view)
                bin_md[i] = *dst_view; /* plain 2-D views (MatMul) */
            else
                bin_md[i] = c->dp->slots[c->dp->vslot[v]].md;
            dnnl_post_ops_append_binary(po, dnnl_binary_add, &bin_md[i]);
        }
    }
    dnnl_primitive_attr_set_post_ops(at, po);
    dnnl_post_ops_destroy(po);
    return at;
}

/* Adds the post-op operand args of the chain. */
static int chain_args(dn_cc *c, const chain *ch, const dnnl_memory_desc_t *bin_md, int *args, int *slots,
                      const dnnl_memory_desc_t **mds, int n, int plain_view)
{
    for (int i = 0; i < ch->n_po; i++) {
        if (ch->po[i].kind != PO_BIN) continue;
        int s = plain_view ? need_plain(c, ch->po[i].value) : c->dp->vslot[ch->po[i].value];
        if (s < 0) return -1;
        args[n] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1;
        slots[n] = s;
        mds[n] = &bin_md[i];
        n++;
    }
    return n;
}

/* Marks the chain's nodes consumed; adds the tail activation step. */
static int chain_commit(dn_cc *c, const chain *ch, int oslot)
{
    for (int i = 0; i < ch->n_consumed; i++) c->done[ch->consumed[i]] = 1;
    if (ch->tail_act != RT_ACT_NONE) {
        dn_step *s = step_new(c, DN_STEP_ACT);
        if (!s) return -1;
        s->out_slot[0] = oslot;
        s->n_out = 1;
        s->act = ch->tail_act;
        s->alpha = ch->tail_a;
        s->beta = ch->tail_b;
    }
    return 0;
}

/* The primitive pd, with the chain's post-op operands after its n args
 * (bin_md NULL: the step takes none), into output slot ys; pd is released
 * and the chain committed. -1 when ys or an operand has no slot. */
static int add_chained_prim(dn_cc *c, const chain *ch, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *bin_md,
                            int *args, int *sl, const dnnl_memory_desc_t **mds, int n, int plain_view, int ys)
{
    int na = ys < 0 ? -1 : bin_md ? chain_args(c, ch, bin_md, args, sl, mds, n, plain_view) : n;
    int r = na < 0 ? -1 : add_prim(c, pd, na, args, sl, mds);
    pd_release(c, pd);
    if (!r) r = chain_commit(c, ch, ys);
    return r;
}

/* ---- converted weights ------------------------------------------------------- */

/* Starts the key of weights converted for a primitive: the source constants
 * (w, and b when >= 0), the chain's folded scale and shift, and the layout
 * the primitive wants. */
static void weights_key(dn_cc *c, dn_key *k, const char *tag, int w, int b, const chain *ch,
                        const dnnl_memory_desc_t *wq)
{
    dn_key_init(k, tag);
    key_const(k, &c->g->values[w]);
    int hb = b >= 0;
    dn_key_add(k, &hb, sizeof hb);
    if (hb) key_const(k, &c->g->values[b]);
    dn_key_add(k, &ch->C, sizeof ch->C);
    dn_key_add(k, ch->scale, sizeof(float) * (size_t)ch->C);
    dn_key_add(k, ch->shift, sizeof(float) * (size_t)ch->C);
    dn_key_add(k, wq, sizeof *wq);
}

/* Weights (in the primitive's layout) and bias already converted under key k. */
static int weights_find(dn_cc *c, const dn_key *k, void **wr, float **bf)
{
    const dn_const *cv = dn_const_find(c->caches, k);
    if (!cv) return 0;
    *wr = cv->data[0];
    *bf = cv->data[1];
    return 1;
}

/* Stores freshly converted weights and bias under key k (the model keeps
 * them), or in the plan when the key cannot name them; -1 out of memory
 * (both freed). *wr and *bf become the stored buffers. */
static int weights_store(dn_cc *c, const dn_key *k, void **wr, float **bf)
{
    if (k->fail) {
        if (owned_keep(c, *wr)) {
            lector__free(*wr);
            lector__free(*bf);
            return -1;
        }
        if (owned_keep(c, *bf)) {
            lector__free(*bf);
            return -1;
        }
        return 0;
    }
    const dn_const *cv = dn_const_insert(c->caches, k, *wr, *bf);
    if (!cv) return -1;
    *wr = cv->data[0];
    *bf = cv->data[1];
    return 0;
}

/* ---- builders: each returns 0 (steps added) or -1 (use the reference) ---- */

typedef struct op_args {
    const void *desc;
    const_dnnl_primitive_attr_t at;
    dnnl_engine_t eng;
} op_args;

static dnnl_status_t make_op(void *ctx, dnnl_primitive_desc_t *pd)
{
    op_args *a = ctx;
    return dnnl_primitive_desc_create(pd, a->desc, a->at, a->eng, NULL);
}

/* The primitive descriptor of an operation descriptor (`size` bytes, as its
 * *_desc_init filled it) with attribute `at`, from the kernel cache. */
static dnnl_primitive_desc_t pd_create(dn_cc *c, const void *desc, size_t size, dnnl_primitive_attr_t at)
{
    dn_key k;
    dn_key_init(&k, "op");
    dn_key_add(&k, desc, size);
    dn_key_attr(&k, at);
    op_args a = {desc, at, c->eng};
    dnnl_primitive_desc_t pd = pd_cached(c, &k, make_op, &a);
    dn_key_free(&k);
    return pd;
}

/* pd_create when the operation descriptor was made (desc_ok), else NULL;
 * the attributes are destroyed either way. */
static dnnl_primitive_desc_t pd_create_consuming(dn_cc *c, int desc_ok, const void *d, size_t n,
                                                 dnnl_primitive_attr_t at)
{
    dnnl_primitive_desc_t pd = desc_ok ? pd_create(c, d, n, at) : NULL;
    if (at) dnnl_primitive_attr_destroy(at);
    return pd;
}

static int impl_is_ref(dnnl_primitive_desc_t pd)
{
    const char *s = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
    return s && !strncmp(s, "ref", 3);
}

/* Conv and ConvTranspose (2-D), with bias, folded affine ops and post-ops. */
static int build_conv(dn_cc *c, int ni, int transposed)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in < 2) return -1;
    int x = n->in[0], w = n->in[1], b = n->n_in > 2 ? n->in[2] : -1;
    const rt_value *xv = &g->values[x], *wv = &g->values[w], *yv = &g->values[n->out[0]];
    if (!is_f32(xv) || !is_f32(wv) || !wv->data || xv->ndim != 4 || wv->ndim != 4) return -1;
    if (b >= 0 && (!g->values[b].data || !is_f32(&g->values[b]))) return -1;
    rt_conv_geom geo;
    if (rt_conv_geom_make(n, transposed ? RT_GEOM_CONVT : RT_GEOM_CONV, xv->ndim, xv->dims, wv->dims, &geo, NULL))
        return -1;
    int64_t G = rt_attr_int(n, "group", 1);
    int64_t Cin = xv->dims[1];
    int64_t Cout = transposed ? wv->dims[1] * G : wv->dims[0];
    if (G < 1 || Cout != yv->dims[1] || Cin % G || Cout % G) return -1;
    int off = RT_SPATIAL - geo.nsp; /* geometry slots used */
    if (geo.nsp != 2) return -1;
    dnnl_dims_t strides, dil, pl, pr;
    for (int i = 0; i < 2; i++) {
        strides[i] = geo.s[off + i];
        dil[i] = geo.d[off + i] - 1;
        pl[i] = geo.pb[off + i];
        if (transposed)
            pr[i] = (geo.in[off + i] - 1) * geo.s[off + i] + (geo.k[off + i] - 1) * geo.d[off + i] + 1 - pl[i] -
                    geo.out[off + i];
        else
            pr[i] = geo.pe[off + i];
        if (pr[i] < 0) return -1;
    }
    /* weights, logical dims */
    dnnl_memory_desc_t wmd_plain, wmd_any, bmd, smd, dmd;
    int64_t kh = wv->dims[2], kw = wv->dims[3];
    if (G == 1) {
        int64_t d[4] = {Cout, Cin, kh, kw};
        md_make(&wmd_plain, 4, d, transposed ? dnnl_iohw : dnnl_oihw);
        md_any(&wmd_any, 4, d);
    } else {
        int64_t d[5] = {G, Cout / G, Cin / G, kh, kw};
        md_make(&wmd_plain, 5, d, transposed ? dnnl_giohw : dnnl_goihw);
        md_any(&wmd_any, 5, d);
    }
    int64_t cd[1] = {Cout};
    md_plain(&bmd, 1, cd);

    for (int attempt = 0; attempt < 3; attempt++) {
        chain ch;
        if (chain_init(&ch, (int)Cout, 1)) return -1;
        if (attempt < 2)
            chain_walk(c, ni, &ch, attempt == 0);
        else {
            ch.end = n->out[0];
            if (n->act != RT_ACT_NONE && po_act(&ch, n->act, n->act_alpha, n->act_beta)) {
                ch.n_po = 0;
                ch.tail_act = n->act;
                ch.tail_a = n->act_alpha;
                ch.tail_b = n->act_beta;
            }
        }
        const rt_value *ev = &g->values[ch.end];
        md_any(&dmd, 4, ev->dims);
        for (int i = 0; i < ch.n_po; i++) /* dst in the residual's layout */
            if (ch.po[i].kind == PO_BIN) dmd = c->dp->slots[c->dp->vslot[ch.po[i].value]].md;
        /* src: keep the layout the input already has when oneDNN has a fast kernel for it */
        int xs = vslot(c, x);
        if (xs < 0) {
            chain_clear(&ch);
            return -1;
        }
        dnnl_memory_desc_t bin_md[24];
        dnnl_primitive_attr_t at = chain_attr(c, &ch, bin_md, NULL);
        dnnl_primitive_desc_t pd = NULL;
        for (int try_cur = md_is_plain(&c->dp->slots[xs].md) ? 0 : 1; try_cur >= 0 && !pd; try_cur--) {
            if (try_cur)
                smd = c->dp->slots[xs].md;
            else
                md_any(&smd, 4, xv->dims);
            if (transposed) {
                dnnl_deconvolution_desc_t d;
                if (ok(dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_inference,
                                                                    dnnl_deconvolution_direct, &smd, &wmd_any, &bmd,
                                                                    &dmd, strides, dil, pl, pr)))
                    pd = pd_create(c, &d, sizeof d, at);
            } else {
                dnnl_convolution_desc_t d;
                if (ok(dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct,
                                                                  &smd, &wmd_any, &bmd, &dmd, strides, dil, pl, pr)))
                    pd = pd_create(c, &d, sizeof d, at);
            }
            if (pd && try_cur && impl_is_ref(pd)) {
                pd_release(c, pd);
                pd = NULL;
            }
        }
        if (at) dnnl_primitive_attr_destroy(at);
        if (!pd) {
            chain_clear(&ch);
            continue;
        }
        /* weights and bias: fold scale/shift, reorder once per model */
        size_t wn = (size_t)rt_value_numel(wv);
        const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        const dnnl_memory_desc_t *sq = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
        const dnnl_memory_desc_t *dq = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        dn_key wk;
        weights_key(c, &wk, transposed ? "deconv-w" : "conv-w", w, b, &ch, wq);
        dn_key_add(&wk, &G, sizeof G);
        void *wr = NULL;
        float *bf = NULL, *wf = NULL;
        int have = weights_find(c, &wk, &wr, &bf);
        if (!have) {
            wf = lector__aligned_alloc(wn * sizeof(float));
            bf = lector__aligned_alloc((size_t)Cout * sizeof(float));
            wr = lector__aligned_alloc(dnnl_memory_desc_get_size(wq));
        }
        if (!have && (!wf || !bf || !wr)) {
            lector__free(wf);
            lector__free(bf);
            lector__free(wr);
            dn_key_free(&wk);
            pd_release(c, pd);
            chain_clear(&ch);
            c->fail = 1;
            return -1;
        }
        if (!have) {
            memcpy(wf, wv->data, wn * sizeof(float));
            const float *b0 = b >= 0 ? g->values[b].data : NULL;
            for (int64_t k = 0; k < Cout; k++) bf[k] = (b0 ? b0[k] : 0.f) * ch.scale[k] + ch.shift[k];
            if (ch.folded) {
                int64_t khw = kh * kw;
                if (!transposed) {
                    int64_t per = wn / (size_t)Cout;
                    for (int64_t o = 0; o < Cout; o++)
                        for (int64_t i = 0; i < per; i++) wf[o * per + i] *= ch.scale[o];
                } else {
                    int64_t og = Cout / G, ig = Cin / G;
                    for (int64_t ci = 0; ci < Cin; ci++)
                        for (int64_t o = 0; o < og; o++) {
                            float sc = ch.scale[(ci / ig) * og + o];
                            for (int64_t t = 0; t < khw; t++) wf[(ci * og + o) * khw + t] *= sc;
                        }
                }
            }
            int bad = reorder_now(c, &wmd_plain, wf, wq, wr);
            lector__free(wf);
            if (bad) {
                lector__free(wr);
                lector__free(bf);
            }
            if (bad || weights_store(c, &wk, &wr, &bf)) {
                dn_key_free(&wk);
                pd_release(c, pd);
                chain_clear(&ch);
                return -1;
            }
        }
        dn_key_free(&wk);
        int ws = slot_new(c, DN_SLOT_CONST, w, wq, 0), bs = slot_new(c, DN_SLOT_CONST, -1, &bmd, 0);
        int ss = need_md(c, x, sq);
        int ys = out_slot(c, ch.end, dq);
        if (ws < 0 || bs < 0 || ss < 0 || ys < 0) {
            pd_release(c, pd);
            chain_clear(&ch);
            return -1;
        }
        c->dp->slots[ws].ptr = wr;
        c->dp->slots[bs].ptr = bf;
        int args[DN_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
        int sl[DN_MAX_ARGS] = {ss, ws, bs, ys};
        const dnnl_memory_desc_t *mds[DN_MAX_ARGS] = {0};
        int r = add_chained_prim(c, &ch, pd, bin_md, args, sl, mds, 4, 0, ys);
        chain_clear(&ch);
        return r;
    }
    return -1;
}

/* ConvTranspose with kernel == stride, no padding, one group (the DB head's
 * 2x2/2 upsampling): every input pixel writes its own k*k output block, so
 * it is a 1x1 convolution to Cout*k*k channels (nhwc) followed by a
 * depth-to-space reorder: faster than oneDNN 2.6's own deconvolution on
 * these shapes (docs/BENCHMARKS.md). */
static int build_deconv_d2s(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in < 2) return -1;
    int x = n->in[0], w = n->in[1], b = n->n_in > 2 ? n->in[2] : -1;
    const rt_value *xv = &g->values[x], *wv = &g->values[w], *yv = &g->values[n->out[0]];
    if (!is_f32(xv) || !is_f32(wv) || !wv->data || xv->ndim != 4 || wv->ndim != 4) return -1;
    if (b >= 0 && (!g->values[b].data || !is_f32(&g->values[b]))) return -1;
    if (rt_attr_int(n, "group", 1) != 1) return -1;
    int64_t N = xv->dims[0], Cin = xv->dims[1], H = xv->dims[2], W = xv->dims[3];
    int64_t Cout = wv->dims[1], kh = wv->dims[2], kw = wv->dims[3];
    if (wv->dims[0] != Cin || yv->dims[1] != Cout || yv->dims[2] != H * kh || yv->dims[3] != W * kw) return -1;
    const int64_t *v;
    int k = rt_attr_ints(n, "strides", &v);
    if (k != 2 || v[0] != kh || v[1] != kw) return -1;
    k = rt_attr_ints(n, "pads", &v);
    for (int i = 0; i < k; i++)
        if (v[i]) return -1;
    k = rt_attr_ints(n, "dilations", &v);
    for (int i = 0; i < k; i++)
        if (v[i] != 1) return -1;
    k = rt_attr_ints(n, "output_padding", &v);
    for (int i = 0; i < k; i++)
        if (v[i]) return -1;
    const char *ap = rt_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) return -1;
    int64_t kk = kh * kw, C2 = Cout * kk;
    chain ch;
    if (chain_init(&ch, (int)Cout, 1)) return -1;
    chain_walk(c, ni, &ch, 0);
    const rt_value *ev = &g->values[ch.end];
    int64_t wd[4] = {C2, Cin, 1, 1}, cd[4] = {N, C2, H, W}, bd[1] = {C2};
    dnnl_memory_desc_t wmd_plain, wmd_any, bmd, smd, dmd;
    md_make(&wmd_plain, 4, wd, dnnl_oihw);
    md_any(&wmd_any, 4, wd);
    md_plain(&bmd, 1, bd);
    md_make(&dmd, 4, cd, dnnl_acdb);
    int xs = vslot(c, x);
    if (xs < 0) {
        chain_clear(&ch);
        return -1;
    }
    dnnl_primitive_attr_t at = chain_attr(c, &ch, NULL, NULL);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_dims_t st = {1, 1}, di = {0, 0}, pz = {0, 0};
    for (int try_cur = md_is_plain(&c->dp->slots[xs].md) ? 0 : 1; try_cur >= 0 && !pd; try_cur--) {
        if (try_cur)
            smd = c->dp->slots[xs].md;
        else
            md_any(&smd, 4, xv->dims);
        dnnl_convolution_desc_t d;
        if (ok(dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, &smd,
                                                          &wmd_any, &bmd, &dmd, st, di, pz, pz)))
            pd = pd_create(c, &d, sizeof d, at);
    }
    if (at) dnnl_primitive_attr_destroy(at);
    if (!pd) {
        chain_clear(&ch);
        return -1;
    }
    const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *sq = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    dn_key wk;
    weights_key(c, &wk, "d2s-w", w, b, &ch, wq);
    void *wr = NULL;
    float *bf = NULL;
    if (!weights_find(c, &wk, &wr, &bf)) {
        float *wf = lector__aligned_alloc((size_t)(C2 * Cin) * sizeof(float));
        bf = lector__aligned_alloc((size_t)C2 * sizeof(float));
        wr = lector__aligned_alloc(dnnl_memory_desc_get_size(wq));
        int bad = !wf || !bf || !wr;
        if (bad) c->fail = 1;
        const float *w0 = wv->data, *b0 = b >= 0 ? g->values[b].data : NULL;
        for (int64_t co = 0; co < Cout && !bad; co++)
            for (int64_t t = 0; t < kk; t++) {
                int64_t o = co * kk + t;
                bf[o] = (b0 ? b0[co] : 0.f) * ch.scale[co] + ch.shift[co];
                for (int64_t ci = 0; ci < Cin; ci++) wf[o * Cin + ci] = w0[(ci * Cout + co) * kk + t] * ch.scale[co];
            }
        if (!bad) bad = reorder_now(c, &wmd_plain, wf, wq, wr);
        lector__free(wf);
        if (bad) {
            lector__free(wr);
            lector__free(bf);
        }
        if (bad || weights_store(c, &wk, &wr, &bf)) {
            dn_key_free(&wk);
            pd_release(c, pd);
            chain_clear(&ch);
            return -1;
        }
    }
    dn_key_free(&wk);
    /* depth-to-space as a reorder between two 6-D views [N, Cout, H, kh, W, kw] */
    dnnl_memory_desc_t v_src, v_dst, ymd;
    int64_t HO = H * kh, WO = W * kw;
    dnnl_dims_t vd = {N, Cout, H, kh, W, kw};
    dnnl_dims_t vs = {H * W * C2, kk, W * C2, kw, C2, 1};
    dnnl_dims_t vt = {HO * WO * Cout, 1, kh * WO * Cout, WO * Cout, kw * Cout, Cout};
    md_make(&ymd, 4, ev->dims, dnnl_acdb);
    dnnl_primitive_desc_t rpd = NULL;
    if (!ok(dnnl_memory_desc_init_by_strides(&v_src, 6, vd, dnnl_f32, vs)) ||
        !ok(dnnl_memory_desc_init_by_strides(&v_dst, 6, vd, dnnl_f32, vt))) {
        pd_release(c, pd);
        chain_clear(&ch);
        return -1;
    }
    dnnl_primitive_attr_t rat = attr_new();
    if (!ok(reorder_pd(c, &rpd, &v_src, &v_dst, rat))) rpd = NULL;
    dnnl_primitive_attr_destroy(rat);
    if (!rpd) {
        pd_release(c, pd);
        chain_clear(&ch);
        return -1;
    }
    int ws = slot_new(c, DN_SLOT_CONST, w, wq, 0), bs = slot_new(c, DN_SLOT_CONST, -1, &bmd, 0);
    int ss = need_md(c, x, sq);
    int ts = slot_new(c, DN_SLOT_ARENA, -1, &dmd, 0);
    int ys = out_slot(c, ch.end, &ymd);
    int r = -1;
    if (ws >= 0 && bs >= 0 && ss >= 0 && ts >= 0 && ys >= 0) {
        c->dp->slots[ws].ptr = wr;
        c->dp->slots[bs].ptr = bf;
        int args[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
        int sl[5] = {ss, ws, bs, ts};
        r = add_prim(c, pd, 4, args, sl, NULL);
        int rargs[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, rsl[2] = {ts, ys};
        const dnnl_memory_desc_t *rmd[2] = {&v_src, &v_dst};
        if (!r) r = add_prim(c, rpd, 2, rargs, rsl, rmd);
        if (!r) r = chain_commit(c, &ch, ys);
    }
    pd_release(c, pd);
    pd_release(c, rpd);
    chain_clear(&ch);
    return r;
}

static int act_alg(int op, const rt_node *n, dnnl_alg_kind_t *alg, float *a, float *b)
{
    *a = *b = 0;
    switch (op) {
    case RT_OP_Relu: *alg = dnnl_eltwise_relu; return 0;
    case RT_OP_LeakyRelu:
        *alg = dnnl_eltwise_relu;
        *a = rt_attr_float(n, "alpha", 0.01f);
        return 0;
    case RT_OP_Sigmoid: *alg = dnnl_eltwise_logistic; return 0;
    case RT_OP_Tanh: *alg = dnnl_eltwise_tanh; return 0;
    case RT_OP_Exp: *alg = dnnl_eltwise_exp; return 0;
    case RT_OP_Abs: *alg = dnnl_eltwise_abs; return 0;
    case RT_OP_Sqrt: *alg = dnnl_eltwise_sqrt; return 0;
    case RT_OP_Log: *alg = dnnl_eltwise_log; return 0;
    case RT_OP_Neg:
        *alg = dnnl_eltwise_linear;
        *a = -1.f;
        return 0;
    case RT_OP_HardSwish: *alg = dnnl_eltwise_hardswish; return 0;
    case RT_OP_HardSigmoid: /* linear here, clip as a post-op */
        *alg = dnnl_eltwise_linear;
        *a = rt_attr_float(n, "alpha", 0.2f);
        *b = rt_attr_float(n, "beta", 0.5f);
        return 0;
    default: return -1;
    }
}

/* Unary elementwise ops (Relu, Sigmoid, Clip, ...), in the input's layout. */
static int build_eltwise(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0];
    if (!is_f32(&g->values[x]) || !is_f32(&g->values[n->out[0]])) return -1;
    dnnl_alg_kind_t alg;
    float a, b;
    if (n->op == RT_OP_Clip) {
        float lo = -INFINITY, hi = INFINITY;
        if (n->n_in > 1 && n->in[1] >= 0 && !const_scalar(g, n->in[1], &lo)) return -1;
        if (n->n_in > 2 && n->in[2] >= 0 && !const_scalar(g, n->in[2], &hi)) return -1;
        alg = dnnl_eltwise_clip;
        a = isinf(lo) ? -FLT_MAX : lo;
        b = isinf(hi) ? FLT_MAX : hi;
    } else if (act_alg(n->op, n, &alg, &a, &b)) {
        return -1;
    }
    int xs = vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t smd = c->dp->slots[xs].md;
    for (int attempt = 0; attempt < 2; attempt++) {
        chain ch;
        chain_init(&ch, 0, 0);
        if (n->op == RT_OP_HardSigmoid) po_elt(&ch, dnnl_eltwise_clip, 0.f, 1.f);
        /* no chain after a standalone eltwise: its own algorithm would not be
         * seen by po_elt's same-algorithm check (oneDNN 2.6 post-op bug) */
        if (attempt == 0 && n->act != RT_ACT_NONE && po_act(&ch, n->act, n->act_alpha, n->act_beta) == 0) {
            ch.end = n->out[0];
        } else {
            ch.end = n->out[0];
            if (n->act != RT_ACT_NONE) {
                ch.tail_act = n->act;
                ch.tail_a = n->act_alpha;
                ch.tail_b = n->act_beta;
            }
        }
        dnnl_eltwise_desc_t d;
        int made = ok(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &smd, a, b));
        dnnl_primitive_desc_t pd = pd_create_consuming(c, made, &d, sizeof d, chain_attr(c, &ch, NULL, NULL));
        if (!pd) continue;
        int ys = out_slot(c, ch.end, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
        int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, sl[2] = {xs, ys};
        return add_chained_prim(c, &ch, pd, NULL, args, sl, NULL, 2, 0, ys);
    }
    return -1;
}

/* Add/Sub/Mul/Div with numpy broadcasting of the second operand. */
static int build_binary(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in != 2 || n->in[0] < 0 || n->in[1] < 0) return -1;
    int a = n->in[0], b = n->in[1], y = n->out[0];
    const rt_value *yv = &g->values[y];
    if (!is_f32(&g->values[a]) || !is_f32(&g->values[b]) || !is_f32(yv)) return -1;
    dnnl_alg_kind_t alg = n->op == RT_OP_Add   ? dnnl_binary_add
                          : n->op == RT_OP_Sub ? dnnl_binary_sub
                          : n->op == RT_OP_Mul ? dnnl_binary_mul
                                               : dnnl_binary_div;
    if (!same_dims(&g->values[a], yv)) {
        if ((n->op == RT_OP_Add || n->op == RT_OP_Mul) && same_dims(&g->values[b], yv)) {
            int t = a;
            a = b;
            b = t;
        } else {
            return -1;
        }
    }
    if (g->values[a].data) return -1; /* both constant: folded earlier */
    int as = vslot(c, a);
    if (as < 0 || yv->ndim > DNNL_MAX_NDIMS || yv->ndim < 1) return -1;
    dnnl_memory_desc_t amd = c->dp->slots[as].md, bmd;
    const rt_value *bv = &g->values[b];
    int bs;
    if (same_dims(bv, yv)) {
        bs = need_md(c, b, &amd);
        if (bs < 0) return -1;
        bmd = amd;
    } else {
        int64_t bd[LECTOR_MAX_DIMS];
        int r = yv->ndim;
        if (bv->ndim > r) return -1;
        for (int i = 0; i < r; i++) bd[i] = i < r - bv->ndim ? 1 : bv->dims[i - (r - bv->ndim)];
        int cur = vslot(c, b);
        if (cur < 0) return -1;
        if (bv->ndim == r && !md_is_plain(&c->dp->slots[cur].md)) {
            bs = cur;
            bmd = c->dp->slots[cur].md;
        } else {
            bs = need_plain(c, b);
            if (bs < 0) return -1;
            md_plain(&bmd, r, bd);
        }
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        chain ch;
        chain_init(&ch, 0, 0);
        if (attempt < 2)
            chain_walk(c, ni, &ch, attempt == 0);
        else {
            ch.end = y;
            if (n->act != RT_ACT_NONE && po_act(&ch, n->act, n->act_alpha, n->act_beta)) {
                ch.n_po = 0;
                ch.tail_act = n->act;
                ch.tail_a = n->act_alpha;
                ch.tail_b = n->act_beta;
            }
        }
        dnnl_memory_desc_t bin_md[24];
        dnnl_binary_desc_t d;
        int made = ok(dnnl_binary_desc_init(&d, alg, &amd, &bmd, &amd));
        dnnl_primitive_desc_t pd = pd_create_consuming(c, made, &d, sizeof d, chain_attr(c, &ch, bin_md, NULL));
        if (!pd) continue;
        int ys = out_slot(c, ch.end, &amd);
        int args[DN_MAX_ARGS] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, sl[DN_MAX_ARGS] = {as, bs, ys};
        const dnnl_memory_desc_t *mds[DN_MAX_ARGS] = {&amd, &bmd, &amd};
        return add_chained_prim(c, &ch, pd, bin_md, args, sl, mds, 3, 0, ys);
    }
    return -1;
}

/* GlobalAveragePool with sums in double (nchw or nhwc input). oneDNN's
 * pooling sums a window sequentially in float; in the squeeze-and-excitation
 * blocks that error scales whole channels and moved the recogniser's
 * probabilities by 1.6e-4 against ONNX Runtime. */
static int build_gap(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x];
    if (!is_f32(xv) || xv->ndim != 4) return -1;
    int xs = vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t nhwc, ymd;
    md_make(&nhwc, 4, xv->dims, dnnl_acdb);
    int is_nhwc = md_eq(&c->dp->slots[xs].md, &nhwc);
    if (!is_nhwc) xs = need_plain(c, x);
    if (xs < 0) return -1;
    md_make(&ymd, 4, g->values[y].dims, is_nhwc ? dnnl_acdb : dnnl_abcd);
    int ys = out_slot(c, y, &ymd);
    dn_step *st = ys < 0 ? NULL : step_new(c, DN_STEP_GAP);
    if (!st) return -1;
    st->n_in = 1;
    st->in_slot[0] = xs;
    st->n_out = 1;
    st->out_slot[0] = ys;
    st->node = is_nhwc;
    st->nthr = c->nthr;
    for (int i = 0; i < 4; i++) st->dims[i] = xv->dims[i];
    return 0;
}

static int build_pool(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x], *yv = &g->values[y];
    if (!is_f32(xv) || xv->ndim != 4) return -1;
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k] >= 0) return -1; /* MaxPool's indices */
    dnnl_dims_t st, ke, di, pl, pr;
    dnnl_alg_kind_t alg;
    if (n->op == RT_OP_GlobalAveragePool) {
        for (int i = 0; i < 2; i++) {
            st[i] = 1;
            ke[i] = xv->dims[2 + i];
            di[i] = pl[i] = pr[i] = 0;
        }
        alg = dnnl_pooling_avg_exclude_padding;
    } else {
        rt_conv_geom geo;
        if (rt_conv_geom_make(n, RT_GEOM_POOL, xv->ndim, xv->dims, NULL, &geo, NULL) || geo.nsp != 2) return -1;
        int off = RT_SPATIAL - 2;
        for (int i = 0; i < 2; i++) {
            st[i] = geo.s[off + i];
            ke[i] = geo.k[off + i];
            di[i] = geo.d[off + i] - 1;
            pl[i] = geo.pb[off + i];
            pr[i] = (yv->dims[2 + i] - 1) * st[i] + (ke[i] - 1) * (di[i] + 1) + 1 - xv->dims[2 + i] - pl[i];
            if (pr[i] < 0) pr[i] = 0;
        }
        if (n->op == RT_OP_MaxPool)
            alg = dnnl_pooling_max;
        else {
            alg = rt_attr_int(n, "count_include_pad", 0) ? dnnl_pooling_avg_include_padding
                                                         : dnnl_pooling_avg_exclude_padding;
            /* ceil_mode windows past the padded input would be counted as padding by oneDNN */
            for (int i = 0; i < 2; i++)
                if (alg == dnnl_pooling_avg_include_padding && pr[i] != geo.pe[off + i]) return -1;
        }
    }
    int xs = vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t smd = c->dp->slots[xs].md, dmd;
    md_any(&dmd, 4, yv->dims);
    dnnl_pooling_v2_desc_t d;
    dnnl_primitive_attr_t at = attr_new();
    dnnl_primitive_desc_t pd = NULL;
    if (ok(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &smd, &dmd, st, ke, di, pl, pr)))
        pd = pd_create(c, &d, sizeof d, at);
    dnnl_primitive_attr_destroy(at);
    if (!pd) return -1;
    const dnnl_memory_desc_t *wsq = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    if (wsq && dnnl_memory_desc_get_size(wsq)) {
        pd_release(c, pd);
        return -1;
    }
    int ys = out_slot(c, y, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, sl[2] = {xs, ys};
    int r = ys < 0 ? -1 : add_prim(c, pd, 2, args, sl, NULL);
    pd_release(c, pd);
    return r;
}

static int build_concat(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int y = n->out[0];
    const rt_value *yv = &g->values[y];
    if (!is_f32(yv) || n->n_in < 1 || n->n_in > DN_MAX_ARGS - 2 || yv->ndim < 1) return -1;
    int axis = rt_norm_axis(rt_attr_int(n, "axis", 0), yv->ndim);
    if (axis < 0) return -1;
    dnnl_memory_desc_t smd[DN_MAX_ARGS], dmd;
    int ss[DN_MAX_ARGS], nin = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        nin = 0;
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || !is_f32(&g->values[v]) || g->values[v].ndim != yv->ndim) return -1;
            if (rt_value_numel(&g->values[v]) == 0) continue;
            int s = attempt == 0 ? vslot(c, v) : -1;
            if (s < 0) {
                s = vslot(c, v);
                if (s < 0) return -1;
                smd[nin] = c->dp->slots[s].md;
                md_plain(&smd[nin], g->values[v].ndim, g->values[v].dims);
            } else {
                smd[nin] = c->dp->slots[s].md;
            }
            ss[nin++] = v;
        }
        if (nin == 0) return -1;
        md_any(&dmd, yv->ndim, yv->dims);
        if (attempt == 1) md_plain(&dmd, yv->ndim, yv->dims);
        dnnl_primitive_attr_t at = attr_new();
        dnnl_primitive_desc_t pd = NULL;
        if (!ok(concat_pd(c, &pd, &dmd, nin, axis, smd, at))) pd = NULL;
        dnnl_primitive_attr_destroy(at);
        if (!pd) continue;
        int args[DN_MAX_ARGS], sl[DN_MAX_ARGS];
        for (int k = 0; k < nin; k++) {
            args[k] = DNNL_ARG_MULTIPLE_SRC + k;
            sl[k] = need_md(c, ss[k], &smd[k]);
            if (sl[k] < 0) {
                pd_release(c, pd);
                return -1;
            }
        }
        int ys = out_slot(c, y, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
        args[nin] = DNNL_ARG_DST;
        sl[nin] = ys;
        int r = ys < 0 ? -1 : add_prim(c, pd, nin + 1, args, sl, NULL);
        pd_release(c, pd);
        return r;
    }
    return -1;
}

/* Resize: nearest with integer up-scaling (every coordinate mode agrees
 * there), linear with half_pixel coordinates. */
static int build_resize(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x], *yv = &g->values[y];
    if (!is_f32(xv) || xv->ndim != 4 || yv->ndim != 4) return -1;
    if (xv->dims[0] != yv->dims[0] || xv->dims[1] != yv->dims[1]) return -1;
    const char *mode = rt_attr_string(n, "mode", "nearest");
    const char *ctm = rt_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    dnnl_alg_kind_t alg;
    if (!strcmp(mode, "nearest")) {
        const char *nm = rt_attr_string(n, "nearest_mode", "round_prefer_floor");
        if (!strcmp(ctm, "align_corners") || !strcmp(ctm, "tf_crop_and_resize")) return -1;
        if (!strcmp(ctm, "asymmetric") && strcmp(nm, "floor")) return -1;
        if (strcmp(ctm, "asymmetric") && strcmp(nm, "round_prefer_floor") && strcmp(nm, "round_prefer_ceil")) return -1;
        for (int i = 2; i < 4; i++)
            if (yv->dims[i] % xv->dims[i]) return -1;
        alg = dnnl_resampling_nearest;
    } else if (!strcmp(mode, "linear")) {
        if (strcmp(ctm, "half_pixel") &&
            !(strcmp(ctm, "pytorch_half_pixel") == 0 && yv->dims[2] > 1 && yv->dims[3] > 1))
            return -1;
        alg = dnnl_resampling_linear;
    } else {
        return -1;
    }
    /* ONNX maps coordinates with the given scales (out = floor(in * scale)),
     * not out/in: only scales equal to out/in can go to oneDNN */
    lector_tensor tv[2], *tp[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        int v = n->n_in > 2 + k ? n->in[2 + k] : -1;
        if (v < 0) continue;
        if (!g->values[v].data) return -1;
        tv[k] = rt_value_tensor(&g->values[v]);
        tp[k] = &tv[k];
    }
    int64_t odims[LECTOR_MAX_DIMS];
    float scale[LECTOR_MAX_DIMS];
    if (rt_resize_params(n, 4, xv->dims, tp[0], tp[1], odims, scale, NULL)) return -1;
    for (int i = 0; i < 4; i++)
        if (odims[i] != yv->dims[i]) return -1;
    if (scale[0] != 1.f || scale[1] != 1.f) return -1;
    /* oneDNN 2.6 maps coordinates with out/in whatever factors it is given */
    for (int i = 2; i < 4; i++)
        if (fabsf(scale[i] - (float)yv->dims[i] / (float)xv->dims[i]) > 1e-6f * scale[i]) return -1;
    float factors[2] = {scale[2], scale[3]};
    int xs = vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t smd = c->dp->slots[xs].md, dmd;
    md_any(&dmd, 4, yv->dims);
    dnnl_resampling_desc_t d;
    dnnl_primitive_attr_t at = attr_new();
    dnnl_primitive_desc_t pd = NULL;
    if (ok(dnnl_resampling_forward_desc_init(&d, dnnl_forward_inference, alg, factors, &smd, &dmd)))
        pd = pd_create(c, &d, sizeof d, at);
    dnnl_primitive_attr_destroy(at);
    if (!pd) return -1;
    int ys = out_slot(c, y, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, sl[2] = {xs, ys};
    int r = ys < 0 ? -1 : add_prim(c, pd, 2, args, sl, NULL);
    pd_release(c, pd);
    return r;
}

/* MatMul: constant 2-D B -> one 2-D GEMM over the flattened rows of A, with
 * folded per-column affine ops as bias; otherwise batched with broadcasting. */
static int build_matmul(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int a = n->in[0], b = n->in[1], y = n->out[0];
    const rt_value *av = &g->values[a], *bv = &g->values[b], *yv = &g->values[y];
    if (!is_f32(av) || !is_f32(bv) || av->ndim < 2 || bv->ndim < 2 || yv->ndim > 4) return -1;
    if (av->data) return -1;
    int64_t K = av->dims[av->ndim - 1], N = bv->dims[bv->ndim - 1];
    if (bv->data && bv->ndim == 2) {
        int64_t M = rt_value_numel(av) / (K ? K : 1);
        int64_t ad[2] = {M, K}, bd[2] = {K, N}, yd[2] = {M, N}, nd1[2] = {1, N};
        dnnl_memory_desc_t amd, bmd_any, bmd_plain, ymd, biasmd;
        md_plain(&amd, 2, ad);
        md_any(&bmd_any, 2, bd);
        md_plain(&bmd_plain, 2, bd);
        md_plain(&ymd, 2, yd);
        md_plain(&biasmd, 2, nd1);
        for (int attempt = 0; attempt < 3; attempt++) {
            chain ch;
            if (chain_init(&ch, (int)N, yv->ndim - 1)) return -1;
            if (attempt < 2)
                chain_walk(c, ni, &ch, attempt == 0);
            else {
                ch.end = y;
                if (n->act != RT_ACT_NONE && po_act(&ch, n->act, n->act_alpha, n->act_beta)) {
                    ch.n_po = 0;
                    ch.tail_act = n->act;
                    ch.tail_a = n->act_alpha;
                    ch.tail_b = n->act_beta;
                }
            }
            dnnl_memory_desc_t bin_md[24];
            dnnl_matmul_desc_t d;
            int made = ok(dnnl_matmul_desc_init(&d, &amd, &bmd_any, &biasmd, &ymd));
            dnnl_primitive_desc_t pd = pd_create_consuming(c, made, &d, sizeof d, chain_attr(c, &ch, bin_md, &ymd));
            if (!pd) {
                chain_clear(&ch);
                continue;
            }
            const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
            dn_key wk;
            weights_key(c, &wk, "matmul-w", b, -1, &ch, wq);
            void *wr = NULL;
            float *bf = NULL;
            if (!weights_find(c, &wk, &wr, &bf)) {
                float *wf = lector__aligned_alloc((size_t)(K * N) * sizeof(float));
                bf = lector__aligned_alloc((size_t)N * sizeof(float));
                wr = lector__aligned_alloc(dnnl_memory_desc_get_size(wq));
                int bad = !wf || !bf || !wr;
                if (bad) c->fail = 1;
                const float *b0 = bv->data;
                for (int64_t k = 0; k < K && !bad; k++)
                    for (int64_t j = 0; j < N; j++) wf[k * N + j] = b0[k * N + j] * ch.scale[j];
                for (int64_t j = 0; j < N && !bad; j++) bf[j] = ch.shift[j];
                if (!bad) bad = reorder_now(c, &bmd_plain, wf, wq, wr);
                lector__free(wf);
                if (bad) {
                    lector__free(wr);
                    lector__free(bf);
                }
                if (bad || weights_store(c, &wk, &wr, &bf)) {
                    dn_key_free(&wk);
                    pd_release(c, pd);
                    chain_clear(&ch);
                    return -1;
                }
            }
            dn_key_free(&wk);
            int as = need_plain(c, a);
            int ws = slot_new(c, DN_SLOT_CONST, b, wq, 0), bs = slot_new(c, DN_SLOT_CONST, -1, &biasmd, 0);
            dnnl_memory_desc_t yfull;
            md_plain(&yfull, g->values[ch.end].ndim, g->values[ch.end].dims);
            int ys = out_slot(c, ch.end, &yfull);
            if (as < 0 || ws < 0 || bs < 0 || ys < 0) {
                pd_release(c, pd);
                chain_clear(&ch);
                return -1;
            }
            c->dp->slots[ws].ptr = wr;
            c->dp->slots[bs].ptr = bf;
            int args[DN_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
            int sl[DN_MAX_ARGS] = {as, ws, bs, ys};
            const dnnl_memory_desc_t *mds[DN_MAX_ARGS] = {&amd, NULL, NULL, &ymd};
            int r = add_chained_prim(c, &ch, pd, bin_md, args, sl, mds, 4, 1, ys);
            chain_clear(&ch);
            return r;
        }
        return -1;
    }
    /* batched */
    int r = yv->ndim;
    int64_t ad[4], bd[4];
    for (int i = 0; i < r; i++) {
        ad[i] = i < r - av->ndim ? 1 : av->dims[i - (r - av->ndim)];
        bd[i] = i < r - bv->ndim ? 1 : bv->dims[i - (r - bv->ndim)];
    }
    dnnl_memory_desc_t amd, bmd, ymd;
    md_plain(&amd, r, ad);
    md_plain(&bmd, r, bd);
    md_plain(&ymd, r, yv->dims);
    for (int attempt = 0; attempt < 2; attempt++) {
        chain ch;
        chain_init(&ch, 0, 0);
        if (attempt == 0)
            chain_walk(c, ni, &ch, 0);
        else {
            ch.end = y;
            if (n->act != RT_ACT_NONE && po_act(&ch, n->act, n->act_alpha, n->act_beta)) {
                ch.n_po = 0;
                ch.tail_act = n->act;
                ch.tail_a = n->act_alpha;
                ch.tail_b = n->act_beta;
            }
        }
        dnnl_matmul_desc_t d;
        int made = ok(dnnl_matmul_desc_init(&d, &amd, &bmd, NULL, &ymd));
        dnnl_primitive_desc_t pd = pd_create_consuming(c, made, &d, sizeof d, chain_attr(c, &ch, NULL, NULL));
        if (!pd) continue;
        int as = need_plain(c, a), bs = need_plain(c, b);
        int ys = out_slot(c, ch.end, &ymd);
        if (as < 0 || bs < 0 || ys < 0) {
            pd_release(c, pd);
            return -1;
        }
        int args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, sl[3] = {as, bs, ys};
        const dnnl_memory_desc_t *mds[3] = {&amd, &bmd, &ymd};
        return add_chained_prim(c, &ch, pd, NULL, args, sl, mds, 3, 0, ys);
    }
    return -1;
}

static int build_softmax(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x];
    int r = xv->ndim;
    if (!is_f32(xv) || r < 1) return -1;
    int old = rt_node_opset(n) < 13;
    int axis = rt_norm_axis(rt_attr_int(n, "axis", old ? 1 : -1), r);
    if (axis < 0) return -1;
    int64_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= xv->dims[i];
    if (old) {
        for (int i = axis; i < r; i++) len *= xv->dims[i];
    } else {
        len = xv->dims[axis];
        for (int i = axis + 1; i < r; i++) inner *= xv->dims[i];
    }
    int64_t d3[3] = {outer, len, inner};
    dnnl_memory_desc_t md;
    md_plain(&md, 3, d3);
    dnnl_softmax_desc_t d;
    dnnl_primitive_attr_t at = attr_new();
    dnnl_primitive_desc_t pd = NULL;
    if (ok(dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md, 1))) pd = pd_create(c, &d, sizeof d, at);
    dnnl_primitive_attr_destroy(at);
    if (!pd) return -1;
    int xs = need_plain(c, x);
    int ys = xs < 0 ? -1 : out_slot(c, y, NULL);
    if (ys >= 0) md_plain(&c->dp->slots[ys].md, g->values[y].ndim, g->values[y].dims);
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, sl[2] = {xs, ys};
    const dnnl_memory_desc_t *mds[2] = {&md, &md};
    int rr = ys < 0 ? -1 : add_prim(c, pd, 2, args, sl, mds);
    pd_release(c, pd);
    return rr;
}

static int build_layernorm(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in < 3 || n->in[1] < 0 || n->in[2] < 0) return -1;
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k] >= 0) return -1;
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x];
    int r = xv->ndim;
    if (!is_f32(xv) || r < 2 || r > 5) return -1;
    if (rt_norm_axis(rt_attr_int(n, "axis", -1), r) != r - 1) return -1;
    int64_t C = xv->dims[r - 1];
    const rt_value *sv = &g->values[n->in[1]], *bv = &g->values[n->in[2]];
    if (!sv->data || !bv->data || !is_f32(sv) || !is_f32(bv) || rt_value_numel(sv) != C || rt_value_numel(bv) != C)
        return -1;
    dnnl_memory_desc_t md, cmd;
    md_plain(&md, r, xv->dims);
    md_plain(&cmd, 1, &C);
    dnnl_layer_normalization_desc_t d;
    dnnl_primitive_attr_t at = attr_new();
    dnnl_primitive_desc_t pd = NULL;
    if (ok(dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, &md, NULL,
                                                      rt_attr_float(n, "epsilon", 1e-5f),
                                                      dnnl_use_scale | dnnl_use_shift)))
        pd = pd_create(c, &d, sizeof d, at);
    dnnl_primitive_attr_destroy(at);
    if (!pd) return -1;
    int xs = need_plain(c, x);
    int ss = slot_new(c, DN_SLOT_CONST, n->in[1], &cmd, 0), bs = slot_new(c, DN_SLOT_CONST, n->in[2], &cmd, 0);
    int ys = xs < 0 ? -1 : out_slot(c, y, &md);
    if (ss < 0 || bs < 0 || ys < 0) {
        pd_release(c, pd);
        return -1;
    }
    c->dp->slots[ss].ptr = sv->data;
    c->dp->slots[bs].ptr = bv->data;
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_DST}, sl[4] = {xs, ss, bs, ys};
    int rr = add_prim(c, pd, 4, args, sl, NULL);
    pd_release(c, pd);
    return rr;
}

/* Transpose as a reorder from a permuted view of the input. */
static int build_transpose(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x], *yv = &g->values[y];
    int r = xv->ndim;
    if (!is_f32(xv) || r < 1 || r > DNNL_MAX_NDIMS) return -1;
    const int64_t *perm;
    int np = rt_attr_ints(n, "perm", &perm);
    int64_t pm[DNNL_MAX_NDIMS];
    for (int i = 0; i < r; i++) pm[i] = np == r ? perm[i] : r - 1 - i;
    int64_t xstr[DNNL_MAX_NDIMS];
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        xstr[i] = s;
        s *= xv->dims[i];
    }
    dnnl_dims_t vd, vs;
    for (int i = 0; i < r; i++) {
        if (pm[i] < 0 || pm[i] >= r) return -1;
        vd[i] = yv->dims[i];
        vs[i] = xstr[pm[i]];
    }
    dnnl_memory_desc_t smd, dmd;
    if (!ok(dnnl_memory_desc_init_by_strides(&smd, r, vd, dnnl_f32, vs))) return -1;
    md_plain(&dmd, r, yv->dims);
    dnnl_primitive_attr_t at = attr_new();
    dnnl_primitive_desc_t pd = NULL;
    if (!ok(reorder_pd(c, &pd, &smd, &dmd, at))) pd = NULL;
    dnnl_primitive_attr_destroy(at);
    if (!pd) return -1;
    int xs = need_plain(c, x);
    int ys = xs < 0 ? -1 : out_slot(c, y, &dmd);
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, sl[2] = {xs, ys};
    const dnnl_memory_desc_t *mds[2] = {&smd, &dmd};
    int rr = ys < 0 ? -1 : add_prim(c, pd, 2, args, sl, mds);
    pd_release(c, pd);
    return rr;
}

/* Any node with the reference kernel, on plain inputs. */
static int build_ref(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in > 16 || n->n_out > 8) return -1;
    int in_s[16], out_s[8];
    for (int k = 0; k < n->n_in; k++) {
        in_s[k] = n->in[k] < 0 ? -1 : need_plain(c, n->in[k]);
        if (n->in[k] >= 0 && in_s[k] < 0) return -1;
    }
    for (int k = 0; k < n->n_out; k++) {
        out_s[k] = -1;
        if (n->out[k] < 0) continue;
        const rt_value *v = &g->values[n->out[k]];
        dnnl_memory_desc_t md;
        if (is_f32(v)) md_plain(&md, v->ndim, v->dims);
        out_s[k] = out_slot(c, n->out[k], is_f32(v) ? &md : NULL);
        if (out_s[k] < 0) return -1;
    }
    dn_step *s = step_new(c, DN_STEP_REF);
    if (!s) return -1;
    s->node = ni;
    s->n_in = n->n_in;
    s->n_out = n->n_out;
    memcpy(s->in_slot, in_s, sizeof(int) * (size_t)n->n_in);
    memcpy(s->out_slot, out_s, sizeof(int) * (size_t)n->n_out);
    return 0;
}

/* ---- memory plan ------------------------------------------------------------- */

typedef struct blk {
    size_t off, size;
} blk;

static size_t al64(size_t n) { return (n + 63) & ~(size_t)63; }

static int mem_plan(dn_cc *c)
{
    dn_plan *dp = c->dp;
    for (int i = 0; i < dp->n_steps; i++) {
        dn_step *s = &dp->steps[i];
        int ids[DN_MAX_ARGS + 24], k = 0;
        if (s->kind == DN_STEP_PRIM)
            for (int a = 0; a < s->n_args; a++) ids[k++] = s->slot[a];
        for (int a = 0; a < s->n_in; a++) ids[k++] = s->in_slot[a];
        for (int a = 0; a < s->n_out; a++) ids[k++] = s->out_slot[a];
        for (int j = 0; j < k; j++) {
            if (ids[j] < 0) continue;
            dn_slot *sl = &dp->slots[ids[j]];
            if (sl->first < 0) sl->first = i;
            sl->last = i;
        }
    }
    for (int i = 0; i < c->g->n_outputs; i++) {
        int s = dp->vplain[c->g->outputs[i]];
        if (s >= 0) dp->slots[s].last = dp->n_steps;
    }
    blk *fl = lector__malloc(sizeof *fl * (size_t)(dp->n_slots + 1));
    if (!fl) return -1;
    int nf = 0;
    size_t top = 0, peak = 0;
    /* slots ordered by first use: walk steps */
    int *by_first = lector__calloc((size_t)dp->n_steps + 2, sizeof(int));
    int *next = lector__malloc(sizeof(int) * (size_t)(dp->n_slots + 1));
    int *by_last = lector__calloc((size_t)dp->n_steps + 2, sizeof(int));
    int *next2 = lector__malloc(sizeof(int) * (size_t)(dp->n_slots + 1));
    if (!by_first || !next || !by_last || !next2) {
        lector__free(fl);
        lector__free(by_first);
        lector__free(next);
        lector__free(by_last);
        lector__free(next2);
        return -1;
    }
    for (int i = 0; i <= dp->n_steps + 1; i++) by_first[i] = by_last[i] = -1;
    for (int i = 0; i < dp->n_slots; i++) {
        dn_slot *sl = &dp->slots[i];
        if (sl->kind != DN_SLOT_ARENA || i == dp->scratch_slot || sl->first < 0) continue;
        next[i] = by_first[sl->first];
        by_first[sl->first] = i;
        next2[i] = by_last[sl->last];
        by_last[sl->last] = i;
    }
    for (int st = 0; st <= dp->n_steps; st++) {
        for (int i = by_first[st]; i >= 0; i = next[i]) {
            size_t sz = al64(dp->slots[i].size ? dp->slots[i].size : 1);
            int best = -1;
            for (int b = 0; b < nf; b++)
                if (fl[b].size >= sz && (best < 0 || fl[b].size < fl[best].size)) best = b;
            if (best >= 0) {
                dp->slots[i].off = fl[best].off;
                fl[best].off += sz;
                fl[best].size -= sz;
                if (!fl[best].size) fl[best] = fl[--nf];
            } else {
                dp->slots[i].off = top;
                top += sz;
            }
            if (top > peak) peak = top;
        }
        for (int i = by_last[st]; i >= 0; i = next2[i]) {
            size_t sz = al64(dp->slots[i].size ? dp->slots[i].size : 1);
            size_t off = dp->slots[i].off;
            /* merge with neighbours */
            int merged = 1;
            while (merged) {
                merged = 0;
                for (int b = 0; b < nf; b++) {
                    if (fl[b].off + fl[b].size == off) {
                        off = fl[b].off;
                        sz += fl[b].size;
                        fl[b] = fl[--nf];
                        merged = 1;
                        break;
                    }
                    if (off + sz == fl[b].off) {
                        sz += fl[b].size;
                        fl[b] = fl[--nf];
                        merged = 1;
                        break;
                    }
                }
            }
            if (off + sz == top)
                top = off;
            else
                fl[nf++] = (blk){off, sz};
        }
    }
    /* unused slots (never referenced): give them a valid offset */
    for (int i = 0; i < dp->n_slots; i++)
        if (dp->slots[i].kind == DN_SLOT_ARENA && dp->slots[i].first < 0 && i != dp->scratch_slot) dp->slots[i].off = 0;
    lector__free(fl);
    lector__free(by_first);
    lector__free(next);
    lector__free(by_last);
    lector__free(next2);
    top = al64(peak);
    dp->slots[dp->scratch_slot].off = top;
    dp->slots[dp->scratch_slot].size = dp->scratch_size;
    dp->arena_size = top + al64(dp->scratch_size) + 64;
    return 0;
}

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

static void dn_plan_free(rt_backend *be, rt_plan *p)
{
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
    dp->scratch_slot = slot_new(&c, DN_SLOT_ARENA, -1, NULL, 0);
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
            case RT_OP_Conv: r = build_conv(&c, ni, 0); break;
            case RT_OP_ConvTranspose:
                r = build_deconv_d2s(&c, ni);
                if (r && !c.fail) r = build_conv(&c, ni, 1);
                break;
            case RT_OP_MaxPool:
            case RT_OP_AveragePool: r = build_pool(&c, ni); break;
            case RT_OP_GlobalAveragePool:
                r = build_gap(&c, ni);
                if (r && !c.fail) r = build_pool(&c, ni);
                break;
            case RT_OP_Add:
            case RT_OP_Sub:
            case RT_OP_Mul:
            case RT_OP_Div: r = build_binary(&c, ni); break;
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
            case RT_OP_Clip: r = build_eltwise(&c, ni); break;
            case RT_OP_Concat: r = build_concat(&c, ni); break;
            case RT_OP_Resize: r = build_resize(&c, ni); break;
            case RT_OP_MatMul: r = build_matmul(&c, ni); break;
            case RT_OP_Softmax: r = build_softmax(&c, ni); break;
            case RT_OP_LayerNormalization: r = build_layernorm(&c, ni); break;
            case RT_OP_Transpose: r = build_transpose(&c, ni); break;
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
            if (build_ref(&c, ni)) {
                st = lector__error(err, c.fail ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                                   "%s: cannot prepare node %s (%s)", g->name, n->name, op_name(n->op));
            }
        }
    }
    for (int i = 0; i < g->n_outputs && !st; i++) {
        int v = g->outputs[i];
        set_threads(&c, rt_value_numel(&g->values[v]) < 256 * 1024 ? 1 : threads);
        dp->out_slot[i] = need_plain(&c, v);
        if (dp->out_slot[i] < 0)
            st = lector__error(err, LECTOR_ERR_BACKEND, "%s: output %s has no layout", g->name, g->values[v].name);
    }
    if (!st && mem_plan(&c)) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
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
    while (c.n_handed > 0) pd_release(&c, c.handed[c.n_handed - 1].pd); /* builders give back what they take */
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

static lector_status dn_plan_compile(rt_backend *be, rt_plan *p, lector_error *err)
{
    dn_plan *dp;
    lector_status st = compile_variant(be, p, be->threads > 0 ? be->threads : 1, &dp, err);
    if (st) return st;
    p->be_plan = dp;
    p->arena_size = dp->arena_size;
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

static int effective_threads(int T)
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
static dn_plan *variant(rt_backend *be, const rt_plan *p, int threads)
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

/* ---- execute -------------------------------------------------------------------- */

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
    if (!x->mem || !x->ptr || !ok(dnnl_stream_create(&x->stream, db->eng, dnnl_stream_default_flags))) {
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

static lector_status dn_plan_execute(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                                     lector_tensor *outputs, lector_error *err)
{
    const rt_graph *g = p->g;
    dn_backend *db = be->ctx;
    dn_plan *dp = variant(be, p, effective_threads(((dn_plan *)p->be_plan)->threads));
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
                    if (!ok(dnnl_memory_create(&x->mem[k], &s->md[a], db->eng, ptr))) {
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
            if (!ok(dnnl_primitive_execute(s->prim, x->stream, s->n_args, args)))
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

/* ---- backend ---------------------------------------------------------------------- */

static lector_status dn_init(rt_backend *be, lector_error *err)
{
    dn_backend *db = lector__calloc(1, sizeof *db);
    if (!db) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    if (dn_caches_init(&db->caches)) {
        lector__free(db);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!ok(dnnl_engine_create(&db->eng, dnnl_cpu, 0))) {
        dn_caches_destroy(&db->caches);
        lector__free(db);
        return lector__error(err, LECTOR_ERR_BACKEND, "oneDNN: cannot create a CPU engine");
    }
    be->ctx = db;
    return LECTOR_OK;
}

static void dn_shutdown(rt_backend *be)
{
    dn_backend *db = be->ctx;
    if (!db) return;
    dn_caches_destroy(&db->caches);
    dnnl_engine_destroy(db->eng);
    lector__free(db);
    be->ctx = NULL;
}

static uint64_t dn_kernels(rt_backend *be)
{
    dn_backend *db = be->ctx;
    return db ? dn_kernels_compiled(&db->caches) : 0;
}

static const rt_backend_iface dn_iface = {
    .api_version = RT_BACKEND_API_VERSION,
    .name = "onednn",
    .features = RT_FEATURE_HOST_MEMORY | RT_FEATURE_FUSED_ACT,
    .init = dn_init,
    .shutdown = dn_shutdown,
    .buffer_alloc = rt_host_buffer_alloc,
    .buffer_free = rt_host_buffer_free,
    .plan_compile = dn_plan_compile,
    .plan_execute = dn_plan_execute,
    .plan_free = dn_plan_free,
    .kernels_compiled = dn_kernels,
};

const rt_backend_iface *rt_backend_onednn(void) { return &dn_iface; }
