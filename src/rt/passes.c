#include "rt/passes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rt/ops.h"
#include "rt/plan.h"
#include "util/util.h"

int *rt_consumer_counts(const rt_graph *g)
{
    int *cnt = lector__calloc((size_t)(g->n_values ? g->n_values : 1), sizeof(int));
    if (!cnt) return NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        const rt_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) cnt[n->in[k]]++;
    }
    for (int i = 0; i < g->n_outputs; i++) cnt[g->outputs[i]]++;
    return cnt;
}

/* ---- shape inference and constant folding ------------------------------ */

static int shape_known(const rt_value *v)
{
    if (v->ndim < 0) return 0;
    for (int d = 0; d < v->ndim; d++)
        if (v->dims[d] < 0) return 0;
    return 1;
}

static lector_status fold_node(rt_graph *g, rt_node *n, lector_error *err)
{
    lector_tensor in[16], out[8];
    if (n->n_in > 16 || n->n_out > 8)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: node '%s' has too many inputs/outputs", g->name,
                             n->name);
    for (int k = 0; k < n->n_in; k++) {
        if (n->in[k] >= 0)
            in[k] = rt_value_tensor(&g->values[n->in[k]]);
        else
            memset(&in[k], 0, sizeof in[k]);
    }
    for (int k = 0; k < n->n_out; k++) {
        memset(&out[k], 0, sizeof out[k]);
        if (n->out[k] < 0) continue;
        rt_value *v = &g->values[n->out[k]];
        out[k] = rt_value_tensor(v);
        /* an output the operator does not make (a node listing more outputs
         * than its operator has) keeps whatever shape it was declared with */
        if (!shape_known(v)) {
            for (int j = 0; j < k; j++) lector__free(out[j].data);
            return lector__error(err, LECTOR_ERR_INVALID_MODEL,
                                 "%s: node '%s' (%s): shape inference gives no shape for its output '%s' (one its "
                                 "operator does not make?)",
                                 g->name, n->name, rt_op_table[n->op].name, v->name);
        }
        /* constants are small in real models; a folded value of more than
         * 1 GiB means a hostile or broken shape computation */
        if (rt_value_numel(v) > ((int64_t)1 << 28)) {
            for (int j = 0; j < k; j++) lector__free(out[j].data);
            return lector__error(err, LECTOR_ERR_LIMIT, "%s: node '%s' would fold into a constant of %lld elements",
                                 g->name, n->name, (long long)rt_value_numel(v));
        }
        out[k].data = lector__aligned_alloc(rt_value_nbytes(v));
        if (!out[k].data) {
            for (int j = 0; j < k; j++) lector__free(out[j].data);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory folding '%s'", g->name, n->name);
        }
    }
    /* Shape needs only the input's shape: give the kernel a dummy pointer. */
    static float dummy;
    if (n->op == RT_OP_Shape && in[0].data == NULL) in[0].data = &dummy;
    rt_kernel_ctx ctx = {1, err};
    lector_status st = rt_op_table[n->op].ref(n, in, out, &ctx);
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        if (st) {
            lector__free(out[k].data);
            continue;
        }
        rt_value *v = &g->values[n->out[k]];
        v->data = out[k].data;
        v->owns_data = true;
        v->producer = -1;
    }
    if (st) return st;
    n->dead = true;
    return LECTOR_OK;
}

lector_status rt_infer_and_fold(rt_graph *g, const lector_tensor *inputs, lector_error *err)
{
    char a[96], b[96];
    /* What a graph output declares of itself (the loader keeps it for
     * lector_model_output) is no fact about this run: only inference sets the
     * shapes a plan uses. An output no node infers stays unknown, as a model
     * that names one output twice leaves it. */
    for (int i = 0; i < g->n_outputs; i++) {
        rt_value *v = &g->values[g->outputs[i]];
        if (v->data || v->is_input) continue;
        v->dtype = LECTOR_DTYPE_UNDEFINED;
        v->ndim = -1;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        rt_value *v = &g->values[g->inputs[i]];
        const lector_tensor *t = &inputs[i];
        if (t->dtype != v->dtype)
            return lector__error(err, LECTOR_ERR_DTYPE, "%s: input '%s' must be %s, got %s", g->name, v->name,
                                 lector_dtype_name(v->dtype), lector_dtype_name(t->dtype));
        if (v->ndim >= 0 && t->ndim != v->ndim)
            return lector__error(err, LECTOR_ERR_SHAPE, "%s: input '%s' must have rank %d (shape %s), got shape %s",
                                 g->name, v->name, v->ndim, rt_dims_str(v->ndim, v->dims, a, sizeof a),
                                 rt_dims_str(t->ndim, t->dims, b, sizeof b));
        if (t->ndim < 0 || t->ndim > LECTOR_MAX_DIMS)
            return lector__error(err, LECTOR_ERR_SHAPE, "%s: input '%s' has invalid rank %d", g->name, v->name,
                                 t->ndim);
        for (int d = 0; d < t->ndim; d++) {
            if (t->dims[d] < 0 || (v->ndim >= 0 && v->dims[d] >= 0 && v->dims[d] != t->dims[d]))
                return lector__error(err, LECTOR_ERR_SHAPE, "%s: input '%s' must have shape %s, got %s (dimension %d)",
                                     g->name, v->name, rt_dims_str(v->ndim, v->dims, a, sizeof a),
                                     rt_dims_str(t->ndim, t->dims, b, sizeof b), d);
        }
        v->ndim = t->ndim;
        memcpy(v->dims, t->dims, sizeof(int64_t) * (size_t)t->ndim);
        if (rt_input_bound_by_value(t)) {
            /* a shape-carrying input: fold it like a constant (plan.h) */
            size_t nb = (size_t)lector_tensor_numel(t) * lector_dtype_size(t->dtype);
            void *copy = lector__malloc(nb ? nb : 1);
            if (!copy) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
            if (nb) memcpy(copy, t->data, nb);
            v->data = copy;
            v->owns_data = true;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        rt_node *n = &g->nodes[i];
        if (n->dead) continue;
        const rt_value *in[16];
        rt_value *out[8];
        if (n->n_in > 16 || n->n_out > 8)
            return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s: node '%s' has too many inputs/outputs", g->name,
                                 n->name);
        int all_const = 1;
        for (int k = 0; k < n->n_in; k++) {
            in[k] = n->in[k] >= 0 ? &g->values[n->in[k]] : NULL;
            if (in[k] && !in[k]->data) all_const = 0;
        }
        rt_value scratch; /* where inference writes absent optional outputs */
        memset(&scratch, 0, sizeof scratch);
        for (int k = 0; k < 8; k++) /* slots past n_out also point at scratch */
            out[k] = k < n->n_out && n->out[k] >= 0 ? &g->values[n->out[k]] : &scratch;
        for (int k = n->n_in; k < 16; k++) in[k] = NULL;
        lector_status st = rt_op_table[n->op].infer(n, in, out, err);
        if (st) {
            /* make sure the message names the model */
            if (err && strncmp(err->message, g->name, strlen(g->name))) lector__error_prefix(err, "%s", g->name);
            return st;
        }
        int foldable = all_const || (n->op == RT_OP_Shape && in[0] && in[0]->ndim >= 0);
        if (n->op == RT_OP_Dropout) foldable = all_const;
        if (foldable && (st = fold_node(g, n, err))) return st;
    }
    return LECTOR_OK;
}

/* Folds, on a graph whose inputs have no shape yet, every node whose inputs
 * are all constants (Constant nodes first of all: paddle2onnx keeps weights
 * there), so that the folded values belong to this graph and every clone
 * shares them. */
static lector_status fold_constant_nodes(rt_graph *g, lector_error *err)
{
    for (int i = 0; i < g->n_nodes; i++) {
        rt_node *n = &g->nodes[i];
        if (n->dead || n->op == RT_OP_Shape || n->n_in > 16 || n->n_out > 8) continue;
        const rt_value *in[16];
        rt_value *out[8];
        int all_const = 1;
        for (int k = 0; k < 16; k++) in[k] = k < n->n_in && n->in[k] >= 0 ? &g->values[n->in[k]] : NULL;
        for (int k = 0; k < n->n_in; k++) all_const &= !in[k] || in[k]->data != NULL;
        if (!all_const) continue;
        rt_value scratch;
        memset(&scratch, 0, sizeof scratch);
        for (int k = 0; k < 8; k++) out[k] = k < n->n_out && n->out[k] >= 0 ? &g->values[n->out[k]] : &scratch;
        /* a graph output keeps what it declares: folding it here would hide that from lector_model_output */
        int is_out = 0;
        for (int k = 0; k < n->n_out; k++) is_out |= n->out[k] >= 0 && g->values[n->out[k]].is_output;
        if (is_out) continue;
        lector_status st = rt_op_table[n->op].infer(n, in, out, err);
        if (st) {
            if (err && strncmp(err->message, g->name, strlen(g->name))) lector__error_prefix(err, "%s", g->name);
            return st;
        }
        if ((st = fold_node(g, n, err))) return st;
        /* a Constant's tensor now lives in its output value: not twice */
        if (n->op == RT_OP_Constant)
            for (int a = 0; a < n->n_attrs; a++)
                if (n->attrs[a].type == RT_ATTR_TENSOR) {
                    lector__free(n->attrs[a].t.data);
                    n->attrs[a].t.data = NULL;
                }
    }
    return LECTOR_OK;
}

/* ---- BatchNorm folding ---------------------------------------------------- */

static int single_consumer(const rt_graph *g, const int *cnt, int v)
{
    return v >= 0 && cnt[v] == 1 && !g->values[v].is_output;
}

/* The only live node reading value v (after single_consumer()). */
static int consumer_of(const rt_graph *g, int v)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const rt_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == v) return i;
    }
    return -1;
}

static int is_const_f32(const rt_graph *g, int v)
{
    return v >= 0 && g->values[v].data && g->values[v].dtype == LECTOR_DTYPE_FLOAT32;
}

/* A constant float vector of exactly n elements: the fold reads n of each
 * parameter before inference has checked any shape. */
static int is_const_f32_of(const rt_graph *g, int v, int64_t n)
{
    return is_const_f32(g, v) && rt_value_numel(&g->values[v]) == n;
}

lector_status rt_fold_batchnorm(rt_graph *g, lector_error *err)
{
    int *cnt = rt_consumer_counts(g);
    if (!cnt) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        rt_node *conv = &g->nodes[i];
        if (conv->dead || conv->op != RT_OP_Conv || conv->act != RT_ACT_NONE) continue;
        /* this runs before inference: a malformed file's arity and sizes are checked here */
        if (conv->n_in < 2 || conv->n_out < 1 || !is_const_f32(g, conv->in[1])) continue;
        int y = conv->out[0];
        const rt_value *w = &g->values[conv->in[1]];
        if (!single_consumer(g, cnt, y) || w->ndim < 1 || w->dims[0] <= 0) continue;
        int64_t cout = w->dims[0];
        if (conv->n_in > 2 && conv->in[2] >= 0 && !is_const_f32_of(g, conv->in[2], cout)) continue;
        int bi = consumer_of(g, y);
        if (bi < 0) continue;
        rt_node *bn = &g->nodes[bi];
        if (bn->op != RT_OP_BatchNormalization || bn->n_in < 5 || bn->n_out < 1 || bn->in[0] != y) continue;
        int ok = bn->out[0] >= 0;
        for (int k = 1; k < 5; k++) ok &= is_const_f32_of(g, bn->in[k], cout);
        if (!ok || (bn->n_out > 1 && (bn->out[1] >= 0 || (bn->n_out > 2 && bn->out[2] >= 0)))) continue;
        float eps = rt_attr_float(bn, "epsilon", 1e-5f);
        const float *scale = g->values[bn->in[1]].data, *shift = g->values[bn->in[2]].data;
        const float *mean = g->values[bn->in[3]].data, *var = g->values[bn->in[4]].data;
        const float *bias = conv->n_in > 2 && conv->in[2] >= 0 ? g->values[conv->in[2]].data : NULL;
        int64_t per = rt_value_numel(w) / cout;
        float *nw = lector__aligned_alloc(rt_value_nbytes(w));
        float *nb = lector__aligned_alloc(sizeof(float) * (size_t)cout);
        if (!nw || !nb) {
            lector__free(nw);
            lector__free(nb);
            lector__free(cnt);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        }
        const float *ow = w->data;
        for (int64_t c = 0; c < cout; c++) {
            float s = scale[c] / sqrtf(var[c] + eps);
            for (int64_t k = 0; k < per; k++) nw[c * per + k] = ow[c * per + k] * s;
            nb[c] = ((bias ? bias[c] : 0.f) - mean[c]) * s + shift[c];
        }
        char name[300];
        int64_t wdims[LECTOR_MAX_DIMS];
        int wnd = w->ndim;
        memcpy(wdims, w->dims, sizeof wdims); /* adding values may move g->values */
        snprintf(name, sizeof name, "%s::bn_w", conv->name);
        int wv = rt_graph_add_const(g, name, LECTOR_DTYPE_FLOAT32, wnd, wdims, nw);
        int64_t bd[1] = {cout};
        snprintf(name, sizeof name, "%s::bn_b", conv->name);
        int bv = wv >= 0 ? rt_graph_add_const(g, name, LECTOR_DTYPE_FLOAT32, 1, bd, nb) : -1;
        if (wv < 0 || bv < 0) {
            if (wv < 0) lector__free(nw);
            if (bv < 0) lector__free(nb);
            lector__free(cnt);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        }
        conv = &g->nodes[i]; /* values array may have moved, nodes did not */
        bn = &g->nodes[bi];
        if (conv->n_in < 3) {
            int *nin = lector__realloc(conv->in, sizeof(int) * 3);
            if (!nin) {
                lector__free(cnt);
                return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
            }
            conv->in = nin;
            conv->n_in = 3;
        }
        conv->in[1] = wv;
        conv->in[2] = bv;
        conv->out[0] = bn->out[0];
        g->values[bn->out[0]].producer = i;
        bn->dead = true;
    }
    lector__free(cnt);
    return LECTOR_OK;
}

/* ---- activation fusion ----------------------------------------------------- */

static int fusable_producer(int op)
{
    return op == RT_OP_Conv || op == RT_OP_ConvTranspose || op == RT_OP_MatMul || op == RT_OP_Gemm || op == RT_OP_Add ||
           op == RT_OP_BatchNormalization;
}

/* Scalar float constant of input k of node n, or NAN-free default. */
static int const_scalar(const rt_graph *g, const rt_node *n, int k, float *out)
{
    if (k >= n->n_in || n->in[k] < 0) return 0;
    const rt_value *v = &g->values[n->in[k]];
    if (!v->data || v->dtype != LECTOR_DTYPE_FLOAT32 || rt_value_numel(v) != 1) return -1;
    *out = *(const float *)v->data;
    return 1;
}

lector_status rt_fuse_activations(rt_graph *g, lector_error *err)
{
    int *cnt = rt_consumer_counts(g);
    if (!cnt) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        rt_node *p = &g->nodes[i];
        if (p->dead || !fusable_producer(p->op) || p->act != RT_ACT_NONE) continue;
        int y = p->out[0];
        if (y < 0 || g->values[y].is_output || g->values[y].dtype != LECTOR_DTYPE_FLOAT32) continue;
        if (cnt[y] == 1) {
            rt_node *a = &g->nodes[consumer_of(g, y)];
            if (a->in[0] != y) continue;
            rt_act act = RT_ACT_NONE;
            float alpha = 0, beta = 0;
            switch (a->op) {
            case RT_OP_Relu: act = RT_ACT_RELU; break;
            case RT_OP_Sigmoid: act = RT_ACT_SIGMOID; break;
            case RT_OP_HardSigmoid:
                act = RT_ACT_HARDSIGMOID;
                alpha = rt_attr_float(a, "alpha", 0.2f);
                beta = rt_attr_float(a, "beta", 0.5f);
                break;
            case RT_OP_HardSwish:
                act = RT_ACT_HARDSWISH;
                alpha = 1.f / 6.f;
                beta = 0.5f;
                break;
            case RT_OP_Clip: {
                alpha = -INFINITY;
                beta = INFINITY;
                if (const_scalar(g, a, 1, &alpha) < 0 || const_scalar(g, a, 2, &beta) < 0) break;
                act = RT_ACT_CLIP;
                break;
            }
            default: break;
            }
            if (act == RT_ACT_NONE) continue;
            p->act = act;
            p->act_alpha = alpha;
            p->act_beta = beta;
            p->out[0] = a->out[0];
            g->values[a->out[0]].producer = i;
            a->dead = true;
        } else if (cnt[y] == 2) {
            /* x * Sigmoid(x) and x * HardSigmoid(x): y feeds the gate and the Mul. */
            int gi = -1, mi = -1;
            for (int j = i + 1; j < g->n_nodes; j++) {
                rt_node *c = &g->nodes[j];
                if (c->dead) continue;
                for (int k = 0; k < c->n_in; k++) {
                    if (c->in[k] != y) continue;
                    if ((c->op == RT_OP_Sigmoid || c->op == RT_OP_HardSigmoid) && k == 0)
                        gi = j;
                    else if (c->op == RT_OP_Mul)
                        mi = j;
                }
            }
            if (gi < 0 || mi < 0) continue;
            rt_node *gate = &g->nodes[gi], *mul = &g->nodes[mi];
            int gout = gate->out[0];
            if (!single_consumer(g, cnt, gout)) continue;
            if (!((mul->in[0] == y && mul->in[1] == gout) || (mul->in[1] == y && mul->in[0] == gout))) continue;
            if (gate->op == RT_OP_Sigmoid) {
                p->act = RT_ACT_SWISH;
            } else {
                p->act = RT_ACT_HARDSWISH;
                p->act_alpha = rt_attr_float(gate, "alpha", 0.2f);
                p->act_beta = rt_attr_float(gate, "beta", 0.5f);
            }
            p->out[0] = mul->out[0];
            g->values[mul->out[0]].producer = i;
            gate->dead = true;
            mul->dead = true;
        }
    }
    lector__free(cnt);
    return LECTOR_OK;
}

/* ---- LayerNorm recognition ------------------------------------------------- */

/* Finds the live consumers of v with op `op`; returns the first or -1. */
static int find_consumer(const rt_graph *g, int v, int op)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const rt_node *n = &g->nodes[i];
        if (n->dead || n->op != op) continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == v) return i;
    }
    return -1;
}

/* ReduceMean over exactly the last axis with keepdims. */
static int is_last_axis_mean(const rt_graph *g, const rt_node *n)
{
    if (n->op != RT_OP_ReduceMean || rt_attr_int(n, "keepdims", 1) != 1) return 0;
    const int64_t *axes;
    int k = rt_attr_ints(n, "axes", &axes);
    int nd = g->values[n->in[0]].ndim;
    return k == 1 && (axes[0] == -1 || axes[0] == nd - 1);
}

/* Other input of binary node n (the one that is not v). */
static int other_input(const rt_node *n, int v) { return n->in[0] == v ? n->in[1] : n->in[0]; }

lector_status rt_fuse_layernorm(rt_graph *g, lector_error *err)
{
    int *cnt = rt_consumer_counts(g);
    if (!cnt) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < g->n_nodes; i++) {
        rt_node *m1 = &g->nodes[i];
        if (m1->dead || !is_last_axis_mean(g, m1)) continue;
        int x = m1->in[0], mean = m1->out[0];
        int si = find_consumer(g, mean, RT_OP_Sub);
        if (si < 0 || g->nodes[si].in[0] != x || g->nodes[si].in[1] != mean || cnt[mean] != 1) continue;
        int d = g->nodes[si].out[0];
        if (cnt[d] != 2) continue;
        int pi = find_consumer(g, d, RT_OP_Pow), di = find_consumer(g, d, RT_OP_Div);
        if (pi < 0 || di < 0 || g->nodes[pi].in[0] != d || g->nodes[di].in[0] != d) continue;
        float e;
        if (const_scalar(g, &g->nodes[pi], 1, &e) != 1 || e != 2.f) continue;
        int p = g->nodes[pi].out[0];
        int m2i = find_consumer(g, p, RT_OP_ReduceMean);
        if (m2i < 0 || cnt[p] != 1 || !is_last_axis_mean(g, &g->nodes[m2i])) continue;
        int var = g->nodes[m2i].out[0];
        int ai = find_consumer(g, var, RT_OP_Add);
        if (ai < 0 || cnt[var] != 1) continue;
        float eps;
        int ev = other_input(&g->nodes[ai], var);
        if (ev < 0 || !g->values[ev].data || g->values[ev].dtype != LECTOR_DTYPE_FLOAT32 ||
            rt_value_numel(&g->values[ev]) != 1)
            continue;
        eps = *(const float *)g->values[ev].data;
        int ve = g->nodes[ai].out[0];
        int qi = find_consumer(g, ve, RT_OP_Sqrt);
        if (qi < 0 || cnt[ve] != 1) continue;
        int sd = g->nodes[qi].out[0];
        if (cnt[sd] != 1 || g->nodes[di].in[1] != sd) continue;
        int nrm = g->nodes[di].out[0];
        int mi = find_consumer(g, nrm, RT_OP_Mul);
        if (mi < 0 || cnt[nrm] != 1) continue;
        int gamma = other_input(&g->nodes[mi], nrm);
        int y1 = g->nodes[mi].out[0];
        int bi = find_consumer(g, y1, RT_OP_Add);
        if (bi < 0 || cnt[y1] != 1) continue;
        int beta = other_input(&g->nodes[bi], y1);
        int64_t last = g->values[x].dims[g->values[x].ndim - 1];
        if (!is_const_f32(g, gamma) || !is_const_f32(g, beta) || rt_value_numel(&g->values[gamma]) != last ||
            rt_value_numel(&g->values[beta]) != last)
            continue;
        /* Rewrite the Sub node (its slot count may be 2) into LayerNormalization. */
        rt_node *ln = &g->nodes[si];
        int *nin = lector__realloc(ln->in, sizeof(int) * 3);
        rt_attr *na = lector__realloc(ln->attrs, sizeof(rt_attr) * (size_t)(ln->n_attrs + 2));
        if (nin) ln->in = nin;
        if (na) ln->attrs = na;
        if (!nin || !na) {
            lector__free(cnt);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        }
        rt_attr *aa = &ln->attrs[ln->n_attrs], *ab = &ln->attrs[ln->n_attrs + 1];
        memset(aa, 0, sizeof *aa * 2);
        aa->name = lector__strdup("axis");
        aa->type = RT_ATTR_INT;
        aa->i = -1;
        ab->name = lector__strdup("epsilon");
        ab->type = RT_ATTR_FLOAT;
        ab->f = eps;
        ln->n_attrs += 2;
        if (!aa->name || !ab->name) {
            lector__free(cnt);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        }
        ln->op = RT_OP_LayerNormalization;
        ln->n_in = 3;
        ln->in[0] = x;
        ln->in[1] = gamma;
        ln->in[2] = beta;
        int y = g->nodes[bi].out[0];
        ln->out[0] = y;
        g->values[y].producer = si;
        m1->dead = true;
        g->nodes[pi].dead = g->nodes[m2i].dead = g->nodes[ai].dead = true;
        g->nodes[qi].dead = g->nodes[di].dead = g->nodes[mi].dead = g->nodes[bi].dead = true;
        /* The old mean node precedes the Sub: fine, x is defined before both. */
        lector__free(cnt);
        cnt = rt_consumer_counts(g);
        if (!cnt) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    lector__free(cnt);
    return LECTOR_OK;
}

/* ---- dead nodes ------------------------------------------------------------ */

void rt_remove_dead(rt_graph *g)
{
    /* Reverse sweep: a node is live if one of its outputs is a graph output
     * or read by a live node after it. */
    char *live = lector__calloc((size_t)(g->n_values ? g->n_values : 1), 1);
    if (!live) return; /* removing dead nodes is an optimisation only */
    for (int i = 0; i < g->n_outputs; i++) live[g->outputs[i]] = 1;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        rt_node *n = &g->nodes[i];
        if (n->dead) continue;
        int used = 0;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0 && live[n->out[k]]) used = 1;
        if (!used) {
            n->dead = true;
            continue;
        }
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) live[n->in[k]] = 1;
    }
    lector__free(live);
}

lector_status rt_prepare_constants(rt_graph *g, lector_error *err)
{
    lector_status st = fold_constant_nodes(g, err);
    if (!st) st = rt_fold_batchnorm(g, err);
    return st;
}

lector_status rt_optimize(rt_graph *g, const lector_tensor *inputs, int fuse, lector_error *err)
{
    lector_status st = rt_infer_and_fold(g, inputs, err);
    if (st) return st;
    rt_remove_dead(g);
    if (!fuse) return LECTOR_OK;
    if ((st = rt_fold_batchnorm(g, err))) return st;
    if ((st = rt_fuse_layernorm(g, err))) return st;
    if ((st = rt_fuse_activations(g, err))) return st;
    rt_remove_dead(g);
    return LECTOR_OK;
}
