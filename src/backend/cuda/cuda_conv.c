/*
 * cuda_conv.c - Conv and ConvTranspose: cuDNN (algorithm from its heuristic
 * or a bounded timed search, cached per signature for the process), and our
 * own kernels where cuDNN is slow: depthwise convolutions over NHWC, 1x1
 * convolutions over NHWC as one cuBLAS product, and a ConvTranspose whose
 * kernel equals its stride (DB's upsampling head).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* Conv / ConvTranspose padding: symmetric explicit pads, or auto_pad resolved
 * from the shapes. Returns 0 and (ph, pw) when cuDNN can express it. */
static int conv_pads(const rt_node *n, const rt_value *x, const rt_value *y, int kh, int kw, int sh, int sw, int dh,
                     int dw, int transposed, int *ph, int *pw)
{
    const char *ap = H->attr_string(n, "auto_pad", "NOTSET");
    const int64_t *pads;
    int np = H->attr_ints(n, "pads", &pads);
    int r = x->ndim - 2;
    if (!strcmp(ap, "NOTSET") || !strcmp(ap, "VALID")) {
        if (!strcmp(ap, "VALID") || np == 0) {
            *ph = *pw = 0;
            return 0;
        }
        if (np != 2 * r) return -1;
        if (r == 1) {
            if (pads[0] != pads[1]) return -1;
            *ph = 0;
            *pw = (int)pads[0];
            return 0;
        }
        if (pads[0] != pads[2] || pads[1] != pads[3]) return -1;
        *ph = (int)pads[0];
        *pw = (int)pads[1];
        return 0;
    }
    if (transposed) return -1;
    /* SAME_UPPER / SAME_LOWER: total padding from the output size */
    int64_t ih = r == 2 ? x->dims[2] : 1, iw = x->dims[x->ndim - 1];
    int64_t oh = r == 2 ? y->dims[2] : 1, ow = y->dims[y->ndim - 1];
    int64_t th = (oh - 1) * sh + (int64_t)(kh - 1) * dh + 1 - ih, tw = (ow - 1) * sw + (int64_t)(kw - 1) * dw + 1 - iw;
    if (th < 0) th = 0;
    if (tw < 0) tw = 0;
    if (th % 2 || tw % 2) return -1; /* asymmetric */
    *ph = (int)(th / 2);
    *pw = (int)(tw / 2);
    return 0;
}

static int set4d(cudnnTensorDescriptor_t d, const rt_value *v, int half, int nhwc)
{
    int n = (int)v->dims[0], c = (int)v->dims[1];
    int h = v->ndim == 4 ? (int)v->dims[2] : 1, w = (int)v->dims[v->ndim - 1];
    return cudnnSetTensor4dDescriptor(d, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                      half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT, n, c, h, w) != CUDNN_STATUS_SUCCESS;
}

/* ---- convolution algorithms ----
 * cuDNN's heuristic, or a timed search over its algorithms (cudnnFind*:
 * each algorithm once, bounded), cached for the life of the process
 * and, the heuristic's, between processes (cuda_algos.c).
 *
 * The heuristic costs 1-10 ms a convolution (cuDNN 9 on the H200: 34 ms for
 * the recogniser's), and every recognised line has a width of its own, so a
 * forward convolution's algorithm is chosen once per size class: cuDNN's
 * heuristic for the same convolution at the class's size (height and width
 * each rounded up to a power of two, sizes up to 32 their own), used for
 * every size of the class where it runs (its workspace is asked for the
 * real size; where cuDNN refuses it, or it asks for more than CU_WS_LIMIT,
 * the real size's own heuristic). The choice is a function of the shape
 * alone, never of the shapes compiled before, so a line's text never
 * depends on its neighbours or the stream's history. ConvTranspose (the
 * detector's head) and the timed search keep a choice per exact shape.
 * The choices are kept in a table for the process and on disk between
 * processes (cuda_algos.c). */

/* Timed searches one at a time: each runs every algorithm on the GPU, and
 * searches side by side would time each other. The heuristic needs no lock:
 * cuDNN is thread-safe for threads on handles of their own (its developer
 * guide, "Thread Safety"), and a compile holds its worker's handle alone;
 * under one lock the first pass's plans queued behind each other's
 * heuristics (16 workers: a detector plan waited 47 ms for its 4 ms). */
static pthread_mutex_t search_lock = PTHREAD_MUTEX_INITIALIZER;

/* LECTOR_CUDA_CONV_SEARCH=1: the timed search. Off by default: cuDNN's
 * heuristic gave the faster plans in half precision (docs/BENCHMARKS.md has
 * the runs), and fp32 plans keep the algorithms whose results were checked
 * against the CPU's to the text. */
static int conv_search(void) { return cu_switch(LECTOR__TC_CUDA_CONV_SEARCH, 0); }

/* The size a forward convolution's algorithm is chosen at. */
static int64_t algo_size(int64_t v)
{
    if (v <= 32) return v;
    int64_t b = 64;
    while (b < v) b <<= 1;
    return b;
}

/* cuDNN's first usable algorithm for the descriptors (heuristic or timed
 * search); 1 when none is. */
static int cudnn_algo(compile_ctx *cc, const cu_step *s, int transposed, cudnnTensorDescriptor_t xd,
                      cudnnTensorDescriptor_t yd, int *algo)
{
    int found = 0, search = conv_search(), i = 0;
    cudnnStatus_t r;
    if (search) pthread_mutex_lock(&search_lock);
    if (!transposed) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        r = search ? cudnnFindConvolutionForwardAlgorithm(cc->w->dnn, xd, s->wd, s->cd, yd,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf)
                   : cudnnGetConvolutionForwardAlgorithm_v7(cc->w->dnn, xd, s->wd, s->cd, yd,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf);
        while (!r && i < found && (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > CU_WS_LIMIT)) i++;
        if (!r && i < found) *algo = perf[i].algo;
    } else {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        r = search ? cudnnFindConvolutionBackwardDataAlgorithm(cc->w->dnn, s->wd, xd, s->cd, yd,
                                                               CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf)
                   : cudnnGetConvolutionBackwardDataAlgorithm_v7(cc->w->dnn, s->wd, xd, s->cd, yd,
                                                                 CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf);
        while (!r && i < found && (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > CU_WS_LIMIT)) i++;
        if (!r && i < found) *algo = perf[i].algo;
    }
    if (search) {
        cudaGetLastError(); /* a search may leave a failed allocation behind */
        pthread_mutex_unlock(&search_lock);
    }
    return r || i == found;
}

/* The workspace algorithm `algo` needs for the step's own descriptors; 1
 * when cuDNN refuses the algorithm for them or it needs too much. */
static int algo_workspace(compile_ctx *cc, const cu_step *s, int transposed, int algo, size_t *ws)
{
    cudnnStatus_t r = transposed ? cudnnGetConvolutionBackwardDataWorkspaceSize(cc->w->dnn, s->wd, s->xd, s->cd, s->yd,
                                                                                (cudnnConvolutionBwdDataAlgo_t)algo, ws)
                                 : cudnnGetConvolutionForwardWorkspaceSize(cc->w->dnn, s->xd, s->wd, s->cd, s->yd,
                                                                           (cudnnConvolutionFwdAlgo_t)algo, ws);
    return r != CUDNN_STATUS_SUCCESS || *ws > CU_WS_LIMIT;
}

/* Descriptors of the convolution at its size class (forward only): xd, yd
 * of class sizes; 0 when the class is the step's own size (nothing made). */
static int class_descriptors(const cu_step *s, const rt_value *x, cudnnTensorDescriptor_t *xd,
                             cudnnTensorDescriptor_t *yd)
{
    int64_t h = x->ndim == 4 ? x->dims[2] : 1, w = x->dims[x->ndim - 1];
    int64_t hc = algo_size(h), wc = algo_size(w);
    if (hc == h && wc == w) return 0;
    cudnnDataType_t t = s->half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    cudnnTensorFormat_t f = s->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    int od[4];
    *xd = *yd = NULL;
    if (cudnnCreateTensorDescriptor(xd) || cudnnCreateTensorDescriptor(yd) ||
        cudnnSetTensor4dDescriptor(*xd, f, t, (int)x->dims[0], (int)x->dims[1], (int)hc, (int)wc) ||
        cudnnGetConvolutionNdForwardOutputDim(s->cd, *xd, s->wd, 4, od) ||
        cudnnSetTensor4dDescriptor(*yd, f, t, od[0], od[1], od[2], od[3])) {
        if (*xd) cudnnDestroyTensorDescriptor(*xd);
        if (*yd) cudnnDestroyTensorDescriptor(*yd);
        *xd = *yd = NULL;
        return -1;
    }
    return 1;
}

/* The key of a convolution's exact shapes (bit 3 of v[0] clear; the GPU's
 * kind, cu_algo_ident, in bits 8 and up). */
static void exact_key(cu_algo_key *k, const compile_ctx *cc, const cu_step *s, int transposed, const rt_value *x,
                      const rt_value *wv, const rt_value *y, const int *conv)
{
    const cu_ctx *c = cc->be->ctx;
    memset(k, 0, sizeof *k);
    k->v[0] = transposed | s->half << 1 | s->nhwc << 2 | (int64_t)c->algo_ident << 8;
    for (int d = 0; d < 4; d++) {
        k->v[1 + d] = d < x->ndim ? x->dims[d] : 1;
        k->v[5 + d] = d < wv->ndim ? wv->dims[d] : 1;
        k->v[9 + d] = d < y->ndim ? y->dims[d] : 1;
    }
    for (int d = 0; d < 7; d++) k->v[13 + d] = conv[d];
}

/* The same key for the input's size class (bit 3 set): the input's height
 * and width rounded up by algo_size; the output follows from them. */
static cu_algo_key class_key(const cu_algo_key *exact, const rt_value *x)
{
    cu_algo_key k = *exact;
    k.v[0] |= 8;
    if (x->ndim == 4) k.v[3] = algo_size(x->dims[2]);
    k.v[1 + x->ndim - 1] = algo_size(x->dims[x->ndim - 1]);
    for (int d = 0; d < 4; d++) k.v[9 + d] = 0;
    return k;
}

/* The size class's algorithm when cuDNN has one for the class and this size
 * runs it; 0 then, 1 when this size needs its own choice. */
static int class_algo(compile_ctx *cc, cu_step *s, const cu_algo_key *k, const rt_value *x)
{
    int algo;
    size_t ws_class = 0;
    const choice_entry *e;
    int claim = cu_algo_claim(k, &algo, &ws_class, &e);
    if (claim != CU_ALGO_HIT) {
        cudnnTensorDescriptor_t xd = s->xd, yd = s->yd;
        int made = class_descriptors(s, x, &xd, &yd);
        int r = made < 0 || cudnn_algo(cc, s, 0, xd, yd, &algo);
        if (made > 0) {
            cudnnDestroyTensorDescriptor(xd);
            cudnnDestroyTensorDescriptor(yd);
        }
        if (r) algo = -1; /* no algorithm at the class size: each size its own */
        if (claim == CU_ALGO_CLAIMED) cu_algo_settle(e, algo, 0);
    }
    if (algo < 0 || algo_workspace(cc, s, 0, algo, &s->ws)) return 1;
    s->algo = algo;
    return 0;
}

static int pick_algo(compile_ctx *cc, cu_step *s, int transposed, const rt_value *x, const rt_value *wv,
                     const rt_value *y, const int *conv)
{
    cu_algo_key k;
    exact_key(&k, cc, s, transposed, x, wv, y, conv);
    if (!transposed && !conv_search()) {
        cu_algo_key kc = class_key(&k, x);
        if (!class_algo(cc, s, &kc, x)) return 0;
    }
    int algo;
    size_t ws;
    const choice_entry *e;
    int claim = cu_algo_claim(&k, &algo, &ws, &e);
    if (claim == CU_ALGO_HIT) {
        if (algo < 0) return 1;
        s->algo = algo;
        s->ws = ws;
        return 0;
    }
    if (cudnn_algo(cc, s, transposed, s->xd, s->yd, &algo) || algo_workspace(cc, s, transposed, algo, &ws)) {
        if (claim == CU_ALGO_CLAIMED) cu_algo_abandon(e);
        return 1;
    }
    if (claim == CU_ALGO_CLAIMED) cu_algo_settle(e, algo, ws);
    s->algo = algo;
    s->ws = ws;
    return 0;
}

static int choose_algo(compile_ctx *cc, cu_step *s, int transposed, const rt_value *x, const rt_value *wv,
                       const rt_value *y, const int *conv)
{
    double t0 = cu_now_ms();
    int r = pick_algo(cc, s, transposed, x, wv, y, conv);
    cc->algo_ms += cu_now_ms() - t0;
    return r;
}

/* S_CONV_GEMM's half-precision product in cuBLAS's column-major terms
 * (cu_run_conv_gemm says which operand is which). */
static cu_gemm conv_gemm_half(const cu_step *s)
{
    if (s->batch)
        return (cu_gemm){.ta = CUBLAS_OP_N,
                         .tb = CUBLAS_OP_N,
                         .m = s->m,
                         .n = s->nn,
                         .k = s->k,
                         .batch = s->batch,
                         .sa = (long long)s->k * s->m,
                         .sd = (long long)s->nn * s->m,
                         .d_half = 1,
                         .strided_api = 1};
    return (cu_gemm){.ta = CUBLAS_OP_T, .tb = CUBLAS_OP_N, .m = s->nn, .n = s->m, .k = s->k, .batch = 1, .d_half = 1};
}

/* Returns 0 when the step was built, 1 to run the node on the host, -1 on a hard error. */
int cu_build_conv(compile_ctx *cc, const rt_node *n, cu_step *s, int transposed)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *wv = val(g, n->in[1]), *y = val(g, n->out[0]);
    const rt_value *b = n->n_in > 2 ? val(g, n->in[2]) : NULL;
    if (!cu_all_f32(g, n) || !wv->data || (b && !b->data) || (x->ndim != 4 && x->ndim != 3)) return 1;
    if (transposed && x->ndim != 4) return 1;
    int r = x->ndim - 2;
    const int64_t *a;
    int na;
    int sh = 1, sw = 1, dh = 1, dw = 1;
    if ((na = H->attr_ints(n, "strides", &a)) == r) {
        sh = r == 2 ? (int)a[0] : 1;
        sw = (int)a[r - 1];
    } else if (na)
        return 1;
    if ((na = H->attr_ints(n, "dilations", &a)) == r) {
        dh = r == 2 ? (int)a[0] : 1;
        dw = (int)a[r - 1];
    } else if (na)
        return 1;
    int group = (int)H->attr_int(n, "group", 1);
    int kh = r == 2 ? (int)wv->dims[2] : 1, kw = (int)wv->dims[wv->ndim - 1];
    int ph, pw;
    if (conv_pads(n, x, y, kh, kw, sh, sw, dh, dw, transposed, &ph, &pw)) return 1;
    s->half = cu_vh(cc, n->in[0]);
    s->nhwc = cu_vn(cc, n->in[0]) || cu_vn(cc, n->out[0]);
    if (s->half != cu_vh(cc, n->out[0])) return 1;
    s->n = numel(y);
    s->channels = y->dims[1];
    s->inner = s->n / (y->dims[0] * y->dims[1]);
    s->op = wv->dims[1] == 1 && group > 1 ? 2
            : kh == 1 && kw == 1          ? 1
                                          : 0; /* depthwise, pointwise, dense: for the profile */
    /* our own kernels where cuDNN is slow: depthwise over NHWC, and a ConvTranspose whose
     * kernel equals its stride (DB's upsampling head) */
    int64_t cin = x->dims[1];
    cu_window *q = &s->win;
    if (!transposed && r == 2 && s->nhwc && group == cin && wv->dims[0] == cin && wv->dims[1] == 1 &&
        cu_switch(LECTOR__TC_CUDA_DW, 1)) {
        float *t = cu_malloc(sizeof(float) * (size_t)(cin * kh * kw));
        if (!t) return -1;
        const float *w = wv->data;
        for (int64_t c = 0; c < cin; c++) /* [C][kh][kw] -> [kh][kw][C] */
            for (int k = 0; k < kh * kw; k++) t[(int64_t)k * cin + c] = w[c * kh * kw + k];
        s->wconv = cbuf_add(&cc->cb, t, sizeof(float) * (size_t)(cin * kh * kw), &cc->oom);
        cu_free(t);
        *q = (cu_window){.ih = (int)x->dims[2],
                         .iw = (int)x->dims[3],
                         .oh = (int)y->dims[2],
                         .ow = (int)y->dims[3],
                         .kh = kh,
                         .kw = kw,
                         .sh = sh,
                         .sw = sw,
                         .ph = ph,
                         .pw = pw,
                         .dh = dh,
                         .dw = dw,
                         .unroll = cu_switch(LECTOR__TC_CUDA_DW_UNROLL, 1)};
        s->outer = x->dims[0];
        s->kind = S_DWCONV;
        return 0;
    }
    /* a pointwise convolution over NHWC is one matrix product, Y[pixels][K] = X[pixels][C] W^T:
     * cuBLAS runs these tall, skinny products closer to the memory's speed than cuDNN. Over a
     * 1 x 1 image (the squeeze-and-excitation convolutions after a global pooling) both layouts
     * hold the same bytes and the product is Y[N][K] = X[N][C] W^T in either. Over NCHW it is
     * one product per image, Y[n][K][HW] = W X[n][C][HW]: cuDNN would need its descriptors, an
     * algorithm and a workspace query for every new input width (about 30 of these convolutions
     * in the recogniser), where cuBLAS takes the sizes as arguments. */
    int one_pixel = r == 2 && x->dims[2] * x->dims[3] == 1;
    if (!transposed && r == 2 && group == 1 && kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 &&
        y->dims[2] == x->dims[2] && y->dims[3] == x->dims[3] && cu_switch(LECTOR__TC_CUDA_GEMM1X1, 1) &&
        x->dims[0] * x->dims[2] * x->dims[3] <= INT32_MAX && cin * x->dims[2] * x->dims[3] <= INT32_MAX) {
        int64_t d4[4] = {wv->dims[0], wv->dims[1], 1, 1};
        s->wconv = cu_convert_weights(cc, wv, d4, s->half, 0); /* [K][C] */
        s->k = (int)cin;
        s->nn = (int)wv->dims[0];
        if (s->nhwc || one_pixel) {
            s->m = (int)(x->dims[0] * x->dims[2] * x->dims[3]);
            s->batch = 0;
        } else {
            s->m = (int)(x->dims[2] * x->dims[3]);
            s->batch = (int)x->dims[0];
        }
        s->kind = S_CONV_GEMM;
        if (s->half) {
            cu_gemm pg = conv_gemm_half(s);
            s->lt = cu_gemm_choose(cc, &pg);
        }
        return 0;
    }
    /* NHWC has a fast kernel for 2 x 2 and 4 x 4 blocks whose filter fits in shared memory */
    int deconv_nhwc_ok = ((kh == 2 && kw == 2) || (kh == 4 && kw == 4)) &&
                         cin * wv->dims[1] * kh * kw * (int64_t)sizeof(float) <= 48 * 1024;
    if (transposed && group == 1 && kh == sh && kw == sw && ph == 0 && pw == 0 && dh == 1 && dw == 1 &&
        (!s->nhwc || deconv_nhwc_ok) && y->dims[2] == x->dims[2] * kh && y->dims[3] == x->dims[3] * kw &&
        cu_switch(LECTOR__TC_CUDA_DECONV, 1)) {
        q->ih = (int)x->dims[2], q->iw = (int)x->dims[3], q->kh = kh, q->kw = kw;
        s->outer = x->dims[0];
        s->k = (int)cin;
        s->wconv = RT_NO_OFFSET; /* NCHW: the fp32 filter as the graph has it */
        if (s->nhwc) {           /* NHWC: [cin][cout][kh][kw] -> [cin][kh][kw][cout], output channels innermost */
            int64_t cout = wv->dims[1], nw = cin * cout * kh * kw;
            float *t = cu_malloc(sizeof(float) * (size_t)(nw ? nw : 1));
            if (!t) return -1;
            const float *w = wv->data;
            for (int64_t ci = 0; ci < cin; ci++)
                for (int64_t co = 0; co < cout; co++)
                    for (int k = 0; k < kh * kw; k++)
                        t[((ci * kh * kw) + k) * cout + co] = w[(ci * cout + co) * kh * kw + k];
            s->wconv = cbuf_add(&cc->cb, t, sizeof(float) * (size_t)nw, &cc->oom);
            cu_free(t);
        }
        s->kind = S_DECONV_KS;
        return 0;
    }
    double t_desc = cu_now_ms();
    if (cudnnCreateTensorDescriptor(&s->xd) || cudnnCreateTensorDescriptor(&s->yd) ||
        cudnnCreateFilterDescriptor(&s->wd) || cudnnCreateConvolutionDescriptor(&s->cd))
        return -1;
    if (set4d(s->xd, x, s->half, s->nhwc) || set4d(s->yd, y, s->half, s->nhwc)) return 1;
    if (cudnnSetFilter4dDescriptor(s->wd, s->half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT,
                                   s->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, (int)wv->dims[0], (int)wv->dims[1],
                                   kh, kw))
        return 1;
    cudnnMathType_t math = s->half                              ? CUDNN_TENSOR_OP_MATH
                           : cu_switch(LECTOR__TC_CUDA_TF32, 0) ? CUDNN_DEFAULT_MATH
                                                                : CUDNN_FMA_MATH;
    /* fp16 data, fp32 accumulation (cuDNN's PSEUDO_HALF_CONFIG) */
    if (cudnnSetConvolution2dDescriptor(s->cd, ph, pw, sh, sw, dh, dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ||
        cudnnSetConvolutionGroupCount(s->cd, group) || cudnnSetConvolutionMathType(s->cd, math))
        return 1;
    /* cuDNN's idea of the output must be ours (the forward direction of a transposed conv maps y to x) */
    int od[4];
    if (cudnnGetConvolutionNdForwardOutputDim(s->cd, transposed ? s->yd : s->xd, s->wd, 4, od)) return 1;
    const rt_value *chk = transposed ? x : y;
    int ch = chk->ndim == 4 ? (int)chk->dims[2] : 1;
    if (od[0] != chk->dims[0] || od[1] != chk->dims[1] || od[2] != ch || od[3] != chk->dims[chk->ndim - 1]) return 1;
    cc->desc_ms += cu_now_ms() - t_desc;
    if (choose_algo(cc, s, transposed, x, wv, y, (int[]){ph, pw, sh, sw, dh, dw, group})) return 1;
    s->wconv = RT_NO_OFFSET;
    if (s->half || s->nhwc) { /* the filter in the storage cuDNN reads: fp16, KRSC for NHWC */
        int64_t d4[4] = {wv->dims[0], wv->dims[1], kh, kw};
        s->wconv = cu_convert_weights(cc, wv, d4, s->half, s->nhwc);
    }
    s->kind = transposed ? S_DECONV : S_CONV;
    return 0;
}

/* ---- running ---------------------------------------------------------------------- */

/* S_CONV, S_DECONV: cuDNN (bias and activation: the chain that follows). */
lector_status cu_run_cudnn_conv(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    void *X = cu_dptr(x, n->in[0]), *Y = cu_dptr(x, n->out[0]);
    void *ws = x->ws + CU_BLAS_WS;
    cudnnStatus_t ds;
    const void *W = s->wconv != RT_NO_OFFSET ? cu_const(x->cp, s->wconv) : cu_dptr(x, n->in[1]);
    if (s->kind == S_CONV)
        ds = cudnnConvolutionForward(x->w->dnn, &cu_one, s->xd, X, s->wd, W, s->cd, (cudnnConvolutionFwdAlgo_t)s->algo,
                                     ws, s->ws, &cu_zero, s->yd, Y);
    else
        ds = cudnnConvolutionBackwardData(x->w->dnn, &cu_one, s->wd, W, s->xd, X, s->cd,
                                          (cudnnConvolutionBwdDataAlgo_t)s->algo, ws, s->ws, &cu_zero, s->yd, Y);
    if (ds != CUDNN_STATUS_SUCCESS)
        return cu_fail(err, ds == CUDNN_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                       "cudnn: node %s: %s", n->name, cudnnGetErrorString(ds));
    return LECTOR_OK;
}

/* S_DWCONV: our depthwise kernel, or the chain after it compiled into it. */
lector_status cu_run_dwconv(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    if (s->chain) return cu_run_chain(x, s, err); /* the chain after it runs in its kernel */
    const cu_window *q = &s->win;
    int rc = ck_dwconv_nhwc(x->w->stream, cu_dptr(x, n->in[0]), (const float *)(cu_const(x->cp, s->wconv)),
                            cu_dptr(x, n->out[0]), s->outer, s->channels, q->ih, q->iw, q->oh, q->ow, q->kh, q->kw,
                            q->sh, q->sw, q->ph, q->pw, q->dh, q->dw, s->half, q->unroll);
    return cu_kernel_status(rc, n, err);
}

/* S_CONV_GEMM (bias and activation: the chain that follows). batch = 0 (NHWC, or a 1 x 1
 * image): row-major Y[m][nn] = X[m][k] W[nn][k]^T, i.e. column-major Y^T = W^T-as-stored^T X^T.
 * batch > 0 (NCHW, m = H * W): per image row-major Y[nn][m] = W[nn][k] X[k][m], i.e. column-major
 * Y^T = X^T W^T with W as stored. */
lector_status cu_run_conv_gemm(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    const void *X = cu_dptr(x, n->in[0]), *W = cu_const(x->cp, s->wconv);
    void *Y = cu_dptr(x, n->out[0]);
    cublasStatus_t bs;
    long long sx = (long long)s->k * s->m, sy = (long long)s->nn * s->m;
    if (s->half) {
        cu_gemm g = conv_gemm_half(s);
        return s->batch ? cu_gemm_half(x, &g, s->lt, X, W, Y, n, err) : cu_gemm_half(x, &g, s->lt, W, X, Y, n, err);
    } else if (s->batch) {
        bs = cublasSgemmStridedBatched(x->w->blas, CUBLAS_OP_N, CUBLAS_OP_N, s->m, s->nn, s->k, &cu_one, X, s->m, sx, W,
                                       s->k, 0, &cu_zero, Y, s->m, sy, s->batch);
    } else {
        bs = cublasSgemm(x->w->blas, CUBLAS_OP_T, CUBLAS_OP_N, s->nn, s->m, s->k, &cu_one, W, s->k, X, s->k, &cu_zero,
                         Y, s->nn);
    }
    if (bs != CUBLAS_STATUS_SUCCESS)
        return cu_fail(err, bs == CUBLAS_STATUS_ALLOC_FAILED ? LECTOR_ERR_OUT_OF_MEMORY : LECTOR_ERR_BACKEND,
                       "cublas: node %s: %s", n->name, cublasGetStatusString(bs));
    return LECTOR_OK;
}

/* S_DECONV_KS: a ConvTranspose whose kernel equals its stride. */
lector_status cu_run_deconv_ks(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    cudaStream_t sm = x->w->stream;
    const void *X = cu_dptr(x, n->in[0]);
    void *Y = cu_dptr(x, n->out[0]);
    int rc;
    if (s->nhwc)
        rc = ck_deconv_ks_nhwc(sm, X, (const float *)(cu_const(x->cp, s->wconv)), Y, s->outer, s->k, s->channels,
                               s->win.ih, s->win.iw, s->win.kh, s->win.kw, s->half);
    else
        rc = ck_deconv_ks(sm, X, cu_dptr(x, n->in[1]), Y, s->outer, s->k, s->channels, s->win.ih, s->win.iw, s->win.kh,
                          s->win.kw, s->half, 0);
    return cu_kernel_status(rc, n, err);
}
