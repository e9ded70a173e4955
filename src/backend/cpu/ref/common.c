/*
 * common.c - helpers of the reference kernels: errors, broadcast iteration.
 */
#include <string.h>

#include "backend/cpu/ref/ref.h"

lector_status rt_ref_bad_dtype(const rt_node *n, const rt_kernel_ctx *ctx, lector_dtype dt)
{
    return lector__error(ctx ? ctx->err : NULL, LECTOR_ERR_DTYPE, "node %s: %s: element type %s is not supported",
                         n->name ? n->name : "?", rt_op_table[n->op].name, lector_dtype_name(dt));
}

lector_status rt_ref_oom(const rt_node *n, const rt_kernel_ctx *ctx)
{
    return lector__error(ctx ? ctx->err : NULL, LECTOR_ERR_OUT_OF_MEMORY, "node %s: out of memory",
                         n->name ? n->name : "?");
}

void rt_bcast_init(rt_bcast *b, const lector_tensor *out, const lector_tensor *const *ins, int n)
{
    int r = out->ndim;
    int64_t dims[LECTOR_MAX_DIMS], st[RT_BC_MAX][LECTOR_MAX_DIMS];
    for (int a = 0; a < r; a++) dims[a] = out->dims[a];
    for (int k = 0; k < n; k++) {
        const lector_tensor *t = ins[k];
        int64_t s = 1;
        for (int a = r - 1; a >= 0; a--) {
            int j = a - (r - t->ndim);
            int64_t d = j >= 0 ? t->dims[j] : 1;
            st[k][a] = (d == 1 && dims[a] != 1) ? 0 : s;
            s *= d;
        }
    }
    /* drop size-1 dims, then merge neighbours that stay contiguous for all inputs */
    int m = 0;
    int64_t md[LECTOR_MAX_DIMS], ms[RT_BC_MAX][LECTOR_MAX_DIMS];
    for (int a = 0; a < r; a++) {
        if (dims[a] == 1) continue;
        if (m > 0) {
            int ok = 1;
            for (int k = 0; k < n; k++)
                if (ms[k][m - 1] != st[k][a] * dims[a]) ok = 0;
            if (ok) {
                md[m - 1] *= dims[a];
                for (int k = 0; k < n; k++) ms[k][m - 1] = st[k][a];
                continue;
            }
        }
        md[m] = dims[a];
        for (int k = 0; k < n; k++) ms[k][m] = st[k][a];
        m++;
    }
    if (m == 0) {
        md[0] = 1;
        for (int k = 0; k < n; k++) ms[k][0] = 0;
        m = 1;
    }
    b->ndim = m;
    b->n = n;
    for (int a = 0; a < m; a++) {
        b->dims[a] = md[a];
        for (int k = 0; k < n; k++) b->strides[k][a] = ms[k][a];
    }
    b->inner = md[m - 1];
    b->rows = 1;
    for (int a = 0; a < m - 1; a++) b->rows *= md[a];
    for (int k = 0; k < n; k++) b->istep[k] = ms[k][m - 1];
}

void rt_bcast_row(const rt_bcast *b, int64_t row, int64_t *off)
{
    for (int k = 0; k < b->n; k++) off[k] = 0;
    for (int a = b->ndim - 2; a >= 0; a--) {
        int64_t i = row % b->dims[a];
        row /= b->dims[a];
        for (int k = 0; k < b->n; k++) off[k] += i * b->strides[k][a];
    }
}
