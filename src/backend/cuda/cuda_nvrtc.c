/*
 * cuda_nvrtc.c - each elementwise chain compiled into its own kernel at run
 * time with NVRTC.
 *
 * The interpreter in kernels.cu runs any chain, but it decodes every op for
 * every element; a chain's own kernel is straight-line code: operands in
 * registers, 8 elements per thread with 16-byte loads and stores where the
 * layout allows, index arithmetic only for externals that need it. The
 * generated source depends on the chain's structure (ops, operand kinds,
 * storage types, access patterns), never on its sizes or constants, which
 * are kernel arguments: PP-OCR's ~60 "bias, affine, hardswish, affine"
 * epilogues share one kernel, and the det model's plans for different page
 * sizes share all of theirs. Kernels are cached for the process; a plan's
 * missing ones are compiled in one NVRTC program.
 *
 * NVRTC's file is found by the core's loader as cuBLAS's is, but not
 * loaded (rt_host_api.wanted_lib), else by ld.so (LECTOR_CUDA_NVRTC_LIB
 * names another); the first compile with a kernel that is not shipped
 * compiled (cuda_kcache.c) loads it. So a process whose kernels are all
 * shipped never loads it (0.24 s from a new machine's cold disk), and a
 * machine without NVRTC runs the shipped kernels. A kernel with none of
 * them, or every chain with LECTOR_CUDA_NVRTC=0, runs in the interpreter.
 * The compiled chains
 * have fmad off, the reference kernels' arithmetic; the interpreter is in
 * kernels.cu, which nvcc compiles with its default contraction, so a
 * multiply-add (hard sigmoid's alpha * x + beta, say) may differ in the last
 * bit between the two. Both pass ONNX's node tests (device.sh nodes).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/kcache_format.h"
#include "util/hash.h"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    nvrtcResult (*version)(int *, int *);
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
    nvrtcResult (*ptx)(nvrtcProgram, char *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*n_archs)(int *);
    nvrtcResult (*archs)(int *);
    const char *(*errstr)(nvrtcResult);
} nv;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static int nv_ok;
static atomic_int nv_tried; /* nv_load has run: nv_status is final */
static char nv_status[256] = "not loaded";

static int nvrtc_off(void) { return !cu_switch(LECTOR__TC_CUDA_NVRTC, 1); }

static void nv_try(void)
{
    if (nvrtc_off()) {
        snprintf(nv_status, sizeof nv_status, "off (LECTOR_CUDA_NVRTC=0): chains run in the interpreter");
        return;
    }
    /* the test control's name; else one loaded already (a bundle's set is
     * preloaded), the copy the core found, the loader's own search */
    char name[256];
    const char *set = H->testctl_str(LECTOR__TC_CUDA_NVRTC_LIB), *found = H->wanted_lib("nvrtc");
    snprintf(name, sizeof name, "libnvrtc.so.%d", CUDART_VERSION / 1000);
    double t0 = cu_now_ms();
    void *h = NULL;
    if (set && *set) {
        snprintf(name, sizeof name, "%s", set);
        h = dlopen(name, RTLD_NOW);
    } else if (!(h = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) && found && (h = dlopen(found, RTLD_NOW))) {
        snprintf(name, sizeof name, "%.255s", found);
    } else if (!h) {
        h = dlopen(name, RTLD_NOW);
    }
    if (!h) {
        snprintf(nv_status, sizeof nv_status, "%.200s not found: kernels not shipped run in the interpreter", name);
        return;
    }
#define SYM(field, sym)                                                                                      \
    if (!(*(void **)&nv.field = dlsym(h, sym))) {                                                            \
        snprintf(nv_status, sizeof nv_status, "%.120s has no %s: chains run in the interpreter", name, sym); \
        return;                                                                                              \
    }
    SYM(version, "nvrtcVersion");
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(ptx_size, "nvrtcGetPTXSize");
    SYM(ptx, "nvrtcGetPTX");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(n_archs, "nvrtcGetNumSupportedArchs");
    SYM(archs, "nvrtcGetSupportedArchs");
    SYM(errstr, "nvrtcGetErrorString");
#undef SYM
    int ma = 0, mi = 0;
    nv.version(&ma, &mi);
    snprintf(nv_status, sizeof nv_status, "NVRTC %d.%d", ma, mi);
    nv_ok = 1;
    H->log(3, "cuda: %s loaded from %s in %.0f ms", nv_status, name, cu_now_ms() - t0);
}

static void nv_load(void)
{
    nv_try();
    if (!nv_ok) H->log(3, "cuda: NVRTC: %s", nv_status);
    atomic_store(&nv_tried, 1);
}

void cu_nvrtc_describe(char *buf, size_t len)
{
    const char *shipped = cu_kcache_shipped_nvrtc();
    if (atomic_load(&nv_tried))
        snprintf(buf, len, "%s", nv_status);
    else if (nvrtc_off())
        snprintf(buf, len, "off (LECTOR_CUDA_NVRTC=0): chains run in the interpreter");
    else if (shipped)
        snprintf(buf, len, "kernels shipped (%s), NVRTC loaded for any other", shipped);
    else
        snprintf(buf, len, "NVRTC loaded by the first compile");
}

/* ---- source generation ----------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && b->n + (size_t)n < b->cap) {
            b->n += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + (size_t)n + 1) cap *= 2;
        char *np = cu_realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

/* The device-side copy of kernels.h's structs and of kernels.cu's arithmetic.
 * The static_asserts catch a drift between the two copies of the structs. */
static const char prelude_fmt[] =
    "typedef signed char i8; typedef unsigned char u8; typedef long long i64;\n"
    "struct ck_chain_op { i8 code, act, a, b; float alpha, beta, ca, cb; };\n"
    "struct ck_chain { int n_ops, n_ext, n_out, ndim; i64 dims[%d]; i64 stride[%d][%d]; i8 out_reg[%d];\n"
    "  u8 ext_half[%d]; u8 out_half[%d]; ck_chain_op ops[%d]; };\n"
    "struct chain_ptrs { const void *ext[%d]; void *out[%d]; };\n"
    "static_assert(sizeof(ck_chain) == %zu, \"ck_chain layout\");\n"
    "static_assert(sizeof(ck_chain_op) == %zu, \"ck_chain_op layout\");\n"
    "__device__ __forceinline__ float h2f(unsigned short h) { float f; asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f) : "
    "\"h\"(h)); return f; }\n"
    "__device__ __forceinline__ unsigned short f2h(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %%0, %%1;\" : "
    "\"=h\"(h) : \"f\"(f)); return h; }\n"
    "__device__ __forceinline__ float apply_act(float x, int act, float alpha, float beta) {\n"
    "  switch (act) {\n"
    "  case 1: return x > 0.f ? x : 0.f;\n"
    "  case 2: return 1.f / (1.f + expf(-x));\n"
    "  case 3: return fminf(fmaxf(alpha * x + beta, 0.f), 1.f);\n"
    "  case 4: return x * fminf(fmaxf(alpha * x + beta, 0.f), 1.f);\n"
    "  case 5: return x / (1.f + expf(-x));\n"
    "  case 6: return fminf(fmaxf(x, alpha), beta);\n"
    "  default: return x; } }\n"
    "__device__ __forceinline__ float binop(int op, float a, float b) {\n"
    "  switch (op) { case 0: return a + b; case 1: return a - b; case 2: return a * b; case 3: return a / b;\n"
    "  case 4: return powf(a, b); case 5: return fmaxf(a, b); default: return fminf(a, b); } }\n"
    "__device__ __forceinline__ float unop(int op, float v, float alpha, float beta) {\n"
    "  switch (op) {\n"
    "  case 0: return v > 0.f ? v : 0.f;\n"
    "  case 1: return 1.f / (1.f + expf(-v));\n"
    "  case 2: return tanhf(v);\n"
    "  case 3: return expf(v);\n"
    "  case 4: return logf(v);\n"
    "  case 5: return sqrtf(v);\n"
    "  case 6: return fabsf(v);\n"
    "  case 7: return -v;\n"
    "  case 8: return fminf(fmaxf(alpha * v + beta, 0.f), 1.f);\n"
    "  case 9: return v * fminf(fmaxf(alpha * v + beta, 0.f), 1.f);\n"
    "  case 10: return fminf(fmaxf(v, alpha), beta);\n"
    "  case 11: return v < 0.f ? alpha * v : v;\n"
    "  case 12: return erff(v);\n"
    "  case 13: return 1.f / v;\n"
    "  case 14: return floorf(v);\n"
    "  default: return ceilf(v); } }\n";

/* What the depthwise kernels with a fused epilogue add (no format directives). */
static const char dw_prelude[] =
    "struct dw_args { int n, c, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw; };\n"
    "template <int V> __device__ __forceinline__ void ldx(const float *p, float *o) {\n"
    "  _Pragma(\"unroll\") for (int j = 0; j < V; j++) o[j] = p[j]; }\n"
    "template <> __device__ __forceinline__ void ldx<4>(const float *p, float *o) {\n"
    "  float4 f = *(const float4 *)p; o[0] = f.x; o[1] = f.y; o[2] = f.z; o[3] = f.w; }\n"
    "template <> __device__ __forceinline__ void ldx<8>(const float *p, float *o) { ldx<4>(p, o); ldx<4>(p + 4, o + "
    "4); }\n"
    "template <int V> __device__ __forceinline__ void ldx(const unsigned short *p, float *o) {\n"
    "  _Pragma(\"unroll\") for (int j = 0; j < V; j++) o[j] = h2f(p[j]); }\n"
    "template <> __device__ __forceinline__ void ldx<4>(const unsigned short *p, float *o) {\n"
    "  uint2 u = *(const uint2 *)p; const unsigned short *h = (const unsigned short *)&u;\n"
    "  _Pragma(\"unroll\") for (int j = 0; j < 4; j++) o[j] = h2f(h[j]); }\n"
    "template <> __device__ __forceinline__ void ldx<8>(const unsigned short *p, float *o) {\n"
    "  uint4 u = *(const uint4 *)p; const unsigned short *h = (const unsigned short *)&u;\n"
    "  _Pragma(\"unroll\") for (int j = 0; j < 8; j++) o[j] = h2f(h[j]); }\n";

/* The host's copy of dw_args. */
typedef struct dw_args {
    int n, c, H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw;
} dw_args;

enum { M_SCALAR, M_FLAT, M_INNER, M_OUTER, M_GENERIC };

static int ext_mode(const ck_chain *c, int e)
{
    int nd = c->ndim, last = nd - 1;
    int zero = 1, flat = 1, inner = 1, outer = 1;
    int64_t acc = 1, oacc = 1;
    for (int d = last; d >= 0; d--) {
        int64_t s = c->stride[e][d];
        zero &= s == 0;
        flat &= s == acc || c->dims[d] == 1;
        if (d == last) {
            inner &= s == 1;
            outer &= s == 0;
        } else {
            inner &= s == 0;
            outer &= s == oacc || c->dims[d] == 1;
            oacc *= c->dims[d];
        }
        acc *= c->dims[d];
    }
    if (zero) return M_SCALAR;
    if (flat) return M_FLAT;
    if (inner) return M_INNER;
    if (outer && nd > 1) return M_OUTER;
    return M_GENERIC;
}

static int chain_vec(const ck_chain *c)
{
    int64_t last = c->dims[c->ndim - 1];
    return last % 8 == 0 ? 8 : last % 4 == 0 ? 4 : last % 2 == 0 ? 2 : 1;
}

static int chain_idx32(const ck_chain *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->ndim; d++) n *= c->dims[d];
    if (n >= ((int64_t)1 << 31)) return 0;
    for (int e = 0; e < c->n_ext; e++) {
        int64_t mx = 0;
        for (int d = 0; d < c->ndim; d++) mx += (c->dims[d] - 1) * c->stride[e][d];
        if (mx >= ((int64_t)1 << 31)) return 0;
    }
    return 1;
}

/* Loads VEC contiguous elements at `base` of external e into e<e>[]. */
static void gen_load_vec(sbuf *b, int e, int half, int vec, const char *base)
{
    if (vec == 1) {
        if (half)
            sb_printf(b, "    e%d[0] = h2f(((const unsigned short *)p.ext[%d])[%s]);\n", e, e, base);
        else
            sb_printf(b, "    e%d[0] = ((const float *)p.ext[%d])[%s];\n", e, e, base);
        return;
    }
    if (half) {
        const char *vt = vec == 8 ? "uint4" : vec == 4 ? "uint2" : "unsigned int";
        sb_printf(b,
                  "    { %s u = *(const %s *)((const unsigned short *)p.ext[%d] + (%s)); const unsigned short *h = "
                  "(const unsigned short *)&u;\n      _Pragma(\"unroll\") for (int j = 0; j < %d; j++) e%d[j] = "
                  "h2f(h[j]); }\n",
                  vt, vt, e, base, vec, e);
    } else {
        int n4 = vec / 4;
        if (vec == 2)
            sb_printf(b,
                      "    { float2 u = *(const float2 *)((const float *)p.ext[%d] + (%s)); e%d[0] = u.x; e%d[1] = "
                      "u.y; }\n",
                      e, base, e, e);
        else
            for (int q = 0; q < n4; q++)
                sb_printf(b,
                          "    { float4 u = *(const float4 *)((const float *)p.ext[%d] + (%s) + %d); e%d[%d] = u.x; "
                          "e%d[%d] = u.y; e%d[%d] = u.z; e%d[%d] = u.w; }\n",
                          e, base, 4 * q, e, 4 * q, e, 4 * q + 1, e, 4 * q + 2, e, 4 * q + 3);
    }
}

static void gen_store_vec(sbuf *b, int k, int reg, int half, int vec)
{
    if (vec == 1) {
        if (half)
            sb_printf(b, "    ((unsigned short *)p.out[%d])[i0] = f2h(r%d[0]);\n", k, reg);
        else
            sb_printf(b, "    ((float *)p.out[%d])[i0] = r%d[0];\n", k, reg);
        return;
    }
    if (half) {
        const char *vt = vec == 8 ? "uint4" : vec == 4 ? "uint2" : "unsigned int";
        sb_printf(b,
                  "    { %s u; unsigned short *h = (unsigned short *)&u; _Pragma(\"unroll\") for (int j = 0; j < %d; "
                  "j++) h[j] = f2h(r%d[j]);\n      *(%s *)((unsigned short *)p.out[%d] + i0) = u; }\n",
                  vt, vec, reg, vt, k);
    } else if (vec == 2) {
        sb_printf(b, "    *(float2 *)((float *)p.out[%d] + i0) = make_float2(r%d[0], r%d[1]);\n", k, reg, reg);
    } else {
        for (int q = 0; q < vec / 4; q++)
            sb_printf(b,
                      "    *(float4 *)((float *)p.out[%d] + i0 + %d) = make_float4(r%d[%d], r%d[%d], r%d[%d], "
                      "r%d[%d]);\n",
                      k, 4 * q, reg, 4 * q, reg, 4 * q + 1, reg, 4 * q + 2, reg, 4 * q + 3);
    }
}

static void gen_operand(sbuf *b, int opnd, int k, int is_a)
{
    if (opnd >= 0)
        sb_printf(b, "r%d[j]", opnd);
    else if (opnd == CK_SCALAR)
        sb_printf(b, "c.ops[%d].%s", k, is_a ? "ca" : "cb");
    else
        sb_printf(b, "e%d[j]", -1 - opnd);
}

/* The body of chain c for the VEC elements from flat output index i0 (an IX
 * in scope): the externals' loads, the ops, the stores. raw_e >= 0: external
 * raw_e is not loaded, its values are the float array `raw` in scope (a
 * convolution's result in registers). */
static void gen_body(sbuf *b, const ck_chain *c, int vec, int raw_e)
{
    int nd = c->ndim, last = nd - 1;
    int mode[CK_CHAIN_EXT], generic = 0;
    for (int e = 0; e < c->n_ext; e++) {
        mode[e] = ext_mode(c, e);
        generic |= mode[e] == M_GENERIC && e != raw_e;
    }
    if (generic) {
        for (int e = 0; e < c->n_ext; e++)
            if (mode[e] == M_GENERIC && e != raw_e) sb_printf(b, "    IX o%d = 0;\n", e);
        sb_printf(b, "    { IX r = i0, q, t;\n");
        for (int d = last; d >= 0; d--) {
            if (d > 0)
                sb_printf(b, "      q = r / (IX)c.dims[%d]; t = r - q * (IX)c.dims[%d]; r = q;\n", d, d);
            else
                sb_printf(b, "      t = r;\n");
            for (int e = 0; e < c->n_ext; e++)
                if (mode[e] == M_GENERIC && e != raw_e)
                    sb_printf(b, "      o%d += t * (IX)c.stride[%d][%d];\n", e, e, d);
        }
        sb_printf(b, "    }\n");
    }
    for (int e = 0; e < c->n_ext; e++) {
        int h = c->ext_half[e];
        sb_printf(b, "    float e%d[%d];\n", e, vec);
        if (e == raw_e) {
            sb_printf(b, "    _Pragma(\"unroll\") for (int j = 0; j < %d; j++) e%d[j] = raw[j];\n", vec, e);
            continue;
        }
        switch (mode[e]) {
        case M_SCALAR:
        case M_OUTER: {
            char at[64];
            if (mode[e] == M_SCALAR)
                snprintf(at, sizeof at, "0");
            else
                snprintf(at, sizeof at, "i0 / (IX)c.dims[%d]", last);
            if (h)
                sb_printf(b, "    { float v = h2f(((const unsigned short *)p.ext[%d])[%s]);", e, at);
            else
                sb_printf(b, "    { float v = ((const float *)p.ext[%d])[%s];", e, at);
            sb_printf(b, " _Pragma(\"unroll\") for (int j = 0; j < %d; j++) e%d[j] = v; }\n", vec, e);
            break;
        }
        case M_FLAT: gen_load_vec(b, e, h, vec, "i0"); break;
        case M_INNER: {
            char base[64];
            snprintf(base, sizeof base, "i0 %% (IX)c.dims[%d]", last);
            gen_load_vec(b, e, h, vec, base);
            break;
        }
        default:
            if (h)
                sb_printf(b,
                          "    _Pragma(\"unroll\") for (int j = 0; j < %d; j++) e%d[j] = h2f(((const unsigned short "
                          "*)p.ext[%d])[o%d + (IX)j * (IX)c.stride[%d][%d]]);\n",
                          vec, e, e, e, e, last);
            else
                sb_printf(b,
                          "    _Pragma(\"unroll\") for (int j = 0; j < %d; j++) e%d[j] = ((const float "
                          "*)p.ext[%d])[o%d + (IX)j * (IX)c.stride[%d][%d]];\n",
                          vec, e, e, e, e, last);
        }
    }
    for (int k = 0; k < c->n_ops; k++) {
        const ck_chain_op *o = &c->ops[k];
        sb_printf(b, "    float r%d[%d];\n    _Pragma(\"unroll\") for (int j = 0; j < %d; j++) r%d[j] = ", k, vec, vec,
                  k);
        if (o->code < CK_UN_BASE) {
            sb_printf(b, "apply_act(binop(%d, ", o->code);
            gen_operand(b, o->a, k, 1);
            sb_printf(b, ", ");
            gen_operand(b, o->b, k, 0);
            sb_printf(b, "), %d, c.ops[%d].alpha, c.ops[%d].beta);\n", o->act, k, k);
        } else {
            sb_printf(b, "unop(%d, ", o->code - CK_UN_BASE);
            gen_operand(b, o->a, k, 1);
            sb_printf(b, ", c.ops[%d].alpha, c.ops[%d].beta);\n", k, k);
        }
    }
    for (int k = 0; k < c->n_out; k++) gen_store_vec(b, k, c->out_reg[k], c->out_half[k], vec);
}

/* The kernel of chain c, named `name`. */
static void gen_kernel(sbuf *b, const ck_chain *c, const char *name)
{
    int vec = chain_vec(c);
    sb_printf(b,
              "extern \"C\" __global__ void __launch_bounds__(256) %s(const ck_chain c, const chain_ptrs p, long long "
              "n)\n{\n",
              name);
    sb_printf(b, "  typedef %s IX;\n  const IX groups = (IX)(n / %d);\n", chain_idx32(c) ? "unsigned" : "long long",
              vec);
    sb_printf(b, "  for (IX g = (IX)blockIdx.x * 256u + threadIdx.x; g < groups; g += (IX)gridDim.x * 256u) {\n");
    sb_printf(b, "    const IX i0 = g * %d;\n", vec);
    gen_body(b, c, vec, -1);
    sb_printf(b, "  }\n}\n");
}

/* A depthwise convolution over NHWC with chain c as its epilogue, named `name`:
 * the arithmetic of kernels.cu's k_dwconv_nhwc, or of k_dwconv_nhwc_k when
 * wk.k > 0 (V channels of TW neighbouring output pixels per thread, fp32
 * accumulation by fused multiply-adds), then
 * the raw result stored as the plan stores it (fp16 rounds it) and, instead
 * of writing it and reading it back, given to the chain's ops in registers.
 * The chain runs over the convolution's output in its memory order, so the
 * flat index of an output pixel's channel group is the chain's i0. */
static void gen_dw_kernel(sbuf *b, const ck_chain *c, int raw_e, ck_dw_work wk, int half, const char *name)
{
    int V = wk.v, TW = wk.tw, K = wk.k;
    const char *T = half ? "unsigned short" : "float";
    sb_printf(
        b,
        "extern \"C\" __global__ void __launch_bounds__(256) %s(const ck_chain c, const chain_ptrs p, const %s *x, "
        "const float *w, const dw_args a)\n{\n",
        name, T);
    sb_printf(b, "  typedef %s IX;\n", chain_idx32(c) ? "unsigned" : "long long");
    sb_printf(b, "  const int V = %d, TW = %d;\n", V, TW);
    sb_printf(b, "  const int cg = a.c / V, owt = (a.OW + TW - 1) / TW;\n"
                 "  const long long tot = (long long)a.n * a.OH * owt * cg;\n"
                 "  for (long long it = (long long)blockIdx.x * 256 + threadIdx.x; it < tot; it += (long "
                 "long)gridDim.x * 256) {\n"
                 "    const int c0 = (int)(it %% cg) * V;\n"
                 "    long long rr = it / cg;\n"
                 "    const int ow0 = (int)(rr %% owt) * TW;\n"
                 "    rr /= owt;\n"
                 "    const int oh = (int)(rr %% a.OH), bb = (int)(rr / a.OH);\n"
                 "    float acc[TW][V];\n"
                 "    _Pragma(\"unroll\") for (int t = 0; t < TW; t++) _Pragma(\"unroll\") for (int j = 0; j < V; j++) "
                 "acc[t][j] = 0.f;\n");
    if (K) /* LECTOR_CUDA_DW_ROWS=0: the rows not unrolled (the 5x5 fp16 kernel with its epilogue: NVRTC 300-350 -> 108 ms) */
        sb_printf(b, "    _Pragma(\"unroll%s\") for (int ka = 0; ka < %d; ka++) {\n",
                  H->testctl_long(LECTOR__TC_CUDA_DW_ROWS, 1) ? "" : " 1", K);
    else
        sb_printf(b, "    for (int ka = 0; ka < a.kh; ka++) {\n");
    sb_printf(b,
              "      const int h = oh * a.sh - a.ph + ka * a.dh;\n"
              "      if (h < 0 || h >= a.H) continue;\n"
              "      const %s *xrow = x + ((long long)(bb * a.H + h) * a.W) * a.c + c0;\n"
              "      const float *wrow = w + (long long)ka * a.kw * a.c + c0;\n",
              T);
    if (K) /* k_dwconv_nhwc_k: a.kh == a.kw == K, stride and dilation 1 along W */
        sb_printf(b,
                  "      float xv[%d][V];\n"
                  "      bool in[%d];\n"
                  "      _Pragma(\"unroll\") for (int col = 0; col < %d; col++) {\n"
                  "        const int ww = ow0 - a.pw + col;\n"
                  "        in[col] = ww >= 0 && ww < a.W;\n"
                  "        if (in[col]) ldx<V>(xrow + (long long)ww * a.c, xv[col]);\n"
                  "      }\n"
                  "      _Pragma(\"unroll\") for (int q = 0; q < %d; q++) {\n"
                  "        float wv[V];\n"
                  "        ldx<V>(wrow + (long long)q * a.c, wv);\n"
                  "        _Pragma(\"unroll\") for (int t = 0; t < TW; t++)\n"
                  "          if (in[q + t]) _Pragma(\"unroll\") for (int j = 0; j < V; j++) acc[t][j] = __fmaf_rn(xv[q "
                  "+ t][j], wv[j], acc[t][j]);\n"
                  "      }\n",
                  K + TW - 1, K + TW - 1, K + TW - 1, K);
    else if (TW > 1)
        sb_printf(b, "      for (int col = 0; col < a.kw + TW - 1; col++) {\n"
                     "        const int ww = ow0 - a.pw + col;\n"
                     "        if (ww < 0 || ww >= a.W) continue;\n"
                     "        float xv[V];\n"
                     "        ldx<V>(xrow + (long long)ww * a.c, xv);\n"
                     "        _Pragma(\"unroll\") for (int t = 0; t < TW; t++) {\n"
                     "          const int q = col - t;\n"
                     "          if (q < 0 || q >= a.kw) continue;\n"
                     "          float wv[V];\n"
                     "          ldx<V>(wrow + (long long)q * a.c, wv);\n"
                     "          _Pragma(\"unroll\") for (int j = 0; j < V; j++) acc[t][j] = __fmaf_rn(xv[j], wv[j], "
                     "acc[t][j]);\n"
                     "        }\n"
                     "      }\n");
    else
        sb_printf(
            b,
            "      for (int q = 0; q < a.kw; q++) {\n"
            "        const int ww = ow0 * a.sw - a.pw + q * a.dw;\n"
            "        if (ww < 0 || ww >= a.W) continue;\n"
            "        float xv[V], wv[V];\n"
            "        ldx<V>(xrow + (long long)ww * a.c, xv);\n"
            "        ldx<V>(wrow + (long long)q * a.c, wv);\n"
            "        _Pragma(\"unroll\") for (int j = 0; j < V; j++) acc[0][j] = __fmaf_rn(xv[j], wv[j], acc[0][j]);\n"
            "      }\n");
    sb_printf(b, "    }\n"
                 "    _Pragma(\"unroll\") for (int t = 0; t < TW; t++) {\n"
                 "      if (ow0 + t >= a.OW) break;\n"
                 "      const IX i0 = (IX)((((long long)bb * a.OH + oh) * a.OW + ow0 + t) * a.c + c0);\n"
                 "      float raw[V];\n");
    if (half)
        sb_printf(b, "      _Pragma(\"unroll\") for (int j = 0; j < V; j++) raw[j] = h2f(f2h(acc[t][j]));\n");
    else
        sb_printf(b, "      _Pragma(\"unroll\") for (int j = 0; j < V; j++) raw[j] = acc[t][j];\n");
    sb_printf(b, "      {\n");
    gen_body(b, c, V, raw_e);
    sb_printf(b, "      }\n    }\n  }\n}\n");
}

/* ---- the process-wide kernel cache -------------------------------------------------- */

typedef struct kentry {
    char *key;           /* the kernel's source with the name "K" */
    uint64_t hash;       /* of key (lector__fnv1a64) */
    cudaKernel_t kernel; /* NULL: compiling it failed (the interpreter runs it) */
    int vec;
    int done; /* 0 while a plan's compile is making it (outside the lock) */
} kentry;

/* NVRTC runs outside the lock: a plan waits only for the kernels it needs
 * that another plan is compiling (cache_compiled), not for every compile */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cache_compiled = PTHREAD_COND_INITIALIZER;
static kentry *cache;
static int n_cache, cap_cache;
/* cache's indices by hash, open addressing (-1: empty; twice cap_cache slots):
 * every plan of a new line width looks up each of its ~50 chains' sources,
 * all of which are there already, and under the lock */
static int *cache_index;

static int cache_find(const char *key, uint64_t h)
{
    if (!cache_index) return -1;
    size_t mask = (size_t)cap_cache * 2 - 1;
    for (size_t j = (size_t)h & mask;; j = (j + 1) & mask) {
        int k = cache_index[j];
        if (k < 0) return -1;
        if (cache[k].hash == h && !strcmp(cache[k].key, key)) return k;
    }
}

static void index_put(int k)
{
    size_t mask = (size_t)cap_cache * 2 - 1, j = (size_t)cache[k].hash & mask;
    while (cache_index[j] >= 0) j = (j + 1) & mask;
    cache_index[j] = k;
}

static int cache_add(char *key, uint64_t h, int vec)
{
    if (n_cache == cap_cache) {
        int cap = cap_cache ? 2 * cap_cache : 64;
        kentry *nc = cu_realloc(cache, sizeof *nc * (size_t)cap);
        if (!nc) return -1;
        cache = nc;
        int *ni = cu_malloc(sizeof *ni * (size_t)cap * 2);
        if (!ni) return -1; /* cache grew; the old index still fits the old count */
        cu_free(cache_index);
        cache_index = ni;
        cap_cache = cap;
        for (int j = 0; j < 2 * cap; j++) cache_index[j] = -1;
        for (int k = 0; k < n_cache; k++) index_put(k);
    }
    cache[n_cache] = (kentry){key, h, NULL, vec, 0};
    index_put(n_cache);
    return n_cache++;
}

static int arch_option(int sm, char *opt, size_t len, int *cubin)
{
    int n = 0;
    if (nv.n_archs(&n) || n <= 0 || n > 256) return -1;
    int archs[256];
    if (nv.archs(archs)) return -1;
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (archs[i] == sm) {
            snprintf(opt, len, "--gpu-architecture=sm_%d", sm);
            *cubin = 1;
            return 0;
        }
        if (archs[i] < sm && archs[i] > best) best = archs[i];
    }
    if (best < 0) return -1;
    snprintf(opt, len, "--gpu-architecture=compute_%d", best); /* PTX: the driver compiles it for this GPU */
    *cubin = 0;
    return 0;
}

/* A kernel's name in NVRTC's program: from what it computes, not from its
 * place in this process's cache, so that the same kernels make the same
 * program text in every process (the disk cache's key). */
static void kernel_name(const char *key, char *name, size_t len)
{
    snprintf(name, len, "lector_chain_%016llx", (unsigned long long)kcache_hash(key, strlen(key)));
}

static const char *const nv_opt_rest[] = {"--fmad=false", "-w"};

/* The program of kernels keys[idx[0..n)]: the preludes and each kernel under
 * its name (one kernel's: its disk-cache key). */
static char *batch_program(const char *const *keys, const int *idx, int n)
{
    sbuf src = {0};
    sb_printf(&src, prelude_fmt, CK_CHAIN_DIMS, CK_CHAIN_EXT, CK_CHAIN_DIMS, CK_CHAIN_OUT, CK_CHAIN_EXT, CK_CHAIN_OUT,
              CK_CHAIN_OPS, CK_CHAIN_EXT, CK_CHAIN_OUT, sizeof(ck_chain), sizeof(ck_chain_op));
    sb_printf(&src, "%s", dw_prelude);
    for (int i = 0; i < n; i++) {
        const char *key = keys[idx[i]], *k = strstr(key, " K(");
        if (!k) continue;
        char name[40];
        kernel_name(key, name, sizeof name);
        sb_printf(&src, "%.*s %s%s\n", (int)(k - key), key, name, k + 2);
    }
    if (src.oom) {
        cu_free(src.p);
        return NULL;
    }
    return src.p;
}

/* A kernel's disk-cache key: everything its code depends on (the version
 * of the NVRTC that compiles it, "NVRTC 13.0"; the options; the program of
 * that kernel alone). NULL when out of memory. */
static char *kernel_cache_key(const char *const *keys, int i, const char *nvrtc, const char *arch, size_t *len)
{
    char *src = batch_program(keys, &i, 1);
    if (!src) return NULL;
    sbuf k = {0};
    sb_printf(&k, "%s\n%s %s %s\n%s", nvrtc, arch, nv_opt_rest[0], nv_opt_rest[1], src);
    cu_free(src);
    if (k.oom) {
        cu_free(k.p);
        return NULL;
    }
    *len = k.n;
    return k.p;
}

/* NVRTC's image of the program `src` for `arch`; NULL when NVRTC fails. */
static char *nvrtc_image(const char *src, const char *arch, int cubin, const char *plan_name, size_t *size)
{
    const char *opts[] = {arch, nv_opt_rest[0], nv_opt_rest[1]};
    nvrtcProgram prog = NULL;
    nvrtcResult r = nv.create(&prog, src, "lector_chains.cu", 0, NULL, NULL);
    if (!r) r = nv.compile(prog, 3, opts);
    if (r) {
        size_t ln = 0;
        char *log = NULL;
        if (prog && !nv.log_size(prog, &ln) && ln && (log = cu_malloc(ln + 1)) && !nv.log(prog, log)) log[ln] = 0;
        H->log(2, "cuda: %s: NVRTC failed (%s): chains run in the interpreter; %.400s", plan_name, nv.errstr(r),
               log ? log : "");
        cu_free(log);
        if (prog) nv.destroy(&prog);
        return NULL;
    }
    size_t sz = 0;
    char *image = NULL;
    if (!(cubin ? nv.cubin_size(prog, &sz) : nv.ptx_size(prog, &sz)) && sz && (image = cu_malloc(sz)) &&
        (cubin ? nv.cubin(prog, image) : nv.ptx(prog, image))) {
        cu_free(image);
        image = NULL;
    }
    nv.destroy(&prog);
    *size = sz;
    return image;
}

/* The libraries this call loaded, so that kernels whose cache files hold
 * the same image share one. */
typedef struct loaded_lib {
    uint64_t hash;
    size_t size;
    const char *image; /* owned by the caller while it runs */
    cudaLibrary_t lib;
} loaded_lib;

static int load_image(loaded_lib *libs, int *n_libs, const char *image, size_t size, cudaLibrary_t *out)
{
    uint64_t h = kcache_hash(image, size);
    for (int i = 0; i < *n_libs; i++)
        if (libs[i].hash == h && libs[i].size == size && !memcmp(libs[i].image, image, size)) {
            *out = libs[i].lib;
            return 0;
        }
    cudaError_t e = cudaLibraryLoadData(out, image, NULL, NULL, 0, NULL, NULL, 0);
    if (e != cudaSuccess) {
        cudaGetLastError();
        H->log(2, "cuda: loading a compiled kernel failed (%s): it is compiled again or runs in the interpreter",
               cudaGetErrorString(e));
        return -1;
    }
    /* the libraries stay loaded for the life of the process, like the module's own kernels */
    libs[(*n_libs)++] = (loaded_lib){h, size, image, *out};
    return 0;
}

/* LECTOR_CUDA_NVRTC_DUMP=DIR: the program's source in DIR, its name the
 * compile's time and kernel count (which programs NVRTC is slow on). */
static void dump_program(const char *src, int n_kernels, double ms)
{
    const char *dir = H->testctl_str(LECTOR__TC_CUDA_NVRTC_DUMP);
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/nvrtc_%05.0fms_%02dk_%016llx.cu", dir, ms, n_kernels,
             (unsigned long long)kcache_hash(src, strlen(src)));
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(src, f);
    fclose(f);
}

/* Where a compile_batch call's time went, in ms, and where its kernels
 * came from (for the debug log). */
typedef struct batch_times {
    double read, nvrtc, store, load;
    int shipped, cached, compiled; /* kernels shipped, from the kernel cache, compiled by NVRTC now */
} batch_times;

/* Loads image[0..size) (once per call: kernels whose files hold the same
 * image share it) and finds kernel keys[i] in it; -1 when either fails. */
static int load_kernel(loaded_lib *libs, int *n_libs, const char *image, size_t size, const char *key,
                       cudaKernel_t *got)
{
    cudaLibrary_t lib;
    if (load_image(libs, n_libs, image, size, &lib)) return -1;
    char name[40];
    kernel_name(key, name, sizeof name);
    if (cudaLibraryGetKernel(got, lib, name) == cudaSuccess) return 0;
    cudaGetLastError();
    *got = NULL;
    return -1;
}

/* Finds or compiles the cache's kernels keys[0..n); got[i]: the kernel, or
 * NULL (the interpreter runs it); bt counts where they came from.
 *
 * The shipped kernels are looked for first, under keys naming the NVRTC
 * that built them, so that finding them needs no NVRTC. What they lack
 * loads NVRTC, is looked for in the disk cache under keys naming this
 * machine's NVRTC, and what is not there is compiled.
 *
 * The disk cache is keyed per kernel (its program alone), and what is not
 * there is compiled as one program. Keyed by that program, as it was, a
 * kernel's key depended on which kernels a plan happened to be first to
 * need, which changes from run to run when plans compile side by side, and
 * a run that grouped them anew compiled them again (about a second for 15
 * fp16 kernels, the plans that needed them waiting). One program per kernel
 * would make the key the kernel's but costs NVRTC's preludes per kernel
 * (40-70 ms each; 20 kernels 0.4-0.5 s against 0.05 s as one program on a
 * machine that had compiled them before). So each new kernel's file holds
 * the image of the program it was compiled in, and kernels whose files
 * hold the same image share its library. */
static void compile_batch(int sm, const char *const *keys, int n, const char *kcache_dir, const char *plan_name,
                          cudaKernel_t *got, batch_times *bt)
{
    /* shipped[i] and image[i]: what the shipped directory and the cache hold for
     * kernel i; both stay until the end, since libs compares images */
    char **ckey = cu_calloc((size_t)n, sizeof *ckey), **image = cu_calloc((size_t)n, sizeof *image);
    char **shipped = cu_calloc((size_t)n, sizeof *shipped);
    size_t *ckey_len = cu_calloc((size_t)n, sizeof *ckey_len), *size = cu_calloc((size_t)n, sizeof *size);
    int *missing = cu_calloc((size_t)n, sizeof *missing), n_missing = 0, n_fresh = 0, n_libs = 0, cubin = 0;
    loaded_lib *libs = cu_calloc((size_t)n + 1, sizeof *libs);
    char *fresh = NULL;
    size_t fresh_size = 0;
    if (!ckey || !image || !shipped || !ckey_len || !size || !missing || !libs) goto done;
    double t = cu_now_ms();
    const char *shipped_dir = cu_kcache_shipped_dir(), *shipped_nvrtc = cu_kcache_shipped_nvrtc();
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d", sm); /* the shipped ones are cubins for each GPU */
    for (int i = 0; i < n; i++) {
        size_t klen;
        char *key = shipped_nvrtc ? kernel_cache_key(keys, i, shipped_nvrtc, arch, &klen) : NULL;
        if (key) shipped[i] = cu_kcache_load(shipped_dir, key, klen, &size[i]);
        cu_free(key);
        /* one this driver cannot load (a cubin from a newer NVRTC than it takes) is compiled */
        if (shipped[i] && !load_kernel(libs, &n_libs, shipped[i], size[i], keys[i], &got[i]))
            bt->shipped++;
        else
            missing[n_missing++] = i;
    }
    bt->read = cu_now_ms() - t;
    if (!n_missing) goto done;
    pthread_once(&nv_once, nv_load);
    if (!nv_ok) goto done; /* nv_load logged why: the rest run in the interpreter */
    if (arch_option(sm, arch, sizeof arch, &cubin)) {
        H->log(2, "cuda: NVRTC cannot compile for sm_%d: chains run in the interpreter", sm);
        goto done;
    }
    t = cu_now_ms();
    for (int m = 0; m < n_missing; m++) {
        int i = missing[m];
        if ((kcache_dir || (shipped_dir && !shipped_nvrtc)) &&
            (ckey[i] = kernel_cache_key(keys, i, nv_status, arch, &ckey_len[i]))) {
            image[i] = cu_kcache_load(kcache_dir, ckey[i], ckey_len[i], &size[i]);
            /* shipped kernels whose directory does not name their NVRTC are keyed as the cache's */
            if (!image[i] && !shipped_nvrtc && (image[i] = cu_kcache_load(shipped_dir, ckey[i], ckey_len[i], &size[i])))
                bt->shipped++;
            else if (image[i])
                bt->cached++;
        }
        if (!image[i]) missing[n_fresh++] = i;
    }
    bt->read += cu_now_ms() - t;
    if (n_fresh) {
        t = cu_now_ms();
        char *src = batch_program(keys, missing, n_fresh);
        if (src) fresh = nvrtc_image(src, arch, cubin, plan_name, &fresh_size);
        bt->nvrtc = cu_now_ms() - t;
        if (src) dump_program(src, n_fresh, bt->nvrtc);
        cu_free(src);
        t = cu_now_ms();
        for (int m = 0; m < n_fresh && fresh; m++)
            if (ckey[missing[m]])
                cu_kcache_store(kcache_dir, ckey[missing[m]], ckey_len[missing[m]], fresh, fresh_size);
        bt->store = cu_now_ms() - t;
    }
    t = cu_now_ms();
    for (int i = 0; i < n; i++) {
        if (got[i]) continue;
        const char *img = image[i] ? image[i] : fresh;
        size_t sz = image[i] ? size[i] : fresh_size;
        if (img && !load_kernel(libs, &n_libs, img, sz, keys[i], &got[i]) && !image[i]) bt->compiled++;
    }
    bt->load = cu_now_ms() - t;
done:
    for (int i = 0; i < n && ckey; i++) cu_free(ckey[i]);
    for (int i = 0; i < n && image; i++) cu_free(image[i]);
    for (int i = 0; i < n && shipped; i++) cu_free(shipped[i]);
    cu_free(ckey);
    cu_free(image);
    cu_free(shipped);
    cu_free(ckey_len);
    cu_free(size);
    cu_free(missing);
    cu_free(libs);
    cu_free(fresh);
}

static int dw_fusion_enabled(void) { return cu_switch(LECTOR__TC_CUDA_DWFUSE, 1); }

/* The depthwise kernel's work per thread for step s (kernels.cu's rule). */
static ck_dw_work dw_work(const cu_step *s)
{
    const cu_window *q = &s->win;
    return ck_dw_shape(s->channels, q->kh, q->kw, q->sw, q->dw, q->unroll);
}

/* Can chain step t run inside depthwise step s's kernel, as its epilogue? Returns
 * the index of the external of t that is s's raw result, or -1. */
static int dw_epilogue_ext(const compile_ctx *cc, const cu_step *s, const cu_step *t)
{
    const rt_graph *g = cc->g;
    const rt_plan *p = cc->p;
    if (s->kind != S_DWCONV || !s->no_epilogue || t->kind != S_CHAIN || t->chain_src != s->node || !t->nhwc) return -1;
    const ck_chain *c = t->chain;
    const rt_node *n = &g->nodes[s->node];
    int64_t tot = 1;
    for (int d = 0; d < c->ndim; d++) tot *= c->dims[d];
    if (tot != s->n || c->dims[c->ndim - 1] % dw_work(s).v) return -1;
    int raw = -1;
    for (int e = 0; e < c->n_ext; e++)
        if (t->ext_v[e] == n->out[0] && t->ext_cb[e] == RT_NO_OFFSET) {
            if (raw >= 0 || ext_mode(c, e) != M_FLAT || c->ext_half[e] != s->half) return -1;
            raw = e;
        }
    if (raw < 0) return -1;
    /* the kernel reads the convolution's input around each pixel while it writes the chain's
     * results: none may share the input's bytes (the memory plan may have given them to a result,
     * the input's last reader being the convolution) */
    int xv = n->in[0];
    if (p->offset[xv] == RT_NO_OFFSET) return -1;
    size_t xo = p->offset[xv], xe = xo + (size_t)numel(&g->values[xv]) * cu_vsize(cc->cp, g, xv);
    for (int k = 0; k < c->n_out; k++) {
        int v = t->out_v[k];
        size_t wo = p->offset[v], we = wo + (size_t)numel(&g->values[v]) * cu_vsize(cc->cp, g, v);
        if (wo < xe && xo < we) return -1;
    }
    return raw;
}

/* A kernel's source, made outside the cache's lock. */
typedef struct ksource {
    char *src; /* NULL: none (or out of memory) */
    uint64_t hash;
    int vec;
} ksource;

static ksource source_of(sbuf *b, int vec)
{
    if (b->oom) {
        cu_free(b->p);
        return (ksource){0};
    }
    return (ksource){b->p, lector__fnv1a64(b->p, b->n), vec};
}

/* The cache's entry for a source, a new one (added to todo) if none has it; -1
 * for none. Under cache_lock; takes the source. */
static int cache_slot(ksource *ks, int *todo, int *n_todo)
{
    if (!ks->src) return -1;
    int k = cache_find(ks->src, ks->hash);
    if (k >= 0) {
        cu_free(ks->src);
    } else if ((k = cache_add(ks->src, ks->hash, ks->vec)) < 0) {
        cu_free(ks->src);
    } else {
        todo[(*n_todo)++] = k;
    }
    ks->src = NULL;
    return k;
}

int cu_compile_chains(compile_ctx *cc)
{
    if (nvrtc_off()) return 0;
    if (!cu_kcache_shipped_nvrtc()) { /* nothing shipped: nothing to run without NVRTC */
        pthread_once(&nv_once, nv_load);
        if (!nv_ok) return 0;
    }
    cu_plan *cp = cc->cp;
    /* a chain's kernel per step, and a depthwise convolution's with the next chain fused in */
    int *todo = cu_malloc(sizeof(int) * (size_t)(2 * cp->n_steps + 1));
    int *slot = cu_malloc(sizeof(int) * (size_t)(cp->n_steps + 1));
    int *dwslot = cu_malloc(sizeof(int) * (size_t)(cp->n_steps + 1));
    ksource *src = cu_calloc((size_t)(2 * cp->n_steps + 1), sizeof *src);
    if (!todo || !slot || !dwslot || !src) {
        cu_free(todo);
        cu_free(slot);
        cu_free(dwslot);
        cu_free(src);
        return 0;
    }
    int n_todo = 0, fuse_dw = dw_fusion_enabled();
    double t0 = cu_now_ms();
    /* the sources first, outside the lock (16 workers' compiles of new widths
     * made theirs one after another under it) */
    for (int i = 0; i < cp->n_steps; i++) {
        cu_step *s = &cp->steps[i];
        if (s->kind == S_CHAIN) {
            sbuf b = {0};
            gen_kernel(&b, s->chain, "K");
            src[2 * i] = source_of(&b, chain_vec(s->chain));
        }
        int raw = fuse_dw && i + 1 < cp->n_steps ? dw_epilogue_ext(cc, s, &cp->steps[i + 1]) : -1;
        if (raw >= 0) {
            sbuf b = {0};
            gen_dw_kernel(&b, cp->steps[i + 1].chain, raw, dw_work(s), s->half, "K");
            src[2 * i + 1] = source_of(&b, dw_work(s).v);
        }
    }
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cp->n_steps; i++) {
        slot[i] = cache_slot(&src[2 * i], todo, &n_todo);
        dwslot[i] = cache_slot(&src[2 * i + 1], todo, &n_todo);
    }
    cu_free(src);
    const char **keys = cu_calloc((size_t)n_todo + 1, sizeof *keys);
    cudaKernel_t *got = cu_calloc((size_t)n_todo + 1, sizeof *got);
    for (int i = 0; i < n_todo && keys; i++) keys[i] = cache[todo[i]].key;
    pthread_mutex_unlock(&cache_lock);
    batch_times bt = {0};
    if (n_todo && keys && got) compile_batch(cc->sm, keys, n_todo, cc->be->kernel_cache_dir, cc->g->name, got, &bt);
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < n_todo; i++) {
        cache[todo[i]].kernel = got ? got[i] : NULL;
        cache[todo[i]].done = 1;
    }
    if (n_todo) pthread_cond_broadcast(&cache_compiled);
    cu_free(keys);
    cu_free(got);
    for (;;) { /* the kernels other plans' compiles are making */
        int pending = 0;
        for (int i = 0; i < cp->n_steps && !pending; i++)
            pending = (slot[i] >= 0 && !cache[slot[i]].done) || (dwslot[i] >= 0 && !cache[dwslot[i]].done);
        if (!pending) break;
        pthread_cond_wait(&cache_compiled, &cache_lock);
    }
    int compiled = 0, fused = 0, nn = 0;
    for (int i = 0; i < cp->n_steps; i++) {
        cu_step *s = &cp->steps[i];
        if (slot[i] >= 0 && cache[slot[i]].kernel) {
            s->kfn = cache[slot[i]].kernel;
            s->kvec = cache[slot[i]].vec;
            compiled++;
        }
        if (dwslot[i] >= 0 && cache[dwslot[i]].kernel) { /* the chain moves into the convolution's step */
            cu_step *t = &cp->steps[i + 1];
            s->chain = t->chain;
            t->chain = NULL;
            memcpy(s->ext_v, t->ext_v, sizeof s->ext_v);
            memcpy(s->out_v, t->out_v, sizeof s->out_v);
            memcpy(s->ext_cb, t->ext_cb, sizeof s->ext_cb);
            memcpy(s->chain_node, t->chain_node, sizeof s->chain_node);
            s->chain_src = t->chain_src;
            s->kfn = cache[dwslot[i]].kernel;
            s->kvec = cache[dwslot[i]].vec;
            cp->steps[nn++] = *s;
            i++;
            fused++;
            continue;
        }
        cp->steps[nn++] = *s;
    }
    cp->n_steps = nn;
    pthread_mutex_unlock(&cache_lock);
    if (n_todo)
        H->log(3,
               "cuda: %s: %d kernels new to the process (%d from the kernel cache, %d shipped, %d compiled by NVRTC, "
               "%d in the interpreter) in %.0f ms (cache read %.0f, NVRTC %.0f, cache write %.0f, load %.0f); "
               "%d chains use compiled kernels, %d run inside their depthwise convolution's",
               cc->g->name, n_todo, bt.cached, bt.shipped, bt.compiled, n_todo - bt.cached - bt.shipped - bt.compiled,
               cu_now_ms() - t0, bt.read, bt.nvrtc, bt.store, bt.load, compiled - fused, fused);
    cu_free(todo);
    cu_free(slot);
    cu_free(dwslot);
    return n_todo;
}

/* The host's copy of the kernels' chain_ptrs argument. */
typedef struct chain_ptrs {
    const void *ext[CK_CHAIN_EXT];
    void *out[CK_CHAIN_OUT];
} chain_ptrs;

static chain_ptrs chain_ptrs_of(const ck_chain *c, const void *const *ext, void *const *out)
{
    chain_ptrs p;
    for (int e = 0; e < CK_CHAIN_EXT; e++) p.ext[e] = e < c->n_ext ? ext[e] : NULL;
    for (int k = 0; k < CK_CHAIN_OUT; k++) p.out[k] = k < c->n_out ? out[k] : NULL;
    return p;
}

/* Blocks of 256 for `threads` work items; the kernels' grid-stride loops cover what the cap leaves. */
static dim3 grid_for(int64_t threads)
{
    int64_t blocks = (threads + 255) / 256;
    if (blocks > 65535LL * 8) blocks = 65535LL * 8;
    dim3 grid = {(unsigned)(blocks < 1 ? 1 : blocks), 1, 1};
    return grid;
}

int cu_launch_compiled_dw(cudaStream_t sm, const cu_step *s, const void *x, const void *w, const void *const *ext,
                          void *const *out)
{
    const ck_chain *c = s->chain;
    const cu_window *q = &s->win;
    int64_t n = s->outer, ch = s->channels;
    if (n * q->oh * q->ow * ch == 0) return 0;
    if (n * q->ih * q->iw * ch >= ((int64_t)1 << 31) || n * q->oh * q->ow * ch >= ((int64_t)1 << 31))
        return (int)cudaErrorInvalidValue; /* as ck_dwconv_nhwc */
    dw_args a = {(int)n, (int)ch, q->ih, q->iw, q->oh, q->ow, q->kh, q->kw, q->sh, q->sw, q->ph, q->pw, q->dh, q->dw};
    chain_ptrs p = chain_ptrs_of(c, ext, out);
    void *args[] = {(void *)c, &p, (void *)&x, (void *)&w, &a};
    int tw = dw_work(s).tw;
    dim3 block = {256, 1, 1};
    return (int)cudaLaunchKernel((const void *)s->kfn, grid_for(n * q->oh * ((q->ow + tw - 1) / tw) * (ch / s->kvec)),
                                 block, args, 0, sm);
}

int cu_launch_compiled_chain(cudaStream_t sm, const cu_step *s, const void *const *ext, void *const *out)
{
    const ck_chain *c = s->chain;
    int64_t n = 1;
    for (int d = 0; d < c->ndim; d++) n *= c->dims[d];
    if (n == 0) return 0;
    chain_ptrs p = chain_ptrs_of(c, ext, out);
    long long nn = (long long)n;
    void *args[] = {(void *)c, &p, &nn};
    dim3 block = {256, 1, 1};
    return (int)cudaLaunchKernel((const void *)s->kfn, grid_for(n / s->kvec), block, args, 0, sm);
}
