/*
 * passes.h - graph passes run per concrete input shape (internal).
 *
 * Order (rt_optimize): shape inference with constant folding, BatchNorm
 * folding into Conv, activation fusion, LayerNorm recognition, dead-node
 * removal. Each pass leaves the graph valid: removed nodes are marked dead,
 * values are never renumbered.
 */
#ifndef LECTOR_RT_PASSES_H
#define LECTOR_RT_PASSES_H

#include "lector_rt.h"
#include "rt/graph.h"

/* Sets the shapes of the graph inputs from `inputs` (same order as
 * g->inputs), infers every value's type and shape and folds every node whose
 * inputs are all constant (and Shape nodes, whose output depends only on a
 * shape) by running its reference kernel. */
lector_status rt_infer_and_fold(rt_graph *g, const lector_tensor *inputs, lector_error *err);

/* Conv(+bias) followed by BatchNormalization with constant parameters ->
 * one Conv with rescaled weights and bias. */
lector_status rt_fold_batchnorm(rt_graph *g, lector_error *err);

/* Relu, Sigmoid, HardSigmoid, HardSwish, Clip, x*Sigmoid(x), x*HardSigmoid(x)
 * following Conv/ConvTranspose/MatMul/Gemm/Add/BatchNormalization -> the
 * producer's fused activation. */
lector_status rt_fuse_activations(rt_graph *g, lector_error *err);

/* ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add over the last axis ->
 * one LayerNormalization node. */
lector_status rt_fuse_layernorm(rt_graph *g, lector_error *err);

/* Marks nodes whose outputs reach no graph output as dead. */
void rt_remove_dead(rt_graph *g);

/* The shape-independent part, run once on a model's base graph before any
 * plan (backends that take fused graphs only): every node computable from
 * constants alone is folded and BatchNorm is folded into Conv, so the
 * weights every plan reads are computed once and shared by all of them. */
lector_status rt_prepare_constants(rt_graph *g, lector_error *err);

/* All of the above, in order. `fuse` = 0 runs only what exactness needs
 * (inference, folding, dead-node removal), for the reference backend's tests. */
lector_status rt_optimize(rt_graph *g, const lector_tensor *inputs, int fuse, lector_error *err);

/* Number of live consumers of each value (array of g->n_values, lector__free). */
int *rt_consumer_counts(const rt_graph *g);

#endif
