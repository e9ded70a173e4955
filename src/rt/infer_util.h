/*
 * infer_util.h - helpers shared by the shape-inference functions
 * (src/rt/infer_*.c) and the reference kernels (src/backend/cpu/ref):
 * axis normalisation, numpy broadcasting of shapes, reading small integer
 * tensors, and the geometry of convolutions and pools (one implementation so
 * that inference and kernels never disagree on pads or output sizes).
 */
#ifndef LECTOR_RT_INFER_UTIL_H
#define LECTOR_RT_INFER_UTIL_H

#include "rt/ops.h"
#include "util/util.h"

/* Default-domain opset of the node's model (the loader's `__opset`). */
int64_t rt_node_opset(const rt_node *n);

/* Normalises `axis` into [0, rank); -1 if out of range. */
int rt_norm_axis(int64_t axis, int rank);

/* Element `i` of an int32/int64 tensor as int64 (0 for other dtypes). */
int64_t rt_i64_at(lector_dtype dt, const void *data, int64_t i);
/* Element `i` of a numeric tensor as double (0 for unknown dtypes). */
double rt_f64_at(lector_dtype dt, const void *data, int64_t i);

/* numpy broadcasting of `n` shapes; 0 on success, -1 if they do not broadcast. */
int rt_broadcast_dims(int n, const int *ndims, const int64_t *const *dims, int *out_ndim, int64_t *out_dims);

/* Largest element count an inferred shape may have (bounds allocation and
 * keeps every size computation far from int64 overflow). */
#define RT_MAX_NUMEL ((int64_t)1 << 40)

/* LECTOR_ERR_LIMIT when a shape has a negative dim or more than RT_MAX_NUMEL
 * elements (overflow-checked); LECTOR_OK otherwise. */
lector_status rt_check_dims(const rt_node *n, int ndim, const int64_t *dims, lector_error *err);

/* Sets dtype/ndim/dims of an output value. */
void rt_set_out(rt_value *v, lector_dtype dt, int ndim, const int64_t *dims);

/* Requires input `i` to be present and constant with int32/int64 data. */
lector_status rt_need_const_ints(const rt_node *n, const rt_value *const *in, int i, const char *what,
                                 lector_error *err);

/* Reduced axes of ReduceX: from `axes` (input 1; NULL if absent) or the
 * attribute; mask[i] = 1 for each reduced axis of a rank-`r` input. */
lector_status rt_reduce_mask(const rt_node *n, int r, const lector_tensor *axes, int *mask, lector_error *err);

/* Geometry of Conv/ConvTranspose/pools, spatial rank 1..3 (stored in
 * RT_SPATIAL slots; unused leading slots have size 1, kernel 1, stride 1). */
#define RT_SPATIAL 3
typedef struct rt_conv_geom {
    int nsp;                 /* spatial rank of the node (1..3) */
    int64_t in[RT_SPATIAL];  /* input spatial sizes */
    int64_t out[RT_SPATIAL]; /* output spatial sizes */
    int64_t k[RT_SPATIAL];   /* kernel */
    int64_t s[RT_SPATIAL];   /* strides */
    int64_t d[RT_SPATIAL];   /* dilations */
    int64_t pb[RT_SPATIAL];  /* pads at the beginning */
    int64_t pe[RT_SPATIAL];  /* pads at the end */
} rt_conv_geom;

typedef enum { RT_GEOM_CONV, RT_GEOM_CONVT, RT_GEOM_POOL } rt_geom_kind;

/* Computes the geometry from the node's attributes and the input shape
 * `xdims` (rank 2 + nsp); `wdims` is the weight shape (Conv/ConvTranspose)
 * or NULL for pools (kernel_shape attribute). */
lector_status rt_conv_geom_make(const rt_node *n, rt_geom_kind kind, int xndim, const int64_t *xdims,
                                const int64_t *wdims, rt_conv_geom *g, lector_error *err);

/* Slice: per-axis first index, step and element count of a rank-`r` input
 * of shape `dims` (axes not sliced: 0, 1, dims[i]). steps/axes may be NULL. */
lector_status rt_slice_params(const rt_node *n, int r, const int64_t *dims, const lector_tensor *starts,
                              const lector_tensor *ends, const lector_tensor *axes, const lector_tensor *steps,
                              int64_t *start, int64_t *step, int64_t *count, lector_error *err);

/* Pad: pads at the beginning/end of every axis (negative = crop). axes may be NULL. */
lector_status rt_pad_params(const rt_node *n, int r, const lector_tensor *pads, const lector_tensor *axes, int64_t *pb,
                            int64_t *pe, lector_error *err);

/* Resize: output dims and the per-axis scale used for coordinates.
 * roi/scales/sizes may be NULL or empty. */
lector_status rt_resize_params(const rt_node *n, int r, const int64_t *dims, const lector_tensor *scales,
                               const lector_tensor *sizes, int64_t *odims, float *scale, lector_error *err);

/* Split: sizes of the n_out parts along `axis`. split may be NULL. */
lector_status rt_split_sizes(const rt_node *n, int64_t dim, const lector_tensor *split, int n_out, int64_t *sizes,
                             lector_error *err);

/* A value as a tensor view when present (non-NULL slot), else NULL. */
const lector_tensor *rt_opt_view(const rt_node *n, const rt_value *const *in, int i, lector_tensor *buf);
#endif
