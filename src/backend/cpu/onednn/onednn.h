/*
 * onednn.h - internals of the oneDNN CPU backend (src/backend/cpu/onednn).
 *
 * A plan compiles to a list of steps. A step is a oneDNN primitive (created
 * once, at plan compile time, with a user-managed scratchpad so that one
 * primitive can run in many threads at once), a reference kernel (for the
 * ops oneDNN cannot do: shape ops, Slice, Reshape, ...) or a small in-place
 * activation. Values live in "slots": a slot is a buffer in the arena (or a
 * constant, or a graph input) with a oneDNN memory descriptor, so an
 * activation can stay in oneDNN's blocked layout (nChw16c, ...) from one
 * primitive to the next; a value gets a second slot in another layout only
 * where a consumer needs one (a reference kernel, a graph output: plain).
 * The backend plans its own arena (plan->arena_size is overwritten).
 * Primitives and converted weights come from the backend's caches
 * (onednn_cache.h): a plan of a new input shape creates only the
 * primitives no plan of the model has created before.
 *
 * Ops on oneDNN (f32): Conv (regular, grouped/depthwise, pointwise) and
 * ConvTranspose (kernel == stride: 1x1 conv + depth-to-space; otherwise
 * deconvolution) with bias and fused chains (see onednn_fuse.c),
 * MaxPool/AveragePool (GlobalAveragePool: own kernel, sums in double),
 * MatMul (const 2-D B: one GEMM with folded bias; else batched with
 * broadcasting), Softmax, LayerNormalization,
 * Resize (nearest with integer up-scaling; linear half_pixel with
 * scale == out/in), Add/Sub/Mul/Div with broadcasting, unary activations,
 * Concat, Transpose (a reorder). Everything else, and any node whose
 * primitive oneDNN refuses, runs the reference kernel on plain NCHW
 * (logged at debug level for the heavy ops): Reshape, Squeeze, Unsqueeze,
 * Slice, Split, Gather, Cast, Shape, Pow/ReduceMean/Sqrt outside a
 * recognised LayerNorm, BatchNormalization not after a convolution, non-f32
 * tensors, Resize modes oneDNN does not match (align_corners, cubic, ...).
 *
 * oneDNN 2.6 quirks handled here: eltwise post-ops of one algorithm share
 * the first one's parameters (linear ops are composed, a conflicting one
 * ends the chain); hardswish takes no alpha/beta (only 1/6, 1/2 fuse);
 * resampling maps coordinates with out/in whatever factors it is given.
 *
 * Threads: each model's backend has `threads` (default: physical cores).
 * plan_execute calls omp_set_num_threads(threads) in the calling thread
 * before it runs anything; oneDNN (OpenMP runtime) and the reference kernels
 * then use that many workers. OpenMP thread pools belong to the calling
 * thread, so N threads running models at once use N * threads cores: the
 * rule for several engines/models in one process is that the sum of the
 * `threads` of the runs that may be in flight at the same time must not
 * exceed the physical cores (e.g. 4 request threads on 16 cores: threads=4).
 * Small primitives (< ~2 MFLOP) run on one thread, and on an oversubscribed
 * machine a run switches to a single-thread variant of the plan
 * (dn_effective_threads(); LECTOR_ADAPTIVE_THREADS=0 turns that off).
 */
#ifndef LECTOR_ONEDNN_H
#define LECTOR_ONEDNN_H

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

#include "backend/cpu/onednn/onednn_cache.h"
#include "rt/backend.h"

#define DN_MAX_ARGS 24
#define DN_POOL     8

enum { DN_SLOT_ARENA, DN_SLOT_CONST, DN_SLOT_INPUT };

typedef struct dn_slot {
    int kind;
    int value;             /* graph value it holds (-1 for scratch) */
    dnnl_memory_desc_t md; /* layout; plain for non-f32 values */
    size_t size;           /* bytes */
    size_t off;            /* DN_SLOT_ARENA */
    void *ptr;             /* DN_SLOT_CONST */
    int input;             /* DN_SLOT_INPUT: graph input index */
    int first, last;       /* steps that write it first / read it last */
} dn_slot;

enum { DN_STEP_PRIM, DN_STEP_REF, DN_STEP_ACT, DN_STEP_GAP };

typedef struct dn_step {
    int kind;
    dnnl_primitive_t prim;
    dn_kernel *kern; /* the model's cached kernel prim belongs to (referenced); NULL: prim is the step's */
    int n_args;
    int arg[DN_MAX_ARGS];
    int slot[DN_MAX_ARGS];
    int node; /* DN_STEP_REF: node index; slots below are plain */
    int n_in, n_out;
    int in_slot[16], out_slot[8];
    rt_act act;      /* DN_STEP_ACT: applied in place to out_slot[0] */
    int64_t dims[4]; /* DN_STEP_GAP: input dims (node = 1: nhwc) */
    float alpha, beta;
    int mem_base;           /* index of its first memory object in a context */
    int nthr;               /* OpenMP threads it was created for and runs with */
    dnnl_memory_desc_t *md; /* per arg: the layout it is viewed with */
} dn_step;

typedef struct dn_ctx {
    dnnl_stream_t stream;
    dnnl_memory_t *mem; /* one per (step, arg) */
    void **ptr;         /* current data handle of each */
} dn_ctx;

typedef struct dn_plan {
    dn_caches *caches; /* the backend's */
    dn_step *steps;
    int n_steps;
    size_t cap_steps;
    dn_slot *slots;
    int n_slots;
    size_t cap_slots;
    void **owned; /* reordered weights, folded biases */
    int n_owned;
    size_t cap_owned;
    int *vslot;             /* per value: its primary slot (-1 none) */
    int *vplain;            /* per value: a plain-layout slot (-1 none yet) */
    int *valt;              /* per value: one extra converted slot (-1) */
    int *out_slot;          /* per graph output: a plain slot */
    int threads;            /* OpenMP threads this variant was compiled for */
    size_t arena_size;      /* bytes of arena it needs */
    struct dn_plan *single; /* single-thread variant (load-adaptive), lazily compiled */
    int single_failed;
    int scratch_slot; /* -1 if no primitive needs a scratchpad */
    size_t scratch_size;
    int n_mem; /* memory objects per context */
    pthread_mutex_t lock;
    dn_ctx *pool[DN_POOL];
    int n_pool;
} dn_plan;

#endif
