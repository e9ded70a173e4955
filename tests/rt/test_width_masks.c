/*
 * test_width_masks.c - a batch of text lines of different widths run
 * through the recogniser with width masks (lector_model_run_masked) gives
 * each line what it gives alone at its own width; without the masks the
 * same padded batch does not (the check can fail).
 *
 * Lines: crops of samples/sample.jpg at the boxes lector's detector finds
 * there (axis-aligned), resized to height 48 at their own width
 * (ceil(48 * w / h), nearest sample) and normalised as PaddleOCR does.
 * The oracle for each line is the plain model (no masks) run on that line
 * alone; the plain model itself is held to ONNX Runtime by parity.*.
 *
 * Then four threads run the model at once, each its own order of new
 * batch widths (the per-width cache is shared), and must get the bytes the
 * first run got (ThreadSanitizer runs this too).
 *
 * usage: test_width_masks MODELS_DIR SAMPLE_JPG BACKEND
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../soft_check.h"
#include "image/image.h"
#include "lector_rt.h"
#include "model_builder.h"

#define H 48
static const int boxes[][4] = {
    /* x0, y0, x1, y1: the first lines of sample.jpg; widths 115 to 975 at height 48 */
    {27, 37, 302, 72},   {26, 83, 173, 104},  {27, 112, 331, 135}, {26, 179, 300, 195},
    {24, 271, 180, 290}, {26, 335, 344, 352}, {27, 458, 137, 479},
};
#define N_LINES ((int)(sizeof boxes / sizeof *boxes))

/* line i as [3, H, w] floats into out (w = its width) */
static void make_line(const img_image *im, int i, float *out, int w)
{
    const int *b = boxes[i];
    int bw = b[2] - b[0], bh = b[3] - b[1];
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < w; x++) {
                int sx = b[0] + x * bw / w, sy = b[1] + y * bh / H;
                uint8_t v = im->data[(size_t)sy * im->stride + (size_t)sx * 3 + (size_t)c];
                out[((size_t)c * H + (size_t)y) * (size_t)w + (size_t)x] = ((float)v / 255.f - 0.5f) / 0.5f;
            }
}

static int width_of(int i)
{
    const int *b = boxes[i];
    return (int)ceil((double)H * (b[2] - b[0]) / (b[3] - b[1]));
}

static lector_status run(const lector_model *m, float *x, int n, int w, const int64_t *valid, lector_tensor **out,
                         int64_t *out_valid, lector_error *err)
{
    lector_tensor in = {LECTOR_DTYPE_FLOAT32, 4, {n, 3, H, w}, x};
    size_t n_out;
    return valid ? lector_model_run_masked(m, &in, 1, valid, out, &n_out, out_valid, err)
                 : lector_model_run(m, &in, 1, out, &n_out, err);
}

/* the threads' part: the masked batch at a wider tensor each time (new widths for the extent
 * cache), each line's steps compared with the first run's */
typedef struct thread_arg {
    const lector_model *m;
    const float *batch; /* N_LINES rows at width W */
    int W, seed;
    const int64_t *valid;
    const lector_tensor *want; /* the masked batch at width W */
    int bad;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    for (int r = 0; r < 3; r++) {
        int extra = 8 * ((a->seed * 3 + r) % 5 + 1), W2 = a->W + extra; /* 8..40 more columns */
        float *b2 = calloc((size_t)N_LINES * 3 * H * (size_t)W2, sizeof *b2);
        if (!b2) {
            a->bad++;
            return NULL;
        }
        for (int row = 0; row < N_LINES * 3 * H; row++)
            memcpy(b2 + (size_t)row * (size_t)W2, a->batch + (size_t)row * (size_t)a->W, sizeof *b2 * (size_t)a->W);
        lector_tensor *out = NULL;
        int64_t ov[N_LINES];
        lector_error err;
        if (run(a->m, b2, N_LINES, W2, a->valid, &out, ov, &err)) {
            fprintf(stderr, "thread %d: %s\n", a->seed, err.message);
            a->bad++;
        } else {
            int64_t T = a->want->dims[1], T2 = out[0].dims[1], C = out[0].dims[2];
            for (int i = 0; i < N_LINES; i++)
                for (int64_t t = 0; t < ov[i] && t < T; t++)
                    for (int64_t k = 0; k < C; k++) {
                        float x = ((const float *)a->want->data)[((size_t)i * (size_t)T + (size_t)t) * (size_t)C + k];
                        float y = ((const float *)out[0].data)[((size_t)i * (size_t)T2 + (size_t)t) * (size_t)C + k];
                        if (fabsf(x - y) > 1e-4f) {
                            a->bad++;
                            t = T;
                            break;
                        }
                    }
            lector_tensors_free(out, 1);
        }
        free(b2);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODELS_DIR SAMPLE_JPG BACKEND\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/ch_PP-OCRv4_rec_infer.onnx", argv[1]);
    lector_error err;
    img_pages pages;
    if (img_decode_file(argv[2], NULL, &pages, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    const img_image *im = &pages.pages[0];
    lector_model *plain = NULL, *masked = NULL;
    lector_model_options o = {.backend = argv[3], .threads = 1};
    if (lector_model_load_file(path, &o, &plain, &err)) {
        img_pages_free(&pages);
        if (err.code == LECTOR_ERR_UNAVAILABLE) {
            printf("skipped: backend %s is not available here: %s\n", argv[3], err.message);
            return 77;
        }
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    o.width_masks = 1;
    if (lector_model_load_file(path, &o, &masked, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    CHECK(lector_model_num_inputs(masked) == 1, "the masks are not the caller's inputs");
    { /* a mean over every axis, the width among them: refused, naming the node */
        const int64_t dims[4] = {-1, 3, 4, -1};
        size_t len;
        uint8_t *bytes = build_unary_model("ReduceMean", "", 13, dims, &len);
        lector_model *rm = NULL;
        lector_status st = bytes ? lector_model_load_memory(bytes, len, "reducemean", &o, &rm, &err) : LECTOR_ERR_IO;
        CHECK(st == LECTOR_ERR_UNSUPPORTED_OP && strstr(err.message, "(ReduceMean) reads across the width"),
              "ReduceMean over all axes: %s (%s)", lector_status_str(st), st ? err.message : "loaded");
        lector_model_free(rm);
        free(bytes);
    }
    { /* the detector: a free height besides the width (and upsampling along the width): refused */
        char det[4096];
        snprintf(det, sizeof det, "%s/ch_PP-OCRv4_det_infer.onnx", argv[1]);
        lector_model *dm = NULL;
        lector_status st = lector_model_load_file(det, &o, &dm, &err);
        CHECK(st == LECTOR_ERR_UNSUPPORTED_OP && strstr(err.message, "width masks: "), "det model: %s (%s)",
              lector_status_str(st), st ? err.message : "loaded");
        lector_model_free(dm);
    }

    int W = 0;
    for (int i = 0; i < N_LINES; i++)
        if (width_of(i) > W) W = width_of(i);
    float *batch = calloc((size_t)N_LINES * 3 * H * (size_t)W, sizeof *batch); /* zero padding */
    float *line = malloc(sizeof *line * 3 * H * (size_t)W);
    int64_t valid[N_LINES], out_valid[N_LINES];
    lector_tensor *alone[N_LINES];
    for (int i = 0; i < N_LINES; i++) {
        int w = width_of(i);
        valid[i] = w;
        make_line(im, i, line, w);
        for (int c = 0; c < 3 * H; c++)
            memcpy(batch + ((size_t)i * 3 * H + (size_t)c) * (size_t)W, line + (size_t)c * (size_t)w,
                   sizeof *line * (size_t)w);
        if (run(plain, line, 1, w, NULL, &alone[i], NULL, &err)) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        /* the masked model alone at its own width: the plain model's result */
        lector_tensor *one;
        int64_t one_valid = -1;
        if (run(masked, line, 1, w, &valid[i], &one, &one_valid, &err)) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        CHECK(one_valid == alone[i][0].dims[1], "line %d alone: extent %lld, the plain run's %lld steps", i,
              (long long)one_valid, (long long)alone[i][0].dims[1]);
        float d = 0;
        const float *a = alone[i][0].data, *b = one[0].data;
        for (int64_t k = 0; k < lector_tensor_numel(&alone[i][0]); k++) d = fmaxf(d, fabsf(a[k] - b[k]));
        CHECK(d <= 1e-5f, "line %d alone: masked and plain differ by %g", i, d);
        lector_tensors_free(one, 1);
    }

    lector_tensor *mix = NULL, *pad = NULL;
    if (run(masked, batch, N_LINES, W, valid, &mix, out_valid, &err) ||
        run(plain, batch, N_LINES, W, NULL, &pad, NULL, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    int64_t T = mix[0].dims[1], C = mix[0].dims[2];
    float worst_masked = 0, worst_padded = 0;
    int same_text_padded = 0;
    for (int i = 0; i < N_LINES; i++) {
        int64_t t_alone = alone[i][0].dims[1];
        CHECK(out_valid[i] == t_alone, "line %d: extent %lld in the batch, %lld steps alone", i,
              (long long)out_valid[i], (long long)t_alone);
        const float *a = alone[i][0].data;
        float dm = 0, dp = 0;
        int same_m = 1, same_p = 1;
        for (int64_t t = 0; t < t_alone && t < T; t++) {
            const float *pa = a + t * C, *pm = (const float *)mix[0].data + ((size_t)i * (size_t)T + (size_t)t) * C,
                        *pp = (const float *)pad[0].data + ((size_t)i * (size_t)T + (size_t)t) * C;
            int am = 0, ap = 0, aa = 0;
            for (int64_t k = 0; k < C; k++) {
                dm = fmaxf(dm, fabsf(pa[k] - pm[k]));
                dp = fmaxf(dp, fabsf(pa[k] - pp[k]));
                if (pa[k] > pa[aa]) aa = (int)k;
                if (pm[k] > pm[am]) am = (int)k;
                if (pp[k] > pp[ap]) ap = (int)k;
            }
            same_m &= am == aa;
            same_p &= ap == aa;
        }
        CHECK(same_m, "line %d: its best class per step differs in the masked batch", i);
        CHECK(dm <= 1e-4f, "line %d: the masked batch differs from the line alone by %g", i, dm);
        printf("line %d: width %lld, %lld steps: masked batch max |diff| %.2g, padded batch %.2g%s\n", i,
               (long long)valid[i], (long long)t_alone, dm, dp, same_p ? "" : " (other classes)");
        worst_masked = fmaxf(worst_masked, dm);
        worst_padded = fmaxf(worst_padded, dp);
        same_text_padded += same_p;
    }
    { /* the arena of a masked batch (what a GPU engine sizes its batches by) and its timing:
       * the plan the batch above ran, from the cache, nothing compiled */
        lector_model_stats before, after;
        lector_model_get_stats(masked, &before);
        lector_tensor shape = {LECTOR_DTYPE_FLOAT32, 4, {N_LINES, 3, H, W}, NULL};
        size_t bytes = 0;
        lector_status st = lector_model_arena_bytes(masked, &shape, 1, &bytes, &err);
        CHECK(st == LECTOR_OK && bytes > 0, "arena bytes of the masked batch: %s (%s)", lector_status_str(st),
              st ? err.message : "0 bytes");
        shape.data = batch;
        double ms = 0;
        st = lector_model_time(masked, &shape, 1, 1, &ms, NULL, 0, &err);
        CHECK(st == LECTOR_OK && ms > 0, "timing the masked batch: %s (%s)", lector_status_str(st),
              st ? err.message : "0 ms");
        lector_model_get_stats(masked, &after);
        CHECK(after.plans_compiled == before.plans_compiled, "%llu plans compiled for a shape already run",
              (unsigned long long)(after.plans_compiled - before.plans_compiled));
    }
    /* four threads at once, each batch wider by its own amount: the same lines' results */
    thread_arg args[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        args[k] = (thread_arg){masked, batch, W, k, valid, &mix[0], 0};
        pthread_create(&th[k], NULL, thread_main, &args[k]);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        CHECK(args[k].bad == 0, "thread %d: %d runs or lines unlike the first run", k, args[k].bad);
    }
    /* the control: padding without the masks moves the lines that are not the widest */
    CHECK(worst_padded > 100 * fmaxf(worst_masked, 1e-6f), "padded batch %g against masked %g: the check cannot tell",
          worst_padded, worst_masked);
    printf("padded without masks: %d of %d lines with the same classes as alone\n", same_text_padded, N_LINES);

    for (int i = 0; i < N_LINES; i++) {
        lector_tensors_free(alone[i], 1);
    }
    lector_tensors_free(mix, 1);
    lector_tensors_free(pad, 1);
    free(batch);
    free(line);
    lector_model_free(plain);
    lector_model_free(masked);
    img_pages_free(&pages);
    return soft_check_exit("rt.width_masks");
}
