/*
 * onednn_desc.c - what the builders add a plan's steps with: oneDNN memory
 * descriptors, slots (a value's buffer in one layout, with the reorders
 * that make it), steps, and primitive descriptors and primitives from the
 * model's kernel cache (onednn_cache.h).
 */
#include <string.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "util/util.h"

static const dnnl_format_tag_t plain_tags[7] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde, dnnl_abcdef};

void dn_md_make(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag)
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

void dn_md_plain(dnnl_memory_desc_t *md, int nd, const int64_t *dims)
{
    dn_md_make(md, nd, dims, dnnl_format_tag_undef);
}

void dn_md_any(dnnl_memory_desc_t *md, int nd, const int64_t *dims) { dn_md_make(md, nd, dims, dnnl_format_tag_any); }

int dn_md_eq(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b) { return dnnl_memory_desc_equal(a, b) != 0; }

int dn_md_is_plain(const dnnl_memory_desc_t *md)
{
    dnnl_memory_desc_t p;
    int64_t d[DNNL_MAX_NDIMS];
    for (int i = 0; i < md->ndims; i++) d[i] = md->dims[i];
    dn_md_plain(&p, md->ndims, d);
    return dn_md_eq(md, &p);
}

/* ---- slots and steps ------------------------------------------------------- */

int dn_slot_new(dn_cc *c, int kind, int value, const dnnl_memory_desc_t *md, size_t size)
{
    dn_plan *dp = c->dp;
    if (lector__reserve(&dp->slots, &dp->cap_slots, (size_t)dp->n_slots + 1, sizeof *dp->slots)) {
        c->fail = 1;
        return -1;
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

dn_step *dn_step_new(dn_cc *c, int kind)
{
    dn_plan *dp = c->dp;
    if (lector__reserve(&dp->steps, &dp->cap_steps, (size_t)dp->n_steps + 1, sizeof *dp->steps)) {
        c->fail = 1;
        return NULL;
    }
    dn_step *s = &dp->steps[dp->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = -1;
    return s;
}

/* Keeps buffer p (lector__aligned_alloc'd) until the plan is freed. */
int dn_owned_keep(dn_cc *c, void *p)
{
    dn_plan *dp = c->dp;
    if (lector__reserve(&dp->owned, &dp->cap_owned, (size_t)dp->n_owned + 1, sizeof *dp->owned)) return -1;
    dp->owned[dp->n_owned++] = p;
    return 0;
}

static void key_threads(dn_cc *c, dn_key *k) { dn_key_add(k, &c->nthr, sizeof c->nthr); }

/* Hands out a cached primitive descriptor (remembered for dn_add_prim and
 * dn_pd_release); NULL when the key is not cached. */
static dnnl_primitive_desc_t handed(dn_cc *c, dn_kernel *e)
{
    if (!e) return NULL;
    if (lector__reserve(&c->handed, &c->cap_handed, (size_t)c->n_handed + 1, sizeof *c->handed)) {
        dn_kernel_release(c->caches, e);
        c->fail = 1;
        return NULL;
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
        if (!dn_ok(make(ctx, &pd))) return NULL;
        if (k->fail) return pd; /* not keyable: this plan's own */
        e = dn_kernel_insert(c->caches, k, pd);
        if (!e) {
            c->fail = 1;
            return NULL;
        }
    }
    return handed(c, e);
}

/* Gives back a descriptor from dn_pd_create/dn_reorder_pd/dn_concat_pd. */
void dn_pd_release(dn_cc *c, dnnl_primitive_desc_t pd)
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
    if (!dn_ok(dnnl_primitive_create(&pr, pd))) return NULL;
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

dnnl_status_t dn_reorder_pd(dn_cc *c, dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *smd,
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

dnnl_status_t dn_concat_pd(dn_cc *c, dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *dmd, int n, int axis,
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
int dn_reorder_now(dn_cc *c, const dnnl_memory_desc_t *smd, void *src, const dnnl_memory_desc_t *dmd, void *dst)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t pr = NULL;
    dn_kernel *kern = NULL;
    dnnl_memory_t ms = NULL, md = NULL;
    dnnl_stream_t st = NULL;
    int r = -1;
    if (dn_ok(dn_reorder_pd(c, &pd, smd, dmd, NULL)) && (pr = pd_primitive(c, pd, &kern)) &&
        dn_ok(dnnl_memory_create(&ms, smd, c->eng, src)) && dn_ok(dnnl_memory_create(&md, dmd, c->eng, dst)) &&
        dn_ok(dnnl_stream_create(&st, c->eng, dnnl_stream_default_flags))) {
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, ms}, {DNNL_ARG_TO, md}};
        if (dn_ok(dnnl_primitive_execute(pr, st, 2, a)) && dn_ok(dnnl_stream_wait(st))) r = 0;
    }
    if (st) dnnl_stream_destroy(st);
    if (ms) dnnl_memory_destroy(ms);
    if (md) dnnl_memory_destroy(md);
    if (kern)
        dn_kernel_release(c->caches, kern);
    else if (pr)
        dnnl_primitive_destroy(pr);
    dn_pd_release(c, pd);
    return r;
}

/* Key of a constant's bytes: its address when the model's base graph owns
 * it (stable for the model's life, shared by every plan), else the bytes
 * themselves (a value folded for this plan only, freed with it). */
void dn_key_const(dn_key *k, const rt_value *v)
{
    int by_address = !v->owns_data;
    dn_key_add(k, &by_address, sizeof by_address);
    if (by_address)
        dn_key_add(k, &v->data, sizeof v->data);
    else
        dn_key_add(k, v->data, rt_value_nbytes(v));
}

/* Primary slot of a value (constants and graph inputs get one lazily). */
int dn_vslot(dn_cc *c, int v)
{
    dn_plan *dp = c->dp;
    if (dp->vslot[v] >= 0) return dp->vslot[v];
    const rt_value *val = &c->g->values[v];
    dnnl_memory_desc_t md;
    int f = dn_is_f32(val);
    if (f) dn_md_plain(&md, val->ndim, val->dims);
    int s;
    if (val->data) {
        s = dn_slot_new(c, DN_SLOT_CONST, v, f ? &md : NULL, rt_value_nbytes(val));
        if (s >= 0) c->dp->slots[s].ptr = val->data;
    } else {
        int idx = -1;
        for (int i = 0; i < c->g->n_inputs; i++)
            if (c->g->inputs[i] == v) idx = i;
        if (idx < 0) return -1; /* not produced yet: a bug */
        s = dn_slot_new(c, DN_SLOT_INPUT, v, f ? &md : NULL, rt_value_nbytes(val));
        if (s >= 0) c->dp->slots[s].input = idx;
    }
    if (s < 0) return -1;
    dp->vslot[v] = s;
    dp->vplain[v] = s;
    return s;
}

dnnl_primitive_attr_t dn_attr_new(void)
{
    dnnl_primitive_attr_t a = NULL;
    if (!dn_ok(dnnl_primitive_attr_create(&a))) return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user);
    return a;
}

/* Appends a primitive step; args[i] reads/writes slot slots[i] with md mds[i]
 * (NULL = the slot's own md). Takes care of the scratchpad. */
int dn_add_prim(dn_cc *c, dnnl_primitive_desc_t pd, int n, const int *args, const int *slots,
                const dnnl_memory_desc_t *const *mds)
{
    dn_kernel *kern;
    dnnl_primitive_t pr = pd_primitive(c, pd, &kern);
    if (!pr) return -1;
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sps = sp ? dnnl_memory_desc_get_size(sp) : 0;
    dn_step *s = dn_step_new(c, DN_STEP_PRIM);
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
int dn_need_md(dn_cc *c, int v, const dnnl_memory_desc_t *want)
{
    dn_plan *dp = c->dp;
    int s = dn_vslot(c, v);
    if (s < 0) return -1;
    if (!dn_is_f32(&c->g->values[v])) return s; /* non-f32 values are always plain */
    if (dn_md_eq(&dp->slots[s].md, want)) return s;
    if (dp->vplain[v] >= 0 && dn_md_eq(&dp->slots[dp->vplain[v]].md, want)) return dp->vplain[v];
    if (dp->valt[v] >= 0 && dn_md_eq(&dp->slots[dp->valt[v]].md, want)) return dp->valt[v];
    int t;
    if (dp->slots[s].kind == DN_SLOT_CONST) {
        dn_key k;
        dn_key_init(&k, "const-reorder");
        if (dp->slots[s].value >= 0 && c->g->values[dp->slots[s].value].data == dp->slots[s].ptr)
            dn_key_const(&k, &c->g->values[dp->slots[s].value]);
        else
            k.fail = 1; /* a buffer converted for this plan: not shared */
        dn_key_add(&k, &dp->slots[s].md, sizeof dp->slots[s].md);
        dn_key_add(&k, want, sizeof *want);
        const dn_const *cv = dn_const_find(c->caches, &k);
        void *buf = cv ? cv->data[0] : NULL;
        if (!buf) {
            buf = lector__aligned_alloc(dnnl_memory_desc_get_size(want));
            if (!buf || dn_reorder_now(c, &dp->slots[s].md, dp->slots[s].ptr, want, buf)) {
                lector__free(buf);
                dn_key_free(&k);
                return -1;
            }
            if (k.fail) { /* kept by the plan */
                if (dn_owned_keep(c, buf)) {
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
        t = dn_slot_new(c, DN_SLOT_CONST, v, want, 0);
        if (t < 0) return -1;
        dp->slots[t].ptr = buf;
    } else {
        dnnl_primitive_desc_t pd;
        dnnl_primitive_attr_t at = dn_attr_new();
        if (!dn_ok(dn_reorder_pd(c, &pd, &dp->slots[s].md, want, at))) {
            dnnl_primitive_attr_destroy(at);
            return -1;
        }
        dnnl_primitive_attr_destroy(at);
        t = dn_slot_new(c, DN_SLOT_ARENA, v, want, 0);
        int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, sl[2] = {s, t};
        int r = t < 0 ? -1 : dn_add_prim(c, pd, 2, args, sl, NULL);
        dn_pd_release(c, pd);
        if (r) return -1;
    }
    if (dn_md_is_plain(want))
        dp->vplain[v] = t;
    else
        dp->valt[v] = t;
    return t;
}

int dn_need_plain(dn_cc *c, int v)
{
    const rt_value *val = &c->g->values[v];
    if (!dn_is_f32(val)) return dn_vslot(c, v);
    if (c->dp->vplain[v] >= 0) return c->dp->vplain[v];
    dnnl_memory_desc_t md;
    dn_md_plain(&md, val->ndim, val->dims);
    return dn_need_md(c, v, &md);
}

/* New arena slot for the value v (its primary slot) in layout md. */
int dn_out_slot(dn_cc *c, int v, const dnnl_memory_desc_t *md)
{
    int s = dn_slot_new(c, DN_SLOT_ARENA, v, md, rt_value_nbytes(&c->g->values[v]));
    if (s < 0) return -1;
    c->dp->vslot[v] = s;
    if (!md || dn_md_is_plain(md)) c->dp->vplain[v] = s;
    return s;
}

/* Adds pd as a step from slot xs (< 0: the caller could not get it; -1) to
 * a new slot of value y in layout ymd (NULL: the destination pd chose),
 * read and written as mds says (dn_add_prim), and gives pd back: the tail
 * of every builder of a one-input primitive without post-ops (pooling,
 * Resize, Softmax, Transpose). */
int dn_add_unary_prim(dn_cc *c, dnnl_primitive_desc_t pd, int xs, int y, const dnnl_memory_desc_t *ymd,
                      const dnnl_memory_desc_t *const *mds)
{
    /* a reorder's FROM and TO are the SRC and DST of the other primitives */
    _Static_assert(DNNL_ARG_FROM == DNNL_ARG_SRC && DNNL_ARG_TO == DNNL_ARG_DST, "oneDNN argument numbering");
    if (!ymd) ymd = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int ys = xs < 0 ? -1 : dn_out_slot(c, y, ymd);
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, sl[2] = {xs, ys};
    int r = ys < 0 ? -1 : dn_add_prim(c, pd, 2, args, sl, mds);
    dn_pd_release(c, pd);
    return r;
}

/* ---- operation descriptors ---------------------------------------------- */

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
dnnl_primitive_desc_t dn_pd_create(dn_cc *c, const void *desc, size_t size, dnnl_primitive_attr_t at)
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

/* dn_pd_create when the operation descriptor was made (desc_ok), else NULL;
 * the attributes are destroyed either way. */
dnnl_primitive_desc_t dn_pd_create_consuming(dn_cc *c, int desc_ok, const void *d, size_t n, dnnl_primitive_attr_t at)
{
    dnnl_primitive_desc_t pd = desc_ok ? dn_pd_create(c, d, n, at) : NULL;
    if (at) dnnl_primitive_attr_destroy(at);
    return pd;
}
