/*
 * cuda_plan.c - a plan's compilation: one step per live node, chosen by the
 * node's operator (build_step only dispatches: each family of operators
 * builds its steps in its own file), the storages of the values
 * (cuda_layout.c), the conversions at the graph's inputs and outputs, the
 * fused chains (cuda_fuse.c, cuda_nvrtc.c) and the upload of the constants.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

size_t cu_dsize(lector_dtype t)
{
    switch (t) {
    case LECTOR_DTYPE_UINT8:
    case LECTOR_DTYPE_INT8:
    case LECTOR_DTYPE_BOOL: return 1;
    case LECTOR_DTYPE_FLOAT16: return 2;
    case LECTOR_DTYPE_FLOAT32:
    case LECTOR_DTYPE_INT32: return 4;
    case LECTOR_DTYPE_INT64:
    case LECTOR_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

size_t cu_vsize(const cu_plan *cp, const rt_graph *g, int v)
{
    return cp->vhalf && cp->vhalf[v] ? 2 : cu_dsize(g->values[v].dtype);
}

const char *cu_op_name(int op) { return op >= 0 && op < H->n_ops ? H->ops[op].name : "?"; }

int *cu_consumer_counts(const rt_plan *p)
{
    const rt_graph *g = p->g;
    int *cons = cu_calloc((size_t)g->n_values + 1, sizeof *cons);
    if (!cons) return NULL;
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) cons[n->in[k]]++;
    }
    return cons;
}

/* One node's step, built by the file of its operator's family; 1: no GPU
 * step (the node runs on the host), -1: out of memory. */
static int build_step(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    int r = 1;
    switch (n->op) {
    case RT_OP_Conv: r = cu_build_conv(cc, n, s, 0); break;
    case RT_OP_ConvTranspose: r = cu_build_conv(cc, n, s, 1); break;
    case RT_OP_Add: r = cu_build_binary(cc, n, s, CK_ADD); break;
    case RT_OP_Sub: r = cu_build_binary(cc, n, s, CK_SUB); break;
    case RT_OP_Mul: r = cu_build_binary(cc, n, s, CK_MUL); break;
    case RT_OP_Div: r = cu_build_binary(cc, n, s, CK_DIV); break;
    case RT_OP_Pow: r = cu_build_binary(cc, n, s, CK_POW); break;
    case RT_OP_Max: r = cu_build_binary(cc, n, s, CK_MAX); break;
    case RT_OP_Min: r = cu_build_binary(cc, n, s, CK_MIN); break;
    case RT_OP_BatchNormalization: r = cu_build_batchnorm(cc, n, s); break;
    case RT_OP_GlobalAveragePool: r = cu_build_gap(cc, n, s); break;
    case RT_OP_MaxPool:
    case RT_OP_AveragePool: r = cu_build_pool(cc, n, s); break;
    case RT_OP_Resize: r = cu_build_resize(cc, n, s); break;
    case RT_OP_Reshape:
    case RT_OP_Squeeze:
    case RT_OP_Unsqueeze:
    case RT_OP_Flatten:
    case RT_OP_Identity:
    case RT_OP_Dropout: r = cu_build_copy(cc, n, s); break;
    case RT_OP_Slice:
    case RT_OP_Transpose:
    case RT_OP_Expand: r = cu_build_gather(cc, n, s, 0); break;
    case RT_OP_Concat: r = cu_build_concat(cc, n, s); break;
    case RT_OP_MatMul: r = cu_build_matmul(cc, n, s); break;
    case RT_OP_Softmax: r = cu_build_softmax(cc, n, s); break;
    case RT_OP_LayerNormalization: r = cu_build_layernorm(cc, n, s); break;
    case RT_OP_ArgMax:
    case RT_OP_ReduceMax: r = cu_build_argmax(cc, n, s); break;
    case RT_OP_TopK: r = cu_build_topk(cc, n, s); break;
    default:
        if (cu_unary_op(n->op) >= 0) r = cu_build_unary(cc, n, s);
        break;
    }
    /* A GPU step reads its constant operands from the device (fp32, as in the
     * graph), but data movement reads only its data: the shapes, axes,
     * starts, scales it is given were read here, and they change with the
     * input's size (a Reshape's target holds the line's width), which made
     * each new width's block of constants differ and be uploaded again. */
    int data_only = s->kind == S_COPY || s->kind == S_GATHER || s->kind == S_RESIZE;
    if (r == 0)
        for (int k = 0; k < (data_only ? 1 : n->n_in); k++)
            if (n->in[k] >= 0 && val(g, n->in[k])->data) {
                int converted = (k == 1 && CU_HAS_RAW_OUTPUT(s->kind) && s->wconv != RT_NO_OFFSET) ||
                                (k == 0 && s->kind == S_MATMUL && s->aconv != RT_NO_OFFSET);
                if (!converted) cc->need_const[n->in[k]] = 1;
            }
    return r;
}

/* Steps other than chains and MatMul read and write one storage precision
 * (the float activations of the node all fp16 or all fp32):
 * a plan whose storages mix at such a step is refused (and compiled in fp32). */
static int storage_uniform(const compile_ctx *cc, const rt_node *n, const cu_step *s)
{
    switch (s->kind) {
    case S_AFFINE:
    case S_BINARY:
    case S_UNARY:
    case S_CHAIN:
    case S_MATMUL:
    case S_ARGMAX:
    case S_CONVERT:
    case S_HOST: return 1;
    default: break;
    }
    const rt_graph *g = cc->g;
    int storage = -1;
    for (int k = 0; k < n->n_in + n->n_out; k++) {
        int v = k < n->n_in ? n->in[k] : n->out[k - n->n_in];
        if (v < 0 || !is_f32(&g->values[v]) || g->values[v].data) continue;
        if (storage < 0)
            storage = cc->cp->vhalf[v];
        else if (cc->cp->vhalf[v] != storage)
            return 0;
    }
    return 1;
}

void cu_plan_free(rt_backend *be, rt_plan *p)
{
    cu_plan *cp = p->be_plan;
    if (!cp) return;
    cu_own_free(be->ctx, cp);
    for (int i = 0; i < cp->n_steps; i++) {
        cu_step *s = &cp->steps[i];
        if (s->xd) cudnnDestroyTensorDescriptor(s->xd);
        if (s->yd) cudnnDestroyTensorDescriptor(s->yd);
        if (s->wd) cudnnDestroyFilterDescriptor(s->wd);
        if (s->cd) cudnnDestroyConvolutionDescriptor(s->cd);
        cu_free(s->chain);
    }
    cu_shared_put(cp->cblock_shared);
    for (int i = 0; i < cp->n_shared; i++) cu_shared_put(cp->shared[i]);
    cu_free(cp->shared);
    cu_free(cp->steps);
    cu_free(cp->coff);
    cu_free(cp->in_off);
    cu_free(cp->in_conv);
    cu_free(cp->out_conv);
    cu_free(cp->vhalf);
    cu_free(cp->vnhwc);
    cu_free(cp);
    p->be_plan = NULL;
}

static cu_step *push_step(cu_plan *cp)
{
    if (cp->n_steps == cp->cap_steps) {
        int cap = cp->cap_steps ? 2 * cp->cap_steps : 64;
        cu_step *ns = cu_realloc(cp->steps, sizeof *ns * (size_t)cap);
        if (!ns) return NULL;
        cp->steps = ns;
        cp->cap_steps = cap;
    }
    cu_step *s = &cp->steps[cp->n_steps++];
    memset(s, 0, sizeof *s);
    s->wconv = s->aconv = RT_NO_OFFSET;
    for (int e = 0; e < CK_CHAIN_EXT; e++) s->ext_cb[e] = RT_NO_OFFSET;
    s->chain_src = -1;
    return s;
}

/* A float graph input or output stored other than fp32 NCHW. */
static int needs_convert(const rt_graph *g, const cu_plan *cp, int v)
{
    return !g->values[v].data && is_f32(&g->values[v]) && (cp->vhalf[v] || cp->vnhwc[v]);
}

/* A conversion step of value v: from fp32 NCHW to its storage (an input,
 * `in` = 1) or from its storage to fp32 NCHW (an output); the arena offsets
 * are set once the arena is laid out. */
static lector_status push_convert(cu_plan *cp, const rt_graph *g, int v, int in, lector_error *err)
{
    cu_step *s = push_step(cp);
    if (!s) return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    s->kind = S_CONVERT;
    s->node = -1;
    s->cv_value = v;
    if (in)
        s->cv_dst_half = cp->vhalf[v], s->cv_dst_nhwc = cp->vnhwc[v];
    else
        s->cv_src_half = cp->vhalf[v], s->cv_src_nhwc = cp->vnhwc[v];
    cu_dims4(&g->values[v], s->cv_dims);
    return LECTOR_OK;
}

/* The debug log's split of a plan's steps phase: the three operators whose
 * steps took longest to build (cuDNN descriptors and algorithms, cuBLAS
 * set-up, weight layouts), where a first pass's per-plan time goes. */
static void log_step_costs(const char *model, const double *op_ms)
{
    int top[3] = {-1, -1, -1};
    for (int op = 0; op < RT_OP_COUNT; op++)
        for (int k = 0; k < 3; k++)
            if (top[k] < 0 || op_ms[op] > op_ms[top[k]]) {
                for (int j = 2; j > k; j--) top[j] = top[j - 1];
                top[k] = op;
                break;
            }
    H->log(3, "cuda: %s: steps by operator: %s %.1f ms, %s %.1f ms, %s %.1f ms", model, cu_op_name(top[0]),
           op_ms[top[0]], cu_op_name(top[1]), op_ms[top[1]], cu_op_name(top[2]), op_ms[top[2]]);
}

/* Compiles plan p in one mode. *unsupported = 1 when it failed only because
 * that mode (fp16, NHWC) cannot express something. */
static lector_status compile_mode(rt_backend *be, rt_plan *p, int half, int nhwc, int *unsupported, lector_error *err)
{
    cu_ctx *c = be->ctx;
    const rt_graph *g = p->g;
    *unsupported = 0;
    cu_plan *cp = cu_calloc(1, sizeof *cp);
    if (!cp) return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    p->be_plan = cp;
    static atomic_ulong next_id;
    cp->id = atomic_fetch_add(&next_id, 1) + 1;
    cp->half = half;
    cp->nhwc = nhwc;
    compile_ctx cc = {.be = be, .p = p, .g = g, .cp = cp, .sm = c->sm};
    size_t nv = (size_t)g->n_values + 1;
    cp->coff = cu_malloc(sizeof(size_t) * nv);
    cp->vhalf = cu_calloc(nv, 1);
    cp->vnhwc = cu_calloc(nv, 1);
    cp->in_off = cu_calloc((size_t)g->n_inputs + 1, sizeof(size_t));
    cp->in_conv = cu_malloc(sizeof(size_t) * ((size_t)g->n_inputs + 1));
    cp->out_conv = cu_malloc(sizeof(size_t) * ((size_t)g->n_outputs + 1));
    cc.need_const = cu_calloc(nv, sizeof(int));
    if (!cp->coff || !cp->vhalf || !cp->vnhwc || !cp->in_off || !cp->in_conv || !cp->out_conv || !cc.need_const) {
        cu_free(cc.need_const);
        cu_plan_free(be, p);
        return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int i = 0; i < g->n_inputs; i++) cp->in_conv[i] = RT_NO_OFFSET;
    for (int i = 0; i < g->n_outputs; i++) cp->out_conv[i] = RT_NO_OFFSET;
    double t_start = cu_now_ms();
    cu_store_costs(); /* from here on */
    if (half || nhwc) cu_assign_storage(&cc);
    lector_status st = cu_worker_get(c, &cc.w, err);
    if (st) {
        cu_free(cc.need_const);
        cu_plan_free(be, p);
        return st;
    }
    /* inputs arrive as fp32 NCHW: convert those stored otherwise */
    for (int i = 0; i < g->n_inputs && !st; i++)
        if (needs_convert(g, cp, g->inputs[i])) st = push_convert(cp, g, g->inputs[i], 1, err);
    /* compiles run in parallel (every line width is a plan), each on its
     * worker's own cuDNN and cuBLAS handles; only cuDNN's timed searches
     * take a lock (cuda_conv.c) */
    double t_steps = cu_now_ms(), op_ms[RT_OP_COUNT] = {0}, t_op = t_steps;
    for (int o = 0; o < p->n_order && !st; o++) {
        const rt_node *n = &g->nodes[p->order[o]];
        if (o) {
            double t = cu_now_ms();
            op_ms[g->nodes[p->order[o - 1]].op] += t - t_op;
            t_op = t;
        }
        cu_step *step = push_step(cp);
        if (!step) {
            st = cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        step->node = p->order[o];
        step->kind = S_HOST;
        step->act = n->act;
        step->alpha = n->act_alpha;
        step->beta = n->act_beta;
        int r = build_step(&cc, n, step);
        if (r == 0 && !storage_uniform(&cc, n, step)) r = 1;
        if (r < 0) {
            st = cu_fail(err, LECTOR_ERR_BACKEND, "%s: cannot prepare node %s (%s) for the GPU", g->name, n->name,
                         cu_op_name(n->op));
            break;
        }
        if (r > 0) {
            step->kind = S_HOST;
            cp->n_host++;
            if (half || nhwc) {
                *unsupported = 1;
                st = cu_fail(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s (%s) has no %s GPU kernel", n->name,
                             cu_op_name(n->op), half ? "half-precision" : "NHWC");
                break;
            }
            H->log(3, "cuda: %s: node %s (%s) runs on the host", g->name, n->name, cu_op_name(n->op));
        }
        if (step->ws > cp->ws) cp->ws = step->ws;
    }
    double t_fuse = cu_now_ms();
    if (p->n_order) op_ms[g->nodes[p->order[p->n_order - 1]].op] += t_fuse - t_op;
    cu_worker_put(c, cc.w);
    if (!st && cu_fuse_chains(&cc)) {
        if (half || nhwc) {
            *unsupported = 1;
            st = cu_fail(err, LECTOR_ERR_UNSUPPORTED_OP, "an elementwise step cannot run as a chain");
        } else {
            st = cu_fail(err, LECTOR_ERR_BACKEND, "%s: an elementwise step cannot run on the GPU", g->name);
        }
    }
    /* outputs leave as fp32 NCHW */
    for (int i = 0; i < g->n_outputs && !st; i++) {
        int v = g->outputs[i];
        if (!needs_convert(g, cp, v)) continue;
        if (p->offset[v] == RT_NO_OFFSET) {
            *unsupported = 1;
            st = cu_fail(err, LECTOR_ERR_UNSUPPORTED_OP, "output %s is not in the arena", g->values[v].name);
            break;
        }
        if (!(st = push_convert(cp, g, v, 0, err))) cp->steps[cp->n_steps - 1].cv_src = p->offset[v];
    }
    /* constants the GPU steps read */
    for (int v = 0; v < g->n_values; v++) {
        cp->coff[v] = RT_NO_OFFSET;
        if (!st && cc.need_const[v] && g->values[v].data) {
            size_t nb =
                (size_t)numel(&g->values[v]) * (cu_dsize(g->values[v].dtype) ? cu_dsize(g->values[v].dtype) : 1);
            nb = nb ? nb : 1;
            size_t known = cu_memo_get(&cc, &g->values[v], CU_MEMO_RAW, nb);
            cp->coff[v] = known ? known : cbuf_add_from(&cc, &g->values[v], CU_MEMO_RAW, g->values[v].data, nb);
        }
    }
    cu_free(cc.need_const);
    if (!st && cc.oom) st = cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
    double t_upload = cu_now_ms();
    if (!st) st = cu_upload_constants(c, cp, &cc.cb, err);
    double t_chains = cu_now_ms();
    size_t shared_bytes = 0;
    for (int i = 0; i < cp->n_shared; i++) shared_bytes += cp->shared[i]->n;
    cu_cbuf_free(&cc.cb);
    if (st) {
        cu_plan_free(be, p);
        return st;
    }
    if (!cp->n_host) atomic_fetch_add(&((cu_ctx *)be->ctx)->kernels, (uint64_t)cu_compile_chains(&cc));
    double t_end = cu_now_ms();
    /* after the planned activations: the uploaded inputs, their converted storage, the outputs' fp32 copies */
    size_t top = (p->arena_size + 255) & ~(size_t)255;
    for (int i = 0; i < g->n_inputs; i++) {
        const rt_value *v = &g->values[g->inputs[i]];
        cp->in_off[i] = top;
        size_t nb = v->data ? 0 : (size_t)numel(v) * cu_dsize(v->dtype);
        top += (nb + 255) & ~(size_t)255;
        cp->io_bytes += nb + 256;
    }
    for (int i = 0; i < cp->n_steps; i++) {
        cu_step *s = &cp->steps[i];
        if (s->kind != S_CONVERT) continue;
        int is_in = !s->cv_src_half && !s->cv_src_nhwc; /* an input's conversion; else an output's, to fp32 */
        size_t nb = (size_t)numel(&g->values[s->cv_value]) * (is_in && s->cv_dst_half ? 2 : 4);
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == s->cv_value && is_in) {
                s->cv_src = cp->in_off[k];
                s->cv_dst = cp->in_conv[k] = top;
            }
        for (int k = 0; k < g->n_outputs; k++)
            if (g->outputs[k] == s->cv_value && !is_in) s->cv_dst = cp->out_conv[k] = top;
        top += (nb + 255) & ~(size_t)255;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const rt_value *v = &g->values[g->outputs[i]];
        cp->io_bytes += (size_t)numel(v) * (cu_dsize(v->dtype) ? cu_dsize(v->dtype) : 8) + 256;
    }
    p->arena_size = top;
    H->log(3,
           "cuda: %s: %d steps (%d on the host), %s %s, weights %zu KiB (shared by the plans), constants %zu KiB, "
           "arena %zu KiB, workspace %zu KiB; %.1f ms: layout %.1f, steps %.1f (algorithms %.1f), "
           "fusion %.1f, constants %.1f, chains %.1f",
           g->name, cp->n_steps, cp->n_host, half ? "fp16" : "fp32", nhwc ? "NHWC" : "NCHW", shared_bytes >> 10,
           cp->cblock_size >> 10, p->arena_size >> 10, cp->ws >> 10, t_end - t_start, t_steps - t_start,
           t_fuse - t_steps, cc.algo_ms, t_upload - t_fuse, t_chains - t_upload, t_end - t_chains);
    log_step_costs(g->name, op_ms);
    cu_store_cost sc = cu_store_costs();
    H->log(3,
           "cuda: %s: shared constants: %d memo hits; locks waited %.1f ms; hashed %.1f ms, compared %zu KiB in %.1f "
           "ms, uploaded %zu KiB in %.1f ms; cuDNN descriptors %.1f ms, filters %.1f ms",
           g->name, sc.memo_hits, sc.wait_ms, sc.hash_ms, sc.compared >> 10, sc.compare_ms, sc.uploaded >> 10,
           sc.upload_ms, cc.desc_ms, cc.wconv_ms);
    if (cp->n_host)
        H->log(2, "cuda: %s: %d of %d nodes run on the host (LECTOR_LOG=debug names them)", g->name, cp->n_host,
               cp->n_steps);
    return LECTOR_OK;
}

static lector_status plan_compile(rt_backend *be, rt_plan *p, lector_error *err)
{
    int half = be->fp16, nhwc = cu_plan_nhwc(be, p), unsupported = 0;
    size_t arena = p->arena_size;
    if (half || nhwc) {
        lector_error e2 = {0};
        lector_status st = compile_mode(be, p, half, nhwc, &unsupported, &e2);
        if (!st) return LECTOR_OK;
        if (!unsupported) {
            if (err) *err = e2;
            return st;
        }
        H->log(2, "cuda: %s: %s; this plan runs in fp32 NCHW", p->g->name, e2.message);
        p->arena_size = arena;
    }
    return compile_mode(be, p, 0, 0, &unsupported, err);
}

lector_status cu_plan_compile(rt_backend *be, rt_plan *p, lector_error *err)
{
    lector_status st = plan_compile(be, p, err);
    /* the algorithm choices this compile made, for the next process (cu_algo_save says when) */
    cu_algo_save(((cu_ctx *)be->ctx)->algo_ident, be->kernel_cache_dir, 0);
    return st;
}

/* ---- execution ------------------------------------------------------------------- */
