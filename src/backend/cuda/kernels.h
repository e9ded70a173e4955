/*
 * kernels.h - Lector's own CUDA kernels (kernels.cu), called from the CUDA
 * backend (cuda_*.c). Every launcher enqueues on `stream` and returns
 * cudaGetLastError() as an int (0 = success), so the C side never needs the
 * CUDA C++ headers.
 *
 * Storage: a float tensor is held either as fp32 or as fp16 (`half` = 1);
 * arithmetic is always fp32 in registers. Layout: a 4-D tensor is NCHW or,
 * with `nhwc` = 1, NHWC (channels innermost, what cuDNN's tensor-core
 * convolutions read and write). Everything else is dense row-major.
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
    CK_RELU,
    CK_SIGMOID,
    CK_TANH,
    CK_EXP,
    CK_LOG,
    CK_SQRT,
    CK_ABS,
    CK_NEG,
    CK_HARDSIGMOID,
    CK_HARDSWISH,
    CK_CLIP,
    CK_LEAKYRELU,
    CK_ERF,
    CK_RECIPROCAL,
    CK_FLOOR,
    CK_CEIL
};

/* Mean over the last `inner` elements of each of `rows` rows (GlobalAveragePool, NCHW). */
int ck_row_mean(ck_stream s, const void *x, void *y, int64_t rows, int64_t inner, int half);
/* GlobalAveragePool over NHWC: y[n][c] = mean over h, w of x[n][h][w][c]. Two
 * passes through `scratch` (n * splits * c floats) so that the sum order is
 * fixed: results never depend on timing. */
int ck_gap_nhwc(ck_stream s, const void *x, void *y, int64_t n, int64_t hw, int64_t c, int half, float *scratch,
                int splits);
/* Number of splits ck_gap_nhwc uses for this shape (scratch size = n * splits * c floats). */
int ck_gap_nhwc_splits(int64_t n, int64_t hw, int64_t c);
/* 2-D pooling. is_max; count_include_pad for averages. nc = N*C planes. */
int ck_pool2d(ck_stream s, const void *x, void *y, int64_t n, int64_t c, int H, int W, int OH, int OW, int kh, int kw,
              int sh, int sw, int ph, int pw, int dh, int dw, int is_max, int count_include_pad, int half, int nhwc);
/* Nearest resize over H, W with per-axis source index tables. */
int ck_resize_nearest(ck_stream s, const void *x, void *y, int64_t n, int64_t c, int H, int W, int OH, int OW,
                      const int *hidx, const int *widx, int half, int nhwc);
/* Strided gather for elements of 2, 4 or 8 bytes. */
int ck_gather(ck_stream s, const void *x, void *y, const ck_gather_desc *g, int elem_size);
/* Softmax over `len` elements at stride `inner`, for outer*inner rows. */
int ck_softmax(ck_stream s, const void *x, void *y, int64_t outer, int64_t len, int64_t inner, int half);
/* LayerNormalization over rows of `inner`; scale/bias (fp32) have `ns`/`nb`
 * elements (1 or inner; bias may be NULL). */
int ck_layernorm(ck_stream s, const void *x, void *y, const float *scale, int64_t ns, const float *bias, int64_t nb,
                 int64_t rows, int64_t inner, float eps, int half);
/* Concatenation of n_in inputs along an axis: input k is [outer][len[k] * inner]
 * elements of `elem` bytes, the output [outer][sum(len) * inner]. */
#define CK_CONCAT_MAX 16
int ck_concat(ck_stream s, const void *const *in, const int64_t *len, int n_in, void *y, int64_t outer, int64_t inner,
              int elem);
/* Storage conversion of a tensor of n*c*h*w elements between fp32/fp16 and
 * NCHW/NHWC (a flat tensor: c = h = 1, w = its size). */
int ck_convert(ck_stream s, const void *x, void *y, int64_t n, int64_t c, int64_t h, int64_t w, int src_half,
               int src_nhwc, int dst_half, int dst_nhwc);
/* One row of a model input made from 8-bit pixels (lector_image_input,
 * whose comment in lector_rt.h is the formula): offsets into the upload
 * `up` of ck_image_rows, the region's pixels packed (rows width * cn bytes). */
typedef struct ck_image_row {
    double m[9]; /* the crop's inverse map (warp) */
    int64_t px, xofs, alpha, yofs, beta, lut;
    int64_t crop;                             /* the warped crop (crop_width x crop_height x cn), made first */
    int width, height;                        /* the pixels' region */
    int out_width;                            /* columns from here on are zero */
    int warp, crop_width, crop_height, turns; /* turns: bit 0 rot90 ccw, bit 1 then 180 */
    int origin_x, origin_y, full_width, full_height;
    int sw, sh; /* the resize source: the turned crop, or the region */
} ck_image_row;

/* y: fp32 [batch][cn][dh][dw]; row b < n_rows from rows[b] (resize of the
 * region, or of the crop warped from it into up + crop first, then lut),
 * rows from n_rows on zero. Integer arithmetic, the crop's coordinates in
 * IEEE doubles without contraction: the CPU's samples, bit for bit.
 * `cubic`: the warp's 32 x 32 x 16 weights; max_cw x max_ch: the largest
 * crop (0 x 0: none). */
int ck_image_rows(ck_stream s, char *up, const ck_image_row *rows, int n_rows, const int16_t *cubic, int cn, int max_cw,
                  int max_ch, float *y, int batch, int dh, int dw);
/* Per row of `len` contiguous elements: index of the first maximum (int64)
 * and, when ymax is non-NULL, the maximum (stored as fp16 if half_out). */
int ck_argmax_rows(ck_stream s, const void *x, int64_t *idx, void *ymax, int64_t rows, int64_t len, int half_in,
                   int half_out);
/* Per row of `len` (>= 2) contiguous elements: the two largest (ONNX TopK
 * K=2, of equal values the lower index first), their indices in idx[2 * row],
 * idx[2 * row + 1] and their values in y likewise (fp16 if half_out). */
int ck_top2_rows(ck_stream s, const void *x, int64_t *idx, void *y, int64_t rows, int64_t len, int half_in,
                 int half_out);

/* Depthwise convolution over NHWC (group = C = K): w is fp32 [kh * kw][C]
 * (tap-major, so that neighbouring channels are neighbouring weights); the
 * raw sum (no bias: the epilogue chain adds it). unrolled: the kernel with
 * the taps unrolled where ck_dw_shape allows it (0: the loop; the same sums). */
int ck_dwconv_nhwc(ck_stream s, const void *x, const float *w, void *y, int64_t n, int64_t c, int H, int W, int OH,
                   int OW, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int half, int unrolled);
/* The depthwise kernel's work per thread, which cuda_nvrtc.c's copy with a
 * fused epilogue shares: v channels of tw neighbouring output pixels along W.
 * k > 0: the k x k taps unrolled, each input column of a row loaded once into
 * registers (k 3 or 5, stride and dilation 1 along W, channels by 4); k = 0:
 * loops over the taps, tw > 1 when stride and dilation along W are 1. The
 * unrolled kernel's v and tw are the best of a sweep over the PP-OCR models'
 * depthwise shapes (docs/BENCHMARKS.md, "depthwise"). */
typedef struct ck_dw_work {
    int v, tw, k;
} ck_dw_work;
static inline ck_dw_work ck_dw_shape(int64_t c, int kh, int kw, int sw, int dw, int unrolled)
{
    ck_dw_work r;
    if (unrolled && sw == 1 && dw == 1 && kh == kw && (kh == 3 || kh == 5) && c % 4 == 0) {
        r.v = 4, r.tw = kh == 5 ? 4 : 2, r.k = kh;
        return r;
    }
    r.v = c % 8 == 0 ? 8 : c % 4 == 0 ? 4 : c % 2 == 0 ? 2 : 1;
    r.tw = sw == 1 && dw == 1 ? 4 : 1;
    r.k = 0;
    return r;
}
/* ConvTranspose whose kernel equals its stride, no padding, one group (each
 * input pixel paints its own kh x kw block): w fp32 [cin][cout][kh][kw]; the
 * raw sum. NCHW or NHWC. */
int ck_deconv_ks(ck_stream s, const void *x, const float *w, void *y, int64_t n, int64_t cin, int64_t cout, int H,
                 int W, int kh, int kw, int half, int nhwc);
/* The same over NHWC, faster: wt fp32 [cin][kh][kw][cout]. */
int ck_deconv_ks_nhwc(ck_stream s, const void *x, const float *wt, void *y, int64_t n, int64_t cin, int64_t cout, int H,
                      int W, int kh, int kw, int half);

/* A fused chain of elementwise ops over one output shape (the CUDA
 * backend's fusion pass): per element, each op combines two operands, each
 * an earlier op's result (a register), an external tensor read through its
 * own broadcast strides, or a scalar constant, then applies its fused
 * activation; the results listed in out_reg are stored. dims are the
 * output's, collapsed, in its memory order (N, H, W, C for an NHWC output);
 * every external has strides over those dims. */
#define CK_CHAIN_OPS  24
#define CK_CHAIN_EXT  6
#define CK_CHAIN_OUT  4
#define CK_CHAIN_DIMS 6
#define CK_SCALAR     (-100)
enum { CK_UN_BASE = 16 }; /* op codes >= CK_UN_BASE are unary: CK_UN_BASE + ck_unop */

typedef struct ck_chain_op {
    int8_t code, act;
    int8_t a, b;       /* >= 0: register (op index); -1 - k: external k; CK_SCALAR: ca/cb */
    float alpha, beta; /* of the activation, or of the unary op */
    float ca, cb;
} ck_chain_op;

typedef struct ck_chain {
    int n_ops, n_ext, n_out, ndim;
    int64_t dims[CK_CHAIN_DIMS];
    int64_t stride[CK_CHAIN_EXT][CK_CHAIN_DIMS];
    int8_t out_reg[CK_CHAIN_OUT];
    uint8_t ext_half[CK_CHAIN_EXT]; /* 1: the external is stored as fp16 */
    uint8_t out_half[CK_CHAIN_OUT];
    ck_chain_op ops[CK_CHAIN_OPS];
} ck_chain;

/* The interpreter: one kernel for every chain (the fallback when NVRTC is
 * not available; cuda_nvrtc.c compiles each chain's own kernel). */
int ck_chain_run(ck_stream s, const ck_chain *c, const void *const *ext, void *const *out);

#ifdef __cplusplus
}
#endif

#endif
