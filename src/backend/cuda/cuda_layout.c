/*
 * cuda_layout.c - how a plan stores its float activations: fp32 or fp16,
 * and for 4-D tensors NCHW or NHWC.
 *
 * Precision: a half-precision plan stores every float activation as fp16
 * (weights and per-channel constants stay fp32, except the filters and
 * matrices cuDNN and cuBLAS read, which are converted once at compile time).
 *
 * Layout: NHWC is what cuDNN's tensor-core convolutions read and write.
 * Convolutions, pools, nearest resizes and concatenations keep their input
 * and output in one layout (their values are joined in one group with a
 * union-find); elementwise chains read and write any mix; every other
 * operator (Reshape, Transpose, MatMul, Softmax, ...) works on NCHW (its
 * operands force their group to NCHW). A 4-D tensor whose C or H*W is 1 has
 * the same bytes in both layouts and takes no part.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "util/half.h"

size_t cu_convert_weights(compile_ctx *cc, const rt_value *wv, const int64_t *dims, int half, int nhwc)
{
    const float *w = wv->data;
    int64_t K = dims[0], C = dims[1], R = dims[2], S = dims[3], n = K * C * R * S;
    size_t es = half ? 2 : 4;
    int kind = CU_MEMO_CONVERTED | half << 2 | nhwc << 3;
    double t0 = cu_now_ms();
    size_t known = cu_memo_get(cc, wv, kind, (size_t)n * es);
    if (known) {
        cc->wconv_ms += cu_now_ms() - t0;
        return known;
    }
    char *buf = cu_malloc((size_t)(n ? n : 1) * es);
    if (!buf) {
        cc->oom = 1;
        return 0;
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < R; r++)
                for (int64_t s = 0; s < S; s++) {
                    int64_t src = ((k * C + c) * R + r) * S + s;
                    int64_t dst = nhwc ? ((k * R + r) * S + s) * C + c : src;
                    if (half)
                        ((uint16_t *)buf)[dst] = lector__float_to_half(w[src]);
                    else
                        ((float *)buf)[dst] = w[src];
                }
    size_t off = cbuf_add_from(cc, wv, kind, buf, (size_t)n * es);
    cu_free(buf);
    cc->wconv_ms += cu_now_ms() - t0;
    return off;
}

/* ---- layout groups ------------------------------------------------------------ */

static int find(int *parent, int v)
{
    while (parent[v] != v) {
        parent[v] = parent[parent[v]];
        v = parent[v];
    }
    return v;
}

static void join(int *parent, int a, int b)
{
    a = find(parent, a);
    b = find(parent, b);
    if (a != b) parent[b] = a;
}

/* A 4-D float activation whose two layouts differ. */
static int candidate(const rt_graph *g, int v)
{
    if (v < 0) return 0;
    const rt_value *x = &g->values[v];
    return x->dtype == LECTOR_DTYPE_FLOAT32 && !x->data && x->ndim == 4 && x->dims[1] > 1 &&
           x->dims[2] * x->dims[3] > 1;
}

enum { L_SAME, L_ELEMWISE, L_OTHER };

static int layout_class(const rt_graph *g, const rt_node *n)
{
    switch (n->op) {
    case RT_OP_Conv:
    case RT_OP_ConvTranspose: return val(g, n->in[0])->ndim == 4 ? L_SAME : L_OTHER;
    case RT_OP_MaxPool:
    case RT_OP_AveragePool:
    case RT_OP_GlobalAveragePool:
    case RT_OP_Concat: return L_SAME;
    case RT_OP_Resize: return strcmp(H->attr_string(n, "mode", "nearest"), "nearest") ? L_OTHER : L_SAME;
    case RT_OP_Add:
    case RT_OP_Sub:
    case RT_OP_Mul:
    case RT_OP_Div:
    case RT_OP_Pow:
    case RT_OP_Max:
    case RT_OP_Min:
    case RT_OP_BatchNormalization: return n->n_out == 1 ? L_ELEMWISE : L_OTHER;
    default: return cu_unary_op(n->op) >= 0 && n->n_out == 1 ? L_ELEMWISE : L_OTHER;
    }
}

/* A Softmax whose probabilities leave the plan (a graph output, or read only
 * by ArgMax / ReduceMax / TopK: the recogniser's CTC output) keeps fp32 storage, and
 * so do its input and the elementwise ops between it and the MatMul or Conv
 * that makes the logits: fp16 logits are quantised to 1/64 at 16 and moved
 * argmaxes of the recogniser that fp32 logits keep. */
static void keep_classifier_fp32(compile_ctx *cc)
{
    const rt_graph *g = cc->g;
    const rt_plan *p = cc->p;
    cu_plan *cp = cc->cp;
    int *cons = cu_consumer_counts(p), *prod = cu_malloc(sizeof(int) * ((size_t)g->n_values + 1));
    if (!cons || !prod) {
        cu_free(cons);
        cu_free(prod);
        return;
    }
    for (int v = 0; v < g->n_values; v++) prod[v] = -1;
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) prod[n->out[k]] = p->order[s];
    }
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        if (n->op != RT_OP_Softmax) continue;
        int y = n->out[0], leaves = g->values[y].is_output, others = 0;
        for (int t = 0; t < p->n_order; t++) {
            const rt_node *m = &g->nodes[p->order[t]];
            for (int k = 0; k < m->n_in; k++)
                if (m->in[k] == y) {
                    if (m->op == RT_OP_ArgMax || m->op == RT_OP_ReduceMax || m->op == RT_OP_TopK)
                        leaves = 1;
                    else
                        others = 1;
                }
        }
        if (!leaves || others) continue;
        cp->vhalf[y] = 0;
        for (int t = 0; t < p->n_order; t++) { /* the maxima too: they are the line scores */
            const rt_node *m = &g->nodes[p->order[t]];
            if ((m->op == RT_OP_ReduceMax || m->op == RT_OP_TopK) && m->in[0] == y) cp->vhalf[m->out[0]] = 0;
        }
        /* back to the logits' producer through single-consumer elementwise ops */
        int v = n->in[0];
        for (int depth = 0; v >= 0 && depth < 8; depth++) {
            cp->vhalf[v] = 0;
            int pn = prod[v];
            if (pn < 0 || cons[v] != 1) break;
            const rt_node *m = &g->nodes[pn];
            if (m->op != RT_OP_Add && m->op != RT_OP_Mul && m->op != RT_OP_Sub && m->op != RT_OP_Div) break;
            int next = -1;
            for (int k = 0; k < m->n_in; k++)
                if (m->in[k] >= 0 && !g->values[m->in[k]].data) next = next < 0 ? m->in[k] : -2;
            v = next;
        }
    }
    cu_free(cons);
    cu_free(prod);
}

void cu_assign_storage(compile_ctx *cc)
{
    const rt_graph *g = cc->g;
    const rt_plan *p = cc->p;
    cu_plan *cp = cc->cp;
    for (int v = 0; v < g->n_values; v++) {
        const rt_value *x = &g->values[v];
        cp->vhalf[v] = cp->half && x->dtype == LECTOR_DTYPE_FLOAT32 && !x->data;
        cp->vnhwc[v] = 0;
    }
    if (cp->half) keep_classifier_fp32(cc);
    if (!cp->nhwc) return;
    int *parent = cu_malloc(sizeof(int) * (size_t)(g->n_values + 1));
    uint8_t *forced = cu_calloc((size_t)g->n_values + 1, 1);
    if (!parent || !forced) { /* stays NCHW: correct, slower */
        cu_free(parent);
        cu_free(forced);
        return;
    }
    for (int v = 0; v < g->n_values; v++) parent[v] = v;
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        int cls = layout_class(g, n);
        if (cls == L_SAME) {
            int first = -1;
            int n_data = n->op == RT_OP_Concat ? n->n_in : 1;
            for (int k = 0; k < n_data; k++)
                if (candidate(g, n->in[k])) {
                    if (first < 0)
                        first = n->in[k];
                    else
                        join(parent, first, n->in[k]);
                }
            if (candidate(g, n->out[0])) {
                if (first < 0)
                    first = n->out[0];
                else
                    join(parent, first, n->out[0]);
            }
        } else if (cls == L_OTHER) {
            for (int k = 0; k < n->n_in; k++)
                if (candidate(g, n->in[k])) forced[n->in[k]] = 1;
            for (int k = 0; k < n->n_out; k++)
                if (candidate(g, n->out[k])) forced[n->out[k]] = 1;
        }
    }
    for (int v = 0; v < g->n_values; v++)
        if (candidate(g, v) && forced[v]) forced[find(parent, v)] = 1;
    int nhwc = 0, nchw = 0;
    for (int v = 0; v < g->n_values; v++) {
        if (!candidate(g, v)) continue;
        cp->vnhwc[v] = !forced[find(parent, v)];
        if (cp->vnhwc[v])
            nhwc++;
        else
            nchw++;
    }
    H->log(3, "cuda: %s: %d 4-D activations NHWC, %d NCHW", g->name, nhwc, nchw);
    cu_free(parent);
    cu_free(forced);
}

/* ---- the plan's layout ------------------------------------------------------------
 * NHWC activations in fp16 always (tensor cores read channels last). In fp32
 * for models of text lines (an image input at most CU_LINE_MAX_HEIGHT pixels
 * high: the recogniser, the classifier): there a pointwise convolution is one
 * GEMM over every pixel of every line instead of one small GEMM per line, and
 * the recogniser ran 1.5x as fast at batch 192 (docs/BENCHMARKS.md). Detection
 * of a page stays NCHW in fp32, where NHWC was slower (the detector's input for
 * an image of one line, at most that high, is NHWC too). LECTOR_CUDA_NHWC=0/1
 * forces it. */
int cu_plan_nhwc(const rt_backend *be, const rt_plan *p)
{
    int line = p->n_inputs > 0 && p->key && p->key[0][0] == 4 && p->key[0][3] <= CU_LINE_MAX_HEIGHT;
    return cu_switch(LECTOR__TC_CUDA_NHWC, be->fp16 || line);
}

/* ---- lifetimes ------------------------------------------------------------------
 * A depthwise convolution may run the elementwise chain after it inside its
 * own kernel (cuda_nvrtc.c), which reads the convolution's input around each
 * pixel while it writes the chain's results. The memory plan would give the
 * input's bytes to those results (the convolution is the input's last
 * reader), so the input is kept until the end of the elementwise run that
 * follows: one activation more for a few nodes. Only where the plan may be
 * NHWC (cu_plan_nhwc): NCHW plans have no such kernel. */
void cu_plan_lifetimes(rt_backend *be, const rt_plan *p, int *last)
{
    const rt_graph *g = p->g;
    /* LECTOR_CUDA_DWFUSE_LIFETIMES: these lifetimes without the fusion or the other way round, for A/B runs */
    if (!cu_plan_nhwc(be, p) || !cu_switch(LECTOR__TC_CUDA_DWFUSE_LIFETIMES, cu_switch(LECTOR__TC_CUDA_DWFUSE, 1)))
        return;
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        if (n->op != RT_OP_Conv || n->n_in < 2 || n->in[0] < 0 || n->in[1] < 0) continue;
        const rt_value *x = &g->values[n->in[0]], *w = &g->values[n->in[1]], *y = &g->values[n->out[0]];
        if (x->ndim != 4 || w->ndim != 4 || w->dims[1] != 1 || H->attr_int(n, "group", 1) != x->dims[1]) continue;
        int end = s;
        for (int t = s + 1; t < p->n_order && t <= s + CK_CHAIN_OPS; t++) {
            const rt_node *m = &g->nodes[p->order[t]];
            const rt_value *o = m->n_out == 1 && m->out[0] >= 0 ? &g->values[m->out[0]] : NULL;
            if (layout_class(g, m) != L_ELEMWISE || !o || o->ndim != y->ndim ||
                memcmp(o->dims, y->dims, sizeof(int64_t) * (size_t)y->ndim))
                break;
            end = t;
        }
        if (last[n->in[0]] < end) last[n->in[0]] = end;
    }
}
