/* nvml_shim.c - a fake libnvidia-ml.so.1 for the doctor's tests.
 * GPUENV_SHIM_MODE selects the machine it pretends to be:
 *   ok        driver 580.95.05, CUDA 13.0, one H200 (sm_90)
 *   nodevice  driver fine, zero GPUs
 *   old       driver 470.82.01, CUDA 11.4, one Tesla T4 (sm_75)
 *   mismatch  nvmlInit fails with NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)
 *   nodriver  nvmlInit fails with NVML_ERROR_DRIVER_NOT_LOADED (9)
 *   ecc       like ok, with 3 uncorrected ECC errors
 * Read at every call, so one loaded copy serves every scenario. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

static const char *mode(void)
{
    const char *m = getenv("GPUENV_SHIM_MODE");
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
int nvmlDeviceGetMemoryInfo(void *d, nvmlMemory_t *m);
int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *t);
int nvmlDeviceGetPersistenceMode(void *d, int *p);
int nvmlDeviceGetTotalEccErrors(void *d, int type, int counter, unsigned long long *n);
int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r);

int nvmlInit_v2(void)
{
    if (is("mismatch"))
        return 18;
    if (is("nodriver"))
        return 9;
    return 0;
}
int nvmlShutdown(void) { return 0; }
int nvmlSystemGetDriverVersion(char *v, unsigned n)
{
    snprintf(v, n, "%s", is("old") ? "470.82.01" : "580.95.05");
    return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    *v = is("old") ? 11040 : 13000;
    return 0;
}
int nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = is("nodevice") ? 0 : 1;
    return 0;
}
static int dev;
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d)
{
    if (i > 0)
        return 2;
    *d = &dev;
    return 0;
}
int nvmlDeviceGetName(void *d, char *name, unsigned n)
{
    snprintf(name, n, "%s", is("old") ? "Tesla T4" : "NVIDIA H200");
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(void *d, int *ma, int *mi)
{
    *ma = is("old") ? 7 : 9;
    *mi = is("old") ? 5 : 0;
    return 0;
}
int nvmlDeviceGetMemoryInfo(void *d, nvmlMemory_t *m)
{
    m->total = 143771ULL << 20;
    m->used = 512ULL << 20;
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *t)
{
    *t = 35;
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
int nvmlDeviceGetCurrentClocksEventReasons(void *d, unsigned long long *r)
{
    *r = 0x1; /* idle */
    return 0;
}
