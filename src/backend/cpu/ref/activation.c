/*
 * activation.c - unary elementwise operators: maths (Abs, Ceil, Erf, Exp,
 * Floor, Log, Neg, Reciprocal, Sqrt, Tanh), activations (Relu, Sigmoid,
 * HardSigmoid, HardSwish, LeakyRelu, Clip) and the copies (Identity,
 * Dropout in inference mode).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

#define PAR_MIN 65536

/* No parallel region unless it pays (see elementwise.c's BIN_LOOP). */
#define UNARY_F32(name, EXPR)                                                                     \
    lector_status rt_ref_##name(const rt_node *nd, const lector_tensor *in, lector_tensor *out,   \
                                const rt_kernel_ctx *ctx)                                         \
    {                                                                                             \
        if (in[0].dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);   \
        const float *X = in[0].data;                                                              \
        float *Y = out->data;                                                                     \
        int64_t n = lector_tensor_numel(&in[0]);                                                  \
        if (ctx->threads > 1 && n > PAR_MIN) {                                                    \
            _Pragma("omp parallel for num_threads(ctx->threads)") for (int64_t i = 0; i < n; i++) \
            {                                                                                     \
                float x = X[i];                                                                   \
                Y[i] = (EXPR);                                                                    \
            }                                                                                     \
        } else {                                                                                  \
            for (int64_t i = 0; i < n; i++) {                                                     \
                float x = X[i];                                                                   \
                Y[i] = (EXPR);                                                                    \
            }                                                                                     \
        }                                                                                         \
        return LECTOR_OK;                                                                         \
    }

UNARY_F32(Ceil, ceilf(x))
UNARY_F32(Floor, floorf(x))
UNARY_F32(Erf, erff(x))
UNARY_F32(Exp, expf(x))
UNARY_F32(Log, logf(x))
UNARY_F32(Reciprocal, 1.f / x)
UNARY_F32(Sqrt, sqrtf(x))
UNARY_F32(Tanh, tanhf(x))
UNARY_F32(Sigmoid, x >= 0.f ? 1.f / (1.f + expf(-x)) : expf(x) / (1.f + expf(x)))

lector_status rt_ref_HardSigmoid(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                 const rt_kernel_ctx *ctx)
{
    if (in[0].dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    float alpha = rt_attr_float(nd, "alpha", 0.2f), beta = rt_attr_float(nd, "beta", 0.5f);
    int64_t n = lector_tensor_numel(&in[0]);
    memcpy(out->data, in[0].data, sizeof(float) * (size_t)n);
    rt_apply_act(out->data, n, RT_ACT_HARDSIGMOID, alpha, beta);
    return LECTOR_OK;
}

lector_status rt_ref_HardSwish(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    if (in[0].dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int64_t n = lector_tensor_numel(&in[0]);
    memcpy(out->data, in[0].data, sizeof(float) * (size_t)n);
    rt_apply_act(out->data, n, RT_ACT_HARDSWISH, 1.f / 6.f, 0.5f);
    return LECTOR_OK;
}

lector_status rt_ref_LeakyRelu(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    if (in[0].dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    float alpha = rt_attr_float(nd, "alpha", 0.01f);
    const float *X = in[0].data;
    float *Y = out->data;
    int64_t n = lector_tensor_numel(&in[0]);
    for (int64_t i = 0; i < n; i++) Y[i] = X[i] < 0.f ? alpha * X[i] : X[i];
    return LECTOR_OK;
}

/* Unary ops defined for float and signed integers. */
#define SIGNED_LOOP(T, EXPR)              \
    do {                                  \
        const T *X = in[0].data;          \
        T *Y = out->data;                 \
        for (int64_t i = 0; i < n; i++) { \
            T x = X[i];                   \
            Y[i] = (T)(EXPR);             \
        }                                 \
    } while (0)

#define SIGNED_UNARY(name, EXPR)                                                                \
    lector_status rt_ref_##name(const rt_node *nd, const lector_tensor *in, lector_tensor *out, \
                                const rt_kernel_ctx *ctx)                                       \
    {                                                                                           \
        int64_t n = lector_tensor_numel(&in[0]);                                                \
        switch (in[0].dtype) {                                                                  \
        case LECTOR_DTYPE_FLOAT32: SIGNED_LOOP(float, EXPR); break;                             \
        case LECTOR_DTYPE_FLOAT64: SIGNED_LOOP(double, EXPR); break;                            \
        case LECTOR_DTYPE_INT64: SIGNED_LOOP(int64_t, EXPR); break;                             \
        case LECTOR_DTYPE_INT32: SIGNED_LOOP(int32_t, EXPR); break;                             \
        case LECTOR_DTYPE_INT8: SIGNED_LOOP(int8_t, EXPR); break;                               \
        default: return rt_ref_bad_dtype(nd, ctx, in[0].dtype);                                 \
        }                                                                                       \
        return LECTOR_OK;                                                                       \
    }

SIGNED_UNARY(Abs, x < 0 ? -x : x)
SIGNED_UNARY(Neg, -x)

lector_status rt_ref_Relu(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    int64_t n = lector_tensor_numel(&in[0]);
    switch (in[0].dtype) {
    case LECTOR_DTYPE_FLOAT32: {
        const float *X = in[0].data;
        float *Y = out->data;
        if (ctx->threads > 1 && n > PAR_MIN) {
#pragma omp parallel for num_threads(ctx->threads)
            for (int64_t i = 0; i < n; i++) Y[i] = X[i] > 0.f ? X[i] : 0.f;
        } else {
            for (int64_t i = 0; i < n; i++) Y[i] = X[i] > 0.f ? X[i] : 0.f;
        }
        break;
    }
    case LECTOR_DTYPE_INT64: SIGNED_LOOP(int64_t, x > 0 ? x : 0); break;
    case LECTOR_DTYPE_INT32: SIGNED_LOOP(int32_t, x > 0 ? x : 0); break;
    case LECTOR_DTYPE_INT8: SIGNED_LOOP(int8_t, x > 0 ? x : 0); break;
    default: return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    }
    return LECTOR_OK;
}

/* ---- Clip --------------------------------------------------------------- */

#define CLIP_LOOP(T, LO, HI)                                                     \
    do {                                                                         \
        const T *X = in[0].data;                                                 \
        T *Y = out->data;                                                        \
        T lo = (nd->n_in > 1 && in[1].data) ? ((const T *)in[1].data)[0] : (LO); \
        T hi = (nd->n_in > 2 && in[2].data) ? ((const T *)in[2].data)[0] : (HI); \
        for (int64_t i = 0; i < n; i++) {                                        \
            T v = X[i] < lo ? lo : X[i];                                         \
            Y[i] = v > hi ? hi : v;                                              \
        }                                                                        \
    } while (0)

lector_status rt_ref_Clip(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    int64_t n = lector_tensor_numel(&in[0]);
    for (int k = 1; k < 3 && k < nd->n_in; k++)
        if (in[k].data && in[k].dtype != in[0].dtype) return rt_ref_bad_dtype(nd, ctx, in[k].dtype);
    switch (in[0].dtype) {
    case LECTOR_DTYPE_FLOAT32: CLIP_LOOP(float, -INFINITY, INFINITY); break;
    case LECTOR_DTYPE_FLOAT64: CLIP_LOOP(double, -INFINITY, INFINITY); break;
    case LECTOR_DTYPE_INT64: CLIP_LOOP(int64_t, INT64_MIN, INT64_MAX); break;
    case LECTOR_DTYPE_INT32: CLIP_LOOP(int32_t, INT32_MIN, INT32_MAX); break;
    case LECTOR_DTYPE_INT8: CLIP_LOOP(int8_t, INT8_MIN, INT8_MAX); break;
    case LECTOR_DTYPE_UINT8: CLIP_LOOP(uint8_t, 0, UINT8_MAX); break;
    default: return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    }
    return LECTOR_OK;
}

/* ---- copies ------------------------------------------------------------- */

lector_status rt_ref_Identity(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    size_t n = (size_t)lector_tensor_numel(&in[0]);
    if (n) memcpy(out->data, in[0].data, n * es);
    return LECTOR_OK;
}

lector_status rt_ref_Dropout(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    int training = nd->n_in > 2 && in[2].data && in[2].dtype == LECTOR_DTYPE_BOOL && *(const uint8_t *)in[2].data;
    int zero_ratio =
        nd->n_in > 1 && in[1].data && lector_tensor_numel(&in[1]) == 1 && rt_f64_at(in[1].dtype, in[1].data, 0) == 0.0;
    if (training && !zero_ratio) /* random masks: outside inference */
        return lector__error(ctx->err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: Dropout in training mode", nd->name);
    lector_status st = rt_ref_Identity(nd, in, out, ctx);
    if (st == LECTOR_OK && nd->n_out > 1 && out[1].data) memset(out[1].data, 1, (size_t)lector_tensor_numel(&out[1]));
    return st;
}
