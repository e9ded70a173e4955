/*
 * tensor.c - element types, tensors, status names, and the TensorProto codec
 * (ONNX initializers and the node-test .pb files share it).
 */
#include <stdio.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "rt/onnx_tensor.h"
#include "util/util.h"

const char *lector_status_str(lector_status s)
{
    static const char *names[] = {
        "LECTOR_OK",
        "LECTOR_ERR_INVALID_ARGUMENT",
        "LECTOR_ERR_IO",
        "LECTOR_ERR_PARSE",
        "LECTOR_ERR_INVALID_MODEL",
        "LECTOR_ERR_UNSUPPORTED_OP",
        "LECTOR_ERR_SHAPE",
        "LECTOR_ERR_DTYPE",
        "LECTOR_ERR_OUT_OF_MEMORY",
        "LECTOR_ERR_BACKEND",
        "LECTOR_ERR_LIMIT",
        "LECTOR_ERR_IMAGE",
        "LECTOR_ERR_UNAVAILABLE",
        "LECTOR_ERR_TIMEOUT",
        "LECTOR_ERR_INTERNAL",
        "LECTOR_ERR_CANCELLED",
    };
    if ((unsigned)s < LECTOR_ARRAY_LEN(names)) return names[s];
    return "LECTOR_ERR_UNKNOWN";
}

const char *lector_version(void) { return LECTOR_VERSION_STRING; }

size_t lector_dtype_size(lector_dtype dt)
{
    switch (dt) {
    case LECTOR_DTYPE_FLOAT32: return 4;
    case LECTOR_DTYPE_UINT8: return 1;
    case LECTOR_DTYPE_INT8: return 1;
    case LECTOR_DTYPE_INT32: return 4;
    case LECTOR_DTYPE_INT64: return 8;
    case LECTOR_DTYPE_BOOL: return 1;
    case LECTOR_DTYPE_FLOAT16: return 2;
    case LECTOR_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

const char *lector_dtype_name(lector_dtype dt)
{
    switch (dt) {
    case LECTOR_DTYPE_FLOAT32: return "float32";
    case LECTOR_DTYPE_UINT8: return "uint8";
    case LECTOR_DTYPE_INT8: return "int8";
    case LECTOR_DTYPE_INT32: return "int32";
    case LECTOR_DTYPE_INT64: return "int64";
    case LECTOR_DTYPE_BOOL: return "bool";
    case LECTOR_DTYPE_FLOAT16: return "float16";
    case LECTOR_DTYPE_FLOAT64: return "float64";
    default: return "undefined";
    }
}

int64_t lector_tensor_numel(const lector_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->dims[i];
    return n;
}

void lector_tensors_free(lector_tensor *t, size_t n)
{
    if (!t) return;
    for (size_t i = 0; i < n; i++) lector__free(t[i].data);
    lector__free(t);
}

/* Largest tensor we accept from a file: 4 Gi elements keeps every size
 * computation far from overflow and any real OCR model far below it. */
#define MAX_ELEMENTS ((int64_t)1 << 32)

lector_status rt_tensor_from_proto(const Onnx__TensorProto *tp, lector_tensor *out, const char *what, lector_error *err)
{
    memset(out, 0, sizeof *out);
    const char *name = tp->name ? tp->name : "";
    if (tp->n_dims > LECTOR_MAX_DIMS)
        return lector__error(err, LECTOR_ERR_SHAPE, "%s '%s': rank %zu exceeds the maximum of %d", what, name,
                             tp->n_dims, LECTOR_MAX_DIMS);
    lector_dtype dt = (lector_dtype)tp->data_type;
    size_t es = lector_dtype_size(dt);
    if (!es)
        return lector__error(err, LECTOR_ERR_DTYPE, "%s '%s': unsupported element type %d", what, name,
                             (int)tp->data_type);
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return lector__error(err, LECTOR_ERR_UNSUPPORTED_OP, "%s '%s': external data files are not supported", what,
                             name);
    int64_t numel = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return lector__error(err, LECTOR_ERR_SHAPE, "%s '%s': negative dimension %lld", what, name,
                                 (long long)tp->dims[i]);
        if (tp->dims[i] && numel > MAX_ELEMENTS / tp->dims[i])
            return lector__error(err, LECTOR_ERR_LIMIT, "%s '%s': too many elements", what, name);
        numel *= tp->dims[i];
        out->dims[i] = tp->dims[i];
    }
    out->ndim = (int)tp->n_dims;
    out->dtype = dt;
    size_t nbytes = (size_t)numel * es;
    /* how many bytes the message really carries: checked before allocating,
     * so a header claiming billions of elements costs nothing */
    size_t have;
    if (tp->has_raw_data)
        have = tp->raw_data.len;
    else if (dt == LECTOR_DTYPE_FLOAT32)
        have = tp->n_float_data * 4;
    else if (dt == LECTOR_DTYPE_INT64)
        have = tp->n_int64_data * 8;
    else if (dt == LECTOR_DTYPE_FLOAT64)
        have = tp->n_double_data * 8;
    else if (dt == LECTOR_DTYPE_INT32 || dt == LECTOR_DTYPE_INT8 || dt == LECTOR_DTYPE_UINT8 ||
             dt == LECTOR_DTYPE_BOOL || dt == LECTOR_DTYPE_FLOAT16)
        have = tp->n_int32_data * es; /* int32_data carries the small types, one per entry */
    else
        have = 0;
    if (have != nbytes)
        return lector__error(err, LECTOR_ERR_INVALID_MODEL, "%s '%s': holds %zu bytes of data, its shape needs %zu",
                             what, name, have, nbytes);
    uint8_t *data = lector__aligned_alloc(nbytes ? nbytes : 1);
    if (!data)
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s '%s': out of memory (%zu bytes)", what, name, nbytes);
    if (nbytes) {
        if (tp->has_raw_data)
            memcpy(data, tp->raw_data.data, nbytes);
        else if (dt == LECTOR_DTYPE_FLOAT32)
            memcpy(data, tp->float_data, nbytes);
        else if (dt == LECTOR_DTYPE_INT64)
            memcpy(data, tp->int64_data, nbytes);
        else if (dt == LECTOR_DTYPE_FLOAT64)
            memcpy(data, tp->double_data, nbytes);
        else
            for (int64_t i = 0; i < numel; i++) {
                int32_t v = tp->int32_data[i];
                if (es == 4)
                    memcpy(data + i * 4, &v, 4);
                else if (es == 2) {
                    uint16_t h = (uint16_t)v;
                    memcpy(data + i * 2, &h, 2);
                } else
                    data[i] = (uint8_t)v;
            }
    }
    out->data = data;
    return LECTOR_OK;
}

lector_status lector_tensor_read_pb(const char *path, lector_tensor **out, char **name, lector_error *err)
{
    if (!path || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    if (name) *name = NULL;
    uint8_t *buf;
    size_t len;
    lector_status st = lector__read_file(path, 0, &buf, &len, err);
    if (st) return st;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    lector__free(buf);
    if (!tp) return lector__error(err, LECTOR_ERR_PARSE, "%s: not a serialized onnx.TensorProto", path);
    lector_tensor *t = lector__calloc(1, sizeof *t);
    if (!t) {
        onnx__tensor_proto__free_unpacked(tp, NULL);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    st = rt_tensor_from_proto(tp, t, "tensor", err);
    if (st == LECTOR_OK && name && tp->name && tp->name[0]) {
        *name = lector__strdup(tp->name);
        if (!*name) st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (st) {
        lector__error_prefix(err, "%s", path);
        lector_tensors_free(t, 1);
        if (name) {
            lector__free(*name);
            *name = NULL;
        }
        return st;
    }
    *out = t;
    return LECTOR_OK;
}

lector_status lector_tensor_write_pb(const char *path, const lector_tensor *t, const char *name, lector_error *err)
{
    if (!path || !t) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    size_t es = lector_dtype_size(t->dtype);
    if (!es) return lector__error(err, LECTOR_ERR_DTYPE, "%s: unsupported element type", path);
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    int64_t dims[LECTOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) dims[i] = t->dims[i];
    tp.n_dims = (size_t)t->ndim;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = (int32_t)t->dtype;
    tp.name = (char *)(name ? name : "");
    tp.has_raw_data = 1;
    tp.raw_data.len = (size_t)lector_tensor_numel(t) * es;
    tp.raw_data.data = t->data;
    size_t n = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *buf = lector__malloc(n);
    if (!buf) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    onnx__tensor_proto__pack(&tp, buf);
    FILE *f = fopen(path, "wb");
    if (!f) {
        lector__free(buf);
        return lector__error(err, LECTOR_ERR_IO, "%s: cannot create", path);
    }
    size_t w = fwrite(buf, 1, n, f);
    int bad = fclose(f) != 0 || w != n;
    lector__free(buf);
    if (bad) return lector__error(err, LECTOR_ERR_IO, "%s: write error", path);
    return LECTOR_OK;
}
