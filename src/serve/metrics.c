/* metrics.c - see metrics.h. */
#include <string.h>

#include "lector_rt.h"
#include "metrics.h"

static const double lat_le[SERVE_LAT_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
static const int batch_le[SERVE_BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32};

void serve_metrics_init(serve_metrics *m)
{
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void serve_metrics_destroy(serve_metrics *m) { pthread_mutex_destroy(&m->mu); }

void serve_metrics_response(serve_metrics *m, unsigned code)
{
    pthread_mutex_lock(&m->mu);
    if (code < 600) m->by_code[code]++;
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_latency(serve_metrics *m, double s)
{
    int i = 0;
    while (i < SERVE_LAT_BUCKETS && s > lat_le[i]) i++;
    pthread_mutex_lock(&m->mu);
    m->lat_count[i]++;
    m->lat_sum += s;
    m->lat_n++;
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_batch(serve_metrics *m, int size)
{
    int i = 0;
    while (i < SERVE_BATCH_BUCKETS && size > batch_le[i]) i++;
    pthread_mutex_lock(&m->mu);
    m->batch_count[i]++;
    m->batch_sum += size;
    m->batch_n++;
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_add(serve_metrics *m, uint64_t *field, uint64_t n)
{
    pthread_mutex_lock(&m->mu);
    *field += n;
    pthread_mutex_unlock(&m->mu);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

void serve_metrics_write(serve_metrics *m, FILE *f)
{
    serve_metrics c;
    pthread_mutex_lock(&m->mu);
    c = *m;
    pthread_mutex_unlock(&m->mu);

    fprintf(f, "# HELP lector_serve_requests_total HTTP responses by status code.\n"
               "# TYPE lector_serve_requests_total counter\n");
    for (unsigned i = 100; i < 600; i++)
        if (c.by_code[i])
            fprintf(f, "lector_serve_requests_total{code=\"%u\"} %llu\n", i, (unsigned long long)c.by_code[i]);

    fprintf(f, "# HELP lector_serve_request_duration_seconds /v1/ocr latency, arrival to response.\n"
               "# TYPE lector_serve_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < SERVE_LAT_BUCKETS; i++) {
        cum += c.lat_count[i];
        fprintf(f, "lector_serve_request_duration_seconds_bucket{le=\"%g\"} %llu\n", lat_le[i],
                (unsigned long long)cum);
    }
    cum += c.lat_count[SERVE_LAT_BUCKETS];
    fprintf(f, "lector_serve_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    fprintf(f, "lector_serve_request_duration_seconds_sum %.6f\n", c.lat_sum);
    fprintf(f, "lector_serve_request_duration_seconds_count %llu\n", (unsigned long long)c.lat_n);

    fprintf(f, "# HELP lector_serve_batch_size Images per engine dispatch (one lector_read_batch call: a request's "
               "files, and with --max-batch > 1 several requests).\n"
               "# TYPE lector_serve_batch_size histogram\n");
    cum = 0;
    for (int i = 0; i < SERVE_BATCH_BUCKETS; i++) {
        cum += c.batch_count[i];
        fprintf(f, "lector_serve_batch_size_bucket{le=\"%d\"} %llu\n", batch_le[i], (unsigned long long)cum);
    }
    cum += c.batch_count[SERVE_BATCH_BUCKETS];
    fprintf(f, "lector_serve_batch_size_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    fprintf(f, "lector_serve_batch_size_sum %.0f\n", c.batch_sum);
    fprintf(f, "lector_serve_batch_size_count %llu\n", (unsigned long long)c.batch_n);

    counter(f, "lector_serve_pages_total", "Pages read (rate() gives pages/s).", c.pages);
    counter(f, "lector_serve_images_total", "Images read, successfully or not.", c.images);
    counter(f, "lector_serve_cpu_fallbacks_total", "Reads served by the CPU engine because of the breaker.",
            c.cpu_fallbacks);
    counter(f, "lector_serve_primary_errors_total", "Device errors of the primary engine.", c.primary_errors);
    counter(f, "lector_serve_timeouts_total", "Requests answered 504 after the deadline.", c.timeouts);
    counter(f, "lector_serve_rejected_queue_full_total", "Requests answered 503 because the queue was full.",
            c.rejected_full);
}

enum { GPU_MEM_USED, GPU_MEM_TOTAL, GPU_TEMP, GPU_UTIL, GPU_MEM_UTIL, GPU_REASONS, GPU_NFAM };
static const struct {
    const char *name, *help;
} gpu_fam[GPU_NFAM] = {
    {"lector_gpu_memory_used_bytes", "GPU memory in use, by all processes."},
    {"lector_gpu_memory_total_bytes", "Total GPU memory."},
    {"lector_gpu_temperature_celsius", "GPU die temperature."},
    {"lector_gpu_utilization_percent", "Percent of NVML's last sample period (1/6 s to 1 s) in which a kernel ran."},
    {"lector_gpu_memory_utilization_percent",
     "Percent of NVML's last sample period in which device memory was read or written."},
    {"lector_gpu_throttle_reasons",
     "Current clock event (throttle) reasons, NVML's bitmask; one by one in lector_gpu_throttle_reason."},
};

/* The value of family fam for g; 0 when NVML did not report it. */
static int gpu_value(const lector_gpu_sample *g, int fam, double *v)
{
    switch (fam) {
    case GPU_MEM_USED: *v = (double)g->mem_used; return g->mem_ok;
    case GPU_MEM_TOTAL: *v = (double)g->mem_total; return g->mem_ok;
    case GPU_TEMP: *v = g->temp_c; return g->temp_ok;
    case GPU_UTIL: *v = g->util_gpu; return g->util_ok;
    case GPU_MEM_UTIL: *v = g->util_mem; return g->util_ok;
    case GPU_REASONS: *v = (double)g->reasons; return g->reasons_ok;
    default: return 0;
    }
}

/* NAME{gpu="N",name="..." with the name escaped as the text format asks */
static void gpu_labels(FILE *f, const char *metric, const lector_gpu_sample *g)
{
    fprintf(f, "%s{gpu=\"%u\",name=\"", metric, g->index);
    for (const char *p = g->name; *p; p++) {
        if (*p == '\n') {
            fputs("\\n", f);
            continue;
        }
        if (*p == '\\' || *p == '"') fputc('\\', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

void serve_metrics_write_gpus(FILE *f)
{
    lector_gpu_sample g[64];
    int n = lector_gpu_sample_all(g, 64);
    fprintf(f,
            "# HELP lector_gpu_nvml_available 1 when NVML (libnvidia-ml.so.1) loaded and answers; the lector_gpu_* "
            "gauges come from it.\n"
            "# TYPE lector_gpu_nvml_available gauge\nlector_gpu_nvml_available %d\n",
            n >= 0);
    for (int fam = 0; fam < GPU_NFAM; fam++) {
        int header = 0;
        for (int i = 0; i < n; i++) {
            double v;
            if (!gpu_value(&g[i], fam, &v)) continue;
            if (!header++)
                fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", gpu_fam[fam].name, gpu_fam[fam].help, gpu_fam[fam].name);
            gpu_labels(f, gpu_fam[fam].name, &g[i]);
            fprintf(f, "} %.17g\n", v);
        }
    }
    int header = 0;
    for (int i = 0; i < n; i++) {
        if (!g[i].reasons_ok) continue;
        if (!header++)
            fprintf(f,
                    "# HELP lector_gpu_throttle_reason 1 while this clock event reason holds; hw_slowdown, "
                    "hw_thermal_slowdown, hw_power_brake_slowdown and sw_thermal_slowdown slow the GPU to protect it.\n"
                    "# TYPE lector_gpu_throttle_reason gauge\n");
        unsigned long long bit;
        const char *reason;
        for (size_t r = 0; (reason = lector_gpu_clock_reason(r, &bit)); r++) {
            gpu_labels(f, "lector_gpu_throttle_reason", &g[i]);
            fprintf(f, ",reason=\"%s\"} %d\n", reason, (g[i].reasons & bit) != 0);
        }
    }
}
