/*
 * infer_elementwise.c - shape inference of elementwise operators: unary
 * maths and activations (output = input), numpy-broadcasting binary and
 * variadic operators, Where, Equal, Cast, Identity, Dropout.
 */
#include "rt/infer_util.h"

static lector_status need_in(const rt_node *n, const rt_value *const *in, int k, lector_error *err)
{
    for (int i = 0; i < k; i++)
        if (i >= n->n_in || !in[i])
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: input %d is missing", n->name, i);
    return LECTOR_OK;
}

/* Element types the kernels implement, as bit masks of lector_dtype values. */
#define DT(t)     (1u << LECTOR_DTYPE_##t)
#define DT_F32    DT(FLOAT32)
#define DT_SIGNED (DT(FLOAT32) | DT(FLOAT64) | DT(INT64) | DT(INT32) | DT(INT8))
#define DT_NUM    (DT_SIGNED | DT(UINT8))
#define DT_ANY    (DT_NUM | DT(BOOL) | DT(FLOAT16))

static lector_status check_dtype(const rt_node *n, const rt_value *v, unsigned mask, lector_error *err)
{
    if (v->dtype > 0 && v->dtype < 32 && (mask & (1u << v->dtype))) return LECTOR_OK;
    return lector__error(err, LECTOR_ERR_DTYPE, "node %s: %s: element type %s is not supported", n->name,
                         rt_op_table[n->op].name, lector_dtype_name(v->dtype));
}

static lector_status same_as_input(const rt_node *n, const rt_value *const *in, rt_value *const *out, unsigned mask,
                                   lector_error *err)
{
    lector_status st = need_in(n, in, 1, err);
    if (st || (st = check_dtype(n, in[0], mask, err))) return st;
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, in[0]->dims);
    return LECTOR_OK;
}

/* Broadcasts the present inputs [first, first+count); output dtype `dt`
 * (UNDEFINED: that of input `first`). */
static lector_status bcast(const rt_node *n, const rt_value *const *in, rt_value *const *out, int first, int count,
                           lector_dtype dt, lector_error *err)
{
    int ndims[16];
    const int64_t *dims[16];
    int k = 0;
    if (count > 16) return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: more than 16 inputs", n->name);
    for (int i = first; i < first + count; i++) {
        if (i >= n->n_in || !in[i])
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: input %d is missing", n->name, i);
        ndims[k] = in[i]->ndim;
        dims[k++] = in[i]->dims;
    }
    int64_t od[LECTOR_MAX_DIMS];
    int ond;
    if (rt_broadcast_dims(k, ndims, dims, &ond, od) != 0) {
        char b1[128], b2[128];
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: shapes %s and %s do not broadcast", n->name,
                             rt_dims_str(in[first]->ndim, in[first]->dims, b1, sizeof b1),
                             rt_dims_str(in[first + count - 1]->ndim, in[first + count - 1]->dims, b2, sizeof b2));
    }
    rt_set_out(out[0], dt ? dt : in[first]->dtype, ond, od);
    return LECTOR_OK;
}

static lector_status binary_same_type(const rt_node *n, const rt_value *const *in, rt_value *const *out,
                                      lector_dtype odt, lector_error *err)
{
    lector_status st = need_in(n, in, 2, err);
    unsigned mask = odt == LECTOR_DTYPE_BOOL ? (DT_NUM | DT(BOOL)) : DT_NUM;
    if (st || (st = check_dtype(n, in[0], mask, err))) return st;
    if (in[0]->dtype != in[1]->dtype)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: inputs of different types %s and %s", n->name,
                             lector_dtype_name(in[0]->dtype), lector_dtype_name(in[1]->dtype));
    return bcast(n, in, out, 0, 2, odt, err);
}

#define RT_SAME_AS_INPUT(op, mask)                                                                                     \
    lector_status rt_infer_##op(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err) \
    {                                                                                                                  \
        return same_as_input(nd, in, out, mask, err);                                                                  \
    }
RT_SAME_AS_INPUT(Abs, DT_SIGNED)
RT_SAME_AS_INPUT(Ceil, DT_F32)
RT_SAME_AS_INPUT(Erf, DT_F32)
RT_SAME_AS_INPUT(Exp, DT_F32)
RT_SAME_AS_INPUT(Floor, DT_F32)
RT_SAME_AS_INPUT(HardSigmoid, DT_F32)
RT_SAME_AS_INPUT(HardSwish, DT_F32)
RT_SAME_AS_INPUT(Identity, DT_ANY)
RT_SAME_AS_INPUT(LeakyRelu, DT_F32)
RT_SAME_AS_INPUT(Log, DT_F32)
RT_SAME_AS_INPUT(Neg, DT_SIGNED)
RT_SAME_AS_INPUT(Reciprocal, DT_F32)
RT_SAME_AS_INPUT(Relu, DT_F32 | DT(INT64) | DT(INT32) | DT(INT8))
RT_SAME_AS_INPUT(Sigmoid, DT_F32)
RT_SAME_AS_INPUT(Sqrt, DT_F32)
RT_SAME_AS_INPUT(Tanh, DT_F32)
RT_SAME_AS_INPUT(Clip, DT_NUM)

#define RT_BINARY(op)                                                                                                  \
    lector_status rt_infer_##op(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err) \
    {                                                                                                                  \
        return binary_same_type(nd, in, out, LECTOR_DTYPE_UNDEFINED, err);                                             \
    }
RT_BINARY(Add)
RT_BINARY(Sub)
RT_BINARY(Mul)
RT_BINARY(Div)

lector_status rt_infer_Equal(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    return binary_same_type(nd, in, out, LECTOR_DTYPE_BOOL, err);
}

lector_status rt_infer_Pow(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    unsigned mask = DT(FLOAT32) | DT(FLOAT64) | DT(INT32) | DT(INT64);
    lector_status st = need_in(nd, in, 2, err);
    if (st || (st = check_dtype(nd, in[0], mask, err)) || (st = check_dtype(nd, in[1], mask, err))) return st;
    return bcast(nd, in, out, 0, 2, LECTOR_DTYPE_UNDEFINED, err);
}

lector_status rt_infer_Max(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    if (nd->n_in < 1) return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: no inputs", nd->name);
    for (int i = 0; i < nd->n_in; i++) {
        lector_status st = need_in(nd, in, i + 1, err);
        if (st || (st = check_dtype(nd, in[i], DT_NUM, err))) return st;
        if (in[i]->dtype != in[0]->dtype)
            return lector__error(err, LECTOR_ERR_DTYPE, "node %s: inputs of different types", nd->name);
    }
    return bcast(nd, in, out, 0, nd->n_in, LECTOR_DTYPE_UNDEFINED, err);
}

lector_status rt_infer_Min(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    return rt_infer_Max(nd, in, out, err);
}

lector_status rt_infer_Where(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 3, err);
    if (st) return st;
    if (in[0]->dtype != LECTOR_DTYPE_BOOL)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: condition must be bool", nd->name);
    if (in[1]->dtype != in[2]->dtype)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: X and Y of different types", nd->name);
    st = bcast(nd, in, out, 0, 3, in[1]->dtype, err);
    return st;
}

lector_status rt_infer_Cast(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int64_t to = rt_attr_int(nd, "to", 0);
    if ((st = check_dtype(nd, in[0], DT_ANY | DT(FLOAT16), err))) return st;
    if (to <= 0 || to >= 32 || !(DT_ANY & (1u << to)))
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: Cast to unsupported type %lld", nd->name, (long long)to);
    rt_set_out(out[0], (lector_dtype)to, in[0]->ndim, in[0]->dims);
    return LECTOR_OK;
}

lector_status rt_infer_Dropout(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, in[0]->dims);
    if (nd->n_out > 1 && out[1]) rt_set_out(out[1], LECTOR_DTYPE_BOOL, in[0]->ndim, in[0]->dims);
    return LECTOR_OK;
}
