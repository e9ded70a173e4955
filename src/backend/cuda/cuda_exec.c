/*
 * cuda_exec.c - running a plan: a worker borrowed for the call, the inputs
 * uploaded (or made on the device from pixels: cu_run_images), the steps
 * (run_step only dispatches: each family of operators runs its steps in its
 * own file; a CUDA graph when cuda_graphs.c says so), the outputs
 * downloaded, and lector_model_time's device timing.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

void *cu_dptr(const exec_ctx *x, int v)
{
    if (v < 0) return NULL;
    const rt_graph *g = x->p->g;
    if (g->values[v].data) return x->cp->coff[v] != RT_NO_OFFSET ? cu_const(x->cp, x->cp->coff[v]) : NULL;
    if (x->p->offset[v] != RT_NO_OFFSET) return x->arena + x->p->offset[v];
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v)
            return x->arena + (x->cp->in_conv[i] != RT_NO_OFFSET ? x->cp->in_conv[i] : x->cp->in_off[i]);
    return NULL;
}

/* The status of one of our kernels' launches (a cudaError_t as int) at node n. */
lector_status cu_kernel_status(int rc, const rt_node *n, lector_error *err)
{
    if (!rc) return LECTOR_OK;
    char buf[160];
    snprintf(buf, sizeof buf, "node %s (%s)", n->name, cu_op_name(n->op));
    return cu_cuda_fail(err, (cudaError_t)rc, buf);
}

static lector_status run_convert(const exec_ctx *x, const cu_step *s, lector_error *err)
{
    if (cu_fault_launch()) return cu_fail(err, LECTOR_ERR_BACKEND, "cuda: injected launch failure (LECTOR_CUDA_FAIL)");
    int rc = ck_convert(x->w->stream, x->arena + s->cv_src, x->arena + s->cv_dst, s->cv_dims[0], s->cv_dims[1],
                        s->cv_dims[2], s->cv_dims[3], s->cv_src_half, s->cv_src_nhwc, s->cv_dst_half, s->cv_dst_nhwc);
    return rc ? cu_cuda_fail(err, (cudaError_t)rc, "converting a tensor's storage") : LECTOR_OK;
}

lector_status cu_run_step(const exec_ctx *x, const cu_step *s, rt_backend *be, lector_error *err)
{
    if (s->kind == S_CONVERT) return run_convert(x, s, err);
    const rt_node *n = &x->p->g->nodes[s->node];
    if (cu_fault_launch())
        return cu_fail(err, LECTOR_ERR_BACKEND, "cuda: injected launch failure (LECTOR_CUDA_FAIL) at node %s", n->name);
    switch (s->kind) {
    case S_HOST: return cu_run_host_step(x, n, be, err);
    case S_CONV:
    case S_DECONV: return cu_run_cudnn_conv(x, s, n, err);
    case S_DWCONV: return cu_run_dwconv(x, s, n, err);
    case S_CONV_GEMM: return cu_run_conv_gemm(x, s, n, err);
    case S_DECONV_KS: return cu_run_deconv_ks(x, s, n, err);
    case S_ROWMEAN: return cu_run_rowmean(x, s, n, err);
    case S_GAP_NHWC: return cu_run_gap_nhwc(x, s, n, err);
    case S_POOL: return cu_run_pool(x, s, n, err);
    case S_RESIZE: return cu_run_resize(x, s, n, err);
    case S_GATHER: return cu_run_gather(x, s, n, err);
    case S_COPY: return cu_run_copy(x, s, n, err);
    case S_CONCAT: return cu_run_concat(x, s, n, err);
    case S_MATMUL: return cu_run_matmul(x, s, n, err);
    case S_SOFTMAX: return cu_run_softmax(x, s, n, err);
    case S_LAYERNORM: return cu_run_layernorm(x, s, n, err);
    case S_ARGMAX: return cu_run_argmax(x, s, n, err);
    case S_CHAIN: return cu_run_chain(x, s, err);
    default: return cu_fail(err, LECTOR_ERR_INTERNAL, "cuda: node %s: step kind %d cannot run", n->name, s->kind);
    }
}

lector_status cu_run_eager(const exec_ctx *x, cu_plan *cp, rt_backend *be, lector_error *err)
{
    lector_status st = LECTOR_OK;
    if (cu_check_enabled()) {
        for (int s = 0; s < cp->n_steps && !st; s++) {
            cu_check_prepare(x, &cp->steps[s]);
            st = cu_run_step(x, &cp->steps[s], be, err);
            if (!st) st = cu_check_step(x, &cp->steps[s], s, err);
        }
        return st;
    }
    if (cu_profiling()) return cu_run_profiled(x, cp, be, err);
    for (int s = 0; s < cp->n_steps && !st; s++) st = cu_run_step(x, &cp->steps[s], be, err);
    return st;
}

/* Uploads the inputs (host -> pinned -> device), starting the plan's work on the worker's stream. */
static lector_status upload_inputs(const exec_ctx *x, const lector_tensor *inputs, char **pin_end, lector_error *err)
{
    const rt_graph *g = x->p->g;
    char *pin = x->w->pin;
    for (int i = 0; i < g->n_inputs; i++) {
        const rt_value *v = &g->values[g->inputs[i]];
        if (v->data) continue; /* bound by value: folded into the plan */
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        if (!nb) continue;
        memcpy(pin, inputs[i].data, nb);
        cudaError_t e = cudaMemcpyAsync(x->arena + x->cp->in_off[i], pin, nb, cudaMemcpyHostToDevice, x->w->stream);
        if (e) return cu_cuda_fail(err, e, "uploading an input");
        pin += (nb + 255) & ~(size_t)255;
    }
    *pin_end = pin;
    return LECTOR_OK;
}

static const void *output_src(const exec_ctx *x, int i)
{
    const rt_graph *g = x->p->g;
    if (x->cp->out_conv[i] != RT_NO_OFFSET) return x->arena + x->cp->out_conv[i];
    return cu_dptr(x, g->outputs[i]);
}

static void name_prefix(lector_error *err, const char *name)
{
    if (!err || !strncmp(err->message, name, strlen(name))) return;
    char msg[sizeof err->message];
    size_t ln = strlen(name);
    if (ln + 2 >= sizeof msg) return;
    memcpy(msg, name, ln);
    memcpy(msg + ln, ": ", 2);
    size_t room = sizeof msg - ln - 3, ml = strlen(err->message);
    if (ml > room) ml = room;
    memcpy(msg + ln + 2, err->message, ml);
    msg[ln + 2 + ml] = 0;
    memcpy(err->message, msg, sizeof msg);
}

/* A worker with the workspace and pinned staging plan cp needs. */
static lector_status worker_for_plan(cu_ctx *c, const cu_plan *cp, size_t extra_pin, cu_worker **out, lector_error *err)
{
    lector_status st = cu_worker_get(c, out, err);
    if (st) return st;
    if ((st = cu_worker_ws(c, *out, cp->ws, err)) || (st = cu_worker_pin(c, *out, cp->io_bytes + extra_pin, err))) {
        cu_worker_put(c, *out);
        *out = NULL;
    }
    return st;
}

/* Downloads the outputs (device -> pinned `pin`, then host memory the caller
 * owns) after the plan's work; `st` is the status so far. */
static lector_status finish_outputs(const exec_ctx *x, char *pin, lector_status st, lector_tensor *outputs,
                                    lector_error *err)
{
    const rt_graph *g = x->p->g;
    cu_worker *w = x->w;
    cudaError_t e = cudaSuccess;
    /* outputs: device -> pinned, then host memory the caller owns */
    char *out_pin = pin;
    for (int i = 0; i < g->n_outputs && !st; i++) {
        const rt_value *v = &g->values[g->outputs[i]];
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        if (v->data)
            memcpy(pin, v->data, nb); /* folded to a constant at compile time */
        else if (nb && (e = cudaMemcpyAsync(pin, output_src(x, i), nb, cudaMemcpyDeviceToHost, w->stream)))
            st = cu_cuda_fail(err, e, "downloading an output");
        pin += (nb + 255) & ~(size_t)255;
    }
    if ((e = cudaStreamSynchronize(w->stream)) != cudaSuccess && !st) st = cu_cuda_fail(err, e, "running the plan");
    /* CUDA keeps the last error per thread until read: read it always, so a
     * failure here is never reported again by the next, healthy call */
    if ((e = cudaGetLastError()) != cudaSuccess && !st) st = cu_cuda_fail(err, e, "running the plan");
    for (int i = 0; i < g->n_outputs && !st; i++) {
        const rt_value *v = &g->values[g->outputs[i]];
        size_t nb = (size_t)numel(v) * cu_dsize(v->dtype);
        outputs[i] = (lector_tensor){.dtype = v->dtype, .ndim = v->ndim};
        memcpy(outputs[i].dims, v->dims, sizeof v->dims);
        outputs[i].data = H->aligned_alloc(nb ? nb : 1);
        if (!outputs[i].data) {
            for (int j = 0; j < i; j++) H->free(outputs[j].data);
            st = cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory for outputs", g->name);
            break;
        }
        if (nb) memcpy(outputs[i].data, out_pin, nb);
        out_pin += (nb + 255) & ~(size_t)255;
    }
    return st;
}

/* The start of a call: a worker with what plan p needs (and extra_pin more
 * bytes of staging), in x. */
static lector_status call_begin(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                                size_t extra_pin, exec_ctx *x, lector_error *err)
{
    cu_plan *cp = p->be_plan;
    cu_worker *w;
    lector_status st = worker_for_plan(be->ctx, cp, extra_pin, &w, err);
    if (st) return st;
    *x = (exec_ctx){p, cp, w, arena, inputs, w->ws, 0};
    cu_own_take(be, p, cp, x); /* the plan's own arena and graph, when it has them free */
    return st;
}

/* The end of a call whose work on the stream is done: what it held back. */
static void call_end(rt_backend *be, exec_ctx *x)
{
    cu_own_give(x);
    cu_worker_put(be->ctx, x->w);
}

/* The end of a call once its input is on the device (`st`: the status so
 * far): the steps, the outputs' download, the worker back to the pool. */
static lector_status run_and_download(rt_backend *be, exec_ctx *x, char *pin, lector_status st, lector_tensor *outputs,
                                      lector_error *err)
{
    if (!st) st = cu_run_steps(x, (cu_plan *)x->cp, be, err);
    st = finish_outputs(x, pin, st, outputs, err);
    if (st) name_prefix(err, x->p->g->name);
    call_end(be, x);
    return st;
}

lector_status cu_plan_execute(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs,
                              lector_tensor *outputs, lector_error *err)
{
    exec_ctx x;
    lector_status st = call_begin(be, p, arena, inputs, 0, &x, err);
    if (st) return st;
    char *pin = NULL;
    st = upload_inputs(&x, inputs, &pin, err);
    return run_and_download(be, &x, pin, st, outputs, err);
}

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* cu_plan_execute with the plan's only input made here from rows of 8-bit
 * pixels (lector_image_input): each row's region, its resize tables, the
 * distinct normalisation tables, the row descriptors and (for crops) the
 * warp's weights go up in one copy through the worker's pinned staging;
 * ck_image_rows warps the crops into scratch after them, then writes the
 * fp32 NCHW input where an uploaded one would be,
 * and the plan's steps (its input conversion included) follow. */
lector_status cu_run_images(rt_backend *be, const rt_plan *p, void *arena, const lector_image_input *rows,
                            size_t n_rows, lector_tensor *outputs, lector_error *err)
{
    cu_ctx *c = be->ctx;
    const cu_plan *cp = p->be_plan;
    const rt_graph *g = p->g;
    const rt_value *in = g->n_inputs == 1 ? &g->values[g->inputs[0]] : NULL;
    if (!in || in->data || in->dtype != LECTOR_DTYPE_FLOAT32 || in->ndim != 4 || !n_rows ||
        (int64_t)n_rows > in->dims[0] || in->dims[1] != rows[0].channels || in->dims[2] != rows[0].out_height)
        return cu_fail(err, LECTOR_ERR_SHAPE, "%s: the image input does not fit the model's input", g->name);
    int cn = rows[0].channels, any_warp = 0, max_cw = 0, max_ch = 0;
    ck_image_row *d = cu_malloc(sizeof *d * n_rows);
    const float **luts = cu_malloc(sizeof *luts * n_rows);
    if (!d || !luts) {
        cu_free(d);
        cu_free(luts);
        return cu_fail(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory (image rows)", g->name);
    }
    /* the upload's layout: per row pixels and tables, then the luts, the descriptors, the weights */
    size_t off = 0, n_luts = 0, lut_bytes = sizeof(float) * 256 * (size_t)cn;
    for (size_t i = 0; i < n_rows; i++) {
        const lector_image_input *im = &rows[i];
        ck_image_row *r = &d[i];
        memset(r, 0, sizeof *r);
        r->width = im->width;
        r->height = im->height;
        r->out_width = im->out_width;
        r->px = (int64_t)off;
        off = align16(off + (size_t)im->width * cn * (size_t)im->height);
        r->xofs = (int64_t)off;
        off = align16(off + sizeof(int) * (size_t)im->out_width);
        r->alpha = (int64_t)off;
        off = align16(off + sizeof(int16_t) * 2 * (size_t)im->out_width);
        r->yofs = (int64_t)off;
        off = align16(off + sizeof(int) * 2 * (size_t)im->out_height);
        r->beta = (int64_t)off;
        off = align16(off + sizeof(int16_t) * 2 * (size_t)im->out_height);
        r->sw = im->width;
        r->sh = im->height;
        if (im->warp) {
            any_warp = 1;
            r->warp = 1;
            memcpy(r->m, im->warp, sizeof r->m);
            r->crop_width = im->crop_width;
            r->crop_height = im->crop_height;
            max_cw = im->crop_width > max_cw ? im->crop_width : max_cw;
            max_ch = im->crop_height > max_ch ? im->crop_height : max_ch;
            r->turns = im->turns;
            r->origin_x = im->origin_x;
            r->origin_y = im->origin_y;
            r->full_width = im->full_width;
            r->full_height = im->full_height;
            r->sw = im->turns & 1 ? im->crop_height : im->crop_width;
            r->sh = im->turns & 1 ? im->crop_width : im->crop_height;
        }
        size_t k = 0;
        while (k < n_luts && luts[k] != im->lut) k++;
        if (k == n_luts) luts[n_luts++] = im->lut;
        r->lut = (int64_t)k; /* an index until the luts' place is known */
    }
    size_t o_lut = off, o_desc = align16(o_lut + n_luts * lut_bytes), o_cubic = align16(o_desc + sizeof *d * n_rows);
    size_t total = o_cubic + (any_warp ? sizeof(int16_t) * 32 * 32 * 16 : 0), crops = align16(total);
    for (size_t i = 0; i < n_rows; i++) {
        d[i].lut = (int64_t)(o_lut + (size_t)d[i].lut * lut_bytes);
        if (d[i].warp) { /* the warped crops: device scratch after the upload */
            d[i].crop = (int64_t)crops;
            crops = align16(crops + (size_t)rows[i].crop_width * (size_t)rows[i].crop_height * cn);
        }
    }
    exec_ctx x;
    lector_status st = call_begin(be, p, arena, NULL, align256(cp->io_bytes) - cp->io_bytes + total, &x, err);
    if (st) goto out;
    cu_worker *w = x.w;
    if ((st = cu_worker_img(c, w, crops, err))) {
        call_end(be, &x);
        goto out;
    }
    char *stage = (char *)w->pin + align256(cp->io_bytes), *dev = w->img; /* outputs first, then the image */
    for (size_t i = 0; i < n_rows; i++) {
        const lector_image_input *im = &rows[i];
        size_t row = (size_t)im->width * cn;
        for (int y = 0; y < im->height; y++)
            memcpy(stage + d[i].px + (size_t)y * row, im->pixels + (size_t)y * im->stride, row);
        memcpy(stage + d[i].xofs, im->xofs, sizeof(int) * (size_t)im->out_width);
        memcpy(stage + d[i].alpha, im->alpha, sizeof(int16_t) * 2 * (size_t)im->out_width);
        memcpy(stage + d[i].yofs, im->yofs, sizeof(int) * 2 * (size_t)im->out_height);
        memcpy(stage + d[i].beta, im->beta, sizeof(int16_t) * 2 * (size_t)im->out_height);
    }
    for (size_t k = 0; k < n_luts; k++) memcpy(stage + o_lut + k * lut_bytes, luts[k], lut_bytes);
    memcpy(stage + o_desc, d, sizeof *d * n_rows);
    const lector_image_input *wr = NULL;
    for (size_t i = 0; i < n_rows && !wr; i++)
        if (rows[i].warp) wr = &rows[i];
    if (wr) memcpy(stage + o_cubic, wr->cubic, sizeof(int16_t) * 32 * 32 * 16);
    cudaError_t e = cudaMemcpyAsync(dev, stage, total, cudaMemcpyHostToDevice, w->stream);
    if (e != cudaSuccess) st = cu_cuda_fail(err, e, "uploading an image input");
    if (!st) {
        int rc = ck_image_rows(w->stream, dev, (const ck_image_row *)(dev + o_desc), (int)n_rows,
                               (const int16_t *)(dev + o_cubic), cn, max_cw, max_ch, (float *)(x.arena + cp->in_off[0]),
                               (int)in->dims[0], (int)in->dims[2], (int)in->dims[3]);
        if (rc) st = cu_cuda_fail(err, (cudaError_t)rc, "making an image input");
    }
    st = run_and_download(be, &x, w->pin, st, outputs, err);
out:
    cu_free(d);
    cu_free(luts);
    return st;
}

/* Times the plan as a framework benchmark times a model: the inputs are
 * uploaded once, then the plan (its input and output conversions included,
 * a CUDA graph replay when graphs are on) runs `runs` times back to back,
 * each between two events; ms[i] is each run. Nothing is downloaded. */
lector_status cu_time_plan(rt_backend *be, const rt_plan *p, void *arena, const lector_tensor *inputs, int runs,
                           double *ms, lector_error *err)
{
    exec_ctx x;
    lector_status st = call_begin(be, p, arena, inputs, 0, &x, err);
    if (st) return st;
    const cu_plan *cp = x.cp;
    cu_worker *w = x.w;
    char *pin = NULL;
    cudaEvent_t ev[2] = {0};
    cudaError_t e;
    if ((e = cudaEventCreate(&ev[0])) || (e = cudaEventCreate(&ev[1]))) st = cu_cuda_fail(err, e, "creating events");
    if (!st) st = upload_inputs(&x, inputs, &pin, err);
    if (!st) st = cu_run_steps(&x, (cu_plan *)cp, be, err); /* warm: captures the graph */
    for (int r = 0; r < runs && !st; r++) {
        cudaEventRecord(ev[0], w->stream);
        st = cu_run_steps(&x, (cu_plan *)cp, be, err);
        cudaEventRecord(ev[1], w->stream);
        if (!st && (e = cudaEventSynchronize(ev[1]))) st = cu_cuda_fail(err, e, "running the plan");
        float t = 0;
        if (!st) cudaEventElapsedTime(&t, ev[0], ev[1]);
        ms[r] = t;
    }
    if ((e = cudaStreamSynchronize(w->stream)) != cudaSuccess && !st) st = cu_cuda_fail(err, e, "running the plan");
    if ((e = cudaGetLastError()) != cudaSuccess && !st) st = cu_cuda_fail(err, e, "running the plan");
    for (int k = 0; k < 2; k++)
        if (ev[k]) cudaEventDestroy(ev[k]);
    if (st) name_prefix(err, p->g->name);
    call_end(be, &x);
    return st;
}

/* ---- extras --------------------------------------------------------------------- */
