/* check_system.c - L0: the operating system, the container, WSL2, and the
 * environment the loader and CUDA read (CUDA_VISIBLE_DEVICES,
 * LD_LIBRARY_PATH, LD_PRELOAD, /etc/ld.so.preload). A problem found here is
 * reported as a warning; the layer it breaks reports the failure. */
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "doctor/doctor.h"
#include "util/util.h"

static void os_release(lector_doctor_report *r, char *pretty, size_t len)
{
    snprintf(pretty, len, "unknown");
    char *osr = gpuenv_root_read_text(r->root, "/etc/os-release", 8192);
    if (!osr) osr = gpuenv_root_read_text(r->root, "/usr/lib/os-release", 8192);
    if (!osr) return;
    for (char *line = osr; *line;) {
        size_t n = strcspn(line, "\n");
        const char *key = NULL;
        if (strncmp(line, "PRETTY_NAME=", 12) == 0) key = "P";
        if (strncmp(line, "ID=", 3) == 0) key = "I";
        if (key) {
            char *v = line + (key[0] == 'P' ? 12 : 3);
            size_t vn = n - (size_t)(v - line);
            if (vn && *v == '"') v++, vn--;
            if (vn && v[vn - 1] == '"') vn--;
            if (key[0] == 'P')
                snprintf(pretty, len, "%.*s", (int)vn, v);
            else
                snprintf(r->facts.os_id, sizeof r->facts.os_id, "%.*s", (int)vn, v);
        }
        line += n + (line[n] != 0);
    }
    lector__free(osr);
}

/* WSL2: the GPU comes from Windows through /dev/dxg and /usr/lib/wsl/lib. */
static int detect_wsl(lector_doctor_report *r)
{
    if (gpuenv_root_exists(r->root, "/usr/lib/wsl/lib") || gpuenv_root_exists(r->root, "/dev/dxg")) return 1;
    if (r->root_mode) return 0;
    char *v = gpuenv_root_read_text(NULL, "/proc/version", 4096);
    int wsl = v && (strstr(v, "microsoft") || strstr(v, "Microsoft") || strstr(v, "WSL"));
    lector__free(v);
    return wsl;
}

static void check_os(lector_doctor_report *r)
{
    char pretty[160];
    os_release(r, pretty, sizeof pretty);
    r->facts.wsl = detect_wsl(r);
    const char *wsl = r->facts.wsl ? " (WSL2)" : "";
    if (r->root_mode) {
        doctor_add(r, DOCTOR_L0, "l0.os", "OS", DOCTOR_OK, 0, "", "", "", "%s%s (tree at %s), glibc %d.%d", pretty, wsl,
                   r->root, r->ldso.glibc / 100, r->ldso.glibc % 100);
        return;
    }
    struct utsname u;
    if (uname(&u)) memset(&u, 0, sizeof u);
    int x86 = strcmp(u.machine, "x86_64") == 0;
    doctor_add(r, DOCTOR_L0, "l0.os", "OS", x86 ? DOCTOR_OK : DOCTOR_WARN, DOCTOR_HITS_LECTOR | DOCTOR_HITS_NAMED,
               x86 ? "" : "not_x86_64", x86 ? "" : "Not x86_64: NVIDIA's x86_64 wheels and packages do not apply",
               x86 ? "" : "use the aarch64 (sbsa) CUDA packages and wheels", "%s%s, kernel %s, %s, glibc %s", pretty,
               wsl, u.release, u.machine, gnu_get_libc_version());
}

static void check_container(lector_doctor_report *r)
{
    const char *hint = NULL;
    if (gpuenv_root_exists(r->root, "/.dockerenv"))
        hint = "Docker (/.dockerenv)";
    else if (gpuenv_root_exists(r->root, "/run/.containerenv"))
        hint = "Podman (/run/.containerenv)";
    else if (!r->root_mode) {
        char *cg = gpuenv_root_read_text(NULL, "/proc/1/cgroup", 4096);
        if (cg && (strstr(cg, "docker") || strstr(cg, "kubepods") || strstr(cg, "containerd")))
            hint = "container (/proc/1/cgroup)";
        lector__free(cg);
    }
    r->facts.in_container = hint != NULL;
    doctor_add(r, DOCTOR_L0, "l0.container", "container", DOCTOR_OK, 0, "", "", "", "%s",
               hint ? hint : "no container detected");
}

static void check_cvd(lector_doctor_report *r, const lector_doctor_options *opt)
{
    const char *cvd = opt->cuda_visible_devices ? opt->cuda_visible_devices : getenv("CUDA_VISIBLE_DEVICES");
    if (!cvd) {
        doctor_add(r, DOCTOR_L0, "l0.cuda_visible_devices", "CUDA_VISIBLE_DEVICES", DOCTOR_OK, 0, "", "", "",
                   "unset (all GPUs visible)");
        return;
    }
    r->facts.cvd_set = 1;
    snprintf(r->facts.cvd, sizeof r->facts.cvd, "%s", cvd);
    /* CUDA reads the list up to its first entry that names no device; an
       empty list, -1 or a word hides every GPU */
    const char *p = cvd + strspn(cvd, " ");
    int hides = !*p || *p == '-' || strncasecmp(p, "none", 4) == 0 || strncasecmp(p, "void", 4) == 0 ||
                strncasecmp(p, "nodevfiles", 10) == 0;
    doctor_add(r, DOCTOR_L0, "l0.cuda_visible_devices", "CUDA_VISIBLE_DEVICES", hides ? DOCTOR_WARN : DOCTOR_OK,
               DOCTOR_HITS_GPU, hides ? "cuda_visible_devices_empty" : "",
               hides ? "CUDA_VISIBLE_DEVICES hides every GPU from CUDA" : "", hides ? "unset CUDA_VISIBLE_DEVICES" : "",
               "CUDA_VISIBLE_DEVICES=\"%s\"", cvd);
}

static void check_llp(lector_doctor_report *r)
{
    const gpuenv_ldso *L = &r->ldso;
    const char *bad_file = NULL, *stubs = NULL;
    for (size_t i = 0; i < L->llp.n; i++) {
        const char *d = L->llp.v[i];
        struct stat st;
        if (!d[0] || gpuenv_root_stat(r->root, d, &st)) continue;
        if (!S_ISDIR(st.st_mode) && !bad_file) bad_file = d;
        if (strstr(d, "/stubs") && !stubs) stubs = d;
    }
    doctor_check *c;
    if (stubs) {
        char *fix = doctor_own(r, doctor_fix_llp_without(L, stubs));
        c = doctor_add(r, DOCTOR_L0, "l0.ld_library_path", "LD_LIBRARY_PATH", DOCTOR_WARN, DOCTOR_HITS_GPU,
                       "ld_library_path_stubs",
                       "LD_LIBRARY_PATH names a toolkit stubs/ directory: its libcuda.so is a link-time stub "
                       "that cannot run anything",
                       fix, "%s", L->llp_raw);
        lector__free(fix);
    } else if (bad_file) {
        /* the file's directory in place of the file */
        char *dir = doctor_own(r, gpuenv_dirname(bad_file));
        gpuenv_strv items = {0};
        for (size_t i = 0; dir && i < L->llp.n; i++)
            if (L->llp.v[i][0] && gpuenv_strv_push(&items, strcmp(L->llp.v[i], bad_file) ? L->llp.v[i] : dir))
                r->oom = 1;
        char *list = doctor_own(r, gpuenv_strv_join(&items, ":"));
        char *q = list ? doctor_own(r, gpuenv_shell_quote(list)) : NULL;
        char *fix = q ? doctor_own(r, gpuenv_asprintf("export LD_LIBRARY_PATH=%s", q)) : NULL;
        gpuenv_strv_free(&items);
        lector__free(list);
        lector__free(q);
        c = doctor_add(r, DOCTOR_L0, "l0.ld_library_path", "LD_LIBRARY_PATH", DOCTOR_WARN, DOCTOR_HITS_NAMED,
                       "ld_library_path_file",
                       "LD_LIBRARY_PATH names a file, not a directory: the loader looks for FILE/libname "
                       "there and finds nothing",
                       fix ? fix : "", "%s holds the file %s", L->llp_raw, bad_file);
        lector__free(fix);
        lector__free(dir);
    } else {
        c = doctor_add(r, DOCTOR_L0, "l0.ld_library_path", "LD_LIBRARY_PATH", DOCTOR_OK, 0, "", "", "", "%s",
                       L->llp_raw && *L->llp_raw ? L->llp_raw : "(unset)");
    }
    for (size_t i = 0; i < L->llp.n; i++) {
        const char *d = L->llp.v[i];
        struct stat st;
        int e = d[0] ? gpuenv_root_stat(r->root, d, &st) : -1;
        doctor_evidence(r, c, "%s%s", d[0] ? d : "(empty: the working directory)",
                        e > 0                            ? " (does not exist)"
                        : e == 0 && !S_ISDIR(st.st_mode) ? " (a file)"
                                                         : "");
    }
}

static void check_preload(lector_doctor_report *r)
{
    const gpuenv_ldso *L = &r->ldso;
    if (!L->preload.n) {
        doctor_add(r, DOCTOR_L0, "l0.ld_preload", "LD_PRELOAD", DOCTOR_OK, 0, "", "", "",
                   "(unset, no /etc/ld.so.preload)");
        return;
    }
    /* what the loader maps for each item, before anything else */
    gpuenv_load ld;
    if (gpuenv_ldso_dlopen(L, "libc.so.6", &ld)) {
        r->oom = 1;
        return;
    }
    doctor_check *c = NULL;
    for (size_t i = 0; i < ld.preload_errors.n && !c; i++) {
        char *fix = doctor_own(r, doctor_fix_preload_without(L, L->preload.v[i]));
        c = doctor_add(r, DOCTOR_L0, "l0.ld_preload", "LD_PRELOAD", DOCTOR_WARN, DOCTOR_HITS_NAMED, "preload_missing",
                       "An object named in LD_PRELOAD or /etc/ld.so.preload cannot be loaded: every program "
                       "prints this error at start",
                       fix, "%s", ld.preload_errors.v[i]);
        lector__free(fix);
    }
    for (size_t i = 0; i < ld.n && !c; i++) {
        const gpuenv_obj *o = ld.obj[i];
        if (o->via != GPUENV_VIA_PRELOAD || !o->elf.soname) continue;
        struct stat st;
        long long size = gpuenv_root_stat(r->root, o->real, &st) == 0 ? (long long)st.st_size : -1;
        int cuda = strncmp(o->elf.soname, "libcuda.so", 10) == 0 || strncmp(o->elf.soname, "libnvidia-ml", 12) == 0;
        if (cuda && (strstr(o->real, "/stubs/") || (size >= 0 && size < 600 * 1024))) {
            const char *item = o->names.n ? o->names.v[0] : o->path;
            char *fix = doctor_own(r, doctor_fix_preload_without(L, item));
            c = doctor_add(r, DOCTOR_L0, "l0.ld_preload", "LD_PRELOAD", DOCTOR_WARN, DOCTOR_HITS_GPU, "ld_preload_stub",
                           "A toolkit stub driver library is preloaded: it answers every request for the "
                           "driver and cannot run anything",
                           fix, "%s preloads %s (SONAME %s)", item, o->real, o->elf.soname);
            lector__free(fix);
        }
    }
    if (!c)
        c = doctor_add(r, DOCTOR_L0, "l0.ld_preload", "LD_PRELOAD", DOCTOR_OK, 0, "", "", "",
                       "set (preloaded objects answer before every search path)");
    for (size_t i = 0; i < L->preload.n; i++) doctor_evidence(r, c, "%s: %s", L->preload_from.v[i], L->preload.v[i]);
    gpuenv_load_free(&ld);
}

void doctor_check_system(lector_doctor_report *r, const lector_doctor_options *opt)
{
    check_os(r);
    check_container(r);
    check_cvd(r, opt);
    check_llp(r);
    check_preload(r);
}
