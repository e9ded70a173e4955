/*
 * lector_model_load_*_argmax (lector_rt_image.h): each float output of rank >= 2 is
 * replaced by its argmax (int64, the first maximum, NaN the greatest, as
 * np.argmax) and its max over the last axis; lector_model_load_*_top2 by the
 * indices and values of its two largest (ONNX TopK K=2: of equal values the
 * lower index first). Checked against the same model loaded without the
 * option, bit for bit, the expected rows found here by a scan of the full rows
 * (and TopK itself for any K, largest or smallest, along a middle axis, on
 * values with many ties, against a ranking made here): tiny one-node models
 * (opsets 11, 13: ReduceMax axes as an attribute; 18: as an input), an
 * output without a declared rank (left as it is), the recogniser on the
 * "ref" and "cpu" backends over several shapes with a plan cache of one (every
 * plan rebuilt from a clone of the base graph), and allocation failures.
 *
 *   test_output_argmax MODELS_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_builder.h"
#include "lector_rt.h"
#include "lector_rt_image.h"
#include "model_builder.h"
#include "onnx.pb-c.h"
#include "util/util.h"
#include "../soft_check.h"

static uint32_t rng = 12345;
static float frand(void) /* [-1, 1) */
{
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1u << 23) - 1.f;
}

/* argmax: 0 the plain loader, 1 its _argmax form, 2 its _top2 form */
static lector_model *load(const void *bytes, size_t len, const char *path, const char *backend, int argmax, int cache)
{
    lector_model_options o = {.backend = backend, .threads = 2, .plan_cache_size = cache};
    lector_model *m = NULL;
    lector_error err = {0};
    lector_status st = path ? (argmax == 2 ? lector_model_load_file_top2
                               : argmax    ? lector_model_load_file_argmax
                                           : lector_model_load_file)(path, &o, &m, &err)
                            : (argmax == 2 ? lector_model_load_memory_top2
                               : argmax    ? lector_model_load_memory_argmax
                                           : lector_model_load_memory)(bytes, len, "built.onnx", &o, &m, &err);
    CHECK(st == LECTOR_OK, "load: %s", err.message);
    return m;
}

/* np.argmax / np.max of each last-axis row of `p` against (idx, mx). */
static void check_rows(const lector_tensor *p, const lector_tensor *idx, const lector_tensor *mx, const char *what)
{
    CHECK(p->dtype == LECTOR_DTYPE_FLOAT32 && idx->dtype == LECTOR_DTYPE_INT64 && mx->dtype == LECTOR_DTYPE_FLOAT32,
          "%s: dtypes", what);
    CHECK(idx->ndim == p->ndim - 1 && mx->ndim == p->ndim - 1, "%s: ranks %d %d of %d", what, idx->ndim, mx->ndim,
          p->ndim);
    for (int d = 0; d + 1 < p->ndim; d++)
        CHECK(idx->dims[d] == p->dims[d] && mx->dims[d] == p->dims[d], "%s: dim %d", what, d);
    int64_t C = p->dims[p->ndim - 1], rows = lector_tensor_numel(p) / C;
    const float *x = p->data, *m = mx->data;
    const int64_t *ix = idx->data;
    int bad = 0;
    for (int64_t r = 0; r < rows && bad < 5; r++) {
        const float *row = x + r * C;
        int64_t b = 0;
        for (int64_t c = 1; c < C; c++)
            if (!isnan(row[b]) && (row[c] > row[b] || isnan(row[c]))) b = c;
        /* the max bit for bit; a NaN as a NaN (which NaN of the row is not specified) */
        int same = isnan(row[b]) ? isnan(m[r]) : !memcmp(&m[r], &row[b], sizeof(float));
        if (ix[r] != b || !same) {
            fprintf(stderr, "%s: row %lld: argmax %lld max %g, expected %lld %g\n", what, (long long)r,
                    (long long)ix[r], (double)m[r], (long long)b, (double)row[b]);
            bad++;
        }
    }
    soft_check_failures += bad;
    printf("%-24s %lld rows of %lld: %s\n", what, (long long)rows, (long long)C, bad ? "FAIL" : "ok");
}

/* a comes before b among a row's largest: NaN above every number, then the
 * greater, then the lower index */
static int ahead(const float *row, int64_t a, int64_t b)
{
    if (isnan(row[a]) != isnan(row[b])) return isnan(row[a]);
    if (!isnan(row[a]) && row[a] != row[b]) return row[a] > row[b];
    return a < b;
}

/* The two largest of each last-axis row of `p`, by two scans, against (idx, val). */
static void check_top2_rows(const lector_tensor *p, const lector_tensor *idx, const lector_tensor *val,
                            const char *what)
{
    CHECK(p->dtype == LECTOR_DTYPE_FLOAT32 && idx->dtype == LECTOR_DTYPE_INT64 && val->dtype == LECTOR_DTYPE_FLOAT32,
          "%s: dtypes", what);
    CHECK(idx->ndim == p->ndim && val->ndim == p->ndim, "%s: ranks %d %d of %d", what, idx->ndim, val->ndim, p->ndim);
    for (int d = 0; d + 1 < p->ndim; d++)
        CHECK(idx->dims[d] == p->dims[d] && val->dims[d] == p->dims[d], "%s: dim %d", what, d);
    CHECK(idx->dims[p->ndim - 1] == 2 && val->dims[p->ndim - 1] == 2, "%s: last dims", what);
    int64_t C = p->dims[p->ndim - 1], rows = lector_tensor_numel(p) / C;
    const float *x = p->data, *v = val->data;
    const int64_t *ix = idx->data;
    int bad = 0;
    for (int64_t r = 0; r < rows && bad < 5; r++) {
        const float *row = x + r * C;
        int64_t b[2] = {0, C > 1 ? 1 : 0};
        for (int64_t c = 1; c < C; c++)
            if (ahead(row, c, b[0])) b[0] = c;
        b[1] = b[0] == 0 ? 1 : 0;
        for (int64_t c = 0; c < C; c++)
            if (c != b[0] && ahead(row, c, b[1])) b[1] = c;
        for (int k = 0; k < 2; k++) {
            float got = v[r * 2 + k];
            int same = isnan(row[b[k]]) ? isnan(got) : !memcmp(&got, &row[b[k]], sizeof(float));
            if (ix[r * 2 + k] != b[k] || !same) {
                fprintf(stderr, "%s: row %lld, place %d: class %lld value %g, expected %lld %g\n", what, (long long)r,
                        k, (long long)ix[r * 2 + k], (double)got, (long long)b[k], (double)row[b[k]]);
                bad++;
            }
        }
    }
    soft_check_failures += bad;
    printf("%-24s %lld rows of %lld, top 2: %s\n", what, (long long)rows, (long long)C, bad ? "FAIL" : "ok");
}

/* Runs `plain` and `am` on one input and compares (top: 1 argmax, 2 top 2). */
static void compare_top(lector_model *plain, lector_model *am, const lector_tensor *in, const char *what, int top)
{
    lector_tensor *po = NULL, *ao = NULL;
    size_t pn = 0, an = 0;
    lector_error err = {0};
    lector_status st = lector_model_run(plain, in, 1, &po, &pn, &err);
    CHECK(st == LECTOR_OK, "%s: plain run: %s", what, err.message);
    st = lector_model_run(am, in, 1, &ao, &an, &err);
    CHECK(st == LECTOR_OK, "%s: argmax run: %s", what, err.message);
    if (po && ao) {
        CHECK(an == 2 * pn, "%s: %zu outputs, expected %zu", what, an, 2 * pn);
        if (an == 2 * pn && top == 2) check_top2_rows(&po[0], &ao[0], &ao[1], what);
        if (an == 2 * pn && top != 2) check_rows(&po[0], &ao[0], &ao[1], what);
    }
    lector_tensors_free(po, pn);
    lector_tensors_free(ao, an);
}

/* The outputs' names, types and ranks (top: 1 argmax, 2 top 2). */
static void check_info_top(lector_model *m, const char *orig, int rank, int top)
{
    char want[256];
    if (top == 2) {
        CHECK(lector_model_num_outputs(m) == 2, "%zu outputs", lector_model_num_outputs(m));
        const lector_value_info *a = lector_model_output(m, 0), *b = lector_model_output(m, 1);
        if (!a || !b) return;
        snprintf(want, sizeof want, "%s_top2", orig);
        CHECK(!strcmp(a->name, want), "name %s", a->name);
        snprintf(want, sizeof want, "%s_top2_values", orig);
        CHECK(!strcmp(b->name, want), "name %s", b->name);
        CHECK(a->dtype == LECTOR_DTYPE_INT64 && b->dtype == LECTOR_DTYPE_FLOAT32, "dtypes %d %d", a->dtype, b->dtype);
        CHECK(a->ndim == rank && b->ndim == rank, "ranks %d %d", a->ndim, b->ndim);
        return;
    }
    CHECK(lector_model_num_outputs(m) == 2, "%zu outputs", lector_model_num_outputs(m));
    const lector_value_info *a = lector_model_output(m, 0), *b = lector_model_output(m, 1);
    if (!a || !b) return;
    snprintf(want, sizeof want, "%s_argmax", orig);
    CHECK(!strcmp(a->name, want), "name %s", a->name);
    snprintf(want, sizeof want, "%s_max", orig);
    CHECK(!strcmp(b->name, want), "name %s", b->name);
    CHECK(a->dtype == LECTOR_DTYPE_INT64 && b->dtype == LECTOR_DTYPE_FLOAT32, "dtypes %d %d", a->dtype, b->dtype);
    CHECK(a->ndim == rank - 1 && b->ndim == rank - 1, "ranks %d %d", a->ndim, b->ndim);
}

static void tiny_models(void)
{
    const int64_t dims[4] = {2, 3, 4, 5};
    float x[120];
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {2, 3, 4, 5}, x};
    const char *ops[] = {"Softmax", "Identity"};
    const int64_t opsets[] = {11, 13, 18};
    const char *backends[] = {"ref", "cpu"};
    for (int top = 1; top <= 2; top++)
        for (int oi = 0; oi < 2; oi++)
            for (int si = 0; si < 3; si++)
                for (int bi = 0; bi < 2; bi++) {
                    size_t len;
                    uint8_t *b = build_unary_model(ops[oi], "", opsets[si], dims, &len);
                    lector_model *plain = load(b, len, NULL, backends[bi], 0, 0);
                    lector_model *am = load(b, len, NULL, backends[bi], top, 0);
                    free(b);
                    if (!plain || !am) {
                        lector_model_free(plain);
                        lector_model_free(am);
                        continue;
                    }
                    CHECK(lector_model_num_outputs(plain) == 1, "plain outputs");
                    check_info_top(am, "y", 4, top);
                    char what[96];
                    snprintf(what, sizeof what, "%s-%lld on %s%s", ops[oi], (long long)opsets[si], backends[bi],
                             top == 2 ? ", top 2" : "");
                    for (int i = 0; i < 120; i++) x[i] = frand();
                    compare_top(plain, am, &in, what, top);
                    /* ties (the first wins), -0 against +0, infinities, NaN (the first
                 * NaN wins; Softmax turns a NaN row into NaNs) */
                    for (int i = 0; i < 120; i++) x[i] = (float)(int)(frand() * 2.f);
                    x[0] = -0.f, x[1] = 0.f, x[2] = -0.f, x[3] = -0.f, x[4] = -1.f;
                    x[5] = -INFINITY, x[6] = -INFINITY, x[7] = -INFINITY, x[8] = -INFINITY, x[9] = -INFINITY;
                    x[10] = 1.f, x[11] = NAN, x[12] = 2.f, x[13] = NAN, x[14] = INFINITY;
                    x[15] = INFINITY, x[16] = 1.f, x[17] = INFINITY, x[18] = 0.f, x[19] = 0.f;
                    compare_top(plain, am, &in, what, top);
                    lector_model_free(plain);
                    lector_model_free(am);
                }
}

/* An output whose rank the model does not declare stays as it is. */
static void undeclared_rank(void)
{
    const int64_t dims[4] = {1, 3, 4, 4};
    size_t len;
    uint8_t *b = build_unary_model("Softmax", "", 13, dims, &len);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, b);
    free(b);
    CHECK(mp != NULL, "unpack");
    if (!mp) return;
    Onnx__TypeProto__Tensor *tt = mp->graph->output[0]->type->tensor_type;
    Onnx__TensorShapeProto *shape = tt->shape;
    tt->shape = NULL;
    len = onnx__model_proto__get_packed_size(mp);
    b = malloc(len);
    onnx__model_proto__pack(mp, b);
    tt->shape = shape;
    onnx__model_proto__free_unpacked(mp, NULL);
    lector_model *m = load(b, len, NULL, "ref", 1, 0);
    free(b);
    if (!m) return;
    CHECK(lector_model_num_outputs(m) == 1 && !strcmp(lector_model_output(m, 0)->name, "y"),
          "an undeclared output was replaced");
    float x[48] = {0};
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 4, 4}, x};
    lector_tensor *out = NULL;
    size_t n = 0;
    lector_error err = {0};
    CHECK(lector_model_run(m, &in, 1, &out, &n, &err) == LECTOR_OK, "%s", err.message);
    CHECK(n == 1 && out[0].dtype == LECTOR_DTYPE_FLOAT32 && out[0].ndim == 4, "output");
    lector_tensors_free(out, n);
    lector_model_free(m);
}

/* The recogniser, several widths and batch sizes; plan cache of one. */
static void recogniser(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ch_PP-OCRv4_rec_infer.onnx", dir);
    const char *backends[] = {"ref", "cpu"};
    const int shapes[][2] = {{1, 80}, {2, 160}, {1, 80}, {3, 48}};
    for (int top = 1; top <= 2; top++)
        for (int bi = 0; bi < 2; bi++) {
            lector_model *plain = load(NULL, 0, path, backends[bi], 0, 1);
            lector_model *am = load(NULL, 0, path, backends[bi], top, 1);
            if (plain && am) {
                check_info_top(am, "softmax_11.tmp_0", 3, top);
                for (int s = 0; s < 4; s++) {
                    int nb = shapes[s][0], w = shapes[s][1];
                    size_t n = (size_t)nb * 3 * 48 * w;
                    float *x = malloc(n * sizeof *x);
                    for (size_t i = 0; i < n; i++) x[i] = frand();
                    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {nb, 3, 48, w}, x};
                    char what[96];
                    snprintf(what, sizeof what, "rec %dx%d on %s%s", nb, w, backends[bi], top == 2 ? ", top 2" : "");
                    compare_top(plain, am, &in, what, top);
                    free(x);
                }
            }
            lector_model_free(plain);
            lector_model_free(am);
        }
}

/* TopK's K in {1, 2, 5, 17, 40} of 40, largest and smallest, along axis 1 of
 * [3, 40, 4] (the reference kernel's one-pass selection and its sort), on
 * "ref" and "cpu": each output against the element's rank among its line,
 * counted here (NaN-free values from a small set, so ties are many). */
static void topk_any_k(void)
{
    enum { A = 3, N = 40, B = 4 };
    const int64_t dims[3] = {A, N, B};
    float x[A * N * B];
    for (int i = 0; i < A * N * B; i++) x[i] = (float)(int)(frand() * 4.f) / 2.f;
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 3, {A, N, B}, x};
    const int64_t ks[] = {1, 2, 5, 17, 40};
    const char *backends[] = {"ref", "cpu"};
    for (int ki = 0; ki < 5; ki++)
        for (int largest = 0; largest <= 1; largest++)
            for (int bi = 0; bi < 2; bi++) {
                gb *b = gb_new(13);
                gb_input(b, "x", 3, dims);
                gb_init_i64(b, "k", 1, &ks[ki]);
                char attrs[64];
                snprintf(attrs, sizeof attrs, "axis=i:1;largest=i:%d", largest);
                gb_node(b, "TopK", "x,k", "v,i", attrs);
                gb_output(b, "v");
                gb_output(b, "i");
                size_t len;
                uint8_t *bytes = gb_finish(b, &len);
                lector_model *m = load(bytes, len, NULL, backends[bi], 0, 0);
                free(bytes);
                if (!m) continue;
                lector_tensor *out = NULL;
                size_t n_out = 0;
                lector_error err = {0};
                int64_t k = ks[ki];
                CHECK(lector_model_run(m, &in, 1, &out, &n_out, &err) == LECTOR_OK, "TopK run: %s", err.message);
                int bad = 0;
                if (out && n_out == 2) {
                    CHECK(out[0].ndim == 3 && out[0].dims[1] == k && out[1].dims[1] == k, "TopK K=%lld shape",
                          (long long)k);
                    const float *v = out[0].data;
                    const int64_t *ix = out[1].data;
                    for (int a = 0; a < A; a++)
                        for (int c = 0; c < B; c++)
                            for (int e = 0; e < N; e++) { /* e's rank: how many come before it */
                                float xe = x[(a * N + e) * B + c];
                                int rank = 0;
                                for (int f = 0; f < N; f++) {
                                    float xf = x[(a * N + f) * B + c];
                                    rank += (largest ? xf > xe : xf < xe) || (xf == xe && f < e);
                                }
                                if (rank >= k) continue;
                                int64_t at = (a * k + rank) * B + c;
                                if (ix[at] != e || v[at] != xe) bad++;
                            }
                }
                soft_check_failures += bad;
                printf("TopK K=%-2lld %s on %-4s %s\n", (long long)k, largest ? "largest " : "smallest", backends[bi],
                       bad ? "FAIL" : "ok");
                lector_tensors_free(out, n_out);
                lector_model_free(m);
            }
}

/* Every allocation failing in turn while loading with output_argmax and
 * running: OK or OUT_OF_MEMORY, never a crash (LSan checks leaks). */
static void allocation_failures(void)
{
    const int64_t dims[4] = {1, 3, 4, 4};
    const int64_t opsets[] = {13, 18};
    float x[48] = {0};
    for (int si = 0; si < 4; si++) {
        size_t len;
        uint8_t *b = build_unary_model("Softmax", "", opsets[si % 2], dims, &len);
        lector_model_options o = {.backend = "ref"};
        lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 4, 4}, x};
        int oks = 0;
        CHECK(alloc_failure_sweep(b, len, "softmax.onnx", &o, si < 2 ? 1 : 2, &in, 600, &oks) == 0,
              "opset %lld, top %d", (long long)opsets[si % 2], si < 2 ? 1 : 2);
        CHECK(oks > 0, "never succeeded");
        free(b);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_output_argmax MODELS_DIR\n");
        return 2;
    }
    tiny_models();
    topk_any_k();
    undeclared_rank();
    recogniser(argv[1]);
    allocation_failures();
    return soft_check_exit("output_argmax");
}
