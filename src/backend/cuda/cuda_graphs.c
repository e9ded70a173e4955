/*
 * cuda_graphs.c - a plan's steps as a CUDA graph per (worker, arena): one
 * launch instead of hundreds, from a plan's CU_GRAPH_AFTER-th run on.
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

/* Runs the steps as a CUDA graph once the plan has run CU_GRAPH_AFTER times:
 * captured on the first such call of a (worker, arena) pair, replayed
 * afterwards (one launch instead of hundreds). A plan with host steps, or
 * whose capture fails, runs step by step. */
lector_status cu_run_steps(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err)
{
    long after = graph_after();
    if (cp->no_graph || cp->n_host || after <= 0 || cu_profiling() || cu_check_enabled() ||
        atomic_fetch_add(&cp->runs, 1) < after)
        return cu_run_eager(x, cp, be, err);
    cu_worker *w = x->w;
    cudaGraphExec_t exec = NULL;
    w->tick++;
    for (int i = 0; i < w->n_graphs && !exec; i++)
        if (w->graphs[i].plan == cp->id && w->graphs[i].arena == x->arena && w->graphs[i].ws == w->ws) {
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
    w->graphs[slot] = (cu_graph){cp->id, x->arena, w->ws, exec, w->tick};
    e = cudaGraphLaunch(exec, sm);
    return e == cudaSuccess ? LECTOR_OK : cu_cuda_fail(err, e, "launching the plan's CUDA graph");
}
