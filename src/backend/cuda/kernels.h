/*
 * kernels.h - Lector's own CUDA kernels (kernels.cu), called from the CUDA
 * backend (cuda_backend.c). Every launcher enqueues on `stream` and returns
 * cudaGetLastError() as an int (0 = success), so the C side never needs the
 * CUDA C++ headers. Tensors are fp32, row-major (NCHW for images).
 *
 * Fused activations use the codes of rt_act (graph.h): 0 none, 1 relu,
 * 2 sigmoid, 3 hardsigmoid(alpha, beta), 4 hardswish(alpha, beta), 5 swish,
 * 6 clip(alpha, beta).
 */
#ifndef LECTOR_CUDA_KERNELS_H
#define LECTOR_CUDA_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CK_MAX_DIMS 8

typedef void *ck_stream; /* a cudaStream_t */

/* Broadcast description of a binary op after dimension collapsing: output
 * dims and per-operand element strides (0 where the operand broadcasts). */
typedef struct ck_bcast {
    int ndim;
    int64_t dims[CK_MAX_DIMS];
    int64_t sa[CK_MAX_DIMS], sb[CK_MAX_DIMS];
} ck_bcast;

/* A strided read of the input into a dense output (Slice, Transpose, Expand,
 * Split): out[i] = in[base + sum_d idx_d(i) * stride[d]]. */
typedef struct ck_gather {
    int ndim;
    int64_t dims[CK_MAX_DIMS];
    int64_t stride[CK_MAX_DIMS];
    int64_t base;
} ck_gather_desc;

enum ck_binop { CK_ADD, CK_SUB, CK_MUL, CK_DIV, CK_POW, CK_MAX, CK_MIN };
enum ck_unop {
    CK_RELU, CK_SIGMOID, CK_TANH, CK_EXP, CK_LOG, CK_SQRT, CK_ABS, CK_NEG, CK_HARDSIGMOID,
    CK_HARDSWISH, CK_CLIP, CK_LEAKYRELU, CK_ERF, CK_RECIPROCAL, CK_FLOOR, CK_CEIL
};

/* y[i] = act(y[i] + bias[(i / inner) % channels]); bias may be NULL. */
int ck_bias_act(ck_stream s, float *y, const float *bias, int64_t n, int64_t channels,
                int64_t inner, int act, float alpha, float beta);
/* y = act(x * scale[c] + shift[c]) with c = (i / inner) % channels (BatchNormalization). */
int ck_affine_act(ck_stream s, const float *x, float *y, const float *scale, const float *shift,
                  int64_t n, int64_t channels, int64_t inner, int act, float alpha, float beta);
int ck_binary(ck_stream s, int op, const float *a, const float *b, float *y, const ck_bcast *bc,
              int act, float alpha, float beta);
int ck_unary(ck_stream s, int op, const float *x, float *y, int64_t n, float alpha, float beta);
/* Mean over the last `inner` elements of each of `rows` rows. */
int ck_row_mean(ck_stream s, const float *x, float *y, int64_t rows, int64_t inner);
/* 2-D pooling over NCHW. is_max; count_include_pad for averages. */
int ck_pool2d(ck_stream s, const float *x, float *y, int64_t nc, int H, int W, int OH, int OW,
              int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int is_max,
              int count_include_pad);
/* Nearest resize over the last two axes with per-axis source index tables. */
int ck_resize_nearest(ck_stream s, const float *x, float *y, int64_t nc, int H, int W, int OH,
                      int OW, const int *hidx, const int *widx);
/* Strided gather for elements of 4 or 8 bytes. */
int ck_gather(ck_stream s, const void *x, void *y, const ck_gather_desc *g, int elem_size);
/* Softmax over `len` elements at stride `inner`, for outer*inner rows. */
int ck_softmax(ck_stream s, const float *x, float *y, int64_t outer, int64_t len, int64_t inner);
/* LayerNormalization over rows of `inner`; scale/bias have `ns`/`nb` elements (1 or inner; bias may be NULL). */
int ck_layernorm(ck_stream s, const float *x, float *y, const float *scale, int64_t ns,
                 const float *bias, int64_t nb, int64_t rows, int64_t inner, float eps);
/* A fused chain of elementwise ops over one output shape (the CUDA
 * backend's fusion pass): per element, each op combines two operands, each
 * an earlier op's result (a register), an external tensor read through its
 * own broadcast strides, or a scalar constant, then applies its fused
 * activation; the results listed in out_reg are stored. */
#define CK_CHAIN_OPS 24
#define CK_CHAIN_EXT 6
#define CK_CHAIN_OUT 4
#define CK_CHAIN_DIMS 4
#define CK_SCALAR (-100)
enum { CK_UN_BASE = 16 }; /* op codes >= CK_UN_BASE are unary: CK_UN_BASE + ck_unop */

typedef struct ck_chain_op {
    int8_t code, act;
    int8_t a, b;          /* >= 0: register (op index); -1 - k: external k; CK_SCALAR: ca/cb */
    float alpha, beta;    /* of the activation, or of the unary op */
    float ca, cb;
} ck_chain_op;

typedef struct ck_chain {
    int n_ops, n_ext, n_out, ndim;
    int64_t dims[CK_CHAIN_DIMS];
    int64_t stride[CK_CHAIN_EXT][CK_CHAIN_DIMS];
    int8_t out_reg[CK_CHAIN_OUT];
    ck_chain_op ops[CK_CHAIN_OPS];
} ck_chain;

int ck_chain_run(ck_stream s, const ck_chain *c, const float *const *ext, float *const *out);

#ifdef __cplusplus
}
#endif

#endif
