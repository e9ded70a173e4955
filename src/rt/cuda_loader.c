/*
 * cuda_loader.c - finds and loads liblector-cuda.so at run time.
 *
 * The core has no link-time CUDA dependency: on a machine without NVIDIA
 * software, lector runs on the CPU and this file produces the one-line reason.
 * Order: the module file (gpuenv_cuda_module_path: LECTOR_CUDA_MODULE, else
 * next to the executable, else ../lib of it, as in the offline bundle); the driver (libcuda.so.1);
 * cuBLAS and cuDNN of the CUDA major the module was built for, found through
 * src/gpuenv (the discovery layer) the way `lector doctor` finds them and preloaded by absolute
 * path, so that the module's DT_NEEDED entries bind to exactly those files;
 * NVRTC when it is there (optional); then the module itself and its entry
 * point and API version. The result,
 * success or the reason, is computed once per process.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "rt/backend.h"
#include "rt/infer_util.h"
#include "util/util.h"

#ifndef LECTOR_CUDA_MAJOR
#define LECTOR_CUDA_MAJOR 0 /* built without the CUDA toolkit: no module */
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const rt_backend_iface *module_iface;
static char module_why[512];

static void host_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void host_log(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    lector__log((lector_log_level)level, "%s", buf);
}

static const rt_host_api host_api = {
    .api_version = RT_BACKEND_API_VERSION,
    .ops = rt_op_table,
    .n_ops = RT_OP_COUNT,
    .aligned_alloc = lector__aligned_alloc,
    .free = lector__free,
    .log = host_log,
    .attr_int = rt_attr_int,
    .attr_float = rt_attr_float,
    .attr_ints = rt_attr_ints,
    .attr_string = rt_attr_string,
    .node_opset = rt_node_opset,
};

static void why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void why(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(module_why, sizeof module_why, fmt, ap);
    va_end(ap);
}

static void load_once(void)
{
    if (LECTOR_CUDA_MAJOR == 0) {
        why("this build has no CUDA backend (configured without the CUDA toolkit)");
        return;
    }
    char path[PATH_MAX + 64];
    int found = gpuenv_cuda_module_path(path, sizeof path);
    if (found) {
        why("the CUDA module is missing: no %s%s", path, found == -2 ? " (or ../lib/)" : "");
        return;
    }
    /* the driver first: its absence is the most common reason, and the clearest */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) {
        why("no NVIDIA driver: libcuda.so.1 cannot be loaded (%s)", dlerror());
        return;
    }
    static const char *const stems[] = {"cublasLt", "cublas", "cudnn"};
    for (size_t i = 0; i < sizeof stems / sizeof *stems; i++) {
        gpuenv_libinfo info;
        int r = gpuenv_find_best(NULL, stems[i], LECTOR_CUDA_MAJOR, &info);
        if (r) {
            why("lib%s for CUDA %d not found (the CUDA backend needs cuBLAS %d and cuDNN 9; "
                "`lector doctor` shows where it looked)",
                stems[i], LECTOR_CUDA_MAJOR, LECTOR_CUDA_MAJOR);
            return;
        }
        if (!dlopen(info.path, RTLD_NOW | RTLD_GLOBAL)) {
            why("%s cannot be loaded: %s", info.path, dlerror());
            return;
        }
        lector__log(LECTOR_LOG_DEBUG, "cuda: preloaded %s (%s)", info.path, info.version);
    }
    /* NVRTC is optional: with it the module compiles each fused elementwise
     * chain into its own kernel; without it the chains run in an interpreter */
    gpuenv_libinfo nvrtc;
    if (!gpuenv_find_best(NULL, "nvrtc", LECTOR_CUDA_MAJOR, &nvrtc) && dlopen(nvrtc.path, RTLD_NOW | RTLD_GLOBAL))
        lector__log(LECTOR_LOG_DEBUG, "cuda: preloaded %s (%s)", nvrtc.path, nvrtc.version);
    void *mod = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!mod) {
        why("the CUDA module %s cannot be loaded: %s", path, dlerror());
        return;
    }
    rt_cuda_entry_fn entry;
    *(void **)&entry = dlsym(mod, RT_CUDA_ENTRY);
    if (!entry) {
        why("%s has no entry point %s: not a Lector CUDA module", path, RT_CUDA_ENTRY);
        return;
    }
    const rt_backend_iface *iface = entry(&host_api);
    if (!iface || iface->api_version != RT_BACKEND_API_VERSION) {
        why("%s was built for another version of Lector (backend API %u, this one %u)", path,
            iface ? iface->api_version : 0u, RT_BACKEND_API_VERSION);
        return;
    }
    lector__log(LECTOR_LOG_DEBUG, "cuda: loaded %s", path);
    module_iface = iface;
}

const rt_backend_iface *rt_cuda_module(char *reason, size_t len)
{
    pthread_once(&once, load_once);
    if (!module_iface && reason && len) snprintf(reason, len, "%s", module_why);
    return module_iface;
}

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
    if (rt_backend_create(name, 1, &be, &err)) {
        snprintf(msg, len, "%s", err.message);
        return -1;
    }
    const char *(*dev_name)(rt_backend *) = NULL;
    if (be->iface->get_proc_address) *(void **)&dev_name = be->iface->get_proc_address("device_name");
    snprintf(msg, len,
             "liblector-cuda.so loaded (backend API %u); GPU %d (%s): context, stream, cuDNN and cuBLAS "
             "handles in %.0f ms",
             be->iface->api_version, device, dev_name ? dev_name(be) : "?", lector__now_ms() - t0);
    rt_backend_free(be);
    return 0;
}
