/*
 * cuda_movement.c - operators that move data: Slice, Transpose and Expand
 * (one gather whose indices a reference kernel finds), Reshape and the
 * like (a copy), Concat, and nearest Resize.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* The gather of a Slice from the core's reading of its starts, ends, axes
 * and steps (rt_slice_params, ONNX's clamping, through the host API); 1
 * when they are not constants or the output's shape is not what they give
 * (the probe decides then). */
static int slice_rule(const rt_graph *g, const rt_node *n, const rt_value *x, const rt_value *y, const int64_t *istr,
                      ck_gather_desc *d)
{
    const rt_value *in[5] = {0};
    if (n->n_in < 3 || n->n_in > 5) return 1;
    for (int k = 0; k < n->n_in; k++) in[k] = n->in[k] >= 0 ? val(g, n->in[k]) : NULL;
    int64_t start[CK_MAX_DIMS], step[CK_MAX_DIMS], count[CK_MAX_DIMS];
    if (H->slice_params(n, in, start, step, count)) return 1;
    d->base = 0;
    for (int k = 0; k < x->ndim; k++) {
        if (count[k] != y->dims[k]) return 1;
        d->dims[k] = y->dims[k];
        d->stride[k] = y->dims[k] > 1 ? istr[k] * step[k] : 0;
        d->base += start[k] * istr[k];
    }
    return 0;
}

/* The gather of a Transpose or a Slice worked out from its attributes and
 * constant operands: a plan for a new width costs no pass over the tensor
 * (the probe below costs two, a reference kernel and a check, each the
 * size of the tensor: most of a recogniser plan's steps). The descriptor
 * is the probe's, dimensions of 1 with stride 0. 1 when the node is not one
 * the rules cover. */
static int gather_rule(const rt_graph *g, const rt_node *n, const rt_value *x, const rt_value *y, ck_gather_desc *d)
{
    int r = x->ndim;
    if (r < 1 || r > CK_MAX_DIMS || y->ndim != r) return 1;
    int64_t istr[CK_MAX_DIMS], u = 1;
    for (int k = r - 1; k >= 0; k--) {
        istr[k] = u;
        u *= x->dims[k];
    }
    memset(d, 0, sizeof *d);
    d->ndim = r;
    if (n->op == RT_OP_Slice) return slice_rule(g, n, x, y, istr, d);
    if (n->op != RT_OP_Transpose) return 1;
    const int64_t *perm;
    int np = H->attr_ints(n, "perm", &perm), used[CK_MAX_DIMS] = {0};
    if (np && np != r) return 1;
    for (int k = 0; k < r; k++) {
        int64_t p = np ? perm[k] : r - 1 - k;
        if (p < 0 || p >= r || used[p] || y->dims[k] != x->dims[p]) return 1;
        used[p] = 1;
        d->dims[k] = y->dims[k];
        d->stride[k] = y->dims[k] > 1 ? istr[p] : 0;
    }
    return 0;
}

/* A Transpose or Slice by its rule (above); else runs a data-movement
 * reference kernel on an index tensor to learn where each output element
 * comes from; when that is affine in the output index (Slice, Transpose,
 * Split, Expand), the step is a strided gather. */
int cu_build_gather(compile_ctx *cc, const rt_node *n, cu_step *s, int out_k)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[out_k]);
    if (y->ndim > CK_MAX_DIMS || x->dtype != y->dtype) return 1;
    for (int k = 1; k < n->n_in; k++)
        if (n->in[k] >= 0 && !val(g, n->in[k])->data) return 1; /* shape operands must be constants */
    size_t es = cu_vsize(cc->cp, g, n->in[0]);
    int64_t nx = numel(x), ny = numel(y);
    if ((es != 2 && es != 4 && es != 8) || es != cu_vsize(cc->cp, g, n->out[out_k]) || nx == 0 || ny == 0) return 1;
    if (out_k == 0 && !gather_rule(g, n, x, y, &s->gd)) {
        s->kind = S_GATHER;
        s->elem = es;
        return 0;
    }
    /* the probe's elements are int64 indices whatever the real type: data
     * movement does not look at values */
    lector_dtype pt = LECTOR_DTYPE_INT64;
    void *xi = cu_malloc((size_t)nx * 8);
    lector_tensor in[8], out[8];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    void *outs[8] = {0};
    int ok = xi != NULL && n->n_in <= 8 && n->n_out <= 8;
    for (int64_t i = 0; ok && i < nx; i++) {
        if (pt == LECTOR_DTYPE_FLOAT32)
            ((float *)xi)[i] = (float)i;
        else if (pt == LECTOR_DTYPE_INT32)
            ((int32_t *)xi)[i] = (int32_t)i;
        else
            ((int64_t *)xi)[i] = i;
    }
    for (int k = 0; ok && k < n->n_in; k++) {
        if (n->in[k] < 0) continue;
        const rt_value *v = val(g, n->in[k]);
        in[k].dtype = k == 0 ? pt : v->dtype;
        in[k].ndim = v->ndim;
        memcpy(in[k].dims, v->dims, sizeof v->dims);
        in[k].data = k == 0 ? xi : v->data;
    }
    for (int k = 0; ok && k < n->n_out; k++) {
        if (n->out[k] < 0) continue;
        const rt_value *v = val(g, n->out[k]);
        out[k].dtype = v->dtype == x->dtype ? pt : v->dtype;
        out[k].ndim = v->ndim;
        memcpy(out[k].dims, v->dims, sizeof v->dims);
        outs[k] = cu_malloc((size_t)(numel(v) ? numel(v) : 1) * 8 + 8);
        out[k].data = outs[k];
        if (!outs[k]) ok = 0;
    }
    lector_error e = {0};
    rt_kernel_ctx kc = {1, &e};
    if (ok && H->ops[n->op].ref(n, in, out, &kc)) ok = 0;
    int res = 1;
    if (ok) {
        const void *yo = outs[out_k];
#define AT(i)                                                       \
    (pt == LECTOR_DTYPE_FLOAT32 ? (int64_t)((const float *)yo)[i]   \
     : pt == LECTOR_DTYPE_INT32 ? (int64_t)((const int32_t *)yo)[i] \
                                : ((const int64_t *)yo)[i])
        ck_gather_desc d = {0};
        d.ndim = y->ndim ? y->ndim : 1;
        d.base = AT(0);
        int64_t unit = 1;
        for (int k = y->ndim - 1; k >= 0; k--) {
            d.dims[k] = y->dims[k];
            d.stride[k] = y->dims[k] > 1 ? AT(unit) - d.base : 0;
            unit *= y->dims[k];
        }
        if (!y->ndim) d.dims[0] = 1;
        /* verify: the probe must be exactly affine */
        int affine = 1;
        for (int64_t i = 0; i < ny && affine; i++) {
            int64_t r = i, off = d.base;
            for (int k = d.ndim - 1; k >= 0; k--) {
                int64_t q = r / d.dims[k];
                off += (r - q * d.dims[k]) * d.stride[k];
                r = q;
            }
            affine = off == AT(i);
        }
#undef AT
        if (affine) {
            s->kind = S_GATHER;
            s->gd = d;
            s->elem = es;
            res = 0;
        }
    }
    cu_free(xi);
    for (int k = 0; k < 8; k++) cu_free(outs[k]);
    return res;
}

int cu_build_resize(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
    if (!cu_all_f32(g, n) && (!is_f32(x) || !is_f32(y))) return 1;
    if (strcmp(H->attr_string(n, "mode", "nearest"), "nearest") || x->ndim != 4 || x->dims[0] != y->dims[0] ||
        x->dims[1] != y->dims[1])
        return 1;
    for (int k = 1; k < n->n_in; k++)
        if (n->in[k] >= 0 && !val(g, n->in[k])->data) return 1;
    /* the probe is one plane: N and C are not resized, so any plane maps alike */
    int64_t H0 = x->dims[2], W0 = x->dims[3], OH = y->dims[2], OW = y->dims[3];
    int64_t nx = H0 * W0, ny = OH * OW;
    if (nx >= (1 << 24) || n->n_in > 4) return 1;
    const rt_value *scales = n->n_in > 2 && n->in[2] >= 0 ? val(g, n->in[2]) : NULL;
    if (scales && numel(scales) == 4 &&
        (!is_f32(scales) || ((const float *)scales->data)[0] != 1.f || ((const float *)scales->data)[1] != 1.f))
        return 1;
    int64_t sizes1[4] = {1, 1, OH, OW};
    float *xi = cu_malloc(sizeof(float) * (size_t)nx), *yo = cu_malloc(sizeof(float) * (size_t)ny);
    int res = 1;
    if (xi && yo) {
        for (int64_t i = 0; i < nx; i++) xi[i] = (float)i;
        lector_tensor in[4], out[1];
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        for (int k = 0; k < n->n_in && k < 4; k++) {
            if (n->in[k] < 0) continue;
            const rt_value *v = val(g, n->in[k]);
            in[k].dtype = v->dtype;
            in[k].ndim = v->ndim;
            memcpy(in[k].dims, v->dims, sizeof v->dims);
            in[k].data = v->data;
            if (k == 3 && numel(v) == 4 && v->dtype == LECTOR_DTYPE_INT64) in[k].data = sizes1;
        }
        in[0].data = xi;
        in[0].dims[0] = in[0].dims[1] = 1;
        out[0].dtype = y->dtype;
        out[0].ndim = 4;
        memcpy(out[0].dims, sizes1, sizeof sizes1);
        out[0].data = yo;
        lector_error e = {0};
        rt_kernel_ctx kc = {1, &e};
        if (n->n_in <= 4 && !H->ops[n->op].ref(n, in, out, &kc)) {
            int *tab = cu_malloc(sizeof(int) * (size_t)(OH + OW));
            if (tab) {
                for (int64_t o = 0; o < OH; o++) tab[o] = (int)((int64_t)yo[o * OW] / W0);
                for (int64_t o = 0; o < OW; o++) tab[OH + o] = (int)((int64_t)yo[o] % W0);
                /* separable: check every element of the first plane */
                int sep = 1;
                for (int64_t i = 0; i < OH * OW && sep; i++)
                    sep = (int64_t)yo[i] == tab[i / OW] * W0 + tab[OH + i % OW];
                if (sep) {
                    s->aux = cbuf_add(&cc->cb, tab, sizeof(int) * (size_t)(OH + OW), &cc->oom);
                    s->kind = S_RESIZE;
                    s->outer = x->dims[0];
                    s->channels = x->dims[1];
                    s->half = cu_vh(cc, n->in[0]);
                    s->nhwc = cu_vn(cc, n->in[0]) || cu_vn(cc, n->out[0]);
                    res = s->half != cu_vh(cc, n->out[0]);
                }
                cu_free(tab);
            }
        }
    }
    cu_free(xi);
    cu_free(yo);
    return res;
}

/* Reshape, Squeeze, Unsqueeze, Flatten, Identity, Dropout: the same bytes (a copy, none in place). */
int cu_build_copy(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]), *y = val(g, n->out[0]);
    if (x->dtype != y->dtype || numel(x) != numel(y) || !cu_dsize(x->dtype)) return 1;
    if (n->op == RT_OP_Dropout && n->n_out > 1 && n->out[1] >= 0) return 1;
    if (cu_vsize(cc->cp, g, n->in[0]) != cu_vsize(cc->cp, g, n->out[0])) return 1;
    s->kind = S_COPY;
    s->n = numel(x);
    s->elem = cu_vsize(cc->cp, g, n->in[0]);
    return 0;
}

/* Concat along any axis, in the output's memory order. */
int cu_build_concat(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *y = val(g, n->out[0]);
    int axis = (int)H->attr_int(n, "axis", 0);
    if (axis < 0) axis += y->ndim;
    if (axis < 0 || axis >= y->ndim || !cu_dsize(y->dtype) || n->n_in > CK_CONCAT_MAX) return 1;
    size_t es = cu_vsize(cc->cp, g, n->out[0]);
    int ok = 1;
    for (int k = 0; k < n->n_in; k++)
        ok &= n->in[k] >= 0 && val(g, n->in[k])->dtype == y->dtype && cu_vsize(cc->cp, g, n->in[k]) == es &&
              (!cc->cp->half || !val(g, n->in[k])->data || !is_f32(val(g, n->in[k])));
    if (!ok) return 1;
    /* the axis in memory order: NHWC keeps C innermost */
    int nhwc = y->ndim == 4 && cu_vn(cc, n->out[0]);
    static const int phys_of[4] = {0, 3, 1, 2};
    int64_t pd[4] = {y->dims[0], y->ndim == 4 ? y->dims[2] : 0, y->ndim == 4 ? y->dims[3] : 0, y->dims[1]};
    int pa = nhwc ? phys_of[axis] : axis;
    s->outer = 1;
    s->inner = 1;
    for (int d = 0; d < y->ndim; d++) {
        int64_t dim = nhwc ? pd[d] : y->dims[d];
        if (d < pa)
            s->outer *= dim;
        else if (d > pa)
            s->inner *= dim;
    }
    s->kind = S_CONCAT;
    s->elem = es;
    s->op = axis;
    return 0;
}

/* ---- running ---------------------------------------------------------------------- */

lector_status cu_run_resize(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    const rt_graph *g = x->p->g;
    const rt_value *xv = &g->values[n->in[0]], *yv = &g->values[n->out[0]];
    const int *tab = (const int *)(cu_const(x->cp, s->aux));
    int OH = (int)yv->dims[2];
    int rc =
        ck_resize_nearest(x->w->stream, cu_dptr(x, n->in[0]), cu_dptr(x, n->out[0]), s->outer, s->channels,
                          (int)xv->dims[2], (int)xv->dims[3], OH, (int)yv->dims[3], tab, tab + OH, s->half, s->nhwc);
    return cu_kernel_status(rc, n, err);
}

lector_status cu_run_gather(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    return cu_kernel_status(ck_gather(x->w->stream, cu_dptr(x, n->in[0]), cu_dptr(x, n->out[0]), &s->gd, (int)s->elem),
                            n, err);
}

lector_status cu_run_copy(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    void *X = cu_dptr(x, n->in[0]), *Y = cu_dptr(x, n->out[0]);
    int rc =
        s->n && X != Y ? (int)cudaMemcpyAsync(Y, X, (size_t)s->n * s->elem, cudaMemcpyDeviceToDevice, x->w->stream) : 0;
    return cu_kernel_status(rc, n, err);
}

lector_status cu_run_concat(const exec_ctx *x, const cu_step *s, const rt_node *n, lector_error *err)
{
    const rt_graph *g = x->p->g;
    const void *ins[CK_CONCAT_MAX];
    int64_t lens[CK_CONCAT_MAX];
    for (int k = 0; k < n->n_in; k++) {
        ins[k] = cu_dptr(x, n->in[k]);
        lens[k] = g->values[n->in[k]].dims[s->op];
    }
    return cu_kernel_status(
        ck_concat(x->w->stream, ins, lens, n->n_in, cu_dptr(x, n->out[0]), s->outer, s->inner, (int)s->elem), n, err);
}
