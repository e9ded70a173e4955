/*
 * graph.h - Lector's graph IR.
 *
 * A model is loaded once into an rt_graph (values, nodes, constants). For
 * each concrete input shape the graph is cloned, shapes are inferred,
 * everything computable from constants is folded (the Shape->Slice->Cast->
 * Reshape chains paddle2onnx emits disappear), BatchNorm is folded into Conv,
 * activations are fused, dead nodes are removed, and a backend compiles the
 * result into a plan (plan.h).
 *
 * Attribute-form operators of old opsets (Clip min/max, Slice starts/ends,
 * Squeeze/Unsqueeze axes, ...) are normalised to their input form at load
 * time, so kernels and passes see one form only (opset 13 semantics).
 */
#ifndef LECTOR_RT_GRAPH_H
#define LECTOR_RT_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "lector_rt.h"

/* ONNX's AttributeProto.AttributeType values; the comment names the field
 * of rt_attr that holds the value. */
typedef enum rt_attr_type {
    RT_ATTR_FLOAT = 1,  /* f */
    RT_ATTR_INT = 2,    /* i */
    RT_ATTR_STRING = 3, /* s */
    RT_ATTR_TENSOR = 4, /* t */
    RT_ATTR_FLOATS = 6, /* floats, n_floats */
    RT_ATTR_INTS = 7,   /* ints, n_ints */
} rt_attr_type;

typedef struct rt_attr {
    char *name;
    rt_attr_type type;
    int64_t i;
    float f;
    char *s;
    int64_t *ints;
    int n_ints;
    float *floats;
    int n_floats;
    lector_tensor t; /* RT_ATTR_TENSOR (Constant's value); t.data owned by the attr */
} rt_attr;

/* Activation fused into a producing node (Conv, ConvTranspose, MatMul, Add)
 * by the fusion pass; applied by the kernel to each output element. */
typedef enum rt_act {
    RT_ACT_NONE = 0,
    RT_ACT_RELU,
    RT_ACT_SIGMOID,
    RT_ACT_HARDSIGMOID, /* max(0, min(1, alpha*x + beta)) */
    RT_ACT_HARDSWISH,   /* x * hardsigmoid(x) with alpha/beta */
    RT_ACT_SWISH,       /* x * sigmoid(x) */
    RT_ACT_CLIP,        /* min(max(x, alpha), beta) */
} rt_act;

typedef struct rt_value {
    char *name;
    lector_dtype dtype; /* LECTOR_DTYPE_UNDEFINED until inferred (a graph output:
                            as the model declares it, if it does) */
    int ndim;           /* -1 until inferred (a graph output: as declared) */
    int64_t dims[LECTOR_MAX_DIMS];
    void *data;     /* non-NULL: a constant (initializer or folded) */
    bool owns_data; /* data is freed with the graph */
    int producer;   /* index of the producing node, -1 for inputs/constants */
    bool is_input;
    bool is_output;
} rt_value;

typedef struct rt_node {
    int op; /* index into the op table (ops.h) */
    char *name;
    int n_in;
    int *in; /* value indices; -1 = absent optional input */
    int n_out;
    int *out;
    int n_attrs;
    rt_attr *attrs;
    rt_act act; /* fused activation */
    float act_alpha, act_beta;
    bool dead; /* removed by a pass; skipped everywhere */
} rt_node;

typedef struct rt_graph {
    rt_value *values;
    int n_values, cap_values;
    rt_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs; /* graph inputs that are not initializers */
    int n_inputs;
    int *outputs;
    int n_outputs;
    int64_t opset; /* default-domain opset of the model */
    char *name;    /* file name or caller-given name, for messages */
} rt_graph;

/* ---- construction / destruction ----------------------------------------- */

rt_graph *rt_graph_new(const char *name);
void rt_graph_free(rt_graph *g);
/* Deep copy; constant data is shared (owns_data=false in the copy) except
 * that the copy never frees it. */
rt_graph *rt_graph_clone(const rt_graph *g);

/* Adds a value; returns its index or -1 on allocation failure. */
int rt_graph_add_value(rt_graph *g, const char *name);
/* Finds a value by name, -1 if absent. Linear; used at load time only. */
int rt_graph_find_value(const rt_graph *g, const char *name);
/* Adds a node with room for n_in inputs and n_out outputs (filled with -1). */
rt_node *rt_graph_add_node(rt_graph *g, int op, const char *name, int n_in, int n_out);
/* Adds a constant value (takes ownership of `data`, allocated with lector__malloc). */
int rt_graph_add_const(rt_graph *g, const char *name, lector_dtype dt, int ndim, const int64_t *dims, void *data);

/* ---- attributes --------------------------------------------------------- */

/* Appends an attribute `name` of `type` (all values zero) to node `n`; NULL
 * on allocation failure (the node stays valid). */
rt_attr *rt_node_add_attr(rt_node *n, const char *name, rt_attr_type type);
const rt_attr *rt_attr_find(const rt_node *n, const char *name);
int64_t rt_attr_int(const rt_node *n, const char *name, int64_t dflt);
float rt_attr_float(const rt_node *n, const char *name, float dflt);
/* Returns the number of ints (0 if absent) and sets *vals. */
int rt_attr_ints(const rt_node *n, const char *name, const int64_t **vals);
int rt_attr_floats(const rt_node *n, const char *name, const float **vals);
const char *rt_attr_string(const rt_node *n, const char *name, const char *dflt);
void rt_attr_clear(rt_attr *a);

/* ---- helpers on values -------------------------------------------------- */

int64_t rt_value_numel(const rt_value *v);
size_t rt_value_nbytes(const rt_value *v);
/* View of a value as a tensor (data may be NULL). */
lector_tensor rt_value_tensor(const rt_value *v);
/* "[1,3,640,640]" into buf. */
const char *rt_dims_str(int ndim, const int64_t *dims, char *buf, size_t len);

#endif
