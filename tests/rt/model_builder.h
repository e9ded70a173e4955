/*
 * model_builder.h - builds tiny ONNX models in memory with protobuf-c, for
 * tests that need a model with a chosen op, opset or domain.
 */
#ifndef LECTOR_TEST_MODEL_BUILDER_H
#define LECTOR_TEST_MODEL_BUILDER_H

#include <stddef.h>
#include <stdint.h>

/* A model with one node `op_type` (domain `domain`, may be "") reading float
 * input "x" of shape [1,3,4,4] (a dim < 0 makes it dynamic) and writing
 * output "y". Returns malloc'd bytes; *len gets the size. */
uint8_t *build_unary_model(const char *op_type, const char *domain, int64_t opset,
                           const int64_t dims[4], size_t *len);

#endif
