/*
 * One model, 8 threads: every thread's outputs equal the single-threaded
 * outputs for the same inputs, bit for bit. Shapes differ between threads so
 * that plans are compiled concurrently and the LRU cache (capacity 2 here)
 * evicts plans while other threads run them.
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
    lector_model_free(model);
    printf("%d threads x %d rounds on %s: %d mismatches\n", THREADS, ROUNDS, path, failures);
    return failures ? 1 : 0;
}
