/* check_nvml.c - L2: NVML, the driver's own management library. First the
 * file the loader would hand out for libnvidia-ml.so.1 (its name carries the
 * driver version, which must be the kernel module's); then, on the live
 * system or with an NVML given to load, what NVML itself answers. */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static void gpu_health(lector_doctor_report *r, unsigned i, const gpuenv_nvml_gpu *g)
{
    char id[32];
    snprintf(id, sizeof id, "l2.gpu%u", i);
    if (g->handle_rc) {
        int lost = g->handle_rc == 15;
        doctor_add(r, DOCTOR_L2, id, "GPU", DOCTOR_FAIL, lost ? DOCTOR_HITS_GPU : 0,
                   lost ? "gpu_lost" : "nvml_device_error",
                   lost ? "The GPU fell off the bus (NVML_ERROR_GPU_IS_LOST)" : "NVML cannot open this GPU",
                   lost ? "sudo reboot" : "nvidia-smi -q", "GPU %u: nvmlDeviceGetHandleByIndex failed: %s (%d)", i,
                   gpuenv_nvml_error_name(g->handle_rc), g->handle_rc);
        return;
    }
    if (i < GPUENV_MAX_GPUS) {
        doctor_gpu *d = &r->facts.gpus[i];
        snprintf(d->name, sizeof d->name, "%s", g->name);
        d->cc_major = g->cc_major;
        d->cc_minor = g->cc_minor;
        d->mem_total = g->mem_total;
        d->mem_used = g->mem_used;
        if ((int)i >= r->facts.n_gpus) r->facts.n_gpus = (int)i + 1;
    }
    doctor_status st = DOCTOR_OK;
    const char *code = "", *cause = "", *fix = "";
    const unsigned long long bad = 0x8 | 0x20 | 0x40 | 0x80; /* HW slowdown, thermal, power brake */
    if (g->ecc_ok && g->ecc > 0) {
        st = DOCTOR_WARN;
        code = "ecc_errors";
        cause = "Uncorrected ECC errors since boot: memory is failing or pages await retirement";
        fix = "nvidia-smi -q -d ECC,PAGE_RETIREMENT";
    } else if (g->reasons_ok && (g->reasons & bad)) {
        st = DOCTOR_WARN;
        code = "clocks_throttled";
        cause = "The GPU is slowing its clocks (thermal or power brake): inference will be slow";
        fix = "nvidia-smi -q -d PERFORMANCE";
    } else if (g->temp_ok && g->temp >= 90) {
        st = DOCTOR_WARN;
        code = "gpu_hot";
        cause = "GPU temperature at or above 90 C";
        fix = "nvidia-smi -q -d TEMPERATURE";
    }
    doctor_check *c =
        doctor_add(r, DOCTOR_L2, id, "GPU", st, 0, code, cause, fix, "GPU %u: %s, compute capability %d.%d (%s)", i,
                   g->name, g->cc_major, g->cc_minor, gpuenv_cc_family(g->cc_major, g->cc_minor));
    if (g->mem_ok)
        doctor_evidence(r, c, "memory: %llu MiB total, %llu MiB used", g->mem_total >> 20, g->mem_used >> 20);
    if (g->temp_ok) doctor_evidence(r, c, "temperature: %u C", g->temp);
    if (g->persistence >= 0) doctor_evidence(r, c, "persistence mode: %s", g->persistence ? "enabled" : "disabled");
    if (g->ecc_ok) doctor_evidence(r, c, "uncorrected ECC errors (volatile): %llu", g->ecc);
    if (g->reasons_ok) doctor_evidence(r, c, "clock event reasons: 0x%llx", g->reasons);
}

static const char *const mismatch_cause =
    "Driver/library version mismatch: the driver's user-space libraries were upgraded but the old kernel "
    "module is still loaded (or libraries of another driver are installed)";

/* libnvidia-ml.so.1 not found though a file here carries that SONAME. */
static doctor_check *not_found(lector_doctor_report *r, const gpuenv_drvfile *df)
{
    doctor_notfound nf;
    int e = doctor_explain_notfound(r, "libnvidia-ml.so.1", "nvml_not_in_search_path", &nf);
    if (e == -2) r->oom = 1;
    if (e != 1) return NULL;
    doctor_check *c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_FAIL, 0, nf.code, nf.cause, nf.fix, "%s (%s)",
                                 df->find.error ? df->find.error : "not found", nf.file);
    doctor_notfound_free(&nf);
    return c;
}

/* The verdict from the file alone (no NVML loaded). */
static void static_verdict(lector_doctor_report *r, const gpuenv_drvfile *df)
{
    const char *kver = r->facts.kernel_driver;
    doctor_check *c;
    if (!kver[0] && !r->facts.wsl) {
        if (df->find.outcome == GPUENV_FOUND && df->version[0]) {
            char *dir = doctor_own(r, gpuenv_dirname(df->real));
            char *fix = dir ? doctor_own(r, gpuenv_asprintf("rm -f %s/libnvidia-ml.so.* %s/libcuda.so.* && ldconfig "
                                                            "(in the image's Dockerfile; run it with --gpus all)",
                                                            dir, dir))
                            : NULL;
            c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_WARN, 0, "driver_libs_in_image",
                           "This tree carries a driver's user-space libraries; at run time they must equal the "
                           "host's driver, which the NVIDIA Container Toolkit mounts over them",
                           fix ? fix : "", "%s (driver %s) in a tree without a kernel driver", df->real, df->version);
            lector__free(fix);
            lector__free(dir);
        } else
            c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_SKIP, 0, "", "", "",
                           "no kernel driver in this tree: NVML comes with the host's driver at run time");
    } else if (df->find.outcome == GPUENV_NOT_FOUND && (c = not_found(r, df))) {
        /* a file carries the name: the loader just does not reach it */
    } else if (df->find.outcome == GPUENV_NOT_FOUND) {
        char *fix = doctor_own(r, doctor_fix_driver_userspace(r));
        c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_WARN, 0, "nvml_missing",
                       "The kernel driver is loaded but its management library libnvidia-ml.so.1 is not on the "
                       "loader's path (nvidia-smi and NVML users fail)",
                       fix, "%s", df->find.error);
        lector__free(fix);
    } else if (df->kind == GPUENV_DRV_STUB || df->kind == GPUENV_DRV_BAD) {
        char *fix = doctor_own(r, doctor_fix_not_this(r, &df->find, 0));
        c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_WARN, 0, "nvml_stub",
                       "The libnvidia-ml.so.1 the loader hands out is not the driver's (a toolkit stub or a "
                       "broken file)",
                       fix, "%s -> %s", df->find.path ? df->find.path : "?", df->real ? df->real : "?");
        lector__free(fix);
    } else if (kver[0] && df->version[0] && strcmp(df->version, kver) != 0) {
        c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_FAIL, DOCTOR_HITS_GPU, "nvml_version_mismatch",
                       mismatch_cause, "sudo reboot", "%s is driver %s but the kernel module is %s", df->real,
                       df->version, kver);
    } else {
        c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_OK, 0, "", "", "", "%s%s%s%s", df->real ? df->real : "?",
                       df->version[0] ? " (driver " : "", df->version, df->version[0] ? ")" : "");
    }
    if (df->find.path)
        doctor_evidence(r, c, "libnvidia-ml.so.1 -> %s (via %s)", df->find.path, gpuenv_via_str(df->find.via));
}

static void probe_verdict(lector_doctor_report *r, const char *path, const gpuenv_drvfile *df)
{
    gpuenv_nvml_probe *p = lector__calloc(1, sizeof *p);
    if (!p) {
        r->oom = 1;
        return;
    }
    gpuenv_nvml_probe_run(path, p);
    r->facts.nvml_probed = 1;
    const char *kver = r->facts.kernel_driver;
    doctor_check *c;
    if (!p->lib.loaded && df->find.outcome == GPUENV_NOT_FOUND && (c = not_found(r, df))) {
        doctor_evidence(r, c, "dlopen(%s) failed: %s", path, p->lib.error);
    } else if (!p->lib.loaded) {
        int no_kmod = !kver[0] && !r->facts.wsl;
        char *fix = doctor_own(r, doctor_fix_driver_userspace(r));
        c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_FAIL, no_kmod ? DOCTOR_HITS_GPU : 0, "nvml_missing",
                       no_kmod ? "No NVIDIA driver: neither the kernel module nor its user-space libraries "
                                 "(libnvidia-ml.so.1) are present"
                               : "The kernel driver is loaded but its user-space library libnvidia-ml.so.1 is not "
                                 "installed or not mounted into this container",
                       no_kmod && !r->facts.in_container ? "sudo apt install nvidia-driver-580 && sudo reboot" : fix,
                       "dlopen(%s) failed: %s", path, p->lib.error);
        lector__free(fix);
    } else if (p->init_rc) {
        const char *code = "nvml_init_failed", *cause = "NVML could not initialise", *fix = "nvidia-smi";
        if (p->init_rc == 18) {
            code = "nvml_version_mismatch";
            cause = mismatch_cause;
            fix = "sudo reboot";
        } else if (p->init_rc == 9) {
            code = "kernel_module_not_loaded";
            cause = "The NVIDIA kernel module is not loaded (kernel update without DKMS rebuild, nouveau bound, "
                    "or Secure Boot refusing the module)";
            fix = "sudo modprobe nvidia";
        } else if (p->init_rc == 17) {
            code = "nvml_os_error";
            cause = "The operating system refused NVML access (device cgroup or container permissions)";
            fix = DOCTOR_FIX_CONTAINER_GPUS;
        }
        c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_FAIL, DOCTOR_HITS_GPU, code, cause, fix,
                       "nvmlInit_v2() = %d (%s) [%s]", p->init_rc, gpuenv_nvml_error_name(p->init_rc),
                       p->lib.loaded_path[0] ? p->lib.loaded_path : path);
    } else {
        r->facts.nvml_ok = 1;
        snprintf(r->facts.nvml_driver, sizeof r->facts.nvml_driver, "%s", p->driver);
        if (p->cuda_version > 0) r->facts.cuda_driver_version = p->cuda_version;
        if (kver[0] && p->driver[0] && strcmp(kver, p->driver) != 0)
            c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_FAIL, DOCTOR_HITS_GPU, "nvml_version_mismatch",
                           mismatch_cause, "sudo reboot", "NVML %s but kernel module %s", p->driver, kver);
        else
            c = doctor_add(r, DOCTOR_L2, "l2.nvml", "NVML", DOCTOR_OK, 0, "", "", "",
                           "driver %s, supports CUDA up to %d.%d", p->driver[0] ? p->driver : "?",
                           p->cuda_version / 1000, (p->cuda_version % 1000) / 10);
        doctor_evidence(r, c, "library: %s", p->lib.loaded_path[0] ? p->lib.loaded_path : path);
        r->facts.nvml_count = p->count_rc ? -1 : (int)p->count;
        if (p->count_rc || p->count == 0) {
            doctor_add(r, DOCTOR_L2, "l2.gpus", "GPUs", DOCTOR_FAIL, DOCTOR_HITS_GPU, "no_gpu",
                       "The driver sees no NVIDIA GPU (none installed, or this container was not given any)",
                       r->facts.in_container ? DOCTOR_FIX_CONTAINER_GPUS : "lspci | grep -i nvidia",
                       "nvmlDeviceGetCount = %u (rc %d)", p->count, p->count_rc);
        } else {
            doctor_add(r, DOCTOR_L2, "l2.gpus", "GPUs", DOCTOR_OK, 0, "", "", "", "%u GPU(s)", p->count);
            for (unsigned i = 0; i < p->count && i < GPUENV_MAX_GPUS; i++) gpu_health(r, i, &p->gpu[i]);
        }
    }
    if (c && df->find.path)
        doctor_evidence(r, c, "the loader hands out libnvidia-ml.so.1 -> %s (via %s)", df->find.path,
                        gpuenv_via_str(df->find.via));
    lector__free(p);
}

/* Sandboxed kernels (gVisor) hide /proc/driver/nvidia while the driver
 * works: once NVML answers, the missing file is not a failure. */
static void reconcile_proc(lector_doctor_report *r)
{
    doctor_check *c = doctor_find_check(r, "l1.driver", NULL);
    if (!c || strcmp(c->code, "kernel_module_not_loaded") != 0) return;
    char *f = doctor_own(r, gpuenv_asprintf("NVIDIA driver %s answers through NVML; /proc/driver/nvidia/version "
                                            "is not visible here (sandboxed /proc, e.g. gVisor)",
                                            r->facts.nvml_driver));
    if (!f) return;
    lector__free(c->finding);
    c->finding = f;
    doctor_set(r, c, DOCTOR_OK, 0, "", "", "");
    snprintf(r->facts.kernel_driver, sizeof r->facts.kernel_driver, "%s", r->facts.nvml_driver);
}

void doctor_check_nvml(lector_doctor_report *r, const lector_doctor_options *opt)
{
    gpuenv_drvfile df;
    if (gpuenv_drvfile_examine(&r->ldso, "libnvidia-ml.so.1", &df)) {
        r->oom = 1;
        return;
    }
    const char *path = doctor_nvml_path(opt, r->root_mode);
    if (path)
        probe_verdict(r, path, &df);
    else
        static_verdict(r, &df);
    gpuenv_drvfile_free(&df);
    if (r->facts.nvml_ok) reconcile_proc(r);
}
