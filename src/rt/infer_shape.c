/*
 * infer_shape.c - shape inference of the data-movement and shape operators
 * (Reshape, Transpose, Slice, Concat, Gather, Squeeze, Unsqueeze, Flatten,
 * Shape, Expand, Tile, Split, Pad, Resize) and of the generators (Constant,
 * ConstantOfShape, Range). Operators whose output shape depends on an
 * input's values need that input to be constant at inference time.
 */
#include <math.h>
#include <string.h>

#include "rt/infer_util.h"

static lector_status need_in(const rt_node *n, const rt_value *const *in, int k, lector_error *err)
{
    for (int i = 0; i < k; i++)
        if (i >= n->n_in || !in[i])
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: input %d is missing", n->name, i);
    return LECTOR_OK;
}

static int has_in(const rt_node *n, const rt_value *const *in, int i) { return i < n->n_in && in[i]; }

const lector_tensor *rt_opt_view(const rt_node *n, const rt_value *const *in, int i, lector_tensor *buf)
{
    if (!has_in(n, in, i)) return NULL;
    *buf = rt_value_tensor(in[i]);
    return buf;
}

static int64_t numel_dims(int r, const int64_t *d)
{
    int64_t p = 1;
    for (int i = 0; i < r; i++) p *= d[i];
    return p;
}

/* ---- Reshape ------------------------------------------------------------ */

lector_status rt_infer_Reshape(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = rt_need_const_ints(nd, in, 1, "shape", err))) return st;
    int64_t k = rt_value_numel(in[1]);
    if (k > LECTOR_MAX_DIMS)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: rank %lld > %d", nd->name, (long long)k,
                             LECTOR_MAX_DIMS);
    int allowzero = (int)rt_attr_int(nd, "allowzero", 0);
    int64_t d[LECTOR_MAX_DIMS], prod = 1;
    int neg = -1;
    for (int i = 0; i < k; i++) {
        d[i] = rt_i64_at(in[1]->dtype, in[1]->data, i);
        if (d[i] == 0 && !allowzero) {
            if (i >= in[0]->ndim)
                return lector__error(err, LECTOR_ERR_SHAPE, "node %s: 0 at axis %d beyond input rank", nd->name, i);
            d[i] = in[0]->dims[i];
        }
        if (d[i] == -1) {
            if (neg >= 0) return lector__error(err, LECTOR_ERR_SHAPE, "node %s: two -1 in shape", nd->name);
            neg = i;
        } else if (d[i] < 0) {
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: negative dimension", nd->name);
        } else if (__builtin_mul_overflow(prod, d[i], &prod) || prod > RT_MAX_NUMEL) {
            return lector__error(err, LECTOR_ERR_LIMIT, "node %s: shape too large", nd->name);
        }
    }
    int64_t total = rt_value_numel(in[0]);
    if (neg >= 0) {
        if (prod == 0 || total % prod)
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: cannot infer -1 dimension", nd->name);
        d[neg] = total / prod;
    } else if (prod != total) {
        char b1[128], b2[128];
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: cannot reshape %s to %s", nd->name,
                             rt_dims_str(in[0]->ndim, in[0]->dims, b1, sizeof b1),
                             rt_dims_str((int)k, d, b2, sizeof b2));
    }
    rt_set_out(out[0], in[0]->dtype, (int)k, d);
    return LECTOR_OK;
}

/* ---- Transpose ---------------------------------------------------------- */

lector_status rt_infer_Transpose(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int r = in[0]->ndim;
    const int64_t *perm;
    int np = rt_attr_ints(nd, "perm", &perm);
    int64_t d[LECTOR_MAX_DIMS];
    int seen[LECTOR_MAX_DIMS] = {0};
    if (np && np != r)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: perm of length %d for rank %d", nd->name, np, r);
    for (int i = 0; i < r; i++) {
        int p = np ? rt_norm_axis(perm[i], r) : r - 1 - i;
        if (p < 0 || seen[p]++) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad perm", nd->name);
        d[i] = in[0]->dims[p];
    }
    rt_set_out(out[0], in[0]->dtype, r, d);
    return LECTOR_OK;
}

/* ---- Slice -------------------------------------------------------------- */

lector_status rt_slice_params(const rt_node *n, int r, const int64_t *dims, const lector_tensor *starts,
                              const lector_tensor *ends, const lector_tensor *axes, const lector_tensor *steps,
                              int64_t *start, int64_t *step, int64_t *count, lector_error *err)
{
    for (int i = 0; i < r; i++) {
        start[i] = 0;
        step[i] = 1;
        count[i] = dims[i];
    }
    int64_t k = lector_tensor_numel(starts);
    if (lector_tensor_numel(ends) != k || (axes && lector_tensor_numel(axes) != k) ||
        (steps && lector_tensor_numel(steps) != k))
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: starts/ends/axes/steps of different lengths",
                             n->name);
    for (int64_t j = 0; j < k; j++) {
        int64_t a = axes ? rt_i64_at(axes->dtype, axes->data, j) : j;
        int ax = rt_norm_axis(a, r);
        if (ax < 0)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: axis %lld out of range", n->name,
                                 (long long)a);
        int64_t d = dims[ax];
        int64_t s = rt_i64_at(starts->dtype, starts->data, j);
        int64_t e = rt_i64_at(ends->dtype, ends->data, j);
        int64_t p = steps ? rt_i64_at(steps->dtype, steps->data, j) : 1;
        if (p == 0) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: step 0", n->name);
        if (s < 0) s += d;
        if (e < 0) e += d;
        int64_t c;
        if (p > 0) {
            s = LECTOR_MIN(LECTOR_MAX(s, 0), d);
            e = LECTOR_MIN(LECTOR_MAX(e, 0), d);
            c = e > s ? (e - s - 1) / p + 1 : 0;
        } else {
            s = LECTOR_MIN(LECTOR_MAX(s, -1), d - 1);
            e = LECTOR_MIN(LECTOR_MAX(e, -1), d - 1);
            if (p == INT64_MIN) p = -INT64_MAX;
            c = s > e ? (s - e - 1) / (-p) + 1 : 0;
        }
        start[ax] = c ? s : 0;
        step[ax] = p;
        count[ax] = c;
    }
    return LECTOR_OK;
}

lector_status rt_infer_Slice(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 3, err);
    if (st || (st = rt_need_const_ints(nd, in, 1, "starts", err)) || (st = rt_need_const_ints(nd, in, 2, "ends", err)))
        return st;
    if (has_in(nd, in, 3) && (st = rt_need_const_ints(nd, in, 3, "axes", err))) return st;
    if (has_in(nd, in, 4) && (st = rt_need_const_ints(nd, in, 4, "steps", err))) return st;
    lector_tensor ts, te, ta, tp;
    int64_t s[LECTOR_MAX_DIMS], p[LECTOR_MAX_DIMS], c[LECTOR_MAX_DIMS];
    st = rt_slice_params(nd, in[0]->ndim, in[0]->dims, rt_opt_view(nd, in, 1, &ts), rt_opt_view(nd, in, 2, &te),
                         rt_opt_view(nd, in, 3, &ta), rt_opt_view(nd, in, 4, &tp), s, p, c, err);
    if (st) return st;
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, c);
    return LECTOR_OK;
}

/* ---- Concat ------------------------------------------------------------- */

lector_status rt_infer_Concat(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    if (nd->n_in < 1) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: no inputs", nd->name);
    lector_status st = need_in(nd, in, nd->n_in, err);
    if (st) return st;
    int r = in[0]->ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", 0), r);
    if (axis < 0) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    int64_t d[LECTOR_MAX_DIMS];
    memcpy(d, in[0]->dims, sizeof d);
    d[axis] = 0;
    for (int i = 0; i < nd->n_in; i++) {
        if (in[i]->ndim != r || in[i]->dtype != in[0]->dtype)
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: input %d has another rank or type", nd->name, i);
        for (int a = 0; a < r; a++)
            if (a != axis && in[i]->dims[a] != in[0]->dims[a])
                return lector__error(err, LECTOR_ERR_SHAPE, "node %s: input %d differs on axis %d", nd->name, i, a);
        d[axis] += in[i]->dims[axis];
    }
    rt_set_out(out[0], in[0]->dtype, r, d);
    return LECTOR_OK;
}

/* ---- Gather ------------------------------------------------------------- */

lector_status rt_infer_Gather(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st) return st;
    int r = in[0]->ndim, q = in[1]->ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", 0), r);
    if (axis < 0 || r + q - 1 > LECTOR_MAX_DIMS)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis or rank", nd->name);
    if (in[1]->dtype != LECTOR_DTYPE_INT64 && in[1]->dtype != LECTOR_DTYPE_INT32)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: indices must be int32/int64", nd->name);
    int64_t d[LECTOR_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < axis; i++) d[k++] = in[0]->dims[i];
    for (int i = 0; i < q; i++) d[k++] = in[1]->dims[i];
    for (int i = axis + 1; i < r; i++) d[k++] = in[0]->dims[i];
    rt_set_out(out[0], in[0]->dtype, k, d);
    return LECTOR_OK;
}

/* ---- Squeeze / Unsqueeze / Flatten -------------------------------------- */

lector_status rt_infer_Squeeze(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int r = in[0]->ndim;
    int mask[LECTOR_MAX_DIMS] = {0};
    if (has_in(nd, in, 1)) {
        if ((st = rt_need_const_ints(nd, in, 1, "axes", err))) return st;
        for (int64_t i = 0; i < rt_value_numel(in[1]); i++) {
            int a = rt_norm_axis(rt_i64_at(in[1]->dtype, in[1]->data, i), r);
            if (a < 0 || in[0]->dims[a] != 1)
                return lector__error(err, LECTOR_ERR_SHAPE, "node %s: cannot squeeze axis %lld", nd->name,
                                     (long long)rt_i64_at(in[1]->dtype, in[1]->data, i));
            mask[a] = 1;
        }
    } else {
        for (int i = 0; i < r; i++) mask[i] = in[0]->dims[i] == 1;
    }
    int64_t d[LECTOR_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < r; i++)
        if (!mask[i]) d[k++] = in[0]->dims[i];
    rt_set_out(out[0], in[0]->dtype, k, d);
    return LECTOR_OK;
}

lector_status rt_infer_Unsqueeze(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = rt_need_const_ints(nd, in, 1, "axes", err))) return st;
    int64_t na = rt_value_numel(in[1]);
    int r = in[0]->ndim + (int)na;
    if (r > LECTOR_MAX_DIMS)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: rank %d > %d", nd->name, r, LECTOR_MAX_DIMS);
    int mask[LECTOR_MAX_DIMS] = {0};
    for (int64_t i = 0; i < na; i++) {
        int a = rt_norm_axis(rt_i64_at(in[1]->dtype, in[1]->data, i), r);
        if (a < 0 || mask[a]++)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad or repeated axis", nd->name);
    }
    int64_t d[LECTOR_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < r; i++) d[i] = mask[i] ? 1 : in[0]->dims[k++];
    rt_set_out(out[0], in[0]->dtype, r, d);
    return LECTOR_OK;
}

lector_status rt_infer_Flatten(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int r = in[0]->ndim;
    int64_t axis = rt_attr_int(nd, "axis", 1);
    if (axis < 0) axis += r;
    if (axis < 0 || axis > r) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    int64_t d[2] = {numel_dims((int)axis, in[0]->dims), numel_dims(r - (int)axis, in[0]->dims + axis)};
    rt_set_out(out[0], in[0]->dtype, 2, d);
    return LECTOR_OK;
}

/* ---- Shape -------------------------------------------------------------- */

lector_status rt_infer_Shape(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int64_t r = in[0]->ndim;
    int64_t s = rt_attr_int(nd, "start", 0), e = rt_attr_int(nd, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = LECTOR_MIN(LECTOR_MAX(s, 0), r);
    e = LECTOR_MIN(LECTOR_MAX(e, 0), r);
    int64_t d[1] = {e > s ? e - s : 0};
    rt_set_out(out[0], LECTOR_DTYPE_INT64, 1, d);
    return LECTOR_OK;
}

/* ---- Expand / Tile ------------------------------------------------------ */

lector_status rt_infer_Expand(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = rt_need_const_ints(nd, in, 1, "shape", err))) return st;
    int64_t k = rt_value_numel(in[1]);
    if (k > LECTOR_MAX_DIMS) return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: rank too large", nd->name);
    int64_t sd[LECTOR_MAX_DIMS];
    for (int i = 0; i < k; i++) sd[i] = rt_i64_at(in[1]->dtype, in[1]->data, i);
    int nds[2] = {in[0]->ndim, (int)k};
    const int64_t *dd[2] = {in[0]->dims, sd};
    int64_t od[LECTOR_MAX_DIMS];
    int on;
    if (rt_broadcast_dims(2, nds, dd, &on, od) != 0)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: shape does not broadcast", nd->name);
    if ((st = rt_check_dims(nd, on, od, err))) return st;
    rt_set_out(out[0], in[0]->dtype, on, od);
    return LECTOR_OK;
}

lector_status rt_infer_Tile(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = rt_need_const_ints(nd, in, 1, "repeats", err))) return st;
    int r = in[0]->ndim;
    if (rt_value_numel(in[1]) != r)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: repeats length != rank", nd->name);
    int64_t d[LECTOR_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int64_t rep = rt_i64_at(in[1]->dtype, in[1]->data, i);
        if (rep < 0 || rep > RT_MAX_NUMEL)
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: bad repeat %lld", nd->name, (long long)rep);
        d[i] = in[0]->dims[i] * rep;
    }
    if ((st = rt_check_dims(nd, r, d, err))) return st;
    rt_set_out(out[0], in[0]->dtype, r, d);
    return LECTOR_OK;
}

/* ---- Split -------------------------------------------------------------- */

lector_status rt_split_sizes(const rt_node *n, int64_t dim, const lector_tensor *split, int n_out, int64_t *sizes,
                             lector_error *err)
{
    if (split && lector_tensor_numel(split) > 0) {
        if (lector_tensor_numel(split) != n_out)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: split has %lld entries for %d outputs",
                                 n->name, (long long)lector_tensor_numel(split), n_out);
        int64_t sum = 0;
        for (int i = 0; i < n_out; i++) {
            sizes[i] = rt_i64_at(split->dtype, split->data, i);
            if (sizes[i] < 0) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: negative split", n->name);
            sum += sizes[i];
        }
        if (sum != dim)
            return lector__error(err, LECTOR_ERR_SHAPE, "node %s: split sums to %lld, axis is %lld", n->name,
                                 (long long)sum, (long long)dim);
        return LECTOR_OK;
    }
    int64_t num = rt_attr_int(n, "num_outputs", n_out);
    if (num != n_out || n_out < 1)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: num_outputs != outputs", n->name);
    int64_t chunk = (dim + n_out - 1) / n_out;
    if (!rt_attr_find(n, "num_outputs") && dim % n_out)
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: axis %lld not divisible by %d", n->name, (long long)dim,
                             n_out);
    int64_t left = dim;
    for (int i = 0; i < n_out; i++) {
        sizes[i] = LECTOR_MIN(chunk, left);
        left -= sizes[i];
    }
    return LECTOR_OK;
}

lector_status rt_infer_Split(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int r = in[0]->ndim;
    int axis = rt_norm_axis(rt_attr_int(nd, "axis", 0), r);
    if (axis < 0) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis", nd->name);
    if (has_in(nd, in, 1) && (st = rt_need_const_ints(nd, in, 1, "split", err))) return st;
    int64_t *sizes = lector__malloc(sizeof *sizes * (size_t)(nd->n_out ? nd->n_out : 1));
    if (!sizes) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "node %s: out of memory", nd->name);
    lector_tensor ts;
    st = rt_split_sizes(nd, in[0]->dims[axis], rt_opt_view(nd, in, 1, &ts), nd->n_out, sizes, err);
    if (!st) {
        for (int i = 0; i < nd->n_out; i++) {
            if (!out[i]) continue;
            int64_t d[LECTOR_MAX_DIMS];
            memcpy(d, in[0]->dims, sizeof d);
            d[axis] = sizes[i];
            rt_set_out(out[i], in[0]->dtype, r, d);
        }
    }
    lector__free(sizes);
    return st;
}

/* ---- Pad ---------------------------------------------------------------- */

lector_status rt_pad_params(const rt_node *n, int r, const lector_tensor *pads, const lector_tensor *axes, int64_t *pb,
                            int64_t *pe, lector_error *err)
{
    for (int i = 0; i < r; i++) pb[i] = pe[i] = 0;
    int64_t na = axes ? lector_tensor_numel(axes) : r;
    if (lector_tensor_numel(pads) != 2 * na)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: %lld pads for %lld axes", n->name,
                             (long long)lector_tensor_numel(pads), (long long)na);
    for (int64_t j = 0; j < na; j++) {
        int64_t a = axes ? rt_i64_at(axes->dtype, axes->data, j) : j;
        int ax = rt_norm_axis(a, r);
        if (ax < 0)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axis %lld", n->name, (long long)a);
        pb[ax] = rt_i64_at(pads->dtype, pads->data, j);
        pe[ax] = rt_i64_at(pads->dtype, pads->data, na + j);
        if (pb[ax] < -RT_MAX_NUMEL || pb[ax] > RT_MAX_NUMEL || pe[ax] < -RT_MAX_NUMEL || pe[ax] > RT_MAX_NUMEL)
            return lector__error(err, LECTOR_ERR_LIMIT, "node %s: pad out of range", n->name);
    }
    return LECTOR_OK;
}

lector_status rt_infer_Pad(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = rt_need_const_ints(nd, in, 1, "pads", err))) return st;
    if (has_in(nd, in, 3) && (st = rt_need_const_ints(nd, in, 3, "axes", err))) return st;
    int r = in[0]->ndim;
    int64_t pb[LECTOR_MAX_DIMS], pe[LECTOR_MAX_DIMS], d[LECTOR_MAX_DIMS];
    lector_tensor tp, ta;
    st = rt_pad_params(nd, r, rt_opt_view(nd, in, 1, &tp), rt_opt_view(nd, in, 3, &ta), pb, pe, err);
    if (st) return st;
    for (int i = 0; i < r; i++) {
        d[i] = in[0]->dims[i] + pb[i] + pe[i];
        if (d[i] < 0) return lector__error(err, LECTOR_ERR_SHAPE, "node %s: negative size", nd->name);
    }
    if ((st = rt_check_dims(nd, r, d, err))) return st;
    rt_set_out(out[0], in[0]->dtype, r, d);
    return LECTOR_OK;
}

/* ---- Resize ------------------------------------------------------------- */

lector_status rt_resize_params(const rt_node *n, int r, const int64_t *dims, const lector_tensor *scales,
                               const lector_tensor *sizes, int64_t *odims, float *scale, lector_error *err)
{
    const int64_t *axv = NULL;
    int na = rt_attr_ints(n, "axes", &axv);
    int axes[LECTOR_MAX_DIMS];
    if (na == 0) {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    } else {
        if (na > r) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axes", n->name);
        for (int i = 0; i < na; i++)
            if ((axes[i] = rt_norm_axis(axv[i], r)) < 0)
                return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: bad axes", n->name);
    }
    for (int i = 0; i < r; i++) {
        odims[i] = dims[i];
        scale[i] = 1.f;
    }
    if (sizes && lector_tensor_numel(sizes) > 0) {
        if (lector_tensor_numel(sizes) != na)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: sizes of length %lld", n->name,
                                 (long long)lector_tensor_numel(sizes));
        const char *pol = rt_attr_string(n, "keep_aspect_ratio_policy", "stretch");
        if (!strcmp(pol, "stretch")) {
            for (int i = 0; i < na; i++) {
                int a = axes[i];
                odims[a] = rt_i64_at(sizes->dtype, sizes->data, i);
                scale[a] = dims[a] ? (float)odims[a] / (float)dims[a] : 1.f;
            }
        } else {
            int larger = !strcmp(pol, "not_larger");
            if (!larger && strcmp(pol, "not_smaller") != 0)
                return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: keep_aspect_ratio_policy '%s'", n->name,
                                     pol);
            float s = larger ? INFINITY : 0.f;
            for (int i = 0; i < na; i++) {
                float si = (float)rt_i64_at(sizes->dtype, sizes->data, i) / (float)dims[axes[i]];
                s = larger ? fminf(s, si) : fmaxf(s, si);
            }
            for (int i = 0; i < na; i++) {
                int a = axes[i];
                double o = roundf(s * (float)dims[a]);
                if (!(o >= 0 && o <= (double)RT_MAX_NUMEL))
                    return lector__error(err, LECTOR_ERR_LIMIT, "node %s: output size too large", n->name);
                odims[a] = (int64_t)o;
                scale[a] = s;
            }
        }
    } else if (scales && lector_tensor_numel(scales) > 0) {
        if (lector_tensor_numel(scales) != na || scales->dtype != LECTOR_DTYPE_FLOAT32)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: scales must be %d float32 values", n->name,
                                 na);
        for (int i = 0; i < na; i++) {
            int a = axes[i];
            float s = ((const float *)scales->data)[i];
            if (!(s > 0.f))
                return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: scale %g <= 0", n->name, (double)s);
            scale[a] = s;
            double o = floor((double)((float)dims[a] * s));
            if (!(o <= (double)RT_MAX_NUMEL))
                return lector__error(err, LECTOR_ERR_LIMIT, "node %s: output size too large", n->name);
            odims[a] = (int64_t)o;
        }
    } else {
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: neither scales nor sizes", n->name);
    }
    return LECTOR_OK;
}

lector_status rt_infer_Resize(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    if (in[0]->dtype != LECTOR_DTYPE_FLOAT32)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: %s input (float32 supported)", nd->name,
                             lector_dtype_name(in[0]->dtype));
    int has_sizes = has_in(nd, in, 3) && rt_value_numel(in[3]) > 0;
    int has_scales = has_in(nd, in, 2) && rt_value_numel(in[2]) > 0;
    if (has_sizes && (st = rt_need_const_ints(nd, in, 3, "sizes", err))) return st;
    if (!has_sizes && has_scales && !in[2]->data)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP,
                             "node %s: input 'scales' must be a constant (it determines a shape)", nd->name);
    lector_tensor tsc, tsz;
    int64_t od[LECTOR_MAX_DIMS];
    float sc[LECTOR_MAX_DIMS];
    st = rt_resize_params(nd, in[0]->ndim, in[0]->dims, has_scales ? rt_opt_view(nd, in, 2, &tsc) : NULL,
                          has_sizes ? rt_opt_view(nd, in, 3, &tsz) : NULL, od, sc, err);
    if (st || (st = rt_check_dims(nd, in[0]->ndim, od, err))) return st;
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, od);
    return LECTOR_OK;
}

/* ---- generators --------------------------------------------------------- */

lector_status rt_infer_Constant(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    const rt_attr *a;
    if ((a = rt_attr_find(nd, "value")) && a->type == RT_ATTR_TENSOR) {
        rt_set_out(out[0], a->t.dtype, a->t.ndim, a->t.dims);
    } else if ((a = rt_attr_find(nd, "value_float"))) {
        rt_set_out(out[0], LECTOR_DTYPE_FLOAT32, 0, NULL);
    } else if ((a = rt_attr_find(nd, "value_int"))) {
        rt_set_out(out[0], LECTOR_DTYPE_INT64, 0, NULL);
    } else if ((a = rt_attr_find(nd, "value_floats"))) {
        int64_t d[1] = {a->n_floats};
        rt_set_out(out[0], LECTOR_DTYPE_FLOAT32, 1, d);
    } else if ((a = rt_attr_find(nd, "value_ints"))) {
        int64_t d[1] = {a->n_ints};
        rt_set_out(out[0], LECTOR_DTYPE_INT64, 1, d);
    } else {
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: Constant without a supported value attribute",
                             nd->name);
    }
    if (!lector_dtype_size(out[0]->dtype))
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: constant of unsupported type", nd->name);
    return LECTOR_OK;
}

lector_status rt_infer_ConstantOfShape(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                                       lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st || (st = rt_need_const_ints(nd, in, 0, "input", err))) return st;
    int64_t k = rt_value_numel(in[0]);
    if (k > LECTOR_MAX_DIMS) return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: rank too large", nd->name);
    int64_t d[LECTOR_MAX_DIMS];
    for (int i = 0; i < k; i++) {
        d[i] = rt_i64_at(in[0]->dtype, in[0]->data, i);
        if (d[i] < 0) return lector__error(err, LECTOR_ERR_SHAPE, "node %s: negative dim", nd->name);
    }
    if ((st = rt_check_dims(nd, (int)k, d, err))) return st;
    const rt_attr *a = rt_attr_find(nd, "value");
    lector_dtype dt = LECTOR_DTYPE_FLOAT32;
    if (a && a->type == RT_ATTR_TENSOR) {
        dt = a->t.dtype;
        if (!lector_dtype_size(dt) || lector_tensor_numel(&a->t) != 1)
            return lector__error(err, LECTOR_ERR_DTYPE, "node %s: bad value attribute", nd->name);
    }
    rt_set_out(out[0], dt, (int)k, d);
    return LECTOR_OK;
}

lector_status rt_infer_Range(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 3, err);
    if (st) return st;
    for (int i = 0; i < 3; i++) {
        if (!in[i]->data)
            return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: Range input %d must be a constant", nd->name,
                                 i);
        if (in[i]->dtype != in[0]->dtype || rt_value_numel(in[i]) != 1)
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: Range inputs", nd->name);
    }
    lector_dtype dt = in[0]->dtype;
    int64_t n;
    if (dt == LECTOR_DTYPE_FLOAT32 || dt == LECTOR_DTYPE_FLOAT64) {
        double s = rt_f64_at(dt, in[0]->data, 0), l = rt_f64_at(dt, in[1]->data, 0), d = rt_f64_at(dt, in[2]->data, 0);
        if (d == 0) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: delta 0", nd->name);
        double c = ceil((l - s) / d);
        if (!(c <= (double)RT_MAX_NUMEL))
            return lector__error(err, LECTOR_ERR_LIMIT, "node %s: Range too long", nd->name);
        n = c > 0 ? (int64_t)c : 0;
    } else if (dt == LECTOR_DTYPE_INT64 || dt == LECTOR_DTYPE_INT32) {
        int64_t s = rt_i64_at(dt, in[0]->data, 0), l = rt_i64_at(dt, in[1]->data, 0), d = rt_i64_at(dt, in[2]->data, 0);
        if (d == 0) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: delta 0", nd->name);
        double c = ceil(((double)l - (double)s) / (double)d);
        if (!(c <= (double)RT_MAX_NUMEL))
            return lector__error(err, LECTOR_ERR_LIMIT, "node %s: Range too long", nd->name);
        n = c > 0 ? (int64_t)c : 0;
    } else {
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: Range of %s", nd->name, lector_dtype_name(dt));
    }
    int64_t d1[1] = {n};
    rt_set_out(out[0], dt, 1, d1);
    return LECTOR_OK;
}
