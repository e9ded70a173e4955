/* onnx_tensor.h - conversion of onnx.TensorProto to lector_tensor (internal). */
#ifndef LECTOR_RT_ONNX_TENSOR_H
#define LECTOR_RT_ONNX_TENSOR_H

#include "lector_rt.h"
#include "onnx.pb-c.h"

/* Decodes `tp` into `out` (data from lector__aligned_alloc). `what` names the
 * tensor's role in messages ("initializer", "tensor", ...). */
lector_status rt_tensor_from_proto(const Onnx__TensorProto *tp, lector_tensor *out, const char *what,
                                   lector_error *err);

#endif
