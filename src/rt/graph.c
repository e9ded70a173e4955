#include "rt/graph.h"

#include <stdio.h>
#include <string.h>

#include "util/util.h"

rt_graph *rt_graph_new(const char *name)
{
    rt_graph *g = lector__calloc(1, sizeof *g);
    if (!g) return NULL;
    g->name = lector__strdup(name ? name : "<memory>");
    if (!g->name) {
        lector__free(g);
        return NULL;
    }
    return g;
}

void rt_attr_clear(rt_attr *a)
{
    lector__free(a->name);
    lector__free(a->s);
    lector__free(a->ints);
    lector__free(a->floats);
    lector__free(a->t.data);
    memset(a, 0, sizeof *a);
}

static void node_clear(rt_node *n)
{
    lector__free(n->name);
    lector__free(n->in);
    lector__free(n->out);
    for (int i = 0; i < n->n_attrs; i++) rt_attr_clear(&n->attrs[i]);
    lector__free(n->attrs);
}

void rt_graph_free(rt_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n_values; i++) {
        lector__free(g->values[i].name);
        if (g->values[i].owns_data) lector__free(g->values[i].data);
    }
    for (int i = 0; i < g->n_nodes; i++) node_clear(&g->nodes[i]);
    lector__free(g->values);
    lector__free(g->nodes);
    lector__free(g->inputs);
    lector__free(g->outputs);
    lector__free(g->name);
    lector__free(g);
}

int rt_graph_add_value(rt_graph *g, const char *name)
{
    if (g->n_values == g->cap_values) {
        int cap = g->cap_values ? g->cap_values * 2 : 64;
        rt_value *v = lector__realloc(g->values, (size_t)cap * sizeof *v);
        if (!v) return -1;
        g->values = v;
        g->cap_values = cap;
    }
    rt_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = lector__strdup(name ? name : "");
    if (!v->name) return -1;
    v->ndim = -1;
    v->producer = -1;
    return g->n_values++;
}

int rt_graph_find_value(const rt_graph *g, const char *name)
{
    for (int i = g->n_values - 1; i >= 0; i--)
        if (!strcmp(g->values[i].name, name)) return i;
    return -1;
}

rt_node *rt_graph_add_node(rt_graph *g, int op, const char *name, int n_in, int n_out)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        rt_node *n = lector__realloc(g->nodes, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        g->nodes = n;
        g->cap_nodes = cap;
    }
    rt_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->name = lector__strdup(name ? name : "");
    n->in = lector__malloc(sizeof(int) * (size_t)(n_in > 0 ? n_in : 1));
    n->out = lector__malloc(sizeof(int) * (size_t)(n_out > 0 ? n_out : 1));
    if (!n->name || !n->in || !n->out) {
        node_clear(n);
        return NULL;
    }
    n->n_in = n_in;
    n->n_out = n_out;
    for (int i = 0; i < n_in; i++) n->in[i] = -1;
    for (int i = 0; i < n_out; i++) n->out[i] = -1;
    g->n_nodes++;
    return n;
}

int rt_graph_add_const(rt_graph *g, const char *name, lector_dtype dt, int ndim, const int64_t *dims, void *data)
{
    int v = rt_graph_add_value(g, name);
    if (v < 0) return -1;
    rt_value *val = &g->values[v];
    val->dtype = dt;
    val->ndim = ndim;
    for (int i = 0; i < ndim; i++) val->dims[i] = dims[i];
    val->data = data;
    val->owns_data = true;
    return v;
}

static int attr_copy(rt_attr *dst, const rt_attr *src)
{
    *dst = *src;
    dst->name = NULL;
    dst->s = NULL;
    dst->ints = NULL;
    dst->floats = NULL;
    dst->t.data = NULL;
    dst->name = lector__strdup(src->name);
    if (!dst->name) return -1;
    if (src->s && !(dst->s = lector__strdup(src->s))) return -1;
    if (src->n_ints) {
        dst->ints = lector__malloc(sizeof(int64_t) * (size_t)src->n_ints);
        if (!dst->ints) return -1;
        memcpy(dst->ints, src->ints, sizeof(int64_t) * (size_t)src->n_ints);
    }
    if (src->n_floats) {
        dst->floats = lector__malloc(sizeof(float) * (size_t)src->n_floats);
        if (!dst->floats) return -1;
        memcpy(dst->floats, src->floats, sizeof(float) * (size_t)src->n_floats);
    }
    if (src->t.data) {
        size_t nb = (size_t)lector_tensor_numel(&src->t) * lector_dtype_size(src->t.dtype);
        dst->t.data = lector__malloc(nb);
        if (!dst->t.data) return -1;
        memcpy(dst->t.data, src->t.data, nb);
    }
    return 0;
}

rt_graph *rt_graph_clone(const rt_graph *g)
{
    rt_graph *c = rt_graph_new(g->name);
    if (!c) return NULL;
    c->opset = g->opset;
    c->values = lector__calloc((size_t)(g->n_values ? g->n_values : 1), sizeof *c->values);
    c->nodes = lector__calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *c->nodes);
    c->inputs = lector__malloc(sizeof(int) * (size_t)(g->n_inputs + 1));
    c->outputs = lector__malloc(sizeof(int) * (size_t)(g->n_outputs + 1));
    if (!c->values || !c->nodes || !c->inputs || !c->outputs) goto fail;
    c->cap_values = g->n_values ? g->n_values : 1;
    c->cap_nodes = g->n_nodes ? g->n_nodes : 1;
    for (int i = 0; i < g->n_values; i++) {
        c->values[i] = g->values[i];
        c->values[i].owns_data = false; /* constants stay with the source graph */
        c->values[i].name = lector__strdup(g->values[i].name);
        c->n_values = i + 1;
        if (!c->values[i].name) goto fail;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const rt_node *s = &g->nodes[i];
        rt_node *d = &c->nodes[i];
        *d = *s;
        d->name = NULL;
        d->in = d->out = NULL;
        d->attrs = NULL;
        d->n_attrs = 0;
        c->n_nodes = i + 1;
        d->name = lector__strdup(s->name);
        d->in = lector__malloc(sizeof(int) * (size_t)(s->n_in + 1));
        d->out = lector__malloc(sizeof(int) * (size_t)(s->n_out + 1));
        d->attrs = lector__calloc((size_t)(s->n_attrs + 1), sizeof *d->attrs);
        if (!d->name || !d->in || !d->out || !d->attrs) goto fail;
        memcpy(d->in, s->in, sizeof(int) * (size_t)s->n_in);
        memcpy(d->out, s->out, sizeof(int) * (size_t)s->n_out);
        /* a dead node is never read again: its attributes (a folded Constant's
         * tensor: the weights themselves) stay with the source */
        for (int a = 0; a < s->n_attrs && !s->dead; a++) {
            d->n_attrs = a + 1;
            if (attr_copy(&d->attrs[a], &s->attrs[a])) goto fail;
        }
    }
    memcpy(c->inputs, g->inputs, sizeof(int) * (size_t)g->n_inputs);
    memcpy(c->outputs, g->outputs, sizeof(int) * (size_t)g->n_outputs);
    c->n_inputs = g->n_inputs;
    c->n_outputs = g->n_outputs;
    return c;
fail:
    rt_graph_free(c);
    return NULL;
}

rt_attr *rt_node_add_attr(rt_node *n, const char *name, rt_attr_type type)
{
    rt_attr *a = lector__realloc(n->attrs, sizeof *a * (size_t)(n->n_attrs + 1));
    if (!a) return NULL;
    n->attrs = a;
    a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = lector__strdup(name);
    if (!a->name) return NULL;
    a->type = type;
    n->n_attrs++;
    return a;
}

const rt_attr *rt_attr_find(const rt_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

int64_t rt_attr_int(const rt_node *n, const char *name, int64_t dflt)
{
    const rt_attr *a = rt_attr_find(n, name);
    return a && a->type == RT_ATTR_INT ? a->i : dflt;
}

float rt_attr_float(const rt_node *n, const char *name, float dflt)
{
    const rt_attr *a = rt_attr_find(n, name);
    return a && a->type == RT_ATTR_FLOAT ? a->f : dflt;
}

int rt_attr_ints(const rt_node *n, const char *name, const int64_t **vals)
{
    const rt_attr *a = rt_attr_find(n, name);
    if (!a || a->type != RT_ATTR_INTS) {
        *vals = NULL;
        return 0;
    }
    *vals = a->ints;
    return a->n_ints;
}

int rt_attr_floats(const rt_node *n, const char *name, const float **vals)
{
    const rt_attr *a = rt_attr_find(n, name);
    if (!a || a->type != RT_ATTR_FLOATS) {
        *vals = NULL;
        return 0;
    }
    *vals = a->floats;
    return a->n_floats;
}

const char *rt_attr_string(const rt_node *n, const char *name, const char *dflt)
{
    const rt_attr *a = rt_attr_find(n, name);
    return a && a->type == RT_ATTR_STRING && a->s ? a->s : dflt;
}

int64_t rt_value_numel(const rt_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->ndim; i++) n *= v->dims[i];
    return n;
}

size_t rt_value_nbytes(const rt_value *v) { return (size_t)rt_value_numel(v) * lector_dtype_size(v->dtype); }

lector_tensor rt_value_tensor(const rt_value *v)
{
    lector_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = v->dtype;
    t.ndim = v->ndim < 0 ? 0 : v->ndim;
    for (int i = 0; i < t.ndim; i++) t.dims[i] = v->dims[i];
    t.data = v->data;
    return t;
}

const char *rt_dims_str(int ndim, const int64_t *dims, char *buf, size_t len)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < ndim && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
    return buf;
}
