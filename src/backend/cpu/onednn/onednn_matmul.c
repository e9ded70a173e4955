/*
 * onednn_matmul.c - MatMul: a constant 2-D B as one GEMM with folded bias,
 * anything else batched with broadcasting.
 */
#include "backend/cpu/onednn/onednn_internal.h"
#include "util/util.h"

/* MatMul: constant 2-D B -> one 2-D GEMM over the flattened rows of A, with
 * folded per-column affine ops as bias; otherwise batched with broadcasting. */
int dn_build_matmul(dn_cc *c, int ni)
{
    rt_graph *g = c->g;
    const rt_node *n = &g->nodes[ni];
    int a = n->in[0], b = n->in[1], y = n->out[0];
    const rt_value *av = &g->values[a], *bv = &g->values[b], *yv = &g->values[y];
    if (!dn_is_f32(av) || !dn_is_f32(bv) || av->ndim < 2 || bv->ndim < 2 || yv->ndim > 4) return -1;
    if (av->data) return -1;
    int64_t K = av->dims[av->ndim - 1], N = bv->dims[bv->ndim - 1];
    if (bv->data && bv->ndim == 2) {
        int64_t M = rt_value_numel(av) / (K ? K : 1);
        int64_t ad[2] = {M, K}, bd[2] = {K, N}, yd[2] = {M, N}, nd1[2] = {1, N};
        dnnl_memory_desc_t amd, bmd_any, bmd_plain, ymd, biasmd;
        dn_md_plain(&amd, 2, ad);
        dn_md_any(&bmd_any, 2, bd);
        dn_md_plain(&bmd_plain, 2, bd);
        dn_md_plain(&ymd, 2, yd);
        dn_md_plain(&biasmd, 2, nd1);
        for (int attempt = 0; attempt < 3; attempt++) {
            dn_chain ch;
            if (dn_chain_init(&ch, (int)N, yv->ndim - 1)) return -1;
            dn_chain_attempt(c, ni, &ch, attempt);
            dnnl_memory_desc_t bin_md[24];
            dnnl_matmul_desc_t d;
            int made = dn_ok(dnnl_matmul_desc_init(&d, &amd, &bmd_any, &biasmd, &ymd));
            dnnl_primitive_desc_t pd =
                dn_pd_create_consuming(c, made, &d, sizeof d, dn_chain_attr(c, &ch, bin_md, &ymd));
            if (!pd) {
                dn_chain_clear(&ch);
                continue;
            }
            const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
            dn_key wk;
            dn_weights_key(c, &wk, "matmul-w", b, -1, &ch, wq);
            void *wr = NULL;
            float *bf = NULL, *wf = NULL;
            int got = dn_weights_get(c, &wk, (size_t)(K * N), (size_t)N, wq, &wf, &wr, &bf);
            if (!got) {
                const float *b0 = bv->data;
                for (int64_t k = 0; k < K; k++)
                    for (int64_t j = 0; j < N; j++) wf[k * N + j] = b0[k * N + j] * ch.scale[j];
                for (int64_t j = 0; j < N; j++) bf[j] = ch.shift[j];
                got = dn_weights_convert(c, &wk, &bmd_plain, wf, wq, &wr, &bf);
            }
            dn_key_free(&wk);
            if (got < 0) {
                return dn_chain_abandon(c, &ch, pd);
            }
            int as = dn_need_plain(c, a);
            int ws, bs, wb = dn_weights_slots(c, b, wq, wr, &biasmd, bf, &ws, &bs);
            dnnl_memory_desc_t yfull;
            dn_md_plain(&yfull, g->values[ch.end].ndim, g->values[ch.end].dims);
            int ys = dn_out_slot(c, ch.end, &yfull);
            if (as < 0 || wb || ys < 0) {
                return dn_chain_abandon(c, &ch, pd);
            }
            int args[DN_MAX_ARGS] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST};
            int sl[DN_MAX_ARGS] = {as, ws, bs, ys};
            const dnnl_memory_desc_t *mds[DN_MAX_ARGS] = {&amd, NULL, NULL, &ymd};
            int r = dn_add_chained_prim(c, &ch, pd, bin_md, args, sl, mds, 4, 1, ys);
            dn_chain_clear(&ch);
            return r;
        }
        return -1;
    }
    /* batched */
    int r = yv->ndim;
    int64_t ad[4], bd[4];
    for (int i = 0; i < r; i++) {
        ad[i] = i < r - av->ndim ? 1 : av->dims[i - (r - av->ndim)];
        bd[i] = i < r - bv->ndim ? 1 : bv->dims[i - (r - bv->ndim)];
    }
    dnnl_memory_desc_t amd, bmd, ymd;
    dn_md_plain(&amd, r, ad);
    dn_md_plain(&bmd, r, bd);
    dn_md_plain(&ymd, r, yv->dims);
    for (int attempt = 1; attempt < 3; attempt++) { /* no binary post-op on a batched MatMul */
        dn_chain ch;
        dn_chain_init(&ch, 0, 0);
        dn_chain_attempt(c, ni, &ch, attempt);
        dnnl_matmul_desc_t d;
        int made = dn_ok(dnnl_matmul_desc_init(&d, &amd, &bmd, NULL, &ymd));
        dnnl_primitive_desc_t pd = dn_pd_create_consuming(c, made, &d, sizeof d, dn_chain_attr(c, &ch, NULL, NULL));
        if (!pd) continue;
        int as = dn_need_plain(c, a), bs = dn_need_plain(c, b);
        int ys = dn_out_slot(c, ch.end, &ymd);
        if (as < 0 || bs < 0 || ys < 0) {
            dn_pd_release(c, pd);
            return -1;
        }
        int args[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, sl[3] = {as, bs, ys};
        const dnnl_memory_desc_t *mds[3] = {&amd, &bmd, &ymd};
        return dn_add_chained_prim(c, &ch, pd, NULL, args, sl, mds, 3, 0, ys);
    }
    return -1;
}
