/*
 * ops.c - the operator table (name, shape inference, reference kernel) and
 * the fused activations every kernel that hosts one applies.
 */
#include <math.h>
#include <string.h>

#include "rt/ops.h"

const rt_op_def rt_op_table[RT_OP_COUNT] = {
#define RT_OP_ROW(n) [RT_OP_##n] = {#n, rt_infer_##n, rt_ref_##n},
    RT_OP_LIST(RT_OP_ROW)
#undef RT_OP_ROW
};

int rt_op_find(const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < RT_OP_COUNT; i++)
        if (strcmp(rt_op_table[i].name, name) == 0) return i;
    return -1;
}

void rt_apply_bias_act(const rt_node *nd, float *y, int64_t n_img, int64_t m, int64_t sp, const float *bias,
                       int threads)
{
    if (!bias && nd->act == RT_ACT_NONE) return;
#pragma omp parallel for num_threads(threads) if (threads > 1 && n_img * m * sp > 65536)
    for (int64_t i = 0; i < n_img * m; i++) {
        float *p = y + i * sp;
        if (bias) {
            float b = bias[i % m];
            for (int64_t j = 0; j < sp; j++) p[j] += b;
        }
        rt_apply_act(p, sp, nd->act, nd->act_alpha, nd->act_beta);
    }
}

void rt_apply_act(float *x, int64_t n, rt_act act, float alpha, float beta)
{
    switch (act) {
    case RT_ACT_NONE: break;
    case RT_ACT_RELU:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0.f ? x[i] : 0.f;
        break;
    case RT_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++) x[i] = 1.f / (1.f + expf(-x[i]));
        break;
    case RT_ACT_HARDSIGMOID:
        for (int64_t i = 0; i < n; i++) {
            float v = alpha * x[i] + beta;
            x[i] = v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
        }
        break;
    case RT_ACT_HARDSWISH:
        for (int64_t i = 0; i < n; i++) {
            float v = alpha * x[i] + beta;
            v = v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
            x[i] = x[i] * v;
        }
        break;
    case RT_ACT_SWISH:
        for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.f + expf(-x[i]));
        break;
    case RT_ACT_CLIP:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < alpha ? alpha : x[i];
            x[i] = v > beta ? beta : v;
        }
        break;
    }
}
