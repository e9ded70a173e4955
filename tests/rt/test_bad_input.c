/*
 * Bad input to the runtime: every case gets a specific status and a message
 * naming the file or input, no crash, no leak (the suite also runs under
 * ASan/LSan in CI).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "lector_rt.h"
#include "lector_rt_image.h"
#include "graph_builder.h"
#include "model_builder.h"
#include "util/util.h"

static char cls_path[4096];
static char tmpdir[] = "/tmp/lector-bad-XXXXXX";

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

/* Loads `path`, expects `code` and a message mentioning `needle`. */
static void expect_load_error(const char *path, lector_status code, const char *needle)
{
    lector_model *m = (lector_model *)0x1;
    lector_error err;
    memset(&err, 0, sizeof err);
    lector_status st = lector_model_load_file(path, NULL, &m, &err);
    if (st != code) fprintf(stderr, "%s: got %s: %s\n", path, lector_status_str(st), err.message);
    assert_int_equal(st, code);
    assert_int_equal(err.code, code);
    assert_null(m);
    assert_non_null(strstr(err.message, needle));
}

static void test_missing_file(void **state)
{
    expect_load_error("/nonexistent/model.onnx", LECTOR_ERR_IO, "/nonexistent/model.onnx");
}

static void test_directory(void **state) { expect_load_error("/tmp", LECTOR_ERR_IO, "/tmp"); }

static void test_empty_file(void **state)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/empty.onnx", tmpdir);
    write_file(p, "", 0);
    expect_load_error(p, LECTOR_ERR_PARSE, "empty.onnx");
}

static void test_text_file(void **state)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/readme.onnx", tmpdir);
    const char *txt = "This is not an ONNX model, just some text.\n";
    write_file(p, txt, strlen(txt));
    expect_load_error(p, LECTOR_ERR_PARSE, "readme.onnx");
}

static void test_jpeg_header(void **state)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/photo.onnx", tmpdir);
    static const uint8_t jpg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J',  'F',  'I',  'F',  0x00,
                                  0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xFF, 0xD9};
    write_file(p, jpg, sizeof jpg);
    expect_load_error(p, LECTOR_ERR_PARSE, "photo.onnx");
}

static void test_truncated(void **state)
{
    size_t n;
    uint8_t *b = slurp(cls_path, &n);
    size_t cuts[] = {1, 7, 100, 4096, n / 3, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/trunc_%zu.onnx", tmpdir, cuts[i]);
        write_file(p, b, cuts[i]);
        lector_model *m = NULL;
        lector_error err = {0};
        lector_status st = lector_model_load_file(p, NULL, &m, &err);
        /* a cut at a field boundary can still be valid protobuf: then the
         * graph is incomplete, which the loader must notice */
        if (st != LECTOR_ERR_PARSE && st != LECTOR_ERR_INVALID_MODEL)
            fprintf(stderr, "cut %zu: %s %s\n", cuts[i], lector_status_str(st), err.message);
        assert_true(st == LECTOR_ERR_PARSE || st == LECTOR_ERR_INVALID_MODEL);
        assert_null(m);
        assert_non_null(strstr(err.message, "trunc_"));
    }
    free(b);
}

static void test_corrupted(void **state)
{
    size_t n;
    uint8_t *b = slurp(cls_path, &n);
    /* Overwrite the start with garbage: the ModelProto tag bytes are invalid. */
    memset(b, 0xFF, 16);
    char p[4200];
    snprintf(p, sizeof p, "%s/corrupt_head.onnx", tmpdir);
    write_file(p, b, n);
    expect_load_error(p, LECTOR_ERR_PARSE, "corrupt_head.onnx");
    /* Random corruption in the middle: any clean status, never a crash. */
    srand(1234);
    uint8_t *c = malloc(n);
    assert_non_null(c);
    for (int trial = 0; trial < 20; trial++) {
        memcpy(c, b, n);
        memset(c, 0, 0);
        c[0] = b[0];
        for (int k = 0; k < 8; k++) c[16 + (size_t)rand() % (n - 16)] ^= (uint8_t)(1 + rand() % 255);
        lector_model *m = NULL;
        lector_error err = {0};
        lector_status st = lector_model_load_memory(c, n, "corrupt", NULL, &m, &err);
        if (st == LECTOR_OK)
            lector_model_free(m);
        else
            assert_true(strlen(err.message) > 0);
    }
    free(c);
    free(b);
}

static void expect_model_bytes_error(uint8_t *buf, size_t len, lector_status code, const char *needle)
{
    lector_model *m = NULL;
    lector_error err = {0};
    lector_status st = lector_model_load_memory(buf, len, "built.onnx", NULL, &m, &err);
    if (st != code) fprintf(stderr, "got %s: %s\n", lector_status_str(st), err.message);
    assert_int_equal(st, code);
    assert_null(m);
    assert_non_null(strstr(err.message, needle));
    free(buf);
}

static void test_unsupported_op(void **state)
{
    const int64_t dims[4] = {1, 3, 4, 4};
    size_t len;
    uint8_t *b = build_unary_model("NotAnOp", "", 13, dims, &len);
    expect_model_bytes_error(b, len, LECTOR_ERR_UNSUPPORTED_OP, "NotAnOp");
    b = build_unary_model("Relu", "com.microsoft", 13, dims, &len);
    expect_model_bytes_error(b, len, LECTOR_ERR_UNSUPPORTED_OP, "com.microsoft");
    b = build_unary_model("Relu", "", 3, dims, &len);
    expect_model_bytes_error(b, len, LECTOR_ERR_UNSUPPORTED_OP, "opset 3");
}

static void test_valid_small_model(void **state)
{
    const int64_t dims[4] = {1, 3, 4, 4};
    size_t len;
    uint8_t *b = build_unary_model("Relu", "", 13, dims, &len);
    lector_model *m = NULL;
    lector_error err = {0};
    assert_int_equal(lector_model_load_memory(b, len, "relu.onnx", NULL, &m, &err), LECTOR_OK);
    free(b);
    float x[48];
    for (int i = 0; i < 48; i++) x[i] = (float)i - 24.f;
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 4, 4}, x};
    lector_tensor *out = NULL;
    size_t n_out = 0;
    assert_int_equal(lector_model_run(m, &in, 1, &out, &n_out, &err), LECTOR_OK);
    assert_int_equal(n_out, 1);
    const float *y = out[0].data;
    for (int i = 0; i < 48; i++) assert_true(y[i] == (x[i] > 0 ? x[i] : 0.f));
    lector_tensors_free(out, n_out);
    lector_model_free(m);
}

static void expect_run_error(lector_model *m, lector_tensor *in, size_t n, lector_status code, const char *needle)
{
    lector_tensor *out = (lector_tensor *)0x1;
    size_t n_out = 7;
    lector_error err = {0};
    lector_status st = lector_model_run(m, in, n, &out, &n_out, &err);
    if (st != code) fprintf(stderr, "got %s: %s\n", lector_status_str(st), err.message);
    assert_int_equal(st, code);
    assert_null(out);
    assert_int_equal(n_out, 0);
    assert_non_null(strstr(err.message, needle));
}

static void test_wrong_inputs(void **state)
{
    lector_model *m = NULL;
    lector_error err = {0};
    assert_int_equal(lector_model_load_file(cls_path, NULL, &m, &err), LECTOR_OK);
    assert_int_equal(lector_model_num_inputs(m), 1);
    const char *name = lector_model_input(m, 0)->name;
    static float buf[2 * 4 * 48 * 192];
    lector_tensor t = {LECTOR_DTYPE_FLOAT32, 3, {3, 48, 192}, buf};
    expect_run_error(m, &t, 1, LECTOR_ERR_SHAPE, name); /* rank 3 */
    lector_tensor t2 = {LECTOR_DTYPE_FLOAT32, 4, {1, 4, 48, 192}, buf};
    expect_run_error(m, &t2, 1, LECTOR_ERR_SHAPE, "dimension 1"); /* 4 channels */
    lector_tensor t3 = {LECTOR_DTYPE_INT64, 4, {1, 3, 48, 96}, buf};
    expect_run_error(m, &t3, 1, LECTOR_ERR_DTYPE, "int64");
    lector_tensor t4 = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 48, 192}, NULL};
    expect_run_error(m, &t4, 1, LECTOR_ERR_INVALID_ARGUMENT, "no data");
    expect_run_error(m, &t2, 0, LECTOR_ERR_INVALID_ARGUMENT, "1 inputs");
    lector_tensor t5 = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, -2, 192}, buf};
    expect_run_error(m, &t5, 1, LECTOR_ERR_SHAPE, name);
    /* the model stays usable after every error */
    lector_tensor ok = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 48, 192}, buf};
    lector_tensor *out = NULL;
    size_t n_out = 0;
    assert_int_equal(lector_model_run(m, &ok, 1, &out, &n_out, &err), LECTOR_OK);
    assert_int_equal(out[0].ndim, 2);
    assert_int_equal(out[0].dims[1], 2);
    lector_tensors_free(out, n_out);
    lector_model_free(m);
}

/* lector_model_arena_bytes: shapes only (no data), a larger batch needs more,
 * bad arguments get their status; lector_model_gpu_available is 0 off a GPU. */
static void test_arena_bytes(void **state)
{
    lector_model *m = NULL;
    lector_error err = {0};
    assert_int_equal(lector_model_load_file(cls_path, NULL, &m, &err), LECTOR_OK);
    size_t one = 0, eight = 0;
    lector_tensor t1 = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 48, 192}, NULL};
    lector_tensor t8 = {LECTOR_DTYPE_FLOAT32, 4, {8, 3, 48, 192}, NULL};
    assert_int_equal(lector_model_arena_bytes(m, &t1, 1, &one, &err), LECTOR_OK);
    assert_int_equal(lector_model_arena_bytes(m, &t8, 1, &eight, &err), LECTOR_OK);
    assert_true(one >= sizeof(float) * 2); /* at least the output [1, 2] */
    assert_true(eight > one);
    assert_int_equal(lector_model_arena_bytes(m, &t1, 0, &one, &err), LECTOR_ERR_INVALID_ARGUMENT);
    assert_int_equal(lector_model_arena_bytes(m, &t1, 1, NULL, &err), LECTOR_ERR_INVALID_ARGUMENT);
    lector_tensor bad = {LECTOR_DTYPE_FLOAT32, 4, {1, 4, 48, 192}, NULL};
    assert_int_equal(lector_model_arena_bytes(m, &bad, 1, &one, &err), LECTOR_ERR_SHAPE);
    assert_int_equal(lector_model_gpu_available(m), 0);
    assert_int_equal(lector_model_gpu_available(NULL), 0);
    /* image input: a CPU backend takes none, and says so */
    assert_int_equal(lector_model_takes_images(m), 0);
    static const uint8_t px[3 * 4 * 4];
    static const int xo[4], yo[8];
    static const int16_t al[8], be[8];
    static const float lut[3 * 256];
    lector_image_input im = {.pixels = px,
                             .width = 4,
                             .height = 4,
                             .channels = 3,
                             .stride = 12,
                             .out_width = 4,
                             .out_height = 4,
                             .xofs = xo,
                             .alpha = al,
                             .yofs = yo,
                             .beta = be,
                             .lut = lut};
    lector_tensor *out = (lector_tensor *)0x1;
    size_t n_out = 3;
    assert_int_equal(lector_model_run_image(m, &im, &out, &n_out, &err), LECTOR_ERR_UNSUPPORTED_OP);
    assert_null(out);
    assert_int_equal(n_out, 0);
    assert_non_null(strstr(err.message, "image input"));
    assert_int_equal(lector_model_run_image(m, NULL, &out, &n_out, &err), LECTOR_ERR_INVALID_ARGUMENT);
    assert_int_equal(lector_model_run_images(m, &im, 1, 2, 4, &out, &n_out, &err), LECTOR_ERR_UNSUPPORTED_OP);
    assert_int_equal(lector_model_run_images(m, NULL, 1, 1, 4, &out, &n_out, &err), LECTOR_ERR_INVALID_ARGUMENT);
    lector_model_free(m);
}

static void test_null_arguments(void **state)
{
    lector_error err = {0};
    lector_model *m = NULL;
    assert_int_equal(lector_model_load_file(NULL, NULL, &m, &err), LECTOR_ERR_INVALID_ARGUMENT);
    assert_int_equal(lector_model_load_memory(NULL, 10, NULL, NULL, &m, &err), LECTOR_ERR_INVALID_ARGUMENT);
    lector_model_free(NULL);
    lector_tensors_free(NULL, 3);
    assert_int_equal(lector_tensor_read_pb("/nonexistent.pb", NULL, NULL, &err), LECTOR_ERR_INVALID_ARGUMENT);
    lector_tensor *t = NULL;
    assert_int_equal(lector_tensor_read_pb("/nonexistent.pb", &t, NULL, &err), LECTOR_ERR_IO);
    assert_string_equal(lector_status_str(LECTOR_ERR_PARSE), "LECTOR_ERR_PARSE");
}

/* A Conv followed by a BatchNormalization whose parameters do not fit it.
 * The fold of the two runs on the graph as loaded, before inference checks
 * any size: it must leave such a pair to inference's error rather than read
 * past a parameter (and fold the mismatch away, so that the run would
 * "succeed"). `bad`: 0 a Conv without its weight, 1 the mean of one value for
 * two channels, 2 the Conv's bias of one value. */
static uint8_t *conv_bn_model(int bad, size_t *len)
{
    const int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {2, 2, 3, 3}, one[1] = {1}, two[1] = {2};
    gb *b = gb_new(13);
    gb_input(b, "x", 4, xd);
    gb_init(b, "w", 4, wd, NULL, -1.f, 1.f, 1);
    gb_init(b, "cb", 1, bad == 2 ? one : two, NULL, -1.f, 1.f, 2);
    gb_bn(b, "s,b,m0,v", 2, 3);
    gb_init(b, "m1", 1, one, NULL, -0.2f, 0.2f, 4);
    gb_node(b, "Conv", bad == 0 ? "x" : "x,w,cb", "y", "pads=is:1,1,1,1");
    gb_node(b, "BatchNormalization", bad == 1 ? "y,s,b,m1,v" : "y,s,b,m0,v", "z", NULL);
    gb_output(b, "z");
    return gb_finish(b, len);
}

static void test_conv_batchnorm_mismatch(void **state)
{
    static const char *const needle[3] = {"input 1 is missing", "parameter 3", "bias shape"};
    static const char *const backends[2] = {"ref", "cpu"};
    float x[32] = {0};
    for (int be = 0; be < 2; be++)
        for (int bad = 0; bad < 3; bad++) {
            size_t len;
            uint8_t *bytes = conv_bn_model(bad, &len);
            lector_model_options o = {.backend = backends[be], .threads = 1};
            lector_model *m = NULL;
            lector_error err = {0};
            lector_status st = lector_model_load_memory(bytes, len, "conv_bn.onnx", &o, &m, &err);
            free(bytes);
            if (st == LECTOR_OK) {
                lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 2, 4, 4}, x};
                lector_tensor *out = NULL;
                size_t n_out = 0;
                st = lector_model_run(m, &in, 1, &out, &n_out, &err);
                lector_tensors_free(out, n_out);
                lector_model_free(m);
            }
            if (st == LECTOR_OK || !strstr(err.message, needle[bad]))
                fprintf(stderr, "%s, case %d: %s: %s\n", backends[be], bad, lector_status_str(st), err.message);
            assert_int_not_equal(st, LECTOR_OK);
            assert_non_null(strstr(err.message, needle[bad]));
        }
}

/* The models fuzz.onnx once broke the runtime with (tests/fuzz/regressions,
 * README.md there), loaded as the runtime and the OCR engine load models
 * (plainly; with argmax outputs; with top-2 outputs and width masks) and run
 * once where they load: each ends in a status with a message, here as well
 * as in the fuzz stage (this test also runs under ASan and UBSan). */
static void test_fuzz_regressions(void **state)
{
    DIR *dir = opendir(LECTOR_FUZZ_REGRESSIONS);
    assert_non_null(dir);
    int files = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        const char *dot = strrchr(de->d_name, '.');
        if (!dot || strcmp(dot, ".onnx")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", LECTOR_FUZZ_REGRESSIONS, de->d_name);
        files++;
        for (int how = 0; how < 3; how++) {
            lector_model_options o = {.backend = "ref", .threads = 1, .width_masks = how == 2};
            lector_model *m = NULL;
            lector_error err = {0};
            lector_status st = how == 0   ? lector_model_load_file(path, &o, &m, &err)
                               : how == 1 ? lector_model_load_file_argmax(path, &o, &m, &err)
                                          : lector_model_load_file_top2(path, &o, &m, &err);
            if (st == LECTOR_OK) {
                const lector_value_info *vi = lector_model_input(m, 0);
                float x[64] = {0};
                lector_tensor in = {LECTOR_DTYPE_FLOAT32, vi->ndim, {0}, x};
                int64_t n = 1;
                for (int d = 0; d < vi->ndim; d++) n *= in.dims[d] = vi->dims[d] > 0 ? vi->dims[d] : 1;
                lector_tensor *out = NULL;
                size_t n_out = 0;
                if (lector_model_num_inputs(m) == 1 && vi->dtype == LECTOR_DTYPE_FLOAT32 && n <= 64)
                    st = lector_model_run(m, &in, 1, &out, &n_out, &err);
                lector_tensors_free(out, n_out);
                lector_model_free(m);
            }
            if (st != LECTOR_OK) assert_true(strlen(err.message) > 0);
        }
    }
    closedir(dir);
    assert_true(files >= 4);
}

/* Fail every allocation in turn while loading and running a small model:
 * each attempt ends in OK or OUT_OF_MEMORY, never a crash (LSan checks the
 * leaks at exit). */
static void test_allocation_failures(void **state)
{
    const int64_t dims[4] = {1, 3, 4, 4};
    size_t len;
    uint8_t *b = build_unary_model("Relu", "", 13, dims, &len);
    float x[48] = {0};
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 4, 4}, x};
    int oks = 0;
    assert_int_equal(alloc_failure_sweep(b, len, "relu.onnx", NULL, 0, &in, 400, &oks), 0);
    assert_true(oks > 0); /* past the last allocation everything succeeds */
    free(b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_bad_input MODELS_DIR\n");
        return 2;
    }
    snprintf(cls_path, sizeof cls_path, "%s/ch_ppocr_mobile_v2.0_cls_infer.onnx", argv[1]);
    if (!mkdtemp(tmpdir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file),      cmocka_unit_test(test_directory),
        cmocka_unit_test(test_empty_file),        cmocka_unit_test(test_text_file),
        cmocka_unit_test(test_jpeg_header),       cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupted),         cmocka_unit_test(test_unsupported_op),
        cmocka_unit_test(test_valid_small_model), cmocka_unit_test(test_wrong_inputs),
        cmocka_unit_test(test_null_arguments),    cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_arena_bytes),       cmocka_unit_test(test_conv_batchnorm_mismatch),
        cmocka_unit_test(test_fuzz_regressions),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    return rc;
}
