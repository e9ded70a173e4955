/*
 * cuda_profile.c - LECTOR_CUDA_PROFILE: the time of each step (cuda_exec.c
 * runs a plan through cu_run_profiled when it is set).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* LECTOR_CUDA_PROFILE=1: steps run one by one between events, and the time
 * per operator (with its step kind: cudnn/own kernel/host) is printed at exit.
 * A plan's first run is left out of that table: it holds the libraries' lazy
 * loading (cuBLAS loads its kernels on first use), which would swamp a small
 * model's figures. First runs get a table of their own (each step's time on
 * the host, launch to the end of its GPU work, and on the GPU), and their
 * steps that take CU_PROFILE_FIRST_MS or more are logged (debug): what a cold
 * start and a first pass over new shapes wait for.
 * LECTOR_CUDA_PROFILE=2 also prints every step of each plan's second run.
 * LECTOR_CUDA_PROFILE=3 times each step as a CUDA graph of its own, replayed
 * back to back: what the step costs inside the plan's graph, without the host
 * work between events that swamps small steps in eager timing (cuDNN's, most).
 * The replays run a step again over its own results (in-place chains), so the
 * outputs of a profiled run are meaningless. */
int cu_profiling(void) { return (int)H->testctl_long(LECTOR__TC_CUDA_PROFILE, 0); }

/* A first run's step logged (debug) when it takes this long, host and GPU together. */
#define CU_PROFILE_FIRST_MS 2.0

static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
/* kinds, then cuDNN convolutions by class (dense, pointwise, depthwise) */
#define PROF_KINDS (S_KIND_COUNT + 3)
static double prof_ms[RT_OP_COUNT + 1][PROF_KINDS], prof_host[RT_OP_COUNT + 1][PROF_KINDS];
static long prof_n[RT_OP_COUNT + 1][PROF_KINDS];
/* plans' first runs, apart: each step's time on the host (launch to the
 * end of its GPU work) and on the GPU */
static double first_host[RT_OP_COUNT + 1][PROF_KINDS], first_gpu[RT_OP_COUNT + 1][PROF_KINDS];
static long first_n[RT_OP_COUNT + 1][PROF_KINDS];
static int prof_registered; /* prof_report is registered with atexit (under prof_lock) */

static const char *const prof_kinds[PROF_KINDS] = {
    "cudnn-conv", "cudnn-deconv", "affine",    "binary",  "unary",   "rowmean",    "pool",
    "resize",     "gather",       "copy",      "concat",  "cublas",  "softmax",    "layernorm",
    "chain",      "host",         "gap-nhwc",  "argmax",  "convert", "own-dwconv", "own-deconv",
    "cublas-1x1", "cudnn-dense",  "cudnn-1x1", "cudnn-dw"};

static int prof_kind(const cu_step *sp) { return sp->kind == S_CONV ? S_KIND_COUNT + sp->op : sp->kind; }
static const char *prof_kind_name(const cu_step *sp) { return prof_kinds[prof_kind(sp)]; }

static void prof_report(void)
{
    double total = 0;
    for (int o = 0; o <= RT_OP_COUNT; o++)
        for (int k = 0; k < PROF_KINDS; k++) total += prof_ms[o][k];
    fprintf(stderr, "cuda profile: %.1f ms in steps\n", total);
    for (int o = 0; o <= RT_OP_COUNT; o++)
        for (int k = 0; k < PROF_KINDS; k++)
            if (prof_n[o][k])
                fprintf(stderr, "  %-20s %-12s %8ld steps %10.2f ms %5.1f%% (host %.2f ms)\n",
                        o < RT_OP_COUNT ? H->ops[o].name : "-", prof_kinds[k], prof_n[o][k], prof_ms[o][k],
                        100 * prof_ms[o][k] / (total > 0 ? total : 1), prof_host[o][k]);
    double host = 0, gpu = 0;
    for (int o = 0; o <= RT_OP_COUNT; o++)
        for (int k = 0; k < PROF_KINDS; k++) host += first_host[o][k], gpu += first_gpu[o][k];
    fprintf(stderr, "cuda profile: plans' first runs (not above): %.1f ms in steps, %.1f ms of it on the GPU\n", host,
            gpu);
    for (int o = 0; o <= RT_OP_COUNT; o++)
        for (int k = 0; k < PROF_KINDS; k++)
            if (first_n[o][k] && first_host[o][k] >= host / 200)
                fprintf(stderr, "  %-20s %-12s %8ld steps %10.2f ms %5.1f%% (GPU %.2f ms)\n",
                        o < RT_OP_COUNT ? H->ops[o].name : "-", prof_kinds[k], first_n[o][k], first_host[o][k],
                        100 * first_host[o][k] / (host > 0 ? host : 1), first_gpu[o][k]);
}

/* LECTOR_CUDA_PROFILE=3: step s captured alone, the mean of its graph's replays in ms (-1: not capturable). */
static float step_graph_ms(const exec_ctx *x, const cu_step *sp, rt_backend *be, cudaEvent_t a, cudaEvent_t b)
{
    enum { REPLAYS = 20 };
    cudaStream_t sm = x->w->stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    float ms = -1;
    if (sp->kind == S_HOST || cudaStreamBeginCapture(sm, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        return ms;
    }
    lector_status st = cu_run_step(x, sp, be, NULL);
    if (cudaStreamEndCapture(sm, &graph) == cudaSuccess && !st &&
        cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess && cudaGraphLaunch(exec, sm) == cudaSuccess) {
        cudaEventRecord(a, sm);
        for (int r = 0; r < REPLAYS; r++) cudaGraphLaunch(exec, sm);
        cudaEventRecord(b, sm);
        if (cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&ms, a, b) == cudaSuccess) ms /= REPLAYS;
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return ms;
}

lector_status cu_run_profiled(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err)
{
    lector_status st = LECTOR_OK;
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    pthread_mutex_lock(&prof_lock);
    int run = ++cp->prof_runs;
    pthread_mutex_unlock(&prof_lock);
    for (int s = 0; s < cp->n_steps && !st; s++) {
        double t0 = cu_now_ms();
        cudaEventRecord(a, x->w->stream);
        st = cu_run_step(x, &cp->steps[s], be, err);
        cudaEventRecord(b, x->w->stream);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        double host = cu_now_ms() - t0; /* launch to the end of the step's GPU work */
        const cu_step *sp = &cp->steps[s];
        int op = sp->node >= 0 ? x->p->g->nodes[sp->node].op : RT_OP_COUNT;
        if (run == 1) {
            /* left out of the figures, but what a first run waits for (a
             * library loading kernels, a JIT) is what a cold start pays */
            if (host >= CU_PROFILE_FIRST_MS)
                H->log(3, "cuda: %s: a plan's first run: step %d %s (%s) took %.1f ms, %.2f ms of it on the GPU",
                       x->p->g->name, s, op < RT_OP_COUNT ? H->ops[op].name : "-", prof_kind_name(sp), host, ms);
            pthread_mutex_lock(&prof_lock);
            if (!prof_registered++) atexit(prof_report);
            int pk = prof_kind(sp);
            first_host[op][pk] += host;
            first_gpu[op][pk] += ms;
            first_n[op][pk]++;
            pthread_mutex_unlock(&prof_lock);
            continue;
        }
        if (cu_profiling() >= 3 && !st) {
            float gms = step_graph_ms(x, sp, be, a, b);
            if (gms >= 0) ms = gms;
        }
        if (run == 2 && cu_profiling() >= 2) {
            const rt_node *n = sp->node >= 0 ? &x->p->g->nodes[sp->node] : NULL;
            const rt_value *v = n ? &x->p->g->values[n->out[0]] : NULL;
            char dims[64] = "";
            for (int d = 0, at = 0; v && d < v->ndim && at < (int)sizeof dims - 12; d++)
                at += snprintf(dims + at, sizeof dims - at, d ? "x%lld" : "%lld", (long long)v->dims[d]);
            fprintf(stderr, "cuda step %3d %-18s %-11s %8.4f ms %-18s %s%s\n", s, n ? H->ops[op].name : "-",
                    prof_kind_name(sp), ms, dims, n ? n->name : "convert", sp->chain ? " +chain" : "");
        }
        pthread_mutex_lock(&prof_lock);
        if (!prof_registered++) atexit(prof_report);
        int pk = prof_kind(sp);
        prof_ms[op][pk] += ms;
        prof_host[op][pk] += host;
        prof_n[op][pk]++;
        pthread_mutex_unlock(&prof_lock);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return st;
}
