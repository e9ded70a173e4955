/*
 * host_chain.c - runs of elementwise nodes that the host executor runs in
 * one pass: finding them in a plan and running them tile by tile (see
 * host_chain.h for why).
 */
#include "rt/host_chain.h"

#include <omp.h>
#include <pthread.h>
#include <string.h>

#include "rt/backend.h"
#include "util/testctl.h"
#include "util/util.h"

/* Elements of a tile: 4 KiB of floats, so that a chain's tiles (one per
 * node) stay in the L2 cache of the core running them. */
#define TILE 1024
/* Rows shorter than this are not worth a kernel call per node per row. */
#define MIN_ROW 64
/* Below this many elements a chain runs on the calling thread. */
#define PAR_MIN 32768

/* ---- which nodes ----------------------------------------------------------- */

/* Operators whose output element i is a function of input element i alone
 * (after numpy broadcasting), whose reference kernels run on any flat
 * tensor: with a tile of [len] elements and a broadcast operand of [1]. */
static const char *const unary_ops[] = {"Relu", "Sigmoid", "HardSigmoid", "HardSwish",  "LeakyRelu", "Tanh",
                                        "Exp",  "Erf",     "Sqrt",        "Reciprocal", "Neg",       "Abs",
                                        "Clip", "Log",     "Ceil",        "Floor"};
static const char *const binary_ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};

#define N_UNARY  (int)(sizeof unary_ops / sizeof unary_ops[0])
#define N_BINARY (int)(sizeof binary_ops / sizeof binary_ops[0])

/* per op index: 0 not elementwise, 1 unary (input 0 is the data; Clip's
 * bounds are broadcast operands), 2 binary */
static signed char op_kind[RT_OP_COUNT];
static pthread_once_t op_kind_once = PTHREAD_ONCE_INIT;

/* per op index: its rt_binary_span operator (-1: none, the reference kernel runs) */
static signed char fast_op[RT_OP_COUNT];

static void op_kind_init(void)
{
    static const char *const fast[] = {"Add", "Sub", "Mul", "Div"};
    for (int i = 0; i < RT_OP_COUNT; i++) fast_op[i] = -1;
    for (int i = 0; i < 4; i++) {
        int op = rt_op_find(fast[i]);
        if (op >= 0) fast_op[op] = (signed char)i;
    }
    for (int i = 0; i < N_UNARY; i++) {
        int op = rt_op_find(unary_ops[i]);
        if (op >= 0) op_kind[op] = 1;
    }
    for (int i = 0; i < N_BINARY; i++) {
        int op = rt_op_find(binary_ops[i]);
        if (op >= 0) op_kind[op] = 2;
    }
}

/* Can node n be in a chain at all (its operator and types)? */
static int chainable(const rt_graph *g, const rt_node *n)
{
    if (n->op < 0 || n->op >= RT_OP_COUNT || !op_kind[n->op] || n->n_out != 1 || n->out[0] < 0) return 0;
    if (n->n_in < 1 || n->n_in > RT_CHAIN_MAX_IN || (op_kind[n->op] == 2 && n->n_in != 2)) return 0;
    if (g->values[n->out[0]].dtype != LECTOR_DTYPE_FLOAT32 || !rt_op_table[n->op].ref) return 0;
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k] >= 0 && g->values[n->in[k]].dtype != LECTOR_DTYPE_FLOAT32) return 0;
    return n->in[0] >= 0;
}

static int same_dims(const rt_value *a, const rt_value *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}

/* Classifies value v, read by a node whose output has the dims of `out`:
 * RT_CHAIN_WHOLE (the same elements), or RT_CHAIN_PER_ROW with the number of
 * leading dims over which it varies in *lead_of (its strides in `in`);
 * -1 when it is neither (it does not broadcast to out). */
static int classify(const rt_value *v, const rt_value *out, rt_chain_input *in, int *lead_of)
{
    int r = out->ndim, off = r - v->ndim;
    if (off < 0) return -1;
    int64_t dims[LECTOR_MAX_DIMS];
    for (int d = 0; d < r; d++) dims[d] = d < off ? 1 : v->dims[d - off];
    int whole = 1;
    for (int d = 0; d < r; d++) {
        if (dims[d] != 1 && dims[d] != out->dims[d]) return -1;
        whole &= dims[d] == out->dims[d];
    }
    if (whole) {
        in->src = RT_CHAIN_WHOLE;
        return 0;
    }
    in->src = RT_CHAIN_PER_ROW;
    int lead = 0;
    int64_t stride = 1;
    for (int d = r - 1; d >= 0; d--) {
        in->stride[d] = dims[d] == 1 ? 0 : stride;
        stride *= dims[d];
        if (dims[d] != 1 && !lead) lead = d + 1;
    }
    *lead_of = lead;
    return 0;
}

/* ---- finding chains ----------------------------------------------------------- */

/* How many nodes from position s on may form a chain: c->in filled for
 * them and lead_at[i] the leading dims of the chain of nodes 0..i, before
 * the intermediate values' readers are checked. made_at[v]: the position
 * that produces value v (-1: none). */
static int extent(const rt_plan *p, const int *made_at, int s, rt_host_chain *c, int *lead_at)
{
    const rt_graph *g = p->g;
    const rt_value *D = &g->values[g->nodes[p->order[s]].out[0]];
    if (D->ndim < 1) return 0;
    int lead = 0, m = 0;
    for (; m < RT_CHAIN_MAX_NODES && s + m < p->n_order; m++) {
        const rt_node *n = &g->nodes[p->order[s + m]];
        if (!chainable(g, n) || !same_dims(&g->values[n->out[0]], D)) break;
        int node_lead = lead, ok = 1, full = 0;
        for (int k = 0; k < n->n_in && ok; k++) {
            rt_chain_input *in = &c->in[m][k];
            int v = n->in[k], at = v >= 0 ? made_at[v] : -1;
            if (v < 0) {
                in->src = RT_CHAIN_ABSENT;
            } else if (at >= s && at < s + m) {
                in->src = RT_CHAIN_TILE;
                in->node = at - s;
            } else {
                int l = 0;
                ok = classify(&g->values[v], D, in, &l) == 0;
                if (l > node_lead) node_lead = l;
            }
            /* the kernel's length comes from its data input (either for a binary operator) */
            if (ok && (k == 0 || op_kind[n->op] == 2)) full |= in->src == RT_CHAIN_TILE || in->src == RT_CHAIN_WHOLE;
        }
        int64_t row = 1;
        for (int d = node_lead; d < D->ndim; d++) row *= D->dims[d];
        if (!ok || !full || row < MIN_ROW) break;
        lead_at[m] = lead = node_lead;
    }
    return m;
}

lector_status rt_host_chains_find(rt_plan *p, char *internal, int *last, lector_error *err)
{
    if (!lector__tc_flag(LECTOR__TC_HOST_CHAINS, 1)) return LECTOR_OK;
    pthread_once(&op_kind_once, op_kind_init);
    const rt_graph *g = p->g;
    int *made_at = lector__malloc(sizeof(int) * (size_t)(g->n_values + 1));
    p->chain_at = lector__malloc(sizeof(int) * (size_t)(p->n_order + 1));
    if (!made_at || !p->chain_at) {
        lector__free(made_at);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory planning memory");
    }
    for (int v = 0; v < g->n_values; v++) made_at[v] = -1;
    for (int s = 0; s < p->n_order; s++) {
        const rt_node *n = &g->nodes[p->order[s]];
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) made_at[n->out[k]] = s;
        p->chain_at[s] = -1;
    }
    rt_host_chain c;
    int cap = 0, lead_at[RT_CHAIN_MAX_NODES];
    for (int s = 0; s + 1 < p->n_order;) {
        memset(&c, 0, sizeof c);
        int n = extent(p, made_at, s, &c, lead_at);
        /* the longest prefix whose intermediate values are read inside it only */
        for (; n >= 2; n--) {
            int ok = 1;
            for (int k = 0; k + 1 < n && ok; k++) ok = last[g->nodes[p->order[s + k]].out[0]] < s + n;
            if (ok) break;
        }
        if (n < 2) {
            s++;
            continue;
        }
        if (p->n_chains == cap) {
            cap = cap ? cap * 2 : 8;
            rt_host_chain *more = lector__realloc(p->chains, sizeof *more * (size_t)cap);
            if (!more) {
                lector__free(made_at);
                return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory planning memory");
            }
            p->chains = more;
        }
        const rt_value *D = &g->values[g->nodes[p->order[s]].out[0]];
        c.first = s;
        c.n = n;
        c.lead = lead_at[n - 1];
        c.row = c.rows = 1;
        for (int d = 0; d < D->ndim; d++) *(d < c.lead ? &c.rows : &c.row) *= D->dims[d];
        p->chains[p->n_chains] = c;
        p->chain_at[s] = p->n_chains++;
        for (int i = 0; i < n; i++) {
            const rt_node *nd = &g->nodes[p->order[s + i]];
            if (i + 1 < n) internal[nd->out[0]] = 1;
            /* what the chain reads stays until its last node has written */
            for (int k = 0; k < nd->n_in; k++)
                if (nd->in[k] >= 0 && c.in[i][k].src != RT_CHAIN_TILE && last[nd->in[k]] < s + n - 1)
                    last[nd->in[k]] = s + n - 1;
        }
        s += n;
    }
    lector__free(made_at);
    if (p->n_chains) {
        int nodes = 0;
        for (int i = 0; i < p->n_chains; i++) nodes += p->chains[i].n;
        lector__log(LECTOR_LOG_DEBUG, "%s: %d elementwise nodes run in %d chains on the host", g->name, nodes,
                    p->n_chains);
    }
    return LECTOR_OK;
}

/* ---- running one ---------------------------------------------------------------- */

typedef struct chain_run {
    const rt_host_chain *c;
    const rt_node *nodes[RT_CHAIN_MAX_NODES];
    void *data[RT_CHAIN_MAX_NODES][RT_CHAIN_MAX_IN]; /* the operands read from memory */
    const int64_t *dims;                             /* the chain's output dims */
    float *dst;                                      /* and its bytes */
    int64_t per_row;                                 /* tiles per row */
} chain_run;

/* Tiles [t0, t1) of a chain through every node, each node's tile in
 * bufs[i * TILE] (the last one's in dst), on the calling thread. */
static lector_status run_tiles(const chain_run *r, float *bufs, int64_t t0, int64_t t1, lector_error *err)
{
    const rt_host_chain *c = r->c;
    rt_kernel_ctx one = {1, err};
    for (int64_t t = t0; t < t1; t++) {
        int64_t q = t / r->per_row, j0 = (t % r->per_row) * TILE, len = LECTOR_MIN((int64_t)TILE, c->row - j0);
        int64_t coord[LECTOR_MAX_DIMS], rest = q;
        for (int d = c->lead - 1; d >= 0; d--) {
            coord[d] = rest % r->dims[d];
            rest /= r->dims[d];
        }
        for (int i = 0; i < c->n; i++) {
            const rt_node *nd = r->nodes[i];
            lector_tensor in[RT_CHAIN_MAX_IN], out;
            for (int k = 0; k < nd->n_in; k++) {
                const rt_chain_input *ci = &c->in[i][k];
                memset(&in[k], 0, sizeof in[k]);
                if (ci->src == RT_CHAIN_ABSENT) continue;
                in[k].dtype = LECTOR_DTYPE_FLOAT32;
                in[k].ndim = 1;
                in[k].dims[0] = ci->src == RT_CHAIN_PER_ROW ? 1 : len;
                if (ci->src == RT_CHAIN_TILE) {
                    in[k].data = bufs + (size_t)ci->node * TILE;
                } else if (ci->src == RT_CHAIN_WHOLE) {
                    in[k].data = (float *)r->data[i][k] + q * c->row + j0;
                } else {
                    int64_t o = 0;
                    for (int d = 0; d < c->lead; d++) o += coord[d] * ci->stride[d];
                    in[k].data = (float *)r->data[i][k] + o;
                }
            }
            out.dtype = LECTOR_DTYPE_FLOAT32;
            out.ndim = 1;
            out.dims[0] = len;
            out.data = i + 1 < c->n ? bufs + (size_t)i * TILE : r->dst + q * c->row + j0;
            int fo = fast_op[nd->op];
            if (fo >= 0 && (in[0].dims[0] == len || in[1].dims[0] == len)) {
                /* a tile operand is read in full, a per-row one as its value (aliasing is fine: y[i]
                 * is written after a[i] and b[i] are read, in every version of the loop) */
                const float *a = in[0].data, *b = in[1].data;
                int wa = in[0].dims[0] == len, wb = in[1].dims[0] == len;
                rt_binary_span(fo, wa ? a : NULL, wa ? 0.f : a[0], wb ? b : NULL, wb ? 0.f : b[0], out.data, len);
                if (nd->act != RT_ACT_NONE) rt_apply_act(out.data, len, nd->act, nd->act_alpha, nd->act_beta);
                continue;
            }
            lector_status st = rt_op_table[nd->op].ref(nd, in, &out, &one);
            if (st) return st;
        }
    }
    return LECTOR_OK;
}

lector_status rt_host_chain_run(const rt_plan *p, const rt_host_chain *c, void *arena, const lector_tensor *inputs,
                                const rt_kernel_ctx *ctx)
{
    const rt_graph *g = p->g;
    chain_run r = {.c = c};
    for (int i = 0; i < c->n; i++) {
        const rt_node *nd = r.nodes[i] = &g->nodes[p->order[c->first + i]];
        for (int k = 0; k < nd->n_in; k++)
            r.data[i][k] = c->in[i][k].src == RT_CHAIN_WHOLE || c->in[i][k].src == RT_CHAIN_PER_ROW
                               ? rt_plan_value_data(p, arena, inputs, nd->in[k])
                               : NULL;
    }
    int y = r.nodes[c->n - 1]->out[0];
    r.dims = g->values[y].dims;
    r.dst = rt_plan_value_data(p, arena, inputs, y);
    r.per_row = (c->row + TILE - 1) / TILE;
    int64_t tiles = c->rows * r.per_row;
    int threads = ctx->threads > 0 ? ctx->threads : 1;
    int nt = c->rows * c->row < PAR_MIN ? 1 : (int)LECTOR_MIN((int64_t)threads, tiles);
    size_t per_thread = (size_t)(c->n - 1) * TILE;
    float *bufs = lector__aligned_alloc(sizeof(float) * (per_thread ? per_thread : 1) * (size_t)nt);
    if (!bufs)
        return lector__error(ctx->err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory running node %s", g->name,
                             r.nodes[0]->name);
    lector_status st = LECTOR_OK;
    if (nt == 1) {
        /* no parallel region: the kernels' own would then be nested ones, each a new team */
        st = run_tiles(&r, bufs, 0, tiles, ctx->err);
    } else {
        lector_error first = {0};
#pragma omp parallel num_threads(nt)
        {
            int id = omp_get_thread_num(), n = omp_get_num_threads();
            lector_error mine = {0};
            lector_status my_st =
                run_tiles(&r, bufs + per_thread * (size_t)id, tiles * id / n, tiles * (id + 1) / n, &mine);
            if (my_st) {
#pragma omp critical(lector_host_chain_err)
                if (!st) {
                    st = my_st;
                    first = mine;
                }
            }
        }
        if (st && ctx->err) *ctx->err = first;
    }
    lector__free(bufs);
    return st;
}
