/* cudadrv.c - L3: the CUDA driver API (libcuda.so.1) through dlopen.
 * The classic "is the driver layer really working" test: cuInit, count,
 * then a primary context and a 1 MiB allocation on every device. The
 * primary-context API is used because cuCtxCreate changed signature across
 * CUDA majors (cuCtxCreate_v4 in 13) while cuDevicePrimaryCtxRetain did not. */
#include <dlfcn.h>
#include <link.h>
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
typedef int (*fn_errname)(int, const char **);

const char *gpuenv_libcuda_path(const lector_doctor_options *opt, int root_mode)
{
    if (opt->libcuda_path && *opt->libcuda_path) return opt->libcuda_path;
    const char *e = getenv("LECTOR_DOCTOR_LIBCUDA");
    if (e && *e) return e;
    return root_mode ? NULL : "libcuda.so.1";
}

const char *gpuenv_cu_error_name(int code)
{
    switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 802: return "CUDA_ERROR_SYSTEM_NOT_READY";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA_ERROR_?";
    }
}

/* Error code -> (cause code, cause, fix). Causes come from the knowledge
 * file's table of real reports. */
static void map_error(const lector_doctor_report *r, int rc, const char **code, const char **cause, const char **fix)
{
    switch (rc) {
    case 100:
        if (r->facts.cvd_empty) {
            *code = "cuda_visible_devices_hides_all";
            *cause = "CUDA_VISIBLE_DEVICES hides every GPU, so CUDA sees none";
            *fix = "unset CUDA_VISIBLE_DEVICES (or set it to a GPU index, e.g. CUDA_VISIBLE_DEVICES=0)";
        } else {
            *code = "no_device";
            *cause = "No CUDA-capable device is visible (no GPU, or the container was started "
                     "without the NVIDIA runtime)";
            *fix = "docker run --gpus all … (NVIDIA Container Toolkit); check `nvidia-smi -L`";
        }
        break;
    case 999:
        *code = "cuda_unknown_uvm";
        *cause = "cuInit failed with CUDA_ERROR_UNKNOWN: typically a stale or missing "
                 "nvidia_uvm module (e.g. after suspend/resume)";
        *fix = "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm";
        break;
    case 3:
        *code = "cuda_init_failed";
        *cause = "CUDA driver initialisation failed: device nodes /dev/nvidia* or nvidia_uvm "
                 "missing or not accessible";
        *fix = "sudo modprobe nvidia_uvm && sudo nvidia-modprobe -u -c=0; check permissions of "
               "/dev/nvidia*";
        break;
    case 34:
        *code = "libcuda_stub";
        *cause = "The stub libcuda.so from the toolkit's stubs/ directory was loaded instead "
                 "of the driver's libcuda.so.1";
        *fix = "remove …/lib64/stubs from LD_LIBRARY_PATH and ld.so.conf.d, then run ldconfig";
        break;
    case 35:
        *code = "driver_too_old";
        *cause = "The installed driver is older than this CUDA needs";
        *fix = "upgrade the NVIDIA driver (apt install nvidia-driver-580)";
        break;
    case 802:
        *code = "fabric_manager";
        *cause = "System not ready: an NVSwitch system without nvidia-fabricmanager running";
        *fix = "sudo systemctl enable --now nvidia-fabricmanager";
        break;
    case 803:
        *code = "driver_mismatch";
        *cause = "Mixed driver packages: the display driver and the CUDA driver differ";
        *fix = "reinstall one driver branch consistently, then reboot";
        break;
    case 804:
        *code = "forward_compat_unsupported";
        *cause = "A forward-compatibility libcuda (cuda-compat) is in use on a GPU that does "
                 "not support it, or the host driver is older than the container's CUDA";
        *fix = "remove cuda-compat from the library path (e.g. /usr/local/cuda/compat) or "
               "upgrade the host driver";
        break;
    case 46:
        *code = "device_busy";
        *cause = "The GPU is in exclusive-process mode and used by another process";
        *fix = "nvidia-smi -q -d COMPUTE; stop the other process or nvidia-smi -c DEFAULT";
        break;
    case 2:
        *code = "out_of_memory";
        *cause = "The GPU has no free memory for even a small allocation";
        *fix = "nvidia-smi: find and stop the processes holding GPU memory";
        break;
    default:
        *code = "cuda_error";
        *cause = "The CUDA driver API returned an error";
        *fix = "check dmesg for NVRM/Xid messages; run nvidia-smi";
        break;
    }
}

static void fail(lector_doctor_report *r, const char *id, const char *title, const char *call, int rc, const char *path)
{
    const char *code, *cause, *fix;
    map_error(r, rc, &code, &cause, &fix);
    gpuenv_check *c = gpuenv_add(r, GPUENV_L3, id, title, GPUENV_FAIL, code, cause, fix, "%s = %d (%s)", call, rc,
                                 gpuenv_cu_error_name(rc));
    gpuenv_evidence(r, c, "library: %s", path);
}

void gpuenv_check_cudadrv(lector_doctor_report *r, const lector_doctor_options *opt)
{
    r->facts.cuda_device_count = -1;
    const char *path = gpuenv_libcuda_path(opt, r->root_mode);
    if (!path) {
        gpuenv_add(r, GPUENV_L3, "l3.libcuda", "libcuda", GPUENV_SKIP, "", "", "",
                   "--root: the tree's libcuda is not loaded into this process (set "
                   "LECTOR_DOCTOR_LIBCUDA=PATH to load one)");
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        gpuenv_add(r, GPUENV_L3, "l3.libcuda", "libcuda", GPUENV_FAIL, "libcuda_missing",
                   "libcuda.so.1 (the CUDA driver library, installed by the NVIDIA driver) "
                   "cannot be loaded",
                   "install the driver's CUDA library (Debian/Ubuntu: apt install "
                   "libnvidia-compute-<branch>); in containers use --gpus all",
                   "dlopen(%s) failed: %s", path, err ? err : "?");
        return;
    }
    /* Which file did we really get? A toolkit stub is a classic mistake. */
    char loaded[4096] = "";
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) snprintf(loaded, sizeof loaded, "%s", lm->l_name);
    if (strstr(loaded, "/stubs/")) {
        gpuenv_add(r, GPUENV_L3, "l3.libcuda", "libcuda", GPUENV_FAIL, "libcuda_stub",
                   "The stub libcuda.so from the toolkit's stubs/ directory was loaded instead "
                   "of the driver's libcuda.so.1",
                   "remove …/lib64/stubs from LD_LIBRARY_PATH and ld.so.conf.d, then run "
                   "ldconfig",
                   "loaded %s", loaded);
        return;
    }
    fn_errname errname = (fn_errname)dlsym(h, "cuGetErrorName");
    (void)errname;
    fn_ip drvver = (fn_ip)dlsym(h, "cuDriverGetVersion");
    int dv = 0;
    if (drvver && drvver(&dv) == 0 && dv > 0 && !r->facts.cuda_driver_version) r->facts.cuda_driver_version = dv;
    gpuenv_check *c = gpuenv_add(r, GPUENV_L3, "l3.libcuda", "libcuda", GPUENV_OK, "", "", "",
                                 "%s loaded, driver API %d.%d", loaded[0] ? loaded : path, dv / 1000, (dv % 1000) / 10);
    (void)c;

    fn_u init = (fn_u)dlsym(h, "cuInit");
    if (!init) {
        gpuenv_add(r, GPUENV_L3, "l3.cuinit", "cuInit", GPUENV_FAIL, "libcuda_stub",
                   "This libcuda exports no cuInit: not a real driver library",
                   "remove the wrong libcuda.so.1 from the library path", "%s has no cuInit", path);
        return;
    }
    int rc = init(0);
    if (rc) {
        fail(r, "l3.cuinit", "cuInit", "cuInit(0)", rc, loaded[0] ? loaded : path);
        return;
    }
    gpuenv_add(r, GPUENV_L3, "l3.cuinit", "cuInit", GPUENV_OK, "", "", "", "cuInit(0) = 0");

    fn_ip count = (fn_ip)dlsym(h, "cuDeviceGetCount");
    int n = 0;
    rc = count ? count(&n) : 999;
    if (rc || n <= 0) {
        if (!rc) rc = 100;
        fail(r, "l3.devices", "devices", "cuDeviceGetCount", rc, path);
        r->facts.cuda_device_count = 0;
        return;
    }
    r->facts.cuda_device_count = n;
    gpuenv_add(r, GPUENV_L3, "l3.devices", "devices", GPUENV_OK, "", "", "", "%d CUDA device(s)", n);

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
    int usable = 0;
    for (int i = 0; i < n && i < GPUENV_MAX_GPUS; i++) {
        char id[32];
        snprintf(id, sizeof id, "l3.device%d", i);
        int dev = 0;
        if (!get || !retain || !setcur || !alloc || !mfree) {
            gpuenv_add(r, GPUENV_L3, id, "context", GPUENV_FAIL, "libcuda_incomplete",
                       "libcuda lacks the context/memory API: not a real driver library",
                       "remove the wrong libcuda.so.1 from the library path",
                       "missing cuDeviceGet/cuDevicePrimaryCtxRetain/cuMemAlloc_v2 in %s", path);
            break;
        }
        if ((rc = get(&dev, i))) {
            fail(r, id, "context", "cuDeviceGet", rc, path);
            continue;
        }
        char name[96] = "?";
        if (gname) gname(name, sizeof name, dev);
        int ma = 0, mi = 0;
        if (attr) {
            attr(&ma, 75 /* COMPUTE_CAPABILITY_MAJOR */, dev);
            attr(&mi, 76 /* COMPUTE_CAPABILITY_MINOR */, dev);
        }
        /* NVML may have failed: keep what the driver API tells us. */
        if (i >= r->facts.n_gpus) {
            gpuenv_gpu *g = &r->facts.gpus[i];
            snprintf(g->name, sizeof g->name, "%s", name);
            g->cc_major = ma;
            g->cc_minor = mi;
            r->facts.n_gpus = i + 1;
        }
        void *ctx = NULL;
        if ((rc = retain(&ctx, dev))) {
            fail(r, id, "context", "cuDevicePrimaryCtxRetain", rc, path);
            continue;
        }
        unsigned long long ptr = 0;
        const size_t sz = 1u << 20;
        if ((rc = setcur(ctx)) == 0 && (rc = alloc(&ptr, sz)) == 0) {
            if (mset) rc = mset(ptr, 0xA5, sz);
            if (!rc && sync) rc = sync();
            mfree(ptr);
        }
        if (release) release(dev);
        if (rc) {
            fail(r, id, "context", "context + 1 MiB cuMemAlloc/cuMemsetD8", rc, path);
            continue;
        }
        usable = 1;
        gpuenv_add(r, GPUENV_L3, id, "context", GPUENV_OK, "", "", "",
                   "device %d %s (sm_%d%d): context, 1 MiB alloc + memset + sync ok", i, name, ma, mi);
    }
    r->facts.cuda_ok = 1;
    r->facts.gpu_usable = usable;
    /* libcuda stays loaded: the driver starts threads that must not lose
       their code under them. */
}
