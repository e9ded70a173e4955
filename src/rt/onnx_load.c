/*
 * onnx_load.c - ONNX ModelProto (protobuf-c, generated from Debian's
 * onnx.proto at build time) -> rt_graph.
 *
 * Besides copying, the loader normalises operators whose inputs were
 * attributes in older opsets, so that everything downstream sees the opset-13
 * input form: Clip-6 min/max, Slice-1 starts/ends/axes, Squeeze/Unsqueeze-1/11
 * axes, Split-2/11 split, Pad-2 pads/value, Resize-10 (no roi input,
 * asymmetric coordinates), TopK-1 k. Every node also gets an `__opset` attribute for
 * the few kernels whose defaults changed between opsets (Softmax).
 */
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "rt/loader.h"
#include "rt/onnx_tensor.h"
#include "rt/ops.h"
#include "util/util.h"

typedef struct load_ctx {
    rt_graph *g;
    lector_error *err;
    const char *file;
    int64_t opset;
} load_ctx;

static lector_status oom(load_ctx *c)
{
    return lector__error(c->err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory while loading", c->file);
}

/* A float constant holding NaN: weights a broken export or a damaged file
 * gave. It would run, silently: ReLU and Clip turn NaN into 0, so a
 * detector answers "no text" on every page. Inf stays allowed (masks and
 * Clip bounds use it). */
static lector_status check_no_nan(load_ctx *c, const lector_tensor *t, const char *what, const char *name)
{
    int64_t n = lector_tensor_numel(t), bad = 0;
    if (!t->data) return LECTOR_OK;
    if (t->dtype == LECTOR_DTYPE_FLOAT32) {
        const float *v = t->data;
        for (int64_t i = 0; i < n; i++) bad += v[i] != v[i];
    } else if (t->dtype == LECTOR_DTYPE_FLOAT16) {
        const uint16_t *v = t->data;
        for (int64_t i = 0; i < n; i++) bad += (v[i] & 0x7C00) == 0x7C00 && (v[i] & 0x03FF);
    } else if (t->dtype == LECTOR_DTYPE_FLOAT64) {
        const double *v = t->data;
        for (int64_t i = 0; i < n; i++) bad += v[i] != v[i];
    }
    if (!bad) return LECTOR_OK;
    return lector__error(c->err, LECTOR_ERR_INVALID_MODEL,
                         "%s: %s '%s' holds NaN (%lld of %lld values): the model's weights are broken", c->file, what,
                         name ? name : "", (long long)bad, (long long)n);
}

static lector_status copy_attr(load_ctx *c, rt_node *n, const Onnx__AttributeProto *ap)
{
    rt_attr_type type;
    switch (ap->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: type = RT_ATTR_FLOAT; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: type = RT_ATTR_INT; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: type = RT_ATTR_STRING; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: type = RT_ATTR_TENSOR; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: type = RT_ATTR_FLOATS; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: type = RT_ATTR_INTS; break;
    default:
        return lector__error(c->err, LECTOR_ERR_UNSUPPORTED_OP,
                             "%s: node '%s': attribute '%s' has an unsupported type (%d)", c->file, n->name,
                             ap->name ? ap->name : "", (int)ap->type);
    }
    rt_attr *a = rt_node_add_attr(n, ap->name ? ap->name : "", type);
    if (!a) return oom(c);
    a->f = ap->f;
    a->i = ap->i;
    if (type == RT_ATTR_STRING) {
        a->s = lector__malloc(ap->s.len + 1);
        if (!a->s) return oom(c);
        if (ap->s.len) memcpy(a->s, ap->s.data, ap->s.len);
        a->s[ap->s.len] = 0;
    }
    if (type == RT_ATTR_INTS && ap->n_ints) {
        a->ints = lector__malloc(sizeof(int64_t) * ap->n_ints);
        if (!a->ints) return oom(c);
        memcpy(a->ints, ap->ints, sizeof(int64_t) * ap->n_ints);
        a->n_ints = (int)ap->n_ints;
    }
    if (type == RT_ATTR_FLOATS && ap->n_floats) {
        a->floats = lector__malloc(sizeof(float) * ap->n_floats);
        if (!a->floats) return oom(c);
        memcpy(a->floats, ap->floats, sizeof(float) * ap->n_floats);
        a->n_floats = (int)ap->n_floats;
    }
    if (type == RT_ATTR_TENSOR) {
        if (!ap->t)
            return lector__error(c->err, LECTOR_ERR_INVALID_MODEL, "%s: node '%s': tensor attribute '%s' has no tensor",
                                 c->file, n->name, a->name);
        lector_status st = rt_tensor_from_proto(ap->t, &a->t, "attribute tensor", c->err);
        if (st) {
            lector__error_prefix(c->err, "%s: node '%s'", c->file, n->name);
            return st;
        }
        if ((st = check_no_nan(c, &a->t, "the constant of node", n->name))) return st;
    }
    return LECTOR_OK;
}

/* Makes input `slot` of node `n` a new int64/float constant. */
static lector_status set_const_input(load_ctx *c, rt_node *n, int slot, lector_dtype dt, int ndim, int64_t len,
                                     const void *vals)
{
    size_t es = lector_dtype_size(dt);
    void *data = lector__malloc(es * (size_t)(len ? len : 1));
    if (!data) return oom(c);
    if (len) memcpy(data, vals, es * (size_t)len);
    int64_t dims[1] = {len};
    char name[300];
    snprintf(name, sizeof name, "%s::const%d", n->name, slot);
    int v = rt_graph_add_const(c->g, name, dt, ndim, dims, data);
    if (v < 0) {
        lector__free(data);
        return oom(c);
    }
    n->in[slot] = v;
    return LECTOR_OK;
}

static lector_status ints_to_input(load_ctx *c, rt_node *n, const char *attr, int slot)
{
    const int64_t *vals;
    int k = rt_attr_ints(n, attr, &vals);
    if (!rt_attr_find(n, attr)) return LECTOR_OK;
    return set_const_input(c, n, slot, LECTOR_DTYPE_INT64, 1, k, vals);
}

/* Rewrites attribute forms of older opsets into the opset-13 input form.
 * The node was allocated with enough input slots (see extra_inputs()). */
static lector_status normalise(load_ctx *c, rt_node *n)
{
    int64_t op = c->opset;
    lector_status st = LECTOR_OK;
    switch (n->op) {
    case RT_OP_Clip:
        if (op < 11) {
            float lo = rt_attr_float(n, "min", -FLT_MAX), hi = rt_attr_float(n, "max", FLT_MAX);
            if ((st = set_const_input(c, n, 1, LECTOR_DTYPE_FLOAT32, 0, 1, &lo))) return st;
            st = set_const_input(c, n, 2, LECTOR_DTYPE_FLOAT32, 0, 1, &hi);
        }
        break;
    case RT_OP_Slice:
        if (op < 10) {
            if ((st = ints_to_input(c, n, "starts", 1))) return st;
            if ((st = ints_to_input(c, n, "ends", 2))) return st;
            st = ints_to_input(c, n, "axes", 3);
        }
        break;
    case RT_OP_Squeeze:
    case RT_OP_Unsqueeze:
        if (op < 13) st = ints_to_input(c, n, "axes", 1);
        break;
    case RT_OP_Split:
        if (op < 13) st = ints_to_input(c, n, "split", 1);
        break;
    case RT_OP_Pad:
        if (op < 11) {
            if ((st = ints_to_input(c, n, "pads", 1))) return st;
            float v = rt_attr_float(n, "value", 0.f);
            st = set_const_input(c, n, 2, LECTOR_DTYPE_FLOAT32, 0, 1, &v);
        }
        break;
    case RT_OP_TopK:
        if (op < 10) { /* TopK-1: k an attribute */
            int64_t k = rt_attr_int(n, "k", 0);
            st = set_const_input(c, n, 1, LECTOR_DTYPE_INT64, 1, 1, &k);
        }
        break;
    case RT_OP_Resize:
        if (op < 11) {
            /* Resize-10: (X, scales), asymmetric coordinates, floor rounding. */
            n->in[2] = n->in[1];
            n->in[1] = -1;
            rt_attr *a = rt_node_add_attr(n, "coordinate_transformation_mode", RT_ATTR_STRING);
            if (!a || !(a->s = lector__strdup("asymmetric"))) return oom(c);
            if (!rt_attr_find(n, "nearest_mode")) {
                a = rt_node_add_attr(n, "nearest_mode", RT_ATTR_STRING);
                if (!a || !(a->s = lector__strdup("floor"))) return oom(c);
            }
        }
        break;
    default: break;
    }
    return st;
}

/* Input slots a node needs beyond those in the file, for normalise(). */
static int min_inputs(int op, int64_t opset)
{
    switch (op) {
    case RT_OP_Clip: return opset < 11 ? 3 : 0;
    case RT_OP_Slice: return opset < 10 ? 4 : 0;
    case RT_OP_Squeeze:
    case RT_OP_Unsqueeze:
    case RT_OP_Split: return opset < 13 ? 2 : 0;
    case RT_OP_Pad: return opset < 11 ? 3 : 0;
    case RT_OP_Resize: return opset < 11 ? 3 : 0;
    case RT_OP_TopK: return opset < 10 ? 2 : 0;
    default: return 0;
    }
}

static lector_status value_info(load_ctx *c, const Onnx__ValueInfoProto *vi, rt_value *v)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type)
        return lector__error(c->err, LECTOR_ERR_UNSUPPORTED_OP, "%s: graph input/output '%s' is not a tensor", c->file,
                             v->name);
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    v->dtype = (lector_dtype)tt->elem_type;
    if (!lector_dtype_size(v->dtype))
        return lector__error(c->err, LECTOR_ERR_DTYPE, "%s: graph input/output '%s' has unsupported element type %d",
                             c->file, v->name, (int)tt->elem_type);
    v->ndim = -1;
    if (tt->shape) {
        if (tt->shape->n_dim > LECTOR_MAX_DIMS)
            return lector__error(c->err, LECTOR_ERR_SHAPE, "%s: '%s' has rank %zu (max %d)", c->file, v->name,
                                 tt->shape->n_dim, LECTOR_MAX_DIMS);
        v->ndim = (int)tt->shape->n_dim;
        for (size_t i = 0; i < tt->shape->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            v->dims[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? d->dim_value : -1;
        }
    }
    return LECTOR_OK;
}

/* What a graph output declares of itself, where it is a tensor of a known
 * element type; anything else is left undefined (no error: inference decides). */
static void declared_type(const Onnx__ValueInfoProto *vi, rt_value *v)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type ||
        !lector_dtype_size((lector_dtype)vi->type->tensor_type->elem_type))
        return;
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    v->dtype = (lector_dtype)tt->elem_type;
    if (!tt->shape || tt->shape->n_dim > LECTOR_MAX_DIMS) return;
    v->ndim = (int)tt->shape->n_dim;
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        v->dims[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0
                         ? d->dim_value
                         : -1;
    }
}

static lector_status load_graph(load_ctx *c, const Onnx__ModelProto *mp)
{
    rt_graph *g = c->g;
    const Onnx__GraphProto *gp = mp->graph;
    lector_status st;

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        lector_tensor t;
        if ((st = rt_tensor_from_proto(tp, &t, "initializer", c->err))) {
            lector__error_prefix(c->err, "%s", c->file);
            return st;
        }
        if ((st = check_no_nan(c, &t, "initializer", tp->name))) {
            lector__free(t.data);
            return st;
        }
        int v = rt_graph_add_const(g, tp->name ? tp->name : "", t.dtype, t.ndim, t.dims, t.data);
        if (v < 0) {
            lector__free(t.data);
            return oom(c);
        }
    }
    g->inputs = lector__malloc(sizeof(int) * (gp->n_input + 1));
    g->outputs = lector__malloc(sizeof(int) * (gp->n_output + 1));
    if (!g->inputs || !g->outputs) return oom(c);
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *name = gp->input[i]->name ? gp->input[i]->name : "";
        int existing = rt_graph_find_value(g, name);
        if (existing >= 0 && g->values[existing].data) continue; /* initializer with a default */
        int v = rt_graph_add_value(g, name);
        if (v < 0) return oom(c);
        if ((st = value_info(c, gp->input[i], &g->values[v]))) return st;
        g->values[v].is_input = true;
        g->inputs[g->n_inputs++] = v;
    }

    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const char *type = np->op_type ? np->op_type : "";
        char auto_name[32];
        const char *name = np->name;
        if (!name || !name[0]) { /* unnamed nodes are named by position in messages */
            snprintf(auto_name, sizeof auto_name, "#%zu", i);
            name = auto_name;
        }
        int op = rt_op_find(type);
        if (np->domain && np->domain[0] && strcmp(np->domain, "ai.onnx")) op = -1;
        if (op < 0)
            return lector__error(c->err, LECTOR_ERR_UNSUPPORTED_OP,
                                 "%s: node '%s' uses operator '%s%s%s' (opset %lld), which Lector "
                                 "does not support",
                                 c->file, name, np->domain && np->domain[0] ? np->domain : "",
                                 np->domain && np->domain[0] ? "." : "", type, (long long)c->opset);
        if (np->n_output == 0 || !np->output[0] || !np->output[0][0])
            return lector__error(c->err, LECTOR_ERR_INVALID_MODEL, "%s: node '%s' (%s) has no (first) output", c->file,
                                 name, type);
        if (np->n_input > 16 || np->n_output > 8)
            return lector__error(c->err, LECTOR_ERR_UNSUPPORTED_OP,
                                 "%s: node '%s' (%s) has %zu inputs and %zu outputs (at most 16 and 8)", c->file, name,
                                 type, np->n_input, np->n_output);
        int n_in = (int)np->n_input;
        int need = min_inputs(op, c->opset);
        rt_node *n = rt_graph_add_node(g, op, name, n_in > need ? n_in : need, (int)np->n_output);
        if (!n) return oom(c);
        int ni = g->n_nodes - 1;
        for (size_t k = 0; k < np->n_attribute; k++)
            if ((st = copy_attr(c, n, np->attribute[k]))) return st;
        rt_attr *a = rt_node_add_attr(n, "__opset", RT_ATTR_INT);
        if (!a) return oom(c);
        a->i = c->opset;
        for (int k = 0; k < n_in; k++) {
            const char *in = np->input[k];
            if (!in || !in[0]) continue;
            int v = rt_graph_find_value(g, in);
            if (v < 0)
                return lector__error(c->err, LECTOR_ERR_INVALID_MODEL,
                                     "%s: node '%s' (%s) reads '%s', which no earlier node, input "
                                     "or initializer defines",
                                     c->file, name, type, in);
            n->in[k] = v;
        }
        for (size_t k = 0; k < np->n_output; k++) {
            const char *out = np->output[k];
            if (!out || !out[0]) continue;
            int v = rt_graph_add_value(g, out);
            if (v < 0) return oom(c);
            g->values[v].producer = ni;
            n = &g->nodes[ni];
            n->out[k] = v;
        }
        if ((st = normalise(c, &g->nodes[ni]))) return st;
    }

    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        int v = rt_graph_find_value(g, name);
        if (v < 0)
            return lector__error(c->err, LECTOR_ERR_INVALID_MODEL, "%s: graph output '%s' is not produced by any node",
                                 c->file, name);
        g->values[v].is_output = true;
        /* The declared type and shape describe the output before any run
         * (lector_model_output, lector_model_load_*_argmax); inference decides the real ones. */
        if (!g->values[v].is_input && !g->values[v].data) declared_type(gp->output[i], &g->values[v]);
        g->outputs[g->n_outputs++] = v;
    }
    if (g->n_outputs == 0)
        return lector__error(c->err, LECTOR_ERR_INVALID_MODEL, "%s: the graph has no outputs", c->file);
    return LECTOR_OK;
}

lector_status rt_load_onnx(const void *data, size_t size, const char *name, rt_graph **out, lector_error *err)
{
    *out = NULL;
    const char *file = name ? name : "<memory>";
    if (size == 0) return lector__error(err, LECTOR_ERR_PARSE, "%s: empty file, not an ONNX model", file);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, size, data);
    if (!mp)
        return lector__error(err, LECTOR_ERR_PARSE,
                             "%s: not an ONNX model (protobuf decoding failed: truncated or corrupted?)", file);
    lector_status st = LECTOR_OK;
    if (!mp->graph || (!mp->has_ir_version && mp->n_opset_import == 0)) {
        st = lector__error(err, LECTOR_ERR_PARSE, "%s: not an ONNX model (no graph or no IR version in the message)",
                           file);
        goto done;
    }
    int64_t opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) opset = o->version;
    }
    if (opset < 0) opset = 1;
    if (opset < 7 || opset > 18) {
        st =
            lector__error(err, LECTOR_ERR_UNSUPPORTED_OP,
                          "%s: the model uses ONNX opset %lld; Lector supports opsets 7 to 18", file, (long long)opset);
        goto done;
    }
    rt_graph *g = rt_graph_new(file);
    if (!g) {
        st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", file);
        goto done;
    }
    g->opset = opset;
    load_ctx c = {g, err, g->name, opset};
    st = load_graph(&c, mp);
    if (st)
        rt_graph_free(g);
    else
        *out = g;
done:
    onnx__model_proto__free_unpacked(mp, NULL);
    return st;
}
