/* check_kernel.c - L1: the NVIDIA kernel module (/proc/driver/nvidia), the
 * device nodes, nvidia_uvm, and what takes the module's place (nouveau,
 * WSL2's /dev/dxg, a container started without GPUs). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "util/util.h"

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

static const char *const nouveau_fix =
    "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf "
    "&& sudo update-initramfs -u && sudo reboot";

static void check_module(lector_doctor_report *r, const char *mods, int image)
{
    char *v = gpuenv_root_read_text(r->root, "/proc/driver/nvidia/version", 4096);
    if (v) {
        parse_nvrm(v, r->facts.kernel_driver, sizeof r->facts.kernel_driver);
        doctor_check *c =
            doctor_add(r, DOCTOR_L1, "l1.driver", "kernel module", DOCTOR_OK, 0, "", "", "", "NVIDIA kernel module %s",
                       r->facts.kernel_driver[0] ? r->facts.kernel_driver : "?");
        doctor_evidence(r, c, "%.*s", (int)strcspn(v, "\n"), v);
        lector__free(v);
        gpuenv_strv gpus = {0};
        if (gpuenv_root_list(r->root, "/proc/driver/nvidia/gpus", &gpus) == 0) r->facts.proc_gpus = (int)gpus.n;
        gpuenv_strv_free(&gpus);
        return;
    }
    if (r->facts.wsl) {
        doctor_add(r, DOCTOR_L1, "l1.driver", "kernel module", DOCTOR_OK, 0, "", "", "",
                   "WSL2: the NVIDIA driver runs in Windows; Linux reaches the GPU through /dev/dxg");
        return;
    }
    if (image) {
        doctor_add(r, DOCTOR_L1, "l1.driver", "kernel module", DOCTOR_SKIP, 0, "", "", "",
                   "the tree has no /proc/driver (an image, not a running system): the host provides the driver");
        return;
    }
    if (r->facts.nouveau) {
        doctor_add(r, DOCTOR_L1, "l1.driver", "kernel module", DOCTOR_FAIL, DOCTOR_HITS_GPU, "nouveau_loaded",
                   "The open-source nouveau driver owns the GPU, so the NVIDIA kernel module cannot bind to it",
                   nouveau_fix, "no /proc/driver/nvidia/version; nouveau is in /proc/modules");
        return;
    }
    int nv_mod = mods && strstr(mods, "\nnvidia ") != NULL;
    doctor_add(r, DOCTOR_L1, "l1.driver", "kernel module", DOCTOR_FAIL, DOCTOR_HITS_GPU, "kernel_module_not_loaded",
               "The NVIDIA kernel driver is not loaded (/proc/driver/nvidia/version is missing): no driver "
               "installed, a kernel update without a DKMS rebuild, or Secure Boot refusing the module",
               nv_mod ? "sudo rmmod nvidia && sudo modprobe nvidia" : "sudo modprobe nvidia",
               "no /proc/driver/nvidia/version");
}

static void check_nodes(lector_doctor_report *r, int image)
{
    if (r->facts.wsl) {
        int dxg = gpuenv_root_exists(r->root, "/dev/dxg");
        doctor_add(r, DOCTOR_L1, "l1.devnodes", "device nodes", dxg || r->root_mode ? DOCTOR_OK : DOCTOR_FAIL,
                   DOCTOR_HITS_GPU, dxg || r->root_mode ? "" : "wsl_no_dxg",
                   "WSL2 without /dev/dxg: GPU paravirtualization is off (old Windows build or WSL1)",
                   "wsl --update (in Windows), then wsl --shutdown", "%s", dxg ? "/dev/dxg present" : "no /dev/dxg");
        return;
    }
    if (image) {
        doctor_add(r, DOCTOR_L1, "l1.devnodes", "device nodes", DOCTOR_SKIP, 0, "", "", "",
                   "an image: the container runtime creates /dev/nvidia* at start");
        return;
    }
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
        lector__free(h);
    }
    doctor_check *c;
    if (denied.n) {
        c = doctor_add(r, DOCTOR_L1, "l1.devnodes", "device nodes", DOCTOR_FAIL, DOCTOR_HITS_GPU,
                       "device_nodes_permission", "This user may not open the NVIDIA device nodes",
                       "sudo usermod -aG video,render $USER (then log in again)", "no read/write access to %s",
                       denied.v[0]);
    } else if (missing.n && r->facts.in_container && gpuenv_strv_has(&missing, "/dev/nvidiactl")) {
        c = doctor_add(r, DOCTOR_L1, "l1.devnodes", "device nodes", DOCTOR_FAIL, DOCTOR_HITS_GPU,
                       "container_without_gpus",
                       "This container was started without GPUs: no /dev/nvidia* (and no driver libraries) were "
                       "given to it",
                       DOCTOR_FIX_CONTAINER_GPUS, "missing %s", missing.v[0]);
    } else if (missing.n && gpuenv_strv_has(&missing, "/dev/nvidia-uvm") && missing.n == 1) {
        c = doctor_add(r, DOCTOR_L1, "l1.devnodes", "device nodes", DOCTOR_FAIL, DOCTOR_HITS_GPU, "nvidia_uvm_missing",
                       "/dev/nvidia-uvm is missing: nvidia_uvm is not loaded; cuInit fails with error 999 or 3",
                       "sudo modprobe nvidia_uvm && sudo nvidia-modprobe -u -c=0", "missing /dev/nvidia-uvm");
    } else if (missing.n) {
        c = doctor_add(r, DOCTOR_L1, "l1.devnodes", "device nodes", DOCTOR_FAIL, DOCTOR_HITS_GPU,
                       "device_nodes_missing",
                       "NVIDIA device nodes are missing: the module is not loaded or its nodes were not created",
                       r->facts.in_container ? DOCTOR_FIX_CONTAINER_GPUS : "sudo nvidia-modprobe -c=0 -u", "missing %s",
                       missing.v[0]);
    } else {
        c = doctor_add(r, DOCTOR_L1, "l1.devnodes", "device nodes", DOCTOR_OK, 0, "", "", "",
                       "device nodes present and accessible");
    }
    for (size_t i = 0; i < present.n; i++) doctor_evidence(r, c, "%s", present.v[i]);
    for (size_t i = 0; i < missing.n; i++) doctor_evidence(r, c, "missing: %s", missing.v[i]);
    gpuenv_strv_free(&missing);
    gpuenv_strv_free(&denied);
    gpuenv_strv_free(&present);
}

static void check_uvm(lector_doctor_report *r, const char *mods, int image)
{
    if (r->facts.wsl || image || !r->facts.kernel_driver[0]) return;
    int uvm_mod = mods && strstr(mods, "nvidia_uvm ") != NULL;
    int uvm_dev = gpuenv_root_exists(r->root, "/dev/nvidia-uvm");
    doctor_check *dev = doctor_find_check(r, "l1.devnodes", NULL);
    if (uvm_mod || uvm_dev)
        doctor_add(r, DOCTOR_L1, "l1.uvm", "nvidia_uvm", DOCTOR_OK, 0, "", "", "", "nvidia_uvm %s",
                   uvm_mod ? "module loaded" : "device node present");
    else if (!dev || strcmp(dev->code, "nvidia_uvm_missing") != 0)
        doctor_add(r, DOCTOR_L1, "l1.uvm", "nvidia_uvm", DOCTOR_FAIL, DOCTOR_HITS_GPU, "nvidia_uvm_missing",
                   "nvidia_uvm (needed by CUDA) is not loaded; cuInit fails with error 999 or 3",
                   "sudo modprobe nvidia_uvm && sudo nvidia-modprobe -u -c=0",
                   "no nvidia_uvm in /proc/modules and no /dev/nvidia-uvm");
}

void doctor_check_kernel(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    char *raw = gpuenv_root_read_text(r->root, "/proc/modules", 1 << 16);
    /* a leading newline lets "\nname " find the first line too */
    char *mods = raw ? doctor_own(r, gpuenv_asprintf("\n%s", raw)) : NULL;
    lector__free(raw);
    r->facts.nouveau = mods && strstr(mods, "\nnouveau ") != NULL;
    int image = r->root_mode && !gpuenv_root_exists(r->root, "/proc/driver") && !r->facts.wsl;
    check_module(r, mods, image);
    check_nodes(r, image);
    check_uvm(r, mods, image);
    lector__free(mods);
}
