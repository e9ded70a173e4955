/*
 * cuda_elementwise.c - the elementwise operators' steps: binary and unary
 * operators and BatchNormalization (an affine step). None runs as it is
 * built: the fusion pass (cuda_fuse.c) turns every one into a chain, run by
 * its compiled kernel (cuda_nvrtc.c) or the interpreter (kernels.cu).
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

int cu_build_binary(compile_ctx *cc, const rt_node *n, cu_step *s, int op)
{
    if (n->n_in != 2 || n->n_out != 1 || !cu_all_f32(cc->g, n) || val(cc->g, n->out[0])->ndim > CK_MAX_DIMS) return 1;
    s->kind = S_BINARY; /* becomes (part of) a chain */
    s->op = op;
    return 0;
}

int cu_unary_op(int onnx_op)
{
    switch (onnx_op) {
    case RT_OP_Relu: return CK_RELU;
    case RT_OP_Sigmoid: return CK_SIGMOID;
    case RT_OP_Tanh: return CK_TANH;
    case RT_OP_Exp: return CK_EXP;
    case RT_OP_Log: return CK_LOG;
    case RT_OP_Sqrt: return CK_SQRT;
    case RT_OP_Abs: return CK_ABS;
    case RT_OP_Neg: return CK_NEG;
    case RT_OP_Erf: return CK_ERF;
    case RT_OP_Reciprocal: return CK_RECIPROCAL;
    case RT_OP_Floor: return CK_FLOOR;
    case RT_OP_Ceil: return CK_CEIL;
    case RT_OP_HardSigmoid: return CK_HARDSIGMOID;
    case RT_OP_HardSwish: return CK_HARDSWISH;
    case RT_OP_LeakyRelu: return CK_LEAKYRELU;
    case RT_OP_Clip: return CK_CLIP;
    default: return -1;
    }
}

int cu_build_unary(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    const rt_value *x = val(g, n->in[0]);
    int op = cu_unary_op(n->op);
    if (op < 0 || !is_f32(x) || !is_f32(val(g, n->out[0])) || n->n_out != 1) return 1;
    float alpha = 0.f, beta = 0.f;
    switch (n->op) {
    case RT_OP_HardSigmoid:
        alpha = H->attr_float(n, "alpha", 0.2f);
        beta = H->attr_float(n, "beta", 0.5f);
        break;
    case RT_OP_HardSwish:
        alpha = 1.f / 6.f;
        beta = 0.5f;
        break;
    case RT_OP_LeakyRelu: alpha = H->attr_float(n, "alpha", 0.01f); break;
    case RT_OP_Clip:
        alpha = -INFINITY;
        beta = INFINITY;
        for (int k = 1; k < 3 && k < n->n_in; k++) {
            const rt_value *v = val(g, n->in[k]);
            if (!v) continue;
            if (!v->data || !is_f32(v)) return 1;
            if (k == 1)
                alpha = *(const float *)v->data;
            else
                beta = *(const float *)v->data;
        }
        break;
    default: break;
    }
    s->kind = S_UNARY; /* becomes (part of) a chain */
    s->op = op;
    s->alpha = alpha;
    s->beta = beta;
    s->n = numel(x);
    return 0;
}

/* BatchNormalization with constant parameters: a per-channel affine step
 * (its scale and shift in the constant block), which becomes part of a chain. */
int cu_build_batchnorm(compile_ctx *cc, const rt_node *n, cu_step *s)
{
    const rt_graph *g = cc->g;
    if (!cu_all_f32(g, n) || n->n_out != 1 || val(g, n->in[0])->ndim < 2) return 1;
    int ok = 1;
    for (int k = 1; k < 5; k++) ok &= n->in[k] >= 0 && val(g, n->in[k])->data != NULL;
    if (!ok) return 1;
    const rt_value *x = val(g, n->in[0]);
    int64_t C = x->dims[1];
    float *t = cu_malloc(sizeof(float) * (size_t)(2 * C));
    if (!t) return 1;
    const float *sc = val(g, n->in[1])->data, *b = val(g, n->in[2])->data, *mean = val(g, n->in[3])->data,
                *var = val(g, n->in[4])->data;
    float eps = H->attr_float(n, "epsilon", 1e-5f);
    for (int64_t c = 0; c < C; c++) { /* the reference's arithmetic, to the bit */
        float a = sc[c] / sqrtf(var[c] + eps);
        t[c] = a;
        t[C + c] = b[c] - mean[c] * a;
    }
    s->aux = cbuf_add(&cc->cb, t, sizeof(float) * (size_t)(2 * C), &cc->oom);
    cu_free(t);
    s->kind = S_AFFINE; /* becomes (part of) a chain */
    s->n = numel(x);
    s->channels = C;
    s->inner = s->n / (x->dims[0] * C);
    return 0;
}
