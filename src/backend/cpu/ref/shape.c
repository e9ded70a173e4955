/*
 * shape.c - data movement: Reshape, Flatten, Squeeze, Unsqueeze (copies),
 * Transpose, Slice, Expand, Tile (strided copies), Concat, Split, Gather,
 * Pad, Shape. Every kernel is element-size generic where the op allows it.
 */
#include <string.h>

#include "backend/cpu/ref/ref.h"

#define SC_MAX (2 * LECTOR_MAX_DIMS)

/* dst (contiguous, shape dims[r]) = src at element strides st[r]. */
static void strided_copy(char *dst, const char *src, int r, const int64_t *dims0, const int64_t *st0, size_t es)
{
    int64_t dims[SC_MAX], st[SC_MAX];
    int m = 0;
    for (int a = 0; a < r; a++) {
        if (dims0[a] == 0) return;
        if (dims0[a] == 1) continue;
        if (m > 0 && st[m - 1] == st0[a] * dims0[a]) {
            dims[m - 1] *= dims0[a];
            st[m - 1] = st0[a];
            continue;
        }
        dims[m] = dims0[a];
        st[m++] = st0[a];
    }
    if (m == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t inner = dims[m - 1], is = st[m - 1], rows = 1;
    for (int a = 0; a < m - 1; a++) rows *= dims[a];
    int64_t idx[SC_MAX] = {0}, off = 0;
    for (int64_t row = 0; row < rows; row++) {
        char *d = dst + (size_t)(row * inner) * es;
        const char *s = src + (ptrdiff_t)off * (ptrdiff_t)es;
        if (is == 1) {
            memcpy(d, s, (size_t)inner * es);
        } else {
            switch (es) {
            case 4:
                for (int64_t i = 0; i < inner; i++) memcpy(d + i * 4, s + (ptrdiff_t)(i * is) * 4, 4);
                break;
            case 8:
                for (int64_t i = 0; i < inner; i++) memcpy(d + i * 8, s + (ptrdiff_t)(i * is) * 8, 8);
                break;
            default:
                for (int64_t i = 0; i < inner; i++)
                    memcpy(d + (size_t)i * es, s + (ptrdiff_t)(i * is) * (ptrdiff_t)es, es);
            }
        }
        for (int a = m - 2; a >= 0; a--) {
            off += st[a];
            if (++idx[a] < dims[a]) break;
            off -= st[a] * dims[a];
            idx[a] = 0;
        }
    }
}

static void contiguous_strides(int r, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int a = r - 1; a >= 0; a--) {
        st[a] = s;
        s *= dims[a];
    }
}

static lector_status copy_all(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    size_t n = (size_t)lector_tensor_numel(&in[0]);
    if (n) memcpy(out->data, in[0].data, n * es);
    return LECTOR_OK;
}

#define RT_COPY_OP(op)                                                                        \
    lector_status rt_ref_##op(const rt_node *nd, const lector_tensor *in, lector_tensor *out, \
                              const rt_kernel_ctx *ctx)                                       \
    {                                                                                         \
        return copy_all(nd, in, out, ctx);                                                    \
    }
RT_COPY_OP(Reshape)
RT_COPY_OP(Flatten)
RT_COPY_OP(Squeeze)
RT_COPY_OP(Unsqueeze)

lector_status rt_ref_Shape(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    int64_t r = in[0].ndim;
    int64_t s = rt_attr_int(nd, "start", 0), e = rt_attr_int(nd, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = LECTOR_MIN(LECTOR_MAX(s, 0), r);
    e = LECTOR_MIN(LECTOR_MAX(e, 0), r);
    int64_t *o = out->data;
    for (int64_t i = s; i < e; i++) o[i - s] = in[0].dims[i];
    return LECTOR_OK;
}

lector_status rt_ref_Transpose(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int r = in[0].ndim;
    const int64_t *perm;
    int np = rt_attr_ints(nd, "perm", &perm);
    int64_t ist[LECTOR_MAX_DIMS], st[LECTOR_MAX_DIMS];
    contiguous_strides(r, in[0].dims, ist);
    for (int i = 0; i < r; i++) {
        int p = np ? rt_norm_axis(perm[i], r) : r - 1 - i;
        st[i] = ist[p];
    }
    strided_copy(out->data, in[0].data, r, out->dims, st, es);
    return LECTOR_OK;
}

lector_status rt_ref_Slice(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int r = in[0].ndim;
    int64_t start[LECTOR_MAX_DIMS], step[LECTOR_MAX_DIMS], count[LECTOR_MAX_DIMS];
    lector_status st = rt_slice_params(nd, r, in[0].dims, &in[1], &in[2], nd->n_in > 3 && in[3].data ? &in[3] : NULL,
                                       nd->n_in > 4 && in[4].data ? &in[4] : NULL, start, step, count, ctx->err);
    if (st) return st;
    int64_t ist[LECTOR_MAX_DIMS], s[LECTOR_MAX_DIMS], off = 0;
    contiguous_strides(r, in[0].dims, ist);
    for (int a = 0; a < r; a++) {
        if (count[a] != out->dims[a])
            return lector__error(ctx->err, LECTOR_ERR_INTERNAL, "node %s: slice shape mismatch", nd->name);
        off += start[a] * ist[a];
        s[a] = step[a] * ist[a];
    }
    if (lector_tensor_numel(out) == 0) return LECTOR_OK;
    strided_copy(out->data, (const char *)in[0].data + (size_t)off * es, r, out->dims, s, es);
    return LECTOR_OK;
}

lector_status rt_ref_Expand(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int r = out->ndim, ri = in[0].ndim;
    int64_t ist[LECTOR_MAX_DIMS], st[LECTOR_MAX_DIMS];
    contiguous_strides(ri, in[0].dims, ist);
    for (int a = 0; a < r; a++) {
        int j = a - (r - ri);
        st[a] = (j < 0 || in[0].dims[j] == 1) ? 0 : ist[j];
    }
    strided_copy(out->data, in[0].data, r, out->dims, st, es);
    return LECTOR_OK;
}

lector_status rt_ref_Tile(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int r = in[0].ndim;
    int64_t ist[LECTOR_MAX_DIMS], d[SC_MAX], st[SC_MAX];
    contiguous_strides(r, in[0].dims, ist);
    for (int a = 0; a < r; a++) {
        d[2 * a] = in[0].dims[a] ? out->dims[a] / in[0].dims[a] : 0;
        st[2 * a] = 0;
        d[2 * a + 1] = in[0].dims[a];
        st[2 * a + 1] = ist[a];
    }
    if (lector_tensor_numel(out) == 0) return LECTOR_OK;
    strided_copy(out->data, in[0].data, 2 * r, d, st, es);
    return LECTOR_OK;
}

lector_status rt_ref_Concat(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(out->dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, out->dtype);
    int r = out->ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", 0), r);
    int64_t outer = 1, inner = 1;
    for (int a = 0; a < axis; a++) outer *= out->dims[a];
    for (int a = axis + 1; a < r; a++) inner *= out->dims[a];
    size_t orow = (size_t)(out->dims[axis] * inner) * es, pos = 0;
    for (int k = 0; k < nd->n_in; k++) {
        if (in[k].dtype != out->dtype) return rt_ref_bad_dtype(nd, ctx, in[k].dtype);
        size_t row = (size_t)(in[k].dims[axis] * inner) * es;
        if (row == 0) continue;
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)out->data + (size_t)o * orow + pos, (const char *)in[k].data + (size_t)o * row, row);
        pos += row;
    }
    return LECTOR_OK;
}

lector_status rt_ref_Split(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    int r = in[0].ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", 0), r);
    int64_t outer = 1, inner = 1;
    for (int a = 0; a < axis; a++) outer *= in[0].dims[a];
    for (int a = axis + 1; a < r; a++) inner *= in[0].dims[a];
    size_t irow = (size_t)(in[0].dims[axis] * inner) * es, pos = 0;
    for (int k = 0; k < nd->n_out; k++) {
        size_t row = (size_t)(out[k].dims[axis] * inner) * es;
        if (out[k].data && row)
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)out[k].data + (size_t)o * row, (const char *)in[0].data + (size_t)o * irow + pos, row);
        pos += row;
    }
    return LECTOR_OK;
}

lector_status rt_ref_Gather(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(in[0].dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    const lector_tensor *it = &in[1];
    if (it->dtype != LECTOR_DTYPE_INT64 && it->dtype != LECTOR_DTYPE_INT32) return rt_ref_bad_dtype(nd, ctx, it->dtype);
    int r = in[0].ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", 0), r);
    int64_t outer = 1, inner = 1, d = in[0].dims[axis], ni = lector_tensor_numel(it);
    for (int a = 0; a < axis; a++) outer *= in[0].dims[a];
    for (int a = axis + 1; a < r; a++) inner *= in[0].dims[a];
    size_t blk = (size_t)inner * es;
    for (int64_t j = 0; j < ni; j++) {
        int64_t k = rt_i64_at(it->dtype, it->data, j);
        if (k < -d || k >= d)
            return lector__error(ctx->err, LECTOR_ERR_INVALID_ARGUMENT,
                                 "node %s: index %lld out of range [-%lld, %lld)", nd->name, (long long)k, (long long)d,
                                 (long long)d);
    }
    if (!blk) return LECTOR_OK;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < ni; j++) {
            int64_t k = rt_i64_at(it->dtype, it->data, j);
            if (k < 0) k += d;
            memcpy((char *)out->data + (size_t)(o * ni + j) * blk, (const char *)in[0].data + (size_t)(o * d + k) * blk,
                   blk);
        }
    return LECTOR_OK;
}

/* ---- Pad ---------------------------------------------------------------- */

static void store_f64(lector_dtype dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case LECTOR_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case LECTOR_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
    case LECTOR_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case LECTOR_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case LECTOR_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case LECTOR_DTYPE_UINT8:
    case LECTOR_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: break;
    }
}

lector_status rt_ref_Pad(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    lector_dtype dt = in[0].dtype;
    size_t es = lector_dtype_size(dt);
    if (!es || dt == LECTOR_DTYPE_FLOAT16) return rt_ref_bad_dtype(nd, ctx, dt);
    int r = in[0].ndim;
    int64_t pb[LECTOR_MAX_DIMS], pe[LECTOR_MAX_DIMS];
    lector_status st = rt_pad_params(nd, r, &in[1], nd->n_in > 3 && in[3].data ? &in[3] : NULL, pb, pe, ctx->err);
    if (st) return st;
    const char *mode = rt_attr_string(nd, "mode", "constant");
    int m = !strcmp(mode, "constant")  ? 0
            : !strcmp(mode, "reflect") ? 1
            : !strcmp(mode, "edge")    ? 2
            : !strcmp(mode, "wrap")    ? 3
                                       : -1;
    if (m < 0) return lector__error(ctx->err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: Pad mode '%s'", nd->name, mode);
    char cval[8] = {0};
    if (nd->n_in > 2 && in[2].data && lector_tensor_numel(&in[2]) > 0)
        store_f64(dt, cval, 0, rt_f64_at(in[2].dtype, in[2].data, 0));
    int64_t n_out = lector_tensor_numel(out), ist[LECTOR_MAX_DIMS];
    contiguous_strides(r, in[0].dims, ist);
    for (int a = 0; a < r; a++)
        if (m != 0 && in[0].dims[a] == 0 && out->dims[a] > 0)
            return lector__error(ctx->err, LECTOR_ERR_SHAPE, "node %s: cannot %s-pad an empty axis", nd->name, mode);
    int64_t idx[LECTOR_MAX_DIMS] = {0};
    const char *src = in[0].data;
    char *dst = out->data;
    for (int64_t o = 0; o < n_out; o++) {
        int64_t off = 0;
        int outside = 0;
        for (int a = 0; a < r; a++) {
            int64_t d = in[0].dims[a], c = idx[a] - pb[a];
            if (c < 0 || c >= d) {
                if (m == 0) {
                    outside = 1;
                    break;
                } else if (m == 2) {
                    c = c < 0 ? 0 : d - 1;
                } else if (m == 3) {
                    c %= d;
                    if (c < 0) c += d;
                } else {
                    if (d == 1)
                        c = 0;
                    else {
                        int64_t p = 2 * (d - 1);
                        c %= p;
                        if (c < 0) c += p;
                        if (c >= d) c = p - c;
                    }
                }
            }
            off += c * ist[a];
        }
        memcpy(dst + (size_t)o * es, outside ? cval : src + (size_t)off * es, es);
        for (int a = r - 1; a >= 0; a--) {
            if (++idx[a] < out->dims[a]) break;
            idx[a] = 0;
        }
    }
    return LECTOR_OK;
}

/* ---- generators --------------------------------------------------------- */

lector_status rt_ref_Constant(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    const rt_attr *a;
    int64_t n = lector_tensor_numel(out);
    if ((a = rt_attr_find(nd, "value")) && a->type == RT_ATTR_TENSOR) {
        size_t es = lector_dtype_size(a->t.dtype);
        if (!es) return rt_ref_bad_dtype(nd, ctx, a->t.dtype);
        if (n) memcpy(out->data, a->t.data, (size_t)n * es);
    } else if ((a = rt_attr_find(nd, "value_float"))) {
        ((float *)out->data)[0] = a->f;
    } else if ((a = rt_attr_find(nd, "value_int"))) {
        ((int64_t *)out->data)[0] = a->i;
    } else if ((a = rt_attr_find(nd, "value_floats"))) {
        if (n) memcpy(out->data, a->floats, sizeof(float) * (size_t)n);
    } else if ((a = rt_attr_find(nd, "value_ints"))) {
        if (n) memcpy(out->data, a->ints, sizeof(int64_t) * (size_t)n);
    } else {
        return lector__error(ctx->err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: Constant without a supported value",
                             nd->name);
    }
    return LECTOR_OK;
}

lector_status rt_ref_ConstantOfShape(const rt_node *nd, const lector_tensor *in, lector_tensor *out,
                                     const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(out->dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, out->dtype);
    const rt_attr *a = rt_attr_find(nd, "value");
    char val[8] = {0};
    if (a && a->type == RT_ATTR_TENSOR && a->t.data) memcpy(val, a->t.data, es);
    int64_t n = lector_tensor_numel(out);
    for (int64_t i = 0; i < n; i++) memcpy((char *)out->data + (size_t)i * es, val, es);
    return LECTOR_OK;
}

lector_status rt_ref_Range(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    lector_dtype dt = in[0].dtype;
    int64_t n = lector_tensor_numel(out);
    switch (dt) {
    case LECTOR_DTYPE_FLOAT32: {
        float s = *(const float *)in[0].data, d = *(const float *)in[2].data;
        for (int64_t i = 0; i < n; i++) ((float *)out->data)[i] = s + (float)i * d;
        break;
    }
    case LECTOR_DTYPE_FLOAT64: {
        double s = *(const double *)in[0].data, d = *(const double *)in[2].data;
        for (int64_t i = 0; i < n; i++) ((double *)out->data)[i] = s + (double)i * d;
        break;
    }
    case LECTOR_DTYPE_INT64:
    case LECTOR_DTYPE_INT32: {
        int64_t s = rt_i64_at(dt, in[0].data, 0), d = rt_i64_at(dt, in[2].data, 0);
        for (int64_t i = 0; i < n; i++) {
            if (dt == LECTOR_DTYPE_INT64)
                ((int64_t *)out->data)[i] = s + i * d;
            else
                ((int32_t *)out->data)[i] = (int32_t)(s + i * d);
        }
        break;
    }
    default: return rt_ref_bad_dtype(nd, ctx, dt);
    }
    return LECTOR_OK;
}
