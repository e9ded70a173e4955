/*
 * cuda_fuse.c - elementwise fusion: every elementwise step of a plan
 * becomes part of a chain (ck_chain), one kernel per chain.
 *
 * A chain is a run of consecutive elementwise steps over one output shape
 * (PP-OCR's hardswish written as Add/Clip/Mul/Div, its learnable affine
 * Mul/Add pairs, SE gating, residual adds, an unfolded BatchNormalization)
 * and, in front, the bias + activation epilogue of the convolution or matrix
 * product that produced its first operand. Each element is read once, every
 * intermediate lives in registers, and only results used outside the run
 * are written. Operands may be stored fp32 or fp16 and NCHW or NHWC: the
 * chain iterates over its output in memory order and reads every external
 * through its own strides (cuda_layout.c decides the storages).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

typedef struct chain_build {
    ck_chain c;
    int64_t dims[LECTOR_MAX_DIMS];
    int ndim;
    int ext_v[CK_CHAIN_EXT];     /* value, or -1 for a constant-block table */
    int ext_chan[CK_CHAIN_EXT];  /* per-channel vector (axis 1 of the chain) of this many elements, or 0 */
    size_t ext_cb[CK_CHAIN_EXT]; /* constant-block offset of a table, else RT_NO_OFFSET */
    int reg_v[CK_CHAIN_OPS];     /* value each op produces */
    int node[CK_CHAIN_OPS];      /* node of each op (-1: the epilogue of `src`) */
    int src;                     /* node whose epilogue op 0 is, or -1 */
} chain_build;

static int chain_reg(const chain_build *b, int v)
{
    for (int k = b->c.n_ops - 1; k >= 0; k--)
        if (b->reg_v[k] == v) return k;
    return -1;
}

/* Operand encoding for value v; -1000 when it cannot be expressed. */
static int chain_operand(const compile_ctx *cc, chain_build *b, int v, float *scalar, int per_channel)
{
    int r = chain_reg(b, v);
    if (r >= 0) return r;
    const rt_value *x = &cc->g->values[v];
    if (!is_f32(x)) return -1000;
    if (x->data && numel(x) == 1) {
        *scalar = *(const float *)x->data;
        return CK_SCALAR;
    }
    int chan = per_channel ? (int)numel(x) : 0;
    if (!per_channel) { /* must broadcast to the chain's shape, right-aligned */
        if (x->ndim > b->ndim) return -1000;
        for (int d = 0; d < x->ndim; d++) {
            int64_t od = b->dims[b->ndim - x->ndim + d];
            if (x->dims[d] != od && x->dims[d] != 1) return -1000;
        }
    } else if (b->ndim < 2 || b->dims[1] != numel(x)) {
        return -1000;
    }
    for (int e = 0; e < b->c.n_ext; e++)
        if (b->ext_v[e] == v && b->ext_chan[e] == chan) return -1 - e;
    if (b->c.n_ext == CK_CHAIN_EXT) return -1000;
    b->ext_v[b->c.n_ext] = v;
    b->ext_chan[b->c.n_ext] = chan;
    b->ext_cb[b->c.n_ext] = RT_NO_OFFSET;
    return -1 - b->c.n_ext++;
}

/* A per-channel fp32 table in the constant block (BatchNormalization's scale and shift). */
static int chain_table(chain_build *b, size_t off, int channels)
{
    if (b->c.n_ext == CK_CHAIN_EXT || b->ndim < 2 || b->dims[1] != channels) return -1000;
    b->ext_v[b->c.n_ext] = -1;
    b->ext_chan[b->c.n_ext] = channels;
    b->ext_cb[b->c.n_ext] = off;
    return -1 - b->c.n_ext++;
}

static int same_shape(const chain_build *b, const rt_value *v)
{
    if (v->ndim != b->ndim) return 0;
    for (int d = 0; d < v->ndim; d++)
        if (v->dims[d] != b->dims[d]) return 0;
    return 1;
}

static int is_elementwise(const cu_step *s) { return s->kind == S_BINARY || s->kind == S_UNARY || s->kind == S_AFFINE; }

static int push_op(chain_build *b, ck_chain_op o, int node, int v)
{
    if (b->c.n_ops == CK_CHAIN_OPS) return -1;
    b->node[b->c.n_ops] = node;
    b->reg_v[b->c.n_ops] = v;
    b->c.ops[b->c.n_ops++] = o;
    return 0;
}

/* Appends elementwise step s to the chain; 0 on success (b unchanged on failure). */
static int chain_add(const compile_ctx *cc, chain_build *b, const cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_node *n = &g->nodes[s->node];
    if (!is_elementwise(s) || n->n_out != 1) return -1;
    const rt_value *y = &g->values[n->out[0]];
    if (!is_f32(y)) return -1;
    if (b->c.n_ops == 0) {
        b->ndim = y->ndim;
        memcpy(b->dims, y->dims, sizeof b->dims);
    } else if (!same_shape(b, y)) {
        return -1;
    }
    if (s->kind == S_UNARY && s->act) return -1;
    chain_build save = *b;
    ck_chain_op o = {0};
    if (s->kind == S_AFFINE) { /* x * scale[c] + shift[c], then the activation */
        float dummy = 0;
        int a = chain_operand(cc, b, n->in[0], &dummy, 0);
        int sc = a == -1000 ? -1000 : chain_table(b, s->aux, (int)s->channels);
        int sh = sc == -1000 ? -1000 : chain_table(b, s->aux + sizeof(float) * (size_t)s->channels, (int)s->channels);
        if (sh == -1000 || b->c.n_ops + 2 > CK_CHAIN_OPS) {
            *b = save;
            return -1;
        }
        o.code = CK_MUL;
        o.a = (int8_t)a;
        o.b = (int8_t)sc;
        push_op(b, o, s->node, -2); /* an intermediate no value names */
        ck_chain_op o2 = {0};
        o2.code = CK_ADD;
        o2.a = (int8_t)(b->c.n_ops - 1);
        o2.b = (int8_t)sh;
        o2.act = (int8_t)s->act;
        o2.alpha = s->alpha;
        o2.beta = s->beta;
        push_op(b, o2, s->node, n->out[0]);
        return 0;
    }
    float sa = 0, sb = 0;
    int a = chain_operand(cc, b, n->in[0], &sa, 0);
    int bb = s->kind == S_BINARY && a != -1000 ? chain_operand(cc, b, n->in[1], &sb, 0) : 0;
    if (a == -1000 || bb == -1000 || b->c.n_ops == CK_CHAIN_OPS) {
        *b = save;
        return -1;
    }
    o.a = (int8_t)a;
    o.b = (int8_t)bb;
    o.ca = sa;
    o.cb = sb;
    if (s->kind == S_BINARY) {
        o.code = (int8_t)s->op;
        o.act = (int8_t)s->act;
    } else {
        o.code = (int8_t)(CK_UN_BASE + s->op);
    }
    o.alpha = s->alpha;
    o.beta = s->beta;
    push_op(b, o, s->node, n->out[0]);
    return 0;
}

/* Does step s (Conv, ConvTranspose, MatMul) leave a bias or an activation to apply? */
static int has_epilogue(const compile_ctx *cc, const cu_step *s)
{
    if (!CU_HAS_RAW_OUTPUT(s->kind)) return 0;
    const rt_node *n = &cc->g->nodes[s->node];
    if (!is_f32(&cc->g->values[n->out[0]])) return 0;
    int bias = s->kind != S_MATMUL && n->n_in > 2 && n->in[2] >= 0;
    return bias || s->act;
}

/* Starts a chain with the epilogue of step s: op 0 = act(raw + bias[c]). */
static int chain_epilogue(const compile_ctx *cc, chain_build *b, const cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_node *n = &g->nodes[s->node];
    const rt_value *y = &g->values[n->out[0]];
    b->ndim = y->ndim;
    memcpy(b->dims, y->dims, sizeof b->dims);
    ck_chain_op o = {0};
    float dummy = 0;
    int a = chain_operand(cc, b, n->out[0], &dummy, 0); /* the raw result */
    int bias =
        s->kind != S_MATMUL && n->n_in > 2 && n->in[2] >= 0 ? chain_operand(cc, b, n->in[2], &dummy, 1) : CK_SCALAR;
    if (a == -1000 || bias == -1000) return -1;
    o.code = CK_ADD;
    o.a = (int8_t)a;
    o.b = (int8_t)bias;
    o.cb = 0.f;
    o.act = (int8_t)s->act;
    o.alpha = s->alpha;
    o.beta = s->beta;
    b->src = s->node;
    return push_op(b, o, -1, n->out[0]);
}

/* Physical strides of value v's logical axes (0 on axes of size 1). */
static void value_strides(const compile_ctx *cc, int v, int64_t *st)
{
    const rt_value *x = &cc->g->values[v];
    if (x->ndim == 4 && cc->cp->vnhwc[v]) {
        int64_t C = x->dims[1], Hh = x->dims[2], W = x->dims[3];
        st[0] = Hh * W * C, st[1] = 1, st[2] = W * C, st[3] = C;
    } else {
        int64_t acc = 1;
        for (int d = x->ndim - 1; d >= 0; d--) {
            st[d] = acc;
            acc *= x->dims[d];
        }
    }
    for (int d = 0; d < x->ndim; d++)
        if (x->dims[d] == 1) st[d] = 0;
}

/* Do values a and b, both of the chain's shape, hold each element at the same
 * byte offset from their starts (same storage, same memory order)? */
static int same_elements(const compile_ctx *cc, const chain_build *b, int va, int vb)
{
    const rt_value *x = &cc->g->values[va], *y = &cc->g->values[vb];
    if (!same_shape(b, x) || !same_shape(b, y) || cc->cp->vhalf[va] != cc->cp->vhalf[vb]) return 0;
    int64_t sa[LECTOR_MAX_DIMS], sb[LECTOR_MAX_DIMS];
    value_strides(cc, va, sa);
    value_strides(cc, vb, sb);
    return !memcmp(sa, sb, sizeof(int64_t) * (size_t)b->ndim);
}

/* Fills outputs and strides; 0 when the chain can run as one kernel. */
static int chain_finish(const compile_ctx *cc, chain_build *b, const int *cons, cu_step *out)
{
    const rt_graph *g = cc->g;
    const rt_plan *p = cc->p;
    const cu_plan *cp = cc->cp;
    ck_chain *c = &b->c;
    c->n_out = 0;
    int out_nhwc = -1;
    for (int k = 0; k < c->n_ops; k++) {
        int v = b->reg_v[k], inside = 0;
        if (v < 0 || chain_reg(b, v) != k) continue; /* an unnamed intermediate, or redefined (never, in SSA) */
        for (int q = 0; q < c->n_ops; q++) {
            if (b->node[q] < 0 || (q > 0 && b->node[q] == b->node[q - 1])) continue;
            const rt_node *n = &g->nodes[b->node[q]];
            for (int i = 0; i < n->n_in; i++) inside += n->in[i] == v;
        }
        if (inside == cons[v] && !g->values[v].is_output) continue; /* lives in a register only */
        if (c->n_out == CK_CHAIN_OUT) return -1;
        if (p->offset[v] == RT_NO_OFFSET) return -1;
        int vn = b->ndim == 4 && cp->vnhwc[v];
        if (out_nhwc >= 0 && vn != out_nhwc) return -1; /* outputs of one chain share a memory order */
        out_nhwc = vn;
        /* a written result must not overlap an external it does not equal (threads read and write
         * different elements): the memory plan may reuse an external's bytes once its last reader ran.
         * Unless it is the external's bytes exactly, element for element (same shape, storage and
         * strides): then each element is read and written by the same thread, read first */
        size_t wo = p->offset[v], we = wo + (size_t)numel(&g->values[v]) * 4;
        for (int e = 0; e < c->n_ext; e++) {
            int ev = b->ext_v[e];
            if (ev < 0 || ev == v || g->values[ev].data || p->offset[ev] == RT_NO_OFFSET) continue;
            size_t eo = p->offset[ev], ee = eo + (size_t)numel(&g->values[ev]) * 4;
            if (wo < ee && eo < we && !(wo == eo && same_elements(cc, b, ev, v) && !b->ext_chan[e])) return -1;
        }
        c->out_reg[c->n_out] = (int8_t)k;
        c->out_half[c->n_out] = cp->vhalf[v];
        out->out_v[c->n_out++] = v;
    }
    if (c->n_out == 0) return -1;
    /* strides of each external over the chain's logical dims */
    int64_t st[CK_CHAIN_EXT][LECTOR_MAX_DIMS];
    for (int e = 0; e < c->n_ext; e++) {
        for (int d = 0; d < b->ndim; d++) st[e][d] = 0;
        if (b->ext_chan[e]) {
            if (b->dims[1] > 1) st[e][1] = 1;
        } else {
            const rt_value *x = &g->values[b->ext_v[e]];
            int64_t vs[LECTOR_MAX_DIMS];
            value_strides(cc, b->ext_v[e], vs);
            for (int d = b->ndim - x->ndim; d < b->ndim; d++) st[e][d] = vs[d - (b->ndim - x->ndim)];
        }
        out->ext_v[e] = b->ext_v[e];
        out->ext_cb[e] = b->ext_cb[e];
        c->ext_half[e] = b->ext_v[e] >= 0 && !g->values[b->ext_v[e]].data ? cp->vhalf[b->ext_v[e]] : 0;
    }
    /* the output's memory order, then one joint collapse */
    int perm[LECTOR_MAX_DIMS];
    for (int d = 0; d < b->ndim; d++) perm[d] = d;
    if (out_nhwc == 1) perm[1] = 2, perm[2] = 3, perm[3] = 1;
    int nd = 0;
    int64_t dims[LECTOR_MAX_DIMS], cst[CK_CHAIN_EXT][LECTOR_MAX_DIMS];
    for (int k = 0; k < b->ndim; k++) {
        int d = perm[k];
        if (b->dims[d] == 1) continue;
        if (nd > 0) {
            int merge = 1;
            for (int e = 0; e < c->n_ext; e++) merge &= cst[e][nd - 1] == st[e][d] * b->dims[d];
            if (merge) {
                dims[nd - 1] *= b->dims[d];
                for (int e = 0; e < c->n_ext; e++) cst[e][nd - 1] = st[e][d];
                continue;
            }
        }
        if (nd == CK_CHAIN_DIMS) return -1;
        dims[nd] = b->dims[d];
        for (int e = 0; e < c->n_ext; e++) cst[e][nd] = st[e][d];
        nd++;
    }
    if (nd == 0) {
        dims[nd] = 1;
        for (int e = 0; e < c->n_ext; e++) cst[e][nd] = 0;
        nd++;
    }
    c->ndim = nd;
    for (int d = 0; d < nd; d++) {
        c->dims[d] = dims[d];
        for (int e = 0; e < c->n_ext; e++) c->stride[e][d] = cst[e][d];
    }
    out->kind = S_CHAIN;
    out->half = cp->half;
    out->nhwc = out_nhwc == 1;
    out->chain_src = b->src;
    for (int k = 0; k < CK_CHAIN_OPS; k++) out->chain_node[k] = k < c->n_ops ? b->node[k] : -1;
    out->chain = cu_malloc(sizeof *c);
    if (!out->chain) return -1;
    *out->chain = *c;
    return 0;
}

static int fusion_enabled(void) { return cu_switch(LECTOR__TC_CUDA_FUSE, 1); }

int cu_fuse_chains(compile_ctx *cc)
{
    cu_plan *cp = cc->cp;
    const rt_graph *g = cc->g;
    int *cons = cu_consumer_counts(cc->p);
    /* at most two steps out per step in */
    cu_step *ns = cu_calloc((size_t)(2 * cp->n_steps + 1), sizeof *ns);
    if (!cons || !ns) {
        cu_free(cons);
        cu_free(ns);
        return -1;
    }
    int fuse = fusion_enabled(), nn = 0, chains = 0, ops = 0, rc = 0;
    for (int i = 0; i < cp->n_steps && !rc;) {
        cu_step *s = &cp->steps[i];
        int epi = has_epilogue(cc, s);
        if (!epi && !is_elementwise(s)) {
            ns[nn++] = *s;
            i++;
            continue;
        }
        /* the longest run first; if it cannot be one kernel, the first step alone */
        int done = 0;
        for (int attempt = 0; attempt < 2 && !done; attempt++) {
            chain_build b;
            memset(&b, 0, sizeof b);
            b.src = -1;
            int j = i;
            if (epi) {
                if (chain_epilogue(cc, &b, s)) break;
                j = i + 1;
            }
            if (attempt == 0 && fuse) {
                while (j < cp->n_steps && !chain_add(cc, &b, &cp->steps[j])) j++;
            } else if (!epi) {
                if (chain_add(cc, &b, &cp->steps[j])) break;
                j++;
            }
            cu_step cs = {0};
            for (int e = 0; e < CK_CHAIN_EXT; e++) cs.ext_cb[e] = RT_NO_OFFSET;
            if (chain_finish(cc, &b, cons, &cs)) continue;
            cs.node = cp->steps[j - 1].node;
            if (epi) {
                ns[nn] = *s;
                ns[nn++].no_epilogue = 1;
            }
            ns[nn++] = cs;
            chains++;
            ops += b.c.n_ops;
            i = j;
            done = 1;
        }
        if (!done) {
            H->log(3, "cuda: %s: node %s (%s) cannot run as an elementwise chain", g->name, g->nodes[s->node].name,
                   cu_op_name(g->nodes[s->node].op));
            rc = -1;
        }
    }
    if (!rc) {
        H->log(3, "cuda: %s: %d elementwise ops in %d chains; %d steps -> %d", g->name, ops, chains, cp->n_steps, nn);
        int cap = 2 * cp->n_steps + 1; /* what ns holds: the step count before fusion */
        cu_free(cp->steps);
        cp->steps = ns;
        cp->n_steps = nn;
        cp->cap_steps = cap;
    } else {
        for (int k = 0; k < nn; k++)
            if (ns[k].kind == S_CHAIN) cu_free(ns[k].chain);
        cu_free(ns);
    }
    cu_free(cons);
    return rc;
}

lector_status cu_run_chain(const exec_ctx *x, const cu_step *s, lector_error *err)
{
    const void *ext[CK_CHAIN_EXT];
    void *outs[CK_CHAIN_OUT];
    for (int e = 0; e < s->chain->n_ext; e++)
        ext[e] = s->ext_cb[e] != RT_NO_OFFSET ? (const void *)cu_const(x->cp, s->ext_cb[e]) : cu_dptr(x, s->ext_v[e]);
    for (int k = 0; k < s->chain->n_out; k++) outs[k] = cu_dptr(x, s->out_v[k]);
    const rt_node *n = &x->p->g->nodes[s->node];
    int rc;
    if (s->kind == S_DWCONV)
        rc = cu_launch_compiled_dw(x->w->stream, s, cu_dptr(x, n->in[0]), cu_const(x->cp, s->wconv), ext, outs);
    else if (s->kfn)
        rc = cu_launch_compiled_chain(x->w->stream, s, ext, outs);
    else
        rc = ck_chain_run(x->w->stream, s->chain, ext, outs);
    if (rc) {
        char buf[160];
        snprintf(buf, sizeof buf, "node %s (%s, %s)", n->name, cu_op_name(n->op),
                 s->kind == S_DWCONV ? "depthwise convolution with its elementwise chain" : "elementwise chain");
        if (err) {
            err->code = rc == cudaErrorMemoryAllocation ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND;
            snprintf(err->message, sizeof err->message, "cuda: %s: %s (%s)", buf, cudaGetErrorString((cudaError_t)rc),
                     cudaGetErrorName((cudaError_t)rc));
        }
        return rc == cudaErrorMemoryAllocation ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND;
    }
    return LECTOR_OK;
}
