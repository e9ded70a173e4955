/*
 * ops.h - the operator table: for each ONNX operator Lector supports, a
 * shape/type inference function and a reference kernel in C.
 *
 * The reference kernels are the oracle of every faster backend (oneDNN,
 * CUDA): readable, correct for every shape, multi-threaded (OpenMP) where it
 * matters (Conv, ConvTranspose, MatMul, Gemm); the GEMM under those four has
 * AVX-512 and AVX2 micro-kernels beside its portable C one (gemm.c). Constant folding also runs
 * them, so anything computable from constants never reaches a backend.
 *
 * Semantics are those of ONNX opset 13 for every operator; the loader
 * (onnx_load.c) rewrites attribute forms of older opsets (Clip min/max,
 * Slice starts/ends/axes, Squeeze/Unsqueeze axes, Split split, Pad pads,
 * Resize/Upsample scales) into the input form before anything else sees the
 * graph. ReduceMean/ReduceSum/ReduceMax take `axes` as an attribute (opset
 * <= 17) or as input 1 (ReduceSum >= 13, all >= 18): both are accepted.
 * ArgMax has the same semantics in every opset (select_last_index, added in
 * opset 12, defaults to 0).
 */
#ifndef LECTOR_RT_OPS_H
#define LECTOR_RT_OPS_H

#include "rt/graph.h"

/* X-macro list of supported operators (ONNX names). */
/* clang-format off */
#define RT_OP_LIST(X) \
    X(Abs) X(Add) X(ArgMax) X(AveragePool) X(BatchNormalization) X(Cast) X(Ceil) X(Clip) \
    X(Concat) X(Constant) X(ConstantOfShape) X(Conv) X(ConvTranspose) X(Div) X(Dropout) X(Equal) \
    X(Erf) X(Exp) X(Expand) X(Flatten) X(Floor) X(Gather) X(Gemm) X(GlobalAveragePool) \
    X(GlobalMaxPool) X(HardSigmoid) X(HardSwish) X(Identity) X(LayerNormalization) X(LeakyRelu) X(Log) X(MatMul) \
    X(Max) X(MaxPool) X(Min) X(Mul) X(Neg) X(Pad) X(Pow) X(Range) \
    X(Reciprocal) X(ReduceMax) X(ReduceMean) X(ReduceSum) X(Relu) X(Reshape) X(Resize) X(Shape) \
    X(Sigmoid) X(Slice) X(Softmax) X(Split) X(Sqrt) X(Squeeze) X(Sub) X(Tanh) \
    X(Tile) X(TopK) X(Transpose) X(Unsqueeze) X(Where)
/* clang-format on */

enum {
#define RT_OP_ENUM(n) RT_OP_##n,
    RT_OP_LIST(RT_OP_ENUM)
#undef RT_OP_ENUM
        RT_OP_COUNT
};

/* Per-call context of a kernel. */
typedef struct rt_kernel_ctx {
    int threads;       /* OpenMP threads the kernel may use (>= 1) */
    lector_error *err; /* where a failing kernel writes its message (may be NULL) */
} rt_kernel_ctx;

/*
 * Reference kernel. `in[i]` is the i-th input of the node (in[i].data == NULL
 * for an absent optional input, i < n->n_in); `out[i]` has dtype, ndim, dims
 * set by inference and data allocated by the caller (its contents are
 * undefined on entry). Inputs and outputs never alias. Honours n->act (the
 * fused activation) for the ops the fusion pass fuses into: Conv,
 * ConvTranspose, MatMul, Gemm, Add, BatchNormalization.
 * Returns LECTOR_OK or an error filled through ctx->err.
 */
typedef lector_status (*rt_kernel_fn)(const rt_node *n, const lector_tensor *in, lector_tensor *out,
                                      const rt_kernel_ctx *ctx);

/*
 * Shape and type inference. `in[i]` is the i-th input value (NULL if absent):
 * its dtype/ndim/dims are known, and `data` is non-NULL when it is a
 * constant. Sets dtype/ndim/dims of every `out[i]`. An input whose *data* is
 * needed for the output shape (Reshape's shape, Slice's starts, Resize's
 * sizes, ...) but is not constant -> LECTOR_ERR_UNSUPPORTED_OP with a message.
 * Invalid shapes or attributes -> LECTOR_ERR_SHAPE / LECTOR_ERR_INVALID_MODEL /
 * LECTOR_ERR_DTYPE; messages name the node (n->name) and the problem.
 */
typedef lector_status (*rt_infer_fn)(const rt_node *n, const rt_value *const *in, rt_value *const *out,
                                     lector_error *err);

typedef struct rt_op_def {
    const char *name;
    rt_infer_fn infer;
    rt_kernel_fn ref;
} rt_op_def;

extern const rt_op_def rt_op_table[RT_OP_COUNT];

/* Index of an ONNX operator name in rt_op_table, -1 if unsupported. */
int rt_op_find(const char *name);

/* Declarations of every infer and reference function: rt_infer_<Op>, rt_ref_<Op>. */
#define RT_OP_DECL(n)                                                                                                  \
    lector_status rt_infer_##n(const rt_node *nd, const rt_value *const *in, rt_value *const *out, lector_error *err); \
    lector_status rt_ref_##n(const rt_node *nd, const lector_tensor *in, lector_tensor *out, const rt_kernel_ctx *ctx);
RT_OP_LIST(RT_OP_DECL)
#undef RT_OP_DECL

/* y[i] = a[i] op b[i] for i < len, op 0 Add, 1 Sub, 2 Mul, 3 Div, as the
 * reference kernels compute it (one IEEE operation per element); a NULL a
 * or b stands for the scalar ac or bc. y may be a or b. The host
 * executor's chains (host_chain.c) call it per tile: the reference
 * kernel's broadcast plan cost as much as the arithmetic there. */
void rt_binary_span(int op, const float *a, float ac, const float *b, float bc, float *y, int64_t len);

/* Applies a fused activation to `n` floats in place. */
void rt_apply_act(float *x, int64_t n, rt_act act, float alpha, float beta);
/* A convolution's output y, n_img images of m channels of sp values each:
 * bias[channel] added (bias may be NULL), then node nd's fused activation;
 * `threads` OpenMP threads for large outputs. */
void rt_apply_bias_act(const rt_node *nd, float *y, int64_t n_img, int64_t m, int64_t sp, const float *bias,
                       int threads);

#endif
