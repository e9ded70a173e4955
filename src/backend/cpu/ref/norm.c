/*
 * norm.c - BatchNormalization (inference mode), LayerNormalization, Softmax.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

lector_status rt_ref_BatchNormalization(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                        const rt_kernel_ctx *ctx)
{
    for (int i = 0; i < 5; i++)
        if (in[i].dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, in[i].dtype);
    float eps = rt_attr_float(nd, "epsilon", 1e-5f);
    int64_t N = in[0].dims[0], C = in[0].dims[1];
    int64_t sp = 1;
    for (int i = 2; i < in[0].ndim; i++) sp *= in[0].dims[i];
    const float *x = in[0].data, *sc = in[1].data, *b = in[2].data, *mean = in[3].data, *var = in[4].data;
    float *y = out->data;
#pragma omp parallel for num_threads(ctx->threads) if (N * C * sp > 65536)
    for (int64_t p = 0; p < N * C; p++) {
        int64_t c = p % C;
        float a = sc[c] / sqrtf(var[c] + eps), bb = b[c] - mean[c] * a;
        const float *xp = x + p * sp;
        float *yp = y + p * sp;
        for (int64_t i = 0; i < sp; i++) yp[i] = xp[i] * a + bb;
        rt_apply_act(yp, sp, nd->act, nd->act_alpha, nd->act_beta);
    }
    for (int k = 1; k < nd->n_out && k < 5; k++) /* optional outputs: running stats */
        if (out[k].data) memcpy(out[k].data, k % 2 ? mean : var, sizeof(float) * (size_t)C);
    return LECTOR_OK;
}

lector_status rt_ref_LayerNormalization(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                        const rt_kernel_ctx *ctx)
{
    const lector_tensor *xt = &in[0], *st = &in[1];
    const lector_tensor *bt = nd->n_in > 2 && in[2].data ? &in[2] : NULL;
    if (xt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, xt->dtype);
    if (st->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, st->dtype);
    if (bt && bt->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, bt->dtype);
    int r = xt->ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", -1), r);
    if (axis < 0) return lector__error(ctx->err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    float eps = rt_attr_float(nd, "epsilon", 1e-5f);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= xt->dims[i];
    for (int i = axis; i < r; i++) inner *= xt->dims[i];
    /* scale / bias broadcast to the normalised shape (usually equal to it) */
    int64_t ns = lector_tensor_numel(st), nb = bt ? lector_tensor_numel(bt) : 0;
    if ((ns != inner && ns != 1) || (bt && nb != inner && nb != 1))
        return lector__error(ctx->err, LECTOR_ERR_SHAPE, "node %s: Scale/B do not match the normalised shape",
                             nd->name);
    const float *x = xt->data, *s = st->data, *b = bt ? bt->data : NULL;
    float *y = out[0].data;
    float *mo = nd->n_out > 1 ? out[1].data : NULL, *io = nd->n_out > 2 ? out[2].data : NULL;
#pragma omp parallel for num_threads(ctx->threads) if (outer * inner > 65536)
    for (int64_t o = 0; o < outer; o++) {
        const float *xp = x + o * inner;
        float *yp = y + o * inner;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < inner; i++) sum += xp[i];
        double mean = sum / (double)inner;
        for (int64_t i = 0; i < inner; i++) {
            double d = xp[i] - mean;
            sq += d * d;
        }
        double var = sq / (double)inner;
        float inv = (float)(1.0 / sqrt(var + (double)eps)), m = (float)mean;
        for (int64_t i = 0; i < inner; i++)
            yp[i] = (xp[i] - m) * inv * s[ns == 1 ? 0 : i] + (b ? b[nb == 1 ? 0 : i] : 0.f);
        if (mo) mo[o] = m;
        if (io) io[o] = inv;
    }
    return LECTOR_OK;
}

lector_status rt_ref_Softmax(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    if (in[0].dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int r = in[0].ndim;
    int old = rt_node_opset(nd) < 13;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", old ? 1 : -1), r);
    if (axis < 0) return lector__error(ctx->err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    int64_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= in[0].dims[i];
    if (old) {
        for (int i = axis; i < r; i++) len *= in[0].dims[i];
    } else {
        len = in[0].dims[axis];
        for (int i = axis + 1; i < r; i++) inner *= in[0].dims[i];
    }
    const float *x = in[0].data;
    float *y = out->data;
    if (len == 0) return LECTOR_OK;
#pragma omp parallel for num_threads(ctx->threads) if (outer * len * inner > 65536)
    for (int64_t t = 0; t < outer * inner; t++) {
        int64_t o = t / inner, i = t % inner;
        const float *xp = x + o * len * inner + i;
        float *yp = y + o * len * inner + i;
        float mx = -INFINITY;
        for (int64_t k = 0; k < len; k++) mx = xp[k * inner] > mx ? xp[k * inner] : mx;
        float sum = 0.f;
        for (int64_t k = 0; k < len; k++) {
            float e = expf(xp[k * inner] - mx);
            yp[k * inner] = e;
            sum += e;
        }
        float is = 1.f / sum;
        for (int64_t k = 0; k < len; k++) yp[k * inner] *= is;
    }
    return LECTOR_OK;
}
