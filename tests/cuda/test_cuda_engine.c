/*
 * test_cuda_engine.c - the OCR engine on the GPU, through the public API,
 * against the same engine on the CPU (itself held to ONNX Runtime and to the
 * peers' strings by the parity and accuracy tests).
 *
 *   test_cuda_engine MODE --models DIR IMAGE...
 *
 * MODE:
 *   same     every image: the GPU lines equal the CPU lines (text and box)
 *   fault    run with LECTOR_CUDA_FAIL=launch:N or alloc:N: some read fails
 *            with a status (never a crash), every later read equals the CPU's
 *   oom      an engine with a 24 MiB GPU cap: reads fail with
 *            LECTOR_ERR_OUT_OF_MEMORY; then a 4 GiB cap: reads succeed
 *   threads  one GPU engine shared by 16 threads, 4 rounds over the images:
 *            every result equals the single-threaded one
 *   memory   N reads (--reads N, default 200): device memory held through
 *            Lector and the process RSS after the warm-up and at the end
 *            (the recogniser and the classifier may allocate no arena
 *            after the warm-up, and GPU memory may grow by 1% at most:
 *            the engine made their arenas ahead, unless
 *            LECTOR_GPU_RESERVE=0);
 *            then lector_engine_trim: the memory Lector stops counting must
 *            come back to the driver (the GPU's free memory as the CUDA
 *            driver reports it, cuMemGetInfo), not stay in a pool
 *   callers  an engine made as `lector serve` makes it (workers 1, callers
 *            16: each read runs in its caller's thread) read by 16 threads
 *            at once, 4 rounds: every result equals the CPU's, and the
 *            recogniser and the classifier allocate no arena after the
 *            engine's warm-up, which made them for 16 runs ahead
 *            (--callers N: another count; 0 shows the growth it prevents)
 *   batch    lector_read_batch over all images on a GPU engine with
 *            det_batch_num 4 (same-size pages share detection runs, their
 *            inputs made on the GPU together): every image's lines equal the
 *            CPU's single reads
 *   inputs   the cls and rec models on the GPU, their input made on the GPU
 *            from the page's bytes (lector_model_run_images: warp, turns,
 *            resize, normalisation) against the same models given the
 *            input the CPU path makes for the same boxes (the crops of the
 *            GPU engine's lines, each also turned 180 degrees): the outputs
 *            must be equal bit for bit
 *
 * --fp16 runs the GPU engine in half precision: `same` then passes when at
 * least 99.5% of the CPU's lines have their text on the same page (the
 * others are listed), and the other modes compare with the single-threaded
 * half-precision engine.
 * With LECTOR_CUDA_CHECK=1 every GPU step is also checked against the
 * reference kernels as it runs (cuda_check.c): `same` fails on the first
 * step over its bound.
 *
 * Exit: 0 pass, 1 fail, 77 "skipped: no GPU".
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "lector.h"
#include "lector_rt_image.h"
#include "ocr/preprocess.h"

#define SKIP       77
#define MAX_IMAGES 64

static const char *models;
static const char *images[MAX_IMAGES];
static int n_images;
static char *cpu_text[MAX_IMAGES]; /* reference results, one string per image */
static int fp16;

/* All lines of a result as one string: text and integer box per line. */
static char *flatten(const lector_result *r)
{
    size_t cap = 1024, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    for (size_t p = 0; p < r->n_pages; p++)
        for (size_t i = 0; i < r->pages[p].n_lines; i++) {
            const lector_line *l = &r->pages[p].lines[i];
            char buf[1024];
            int n = snprintf(buf, sizeof buf, "%s @%.0f,%.0f,%.0f,%.0f\n", l->text, l->box[0].x, l->box[0].y,
                             l->box[2].x, l->box[2].y);
            if (n < 0) continue;
            while (len + (size_t)n + 1 > cap) {
                cap *= 2;
                char *ns = realloc(s, cap);
                if (!ns) {
                    free(s);
                    return NULL;
                }
                s = ns;
            }
            memcpy(s + len, buf, (size_t)n + 1);
            len += (size_t)n;
        }
    return s;
}

static lector_status make_engine(lector_device dev, size_t cap, lector_engine **e, lector_error *err)
{
    lector_params p = lector_default_params();
    p.models_dir = models;
    p.device = dev;
    p.gpu_mem_limit = cap;
    p.gpu_fp16 = dev == LECTOR_DEVICE_CUDA && fp16;
    p.threads = 2;
    return lector_engine_create(&p, e, err);
}

static int read_flat(lector_engine *e, const char *path, char **out, lector_error *err)
{
    lector_result *r = NULL;
    *out = NULL;
    lector_status st = lector_read_file(e, path, NULL, &r, err);
    if (st) return (int)st;
    *out = flatten(r);
    lector_result_free(r);
    return *out ? 0 : (int)LECTOR_ERR_OUT_OF_MEMORY;
}

static int cpu_reference(void)
{
    lector_engine *e;
    lector_error err;
    if (make_engine(LECTOR_DEVICE_CPU, 0, &e, &err)) {
        printf("FAIL cpu engine: %s\n", err.message);
        return 1;
    }
    for (int i = 0; i < n_images; i++)
        if (read_flat(e, images[i], &cpu_text[i], &err)) {
            printf("FAIL cpu read %s: %s\n", images[i], err.message);
            lector_engine_free(e);
            return 1;
        }
    lector_engine_free(e);
    return 0;
}

static int gpu_engine(size_t cap, lector_engine **e)
{
    lector_error err;
    lector_status st = make_engine(LECTOR_DEVICE_CUDA, cap, e, &err);
    if (st == LECTOR_ERR_UNAVAILABLE) {
        printf("skipped: no GPU: %s\n", err.message);
        return SKIP;
    }
    if (st) {
        printf("FAIL gpu engine: %s: %s\n", lector_status_str(st), err.message);
        return 1;
    }
    printf("engine: %s\n", lector_engine_device(*e));
    return 0;
}

static int compare(int i, const char *got, const char *what)
{
    if (!strcmp(got, cpu_text[i])) return 0;
    printf("FAIL %s %s: GPU lines differ from the CPU's\n--- cpu\n%s--- gpu\n%s", what, images[i], cpu_text[i], got);
    return 1;
}

/* The text of line k of a flattened result (up to " @"), or NULL past the end. */
static const char *line_text(const char *flat, int k, int *len)
{
    const char *p = flat;
    for (int i = 0; i < k && p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p || !*p) return NULL;
    const char *end = strchr(p, '\n'), *at = p;
    for (const char *q = p; q < end; q++)
        if (q[0] == ' ' && q[1] == '@') at = q;
    *len = (int)((at > p ? at : end) - p);
    return p;
}

/* Lines of result `got` whose text (up to " @") equals that of a line of the
 * CPU's result `want` not matched yet: a moved box may reorder lines, it does
 * not change them. The CPU's lines that found no match are printed. */
static int same_texts(const char *want, const char *got, const char *image, int *lines)
{
    int nw = 0, same = 0;
    for (int k = 0; line_text(want, k, &(int){0}); k++) nw++;
    char *used = calloc((size_t)nw + 1, 1);
    for (int k = 0;; k++) {
        int lb = 0;
        const char *b = line_text(got, k, &lb);
        if (!b) break;
        for (int q = 0; q < nw; q++) {
            int la = 0;
            const char *a = line_text(want, q, &la);
            if (used && !used[q] && la == lb && !memcmp(a, b, (size_t)la)) {
                used[q] = 1;
                same++;
                break;
            }
        }
    }
    for (int q = 0; used && q < nw; q++)
        if (!used[q]) {
            int la = 0;
            const char *a = line_text(want, q, &la);
            printf("differs: %s: the CPU's line '%.*s' has no equal on the GPU\n", image, la, a);
        }
    free(used);
    *lines += nw;
    return same;
}

/* fp32: every image's lines equal the CPU's (text and box); fp16: at least
 * 99.5% of the CPU's lines have their text on the same page. */
static int mode_same(lector_engine *e)
{
    int bad = 0, lines = 0, same = 0;
    for (int i = 0; i < n_images; i++) {
        char *t;
        lector_error err;
        if (read_flat(e, images[i], &t, &err)) {
            printf("FAIL read %s: %s\n", images[i], err.message);
            bad++;
            continue;
        }
        if (fp16) {
            same += same_texts(cpu_text[i], t, images[i], &lines);
        } else {
            for (const char *c = t; *c; c++) lines += *c == '\n';
            bad += compare(i, t, "same");
        }
        free(t);
    }
    if (!fp16) {
        printf("same: %d images, %d lines, %d differ\n", n_images, lines, bad);
        return bad != 0;
    }
    double share = lines ? 100.0 * same / lines : 100.0;
    printf("same (fp16): %d images, %d lines, %d with the CPU's text (%.2f%%; bar 99.5%%)\n", n_images, lines, same,
           share);
    return bad || share < 99.5;
}

static int mode_fault(lector_engine *e)
{
    int failed = 0, bad = 0;
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < n_images; i++) {
            char *t;
            lector_error err;
            int st = read_flat(e, images[i], &t, &err);
            if (st) {
                printf("fault: read %d of %s failed as injected: %s: %s\n", round, images[i],
                       lector_status_str((lector_status)st), err.message);
                failed++;
                continue;
            }
            bad += compare(i, t, "after fault");
            free(t);
        }
    if (!failed) printf("FAIL fault: no read failed: is LECTOR_CUDA_FAIL set?\n");
    printf("fault: %d reads failed, %d later reads differ from the CPU\n", failed, bad);
    return bad || !failed;
}

static int mode_oom(void)
{
    lector_engine *e;
    int r = gpu_engine((size_t)24 << 20, &e);
    if (r) return r;
    int oom = 0, bad = 0;
    for (int i = 0; i < n_images && i < 4; i++) {
        char *t;
        lector_error err;
        int st = read_flat(e, images[i], &t, &err);
        if (st == LECTOR_ERR_OUT_OF_MEMORY) {
            if (!oom++) printf("oom: %s\n", err.message);
        } else if (st) {
            printf("FAIL oom: expected LECTOR_ERR_OUT_OF_MEMORY, got %s: %s\n", lector_status_str((lector_status)st),
                   err.message);
            bad++;
        } else {
            free(t); /* a small image may fit */
        }
    }
    lector_engine_free(e);
    if (!oom) printf("FAIL oom: no read hit the 24 MiB cap\n");
    if ((r = gpu_engine((size_t)4 << 30, &e))) return r;
    for (int i = 0; i < n_images; i++) {
        char *t;
        lector_error err;
        if (read_flat(e, images[i], &t, &err)) {
            printf("FAIL read under a 4 GiB cap %s: %s\n", images[i], err.message);
            bad++;
            continue;
        }
        bad += compare(i, t, "4 GiB cap");
        free(t);
    }
    size_t used, limit;
    lector_engine_gpu_memory(e, &used, &limit);
    printf("oom: %d reads over the 24 MiB cap failed cleanly; under 4 GiB: %zu MiB used of %zu MiB\n", oom, used >> 20,
           limit >> 20);
    lector_engine_free(e);
    return bad || !oom;
}

typedef struct worker_arg {
    lector_engine *e;
    int id, bad;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    for (int round = 0; round < 4; round++)
        for (int k = 0; k < n_images; k++) {
            int i = (k + a->id) % n_images;
            char *t;
            lector_error err;
            if (read_flat(a->e, images[i], &t, &err)) {
                printf("FAIL thread %d read %s: %s\n", a->id, images[i], err.message);
                a->bad++;
                continue;
            }
            a->bad += compare(i, t, "threads");
            free(t);
        }
    return NULL;
}

static int mode_threads(lector_engine *e)
{
    enum { T = 16 };
    pthread_t th[T];
    worker_arg args[T];
    for (int t = 0; t < T; t++) {
        args[t] = (worker_arg){e, t, 0};
        if (pthread_create(&th[t], NULL, worker, &args[t])) {
            printf("FAIL pthread_create\n");
            return 1;
        }
    }
    int bad = 0;
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        bad += args[t].bad;
    }
    printf("threads: 16 threads x 4 rounds x %d images, %d results differ\n", n_images, bad);
    return bad != 0;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
    if (f) fclose(f);
    return v;
}

/* The GPU's free memory as the CUDA driver reports it (0 when it cannot
 * say): the oracle for what lector_engine_trim gives back. Through dlopen,
 * as the engine loads CUDA, so the test builds without the toolkit; device 0
 * is the engine's default. */
static size_t driver_free_bytes(void)
{
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu) return 0;
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(cu, "cuInit");
    int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(cu, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(cu, "cuDevicePrimaryCtxRetain");
    int (*release)(int) = (int (*)(int))dlsym(cu, "cuDevicePrimaryCtxRelease_v2");
    int (*push)(void *) = (int (*)(void *))dlsym(cu, "cuCtxPushCurrent_v2");
    int (*pop)(void **) = (int (*)(void **))dlsym(cu, "cuCtxPopCurrent_v2");
    int (*mem_info)(size_t *, size_t *) = (int (*)(size_t *, size_t *))dlsym(cu, "cuMemGetInfo_v2");
    size_t free_b = 0, total = 0;
    int dev = 0;
    void *ctx = NULL, *popped = NULL;
    if (init && dev_get && retain && release && push && pop && mem_info && !init(0) && !dev_get(&dev, 0) &&
        !retain(&ctx, dev)) {
        if (!push(ctx)) {
            if (mem_info(&free_b, &total)) free_b = 0;
            pop(&popped);
        }
        release(dev);
    }
    dlclose(cu);
    return free_b;
}

static int mode_memory(lector_engine *e, int reads)
{
    int warm = reads / 10 > n_images ? reads / 10 : n_images, bad = 0;
    size_t used0 = 0, used1 = 0, limit;
    lector_engine_stats st0 = {0};
    long rss0 = 0;
    for (int r = 0; r < reads; r++) {
        if (r == warm) {
            lector_engine_gpu_memory(e, &used0, &limit);
            lector_engine_get_stats(e, &st0);
            rss0 = rss_kib();
            fprintf(stderr, "memory: the warm-up ends after %d reads\n", r); /* a mark in a debug log */
        }
        if (r && r % (reads / 10 > 0 ? reads / 10 : 1) == 0) { /* the curve: where a growth happens */
            size_t u = 0;
            lector_engine_stats st;
            lector_engine_gpu_memory(e, &u, &limit);
            lector_engine_get_stats(e, &st);
            printf("memory: after %d reads GPU memory through Lector %zu KiB, RSS %ld KiB, plans compiled %llu\n", r,
                   u >> 10, rss_kib(), (unsigned long long)st.plans_compiled);
        }
        int i = r % n_images;
        char *t;
        lector_error err;
        if (read_flat(e, images[i], &t, &err)) {
            printf("FAIL read %d: %s\n", r, err.message);
            return 1;
        }
        if (r % n_images == r % (n_images * 50)) bad += compare(i, t, "memory"); /* spot checks */
        free(t);
    }
    lector_engine_gpu_memory(e, &used1, &limit);
    long rss1 = rss_kib();
    printf("memory: %d reads; GPU memory through Lector after %d reads %zu KiB, at the end %zu KiB (%+.2f%%); "
           "RSS %ld -> %ld KiB (%+.2f%%)\n",
           reads, warm, used0 >> 10, used1 >> 10, used0 ? 100.0 * ((double)used1 - (double)used0) / (double)used0 : 0.0,
           rss0, rss1, rss0 ? 100.0 * (double)(rss1 - rss0) / (double)rss0 : 0.0);
    size_t held = used1, free0 = driver_free_bytes();
    lector_engine_trim(e);
    lector_engine_gpu_memory(e, &used1, &limit);
    size_t free1 = driver_free_bytes();
    /* What Lector stopped counting must reach the driver; the pool hands it
     * back in its own blocks, so part of a block still in use may stay. */
    size_t dropped = held > used1 ? held - used1 : 0;
    size_t returned = free1 > free0 ? free1 - free0 : 0;
    int kept = free0 && dropped >= (64u << 20) && returned < dropped / 10 * 9;
    printf(
        "memory: after lector_engine_trim %zu KiB; the driver's free memory %+lld KiB (Lector's count %+lld KiB)%s\n",
        used1 >> 10, ((long long)free1 - (long long)free0) / 1024, -(long long)dropped / 1024,
        !free0 ? " (the driver's figure unavailable)"
        : kept ? ": FAIL, the memory stayed in the process"
               : "");
    /* The engine's warm-up made the line models' arenas for every worker ahead
     * (LECTOR_GPU_RESERVE): the reads after the warm-up allocate none of theirs */
    lector_engine_stats st1;
    lector_engine_get_stats(e, &st1);
    uint64_t rec = st1.rec.arenas_allocated - st0.rec.arenas_allocated,
             cls = st1.cls.arenas_allocated - st0.cls.arenas_allocated,
             det = st1.det.arenas_allocated - st0.det.arenas_allocated;
    const char *reserve = getenv("LECTOR_GPU_RESERVE");
    int reserved = !reserve || strcmp(reserve, "0");
    int grew = reserved && (rec || cls);
    printf("memory: arenas allocated after the warm-up: rec %llu, cls %llu, det %llu%s\n", (unsigned long long)rec,
           (unsigned long long)cls, (unsigned long long)det, grew ? ": FAIL, the reserve did not hold" : "");
    /* and flat as a whole: what the reads after the warm-up add is at most 1% */
    int grew_1pc = reserved && held > used0 + used0 / 100;
    if (grew_1pc) printf("memory: FAIL, GPU memory grew by more than 1%% after the warm-up\n");
    return bad || used1 > used0 || kept || grew || grew_1pc;
}

static int mode_callers(int callers)
{
    lector_params p = lector_default_params();
    p.models_dir = models;
    p.device = LECTOR_DEVICE_CUDA;
    p.gpu_fp16 = fp16;
    p.threads = 1;
    p.workers = 1;
    p.callers = callers;
    lector_engine *e;
    lector_error err;
    if (lector_engine_create(&p, &e, &err)) {
        printf("FAIL gpu engine (workers 1, callers %d): %s\n", callers, err.message);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < n_images; i++) { /* one thread first: the warm-up runs beside it */
        char *t;
        if (read_flat(e, images[i], &t, &err)) {
            printf("FAIL read %s: %s\n", images[i], err.message);
            lector_engine_free(e);
            return 1;
        }
        bad += compare(i, t, "callers");
        free(t);
    }
    /* the warm-up's reserve (its own thread) done: the recogniser's arenas made for every caller */
    lector_engine_stats st0 = {0};
    for (int waited = 0; waited < 100; waited++) {
        lector_engine_get_stats(e, &st0);
        if (st0.rec.arenas_allocated >= (uint64_t)callers) break;
        usleep(100 * 1000);
    }
    enum { T = 16 };
    pthread_t th[T];
    worker_arg args[T];
    int started = 0;
    for (; started < T; started++) {
        args[started] = (worker_arg){e, started, 0};
        if (pthread_create(&th[started], NULL, worker, &args[started])) break;
    }
    for (int t = 0; t < started; t++) {
        pthread_join(th[t], NULL);
        bad += args[t].bad;
    }
    lector_engine_stats st1;
    lector_engine_get_stats(e, &st1);
    uint64_t rec = st1.rec.arenas_allocated - st0.rec.arenas_allocated,
             cls = st1.cls.arenas_allocated - st0.cls.arenas_allocated;
    int grew = callers >= T && (rec || cls);
    printf("callers: workers 1, callers %d: %d threads x 4 rounds x %d images, %d results differ; rec arenas %llu "
           "before the threads, allocated by them: rec %llu, cls %llu%s\n",
           callers, started, n_images, bad, (unsigned long long)st0.rec.arenas_allocated, (unsigned long long)rec,
           (unsigned long long)cls, grew ? ": FAIL, the engine did not make them ahead" : "");
    lector_engine_free(e);
    return bad || started < T || grew;
}

static int mode_batch(void)
{
    lector_params p = lector_default_params();
    p.models_dir = models;
    p.device = LECTOR_DEVICE_CUDA;
    p.det_batch_num = 4;
    p.threads = 2;
    lector_engine *e;
    lector_error err;
    if (lector_engine_create(&p, &e, &err)) return printf("FAIL gpu engine: %s\n", err.message), 1;
    lector_batch_input in[MAX_IMAGES];
    static char *bufs[MAX_IMAGES];
    int bad = 0, lines = 0;
    for (int i = 0; i < n_images; i++) {
        FILE *f = fopen(images[i], "rb");
        bufs[i] = malloc(32 << 20);
        size_t size = f && bufs[i] ? fread(bufs[i], 1, 32 << 20, f) : 0;
        if (f) fclose(f);
        in[i] = (lector_batch_input){bufs[i], size, images[i]};
    }
    lector_result *res[MAX_IMAGES];
    lector_status sts[MAX_IMAGES];
    lector_error errs[MAX_IMAGES];
    if (lector_read_batch(e, in, (size_t)n_images, NULL, res, sts, errs)) {
        printf("FAIL lector_read_batch\n");
        bad = 1;
    }
    for (int i = 0; i < n_images && !bad; i++) {
        if (sts[i]) {
            printf("FAIL batch read %s: %s\n", images[i], errs[i].message);
            bad++;
            continue;
        }
        char *t = flatten(res[i]);
        for (const char *c = t; t && *c; c++) lines += *c == '\n';
        bad += !t || compare(i, t, "batch");
        free(t);
        lector_result_free(res[i]);
    }
    for (int i = 0; i < n_images; i++) free(bufs[i]);
    lector_engine_free(e);
    printf("batch: %d images in one lector_read_batch (det_batch_num 4), %d lines, %d differ\n", n_images, lines, bad);
    return bad != 0;
}

/* One batch of n crops (boxes of `page`, tensor width tw) through model m
 * both ways; 0 when the outputs are equal bit for bit. */
static int inputs_batch(lector_model *m, const char *what, const img_image *page, const float (*quads)[4][2],
                        const int *turns, int n, int img_h, int tw, int *rows_out)
{
    float *host = calloc((size_t)n * 3 * img_h * tw, sizeof(float));
    lector_image_input *in = calloc((size_t)n, sizeof *in);
    ocr_input_tables *t = calloc((size_t)n, sizeof *t);
    lector_error err;
    int bad = !host || !in || !t;
    for (int k = 0; k < n && !bad; k++) {
        const float(*p)[2] = quads[k];
        int w = (int)fmax(hypot(p[0][0] - p[1][0], p[0][1] - p[1][1]), hypot(p[2][0] - p[3][0], p[2][1] - p[3][1]));
        int h = (int)fmax(hypot(p[0][0] - p[3][0], p[0][1] - p[3][1]), hypot(p[1][0] - p[2][0], p[1][1] - p[2][1]));
        w = w < 1 ? 1 : w;
        h = h < 1 ? 1 : h;
        double mat[9];
        img_image warped, t1 = {0}, t2 = {0}, *crop = &warped;
        if (img_warp_quad_matrix(p, w, h, mat) || img_warp_quad(page, p, w, h, &warped, &err)) {
            bad = 1;
            break;
        }
        if (turns[k] & 1) img_rotate90_ccw(crop, &t1, &err), crop = &t1;
        if (turns[k] & 2) img_rotate180(crop, &t2, &err), crop = &t2;
        bad |= ocr_rec_preprocess(crop, img_h, tw, host, k, &err) != LECTOR_OK;
        bad |= ocr_line_image_input(page, mat, w, h, turns[k], img_h, tw, &t[k], &in[k], &err) != LECTOR_OK;
        img_release(&warped);
        img_release(&t1);
        img_release(&t2);
    }
    lector_tensor x = {LECTOR_DTYPE_FLOAT32, 4, {n, 3, img_h, tw}, host};
    lector_tensor *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (!bad && lector_model_run(m, &x, 1, &a, &na, &err)) {
        printf("FAIL %s: run: %s\n", what, err.message);
        bad = 1;
    }
    if (!bad && lector_model_run_images(m, in, (size_t)n, (size_t)n, tw, &b, &nb, &err)) {
        printf("FAIL %s: run_images: %s\n", what, err.message);
        bad = 1;
    }
    for (size_t o = 0; !bad && o < na; o++) {
        size_t cnt = 1, es = a[o].dtype == LECTOR_DTYPE_INT64 ? 8 : 4;
        for (int d = 0; d < a[o].ndim; d++) cnt *= (size_t)a[o].dims[d];
        if (nb != na || memcmp(a[o].data, b[o].data, cnt * es)) {
            size_t diff = 0;
            for (size_t i = 0; i < cnt * es; i++) diff += ((const char *)a[o].data)[i] != ((const char *)b[o].data)[i];
            printf("FAIL %s: output %zu differs (%zu of %zu bytes), %d crops at width %d\n", what, o, diff, cnt * es, n,
                   tw);
            bad = 1;
        }
    }
    *rows_out += n;
    lector_tensors_free(a, na);
    lector_tensors_free(b, nb);
    for (int k = 0; t && k < n; k++) ocr_input_tables_free(&t[k]);
    free(t);
    free(in);
    free(host);
    return bad;
}

static int mode_inputs(lector_engine *e)
{
    char path[4096];
    lector_model_options mo = {.backend = "cuda:0"};
    lector_model *rec = NULL, *cls = NULL;
    lector_error err;
    snprintf(path, sizeof path, "%s/ch_PP-OCRv4_rec_infer.onnx", models);
    if (lector_model_load_file_argmax(path, &mo, &rec, &err)) return printf("FAIL %s: %s\n", path, err.message), 1;
    snprintf(path, sizeof path, "%s/ch_ppocr_mobile_v2.0_cls_infer.onnx", models);
    if (lector_model_load_file(path, &mo, &cls, &err)) return printf("FAIL %s: %s\n", path, err.message), 1;
    int bad = 0, rows = 0;
    for (int i = 0; i < n_images && !bad; i++) {
        lector_result *r = NULL;
        img_pages pages = {0};
        img_limits lim;
        img_limits_default(&lim);
        FILE *f = fopen(images[i], "rb");
        static uint8_t buf[32 << 20];
        size_t size = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        if (lector_read_file(e, images[i], NULL, &r, &err) || img_decode(buf, size, images[i], &lim, &pages, &err)) {
            printf("FAIL %s: %s\n", images[i], err.message);
            bad = 1;
            break;
        }
        int n = (int)r->pages[0].n_lines;
        float(*q)[4][2] = calloc((size_t)(n ? n : 1), sizeof *q);
        int *turns = calloc((size_t)(n ? n : 1), sizeof *turns);
        for (int k = 0; k < n; k++) {
            const lector_line *l = &r->pages[0].lines[k];
            for (int c = 0; c < 4; c++) q[k][c][0] = l->box[c].x, q[k][c][1] = l->box[c].y;
            float w = hypotf(q[k][0][0] - q[k][1][0], q[k][0][1] - q[k][1][1]);
            float h = hypotf(q[k][0][0] - q[k][3][0], q[k][0][1] - q[k][3][1]);
            turns[k] = (h >= 1.5f * w) | (k % 2) << 1; /* every other crop also turned 180 degrees */
        }
        for (int b0 = 0; b0 < n && !bad; b0 += 8) {
            int nb = n - b0 < 8 ? n - b0 : 8;
            bad |= inputs_batch(rec, "rec", &pages.pages[0], q + b0, turns + b0, nb, 48, 320 + 160 * (b0 % 3), &rows);
            bad |= inputs_batch(cls, "cls", &pages.pages[0], q + b0, turns + b0, nb, 48, 192, &rows);
        }
        free(q);
        free(turns);
        img_pages_free(&pages);
        lector_result_free(r);
    }
    printf("inputs: %d crop rows, the GPU-made inputs' outputs %s the CPU-made inputs'\n", rows,
           bad ? "differ from" : "equal");
    lector_model_free(rec);
    lector_model_free(cls);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr,
                "usage: test_cuda_engine same|fault|oom|threads|memory|inputs|batch|callers --models DIR [--reads N] "
                "[--callers N] [--fp16] IMAGE...\n");
        return 2;
    }
    const char *mode = argv[1];
    /* fault: the Nth allocation or step must be a read's. The engine's GPU
     * warm-up runs beside the first reads and would take it or not by timing
     * (its failures are only logged), so it is off here; the test controls
     * are read at their first use, which is after this. */
    if (!strcmp(mode, "fault")) setenv("LECTOR_GPU_WARMUP", "0", 1);
    int reads = 200, callers = 16;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--models") && i + 1 < argc)
            models = argv[++i];
        else if (!strcmp(argv[i], "--callers") && i + 1 < argc)
            callers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reads") && i + 1 < argc)
            reads = atoi(argv[++i]);
        else if (n_images < MAX_IMAGES)
            images[n_images++] = argv[i];
    }
    if (!models || !n_images) return 2;
    for (int i = 0; i < n_images; i++)
        if (!strcmp(images[i], "--fp16")) {
            fp16 = 1;
            images[i--] = images[--n_images];
        }
    /* skip before the CPU reference when there is no GPU */
    lector_engine *e = NULL;
    int r = gpu_engine(0, &e);
    if (r) return r;
    if (cpu_reference()) {
        lector_engine_free(e);
        return 1;
    }
    if (fp16 && strcmp(mode, "same")) { /* half precision: the single-threaded GPU engine is the reference */
        for (int i = 0; i < n_images; i++) {
            lector_error err;
            free(cpu_text[i]);
            cpu_text[i] = NULL;
            if (read_flat(e, images[i], &cpu_text[i], &err)) {
                printf("FAIL gpu fp16 reference read %s: %s\n", images[i], err.message);
                lector_engine_free(e);
                return 1;
            }
        }
    }
    if (!strcmp(mode, "same"))
        r = mode_same(e);
    else if (!strcmp(mode, "fault"))
        r = mode_fault(e);
    else if (!strcmp(mode, "threads"))
        r = mode_threads(e);
    else if (!strcmp(mode, "memory"))
        r = mode_memory(e, reads);
    else if (!strcmp(mode, "inputs"))
        r = mode_inputs(e);
    else if (!strcmp(mode, "batch"))
        r = mode_batch();
    else if (!strcmp(mode, "callers")) {
        lector_engine_free(e); /* its own engine, as lector serve makes it */
        e = NULL;
        r = mode_callers(callers);
    } else if (!strcmp(mode, "oom")) {
        lector_engine_free(e);
        e = NULL;
        r = mode_oom();
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        r = 2;
    }
    lector_engine_free(e);
    for (int i = 0; i < n_images; i++) free(cpu_text[i]);
    printf("%s: %s\n", mode, r == 0 ? "passed" : r == SKIP ? "skipped" : "FAILED");
    return r;
}
