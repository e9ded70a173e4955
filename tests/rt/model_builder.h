/*
 * model_builder.h - tiny ONNX models with a chosen op, opset or domain
 * (tests/common/graph_builder.h builds them), and the allocation-failure
 * sweep of a model's load and run.
 */
#ifndef LECTOR_TEST_MODEL_BUILDER_H
#define LECTOR_TEST_MODEL_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"
#include "lector_rt_image.h"

/* A model with one node `op_type` (domain `domain`, may be "") reading float
 * input "x" of shape [1,3,4,4] (a dim < 0 makes it dynamic) and writing
 * output "y". Returns malloc'd bytes; *len gets the size. */
uint8_t *build_unary_model(const char *op_type, const char *domain, int64_t opset, const int64_t dims[4], size_t *len);

/* Loads `model` (len bytes) with options `o` and runs it once on `in`, for
 * n = 1 .. max_n with the nth allocation failing: every attempt must end in
 * LECTOR_OK or LECTOR_ERR_OUT_OF_MEMORY, never a crash or another status.
 * Returns the number of attempts that broke the rule (each printed);
 * *oks counts the attempts that succeeded (past the last allocation, all).
 * argmax: 0 lector_model_load_memory, 1 its _argmax form, 2 its _top2 form. */
int alloc_failure_sweep(const uint8_t *model, size_t len, const char *name, const lector_model_options *o, int argmax,
                        const lector_tensor *in, long max_n, int *oks);

#endif
