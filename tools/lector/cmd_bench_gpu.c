/*
 * cmd_bench_gpu.c - `lector bench gpu` (per model, on a device) and
 * `lector bench pipeline` (end to end, any device).
 *
 *   lector bench gpu [--device cuda[:N]] [--models DIR] [--batches 1,8,32]
 *                    [--only det|rec|cls] [--runs N] [--fp16] [--json]
 *     The shapes of ../shared/peers/torch_onnx.py (det 1x3x960x960, rec
 *     6x3x48x320, cls 6x3x48x192) times each batch multiple. Two figures per
 *     row, medians over N runs after 3 warm-ups: `device_ms`, the model on
 *     the GPU with its input already there (lector_model_time: CUDA events
 *     around each run, the input's and output's storage conversions
 *     included), which is how the peer times PyTorch; and `ms`, one
 *     lector_model_run() from host tensors to host tensors (input upload and
 *     output download included).
 *
 *   lector bench pipeline [--device cpu|auto|cuda[:N]] [--workers W] [--det-batch B]
 *                         [--threads T] [--models DIR] [--rounds R] [--json] IMAGE...
 *     The images R times over through one stream (lector_stream_*, the
 *     driver every entry point uses) of W workers (0: the engine's default),
 *     each inference with T threads, detection batched up to B pages of one
 *     input size: pages/s = pages / wall seconds after a warm-up pass (one
 *     pass over the images); p50/p99 latency from an input's push to its
 *     delivery; median per-stage times; what the engine compiled in the
 *     warm-up and in the timed run (nothing, once every shape has been seen).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lector.h"
#include "lector_rt.h"
#include "util/util.h"

static void fill_uniform(float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((s >> 40) & 0xffffff) / 16777216.f; /* [0, 1), as the peer's rand() */
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

static int bench_gpu(int argc, char **argv)
{
    const char *models = NULL, *device = "cuda", *only = NULL;
    int runs = 20, json = 0, fp16 = 0, batches[8] = {1, 8, 32}, nb = 3;
    const char *batch_list = NULL;
    const cli_opt opts[] = {{"--json", CLI_FLAG, &json},         {"--fp16", CLI_FLAG, &fp16},
                            {"--runs", CLI_INT, &runs},          {"--models", CLI_STR, &models},
                            {"--device", CLI_STR, &device},      {"--only", CLI_STR, &only},
                            {"--batches", CLI_STR, &batch_list}, {NULL, CLI_FLAG, NULL}};
    if (cli_opts_parse("lector bench gpu", opts, argc, argv, 2, NULL, NULL)) return 2;
    if (batch_list) { /* "1,8,32" */
        nb = 0;
        for (char *s = (char *)batch_list; *s && nb < 8;) {
            batches[nb++] = (int)strtol(s, &s, 10);
            if (*s != ',') break;
            s++;
        }
    }
    if (runs < 1) runs = 1;
    char models_dir[4096];
    if (cli_models_dir("lector bench gpu", models, models_dir, sizeof models_dir)) return 1;
    models = models_dir;
    static const struct {
        const char *name, *file;
        int64_t dims[4];
    } base[] = {
        {"det", "ch_PP-OCRv4_det_infer.onnx", {1, 3, 960, 960}},
        {"rec", "ch_PP-OCRv4_rec_infer.onnx", {6, 3, 48, 320}},
        {"cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", {6, 3, 48, 192}},
    };
    if (!json)
        printf("%-4s %-20s %-10s %11s %12s %12s   (median of %d runs, device %s)\n", "model", "shape", "plan",
               "device_ms", "host_ms", "items/s", runs, device);
    int rc = 0;
    for (size_t m = 0; m < sizeof base / sizeof *base; m++) {
        if (only && strcmp(only, base[m].name)) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", models, base[m].file);
        lector_model_options o = {.backend = device, .fp16 = fp16};
        lector_model *model;
        lector_error err;
        if (lector_model_load_file(path, &o, &model, &err)) {
            fprintf(stderr, "lector bench gpu: %s\n", err.message);
            return 1;
        }
        for (int b = 0; b < nb; b++) {
            lector_tensor in = {LECTOR_DTYPE_FLOAT32,
                                4,
                                {base[m].dims[0] * batches[b], base[m].dims[1], base[m].dims[2], base[m].dims[3]},
                                NULL};
            size_t n = (size_t)lector_tensor_numel(&in);
            in.data = malloc(n * sizeof(float));
            double *t = calloc((size_t)runs, sizeof *t), *td = calloc((size_t)runs, sizeof *td);
            if (!in.data || !t || !td) return 1;
            fill_uniform(in.data, n, 7 + m);
            lector_status st = LECTOR_OK;
            for (int r = -3; r < runs && !st; r++) {
                lector_tensor *out;
                size_t nout;
                double t0 = lector__now_ms();
                st = lector_model_run(model, &in, 1, &out, &nout, &err);
                if (!st) lector_tensors_free(out, nout);
                if (r >= 0) t[r] = lector__now_ms() - t0;
            }
            char mode[32] = "";
            if (!st) st = lector_model_time(model, &in, 1, runs, td, mode, sizeof mode, &err);
            if (st) {
                fprintf(stderr, "lector bench gpu: %s batch %d: %s\n", base[m].name, batches[b], err.message);
                rc = 1;
            } else {
                double ms = cli_median(t, runs), dms = cli_median(td, runs), items = (double)in.dims[0] * 1000.0 / dms;
                char shape[64];
                snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)in.dims[0], (long long)in.dims[1],
                         (long long)in.dims[2], (long long)in.dims[3]);
                if (json)
                    printf("{\"model\": \"%s\", \"batch_multiple\": %d, \"shape\": \"%s\", \"precision\": \"%s\", "
                           "\"plan\": \"%s\", \"device_ms\": %.3f, \"ms\": %.3f, \"items_per_s\": %.1f, "
                           "\"device\": \"%s\"}\n",
                           base[m].name, batches[b], shape, fp16 ? "fp16" : "fp32", mode, dms, ms, items, device);
                else
                    printf("%-4s %-20s %-10s %11.3f %12.3f %12.1f\n", base[m].name, shape, mode, dms, ms, items);
                fflush(stdout);
            }
            free(t);
            free(td);
            free(in.data);
        }
        lector_model_free(model);
    }
    return rc;
}

/* One timed input of the pipeline benchmark. */
typedef struct pipe_item {
    double pushed; /* when it was pushed */
} pipe_item;

typedef struct pipe_ctx {
    pipe_item *items;
    double *lat;         /* per input: push to delivery */
    lector_timings *tim; /* per input */
    int pages, errors;
    long lines;
} pipe_ctx;

static void pipe_result(const lector_stream_item *it, void *user)
{
    pipe_ctx *c = user;
    pipe_item *pi = it->user;
    if (it->status) {
        fprintf(stderr, "lector bench pipeline: %s\n", it->error->message);
        c->errors++;
        return;
    }
    if (c->lat) {
        c->lat[it->index] = lector__now_ms() - pi->pushed;
        c->tim[it->index] = it->result->timings;
    }
    c->pages += (int)it->result->n_pages;
    for (size_t i = 0; i < it->result->n_pages; i++) c->lines += (long)it->result->pages[i].n_lines;
    lector_result_free(it->result);
}

/* Reads the images `rounds` times over through one stream; 0 or the failed status. */
static lector_status pipe_run(lector_engine *e, int workers, char **images, int n, int rounds, pipe_ctx *c,
                              lector_error *err)
{
    lector_stream_options so = lector_default_stream_options();
    so.workers = workers;
    lector_stream *s;
    lector_status st = lector_stream_create(e, &so, pipe_result, c, &s, err);
    if (st) return st;
    for (int k = 0; k < n * rounds && !st; k++) {
        if (c->items) c->items[k].pushed = lector__now_ms();
        st = lector_stream_push_file(s, images[k % n], c->items ? &c->items[k] : NULL, err);
    }
    lector_stream_free(s);
    return st;
}

/* Activation arenas the engine's models allocated so far: after warm-up a
 * steady stream allocates none (each GPU allocation and free stalls the
 * device). */
static unsigned long long arenas_of(const lector_engine_stats *s)
{
    return s ? s->det.arenas_allocated + s->cls.arenas_allocated + s->rec.arenas_allocated +
                   s->rec_fp32.arenas_allocated
             : 0;
}

static void compiled_json(const char *key, const lector_engine_stats *a, const lector_engine_stats *b)
{
    printf("\"%s\": {\"plans\": %llu, \"kernels\": %llu, \"arenas\": %llu}", key,
           (unsigned long long)(b->plans_compiled - (a ? a->plans_compiled : 0)),
           (unsigned long long)(b->kernels_compiled - (a ? a->kernels_compiled : 0)), arenas_of(b) - arenas_of(a));
}

static int bench_pipeline(int argc, char **argv)
{
    lector_params p = lector_default_params();
    int rounds = 1, json = 0;
    char **images = calloc((size_t)argc, sizeof *images);
    int n = 0;
    if (!images) return 1;
    const char *device = NULL;
    int fp16_det = 0;
    const cli_opt opts[] = {{"--json", CLI_FLAG, &json},
                            {"--workers", CLI_INT, &p.workers},
                            {"--rounds", CLI_INT, &rounds},
                            {"--batch", CLI_INT, &p.det_batch_num},
                            {"--det-batch", CLI_INT, &p.det_batch_num},
                            {"--threads", CLI_INT, &p.threads},
                            {"--models", CLI_STR, &p.models_dir},
                            {"--fp16", CLI_FLAG, &p.gpu_fp16},
                            {"--fp16-det", CLI_FLAG, &fp16_det},
                            {"--fp16-recheck", CLI_FLOAT, &p.gpu_fp16_recheck},
                            {"--fp16-margin", CLI_FLOAT, &p.gpu_fp16_margin},
                            {"--use-angle-cls", CLI_FLAG, &p.use_angle_cls},
                            {"--rec-width-bucket", CLI_INT, &p.rec_width_bucket},
                            {"--device", CLI_STR, &device},
                            {NULL, CLI_FLAG, NULL}};
    if (cli_opts_parse("lector bench pipeline", opts, argc, argv, 2, images, &n) ||
        (device && cli_parse_device("lector bench pipeline", device, &p))) {
        free(images);
        return 2;
    }
    if (fp16_det) p.gpu_fp16 = p.gpu_fp16_det = 1;
    if (!n || p.workers < 0 || rounds < 1 || p.det_batch_num < 1 || p.det_batch_num > 64) {
        fprintf(stderr, "usage: lector bench pipeline [--device D] [--workers W] [--threads T] [--det-batch B (1..64)] "
                        "[--rounds R] [--use-angle-cls] [--fp16] [--fp16-det] [--fp16-recheck F] [--fp16-margin F] "
                        "[--rec-width-bucket N] "
                        "[--json] IMAGE...\n");
        free(images);
        return 2;
    }
    lector_engine *e;
    lector_error err;
    double t_load = lector__now_ms();
    if (lector_engine_create(&p, &e, &err)) {
        fprintf(stderr, "lector bench pipeline: %s\n", err.message);
        free(images);
        return 1;
    }
    t_load = lector__now_ms() - t_load;
    int total = n * rounds;
    /* warm-up: one pass over the images compiles every plan the run needs */
    pipe_ctx warm = {0};
    double t_warm = lector__now_ms();
    lector_status st = pipe_run(e, 0, images, n, 1, &warm, &err);
    t_warm = lector__now_ms() - t_warm;
    lector_engine_stats s_warm, s_end;
    lector_engine_get_stats(e, &s_warm);
    pipe_ctx c = {.items = calloc((size_t)total, sizeof(pipe_item)),
                  .lat = calloc((size_t)total, sizeof(double)),
                  .tim = calloc((size_t)total, sizeof(lector_timings))};
    if (!c.items || !c.lat || !c.tim) return 1;
    double t0 = lector__now_ms();
    if (!st) st = pipe_run(e, 0, images, n, rounds, &c, &err);
    double wall = lector__now_ms() - t0;
    if (st) {
        fprintf(stderr, "lector bench pipeline: %s\n", err.message);
        c.errors++;
    }
    lector_engine_get_stats(e, &s_end);
    double *v = calloc((size_t)total, sizeof *v);
    if (!v) return 1;
    double stm[5];
    for (int k5 = 0; k5 < 5; k5++) {
        for (int k = 0; k < total; k++) {
            const lector_timings *t = &c.tim[k];
            v[k] = k5 == 0   ? t->decode_ms
                   : k5 == 1 ? t->det_ms
                   : k5 == 2 ? t->cls_ms
                   : k5 == 3 ? t->rec_ms
                             : t->total_ms;
        }
        stm[k5] = pct(v, total, 0.5);
    }
    double p50 = pct(c.lat, total, 0.5), p99 = pct(c.lat, total, 0.99);
    /* each model's runs in the timed rounds: lines a rec run say how full its batches were */
    unsigned long long det_runs = s_end.det.runs - s_warm.det.runs, cls_runs = s_end.cls.runs - s_warm.cls.runs,
                       rec_runs = s_end.rec.runs - s_warm.rec.runs,
                       rec32_runs = s_end.rec_fp32.runs - s_warm.rec_fp32.runs; /* fp16's rechecks */
    double pps = c.pages * 1000.0 / wall;
    int workers = p.workers ? p.workers : lector_engine_workers(e);
    if (json) {
        printf("{\"device\": \"%s\", \"workers\": %d, \"det_batch\": %d, \"images\": %d, \"rounds\": %d, "
               "\"pages\": %d, \"errors\": %d, \"wall_s\": %.3f, \"pages_per_s\": %.1f, \"p50_ms\": %.2f, "
               "\"p99_ms\": %.2f, \"stage_median_ms\": {\"decode\": %.2f, \"det\": %.2f, \"cls\": %.2f, "
               "\"rec\": %.2f, \"total\": %.2f}, \"load_ms\": %.0f, \"warmup_ms\": %.0f, ",
               lector_engine_device(e), workers, p.det_batch_num, n, rounds, c.pages, c.errors, wall / 1e3, pps, p50,
               p99, stm[0], stm[1], stm[2], stm[3], stm[4], t_load, t_warm);
        compiled_json("compiled_warmup", NULL, &s_warm);
        printf(", ");
        compiled_json("compiled_run", &s_warm, &s_end);
        printf(", \"lines\": %ld, \"runs\": {\"det\": %llu, \"cls\": %llu, \"rec\": %llu, \"rec_fp32\": %llu}}\n",
               c.lines, det_runs, cls_runs, rec_runs, rec32_runs);
    } else {
        printf("device %s, %d workers: %d pages in %.2f s = %.1f pages/s; latency p50 %.1f ms, p99 %.1f ms; "
               "median stages: decode %.1f, det %.1f, cls %.1f, rec %.1f ms; compiled in warm-up %llu plans, "
               "%llu kernels, %llu arenas, then %llu plans, %llu kernels, %llu arenas; %d errors\n",
               lector_engine_device(e), workers, c.pages, wall / 1e3, pps, p50, p99, stm[0], stm[1], stm[2], stm[3],
               (unsigned long long)s_warm.plans_compiled, (unsigned long long)s_warm.kernels_compiled,
               arenas_of(&s_warm), (unsigned long long)(s_end.plans_compiled - s_warm.plans_compiled),
               (unsigned long long)(s_end.kernels_compiled - s_warm.kernels_compiled),
               arenas_of(&s_end) - arenas_of(&s_warm), c.errors);
        printf("%ld lines; model runs: det %llu, cls %llu, rec %llu (%.1f lines a rec run)", c.lines, det_runs,
               cls_runs, rec_runs, rec_runs ? (double)c.lines / (double)rec_runs : 0.0);
        if (rec32_runs) printf(", rec in fp32 again %llu (lines uncertain in fp16)", rec32_runs);
        printf("\n");
    }
    free(v);
    free(c.items);
    free(c.lat);
    free(c.tim);
    lector_engine_free(e);
    free(images);
    return c.errors || warm.errors ? 1 : 0;
}

int cmd_bench_gpu(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "gpu")) return bench_gpu(argc, argv);
    return bench_pipeline(argc, argv);
}
