/*
 * onednn_conv.c - Conv and ConvTranspose (2-D): oneDNN's convolution and
 * deconvolution with bias, folded affine ops and post-ops, a ConvTranspose
 * whose kernel equals its stride as a 1x1 convolution and a depth-to-space
 * reorder, and the weights converted for them once per model.
 */
#include <string.h>

#include "backend/cpu/onednn/onednn_internal.h"
#include "rt/infer_util.h"
#include "util/util.h"

/* ---- converted weights ------------------------------------------------------- */

/* Starts the key of weights converted for a primitive: the source constants
 * (w, and b when >= 0), the chain's folded scale and shift, and the layout
 * the primitive wants. */
void dn_weights_key(dn_cc *c, dn_key *k, const char *tag, int w, int b, const dn_chain *ch,
                    const dnnl_memory_desc_t *wq)
{
    dn_key_init(k, tag);
    dn_key_const(k, &c->g->values[w]);
    int hb = b >= 0;
    dn_key_add(k, &hb, sizeof hb);
    if (hb) dn_key_const(k, &c->g->values[b]);
    dn_key_add(k, &ch->C, sizeof ch->C);
    dn_key_add(k, ch->scale, sizeof(float) * (size_t)ch->C);
    dn_key_add(k, ch->shift, sizeof(float) * (size_t)ch->C);
    dn_key_add(k, wq, sizeof *wq);
}

/* Stores freshly converted weights and bias under key k (the model keeps
 * them), or in the plan when the key cannot name them; -1 out of memory
 * (both freed). *wr and *bf become the stored buffers. */
static int weights_store(dn_cc *c, const dn_key *k, void **wr, float **bf)
{
    if (k->fail) {
        if (dn_owned_keep(c, *wr)) {
            lector__free(*wr);
            lector__free(*bf);
            return -1;
        }
        if (dn_owned_keep(c, *bf)) {
            lector__free(*bf);
            return -1;
        }
        return 0;
    }
    const dn_const *cv = dn_const_insert(c->caches, k, *wr, *bf);
    if (!cv) return -1;
    *wr = cv->data[0];
    *bf = cv->data[1];
    return 0;
}

/* The weights (in the primitive's layout wq) and bias converted under key
 * k: 1 when the model has them (*wr, *bf). 0 when they are new: *wf (wn
 * floats: the weights in their plain layout), *bf (bn floats) and *wr are
 * allocated for the caller to fill *wf and *bf and pass to
 * dn_weights_convert. -1 out of memory (c->fail set, nothing allocated). */
int dn_weights_get(dn_cc *c, const dn_key *k, size_t wn, size_t bn, const dnnl_memory_desc_t *wq, float **wf, void **wr,
                   float **bf)
{
    const dn_const *cv = dn_const_find(c->caches, k);
    if (cv) {
        *wr = cv->data[0];
        *bf = cv->data[1];
        return 1;
    }
    *wf = lector__aligned_alloc(wn * sizeof(float));
    *bf = lector__aligned_alloc(bn * sizeof(float));
    *wr = lector__aligned_alloc(dnnl_memory_desc_get_size(wq));
    if (*wf && *bf && *wr) return 0;
    lector__free(*wf);
    lector__free(*bf);
    lector__free(*wr);
    c->fail = 1;
    return -1;
}

/* Reorders the filled plain weights wf (layout wmd; freed here) into *wr
 * and stores *wr and *bf under key k, as dn_weights_get gave them: 0, or -1
 * (both freed) when the reorder fails or memory runs out. One place for the
 * conversion of Conv, ConvTranspose, the depth-to-space deconvolution and
 * MatMul, so that their error paths cannot drift apart. */
int dn_weights_convert(dn_cc *c, const dn_key *k, const dnnl_memory_desc_t *wmd, float *wf,
                       const dnnl_memory_desc_t *wq, void **wr, float **bf)
{
    int bad = dn_reorder_now(c, wmd, wf, wq, *wr);
    lector__free(wf);
    if (bad) {
        lector__free(*wr);
        lector__free(*bf);
        return -1;
    }
    return weights_store(c, k, wr, bf);
}

/* The constant slots *ws and *bs of weights wr (layout wq, converted from
 * value w) and bias bf (layout bmd) as dn_weights_get or dn_weights_convert
 * gave them; -1 when out of memory. */
int dn_weights_slots(dn_cc *c, int w, const dnnl_memory_desc_t *wq, void *wr, const dnnl_memory_desc_t *bmd, float *bf,
                     int *ws, int *bs)
{
    *ws = dn_slot_new(c, DN_SLOT_CONST, w, wq, 0);
    *bs = dn_slot_new(c, DN_SLOT_CONST, -1, bmd, 0);
    if (*ws < 0 || *bs < 0) return -1;
    c->dp->slots[*ws].ptr = wr;
    c->dp->slots[*bs].ptr = bf;
    return 0;
}

/* ---- builders ------------------------------------------------------------- */

static int impl_is_ref(dnnl_primitive_desc_t pd)
{
    const char *s = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s);
    return s && !strncmp(s, "ref", 3);
}

/* The input x, weights w and bias b (-1: none) of a Conv or ConvTranspose
 * node, when oneDNN can take them: f32, 4-D, constant weights and bias;
 * else -1. */
static int conv_operands(const rt_graph *g, const rt_node *n, int *x, int *w, int *b)
{
    if (n->n_in < 2) return -1;
    *x = n->in[0];
    *w = n->in[1];
    *b = n->n_in > 2 ? n->in[2] : -1;
    const rt_value *xv = &g->values[*x], *wv = &g->values[*w];
    if (!dn_is_f32(xv) || !dn_is_f32(wv) || !wv->data || xv->ndim != 4 || wv->ndim != 4) return -1;
    if (*b >= 0 && (!g->values[*b].data || !dn_is_f32(&g->values[*b]))) return -1;
    return 0;
}

/* Conv and ConvTranspose (2-D), with bias, folded affine ops and post-ops. */
int dn_build_conv(dn_cc *c, int ni, int transposed)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x, w, b;
    if (conv_operands(g, n, &x, &w, &b)) return -1;
    const rt_value *xv = &g->values[x], *wv = &g->values[w], *yv = &g->values[n->out[0]];
    rt_conv_geom geo;
    if (rt_conv_geom_make(n, transposed ? RT_GEOM_CONVT : RT_GEOM_CONV, xv->ndim, xv->dims, wv->dims, &geo, NULL))
        return -1;
    int64_t G = rt_attr_int(n, "group", 1);
    int64_t Cin = xv->dims[1];
    int64_t Cout = transposed ? wv->dims[1] * G : wv->dims[0];
    if (G < 1 || Cout != yv->dims[1] || Cin % G || Cout % G) return -1;
    int off = RT_SPATIAL - geo.nsp; /* geometry slots used */
    if (geo.nsp != 2) return -1;
    dnnl_dims_t strides, dil, pl, pr;
    for (int i = 0; i < 2; i++) {
        strides[i] = geo.s[off + i];
        dil[i] = geo.d[off + i] - 1;
        pl[i] = geo.pb[off + i];
        if (transposed)
            pr[i] = (geo.in[off + i] - 1) * geo.s[off + i] + (geo.k[off + i] - 1) * geo.d[off + i] + 1 - pl[i] -
                    geo.out[off + i];
        else
            pr[i] = geo.pe[off + i];
        if (pr[i] < 0) return -1;
    }
    /* weights, logical dims */
    dnnl_memory_desc_t wmd_plain, wmd_any, bmd, smd, dmd;
    int64_t kh = wv->dims[2], kw = wv->dims[3];
    if (G == 1) {
        int64_t d[4] = {Cout, Cin, kh, kw};
        dn_md_make(&wmd_plain, 4, d, transposed ? dnnl_iohw : dnnl_oihw);
        dn_md_any(&wmd_any, 4, d);
    } else {
        int64_t d[5] = {G, Cout / G, Cin / G, kh, kw};
        dn_md_make(&wmd_plain, 5, d, transposed ? dnnl_giohw : dnnl_goihw);
        dn_md_any(&wmd_any, 5, d);
    }
    int64_t cd[1] = {Cout};
    dn_md_plain(&bmd, 1, cd);

    for (int attempt = 0; attempt < 3; attempt++) {
        dn_chain ch;
        if (dn_chain_init(&ch, (int)Cout, 1)) return -1;
        dn_chain_attempt(c, ni, &ch, attempt);
        const rt_value *ev = &g->values[ch.end];
        dn_md_any(&dmd, 4, ev->dims);
        for (int i = 0; i < ch.n_po; i++) /* dst in the residual's layout */
            if (ch.po[i].kind == DN_PO_BIN) dmd = c->dp->slots[c->dp->vslot[ch.po[i].value]].md;
        /* src: keep the layout the input already has when oneDNN has a fast kernel for it */
        int xs = dn_vslot(c, x);
        if (xs < 0) {
            dn_chain_clear(&ch);
            return -1;
        }
        dnnl_memory_desc_t bin_md[24];
        dnnl_primitive_attr_t at = dn_chain_attr(c, &ch, bin_md, NULL);
        dnnl_primitive_desc_t pd = NULL;
        for (int try_cur = dn_md_is_plain(&c->dp->slots[xs].md) ? 0 : 1; try_cur >= 0 && !pd; try_cur--) {
            if (try_cur)
                smd = c->dp->slots[xs].md;
            else
                dn_md_any(&smd, 4, xv->dims);
            if (transposed) {
                dnnl_deconvolution_desc_t d;
                if (dn_ok(dnnl_dilated_deconvolution_forward_desc_init(&d, dnnl_forward_inference,
                                                                       dnnl_deconvolution_direct, &smd, &wmd_any, &bmd,
                                                                       &dmd, strides, dil, pl, pr)))
                    pd = dn_pd_create(c, &d, sizeof d, at);
            } else {
                dnnl_convolution_desc_t d;
                if (dn_ok(dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference,
                                                                     dnnl_convolution_direct, &smd, &wmd_any, &bmd,
                                                                     &dmd, strides, dil, pl, pr)))
                    pd = dn_pd_create(c, &d, sizeof d, at);
            }
            if (pd && try_cur && impl_is_ref(pd)) {
                dn_pd_release(c, pd);
                pd = NULL;
            }
        }
        if (at) dnnl_primitive_attr_destroy(at);
        if (!pd) {
            dn_chain_clear(&ch);
            continue;
        }
        /* weights and bias: fold scale/shift, reorder once per model */
        size_t wn = (size_t)rt_value_numel(wv);
        const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        const dnnl_memory_desc_t *sq = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
        const dnnl_memory_desc_t *dq = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
        dn_key wk;
        dn_weights_key(c, &wk, transposed ? "deconv-w" : "conv-w", w, b, &ch, wq);
        dn_key_add(&wk, &G, sizeof G);
        void *wr = NULL;
        float *bf = NULL, *wf = NULL;
        int got = dn_weights_get(c, &wk, wn, (size_t)Cout, wq, &wf, &wr, &bf);
        if (!got) {
            memcpy(wf, wv->data, wn * sizeof(float));
            const float *b0 = b >= 0 ? g->values[b].data : NULL;
            for (int64_t k = 0; k < Cout; k++) bf[k] = (b0 ? b0[k] : 0.f) * ch.scale[k] + ch.shift[k];
            if (ch.folded) {
                int64_t khw = kh * kw;
                if (!transposed) {
                    int64_t per = wn / (size_t)Cout;
                    for (int64_t o = 0; o < Cout; o++)
                        for (int64_t i = 0; i < per; i++) wf[o * per + i] *= ch.scale[o];
                } else {
                    int64_t og = Cout / G, ig = Cin / G;
                    for (int64_t ci = 0; ci < Cin; ci++)
                        for (int64_t o = 0; o < og; o++) {
                            float sc = ch.scale[(ci / ig) * og + o];
                            for (int64_t t = 0; t < khw; t++) wf[(ci * og + o) * khw + t] *= sc;
                        }
                }
            }
            got = dn_weights_convert(c, &wk, &wmd_plain, wf, wq, &wr, &bf);
        }
        dn_key_free(&wk);
        if (got < 0) {
            return dn_chain_abandon(c, &ch, pd);
        }
        int ws, bs, wb = dn_weights_slots(c, w, wq, wr, &bmd, bf, &ws, &bs);
        int ss = dn_need_md(c, x, sq);
        int ys = dn_out_slot(c, ch.end, dq);
        if (wb || ss < 0 || ys < 0) {
            return dn_chain_abandon(c, &ch, pd);
        }
        int args[DN_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
        int sl[DN_MAX_ARGS] = {ss, ws, bs, ys};
        const dnnl_memory_desc_t *mds[DN_MAX_ARGS] = {0};
        int r = dn_add_chained_prim(c, &ch, pd, bin_md, args, sl, mds, 4, 0, ys);
        dn_chain_clear(&ch);
        return r;
    }
    return -1;
}

/* ConvTranspose with kernel == stride, no padding, one group (the DB head's
 * 2x2/2 upsampling): every input pixel writes its own k*k output block, so
 * it is a 1x1 convolution to Cout*k*k channels (nhwc) followed by a
 * depth-to-space reorder: faster than oneDNN 2.6's own deconvolution on
 * these shapes (docs/BENCHMARKS.md). */
int dn_build_deconv_d2s(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int x, w, b;
    if (conv_operands(g, n, &x, &w, &b)) return -1;
    const rt_value *xv = &g->values[x], *wv = &g->values[w], *yv = &g->values[n->out[0]];
    if (rt_attr_int(n, "group", 1) != 1) return -1;
    int64_t N = xv->dims[0], Cin = xv->dims[1], H = xv->dims[2], W = xv->dims[3];
    int64_t Cout = wv->dims[1], kh = wv->dims[2], kw = wv->dims[3];
    if (wv->dims[0] != Cin || yv->dims[1] != Cout || yv->dims[2] != H * kh || yv->dims[3] != W * kw) return -1;
    const int64_t *v;
    int k = rt_attr_ints(n, "strides", &v);
    if (k != 2 || v[0] != kh || v[1] != kw) return -1;
    k = rt_attr_ints(n, "pads", &v);
    for (int i = 0; i < k; i++)
        if (v[i]) return -1;
    k = rt_attr_ints(n, "dilations", &v);
    for (int i = 0; i < k; i++)
        if (v[i] != 1) return -1;
    k = rt_attr_ints(n, "output_padding", &v);
    for (int i = 0; i < k; i++)
        if (v[i]) return -1;
    const char *ap = rt_attr_string(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) return -1;
    int64_t kk = kh * kw, C2 = Cout * kk;
    dn_chain ch;
    if (dn_chain_init(&ch, (int)Cout, 1)) return -1;
    dn_chain_walk(c, ni, &ch, 0);
    const rt_value *ev = &g->values[ch.end];
    int64_t wd[4] = {C2, Cin, 1, 1}, cd[4] = {N, C2, H, W}, bd[1] = {C2};
    dnnl_memory_desc_t wmd_plain, wmd_any, bmd, smd, dmd;
    dn_md_make(&wmd_plain, 4, wd, dnnl_oihw);
    dn_md_any(&wmd_any, 4, wd);
    dn_md_plain(&bmd, 1, bd);
    dn_md_make(&dmd, 4, cd, dnnl_acdb);
    int xs = dn_vslot(c, x);
    if (xs < 0) {
        dn_chain_clear(&ch);
        return -1;
    }
    dnnl_primitive_attr_t at = dn_chain_attr(c, &ch, NULL, NULL);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_dims_t st = {1, 1}, di = {0, 0}, pz = {0, 0};
    for (int try_cur = dn_md_is_plain(&c->dp->slots[xs].md) ? 0 : 1; try_cur >= 0 && !pd; try_cur--) {
        if (try_cur)
            smd = c->dp->slots[xs].md;
        else
            dn_md_any(&smd, 4, xv->dims);
        dnnl_convolution_desc_t d;
        if (dn_ok(dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, &smd,
                                                             &wmd_any, &bmd, &dmd, st, di, pz, pz)))
            pd = dn_pd_create(c, &d, sizeof d, at);
    }
    if (at) dnnl_primitive_attr_destroy(at);
    if (!pd) {
        dn_chain_clear(&ch);
        return -1;
    }
    const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *sq = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    dn_key wk;
    dn_weights_key(c, &wk, "d2s-w", w, b, &ch, wq);
    void *wr = NULL;
    float *bf = NULL, *wf = NULL;
    int got = dn_weights_get(c, &wk, (size_t)(C2 * Cin), (size_t)C2, wq, &wf, &wr, &bf);
    if (!got) {
        const float *w0 = wv->data, *b0 = b >= 0 ? g->values[b].data : NULL;
        for (int64_t co = 0; co < Cout; co++)
            for (int64_t t = 0; t < kk; t++) {
                int64_t o = co * kk + t;
                bf[o] = (b0 ? b0[co] : 0.f) * ch.scale[co] + ch.shift[co];
                for (int64_t ci = 0; ci < Cin; ci++) wf[o * Cin + ci] = w0[(ci * Cout + co) * kk + t] * ch.scale[co];
            }
        got = dn_weights_convert(c, &wk, &wmd_plain, wf, wq, &wr, &bf);
    }
    dn_key_free(&wk);
    if (got < 0) {
        return dn_chain_abandon(c, &ch, pd);
    }
    /* depth-to-space as a reorder between two 6-D views [N, Cout, H, kh, W, kw] */
    dnnl_memory_desc_t v_src, v_dst, ymd;
    int64_t HO = H * kh, WO = W * kw;
    dnnl_dims_t vd = {N, Cout, H, kh, W, kw};
    dnnl_dims_t vs = {H * W * C2, kk, W * C2, kw, C2, 1};
    dnnl_dims_t vt = {HO * WO * Cout, 1, kh * WO * Cout, WO * Cout, kw * Cout, Cout};
    dn_md_make(&ymd, 4, ev->dims, dnnl_acdb);
    dnnl_primitive_desc_t rpd = NULL;
    if (!dn_ok(dnnl_memory_desc_init_by_strides(&v_src, 6, vd, dnnl_f32, vs)) ||
        !dn_ok(dnnl_memory_desc_init_by_strides(&v_dst, 6, vd, dnnl_f32, vt))) {
        return dn_chain_abandon(c, &ch, pd);
    }
    dnnl_primitive_attr_t rat = dn_attr_new();
    if (!dn_ok(dn_reorder_pd(c, &rpd, &v_src, &v_dst, rat))) rpd = NULL;
    dnnl_primitive_attr_destroy(rat);
    if (!rpd) {
        return dn_chain_abandon(c, &ch, pd);
    }
    int ws, bs, wb = dn_weights_slots(c, w, wq, wr, &bmd, bf, &ws, &bs);
    int ss = dn_need_md(c, x, sq);
    int ts = dn_slot_new(c, DN_SLOT_ARENA, -1, &dmd, 0);
    int ys = dn_out_slot(c, ch.end, &ymd);
    int r = -1;
    if (!wb && ss >= 0 && ts >= 0 && ys >= 0) {
        int args[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
        int sl[5] = {ss, ws, bs, ts};
        r = dn_add_prim(c, pd, 4, args, sl, NULL);
        int rargs[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, rsl[2] = {ts, ys};
        const dnnl_memory_desc_t *rmd[2] = {&v_src, &v_dst};
        if (!r) r = dn_add_prim(c, rpd, 2, rargs, rsl, rmd);
        if (!r) r = dn_chain_commit(c, &ch, ys);
    }
    dn_pd_release(c, pd);
    dn_pd_release(c, rpd);
    dn_chain_clear(&ch);
    return r;
}
