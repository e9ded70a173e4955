/* probe_nvml.c - NVML (libnvidia-ml.so.1, installed by the driver) through
 * dlopen: the driver version, the highest CUDA it can run, and per GPU what
 * nvidia-smi shows. NVML belongs to the kernel side of the driver, so its
 * answers describe the driver, not the toolkit. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "gpuenv/nvml_abi.h"

#define SYM(h, T, name) ((T)dlsym(h, name))

const char *gpuenv_nvml_default_path(void) { return gpuenv_env_or("LECTOR_DOCTOR_NVML", "libnvidia-ml.so.1"); }

static const gpuenv_code_name nvml_errors[] = {
    {0, "NVML_SUCCESS"},
    {1, "NVML_ERROR_UNINITIALIZED"},
    {2, "NVML_ERROR_INVALID_ARGUMENT"},
    {3, "NVML_ERROR_NOT_SUPPORTED"},
    {4, "NVML_ERROR_NO_PERMISSION"},
    {6, "NVML_ERROR_NOT_FOUND"},
    {9, "NVML_ERROR_DRIVER_NOT_LOADED"},
    {12, "NVML_ERROR_LIBRARY_NOT_FOUND"},
    {15, "NVML_ERROR_GPU_IS_LOST"},
    {17, "NVML_ERROR_OPERATING_SYSTEM"},
    {18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"},
};

const char *gpuenv_nvml_error_name(int rc)
{
    return gpuenv_code_name_of(nvml_errors, sizeof nvml_errors / sizeof *nvml_errors, rc, "NVML_ERROR_UNKNOWN");
}

static void per_gpu(void *h, unsigned i, gpuenv_nvml_gpu *g)
{
    nvml_fn_handle get = SYM(h, nvml_fn_handle, "nvmlDeviceGetHandleByIndex_v2");
    if (!get) get = SYM(h, nvml_fn_handle, "nvmlDeviceGetHandleByIndex");
    nvml_dev d = NULL;
    g->handle_rc = get ? get(i, &d) : -1;
    g->persistence = -1;
    snprintf(g->name, sizeof g->name, "?");
    if (g->handle_rc) return;
    nvml_fn_dev_str gname = SYM(h, nvml_fn_dev_str, "nvmlDeviceGetName");
    if (gname) gname(d, g->name, sizeof g->name);
    nvml_fn_dev_cc gcc = SYM(h, nvml_fn_dev_cc, "nvmlDeviceGetCudaComputeCapability");
    if (gcc) gcc(d, &g->cc_major, &g->cc_minor);
    nvml_memory mem = {0};
    nvml_fn_dev_mem gmem = SYM(h, nvml_fn_dev_mem, "nvmlDeviceGetMemoryInfo");
    if ((g->mem_ok = gmem && gmem(d, &mem) == 0)) {
        g->mem_total = mem.total;
        g->mem_used = mem.used;
    }
    nvml_fn_dev_temp gtemp = SYM(h, nvml_fn_dev_temp, "nvmlDeviceGetTemperature");
    g->temp_ok = gtemp && gtemp(d, 0 /* NVML_TEMPERATURE_GPU */, &g->temp) == 0;
    nvml_fn_dev_int gpers = SYM(h, nvml_fn_dev_int, "nvmlDeviceGetPersistenceMode");
    if (gpers && gpers(d, &g->persistence)) g->persistence = -1;
    nvml_fn_dev_ecc gecc = SYM(h, nvml_fn_dev_ecc, "nvmlDeviceGetTotalEccErrors");
    /* uncorrected (1), volatile counter (0): errors since the last reboot */
    g->ecc_ok = gecc && gecc(d, 1, 0, &g->ecc) == 0;
    nvml_fn_dev_ull grs = SYM(h, nvml_fn_dev_ull, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!grs) grs = SYM(h, nvml_fn_dev_ull, "nvmlDeviceGetCurrentClocksThrottleReasons");
    g->reasons_ok = grs && grs(d, &g->reasons) == 0;
}

int gpuenv_nvml_probe_run(const char *path, gpuenv_nvml_probe *out)
{
    memset(out, 0, sizeof *out);
    out->init_rc = -1;
    out->count_rc = -1;
    void *h = gpuenv_probe_dlopen(path, &out->lib);
    if (!h) return -1;
    nvml_fn_void init = SYM(h, nvml_fn_void, "nvmlInit_v2");
    if (!init) init = SYM(h, nvml_fn_void, "nvmlInit");
    nvml_fn_void shut = SYM(h, nvml_fn_void, "nvmlShutdown");
    out->init_rc = init ? init() : -1;
    if (out->init_rc) {
        dlclose(h);
        return 0;
    }
    nvml_fn_str gdrv = SYM(h, nvml_fn_str, "nvmlSystemGetDriverVersion");
    if (gdrv && gdrv(out->driver, sizeof out->driver)) out->driver[0] = 0;
    nvml_fn_intp gcv = SYM(h, nvml_fn_intp, "nvmlSystemGetCudaDriverVersion_v2");
    if (!gcv) gcv = SYM(h, nvml_fn_intp, "nvmlSystemGetCudaDriverVersion");
    if (gcv && gcv(&out->cuda_version)) out->cuda_version = 0;
    nvml_fn_uintp gcount = SYM(h, nvml_fn_uintp, "nvmlDeviceGetCount_v2");
    if (!gcount) gcount = SYM(h, nvml_fn_uintp, "nvmlDeviceGetCount");
    out->count_rc = gcount ? gcount(&out->count) : -1;
    if (!out->count_rc)
        for (unsigned i = 0; i < out->count && i < GPUENV_MAX_GPUS; i++) per_gpu(h, i, &out->gpu[i]);
    if (shut) shut();
    dlclose(h);
    return 0;
}
