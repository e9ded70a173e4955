/* check_cudadrv.c - L3: the CUDA driver library. First which libcuda.so.1
 * the loader would hand out and what it is (the driver's own copy of the
 * kernel module's version, a toolkit stub, a cuda-compat copy, WSL2's);
 * then, on the live system or with a libcuda given to load, cuInit, the
 * devices, a context and an allocation on each. A failure's fix comes from
 * why the loader picked that file (LD_PRELOAD, LD_LIBRARY_PATH, the cache
 * and the ld.so.conf file behind it, a system directory). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

/* Forward compatibility (cuda-compat) works on data-center GPUs only. */
static int consumer_gpu(const lector_doctor_report *r)
{
    for (int i = 0; i < r->facts.n_gpus; i++)
        if (strstr(r->facts.gpus[i].name, "GeForce") || strstr(r->facts.gpus[i].name, "TITAN")) return 1;
    return 0;
}

typedef struct why {
    doctor_status st;
    int hits;
    const char *code, *cause;
    char *fix; /* owned */
} why;

/* What is wrong with the file the loader hands out, if anything. */
static why static_problem(lector_doctor_report *r, const gpuenv_drvfile *df, int image)
{
    why w = {DOCTOR_OK, 0, "", "", NULL};
    const char *kver = r->facts.kernel_driver;
    switch (df->kind) {
    case GPUENV_DRV_NONE: {
        if (image) break;
        /* a copy the loader does not reach: no SONAME link (ldconfig not
           run), or a directory no search path names (WSL's /usr/lib/wsl/lib
           without its ld.so.conf file, a driver in a non-standard prefix) */
        doctor_notfound nf;
        int e = doctor_explain_notfound(r, "libcuda.so.1", "libcuda_not_in_search_path", &nf);
        if (e == -2) {
            r->oom = 1;
            break;
        }
        if (e == 1) {
            w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, nf.code, doctor_own(r, nf.cause), nf.fix};
            nf.cause = nf.fix = NULL;
            doctor_notfound_free(&nf);
            break;
        }
        w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, "libcuda_missing",
                  "libcuda.so.1 (the CUDA driver library, installed with the NVIDIA driver) is not on the loader's "
                  "path",
                  doctor_fix_driver_userspace(r)};
        break;
    }
    case GPUENV_DRV_BAD:
        w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, "libcuda_unloadable",
                  "The libcuda.so.1 the loader finds first is not a loadable library, and the loader stops there",
                  doctor_fix_not_this(r, &df->find, 1)};
        break;
    case GPUENV_DRV_STUB: {
        gpuenv_find f = df->find;
        if (df->preload_item) f.path = df->preload_item;
        w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, "libcuda_stub",
                  "The libcuda the loader hands out is the toolkit's link-time stub (stubs/libcuda.so), not the "
                  "driver: every CUDA call fails with CUDA_ERROR_STUB_LIBRARY (34)",
                  doctor_fix_not_this(r, &f, 0)};
        break;
    }
    case GPUENV_DRV_COMPAT:
        if (kver[0] && df->version[0] && gpuenv_vercmp(df->version, kver) < 0) {
            w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, "compat_older_than_driver",
                      "A cuda-compat libcuda older than the kernel driver is loaded: CUDA fails with \"system has "
                      "unsupported display driver / cuda driver combination\" (803)",
                      doctor_fix_not_this(r, &df->find, 0)};
        } else if (kver[0] && df->version[0] && gpuenv_vercmp(df->version, kver) > 0 && consumer_gpu(r)) {
            w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, "forward_compat_unsupported",
                      "A cuda-compat (forward compatibility) libcuda is loaded on a GeForce GPU, which does not "
                      "support it: CUDA fails with error 804",
                      doctor_fix_not_this(r, &df->find, 0)};
        } else if (kver[0] && df->version[0] && gpuenv_vercmp(df->version, kver) > 0) {
            w = (why){DOCTOR_WARN, DOCTOR_HITS_GPU, "forward_compat",
                      "A cuda-compat (forward compatibility) libcuda newer than the kernel driver is loaded: it "
                      "works on data-center GPUs only (error 804 elsewhere)",
                      doctor_fix_not_this(r, &df->find, 0)};
        }
        break;
    case GPUENV_DRV_WSL: break;
    case GPUENV_DRV_DRIVER:
        if (r->facts.wsl) {
            w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, "wsl_linux_driver",
                      "A Linux NVIDIA driver's libcuda is installed inside WSL2 and shadows the one WSL provides "
                      "(/usr/lib/wsl/lib): it cannot talk to /dev/dxg",
                      doctor_fix_remove_driver_userspace(r, df->version, &df->find)};
        } else if (kver[0] && df->version[0] && strcmp(df->version, kver) != 0) {
            int newer = gpuenv_vercmp(df->version, kver) > 0;
            w = (why){DOCTOR_FAIL, DOCTOR_HITS_GPU, "libcuda_version_mismatch",
                      newer ? "libcuda.so.1 belongs to a newer driver than the loaded kernel module: the driver was "
                              "upgraded without a reboot"
                            : "libcuda.so.1 belongs to another (older) driver than the loaded kernel module: a "
                              "leftover copy shadows the driver's own",
                      newer ? lector__strdup("sudo reboot") : doctor_fix_not_this(r, &df->find, 1)};
        }
        break;
    }
    if (w.st != DOCTOR_OK && !w.fix) r->oom = 1;
    return w;
}

static void add_static(lector_doctor_report *r, const gpuenv_drvfile *df, const why *w, int image)
{
    doctor_check *c;
    if (w->st != DOCTOR_OK)
        c = doctor_add(r, DOCTOR_L3, "l3.libcuda", "libcuda", w->st, w->hits, w->code, w->cause, w->fix, "%s%s%s",
                       df->find.path    ? df->find.path
                       : df->find.error ? df->find.error
                                        : "not found",
                       df->real && df->find.path && strcmp(df->real, df->find.path) ? " -> " : "",
                       df->real && df->find.path && strcmp(df->real, df->find.path) ? df->real : "");
    else if (df->kind == GPUENV_DRV_NONE)
        c = doctor_add(r, DOCTOR_L3, "l3.libcuda", "libcuda", DOCTOR_SKIP, 0, "", "", "",
                       image ? "no libcuda in this tree: the host's driver provides it at run time"
                             : "libcuda.so.1 not found");
    else
        c = doctor_add(r, DOCTOR_L3, "l3.libcuda", "libcuda", DOCTOR_OK, 0, "", "", "", "%s%s%s%s%s",
                       df->real ? df->real : "?", df->version[0] ? " (driver " : "", df->version,
                       df->version[0] ? ")" : "",
                       df->kind == GPUENV_DRV_COMPAT ? ", cuda-compat"
                       : df->kind == GPUENV_DRV_WSL  ? ", WSL2"
                                                     : "");
    if (df->find.path)
        doctor_evidence(r, c, "libcuda.so.1 -> %s (via %s%s%s)", df->find.path, gpuenv_via_str(df->find.via),
                        df->preload_item ? " " : "", df->preload_item ? df->preload_item : "");
    if (df->size >= 0) doctor_evidence(r, c, "size: %lld bytes", df->size);
    for (size_t i = 0; i < df->find.n_skip; i++)
        doctor_evidence(r, c, "passed over: %s (%s)", df->find.skip[i].path,
                        df->find.skip[i].why == GPUENV_SKIP_CLASS ? "32-bit" : "not usable");
}

/* cuInit and friends: error code -> (cause code, cause, fix). */
static void map_error(lector_doctor_report *r, int rc, const why *sw, const char **code, const char **cause,
                      const char **fix)
{
    *fix = "nvidia-smi; dmesg | grep -i -e nvrm -e xid";
    switch (rc) {
    case 100:
        *code = r->facts.in_container ? "container_without_gpus" : "no_device";
        *cause = r->facts.in_container ? "CUDA sees no device: this container was started without GPUs"
                                       : "No CUDA-capable device is visible to the CUDA driver";
        *fix = r->facts.in_container ? DOCTOR_FIX_CONTAINER_GPUS : "nvidia-smi -L";
        break;
    case 999:
        *code = "cuda_unknown_uvm";
        *cause = "cuInit failed with CUDA_ERROR_UNKNOWN: typically a stale or missing nvidia_uvm module (e.g. after "
                 "suspend/resume)";
        *fix = "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm";
        break;
    case 3:
        *code = "cuda_init_failed";
        *cause = "CUDA driver initialisation failed: /dev/nvidia* or nvidia_uvm missing or not accessible";
        *fix = "sudo modprobe nvidia_uvm && sudo nvidia-modprobe -u -c=0";
        break;
    case 34:
        *code = "libcuda_stub";
        *cause = "The stub libcuda.so from the toolkit's stubs/ directory was loaded instead of the driver's "
                 "libcuda.so.1";
        if (sw->st != DOCTOR_OK && strcmp(sw->code, "libcuda_stub") == 0) *fix = sw->fix;
        break;
    case 35:
        *code = "driver_too_old";
        *cause = "The installed driver is older than this CUDA needs";
        *fix = "sudo apt install nvidia-driver-580 && sudo reboot";
        break;
    case 802:
        *code = "fabric_manager";
        *cause = "System not ready: an NVSwitch system without nvidia-fabricmanager running";
        *fix = "sudo systemctl enable --now nvidia-fabricmanager";
        break;
    case 803:
        *code = "driver_mismatch";
        *cause = "The CUDA driver library and the kernel driver do not belong together (\"system has unsupported "
                 "display driver / cuda driver combination\")";
        if (sw->st != DOCTOR_OK) *fix = sw->fix;
        break;
    case 804:
        *code = "forward_compat_unsupported";
        *cause = "A forward-compatibility libcuda (cuda-compat) is in use on a GPU that does not support it";
        if (sw->st != DOCTOR_OK) *fix = sw->fix;
        break;
    case 46:
        *code = "device_busy";
        *cause = "The GPU is in exclusive-process mode and used by another process";
        *fix = "nvidia-smi -q -d COMPUTE";
        break;
    case 2:
        *code = "out_of_memory";
        *cause = "The GPU has no free memory for even a small allocation";
        *fix = "nvidia-smi --query-compute-apps=pid,used_memory --format=csv";
        break;
    default:
        *code = "cuda_error";
        *cause = "The CUDA driver API returned an error";
        break;
    }
}

static void fail_call(lector_doctor_report *r, const char *id, const char *title, const char *call, int rc,
                      const why *sw, const char *lib)
{
    const char *code, *cause, *fix;
    map_error(r, rc, sw, &code, &cause, &fix);
    doctor_check *c = doctor_add(r, DOCTOR_L3, id, title, DOCTOR_FAIL, DOCTOR_HITS_GPU, code, cause, fix,
                                 "%s = %d (%s)", call, rc, gpuenv_cu_error_name(rc));
    doctor_evidence(r, c, "library: %s", lib);
}

static void probe(lector_doctor_report *r, const char *path, const gpuenv_drvfile *df, const why *sw)
{
    gpuenv_cuda_probe *p = lector__calloc(1, sizeof *p);
    if (!p) {
        r->oom = 1;
        return;
    }
    gpuenv_cuda_probe_run(path, p);
    r->facts.cuda_probed = 1;
    const char *lib = p->lib.loaded_path[0] ? p->lib.loaded_path : path;
    doctor_check *c;
    if (!p->lib.loaded) {
        /* the file's own verdict says why, if it has one */
        char *fix = doctor_own(r, doctor_fix_driver_userspace(r));
        int own = sw->st == DOCTOR_FAIL && sw->fix;
        c = doctor_add(
            r, DOCTOR_L3, "l3.libcuda", "libcuda", DOCTOR_FAIL, DOCTOR_HITS_GPU, own ? sw->code : "libcuda_missing",
            own ? sw->cause
                : "libcuda.so.1 (the CUDA driver library, installed with the NVIDIA driver) cannot be loaded",
            own ? sw->fix : fix, "dlopen(%s) failed: %s", path, p->lib.error);
        if (df->find.error) doctor_evidence(r, c, "the loader's search for libcuda.so.1: %s", df->find.error);
        lector__free(fix);
        lector__free(p);
        return;
    }
    if (strstr(lib, "/stubs/") || p->init_rc == 34) {
        gpuenv_find f = df->find;
        if (df->preload_item) f.path = df->preload_item;
        char *fix = sw->st != DOCTOR_OK && strcmp(sw->code, "libcuda_stub") == 0
                        ? NULL
                        : doctor_own(r, doctor_fix_not_this(r, &f, 0));
        c = doctor_add(r, DOCTOR_L3, "l3.libcuda", "libcuda", DOCTOR_FAIL, DOCTOR_HITS_GPU, "libcuda_stub",
                       "The libcuda loaded is the toolkit's link-time stub (stubs/libcuda.so), not the driver: every "
                       "CUDA call fails with CUDA_ERROR_STUB_LIBRARY (34)",
                       fix ? fix : sw->fix, "loaded %s%s", lib, p->init_rc == 34 ? ", cuInit = 34" : "");
        if (df->find.path)
            doctor_evidence(r, c, "the loader hands out libcuda.so.1 -> %s (via %s)", df->find.path,
                            gpuenv_via_str(df->find.via));
        lector__free(fix);
        lector__free(p);
        return;
    }
    if (p->driver_version > 0 && !r->facts.cuda_driver_version) r->facts.cuda_driver_version = p->driver_version;
    if (sw->st == DOCTOR_FAIL && strcmp(sw->code, "libcuda_missing") != 0)
        c = doctor_add(r, DOCTOR_L3, "l3.libcuda", "libcuda", sw->st, sw->hits, sw->code, sw->cause, sw->fix,
                       "%s loaded, driver API %d.%d", lib, p->driver_version / 1000, (p->driver_version % 1000) / 10);
    else
        c = doctor_add(r, DOCTOR_L3, "l3.libcuda", "libcuda", DOCTOR_OK, 0, "", "", "", "%s loaded, driver API %d.%d",
                       lib, p->driver_version / 1000, (p->driver_version % 1000) / 10);
    if (df->find.path)
        doctor_evidence(r, c, "the loader hands out libcuda.so.1 -> %s (via %s)", df->find.path,
                        gpuenv_via_str(df->find.via));
    if (p->init_rc < 0) {
        doctor_add(r, DOCTOR_L3, "l3.cuinit", "cuInit", DOCTOR_FAIL, DOCTOR_HITS_GPU, "libcuda_stub",
                   "This libcuda exports no cuInit: not a real driver library", sw->fix ? sw->fix : "nvidia-smi",
                   "%s has no cuInit", lib);
        lector__free(p);
        return;
    }
    if (p->init_rc) {
        fail_call(r, "l3.cuinit", "cuInit", "cuInit(0)", p->init_rc, sw, lib);
        lector__free(p);
        return;
    }
    doctor_add(r, DOCTOR_L3, "l3.cuinit", "cuInit", DOCTOR_OK, 0, "", "", "", "cuInit(0) = 0");
    r->facts.cuda_ok = 1;
    if (p->count_rc || p->count <= 0) {
        fail_call(r, "l3.devices", "devices", "cuDeviceGetCount", p->count_rc ? p->count_rc : 100, sw, lib);
        r->facts.cuda_device_count = 0;
        lector__free(p);
        return;
    }
    r->facts.cuda_device_count = p->count;
    doctor_add(r, DOCTOR_L3, "l3.devices", "devices", DOCTOR_OK, 0, "", "", "", "%d CUDA device(s)", p->count);
    if (p->api_missing) {
        doctor_add(r, DOCTOR_L3, "l3.device0", "context", DOCTOR_FAIL, DOCTOR_HITS_GPU, "libcuda_incomplete",
                   "libcuda lacks the context/memory API: not a real driver library", sw->fix ? sw->fix : "nvidia-smi",
                   "missing cuDeviceGet/cuDevicePrimaryCtxRetain/cuMemAlloc_v2 in %s", lib);
        lector__free(p);
        return;
    }
    int usable = 0;
    for (int i = 0; i < p->count && i < GPUENV_MAX_GPUS; i++) {
        const gpuenv_cuda_device *d = &p->dev[i];
        char id[32];
        snprintf(id, sizeof id, "l3.device%d", i);
        /* NVML may have failed: keep what the driver API tells us */
        if (i >= r->facts.n_gpus) {
            doctor_gpu *g = &r->facts.gpus[i];
            snprintf(g->name, sizeof g->name, "%s", d->name);
            g->cc_major = d->cc_major;
            g->cc_minor = d->cc_minor;
            r->facts.n_gpus = i + 1;
        }
        if (d->rc) {
            char call[96];
            snprintf(call, sizeof call, "%s (device %d)", d->failed_call ? d->failed_call : "?", i);
            fail_call(r, id, "context", call, d->rc, sw, lib);
            continue;
        }
        usable = 1;
        doctor_add(r, DOCTOR_L3, id, "context", DOCTOR_OK, 0, "", "", "",
                   "device %d %s (sm_%d%d): context, 1 MiB alloc + memset + sync ok", i, d->name, d->cc_major,
                   d->cc_minor);
    }
    r->facts.gpu_usable = usable;
    lector__free(p);
}

/* With a context working, a missing nvidia_uvm in /proc is a sandbox. */
static void reconcile_uvm(lector_doctor_report *r)
{
    static const char *const ids[] = {"l1.uvm", "l1.devnodes"};
    for (size_t i = 0; i < 2; i++) {
        doctor_check *c = doctor_find_check(r, ids[i], NULL);
        if (!c || strcmp(c->code, "nvidia_uvm_missing") != 0) continue;
        char *f = doctor_own(r, lector__strdup("CUDA contexts work; nvidia_uvm is not visible here (sandboxed /proc "
                                               "or /dev)"));
        if (!f) return;
        lector__free(c->finding);
        c->finding = f;
        doctor_set(r, c, DOCTOR_OK, 0, "", "", "");
    }
}

/* What dlopen("libcuda.so") gets, next to the libcuda.so.1 that works:
 * nothing (a driver or container without the dev link), the toolkit's stub
 * (lib64/stubs on LD_LIBRARY_PATH), or another driver's copy (a Linux
 * driver installed inside WSL2). Only programs that load that name fail. */
static void check_unversioned(lector_doctor_report *r, const gpuenv_drvfile *df)
{
    doctor_named n;
    if (doctor_named_open(r, "libcuda.so", &n)) {
        r->oom = 1;
        return;
    }
    const char *sudo = r->facts.in_container ? "" : "sudo ";
    if (!n.load.ok) {
        char *dir = doctor_own(r, gpuenv_dirname(df->real ? df->real : df->find.path));
        char *fix =
            !dir ? NULL
            : df->kind == GPUENV_DRV_WSL
                ? doctor_own(r, doctor_fix_llp_prepend(dir))
                : doctor_own(r, gpuenv_asprintf("%sln -s libcuda.so.1 %s/libcuda.so && %sldconfig", sudo, dir, sudo));
        doctor_add(r, DOCTOR_L3, "l3.libcuda_unversioned", "libcuda.so", DOCTOR_FAIL, DOCTOR_HITS_NAMED,
                   "libcuda_unversioned_missing",
                   "Only libcuda.so.1 is reachable: programs that dlopen the unversioned libcuda.so (Paddle, numba, "
                   "warp, cuDNN 8's libcudnn_cnn_infer) fail with \"libcuda.so: cannot open shared object file\"",
                   fix ? fix : "", "%s", n.load.error ? n.load.error : "not found");
        lector__free(fix);
        lector__free(dir);
        doctor_named_free(&n);
        return;
    }
    struct stat st;
    long long size = n.real && gpuenv_root_stat(r->root, n.real, &st) == 0 ? (long long)st.st_size : -1;
    char *ver = n.real ? gpuenv_soname_version(n.real) : NULL;
    int drv_ver = ver && gpuenv_ver_major(ver) >= 100;
    int wsl_copy = n.real && strncmp(n.real, "/usr/lib/wsl/", 13) == 0;
    if (n.real && (strstr(n.real, "/stubs/") || (size >= 0 && size < 600 * 1024 && !wsl_copy))) {
        char *fix = doctor_own(r, doctor_fix_not_this(r, &n.find, 0));
        doctor_add(r, DOCTOR_L3, "l3.libcuda_unversioned", "libcuda.so", DOCTOR_FAIL, DOCTOR_HITS_NAMED, "libcuda_stub",
                   "dlopen(\"libcuda.so\") gets the toolkit's link-time stub, not the driver: programs that load that "
                   "name (numba, warp, Paddle) fail with CUDA_ERROR_STUB_LIBRARY (34) or undefined symbols",
                   fix ? fix : "", "libcuda.so -> %s = %s (via %s)", n.find.path ? n.find.path : "?", n.real,
                   gpuenv_via_str(n.find.via));
        lector__free(fix);
    } else if (!wsl_copy && drv_ver && (r->facts.wsl || (df->version[0] && strcmp(ver, df->version) != 0))) {
        char *fix = doctor_own(r, r->facts.wsl ? doctor_fix_remove_driver_userspace(r, ver, &n.find)
                                               : doctor_fix_not_this(r, &n.find, 1));
        doctor_add(r, DOCTOR_L3, "l3.libcuda_unversioned", "libcuda.so", DOCTOR_FAIL, DOCTOR_HITS_NAMED,
                   r->facts.wsl ? "wsl_linux_driver" : "libcuda_version_mismatch",
                   r->facts.wsl ? "A Linux NVIDIA driver's libraries are installed inside WSL2: dlopen(\"libcuda.so\") "
                                  "gets its libcuda, which cannot talk to /dev/dxg (CUDA_ERROR_NO_DEVICE)"
                                : "dlopen(\"libcuda.so\") gets another driver's libcuda than libcuda.so.1 does",
                   fix ? fix : "", "libcuda.so -> %s (driver %s); libcuda.so.1 -> %s", n.real, ver,
                   df->real ? df->real : "?");
        lector__free(fix);
    } else {
        doctor_add(r, DOCTOR_L3, "l3.libcuda_unversioned", "libcuda.so", DOCTOR_OK, 0, "", "", "",
                   "libcuda.so -> %s (via %s)", n.real ? n.real : "?", gpuenv_via_str(n.find.via));
    }
    lector__free(ver);
    doctor_named_free(&n);
}

void doctor_check_cudadrv(lector_doctor_report *r, const lector_doctor_options *opt)
{
    gpuenv_drvfile df;
    if (gpuenv_drvfile_examine(&r->ldso, "libcuda.so.1", &df)) {
        r->oom = 1;
        return;
    }
    snprintf(r->facts.libcuda_version, sizeof r->facts.libcuda_version, "%s", df.version);
    int image =
        r->root_mode && !r->facts.kernel_driver[0] && !r->facts.wsl && !gpuenv_root_exists(r->root, "/proc/driver");
    why sw = static_problem(r, &df, image);
    const char *path = doctor_libcuda_path(opt, r->root_mode);
    if (path)
        probe(r, path, &df, &sw);
    else
        add_static(r, &df, &sw, image);
    if (sw.st == DOCTOR_FAIL && sw.hits & DOCTOR_HITS_GPU) r->facts.driver_failed = 1;
    lector__free(sw.fix);

    /* Paddle, numba, warp and cuDNN 8's sub-libraries dlopen libcuda.so */
    if (df.find.outcome == GPUENV_FOUND && (df.kind == GPUENV_DRV_DRIVER || df.kind == GPUENV_DRV_WSL))
        check_unversioned(r, &df);
    gpuenv_drvfile_free(&df);
    if (r->facts.gpu_usable) reconcile_uvm(r);
}

/* ------------------------------------------------ CUDA_VISIBLE_DEVICES */

void doctor_check_visible(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    if (!r->facts.cvd_set) return;
    int n = r->facts.nvml_count >= 0 ? r->facts.nvml_count : r->facts.proc_gpus;
    /* CUDA reads entries up to the first one that names no device */
    int visible = 0, unknown = 0;
    const char *p = r->facts.cvd;
    while (*p) {
        p += strspn(p, " ");
        size_t len = strcspn(p, ",");
        if (!len) break;
        if ((p[0] >= '0' && p[0] <= '9')) {
            long idx = strtol(p, NULL, 10);
            if (n >= 0 && idx >= n) break;
            if (n < 0) unknown = 1;
            visible++;
        } else if (strncmp(p, "GPU-", 4) == 0 || strncmp(p, "MIG-", 4) == 0) {
            unknown = 1;
            visible++;
        } else {
            break;
        }
        p += len;
        if (*p == ',') p++;
    }
    (void)unknown;
    if (n == 0 || visible > 0) return; /* no GPU at all is L2's finding */
    char cause[512], fix[128];
    if (n > 0)
        snprintf(cause, sizeof cause,
                 "CUDA_VISIBLE_DEVICES=\"%s\" names no GPU of this machine, which has %d GPU(s) (indices 0..%d): "
                 "CUDA sees no device",
                 r->facts.cvd, n, n - 1);
    else
        snprintf(cause, sizeof cause, "CUDA_VISIBLE_DEVICES=\"%s\" hides every GPU from CUDA", r->facts.cvd);
    /* an index that exists */
    snprintf(fix, sizeof fix, "%s", n > 0 ? "export CUDA_VISIBLE_DEVICES=0" : "unset CUDA_VISIBLE_DEVICES");
    /* the driver API's "no device" is this */
    static const char *const ids[] = {"l3.cuinit", "l3.devices"};
    for (size_t i = 0; i < 2; i++) {
        doctor_check *c = doctor_find_check(r, ids[i], NULL);
        if (c && c->status == DOCTOR_FAIL &&
            (strcmp(c->code, "no_device") == 0 || strcmp(c->code, "container_without_gpus") == 0)) {
            doctor_set(r, c, DOCTOR_FAIL, DOCTOR_HITS_GPU, "cuda_visible_devices_hides_all", cause, fix);
            return;
        }
    }
    if (r->facts.gpu_usable) return;
    doctor_add(r, DOCTOR_L3, "l3.visible", "visible devices", DOCTOR_FAIL, DOCTOR_HITS_GPU,
               "cuda_visible_devices_hides_all", cause, fix, "CUDA_VISIBLE_DEVICES=\"%s\"", r->facts.cvd);
    r->facts.driver_failed = 1;
}
