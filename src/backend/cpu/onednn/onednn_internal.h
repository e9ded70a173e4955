/*
 * onednn_internal.h - what the files of the oneDNN CPU backend share
 * (onednn_backend.c has the map of its files, onednn.h the plan's types and
 * how the backend works). Nothing here is seen outside this folder.
 *
 * A plan is compiled by one dn_cc: each live node's builder (onednn_conv.c,
 * onednn_matmul.c, onednn_ops.c) adds steps and slots through
 * onednn_desc.c's helpers and fuses the node's followers through
 * onednn_fuse.c's chains; onednn_memory.c then lays out the arena.
 */
#ifndef LECTOR_ONEDNN_INTERNAL_H
#define LECTOR_ONEDNN_INTERNAL_H

#include "backend/cpu/onednn/onednn.h"

/* The backend's state (rt_backend.ctx). */
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
     * compile, with their entries (dn_pd_release gives them back) */
    struct {
        dnnl_primitive_desc_t pd;
        dn_kernel *kern;
    } * handed;
    int n_handed;
    size_t cap_handed;
} dn_cc;

static inline int dn_ok(dnnl_status_t s) { return s == dnnl_success; }

static inline int dn_is_f32(const rt_value *v) { return v->dtype == LECTOR_DTYPE_FLOAT32; }

static inline int dn_same_dims(const rt_value *a, const rt_value *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* ---- onednn_desc.c: memory descriptors, slots, steps, primitive descriptors ---- */

/* f32 descriptors of nd dims: in layout `tag` (undef: plain), plain, any
 * (the primitive chooses); equality; is it plain. */
void dn_md_make(dnnl_memory_desc_t *md, int nd, const int64_t *dims, dnnl_format_tag_t tag);
void dn_md_plain(dnnl_memory_desc_t *md, int nd, const int64_t *dims);
void dn_md_any(dnnl_memory_desc_t *md, int nd, const int64_t *dims);
int dn_md_eq(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b);
int dn_md_is_plain(const dnnl_memory_desc_t *md);

/* A new slot (its index) or step of the plan; -1 / NULL with c->fail set
 * when out of memory. */
int dn_slot_new(dn_cc *c, int kind, int value, const dnnl_memory_desc_t *md, size_t size);
dn_step *dn_step_new(dn_cc *c, int kind);
/* A buffer the plan frees with itself; -1 when out of memory. */
int dn_owned_keep(dn_cc *c, void *p);
/* Adds a constant's bytes (or its address) to a key of the model's caches. */
void dn_key_const(dn_key *k, const rt_value *v);

/* Primitive descriptors from the kernel cache; each one a builder takes is
 * given back with dn_pd_release. */
dnnl_primitive_desc_t dn_pd_create(dn_cc *c, const void *desc, size_t size, dnnl_primitive_attr_t at);
dnnl_primitive_desc_t dn_pd_create_consuming(dn_cc *c, int desc_ok, const void *d, size_t n, dnnl_primitive_attr_t at);
dnnl_status_t dn_reorder_pd(dn_cc *c, dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *smd,
                            const dnnl_memory_desc_t *dmd, const_dnnl_primitive_attr_t at);
dnnl_status_t dn_concat_pd(dn_cc *c, dnnl_primitive_desc_t *pd, const dnnl_memory_desc_t *dmd, int n, int axis,
                           const dnnl_memory_desc_t *smd, const_dnnl_primitive_attr_t at);
void dn_pd_release(dn_cc *c, dnnl_primitive_desc_t pd);
int dn_reorder_now(dn_cc *c, const dnnl_memory_desc_t *smd, void *src, const dnnl_memory_desc_t *dmd, void *dst);
dnnl_primitive_attr_t dn_attr_new(void);
int dn_add_prim(dn_cc *c, dnnl_primitive_desc_t pd, int n, const int *args, const int *slots,
                const dnnl_memory_desc_t *const *mds);
int dn_add_unary_prim(dn_cc *c, dnnl_primitive_desc_t pd, int xs, int y, const dnnl_memory_desc_t *ymd,
                      const dnnl_memory_desc_t *const *mds);

/* The slots of a value: its primary one, one in layout `want` (a reorder
 * added where needed), a plain one, a new primary one in the arena; -1 on
 * failure. */
int dn_vslot(dn_cc *c, int v);
int dn_need_md(dn_cc *c, int v, const dnnl_memory_desc_t *want);
int dn_need_plain(dn_cc *c, int v);
int dn_out_slot(dn_cc *c, int v, const dnnl_memory_desc_t *md);

/* ---- fused chains ---------------------------------------------------------- */

enum { DN_PO_ELT, DN_PO_BIN };

typedef struct dn_po_ent {
    int kind;
    dnnl_alg_kind_t alg;
    float a, b;
    int value; /* DN_PO_BIN: the other operand */
} dn_po_ent;

typedef struct dn_chain {
    int n_po;
    dn_po_ent po[24];
    int end; /* value the primitive finally writes */
    int consumed[48];
    int n_consumed;
    int C, axis; /* per-channel folding (C > 0: allowed) */
    float *scale, *shift;
    int folded; /* scale/shift differ from identity */
    int nonlin;
    rt_act tail_act; /* an activation no post-op can express: own step */
    float tail_a, tail_b;
} dn_chain;

/* onednn_fuse.c: a chain starts with dn_chain_init and ends with
 * dn_chain_clear; a builder walks the node's followers into it, creates its
 * primitive with dn_chain_attr's post-ops and adds it with
 * dn_add_chained_prim (or dn_add_prim and dn_chain_commit). */
int dn_po_elt(dn_chain *ch, dnnl_alg_kind_t alg, float a, float b);
int dn_po_act(dn_chain *ch, rt_act act, float a, float b);
int dn_const_scalar(const rt_graph *g, int v, float *s);
void dn_chain_walk(dn_cc *c, int ni, dn_chain *ch, int allow_bin);
void dn_chain_attempt(dn_cc *c, int ni, dn_chain *ch, int attempt);
int dn_chain_init(dn_chain *ch, int C, int axis);
void dn_chain_clear(dn_chain *ch);
/* A builder's failure exit: releases pd (may be NULL), clears ch, returns -1. */
int dn_chain_abandon(dn_cc *c, dn_chain *ch, dnnl_primitive_desc_t pd);
dnnl_primitive_attr_t dn_chain_attr(dn_cc *c, const dn_chain *ch, dnnl_memory_desc_t *bin_md,
                                    const dnnl_memory_desc_t *dst_view);
int dn_chain_commit(dn_cc *c, const dn_chain *ch, int oslot);
int dn_add_chained_prim(dn_cc *c, const dn_chain *ch, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *bin_md,
                        int *args, int *sl, const dnnl_memory_desc_t **mds, int n, int plain_view, int ys);

/* onednn_conv.c: weights converted for a primitive (with the chain's folded
 * affine ops), kept by the model's caches. A builder makes the key, takes
 * the converted weights and bias with dn_weights_get or, when they are new,
 * fills the plain ones it is given and hands them to dn_weights_convert. */
void dn_weights_key(dn_cc *c, dn_key *k, const char *tag, int w, int b, const dn_chain *ch,
                    const dnnl_memory_desc_t *wq);
int dn_weights_get(dn_cc *c, const dn_key *k, size_t wn, size_t bn, const dnnl_memory_desc_t *wq, float **wf, void **wr,
                   float **bf);
int dn_weights_convert(dn_cc *c, const dn_key *k, const dnnl_memory_desc_t *wmd, float *wf,
                       const dnnl_memory_desc_t *wq, void **wr, float **bf);
int dn_weights_slots(dn_cc *c, int w, const dnnl_memory_desc_t *wq, void *wr, const dnnl_memory_desc_t *bmd, float *bf,
                     int *ws, int *bs);

/* ---- builders: each returns 0 (steps added) or -1 (use the reference) ---- */

int dn_build_conv(dn_cc *c, int ni, int transposed); /* onednn_conv.c */
int dn_build_deconv_d2s(dn_cc *c, int ni);
int dn_build_matmul(dn_cc *c, int ni);  /* onednn_matmul.c */
int dn_build_eltwise(dn_cc *c, int ni); /* onednn_ops.c */
int dn_build_binary(dn_cc *c, int ni);
int dn_build_gap(dn_cc *c, int ni);
int dn_build_pool(dn_cc *c, int ni);
int dn_build_concat(dn_cc *c, int ni);
int dn_build_resize(dn_cc *c, int ni);
int dn_build_softmax(dn_cc *c, int ni);
int dn_build_layernorm(dn_cc *c, int ni);
int dn_build_transpose(dn_cc *c, int ni);
int dn_build_ref(dn_cc *c, int ni);

/* onednn_memory.c: the slots' offsets in the arena and dp->arena_size; -1
 * when out of memory. */
int dn_mem_plan(dn_cc *c);

/* onednn_plan.c: the iface's plan_compile and plan_free; the threads a run
 * uses and the plan variant compiled for them. */
lector_status dn_plan_compile(rt_backend *be, rt_plan *p, lector_error *err);
void dn_plan_free(rt_backend *be, rt_plan *p);
int dn_effective_threads(int T);
dn_plan *dn_variant(rt_backend *be, const rt_plan *p, int threads);

/* onednn_exec.c: the iface's plan_execute. */
lector_status dn_plan_execute(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                              lector_tensor *outputs, lector_error *err);

/* onednn_generic.c: the iface's plan_generic, and what dn_plan_free calls
 * for a generic plan. dn_generic_prepare creates (in the kernel cache) the
 * kernels the model's generic plans will run, from any plan of it: called
 * by every compile, so that a stream warmed up on any shapes compiles
 * nothing when its first generic shape comes (a cache hit once made). */
lector_status dn_plan_generic(rt_backend *be, rt_plan *p, lector_error *err);
void dn_generic_free(rt_backend *be, rt_plan *p);
void dn_generic_prepare(rt_backend *be, const rt_plan *p);

#endif
