/*
 * cuda_check.c - LECTOR_CUDA_CHECK=1: every step of a plan is checked
 * against the reference kernels (src/backend/cpu/ref) as it runs, in the
 * manner of ggml's test-backend-ops.
 *
 * After each step the worker's stream is synchronised; the step's inputs are
 * downloaded as the GPU holds them (converted to fp32 NCHW on the host), the
 * nodes the step covers (one node, or every node of a fused chain, with the
 * convolution epilogue done here) run on the host with the reference
 * kernels, and every result the step wrote is compared with the reference:
 * the normalised mean squared error sum((gpu - ref)^2) / sum(ref^2) must stay
 * under 1e-6 for fp32 plans and 1e-4 for fp16 plans; integer results (ArgMax)
 * must be equal. Each step is checked on the GPU's own inputs, so errors do
 * not accumulate and the first bad step is named. A failure makes the run
 * return LECTOR_ERR_BACKEND with the step, its operator and the figures.
 * Slow (the reference kernels are plain C): for tests on small inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "util/half.h"

static int check_switch(void) { return cu_switch(LECTOR__TC_CUDA_CHECK, 0); }

int cu_check_enabled(void) { return check_switch(); }

/* Host copy of n*c*h*w elements stored at device address p as fp32 NCHW floats. */
static float *fetch_float(const void *p, int64_t n, int64_t c, int64_t h, int64_t w, int half, int nhwc)
{
    int64_t tot = n * c * h * w;
    size_t es = half ? 2 : 4;
    void *raw = cu_malloc((size_t)(tot ? tot : 1) * es);
    float *out = cu_malloc(sizeof(float) * (size_t)(tot ? tot : 1));
    if (!raw || !out || (tot && cudaMemcpy(raw, p, (size_t)tot * es, cudaMemcpyDeviceToHost) != cudaSuccess)) {
        cudaGetLastError();
        cu_free(raw);
        cu_free(out);
        return NULL;
    }
    for (int64_t b = 0; b < n; b++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t y = 0; y < h; y++)
                for (int64_t x = 0; x < w; x++) {
                    int64_t src = nhwc ? ((b * h + y) * w + x) * c + ch : ((b * c + ch) * h + y) * w + x;
                    int64_t dst = ((b * c + ch) * h + y) * w + x;
                    out[dst] = half ? lector__half_to_float(((const uint16_t *)raw)[src]) : ((const float *)raw)[src];
                }
    cu_free(raw);
    return out;
}

/* Host copy of value v as the reference kernels want it (floats as fp32 NCHW, others raw). */
static void *fetch_value(const exec_ctx *x, int v)
{
    const rt_graph *g = x->p->g;
    const rt_value *val_ = &g->values[v];
    const void *p = cu_dptr(x, v);
    if (!p) return NULL;
    if (is_f32(val_)) {
        int64_t d[4];
        cu_dims4(val_, d);
        return fetch_float(p, d[0], d[1], d[2], d[3], x->cp->vhalf[v], val_->ndim == 4 && x->cp->vnhwc[v]);
    }
    size_t nb = (size_t)numel(val_) * cu_dsize(val_->dtype);
    void *out = cu_malloc(nb ? nb : 1);
    if (out && nb && cudaMemcpy(out, p, nb, cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        cu_free(out);
        return NULL;
    }
    return out;
}

/* Values the check computed on the host for the current step (a chain's intermediates),
 * and the raw output of the last convolution whose epilogue a chain applies. */
#define MAX_LOCAL (CK_CHAIN_OPS + 8)
typedef struct local_vals {
    int v[MAX_LOCAL];
    void *data[MAX_LOCAL];
    int n;
} local_vals;

/* Externals a chain step overwrites in place (a result given the external's
 * bytes, element for element: cuda_fuse.c), fetched before the step ran. */
static __thread local_vals saved;

static __thread int raw_v = -1;
static __thread float *raw_data;
static __thread uint64_t raw_plan;

static void *local_get(const local_vals *l, int v)
{
    for (int i = l->n - 1; i >= 0; i--)
        if (l->v[i] == v) return l->data[i];
    return NULL;
}

static void local_free(local_vals *l)
{
    for (int i = 0; i < l->n; i++) cu_free(l->data[i]);
    l->n = 0;
}

/* Runs node n with the reference kernel: inputs from `loc`, constants, or the
 * device; its outputs are added to `loc`. `drop_epilogue`: no bias, no activation. */
static lector_status ref_node(const exec_ctx *x, const rt_node *n0, int drop_epilogue, local_vals *loc,
                              lector_error *err)
{
    const rt_graph *g = x->p->g;
    rt_node n = *n0;
    if (drop_epilogue) {
        if (n.op != RT_OP_MatMul && n.n_in > 2) n.n_in = 2;
        n.act = RT_ACT_NONE;
    }
    lector_tensor in[16], out[8];
    void *tmp[16] = {0};
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    if (n.n_in > 16 || n.n_out > 8 || loc->n + n.n_out > MAX_LOCAL) return LECTOR_ERR_INTERNAL;
    lector_status st = LECTOR_OK;
    for (int k = 0; k < n.n_in && !st; k++) {
        if (n.in[k] < 0) continue;
        const rt_value *v = &g->values[n.in[k]];
        in[k] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(in[k].dims, v->dims, sizeof v->dims);
        if (v->data)
            in[k].data = v->data;
        else if ((in[k].data = local_get(loc, n.in[k])) == NULL && !(in[k].data = tmp[k] = fetch_value(x, n.in[k])))
            st = LECTOR_ERR_OUT_OF_MEMORY;
    }
    for (int k = 0; k < n.n_out && !st; k++) {
        if (n.out[k] < 0) continue;
        const rt_value *v = &g->values[n.out[k]];
        out[k] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(out[k].dims, v->dims, sizeof v->dims);
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        out[k].data = cu_malloc(nb ? nb : 1);
        if (!out[k].data) {
            st = LECTOR_ERR_OUT_OF_MEMORY;
            break;
        }
        loc->v[loc->n] = n.out[k];
        loc->data[loc->n++] = out[k].data;
    }
    if (!st) {
        lector_error e2 = {0};
        rt_kernel_ctx kc = {1, &e2};
        st = H->ops[n.op].ref(&n, in, out, &kc);
        if (st && err) *err = e2;
    }
    for (int k = 0; k < 16; k++) cu_free(tmp[k]);
    return st;
}

typedef struct cmp_result {
    double nmse, max_abs;
    int64_t mismatches;
} cmp_result;

static cmp_result compare(const rt_value *v, const void *gpu, const void *ref)
{
    cmp_result r = {0, 0, 0};
    int64_t n = numel(v);
    if (is_f32(v)) {
        double num = 0, den = 0;
        for (int64_t i = 0; i < n; i++) {
            double a = ((const float *)gpu)[i], b = ((const float *)ref)[i], d = a - b;
            if (isnan(a) != isnan(b)) {
                r.mismatches++;
                continue;
            }
            if (isnan(a) || (isinf(a) && a == b)) continue;
            num += d * d;
            den += b * b;
            if (fabs(d) > r.max_abs) r.max_abs = fabs(d);
        }
        r.nmse = den > 0 ? num / den : num;
    } else {
        size_t es = cu_dsize(v->dtype);
        for (int64_t i = 0; i < n; i++)
            if (memcmp((const char *)gpu + i * es, (const char *)ref + i * es, es)) r.mismatches++;
    }
    return r;
}

static lector_status report(const exec_ctx *x, const cu_step *s, int index, int v, const void *ref, lector_error *err)
{
    const rt_graph *g = x->p->g;
    void *gpu = fetch_value(x, v);
    if (!gpu) return LECTOR_OK; /* nothing to compare with (out of host memory): not a verdict */
    cmp_result r = compare(&g->values[v], gpu, ref);
    cu_free(gpu);
    double bound = x->cp->half ? 1e-4 : 1e-6;
    const rt_node *n = &g->nodes[s->node];
    int bad = r.mismatches > 0 || !(r.nmse <= bound);
    H->log(bad ? 1 : 3, "cuda-check: %s step %d %s%s (node %s) value %s: nmse %.3g, max abs %.3g, %lld mismatches%s",
           g->name, index, cu_op_name(n->op), s->kind == S_CHAIN ? " chain" : "", n->name, g->values[v].name, r.nmse,
           r.max_abs, (long long)r.mismatches, bad ? " FAIL" : "");
    if (!bad) return LECTOR_OK;
    if (err) {
        err->code = LECTOR_ERR_BACKEND;
        snprintf(err->message, sizeof err->message,
                 "cuda-check: step %d (%s%s, node %s): nmse %.3g (bound %.0e), max abs %.3g, %lld mismatches", index,
                 cu_op_name(n->op), s->kind == S_CHAIN ? " chain" : "", n->name, r.nmse, bound, r.max_abs,
                 (long long)r.mismatches);
    }
    return LECTOR_ERR_BACKEND;
}

void cu_check_prepare(const exec_ctx *x, const cu_step *s)
{
    local_free(&saved);
    if (!s->chain) return;
    if (cudaStreamSynchronize(x->w->stream) != cudaSuccess) {
        cudaGetLastError();
        return; /* the run reports the failure */
    }
    const rt_plan *p = x->p;
    for (int e = 0; e < s->chain->n_ext && saved.n < MAX_LOCAL; e++) {
        int v = s->ext_v[e];
        if (v < 0 || p->g->values[v].data || p->offset[v] == RT_NO_OFFSET) continue;
        for (int k = 0; k < s->chain->n_out; k++)
            if (s->out_v[k] != v && p->offset[s->out_v[k]] == p->offset[v]) {
                void *d = fetch_value(x, v);
                if (d) {
                    saved.v[saved.n] = v;
                    saved.data[saved.n++] = d;
                }
                break;
            }
    }
}

/* The nodes of chain step s on the host, each op on the results before it; the
 * epilogue op (act(raw + bias[c]) of chain_src) on `raw`, the source's result
 * without its epilogue; then every result the step wrote, compared. */
static lector_status check_chain(const exec_ctx *x, const cu_step *s, int index, const float *raw, local_vals *loc,
                                 lector_error *err)
{
    const rt_graph *g = x->p->g;
    lector_status st = LECTOR_OK;
    for (int k = 0; k < s->chain->n_ops && !st; k++) {
        int node = s->chain_node[k];
        if (k > 0 && node == s->chain_node[k - 1] && node >= 0) continue; /* BatchNormalization's two ops */
        if (node >= 0) {
            st = ref_node(x, &g->nodes[node], 0, loc, err);
            continue;
        }
        const rt_node *src = &g->nodes[s->chain_src];
        int v = src->out[0];
        const rt_value *y = &g->values[v];
        if (!raw || loc->n == MAX_LOCAL) {
            st = LECTOR_ERR_INTERNAL;
            break;
        }
        int64_t tot = numel(y), C = y->ndim >= 2 ? y->dims[1] : 1, inner = tot / (y->dims[0] * (C ? C : 1));
        float *o = cu_malloc(sizeof(float) * (size_t)(tot ? tot : 1));
        if (!o) {
            st = LECTOR_ERR_OUT_OF_MEMORY;
            break;
        }
        const float *bias = src->op != RT_OP_MatMul && src->n_in > 2 && src->in[2] >= 0
                                ? (const float *)g->values[src->in[2]].data
                                : NULL;
        const ck_chain_op *op = &s->chain->ops[0];
        for (int64_t i = 0; i < tot; i++) {
            float t = raw[i] + (bias ? bias[(i / inner) % C] : 0.f);
            switch (op->act) { /* rt_act, as the reference kernels apply it */
            case RT_ACT_RELU: t = t > 0.f ? t : 0.f; break;
            case RT_ACT_SIGMOID: t = 1.f / (1.f + expf(-t)); break;
            case RT_ACT_HARDSIGMOID: t = fminf(fmaxf(op->alpha * t + op->beta, 0.f), 1.f); break;
            case RT_ACT_HARDSWISH: t = t * fminf(fmaxf(op->alpha * t + op->beta, 0.f), 1.f); break;
            case RT_ACT_SWISH: t = t / (1.f + expf(-t)); break;
            case RT_ACT_CLIP: t = fminf(fmaxf(t, op->alpha), op->beta); break;
            default: break;
            }
            o[i] = t;
        }
        loc->v[loc->n] = v; /* after the raw result in loc (a fused convolution's): local_get finds this */
        loc->data[loc->n++] = o;
    }
    for (int k = 0; k < s->chain->n_out && !st; k++) {
        void *ref = local_get(loc, s->out_v[k]);
        if (ref) st = report(x, s, index, s->out_v[k], ref, err);
    }
    return st;
}

lector_status cu_check_step(const exec_ctx *x, const cu_step *s, int index, lector_error *err)
{
    const rt_graph *g = x->p->g;
    if (s->kind == S_CONVERT || s->kind == S_HOST) return LECTOR_OK; /* storage only / the reference itself */
    if (cudaStreamSynchronize(x->w->stream) != cudaSuccess) {
        cudaGetLastError();
        return LECTOR_OK; /* the run reports the failure */
    }
    local_vals loc = saved; /* the overwritten externals as they were (ref_node reads loc first) */
    saved.n = 0;
    lector_status st = LECTOR_OK;
    const rt_node *n = &g->nodes[s->node];
    if (s->kind == S_CHAIN) {
        /* the raw result of chain_src, kept by that step's check */
        const float *raw =
            s->chain_src >= 0 && raw_plan == x->cp->id && raw_v == g->nodes[s->chain_src].out[0] ? raw_data : NULL;
        st = check_chain(x, s, index, raw, &loc, err);
    } else if (s->chain) {
        /* a convolution whose chain runs in its kernel: its raw result exists only on the host */
        st = ref_node(x, n, 1, &loc, err);
        if (!st) st = check_chain(x, s, index, local_get(&loc, n->out[0]), &loc, err);
    } else {
        int drop = CU_HAS_RAW_OUTPUT(s->kind) && s->no_epilogue;
        st = ref_node(x, n, drop, &loc, err);
        for (int k = 0; k < n->n_out && !st; k++) {
            if (n->out[k] < 0) continue;
            void *ref = local_get(&loc, n->out[k]);
            if (ref) st = report(x, s, index, n->out[k], ref, err);
        }
        if (!st && drop) { /* the raw result, for the chain that applies the epilogue */
            cu_free(raw_data);
            raw_data = fetch_value(x, n->out[0]);
            raw_v = n->out[0];
            raw_plan = x->cp->id;
        }
    }
    if (st && st != LECTOR_ERR_BACKEND && err && !err->message[0])
        snprintf(err->message, sizeof err->message, "cuda-check: step %d (%s) could not be checked (status %d)", index,
                 cu_op_name(n->op), (int)st);
    local_free(&loc);
    return st;
}
