/*
 * cuda_loader.c - the descriptor of the CUDA backend module, liblector-cuda.so
 * (src/backend/cuda), for the module loader (module.c).
 *
 * The core has no link-time CUDA dependency: on a machine without NVIDIA
 * software, lector runs on the CPU and the loader produces the one-line
 * reason. The module file is gpuenv_cuda_module_path's (LECTOR_CUDA_MODULE,
 * else next to the executable, else ../lib of it, as in the offline
 * bundle); the driver is libcuda.so.1; cuBLAS and cuDNN of the CUDA major
 * the module was built for are required, NVRTC is optional (found here,
 * loaded by the module only to compile a kernel it does not ship: without
 * it those chains run in an interpreter). With the offline bundle's CUDA
 * archive unpacked (lib/lector-cuda<major>.libs beside the module) its set is
 * preloaded instead (--cuda-libs auto or bundle), once the driver is known
 * to support its CUDA release: a driver too old for it is the one-line
 * reason, with the fix, before any model is loaded.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "gpuenv/gpuenv.h"
#include "rt/module.h"
#include "util/testctl.h"
#include "util/util.h"

#ifndef LECTOR_CUDA_MAJOR
#define LECTOR_CUDA_MAJOR 0 /* built without the CUDA toolkit: no module */
#endif
#define STR_(x) #x
#define STR(x)  STR_(x)

static const char *const cuda_needs[] = {"cublasLt", "cublas", "cudnn", NULL};
static const char *const cuda_wants[] = {"nvrtc", NULL};

/* cuDriverGetVersion of the loaded libcuda against the bundle's release */
static int cuda_bundle_driver_ok(void *driver, const char *version, char *why, size_t len)
{
    int (*get)(int *) = NULL;
    *(void **)&get = driver ? dlsym(driver, "cuDriverGetVersion") : NULL;
    int v = 0;
    if (!get || get(&v)) return 1; /* unknown: the module's own checks will say */
    char cause[512], fix[512];
    if (gpuenv_bundle_driver_ok(v, version, cause, sizeof cause, fix, sizeof fix)) return 1;
    snprintf(why, len, "%s. Fix: %s", cause, fix);
    return 0;
}

/* The primary context of GPU `device` through the driver API, made while the
 * core loads cuBLAS, cuDNN and the module; the runtime's first call on that
 * GPU then finds it made (cudart's context is the primary context): a GPU
 * engine made about 90 ms sooner (docs/BENCHMARKS.md, "The GPU's context
 * made while the libraries load"). LECTOR_CUDA_CTX_AHEAD=0 turns it off;
 * not with LECTOR_CUDA_SYNC, whose flags the backend sets before the
 * context exists. */
static int cuda_ctx_ahead(void *driver, int device)
{
    if (!lector__tc_flag(LECTOR__TC_CUDA_CTX_AHEAD, 1) || lector__tc_str(LECTOR__TC_CUDA_SYNC)) return 0;
    int (*init)(unsigned) = NULL, (*get)(int *, int) = NULL, (*retain)(void **, int) = NULL;
    *(void **)&init = dlsym(driver, "cuInit");
    *(void **)&get = dlsym(driver, "cuDeviceGet");
    *(void **)&retain = dlsym(driver, "cuDevicePrimaryCtxRetain");
    int dev = 0;
    void *ctx = NULL;
    double t0 = lector__now_ms();
    if (!init || !get || !retain || init(0) || get(&dev, device) || retain(&ctx, dev)) return 0;
    lector__log(LECTOR_LOG_DEBUG, "cuda: GPU %d's context made in %.0f ms while the libraries loaded", device,
                lector__now_ms() - t0);
    return 1;
}

static void cuda_ctx_release(void *driver, int device)
{
    int (*get)(int *, int) = NULL, (*release)(int) = NULL;
    *(void **)&get = dlsym(driver, "cuDeviceGet");
    *(void **)&release = dlsym(driver, "cuDevicePrimaryCtxRelease_v2");
    int dev = 0;
    if (get && release && !get(&dev, device)) release(dev);
}

const rt_module_desc rt_cuda_module = {
    .backend = "cuda",
    .title = "CUDA",
    .find = LECTOR_CUDA_MAJOR ? gpuenv_cuda_module_path : NULL,
    .not_built = "this build has no CUDA backend (configured without the CUDA toolkit)",
    .missing_suffix = " (or ../lib/)",
    .driver = "libcuda.so.1",
    .no_driver = "no NVIDIA driver",
    .needs = cuda_needs,
    .wants = cuda_wants,
    .major = LECTOR_CUDA_MAJOR,
    .needs_hint = "the CUDA backend needs cuBLAS " STR(LECTOR_CUDA_MAJOR) " and cuDNN 9; `lector doctor` shows "
                                                                          "where it looked",
    .bundle = LECTOR_CUDA_MAJOR != 0,
    .bundle_driver_ok = cuda_bundle_driver_ok,
    .ctx_ahead = cuda_ctx_ahead,
    .ctx_release = cuda_ctx_release,
};

/* L5 of `lector doctor` (src/doctor/check_engine.c, which declares it too):
 * the real loader and a real backend on GPU `device` (context, stream, cuDNN
 * and cuBLAS handles). */
int lector_engine_gpu_selftest(int device, char *msg, size_t len);
int lector_engine_gpu_selftest(int device, char *msg, size_t len)
{
    char name[32];
    snprintf(name, sizeof name, "cuda:%d", device);
    rt_backend *be;
    lector_error err;
    double t0 = lector__now_ms();
    if (rt_backend_create(&(lector_model_options){.backend = name, .threads = 1}, &be, &err)) {
        snprintf(msg, len, "%s", err.message);
        return -1;
    }
    snprintf(msg, len,
             "liblector-cuda.so loaded (backend API %u); GPU %d (%s): context, stream, cuDNN and cuBLAS "
             "handles in %.0f ms",
             be->iface->api_version, device, be->iface->device.name ? be->iface->device.name(be) : "?",
             lector__now_ms() - t0);
    rt_backend_free(be);
    return 0;
}
