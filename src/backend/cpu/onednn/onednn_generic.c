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
 */
#include <omp.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "rt/infer_util.h"
#include "util/util.h"

typedef struct dn_pointwise {
    dn_kernel *kern; /* the cached matmul (referenced) */
    dnnl_primitive_t prim;
    dnnl_engine_t eng;
    int64_t M, K; /* Cout, Cin */
    int nthr;     /* OpenMP threads it was created for and runs with */
} dn_pointwise;

/* A generic plan's state (rt_plan.be_plan). */
typedef struct dn_generic {
    dn_caches *caches;
    dn_pointwise *pw;
    int n;
} dn_generic;

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

/* The matmul of an M x K weight by a K x (any) input, from the cache. */
static dn_kernel *matmul_kernel(dn_backend *db, int64_t M, int64_t K, int nthr)
{
    dn_key k;
    dn_key_init(&k, "generic-pointwise");
    int64_t mk[2] = {M, K};
    dn_key_add(&k, mk, sizeof mk);
    dn_key_add(&k, &nthr, sizeof nthr);
    dn_kernel *e = dn_kernel_find(&db->caches, &k);
    if (!e && !k.fail) {
        dnnl_dims_t sd = {M, K}, wd = {K, DNNL_RUNTIME_DIM_VAL}, yd = {M, DNNL_RUNTIME_DIM_VAL};
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

static lector_status pointwise_run(const void *state, const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                   const rt_kernel_ctx *ctx)
{
    const dn_pointwise *pw = state;
    const lector_tensor *x = &in[0];
    int64_t N = x->dims[0], HW = x->dims[2] * x->dims[3], M = pw->M, K = pw->K;
    if (N * M * HW == 0) return LECTOR_OK;
    dnnl_dims_t sd = {M, K}, wd = {K, HW}, yd = {M, HW};
    dnnl_memory_desc_t smd, wmd, ymd;
    dnnl_memory_t sm = NULL, wm = NULL, ym = NULL;
    dnnl_stream_t stream = NULL;
    int ok = dn_ok(dnnl_memory_desc_init_by_tag(&smd, 2, sd, dnnl_f32, dnnl_ab)) &&
             dn_ok(dnnl_memory_desc_init_by_tag(&wmd, 2, wd, dnnl_f32, dnnl_ab)) &&
             dn_ok(dnnl_memory_desc_init_by_tag(&ymd, 2, yd, dnnl_f32, dnnl_ab)) &&
             dn_ok(dnnl_memory_create(&sm, &smd, pw->eng, in[1].data)) &&
             dn_ok(dnnl_memory_create(&wm, &wmd, pw->eng, DNNL_MEMORY_NONE)) &&
             dn_ok(dnnl_memory_create(&ym, &ymd, pw->eng, DNNL_MEMORY_NONE)) &&
             dn_ok(dnnl_stream_create(&stream, pw->eng, dnnl_stream_default_flags));
    /* oneDNN (OpenMP runtime) runs with the calling thread's count */
    omp_set_num_threads(pw->nthr);
    const float *xd = x->data;
    float *yd_ = out->data;
    for (int64_t n = 0; n < N && ok; n++) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}};
        ok = dn_ok(dnnl_memory_set_data_handle(wm, (void *)(xd + n * K * HW))) &&
             dn_ok(dnnl_memory_set_data_handle(ym, yd_ + n * M * HW)) &&
             dn_ok(dnnl_primitive_execute(pw->prim, stream, 3, args));
    }
    if (stream) {
        if (!dn_ok(dnnl_stream_wait(stream))) ok = 0;
        dnnl_stream_destroy(stream);
    }
    if (sm) dnnl_memory_destroy(sm);
    if (wm) dnnl_memory_destroy(wm);
    if (ym) dnnl_memory_destroy(ym);
    if (!ok) return lector__error(ctx->err, LECTOR_ERR_BACKEND, "node %s: oneDNN's matmul failed", nd->name);
    /* then the bias and the activation, as the reference kernel adds them */
    rt_apply_bias_act(nd, yd_, N, M, HW, nd->n_in > 2 && in[2].data ? in[2].data : NULL, pw->nthr);
    return LECTOR_OK;
}

void dn_generic_prepare(rt_backend *be, const rt_plan *p)
{
    dn_backend *db = be->ctx;
    const rt_graph *g = p->g;
    int T = be->threads > 0 ? be->threads : 1;
    int64_t M, K;
    for (int s = 0; s < p->n_order; s++) {
        if (!pointwise(g, &g->nodes[p->order[s]], &M, &K)) continue;
        omp_set_num_threads(T);
        dn_kernel *e = matmul_kernel(db, M, K, T);
        if (!e) continue;
        dn_kernel_prim(&db->caches, e); /* a failure here is met again, and handled, by plan_generic */
        dn_kernel_release(&db->caches, e);
    }
}

static void generic_free(dn_generic *gp)
{
    if (!gp) return;
    for (int i = 0; i < gp->n; i++) dn_kernel_release(gp->caches, gp->pw[i].kern);
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
    int64_t M, K;
    for (int s = 0; s < p->n_order; s++) count += pointwise(g, &g->nodes[p->order[s]], &M, &K);
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
    for (int s = 0; s < p->n_order; s++) {
        int i = p->order[s];
        const rt_node *n = &g->nodes[i];
        if (!pointwise(g, n, &M, &K)) continue;
        /* all threads whatever the size (oneDNN's GEMM splits small products less): the kernel must
         * not depend on the shape, or a new shape could need a new one */
        int nthr = T;
        omp_set_num_threads(nthr); /* oneDNN sizes some kernels by it when it creates them */
        dn_kernel *e = matmul_kernel(db, M, K, nthr);
        dnnl_primitive_t prim = e ? dn_kernel_prim(&db->caches, e) : NULL;
        if (!prim) { /* oneDNN refused: the reference kernel stays */
            if (e) dn_kernel_release(&db->caches, e);
            lector__log(LECTOR_LOG_DEBUG, "%s: node %s: no runtime-sized matmul, reference kernel", g->name, n->name);
            continue;
        }
        dn_pointwise *pw = &gp->pw[gp->n++];
        *pw = (dn_pointwise){e, prim, db->eng, M, K, nthr};
        p->own[i] = (rt_own_kernel){pointwise_run, pw};
    }
    return LECTOR_OK;
}
