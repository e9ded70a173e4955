/* fixes.c - runnable commands built from what the loader emulation found:
 * the real directory, the real list it sits in, the real configuration file
 * that names it. A fix never holds a placeholder and never puts a file path
 * where a directory belongs. Under --root the commands are for inside the
 * tree (as in the container or image it holds). */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static int same_dir(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    while (la > 1 && a[la - 1] == '/') la--;
    while (lb > 1 && b[lb - 1] == '/') lb--;
    return la == lb && strncmp(a, b, la) == 0;
}

static char *export_list(const char *var, const gpuenv_strv *items, const char *sep)
{
    if (!items->n) return gpuenv_asprintf("unset %s", var);
    char *joined = gpuenv_strv_join(items, sep);
    char *q = joined ? gpuenv_shell_quote(joined) : NULL;
    char *s = q ? gpuenv_asprintf("export %s=%s", var, q) : NULL;
    lector__free(joined);
    lector__free(q);
    return s;
}

char *doctor_fix_llp_without(const gpuenv_ldso *L, const char *dir)
{
    gpuenv_strv keep = {0};
    for (size_t i = 0; i < L->llp.n; i++)
        if (L->llp.v[i][0] && !same_dir(L->llp.v[i], dir) && gpuenv_strv_push(&keep, L->llp.v[i])) {
            gpuenv_strv_free(&keep);
            return NULL;
        }
    char *s = export_list("LD_LIBRARY_PATH", &keep, ":");
    gpuenv_strv_free(&keep);
    return s;
}

char *doctor_fix_llp_prepend(const char *dir)
{
    char *q = gpuenv_shell_quote(dir);
    char *s = q ? gpuenv_asprintf("export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}", q) : NULL;
    lector__free(q);
    return s;
}

char *doctor_fix_llp_replace(const gpuenv_ldso *L, const char *bad_dir, const char *good_dir)
{
    gpuenv_strv keep = {0};
    int rc = gpuenv_strv_push(&keep, good_dir);
    for (size_t i = 0; i < L->llp.n && !rc; i++)
        if (L->llp.v[i][0] && !same_dir(L->llp.v[i], bad_dir) && !same_dir(L->llp.v[i], good_dir))
            rc = gpuenv_strv_push(&keep, L->llp.v[i]);
    char *s = rc ? NULL : export_list("LD_LIBRARY_PATH", &keep, ":");
    gpuenv_strv_free(&keep);
    return s;
}

char *doctor_fix_preload_without(const gpuenv_ldso *L, const char *item)
{
    for (size_t i = 0; i < L->preload.n; i++) {
        if (strcmp(L->preload.v[i], item) != 0) continue;
        if (strcmp(L->preload_from.v[i], "LD_PRELOAD") != 0)
            return gpuenv_asprintf("sudo sed -i '\\|^%s$|d' /etc/ld.so.preload", item);
        gpuenv_strv keep = {0};
        for (size_t k = 0; k < L->preload.n; k++)
            if (strcmp(L->preload_from.v[k], "LD_PRELOAD") == 0 && strcmp(L->preload.v[k], item) != 0 &&
                gpuenv_strv_push(&keep, L->preload.v[k])) {
                gpuenv_strv_free(&keep);
                return NULL;
            }
        char *s = export_list("LD_PRELOAD", &keep, " ");
        gpuenv_strv_free(&keep);
        return s;
    }
    return lector__strdup("unset LD_PRELOAD");
}

char *doctor_fix_conf_without(const char *root, const char *dir)
{
    gpuenv_ldconf conf;
    if (gpuenv_ldconf_read(root, &conf)) return NULL;
    const char *file = NULL;
    int alone = 1;
    for (size_t i = 0; i < conf.dirs.n; i++)
        if (same_dir(conf.dirs.v[i], dir)) file = conf.files.v[i];
    for (size_t i = 0; file && i < conf.dirs.n; i++)
        if (strcmp(conf.files.v[i], file) == 0 && !same_dir(conf.dirs.v[i], dir)) alone = 0;
    char *s = NULL;
    if (!file)
        s = gpuenv_asprintf("sudo ldconfig");
    else if (alone && strcmp(file, "/etc/ld.so.conf") != 0)
        s = gpuenv_asprintf("sudo rm %s && sudo ldconfig", file);
    else
        s = gpuenv_asprintf("sudo sed -i '\\|^%s/*$|d' %s && sudo ldconfig", dir, file);
    gpuenv_ldconf_free(&conf);
    return s;
}

/* A path under a home, /tmp or a working tree needs no sudo. */
static const char *sudo_for(const gpuenv_ldso *L, const char *path)
{
    if (strncmp(path, "/home/", 6) == 0 || strncmp(path, "/tmp/", 5) == 0 || strncmp(path, "/root/", 6) == 0) return "";
    for (size_t i = 0; i < L->llp.n; i++)
        if (L->llp.v[i][0] && strncmp(path, L->llp.v[i], strlen(L->llp.v[i])) == 0) return "";
    return "sudo ";
}

static char *move_away(const gpuenv_ldso *L, const char *path, int ldconfig)
{
    char *q = gpuenv_shell_quote(path);
    char *d = q ? gpuenv_asprintf("%s.disabled", path) : NULL;
    char *qd = d ? gpuenv_shell_quote(d) : NULL;
    const char *sudo = sudo_for(L, path);
    char *s =
        qd ? gpuenv_asprintf("%smv %s %s%s%s", sudo, q, qd, ldconfig ? " && " : "", ldconfig ? "sudo ldconfig" : "")
           : NULL;
    lector__free(q);
    lector__free(d);
    lector__free(qd);
    return s;
}

/* In a directory ldconfig scans, moving a SONAME link away does nothing:
 * the next ldconfig makes it again from the real file. Move the real file
 * (and drop the link that would dangle). */
static char *move_away_real(const gpuenv_ldso *L, const char *path)
{
    char *real = gpuenv_root_realpath(L->root, path);
    if (!real || strcmp(real, path) == 0) {
        lector__free(real);
        return move_away(L, path, 1);
    }
    char *mv = move_away(L, real, 0);
    char *q = gpuenv_shell_quote(path);
    char *s = mv && q ? gpuenv_asprintf("%s && %srm %s && sudo ldconfig", mv, sudo_for(L, path), q) : NULL;
    lector__free(mv);
    lector__free(q);
    lector__free(real);
    return s;
}

char *doctor_fix_not_this(const lector_doctor_report *r, const gpuenv_find *f, int move_file)
{
    const gpuenv_ldso *L = &r->ldso;
    if (!f->path) return lector__strdup("lector doctor -v (the search found no file to act on)");
    switch (f->via) {
    case GPUENV_VIA_PRELOAD:
        for (size_t i = 0; i < L->preload.n; i++)
            if (strcmp(L->preload.v[i], f->path) == 0) return doctor_fix_preload_without(L, f->path);
        return lector__strdup("unset LD_PRELOAD");
    case GPUENV_VIA_LD_LIBRARY_PATH:
        if (!move_file && f->list_item) return doctor_fix_llp_without(L, f->list_item);
        return move_away(L, f->path, 0);
    case GPUENV_VIA_CACHE: {
        if (!move_file) {
            char *dir = gpuenv_dirname(f->path);
            int configured = 0;
            gpuenv_ldconf conf;
            if (dir && gpuenv_ldconf_read(L->root, &conf) == 0) {
                for (size_t i = 0; i < conf.dirs.n; i++) configured |= same_dir(conf.dirs.v[i], dir);
                gpuenv_ldconf_free(&conf);
            }
            char *s = dir && configured ? doctor_fix_conf_without(L->root, dir) : NULL;
            lector__free(dir);
            if (s || configured) return s;
        }
        return move_away_real(L, f->path);
    }
    case GPUENV_VIA_DEFAULT: return move_away_real(L, f->path);
    default: return move_away(L, f->path, 0);
    }
}

char *doctor_fix_path_away(const lector_doctor_report *r, const char *path)
{
    const gpuenv_ldso *L = &r->ldso;
    char *dir = gpuenv_dirname(path);
    if (!dir) return NULL;
    for (size_t i = 0; i < L->llp.n; i++)
        if (L->llp.v[i][0] && same_dir(L->llp.v[i], dir)) {
            lector__free(dir);
            return doctor_fix_llp_without(L, L->llp.v[i]);
        }
    lector__free(dir);
    for (size_t i = 0; i < L->preload.n; i++)
        if (strcmp(L->preload.v[i], path) == 0) return doctor_fix_preload_without(L, path);
    return move_away(L, path, 1);
}

static int debian_like(const lector_doctor_report *r)
{
    const char *id = r->facts.os_id;
    return !id[0] || strcmp(id, "ubuntu") == 0 || strcmp(id, "debian") == 0 || strcmp(id, "pop") == 0 ||
           strcmp(id, "linuxmint") == 0;
}

char *doctor_fix_remove_driver_userspace(const lector_doctor_report *r, const char *version, const gpuenv_find *f)
{
    int branch = gpuenv_ver_major(version);
    if (branch > 0 && debian_like(r))
        return gpuenv_asprintf("sudo apt-get remove --purge 'libnvidia-compute-%d*' && sudo ldconfig", branch);
    return doctor_fix_not_this(r, f, 1);
}

char *doctor_fix_driver_userspace(const lector_doctor_report *r)
{
    if (r->facts.wsl)
        return lector__strdup("install or update the NVIDIA driver on the Windows side (it provides "
                              "/usr/lib/wsl/lib/libcuda.so.1); do not install a Linux driver inside WSL2");
    if (r->facts.in_container) return lector__strdup(DOCTOR_FIX_CONTAINER_GPUS);
    int branch = gpuenv_ver_major(r->facts.kernel_driver);
    if (branch <= 0) return lector__strdup("sudo apt install nvidia-driver-580");
    if (strcmp(r->facts.os_id, "debian") == 0) return lector__strdup("sudo apt install nvidia-driver libcuda1");
    if (debian_like(r)) return gpuenv_asprintf("sudo apt install libnvidia-compute-%d", branch);
    return gpuenv_asprintf("sudo dnf install nvidia-driver-cuda-libs (driver branch %d)", branch);
}

char *doctor_fix_driver_upgrade(const lector_doctor_report *r, const char *min_version)
{
    int branch = gpuenv_ver_major(min_version);
    if (r->facts.wsl) return gpuenv_asprintf("install NVIDIA Windows driver >= %s (WSL2 uses it)", min_version);
    if (strcmp(r->facts.os_id, "debian") == 0)
        return gpuenv_asprintf("sudo apt install nvidia-driver (>= %s, from the CUDA repository), then reboot",
                               min_version);
    if (debian_like(r) || r->facts.in_container)
        return gpuenv_asprintf("sudo apt install nvidia-driver-%d && sudo reboot%s", branch,
                               r->facts.in_container ? " (on the host: containers use the host's driver)" : "");
    return gpuenv_asprintf("sudo dnf module install nvidia-driver:%d && sudo reboot", branch);
}

/* The pip package that ships a CUDA library. Up to CUDA 12 the toolkit's
 * wheels carry the CUDA major in their name (nvidia-cublas-cu12); from
 * CUDA 13 they do not (nvidia-cublas 13.x); cuDNN and NCCL keep it
 * (nvidia-cudnn-cu13). */
static const struct {
    const char *stem, *pkg;
    int keeps_suffix;
} pip_pkgs[] = {{"cublasLt", "cublas", 0}, {"cublas", "cublas", 0},      {"cudart", "cuda-runtime", 0},
                {"cudnn", "cudnn", 1},     {"nvrtc", "cuda-nvrtc", 0},   {"cufft", "cufft", 0},
                {"curand", "curand", 0},   {"cusparse", "cusparse", 0},  {"cusolver", "cusolver", 0},
                {"nccl", "nccl", 1},       {"nvJitLink", "nvjitlink", 0}};

/* The stem of a CUDA library name ("libcublasLt.so.12" -> "cublasLt"). */
const char *doctor_cuda_stem(const char *name)
{
    const char *base = gpuenv_basename(name);
    if (strncmp(base, "lib", 3) == 0) base += 3;
    const char *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < sizeof pip_pkgs / sizeof *pip_pkgs; i++) {
        size_t n = strlen(pip_pkgs[i].stem);
        if (strncmp(base, pip_pkgs[i].stem, n) == 0 && (base[n] == '.' || base[n] == '_' || !base[n]) && n > best_len) {
            best = pip_pkgs[i].stem;
            best_len = n;
        }
    }
    return best;
}

int doctor_pip_package(const char *stem, int cuda_major, char *buf, size_t len)
{
    if (cuda_major <= 0) cuda_major = 12;
    for (size_t i = 0; i < sizeof pip_pkgs / sizeof *pip_pkgs; i++) {
        if (strcmp(pip_pkgs[i].stem, stem) != 0) continue;
        if (cuda_major >= 13 && !pip_pkgs[i].keeps_suffix)
            snprintf(buf, len, "nvidia-%s", pip_pkgs[i].pkg);
        else
            snprintf(buf, len, "nvidia-%s-cu%d", pip_pkgs[i].pkg, cuda_major);
        return 0;
    }
    return -1;
}

char *doctor_fix_pip(const char *const *stems, size_t n, int cuda_major)
{
    gpuenv_buf b = {0};
    gpuenv_buf_puts(&b, "pip install");
    for (size_t i = 0; i < n; i++) {
        char pkg[64];
        int dup = 0;
        if (doctor_pip_package(stems[i], cuda_major, pkg, sizeof pkg)) continue;
        for (size_t k = 0; k < i; k++) {
            char prev[64];
            dup |= doctor_pip_package(stems[k], cuda_major, prev, sizeof prev) == 0 && strcmp(prev, pkg) == 0;
        }
        if (!dup) gpuenv_buf_printf(&b, " %s", pkg);
    }
    return gpuenv_buf_take(&b);
}

char *doctor_fix_install_lib(const char *soname, int cuda_major)
{
    const char *stem = doctor_cuda_stem(soname);
    if (stem) {
        /* the SONAME's own major is the CUDA major for these */
        const char *so = strstr(soname, ".so.");
        int m = so ? gpuenv_ver_major(so + 4) : -1;
        if ((strcmp(stem, "cudart") == 0 || strcmp(stem, "cublas") == 0 || strcmp(stem, "cublasLt") == 0 ||
             strcmp(stem, "nvrtc") == 0 || strcmp(stem, "nvJitLink") == 0) &&
            m >= 10)
            cuda_major = m;
        /* cuDNN 8 has no CUDA 13 build */
        if (strcmp(stem, "cudnn") == 0 && m == 8 && cuda_major > 12) cuda_major = 12;
        return doctor_fix_pip(&stem, 1, cuda_major);
    }
    char *q = gpuenv_shell_quote(soname);
    /* another library: the distribution's package that ships the file */
    char *s = q ? gpuenv_asprintf("sudo apt-get install -y \"$(apt-file search -l %s | head -n1)\"", q) : NULL;
    lector__free(q);
    return s;
}

char *doctor_fix_reinstall_cudnn(const lector_doctor_report *r, const char *dir, int major, int cuda_major)
{
    if (cuda_major <= 0) cuda_major = 12;
    if (major == 8 && cuda_major > 12) cuda_major = 12; /* no cuDNN 8 for CUDA 13 */
    int wheel = dir && (strstr(dir, "-packages/") != NULL);
    if (!wheel && dir && debian_like(r) &&
        (strcmp(dir, "/usr/lib/x86_64-linux-gnu") == 0 || strcmp(dir, "/lib/x86_64-linux-gnu") == 0)) {
        if (major >= 9)
            return gpuenv_asprintf("sudo apt-get install --reinstall libcudnn%d-cuda-%d", major, cuda_major);
        return gpuenv_asprintf("sudo apt-get install --reinstall libcudnn%d", major);
    }
    if (major == 8) return gpuenv_asprintf("pip install --force-reinstall 'nvidia-cudnn-cu%d==8.*'", cuda_major);
    return gpuenv_asprintf("pip install --force-reinstall nvidia-cudnn-cu%d", cuda_major);
}
