/*
 * cuda_pool.c - pooling: GlobalAveragePool (a split reduction over NHWC, a
 * mean per row otherwise), MaxPool and AveragePool in 2-D.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* GlobalAveragePool: over NHWC, a split reduction; else one mean per row. */
int cu_build_gap(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]);
    if (!cu_all_f32(g, n) || x->ndim < 3) return 1;
    s->half = cu_vh(cc, n->in[0]);
    if (s->half != cu_vh(cc, n->out[0])) return 1;
    if (x->ndim == 4 && cu_vn(cc, n->in[0])) {
        s->kind = S_GAP_NHWC;
        s->outer = x->dims[0];
        s->channels = x->dims[1];
        s->inner = x->dims[2] * x->dims[3];
        s->k = ck_gap_nhwc_splits(s->outer, s->inner, s->channels);
        s->ws = (size_t)s->outer * (size_t)s->k * (size_t)s->channels * sizeof(float);
    } else {
        s->kind = S_ROWMEAN;
        s->outer = x->dims[0] * x->dims[1];
        s->inner = numel(x) / s->outer;
    }
    return 0;
}

/* MaxPool and AveragePool in 2-D, explicit pads. */
int cu_build_pool(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
    if (!cu_all_f32(g, n) || x->ndim != 4 || n->n_out != 1) return 1;
    if (strcmp(H->attr_string(n, "auto_pad", "NOTSET"), "NOTSET")) return 1;
    const int64_t *ks, *st, *pd, *dl;
    int nk = H->attr_ints(n, "kernel_shape", &ks), ns = H->attr_ints(n, "strides", &st),
        np = H->attr_ints(n, "pads", &pd), nd = H->attr_ints(n, "dilations", &dl);
    if (nk != 2 || (ns && ns != 2) || (np && np != 4) || (nd && nd != 2)) return 1;
    int cip = (int)H->attr_int(n, "count_include_pad", 0);
    if (np && (pd[0] != pd[2] || pd[1] != pd[3]) && n->op == RT_OP_AveragePool && cip) return 1;
    s->win = (cu_window){.ih = (int)x->dims[2],
                         .iw = (int)x->dims[3],
                         .oh = (int)y->dims[2],
                         .ow = (int)y->dims[3],
                         .kh = (int)ks[0],
                         .kw = (int)ks[1],
                         .sh = ns ? (int)st[0] : 1,
                         .sw = ns ? (int)st[1] : 1,
                         .ph = np ? (int)pd[0] : 0,
                         .pw = np ? (int)pd[1] : 0,
                         .dh = nd ? (int)dl[0] : 1,
                         .dw = nd ? (int)dl[1] : 1,
                         .max_pool = n->op == RT_OP_MaxPool,
                         .count_pad = cip};
    s->kind = S_POOL;
    s->outer = x->dims[0];
    s->channels = x->dims[1];
    s->half = cu_vh(cc, n->in[0]);
    if (s->half != cu_vh(cc, n->out[0])) return 1;
    s->nhwc = cu_vn(cc, n->in[0]) || cu_vn(cc, n->out[0]);
    return 0;
}

/* ---- running ---------------------------------------------------------------------- */

lector_status cu_run_rowmean(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    return cu_kernel_status(
        ck_row_mean(x->w->stream, cu_dptr(x, n->in[0]), cu_dptr(x, n->out[0]), s->outer, s->inner, s->half), n, err);
}

lector_status cu_run_gap_nhwc(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    void *ws = x->ws + CU_BLAS_WS;
    return cu_kernel_status(ck_gap_nhwc(x->w->stream, cu_dptr(x, n->in[0]), cu_dptr(x, n->out[0]), s->outer, s->inner,
                                        s->channels, s->half, ws, s->k),
                            n, err);
}

lector_status cu_run_pool(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    const cu_window *q = &s->win;
    int rc = ck_pool2d(x->w->stream, cu_dptr(x, n->in[0]), cu_dptr(x, n->out[0]), s->outer, s->channels, q->ih, q->iw,
                       q->oh, q->ow, q->kh, q->kw, q->sh, q->sw, q->ph, q->pw, q->dh, q->dw, q->max_pool, q->count_pad,
                       s->half, s->nhwc);
    return cu_kernel_status(rc, n, err);
}
