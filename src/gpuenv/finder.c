/* finder.c - where the CUDA user-space libraries are, and which one the
 * CUDA module should preload.
 *
 * Copies are looked for where installers put them (the loader's own search
 * path, /etc/ld.so.conf's directories, the CUDA toolkit, pip wheels, conda),
 * each read as an ELF for its SONAME, so that the doctor can compare what
 * exists with what the loader would hand out. */
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

int gpuenv_stem_matches(const char *base, const char *stem)
{
    size_t n = strlen(stem);
    if (strncmp(base, "lib", 3) != 0 || strncmp(base + 3, stem, n) != 0) return 0;
    const char *p = base + 3 + n;
    if (stem[n - 1] == '_') p += strcspn(p, ".");
    return strncmp(p, ".so", 3) == 0 && (p[3] == 0 || p[3] == '.');
}

void gpuenv_cands_free(gpuenv_cands *c)
{
    for (size_t i = 0; i < c->n; i++) {
        lector__free(c->v[i].path);
        lector__free(c->v[i].real);
        lector__free(c->v[i].where);
        lector__free(c->v[i].fver);
        lector__free(c->v[i].soname);
    }
    lector__free(c->v);
    memset(c, 0, sizeof *c);
}

/* The longer of the versions in the link's name and its target's name
 * (libcudnn.so.9 -> libcudnn.so.9.14.0 gives 9.14.0). */
static char *file_version(const char *path, const char *real)
{
    char *a = gpuenv_soname_version(path), *b = gpuenv_soname_version(real);
    if (!a || !b) {
        lector__free(a);
        lector__free(b);
        return NULL;
    }
    /* a version only counts when it starts with a digit */
    if (gpuenv_ver_major(b) < 0) b[0] = 0;
    if (gpuenv_ver_major(a) < 0) a[0] = 0;
    if (strlen(a) >= strlen(b)) {
        lector__free(b);
        return a;
    }
    lector__free(a);
    return b;
}

static int add_cand(const gpuenv_ldso *L, gpuenv_cands *cv, const char *path, const char *where)
{
    for (size_t i = 0; i < cv->n; i++)
        if (strcmp(cv->v[i].path, path) == 0) return 0;
    char *canon = NULL;
    int rc = gpuenv_root_resolve(L->root, path, &canon);
    if (rc == -2) return -2;
    /* a link loop or an unreadable directory is a copy the loader trips
       over: kept (not an ELF) so that the search for its name is made */
    if (rc == ELOOP || rc == EACCES) {
        if (!(canon = lector__strdup(path))) return -2;
    } else if (rc) {
        return 0;
    }
    /* one entry per file: /lib and /usr/lib, cuda and cuda-13.0 are often the
       same directory */
    for (size_t i = 0; i < cv->n; i++)
        if (strcmp(cv->v[i].real, canon) == 0) {
            lector__free(canon);
            return 0;
        }
    if (lector__reserve(&cv->v, &cv->cap, cv->n + 1, sizeof *cv->v)) {
        lector__free(canon);
        return -2;
    }
    gpuenv_cand *c = &cv->v[cv->n];
    memset(c, 0, sizeof *c);
    c->real = canon;
    c->path = lector__strdup(path);
    c->where = lector__strdup(where);
    c->fver = file_version(path, canon);
    if (!c->path || !c->where || !c->fver) {
        lector__free(c->path);
        lector__free(c->where);
        lector__free(c->fver);
        lector__free(c->real);
        return -2;
    }
    gpuenv_map m;
    if (gpuenv_root_map(L->root, canon, &m) == 0) {
        gpuenv_elf e;
        if (gpuenv_elf_parse(m.data, m.size, &e) == 0) {
            c->elf_ok = e.elfclass == 2 && e.machine == 62 && e.type == 3;
            c->soname = e.soname;
            e.soname = NULL;
            gpuenv_elf_free(&e);
        }
        gpuenv_unmap(&m);
    }
    cv->n++;
    return 0;
}

static int scan_dir(const gpuenv_ldso *L, gpuenv_cands *cv, const char *dir, const char *stem, const char *where)
{
    gpuenv_strv names = {0};
    int rc = gpuenv_root_list(L->root, dir, &names);
    if (rc == -2) { /* out of memory part way: what was listed is freed too */
        gpuenv_strv_free(&names);
        return -2;
    }
    rc = 0;
    for (size_t i = 0; i < names.n && !rc; i++) {
        if (!gpuenv_stem_matches(names.v[i], stem)) continue;
        char *p = gpuenv_asprintf("%s/%s", strcmp(dir, "/") ? dir : "", names.v[i]);
        rc = p ? add_cand(L, cv, p, where) : -2;
        lector__free(p);
    }
    gpuenv_strv_free(&names);
    return rc;
}

/* site-packages directories of the tree (and of the live environment) */
static int site_packages(const gpuenv_ldso *L, gpuenv_strv *out)
{
    static const char *const site[] = {"/usr/lib/python3*/site-packages",
                                       "/usr/lib/python3*/dist-packages",
                                       "/usr/local/lib/python3*/site-packages",
                                       "/usr/local/lib/python3*/dist-packages",
                                       "/opt/conda/lib/python3*/site-packages",
                                       "/opt/conda/envs/*/lib/python3*/site-packages",
                                       "/root/.local/lib/python3*/site-packages",
                                       "/opt/*/.venv/lib/python3*/site-packages",
                                       "/opt/*/venv/lib/python3*/site-packages",
                                       "/opt/*/lib/python3*/site-packages",
                                       "/root/.pyenv/versions/*/lib/python3*/site-packages",
                                       "/root/miniconda3/lib/python3*/site-packages",
                                       "/root/anaconda3/lib/python3*/site-packages",
                                       "/home/*/.local/lib/python3*/site-packages",
                                       "/home/*/miniconda3/lib/python3*/site-packages",
                                       "/home/*/miniconda3/envs/*/lib/python3*/site-packages",
                                       "/home/*/anaconda3/envs/*/lib/python3*/site-packages",
                                       "/home/*/*/.venv/lib/python3*/site-packages",
                                       "/workspace/*/.venv/lib/python3*/site-packages"};
    int rc = 0;
    for (size_t i = 0; i < sizeof site / sizeof site[0] && !rc; i++) rc = gpuenv_root_glob(L->root, site[i], out);
    if (rc || !gpuenv_is_live(L->root)) return rc;
    const char *envs[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
    for (size_t i = 0; i < 2 && !rc; i++) {
        const char *e = getenv(envs[i]);
        if (e && *e) {
            char *pat = gpuenv_asprintf("%s/lib/python3*/site-packages", e);
            rc = pat ? gpuenv_root_glob(NULL, pat, out) : -2;
            lector__free(pat);
        }
    }
    /* the python3 on PATH: a venv's bin/python3 means ../lib/python3.N/site-packages */
    const char *path = getenv("PATH");
    if (path && !rc) {
        gpuenv_strv pd = {0};
        rc = gpuenv_strv_split(&pd, path, ":") ? -2 : 0;
        for (size_t i = 0; i < pd.n && !rc; i++) {
            if (!pd.v[i][0] || strcmp(pd.v[i], "/usr/bin") == 0 || strcmp(pd.v[i], "/bin") == 0) continue;
            char *py = gpuenv_asprintf("%s/python3", pd.v[i]);
            if (py && access(py, X_OK) == 0) {
                char *pat = gpuenv_asprintf("%s/../lib/python3*/site-packages", pd.v[i]);
                rc = pat ? gpuenv_root_glob(NULL, pat, out) : -2;
                lector__free(pat);
            }
            if (!py) rc = -2;
            lector__free(py);
        }
        gpuenv_strv_free(&pd);
    }
    return rc;
}

int gpuenv_collect(const gpuenv_ldso *L, const char *stem, gpuenv_cands *cv)
{
    memset(cv, 0, sizeof *cv);
    int rc = 0;
    for (size_t i = 0; i < L->llp.n && !rc; i++)
        if (L->llp.v[i][0] == '/') rc = scan_dir(L, cv, L->llp.v[i], stem, "LD_LIBRARY_PATH");
    if (L->cache_state == 1)
        for (size_t i = 0; i < L->cache.n && !rc; i++)
            if (L->cache.e[i].flags == GPUENV_LDCACHE_X86_64 && gpuenv_stem_matches(L->cache.e[i].key, stem))
                rc = add_cand(L, cv, L->cache.e[i].value, "ld.so.cache");
    gpuenv_ldconf conf;
    if (!rc && !(rc = gpuenv_ldconf_read(L->root, &conf))) {
        for (size_t i = 0; i < conf.dirs.n && !rc; i++) rc = scan_dir(L, cv, conf.dirs.v[i], stem, "ld.so.conf dir");
        gpuenv_ldconf_free(&conf);
    }
    for (size_t i = 0; i < L->default_dirs.n && !rc; i++)
        rc = scan_dir(L, cv, L->default_dirs.v[i], stem, "default dir");
    gpuenv_strv dirs = {0};
    static const char *const toolkit[] = {"/usr/local/cuda*/lib64", "/usr/local/cuda*/lib",
                                          "/usr/local/cuda*/targets/*/lib", "/opt/nvidia/*/lib"};
    for (size_t i = 0; i < sizeof toolkit / sizeof *toolkit && !rc; i++)
        rc = gpuenv_root_glob(L->root, toolkit[i], &dirs);
    for (size_t i = 0; i < dirs.n && !rc; i++) rc = scan_dir(L, cv, dirs.v[i], stem, "CUDA toolkit");
    gpuenv_strv_free(&dirs);
    /* where drivers put their user-space libraries outside the system
       directories: RPM Fusion and NVIDIA's .run (/usr/lib64/nvidia), Debian
       (nvidia/current), containers (/usr/local/nvidia), WSL2 */
    static const char *const driver_dirs[] = {
        "/usr/lib64/nvidia",       "/usr/lib/nvidia",       "/usr/lib/x86_64-linux-gnu/nvidia/current",
        "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib"};
    for (size_t i = 0; i < sizeof driver_dirs / sizeof *driver_dirs && !rc; i++)
        if (gpuenv_root_exists(L->root, driver_dirs[i])) rc = scan_dir(L, cv, driver_dirs[i], stem, "driver directory");
    /* Python wheels: nvidia/<pkg>/lib (nvidia/cu13/lib included), torch/lib,
       paddle/libs, onnxruntime/capi */
    gpuenv_strv sp = {0}, seen = {0};
    if (!rc) rc = site_packages(L, &sp);
    for (size_t i = 0; i < sp.n && !rc; i++) {
        char *canon = gpuenv_root_realpath(L->root, sp.v[i]);
        if (!canon || gpuenv_strv_has(&seen, canon)) {
            lector__free(canon);
            continue;
        }
        if (gpuenv_strv_push_owned(&seen, canon)) {
            rc = -2;
            break;
        }
        gpuenv_strv libdirs = {0};
        static const char *const sub[] = {"nvidia/*/lib", "torch/lib", "paddle/libs", "onnxruntime/capi"};
        for (size_t k = 0; k < sizeof sub / sizeof *sub && !rc; k++) {
            char *pat = gpuenv_asprintf("%s/%s", canon, sub[k]);
            rc = pat ? gpuenv_root_glob(L->root, pat, &libdirs) : -2;
            lector__free(pat);
        }
        for (size_t j = 0; j < libdirs.n && !rc; j++) rc = scan_dir(L, cv, libdirs.v[j], stem, "pip wheel");
        gpuenv_strv_free(&libdirs);
    }
    gpuenv_strv_free(&sp);
    gpuenv_strv_free(&seen);
    if (!rc) {
        gpuenv_strv conda = {0};
        rc = gpuenv_root_glob(L->root, "/opt/conda/lib", &conda);
        if (!rc && gpuenv_is_live(L->root)) {
            const char *cp = getenv("CONDA_PREFIX");
            if (cp && *cp) {
                char *d = gpuenv_asprintf("%s/lib", cp);
                rc = d ? gpuenv_strv_push_owned(&conda, d) : -2;
            }
        }
        for (size_t i = 0; i < conda.n && !rc; i++) rc = scan_dir(L, cv, conda.v[i], stem, "conda");
        gpuenv_strv_free(&conda);
    }
    if (rc) gpuenv_cands_free(cv);
    return rc ? -2 : 0;
}

/* The SONAME major of a candidate: its DT_SONAME, else its file name. */
static int cand_major(const gpuenv_cand *c)
{
    const char *name = c->soname ? c->soname : gpuenv_basename(c->path);
    const char *so = strstr(name, ".so.");
    int m = so ? gpuenv_ver_major(so + 4) : -1;
    return m >= 0 ? m : gpuenv_ver_major(c->fver);
}

static void fill_info(gpuenv_libinfo *out, const char *path, const char *real, const char *ver, gpuenv_via via)
{
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->real, sizeof out->real, "%s", real);
    snprintf(out->version, sizeof out->version, "%s", ver);
    out->via = via;
}

int gpuenv_find_best(const char *root, const char *stem, int cuda_major, gpuenv_libinfo *out)
{
    gpuenv_ldso L;
    if (gpuenv_ldso_init(&L, root, NULL, NULL)) return -2;
    int rc = gpuenv_find_best_in(&L, stem, cuda_major, out);
    gpuenv_ldso_free(&L);
    return rc;
}

int gpuenv_find_best_in(const gpuenv_ldso *L, const char *stem, int cuda_major, gpuenv_libinfo *out)
{
    memset(out, 0, sizeof *out);
    int majors[2] = {cuda_major, -1};
    if (strcmp(stem, "cudnn") == 0) {
        /* cuDNN 9 exists for CUDA 11.8, 12 and 13; cuDNN 8 for 10.2-12.2 */
        majors[0] = 9;
        majors[1] = cuda_major <= 12 ? 8 : -1;
    }
    gpuenv_cands cv;
    if (gpuenv_collect(L, stem, &cv)) return -2;
    int rc = -1;
    for (int k = 0; k < 2 && majors[k] >= 0 && rc == -1; k++) {
        /* the SONAMEs of that major among the copies (libcudart.so.11.0 for
           CUDA 11), else lib<stem>.so.<major> */
        gpuenv_strv names = {0};
        for (size_t i = 0; i < cv.n && rc == -1; i++)
            if (cv.v[i].elf_ok && cand_major(&cv.v[i]) == majors[k] && cv.v[i].soname &&
                !gpuenv_strv_has(&names, cv.v[i].soname) && gpuenv_strv_push(&names, cv.v[i].soname))
                rc = -2;
        char fallback[64];
        snprintf(fallback, sizeof fallback, "lib%s.so.%d", stem, majors[k]);
        if (rc == -1 && !gpuenv_strv_has(&names, fallback) && gpuenv_strv_push(&names, fallback)) rc = -2;
        for (size_t n = 0; n < names.n && rc == -1; n++) {
            gpuenv_find f;
            if (gpuenv_ldso_find_usable(L, names.v[n], &f)) {
                rc = -2;
                break;
            }
            if (f.outcome == GPUENV_FOUND) {
                char *real = gpuenv_root_realpath(L->root, f.path);
                char *v = real ? file_version(f.path, real) : NULL;
                if (real && v) {
                    fill_info(out, f.path, real, v, f.via);
                    rc = 0;
                } else {
                    rc = -2;
                }
                lector__free(real);
                lector__free(v);
            }
            gpuenv_find_free(&f);
        }
        gpuenv_strv_free(&names);
        /* not on the loader's path: where installers put it */
        for (size_t i = 0; i < cv.n && rc == -1; i++)
            if (cv.v[i].elf_ok && cand_major(&cv.v[i]) == majors[k]) {
                fill_info(out, cv.v[i].path, cv.v[i].real, cv.v[i].fver, GPUENV_VIA_PATH);
                rc = 0;
            }
    }
    gpuenv_cands_free(&cv);
    return rc;
}

static int regular_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int gpuenv_cuda_module_path(char *out, size_t len)
{
    const char *env = getenv("LECTOR_CUDA_MODULE");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return regular_file(out) ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(out, len, "liblector-cuda.so (the executable's path is unknown)");
        return -2;
    }
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(out, len, "%s/liblector-cuda.so", exe);
    if (regular_file(out)) return 0;
    snprintf(out, len, "%s/../lib/liblector-cuda.so", exe);
    if (regular_file(out)) return 0;
    snprintf(out, len, "%s/liblector-cuda.so", exe);
    return -2;
}
