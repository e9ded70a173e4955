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
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: input %d is missing",
                                 n->name, i);
    return LECTOR_OK;
}

static lector_status same_as_input(const rt_node *n, const rt_value *const *in,
                                   rt_value *const *out, lector_error *err)
{
    lector_status st = need_in(n, in, 1, err);
    if (st) return st;
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, in[0]->dims);
    return LECTOR_OK;
}

/* Broadcasts the present inputs [first, first+count); output dtype `dt`
 * (UNDEFINED: that of input `first`). */
static lector_status bcast(const rt_node *n, const rt_value *const *in, rt_value *const *out,
                           int first, int count, lector_dtype dt, lector_error *err)
{
    int ndims[16];
    const int64_t *dims[16];
    int k = 0;
    if (count > 16)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: more than 16 inputs", n->name);
    for (int i = first; i < first + count; i++) {
        if (i >= n->n_in || !in[i])
            return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: input %d is missing",
                                 n->name, i);
        ndims[k] = in[i]->ndim;
        dims[k++] = in[i]->dims;
    }
    int64_t od[LECTOR_MAX_DIMS];
    int ond;
    if (rt_broadcast_dims(k, ndims, dims, &ond, od) != 0) {
        char b1[128], b2[128];
        return lector__error(err, LECTOR_ERR_SHAPE, "node %s: shapes %s and %s do not broadcast",
                             n->name, rt_dims_str(in[first]->ndim, in[first]->dims, b1, sizeof b1),
                             rt_dims_str(in[first + count - 1]->ndim, in[first + count - 1]->dims,
                                         b2, sizeof b2));
    }
    rt_set_out(out[0], dt ? dt : in[first]->dtype, ond, od);
    return LECTOR_OK;
}

static lector_status binary_same_type(const rt_node *n, const rt_value *const *in,
                                      rt_value *const *out, lector_dtype odt, lector_error *err)
{
    lector_status st = need_in(n, in, 2, err);
    if (st) return st;
    if (in[0]->dtype != in[1]->dtype)
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: inputs of different types %s and %s",
                             n->name, lector_dtype_name(in[0]->dtype), lector_dtype_name(in[1]->dtype));
    return bcast(n, in, out, 0, 2, odt, err);
}

#define RT_SAME_AS_INPUT(op)                                                                   \
    lector_status rt_infer_##op(const rt_node *nd, const rt_value *const *in,                 \
                                rt_value *const *out, lector_error *err)                      \
    {                                                                                          \
        return same_as_input(nd, in, out, err);                                                \
    }
RT_SAME_AS_INPUT(Abs)
RT_SAME_AS_INPUT(Ceil)
RT_SAME_AS_INPUT(Erf)
RT_SAME_AS_INPUT(Exp)
RT_SAME_AS_INPUT(Floor)
RT_SAME_AS_INPUT(HardSigmoid)
RT_SAME_AS_INPUT(HardSwish)
RT_SAME_AS_INPUT(Identity)
RT_SAME_AS_INPUT(LeakyRelu)
RT_SAME_AS_INPUT(Log)
RT_SAME_AS_INPUT(Neg)
RT_SAME_AS_INPUT(Reciprocal)
RT_SAME_AS_INPUT(Relu)
RT_SAME_AS_INPUT(Sigmoid)
RT_SAME_AS_INPUT(Sqrt)
RT_SAME_AS_INPUT(Tanh)
RT_SAME_AS_INPUT(Clip)

#define RT_BINARY(op)                                                                          \
    lector_status rt_infer_##op(const rt_node *nd, const rt_value *const *in,                 \
                                rt_value *const *out, lector_error *err)                      \
    {                                                                                          \
        return binary_same_type(nd, in, out, LECTOR_DTYPE_UNDEFINED, err);                     \
    }
RT_BINARY(Add)
RT_BINARY(Sub)
RT_BINARY(Mul)
RT_BINARY(Div)

lector_status rt_infer_Equal(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                             lector_error *err)
{
    return binary_same_type(nd, in, out, LECTOR_DTYPE_BOOL, err);
}

lector_status rt_infer_Pow(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                           lector_error *err)
{
    return bcast(nd, in, out, 0, 2, LECTOR_DTYPE_UNDEFINED, err);
}

lector_status rt_infer_Max(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                           lector_error *err)
{
    if (nd->n_in < 1)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "node %s: no inputs", nd->name);
    return bcast(nd, in, out, 0, nd->n_in, LECTOR_DTYPE_UNDEFINED, err);
}

lector_status rt_infer_Min(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                           lector_error *err)
{
    return rt_infer_Max(nd, in, out, err);
}

lector_status rt_infer_Where(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                             lector_error *err)
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

lector_status rt_infer_Cast(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                            lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    int64_t to = rt_attr_int(nd, "to", 0);
    if (!lector_dtype_size((lector_dtype)to))
        return lector__error(err, LECTOR_ERR_DTYPE, "node %s: Cast to unsupported type %lld",
                             nd->name, (long long)to);
    rt_set_out(out[0], (lector_dtype)to, in[0]->ndim, in[0]->dims);
    return LECTOR_OK;
}

lector_status rt_infer_Dropout(const rt_node *nd, const rt_value *const *in, rt_value *const *out,
                               lector_error *err)
{
    lector_status st = need_in(nd, in, 1, err);
    if (st) return st;
    rt_set_out(out[0], in[0]->dtype, in[0]->ndim, in[0]->dims);
    if (nd->n_out > 1 && out[1]) rt_set_out(out[1], LECTOR_DTYPE_BOOL, in[0]->ndim, in[0]->dims);
    return LECTOR_OK;
}
