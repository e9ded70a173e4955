/*
 * patterns.c - test_backend_ops' graphs: every fused pattern the backends
 * build (conv + folded affine ops + activations + residual add,
 * paddle2onnx's hardswish, squeeze-and-excitation, the LayerNorm pattern,
 * post-op chains) and single ops on shapes taken from the three PP-OCR
 * models, with the operators each holds (for the coverage check).
 */
#include "patterns.h"

#include "graph_builder.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})

/* ---- models ------------------------------------------------------------------ */

static gb *conv_first(void) /* det/rec stem: 3x3/2, C 3->16, BN folded by the pass */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 3, 64, 64));
    gb_init(b, "w", 4, D(16, 3, 3, 3), NULL, -0.5f, 0.5f, 1);
    gb_init(b, "s", 1, D(16), NULL, 0.5f, 1.5f, 2);
    gb_init(b, "bb", 1, D(16), NULL, -0.5f, 0.5f, 3);
    gb_init(b, "m", 1, D(16), NULL, -0.2f, 0.2f, 4);
    gb_init(b, "v", 1, D(16), NULL, 0.5f, 1.5f, 5);
    gb_node(b, "Conv", "x,w", "c", "kernel_shape=is:3,3;strides=is:2,2;pads=is:1,1,1,1;group=i:1");
    gb_node(b, "BatchNormalization", "c,s,bb,m,v", "y", "epsilon=f:1e-5");
    gb_output(b, "y");
    return b;
}

/* PPLCNetV3 block: depthwise conv, learnable affine (Mul/Add scalars),
 * hardswish as x*clip(x+3,0,6)/6, affine, then a pointwise conv with a
 * residual add and ReLU. */
static gb *lcnet_block(void)
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 32, 40, 40));
    gb_init(b, "wd", 4, D(32, 1, 3, 3), NULL, -0.5f, 0.5f, 11);
    gb_init(b, "bd", 1, D(32), NULL, -0.2f, 0.2f, 12);
    gb_init(b, "a0", 1, D(1), (const float[]){1.3f}, 0, 0, 0);
    gb_init(b, "a1", 1, D(1), (const float[]){0.4f}, 0, 0, 0);
    gb_init(b, "three", 1, D(1), (const float[]){3.f}, 0, 0, 0);
    gb_init(b, "zero", 1, D(1), (const float[]){0.f}, 0, 0, 0);
    gb_init(b, "six", 1, D(1), (const float[]){6.f}, 0, 0, 0);
    gb_init(b, "h0", 1, D(1), (const float[]){0.8f}, 0, 0, 0);
    gb_init(b, "h1", 1, D(1), (const float[]){-0.1f}, 0, 0, 0);
    gb_init(b, "wp", 4, D(32, 32, 1, 1), NULL, -0.3f, 0.3f, 13);
    gb_init(b, "bp", 1, D(32), NULL, -0.2f, 0.2f, 14);
    gb_node(b, "Conv", "x,wd,bd", "c1", "kernel_shape=is:3,3;strides=is:1,1;pads=is:1,1,1,1;group=i:32");
    gb_node(b, "Mul", "a0,c1", "m1", NULL);
    gb_node(b, "Add", "m1,a1", "t", NULL);
    gb_node(b, "Add", "t,three", "t3", NULL);
    gb_node(b, "Clip", "t3,zero,six", "cl", NULL);
    gb_node(b, "Mul", "t,cl", "tm", NULL);
    gb_node(b, "Div", "tm,six", "hs", NULL);
    gb_node(b, "Mul", "h0,hs", "hm", NULL);
    gb_node(b, "Add", "hm,h1", "h", NULL);
    gb_node(b, "Conv", "h,wp,bp", "c2", "kernel_shape=is:1,1;strides=is:1,1;pads=is:0,0,0,0;group=i:1");
    gb_node(b, "Add", "c2,x", "r", NULL);
    gb_node(b, "Relu", "r", "y", NULL);
    gb_output(b, "y");
    return b;
}

/* Squeeze-and-excitation: GAP, 1x1 conv + ReLU, 1x1 conv + HardSigmoid, Mul. */
static gb *se_block(void)
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 96, 20, 20));
    gb_init(b, "w1", 4, D(24, 96, 1, 1), NULL, -0.3f, 0.3f, 21);
    gb_init(b, "b1", 1, D(24), NULL, -0.1f, 0.1f, 22);
    gb_init(b, "w2", 4, D(96, 24, 1, 1), NULL, -0.3f, 0.3f, 23);
    gb_init(b, "b2", 1, D(96), NULL, -0.1f, 0.1f, 24);
    gb_node(b, "GlobalAveragePool", "x", "g", NULL);
    gb_node(b, "Conv", "g,w1,b1", "c1", "kernel_shape=is:1,1");
    gb_node(b, "Relu", "c1", "r1", NULL);
    gb_node(b, "Conv", "r1,w2,b2", "c2", "kernel_shape=is:1,1");
    gb_node(b, "HardSigmoid", "c2", "hsg", "alpha=f:0.1666667;beta=f:0.5");
    gb_node(b, "Mul", "x,hsg", "y", NULL);
    gb_output(b, "y");
    return b;
}

static gb *conv_dw5(void) /* rec: 5x5 depthwise, 480 channels, batch 6 */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(6, 96, 3, 40));
    gb_init(b, "w", 4, D(96, 1, 5, 5), NULL, -0.3f, 0.3f, 31);
    gb_init(b, "bb", 1, D(96), NULL, -0.1f, 0.1f, 32);
    gb_node(b, "Conv", "x,w,bb", "c", "kernel_shape=is:5,5;pads=is:2,2,2,2;group=i:96");
    gb_node(b, "Sigmoid", "c", "y", NULL);
    gb_output(b, "y");
    return b;
}

static gb *conv_1x3_swish(void) /* rec neck: 1x3 conv, BN, x*sigmoid(x) */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(6, 64, 1, 40));
    gb_init(b, "w", 4, D(32, 64, 1, 3), NULL, -0.2f, 0.2f, 41);
    gb_init(b, "s", 1, D(32), NULL, 0.5f, 1.5f, 42);
    gb_init(b, "bb", 1, D(32), NULL, -0.5f, 0.5f, 43);
    gb_init(b, "m", 1, D(32), NULL, -0.2f, 0.2f, 44);
    gb_init(b, "v", 1, D(32), NULL, 0.5f, 1.5f, 45);
    gb_node(b, "Conv", "x,w", "c", "kernel_shape=is:1,3;pads=is:0,1,0,1");
    gb_node(b, "BatchNormalization", "c,s,bb,m,v", "n", "epsilon=f:1e-5");
    gb_node(b, "Sigmoid", "n", "sg", NULL);
    gb_node(b, "Mul", "n,sg", "y", NULL);
    gb_output(b, "y");
    return b;
}

static gb *conv_strided_clip(void) /* cls: 3x3 stride (2,1) group 8, clip */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(6, 16, 24, 96));
    gb_init(b, "w", 4, D(16, 2, 3, 3), NULL, -0.3f, 0.3f, 51);
    gb_init(b, "lo", 1, D(1), (const float[]){0.f}, 0, 0, 0);
    gb_init(b, "hi", 1, D(1), (const float[]){6.f}, 0, 0, 0);
    gb_node(b, "Conv", "x,w", "c", "kernel_shape=is:3,3;strides=is:2,1;pads=is:1,1,1,1;group=i:8");
    gb_node(b, "Clip", "c,lo,hi", "y", NULL);
    gb_output(b, "y");
    return b;
}

/* DB head: 3x3 conv + BN + ReLU, ConvTranspose 2x2/2 + bias, BN, ReLU,
 * ConvTranspose 2x2/2 to one channel, Sigmoid. */
static gb *db_head(void)
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 24, 40, 40));
    gb_init(b, "w1", 4, D(24, 24, 2, 2), NULL, -0.3f, 0.3f, 61);
    gb_init(b, "b1", 1, D(24), NULL, -0.1f, 0.1f, 62);
    gb_init(b, "s", 1, D(24), NULL, 0.5f, 1.5f, 63);
    gb_init(b, "bb", 1, D(24), NULL, -0.5f, 0.5f, 64);
    gb_init(b, "m", 1, D(24), NULL, -0.2f, 0.2f, 65);
    gb_init(b, "v", 1, D(24), NULL, 0.5f, 1.5f, 66);
    gb_init(b, "w2", 4, D(24, 1, 2, 2), NULL, -0.3f, 0.3f, 67);
    gb_init(b, "b2", 1, D(1), NULL, -0.1f, 0.1f, 68);
    gb_node(b, "ConvTranspose", "x,w1", "t1", "kernel_shape=is:2,2;strides=is:2,2");
    gb_node(b, "Add", "t1,b1r", "a1", NULL);
    gb_node(b, "BatchNormalization", "a1,s,bb,m,v", "n1", "epsilon=f:1e-5");
    gb_node(b, "Relu", "n1", "r1", NULL);
    gb_node(b, "ConvTranspose", "r1,w2,b2", "t2", "kernel_shape=is:2,2;strides=is:2,2");
    gb_node(b, "Sigmoid", "t2", "y", NULL);
    gb_init(b, "b1r", 3, D(24, 1, 1), NULL, -0.1f, 0.1f, 69);
    gb_output(b, "y");
    return b;
}

static gb *deconv_general(void) /* kernel != stride: oneDNN's deconvolution */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 16, 12, 12));
    gb_init(b, "w", 4, D(16, 8, 3, 3), NULL, -0.3f, 0.3f, 71);
    gb_init(b, "bb", 1, D(8), NULL, -0.1f, 0.1f, 72);
    gb_node(b, "ConvTranspose", "x,w,bb", "y", "kernel_shape=is:3,3;strides=is:2,2;pads=is:1,1,1,1");
    gb_output(b, "y");
    return b;
}

static gb *pools(void)
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(6, 32, 6, 40));
    gb_node(b, "MaxPool", "x", "m", "kernel_shape=is:2,2;strides=is:2,2");
    gb_node(b, "AveragePool", "x", "a", "kernel_shape=is:3,2;strides=is:3,2;count_include_pad=i:0");
    gb_node(b, "AveragePool", "x", "p", "kernel_shape=is:3,3;strides=is:1,1;pads=is:1,1,1,1;count_include_pad=i:1");
    gb_node(b, "GlobalAveragePool", "x", "g", NULL);
    gb_node(b, "GlobalMaxPool", "x", "gm", NULL);
    gb_output(b, "m");
    gb_output(b, "a");
    gb_output(b, "p");
    gb_output(b, "g");
    gb_output(b, "gm");
    return b;
}

static gb *resize_concat(void) /* det neck: nearest x2 (asymmetric, floor), concat */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 24, 10, 12));
    gb_init(b, "roi", 1, D(0), NULL, 0, 0, 0);
    gb_init(b, "sc", 1, D(4), (const float[]){1, 1, 2, 2}, 0, 0, 0);
    gb_init(b, "sc4", 1, D(4), (const float[]){1, 1, 4, 4}, 0, 0, 0);
    gb_node(b, "Resize", "x,roi,sc", "r2",
            "mode=s:nearest;coordinate_transformation_mode=s:asymmetric;nearest_mode=s:floor");
    gb_node(b, "Resize", "x,roi,sc4", "r4",
            "mode=s:nearest;coordinate_transformation_mode=s:asymmetric;nearest_mode=s:floor");
    gb_node(b, "Resize", "r2,roi,sc", "r22",
            "mode=s:nearest;coordinate_transformation_mode=s:asymmetric;nearest_mode=s:floor");
    gb_node(b, "Concat", "r22,r4", "y", "axis=i:1");
    gb_node(b, "Resize", "x,roi,sc", "lin", "mode=s:linear;coordinate_transformation_mode=s:half_pixel");
    gb_node(b, "Resize", "x,roi,sc", "ac", "mode=s:linear;coordinate_transformation_mode=s:align_corners");
    gb_output(b, "y");
    gb_output(b, "lin");
    gb_output(b, "ac");
    return b;
}

static gb *binary_bcast(void)
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 16, 8, 8));
    gb_input(b, "z", 4, D(1, 16, 1, 1));
    gb_init(b, "c", 3, D(16, 1, 1), NULL, 0.5f, 1.5f, 81);
    gb_init(b, "k", 1, D(8), NULL, 0.5f, 1.5f, 82);
    gb_node(b, "Add", "x,z", "a", NULL);
    gb_node(b, "Sub", "a,c", "s", NULL);
    gb_node(b, "Mul", "z,s", "m", NULL);
    gb_node(b, "Div", "m,c", "d", NULL);
    gb_node(b, "Div", "d,k", "d2", NULL);
    gb_node(b, "Sub", "c,d2", "y", NULL);
    gb_output(b, "y");
    return b;
}

static gb *unary(void) /* activations on a graph input: not fusable */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(2, 8, 6, 10));
    gb_init(b, "lo", 1, D(1), (const float[]){-1.f}, 0, 0, 0);
    gb_init(b, "hi", 1, D(1), (const float[]){1.f}, 0, 0, 0);
    gb_node(b, "Relu", "x", "r", NULL);
    gb_node(b, "Sigmoid", "x", "s", NULL);
    gb_node(b, "HardSigmoid", "x", "h", "alpha=f:0.2;beta=f:0.5");
    gb_node(b, "Clip", "x,lo,hi", "c", NULL);
    gb_node(b, "Concat", "r,s,h,c", "y", "axis=i:1");
    gb_output(b, "y");
    return b;
}

/* SVTR attention block on [6,40,120]: LayerNorm pattern, qkv MatMul + bias,
 * reshape/transpose into heads, scaled q*k^T, Softmax, *v, projection. */
static gb *attention(void)
{
    gb *b = gb_new(11);
    gb_input(b, "x", 3, D(6, 40, 120));
    gb_init(b, "two", 1, D(1), (const float[]){2.f}, 0, 0, 0);
    gb_init(b, "eps", 1, D(1), (const float[]){1e-6f}, 0, 0, 0);
    gb_init(b, "g", 1, D(120), NULL, 0.5f, 1.5f, 91);
    gb_init(b, "be", 1, D(120), NULL, -0.5f, 0.5f, 92);
    gb_init(b, "wqkv", 2, D(120, 360), NULL, -0.2f, 0.2f, 93);
    gb_init(b, "bqkv", 1, D(360), NULL, -0.1f, 0.1f, 94);
    gb_init(b, "scale", 1, D(1), (const float[]){0.2886751f}, 0, 0, 0);
    gb_init(b, "wp", 2, D(120, 120), NULL, -0.2f, 0.2f, 95);
    gb_init(b, "bp", 1, D(120), NULL, -0.1f, 0.1f, 96);
    gb_init_i64(b, "shp", 5, D(0, -1, 3, 8, 15));
    gb_init_i64(b, "shp2", 3, D(0, -1, 120));
    gb_node(b, "ReduceMean", "x", "mu", "axes=is:-1;keepdims=i:1");
    gb_node(b, "Sub", "x,mu", "d", NULL);
    gb_node(b, "Pow", "d,two", "d2", NULL);
    gb_node(b, "ReduceMean", "d2", "var", "axes=is:-1;keepdims=i:1");
    gb_node(b, "Add", "var,eps", "ve", NULL);
    gb_node(b, "Sqrt", "ve", "sd", NULL);
    gb_node(b, "Div", "d,sd", "nrm", NULL);
    gb_node(b, "Mul", "nrm,g", "ng", NULL);
    gb_node(b, "Add", "ng,be", "ln", NULL);
    gb_node(b, "MatMul", "ln,wqkv", "qkv0", NULL);
    gb_node(b, "Add", "qkv0,bqkv", "qkv", NULL);
    gb_node(b, "Reshape", "qkv,shp", "r5", NULL);
    gb_node(b, "Transpose", "r5", "t5", "perm=is:2,0,3,1,4");
    gb_node(b, "Split", "t5", "q0,k0,v0", "axis=i:0");
    gb_node(b, "Squeeze", "q0", "q", "axes=is:0");
    gb_node(b, "Squeeze", "k0", "k", "axes=is:0");
    gb_node(b, "Squeeze", "v0", "v", "axes=is:0");
    gb_node(b, "Mul", "q,scale", "qs", NULL);
    gb_node(b, "Transpose", "k", "kt", "perm=is:0,1,3,2");
    gb_node(b, "MatMul", "qs,kt", "att", NULL);
    gb_node(b, "Softmax", "att", "p", "axis=i:3");
    gb_node(b, "MatMul", "p,v", "o", NULL);
    gb_node(b, "Transpose", "o", "ot", "perm=is:0,2,1,3");
    gb_node(b, "Reshape", "ot,shp2", "o2", NULL);
    gb_node(b, "MatMul", "o2,wp", "pr0", NULL);
    gb_node(b, "Add", "pr0,bp", "pr", NULL);
    gb_node(b, "Add", "pr,x", "y", NULL);
    gb_output(b, "y");
    return b;
}

static gb *softmax_old(void) /* opset 11 Softmax: coerced to 2-D at axis */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 3, D(6, 40, 97));
    gb_node(b, "Softmax", "x", "y", "axis=i:2");
    gb_node(b, "Softmax", "x", "z", "axis=i:1");
    gb_output(b, "y");
    gb_output(b, "z");
    return b;
}

static gb *cls_head(void) /* cls: flatten + MatMul + Softmax */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(6, 200, 1, 1));
    gb_init(b, "w", 2, D(200, 2), NULL, -0.3f, 0.3f, 101);
    gb_init(b, "bb", 1, D(2), NULL, -0.1f, 0.1f, 102);
    gb_init_i64(b, "shp", 2, D(0, -1));
    gb_node(b, "Reshape", "x,shp", "f", NULL);
    gb_node(b, "MatMul", "f,w", "m", NULL);
    gb_node(b, "Add", "m,bb", "a", NULL);
    gb_node(b, "Softmax", "a", "y", "axis=i:1");
    gb_output(b, "y");
    return b;
}

static gb *rec_head(void) /* rec: [6,40,120] x [120,6625] + bias, Softmax(last) */
{
    gb *b = gb_new(11);
    gb_input(b, "x", 3, D(6, 40, 120));
    gb_init(b, "w", 2, D(120, 661), NULL, -0.3f, 0.3f, 111);
    gb_init(b, "bb", 1, D(661), NULL, -0.1f, 0.1f, 112);
    gb_node(b, "MatMul", "x,w", "m", NULL);
    gb_node(b, "Add", "m,bb", "a", NULL);
    gb_node(b, "Softmax", "a", "y", "axis=i:2");
    gb_output(b, "y");
    return b;
}

/* oneDNN 2.6 gives every eltwise post-op of one algorithm the parameters of
 * the first: conv + HardSigmoid (linear + clip) + Mul scalar (linear) + Clip
 * must not become one primitive with two different linears/clips. */
static gb *postop_same_alg(void)
{
    gb *b = gb_new(11);
    gb_input(b, "x", 4, D(1, 16, 12, 12));
    gb_init(b, "w", 4, D(16, 16, 3, 3), NULL, -0.3f, 0.3f, 121);
    gb_init(b, "k", 1, D(1), (const float[]){2.5f}, 0, 0, 0);
    gb_init(b, "kb", 1, D(1), (const float[]){-0.75f}, 0, 0, 0);
    gb_init(b, "lo", 1, D(1), (const float[]){0.1f}, 0, 0, 0);
    gb_init(b, "hi", 1, D(1), (const float[]){1.7f}, 0, 0, 0);
    gb_node(b, "Conv", "x,w", "c", "kernel_shape=is:3,3;pads=is:1,1,1,1");
    gb_node(b, "HardSigmoid", "c", "h", "alpha=f:0.2;beta=f:0.5");
    gb_node(b, "Mul", "h,k", "m", NULL);
    gb_node(b, "Add", "m,kb", "a", NULL);
    gb_node(b, "Clip", "a,lo,hi", "y", NULL);
    gb_output(b, "y");
    return b;
}

const bo_pattern bo_patterns[] = {
    {"postop_same_algorithm", postop_same_alg, 1, {4}, {{1, 16, 12, 12}}},
    {"conv_first_bn", conv_first, 1, {4}, {{1, 3, 64, 64}}},
    {"lcnet_block_hardswish_residual", lcnet_block, 1, {4}, {{1, 32, 40, 40}}},
    {"se_block", se_block, 1, {4}, {{1, 96, 20, 20}}},
    {"conv_dw5_sigmoid", conv_dw5, 1, {4}, {{6, 96, 3, 40}}},
    {"conv_1x3_bn_swish", conv_1x3_swish, 1, {4}, {{6, 64, 1, 40}}},
    {"conv_group_stride21_clip", conv_strided_clip, 1, {4}, {{6, 16, 24, 96}}},
    {"db_head_convtranspose", db_head, 1, {4}, {{1, 24, 40, 40}}},
    {"convtranspose_general", deconv_general, 1, {4}, {{1, 16, 12, 12}}},
    {"pools", pools, 1, {4}, {{6, 32, 6, 40}}},
    {"resize_concat", resize_concat, 1, {4}, {{1, 24, 10, 12}}},
    {"binary_broadcast", binary_bcast, 2, {4, 4}, {{1, 16, 8, 8}, {1, 16, 1, 1}}},
    {"unary", unary, 1, {4}, {{2, 8, 6, 10}}},
    {"attention_layernorm", attention, 1, {3}, {{6, 40, 120}}},
    {"softmax_opset11", softmax_old, 1, {3}, {{6, 40, 97}}},
    {"cls_head", cls_head, 1, {4}, {{6, 200, 1, 1}}},
    {"rec_head", rec_head, 1, {3}, {{6, 40, 120}}},
};

const size_t bo_n_patterns = sizeof bo_patterns / sizeof *bo_patterns;
