/*
 * elementwise.c - numpy-broadcasting binary operators (Add, Sub, Mul, Div,
 * Max, Min, Pow, Equal) and Where.
 *
 * Shapes are merged by rt_bcast so that the inner loop runs over the longest
 * contiguous stretch; it has separate versions for the (contiguous,
 * broadcast) cases so that the compiler vectorises the common ones.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/ref/ref.h"

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN };

#define PAR_MIN 65536

/* out[...] = EXPR(x, y) over a broadcast pair; T = element type. Work is
 * split in tiles of at most CHUNK elements of a row, so that one long
 * contiguous row (same-shape operands) is parallel too. */
#define CHUNK 16384
/* One stretch of a row; XE / YE read an operand element (pa[i]) or its one
 * broadcast value (xc), a loop-invariant the compiler vectorises around. */
#define BIN_SPAN(T, EXPR, XE, YE)           \
    do {                                    \
        for (int64_t i = i0; i < i1; i++) { \
            T x = (XE), y = (YE);           \
            po[i] = (T)(EXPR);              \
        }                                   \
    } while (0)
#define BIN_TILE(T, EXPR)                                    \
    do {                                                     \
        int64_t row = tile / nch, i0 = (tile % nch) * CHUNK; \
        int64_t i1 = LECTOR_MIN(inner, i0 + CHUNK);          \
        int64_t off[RT_BC_MAX];                              \
        rt_bcast_row(&bc, row, off);                         \
        const T *pa = A_ + off[0], *pb = B_ + off[1];        \
        T *po = O_ + row * inner;                            \
        const T xc = pa[0], yc = pb[0];                      \
        if (s0 && s1)                                        \
            BIN_SPAN(T, EXPR, pa[i], pb[i]);                 \
        else if (s0)                                         \
            BIN_SPAN(T, EXPR, pa[i], yc);                    \
        else if (s1)                                         \
            BIN_SPAN(T, EXPR, xc, pb[i]);                    \
        else                                                 \
            BIN_SPAN(T, EXPR, xc, yc);                       \
    } while (0)
/* No parallel region at all unless it pays: a chain of the host executor
 * (rt/host_chain.c) calls the kernel per tile from its own threads, where
 * even a serialised region would cost a team. */
#define BIN_LOOP(T, EXPR)                                                                                 \
    do {                                                                                                  \
        const T *A_ = a->data, *B_ = b->data;                                                             \
        T *O_ = out->data;                                                                                \
        int64_t inner = bc.inner, s0 = bc.istep[0], s1 = bc.istep[1];                                     \
        int64_t nch = (inner + CHUNK - 1) / CHUNK, tiles = bc.rows * nch;                                 \
        if (threads > 1 && total > PAR_MIN && tiles > 1) {                                                \
            _Pragma("omp parallel for num_threads(threads)") for (int64_t tile = 0; tile < tiles; tile++) \
                BIN_TILE(T, EXPR);                                                                        \
        } else {                                                                                          \
            for (int64_t tile = 0; tile < tiles; tile++) BIN_TILE(T, EXPR);                               \
        }                                                                                                 \
    } while (0)

#define BIN_OPS(T, ISINT)                                       \
    switch (op) {                                               \
    case OP_ADD: BIN_LOOP(T, x + y); break;                     \
    case OP_SUB: BIN_LOOP(T, x - y); break;                     \
    case OP_MUL: BIN_LOOP(T, x *y); break;                      \
    case OP_DIV:                                                \
        if (ISINT)                                              \
            BIN_LOOP(T, y == 0 ? 0 : x / y);                    \
        else                                                    \
            BIN_LOOP(T, x / y);                                 \
        break;                                                  \
    case OP_MAX: BIN_LOOP(T, (x != x || x > y) ? x : y); break; \
    case OP_MIN: BIN_LOOP(T, (x != x || x < y) ? x : y); break; \
    }

/* The broadcast plan of out = f(a, b) in *bc; out's element count (0:
 * nothing to do, bc untouched). */
static int64_t bin_bcast(rt_bcast *bc, lector_tensor *out, const lector_tensor *a, const lector_tensor *b)
{
    int64_t total = lector_tensor_numel(out);
    const lector_tensor *ins[2] = {a, b};
    if (total) rt_bcast_init(bc, out, ins, 2);
    return total;
}

/* out = op(a, b); `a` may be `out` itself (same shape). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static lector_status
binary(const rt_node *nd, int op, const lector_tensor *a, const lector_tensor *b, lector_tensor *out,
       const rt_kernel_ctx *ctx)
{
    if (a->dtype != b->dtype) return rt_ref_bad_dtype(nd, ctx, b->dtype);
    rt_bcast bc;
    int64_t total = bin_bcast(&bc, out, a, b);
    if (total == 0) return LECTOR_OK;
    int threads = ctx->threads;
    switch (a->dtype) {
    case LECTOR_DTYPE_FLOAT32: BIN_OPS(float, 0); break;
    case LECTOR_DTYPE_FLOAT64: BIN_OPS(double, 0); break;
    case LECTOR_DTYPE_INT64: BIN_OPS(int64_t, 1); break;
    case LECTOR_DTYPE_INT32: BIN_OPS(int32_t, 1); break;
    case LECTOR_DTYPE_INT8: BIN_OPS(int8_t, 1); break;
    case LECTOR_DTYPE_UINT8: BIN_OPS(uint8_t, 1); break;
    default: return rt_ref_bad_dtype(nd, ctx, a->dtype);
    }
    return LECTOR_OK;
}

static lector_status binary_act(const rt_node *nd, int op, const lector_tensor *in, lector_tensor *out,
                                const rt_kernel_ctx *ctx)
{
    lector_status st = binary(nd, op, &in[0], &in[1], out, ctx);
    if (st == LECTOR_OK && nd->act != RT_ACT_NONE) {
        if (out->dtype != LECTOR_DTYPE_FLOAT32) return rt_ref_bad_dtype(nd, ctx, out->dtype);
        rt_apply_act(out->data, lector_tensor_numel(out), nd->act, nd->act_alpha, nd->act_beta);
    }
    return st;
}

/* The op table's kernels (rt_ref_Add ...): one body, the operator as an argument. */
#define REF_KERNEL(name, body, op)                                                              \
    lector_status rt_ref_##name(const rt_node *nd, const lector_tensor *in, lector_tensor *out, \
                                const rt_kernel_ctx *ctx)                                       \
    {                                                                                           \
        return body(nd, op, in, out, ctx);                                                      \
    }

REF_KERNEL(Add, binary_act, OP_ADD)
REF_KERNEL(Sub, binary_act, OP_SUB)
REF_KERNEL(Mul, binary_act, OP_MUL)
REF_KERNEL(Div, binary_act, OP_DIV)

#define SPAN(EXPR)                                                   \
    do {                                                             \
        if (a && b)                                                  \
            for (int64_t i = 0; i < len; i++) y[i] = a[i] EXPR b[i]; \
        else if (a)                                                  \
            for (int64_t i = 0; i < len; i++) y[i] = a[i] EXPR bc;   \
        else                                                         \
            for (int64_t i = 0; i < len; i++) y[i] = ac EXPR b[i];   \
    } while (0)
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
binary_span(int op, const float *a, float ac, const float *b, float bc, float *y, int64_t len)
{
    switch (op) {
    case 0: SPAN(+); break;
    case 1: SPAN(-); break;
    case 2: SPAN(*); break;
    default: SPAN(/); break;
    }
}
#undef SPAN

/* A plain function around the multiversioned one: clang (14) emits a
 * target_clones function's dispatcher only in a unit that calls it. */
void rt_binary_span(int op, const float *a, float ac, const float *b, float bc, float *y, int64_t len)
{
    binary_span(op, a, ac, b, bc, y, len);
}

/* out = in[0] broadcast to out's shape. */
static lector_status bcast_copy(const rt_node *nd, const lector_tensor *a, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    size_t es = lector_dtype_size(a->dtype);
    if (!es) return rt_ref_bad_dtype(nd, ctx, a->dtype);
    if (lector_tensor_numel(out) == 0) return LECTOR_OK;
    rt_bcast bc;
    const lector_tensor *ins[1] = {a};
    rt_bcast_init(&bc, out, ins, 1);
    const char *src = a->data;
    char *dst = out->data;
    for (int64_t row = 0; row < bc.rows; row++) {
        int64_t off[RT_BC_MAX];
        rt_bcast_row(&bc, row, off);
        char *po = dst + (size_t)(row * bc.inner) * es;
        if (bc.istep[0]) {
            memcpy(po, src + (size_t)off[0] * es, (size_t)bc.inner * es);
        } else {
            for (int64_t i = 0; i < bc.inner; i++) memcpy(po + (size_t)i * es, src + (size_t)off[0] * es, es);
        }
    }
    return LECTOR_OK;
}

static lector_status variadic(const rt_node *nd, int op, const lector_tensor *in, lector_tensor *out,
                              const rt_kernel_ctx *ctx)
{
    if (nd->n_in == 1) return bcast_copy(nd, &in[0], out, ctx);
    lector_status st = binary(nd, op, &in[0], &in[1], out, ctx);
    for (int k = 2; k < nd->n_in && st == LECTOR_OK; k++) st = binary(nd, op, out, &in[k], out, ctx);
    return st;
}

REF_KERNEL(Max, variadic, OP_MAX)
REF_KERNEL(Min, variadic, OP_MIN)

/* ---- Pow: float base (any exponent type) or integer base -------------- */

lector_status rt_ref_Pow(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    const lector_tensor *a = &in[0], *b = &in[1];
    rt_bcast bc;
    int64_t total = bin_bcast(&bc, out, a, b);
    if (total == 0) return LECTOR_OK;
    int threads = ctx->threads;
    if (a->dtype == LECTOR_DTYPE_FLOAT32 && b->dtype == LECTOR_DTYPE_FLOAT32) {
        BIN_LOOP(float, y == 2.f ? x * x : powf(x, y));
        return LECTOR_OK;
    }
    lector_dtype da = a->dtype, db = b->dtype;
    int ok_a = da == LECTOR_DTYPE_FLOAT32 || da == LECTOR_DTYPE_FLOAT64 || da == LECTOR_DTYPE_INT32 ||
               da == LECTOR_DTYPE_INT64;
    int ok_b = db == LECTOR_DTYPE_FLOAT32 || db == LECTOR_DTYPE_FLOAT64 || db == LECTOR_DTYPE_INT32 ||
               db == LECTOR_DTYPE_INT64;
    if (!ok_a) return rt_ref_bad_dtype(nd, ctx, da);
    if (!ok_b) return rt_ref_bad_dtype(nd, ctx, db);
    for (int64_t row = 0; row < bc.rows; row++) {
        int64_t off[RT_BC_MAX];
        rt_bcast_row(&bc, row, off);
        for (int64_t i = 0; i < bc.inner; i++) {
            double x = rt_f64_at(da, a->data, off[0] + i * bc.istep[0]);
            double y = rt_f64_at(db, b->data, off[1] + i * bc.istep[1]);
            double v = pow(x, y);
            int64_t o = row * bc.inner + i;
            switch (da) {
            case LECTOR_DTYPE_FLOAT32: ((float *)out->data)[o] = (float)v; break;
            case LECTOR_DTYPE_FLOAT64: ((double *)out->data)[o] = v; break;
            case LECTOR_DTYPE_INT32: ((int32_t *)out->data)[o] = (int32_t)v; break;
            default: ((int64_t *)out->data)[o] = (int64_t)v; break;
            }
        }
    }
    return LECTOR_OK;
}

/* ---- Equal -------------------------------------------------------------- */

#define EQ_LOOP(T)                                                                                    \
    do {                                                                                              \
        const T *A_ = a->data, *B_ = b->data;                                                         \
        for (int64_t row = 0; row < bc.rows; row++) {                                                 \
            int64_t off[RT_BC_MAX];                                                                   \
            rt_bcast_row(&bc, row, off);                                                              \
            for (int64_t i = 0; i < bc.inner; i++)                                                    \
                O[row * bc.inner + i] = A_[off[0] + i * bc.istep[0]] == B_[off[1] + i * bc.istep[1]]; \
        }                                                                                             \
    } while (0)

lector_status rt_ref_Equal(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    const lector_tensor *a = &in[0], *b = &in[1];
    if (a->dtype != b->dtype) return rt_ref_bad_dtype(nd, ctx, b->dtype);
    rt_bcast bc;
    if (bin_bcast(&bc, out, a, b) == 0) return LECTOR_OK;
    uint8_t *O = out->data;
    switch (a->dtype) {
    case LECTOR_DTYPE_FLOAT32: EQ_LOOP(float); break;
    case LECTOR_DTYPE_FLOAT64: EQ_LOOP(double); break;
    case LECTOR_DTYPE_INT64: EQ_LOOP(int64_t); break;
    case LECTOR_DTYPE_INT32: EQ_LOOP(int32_t); break;
    case LECTOR_DTYPE_INT8: EQ_LOOP(int8_t); break;
    case LECTOR_DTYPE_UINT8:
    case LECTOR_DTYPE_BOOL: EQ_LOOP(uint8_t); break;
    default: return rt_ref_bad_dtype(nd, ctx, a->dtype);
    }
    return LECTOR_OK;
}

/* ---- Where -------------------------------------------------------------- */

lector_status rt_ref_Where(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx)
{
    if (in[0].dtype != LECTOR_DTYPE_BOOL) return rt_ref_bad_dtype(nd, ctx, in[0].dtype);
    size_t es = lector_dtype_size(in[1].dtype);
    if (!es || in[2].dtype != in[1].dtype) return rt_ref_bad_dtype(nd, ctx, in[1].dtype);
    if (lector_tensor_numel(out) == 0) return LECTOR_OK;
    rt_bcast bc;
    const lector_tensor *ins[3] = {&in[0], &in[1], &in[2]};
    rt_bcast_init(&bc, out, ins, 3);
    const uint8_t *c = in[0].data;
    const char *x = in[1].data, *y = in[2].data;
    char *o = out->data;
    for (int64_t row = 0; row < bc.rows; row++) {
        int64_t off[RT_BC_MAX];
        rt_bcast_row(&bc, row, off);
        for (int64_t i = 0; i < bc.inner; i++) {
            int64_t oi = row * bc.inner + i;
            const char *src = c[off[0] + i * bc.istep[0]] ? x + (size_t)(off[1] + i * bc.istep[1]) * es
                                                          : y + (size_t)(off[2] + i * bc.istep[2]) * es;
            memcpy(o + (size_t)oi * es, src, es);
        }
    }
    return LECTOR_OK;
}
