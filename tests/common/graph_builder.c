/* graph_builder.c - see graph_builder.h. Test code: aborts on allocation failure. */
#include "graph_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"

#define GB_MAX 64

struct gb {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto os;
    Onnx__OperatorSetIdProto *osp;
    Onnx__NodeProto *nodes[GB_MAX];
    Onnx__ValueInfoProto *ins[GB_MAX], *outs[GB_MAX];
    Onnx__TensorProto *inits[GB_MAX];
    void *heap[GB_MAX * 32];
    int n_heap;
};

static void *gb_alloc(gb *b, size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p || b->n_heap == GB_MAX * 32) abort();
    b->heap[b->n_heap++] = p;
    return p;
}

static char *gb_strdup(gb *b, const char *s)
{
    char *p = gb_alloc(b, strlen(s) + 1);
    memcpy(p, s, strlen(s));
    return p;
}

gb *gb_new(int64_t opset)
{
    gb *b = calloc(1, sizeof *b);
    if (!b) abort();
    onnx__model_proto__init(&b->m);
    onnx__graph_proto__init(&b->g);
    onnx__operator_set_id_proto__init(&b->os);
    b->os.domain = "";
    b->os.has_version = 1;
    b->os.version = opset;
    b->osp = &b->os;
    b->m.has_ir_version = 1;
    b->m.ir_version = 8;
    b->m.n_opset_import = 1;
    b->m.opset_import = &b->osp;
    b->m.graph = &b->g;
    b->g.name = "test";
    b->g.node = b->nodes;
    b->g.input = b->ins;
    b->g.output = b->outs;
    b->g.initializer = b->inits;
    return b;
}

static Onnx__ValueInfoProto *value_info(gb *b, const char *name, int ndim, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = gb_alloc(b, sizeof *vi);
    Onnx__TypeProto *tp = gb_alloc(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = gb_alloc(b, sizeof *tt);
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    if (ndim >= 0) {
        Onnx__TensorShapeProto *sp = gb_alloc(b, sizeof *sp);
        Onnx__TensorShapeProto__Dimension *d = gb_alloc(b, sizeof *d * (size_t)(ndim + 1));
        Onnx__TensorShapeProto__Dimension **dp = gb_alloc(b, sizeof *dp * (size_t)(ndim + 1));
        onnx__tensor_shape_proto__init(sp);
        for (int i = 0; i < ndim; i++) {
            onnx__tensor_shape_proto__dimension__init(&d[i]);
            if (dims[i] >= 0) {
                d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d[i].dim_value = dims[i];
            } else {
                d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d[i].dim_param = "N";
            }
            dp[i] = &d[i];
        }
        sp->n_dim = (size_t)ndim;
        sp->dim = dp;
        tt->shape = sp;
    }
    tt->has_elem_type = 1;
    tt->elem_type = 1;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = gb_strdup(b, name);
    vi->type = tp;
    return vi;
}

void gb_input(gb *b, const char *name, int ndim, const int64_t *dims)
{
    b->ins[b->g.n_input++] = value_info(b, name, ndim, dims);
}

void gb_output(gb *b, const char *name) { b->outs[b->g.n_output++] = value_info(b, name, -1, NULL); }

void gb_output_shaped(gb *b, const char *name, int ndim, const int64_t *dims)
{
    b->outs[b->g.n_output++] = value_info(b, name, ndim, dims);
}

void gb_init(gb *b, const char *name, int ndim, const int64_t *dims, const float *data, float lo, float hi,
             uint32_t seed)
{
    Onnx__TensorProto *t = gb_alloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = gb_strdup(b, name);
    t->has_data_type = 1;
    t->data_type = 1;
    t->n_dims = (size_t)ndim;
    t->dims = gb_alloc(b, sizeof(int64_t) * (size_t)(ndim + 1));
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        t->dims[i] = dims[i];
        n *= (size_t)dims[i];
    }
    float *f = gb_alloc(b, sizeof(float) * n);
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        f[i] = data ? data[i] : lo + (hi - lo) * (float)(s >> 8) / 16777216.f;
    }
    t->n_float_data = n;
    t->float_data = f;
    b->inits[b->g.n_initializer++] = t;
}

void gb_init_i64(gb *b, const char *name, int n, const int64_t *vals)
{
    Onnx__TensorProto *t = gb_alloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = gb_strdup(b, name);
    t->has_data_type = 1;
    t->data_type = 7;
    t->n_dims = 1;
    t->dims = gb_alloc(b, sizeof(int64_t));
    t->dims[0] = n;
    t->n_int64_data = (size_t)n;
    t->int64_data = gb_alloc(b, sizeof(int64_t) * (size_t)(n + 1));
    memcpy(t->int64_data, vals, sizeof(int64_t) * (size_t)n);
    b->inits[b->g.n_initializer++] = t;
}

void gb_scalar(gb *b, const char *name, float v)
{
    const int64_t one = 1;
    gb_init(b, name, 1, &one, &v, 0, 0, 0);
}

void gb_bn(gb *b, const char *names, int64_t channels, uint32_t seed)
{
    static const float lo[4] = {0.5f, -0.5f, -0.2f, 0.5f}, hi[4] = {1.5f, 0.5f, 0.2f, 1.5f};
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    char *save = NULL, *name = strtok_r(buf, ",", &save);
    for (int i = 0; i < 4 && name; i++, name = strtok_r(NULL, ",", &save))
        gb_init(b, name, 1, &channels, NULL, lo[i], hi[i], seed + (uint32_t)i);
}

/* Splits "a,b,,c" into names (empty allowed). */
static size_t split_names(gb *b, const char *s, char ***out)
{
    size_t n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    if (!*s) n = 0;
    char **v = gb_alloc(b, sizeof *v * (n + 1));
    const char *p = s;
    for (size_t i = 0; i < n; i++) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        v[i] = gb_alloc(b, l + 1);
        memcpy(v[i], p, l);
        p = e ? e + 1 : p + l;
    }
    *out = v;
    return n;
}

void gb_node(gb *b, const char *op, const char *ins, const char *outs, const char *attrs)
{
    Onnx__NodeProto *n = gb_alloc(b, sizeof *n);
    onnx__node_proto__init(n);
    const char *colon = strrchr(op, ':');
    n->op_type = gb_strdup(b, colon ? colon + 1 : op);
    n->domain = "";
    if (colon) {
        n->domain = gb_alloc(b, (size_t)(colon - op) + 1);
        memcpy(n->domain, op, (size_t)(colon - op));
    }
    char nm[64];
    snprintf(nm, sizeof nm, "%s_%zu", n->op_type, b->g.n_node);
    n->name = gb_strdup(b, nm);
    n->n_input = split_names(b, ins, &n->input);
    n->n_output = split_names(b, outs, &n->output);
    Onnx__AttributeProto **av = gb_alloc(b, sizeof *av * 16);
    n->attribute = av;
    char *a = gb_strdup(b, attrs ? attrs : "");
    for (char *tok = strtok(a, ";"); tok; tok = strtok(NULL, ";")) {
        char *eq = strchr(tok, '='), *co = eq ? strchr(eq, ':') : NULL;
        if (!eq || !co) abort();
        *eq = 0;
        *co = 0;
        const char *kind = eq + 1, *val = co + 1;
        Onnx__AttributeProto *at = gb_alloc(b, sizeof *at);
        onnx__attribute_proto__init(at);
        at->name = gb_strdup(b, tok);
        if (!strcmp(kind, "i")) {
            at->has_type = 1;
            at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
            at->has_i = 1;
            at->i = strtoll(val, NULL, 10);
        } else if (!strcmp(kind, "f")) {
            at->has_type = 1;
            at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
            at->has_f = 1;
            at->f = strtof(val, NULL);
        } else if (!strcmp(kind, "s")) {
            at->has_type = 1;
            at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
            at->has_s = 1;
            at->s.data = (uint8_t *)gb_strdup(b, val);
            at->s.len = strlen(val);
        } else if (!strcmp(kind, "is") || !strcmp(kind, "fs")) {
            int isf = kind[0] == 'f';
            size_t cnt = 1;
            for (const char *p = val; *p; p++) cnt += *p == ',';
            at->has_type = 1;
            at->type =
                isf ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
            if (isf) {
                at->floats = gb_alloc(b, sizeof(float) * cnt);
                at->n_floats = cnt;
            } else {
                at->ints = gb_alloc(b, sizeof(int64_t) * cnt);
                at->n_ints = cnt;
            }
            const char *p = val;
            for (size_t i = 0; i < cnt; i++) {
                char *e;
                if (isf)
                    at->floats[i] = strtof(p, &e);
                else
                    at->ints[i] = strtoll(p, &e, 10);
                p = *e ? e + 1 : e;
            }
        } else {
            abort();
        }
        av[n->n_attribute++] = at;
    }
    b->nodes[b->g.n_node++] = n;
}

uint8_t *gb_finish(gb *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->m);
    uint8_t *buf = malloc(*len);
    if (buf) onnx__model_proto__pack(&b->m, buf);
    for (int i = 0; i < b->n_heap; i++) free(b->heap[i]);
    free(b);
    return buf;
}
