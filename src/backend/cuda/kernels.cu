/*
 * kernels.cu - the CUDA backend's own kernels: fused epilogues, broadcast
 * elementwise ops, pooling, nearest resize, strided gathers, softmax and
 * layer normalisation. cuDNN does the convolutions and cuBLAS the matrix
 * products (cuda_backend.c); everything else of the PP-OCR graphs runs here.
 *
 * Memory-bound throughout: grid-stride loops over the output, one read of
 * each input element where the broadcast allows it. Arithmetic mirrors the
 * reference kernels (src/backend/cpu/ref) so results agree to rounding.
 */
#include <cuda_runtime.h>
#include <math.h>

#include "kernels.h"

#define THREADS 256

static inline unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b > 65535LL * 8) b = 65535LL * 8; /* grid-stride loops cover the rest */
    return (unsigned)(b < 1 ? 1 : b);
}

static inline int last_error(void) { return (int)cudaGetLastError(); }

__device__ __forceinline__ float apply_act(float x, int act, float alpha, float beta)
{
    switch (act) {
    case 1: return x > 0.f ? x : 0.f;
    case 2: return 1.f / (1.f + expf(-x));
    case 3: return fminf(fmaxf(alpha * x + beta, 0.f), 1.f);
    case 4: return x * fminf(fmaxf(alpha * x + beta, 0.f), 1.f);
    case 5: return x / (1.f + expf(-x));
    case 6: return fminf(fmaxf(x, alpha), beta);
    default: return x;
    }
}

#define GRID_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__global__ void k_bias_act(float *y, const float *bias, int64_t n, int64_t channels, int64_t inner,
                           int act, float alpha, float beta)
{
    GRID_LOOP(i, n)
    {
        float v = y[i];
        if (bias) v += bias[(i / inner) % channels];
        y[i] = apply_act(v, act, alpha, beta);
    }
}

extern "C" int ck_bias_act(ck_stream s, float *y, const float *bias, int64_t n, int64_t channels,
                           int64_t inner, int act, float alpha, float beta)
{
    if (n == 0 || (!bias && act == 0)) return 0;
    k_bias_act<<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>(y, bias, n, channels, inner, act, alpha, beta);
    return last_error();
}

__global__ void k_affine_act(const float *x, float *y, const float *scale, const float *shift, int64_t n,
                             int64_t channels, int64_t inner, int act, float alpha, float beta)
{
    GRID_LOOP(i, n)
    {
        int64_t c = (i / inner) % channels;
        y[i] = apply_act(x[i] * scale[c] + shift[c], act, alpha, beta);
    }
}

extern "C" int ck_affine_act(ck_stream s, const float *x, float *y, const float *scale, const float *shift,
                             int64_t n, int64_t channels, int64_t inner, int act, float alpha, float beta)
{
    if (n == 0) return 0;
    k_affine_act<<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>(x, y, scale, shift, n, channels, inner, act,
                                                               alpha, beta);
    return last_error();
}

__device__ __forceinline__ float binop(int op, float a, float b)
{
    switch (op) {
    case CK_ADD: return a + b;
    case CK_SUB: return a - b;
    case CK_MUL: return a * b;
    case CK_DIV: return a / b;
    case CK_POW: return powf(a, b);
    case CK_MAX: return fmaxf(a, b);
    default: return fminf(a, b);
    }
}

/* Same shape on both sides: the common case, no index arithmetic. */
__global__ void k_binary_flat(int op, const float *a, const float *b, float *y, int64_t n, int act,
                              float alpha, float beta)
{
    GRID_LOOP(i, n) y[i] = apply_act(binop(op, a[i], b[i]), act, alpha, beta);
}

/* One operand is a scalar. */
__global__ void k_binary_scalar(int op, const float *a, const float *b, int b_is_scalar, float *y, int64_t n,
                                int act, float alpha, float beta)
{
    if (b_is_scalar) {
        float bv = b[0];
        GRID_LOOP(i, n) y[i] = apply_act(binop(op, a[i], bv), act, alpha, beta);
    } else {
        float av = a[0];
        GRID_LOOP(i, n) y[i] = apply_act(binop(op, av, b[i]), act, alpha, beta);
    }
}

__global__ void k_binary_nd(int op, const float *a, const float *b, float *y, ck_bcast bc, int64_t n, int act,
                            float alpha, float beta)
{
    GRID_LOOP(i, n)
    {
        int64_t r = i, oa = 0, ob = 0;
        for (int d = bc.ndim - 1; d >= 0; d--) {
            int64_t q = r / bc.dims[d], idx = r - q * bc.dims[d];
            r = q;
            oa += idx * bc.sa[d];
            ob += idx * bc.sb[d];
        }
        y[i] = apply_act(binop(op, a[oa], b[ob]), act, alpha, beta);
    }
}

extern "C" int ck_binary(ck_stream s, int op, const float *a, const float *b, float *y, const ck_bcast *bc,
                         int act, float alpha, float beta)
{
    int64_t n = 1;
    for (int d = 0; d < bc->ndim; d++) n *= bc->dims[d];
    if (n == 0) return 0;
    cudaStream_t st = (cudaStream_t)s;
    int a_full = 1, b_full = 1, a_zero = 1, b_zero = 1;
    for (int d = 0; d < bc->ndim; d++) {
        if (bc->dims[d] == 1) continue;
        a_zero &= bc->sa[d] == 0;
        b_zero &= bc->sb[d] == 0;
    }
    /* collapsed dims: full operands have the dense strides */
    int64_t want = 1;
    for (int d = bc->ndim - 1; d >= 0; d--) {
        if (bc->dims[d] != 1) {
            a_full &= bc->sa[d] == want;
            b_full &= bc->sb[d] == want;
        }
        want *= bc->dims[d];
    }
    if (a_full && b_full)
        k_binary_flat<<<blocks_for(n), THREADS, 0, st>>>(op, a, b, y, n, act, alpha, beta);
    else if (a_full && b_zero)
        k_binary_scalar<<<blocks_for(n), THREADS, 0, st>>>(op, a, b, 1, y, n, act, alpha, beta);
    else if (b_full && a_zero)
        k_binary_scalar<<<blocks_for(n), THREADS, 0, st>>>(op, a, b, 0, y, n, act, alpha, beta);
    else
        k_binary_nd<<<blocks_for(n), THREADS, 0, st>>>(op, a, b, y, *bc, n, act, alpha, beta);
    return last_error();
}

__device__ __forceinline__ float unop(int op, float v, float alpha, float beta)
{
    switch (op) {
    case CK_RELU: return v > 0.f ? v : 0.f;
    case CK_SIGMOID: return 1.f / (1.f + expf(-v));
    case CK_TANH: return tanhf(v);
    case CK_EXP: return expf(v);
    case CK_LOG: return logf(v);
    case CK_SQRT: return sqrtf(v);
    case CK_ABS: return fabsf(v);
    case CK_NEG: return -v;
    case CK_HARDSIGMOID: return fminf(fmaxf(alpha * v + beta, 0.f), 1.f);
    case CK_HARDSWISH: return v * fminf(fmaxf(alpha * v + beta, 0.f), 1.f);
    case CK_CLIP: return fminf(fmaxf(v, alpha), beta);
    case CK_LEAKYRELU: return v < 0.f ? alpha * v : v;
    case CK_ERF: return erff(v);
    case CK_RECIPROCAL: return 1.f / v;
    case CK_FLOOR: return floorf(v);
    default: return ceilf(v);
    }
}

__global__ void k_unary(int op, const float *x, float *y, int64_t n, float alpha, float beta)
{
    GRID_LOOP(i, n) y[i] = unop(op, x[i], alpha, beta);
}

extern "C" int ck_unary(ck_stream s, int op, const float *x, float *y, int64_t n, float alpha, float beta)
{
    if (n == 0) return 0;
    k_unary<<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>(op, x, y, n, alpha, beta);
    return last_error();
}

/* One warp per row: rows are channel planes (GlobalAveragePool). */
__global__ void k_row_mean(const float *x, float *y, int64_t rows, int64_t inner)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float *p = x + row * inner;
    float acc = 0.f;
    for (int64_t i = lane; i < inner; i += 32) acc += p[i];
    for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc / (float)inner;
}

extern "C" int ck_row_mean(ck_stream s, const float *x, float *y, int64_t rows, int64_t inner)
{
    if (rows == 0) return 0;
    int64_t warps = THREADS / 32, blocks = (rows + warps - 1) / warps;
    k_row_mean<<<(unsigned)blocks, THREADS, 0, (cudaStream_t)s>>>(x, y, rows, inner);
    return last_error();
}

__global__ void k_pool2d(const float *x, float *y, int64_t nc, int H, int W, int OH, int OW, int kh, int kw,
                         int sh, int sw, int ph, int pw, int dh, int dw, int is_max, int count_include_pad)
{
    int64_t n = nc * OH * OW;
    GRID_LOOP(i, n)
    {
        int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
        int64_t p = i / ((int64_t)OH * OW);
        const float *xp = x + p * H * W;
        float acc = is_max ? -INFINITY : 0.f;
        int cnt = 0;
        for (int a = 0; a < kh; a++) {
            int h = oh * sh - ph + a * dh;
            for (int b = 0; b < kw; b++) {
                int w = ow * sw - pw + b * dw;
                if (h < 0 || h >= H || w < 0 || w >= W) {
                    /* padding counts for averages that include it, up to the padded edge */
                    if (!is_max && count_include_pad && h < H + ph && w < W + pw) cnt++;
                    continue;
                }
                float v = xp[(int64_t)h * W + w];
                if (is_max) acc = fmaxf(acc, v);
                else acc += v;
                cnt++;
            }
        }
        y[i] = is_max ? acc : (cnt ? acc / (float)cnt : 0.f);
    }
}

extern "C" int ck_pool2d(ck_stream s, const float *x, float *y, int64_t nc, int H, int W, int OH, int OW, int kh,
                         int kw, int sh, int sw, int ph, int pw, int dh, int dw, int is_max, int count_include_pad)
{
    int64_t n = nc * OH * OW;
    if (n == 0) return 0;
    k_pool2d<<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>(x, y, nc, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw,
                                                           is_max, count_include_pad);
    return last_error();
}

__global__ void k_resize_nearest(const float *x, float *y, int64_t nc, int H, int W, int OH, int OW,
                                 const int *hidx, const int *widx)
{
    int64_t n = nc * OH * OW;
    GRID_LOOP(i, n)
    {
        int ow = (int)(i % OW), oh = (int)((i / OW) % OH);
        int64_t p = i / ((int64_t)OH * OW);
        y[i] = x[(p * H + hidx[oh]) * W + widx[ow]];
    }
}

extern "C" int ck_resize_nearest(ck_stream s, const float *x, float *y, int64_t nc, int H, int W, int OH, int OW,
                                 const int *hidx, const int *widx)
{
    int64_t n = nc * OH * OW;
    if (n == 0) return 0;
    k_resize_nearest<<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>(x, y, nc, H, W, OH, OW, hidx, widx);
    return last_error();
}

template <typename T> __global__ void k_gather(const T *x, T *y, ck_gather_desc g, int64_t n)
{
    GRID_LOOP(i, n)
    {
        int64_t r = i, off = g.base;
        for (int d = g.ndim - 1; d >= 0; d--) {
            int64_t q = r / g.dims[d];
            off += (r - q * g.dims[d]) * g.stride[d];
            r = q;
        }
        y[i] = x[off];
    }
}

extern "C" int ck_gather(ck_stream s, const void *x, void *y, const ck_gather_desc *g, int elem_size)
{
    int64_t n = 1;
    for (int d = 0; d < g->ndim; d++) n *= g->dims[d];
    if (n == 0) return 0;
    if (elem_size == 8)
        k_gather<long long><<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>((const long long *)x, (long long *)y, *g, n);
    else
        k_gather<float><<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>((const float *)x, (float *)y, *g, n);
    return last_error();
}

/* Softmax rows of contiguous elements (inner == 1): one warp per row. */
__global__ void k_softmax_rows(const float *x, float *y, int64_t rows, int64_t len)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float *p = x + row * len;
    float *q = y + row * len;
    float mx = -INFINITY;
    for (int64_t i = lane; i < len; i += 32) mx = fmaxf(mx, p[i]);
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
    for (int64_t i = lane; i < len; i += 32) {
        float e = expf(p[i] - mx);
        q[i] = e;
        sum += e;
    }
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    float inv = 1.f / sum;
    for (int64_t i = lane; i < len; i += 32) q[i] *= inv;
}

/* Softmax along a strided axis: one thread per (outer, inner) column. */
__global__ void k_softmax_cols(const float *x, float *y, int64_t outer, int64_t len, int64_t inner)
{
    GRID_LOOP(t, outer * inner)
    {
        int64_t o = t / inner, i = t % inner;
        const float *p = x + o * len * inner + i;
        float *q = y + o * len * inner + i;
        float mx = -INFINITY, sum = 0.f;
        for (int64_t k = 0; k < len; k++) mx = fmaxf(mx, p[k * inner]);
        for (int64_t k = 0; k < len; k++) {
            float e = expf(p[k * inner] - mx);
            q[k * inner] = e;
            sum += e;
        }
        for (int64_t k = 0; k < len; k++) q[k * inner] /= sum;
    }
}

extern "C" int ck_softmax(ck_stream s, const float *x, float *y, int64_t outer, int64_t len, int64_t inner)
{
    if (outer * len * inner == 0) return 0;
    if (inner == 1) {
        int64_t warps = THREADS / 32, blocks = (outer + warps - 1) / warps;
        k_softmax_rows<<<(unsigned)blocks, THREADS, 0, (cudaStream_t)s>>>(x, y, outer, len);
    } else {
        k_softmax_cols<<<blocks_for(outer * inner), THREADS, 0, (cudaStream_t)s>>>(x, y, outer, len, inner);
    }
    return last_error();
}

/* One warp per row; mean then variance in two passes (the row is re-read
 * from L1/L2), as the reference does. */
__global__ void k_layernorm(const float *x, float *y, const float *scale, int64_t ns, const float *bias,
                            int64_t nb, int64_t rows, int64_t inner, float eps)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const float *p = x + row * inner;
    float *q = y + row * inner;
    float sum = 0.f;
    for (int64_t i = lane; i < inner; i += 32) sum += p[i];
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    float mean = sum / (float)inner, sq = 0.f;
    for (int64_t i = lane; i < inner; i += 32) {
        float d = p[i] - mean;
        sq += d * d;
    }
    for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    float inv = rsqrtf(sq / (float)inner + eps);
    for (int64_t i = lane; i < inner; i += 32)
        q[i] = (p[i] - mean) * inv * scale[ns == 1 ? 0 : i] + (bias ? bias[nb == 1 ? 0 : i] : 0.f);
}

extern "C" int ck_layernorm(ck_stream s, const float *x, float *y, const float *scale, int64_t ns,
                            const float *bias, int64_t nb, int64_t rows, int64_t inner, float eps)
{
    if (rows == 0) return 0;
    int64_t warps = THREADS / 32, blocks = (rows + warps - 1) / warps;
    k_layernorm<<<(unsigned)blocks, THREADS, 0, (cudaStream_t)s>>>(x, y, scale, ns, bias, nb, rows, inner, eps);
    return last_error();
}

struct chain_ptrs {
    const float *ext[CK_CHAIN_EXT];
    float *out[CK_CHAIN_OUT];
};

__global__ void k_chain(ck_chain c, chain_ptrs p, int64_t n)
{
    GRID_LOOP(i, n)
    {
        int64_t off[CK_CHAIN_EXT];
        int64_t r = i;
#pragma unroll
        for (int e = 0; e < CK_CHAIN_EXT; e++) off[e] = 0;
        for (int d = c.ndim - 1; d >= 0; d--) {
            int64_t q = r / c.dims[d], idx = r - q * c.dims[d];
            r = q;
#pragma unroll
            for (int e = 0; e < CK_CHAIN_EXT; e++) off[e] += idx * c.stride[e][d];
        }
        float reg[CK_CHAIN_OPS];
        for (int k = 0; k < c.n_ops; k++) {
            const ck_chain_op &o = c.ops[k];
            float a, b = 0.f;
            if (o.a >= 0) a = reg[o.a];
            else if (o.a == CK_SCALAR) a = o.ca;
            else a = p.ext[-1 - o.a][off[-1 - o.a]];
            if (o.code < CK_UN_BASE) {
                if (o.b >= 0) b = reg[o.b];
                else if (o.b == CK_SCALAR) b = o.cb;
                else b = p.ext[-1 - o.b][off[-1 - o.b]];
                reg[k] = apply_act(binop(o.code, a, b), o.act, o.alpha, o.beta);
            } else {
                reg[k] = unop(o.code - CK_UN_BASE, a, o.alpha, o.beta);
            }
        }
        for (int k = 0; k < c.n_out; k++) p.out[k][i] = reg[c.out_reg[k]];
    }
}

extern "C" int ck_chain_run(ck_stream s, const ck_chain *c, const float *const *ext, float *const *out)
{
    int64_t n = 1;
    for (int d = 0; d < c->ndim; d++) n *= c->dims[d];
    if (n == 0) return 0;
    chain_ptrs p;
    for (int e = 0; e < CK_CHAIN_EXT; e++) p.ext[e] = e < c->n_ext ? ext[e] : nullptr;
    for (int k = 0; k < CK_CHAIN_OUT; k++) p.out[k] = k < c->n_out ? out[k] : nullptr;
    k_chain<<<blocks_for(n), THREADS, 0, (cudaStream_t)s>>>(*c, p, n);
    return last_error();
}
