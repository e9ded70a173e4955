/*
 * testctl.h - the test controls: fault injection, optimisation disables and
 * profiling, for tests and for finding bugs (docs/DEBUG.md lists each).
 *
 * Each control is an environment variable; all of them are read together,
 * once, at the first use of any (pthread_once), and never again: a control
 * set after that has no effect. Nothing else in the tree reads a LECTOR_*
 * variable for such a purpose. What a user may choose is a field of
 * lector_params or lector_model_options instead. `lector serve` refuses to
 * start with any of them set unless told so (--allow-test-controls), since
 * several change results (lector_test_controls()).
 */
#ifndef LECTOR_UTIL_TESTCTL_H
#define LECTOR_UTIL_TESTCTL_H

#include <stddef.h>

/* X(id, variable, what it does): the one list, in docs/DEBUG.md's order. */
/* clang-format off */
#define LECTOR__TESTCTL_LIST(X) \
    X(LECTOR__TC_FAIL_ALLOC,        "LECTOR_FAIL_ALLOC",        "N: the Nth host allocation from then on fails") \
    X(LECTOR__TC_SERVE_FAULT,       "LECTOR_SERVE_FAULT",       "N: every Nth read of the service's primary engine fails as a device error") \
    X(LECTOR__TC_CUDA_FAIL,         "LECTOR_CUDA_FAIL",         "alloc:N or launch:N: the Nth device allocation or step fails") \
    X(LECTOR__TC_CUDA_CHECK,        "LECTOR_CUDA_CHECK",        "1: every step compared with the reference kernel") \
    X(LECTOR__TC_CUDA_PROFILE,      "LECTOR_CUDA_PROFILE",      "1, 2, 3: time per operator, per step, per step as its own graph") \
    X(LECTOR__TC_CUDA_TF32,         "LECTOR_CUDA_TF32",         "1: fp32 convolutions in TF32 (changes results)") \
    X(LECTOR__TC_CUDA_CONV_SEARCH,  "LECTOR_CUDA_CONV_SEARCH",  "1: cuDNN algorithms by a timed search, not the heuristic") \
    X(LECTOR__TC_CUDA_ALGO_CACHE,   "LECTOR_CUDA_ALGO_CACHE",   "0: cuDNN's algorithm choices not kept in the kernel cache's directory between processes") \
    X(LECTOR__TC_CUDA_NHWC,         "LECTOR_CUDA_NHWC",         "0/1: NHWC activations off/on (default: on in fp16)") \
    X(LECTOR__TC_CUDA_GRAPHS,       "LECTOR_CUDA_GRAPHS",       "0: no CUDA graphs, steps run one by one; N: a plan's graph from its Nth run") \
    X(LECTOR__TC_CUDA_SYNC,         "LECTOR_CUDA_SYNC",         "spin, yield or block: how a thread waits for the GPU (default: CUDA's choice)") \
    X(LECTOR__TC_CUDA_FUSE,         "LECTOR_CUDA_FUSE",         "0: no elementwise chains") \
    X(LECTOR__TC_CUDA_NVRTC,        "LECTOR_CUDA_NVRTC",        "0: chains run in the interpreter, not NVRTC kernels") \
    X(LECTOR__TC_CUDA_DW,           "LECTOR_CUDA_DW",           "0: depthwise convolutions on cuDNN, not the own kernels") \
    X(LECTOR__TC_CUDA_DW_UNROLL,    "LECTOR_CUDA_DW_UNROLL",    "0: no depthwise kernels with unrolled taps") \
    X(LECTOR__TC_CUDA_DW_ROWS,      "LECTOR_CUDA_DW_ROWS",      "0: the unrolled depthwise kernels loop over their rows (NVRTC compiles them faster)") \
    X(LECTOR__TC_CUDA_DWFUSE,       "LECTOR_CUDA_DWFUSE",       "0: no chains inside depthwise kernels") \
    X(LECTOR__TC_CUDA_DWFUSE_LIFETIMES, "LECTOR_CUDA_DWFUSE_LIFETIMES", "0: no value kept longer for them") \
    X(LECTOR__TC_CUDA_NVRTC_DUMP,   "LECTOR_CUDA_NVRTC_DUMP",   "DIR: each NVRTC program's source written there, named by its compile time") \
    X(LECTOR__TC_CUDA_CTX_AHEAD,    "LECTOR_CUDA_CTX_AHEAD",    "0: the GPU's context made by the backend's first call, not on a thread while the CUDA libraries load") \
    X(LECTOR__TC_CUDA_NVRTC_LIB,    "LECTOR_CUDA_NVRTC_LIB",    "NAME: NVRTC loaded from NAME (a path or a soname), not libnvrtc.so.<CUDA major>; one that is not there: a machine without NVRTC") \
    X(LECTOR__TC_CUDA_KERNELS_SHIPPED, "LECTOR_CUDA_KERNELS_SHIPPED", "DIR: the shipped kernels looked for there, not beside the CUDA module; empty: none") \
    X(LECTOR__TC_CUDA_POOL,         "LECTOR_CUDA_POOL",         "0: device memory by cudaMalloc/cudaFree (each waits for every stream), not the stream-ordered pool") \
    X(LECTOR__TC_CUDA_WORKERS_AHEAD, "LECTOR_CUDA_WORKERS_AHEAD", "0: a GPU model's workers made by its first runs, not ahead while it loads") \
    X(LECTOR__TC_CUDA_MEM_LOG,      "LECTOR_CUDA_MEM_LOG",      "1: every device allocation and free, and pinned staging grown, logged (debug) with what it is for") \
    X(LECTOR__TC_CUDA_GEMM1X1,      "LECTOR_CUDA_GEMM1X1",      "0: pointwise convolutions on cuDNN, not cuBLAS") \
    X(LECTOR__TC_CUDA_LT,           "LECTOR_CUDA_LT",           "0: half-precision products by cuBLAS's own calls, not cuBLASLt with an algorithm per size class") \
    X(LECTOR__TC_CUDA_PRIME,        "LECTOR_CUDA_PRIME",        "0: the libraries' first calls left to the first plans, not made on a side thread while the models load") \
    X(LECTOR__TC_CUDA_DECONV,       "LECTOR_CUDA_DECONV",       "0: ConvTranspose on cuDNN, not the own kernels") \
    X(LECTOR__TC_ONEDNN_NOFUSE,     "LECTOR_ONEDNN_NOFUSE",     "set: no post-op chains") \
    X(LECTOR__TC_ONEDNN_NOFOLD,     "LECTOR_ONEDNN_NOFOLD",     "set: no per-channel constants folded into weights") \
    X(LECTOR__TC_ONEDNN_NOHSWISH,   "LECTOR_ONEDNN_NOHSWISH",   "set: the HardSwish pattern not fused") \
    X(LECTOR__TC_ONEDNN_OFF,        "LECTOR_ONEDNN_OFF",        "Op,Op: those operators left to the reference kernels") \
    X(LECTOR__TC_ONEDNN_DUMP,       "LECTOR_ONEDNN_DUMP",       "set: each compiled plan printed on stderr") \
    X(LECTOR__TC_ADAPTIVE_THREADS,  "LECTOR_ADAPTIVE_THREADS",  "0: off; always: the single-thread variant always") \
    X(LECTOR__TC_HOST_CHAINS,       "LECTOR_HOST_CHAINS",       "0: the host executor runs elementwise nodes one by one, not in chains") \
    X(LECTOR__TC_HOST_PROFILE,      "LECTOR_HOST_PROFILE",      "1: the host executor's time per operator and kernel, printed at exit") \
    X(LECTOR__TC_GEMM_KERNEL,       "LECTOR_GEMM_KERNEL",       "avx2 or generic: a narrower reference GEMM kernel") \
    X(LECTOR__TC_PARALLEL_LOAD,     "LECTOR_PARALLEL_LOAD",     "0: an engine loads its models one after another; 1 (default): side by side") \
    X(LECTOR__TC_AFFINITY,          "LECTOR_AFFINITY",          "0: a run takes the best-fitting idle arena and the GPU worker put back last, not its thread's own") \
    X(LECTOR__TC_GPU_WARMUP,        "LECTOR_GPU_WARMUP",        "0: a GPU engine does not run its line models once on a blank line while its first page is read") \
    X(LECTOR__TC_CLI_FREE_ENGINE,   "LECTOR_CLI_FREE_ENGINE",   "1: the CLI frees a GPU engine before it exits, not leaving it to the process's exit") \
    X(LECTOR__TC_GPU_PREPROCESS,    "LECTOR_GPU_PREPROCESS",    "0: the models' inputs made on the CPU, not the GPU") \
    X(LECTOR__TC_GPU_BATCH_WAIT,    "LECTOR_GPU_BATCH_WAIT",    "0: on a GPU a partial cls/rec batch runs when a worker is free, not after the tasks that may add to it") \
    X(LECTOR__TC_REC_PAD,           "LECTOR_REC_PAD",           "N: every line recognised in a tensor padded to a multiple of N pixels (changes text)") \
    X(LECTOR__TC_DET_PAD,           "LECTOR_DET_PAD",           "N: every detection input padded to a multiple of N pixels (moves boxes)") \
    X(LECTOR__TC_GPU_RESERVE,       "LECTOR_GPU_RESERVE",       "0: a GPU engine's warm-up does not make the line models' arenas for every worker ahead")
/* clang-format on */

typedef enum lector__tc {
#define LECTOR__TC_ENUM(id, var, doc) id,
    LECTOR__TESTCTL_LIST(LECTOR__TC_ENUM)
#undef LECTOR__TC_ENUM
        LECTOR__TC_COUNT
} lector__tc;

/* The control's text as set, NULL when unset. */
const char *lector__tc_str(lector__tc id);
/* A switch: unset or empty -> dflt, "0" -> 0, anything else -> 1. */
int lector__tc_flag(lector__tc id, int dflt);
/* A number: unset, empty or not a number -> dflt. */
long lector__tc_long(lector__tc id, long dflt);
/* The environment variable of a control. */
const char *lector__tc_name(lector__tc id);

#endif
