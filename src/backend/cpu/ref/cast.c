/*
 * cast.c - Cast between float32, float64, float16, int64, int32, int8,
 * uint8 and bool. Float to integer truncates toward zero (saturating, NaN ->
 * 0, so that no conversion is undefined behaviour).
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"
#include "util/half.h"

static double load(lector_dtype dt, const void *p, int64_t i)
{
    if (dt == LECTOR_DTYPE_FLOAT16) return lector__half_to_float(((const uint16_t *)p)[i]);
    return rt_f64_at(dt, p, i);
}

static int64_t sat(double v, double lo, double hi)
{
    if (v != v) return 0;
    if (v < lo) return (int64_t)lo;
    if (v > hi) return (int64_t)hi;
    return (int64_t)v;
}

static int supported(lector_dtype dt)
{
    switch (dt) {
    case LECTOR_DTYPE_FLOAT32:
    case LECTOR_DTYPE_FLOAT64:
    case LECTOR_DTYPE_FLOAT16:
    case LECTOR_DTYPE_INT64:
    case LECTOR_DTYPE_INT32:
    case LECTOR_DTYPE_INT8:
    case LECTOR_DTYPE_UINT8:
    case LECTOR_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

lector_status rt_ref_Cast(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    lector_dtype from = in[0].dtype, to = out->dtype;
    if (!supported(from)) return rt_ref_bad_dtype(nd, ctx, from);
    if (!supported(to)) return rt_ref_bad_dtype(nd, ctx, to);
    int64_t n = lector_tensor_numel(&in[0]);
    if (from == to) {
        if (n) memcpy(out->data, in[0].data, (size_t)n * lector_dtype_size(to));
        return LECTOR_OK;
    }
    const void *X = in[0].data;
    int int_src = from == LECTOR_DTYPE_INT64 || from == LECTOR_DTYPE_INT32 || from == LECTOR_DTYPE_INT8 ||
                  from == LECTOR_DTYPE_UINT8 || from == LECTOR_DTYPE_BOOL;
    for (int64_t i = 0; i < n; i++) {
        if (int_src && to != LECTOR_DTYPE_FLOAT32 && to != LECTOR_DTYPE_FLOAT64 && to != LECTOR_DTYPE_FLOAT16 &&
            to != LECTOR_DTYPE_BOOL) {
            /* integer to integer: exact, wrapping like a C cast (ONNX Runtime) */
            uint64_t u = (uint64_t)rt_i64_at(from, X, i);
            switch (to) {
            case LECTOR_DTYPE_INT64: ((int64_t *)out->data)[i] = (int64_t)u; break;
            case LECTOR_DTYPE_INT32: ((int32_t *)out->data)[i] = (int32_t)(uint32_t)u; break;
            case LECTOR_DTYPE_INT8: ((int8_t *)out->data)[i] = (int8_t)(uint8_t)u; break;
            default: ((uint8_t *)out->data)[i] = (uint8_t)u; break;
            }
            continue;
        }
        double v = int_src ? (double)rt_i64_at(from, X, i) : load(from, X, i);
        switch (to) {
        case LECTOR_DTYPE_FLOAT32: ((float *)out->data)[i] = (float)v; break;
        case LECTOR_DTYPE_FLOAT64: ((double *)out->data)[i] = v; break;
        case LECTOR_DTYPE_FLOAT16: ((uint16_t *)out->data)[i] = lector__float_to_half((float)v); break;
        case LECTOR_DTYPE_INT64:
            ((int64_t *)out->data)[i] = sat(v, -9223372036854775808.0, 9223372036854774784.0);
            break;
        case LECTOR_DTYPE_INT32: ((int32_t *)out->data)[i] = (int32_t)sat(v, INT32_MIN, INT32_MAX); break;
        case LECTOR_DTYPE_INT8: ((int8_t *)out->data)[i] = (int8_t)sat(v, INT8_MIN, INT8_MAX); break;
        case LECTOR_DTYPE_UINT8: ((uint8_t *)out->data)[i] = (uint8_t)sat(v, 0, UINT8_MAX); break;
        case LECTOR_DTYPE_BOOL: ((uint8_t *)out->data)[i] = v != 0.0; break;
        default: break;
        }
    }
    return LECTOR_OK;
}
