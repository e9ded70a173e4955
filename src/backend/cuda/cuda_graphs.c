/*
 * cuda_graphs.c - a plan's steps as one CUDA graph launch instead of
 * hundreds of kernel launches: in the plan's own arena, replayed by any
 * worker (cu_own: a line width seen before, whichever thread reads it), or
 * per (worker, arena) from a plan's CU_GRAPH_AFTER-th run on.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* LECTOR_CUDA_GRAPHS: 0 no graphs, N a plan's graph from its Nth run */
static long graph_after(void) { return H->testctl_long(LECTOR__TC_CUDA_GRAPHS, CU_GRAPH_AFTER); }

/* ---- the plan's own arena and graph ------------------------------------------ */

static size_t al256(size_t n) { return (n + 255) & ~(size_t)255; }

int cu_own_take(rt_backend *be, const rt_plan *p, cu_plan *cp, exec_ctx *x)
{
    cu_own *o = &cp->own;
    if (atomic_load(&o->failed) || cp->no_graph || cp->n_host || graph_after() <= 0 || cu_profiling() ||
        cu_check_enabled())
        return 0;
    size_t need = al256(p->arena_size) + CU_BLAS_WS + cp->ws;
    if (need > CU_OWN_ARENA) return 0;
    if (atomic_load(&o->runs) < CU_OWN_AFTER && atomic_fetch_add(&o->runs, 1) + 1 < CU_OWN_AFTER) return 0;
    if (atomic_exchange(&o->busy, 1)) return 0; /* another call runs in it: this one runs as before */
    if (!o->mem) {
        cu_ctx *c = be->ctx;
        size_t lim = cu_mem_limit(c->device), budget = lim && lim / 4 < CU_OWN_BYTES ? lim / 4 : CU_OWN_BYTES;
        size_t before = atomic_fetch_add(&c->own_bytes, need);
        lector_error e = {0};
        if (before + need > budget || cu_dev_alloc(c->device, need, (void **)&o->mem, "a plan's own arena", &e)) {
            atomic_fetch_sub(&c->own_bytes, need);
            o->mem = NULL;
            atomic_store(&o->failed, 1);
            atomic_store(&o->busy, 0);
            return 0;
        }
        o->size = need;
    }
    x->arena = o->mem;
    x->ws = o->mem + al256(p->arena_size);
    x->own = 1;
    return 1;
}

void cu_own_give(exec_ctx *x)
{
    if (!x->own) return;
    x->own = 0;
    atomic_store(&((cu_plan *)x->cp)->own.busy, 0);
}

void cu_own_free(cu_ctx *c, cu_plan *cp)
{
    cu_own *o = &cp->own;
    if (o->exec) cudaGraphExecDestroy(o->exec);
    if (o->mem) {
        cu_dev_free(o->mem);
        atomic_fetch_sub(&c->own_bytes, o->size);
    }
    o->exec = NULL;
    o->mem = NULL;
    o->size = 0;
}

/* Captures the steps into the plan's own graph, cuBLAS pointed at the own
 * workspace while it records (the worker's is baked in otherwise); the
 * steps run step by step when the capture fails. */
static lector_status own_capture(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err)
{
    cu_worker *w = x->w;
    cudaStream_t sm = w->stream;
    if (cublasSetWorkspace(w->blas, x->ws, CU_BLAS_WS) != CUBLAS_STATUS_SUCCESS) {
        atomic_store(&cp->own.failed, 1);
        return cu_run_eager(x, cp, be, err);
    }
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaStreamBeginCapture(sm, cudaStreamCaptureModeThreadLocal);
    lector_status st = LECTOR_OK;
    if (e == cudaSuccess) {
        st = cu_run_eager(x, cp, be, err);
        e = cudaStreamEndCapture(sm, &graph);
        if (!st && e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
        if (graph) cudaGraphDestroy(graph);
    }
    cublasSetWorkspace(w->blas, w->ws, CU_BLAS_WS);
    if (st) { /* a step failed while capturing: nothing ran; report it */
        cudaGetLastError();
        return st;
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        H->log(2, "cuda: %s: capture as a CUDA graph failed (%s): running step by step", x->p->g->name,
               cudaGetErrorString(e));
        atomic_store(&cp->own.failed, 1);
        return cu_run_eager(x, cp, be, err);
    }
    cp->own.exec = exec;
    H->log(3, "cuda: %s: a graph of %d steps in the plan's own %zu KiB", x->p->g->name, cp->n_steps,
           cp->own.size >> 10);
    e = cudaGraphLaunch(exec, sm);
    return e == cudaSuccess ? LECTOR_OK : cu_cuda_fail(err, e, "launching the plan's CUDA graph");
}

/* ---- graphs per (worker, arena) ------------------------------------------------- */

/* Runs the steps as a CUDA graph once the plan has run CU_GRAPH_AFTER times:
 * captured on the first such call of a (worker, arena) pair, replayed
 * afterwards (one launch instead of hundreds). A plan with host steps, or
 * whose capture fails, runs step by step. */
lector_status cu_run_steps(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err)
{
    if (x->own) {
        if (!cp->own.exec) return own_capture(x, cp, be, err);
        if (cu_fault_launch())
            return cu_fail(err, LECTOR_ERR_BACKEND, "cuda: injected launch failure (LECTOR_CUDA_FAIL)");
        cudaError_t e = cudaGraphLaunch(cp->own.exec, x->w->stream);
        return e == cudaSuccess ? LECTOR_OK : cu_cuda_fail(err, e, "launching the plan's CUDA graph");
    }
    long after = graph_after();
    if (cp->no_graph || cp->n_host || after <= 0 || cu_profiling() || cu_check_enabled() ||
        atomic_fetch_add(&cp->runs, 1) < after)
        return cu_run_eager(x, cp, be, err);
    cu_worker *w = x->w;
    cudaGraphExec_t exec = NULL;
    w->tick++;
    for (int i = 0; i < w->n_graphs && !exec; i++)
        if (w->graphs[i].plan == cp->id && w->graphs[i].arena == x->arena && w->graphs[i].ws == x->ws) {
            exec = w->graphs[i].exec;
            w->graphs[i].used = w->tick;
        }
    if (exec) {
        if (cu_fault_launch())
            return cu_fail(err, LECTOR_ERR_BACKEND, "cuda: injected launch failure (LECTOR_CUDA_FAIL)");
        cudaError_t e = cudaGraphLaunch(exec, w->stream);
        return e == cudaSuccess ? LECTOR_OK : cu_cuda_fail(err, e, "launching the plan's CUDA graph");
    }
    int slot = w->n_graphs;
    if (slot == CU_GRAPHS) { /* full: the least recently used, if it has been idle long */
        slot = 0;
        for (int i = 1; i < CU_GRAPHS; i++)
            if (w->graphs[i].used < w->graphs[slot].used) slot = i;
        if (w->tick - w->graphs[slot].used < CU_GRAPH_IDLE) return cu_run_eager(x, cp, be, err);
    }
    cudaStream_t sm = w->stream;
    cudaError_t e = cudaStreamBeginCapture(sm, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        cudaGetLastError();
        cp->no_graph = 1;
        return cu_run_eager(x, cp, be, err);
    }
    lector_status st = cu_run_eager(x, cp, be, err);
    cudaGraph_t graph = NULL;
    e = cudaStreamEndCapture(sm, &graph);
    if (st) { /* a step failed while capturing: nothing ran; report it */
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        return st;
    }
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        cudaGetLastError();
        H->log(2, "cuda: %s: capture as a CUDA graph failed (%s): running step by step", x->p->g->name,
               cudaGetErrorString(e));
        cp->no_graph = 1;
        return cu_run_eager(x, cp, be, err);
    }
    if (w->n_graphs == CU_GRAPHS)
        cudaGraphExecDestroy(w->graphs[slot].exec); /* the idle one chosen above */
    else
        w->n_graphs++;
    w->graphs[slot] = (cu_graph){cp->id, x->arena, x->ws, exec, w->tick};
    e = cudaGraphLaunch(exec, sm);
    return e == cudaSuccess ? LECTOR_OK : cu_cuda_fail(err, e, "launching the plan's CUDA graph");
}
