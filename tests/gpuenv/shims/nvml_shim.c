/* nvml_shim.c - a fake libnvidia-ml.so.1 for the doctor's tests.
 * GPUENV_NVML_MODE, else GPUENV_SHIM_MODE selects the machine it pretends to be:
 *   ok        driver 580.95.05, CUDA 13.0, one H200 (sm_90)
 *   nodevice  driver fine, zero GPUs
 *   old       driver 470.82.01, CUDA 11.4, one Tesla T4 (sm_75)
 *   mismatch  nvmlInit fails with NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)
 *   nodriver  nvmlInit fails with NVML_ERROR_DRIVER_NOT_LOADED (9)
 *   ecc       like ok, with 3 uncorrected ECC errors
 *   throttled like ok with two H200s; GPU 1 slows its clocks (HW slowdown +
 *             HW thermal slowdown: reasons 0x48)
 *   pascal    like ok, the GPU is a GeForce GTX 1080 (sm_61)
 *   geforce535 driver 535.54.03 (CUDA 12.2), one GeForce RTX 3090 (sm_86)
 *   lost      one GPU whose handle fails with NVML_ERROR_GPU_IS_LOST (15)
 * Read at every call, so one loaded copy serves every scenario.
 * Per GPU i: 143771 MiB total, (512 << i) MiB used by allocations and 300
 * MiB reserved by the driver (nvmlDeviceGetMemoryInfo's `used` counts both,
 * _v2's does not), 35 + i C, utilisation 42 % (kernels) and 17 % (memory);
 * clock event reasons 0x1 (idle) but on GPU 1 in "throttled" mode.
 * Built with -DNVML_SHIM_LEGACY it is an NVML before R510: no
 * nvmlDeviceGetMemoryInfo_v2, and nvmlDeviceGetCurrentClocksThrottleReasons
 * (renamed ...EventReasons in R535) instead of ...EventReasons. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/nvml_abi.h" /* the struct layouts */

static const char *mode(void)
{
    const char *m = getenv("GPUENV_NVML_MODE"); /* this shim's own, for the matrix */
    if (!m || !*m) m = getenv("GPUENV_SHIM_MODE");
    return m ? m : "ok";
}
static int is(const char *m) { return strcmp(mode(), m) == 0; }

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlSystemGetDriverVersion(char *v, unsigned n);
int nvmlSystemGetCudaDriverVersion_v2(int *v);
int nvmlDeviceGetCount_v2(unsigned *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d);
int nvmlDeviceGetName(void *d, char *name, unsigned n);
int nvmlDeviceGetCudaComputeCapability(void *d, int *ma, int *mi);
int nvmlDeviceGetMemoryInfo(void *d, nvml_memory *m);
int nvmlDeviceGetMemoryInfo_v2(void *d, nvml_memory_v2 *m);
int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *t);
int nvmlDeviceGetPersistenceMode(void *d, int *p);
int nvmlDeviceGetTotalEccErrors(void *d, int type, int counter, unsigned long long *n);
int nvmlDeviceGetUtilizationRates(void *d, nvml_utilization *u);
#ifdef NVML_SHIM_LEGACY
#define nvmlDeviceGetCurrentClocksEventReasons nvmlDeviceGetCurrentClocksThrottleReasons
#endif
int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r);

int nvmlInit_v2(void)
{
    if (is("mismatch")) return 18;
    if (is("nodriver")) return 9;
    return 0;
}
int nvmlShutdown(void) { return 0; }
int nvmlSystemGetDriverVersion(char *v, unsigned n)
{
    snprintf(v, n, "%s", is("old") ? "470.82.01" : is("geforce535") ? "535.54.03" : "580.95.05");
    return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    *v = is("old") ? 11040 : is("geforce535") ? 12020 : 13000;
    return 0;
}
int nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = is("nodevice") ? 0 : is("throttled") ? 2 : 1;
    return 0;
}
static int devs[2] = {0, 1}; /* a handle points at its index */
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d)
{
    if (i >= (is("throttled") ? 2u : 1u)) return 2;
    if (is("lost")) return 15;
    *d = &devs[i];
    return 0;
}
int nvmlDeviceGetName(void *d, char *name, unsigned n)
{
    snprintf(name, n, "%s",
             is("old")          ? "Tesla T4"
             : is("pascal")     ? "NVIDIA GeForce GTX 1080"
             : is("geforce535") ? "NVIDIA GeForce RTX 3090"
                                : "NVIDIA H200");
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(void *d, int *ma, int *mi)
{
    *ma = is("old") ? 7 : is("pascal") ? 6 : is("geforce535") ? 8 : 9;
    *mi = is("old") ? 5 : is("pascal") ? 1 : is("geforce535") ? 6 : 0;
    return 0;
}
int nvmlDeviceGetMemoryInfo(void *d, nvml_memory *m)
{
    m->total = 143771ULL << 20;
    m->used = (512ULL << (20 + *(int *)d)) + (300ULL << 20);
    m->free = m->total - m->used;
    return 0;
}
#ifndef NVML_SHIM_LEGACY
int nvmlDeviceGetMemoryInfo_v2(void *d, nvml_memory_v2 *m)
{
    if (m->version != ((unsigned)sizeof *m | 2u << 24)) return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    m->total = 143771ULL << 20;
    m->reserved = 300ULL << 20;
    m->used = 512ULL << (20 + *(int *)d);
    m->free = m->total - m->reserved - m->used;
    return 0;
}
#endif
int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *t)
{
    *t = 35 + (unsigned)*(int *)d;
    return 0;
}
int nvmlDeviceGetPersistenceMode(void *d, int *p)
{
    *p = 1;
    return 0;
}
int nvmlDeviceGetTotalEccErrors(void *d, int type, int counter, unsigned long long *n)
{
    *n = is("ecc") ? 3 : 0;
    return 0;
}
int nvmlDeviceGetUtilizationRates(void *d, nvml_utilization *u)
{
    u->gpu = 42;
    u->memory = 17;
    return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r)
{
    *r = *(int *)d == 1 ? 0x48 : 0x1; /* GPU 1 (throttled mode): HW + HW thermal slowdown; else idle */
    return 0;
}
