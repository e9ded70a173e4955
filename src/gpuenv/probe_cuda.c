/* probe_cuda.c - the CUDA driver API (libcuda.so.1) through dlopen: cuInit,
 * the device count, then on every device a primary context, a 1 MiB
 * allocation, a memset and a synchronize. The primary-context API is used
 * because cuCtxCreate changed signature across CUDA majors (cuCtxCreate_v4
 * in 13) while cuDevicePrimaryCtxRetain did not. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"

typedef int (*fn_u)(unsigned);
typedef int (*fn_ip)(int *);
typedef int (*fn_get)(int *, int);
typedef int (*fn_name)(char *, int, int);
typedef int (*fn_attr)(int *, int, int);
typedef int (*fn_retain)(void **, int);
typedef int (*fn_dev)(int);
typedef int (*fn_ctx)(void *);
typedef int (*fn_alloc)(unsigned long long *, size_t);
typedef int (*fn_memset)(unsigned long long, unsigned char, size_t);
typedef int (*fn_free)(unsigned long long);
typedef int (*fn_void)(void);

const char *gpuenv_libcuda_default_path(void) { return gpuenv_env_or("LECTOR_DOCTOR_LIBCUDA", "libcuda.so.1"); }

static const gpuenv_code_name cu_errors[] = {
    {0, "CUDA_SUCCESS"},
    {1, "CUDA_ERROR_INVALID_VALUE"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},
    {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},
    {101, "CUDA_ERROR_INVALID_DEVICE"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

const char *gpuenv_cu_error_name(int code)
{
    return gpuenv_code_name_of(cu_errors, sizeof cu_errors / sizeof *cu_errors, code, "CUDA_ERROR_?");
}

int gpuenv_cuda_probe_run(const char *path, gpuenv_cuda_probe *out)
{
    memset(out, 0, sizeof *out);
    out->init_rc = -1;
    out->count_rc = -1;
    void *h = gpuenv_probe_dlopen(path, &out->lib);
    if (!h) return -1;
    fn_ip drvver = (fn_ip)dlsym(h, "cuDriverGetVersion");
    if (drvver && drvver(&out->driver_version)) out->driver_version = 0;
    fn_u init = (fn_u)dlsym(h, "cuInit");
    if (!init) return 0;
    if ((out->init_rc = init(0))) return 0;
    fn_ip count = (fn_ip)dlsym(h, "cuDeviceGetCount");
    out->count_rc = count ? count(&out->count) : 999;
    if (out->count_rc || out->count <= 0) return 0;

    fn_get get = (fn_get)dlsym(h, "cuDeviceGet");
    fn_name gname = (fn_name)dlsym(h, "cuDeviceGetName");
    fn_attr attr = (fn_attr)dlsym(h, "cuDeviceGetAttribute");
    fn_retain retain = (fn_retain)dlsym(h, "cuDevicePrimaryCtxRetain");
    fn_dev release = (fn_dev)dlsym(h, "cuDevicePrimaryCtxRelease_v2");
    if (!release) release = (fn_dev)dlsym(h, "cuDevicePrimaryCtxRelease");
    fn_ctx setcur = (fn_ctx)dlsym(h, "cuCtxSetCurrent");
    fn_alloc alloc = (fn_alloc)dlsym(h, "cuMemAlloc_v2");
    fn_memset mset = (fn_memset)dlsym(h, "cuMemsetD8_v2");
    fn_free mfree = (fn_free)dlsym(h, "cuMemFree_v2");
    fn_void sync = (fn_void)dlsym(h, "cuCtxSynchronize");
    if (!get || !retain || !setcur || !alloc || !mfree) {
        out->api_missing = 1;
        return 0;
    }
    for (int i = 0; i < out->count && i < GPUENV_MAX_GPUS; i++) {
        gpuenv_cuda_device *d = &out->dev[i];
        int dev = 0;
        snprintf(d->name, sizeof d->name, "?");
        if ((d->rc = get(&dev, i))) {
            d->failed_call = "cuDeviceGet";
            continue;
        }
        if (gname) gname(d->name, sizeof d->name, dev);
        if (attr) {
            attr(&d->cc_major, 75 /* COMPUTE_CAPABILITY_MAJOR */, dev);
            attr(&d->cc_minor, 76 /* COMPUTE_CAPABILITY_MINOR */, dev);
        }
        void *ctx = NULL;
        if ((d->rc = retain(&ctx, dev))) {
            d->failed_call = "cuDevicePrimaryCtxRetain";
            continue;
        }
        unsigned long long ptr = 0;
        const size_t sz = 1u << 20;
        d->failed_call = "cuCtxSetCurrent";
        if ((d->rc = setcur(ctx)) == 0) {
            d->failed_call = "cuMemAlloc_v2";
            if ((d->rc = alloc(&ptr, sz)) == 0) {
                d->failed_call = "cuMemsetD8_v2";
                if (mset) d->rc = mset(ptr, 0xA5, sz);
                if (!d->rc && sync) {
                    d->failed_call = "cuCtxSynchronize";
                    d->rc = sync();
                }
                mfree(ptr);
            }
        }
        if (release) release(dev);
        if (!d->rc) d->failed_call = NULL;
    }
    /* libcuda stays loaded: the driver starts threads that must not lose
       their code under them. */
    return 0;
}
