/*
 * kernels.cu - the CUDA backend's own kernels: pooling, nearest resize,
 * strided gathers, concatenation, softmax, layer normalisation, storage
 * conversions, row argmax and the elementwise-chain interpreter. cuDNN does
 * the convolutions and cuBLAS the matrix products (cuda_conv.c, cuda_matmul.c); the
 * elementwise chains are normally compiled per chain at run time
 * (cuda_nvrtc.c) and this file's interpreter is their fallback.
 *
 * Memory-bound throughout: grid-stride loops over the output. Values are
 * loaded as fp32 or fp16 (the `half` flags) and computed in fp32; the
 * arithmetic mirrors the reference kernels (src/backend/cpu/ref) so results
 * agree to rounding.
 */
#include <cuda_fp16.h>
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

#define GRID_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* fp32 or fp16 storage */
__device__ __forceinline__ float ld(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float ld(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ float ldh(const void *p, int64_t i, int half)
{
    return half ? __half2float(((const __half *)p)[i]) : ((const float *)p)[i];
}
__device__ __forceinline__ void sth(void *p, int64_t i, float v, int half)
{
    if (half)
        ((__half *)p)[i] = __float2half_rn(v);
    else
        ((float *)p)[i] = v;
}

/* Dispatch on the storage type of a kernel's float tensors; T_ names it in the arguments. */
#define LAUNCH_T(half, kernel, grid, block, stream, ...)               \
    do {                                                               \
        if (half) {                                                    \
            typedef __half T_;                                         \
            kernel<T_><<<(grid), (block), 0, (stream)>>>(__VA_ARGS__); \
        } else {                                                       \
            typedef float T_;                                          \
            kernel<T_><<<(grid), (block), 0, (stream)>>>(__VA_ARGS__); \
        }                                                              \
    } while (0)

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

/* ---- GlobalAveragePool ------------------------------------------------------- */

/* One warp per row: rows are channel planes (NCHW). */
template <typename T> __global__ void k_row_mean(const T *x, T *y, int64_t rows, int64_t inner)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T *p = x + row * inner;
    float acc = 0.f;
    for (int64_t i = lane; i < inner; i += 32) acc += ld(p, i);
    for (int o = 16; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (lane == 0) st(y, row, acc / (float)inner);
}

extern "C" int ck_row_mean(ck_stream s, const void *x, void *y, int64_t rows, int64_t inner, int half)
{
    if (rows == 0) return 0;
    int64_t warps = THREADS / 32, blocks = (rows + warps - 1) / warps;
    LAUNCH_T(half, k_row_mean, (unsigned)blocks, THREADS, (cudaStream_t)s, (const T_ *)x, (T_ *)y, rows, inner);
    return last_error();
}

/* NHWC: block (split, c-tile of 32, n): lane = channel, 8 warps stride over
 * the split's pixels; the 8 partial sums are added in a fixed order. */
#define GAP_ROWS 8
template <typename T>
__global__ void k_gap_partial(const T *x, float *part, int64_t hw, int64_t c, int splits, int64_t per)
{
    int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    int64_t ch = (int64_t)blockIdx.y * 32 + lane, n = blockIdx.z, sp = blockIdx.x;
    int64_t p0 = sp * per, p1 = p0 + per < hw ? p0 + per : hw;
    float acc = 0.f;
    if (ch < c)
        for (int64_t p = p0 + w; p < p1; p += GAP_ROWS) acc += ld(x, (n * hw + p) * c + ch);
    __shared__ float sh[GAP_ROWS][32];
    sh[w][lane] = acc;
    __syncthreads();
    if (w == 0 && ch < c) {
        float t = 0.f;
        for (int k = 0; k < GAP_ROWS; k++) t += sh[k][lane];
        part[(n * splits + sp) * c + ch] = t;
    }
}

template <typename T> __global__ void k_gap_final(const float *part, T *y, int64_t n, int64_t c, int splits, int64_t hw)
{
    GRID_LOOP(i, n * c)
    {
        int64_t b = i / c, ch = i % c;
        float t = 0.f;
        for (int sp = 0; sp < splits; sp++) t += part[(b * splits + sp) * c + ch];
        st(y, i, t / (float)hw);
    }
}

extern "C" int ck_gap_nhwc_splits(int64_t n, int64_t hw, int64_t c)
{
    int64_t tiles = n * ((c + 31) / 32), want = 512 / (tiles ? tiles : 1);
    int64_t max_by_work = hw / 256; /* at least 256 pixels per split */
    if (want > max_by_work) want = max_by_work;
    if (want > 1024) want = 1024;
    return want < 1 ? 1 : (int)want;
}

extern "C" int ck_gap_nhwc(ck_stream s, const void *x, void *y, int64_t n, int64_t hw, int64_t c, int half,
                           float *scratch, int splits)
{
    if (n == 0 || c == 0) return 0;
    int64_t per = (hw + splits - 1) / splits;
    dim3 grid((unsigned)splits, (unsigned)((c + 31) / 32), (unsigned)n);
    cudaStream_t st_ = (cudaStream_t)s;
    LAUNCH_T(half, k_gap_partial, grid, 32 * GAP_ROWS, st_, (const T_ *)x, scratch, hw, c, splits, per);
    LAUNCH_T(half, k_gap_final, blocks_for(n * c), THREADS, st_, scratch, (T_ *)y, n, c, splits, hw);
    return last_error();
}

/* ---- pooling, resize --------------------------------------------------------- */

template <typename T>
__global__ void k_pool2d(const T *x, T *y, int64_t nb, int64_t c, int H, int W, int OH, int OW, int kh, int kw, int sh,
                         int sw, int ph, int pw, int dh, int dw, int is_max, int count_include_pad, int nhwc)
{
    int64_t n = nb * c * OH * OW;
    GRID_LOOP(i, n)
    {
        int64_t b, ch;
        int oh, ow;
        if (nhwc) {
            ch = i % c;
            int64_t r = i / c;
            ow = (int)(r % OW);
            r /= OW;
            oh = (int)(r % OH);
            b = r / OH;
        } else {
            ow = (int)(i % OW);
            int64_t r = i / OW;
            oh = (int)(r % OH);
            r /= OH;
            ch = r % c;
            b = r / c;
        }
        float acc = is_max ? -INFINITY : 0.f;
        int cnt = 0;
        for (int a = 0; a < kh; a++) {
            int h = oh * sh - ph + a * dh;
            for (int q = 0; q < kw; q++) {
                int w = ow * sw - pw + q * dw;
                if (h < 0 || h >= H || w < 0 || w >= W) {
                    /* padding counts for averages that include it, up to the padded edge */
                    if (!is_max && count_include_pad && h < H + ph && w < W + pw) cnt++;
                    continue;
                }
                int64_t off = nhwc ? ((b * H + h) * W + w) * c + ch : ((b * c + ch) * H + h) * W + w;
                float v = ld(x, off);
                if (is_max)
                    acc = fmaxf(acc, v);
                else
                    acc += v;
                cnt++;
            }
        }
        st(y, i, is_max ? acc : (cnt ? acc / (float)cnt : 0.f));
    }
}

extern "C" int ck_pool2d(ck_stream s, const void *x, void *y, int64_t n, int64_t c, int H, int W, int OH, int OW,
                         int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int is_max,
                         int count_include_pad, int half, int nhwc)
{
    int64_t tot = n * c * OH * OW;
    if (tot == 0) return 0;
    LAUNCH_T(half, k_pool2d, blocks_for(tot), THREADS, (cudaStream_t)s, (const T_ *)x, (T_ *)y, n, c, H, W, OH, OW, kh,
             kw, sh, sw, ph, pw, dh, dw, is_max, count_include_pad, nhwc);
    return last_error();
}

/* Nearest resize copies whole units: an element (NCHW), or a pixel's channel
 * vector in 16-, 4- or 2-byte pieces (NHWC). 32-bit indices when they fit. */
template <typename U, typename I>
__global__ void k_resize_units(const U *x, U *y, I planes, int H, int W, int OH, int OW, I upp, const int *hidx,
                               const int *widx)
{
    I tot = planes * (I)OH * (I)OW * upp;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < tot; i += (I)gridDim.x * blockDim.x) {
        I u = i % upp, r = i / upp;
        I ow = r % (I)OW;
        r /= (I)OW;
        I oh = r % (I)OH, p = r / (I)OH;
        y[i] = x[((p * (I)H + (I)hidx[oh]) * (I)W + (I)widx[ow]) * upp + u];
    }
}

template <typename U>
static void resize_units(cudaStream_t st, const void *x, void *y, int64_t planes, int H, int W, int OH, int OW,
                         int64_t upp, const int *hidx, const int *widx)
{
    int64_t tot = planes * OH * OW * upp;
    if (tot < ((int64_t)1 << 31) && planes * H * W * upp < ((int64_t)1 << 31))
        k_resize_units<U, unsigned><<<blocks_for(tot), THREADS, 0, st>>>((const U *)x, (U *)y, (unsigned)planes, H, W,
                                                                         OH, OW, (unsigned)upp, hidx, widx);
    else
        k_resize_units<U, long long>
            <<<blocks_for(tot), THREADS, 0, st>>>((const U *)x, (U *)y, planes, H, W, OH, OW, upp, hidx, widx);
}

extern "C" int ck_resize_nearest(ck_stream s, const void *x, void *y, int64_t n, int64_t c, int H, int W, int OH,
                                 int OW, const int *hidx, const int *widx, int half, int nhwc)
{
    int64_t tot = n * c * OH * OW;
    if (tot == 0) return 0;
    cudaStream_t st_ = (cudaStream_t)s;
    int64_t es = half ? 2 : 4, bytes = nhwc ? c * es : es, planes = nhwc ? n : n * c;
    if (bytes % 16 == 0)
        resize_units<uint4>(st_, x, y, planes, H, W, OH, OW, bytes / 16, hidx, widx);
    else if (bytes % 4 == 0)
        resize_units<unsigned>(st_, x, y, planes, H, W, OH, OW, bytes / 4, hidx, widx);
    else
        resize_units<unsigned short>(st_, x, y, planes, H, W, OH, OW, bytes / 2, hidx, widx);
    return last_error();
}

/* ---- data movement ----------------------------------------------------------- */

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
    cudaStream_t st_ = (cudaStream_t)s;
    if (elem_size == 8)
        k_gather<long long><<<blocks_for(n), THREADS, 0, st_>>>((const long long *)x, (long long *)y, *g, n);
    else if (elem_size == 2)
        k_gather<unsigned short>
            <<<blocks_for(n), THREADS, 0, st_>>>((const unsigned short *)x, (unsigned short *)y, *g, n);
    else
        k_gather<float><<<blocks_for(n), THREADS, 0, st_>>>((const float *)x, (float *)y, *g, n);
    return last_error();
}

struct concat_args {
    const void *in[CK_CONCAT_MAX];
    int64_t start[CK_CONCAT_MAX + 1]; /* prefix sums of each input's units per row */
    int n_in;
};

template <typename U, typename I> __global__ void k_concat(concat_args a, U *y, I outer, I row)
{
    I tot = outer * row;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < tot; i += (I)gridDim.x * blockDim.x) {
        I o = i / row, r = i - o * row;
        int k = 0;
        while (k + 1 < a.n_in && r >= (I)a.start[k + 1]) k++;
        I w = (I)(a.start[k + 1] - a.start[k]);
        y[i] = ((const U *)a.in[k])[o * w + (r - (I)a.start[k])];
    }
}

template <typename U> static void concat_units(cudaStream_t st, const concat_args &a, void *y, int64_t outer)
{
    int64_t row = a.start[a.n_in], tot = outer * row;
    if (tot < ((int64_t)1 << 31))
        k_concat<U, unsigned><<<blocks_for(tot), THREADS, 0, st>>>(a, (U *)y, (unsigned)outer, (unsigned)row);
    else
        k_concat<U, long long><<<blocks_for(tot), THREADS, 0, st>>>(a, (U *)y, outer, row);
}

/* Copies in the widest unit (16, 4, 2 or 1 bytes) every input's row divides into. */
extern "C" int ck_concat(ck_stream s, const void *const *in, const int64_t *len, int n_in, void *y, int64_t outer,
                         int64_t inner, int elem)
{
    if (n_in < 1 || n_in > CK_CONCAT_MAX || elem < 1) return (int)cudaErrorInvalidValue;
    int64_t unit = 16;
    for (int k = 0; k < n_in; k++)
        while (unit > 1 && (len[k] * inner * elem) % unit) unit /= 2;
    concat_args a;
    a.n_in = n_in;
    a.start[0] = 0;
    for (int k = 0; k < n_in; k++) {
        a.in[k] = in[k];
        a.start[k + 1] = a.start[k] + len[k] * inner * elem / unit;
    }
    if (outer * a.start[n_in] == 0) return 0;
    cudaStream_t st_ = (cudaStream_t)s;
    if (unit == 16)
        concat_units<uint4>(st_, a, y, outer);
    else if (unit == 8)
        concat_units<unsigned long long>(st_, a, y, outer);
    else if (unit == 4)
        concat_units<unsigned>(st_, a, y, outer);
    else if (unit == 2)
        concat_units<unsigned short>(st_, a, y, outer);
    else
        concat_units<unsigned char>(st_, a, y, outer);
    return last_error();
}

/* Thread per output element, in the output's memory order. */
template <typename I>
__global__ void k_convert(const void *x, void *y, I n, I c, I h, I w, int src_half, int src_nhwc, int dst_half,
                          int dst_nhwc)
{
    I tot = n * c * h * w;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < tot; i += (I)gridDim.x * blockDim.x) {
        I b, ch, hh, ww, r = i;
        if (dst_nhwc) {
            ch = r % c, r /= c;
            ww = r % w, r /= w;
            hh = r % h, b = r / h;
        } else {
            ww = r % w, r /= w;
            hh = r % h, r /= h;
            ch = r % c, b = r / c;
        }
        I so = src_nhwc ? ((b * h + hh) * w + ww) * c + ch : ((b * c + ch) * h + hh) * w + ww;
        sth(y, i, ldh(x, so, src_half), dst_half);
    }
}

/* NCHW -> NHWC with few channels (a model's input): one pixel per thread, its
 * channels read from their planes (coalesced across threads) and written together. */
__global__ void k_convert_to_nhwc(const void *x, void *y, unsigned pixels, unsigned hw, int c, int src_half,
                                  int dst_half)
{
    for (unsigned p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += gridDim.x * blockDim.x) {
        unsigned b = p / hw, q = p - b * hw;
        for (int ch = 0; ch < c; ch++)
            sth(y, (long long)p * c + ch, ldh(x, ((long long)b * c + ch) * hw + q, src_half), dst_half);
    }
}

extern "C" int ck_convert(ck_stream s, const void *x, void *y, int64_t n, int64_t c, int64_t h, int64_t w, int src_half,
                          int src_nhwc, int dst_half, int dst_nhwc)
{
    int64_t tot = n * c * h * w;
    if (tot == 0) return 0;
    if (dst_nhwc && !src_nhwc && c <= 8 && tot < ((int64_t)1 << 31)) {
        k_convert_to_nhwc<<<blocks_for(n * h * w), THREADS, 0, (cudaStream_t)s>>>(
            x, y, (unsigned)(n * h * w), (unsigned)(h * w), (int)c, src_half, dst_half);
        return last_error();
    }
    if (tot < ((int64_t)1 << 31))
        k_convert<unsigned><<<blocks_for(tot), THREADS, 0, (cudaStream_t)s>>>(
            x, y, (unsigned)n, (unsigned)c, (unsigned)h, (unsigned)w, src_half, src_nhwc, dst_half, dst_nhwc);
    else
        k_convert<long long><<<blocks_for(tot), THREADS, 0, (cudaStream_t)s>>>(x, y, n, c, h, w, src_half, src_nhwc,
                                                                               dst_half, dst_nhwc);
    return last_error();
}

/* ---- image input ------------------------------------------------------------- */

/* ---- model inputs from 8-bit pixels ------------------------------------------- */

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* std::max(INT_MIN, std::min(INT_MAX, v)) with its NaN behaviour (-> INT_MAX), as the CPU warp */
__device__ __forceinline__ double clamp_int_range(double v)
{
    double r = v < 2147483647.0 ? v : 2147483647.0;
    return -2147483648.0 < r ? r : -2147483648.0;
}

/* The crop of row r (r.warp), pixel by pixel, as img_warp_quad
 * makes it: the same double operations, none fused; the taps replicate the
 * full image's border and lie in the uploaded region. One thread per crop
 * pixel (x, y), all channels, into up + r.crop. */
__global__ void k_warp_crops(char *up, const ck_image_row *rows, const int16_t *cubic, int cn)
{
    const ck_image_row &r = rows[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (!r.warp || x >= r.crop_width) return;
    const uint8_t *px = (const uint8_t *)up + r.px;
    size_t stride = (size_t)r.width * cn;
    const double *M = r.m;
    for (int y = blockIdx.y; y < r.crop_height; y += gridDim.y) {
        double X0 = __dadd_rn(__dmul_rn(M[1], (double)y), M[2]), Y0 = __dadd_rn(__dmul_rn(M[4], (double)y), M[5]);
        double W = __dadd_rn(__dadd_rn(__dmul_rn(M[7], (double)y), M[8]), __dmul_rn(M[6], (double)x));
        W = W != 0 ? __ddiv_rn(32.0, W) : 0;
        double fX = clamp_int_range(__dmul_rn(__dadd_rn(X0, __dmul_rn(M[0], (double)x)), W));
        double fY = clamp_int_range(__dmul_rn(__dadd_rn(Y0, __dmul_rn(M[3], (double)x)), W));
        int X = __double2int_rn(fX), Y = __double2int_rn(fY);
        int sx = clampi(X >> 5, -32768, 32767) - 1, sy = clampi(Y >> 5, -32768, 32767) - 1;
        const int16_t *wt = cubic + ((Y & 31) * 32 + (X & 31)) * 16;
        int xs[4];
        const uint8_t *rw[4];
        for (int i = 0; i < 4; i++) {
            xs[i] = clampi(clampi(sx + i, 0, r.full_width - 1) - r.origin_x, 0, r.width - 1) * cn;
            rw[i] = px + (size_t)clampi(clampi(sy + i, 0, r.full_height - 1) - r.origin_y, 0, r.height - 1) * stride;
        }
        uint8_t *d = (uint8_t *)up + r.crop + ((size_t)y * r.crop_width + x) * cn;
        for (int c = 0; c < cn; c++) {
            int sum = 0;
            for (int i = 0; i < 4; i++)
                sum += rw[i][xs[0] + c] * wt[i * 4] + rw[i][xs[1] + c] * wt[i * 4 + 1] +
                       rw[i][xs[2] + c] * wt[i * 4 + 2] + rw[i][xs[3] + c] * wt[i * 4 + 3];
            d[c] = (uint8_t)clampi((sum + (1 << 14)) >> 15, 0, 255);
        }
    }
}

/* Pixel (x, y) of the resize source of row r: of the region, or of the
 * turned crop (the turns are index maps over the warped crop). */
__device__ __forceinline__ const uint8_t *source_px(const ck_image_row &r, const char *up, int cn, int x, int y)
{
    if (!r.warp) return (const uint8_t *)up + r.px + ((size_t)y * r.width + x) * cn;
    if (r.turns & 2) x = r.sw - 1 - x, y = r.sh - 1 - y;
    if (r.turns & 1) { /* np.rot90: out(x, y) = in(W - 1 - y, x) */
        int t = x;
        x = r.crop_width - 1 - y;
        y = t;
    }
    return (const uint8_t *)up + r.crop + ((size_t)y * r.crop_width + x) * cn;
}

/* One thread per destination pixel of a row, all channels: the horizontal
 * pass of the two source rows, then the vertical one, as img_resize. */
__global__ void k_image_rows(const char *up, const ck_image_row *rows, int n_rows, int cn, float *y, int dh, int dw)
{
    int dx = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.z;
    if (dx >= dw) return;
    for (int dy = blockIdx.y; dy < dh; dy += gridDim.y) {
        float *out = y + (size_t)b * cn * dh * dw + (size_t)dy * dw + dx;
        if (b >= n_rows || dx >= rows[b].out_width) {
            for (int c = 0; c < cn; c++) out[(size_t)c * dh * dw] = 0.f;
            continue;
        }
        const ck_image_row &r = rows[b];
        const int *xofs = (const int *)(up + r.xofs), *yofs = (const int *)(up + r.yofs);
        const int16_t *alpha = (const int16_t *)(up + r.alpha), *beta = (const int16_t *)(up + r.beta);
        const float *lut = (const float *)(up + r.lut);
        int sx = xofs[dx], sx1 = sx + 1 < r.sw ? sx + 1 : sx, a0 = alpha[2 * dx], a1 = alpha[2 * dx + 1];
        int b0 = beta[2 * dy], b1 = beta[2 * dy + 1], y0 = yofs[2 * dy], y1 = yofs[2 * dy + 1];
        const uint8_t *p00 = source_px(r, up, cn, sx, y0), *p01 = source_px(r, up, cn, sx1, y0);
        const uint8_t *p10 = source_px(r, up, cn, sx, y1), *p11 = source_px(r, up, cn, sx1, y1);
        for (int c = 0; c < cn; c++) {
            int s0 = p00[c] * a0 + p01[c] * a1, s1 = p10[c] * a0 + p11[c] * a1;
            int v = ((((s0 >> 4) * b0) >> 16) + (((s1 >> 4) * b1) >> 16) + 2) >> 2;
            out[(size_t)c * dh * dw] = lut[c * 256 + (v > 255 ? 255 : v)];
        }
    }
}

extern "C" int ck_image_rows(ck_stream s, char *up, const ck_image_row *rows, int n_rows, const int16_t *cubic, int cn,
                             int max_cw, int max_ch, float *y, int batch, int dh, int dw)
{
    if (dw <= 0 || dh <= 0 || batch <= 0) return 0;
    cudaStream_t st_ = (cudaStream_t)s;
    if (max_cw > 0 && max_ch > 0) {
        dim3 g((unsigned)((max_cw + 127) / 128), (unsigned)(max_ch < 65535 ? max_ch : 65535), (unsigned)n_rows);
        k_warp_crops<<<g, 128, 0, st_>>>(up, rows, cubic, cn);
    }
    dim3 grid((unsigned)((dw + 127) / 128), (unsigned)(dh < 65535 ? dh : 65535), (unsigned)batch);
    k_image_rows<<<grid, 128, 0, st_>>>(up, rows, n_rows, cn, y, dh, dw);
    return last_error();
}

/* ---- row reductions ---------------------------------------------------------- */

/* Softmax rows of contiguous elements (inner == 1): one warp per row. */
template <typename T> __global__ void k_softmax_rows(const T *x, T *y, int64_t rows, int64_t len)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T *p = x + row * len;
    T *q = y + row * len;
    float mx = -INFINITY;
    for (int64_t i = lane; i < len; i += 32) mx = fmaxf(mx, ld(p, i));
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
    for (int64_t i = lane; i < len; i += 32) sum += expf(ld(p, i) - mx);
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    float inv = 1.f / sum;
    for (int64_t i = lane; i < len; i += 32) st(q, i, expf(ld(p, i) - mx) * inv);
}

/* Softmax along a strided axis: one thread per (outer, inner) column. */
template <typename T> __global__ void k_softmax_cols(const T *x, T *y, int64_t outer, int64_t len, int64_t inner)
{
    GRID_LOOP(t, outer * inner)
    {
        int64_t o = t / inner, i = t % inner;
        const T *p = x + o * len * inner + i;
        T *q = y + o * len * inner + i;
        float mx = -INFINITY, sum = 0.f;
        for (int64_t k = 0; k < len; k++) mx = fmaxf(mx, ld(p, k * inner));
        for (int64_t k = 0; k < len; k++) sum += expf(ld(p, k * inner) - mx);
        for (int64_t k = 0; k < len; k++) st(q, k * inner, expf(ld(p, k * inner) - mx) / sum);
    }
}

extern "C" int ck_softmax(ck_stream s, const void *x, void *y, int64_t outer, int64_t len, int64_t inner, int half)
{
    if (outer * len * inner == 0) return 0;
    cudaStream_t st_ = (cudaStream_t)s;
    if (inner == 1) {
        int64_t warps = THREADS / 32, blocks = (outer + warps - 1) / warps;
        LAUNCH_T(half, k_softmax_rows, (unsigned)blocks, THREADS, st_, (const T_ *)x, (T_ *)y, outer, len);
    } else {
        LAUNCH_T(half, k_softmax_cols, blocks_for(outer * inner), THREADS, st_, (const T_ *)x, (T_ *)y, outer, len,
                 inner);
    }
    return last_error();
}

/* One warp per row; mean then variance in two passes (the row is re-read
 * from L1/L2), as the reference does. */
template <typename T>
__global__ void k_layernorm(const T *x, T *y, const float *scale, int64_t ns, const float *bias, int64_t nb,
                            int64_t rows, int64_t inner, float eps)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T *p = x + row * inner;
    T *q = y + row * inner;
    float sum = 0.f;
    for (int64_t i = lane; i < inner; i += 32) sum += ld(p, i);
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    float mean = sum / (float)inner, sq = 0.f;
    for (int64_t i = lane; i < inner; i += 32) {
        float d = ld(p, i) - mean;
        sq += d * d;
    }
    for (int o = 16; o > 0; o /= 2) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    float inv = rsqrtf(sq / (float)inner + eps);
    for (int64_t i = lane; i < inner; i += 32)
        st(q, i, (ld(p, i) - mean) * inv * scale[ns == 1 ? 0 : i] + (bias ? bias[nb == 1 ? 0 : i] : 0.f));
}

extern "C" int ck_layernorm(ck_stream s, const void *x, void *y, const float *scale, int64_t ns, const float *bias,
                            int64_t nb, int64_t rows, int64_t inner, float eps, int half)
{
    if (rows == 0) return 0;
    int64_t warps = THREADS / 32, blocks = (rows + warps - 1) / warps;
    LAUNCH_T(half, k_layernorm, (unsigned)blocks, THREADS, (cudaStream_t)s, (const T_ *)x, (T_ *)y, scale, ns, bias, nb,
             rows, inner, eps);
    return last_error();
}

/* One warp per row: the first maximum (lowest index among equal values, as
 * np.argmax and ONNX ArgMax with select_last_index = 0). */
template <typename T>
__global__ void k_argmax_rows(const T *x, int64_t *idx, void *ymax, int64_t rows, int64_t len, int half_out)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T *p = x + row * len;
    float best = -INFINITY;
    int64_t bi = -1;
    for (int64_t i = lane; i < len; i += 32) {
        float v = ld(p, i);
        if (bi < 0 || v > best) { /* strictly greater: each lane keeps its first maximum */
            best = v;
            bi = i;
        }
    }
    for (int o = 16; o > 0; o /= 2) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o);
        long long oi = __shfl_xor_sync(0xffffffffu, (long long)bi, o);
        if (oi >= 0 && (bi < 0 || ob > best || (ob == best && oi < bi))) {
            best = ob;
            bi = oi;
        }
    }
    if (lane == 0) {
        if (idx) idx[row] = bi < 0 ? 0 : bi;
        if (ymax) sth(ymax, row, best, half_out);
    }
}

extern "C" int ck_argmax_rows(ck_stream s, const void *x, int64_t *idx, void *ymax, int64_t rows, int64_t len,
                              int half_in, int half_out)
{
    if (rows == 0 || len == 0) return 0;
    int64_t warps = THREADS / 32, blocks = (rows + warps - 1) / warps;
    LAUNCH_T(half_in, k_argmax_rows, (unsigned)blocks, THREADS, (cudaStream_t)s, (const T_ *)x, idx, ymax, rows, len,
             half_out);
    return last_error();
}

/* One warp per row: the two largest (ONNX TopK K=2 largest=1 sorted=1: the
 * greater first, of equal values the lower index first), their indices in
 * idx[2 * row ..] and values in y. Each lane keeps its own best two, then
 * the warp merges pairs; a NaN row is the reference's business (the
 * recogniser's probabilities have none: the pipeline checks its maxima). */
__device__ __forceinline__ int k_ahead(float v, long long i, float w, long long j)
{
    return j < 0 || (i >= 0 && (v > w || (v == w && i < j)));
}

template <typename T>
__global__ void k_top2_rows(const T *x, int64_t *idx, void *y, int64_t rows, int64_t len, int half_out)
{
    int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T *p = x + row * len;
    float v0 = -INFINITY, v1 = -INFINITY;
    long long i0 = -1, i1 = -1;
    for (int64_t i = lane; i < len; i += 32) { /* ascending indices: strictly greater keeps the first */
        float v = ld(p, i);
        if (i0 < 0 || v > v0) {
            v1 = v0, i1 = i0;
            v0 = v, i0 = i;
        } else if (i1 < 0 || v > v1) {
            v1 = v, i1 = i;
        }
    }
    for (int o = 16; o > 0; o /= 2) {
        float w0 = __shfl_xor_sync(0xffffffffu, v0, o), w1 = __shfl_xor_sync(0xffffffffu, v1, o);
        long long j0 = __shfl_xor_sync(0xffffffffu, i0, o), j1 = __shfl_xor_sync(0xffffffffu, i1, o);
        /* the best two of (v0, v1) and (w0, w1), each pair in order */
        if (k_ahead(v0, i0, w0, j0)) {
            if (!k_ahead(v1, i1, w0, j0)) v1 = w0, i1 = j0;
        } else {
            if (k_ahead(v0, i0, w1, j1)) {
                v1 = v0, i1 = i0;
            } else {
                v1 = w1, i1 = j1;
            }
            v0 = w0, i0 = j0;
        }
    }
    if (lane == 0) {
        idx[2 * row] = i0 < 0 ? 0 : i0;
        idx[2 * row + 1] = i1 < 0 ? 0 : i1;
        sth(y, 2 * row, v0, half_out);
        sth(y, 2 * row + 1, v1, half_out);
    }
}

extern "C" int ck_top2_rows(ck_stream s, const void *x, int64_t *idx, void *y, int64_t rows, int64_t len, int half_in,
                            int half_out)
{
    if (rows == 0 || len < 2) return rows == 0 ? 0 : (int)cudaErrorInvalidValue;
    int64_t warps = THREADS / 32, blocks = (rows + warps - 1) / warps;
    LAUNCH_T(half_in, k_top2_rows, (unsigned)blocks, THREADS, (cudaStream_t)s, (const T_ *)x, idx, y, rows, len,
             half_out);
    return last_error();
}

/* ---- convolutions cuDNN does poorly -------------------------------------------- */

/* V contiguous values as floats: 16-byte loads where the width allows. */
template <typename T, int V> __device__ __forceinline__ void ldv(const T *p, float *o)
{
#pragma unroll
    for (int j = 0; j < V; j++) o[j] = ld(p, j);
}
/* P half pairs (loaded as one vector) as 2P floats. */
template <int P> __device__ __forceinline__ void half_pairs(const __half2 *h, float *o)
{
#pragma unroll
    for (int k = 0; k < P; k++) {
        float2 f = __half22float2(h[k]);
        o[2 * k] = f.x;
        o[2 * k + 1] = f.y;
    }
}
template <> __device__ __forceinline__ void ldv<__half, 8>(const __half *p, float *o)
{
    uint4 u = *(const uint4 *)p;
    half_pairs<4>((const __half2 *)&u, o);
}
template <> __device__ __forceinline__ void ldv<__half, 4>(const __half *p, float *o)
{
    uint2 u = *(const uint2 *)p;
    half_pairs<2>((const __half2 *)&u, o);
}
template <> __device__ __forceinline__ void ldv<float, 4>(const float *p, float *o)
{
    float4 f = *(const float4 *)p;
    o[0] = f.x, o[1] = f.y, o[2] = f.z, o[3] = f.w;
}
template <> __device__ __forceinline__ void ldv<float, 8>(const float *p, float *o)
{
    ldv<float, 4>(p, o);
    ldv<float, 4>(p + 4, o + 4);
}

/* The work items of an NHWC depthwise kernel: V channels of TW neighbouring
 * output pixels of one row of one image each. */
template <int V, int TW> __device__ __forceinline__ long long dw_items(int n, int c, int OH, int OW)
{
    return (long long)n * OH * ((OW + TW - 1) / TW) * (c / V);
}

struct dw_pos {
    int c0, ow0, oh, b; /* first channel, first output column, output row, image */
};

/* Work item i: channels c0.. of output pixels (b, oh, ow0..ow0 + TW - 1). */
template <int V, int TW> __device__ __forceinline__ dw_pos dw_position(long long i, int c, int OH, int OW)
{
    int cg = c / V, owt = (OW + TW - 1) / TW;
    dw_pos p;
    p.c0 = (int)(i % cg) * V;
    long long r = i / cg;
    p.ow0 = (int)(r % owt) * TW;
    r /= owt;
    p.oh = (int)(r % OH);
    p.b = (int)(r / OH);
    return p;
}

/* Their sums written out, the pixels past the row's end skipped. */
template <typename T, int V, int TW>
__device__ __forceinline__ void dw_store(T *y, const float (*acc)[V], int c, int OH, int OW, int b, int oh, int ow0,
                                         int c0)
{
#pragma unroll
    for (int t = 0; t < TW; t++) {
        if (ow0 + t >= OW) break;
        T *yp = y + ((long long)(b * OH + oh) * OW + ow0 + t) * c + c0;
#pragma unroll
        for (int j = 0; j < V; j++) st(yp, j, acc[t][j]);
    }
}

/* V channels of TW neighbouring output pixels (along W) per thread: with
 * stride and dilation 1 along W, each input column of a row is loaded once
 * for all the outputs it touches (kw + TW - 1 loads instead of kw * TW).
 * Weights fp32 [kh * kw][C]; fp32 accumulation by fused multiply-adds, written
 * out: cuda_nvrtc.c's copy of this kernel with a fused epilogue must give the
 * same sums. */
template <typename T, int V, int TW>
__global__ void k_dwconv_nhwc(const T *x, const float *w, T *y, int n, int c, int H, int W, int OH, int OW, int kh,
                              int kw, int sh, int sw, int ph, int pw, int dh, int dw)
{
    long long tot = dw_items<V, TW>(n, c, OH, OW);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < tot;
         i += (long long)gridDim.x * blockDim.x) {
        const dw_pos p = dw_position<V, TW>(i, c, OH, OW);
        float acc[TW][V] = {};
        for (int a = 0; a < kh; a++) {
            int h = p.oh * sh - ph + a * dh;
            if (h < 0 || h >= H) continue;
            const T *xrow = x + ((long long)(p.b * H + h) * W) * c + p.c0;
            const float *wrow = w + (long long)a * kw * c + p.c0;
            if (TW > 1) { /* sw == dw == 1 */
                for (int col = 0; col < kw + TW - 1; col++) {
                    int ww = p.ow0 - pw + col;
                    if (ww < 0 || ww >= W) continue;
                    float xv[V];
                    ldv<T, V>(xrow + (long long)ww * c, xv);
#pragma unroll
                    for (int t = 0; t < TW; t++) {
                        int q = col - t;
                        if (q < 0 || q >= kw) continue;
                        float wv[V];
                        ldv<float, V>(wrow + (long long)q * c, wv);
#pragma unroll
                        for (int j = 0; j < V; j++) acc[t][j] = __fmaf_rn(xv[j], wv[j], acc[t][j]);
                    }
                }
            } else {
                for (int q = 0; q < kw; q++) {
                    int ww = p.ow0 * sw - pw + q * dw;
                    if (ww < 0 || ww >= W) continue;
                    float xv[V], wv[V];
                    ldv<T, V>(xrow + (long long)ww * c, xv);
                    ldv<float, V>(wrow + (long long)q * c, wv);
#pragma unroll
                    for (int j = 0; j < V; j++) acc[0][j] = __fmaf_rn(xv[j], wv[j], acc[0][j]);
                }
            }
        }
        dw_store<T, V, TW>(y, acc, c, OH, OW, p.b, p.oh, p.ow0, p.c0);
    }
}

/* The same with the K x K taps unrolled (stride and dilation 1 along W): the
 * K + TW - 1 input columns of a row are loaded into registers at once, then
 * each weight once for the TW pixels, instead of a load after each other's
 * latency. A tap outside the image is skipped, as above, so the sums are
 * the same bytes. */
template <typename T, int V, int TW, int K>
__global__ void k_dwconv_nhwc_k(const T *x, const float *w, T *y, int n, int c, int H, int W, int OH, int OW, int sh,
                                int ph, int pw, int dh)
{
    long long tot = dw_items<V, TW>(n, c, OH, OW);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < tot;
         i += (long long)gridDim.x * blockDim.x) {
        const dw_pos p = dw_position<V, TW>(i, c, OH, OW);
        float acc[TW][V] = {};
#pragma unroll
        for (int a = 0; a < K; a++) {
            int h = p.oh * sh - ph + a * dh;
            if (h < 0 || h >= H) continue;
            const T *xrow = x + ((long long)(p.b * H + h) * W) * c + p.c0;
            const float *wrow = w + (long long)a * K * c + p.c0;
            float xv[K + TW - 1][V];
            bool in[K + TW - 1];
#pragma unroll
            for (int col = 0; col < K + TW - 1; col++) {
                int ww = p.ow0 - pw + col;
                in[col] = ww >= 0 && ww < W;
                if (in[col]) ldv<T, V>(xrow + (long long)ww * c, xv[col]);
            }
#pragma unroll
            for (int q = 0; q < K; q++) {
                float wv[V];
                ldv<float, V>(wrow + (long long)q * c, wv);
#pragma unroll
                for (int t = 0; t < TW; t++)
                    if (in[q + t])
#pragma unroll
                        for (int j = 0; j < V; j++) acc[t][j] = __fmaf_rn(xv[q + t][j], wv[j], acc[t][j]);
            }
        }
        dw_store<T, V, TW>(y, acc, c, OH, OW, p.b, p.oh, p.ow0, p.c0);
    }
}

template <typename T, int V>
static void dwconv(cudaStream_t st, const void *x, const float *w, void *y, int64_t n, int64_t c, int H, int W, int OH,
                   int OW, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw)
{
    if (sw == 1 && dw == 1) {
        int64_t tot = n * OH * ((OW + 3) / 4) * (c / V);
        k_dwconv_nhwc<T, V, 4><<<blocks_for(tot), THREADS, 0, st>>>((const T *)x, w, (T *)y, (int)n, (int)c, H, W, OH,
                                                                    OW, kh, kw, sh, sw, ph, pw, dh, dw);
    } else {
        int64_t tot = n * OH * OW * (c / V);
        k_dwconv_nhwc<T, V, 1><<<blocks_for(tot), THREADS, 0, st>>>((const T *)x, w, (T *)y, (int)n, (int)c, H, W, OH,
                                                                    OW, kh, kw, sh, sw, ph, pw, dh, dw);
    }
}

template <typename T, int TW, int K>
static void dwconv_k(cudaStream_t st, const void *x, const float *w, void *y, int64_t n, int64_t c, int H, int W,
                     int OH, int OW, int sh, int ph, int pw, int dh)
{
    int64_t tot = n * OH * ((OW + TW - 1) / TW) * (c / 4);
    k_dwconv_nhwc_k<T, 4, TW, K>
        <<<blocks_for(tot), THREADS, 0, st>>>((const T *)x, w, (T *)y, (int)n, (int)c, H, W, OH, OW, sh, ph, pw, dh);
}

extern "C" int ck_dwconv_nhwc(ck_stream s, const void *x, const float *w, void *y, int64_t n, int64_t c, int H, int W,
                              int OH, int OW, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int half,
                              int unrolled)
{
    cudaStream_t st_ = (cudaStream_t)s;
    if (n * OH * OW * c == 0) return 0;
    if (n * H * W * c >= ((int64_t)1 << 31) || n * OH * OW * c >= ((int64_t)1 << 31)) return (int)cudaErrorInvalidValue;
    ck_dw_work wk = ck_dw_shape(c, kh, kw, sw, dw, unrolled);
#define DWK(TW, K)                                                                     \
    if (wk.k == K && wk.tw == TW) {                                                    \
        if (half)                                                                      \
            dwconv_k<__half, TW, K>(st_, x, w, y, n, c, H, W, OH, OW, sh, ph, pw, dh); \
        else                                                                           \
            dwconv_k<float, TW, K>(st_, x, w, y, n, c, H, W, OH, OW, sh, ph, pw, dh);  \
        return last_error();                                                           \
    }
    DWK(4, 5)
    DWK(2, 3)
#undef DWK
    if (wk.k) wk = ck_dw_shape(c, kh, kw, sw, dw, 0); /* a choice without its instance: the loop */
    int v = wk.v;
#define DW(V)                                                                                    \
    do {                                                                                         \
        if (half)                                                                                \
            dwconv<__half, V>(st_, x, w, y, n, c, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw); \
        else                                                                                     \
            dwconv<float, V>(st_, x, w, y, n, c, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw);  \
    } while (0)
    if (v == 8)
        DW(8);
    else if (v == 4)
        DW(4);
    else if (v == 2)
        DW(2);
    else
        DW(1);
#undef DW
    return last_error();
}

template <typename T>
__global__ void k_deconv_ks(const T *x, const float *w, T *y, int64_t n, int64_t cin, int64_t cout, int H, int W,
                            int kh, int kw, int nhwc)
{
    int OH = H * kh, OW = W * kw;
    int64_t tot = n * cout * OH * OW;
    GRID_LOOP(i, tot)
    {
        int64_t co, b, r = i;
        int oh, ow;
        if (nhwc) {
            co = r % cout, r /= cout;
            ow = (int)(r % OW), r /= OW;
            oh = (int)(r % OH), b = r / OH;
        } else {
            ow = (int)(r % OW), r /= OW;
            oh = (int)(r % OH), r /= OH;
            co = r % cout, b = r / cout;
        }
        int h = oh / kh, a = oh - h * kh, ww = ow / kw, q = ow - ww * kw;
        const float *wp = w + (co * kh + a) * kw + q; /* w[ci][co][a][q]: stride cout*kh*kw over ci */
        int64_t wstep = cout * kh * kw;
        float acc = 0.f;
        if (nhwc) {
            const T *xp = x + ((b * H + h) * W + ww) * cin;
            for (int64_t ci = 0; ci < cin; ci++) acc += ld(xp, ci) * wp[ci * wstep];
        } else {
            const T *xp = x + (b * cin * H + h) * W + ww;
            int64_t plane = (int64_t)H * W;
            for (int64_t ci = 0; ci < cin; ci++) acc += ld(xp, ci * plane) * wp[ci * wstep];
        }
        st(y, i, acc);
    }
}

/* NHWC: one input pixel and V output channels per thread. Each input value
 * is loaded once and spread over the KHW positions of its block; the
 * filter, fp32 [cin][kh][kw][cout], is staged in shared memory. */
template <typename T, int V, int KHW>
__global__ void k_deconv_ks_nhwc(const T *x, const float *wt, T *y, int n, int cin, int cout, int H, int W, int kh,
                                 int kw)
{
    extern __shared__ float sw_[];
    int nw = cin * KHW * cout;
    for (int k = threadIdx.x; k < nw; k += blockDim.x) sw_[k] = wt[k];
    __syncthreads();
    int cg = cout / V;
    long long tot = (long long)n * H * W * cg;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < tot;
         i += (long long)gridDim.x * blockDim.x) {
        int co0 = (int)(i % cg) * V;
        long long pix = i / cg; /* (b, h, w) */
        int ww = (int)(pix % W), h = (int)((pix / W) % H), b = (int)(pix / ((long long)W * H));
        const T *xp = x + pix * cin;
        float acc[KHW][V];
#pragma unroll
        for (int ab = 0; ab < KHW; ab++)
#pragma unroll
            for (int j = 0; j < V; j++) acc[ab][j] = 0.f;
        for (int ci = 0; ci < cin; ci++) {
            float xv = ld(xp, ci);
            const float *wp = sw_ + (ci * KHW) * cout + co0;
#pragma unroll
            for (int ab = 0; ab < KHW; ab++)
#pragma unroll
                for (int j = 0; j < V; j++) acc[ab][j] += xv * wp[ab * cout + j];
        }
#pragma unroll
        for (int ab = 0; ab < KHW; ab++) {
            int a = ab / kw, q = ab - a * kw;
            T *yp = y + ((long long)(b * H * kh + h * kh + a) * (W * kw) + ww * kw + q) * cout + co0;
#pragma unroll
            for (int j = 0; j < V; j++) st(yp, j, acc[ab][j]);
        }
    }
}

template <typename T, int KHW>
static void deconv_nhwc(cudaStream_t st, const void *x, const float *wt, void *y, int64_t n, int64_t cin, int64_t cout,
                        int H, int W, int kh, int kw, size_t smem)
{
    int64_t tot = n * H * W * cout;
    if (cout % 8 == 0)
        k_deconv_ks_nhwc<T, 8, KHW><<<blocks_for(tot / 8), THREADS, smem, st>>>((const T *)x, wt, (T *)y, (int)n,
                                                                                (int)cin, (int)cout, H, W, kh, kw);
    else if (cout % 4 == 0)
        k_deconv_ks_nhwc<T, 4, KHW><<<blocks_for(tot / 4), THREADS, smem, st>>>((const T *)x, wt, (T *)y, (int)n,
                                                                                (int)cin, (int)cout, H, W, kh, kw);
    else
        k_deconv_ks_nhwc<T, 1, KHW><<<blocks_for(tot), THREADS, smem, st>>>((const T *)x, wt, (T *)y, (int)n, (int)cin,
                                                                            (int)cout, H, W, kh, kw);
}

extern "C" int ck_deconv_ks_nhwc(ck_stream s, const void *x, const float *wt, void *y, int64_t n, int64_t cin,
                                 int64_t cout, int H, int W, int kh, int kw, int half)
{
    int64_t tot = n * H * W * cout;
    if (tot == 0) return 0;
    size_t smem = sizeof(float) * (size_t)(cin * kh * kw * cout);
    /* the fast path: 2 x 2 or 4 x 4 blocks, a filter that fits in 48 KiB of shared memory */
    if (tot * kh * kw >= ((int64_t)1 << 31) || smem > 48 * 1024 || !((kh == 2 && kw == 2) || (kh == 4 && kw == 4)))
        return (int)cudaErrorNotSupported;
    cudaStream_t st_ = (cudaStream_t)s;
    if (kh == 2) {
        if (half)
            deconv_nhwc<__half, 4>(st_, x, wt, y, n, cin, cout, H, W, kh, kw, smem);
        else
            deconv_nhwc<float, 4>(st_, x, wt, y, n, cin, cout, H, W, kh, kw, smem);
    } else {
        if (half)
            deconv_nhwc<__half, 16>(st_, x, wt, y, n, cin, cout, H, W, kh, kw, smem);
        else
            deconv_nhwc<float, 16>(st_, x, wt, y, n, cin, cout, H, W, kh, kw, smem);
    }
    return last_error();
}

extern "C" int ck_deconv_ks(ck_stream s, const void *x, const float *w, void *y, int64_t n, int64_t cin, int64_t cout,
                            int H, int W, int kh, int kw, int half, int nhwc)
{
    int64_t tot = n * cout * (int64_t)H * kh * W * kw;
    if (tot == 0) return 0;
    LAUNCH_T(half, k_deconv_ks, blocks_for(tot), THREADS, (cudaStream_t)s, (const T_ *)x, w, (T_ *)y, n, cin, cout, H,
             W, kh, kw, nhwc);
    return last_error();
}

/* ---- the elementwise-chain interpreter ---------------------------------------- */

struct chain_ptrs {
    const void *ext[CK_CHAIN_EXT];
    void *out[CK_CHAIN_OUT];
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
            if (o.a >= 0)
                a = reg[o.a];
            else if (o.a == CK_SCALAR)
                a = o.ca;
            else
                a = ldh(p.ext[-1 - o.a], off[-1 - o.a], c.ext_half[-1 - o.a]);
            if (o.code < CK_UN_BASE) {
                if (o.b >= 0)
                    b = reg[o.b];
                else if (o.b == CK_SCALAR)
                    b = o.cb;
                else
                    b = ldh(p.ext[-1 - o.b], off[-1 - o.b], c.ext_half[-1 - o.b]);
                reg[k] = apply_act(binop(o.code, a, b), o.act, o.alpha, o.beta);
            } else {
                reg[k] = unop(o.code - CK_UN_BASE, a, o.alpha, o.beta);
            }
        }
        for (int k = 0; k < c.n_out; k++) sth(p.out[k], i, reg[c.out_reg[k]], c.out_half[k]);
    }
}

extern "C" int ck_chain_run(ck_stream s, const ck_chain *c, const void *const *ext, void *const *out)
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
