/*
 * lector_rt.h - Lector's inference runtime: load an ONNX model, run it.
 *
 * The OCR pipeline (lector.h) is built on this header; it is public so that
 * any ONNX model within Lector's op set can be run directly (see
 * `lector run-model`).
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
    LECTOR_ERR_INTERNAL = 14         /* a bug in Lector: please report it */
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

typedef struct lector_model lector_model;

/* Options of a model; zero-initialised or NULL means defaults. */
typedef struct lector_model_options {
    /* Backend: NULL or "cpu" (the fastest CPU backend compiled in),
     * "ref" (the plain-C reference backend, the oracle of the tests),
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
    /* 1: every float output of rank >= 2 becomes two outputs, in its place:
     * the index of its maximum over the last axis (int64, ONNX ArgMax
     * keepdims=0, first maximum) and that maximum (float, ReduceMax
     * keepdims=0): what a CTC decoder reads of a recogniser's probabilities,
     * without copying the whole tensor off the device. Element type and rank
     * are those the model declares for the output (an output whose rank is
     * not declared stays as it is); the new outputs are named
     * "<output>_argmax" and "<output>_max". */
    int output_argmax;
    /* CPU backends: which input shapes get kernels compiled for them (oneDNN
     * JIT code per shape: the fastest runs, and a compile of tens of
     * milliseconds per new shape). 0 (default): every shape. > 0: only the
     * shapes whose largest spatial dimension (the larger of the last two of
     * a rank-4 input) equals jit_size; every other shape runs on kernels that
     * take their sizes as arguments (the reference backend's: nothing to
     * compile, slower per run). Which kernels a shape runs on depends on
     * the shape alone, never on what ran before. Ignored by the GPU backend. */
    int jit_size;
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

/* Runs the model. `inputs` are given in the order of the model's inputs
 * (lector_model_input(m, i)). On success *outputs is a new array of
 * *n_outputs tensors in the order of the model's outputs. Thread-safe. */
lector_status lector_model_run(const lector_model *model, const lector_tensor *inputs, size_t n_inputs,
                               lector_tensor **outputs, size_t *n_outputs, lector_error *err);

/* One row of a model's input made on the backend's device from 8-bit
 * pixels: the page goes up as bytes, not floats. The source is an
 * interleaved image (channels per pixel, rows `stride` bytes apart) of
 * width x height, resized and normalised into an out_height x out_width
 * row of the input ([rows, channels, out_height, width] float32). Each
 * value is
 *   lut[c * 256 + v],  v = min(255, ((S0 >> 4) * beta[2y] >> 16) +
 *                                   ((S1 >> 4) * beta[2y + 1] >> 16) + 2 >> 2),
 *   Sk = p(yofs[2y + k], xofs[x]) * alpha[2x] + p(yofs[2y + k], x1) * alpha[2x + 1]
 * with x1 = xofs[x] + 1, or xofs[x] at the right edge: OpenCV's fixed-point
 * INTER_LINEAR, whose tables lector's image layer makes. Arrays: xofs
 * out_width, alpha 2 * out_width, yofs and beta 2 * out_height, lut
 * channels * 256 entries; all are read during the call only.
 *
 * With `warp` (NULL: p is the source itself) the resize reads a crop made on
 * the device first, as lector's perspective warp makes it
 * (cv2.warpPerspective INTER_CUBIC, BORDER_REPLICATE): crop pixel (x, y)
 * of crop_width x crop_height is, with doubles and the operations in this
 * order, W = warp[6] * x + (warp[7] * y + warp[8]), W = W ? 32 / W : 0,
 * X = rint(clamp(((warp[0] * x + (warp[1] * y + warp[2])) * W)), Y alike
 * with warp[3..5], clamp to the int range (NaN -> INT_MAX),
 * sx = sat16(X >> 5) - 1, sy = sat16(Y >> 5) - 1 and
 *   sat8((sum_ij src(clampy(sy + i), clampx(sx + j)) * cubic[t * 16 + 4i + j] + 2^14) >> 15),
 * t = (Y & 31) * 32 + (X & 31), the clamps to the full source image of
 * full_width x full_height. `pixels` is then the region of that image at
 * (origin_x, origin_y), width x height, that every tap falls in. `turns`
 * then turns the crop: bit 0 90 degrees counter-clockwise (np.rot90),
 * bit 1 then 180 degrees; p is the turned crop, which xofs and yofs index. */
typedef struct lector_image_input {
    const uint8_t *pixels;
    int width, height, channels;
    size_t stride;
    int out_width, out_height;
    const int *xofs;
    const int16_t *alpha;
    const int *yofs;
    const int16_t *beta;
    const float *lut;
    /* the crop (warp == NULL: none) */
    const double *warp;   /* 9 values, row-major */
    const int16_t *cubic; /* 32 * 32 * 16 weights */
    int crop_width, crop_height, turns;
    int origin_x, origin_y, full_width, full_height;
} lector_image_input;

/* 1 when the model's backend takes lector_image_input: the CUDA backend, for
 * a model with one float32 input of rank 4. */
int lector_model_takes_images(const lector_model *model);

/* lector_model_run with the model's only input made from `image` on the
 * device, [1, channels, out_height, out_width]; LECTOR_ERR_UNSUPPORTED_OP
 * where lector_model_takes_images is 0. Thread-safe. */
lector_status lector_model_run_image(const lector_model *model, const lector_image_input *image,
                                     lector_tensor **outputs, size_t *n_outputs, lector_error *err);

/* The same for a batch: the input is [batch, channels, out_height, width],
 * row i < n_rows made from rows[i] (its columns from out_width on zero),
 * rows n_rows..batch-1 zero. Every row has the same channels and
 * out_height, and out_width <= width. Thread-safe. */
lector_status lector_model_run_images(const lector_model *model, const lector_image_input *rows, size_t n_rows,
                                      size_t batch, int width, lector_tensor **outputs, size_t *n_outputs,
                                      lector_error *err);

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

/* Library version string, e.g. "0.1.0". */
const char *lector_version(void);

#ifdef __cplusplus
}
#endif
#endif /* LECTOR_RT_H */
