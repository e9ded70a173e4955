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
 *   lector bench pipeline [--device cpu|auto|cuda[:N]] [--workers W] [--batch B]
 *                         [--threads T] [--models DIR] [--rounds R] [--json] IMAGE...
 *     One engine shared by W worker threads that read (decode + OCR) the
 *     images R times over: pages/s = pages / wall seconds after a warm-up
 *     pass; p50/p99 latency per read; median per-stage times. With --batch B
 *     each worker reads B files per lector_read_batch() call, detection
 *     batched too (det_batch_num = B); latency is then per call.
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
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--fp16"))
            fp16 = 1;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--models") && i + 1 < argc)
            models = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) {
            nb = 0;
            for (char *s = argv[++i]; *s && nb < 8;) {
                batches[nb++] = (int)strtol(s, &s, 10);
                if (*s == ',')
                    s++;
                else
                    break;
            }
        } else {
            fprintf(stderr, "lector bench gpu: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    char models_dir[4096];
    lector_error merr;
    if (lector_find_models(models, models_dir, sizeof models_dir, &merr)) {
        fprintf(stderr, "lector bench gpu: %s\n", merr.message);
        return 1;
    }
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

typedef struct pipe_ctx {
    lector_engine *e;
    char **images;
    void **bytes; /* --batch: the files, read once */
    size_t *sizes;
    int n_images, rounds, batch;
    atomic_int next;
    double *lat;         /* per read */
    lector_timings *tim; /* per read */
    atomic_int pages, errors;
} pipe_ctx;

static void *pipe_worker(void *arg)
{
    pipe_ctx *c = arg;
    int b = c->batch > 1 ? c->batch : 1;
    for (;;) {
        int k = atomic_fetch_add(&c->next, b);
        if (k >= c->n_images * c->rounds) break;
        int m = c->n_images * c->rounds - k < b ? c->n_images * c->rounds - k : b;
        double t0 = lector__now_ms();
        if (b == 1) {
            lector_result *r = NULL;
            lector_error err;
            if (lector_read_file(c->e, c->images[k % c->n_images], NULL, &r, &err)) {
                fprintf(stderr, "lector bench pipeline: %s\n", err.message);
                atomic_fetch_add(&c->errors, 1);
                continue;
            }
            c->lat[k] = lector__now_ms() - t0;
            c->tim[k] = r->timings;
            atomic_fetch_add(&c->pages, (int)r->n_pages);
            lector_result_free(r);
            continue;
        }
        lector_batch_input in[64];
        lector_result *r[64];
        lector_status st[64];
        lector_error errs[64];
        for (int q = 0; q < m; q++) {
            int i = (k + q) % c->n_images;
            in[q] = (lector_batch_input){c->bytes[i], c->sizes[i], c->images[i]};
        }
        if (lector_read_batch(c->e, in, (size_t)m, NULL, r, st, errs)) {
            fprintf(stderr, "lector bench pipeline: %s\n", errs[0].message);
            atomic_fetch_add(&c->errors, m);
            continue;
        }
        double dt = lector__now_ms() - t0;
        for (int q = 0; q < m; q++) {
            if (st[q]) {
                fprintf(stderr, "lector bench pipeline: %s\n", errs[q].message);
                atomic_fetch_add(&c->errors, 1);
                continue;
            }
            c->lat[k + q] = dt;
            c->tim[k + q] = r[q]->timings;
            atomic_fetch_add(&c->pages, (int)r[q]->n_pages);
            lector_result_free(r[q]);
        }
    }
    return NULL;
}

static int bench_pipeline(int argc, char **argv)
{
    lector_params p = lector_default_params();
    int workers = 1, rounds = 1, json = 0, batch = 1;
    char **images = calloc((size_t)argc, sizeof *images);
    int n = 0;
    if (!images) return 1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--workers") && i + 1 < argc)
            workers = atoi(argv[++i]);
        else if (!strcmp(a, "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(a, "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(a, "--threads") && i + 1 < argc)
            p.threads = atoi(argv[++i]);
        else if (!strcmp(a, "--models") && i + 1 < argc)
            p.models_dir = argv[++i];
        else if (!strcmp(a, "--fp16"))
            p.gpu_fp16 = 1;
        else if (!strcmp(a, "--fp16-det"))
            p.gpu_fp16 = p.gpu_fp16_det = 1;
        else if (!strcmp(a, "--fp16-recheck") && i + 1 < argc)
            p.gpu_fp16_recheck = (float)atof(argv[++i]);
        else if (!strcmp(a, "--device") && i + 1 < argc) {
            if (cli_parse_device("lector bench pipeline", argv[++i], &p)) {
                free(images);
                return 2;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "lector bench pipeline: unknown option '%s'\n", a);
            free(images);
            return 2;
        } else
            images[n++] = argv[i];
    }
    if (!n || workers < 1 || rounds < 1 || batch < 1 || batch > 64) {
        fprintf(stderr, "usage: lector bench pipeline [--device D] [--workers W] [--batch B (1..64)] [--threads T] "
                        "[--rounds R] [--fp16] [--fp16-det] [--fp16-recheck F] [--json] IMAGE...\n");
        free(images);
        return 2;
    }
    p.det_batch_num = batch;
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
    pipe_ctx c = {.e = e, .images = images, .n_images = n, .rounds = 1, .batch = batch};
    if (batch > 1) {
        c.bytes = calloc((size_t)n, sizeof *c.bytes);
        c.sizes = calloc((size_t)n, sizeof *c.sizes);
        if (!c.bytes || !c.sizes) return 1;
        for (int i = 0; i < n; i++)
            if (lector__read_file(images[i], 0, (uint8_t **)&c.bytes[i], &c.sizes[i], &err)) {
                fprintf(stderr, "lector bench pipeline: %s\n", err.message);
                for (int j = 0; j < i; j++) lector__free(c.bytes[j]);
                free(c.bytes);
                free(c.sizes);
                lector_engine_free(e);
                free(images);
                return 1;
            }
    }
    c.lat = calloc((size_t)total, sizeof *c.lat);
    c.tim = calloc((size_t)total, sizeof *c.tim);
    pthread_t *th = calloc((size_t)workers, sizeof *th);
    if (!c.lat || !c.tim || !th) return 1;
    /* warm-up: one pass over the images compiles every plan the run needs */
    double t_warm = lector__now_ms();
    for (int w = 0; w < workers; w++) pthread_create(&th[w], NULL, pipe_worker, &c);
    for (int w = 0; w < workers; w++) pthread_join(th[w], NULL);
    t_warm = lector__now_ms() - t_warm;
    atomic_store(&c.next, 0);
    atomic_store(&c.pages, 0);
    c.rounds = rounds;
    double t0 = lector__now_ms();
    for (int w = 0; w < workers; w++) pthread_create(&th[w], NULL, pipe_worker, &c);
    for (int w = 0; w < workers; w++) pthread_join(th[w], NULL);
    double wall = lector__now_ms() - t0;
    int pages = atomic_load(&c.pages), errors = atomic_load(&c.errors);
    double *v = calloc((size_t)total, sizeof *v);
    if (!v) return 1;
    double st[5];
    for (int s = 0; s < 5; s++) {
        for (int k = 0; k < total; k++) {
            const lector_timings *t = &c.tim[k];
            v[k] = s == 0 ? t->decode_ms : s == 1 ? t->det_ms : s == 2 ? t->cls_ms : s == 3 ? t->rec_ms : t->total_ms;
        }
        st[s] = pct(v, total, 0.5);
    }
    double p50 = pct(c.lat, total, 0.5), p99 = pct(c.lat, total, 0.99);
    double pps = pages * 1000.0 / wall;
    if (json)
        printf("{\"device\": \"%s\", \"workers\": %d, \"batch\": %d, \"images\": %d, \"rounds\": %d, \"pages\": %d, "
               "\"errors\": %d, "
               "\"wall_s\": %.3f, \"pages_per_s\": %.1f, \"p50_ms\": %.2f, \"p99_ms\": %.2f, \"stage_median_ms\": "
               "{\"decode\": %.2f, \"det\": %.2f, \"cls\": %.2f, \"rec\": %.2f, \"total\": %.2f}, \"load_ms\": %.0f, "
               "\"warmup_ms\": %.0f}\n",
               lector_engine_device(e), workers, batch, n, rounds, pages, errors, wall / 1e3, pps, p50, p99, st[0],
               st[1], st[2], st[3], st[4], t_load, t_warm);
    else
        printf("device %s, %d workers: %d pages in %.2f s = %.1f pages/s; latency p50 %.1f ms, p99 %.1f ms; "
               "median stages: decode %.1f, det %.1f, cls %.1f, rec %.1f ms; %d errors\n",
               lector_engine_device(e), workers, pages, wall / 1e3, pps, p50, p99, st[0], st[1], st[2], st[3], errors);
    free(v);
    for (int i = 0; c.bytes && i < n; i++) lector__free(c.bytes[i]);
    free(c.bytes);
    free(c.sizes);
    free(th);
    free(c.lat);
    free(c.tim);
    lector_engine_free(e);
    free(images);
    return errors ? 1 : 0;
}

int cmd_bench_gpu(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "gpu")) return bench_gpu(argc, argv);
    return bench_pipeline(argc, argv);
}
