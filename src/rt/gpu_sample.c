/* gpu_sample.c - lector_gpu_sample_all() and lector_gpu_clock_reason()
 * (lector_rt.h): what NVML reports of the GPUs, through src/gpuenv's NVML
 * sampler, for a service's gauges and for sizing a memory cap. */
#include <stdio.h>

#include "gpuenv/gpuenv.h"
#include "lector_rt.h"

int lector_gpu_sample_all(lector_gpu_sample *out, int max)
{
    if (!out || max <= 0) return 0;
    gpuenv_gpu_sample g[GPUENV_MAX_GPUS];
    int n = gpuenv_nvml_sample(g, max < GPUENV_MAX_GPUS ? max : GPUENV_MAX_GPUS);
    for (int i = 0; i < n; i++) {
        lector_gpu_sample *o = &out[i];
        o->index = g[i].index;
        snprintf(o->name, sizeof o->name, "%s", g[i].name);
        o->mem_ok = g[i].mem_ok;
        o->temp_ok = g[i].temp_ok;
        o->util_ok = g[i].util_ok;
        o->reasons_ok = g[i].reasons_ok;
        o->mem_used = g[i].mem_used;
        o->mem_total = g[i].mem_total;
        o->temp_c = g[i].temp_c;
        o->util_gpu = g[i].util_gpu;
        o->util_mem = g[i].util_mem;
        o->reasons = g[i].reasons;
    }
    return n;
}

const char *lector_gpu_clock_reason(size_t i, unsigned long long *bit)
{
    if (i >= gpuenv_clock_reasons_len) return NULL;
    if (bit) *bit = gpuenv_clock_reasons[i].bit;
    return gpuenv_clock_reasons[i].name;
}
