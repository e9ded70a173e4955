/*
 * mask_width.c - batches whose items have different widths, each item's
 * result as if it ran alone (lector_model_options.width_masks).
 *
 * Items are padded with zeros to the batch's width W. Zeros are what a
 * convolution's own padding reads past an item's last column, so an item's
 * columns come out as they would alone as long as every operator that reads
 * across the width sees zeros past the item's extent at its own resolution:
 * the graph is rewritten so that it does. Before each operator that mixes
 * along a width axis, its input is multiplied by a 0/1 mask (Conv and
 * pooling with a window or stride along the width, GlobalAveragePool);
 * a Softmax over a width axis gets -1e30 added past the extent (attention
 * keys); a GlobalAveragePool's mean is rescaled from W to the extent.
 * Operators that act per column (1x1 convolutions, per-token MatMul, norms
 * over channels) need nothing, so fusion is undisturbed.
 *
 * Which axis of a value is its batch axis and which are width axes comes
 * from shape inference of the graph at three probe shapes (batch 2 and 3,
 * width 320 and 640): the axes whose size follows. An item's extent on a
 * value is that value's size when the graph is inferred for that item's
 * width alone (batch 1); inference per width is cached.
 */
#include "rt/mask_width.h"

#include <stdio.h>
#include <string.h>

#include "rt/ops.h"
#include "rt/passes.h"
#include "util/util.h"

#define PROBE_W1     320
#define PROBE_W2     640
#define EXTENT_CACHE 1024 /* widths whose extents are kept (direct-mapped) */

typedef struct extent_entry {
    int64_t width; /* 0: empty */
    int64_t *ext;  /* per mask, then output 0's extent */
} extent_entry;

struct rt_width_masks {
    rt_graph *probe; /* the graph as loaded, owning its constants */
    int n_user_inputs;
    int in_rank; /* input 0's rank; its last axis is the width */
    int64_t in_dims[LECTOR_MAX_DIMS];
    rt_width_mask *masks;
    int n_masks;
    size_t cap_masks;
    int out_value, out_axis, out_batch_axis; /* output 0's width axis, or out_axis -1 */
    pthread_mutex_t lock;
    extent_entry cache[EXTENT_CACHE];
};

/* A deep copy: the probe outlives what the model's passes do to the
 * original's constants. */
static rt_graph *own_clone(const rt_graph *g)
{
    rt_graph *c = rt_graph_clone(g);
    if (!c) return NULL;
    for (int i = 0; i < c->n_values; i++) {
        rt_value *v = &c->values[i];
        if (!v->data) continue;
        size_t n = rt_value_nbytes(v);
        void *d = lector__malloc(n ? n : 1);
        if (!d) {
            for (int j = 0; j < i; j++)
                if (c->values[j].owns_data) {
                    lector__free(c->values[j].data);
                    c->values[j].data = NULL;
                    c->values[j].owns_data = false;
                }
            rt_graph_free(c);
            return NULL;
        }
        memcpy(d, v->data, n);
        v->data = d;
        v->owns_data = true;
    }
    return c;
}

/* Shape inference of a copy of `probe` with input 0 of batch n and width w
 * (the other inputs as declared); the inferred copy, or NULL. */
static rt_graph *infer_at(const rt_width_masks *wm, int64_t n, int64_t w, lector_error *err)
{
    rt_graph *g = rt_graph_clone(wm->probe);
    if (!g) {
        lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    lector_tensor in[8];
    memset(in, 0, sizeof in);
    for (int i = 0; i < g->n_inputs && i < 8; i++) {
        const rt_value *v = &g->values[g->inputs[i]];
        in[i].dtype = v->dtype;
        in[i].ndim = v->ndim;
        memcpy(in[i].dims, v->dims, sizeof v->dims);
    }
    in[0].dims[0] = n;
    in[0].dims[wm->in_rank - 1] = w;
    if (rt_infer_and_fold(g, in, err)) {
        rt_graph_free(g);
        return NULL;
    }
    return g;
}

/* The batch axis and the width axes (bit mask) of value v from the probes. */
static void axes_of(const rt_graph *a, const rt_graph *b, const rt_graph *c, int v, int *batch, unsigned *width)
{
    *batch = -1;
    *width = 0;
    const rt_value *va = &a->values[v], *vb = &b->values[v], *vc = &c->values[v];
    if (va->ndim < 0 || va->ndim != vb->ndim || va->ndim != vc->ndim) return;
    for (int d = 0; d < va->ndim; d++) {
        if (va->dims[d] != vb->dims[d]) *batch = *batch == -1 ? d : -2; /* -2: more than one */
        if (va->dims[d] != vc->dims[d]) *width |= 1u << d;
    }
}

/* A new graph input of shape [1.., batch: N, axis: W, ..1] (N and W are
 * given per run) feeding `kind` for value v; its index in wm->masks. */
static int add_mask(rt_graph *g, rt_width_masks *wm, int kind, int v, int rank, int batch, int axis)
{
    for (int i = 0; i < wm->n_masks; i++) /* one per value and use */
        if (wm->masks[i].value == v && wm->masks[i].kind == kind && wm->masks[i].axis == axis) return i;
    if (lector__reserve(&wm->masks, &wm->cap_masks, (size_t)wm->n_masks + 1, sizeof *wm->masks)) return -1;
    char name[64];
    snprintf(name, sizeof name, "lector_width_mask_%d", wm->n_masks);
    int iv = rt_graph_add_value(g, name);
    if (iv < 0) return -1;
    rt_value *mv = &g->values[iv];
    mv->dtype = LECTOR_DTYPE_FLOAT32;
    mv->ndim = rank;
    for (int d = 0; d < rank; d++) mv->dims[d] = d == batch || d == axis ? -1 : 1;
    mv->is_input = true;
    size_t icap = (size_t)g->n_inputs + 1;
    int *ni = lector__realloc(g->inputs, sizeof(int) * (icap + 1));
    if (!ni) return -1;
    g->inputs = ni;
    g->inputs[g->n_inputs++] = iv;
    wm->masks[wm->n_masks] = (rt_width_mask){kind, v, axis, batch, rank, g->n_inputs - 1};
    return wm->n_masks++;
}

/* value_out = op(value_in, mask input of mask k): a new node placed at
 * index `pos` of the node table, so that the table stays in execution
 * order (the nodes from pos on move up by one); the new value. */
static int apply(rt_graph *g, int op, int value_in, const rt_width_masks *wm, int k, int pos)
{
    char name[80];
    snprintf(name, sizeof name, "lector_width_mask_%d_%d", k, value_in);
    int out = rt_graph_add_value(g, name);
    if (out < 0) return -1;
    rt_node *n = rt_graph_add_node(g, op, name, 2, 1);
    if (!n) return -1;
    n->in[0] = value_in;
    n->in[1] = g->inputs[wm->masks[k].input];
    n->out[0] = out;
    rt_node made = *n;
    memmove(&g->nodes[pos + 1], &g->nodes[pos], sizeof *g->nodes * (size_t)(g->n_nodes - 1 - pos));
    g->nodes[pos] = made;
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].producer >= pos) g->values[v].producer++;
    g->values[out].producer = pos;
    return out;
}

/* Does a Conv/pool node read across the width (last) axis? */
static int window_mixes_width(const rt_node *n, const rt_graph *pa)
{
    const int64_t *v;
    int k = rt_attr_ints(n, "kernel_shape", &v);
    int64_t kw = k > 0 ? v[k - 1] : 1;
    if (k == 0 && n->op == RT_OP_Conv && n->n_in > 1 && n->in[1] >= 0) { /* the kernel from the weights' shape */
        const rt_value *w = &pa->values[n->in[1]];
        kw = w->ndim > 2 ? w->dims[w->ndim - 1] : 2; /* unknown: assume a window */
    }
    if (kw > 1) return 1;
    k = rt_attr_ints(n, "strides", &v);
    if (k > 0 && v[k - 1] > 1) return 1;
    k = rt_attr_ints(n, "pads",
                     &v); /* [x1_begin, x2_begin, ..., x1_end, x2_end, ...]: the width's are the last of each half */
    return k >= 2 && (v[k / 2 - 1] > 0 || v[k - 1] > 0);
}

/* Does any of the axes in `axes` (n of them; negative from the end) hit a
 * width axis of a rank-`rank` value? */
static int hits_width(const int64_t *axes, int n, int rank, unsigned width)
{
    for (int k = 0; k < n; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (a >= 0 && a < rank && (width >> a & 1u)) return 1;
    }
    return 0;
}

/* Would node n, reading value x (rank, width axes), mix items' columns in a
 * way the masks do not cover? Those are refused rather than made to differ. */
static int uncovered(const rt_graph *g, const rt_graph *pa, const rt_node *n, int rank, unsigned width)
{
    const int64_t *ax;
    int na;
    switch (n->op) {
    case RT_OP_ReduceMean:
    case RT_OP_ReduceSum:
    case RT_OP_ReduceMax:
        na = rt_attr_ints(n, "axes", &ax);
        return na <= 0 || hits_width(ax, na, rank, width); /* no axes attribute: all, or given as an input */
    case RT_OP_Concat:
    case RT_OP_Split:
    case RT_OP_TopK: { /* TopK: lector_model_load_*_top2's, over the classes (its axis defaults to the last) */
        int64_t a = rt_attr_int(n, "axis", n->op == RT_OP_TopK ? -1 : 0);
        return hits_width(&a, 1, rank, width);
    }
    case RT_OP_Slice: { /* axes (input 3, a constant) */
        const rt_value *av = n->n_in > 3 && n->in[3] >= 0 ? &pa->values[n->in[3]] : NULL;
        if (!av || !av->data || av->dtype != LECTOR_DTYPE_INT64) return 1;
        return hits_width(av->data, (int)rt_value_numel(av), rank, width);
    }
    case RT_OP_MatMul: { /* contracting A's last axis: fine after a masked Softmax (zero weights) */
        if (!(width >> (rank - 1) & 1u)) return 0;
        int prod = g->values[n->in[0]].producer;
        return !(prod >= 0 && g->nodes[prod].op == RT_OP_Softmax);
    }
    case RT_OP_ConvTranspose:
    case RT_OP_Resize:
    case RT_OP_Pad:
    case RT_OP_GlobalMaxPool:
    case RT_OP_Gather:
    case RT_OP_Flatten:
    case RT_OP_Tile:
    case RT_OP_Expand:
    case RT_OP_Gemm:
    case RT_OP_LayerNormalization: /* over the last axes: refused when those include the width */
        return n->op == RT_OP_LayerNormalization ? (width >> (rank - 1) & 1u) != 0 : 1;
    default: return 0;
    }
}

static lector_status rewrite(rt_graph *g, rt_width_masks *wm, const rt_graph *pa, const rt_graph *pb,
                             const rt_graph *pc, lector_error *err)
{
    /* the probes index values as g does; nodes added here get new values (past pa's), so a node
     * reading one is one of ours: skipped */
    for (int i = 0; i < g->n_nodes; i++) {
        rt_node *n = &g->nodes[i];
        if (n->n_in > 0 && n->in[0] >= pa->n_values) continue;
        if (n->dead || n->n_in < 1 || n->in[0] < 0) continue;
        int x = n->in[0], batch;
        unsigned width;
        axes_of(pa, pb, pc, x, &batch, &width);
        if (!width) continue;
        int rank = pa->values[x].ndim, last = rank - 1, axis = last, op = n->op, mixes;
        if (op == RT_OP_Conv || op == RT_OP_AveragePool || op == RT_OP_MaxPool)
            mixes = (width >> last & 1u) && window_mixes_width(n, pa);
        else if (op == RT_OP_GlobalAveragePool)
            mixes = (width >> last & 1u) != 0;
        else if (op == RT_OP_Softmax) {
            int64_t a = rt_attr_int(n, "axis", g->opset < 13 ? 1 : -1);
            axis = (int)(a < 0 ? a + rank : a);
            mixes = axis >= 0 && axis < rank && (width >> axis & 1u);
            /* before opset 13 it normalises over every axis from `axis` on, queries with keys */
            if (g->opset < 13 && axis >= 0 && axis < last && (width >> axis) != 0)
                return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP,
                                     "%s: width masks: node '%s' (Softmax before opset 13) normalises across the "
                                     "width with other axes; no rule for it",
                                     g->name, n->name);
        } else if (uncovered(g, pa, n, rank, width)) {
            return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP,
                                 "%s: width masks: node '%s' (%s) reads across the width; no rule for it", g->name,
                                 n->name, rt_op_table[op].name);
        } else
            continue;
        if (!mixes) continue;
        if (batch < 0)
            return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP,
                                 "%s: width masks: the input of node '%s' has no single batch axis", g->name, n->name);
        int kind = op == RT_OP_Softmax ? RT_WIDTH_MASK_BIAS : RT_WIDTH_MASK_ZERO;
        int k = add_mask(g, wm, kind, x, rank, batch, axis);
        int masked = k < 0 ? -1 : apply(g, kind == RT_WIDTH_MASK_BIAS ? RT_OP_Add : RT_OP_Mul, x, wm, k, i);
        if (masked < 0) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        i++; /* the node itself, now after its mask */
        g->nodes[i].in[0] = masked;
        if (op != RT_OP_GlobalAveragePool) continue;
        /* the mean over W becomes the mean over the extent: times W / extent */
        int y = g->nodes[i].out[0];
        int s = add_mask(g, wm, RT_WIDTH_MASK_SCALE, x, rank, batch, axis);
        int scaled = s < 0 ? -1 : apply(g, RT_OP_Mul, y, wm, s, i + 1);
        if (scaled < 0) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        i++; /* the scaling */
        for (int j = i + 1; j < g->n_nodes; j++)
            for (int q = 0; q < g->nodes[j].n_in; q++)
                if (g->nodes[j].in[q] == y) g->nodes[j].in[q] = scaled;
        for (int q = 0; q < g->n_outputs; q++)
            if (g->outputs[q] == y) g->outputs[q] = scaled;
    }
    return LECTOR_OK;
}

lector_status rt_width_masks_build(rt_graph *g, rt_width_masks **out, lector_error *err)
{
    *out = NULL;
    if (g->n_inputs < 1 || g->n_inputs > 8)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: width masks need 1 to 8 inputs", g->name);
    const rt_value *in0 = &g->values[g->inputs[0]];
    if (in0->ndim < 2 || in0->dtype != LECTOR_DTYPE_FLOAT32)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: width masks need a float input of rank >= 2",
                             g->name);
    /* an item's extents are inferred from its width alone: every other size must be fixed */
    for (int d = 1; d < in0->ndim - 1; d++)
        if (in0->dims[d] < 1)
            return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP,
                                 "%s: width masks: input '%s' has a free dimension %d besides the batch and the width",
                                 g->name, in0->name, d);
    rt_width_masks *wm = lector__calloc(1, sizeof *wm);
    if (!wm) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&wm->lock, NULL);
    wm->n_user_inputs = g->n_inputs;
    wm->in_rank = in0->ndim;
    memcpy(wm->in_dims, in0->dims, sizeof wm->in_dims);
    wm->out_axis = -1;
    lector_status st = LECTOR_OK;
    rt_graph *pa = NULL, *pb = NULL, *pc = NULL;
    if (!(wm->probe = own_clone(g))) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    if (!st && !(pa = infer_at(wm, 2, PROBE_W1, err))) st = err ? err->code : LECTOR_ERR_SHAPE;
    if (!st && !(pb = infer_at(wm, 3, PROBE_W1, err))) st = err ? err->code : LECTOR_ERR_SHAPE;
    if (!st && !(pc = infer_at(wm, 2, PROBE_W2, err))) st = err ? err->code : LECTOR_ERR_SHAPE;
    if (!st) st = rewrite(g, wm, pa, pb, pc, err);
    if (!st) {
        unsigned width;
        wm->out_value = g->outputs[0];
        if (wm->out_value < pa->n_values) {
            axes_of(pa, pb, pc, wm->out_value, &wm->out_batch_axis, &width);
            for (int d = 0; d < LECTOR_MAX_DIMS && width; d++)
                if (width >> d & 1u) {
                    wm->out_axis = d;
                    break;
                }
        }
    }
    rt_graph_free(pa);
    rt_graph_free(pb);
    rt_graph_free(pc);
    if (st) {
        rt_width_masks_free(wm);
        return st;
    }
    lector__log(LECTOR_LOG_DEBUG, "%s: width masks: %d mask inputs", g->name, wm->n_masks);
    *out = wm;
    return LECTOR_OK;
}

void rt_width_masks_free(rt_width_masks *wm)
{
    if (!wm) return;
    for (int i = 0; i < EXTENT_CACHE; i++) lector__free(wm->cache[i].ext);
    rt_graph_free(wm->probe);
    lector__free(wm->masks);
    pthread_mutex_destroy(&wm->lock);
    lector__free(wm);
}

int rt_width_masks_user_inputs(const rt_width_masks *wm) { return wm->n_user_inputs; }
int rt_width_masks_count(const rt_width_masks *wm) { return wm->n_masks; }

/* Extents of every mask's axis, and output 0's, for an item of width w
 * (n_masks + 1 values, cached); NULL with err set. */
static lector_status extents(rt_width_masks *wm, int64_t w, int64_t *ext, lector_error *err)
{
    size_t n = (size_t)wm->n_masks + 1;
    extent_entry *e = &wm->cache[(uint64_t)w % EXTENT_CACHE];
    pthread_mutex_lock(&wm->lock);
    if (e->width == w && e->ext) {
        memcpy(ext, e->ext, n * sizeof *ext);
        pthread_mutex_unlock(&wm->lock);
        return LECTOR_OK;
    }
    pthread_mutex_unlock(&wm->lock);
    double t0 = lector__now_ms();
    rt_graph *g = infer_at(wm, 1, w, err);
    if (!g) return err ? err->code : LECTOR_ERR_SHAPE;
    lector__log(LECTOR_LOG_DEBUG, "%s: width masks: extents at width %lld inferred in %.2f ms", wm->probe->name,
                (long long)w, lector__now_ms() - t0);
    for (int i = 0; i < wm->n_masks; i++) {
        const rt_value *v = &g->values[wm->masks[i].value];
        ext[i] = wm->masks[i].axis < v->ndim ? v->dims[wm->masks[i].axis] : 0;
    }
    ext[wm->n_masks] = wm->out_axis >= 0 ? g->values[wm->out_value].dims[wm->out_axis] : 0;
    rt_graph_free(g);
    int64_t *keep = lector__malloc(n * sizeof *keep);
    pthread_mutex_lock(&wm->lock);
    if (keep) {
        memcpy(keep, ext, n * sizeof *keep);
        lector__free(e->ext);
        e->ext = keep;
        e->width = w;
    }
    pthread_mutex_unlock(&wm->lock);
    return LECTOR_OK;
}

lector_status rt_width_masks_inputs(rt_width_masks *wm, const rt_graph *masked, const lector_tensor *user,
                                    const int64_t *valid, lector_tensor *full, int64_t *out_valid, lector_error *err)
{
    const lector_tensor *x = &user[0];
    int64_t N = x->dims[0], W = x->dims[wm->in_rank - 1];
    size_t nm = (size_t)wm->n_masks;
    int64_t *ext = lector__malloc(sizeof(int64_t) * (size_t)(N > 0 ? N : 1) * (nm + 1));
    int64_t *full_ext = lector__malloc(sizeof(int64_t) * (nm + 1));
    if (!ext || !full_ext) {
        lector__free(ext);
        lector__free(full_ext);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    lector_status st = extents(wm, W, full_ext, err);
    for (int64_t b = 0; b < N && !st; b++) {
        int64_t w = valid ? valid[b] : W;
        if (w < 1 || w > W)
            st =
                lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "width masks: item %lld's width %lld is not in 1..%lld",
                              (long long)b, (long long)w, (long long)W);
        else
            st = extents(wm, w, ext + (size_t)b * (nm + 1), err);
    }
    for (int i = 0; i < wm->n_user_inputs; i++) full[i] = user[i];
    for (size_t k = 0; k < nm && !st; k++) {
        const rt_width_mask *mk = &wm->masks[k];
        const rt_value *mv = &masked->values[masked->inputs[mk->input]];
        lector_tensor *t = &full[mk->input];
        memset(t, 0, sizeof *t);
        t->dtype = LECTOR_DTYPE_FLOAT32;
        t->ndim = mv->ndim;
        for (int d = 0; d < t->ndim; d++) t->dims[d] = 1;
        int64_t Wk = full_ext[k];
        t->dims[mk->batch_axis] = N;
        if (mk->kind != RT_WIDTH_MASK_SCALE) t->dims[mk->axis] = Wk;
        float *f = lector__malloc(sizeof(float) * (size_t)(N * (mk->kind == RT_WIDTH_MASK_SCALE ? 1 : Wk)) + 1);
        if (!f) {
            st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        t->data = f;
        for (int64_t b = 0; b < N; b++) {
            int64_t e = ext[(size_t)b * (nm + 1) + k];
            if (mk->kind == RT_WIDTH_MASK_SCALE) {
                f[b] = e > 0 ? (float)Wk / (float)e : 0.f;
                continue;
            }
            for (int64_t j = 0; j < Wk; j++) /* every other axis has size 1 */
                f[mk->batch_axis < mk->axis ? b * Wk + j : j * N + b] =
                    mk->kind == RT_WIDTH_MASK_ZERO ? (j < e ? 1.f : 0.f) : (j < e ? 0.f : -1e30f);
        }
    }
    for (int64_t b = 0; b < N && out_valid && !st; b++) out_valid[b] = ext[(size_t)b * (nm + 1) + nm];
    lector__free(ext);
    lector__free(full_ext);
    if (st) rt_width_masks_inputs_free(wm, full);
    return st;
}

void rt_width_masks_inputs_free(const rt_width_masks *wm, lector_tensor *full)
{
    for (int k = 0; k < wm->n_masks; k++) {
        lector__free(full[wm->masks[k].input].data);
        full[wm->masks[k].input].data = NULL;
    }
}
