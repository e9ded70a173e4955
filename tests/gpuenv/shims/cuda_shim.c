/* cuda_shim.c - a fake libcuda.so.1 for the doctor's tests.
 * GPUENV_CUDA_MODE, else GPUENV_SHIM_MODE:
 *   ok        CUDA 13.0 driver, one H200 (sm_90), allocations work
 *   old       CUDA 11.4 driver, one T4 (sm_75)
 *   nodevice  cuInit -> 100 (CUDA_ERROR_NO_DEVICE)
 *   e999      cuInit -> 999 (CUDA_ERROR_UNKNOWN)
 *   e3        cuInit -> 3   (CUDA_ERROR_NOT_INITIALIZED)
 *   e804      cuInit -> 804 (COMPAT_NOT_SUPPORTED_ON_DEVICE)
 *   stub      cuInit -> 34  (CUDA_ERROR_STUB_LIBRARY), as the toolkit stub does
 *   zero      cuInit ok, cuDeviceGetCount -> 0
 *   oom       cuMemAlloc -> 2 (CUDA_ERROR_OUT_OF_MEMORY)
 *   e802 e803 e46  cuInit -> 802 (fabric manager), 803 (driver mismatch),
 *             46 (devices busy or unavailable)
 *   pascal    like ok, the GPU is a GeForce GTX 1080 (sm_61)
 *   geforce535 CUDA 12.2 driver, one GeForce RTX 3090 (sm_86)
 * In every mode the one GPU is hidden the way CUDA hides it: when
 * CUDA_VISIBLE_DEVICES is set, devices are taken from it up to the first
 * entry that is not an existing index (0 here), and cuInit answers
 * CUDA_ERROR_NO_DEVICE (100) when none is left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *mode(void)
{
    const char *m = getenv("GPUENV_CUDA_MODE"); /* this shim's own, for the matrix */
    if (!m || !*m) m = getenv("GPUENV_SHIM_MODE");
    return m ? m : "ok";
}
static int is(const char *m) { return strcmp(mode(), m) == 0; }

int cuDriverGetVersion(int *v);
int cuInit(unsigned flags);
int cuDeviceGetCount(int *n);
int cuDeviceGet(int *d, int i);
int cuDeviceGetName(char *name, int n, int d);
int cuDeviceGetAttribute(int *v, int attr, int d);
int cuDevicePrimaryCtxRetain(void **ctx, int d);
int cuDevicePrimaryCtxRelease_v2(int d);
int cuCtxSetCurrent(void *ctx);
int cuMemAlloc_v2(unsigned long long *p, size_t n);
int cuMemsetD8_v2(unsigned long long p, unsigned char v, size_t n);
int cuMemFree_v2(unsigned long long p);
int cuCtxSynchronize(void);

int cuDriverGetVersion(int *v)
{
    *v = is("old") ? 11040 : is("geforce535") ? 12020 : 13000;
    return 0;
}
/* 1 when CUDA_VISIBLE_DEVICES leaves the one GPU (index 0) visible */
static int visible(void)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) return 1;
    while (*v == ' ') v++;
    return v[0] == '0' && (v[1] == 0 || v[1] == ',' || v[1] == ' ');
}

int cuInit(unsigned flags)
{
    if (is("nodevice") || !visible()) return 100;
    if (is("e802")) return 802;
    if (is("e803")) return 803;
    if (is("e46")) return 46;
    if (is("e999")) return 999;
    if (is("e3")) return 3;
    if (is("e804")) return 804;
    if (is("stub")) return 34;
    return 0;
}
int cuDeviceGetCount(int *n)
{
    *n = is("zero") ? 0 : 1;
    return 0;
}
int cuDeviceGet(int *d, int i)
{
    *d = i;
    return 0;
}
int cuDeviceGetName(char *name, int n, int d)
{
    snprintf(name, (size_t)n, "%s",
             is("old")          ? "Tesla T4"
             : is("pascal")     ? "NVIDIA GeForce GTX 1080"
             : is("geforce535") ? "NVIDIA GeForce RTX 3090"
                                : "NVIDIA H200");
    return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int d)
{
    if (attr == 75)
        *v = is("old") ? 7 : is("pascal") ? 6 : is("geforce535") ? 8 : 9;
    else if (attr == 76)
        *v = is("old") ? 5 : is("pascal") ? 1 : is("geforce535") ? 6 : 0;
    else
        *v = 0;
    return 0;
}
static int ctx_token;
int cuDevicePrimaryCtxRetain(void **ctx, int d)
{
    *ctx = &ctx_token;
    return 0;
}
int cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
int cuCtxSetCurrent(void *ctx) { return 0; }
static unsigned char mem[1 << 20];
int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
    if (is("oom") || n > sizeof mem) return 2;
    *p = (unsigned long long)(size_t)mem;
    return 0;
}
int cuMemsetD8_v2(unsigned long long p, unsigned char v, size_t n)
{
    memset((void *)(size_t)p, v, n);
    return 0;
}
int cuMemFree_v2(unsigned long long p) { return 0; }
int cuCtxSynchronize(void) { return 0; }
