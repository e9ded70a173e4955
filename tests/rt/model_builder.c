#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>

#include "onnx.pb-c.h"
#include "util/util.h"

static Onnx__ValueInfoProto *value_info(const char *name, const int64_t dims[4], Onnx__TypeProto *tp,
                                        Onnx__TypeProto__Tensor *tt, Onnx__TensorShapeProto *sp,
                                        Onnx__TensorShapeProto__Dimension *d, Onnx__TensorShapeProto__Dimension **dp,
                                        Onnx__ValueInfoProto *vi)
{
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sp);
    for (int i = 0; i < 4; i++) {
        onnx__tensor_shape_proto__dimension__init(&d[i]);
        if (dims[i] >= 0) {
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d[i].dim_value = dims[i];
        } else {
            d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d[i].dim_param = "N";
        }
        dp[i] = &d[i];
    }
    sp->n_dim = 4;
    sp->dim = dp;
    tt->has_elem_type = 1;
    tt->elem_type = 1;
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = (char *)name;
    vi->type = tp;
    return vi;
}

uint8_t *build_unary_model(const char *op_type, const char *domain, int64_t opset, const int64_t dims[4], size_t *len)
{
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__NodeProto n;
    Onnx__OperatorSetIdProto os, *osp = &os;
    Onnx__NodeProto *np = &n;
    onnx__model_proto__init(&m);
    onnx__graph_proto__init(&g);
    onnx__node_proto__init(&n);
    onnx__operator_set_id_proto__init(&os);
    char *in[1] = {"x"}, *out[1] = {"y"};
    n.n_input = 1;
    n.input = in;
    n.n_output = 1;
    n.output = out;
    n.op_type = (char *)op_type;
    n.domain = (char *)domain;
    n.name = "the_node";
    Onnx__TypeProto tp[2];
    Onnx__TypeProto__Tensor tt[2];
    Onnx__TensorShapeProto sp[2];
    Onnx__TensorShapeProto__Dimension d[2][4], *dp[2][4];
    Onnx__ValueInfoProto vi[2], *vin = &vi[0], *vout = &vi[1];
    value_info("x", dims, &tp[0], &tt[0], &sp[0], d[0], dp[0], &vi[0]);
    value_info("y", dims, &tp[1], &tt[1], &sp[1], d[1], dp[1], &vi[1]);
    g.n_node = 1;
    g.node = &np;
    g.name = "test";
    g.n_input = 1;
    g.input = &vin;
    g.n_output = 1;
    g.output = &vout;
    os.domain = "";
    os.has_version = 1;
    os.version = opset;
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = &osp;
    m.graph = &g;
    *len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(*len);
    if (buf) onnx__model_proto__pack(&m, buf);
    return buf;
}

int alloc_failure_sweep(const uint8_t *model, size_t len, const char *name, const lector_model_options *o, int argmax,
                        const lector_tensor *in, long max_n, int *oks)
{
    int bad = 0;
    *oks = 0;
    for (long n = 1; n < max_n; n++) {
        lector__fail_alloc_after(n);
        lector_model *m = NULL;
        lector_error err = {0};
        lector_status st = argmax ? lector_model_load_memory_argmax(model, len, name, o, &m, &err)
                                  : lector_model_load_memory(model, len, name, o, &m, &err);
        if (st == LECTOR_OK) {
            lector_tensor *out = NULL;
            size_t n_out = 0;
            st = lector_model_run(m, in, 1, &out, &n_out, &err);
            if (st == LECTOR_OK) (*oks)++;
            lector_tensors_free(out, n_out);
            lector_model_free(m);
        }
        lector__fail_alloc_after(0);
        if (st != LECTOR_OK && st != LECTOR_ERR_OUT_OF_MEMORY) {
            fprintf(stderr, "%s: allocation %ld failing: %s %s\n", name, n, lector_status_str(st), err.message);
            bad++;
        }
    }
    return bad;
}
