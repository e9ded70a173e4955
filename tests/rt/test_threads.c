/*
 * One model, 8 threads: every thread's outputs equal the single-threaded
 * outputs for the same inputs, bit for bit. Shapes differ between threads so
 * that plans are compiled concurrently and the LRU cache (capacity 2 here)
 * evicts plans while other threads run them.
 *
 * Then all 8 threads, released together, run one shape the model has not
 * seen: lector_model_stats counts one plan compiled per shape not in the
 * cache (lector_rt.h), so the count grows by exactly one (the others wait
 * for the first thread's plan), and the 8 outputs are the same bytes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lector_rt.h"

#define THREADS 8
#define ROUNDS  6

static lector_model *model;
static lector_tensor inputs[THREADS];
static lector_tensor *expected[THREADS];
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        int k = (id + r) % THREADS;
        lector_tensor *out = NULL;
        size_t n = 0;
        lector_error err = {0};
        int bad = 0;
        if (lector_model_run(model, &inputs[k], 1, &out, &n, &err) != LECTOR_OK) {
            fprintf(stderr, "thread %d: %s\n", id, err.message);
            bad = 1;
        } else {
            size_t nb = (size_t)lector_tensor_numel(&out[0]) * 4;
            bad = out[0].ndim != expected[k][0].ndim || memcmp(out[0].dims, expected[k][0].dims, sizeof out[0].dims) ||
                  memcmp(out[0].data, expected[k][0].data, nb);
            if (bad) fprintf(stderr, "thread %d round %d: output differs\n", id, r);
        }
        lector_tensors_free(out, n);
        pthread_mutex_lock(&lock);
        failures += bad;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static pthread_barrier_t start;
static lector_tensor fresh;
static lector_tensor *fresh_out[THREADS];

static void *fresh_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    size_t n = 0;
    lector_error err = {0};
    pthread_barrier_wait(&start);
    if (lector_model_run(model, &fresh, 1, &fresh_out[id], &n, &err) != LECTOR_OK) {
        fprintf(stderr, "thread %d, the new shape: %s\n", id, err.message);
        fresh_out[id] = NULL;
    }
    return NULL;
}

/* All threads at once on a shape not seen before; 0 when it compiled once
 * and every thread got the same output. */
static int same_new_shape(void)
{
    fresh = (lector_tensor){LECTOR_DTYPE_FLOAT32, 4, {2, 3, 48, 352}, NULL};
    size_t n = (size_t)lector_tensor_numel(&fresh);
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)((double)rand() / RAND_MAX * 2.0 - 1.0);
    fresh.data = x;
    lector_model_stats before, after;
    lector_model_get_stats(model, &before);
    pthread_barrier_init(&start, NULL, THREADS);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, fresh_worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    lector_model_get_stats(model, &after);
    int bad = 0;
    if (after.plans_compiled != before.plans_compiled + 1) {
        fprintf(stderr, "%d threads on one new shape compiled %llu plans, not 1\n", THREADS,
                (unsigned long long)(after.plans_compiled - before.plans_compiled));
        bad = 1;
    }
    for (int t = 0; t < THREADS; t++) {
        if (!fresh_out[t] || !fresh_out[0]) {
            bad = 1;
            continue;
        }
        size_t nb = (size_t)lector_tensor_numel(&fresh_out[t][0]) * 4;
        if (memcmp(fresh_out[t][0].dims, fresh_out[0][0].dims, sizeof fresh_out[0][0].dims) ||
            memcmp(fresh_out[t][0].data, fresh_out[0][0].data, nb)) {
            fprintf(stderr, "thread %d: the new shape's output differs from thread 0's\n", t);
            bad = 1;
        }
    }
    for (int t = 0; t < THREADS; t++)
        if (fresh_out[t]) lector_tensors_free(fresh_out[t], 1);
    free(x);
    printf("%d threads on one new shape: plans compiled %llu\n", THREADS,
           (unsigned long long)(after.plans_compiled - before.plans_compiled));
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/ch_ppocr_mobile_v2.0_cls_infer.onnx", argv[1]);
    lector_model_options opt = {.threads = 1, .plan_cache_size = 2, .backend = argc > 2 ? argv[2] : NULL};
    lector_error err = {0};
    if (lector_model_load_file(path, &opt, &model, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    srand(42);
    for (int t = 0; t < THREADS; t++) {
        int64_t w = 64 + 32 * (t % 4), b = 1 + t % 3;
        lector_tensor *in = &inputs[t];
        *in = (lector_tensor){LECTOR_DTYPE_FLOAT32, 4, {b, 3, 48, w}, NULL};
        size_t n = (size_t)lector_tensor_numel(in);
        float *x = malloc(n * sizeof *x);
        for (size_t i = 0; i < n; i++) x[i] = (float)((double)rand() / RAND_MAX * 2.0 - 1.0);
        in->data = x;
        size_t n_out;
        if (lector_model_run(model, in, 1, &expected[t], &n_out, &err)) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
    }
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        free(inputs[t].data);
        lector_tensors_free(expected[t], 1);
    }
    failures += same_new_shape();
    lector_model_free(model);
    printf("%d threads x %d rounds on %s: %d mismatches\n", THREADS, ROUNDS, path, failures);
    return failures ? 1 : 0;
}
