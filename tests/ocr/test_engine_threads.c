/*
 * One engine shared by 8 threads: every result equals the single-threaded
 * result for the same input (texts, boxes and scores, exactly). Inputs: the
 * sample image as a file, as encoded bytes, and sub-rectangles of it given
 * as raw pixels with a stride (RGB, BGR, gray), so shapes differ per read.
 *
 * Then an engine of 4 workers read by one thread: a read's workers are the
 * engine's own threads, started by the first read and kept for the next
 * (the thread ids the kernel lists in /proc/self/task stay the same over 10
 * reads), not started and ended by every read.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "lector.h"
#include "results.h"

#define THREADS 8
#define ROUNDS  2
#define INPUTS  6

static lector_engine *eng;
static const char *sample;
static unsigned char *file_bytes;
static size_t file_size;
static unsigned char *rgb; /* decoded sample, 500x500 */
static int W = 500, H = 500;
static lector_result *expected[INPUTS];
static int mismatches;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static lector_status read_input(int k, lector_result **r, lector_error *err)
{
    static const int rects[4][4] = {{0, 0, 500, 500}, {10, 20, 400, 300}, {0, 200, 500, 300}, {50, 0, 320, 180}};
    switch (k) {
    case 0: return lector_read_file(eng, sample, NULL, r, err);
    case 1: return lector_read_memory(eng, file_bytes, file_size, "bytes", NULL, r, err);
    default: {
        const int *q = rects[(k - 2) % 4];
        lector_pixel_format fmt = k % 3 == 0 ? LECTOR_PIXEL_BGR : k % 3 == 1 ? LECTOR_PIXEL_RGB : LECTOR_PIXEL_GRAY;
        int ch = fmt == LECTOR_PIXEL_GRAY ? 1 : 3;
        size_t stride = (size_t)W * ch + 7; /* a stride wider than the row */
        unsigned char *px = calloc((size_t)H * stride, 1);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const unsigned char *s = rgb + ((size_t)y * W + x) * 3;
                unsigned char *d = px + (size_t)y * stride + (size_t)x * ch;
                if (ch == 1)
                    d[0] = (unsigned char)((s[0] * 299 + s[1] * 587 + s[2] * 114) / 1000);
                else if (fmt == LECTOR_PIXEL_RGB)
                    memcpy(d, s, 3);
                else {
                    d[0] = s[2];
                    d[1] = s[1];
                    d[2] = s[0];
                }
            }
        const unsigned char *start = px + (size_t)q[1] * stride + (size_t)q[0] * ch;
        lector_status st = lector_read_pixels(eng, start, q[2], q[3], stride, fmt, NULL, r, err);
        free(px);
        return st;
    }
    }
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        int k = (id + r) % INPUTS;
        lector_result *res = NULL;
        lector_error err = {0};
        int bad;
        if (read_input(k, &res, &err)) {
            fprintf(stderr, "thread %d input %d: %s\n", id, k, err.message);
            bad = 1;
        } else {
            bad = !results_equal(res, expected[k]);
            if (bad) fprintf(stderr, "thread %d input %d: result differs from single-threaded\n", id, k);
        }
        lector_result_free(res);
        pthread_mutex_lock(&lock);
        mismatches += bad;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

/* The process's thread ids as the kernel lists them, in a sorted set. */
static int task_ids(long *ids, int cap)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.' && n < cap) ids[n++] = atol(de->d_name);
    if (d) closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: a few dozen */
        for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            long t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return n;
}

static int threads_kept(const char *models)
{
    lector_params p = lector_default_params();
    p.models_dir = models;
    p.threads = 1;
    p.workers = 4;
    lector_engine *e;
    lector_error err = {0};
    if (lector_engine_create(&p, &e, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    long before[256], after[256], later[256];
    int n0 = task_ids(before, 256), n1 = 0, n2 = 0, bad = 0;
    for (int r = 0; r < 11 && !bad; r++) {
        lector_result *res;
        if (lector_read_file(e, sample, NULL, &res, &err)) {
            fprintf(stderr, "read %d: %s\n", r, err.message);
            bad = 1;
            break;
        }
        lector_result_free(res);
        if (r == 0) n1 = task_ids(after, 256);
    }
    n2 = task_ids(later, 256);
    if (!bad && n1 < n0 + 4) {
        fprintf(stderr, "FAIL: %d threads before the first read, %d after it: its 4 workers were not kept\n", n0, n1);
        bad = 1;
    }
    if (!bad && (n2 != n1 || memcmp(after, later, sizeof(long) * (size_t)n1))) {
        fprintf(stderr, "FAIL: 10 more reads changed the process's threads (%d -> %d): workers started again\n", n1,
                n2);
        bad = 1;
    }
    lector_engine_free(e);
    printf("an engine of 4 workers: %d threads before the first read, %d after it, %d after 10 more\n", n0, n1, n2);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_engine_threads MODELS SAMPLE.jpg\n");
        return 2;
    }
    sample = argv[2];
    FILE *f = fopen(sample, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    file_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    file_bytes = malloc(file_size);
    if (fread(file_bytes, 1, file_size, f) != file_size) return 1;
    fclose(f);
    lector_params p = lector_default_params();
    p.models_dir = argv[1];
    p.threads = 1;
    p.use_angle_cls = 1;
    if (argc > 3) p.backend = argv[3];
    lector_error err = {0};
    if (lector_engine_create(&p, &eng, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    /* raw RGB pixels of the sample, from the image layer's decoder */
    img_pages pages;
    if (img_decode_file(sample, NULL, &pages, &err) || pages.pages[0].width != W || pages.pages[0].height != H) {
        fprintf(stderr, "cannot decode %s\n", sample);
        return 1;
    }
    rgb = malloc((size_t)W * H * 3);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const unsigned char *s = pages.pages[0].data + (size_t)y * pages.pages[0].stride + (size_t)x * 3;
            unsigned char *d = rgb + ((size_t)y * W + x) * 3;
            d[0] = s[2];
            d[1] = s[1];
            d[2] = s[0]; /* BGR -> RGB */
        }
    img_pages_free(&pages);
    for (int k = 0; k < INPUTS; k++) {
        if (read_input(k, &expected[k], &err)) {
            fprintf(stderr, "input %d: %s\n", k, err.message);
            return 1;
        }
    }
    if (expected[0]->pages[0].n_lines < 10) {
        fprintf(stderr, "the sample should give at least 10 lines\n");
        return 1;
    }
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (int k = 0; k < INPUTS; k++) lector_result_free(expected[k]);
    lector_engine_free(eng);
    free(file_bytes);
    free(rgb);
    printf("%d threads x %d reads: %d mismatches\n", THREADS, ROUNDS, mismatches);
    int kept_bad = threads_kept(argv[1]);
    return mismatches || kept_bad ? 1 : 0;
}
