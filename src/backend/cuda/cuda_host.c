/*
 * cuda_host.c - a node no GPU step covers runs on the host: its inputs
 * copied down, the reference kernel, its outputs copied up (correct, slow,
 * logged once per plan; such a plan is never a CUDA graph).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

lector_status cu_run_host_step(const exec_ctx *x, const rt_node *n, rt_backend *be, lector_error *err)
{
    const rt_graph *g = x->p->g;
    lector_tensor in[16], out[8];
    void *tmp[24] = {0};
    lector_status st = LECTOR_OK;
    cudaStream_t sm = x->w->stream;
    if (n->n_in > 16 || n->n_out > 8)
        return cu_fail(err, LECTOR_ERR_UNSUPPORTED_OP, "node %s: too many operands", n->name);
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    for (int k = 0; k < n->n_in && !st; k++) {
        if (n->in[k] < 0) continue;
        const rt_value *v = &g->values[n->in[k]];
        in[k] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(in[k].dims, v->dims, sizeof v->dims);
        if (v->data) {
            in[k].data = v->data;
            continue;
        }
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        tmp[k] = cu_malloc(nb ? nb : 1);
        if (!tmp[k])
            st = cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
        else if (nb && cudaMemcpyAsync(tmp[k], cu_dptr(x, n->in[k]), nb, cudaMemcpyDeviceToHost, sm))
            st = cu_cuda_fail(err, cudaGetLastError(), "copying an operand to the host");
        in[k].data = tmp[k];
    }
    for (int k = 0; k < n->n_out && !st; k++) {
        if (n->out[k] < 0) continue;
        const rt_value *v = &g->values[n->out[k]];
        out[k] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(out[k].dims, v->dims, sizeof v->dims);
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        tmp[16 + k] = cu_malloc(nb ? nb : 1);
        if (!tmp[16 + k]) st = cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "out of host memory");
        out[k].data = tmp[16 + k];
    }
    cudaError_t e;
    if (!st && (e = cudaStreamSynchronize(sm)) != cudaSuccess) st = cu_cuda_fail(err, e, "waiting for the GPU");
    if (!st) {
        rt_kernel_ctx kc = {be->threads > 0 ? be->threads : 1, err};
        st = H->ops[n->op].ref(n, in, out, &kc);
    }
    for (int k = 0; k < n->n_out && !st; k++) {
        if (n->out[k] < 0) continue;
        size_t nb = (size_t)numel(&g->values[n->out[k]]) * cu_dsize(g->values[n->out[k]].dtype);
        if (nb && (e = cudaMemcpy(cu_dptr(x, n->out[k]), out[k].data, nb, cudaMemcpyHostToDevice)) != cudaSuccess)
            st = cu_cuda_fail(err, e, "copying a result to the GPU");
    }
    for (int k = 0; k < 24; k++) cu_free(tmp[k]);
    return st;
}
