/* metrics.h - the service's counters and histograms, rendered in the
 * Prometheus text exposition format (version 0.0.4). Thread-safe. */
#ifndef LECTOR_SERVE_METRICS_H
#define LECTOR_SERVE_METRICS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define SERVE_LAT_BUCKETS   13
#define SERVE_BATCH_BUCKETS 6

typedef struct serve_metrics {
    pthread_mutex_t mu;
    uint64_t by_code[600];                     /* HTTP responses by status */
    uint64_t lat_count[SERVE_LAT_BUCKETS + 1]; /* /v1/ocr latency, last = +Inf */
    double lat_sum;
    uint64_t lat_n;
    uint64_t batch_count[SERVE_BATCH_BUCKETS + 1];
    double batch_sum;
    uint64_t batch_n;
    uint64_t pages, images, cpu_fallbacks, primary_errors, timeouts, rejected_full;
} serve_metrics;

void serve_metrics_init(serve_metrics *m);
void serve_metrics_destroy(serve_metrics *m);
void serve_metrics_response(serve_metrics *m, unsigned code);
void serve_metrics_latency(serve_metrics *m, double seconds);
void serve_metrics_batch(serve_metrics *m, int size);
/* Adds to one of the plain counters (a field of serve_metrics). */
void serve_metrics_add(serve_metrics *m, uint64_t *field, uint64_t n);
/* Writes every counter and histogram (not the gauges). */
void serve_metrics_write(serve_metrics *m, FILE *f);
/* Writes lector_gpu_nvml_available and, when NVML answers, the per-GPU
 * gauges (memory, temperature, utilisation, throttle reasons) sampled now.
 * NVML is dlopen'ed on the first call (lector_gpu_sample_all). */
void serve_metrics_write_gpus(FILE *f);

#endif
