/*
 * onednn_ops.c - the builders of every operator but Conv, ConvTranspose and
 * MatMul: unary elementwise ops, Add/Sub/Mul/Div, GlobalAveragePool (own
 * kernel), pooling, Concat, Resize, Softmax, LayerNormalization, Transpose,
 * and the reference kernel for any node.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "rt/infer_util.h"

static int act_alg(int op, const rt_node *n, dnnl_alg_kind_t *alg, float *a, float *b)
{
    *a = *b = 0;
    switch (op) {
    case RT_OP_Relu: *alg = dnnl_eltwise_relu; return 0;
    case RT_OP_LeakyRelu:
        *alg = dnnl_eltwise_relu;
        *a = rt_attr_float(n, "alpha", 0.01f);
        return 0;
    case RT_OP_Sigmoid: *alg = dnnl_eltwise_logistic; return 0;
    case RT_OP_Tanh: *alg = dnnl_eltwise_tanh; return 0;
    case RT_OP_Exp: *alg = dnnl_eltwise_exp; return 0;
    case RT_OP_Abs: *alg = dnnl_eltwise_abs; return 0;
    case RT_OP_Sqrt: *alg = dnnl_eltwise_sqrt; return 0;
    case RT_OP_Log: *alg = dnnl_eltwise_log; return 0;
    case RT_OP_Neg:
        *alg = dnnl_eltwise_linear;
        *a = -1.f;
        return 0;
    case RT_OP_HardSwish: *alg = dnnl_eltwise_hardswish; return 0;
    case RT_OP_HardSigmoid: /* linear here, clip as a post-op */
        *alg = dnnl_eltwise_linear;
        *a = rt_attr_float(n, "alpha", 0.2f);
        *b = rt_attr_float(n, "beta", 0.5f);
        return 0;
    default: return -1;
    }
}

/* Unary elementwise ops (Relu, Sigmoid, Clip, ...), in the input's layout. */
int dn_build_eltwise(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0];
    if (!dn_is_f32(&g->values[x]) || !dn_is_f32(&g->values[n->out[0]])) return -1;
    dnnl_alg_kind_t alg;
    float a, b;
    if (n->op == RT_OP_Clip) {
        float lo = -INFINITY, hi = INFINITY;
        if (n->n_in > 1 && n->in[1] >= 0 && !dn_const_scalar(g, n->in[1], &lo)) return -1;
        if (n->n_in > 2 && n->in[2] >= 0 && !dn_const_scalar(g, n->in[2], &hi)) return -1;
        alg = dnnl_eltwise_clip;
        a = isinf(lo) ? -FLT_MAX : lo;
        b = isinf(hi) ? FLT_MAX : hi;
    } else if (act_alg(n->op, n, &alg, &a, &b)) {
        return -1;
    }
    int xs = dn_vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t smd = c->dp->slots[xs].md;
    for (int attempt = 0; attempt < 2; attempt++) {
        dn_chain ch;
        dn_chain_init(&ch, 0, 0);
        if (n->op == RT_OP_HardSigmoid) dn_po_elt(&ch, dnnl_eltwise_clip, 0.f, 1.f);
        /* no chain after a standalone eltwise: its own algorithm would not be
         * seen by dn_po_elt's same-algorithm check (oneDNN 2.6 post-op bug) */
        if (attempt == 0 && n->act != RT_ACT_NONE && dn_po_act(&ch, n->act, n->act_alpha, n->act_beta) == 0) {
            ch.end = n->out[0];
        } else {
            ch.end = n->out[0];
            if (n->act != RT_ACT_NONE) {
                ch.tail_act = n->act;
                ch.tail_a = n->act_alpha;
                ch.tail_b = n->act_beta;
            }
        }
        dnnl_eltwise_desc_t d;
        int made = dn_ok(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &smd, a, b));
        dnnl_primitive_desc_t pd = dn_pd_create_consuming(c, made, &d, sizeof d, dn_chain_attr(c, &ch, NULL, NULL));
        if (!pd) continue;
        int ys = dn_out_slot(c, ch.end, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
        int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, sl[2] = {xs, ys};
        return dn_add_chained_prim(c, &ch, pd, NULL, args, sl, NULL, 2, 0, ys);
    }
    return -1;
}

/* Add/Sub/Mul/Div with numpy broadcasting of the second operand. */
int dn_build_binary(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in != 2 || n->in[0] < 0 || n->in[1] < 0) return -1;
    int a = n->in[0], b = n->in[1], y = n->out[0];
    const rt_value *yv = &g->values[y];
    if (!dn_is_f32(&g->values[a]) || !dn_is_f32(&g->values[b]) || !dn_is_f32(yv)) return -1;
    dnnl_alg_kind_t alg = n->op == RT_OP_Add   ? dnnl_binary_add
                          : n->op == RT_OP_Sub ? dnnl_binary_sub
                          : n->op == RT_OP_Mul ? dnnl_binary_mul
                                               : dnnl_binary_div;
    if (!dn_same_dims(&g->values[a], yv)) {
        if ((n->op == RT_OP_Add || n->op == RT_OP_Mul) && dn_same_dims(&g->values[b], yv)) {
            int t = a;
            a = b;
            b = t;
        } else {
            return -1;
        }
    }
    if (g->values[a].data) return -1; /* both constant: folded earlier */
    int as = dn_vslot(c, a);
    if (as < 0 || yv->ndim > DNNL_MAX_NDIMS || yv->ndim < 1) return -1;
    dnnl_memory_desc_t amd = c->dp->slots[as].md, bmd;
    const rt_value *bv = &g->values[b];
    int bs;
    if (dn_same_dims(bv, yv)) {
        bs = dn_need_md(c, b, &amd);
        if (bs < 0) return -1;
        bmd = amd;
    } else {
        int64_t bd[LECTOR_MAX_DIMS];
        int r = yv->ndim;
        if (bv->ndim > r) return -1;
        for (int i = 0; i < r; i++) bd[i] = i < r - bv->ndim ? 1 : bv->dims[i - (r - bv->ndim)];
        int cur = dn_vslot(c, b);
        if (cur < 0) return -1;
        if (bv->ndim == r && !dn_md_is_plain(&c->dp->slots[cur].md)) {
            bs = cur;
            bmd = c->dp->slots[cur].md;
        } else {
            bs = dn_need_plain(c, b);
            if (bs < 0) return -1;
            dn_md_plain(&bmd, r, bd);
        }
    }
    for (int attempt = 0; attempt < 3; attempt++) {
        dn_chain ch;
        dn_chain_init(&ch, 0, 0);
        dn_chain_attempt(c, ni, &ch, attempt);
        dnnl_memory_desc_t bin_md[24];
        dnnl_binary_desc_t d;
        int made = dn_ok(dnnl_binary_desc_init(&d, alg, &amd, &bmd, &amd));
        dnnl_primitive_desc_t pd = dn_pd_create_consuming(c, made, &d, sizeof d, dn_chain_attr(c, &ch, bin_md, NULL));
        if (!pd) continue;
        int ys = dn_out_slot(c, ch.end, &amd);
        int args[DN_MAX_ARGS] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, sl[DN_MAX_ARGS] = {as, bs, ys};
        const dnnl_memory_desc_t *mds[DN_MAX_ARGS] = {&amd, &bmd, &amd};
        return dn_add_chained_prim(c, &ch, pd, bin_md, args, sl, mds, 3, 0, ys);
    }
    return -1;
}

/* GlobalAveragePool with sums in double (nchw or nhwc input). oneDNN's
 * pooling sums a window sequentially in float; in the squeeze-and-excitation
 * blocks that error scales whole channels and moved the recogniser's
 * probabilities by 1.6e-4 against ONNX Runtime. */
int dn_build_gap(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x];
    if (!dn_is_f32(xv) || xv->ndim != 4) return -1;
    int xs = dn_vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t nhwc, ymd;
    dn_md_make(&nhwc, 4, xv->dims, dnnl_acdb);
    int is_nhwc = dn_md_eq(&c->dp->slots[xs].md, &nhwc);
    if (!is_nhwc) xs = dn_need_plain(c, x);
    if (xs < 0) return -1;
    dn_md_make(&ymd, 4, g->values[y].dims, is_nhwc ? dnnl_acdb : dnnl_abcd);
    int ys = dn_out_slot(c, y, &ymd);
    dn_step *st = ys < 0 ? NULL : dn_step_new(c, DN_STEP_GAP);
    if (!st) return -1;
    st->n_in = 1;
    st->in_slot[0] = xs;
    st->n_out = 1;
    st->out_slot[0] = ys;
    st->node = is_nhwc;
    st->nthr = c->nthr;
    for (int i = 0; i < 4; i++) st->dims[i] = xv->dims[i];
    return 0;
}

int dn_build_pool(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x], *yv = &g->values[y];
    if (!dn_is_f32(xv) || xv->ndim != 4) return -1;
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k] >= 0) return -1; /* MaxPool's indices */
    dnnl_dims_t st, ke, di, pl, pr;
    dnnl_alg_kind_t alg;
    if (n->op == RT_OP_GlobalAveragePool) {
        for (int i = 0; i < 2; i++) {
            st[i] = 1;
            ke[i] = xv->dims[2 + i];
            di[i] = pl[i] = pr[i] = 0;
        }
        alg = dnnl_pooling_avg_exclude_padding;
    } else {
        rt_conv_geom geo;
        if (rt_conv_geom_make(n, RT_GEOM_POOL, xv->ndim, xv->dims, NULL, &geo, NULL) || geo.nsp != 2) return -1;
        int off = RT_SPATIAL - 2;
        for (int i = 0; i < 2; i++) {
            st[i] = geo.s[off + i];
            ke[i] = geo.k[off + i];
            di[i] = geo.d[off + i] - 1;
            pl[i] = geo.pb[off + i];
            pr[i] = (yv->dims[2 + i] - 1) * st[i] + (ke[i] - 1) * (di[i] + 1) + 1 - xv->dims[2 + i] - pl[i];
            if (pr[i] < 0) pr[i] = 0;
        }
        if (n->op == RT_OP_MaxPool)
            alg = dnnl_pooling_max;
        else {
            alg = rt_attr_int(n, "count_include_pad", 0) ? dnnl_pooling_avg_include_padding
                                                         : dnnl_pooling_avg_exclude_padding;
            /* ceil_mode windows past the padded input would be counted as padding by oneDNN */
            for (int i = 0; i < 2; i++)
                if (alg == dnnl_pooling_avg_include_padding && pr[i] != geo.pe[off + i]) return -1;
        }
    }
    int xs = dn_vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t smd = c->dp->slots[xs].md, dmd;
    dn_md_any(&dmd, 4, yv->dims);
    dnnl_pooling_v2_desc_t d;
    int made =
        dn_ok(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &smd, &dmd, st, ke, di, pl, pr));
    dnnl_primitive_desc_t pd = dn_pd_create_consuming(c, made, &d, sizeof d, dn_attr_new());
    if (!pd) return -1;
    const dnnl_memory_desc_t *wsq = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    if (wsq && dnnl_memory_desc_get_size(wsq)) {
        dn_pd_release(c, pd);
        return -1;
    }
    return dn_add_unary_prim(c, pd, xs, y, NULL, NULL);
}

int dn_build_concat(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int y = n->out[0];
    const rt_value *yv = &g->values[y];
    if (!dn_is_f32(yv) || n->n_in < 1 || n->n_in > DN_MAX_ARGS - 2 || yv->ndim < 1) return -1;
    int axis = rt_norm_axis(rt_attr_int(n, "axis", 0), yv->ndim);
    if (axis < 0) return -1;
    dnnl_memory_desc_t smd[DN_MAX_ARGS], dmd;
    int ss[DN_MAX_ARGS], nin = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        nin = 0;
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || !dn_is_f32(&g->values[v]) || g->values[v].ndim != yv->ndim) return -1;
            if (rt_value_numel(&g->values[v]) == 0) continue;
            int s = attempt == 0 ? dn_vslot(c, v) : -1;
            if (s < 0) {
                s = dn_vslot(c, v);
                if (s < 0) return -1;
                smd[nin] = c->dp->slots[s].md;
                dn_md_plain(&smd[nin], g->values[v].ndim, g->values[v].dims);
            } else {
                smd[nin] = c->dp->slots[s].md;
            }
            ss[nin++] = v;
        }
        if (nin == 0) return -1;
        dn_md_any(&dmd, yv->ndim, yv->dims);
        if (attempt == 1) dn_md_plain(&dmd, yv->ndim, yv->dims);
        dnnl_primitive_attr_t at = dn_attr_new();
        dnnl_primitive_desc_t pd = NULL;
        if (!dn_ok(dn_concat_pd(c, &pd, &dmd, nin, axis, smd, at))) pd = NULL;
        dnnl_primitive_attr_destroy(at);
        if (!pd) continue;
        int args[DN_MAX_ARGS], sl[DN_MAX_ARGS];
        for (int k = 0; k < nin; k++) {
            args[k] = DNNL_ARG_MULTIPLE_SRC + k;
            sl[k] = dn_need_md(c, ss[k], &smd[k]);
            if (sl[k] < 0) {
                dn_pd_release(c, pd);
                return -1;
            }
        }
        int ys = dn_out_slot(c, y, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0));
        args[nin] = DNNL_ARG_DST;
        sl[nin] = ys;
        int r = ys < 0 ? -1 : dn_add_prim(c, pd, nin + 1, args, sl, NULL);
        dn_pd_release(c, pd);
        return r;
    }
    return -1;
}

/* Resize: nearest with integer up-scaling (every coordinate mode agrees
 * there), linear with half_pixel coordinates. */
int dn_build_resize(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x], *yv = &g->values[y];
    if (!dn_is_f32(xv) || xv->ndim != 4 || yv->ndim != 4) return -1;
    if (xv->dims[0] != yv->dims[0] || xv->dims[1] != yv->dims[1]) return -1;
    const char *mode = rt_attr_string(n, "mode", "nearest");
    const char *ctm = rt_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    dnnl_alg_kind_t alg;
    if (!strcmp(mode, "nearest")) {
        const char *nm = rt_attr_string(n, "nearest_mode", "round_prefer_floor");
        if (!strcmp(ctm, "align_corners") || !strcmp(ctm, "tf_crop_and_resize")) return -1;
        if (!strcmp(ctm, "asymmetric") && strcmp(nm, "floor")) return -1;
        if (strcmp(ctm, "asymmetric") && strcmp(nm, "round_prefer_floor") && strcmp(nm, "round_prefer_ceil")) return -1;
        for (int i = 2; i < 4; i++)
            if (yv->dims[i] % xv->dims[i]) return -1;
        alg = dnnl_resampling_nearest;
    } else if (!strcmp(mode, "linear")) {
        if (strcmp(ctm, "half_pixel") &&
            !(strcmp(ctm, "pytorch_half_pixel") == 0 && yv->dims[2] > 1 && yv->dims[3] > 1))
            return -1;
        alg = dnnl_resampling_linear;
    } else {
        return -1;
    }
    /* ONNX maps coordinates with the given scales (out = floor(in * scale)),
     * not out/in: only scales equal to out/in can go to oneDNN */
    lector_tensor tv[2], *tp[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        int v = n->n_in > 2 + k ? n->in[2 + k] : -1;
        if (v < 0) continue;
        if (!g->values[v].data) return -1;
        tv[k] = rt_value_tensor(&g->values[v]);
        tp[k] = &tv[k];
    }
    int64_t odims[LECTOR_MAX_DIMS];
    float scale[LECTOR_MAX_DIMS];
    if (rt_resize_params(n, 4, xv->dims, tp[0], tp[1], odims, scale, NULL)) return -1;
    for (int i = 0; i < 4; i++)
        if (odims[i] != yv->dims[i]) return -1;
    if (scale[0] != 1.f || scale[1] != 1.f) return -1;
    /* oneDNN 2.6 maps coordinates with out/in whatever factors it is given */
    for (int i = 2; i < 4; i++)
        if (fabsf(scale[i] - (float)yv->dims[i] / (float)xv->dims[i]) > 1e-6f * scale[i]) return -1;
    float factors[2] = {scale[2], scale[3]};
    int xs = dn_vslot(c, x);
    if (xs < 0) return -1;
    dnnl_memory_desc_t smd = c->dp->slots[xs].md, dmd;
    dn_md_any(&dmd, 4, yv->dims);
    dnnl_resampling_desc_t d;
    int made = dn_ok(dnnl_resampling_forward_desc_init(&d, dnnl_forward_inference, alg, factors, &smd, &dmd));
    dnnl_primitive_desc_t pd = dn_pd_create_consuming(c, made, &d, sizeof d, dn_attr_new());
    if (!pd) return -1;
    return dn_add_unary_prim(c, pd, xs, y, NULL, NULL);
}

int dn_build_softmax(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x];
    int r = xv->ndim;
    if (!dn_is_f32(xv) || r < 1) return -1;
    int old = rt_node_opset(n) < 13;
    int axis = rt_norm_axis(rt_attr_int(n, "axis", old ? 1 : -1), r);
    if (axis < 0) return -1;
    int64_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= xv->dims[i];
    if (old) {
        for (int i = axis; i < r; i++) len *= xv->dims[i];
    } else {
        len = xv->dims[axis];
        for (int i = axis + 1; i < r; i++) inner *= xv->dims[i];
    }
    int64_t d3[3] = {outer, len, inner};
    dnnl_memory_desc_t md;
    dn_md_plain(&md, 3, d3);
    dnnl_softmax_desc_t d;
    int made = dn_ok(dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md, 1));
    dnnl_primitive_desc_t pd = dn_pd_create_consuming(c, made, &d, sizeof d, dn_attr_new());
    if (!pd) return -1;
    dnnl_memory_desc_t ymd; /* the primitive reads and writes both as [outer, len, inner] */
    dn_md_plain(&ymd, g->values[y].ndim, g->values[y].dims);
    const dnnl_memory_desc_t *mds[2] = {&md, &md};
    return dn_add_unary_prim(c, pd, dn_need_plain(c, x), y, &ymd, mds);
}

int dn_build_layernorm(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in < 3 || n->in[1] < 0 || n->in[2] < 0) return -1;
    for (int k = 1; k < n->n_out; k++)
        if (n->out[k] >= 0) return -1;
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x];
    int r = xv->ndim;
    if (!dn_is_f32(xv) || r < 2 || r > 5) return -1;
    if (rt_norm_axis(rt_attr_int(n, "axis", -1), r) != r - 1) return -1;
    int64_t C = xv->dims[r - 1];
    const rt_value *sv = &g->values[n->in[1]], *bv = &g->values[n->in[2]];
    if (!sv->data || !bv->data || !dn_is_f32(sv) || !dn_is_f32(bv) || rt_value_numel(sv) != C ||
        rt_value_numel(bv) != C)
        return -1;
    dnnl_memory_desc_t md, cmd;
    dn_md_plain(&md, r, xv->dims);
    dn_md_plain(&cmd, 1, &C);
    dnnl_layer_normalization_desc_t d;
    int made = dn_ok(dnnl_layer_normalization_forward_desc_init(
        &d, dnnl_forward_inference, &md, NULL, rt_attr_float(n, "epsilon", 1e-5f), dnnl_use_scale | dnnl_use_shift));
    dnnl_primitive_desc_t pd = dn_pd_create_consuming(c, made, &d, sizeof d, dn_attr_new());
    if (!pd) return -1;
    int xs = dn_need_plain(c, x);
    int ss = dn_slot_new(c, DN_SLOT_CONST, n->in[1], &cmd, 0), bs = dn_slot_new(c, DN_SLOT_CONST, n->in[2], &cmd, 0);
    int ys = xs < 0 ? -1 : dn_out_slot(c, y, &md);
    if (ss < 0 || bs < 0 || ys < 0) {
        dn_pd_release(c, pd);
        return -1;
    }
    c->dp->slots[ss].ptr = sv->data;
    c->dp->slots[bs].ptr = bv->data;
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_DST}, sl[4] = {xs, ss, bs, ys};
    int rr = dn_add_prim(c, pd, 4, args, sl, NULL);
    dn_pd_release(c, pd);
    return rr;
}

/* Transpose as a reorder from a permuted view of the input. */
int dn_build_transpose(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x = n->in[0], y = n->out[0];
    const rt_value *xv = &g->values[x], *yv = &g->values[y];
    int r = xv->ndim;
    if (!dn_is_f32(xv) || r < 1 || r > DNNL_MAX_NDIMS) return -1;
    const int64_t *perm;
    int np = rt_attr_ints(n, "perm", &perm);
    int64_t pm[DNNL_MAX_NDIMS];
    for (int i = 0; i < r; i++) pm[i] = np == r ? perm[i] : r - 1 - i;
    int64_t xstr[DNNL_MAX_NDIMS];
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        xstr[i] = s;
        s *= xv->dims[i];
    }
    dnnl_dims_t vd, vs;
    for (int i = 0; i < r; i++) {
        if (pm[i] < 0 || pm[i] >= r) return -1;
        vd[i] = yv->dims[i];
        vs[i] = xstr[pm[i]];
    }
    dnnl_memory_desc_t smd, dmd;
    if (!dn_ok(dnnl_memory_desc_init_by_strides(&smd, r, vd, dnnl_f32, vs))) return -1;
    dn_md_plain(&dmd, r, yv->dims);
    dnnl_primitive_attr_t at = dn_attr_new();
    dnnl_primitive_desc_t pd = NULL;
    if (!dn_ok(dn_reorder_pd(c, &pd, &smd, &dmd, at))) pd = NULL;
    dnnl_primitive_attr_destroy(at);
    if (!pd) return -1;
    const dnnl_memory_desc_t *mds[2] = {&smd, &dmd};
    return dn_add_unary_prim(c, pd, dn_need_plain(c, x), y, &dmd, mds);
}

/* Any node with the reference kernel, on plain inputs. */
int dn_build_ref(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    if (n->n_in > 16 || n->n_out > 8) return -1;
    int in_s[16], out_s[8];
    for (int k = 0; k < n->n_in; k++) {
        in_s[k] = n->in[k] < 0 ? -1 : dn_need_plain(c, n->in[k]);
        if (n->in[k] >= 0 && in_s[k] < 0) return -1;
    }
    for (int k = 0; k < n->n_out; k++) {
        out_s[k] = -1;
        if (n->out[k] < 0) continue;
        const rt_value *v = &g->values[n->out[k]];
        dnnl_memory_desc_t md;
        if (dn_is_f32(v)) dn_md_plain(&md, v->ndim, v->dims);
        out_s[k] = dn_out_slot(c, n->out[k], dn_is_f32(v) ? &md : NULL);
        if (out_s[k] < 0) return -1;
    }
    dn_step *s = dn_step_new(c, DN_STEP_REF);
    if (!s) return -1;
    s->node = ni;
    s->n_in = n->n_in;
    s->n_out = n->n_out;
    memcpy(s->in_slot, in_s, sizeof(int) * (size_t)n->n_in);
    memcpy(s->out_slot, out_s, sizeof(int) * (size_t)n->n_out);
    return 0;
}
