/* nvml.c - L2: NVML (libnvidia-ml.so.1) through dlopen.
 * NVML ships with the driver, so it tells us what the *kernel side*
 * supports: the driver version, the highest CUDA it can run, and per GPU
 * the health data nvidia-smi shows. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"

typedef void *nvml_dev;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory;

typedef int (*fn_void)(void);
typedef int (*fn_str)(char *, unsigned);
typedef int (*fn_intp)(int *);
typedef int (*fn_uintp)(unsigned *);
typedef int (*fn_handle)(unsigned, nvml_dev *);
typedef int (*fn_dev_str)(nvml_dev, char *, unsigned);
typedef int (*fn_dev_cc)(nvml_dev, int *, int *);
typedef int (*fn_dev_mem)(nvml_dev, nvml_memory *);
typedef int (*fn_dev_temp)(nvml_dev, int, unsigned *);
typedef int (*fn_dev_int)(nvml_dev, int *);
typedef int (*fn_dev_ecc)(nvml_dev, int, int, unsigned long long *);
typedef int (*fn_dev_ull)(nvml_dev, unsigned long long *);

const char *gpuenv_nvml_path(const lector_doctor_options *opt, int root_mode)
{
    if (opt->nvml_path && *opt->nvml_path) return opt->nvml_path;
    const char *e = getenv("LECTOR_DOCTOR_NVML");
    if (e && *e) return e;
    return root_mode ? NULL : "libnvidia-ml.so.1";
}

static const char *nvml_err(int rc)
{
    switch (rc) {
    case 1: return "NVML_ERROR_UNINITIALIZED";
    case 2: return "NVML_ERROR_INVALID_ARGUMENT";
    case 3: return "NVML_ERROR_NOT_SUPPORTED";
    case 4: return "NVML_ERROR_NO_PERMISSION";
    case 6: return "NVML_ERROR_NOT_FOUND";
    case 9: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 12: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 15: return "NVML_ERROR_GPU_IS_LOST";
    case 17: return "NVML_ERROR_OPERATING_SYSTEM";
    case 18: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    default: return "NVML_ERROR_UNKNOWN";
    }
}

#define SYM(h, T, name) ((T)dlsym(h, name))

static void per_gpu(lector_doctor_report *r, void *h, unsigned i)
{
    fn_handle get = SYM(h, fn_handle, "nvmlDeviceGetHandleByIndex_v2");
    if (!get) get = SYM(h, fn_handle, "nvmlDeviceGetHandleByIndex");
    char id[32];
    snprintf(id, sizeof id, "l2.gpu%u", i);
    nvml_dev d = NULL;
    int rc = get ? get(i, &d) : -1;
    if (rc) {
        gpuenv_add(r, GPUENV_L2, id, "GPU", GPUENV_FAIL, rc == 15 ? "gpu_lost" : "nvml_device_error",
                   rc == 15 ? "The GPU fell off the bus (NVML_ERROR_GPU_IS_LOST)" : "NVML cannot open this GPU",
                   rc == 15 ? "check `dmesg | grep -i xid`, then reset the GPU or reboot"
                            : "run `nvidia-smi -q` and check dmesg",
                   "GPU %u: nvmlDeviceGetHandleByIndex failed: %s (%d)", i, nvml_err(rc), rc);
        return;
    }
    gpuenv_gpu *g = NULL;
    if (i < GPUENV_MAX_GPUS) {
        g = &r->facts.gpus[i];
        if ((int)i >= r->facts.n_gpus) r->facts.n_gpus = (int)i + 1;
    }
    char name[96] = "?";
    fn_dev_str gname = SYM(h, fn_dev_str, "nvmlDeviceGetName");
    if (gname) gname(d, name, sizeof name);
    int ma = 0, mi = 0;
    fn_dev_cc gcc = SYM(h, fn_dev_cc, "nvmlDeviceGetCudaComputeCapability");
    if (gcc) gcc(d, &ma, &mi);
    nvml_memory mem = {0};
    fn_dev_mem gmem = SYM(h, fn_dev_mem, "nvmlDeviceGetMemoryInfo");
    int mem_ok = gmem && gmem(d, &mem) == 0;
    if (g) {
        snprintf(g->name, sizeof g->name, "%s", name);
        g->cc_major = ma;
        g->cc_minor = mi;
        g->mem_total = mem.total;
        g->mem_used = mem.used;
    }
    gpuenv_status st = GPUENV_OK;
    const char *code = "", *cause = "", *fix = "";
    unsigned temp = 0;
    fn_dev_temp gtemp = SYM(h, fn_dev_temp, "nvmlDeviceGetTemperature");
    int temp_ok = gtemp && gtemp(d, 0 /* NVML_TEMPERATURE_GPU */, &temp) == 0;
    int pers = -1;
    fn_dev_int gpers = SYM(h, fn_dev_int, "nvmlDeviceGetPersistenceMode");
    if (gpers && gpers(d, &pers)) pers = -1;
    unsigned long long ecc = 0;
    fn_dev_ecc gecc = SYM(h, fn_dev_ecc, "nvmlDeviceGetTotalEccErrors");
    /* uncorrected (1), volatile counter (0): errors since the last reboot */
    int ecc_ok = gecc && gecc(d, 1, 0, &ecc) == 0;
    unsigned long long reasons = 0;
    fn_dev_ull grs = SYM(h, fn_dev_ull, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!grs) grs = SYM(h, fn_dev_ull, "nvmlDeviceGetCurrentClocksThrottleReasons");
    int rs_ok = grs && grs(d, &reasons) == 0;
    const unsigned long long bad = 0x8 | 0x20 | 0x40 | 0x80; /* HW slowdown, thermal, power brake */
    if (ecc_ok && ecc > 0) {
        st = GPUENV_WARN;
        code = "ecc_errors";
        cause = "Uncorrected ECC errors since boot: memory is failing or pages await retirement";
        fix = "nvidia-smi -q -d ECC,PAGE_RETIREMENT; reboot to retire pages, replace the GPU if it repeats";
    } else if (rs_ok && (reasons & bad)) {
        st = GPUENV_WARN;
        code = "clocks_throttled";
        cause = "The GPU is slowing its clocks (thermal or power brake): inference will be slow";
        fix = "nvidia-smi -q -d PERFORMANCE; check cooling and power cabling";
    } else if (temp_ok && temp >= 90) {
        st = GPUENV_WARN;
        code = "gpu_hot";
        cause = "GPU temperature at or above 90 C";
        fix = "check cooling (fans, airflow)";
    }
    gpuenv_check *c =
        gpuenv_add(r, GPUENV_L2, id, "GPU", st, code, cause, fix, "GPU %u: %s, compute capability %d.%d (%s)", i, name,
                   ma, mi, gpuenv_cc_family(ma, mi));
    if (mem_ok) gpuenv_evidence(r, c, "memory: %llu MiB total, %llu MiB used", mem.total >> 20, mem.used >> 20);
    if (temp_ok) gpuenv_evidence(r, c, "temperature: %u C", temp);
    if (pers >= 0) gpuenv_evidence(r, c, "persistence mode: %s", pers ? "enabled" : "disabled");
    if (ecc_ok) gpuenv_evidence(r, c, "uncorrected ECC errors (volatile): %llu", ecc);
    if (rs_ok) gpuenv_evidence(r, c, "clock event reasons: 0x%llx", reasons);
}

void gpuenv_check_nvml(lector_doctor_report *r, const lector_doctor_options *opt)
{
    const char *path = gpuenv_nvml_path(opt, r->root_mode);
    if (!path) {
        gpuenv_add(r, GPUENV_L2, "l2.nvml", "NVML", GPUENV_SKIP, "", "", "",
                   "--root: the tree's NVML is not loaded into this process (set "
                   "LECTOR_DOCTOR_NVML=PATH to load one)");
        return;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        int no_kmod = !r->facts.kernel_driver[0];
        gpuenv_add(r, GPUENV_L2, "l2.nvml", "NVML", GPUENV_FAIL, "nvml_missing",
                   no_kmod ? "No NVIDIA driver: neither the kernel module nor its user-space "
                             "libraries (libnvidia-ml.so.1) are present"
                           : "The kernel driver is loaded but its user-space library "
                             "libnvidia-ml.so.1 is not installed or not mounted into this "
                             "container",
                   no_kmod ? "install the NVIDIA driver (Debian/Ubuntu: apt install "
                             "nvidia-driver; then reboot)"
                           : "install the user-space driver matching the kernel module "
                             "(apt install libnvidia-compute-<branch>), or start the "
                             "container with --gpus all (NVIDIA Container Toolkit)",
                   "dlopen(%s) failed: %s", path, err ? err : "?");
        return;
    }
    fn_void init = SYM(h, fn_void, "nvmlInit_v2");
    if (!init) init = SYM(h, fn_void, "nvmlInit");
    fn_void shut = SYM(h, fn_void, "nvmlShutdown");
    int rc = init ? init() : -1;
    if (rc) {
        const char *code = "nvml_init_failed", *cause = "NVML could not initialise",
                   *fix = "run `nvidia-smi` and check dmesg for NVRM errors";
        if (rc == 18) {
            code = "nvml_version_mismatch";
            cause = "Driver/library version mismatch: the user-space driver was upgraded "
                    "but the old kernel module is still loaded";
            fix = "reboot (or: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && "
                  "modprobe nvidia nvidia_uvm)";
        } else if (rc == 9) {
            code = "kernel_module_not_loaded";
            cause = "The NVIDIA kernel module is not loaded (kernel update without DKMS "
                    "rebuild, nouveau bound, or Secure Boot refusing the module)";
            fix = "sudo modprobe nvidia; if that fails: dkms status && sudo dkms autoinstall";
        } else if (rc == 17) {
            code = "nvml_os_error";
            cause = "The OS refused NVML access (device cgroup / container permissions)";
            fix = "run the container with --gpus all or check /dev/nvidia* permissions";
        }
        gpuenv_add(r, GPUENV_L2, "l2.nvml", "NVML", GPUENV_FAIL, code, cause, fix, "nvmlInit_v2() = %d (%s) [%s]", rc,
                   nvml_err(rc), path);
        dlclose(h);
        return;
    }
    r->facts.nvml_ok = 1;
    char drv[80] = "";
    fn_str gdrv = SYM(h, fn_str, "nvmlSystemGetDriverVersion");
    if (gdrv && gdrv(drv, sizeof drv) == 0) snprintf(r->facts.nvml_driver, sizeof r->facts.nvml_driver, "%s", drv);
    int cudav = 0;
    fn_intp gcv = SYM(h, fn_intp, "nvmlSystemGetCudaDriverVersion_v2");
    if (!gcv) gcv = SYM(h, fn_intp, "nvmlSystemGetCudaDriverVersion");
    if (gcv && gcv(&cudav) == 0 && cudav > 0) r->facts.cuda_driver_version = cudav;

    gpuenv_check *c;
    if (r->facts.kernel_driver[0] && drv[0] && strcmp(r->facts.kernel_driver, drv) != 0) {
        c = gpuenv_add(r, GPUENV_L2, "l2.nvml", "NVML", GPUENV_FAIL, "nvml_version_mismatch",
                       "Driver/library version mismatch: the user-space driver was upgraded "
                       "but the old kernel module is still loaded",
                       "reboot (or: rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && "
                       "modprobe nvidia nvidia_uvm)",
                       "NVML %s but kernel module %s", drv, r->facts.kernel_driver);
    } else {
        c = gpuenv_add(r, GPUENV_L2, "l2.nvml", "NVML", GPUENV_OK, "", "", "", "driver %s, supports CUDA up to %d.%d",
                       drv[0] ? drv : "?", cudav / 1000, (cudav % 1000) / 10);
    }
    gpuenv_evidence(r, c, "library: %s", path);
    unsigned n = 0;
    fn_uintp gcount = SYM(h, fn_uintp, "nvmlDeviceGetCount_v2");
    if (!gcount) gcount = SYM(h, fn_uintp, "nvmlDeviceGetCount");
    rc = gcount ? gcount(&n) : -1;
    if (rc || n == 0) {
        gpuenv_add(r, GPUENV_L2, "l2.gpus", "GPUs", GPUENV_FAIL, "no_gpu",
                   "The driver sees no NVIDIA GPU (none installed, or this container was not "
                   "given any)",
                   "check `lspci | grep -i nvidia`; in a container pass --gpus all", "nvmlDeviceGetCount = %u (rc %d)",
                   n, rc);
    } else {
        gpuenv_add(r, GPUENV_L2, "l2.gpus", "GPUs", GPUENV_OK, "", "", "", "%u GPU(s)", n);
        for (unsigned i = 0; i < n && i < GPUENV_MAX_GPUS; i++) per_gpu(r, h, i);
    }
    if (shut) shut();
    dlclose(h);
}
