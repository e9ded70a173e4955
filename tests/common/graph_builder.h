/*
 * graph_builder.h - builds small ONNX models in memory (protobuf-c) for the
 * tests (test_backend_ops' patterns, the runtime's bad-input and argmax
 * tests): inputs, float initializers, nodes with attributes given as a
 * compact string, outputs.
 *
 * Attributes: "name=i:3;name=is:1,1;name=f:0.5;name=fs:1,2;name=s:text"
 * Inputs/outputs of a node: comma-separated names; an empty name (",x")
 * is an absent optional input.
 */
#ifndef LECTOR_TEST_GRAPH_BUILDER_H
#define LECTOR_TEST_GRAPH_BUILDER_H

#include <stddef.h>
#include <stdint.h>

typedef struct gb gb;

gb *gb_new(int64_t opset);
/* A float graph input; a dimension < 0 is dynamic ("N"). */
void gb_input(gb *b, const char *name, int ndim, const int64_t *dims);
/* data == NULL: seeded random values in [lo, hi] */
void gb_init(gb *b, const char *name, int ndim, const int64_t *dims, const float *data, float lo, float hi,
             uint32_t seed);
void gb_init_i64(gb *b, const char *name, int n, const int64_t *vals);
/* A float initializer of shape [1] holding v. */
void gb_scalar(gb *b, const char *name, float v);
/* BatchNormalization's scale, bias, mean and variance for C channels, named
 * "s,b,m,v": seeded random values (scale and variance in [0.5, 1.5], bias in
 * [-0.5, 0.5], mean in [-0.2, 0.2]). */
void gb_bn(gb *b, const char *names, int64_t channels, uint32_t seed);
/* `op` may name a domain: "com.example:Op". */
void gb_node(gb *b, const char *op, const char *ins, const char *outs, const char *attrs);
/* A graph output of undeclared type and shape ... */
void gb_output(gb *b, const char *name);
/* ... or a float output of this shape (a dimension < 0 is dynamic). */
void gb_output_shaped(gb *b, const char *name, int ndim, const int64_t *dims);
/* Serialised ModelProto (malloc'd) and frees the builder. */
uint8_t *gb_finish(gb *b, size_t *len);

#endif
