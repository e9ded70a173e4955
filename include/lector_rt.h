/*
 * lector_rt.h - Lector's inference runtime: load an ONNX model, run it.
 *
 * The OCR pipeline (lector.h) is built on this header and on
 * lector_rt_image.h (inputs made on the device from pixels, outputs reduced
 * for CTC decoders); it is public so that any ONNX model within Lector's op
 * set can be run directly (see `lector run-model`).
 *
 * Usage:
 *
 *     lector_error err;
 *     lector_model *m = NULL;
 *     if (lector_model_load_file("det.onnx", NULL, &m, &err) != LECTOR_OK) {
 *         fprintf(stderr, "%s\n", err.message);
 *         return 1;
 *     }
 *     int64_t dims[4] = {1, 3, 640, 640};
 *     lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 640, 640}, pixels};
 *     lector_tensor *out = NULL;
 *     size_t n_out = 0;
 *     if (lector_model_run(m, &in, 1, &out, &n_out, &err) == LECTOR_OK) {
 *         ... out[0].dims, out[0].data ...
 *         lector_tensors_free(out, n_out);
 *     }
 *     lector_model_free(m);
 *
 * Threading contract: a loaded lector_model is immutable from the caller's
 * point of view. Any number of threads may call lector_model_run() on the
 * same model at once; each call uses its own activation memory. Execution
 * plans (one per distinct input shape) are compiled on first use and kept in
 * a bounded, internally locked LRU cache; what does not depend on the shape
 * (converted weights, kernels, activation arenas) is the model's and shared
 * by all its plans (docs/RUNTIME.md).
 *
 * Errors: every fallible function returns a lector_status and, when `err` is
 * non-NULL, fills it with the same code and a message that names the file,
 * node or input concerned. Library code never aborts or exits.
 */
#ifndef LECTOR_RT_H
#define LECTOR_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stable status codes: values are never renumbered, new ones are appended. */
typedef enum lector_status {
    LECTOR_OK = 0,
    LECTOR_ERR_INVALID_ARGUMENT = 1, /* NULL pointer, bad option value */
    LECTOR_ERR_IO = 2,               /* file cannot be opened or read */
    LECTOR_ERR_PARSE = 3,            /* bytes are not a valid ONNX/protobuf message */
    LECTOR_ERR_INVALID_MODEL = 4,    /* well-formed protobuf, inconsistent graph */
    LECTOR_ERR_UNSUPPORTED_OP = 5,   /* an operator (or attribute value) outside the op set */
    LECTOR_ERR_SHAPE = 6,            /* input of the wrong rank/shape, shapes that do not broadcast */
    LECTOR_ERR_DTYPE = 7,            /* input or initializer of an unsupported or wrong element type */
    LECTOR_ERR_OUT_OF_MEMORY = 8,    /* host or device allocation failed, or a memory cap was reached */
    LECTOR_ERR_BACKEND = 9,          /* a backend failed (oneDNN, CUDA); the model stays usable */
    LECTOR_ERR_LIMIT = 10,           /* an input exceeds a configured limit (size, pixels, pages) */
    LECTOR_ERR_IMAGE = 11,           /* an image cannot be decoded */
    LECTOR_ERR_UNAVAILABLE = 12,     /* a requested device or feature is not available here */
    LECTOR_ERR_TIMEOUT = 13,         /* a deadline passed */
    LECTOR_ERR_INTERNAL = 14,        /* a bug in Lector: please report it */
    LECTOR_ERR_CANCELLED = 15        /* the caller stopped the call (lector_read_options.cancel) */
} lector_status;

/* A short constant name for a status, e.g. "LECTOR_ERR_PARSE". Never NULL. */
const char *lector_status_str(lector_status status);

/* Detailed error of one call (curl's error buffer): `code` equals the return
 * value, `message` is a NUL-terminated sentence naming what failed. */
typedef struct lector_error {
    lector_status code;
    char message[512];
} lector_error;

/* Element types; values are those of ONNX's TensorProto.DataType. */
typedef enum lector_dtype {
    LECTOR_DTYPE_UNDEFINED = 0,
    LECTOR_DTYPE_FLOAT32 = 1,
    LECTOR_DTYPE_UINT8 = 2,
    LECTOR_DTYPE_INT8 = 3,
    LECTOR_DTYPE_INT32 = 6,
    LECTOR_DTYPE_INT64 = 7,
    LECTOR_DTYPE_BOOL = 9,
    LECTOR_DTYPE_FLOAT16 = 10,
    LECTOR_DTYPE_FLOAT64 = 11
} lector_dtype;

#define LECTOR_MAX_DIMS 8

/* A dense, row-major tensor. For inputs the caller owns `data`; tensors
 * returned by lector_model_run() are owned by the caller and released with
 * lector_tensors_free(). */
typedef struct lector_tensor {
    lector_dtype dtype;
    int ndim;
    int64_t dims[LECTOR_MAX_DIMS];
    void *data;
} lector_tensor;

/* Bytes per element of `dtype`, 0 if unknown. */
size_t lector_dtype_size(lector_dtype dtype);
/* "float32", "int64", ... ; "undefined" for unknown values. */
const char *lector_dtype_name(lector_dtype dtype);
/* Number of elements (product of dims; 1 for a scalar). */
int64_t lector_tensor_numel(const lector_tensor *t);

/* Releases the data of `n` tensors and the array itself. NULL is a no-op. */
void lector_tensors_free(lector_tensor *tensors, size_t n);

/* Name, element type and shape of a graph input or output as declared by the
 * model; a dynamic dimension is -1. */
typedef struct lector_value_info {
    const char *name;
    lector_dtype dtype;
    int ndim;
    int64_t dims[LECTOR_MAX_DIMS];
} lector_value_info;

/* Where models run (lector_params.device of lector.h). */
typedef enum lector_device {
    LECTOR_DEVICE_CPU = 0,  /* a CPU backend: oneDNN, or the reference backend */
    LECTOR_DEVICE_AUTO = 1, /* the GPU when usable, else the CPU with a one-line reason */
    LECTOR_DEVICE_CUDA = 2  /* the GPU or an error saying why not */
} lector_device;

/* A device string taken apart by lector_device_parse(). */
typedef struct lector_device_spec {
    lector_device device; /* LECTOR_DEVICE_CPU for "cpu" and a CPU backend's name */
    const char *backend;  /* "cpu", "auto", or the backend's name ("ref", "onednn", "cuda"); static */
    int index;            /* N of "cuda:N"; 0 otherwise */
} lector_device_spec;

/* Parses a device string as lector_model_options.backend, the CLI's
 * --device and --backend and `lector serve` take it: "cpu" (the fastest CPU
 * backend compiled in; also NULL), "auto" (the GPU when usable, else the
 * CPU), the name of a backend this build registers ("ref", "onednn",
 * "cuda"), and "cuda:N" (GPU N, 0..1023). LECTOR_ERR_INVALID_ARGUMENT with
 * the names this build knows for anything else. Nothing is loaded: whether
 * the device is usable is known when a model is loaded on it. */
lector_status lector_device_parse(const char *name, lector_device_spec *out, lector_error *err);

/* One GPU as the driver's NVML reports it now. A value whose *_ok is 0 was
 * not reported (not supported on this GPU, or NVML failed for it). */
typedef struct lector_gpu_sample {
    unsigned index; /* NVML index */
    char name[96];  /* "NVIDIA H200"; "?" unknown */
    int mem_ok, temp_ok, util_ok, reasons_ok;
    unsigned long long mem_used, mem_total; /* bytes, used as nvidia-smi shows it */
    unsigned temp_c;                        /* GPU die, degrees Celsius */
    unsigned util_gpu, util_mem;            /* % of NVML's last sample period a kernel ran / memory was busy */
    unsigned long long reasons;             /* clock event (throttle) reasons: lector_gpu_clock_reason() */
} lector_gpu_sample;

/* Samples up to `max` GPUs into `out` and returns how many (0 when the
 * driver sees none), or -1 when NVML cannot be loaded or initialised (no
 * NVIDIA driver). NVML (libnvidia-ml.so.1, or docs/DEBUG.md's
 * LECTOR_DOCTOR_NVML) is loaded on the first call and stays loaded.
 * Thread-safe. */
int lector_gpu_sample_all(lector_gpu_sample *out, int max);

/* Name of clock event reason i ("hw_slowdown"), its bit in
 * lector_gpu_sample.reasons in *bit; NULL past the last. */
const char *lector_gpu_clock_reason(size_t i, unsigned long long *bit);

typedef struct lector_model lector_model;

/* Options of a model; zero-initialised or NULL means defaults. */
typedef struct lector_model_options {
    /* Backend (lector_device_parse): NULL or "cpu" (the fastest CPU backend
     * compiled in), "ref" (the reference backend, the oracle of the tests),
     * "cuda" / "cuda:N" (NVIDIA GPU N through liblector-cuda.so; fails with
     * LECTOR_ERR_UNAVAILABLE and the reason when it cannot be used). */
    const char *backend;
    /* Worker threads for one run; 0 = the number of physical cores. */
    int threads;
    /* Execution plans kept per model (LRU), one per input shape; 0 = 64. */
    int plan_cache_size;
    /* backend "cuda" or "cuda:N" (the GPU module, loaded at run time): bytes of
     * GPU memory the whole process may take through Lector on that GPU
     * (0 = no cap; the last nonzero cap set wins); fp16 = 1 runs in half
     * precision where the backend supports it. */
    size_t gpu_mem_limit;
    int fp16;
    /* Bytes the plan cache may hold: its plans' own state (steps, the
     * backend's primitives) and the activation arenas the model keeps for
     * them, in the backend's memory (the weights, converted once per model,
     * are not counted). The least recently used idle plans are evicted to
     * stay under it. A plan being run is never freed under its run: it is
     * freed when the run ends. 0 = bounded by plan_cache_size only. */
    size_t plan_cache_bytes;
    /* CPU backends: which input shapes get kernels compiled for them (oneDNN
     * JIT code per shape: the fastest runs, and a compile of tens of
     * milliseconds per new shape). 0 (default): every shape. > 0: only the
     * shapes whose largest spatial dimension (the larger of the last two of
     * a rank-4 input) equals jit_size; every other shape runs on kernels that
     * take their sizes as arguments (the reference backend's: nothing to
     * compile, slower per run). Which kernels a shape runs on depends on
     * the shape alone, never on what ran before. Ignored by the GPU backend. */
    int jit_size;
    /* Experimental. 1: batches whose items have different widths (input
     * 0's last axis), each item's outputs as if it ran alone at its own
     * width (lector_model_run_masked). The graph is rewritten so that every
     * operator reading across the width (convolution and pooling windows,
     * global average pooling, a Softmax over the width) reads only an item's
     * own columns; the load fails with LECTOR_ERR_UNSUPPORTED_OP naming the
     * node when an operator reads across it in a way no rule covers.
     * docs/RUNTIME.md has the rule. Runs tensors only (no image rows). */
    int width_masks;
    /* GPU backend: a directory where the kernels it compiles at run time
     * (NVRTC) and cuDNN's convolution algorithm choices are kept, so that
     * the next process loads them instead of making them again (the
     * start-up of a process: a few hundred milliseconds a plan for the
     * kernels, up to ~100 ms a plan for the choices). Created when missing;
     * shared safely by processes. NULL or "" (default): nothing is kept. */
    const char *kernel_cache_dir;
    /* GPU backend: the runs expected in flight at once (0: none assumed).
     * A run needs a worker of the backend's own (a CUDA stream with its
     * cuDNN and cuBLAS handles); this many are made ahead, on a thread of
     * the backend's, while the model loads, rather than by the first runs
     * (each of which then waited tens of milliseconds). More runs than this
     * still work: each makes its worker when it needs one. */
    int gpu_workers;
} lector_model_options;

/* Loads an ONNX model from a file. On success *out holds the model. */
lector_status lector_model_load_file(const char *path, const lector_model_options *opt, lector_model **out,
                                     lector_error *err);

/* Loads an ONNX model from memory; the bytes are not kept after return.
 * `name` is used in messages (may be NULL). */
lector_status lector_model_load_memory(const void *data, size_t size, const char *name, const lector_model_options *opt,
                                       lector_model **out, lector_error *err);

/* Frees a model. NULL is a no-op. No run may be in progress. */
void lector_model_free(lector_model *model);

size_t lector_model_num_inputs(const lector_model *model);
size_t lector_model_num_outputs(const lector_model *model);
/* Information on input/output `i`; NULL when out of range. The pointer lives
 * as long as the model. */
const lector_value_info *lector_model_input(const lector_model *model, size_t i);
const lector_value_info *lector_model_output(const lector_model *model, size_t i);
/* Name of the backend that runs the model ("ref", "onednn", "cuda", ...). */
const char *lector_model_backend(const lector_model *model);

/* Bytes the model's plan cache holds now (see plan_cache_bytes), plans
 * evicted while they ran included until their runs end. Thread-safe. */
size_t lector_model_cache_bytes(const lector_model *model);

/* Releases memory the model keeps for reuse: cached activation arenas and,
 * on a GPU, idle workspaces and staging buffers. Plans stay compiled. */
void lector_model_trim(lector_model *model);

/* What a model has compiled and holds (lector_model_get_stats). Counters
 * only grow: a stream of inputs whose shapes the model has seen before
 * leaves plans_compiled and kernels_compiled where they were. */
typedef struct lector_model_stats {
    uint64_t plans_compiled;   /* execution plans built: one per input shape not in the plan cache */
    uint64_t kernels_compiled; /* device or JIT kernels the backend built for those plans (oneDNN
                                  primitives, NVRTC kernels); kernels are shared by plans and kept
                                  across them, so a new shape may compile none */
    uint64_t plans_generic;    /* of plans_compiled, those on kernels that take sizes as arguments
                                  (lector_model_options.jit_size): nothing compiled for them */
    uint64_t runs;             /* model runs */
    uint64_t arenas_allocated; /* activation arenas allocated (the first ones, then growths) */
    size_t arena_bytes;        /* bytes of idle activation arenas kept for reuse */
    int plans_cached;          /* plans in the cache now */
} lector_model_stats;

/* Fills *stats (zeros for a NULL model). Thread-safe. */
void lector_model_get_stats(const lector_model *model, lector_model_stats *stats);

/* GPU memory this process holds through Lector on the model's GPU, and the
 * cap; both 0 for CPU backends. */
void lector_model_gpu_memory(const lector_model *model, size_t *used, size_t *limit);

/* Bytes this process may still allocate on the model's GPU: the device's
 * free memory, bounded by what the cap (gpu_mem_limit) leaves; 0 for CPU
 * backends. A snapshot: other threads and processes allocate too. */
size_t lector_model_gpu_available(const lector_model *model);

/* Bytes of the activation arena one run needs for inputs of these shapes
 * (their data is not read and may be NULL), compiling and caching the plan
 * as a run would. Thread-safe. */
lector_status lector_model_arena_bytes(const lector_model *model, const lector_tensor *inputs, size_t n_inputs,
                                       size_t *bytes, lector_error *err);

/* Makes ahead the activation memory of `runs` runs in flight at once of
 * inputs of these shapes (or of the largest shape run so far, if larger),
 * compiling the plan as lector_model_arena_bytes does, and keeps that many
 * arenas from then on: a model's memory stops growing from here instead
 * of each time more runs than ever before are in flight. An arena that a
 * run outgrows is replaced at the largest size. lector_model_trim frees
 * them (they are made again as runs need them). max_bytes (0: no bound)
 * bounds the reserve: at most max_bytes / the arena's size runs.
 * Allocation stops at the first failure, which is not an error: *made
 * (may be NULL) tells how many arenas were made. Thread-safe. */
lector_status lector_model_reserve(lector_model *model, const lector_tensor *inputs, size_t n_inputs, int runs,
                                   size_t max_bytes, int *made, lector_error *err);

/* Runs the model. `inputs` are given in the order of the model's inputs
 * (lector_model_input(m, i)). On success *outputs is a new array of
 * *n_outputs tensors in the order of the model's outputs. Thread-safe. */
lector_status lector_model_run(const lector_model *model, const lector_tensor *inputs, size_t n_inputs,
                               lector_tensor **outputs, size_t *n_outputs, lector_error *err);

/* Experimental: lector_model_run of a model loaded with width_masks, whose
 * input 0 holds a batch of items padded with zeros to the batch's width W
 * (its last axis): valid[b] (1..W) is item b's own width. Each item's
 * outputs are, within its extent, those of the item run alone at its own
 * width; out_valid[b] (may be NULL) receives that extent on output 0's
 * width axis (what follows it is padding). Thread-safe. */
lector_status lector_model_run_masked(const lector_model *model, const lector_tensor *inputs, size_t n_inputs,
                                      const int64_t *valid, lector_tensor **outputs, size_t *n_outputs,
                                      int64_t *out_valid, lector_error *err);

/* Times the model the way a framework benchmark times one (`lector bench
 * gpu`): on a GPU the inputs are uploaded once, then the model runs `runs`
 * times back to back on the device, each run between two CUDA events (its
 * work on the device only: no host<->device copies); on a CPU backend each
 * run is one execution timed on the host. ms[i] receives run i in
 * milliseconds; `mode` (may be NULL) how the plan runs: "fp16 NHWC",
 * "fp32 NCHW" on a GPU, the backend's name otherwise. Thread-safe. */
lector_status lector_model_time(const lector_model *model, const lector_tensor *inputs, size_t n_inputs, int runs,
                                double *ms, char *mode, size_t mode_len, lector_error *err);

/* Reads a serialized onnx.TensorProto (the format of ONNX's node tests,
 * input_0.pb/output_0.pb) into a new tensor; free with lector_tensors_free(t, 1).
 * If `name` is non-NULL it receives the tensor's name (malloc'd, may be NULL). */
lector_status lector_tensor_read_pb(const char *path, lector_tensor **out, char **name, lector_error *err);
/* Writes a tensor as a serialized onnx.TensorProto named `name` (may be NULL). */
lector_status lector_tensor_write_pb(const char *path, const lector_tensor *t, const char *name, lector_error *err);

/* ---- logging and test controls ---------------------------------------- */

/* Levels of the library's log lines, most severe first. */
typedef enum lector_log_level {
    LECTOR_LOG_ERROR = 0,
    LECTOR_LOG_WARN = 1,
    LECTOR_LOG_INFO = 2,
    LECTOR_LOG_DEBUG = 3
} lector_log_level;

/* Receives one log line (a sentence, no newline). Called from whichever
 * thread logs, while a call into Lector runs; it must not call lector_log_set. */
typedef void (*lector_log_callback)(lector_log_level level, const char *message, void *user_data);

/* Lines at `level` or more severe go to `callback` with `user_data`; NULL
 * restores the default, stderr as "lector: <level>: <message>". Until the
 * first call the level is the environment's LECTOR_LOG (error, warn, info or
 * debug; default warn) and the lines go to stderr. Thread-safe. */
void lector_log_set(lector_log_callback callback, void *user_data, lector_log_level level);

/* The test controls set in this process's environment (fault injection,
 * optimisation disables, profiling; docs/DEBUG.md), comma-separated, "" when
 * none. They are read once, at the first use of any; several change
 * results, so a service should refuse them (`lector serve` does unless
 * started with --allow-test-controls). Never NULL. */
const char *lector_test_controls(void);

/* Library version string, e.g. "0.1.0". */
const char *lector_version(void);

#ifdef __cplusplus
}
#endif
#endif /* LECTOR_RT_H */
