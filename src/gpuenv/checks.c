/* checks.c - the check table, L0 system, L1 kernel driver, L5 engine, and
 * the run that ties the layers together (redis syscheck.c style). */
#include <ctype.h>
#include <gnu/libc-version.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpuenv/gpuenv.h"

static const char *const layer_ids[GPUENV_NLAYERS] = {"L0", "L1", "L2", "L3", "L4", "L5", "inspect"};
static const char *const layer_names[GPUENV_NLAYERS] = {
    "system", "kernel driver", "NVML", "CUDA driver API", "CUDA libraries", "Lector engine", "inspected files"};

const char *gpuenv_status_str(gpuenv_status s)
{
    switch (s) {
    case GPUENV_OK: return "ok";
    case GPUENV_WARN: return "warn";
    case GPUENV_FAIL: return "fail";
    default: return "skip";
    }
}

gpuenv_check *gpuenv_add(lector_doctor_report *r, int layer, const char *id, const char *title, gpuenv_status st,
                         const char *code, const char *cause, const char *fix, const char *fmt, ...)
{
    gpuenv_layer *L = &r->layers[layer];
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 8;
        gpuenv_check *c = realloc(L->checks, cap * sizeof *c);
        if (!c) {
            r->oom = 1;
            return NULL;
        }
        L->checks = c;
        L->cap = cap;
    }
    gpuenv_check *c = &L->checks[L->n];
    memset(c, 0, sizeof *c);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&c->finding, fmt, ap) < 0) c->finding = NULL;
    va_end(ap);
    c->id = strdup(id);
    c->title = strdup(title);
    c->code = strdup(code ? code : "");
    c->cause = strdup(cause ? cause : "");
    c->fix = strdup(fix ? fix : "");
    c->status = st;
    if (!c->finding || !c->id || !c->title || !c->code || !c->cause || !c->fix) {
        free(c->finding);
        free(c->id);
        free(c->title);
        free(c->code);
        free(c->cause);
        free(c->fix);
        r->oom = 1;
        return NULL;
    }
    L->n++;
    return c;
}

void gpuenv_evidence(lector_doctor_report *r, gpuenv_check *c, const char *fmt, ...)
{
    if (!c) return;
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (!s || gpuenv_strv_push_owned(&c->evidence, s)) r->oom = 1;
}

/* ------------------------------------------------------------------ L0 */

void gpuenv_check_system(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    char pretty[160] = "unknown";
    char *osr = gpuenv_root_read_text(r->root, "/etc/os-release", 8192);
    if (!osr) osr = gpuenv_root_read_text(r->root, "/usr/lib/os-release", 8192);
    if (osr) {
        char *p = strstr(osr, "PRETTY_NAME=");
        if (p) {
            p += 12;
            if (*p == '"') p++;
            size_t n = strcspn(p, "\"\n");
            snprintf(pretty, sizeof pretty, "%.*s", (int)n, p);
        }
        free(osr);
    }
    gpuenv_check *c;
    if (r->root_mode) {
        c = gpuenv_add(r, GPUENV_L0, "l0.os", "OS", GPUENV_OK, "", "", "", "%s (tree at %s)", pretty, r->root);
    } else {
        struct utsname u;
        if (uname(&u)) memset(&u, 0, sizeof u);
        int x86 = strcmp(u.machine, "x86_64") == 0;
        c = gpuenv_add(r, GPUENV_L0, "l0.os", "OS", x86 ? GPUENV_OK : GPUENV_WARN, x86 ? "" : "not_x86_64",
                       x86 ? "" : "Not x86_64: NVIDIA's x86_64 wheels and packages do not apply",
                       x86 ? "" : "use the aarch64 (sbsa) CUDA packages and wheels", "%s, kernel %s, %s, glibc %s",
                       pretty, u.release, u.machine, gnu_get_libc_version());
    }
    (void)c;

    /* Container hints: what changes the advice (``--gpus all``). */
    const char *hint = NULL;
    if (gpuenv_root_exists(r->root, "/.dockerenv"))
        hint = "Docker (/.dockerenv)";
    else if (gpuenv_root_exists(r->root, "/run/.containerenv"))
        hint = "Podman (/run/.containerenv)";
    else if (!r->root_mode) {
        char *cg = gpuenv_root_read_text(NULL, "/proc/1/cgroup", 4096);
        if (cg && (strstr(cg, "docker") || strstr(cg, "kubepods") || strstr(cg, "containerd")))
            hint = "container (/proc/1/cgroup)";
        free(cg);
    }
    gpuenv_add(r, GPUENV_L0, "l0.container", "container", GPUENV_OK, "", "", "", "%s",
               hint ? hint : "no container detected");

    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd) {
        gpuenv_add(r, GPUENV_L0, "l0.cuda_visible_devices", "CUDA_VISIBLE_DEVICES", GPUENV_OK, "", "", "",
                   "unset (all GPUs visible)");
    } else {
        int hides = !cvd[0] || cvd[0] == '-' || strcasecmp(cvd, "none") == 0 || strcasecmp(cvd, "NoDevFiles") == 0 ||
                    strcasecmp(cvd, "void") == 0;
        r->facts.cvd_empty = hides;
        gpuenv_add(r, GPUENV_L0, "l0.cuda_visible_devices", "CUDA_VISIBLE_DEVICES", hides ? GPUENV_WARN : GPUENV_OK,
                   hides ? "cuda_visible_devices_empty" : "",
                   hides ? "CUDA_VISIBLE_DEVICES hides every GPU from CUDA" : "",
                   hides ? "unset CUDA_VISIBLE_DEVICES (or set it to a GPU index, e.g. 0)" : "",
                   "CUDA_VISIBLE_DEVICES=\"%s\"", cvd);
    }

    const char *llp = opt && opt->ld_library_path ? opt->ld_library_path : getenv("LD_LIBRARY_PATH");
    int stubs = llp && strstr(llp, "stubs") != NULL;
    c = gpuenv_add(r, GPUENV_L0, "l0.ld_library_path", "LD_LIBRARY_PATH", stubs ? GPUENV_WARN : GPUENV_OK,
                   stubs ? "ld_library_path_stubs" : "",
                   stubs ? "LD_LIBRARY_PATH contains a toolkit stubs/ directory: its libcuda.so "
                           "is a link-time stub that cannot run anything"
                         : "",
                   stubs ? "remove the …/stubs entry from LD_LIBRARY_PATH" : "", "%s", llp && *llp ? llp : "(unset)");
    if (llp && *llp) {
        gpuenv_strv dirs = {0};
        if (gpuenv_strv_split(&dirs, llp, ':') == 0)
            for (size_t i = 0; i < dirs.n; i++)
                if (dirs.v[i][0])
                    gpuenv_evidence(r, c, "%s%s", dirs.v[i],
                                    gpuenv_root_exists(r->root, dirs.v[i]) ? "" : " (does not exist)");
        gpuenv_strv_free(&dirs);
    }

    const char *pre = getenv("LD_PRELOAD");
    char *etcpre = gpuenv_root_read_text(r->root, "/etc/ld.so.preload", 4096);
    int any = (pre && *pre) || (etcpre && *etcpre);
    c = gpuenv_add(r, GPUENV_L0, "l0.ld_preload", "LD_PRELOAD", GPUENV_OK, "", "", "", "%s",
                   any ? "set (preloaded objects win over every search path)" : "(unset)");
    if (pre && *pre) gpuenv_evidence(r, c, "LD_PRELOAD=%s", pre);
    if (etcpre && *etcpre) gpuenv_evidence(r, c, "/etc/ld.so.preload: %.200s", etcpre);
    free(etcpre);
}

/* ------------------------------------------------------------------ L1 */

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu …" or
 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05 …" */
static void parse_nvrm(const char *text, char *out, size_t n)
{
    out[0] = 0;
    const char *p = strstr(text, "Kernel Module");
    if (!p) return;
    p += 13;
    while (*p && *p != '\n') {
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strcspn(p, " \t\n");
        if (len && isdigit((unsigned char)p[0]) && memchr(p, '.', len)) {
            snprintf(out, n, "%.*s", (int)len, p);
            return;
        }
        p += len;
    }
}

void gpuenv_check_kernel(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    char *v = gpuenv_root_read_text(r->root, "/proc/driver/nvidia/version", 4096);
    if (!v && r->root_mode && !gpuenv_root_exists(r->root, "/proc/driver")) {
        gpuenv_add(r, GPUENV_L1, "l1.driver", "kernel module", GPUENV_SKIP, "", "", "",
                   "the tree has no /proc/driver (an image, not a running system)");
        return;
    }
    if (!v) {
        gpuenv_add(r, GPUENV_L1, "l1.driver", "kernel module", GPUENV_FAIL, "kernel_module_not_loaded",
                   "The NVIDIA kernel driver is not loaded (/proc/driver/nvidia/version is "
                   "missing): no driver installed, a kernel update without a DKMS rebuild, "
                   "nouveau bound to the GPU, or a container started without GPUs",
                   "sudo modprobe nvidia (install the driver if missing: apt install "
                   "nvidia-driver); in containers: docker run --gpus all",
                   "no /proc/driver/nvidia/version");
    } else {
        parse_nvrm(v, r->facts.kernel_driver, sizeof r->facts.kernel_driver);
        gpuenv_check *c =
            gpuenv_add(r, GPUENV_L1, "l1.driver", "kernel module", GPUENV_OK, "", "", "", "NVIDIA kernel module %s",
                       r->facts.kernel_driver[0] ? r->facts.kernel_driver : "?");
        size_t nl = strcspn(v, "\n");
        gpuenv_evidence(r, c, "%.*s", (int)nl, v);
        free(v);
    }

    /* Device nodes: nvidiactl and one per GPU, nvidia-uvm for CUDA. */
    gpuenv_strv missing = {0}, denied = {0}, present = {0};
    static const char *const nodes[] = {"/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm"};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        char *h = gpuenv_host_path(r->root, nodes[i]);
        if (!h) {
            r->oom = 1;
            break;
        }
        struct stat st;
        int rc;
        if (stat(h, &st))
            rc = gpuenv_strv_push(&missing, nodes[i]);
        else if (!r->root_mode && access(h, R_OK | W_OK))
            rc = gpuenv_strv_push(&denied, nodes[i]);
        else
            rc = gpuenv_strv_push_owned(&present, gpuenv_asprintf("%s (mode %o)", nodes[i], st.st_mode & 07777));
        if (rc) r->oom = 1;
        free(h);
    }
    gpuenv_check *c;
    if (denied.n) {
        c = gpuenv_add(r, GPUENV_L1, "l1.devnodes", "device nodes", GPUENV_FAIL, "device_nodes_permission",
                       "This user may not open the NVIDIA device nodes",
                       "sudo usermod -aG video,render $USER (then log in again), or fix the "
                       "udev rule's mode",
                       "no read/write access to %s", denied.v[0]);
    } else if (missing.n) {
        c = gpuenv_add(r, GPUENV_L1, "l1.devnodes", "device nodes", r->root_mode ? GPUENV_WARN : GPUENV_FAIL,
                       "device_nodes_missing",
                       "NVIDIA device nodes are missing: the module is not loaded, or the "
                       "container was not given the GPU devices",
                       "sudo nvidia-modprobe -c=0 -u (host) or docker run --gpus all "
                       "(container)",
                       "missing %s", missing.v[0]);
    } else {
        c = gpuenv_add(r, GPUENV_L1, "l1.devnodes", "device nodes", GPUENV_OK, "", "", "",
                       "device nodes present and accessible");
    }
    for (size_t i = 0; i < present.n; i++) gpuenv_evidence(r, c, "%s", present.v[i]);
    for (size_t i = 0; i < missing.n; i++) gpuenv_evidence(r, c, "missing: %s", missing.v[i]);
    gpuenv_strv_free(&missing);
    gpuenv_strv_free(&denied);
    gpuenv_strv_free(&present);

    char *mods = gpuenv_root_read_text(r->root, "/proc/modules", 1 << 16);
    int uvm_mod = mods && strstr(mods, "nvidia_uvm ") != NULL;
    int uvm_dev = gpuenv_root_exists(r->root, "/dev/nvidia-uvm");
    free(mods);
    if (uvm_mod || uvm_dev)
        gpuenv_add(r, GPUENV_L1, "l1.uvm", "nvidia_uvm", GPUENV_OK, "", "", "", "nvidia_uvm %s",
                   uvm_mod ? "module loaded" : "device node present");
    else
        gpuenv_add(r, GPUENV_L1, "l1.uvm", "nvidia_uvm", r->facts.kernel_driver[0] ? GPUENV_FAIL : GPUENV_WARN,
                   "nvidia_uvm_missing", "nvidia_uvm (needed by CUDA) is not loaded; cuInit fails with error 999 or 3",
                   "sudo modprobe nvidia_uvm (or nvidia-modprobe -u -c=0)",
                   "no nvidia_uvm in /proc/modules and no /dev/nvidia-uvm");
}

/* ------------------------------------------------------------------ L5 */

/* The engine's own self-test (load the module, create a GPU backend: a
 * context, a stream, cuDNN and cuBLAS handles). The core (src/rt/cuda_loader.c)
 * provides it; a program without the runtime gets this stand-in. */
__attribute__((weak)) int lector_engine_gpu_selftest(int device, char *msg, size_t len)
{
    (void)device;
    snprintf(msg, len, "this program has no Lector runtime to self-test");
    return -2;
}

void gpuenv_check_engine(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    if (r->root_mode) {
        gpuenv_add(r, GPUENV_L5, "l5.module", "Lector CUDA module", GPUENV_SKIP, "", "", "",
                   "examining a tree (--root): the module is checked on the live system only");
        return;
    }
    char path[4200];
    int where = gpuenv_cuda_module_path(path, sizeof path);
    if (where) {
        gpuenv_add(r, GPUENV_L5, "l5.module", "Lector CUDA module", GPUENV_WARN, "lector_cuda_module_missing",
                   "liblector-cuda.so is not installed next to lector (a build without the CUDA toolkit, "
                   "or a copied binary); lector runs on the CPU",
                   "build with the CUDA toolkit (cmake -DLECTOR_CUDA=ON) or use the offline bundle, "
                   "or set LECTOR_CUDA_MODULE=/path/to/liblector-cuda.so",
                   "not found: %s%s", path, where == -2 ? " (or ../lib/)" : "");
        return;
    }
    gpuenv_ctx ctx;
    gpuenv_obj o;
    memset(&o, 0, sizeof o);
    if (gpuenv_ctx_init(&ctx, NULL, NULL)) {
        r->oom = 1;
        return;
    }
    if (gpuenv_obj_open(&ctx, path, &o)) {
        gpuenv_add(r, GPUENV_L5, "l5.module", "Lector CUDA module", GPUENV_FAIL, "lector_cuda_module_bad",
                   "the file is not a loadable ELF shared object", "reinstall lector", "%s", path);
        gpuenv_ctx_free(&ctx);
        return;
    }
    /* DT_NEEDED: cuBLAS and cuDNN are preloaded by the loader from where
     * gpuenv_find_best finds them; the rest must resolve as ld.so would */
    gpuenv_check *c = gpuenv_add(r, GPUENV_L5, "l5.module", "Lector CUDA module", GPUENV_OK, "", "", "", "%s", path);
    int missing = 0, cuda_major = 13;
    for (size_t i = 0; i < o.elf.needed.n; i++)
        if (!strncmp(o.elf.needed.v[i], "libcublas.so.", 13)) cuda_major = atoi(o.elf.needed.v[i] + 13);
    for (size_t i = 0; c && i < o.elf.needed.n; i++) {
        const char *nm = o.elf.needed.v[i];
        gpuenv_libinfo li;
        int found;
        if (!strncmp(nm, "libcublas", 9) || !strncmp(nm, "libcudnn", 8)) {
            const char *stem = !strncmp(nm, "libcublasLt", 11) ? "cublasLt"
                               : !strncmp(nm, "libcublas", 9)  ? "cublas"
                                                               : "cudnn";
            /* the loader asks for the module's CUDA major (cuBLAS's SONAME) */
            found = !gpuenv_find_best(NULL, stem, cuda_major, &li);
        } else {
            found = !gpuenv_resolve_library(NULL, NULL, nm, &li);
        }
        if (found)
            gpuenv_evidence(r, c, "needs %s -> %s", nm, li.path);
        else {
            gpuenv_evidence(r, c, "needs %s -> NOT FOUND", nm);
            missing++;
        }
    }
    if (c && missing) {
        gpuenv_add(r, GPUENV_L5, "l5.module_deps", "CUDA module dependencies", GPUENV_FAIL, "lector_cuda_deps_missing",
                   "a library the CUDA module needs (cuBLAS or cuDNN of its CUDA major) cannot be found",
                   "install the CUDA toolkit's cuBLAS and cuDNN 9 for this CUDA major (or the pip wheels "
                   "nvidia-cublas-cu13 / nvidia-cudnn-cu13) and run lector doctor again",
                   "%d of %zu DT_NEEDED entries unresolved (see the evidence of l5.module)", missing, o.elf.needed.n);
    }
    /* kernels: the module's .nv_fatbin against every GPU */
    gpuenv_fatbin fb;
    if (o.elf.fatbin_size && !gpuenv_fatbin_scan(o.elf.fatbin, o.elf.fatbin_size, &fb)) {
        char *d = gpuenv_fatbin_describe(&fb);
        int bad = 0;
        for (int g = 0; g < r->facts.n_gpus; g++) {
            const gpuenv_gpu *gp = &r->facts.gpus[g];
            if (gp->cc_major && !gpuenv_fatbin_runs_on(&fb, gp->cc_major, gp->cc_minor)) {
                bad++;
                gpuenv_add(r, GPUENV_L5, "l5.kernels", "CUDA module kernels", GPUENV_FAIL, "lector_no_kernels_for_gpu",
                           "liblector-cuda.so has no machine code and no PTX this GPU can run",
                           "rebuild with CMAKE_CUDA_ARCHITECTURES including this GPU's compute capability",
                           "GPU %d %s is sm_%d%d; the module has %s", g, gp->name, gp->cc_major, gp->cc_minor,
                           d ? d : "?");
            }
        }
        if (!bad)
            gpuenv_add(r, GPUENV_L5, "l5.kernels", "CUDA module kernels", GPUENV_OK, "", "", "", "%s%s", d ? d : "?",
                       r->facts.n_gpus ? " (runs on every GPU found)" : "");
        free(d);
    }
    gpuenv_obj_close(&o);
    gpuenv_ctx_free(&ctx);
    /* self-test through the real loader, when a GPU answered in the layers above */
    if (!r->facts.gpu_usable) {
        gpuenv_add(r, GPUENV_L5, "l5.selftest", "Engine self-test", GPUENV_SKIP, "", "", "",
                   "no usable GPU in the layers above");
        return;
    }
    char msg[600];
    int st = lector_engine_gpu_selftest(0, msg, sizeof msg);
    if (st == -2)
        gpuenv_add(r, GPUENV_L5, "l5.selftest", "Engine self-test", GPUENV_SKIP, "", "", "", "%s", msg);
    else if (st)
        gpuenv_add(r, GPUENV_L5, "l5.selftest", "Engine self-test", GPUENV_FAIL, "lector_cuda_selftest_failed",
                   "the CUDA backend could not start on GPU 0", "see the finding; `lector explain` the message", "%s",
                   msg);
    else
        gpuenv_add(r, GPUENV_L5, "l5.selftest", "Engine self-test", GPUENV_OK, "", "", "", "%s", msg);
}

/* ------------------------------------------------------------------ run */

/* Sandboxed kernels (gVisor) and some containers hide /proc/driver/nvidia
 * and /proc/modules while the driver works. Once NVML or a CUDA context has
 * proven the driver alive, a missing /proc file is not a failure. */
static void reconcile(lector_doctor_report *r)
{
    gpuenv_layer *L = &r->layers[GPUENV_L1];
    for (size_t i = 0; i < L->n; i++) {
        gpuenv_check *c = &L->checks[i];
        int drv = strcmp(c->code, "kernel_module_not_loaded") == 0 && r->facts.nvml_ok;
        int uvm = strcmp(c->code, "nvidia_uvm_missing") == 0 && r->facts.gpu_usable;
        if (!drv && !uvm) continue;
        char *f = drv ? gpuenv_asprintf("NVIDIA driver %s answers through NVML; "
                                        "/proc/driver/nvidia/version is not visible here "
                                        "(sandboxed /proc, e.g. gVisor)",
                                        r->facts.nvml_driver)
                      : strdup("CUDA contexts work; nvidia_uvm is not visible in /proc here "
                               "(sandboxed /proc)");
        if (!f) {
            r->oom = 1;
            return;
        }
        free(c->finding);
        c->finding = f;
        c->status = GPUENV_OK;
        c->code[0] = c->cause[0] = c->fix[0] = 0;
    }
}

void lector_doctor_default_options(lector_doctor_options *opt) { memset(opt, 0, sizeof *opt); }

lector_doctor_report *lector_doctor_run(const lector_doctor_options *opt)
{
    lector_doctor_options defaults;
    if (!opt) {
        lector_doctor_default_options(&defaults);
        opt = &defaults;
    }
    lector_doctor_report *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    for (int i = 0; i < GPUENV_NLAYERS; i++) {
        r->layers[i].id = layer_ids[i];
        r->layers[i].name = layer_names[i];
    }
    if (opt->root && opt->root[0] && strcmp(opt->root, "/") != 0) {
        r->root_mode = 1;
        if (!(r->root = strdup(opt->root))) {
            free(r);
            return NULL;
        }
    }
    r->facts.cuda_device_count = -1;
    r->verbose = opt->verbose;
    gpuenv_check_system(r, opt);
    gpuenv_check_kernel(r, opt);
    gpuenv_check_nvml(r, opt);
    gpuenv_check_cudadrv(r, opt);
    reconcile(r);
    gpuenv_check_libs(r, opt);
    gpuenv_check_engine(r, opt);
    if (opt->n_inspect) gpuenv_check_inspect(r, opt);
    if (r->oom) {
        lector_doctor_report_free(r);
        return NULL;
    }
    return r;
}

void lector_doctor_report_free(lector_doctor_report *r)
{
    if (!r) return;
    for (int i = 0; i < GPUENV_NLAYERS; i++) {
        gpuenv_layer *L = &r->layers[i];
        for (size_t j = 0; j < L->n; j++) {
            gpuenv_check *c = &L->checks[j];
            free(c->id);
            free(c->title);
            free(c->finding);
            free(c->code);
            free(c->cause);
            free(c->fix);
            gpuenv_strv_free(&c->evidence);
        }
        free(L->checks);
    }
    free(r->root);
    free(r->inspect_text);
    cJSON_Delete((cJSON *)r->inspect_json);
    free(r);
}
