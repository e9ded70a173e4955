/* nvml_metrics.c - live per-GPU samples (memory, temperature, utilisation,
 * clock event reasons) for `lector serve`'s /metrics.
 * Unlike nvml.c, which opens, reads and closes NVML for each doctor report,
 * a server is scraped every few seconds for its whole life: NVML is loaded
 * and initialised once, on the first sample, and never shut down (a
 * shutdown at exit could pull NVML from under a scrape still running).
 * NVML's own init is reference-counted, so the doctor's init/shutdown in
 * the same process (/v1/doctor) leaves this one intact. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "gpuenv/nvml_abi.h"

typedef struct nvml_api {
    nvml_fn_uintp count;
    nvml_fn_handle handle;
    nvml_fn_dev_str name;
    nvml_fn_dev_mem memory;
    nvml_fn_dev_mem2 memory_v2;
    nvml_fn_dev_temp temperature;
    nvml_fn_dev_util utilization;
    nvml_fn_dev_ull reasons;
} nvml_api;

static nvml_api nv; /* valid when nv_ok */
static int nv_ok;
static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

const gpuenv_clock_reason gpuenv_clock_reasons[] = {
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
};
const size_t gpuenv_clock_reasons_len = sizeof gpuenv_clock_reasons / sizeof gpuenv_clock_reasons[0];

/* A symbol, else its older name (newer NVMLs add _v2 entry points and
 * renamed "clocks throttle reasons" to "clocks event reasons"). */
static void *sym(void *h, const char *name, const char *old)
{
    void *p = dlsym(h, name);
    return p || !old ? p : dlsym(h, old);
}
#define SYM(h, T, name, old) ((T)sym(h, name, old))

static void nv_load(void)
{
    /* the doctor's path rule, so LECTOR_DOCTOR_NVML works here too */
    void *h = dlopen(gpuenv_nvml_default_path(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    nvml_fn_void init = SYM(h, nvml_fn_void, "nvmlInit_v2", "nvmlInit");
    nvml_api a = {
        .count = SYM(h, nvml_fn_uintp, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
        .handle = SYM(h, nvml_fn_handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
        .name = SYM(h, nvml_fn_dev_str, "nvmlDeviceGetName", NULL),
        .memory = SYM(h, nvml_fn_dev_mem, "nvmlDeviceGetMemoryInfo", NULL),
        .memory_v2 = SYM(h, nvml_fn_dev_mem2, "nvmlDeviceGetMemoryInfo_v2", NULL),
        .temperature = SYM(h, nvml_fn_dev_temp, "nvmlDeviceGetTemperature", NULL),
        .utilization = SYM(h, nvml_fn_dev_util, "nvmlDeviceGetUtilizationRates", NULL),
        .reasons = SYM(h, nvml_fn_dev_ull, "nvmlDeviceGetCurrentClocksEventReasons",
                       "nvmlDeviceGetCurrentClocksThrottleReasons"),
    };
    if (!init || !a.count || !a.handle || init() != 0) {
        dlclose(h);
        return;
    }
    nv = a;
    nv_ok = 1;
}

int gpuenv_nvml_sample(gpuenv_gpu_sample *out, int max)
{
    unsigned n = 0;
    if (pthread_once(&nv_once, nv_load) != 0 || !nv_ok || nv.count(&n) != 0) return -1;
    int k = 0;
    for (unsigned i = 0; i < n && k < max; i++) {
        nvml_dev d;
        if (nv.handle(i, &d) != 0) continue; /* a GPU that fell off the bus has nothing to report */
        gpuenv_gpu_sample *s = &out[k++];
        memset(s, 0, sizeof *s);
        s->index = i;
        if (!nv.name || nv.name(d, s->name, sizeof s->name) != 0) snprintf(s->name, sizeof s->name, "?");
        s->name[sizeof s->name - 1] = '\0';
        nvml_memory_v2 m2 = {.version = NVML_MEMORY_V2};
        nvml_memory m;
        if (nv.memory_v2 && nv.memory_v2(d, &m2) == 0) {
            s->mem_ok = 1;
            s->mem_used = m2.used;
            s->mem_total = m2.total;
        } else if (nv.memory && nv.memory(d, &m) == 0) {
            s->mem_ok = 1;
            s->mem_used = m.used;
            s->mem_total = m.total;
        }
        s->temp_ok = nv.temperature && nv.temperature(d, 0 /* NVML_TEMPERATURE_GPU */, &s->temp_c) == 0;
        nvml_utilization u;
        if (nv.utilization && nv.utilization(d, &u) == 0) {
            s->util_ok = 1;
            s->util_gpu = u.gpu;
            s->util_mem = u.memory;
        }
        s->reasons_ok = nv.reasons && nv.reasons(d, &s->reasons) == 0;
    }
    return k;
}
