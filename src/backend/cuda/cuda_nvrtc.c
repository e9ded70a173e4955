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
 * NVRTC is found as the core's loader found cuBLAS (it preloads
 * libnvrtc.so.<major> when it can) or by ld.so; without it, or with
 * LECTOR_CUDA_NVRTC=0, chains run in the interpreter (same results: both
 * compile with fmad off, the arithmetic of the reference kernels).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cuda/cuda_internal.h"

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
static char nv_status[256] = "not loaded";

static void nv_load(void)
{
    if (!cu_env_flag("LECTOR_CUDA_NVRTC", 1)) {
        snprintf(nv_status, sizeof nv_status, "off (LECTOR_CUDA_NVRTC=0): chains run in the interpreter");
        return;
    }
    char name[64];
    snprintf(name, sizeof name, "libnvrtc.so.%d", CUDART_VERSION / 1000);
    void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen(name, RTLD_NOW);
    if (!h) {
        snprintf(nv_status, sizeof nv_status, "%s not found: chains run in the interpreter", name);
        return;
    }
#define SYM(field, sym)                                                                            \
    if (!(*(void **)&nv.field = dlsym(h, sym))) {                                                  \
        snprintf(nv_status, sizeof nv_status, "%s has no %s: chains run in the interpreter", name, sym); \
        return;                                                                                    \
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
}

const char *cu_nvrtc_status(void)
{
    pthread_once(&nv_once, nv_load);
    return nv_status;
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
        char *np = realloc(b->p, cap);
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
    "__device__ __forceinline__ float h2f(unsigned short h) { float f; asm(\"cvt.f32.f16 %%0, %%1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "__device__ __forceinline__ unsigned short f2h(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %%0, %%1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
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
        if (half) sb_printf(b, "    e%d[0] = h2f(((const unsigned short *)p.ext[%d])[%s]);\n", e, e, base);
        else sb_printf(b, "    e%d[0] = ((const float *)p.ext[%d])[%s];\n", e, e, base);
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
        if (half) sb_printf(b, "    ((unsigned short *)p.out[%d])[i0] = f2h(r%d[0]);\n", k, reg);
        else sb_printf(b, "    ((float *)p.out[%d])[i0] = r%d[0];\n", k, reg);
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
    if (opnd >= 0) sb_printf(b, "r%d[j]", opnd);
    else if (opnd == CK_SCALAR) sb_printf(b, "c.ops[%d].%s", k, is_a ? "ca" : "cb");
    else sb_printf(b, "e%d[j]", -1 - opnd);
}

/* The kernel of chain c, named `name`. */
static void gen_kernel(sbuf *b, const ck_chain *c, const char *name)
{
    int vec = chain_vec(c), i32 = chain_idx32(c), nd = c->ndim, last = nd - 1;
    const char *IX = i32 ? "unsigned" : "long long";
    int mode[CK_CHAIN_EXT], generic = 0;
    for (int e = 0; e < c->n_ext; e++) {
        mode[e] = ext_mode(c, e);
        generic |= mode[e] == M_GENERIC;
    }
    sb_printf(b, "extern \"C\" __global__ void __launch_bounds__(256) %s(const ck_chain c, const chain_ptrs p, long long n)\n{\n",
              name);
    sb_printf(b, "  typedef %s IX;\n  const IX groups = (IX)(n / %d);\n", IX, vec);
    sb_printf(b, "  for (IX g = (IX)blockIdx.x * 256u + threadIdx.x; g < groups; g += (IX)gridDim.x * 256u) {\n");
    sb_printf(b, "    const IX i0 = g * %d;\n", vec);
    if (generic) {
        for (int e = 0; e < c->n_ext; e++)
            if (mode[e] == M_GENERIC) sb_printf(b, "    IX o%d = 0;\n", e);
        sb_printf(b, "    { IX r = i0, q, t;\n");
        for (int d = last; d >= 0; d--) {
            if (d > 0) sb_printf(b, "      q = r / (IX)c.dims[%d]; t = r - q * (IX)c.dims[%d]; r = q;\n", d, d);
            else sb_printf(b, "      t = r;\n");
            for (int e = 0; e < c->n_ext; e++)
                if (mode[e] == M_GENERIC) sb_printf(b, "      o%d += t * (IX)c.stride[%d][%d];\n", e, e, d);
        }
        sb_printf(b, "    }\n");
    }
    for (int e = 0; e < c->n_ext; e++) {
        int h = c->ext_half[e];
        sb_printf(b, "    float e%d[%d];\n", e, vec);
        switch (mode[e]) {
        case M_SCALAR:
        case M_OUTER: {
            char at[64];
            if (mode[e] == M_SCALAR) snprintf(at, sizeof at, "0");
            else snprintf(at, sizeof at, "i0 / (IX)c.dims[%d]", last);
            if (h) sb_printf(b, "    { float v = h2f(((const unsigned short *)p.ext[%d])[%s]);", e, at);
            else sb_printf(b, "    { float v = ((const float *)p.ext[%d])[%s];", e, at);
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
        sb_printf(b, "    float r%d[%d];\n    _Pragma(\"unroll\") for (int j = 0; j < %d; j++) r%d[j] = ", k, vec, vec, k);
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
    sb_printf(b, "  }\n}\n");
}

/* ---- the process-wide kernel cache -------------------------------------------------- */

typedef struct kentry {
    char *key;            /* the kernel's source with the name "K" */
    cudaKernel_t kernel;  /* NULL: compiling it failed (the interpreter runs it) */
    int vec;
} kentry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static kentry *cache;
static int n_cache, cap_cache;

static int cache_find(const char *key)
{
    for (int i = 0; i < n_cache; i++)
        if (!strcmp(cache[i].key, key)) return i;
    return -1;
}

static int cache_add(char *key, int vec)
{
    if (n_cache == cap_cache) {
        int cap = cap_cache ? 2 * cap_cache : 64;
        kentry *nc = realloc(cache, sizeof *nc * (size_t)cap);
        if (!nc) return -1;
        cache = nc;
        cap_cache = cap;
    }
    cache[n_cache] = (kentry){key, NULL, vec};
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

/* Compiles kernels `idx[0..n)` of the cache in one program. */
static void compile_batch(int sm, const int *idx, int n, const char *plan_name)
{
    sbuf src = {0};
    sb_printf(&src, prelude_fmt, CK_CHAIN_DIMS, CK_CHAIN_EXT, CK_CHAIN_DIMS, CK_CHAIN_OUT, CK_CHAIN_EXT, CK_CHAIN_OUT,
              CK_CHAIN_OPS, CK_CHAIN_EXT, CK_CHAIN_OUT, sizeof(ck_chain), sizeof(ck_chain_op));
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "lector_chain_%d", idx[i]);
        const char *key = cache[idx[i]].key;
        const char *k = strstr(key, " K(");
        if (!k) continue;
        sb_printf(&src, "%.*s %s%s\n", (int)(k - key), key, name, k + 2);
    }
    if (src.oom) {
        free(src.p);
        return;
    }
    char arch[64];
    int cubin = 0;
    if (arch_option(sm, arch, sizeof arch, &cubin)) {
        H->log(2, "cuda: NVRTC cannot compile for sm_%d: chains run in the interpreter", sm);
        free(src.p);
        return;
    }
    const char *opts[] = {arch, "--fmad=false", "-w"};
    nvrtcProgram prog = NULL;
    nvrtcResult r = nv.create(&prog, src.p, "lector_chains.cu", 0, NULL, NULL);
    if (!r) r = nv.compile(prog, 3, opts);
    if (r) {
        size_t ln = 0;
        char *log = NULL;
        if (prog && !nv.log_size(prog, &ln) && ln && (log = malloc(ln + 1)) && !nv.log(prog, log)) log[ln] = 0;
        H->log(2, "cuda: %s: NVRTC failed (%s): chains run in the interpreter; %.400s", plan_name, nv.errstr(r),
               log ? log : "");
        free(log);
        if (prog) nv.destroy(&prog);
        free(src.p);
        return;
    }
    size_t sz = 0;
    char *image = NULL;
    if (!(cubin ? nv.cubin_size(prog, &sz) : nv.ptx_size(prog, &sz)) && sz && (image = malloc(sz)) &&
        (cubin ? nv.cubin(prog, image) : nv.ptx(prog, image))) {
        free(image);
        image = NULL;
    }
    nv.destroy(&prog);
    free(src.p);
    if (!image) return;
    cudaLibrary_t lib;
    cudaError_t e = cudaLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
    free(image);
    if (e != cudaSuccess) {
        cudaGetLastError();
        H->log(2, "cuda: loading NVRTC's code failed (%s): chains run in the interpreter", cudaGetErrorString(e));
        return;
    }
    /* the library stays loaded for the life of the process, like the module's own kernels */
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "lector_chain_%d", idx[i]);
        cudaKernel_t k = NULL;
        if (cudaLibraryGetKernel(&k, lib, name) == cudaSuccess) cache[idx[i]].kernel = k;
        else cudaGetLastError();
    }
}

void cu_compile_chains(compile_ctx *cc)
{
    pthread_once(&nv_once, nv_load);
    if (!nv_ok) return;
    cu_plan *cp = cc->cp;
    int *todo = malloc(sizeof(int) * (size_t)(cp->n_steps + 1));
    int *slot = malloc(sizeof(int) * (size_t)(cp->n_steps + 1));
    if (!todo || !slot) {
        free(todo);
        free(slot);
        return;
    }
    int n_todo = 0;
    double t0 = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cp->n_steps; i++) {
        slot[i] = -1;
        cu_step *s = &cp->steps[i];
        if (s->kind != S_CHAIN) continue;
        sbuf b = {0};
        gen_kernel(&b, s->chain, "K");
        if (b.oom) {
            free(b.p);
            continue;
        }
        int k = cache_find(b.p);
        if (k < 0) {
            k = cache_add(b.p, chain_vec(s->chain));
            if (k < 0) {
                free(b.p);
                continue;
            }
            todo[n_todo++] = k;
        } else {
            free(b.p);
        }
        slot[i] = k;
    }
    if (n_todo) compile_batch(cc->sm, todo, n_todo, cc->g->name);
    int compiled = 0;
    for (int i = 0; i < cp->n_steps; i++)
        if (slot[i] >= 0 && cache[slot[i]].kernel) {
            cp->steps[i].kfn = cache[slot[i]].kernel;
            cp->steps[i].kvec = cache[slot[i]].vec;
            compiled++;
        }
    pthread_mutex_unlock(&cache_lock);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (n_todo)
        H->log(3, "cuda: %s: %d chain kernels compiled by NVRTC in %.0f ms; %d chains use compiled kernels",
               cc->g->name, n_todo, ts.tv_sec * 1e3 + ts.tv_nsec / 1e6 - t0, compiled);
    free(todo);
    free(slot);
}

int cu_launch_compiled_chain(cudaStream_t sm, const cu_step *s, const void *const *ext, void *const *out)
{
    const ck_chain *c = s->chain;
    int64_t n = 1;
    for (int d = 0; d < c->ndim; d++) n *= c->dims[d];
    if (n == 0) return 0;
    struct {
        const void *ext[CK_CHAIN_EXT];
        void *out[CK_CHAIN_OUT];
    } p;
    for (int e = 0; e < CK_CHAIN_EXT; e++) p.ext[e] = e < c->n_ext ? ext[e] : NULL;
    for (int k = 0; k < CK_CHAIN_OUT; k++) p.out[k] = k < c->n_out ? out[k] : NULL;
    long long nn = (long long)n;
    int64_t groups = n / s->kvec, blocks = (groups + 255) / 256;
    if (blocks > 65535LL * 8) blocks = 65535LL * 8;
    if (blocks < 1) blocks = 1;
    void *args[] = {(void *)c, &p, &nn};
    dim3 grid = {(unsigned)blocks, 1, 1}, block = {256, 1, 1};
    return (int)cudaLaunchKernel((const void *)s->kfn, grid, block, args, 0, sm);
}
