/*
 * onednn_fuse.c - fusion done here on top of the graph passes: after a
 * Conv/ConvTranspose/MatMul/binary/eltwise node, a chain of single-consumer
 * followers becomes post-ops of the one primitive: scalar Mul/Add/Sub/Div
 * (linear), activations, x*clip(x+3,0,6)/6 (hardswish, as paddle2onnx
 * writes it), a residual Add of a tensor of the same shape (binary
 * post-op). Before the first non-linearity, per-channel constant Mul/Add
 * and BatchNormalization are folded into the weights and bias instead.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "util/testctl.h"
#include "util/util.h"

/* Appends an eltwise post-op. oneDNN 2.6's JIT kernels give every eltwise
 * post-op of one algorithm the parameters of the first one (two linear
 * post-ops (2,0) and (1,1) both compute 2x): consecutive linear ops are
 * composed into one, and a second op of an algorithm already present with
 * other parameters ends the chain (-1). */
int dn_po_elt(dn_chain *ch, dnnl_alg_kind_t alg, float a, float b)
{
    if (ch->n_po > 0 && alg == dnnl_eltwise_linear) {
        int l = ch->n_po - 1;
        if (ch->po[l].kind == DN_PO_ELT && ch->po[l].alg == dnnl_eltwise_linear) {
            float a1 = ch->po[l].a, b1 = ch->po[l].b;
            ch->po[l].a = a * a1;
            ch->po[l].b = a * b1 + b;
            return 0;
        }
    }
    for (int i = 0; i < ch->n_po; i++)
        if (ch->po[i].kind == DN_PO_ELT && ch->po[i].alg == alg && (ch->po[i].a != a || ch->po[i].b != b)) return -1;
    if (ch->n_po >= 20) return -1;
    ch->po[ch->n_po].kind = DN_PO_ELT;
    ch->po[ch->n_po].alg = alg;
    ch->po[ch->n_po].a = a;
    ch->po[ch->n_po].b = b;
    ch->n_po++;
    return 0;
}

/* Activation as post-ops; -1 (chain unchanged) if it cannot be expressed. */
int dn_po_act(dn_chain *ch, rt_act act, float a, float b)
{
    int r = 0, n0 = ch->n_po;
    dn_po_ent save[24];
    memcpy(save, ch->po, sizeof save);
    switch (act) {
    case RT_ACT_NONE: return 0;
    case RT_ACT_RELU: r = dn_po_elt(ch, dnnl_eltwise_relu, 0, 0); break;
    case RT_ACT_SIGMOID: r = dn_po_elt(ch, dnnl_eltwise_logistic, 0, 0); break;
    case RT_ACT_SWISH: r = dn_po_elt(ch, dnnl_eltwise_swish, 1.f, 0); break;
    case RT_ACT_HARDSIGMOID:
        r = dn_po_elt(ch, dnnl_eltwise_linear, a, b);
        if (!r) r = dn_po_elt(ch, dnnl_eltwise_clip, 0.f, 1.f);
        break;
    case RT_ACT_HARDSWISH:
        /* 2.6's hardswish is x*relu6(x+3)/6: alpha=1/6, beta=1/2 only */
        if (fabsf(a - 1.f / 6.f) > 1e-6f || fabsf(b - 0.5f) > 1e-6f) return -1;
        r = dn_po_elt(ch, dnnl_eltwise_hardswish, 0, 0);
        break;
    case RT_ACT_CLIP: r = dn_po_elt(ch, dnnl_eltwise_clip, isinf(a) ? -FLT_MAX : a, isinf(b) ? FLT_MAX : b); break;
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
int dn_const_scalar(const rt_graph *g, int v, float *s)
{
    if (v < 0) return 0;
    const rt_value *val = &g->values[v];
    if (!val->data || !dn_is_f32(val) || rt_value_numel(val) != 1) return 0;
    *s = *(const float *)val->data;
    return 1;
}

/* Constant with C elements along `axis` of a rank-r output, 1 elsewhere. */
static const float *const_per_channel(const rt_graph *g, int v, int r, int axis, int C)
{
    if (v < 0 || C <= 0) return NULL;
    const rt_value *val = &g->values[v];
    if (!val->data || !dn_is_f32(val) || rt_value_numel(val) != C || val->ndim > r) return NULL;
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
    return dn_is_f32(o) && dn_same_dims(o, &c->g->values[cur]);
}

/* Folds y' = m[k]*y + a[k] (per channel, or the same for all when pc == 0). */
static void fold_affine(dn_chain *ch, const float *m, const float *a, int pc)
{
    for (int k = 0; k < ch->C; k++) {
        float mm = m[pc ? k : 0], aa = a[pc ? k : 0];
        ch->scale[k] *= mm;
        ch->shift[k] = ch->shift[k] * mm + aa;
    }
    ch->folded = 1;
}

/* Starts a chain at node n's output with n's own fused activation: a
 * post-op, else a tail step (1: then nothing may follow). dn_chain_walk
 * begins with it; a builder's last attempt (dn_chain_attempt) is it alone. */
static int chain_start(dn_chain *ch, const rt_node *n)
{
    ch->end = n->out[0];
    if (n->act == RT_ACT_NONE || !dn_po_act(ch, n->act, n->act_alpha, n->act_beta)) return 0;
    ch->tail_act = n->act;
    ch->tail_a = n->act_alpha;
    ch->tail_b = n->act_beta;
    return 1;
}

/* The chain of a builder's attempt `attempt` at node ni (ch fresh from
 * dn_chain_init): 0 the followers with residual Adds as binary post-ops, 1
 * the followers without, 2 the node's own activation only. A builder tries
 * them in turn until oneDNN takes the primitive. */
void dn_chain_attempt(dn_cc *c, int ni, dn_chain *ch, int attempt)
{
    if (attempt < 2)
        dn_chain_walk(c, ni, ch, attempt == 0);
    else
        chain_start(ch, &c->g->nodes[ni]);
}

/* Walks the followers of node `ni` into a chain fresh from dn_chain_init.
 * allow_bin: residual Adds may become binary post-ops. Each link is tried on
 * a copy of the post-op list and committed only when it and its own fused
 * activation are both expressible. */
void dn_chain_walk(dn_cc *c, int ni, dn_chain *ch, int allow_bin)
{
    rt_graph *g = c->g;
    int nofuse = lector__tc_str(LECTOR__TC_ONEDNN_NOFUSE) != NULL;
    int cur = g->nodes[ni].out[0];
    if (chain_start(ch, &g->nodes[ni])) return;
    if (nofuse) return;
    int r = g->values[cur].ndim;
    for (int guard = 0; guard < 16; guard++) {
        if (g->values[cur].is_output || ch->n_consumed > 40 || ch->n_po > 16) return;
        int nc = c->ncons[cur];
        int nofold = lector__tc_str(LECTOR__TC_ONEDNN_NOFOLD) != NULL;
        int foldable = ch->C > 0 && !ch->nonlin && ch->n_po == 0 && !nofold;
        dn_chain t = *ch; /* tentative post-op list */
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
                if (dn_const_scalar(g, o, &s)) {
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
                    else if (dn_po_elt(&t, dnnl_eltwise_linear, m1, a1))
                        return;
                } else if (foldable && (pc = const_per_channel(g, o, r, ch->axis, ch->C))) {
                    if ((op == RT_OP_Sub || op == RT_OP_Div) && !first) return;
                    if (op == RT_OP_Div)
                        for (int k = 0; k < ch->C; k++)
                            if (pc[k] == 0.f) return;
                    pcm = pc;
                    pc_op = op;
                } else if (allow_bin && op == RT_OP_Add && o >= 0 && !g->values[o].data && dn_is_f32(&g->values[o]) &&
                           dn_same_dims(&g->values[o], &g->values[cur]) && c->dp->vslot[o] >= 0 && t.n_po < 16) {
                    t.po[t.n_po].kind = DN_PO_BIN;
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
                    rr = dn_po_act(&t, RT_ACT_RELU, 0, 0);
                else if (op == RT_OP_Sigmoid)
                    rr = dn_po_act(&t, RT_ACT_SIGMOID, 0, 0);
                else if (op == RT_OP_Tanh)
                    rr = dn_po_elt(&t, dnnl_eltwise_tanh, 0, 0);
                else if (op == RT_OP_HardSwish)
                    rr = dn_po_act(&t, RT_ACT_HARDSWISH, 1.f / 6.f, 0.5f);
                else if (op == RT_OP_HardSigmoid)
                    rr = dn_po_act(&t, RT_ACT_HARDSIGMOID, rt_attr_float(n, "alpha", 0.2f),
                                   rt_attr_float(n, "beta", 0.5f));
                else {
                    float lo = -INFINITY, hi = INFINITY;
                    if (n->n_in > 1 && n->in[1] >= 0 && !dn_const_scalar(g, n->in[1], &lo)) return;
                    if (n->n_in > 2 && n->in[2] >= 0 && !dn_const_scalar(g, n->in[2], &hi)) return;
                    rr = dn_po_act(&t, RT_ACT_CLIP, lo, hi);
                }
                if (rr) return;
                t.nonlin = 1;
            } else {
                return;
            }
            if (n->act != RT_ACT_NONE) {
                /* the link's own activation comes after a fold: fold first on t's view */
                if ((fold || pcm || bn[0]) && t.n_po) return;
                if (dn_po_act(&t, n->act, n->act_alpha, n->act_beta)) return;
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
            if (!dn_const_scalar(g, cons_other(na, cur), &s3) || s3 != 3.f) return;
            int av = na->out[0], ki = -1, kv;
            if (na->act == RT_ACT_CLIP) { /* the fusion pass put the Clip into the Add */
                if (na->act_alpha != 0.f || na->act_beta != 6.f) return;
                kv = av;
            } else {
                if (na->act || c->ncons[av] != 1 || g->values[av].is_output) return;
                ki = c->cons[2 * av];
                const rt_node *nk = &g->nodes[ki];
                if (nk->op != RT_OP_Clip || nk->in[0] != av || nk->n_in < 3 || nk->act) return;
                if (!dn_const_scalar(g, nk->in[1], &lo) || !dn_const_scalar(g, nk->in[2], &hi) || lo != 0.f ||
                    hi != 6.f)
                    return;
                kv = nk->out[0];
            }
            if (c->ncons[kv] != 1 || g->values[kv].is_output || cons_other(nm, cur) != kv) return;
            int mv = nm->out[0];
            if (c->ncons[mv] != 1 || g->values[mv].is_output) return;
            int di = c->cons[2 * mv];
            const rt_node *nd = &g->nodes[di];
            if (!link_ok(c, nd, mv) || nd->act) return;
            if (nd->op == RT_OP_Div && nd->in[0] == mv && dn_const_scalar(g, nd->in[1], &s6) && s6 == 6.f) {
            } else if (nd->op == RT_OP_Mul && dn_const_scalar(g, cons_other(nd, mv), &s6) &&
                       fabsf(s6 - 1.f / 6.f) < 1e-7f) {
            } else {
                return;
            }
            if (dn_po_act(&t, RT_ACT_HARDSWISH, 1.f / 6.f, 0.5f)) return;
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

int dn_chain_init(dn_chain *ch, int C, int axis)
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

void dn_chain_clear(dn_chain *ch)
{
    lector__free(ch->scale);
    lector__free(ch->shift);
    ch->scale = ch->shift = NULL;
}

int dn_chain_abandon(dn_cc *c, dn_chain *ch, dnnl_primitive_desc_t pd)
{
    dn_pd_release(c, pd);
    dn_chain_clear(ch);
    return -1;
}

/* Post-ops of the chain into a new attr; bin_md[i] = layout of each binary operand. */
dnnl_primitive_attr_t dn_chain_attr(dn_cc *c, const dn_chain *ch, dnnl_memory_desc_t *bin_md,
                                    const dnnl_memory_desc_t *dst_view)
{
    dnnl_primitive_attr_t at = dn_attr_new();
    if (!at) return NULL;
    if (!ch || !ch->n_po) return at;
    dnnl_post_ops_t po;
    if (!dn_ok(dnnl_post_ops_create(&po))) {
        dnnl_primitive_attr_destroy(at);
        return NULL;
    }
    for (int i = 0; i < ch->n_po; i++) {
        if (ch->po[i].kind == DN_PO_ELT) {
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
static int chain_args(dn_cc *c, const dn_chain *ch, const dnnl_memory_desc_t *bin_md, int *args, int *slots,
                      const dnnl_memory_desc_t **mds, int n, int plain_view)
{
    for (int i = 0; i < ch->n_po; i++) {
        if (ch->po[i].kind != DN_PO_BIN) continue;
        int s = plain_view ? dn_need_plain(c, ch->po[i].value) : c->dp->vslot[ch->po[i].value];
        if (s < 0) return -1;
        args[n] = DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1;
        slots[n] = s;
        mds[n] = &bin_md[i];
        n++;
    }
    return n;
}

/* Marks the chain's nodes consumed; adds the tail activation step. */
int dn_chain_commit(dn_cc *c, const dn_chain *ch, int oslot)
{
    for (int i = 0; i < ch->n_consumed; i++) c->done[ch->consumed[i]] = 1;
    if (ch->tail_act != RT_ACT_NONE) {
        dn_step *s = dn_step_new(c, DN_STEP_ACT);
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
int dn_add_chained_prim(dn_cc *c, const dn_chain *ch, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t *bin_md,
                        int *args, int *sl, const dnnl_memory_desc_t **mds, int n, int plain_view, int ys)
{
    int na = ys < 0 ? -1 : bin_md ? chain_args(c, ch, bin_md, args, sl, mds, n, plain_view) : n;
    int r = na < 0 ? -1 : dn_add_prim(c, pd, na, args, sl, mds);
    dn_pd_release(c, pd);
    if (!r) r = dn_chain_commit(c, ch, ys);
    return r;
}
