/*
 * onednn_generic.c - a generic plan's pointwise convolutions on oneDNN.
 *
 * A shape outside lector_model_options.jit_size (a text line wider than
 * the recogniser's rec_image_width, a page not scaled to the detector's
 * side) gets a generic plan: the reference kernels on the host executor,
 * so that a stream of such shapes compiles nothing per shape and a shape's
 * results never depend on which shapes came before. In the recogniser the
 * reference GEMMs of its pointwise convolutions are most of that time, and
 * oneDNN can run them without compiling anything per shape: a matmul whose
 * column count is given at run time (DNNL_RUNTIME_DIM_VAL),
 *
 *   Y[Cout x H*W] = W[Cout x Cin] . X[Cin x H*W]      per image, NCHW,
 *
 * one kernel per (Cout, Cin) and thread count in the model's kernel cache,
 * whatever the width, made with the model's first plan of any shape
 * (dn_generic_prepare): a warmed-up stream of new shapes compiles nothing,
 * and which kernel a shape runs on depends on the shape alone. The weights
 * are read in place (ONNX's [Cout, Cin, 1, 1] is W); oneDNN 2.6 runs a
 * runtime-sized matmul with a bias on its reference implementation only, so
 * the bias and the fused activation are added afterwards, row by row, as
 * the reference kernel adds them.
 *
 * Two more of the recogniser's nodes are sized by the line's width and run
 * on oneDNN the same way: a MatMul by a constant [K, N] matrix (the
 * classifier head, [steps, 120] by [120, 6625]) is a matmul whose row count
 * is given at run time, and a Softmax over the last axis runs its rows in
 * chunks of SOFTMAX_CHUNK rows and then one at a time, on two softmax
 * kernels made for those row counts and the axis's length alone. Both the
 * reference kernels took two to four times as long (docs/BENCHMARKS.md).
 */
#include <omp.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "rt/infer_util.h"
#include "util/util.h"

/* Rows of a Softmax run by one call of its larger kernel. */
#define SOFTMAX_CHUNK 16

/* One node's oneDNN kernels in a generic plan. */
typedef struct dn_generic_node {
    dn_kernel *kern[2]; /* the cached kernels (referenced; [1] only for Softmax) */
    dnnl_primitive_t prim[2];
    dnnl_engine_t eng;
    int64_t M, K; /* pointwise Conv: Cout, Cin; MatMul: K, N; Softmax: the axis's length */
    int nthr;     /* OpenMP threads it was created for and runs with */
} dn_generic_node;

/* A generic plan's state (rt_plan.be_plan). */
typedef struct dn_generic {
    dn_caches *caches;
    dn_generic_node *pw; /* the nodes given oneDNN kernels */
    int n;
} dn_generic;

/* The nodes this file runs. */
typedef enum { GEN_NONE, GEN_POINTWISE, GEN_MATMUL, GEN_SOFTMAX } gen_kind;

/* Is node n a pointwise convolution this file runs: f32, 4-D, a constant
 * [Cout, Cin, 1, 1] weight, one group, stride 1, no padding? */
static int pointwise(const rt_graph *g, const rt_node *n, int64_t *M, int64_t *K)
{
    if (n->op != RT_OP_Conv || n->n_in < 2 || n->n_out != 1 || n->in[0] < 0 || n->in[1] < 0) return 0;
    const rt_value *x = &g->values[n->in[0]], *w = &g->values[n->in[1]];
    if (!dn_is_f32(x) || !dn_is_f32(w) || !w->data || x->data || x->ndim != 4 || w->ndim != 4) return 0;
    if (n->n_in > 2 && n->in[2] >= 0 && (!g->values[n->in[2]].data || !dn_is_f32(&g->values[n->in[2]]))) return 0;
    if (rt_attr_int(n, "group", 1) != 1 || w->dims[1] != x->dims[1]) return 0;
    rt_conv_geom geo;
    if (rt_conv_geom_make(n, RT_GEOM_CONV, x->ndim, x->dims, w->dims, &geo, NULL)) return 0;
    for (int d = 0; d < RT_SPATIAL; d++) /* right-aligned; the unused ones are 1 and 0 */
        if (geo.k[d] != 1 || geo.s[d] != 1 || geo.pb[d] || geo.pe[d]) return 0;
    *M = w->dims[0];
    *K = w->dims[1];
    return *M > 0 && *K > 0;
}

/* Is node n a MatMul of an f32 input [..., K] by a constant f32 [K, N]? */
static int matmul_const(const rt_graph *g, const rt_node *n, int64_t *K, int64_t *N)
{
    if (n->op != RT_OP_MatMul || n->n_in != 2 || n->n_out != 1 || n->in[0] < 0 || n->in[1] < 0) return 0;
    const rt_value *a = &g->values[n->in[0]], *b = &g->values[n->in[1]];
    if (!dn_is_f32(a) || !dn_is_f32(b) || a->data || !b->data || a->ndim < 2 || b->ndim != 2) return 0;
    if (a->dims[a->ndim - 1] != b->dims[0] || n->act != RT_ACT_NONE) return 0;
    *K = b->dims[0];
    *N = b->dims[1];
    return *K > 0 && *N > 0;
}

/* The node that writes value v (NULL: an input or a constant). */
static const rt_node *producer(const rt_graph *g, int v)
{
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_out; k++)
            if (g->nodes[i].out[k] == v) return &g->nodes[i];
    return NULL;
}

/* Is node n a Softmax of an f32 input over its last axis (of length *len),
 * where that length is a constant's: the input is a MatMul by a constant
 * [K, len], perhaps plus a constant (the classifier head). A kernel is made
 * per length, so a length that follows the input's size (attention over a
 * line's steps) would make one per line width: those stay on the reference
 * kernel. */
static int softmax_last(const rt_graph *g, const rt_node *n, int64_t *len)
{
    if (n->op != RT_OP_Softmax || n->n_in != 1 || n->n_out != 1 || n->in[0] < 0) return 0;
    const rt_value *x = &g->values[n->in[0]];
    if (!dn_is_f32(x) || x->data || x->ndim < 1) return 0;
    int old = rt_node_opset(n) < 13;
    if (rt_norm_axis(rt_attr_int(n, "axis", old ? 1 : -1), x->ndim) != x->ndim - 1) return 0;
    *len = x->dims[x->ndim - 1];
    const rt_node *src = producer(g, n->in[0]);
    if (src && src->op == RT_OP_Add && src->n_in == 2 && src->in[0] >= 0 && src->in[1] >= 0) {
        int c = g->values[src->in[1]].data ? 1 : g->values[src->in[0]].data ? 0 : -1;
        src = c < 0 ? NULL : producer(g, src->in[1 - c]);
    }
    int64_t K, N;
    return *len > 0 && src && matmul_const(g, src, &K, &N) && N == *len;
}

static gen_kind generic_kind(const rt_graph *g, const rt_node *n, int64_t *a, int64_t *b)
{
    *b = 0;
    if (pointwise(g, n, a, b)) return GEN_POINTWISE;
    if (matmul_const(g, n, a, b)) return GEN_MATMUL;
    if (softmax_last(g, n, a)) return GEN_SOFTMAX;
    return GEN_NONE;
}

/* A matmul of an R x C matrix by a C x S one, with -1 for the dimension
 * given at run time, from the cache (key: tag, R, C, S, threads). */
static dn_kernel *matmul_kernel(dn_backend *db, const char *tag, int64_t R, int64_t C, int64_t S, int nthr)
{
    dn_key k;
    dn_key_init(&k, tag);
    int64_t rcs[3] = {R, C, S};
    dn_key_add(&k, rcs, sizeof rcs);
    dn_key_add(&k, &nthr, sizeof nthr);
    dn_kernel *e = dn_kernel_find(&db->caches, &k);
    if (!e && !k.fail) {
        int64_t r = R < 0 ? DNNL_RUNTIME_DIM_VAL : R, s = S < 0 ? DNNL_RUNTIME_DIM_VAL : S;
        dnnl_dims_t sd = {r, C}, wd = {C, s}, yd = {r, s};
        dnnl_memory_desc_t smd, wmd, ymd;
        dnnl_matmul_desc_t d;
        dnnl_primitive_desc_t pd = NULL;
        if (dn_ok(dnnl_memory_desc_init_by_tag(&smd, 2, sd, dnnl_f32, dnnl_ab)) &&
            dn_ok(dnnl_memory_desc_init_by_tag(&wmd, 2, wd, dnnl_f32, dnnl_ab)) &&
            dn_ok(dnnl_memory_desc_init_by_tag(&ymd, 2, yd, dnnl_f32, dnnl_ab)) &&
            dn_ok(dnnl_matmul_desc_init(&d, &smd, &wmd, NULL, &ymd)) &&
            dn_ok(dnnl_primitive_desc_create(&pd, &d, NULL, db->eng, NULL)))
            e = dn_kernel_insert(&db->caches, &k, pd);
    }
    dn_key_free(&k);
    return e;
}

/* A softmax over the rows of a [rows, len] matrix, from the cache. */
static dn_kernel *softmax_kernel(dn_backend *db, int64_t rows, int64_t len, int nthr)
{
    dn_key k;
    dn_key_init(&k, "generic-softmax");
    int64_t rl[2] = {rows, len};
    dn_key_add(&k, rl, sizeof rl);
    dn_key_add(&k, &nthr, sizeof nthr);
    dn_kernel *e = dn_kernel_find(&db->caches, &k);
    if (!e && !k.fail) {
        dnnl_dims_t dd = {rows, len};
        dnnl_memory_desc_t md;
        dnnl_softmax_desc_t d;
        dnnl_primitive_desc_t pd = NULL;
        if (dn_ok(dnnl_memory_desc_init_by_tag(&md, 2, dd, dnnl_f32, dnnl_ab)) &&
            dn_ok(dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md, 1)) &&
            dn_ok(dnnl_primitive_desc_create(&pd, &d, NULL, db->eng, NULL)))
            e = dn_kernel_insert(&db->caches, &k, pd);
    }
    dn_key_free(&k);
    return e;
}

/* Node kind's kernels for sizes a, b into kern[] (NULL where oneDNN refused). */
static void generic_kernels(dn_backend *db, gen_kind kind, int64_t a, int64_t b, int nthr, dn_kernel *kern[2])
{
    kern[0] = kern[1] = NULL;
    if (kind == GEN_POINTWISE) kern[0] = matmul_kernel(db, "generic-pointwise", a, b, -1, nthr);
    if (kind == GEN_MATMUL) kern[0] = matmul_kernel(db, "generic-matmul", -1, a, b, nthr);
    if (kind == GEN_SOFTMAX) {
        kern[0] = softmax_kernel(db, SOFTMAX_CHUNK, a, nthr);
        kern[1] = softmax_kernel(db, 1, a, nthr);
    }
}

/* One run of a node's kernels: a oneDNN stream and row-major f32 matrices
 * (memory objects without data; each call of exec_run points them at its
 * operands), made once per run however many calls it makes. */
typedef struct gen_exec {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_memory_t mem[4];
    int n, ok;
} gen_exec;

static void exec_begin(gen_exec *x, dnnl_engine_t eng, int nthr)
{
    *x = (gen_exec){.eng = eng};
    x->ok = dn_ok(dnnl_stream_create(&x->stream, eng, dnnl_stream_default_flags));
    omp_set_num_threads(nthr); /* oneDNN (OpenMP runtime) runs with the calling thread's count */
}

/* A rows x cols matrix of the run (NULL, and the run failed, when oneDNN refuses). */
static dnnl_memory_t exec_matrix(gen_exec *x, int64_t rows, int64_t cols)
{
    dnnl_dims_t d = {rows, cols};
    dnnl_memory_desc_t md;
    dnnl_memory_t m = NULL;
    if (!x->ok || x->n == (int)(sizeof x->mem / sizeof x->mem[0]) ||
        !dn_ok(dnnl_memory_desc_init_by_tag(&md, 2, d, dnnl_f32, dnnl_ab)) ||
        !dn_ok(dnnl_memory_create(&m, &md, x->eng, DNNL_MEMORY_NONE))) {
        x->ok = 0;
        return NULL;
    }
    return x->mem[x->n++] = m;
}

/* prim on src (data s), dst (data d) and, for a matmul, weights w (data wd; w NULL: none). */
static void exec_run(gen_exec *x, dnnl_primitive_t prim, dnnl_memory_t src, const void *s, dnnl_memory_t w,
                     const void *wd, dnnl_memory_t dst, void *d)
{
    if (!x->ok) return;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_WEIGHTS, w}};
    x->ok = dn_ok(dnnl_memory_set_data_handle(src, (void *)s)) && dn_ok(dnnl_memory_set_data_handle(dst, d)) &&
            (!w || dn_ok(dnnl_memory_set_data_handle(w, (void *)wd))) &&
            dn_ok(dnnl_primitive_execute(prim, x->stream, w ? 3 : 2, args));
}

/* Waits for the run's calls and frees what it made: 1 when all of them ran. */
static int exec_end(gen_exec *x)
{
    if (x->stream) {
        if (x->ok && !dn_ok(dnnl_stream_wait(x->stream))) x->ok = 0;
        dnnl_stream_destroy(x->stream);
    }
    for (int i = 0; i < x->n; i++) dnnl_memory_destroy(x->mem[i]);
    return x->ok;
}

/* MatMul: the input's leading dimensions are the matmul's rows. */
static lector_status matmul_run(const void *state, const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                const rt_kernel_ctx *ctx)
{
    const dn_generic_node *pw = state;
    int64_t K = pw->M, N = pw->K, R = lector_tensor_numel(&in[0]) / K;
    if (R * N == 0) return LECTOR_OK;
    gen_exec x;
    exec_begin(&x, pw->eng, pw->nthr);
    dnnl_memory_t a = exec_matrix(&x, R, K), b = exec_matrix(&x, K, N), y = exec_matrix(&x, R, N);
    exec_run(&x, pw->prim[0], a, in[0].data, b, in[1].data, y, out->data);
    if (!exec_end(&x)) return lector__error(ctx->err, LECTOR_ERR_BACKEND, "node %s: oneDNN's matmul failed", nd->name);
    return LECTOR_OK;
}

/* Softmax over the last axis: SOFTMAX_CHUNK rows a call, then the rest one by one. */
static lector_status softmax_run(const void *state, const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                 const rt_kernel_ctx *ctx)
{
    const dn_generic_node *pw = state;
    int64_t len = pw->M, R = lector_tensor_numel(&in[0]) / len;
    if (R == 0) return LECTOR_OK;
    gen_exec x;
    exec_begin(&x, pw->eng, pw->nthr);
    dnnl_memory_t src[2] = {exec_matrix(&x, SOFTMAX_CHUNK, len), exec_matrix(&x, 1, len)};
    dnnl_memory_t dst[2] = {exec_matrix(&x, SOFTMAX_CHUNK, len), exec_matrix(&x, 1, len)};
    const float *xd = in[0].data;
    float *yd = out->data;
    for (int64_t r = 0; r < R && x.ok;) {
        int k = R - r >= SOFTMAX_CHUNK ? 0 : 1; /* kernel 0: SOFTMAX_CHUNK rows, 1: one */
        exec_run(&x, pw->prim[k], src[k], xd + r * len, NULL, NULL, dst[k], yd + r * len);
        r += k ? 1 : SOFTMAX_CHUNK;
    }
    if (!exec_end(&x)) return lector__error(ctx->err, LECTOR_ERR_BACKEND, "node %s: oneDNN's softmax failed", nd->name);
    return LECTOR_OK;
}

static lector_status pointwise_run(const void *state, const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                   const rt_kernel_ctx *ctx)
{
    const dn_generic_node *pw = state;
    const lector_tensor *x = &in[0];
    int64_t N = x->dims[0], HW = x->dims[2] * x->dims[3], M = pw->M, K = pw->K;
    if (N * M * HW == 0) return LECTOR_OK;
    gen_exec e;
    exec_begin(&e, pw->eng, pw->nthr);
    /* the weights are the matmul's source, the image its "weights" (oneDNN's names) */
    dnnl_memory_t w = exec_matrix(&e, M, K), img = exec_matrix(&e, K, HW), y = exec_matrix(&e, M, HW);
    const float *xd = x->data;
    float *yd = out->data;
    for (int64_t n = 0; n < N && e.ok; n++)
        exec_run(&e, pw->prim[0], w, in[1].data, img, xd + n * K * HW, y, yd + n * M * HW);
    if (!exec_end(&e)) return lector__error(ctx->err, LECTOR_ERR_BACKEND, "node %s: oneDNN's matmul failed", nd->name);
    /* then the bias and the activation, as the reference kernel adds them */
    rt_apply_bias_act(nd, yd, N, M, HW, nd->n_in > 2 && in[2].data ? in[2].data : NULL, pw->nthr);
    return LECTOR_OK;
}

void dn_generic_prepare(rt_backend *be, const rt_plan *p)
{
    dn_backend *db = be->ctx;
    const rt_graph *g = p->g;
    int T = be->threads > 0 ? be->threads : 1;
    int64_t a, b;
    for (int s = 0; s < p->n_order; s++) {
        gen_kind kind = generic_kind(g, &g->nodes[p->order[s]], &a, &b);
        if (kind == GEN_NONE) continue;
        omp_set_num_threads(T);
        dn_kernel *kern[2];
        generic_kernels(db, kind, a, b, T, kern);
        for (int k = 0; k < 2; k++) {
            if (!kern[k]) continue;
            dn_kernel_prim(&db->caches, kern[k]); /* a failure here is met again, and handled, by plan_generic */
            dn_kernel_release(&db->caches, kern[k]);
        }
    }
}

static void generic_free(dn_generic *gp)
{
    if (!gp) return;
    for (int i = 0; i < gp->n; i++)
        for (int k = 0; k < 2; k++)
            if (gp->pw[i].kern[k]) dn_kernel_release(gp->caches, gp->pw[i].kern[k]);
    lector__free(gp->pw);
    lector__free(gp);
}

void dn_generic_free(rt_backend *be, rt_plan *p)
{
    generic_free(p->be_plan);
    p->be_plan = NULL;
}

lector_status dn_plan_generic(rt_backend *be, rt_plan *p, lector_error *err)
{
    dn_backend *db = be->ctx;
    const rt_graph *g = p->g;
    int T = be->threads > 0 ? be->threads : 1, count = 0;
    int64_t a, b;
    for (int s = 0; s < p->n_order; s++) count += generic_kind(g, &g->nodes[p->order[s]], &a, &b) != GEN_NONE;
    if (!count) return LECTOR_OK;
    dn_generic *gp = lector__calloc(1, sizeof *gp);
    if (gp) gp->pw = lector__calloc((size_t)count, sizeof *gp->pw);
    if (!p->own) p->own = lector__calloc((size_t)g->n_nodes + 1, sizeof *p->own);
    if (!gp || !gp->pw || !p->own) {
        if (gp) lector__free(gp->pw);
        lector__free(gp);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", g->name);
    }
    gp->caches = &db->caches;
    p->be_plan = gp;
    static lector_status (*const run[])(const void *, const rt_node *, const lector_tensor *, lector_tensor *,
                                        const rt_kernel_ctx *) = {
        [GEN_POINTWISE] = pointwise_run, [GEN_MATMUL] = matmul_run, [GEN_SOFTMAX] = softmax_run};
    for (int s = 0; s < p->n_order; s++) {
        int i = p->order[s];
        const rt_node *n = &g->nodes[i];
        gen_kind kind = generic_kind(g, n, &a, &b);
        if (kind == GEN_NONE) continue;
        /* all threads whatever the size (oneDNN's GEMM splits small products less): the kernel must
         * not depend on the shape, or a new shape could need a new one */
        int nthr = T;
        omp_set_num_threads(nthr); /* oneDNN sizes some kernels by it when it creates them */
        dn_kernel *kern[2];
        generic_kernels(db, kind, a, b, nthr, kern);
        dnnl_primitive_t prim[2] = {NULL, NULL};
        int ok = 1;
        for (int k = 0; k < 2; k++) {
            if (kern[k]) prim[k] = dn_kernel_prim(&db->caches, kern[k]);
            ok &= k == 1 && kind != GEN_SOFTMAX ? 1 : prim[k] != NULL;
        }
        if (!ok) { /* oneDNN refused: the reference kernel stays */
            for (int k = 0; k < 2; k++)
                if (kern[k]) dn_kernel_release(&db->caches, kern[k]);
            lector__log(LECTOR_LOG_DEBUG, "%s: node %s: no oneDNN kernel for any size, reference kernel", g->name,
                        n->name);
            continue;
        }
        dn_generic_node *pw = &gp->pw[gp->n++];
        *pw = (dn_generic_node){{kern[0], kern[1]}, {prim[0], prim[1]}, db->eng, a, b, nthr};
        p->own[i] = (rt_own_kernel){run[kind], pw};
    }
    return LECTOR_OK;
}
