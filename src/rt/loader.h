/* loader.h - ONNX model bytes -> rt_graph (internal). */
#ifndef LECTOR_RT_LOADER_H
#define LECTOR_RT_LOADER_H

#include <stddef.h>

#include "rt/graph.h"

/* Parses an ONNX ModelProto. `name` (file name) is used in messages. */
lector_status rt_load_onnx(const void *data, size_t size, const char *name, rt_graph **out, lector_error *err);

#endif
