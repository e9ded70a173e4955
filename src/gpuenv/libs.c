/* libs.c - L4: every copy of the CUDA user-space libraries, which one
 * ld.so would load, their versions, and whether they fit each other and
 * the driver.
 *
 * Versions come from, in order of trust: the library itself through dlopen
 * (cudaRuntimeGetVersion, cublasGetProperty, cudnnGetVersion and
 * cudnnGetCudartVersion, nvrtcVersion) when allowed, the canonical file
 * name (libcudnn.so.9.14.0), the SONAME (libcudnn.so.9). */
#include <dirent.h>
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"

typedef struct cand {
    char *path, *real, *where, *fver; /* fver: version from file names */
} cand;

typedef struct candv {
    cand *v;
    size_t n, cap;
} candv;

static void candv_free(candv *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].path);
        free(c->v[i].real);
        free(c->v[i].where);
        free(c->v[i].fver);
    }
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Does file name `base` belong to family `stem`? "libcublas.so.13" is
 * cublas, "libcublasLt.so.13" is not. A stem ending in '_' matches the
 * cuDNN split libraries. */
static int matches(const char *base, const char *stem)
{
    size_t n = strlen(stem);
    if (strncmp(base, "lib", 3) != 0 || strncmp(base + 3, stem, n) != 0) return 0;
    const char *p = base + 3 + n;
    if (stem[n - 1] == '_') {
        p += strcspn(p, ".");
    }
    return strncmp(p, ".so", 3) == 0 && (p[3] == 0 || p[3] == '.');
}

static char *file_version(const char *root, const char *path, char **real_out)
{
    char *real = gpuenv_root_realpath(root, path);
    char *v = gpuenv_soname_version(real ? real : path);
    char *v2 = gpuenv_soname_version(path);
    char *best = NULL;
    if (v && v2)
        best = strlen(v) >= strlen(v2) ? (free(v2), v) : (free(v), v2);
    else {
        free(v);
        free(v2);
    }
    *real_out = real;
    return best;
}

static int add_cand(candv *cv, const char *root, const char *path, const char *where)
{
    for (size_t i = 0; i < cv->n; i++)
        if (strcmp(cv->v[i].path, path) == 0) return 0;
    if (!gpuenv_root_exists(root, path)) return 0;
    /* one entry per file: /lib and /usr/lib, cuda and cuda-13.0 are often
       the same directory */
    char *canon = gpuenv_root_realpath(root, path);
    if (!canon) return -1;
    for (size_t i = 0; i < cv->n; i++)
        if (strcmp(cv->v[i].real, canon) == 0) {
            free(canon);
            return 0;
        }
    free(canon);
    if (cv->n == cv->cap) {
        size_t cap = cv->cap ? cv->cap * 2 : 16;
        cand *v = realloc(cv->v, cap * sizeof *v);
        if (!v) return -1;
        cv->v = v;
        cv->cap = cap;
    }
    cand *c = &cv->v[cv->n];
    memset(c, 0, sizeof *c);
    c->path = strdup(path);
    c->where = strdup(where);
    c->fver = file_version(root, path, &c->real);
    if (!c->real) c->real = strdup(path);
    if (!c->path || !c->where || !c->fver || !c->real) {
        free(c->path);
        free(c->where);
        free(c->fver);
        free(c->real);
        return -1;
    }
    cv->n++;
    return 0;
}

static int scan_dir(candv *cv, const char *root, const char *dir, const char *stem, const char *where)
{
    char *h = gpuenv_host_path(root, dir);
    if (!h) return -1;
    DIR *d = opendir(h);
    free(h);
    if (!d) return 0;
    struct dirent *e;
    int rc = 0;
    /* collect then sort for stable output */
    gpuenv_strv names = {0};
    while ((e = readdir(d)))
        if (matches(e->d_name, stem) && gpuenv_strv_push(&names, e->d_name)) rc = -1;
    closedir(d);
    for (size_t i = 1; i < names.n; i++)
        for (size_t j = i; j > 0 && strcmp(names.v[j - 1], names.v[j]) > 0; j--) {
            char *t = names.v[j];
            names.v[j] = names.v[j - 1];
            names.v[j - 1] = t;
        }
    for (size_t i = 0; i < names.n && !rc; i++) {
        char *p = gpuenv_asprintf("%s/%s", strcmp(dir, "/") ? dir : "", names.v[i]);
        if (!p || add_cand(cv, root, p, where)) rc = -1;
        free(p);
    }
    gpuenv_strv_free(&names);
    return rc;
}

/* In-tree directories matching a glob pattern (pattern is in-tree). */
static int glob_dirs(gpuenv_strv *out, const char *root, const char *pattern)
{
    char *hp = gpuenv_host_path(root, pattern);
    if (!hp) return -1;
    glob_t g;
    int rc = 0;
    if (glob(hp, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g) == 0) {
        size_t skip = (root && root[0] && strcmp(root, "/")) ? strlen(root) : 0;
        while (skip > 1 && root[skip - 1] == '/') skip--;
        for (size_t i = 0; i < g.gl_pathc && !rc; i++)
            if (gpuenv_strv_push(out, g.gl_pathv[i] + skip)) rc = -1;
        globfree(&g);
    }
    free(hp);
    return rc;
}

/* Every place a CUDA library tends to be, labelled. Order matters only
 * for display; which file wins is decided by gpuenv_resolve. */
static int collect(candv *cv, const gpuenv_ctx *ctx, const char *stem)
{
    const char *root = ctx->root;
    for (size_t i = 0; i < ctx->llp.n; i++)
        if (ctx->llp.v[i][0] && scan_dir(cv, root, ctx->llp.v[i], stem, "LD_LIBRARY_PATH")) return -1;
    if (ctx->cache_state == 1)
        for (size_t i = 0; i < ctx->cache.n; i++)
            if (matches(ctx->cache.e[i].key, stem) && add_cand(cv, root, ctx->cache.e[i].value, "ld.so.cache"))
                return -1;
    for (size_t i = 0; i < ctx->default_dirs.n; i++)
        if (scan_dir(cv, root, ctx->default_dirs.v[i], stem, "default dir")) return -1;
    gpuenv_strv dirs = {0};
    static const char *const toolkit[] = {"/usr/local/cuda*/lib64", "/usr/local/cuda*/lib",
                                          "/usr/local/cuda*/targets/*/lib"};
    int rc = 0;
    for (size_t i = 0; i < 3 && !rc; i++) rc = glob_dirs(&dirs, root, toolkit[i]);
    for (size_t i = 0; i < dirs.n && !rc; i++) rc = scan_dir(cv, root, dirs.v[i], stem, "CUDA toolkit");
    gpuenv_strv_free(&dirs);
    if (rc) return -1;
    /* Python wheels: nvidia/<pkg>/lib and nvidia/cu13/lib */
    gpuenv_strv sp = {0};
    static const char *const site[] = {"/usr/lib/python3*/site-packages",
                                       "/usr/lib/python3*/dist-packages",
                                       "/usr/local/lib/python3*/site-packages",
                                       "/usr/local/lib/python3*/dist-packages",
                                       "/opt/conda/lib/python3*/site-packages",
                                       "/root/.local/lib/python3*/site-packages",
                                       "/opt/*/.venv/lib/python3*/site-packages",
                                       "/opt/*/lib/python3*/site-packages",
                                       "/root/.pyenv/versions/*/lib/python3*/site-packages",
                                       "/home/*/.local/lib/python3*/site-packages"};
    for (size_t i = 0; i < sizeof site / sizeof site[0] && !rc; i++) rc = glob_dirs(&sp, root, site[i]);
    const char *envs[] = {"VIRTUAL_ENV", "CONDA_PREFIX"};
    for (size_t i = 0; i < 2 && !rc && !(root && *root && strcmp(root, "/")); i++) {
        const char *e = getenv(envs[i]);
        if (e && *e) {
            char *pat = gpuenv_asprintf("%s/lib/python3*/site-packages", e);
            rc = pat ? glob_dirs(&sp, root, pat) : -1;
            free(pat);
        }
    }
    /* the python3 on PATH: a venv bin/python3 means ../lib/python3.N/site-packages */
    const char *path = getenv("PATH");
    if (path && !rc && !(root && *root && strcmp(root, "/"))) {
        gpuenv_strv pd = {0};
        rc = gpuenv_strv_split(&pd, path, ':');
        for (size_t i = 0; i < pd.n && !rc; i++) {
            if (!pd.v[i][0] || strcmp(pd.v[i], "/usr/bin") == 0 || strcmp(pd.v[i], "/bin") == 0) continue;
            char *py = gpuenv_asprintf("%s/python3", pd.v[i]);
            if (py && access(py, X_OK) == 0) {
                char *pat = gpuenv_asprintf("%s/../lib/python3*/site-packages", pd.v[i]);
                rc = pat ? glob_dirs(&sp, root, pat) : -1;
                free(pat);
            }
            free(py);
        }
        gpuenv_strv_free(&pd);
    }
    gpuenv_strv seen = {0};
    for (size_t i = 0; i < sp.n && !rc; i++) {
        /* canonical, so a venv reached twice is scanned once */
        char *canon = gpuenv_root_realpath(root, sp.v[i]);
        if (!canon || gpuenv_strv_has(&seen, canon)) {
            free(canon);
            continue;
        }
        free(sp.v[i]);
        sp.v[i] = canon;
        if (gpuenv_strv_push(&seen, canon)) {
            rc = -1;
            break;
        }
        gpuenv_strv libdirs = {0};
        char *pat = gpuenv_asprintf("%s/nvidia/*/lib", sp.v[i]);
        rc = pat ? glob_dirs(&libdirs, root, pat) : -1;
        free(pat);
        for (size_t j = 0; j < libdirs.n && !rc; j++) rc = scan_dir(cv, root, libdirs.v[j], stem, "pip wheel");
        gpuenv_strv_free(&libdirs);
    }
    gpuenv_strv_free(&sp);
    gpuenv_strv_free(&seen);
    if (rc) return -1;
    const char *conda = root && *root && strcmp(root, "/") ? NULL : getenv("CONDA_PREFIX");
    if (conda && *conda) {
        char *d = gpuenv_asprintf("%s/lib", conda);
        rc = d ? scan_dir(cv, root, d, stem, "conda") : -1;
        free(d);
    }
    return rc;
}

/* Same release, comparing only the components both strings have:
 * cublasGetProperty says "13.1.0" where the file is "libcublas.so.13.1.0.3". */
static int ver_same(const char *a, const char *b)
{
    while (*a && *b) {
        char *ea, *eb;
        unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);
        if (x != y || ea == a || eb == b) return x == y && ea != a && eb != b;
        a = *ea == '.' ? ea + 1 : ea;
        b = *eb == '.' ? eb + 1 : eb;
        if (*ea != '.' || *eb != '.') break;
    }
    return 1;
}

static int strv_has_ver(const gpuenv_strv *sv, const char *v)
{
    for (size_t i = 0; i < sv->n; i++)
        if (ver_same(sv->v[i], v)) return 1;
    return 0;
}

/* ---------------------------------------------------- version queries */

typedef struct qver {
    char version[64]; /* "13.0", "9.14.0"; "" unknown */
    int cuda_build;   /* cuDNN: CUDA it was built for (1000*major+10*minor), 0 unknown */
    char err[160];
} qver;

/* dlopen a library by its host path and ask it for its version. */
static void query_version(const char *stem, const char *host_path, qver *q)
{
    memset(q, 0, sizeof *q);
    void *h = dlopen(host_path, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(q->err, sizeof q->err, "%s", e ? e : "dlopen failed");
        return;
    }
    if (strcmp(stem, "cudart") == 0) {
        int (*f)(int *) = (int (*)(int *))dlsym(h, "cudaRuntimeGetVersion");
        int v = 0;
        if (f && f(&v) == 0 && v > 0) snprintf(q->version, sizeof q->version, "%d.%d", v / 1000, (v % 1000) / 10);
    } else if (strcmp(stem, "cublas") == 0 || strcmp(stem, "cublasLt") == 0) {
        int (*f)(int, int *) =
            (int (*)(int, int *))dlsym(h, strcmp(stem, "cublas") == 0 ? "cublasGetProperty" : "cublasLtGetProperty");
        int a = 0, b = 0, c = 0;
        if (f && f(0, &a) == 0 && f(1, &b) == 0 && f(2, &c) == 0)
            snprintf(q->version, sizeof q->version, "%d.%d.%d", a, b, c);
    } else if (strcmp(stem, "cudnn") == 0) {
        size_t (*gv)(void) = (size_t(*)(void))dlsym(h, "cudnnGetVersion");
        size_t (*gc)(void) = (size_t(*)(void))dlsym(h, "cudnnGetCudartVersion");
        if (gv) {
            size_t v = gv();
            /* cuDNN 9: M*10000+m*100+p; before: M*1000+m*100+p */
            if (v >= 90000)
                snprintf(q->version, sizeof q->version, "%zu.%zu.%zu", v / 10000, (v % 10000) / 100, v % 100);
            else
                snprintf(q->version, sizeof q->version, "%zu.%zu.%zu", v / 1000, (v % 1000) / 100, v % 100);
        }
        if (gc) q->cuda_build = (int)gc();
    } else if (strcmp(stem, "nvrtc") == 0) {
        int (*f)(int *, int *) = (int (*)(int *, int *))dlsym(h, "nvrtcVersion");
        int a = 0, b = 0;
        if (f && f(&a, &b) == 0) snprintf(q->version, sizeof q->version, "%d.%d", a, b);
    }
    /* The CUDA libraries are not unloaded: some register atexit handlers. */
}

/* ----------------------------------------------------------- checks */

typedef struct family {
    const char *stem, *label;
    int required; /* missing is a warning for required ones, a note otherwise */
} family;

static const family families[] = {
    {"cudart", "CUDA runtime", 1}, {"cublas", "cuBLAS", 1}, {"cublasLt", "cuBLASLt", 1},
    {"cudnn", "cuDNN", 1},         {"nvrtc", "NVRTC", 0},
};

typedef struct winner {
    int major;         /* SONAME major asked for */
    char *path, *real; /* in-tree */
    gpuenv_via via;
    char version[64];
    int cuda_build;
} winner;

typedef struct fam_state {
    candv cands;
    winner w[8];
    int nw;
} fam_state;

static int driver_cuda(const lector_doctor_report *r)
{
    if (r->facts.cuda_driver_version > 0) return r->facts.cuda_driver_version;
    const char *d = r->facts.nvml_driver[0] ? r->facts.nvml_driver : r->facts.kernel_driver;
    return gpuenv_cuda_for_driver(d);
}

static int may_dlopen(const lector_doctor_report *r, const lector_doctor_options *opt)
{
    if (opt->no_dlopen_libs) return 0;
    return !r->root_mode || opt->dlopen_in_root;
}

static void fill_winners(lector_doctor_report *r, const lector_doctor_options *opt, const gpuenv_ctx *ctx,
                         const family *f, fam_state *fs)
{
    int majors[8], nm = 0;
    for (size_t i = 0; i < fs->cands.n && nm < 8; i++) {
        char *sv = gpuenv_soname_version(fs->cands.v[i].path);
        int m = gpuenv_ver_major(sv);
        free(sv);
        if (m < 0) /* an unversioned link: the file it points to says */
            m = gpuenv_ver_major(fs->cands.v[i].fver);
        if (m < 0) continue;
        int seen = 0;
        for (int k = 0; k < nm; k++) seen |= majors[k] == m;
        if (!seen) majors[nm++] = m;
    }
    /* newest first */
    for (int i = 1; i < nm; i++)
        for (int j = i; j > 0 && majors[j - 1] < majors[j]; j--) {
            int t = majors[j];
            majors[j] = majors[j - 1];
            majors[j - 1] = t;
        }
    for (int k = 0; k < nm; k++) {
        char name[64];
        snprintf(name, sizeof name, "lib%s.so.%d", f->stem, majors[k]);
        gpuenv_via via;
        char *p = gpuenv_resolve(ctx, name, NULL, &via);
        if (!p) continue;
        winner *w = &fs->w[fs->nw++];
        memset(w, 0, sizeof *w);
        w->major = majors[k];
        w->path = p;
        w->via = via;
        char *fv = file_version(ctx->root, p, &w->real);
        if (!w->real) w->real = strdup(p);
        if (!w->real) r->oom = 1;
        snprintf(w->version, sizeof w->version, "%s", fv ? fv : "");
        free(fv);
        if (may_dlopen(r, opt) && w->real) {
            char *host = gpuenv_host_path(ctx->root, w->real);
            qver q;
            if (host) {
                query_version(f->stem, host, &q);
                if (q.version[0]) snprintf(w->version, sizeof w->version, "%s", q.version);
                w->cuda_build = q.cuda_build;
            }
            free(host);
        }
    }
}

static void list_evidence(lector_doctor_report *r, gpuenv_check *c, const fam_state *fs)
{
    for (size_t i = 0; i < fs->cands.n; i++) {
        const cand *k = &fs->cands.v[i];
        if (strcmp(k->path, k->real))
            gpuenv_evidence(r, c, "%s -> %s [%s] (%s)", k->path, k->real, k->fver, k->where);
        else
            gpuenv_evidence(r, c, "%s [%s] (%s)", k->path, k->fver, k->where);
    }
}

/* A CUDA-versioned library (runtime, cuBLAS, NVRTC) against the driver. */
static void check_runtime_like(lector_doctor_report *r, const family *f, fam_state *fs, int dc)
{
    char id[48];
    snprintf(id, sizeof id, "l4.%s", f->stem);
    if (!fs->cands.n) {
        gpuenv_add(r, GPUENV_L4, id, f->label, f->required ? GPUENV_WARN : GPUENV_OK,
                   f->required ? "library_missing" : "",
                   f->required ? "No copy of this library anywhere: GPU frameworks (and Lector's "
                                 "CUDA backend) cannot load it"
                               : "",
                   f->required ? "install the CUDA toolkit libraries (apt install cuda-libraries-13-0) "
                                 "or the pip wheels (pip install nvidia-cuda-runtime nvidia-cublas)"
                               : "",
                   "lib%s not found", f->stem);
        return;
    }
    gpuenv_buf fb = {0};
    for (int k = 0; k < fs->nw; k++)
        gpuenv_buf_printf(&fb, "%slib%s.so.%d -> %s (%s, via %s)", k ? "; " : "", f->stem, fs->w[k].major,
                          fs->w[k].real, fs->w[k].version[0] ? fs->w[k].version : "?", gpuenv_via_str(fs->w[k].via));
    if (!fs->nw) gpuenv_buf_printf(&fb, "copies exist but ld.so finds none of them by SONAME");
    char *finding = gpuenv_buf_take(&fb);
    if (!finding) {
        r->oom = 1;
        return;
    }
    gpuenv_status st = fs->nw ? GPUENV_OK : GPUENV_WARN;
    const char *code = fs->nw ? "" : "library_not_in_search_path";
    char *cause = strdup(fs->nw ? "" : "Copies exist only outside the loader's search path");
    char *fix = NULL;
    if (!fs->nw) {
        fix = gpuenv_asprintf("export LD_LIBRARY_PATH=%s:$LD_LIBRARY_PATH (or add it to "
                              "/etc/ld.so.conf.d/cuda.conf and run ldconfig)",
                              fs->cands.v[0].path);
        char *sl = fix ? strrchr(fs->cands.v[0].path, '/') : NULL;
        (void)sl;
    }
    /* cuBLAS and NVRTC majors follow CUDA majors since 11 */
    for (int k = 0; k < fs->nw && dc > 0 && st != GPUENV_FAIL; k++) {
        const winner *w = &fs->w[k];
        int vmaj = gpuenv_ver_major(w->version);
        if (vmaj < 0) vmaj = w->major;
        int vmin = 0;
        const char *dot = strchr(w->version, '.');
        if (dot) vmin = atoi(dot + 1);
        if (strcmp(f->stem, "cudart") != 0) vmin = 0; /* library minor numbers do not map to CUDA minors */
        if (vmaj < 10 || vmaj > 40) continue;
        const char *need = gpuenv_min_driver_for_cuda(vmaj, vmin);
        if (!need) need = gpuenv_min_driver_for_major(vmaj);
        if (vmaj > dc / 1000) {
            st = GPUENV_FAIL;
            code = "runtime_newer_than_driver";
            free(cause);
            free(fix);
            cause = gpuenv_asprintf("%s is built for CUDA %d but the driver supports only CUDA "
                                    "%d.%d (\"CUDA driver version is insufficient for CUDA "
                                    "runtime version\", error 35)",
                                    w->real, vmaj, dc / 1000, (dc % 1000) / 10);
            fix = gpuenv_asprintf("upgrade the NVIDIA driver to >= %s, or use a CUDA %d.x build "
                                  "of the framework/libraries",
                                  need ? need : "the newest branch", dc / 1000);
        } else if (vmaj == dc / 1000 && vmin * 10 > dc % 1000) {
            st = GPUENV_WARN;
            code = "minor_version_compat";
            free(cause);
            free(fix);
            cause = gpuenv_asprintf("CUDA runtime %d.%d on a driver for CUDA %d.%d runs under "
                                    "minor-version compatibility: PTX JIT and new APIs may fail",
                                    vmaj, vmin, dc / 1000, (dc % 1000) / 10);
            fix = gpuenv_asprintf("upgrade the driver to >= %s for full support", need ? need : "a newer branch");
        }
    }
    gpuenv_check *c =
        gpuenv_add(r, GPUENV_L4, id, f->label, st, code, cause ? cause : "", fix ? fix : "", "%s", finding);
    list_evidence(r, c, fs);
    free(finding);
    free(cause);
    free(fix);
}

static const char *const split8[] = {"ops_infer", "ops_train", "cnn_infer", "cnn_train",
                                     "adv_infer", "adv_train", NULL};
static const char *const split9[] = {
    "graph", "ops", "cnn", "adv", "engines_precompiled", "engines_runtime_compiled", "heuristic", NULL};

static void check_cudnn(lector_doctor_report *r, const gpuenv_ctx *ctx, fam_state *fs, const fam_state *rt, int dc)
{
    if (!fs->cands.n) {
        gpuenv_add(r, GPUENV_L4, "l4.cudnn", "cuDNN", GPUENV_WARN, "library_missing",
                   "No cuDNN anywhere: frameworks that use cuDNN (Paddle, ONNX Runtime CUDA EP, "
                   "PyTorch) fail with \"cannot open shared object file\"",
                   "apt install libcudnn9-cuda-13 (or pip install nvidia-cudnn-cu13)", "libcudnn not found");
        return;
    }
    gpuenv_buf fb = {0};
    for (int k = 0; k < fs->nw; k++) {
        const winner *w = &fs->w[k];
        gpuenv_buf_printf(&fb, "%slibcudnn.so.%d -> %s (%s", k ? "; " : "", w->major, w->real,
                          w->version[0] ? w->version : "?");
        if (w->cuda_build)
            gpuenv_buf_printf(&fb, ", built for CUDA %d.%d", w->cuda_build / 1000, (w->cuda_build % 1000) / 10);
        gpuenv_buf_printf(&fb, ", via %s)", gpuenv_via_str(w->via));
    }
    if (!fs->nw) gpuenv_buf_puts(&fb, "copies exist but ld.so finds none of them by SONAME");
    char *finding = gpuenv_buf_take(&fb);
    if (!finding) {
        r->oom = 1;
        return;
    }
    gpuenv_status st = fs->nw ? GPUENV_OK : GPUENV_WARN;
    const char *code = fs->nw ? "" : "library_not_in_search_path";
    char *cause = NULL, *fix = NULL;
    if (!fs->nw) {
        cause = strdup("Copies exist only outside the loader's search path");
        fix = gpuenv_asprintf("export LD_LIBRARY_PATH=<dir of %s>:$LD_LIBRARY_PATH", fs->cands.v[0].path);
    }
    for (int k = 0; k < fs->nw && st != GPUENV_FAIL; k++) {
        const winner *w = &fs->w[k];
        int cb = w->cuda_build / 1000;
        if (cb && dc > 0 && cb > dc / 1000) {
            st = GPUENV_FAIL;
            code = "cudnn_cuda_newer_than_driver";
            free(cause);
            free(fix);
            cause = gpuenv_asprintf("cuDNN %s (%s) is built for CUDA %d but the driver supports "
                                    "only CUDA %d.%d",
                                    w->version, w->real, cb, dc / 1000, (dc % 1000) / 10);
            fix = gpuenv_asprintf("install the cuDNN build for CUDA %d (pip install "
                                  "nvidia-cudnn-cu%d / apt install libcudnn9-cuda-%d) or upgrade "
                                  "the driver",
                                  dc / 1000, dc / 1000, dc / 1000);
            continue;
        }
        int rt_has = 0, rt_any = rt->nw > 0;
        for (int j = 0; j < rt->nw; j++) rt_has |= rt->w[j].major == cb;
        if (cb && rt_any && !rt_has && st == GPUENV_OK) {
            st = GPUENV_FAIL;
            code = "cudnn_other_cuda_major";
            free(cause);
            free(fix);
            cause = gpuenv_asprintf("cuDNN %s (%s) is built for CUDA %d, but the CUDA runtime "
                                    "here is CUDA %d",
                                    w->version, w->real, cb, rt->w[0].major);
            fix = gpuenv_asprintf("install the cuDNN build for CUDA %d (pip install "
                                  "nvidia-cudnn-cu%d or apt install libcudnn9-cuda-%d), and "
                                  "remove the other one from the library path",
                                  rt->w[0].major, rt->w[0].major, rt->w[0].major);
            continue;
        }
        /* LD_LIBRARY_PATH copy shadowing a different version elsewhere */
        if (w->via == GPUENV_VIA_LD_LIBRARY_PATH && st == GPUENV_OK) {
            for (size_t i = 0; i < fs->cands.n; i++) {
                const cand *o = &fs->cands.v[i];
                if (strcmp(o->where, "LD_LIBRARY_PATH") == 0 || strcmp(o->real, w->real) == 0) continue;
                int same_major = gpuenv_ver_major(o->fver) == w->major;
                if (same_major && !ver_same(o->fver, w->version) && strchr(o->fver, '.')) {
                    st = GPUENV_WARN;
                    code = "ld_library_path_shadows";
                    free(cause);
                    free(fix);
                    cause = gpuenv_asprintf("LD_LIBRARY_PATH puts %s (%s) ahead of %s (%s)", w->real, w->version,
                                            o->real, o->fver);
                    fix = strdup("remove that directory from LD_LIBRARY_PATH, or make both "
                                 "copies the same version");
                    break;
                }
            }
        }
    }
    gpuenv_check *c =
        gpuenv_add(r, GPUENV_L4, "l4.cudnn", "cuDNN", st, code, cause ? cause : "", fix ? fix : "", "%s", finding);
    list_evidence(r, c, fs);
    free(finding);
    free(cause);
    free(fix);

    /* Split libraries: libcudnn.so.N dlopens them by name at first use; they
       must all be found and be the same version as the shim. */
    if (fs->nw) {
        const winner *w = &fs->w[0];
        const char *const *names = w->major >= 9 ? split9 : w->major == 8 ? split8 : NULL;
        if (names) {
            gpuenv_obj shim;
            int have_shim = gpuenv_obj_open(ctx, w->path, &shim) == 0;
            gpuenv_strv miss = {0}, lines = {0}, vers = {0};
            const char *mainv = w->version;
            int oom = strchr(mainv, '.') && gpuenv_strv_push(&vers, mainv);
            for (int i = 0; names[i]; i++) {
                char nm[96];
                snprintf(nm, sizeof nm, "libcudnn_%s.so.%d", names[i], w->major);
                gpuenv_via via;
                char *p = gpuenv_resolve(ctx, nm, have_shim ? &shim : NULL, &via);
                if (!p) {
                    oom |= gpuenv_strv_push(&miss, nm) != 0;
                    continue;
                }
                char *real = NULL;
                char *fv = file_version(ctx->root, p, &real);
                oom |= gpuenv_strv_push_owned(&lines, gpuenv_asprintf("%s -> %s [%s] (via %s)", nm, real ? real : p,
                                                                      fv ? fv : "?", gpuenv_via_str(via)));
                if (fv && strchr(fv, '.') && !strv_has_ver(&vers, fv)) oom |= gpuenv_strv_push(&vers, fv) != 0;
                free(fv);
                free(real);
                free(p);
            }
            if (oom) r->oom = 1;
            gpuenv_check *sc;
            if (vers.n > 1) {
                gpuenv_buf vb = {0};
                for (size_t i = 0; i < vers.n; i++) gpuenv_buf_printf(&vb, "%s%s", i ? ", " : "", vers.v[i]);
                char *vs = gpuenv_buf_take(&vb);
                sc = gpuenv_add(r, GPUENV_L4, "l4.cudnn_split", "cuDNN split libraries", GPUENV_FAIL,
                                "cudnn_split_mixed",
                                "cuDNN's split libraries come from different versions (a partial "
                                "copy in one directory shadows a full install): cudnnCreate or "
                                "the first convolution fails",
                                "put one complete cuDNN on the path: remove the partial copy "
                                "(check LD_LIBRARY_PATH) or copy all libcudnn_*.so.N of one "
                                "version together",
                                "mixed versions: %s", vs ? vs : "?");
                free(vs);
            } else if (miss.n) {
                sc = gpuenv_add(r, GPUENV_L4, "l4.cudnn_split", "cuDNN split libraries", GPUENV_FAIL,
                                "cudnn_split_missing",
                                "libcudnn.so loads its split libraries on demand; missing ones "
                                "fail at the first call that needs them",
                                "install the full cuDNN package next to libcudnn.so (apt install "
                                "libcudnn9-cuda-13)",
                                "%zu of the split libraries not found (first: %s)", miss.n, miss.v[0]);
            } else {
                sc = gpuenv_add(r, GPUENV_L4, "l4.cudnn_split", "cuDNN split libraries", GPUENV_OK, "", "", "",
                                "all %s split libraries found, one version", w->major >= 9 ? "7" : "6");
            }
            for (size_t i = 0; i < lines.n; i++) gpuenv_evidence(r, sc, "%s", lines.v[i]);
            for (size_t i = 0; i < miss.n; i++) gpuenv_evidence(r, sc, "%s: not found", miss.v[i]);
            gpuenv_strv_free(&miss);
            gpuenv_strv_free(&lines);
            gpuenv_strv_free(&vers);
            if (have_shim) gpuenv_obj_close(&shim);
        }
    }

    /* Paddle (non-pip builds) and cuDNN 8's sub-libraries dlopen the
       unversioned name; pip wheels and runtime images do not ship it. */
    gpuenv_via via;
    char *u = gpuenv_resolve(ctx, "libcudnn.so", NULL, &via);
    if (!u && fs->nw) {
        const winner *w = &fs->w[0];
        char *dir = strdup(w->path);
        char *sl = dir ? strrchr(dir, '/') : NULL;
        if (sl) *sl = 0;
        char *fx = gpuenv_asprintf("sudo ln -s %s %s/libcudnn.so && sudo ldconfig", w->path, dir ? dir : ".");
        gpuenv_add(r, GPUENV_L4, "l4.cudnn_unversioned", "libcudnn.so", GPUENV_WARN, "cudnn_unversioned_missing",
                   "The unversioned libcudnn.so is missing: loaders that ask for it (Paddle: "
                   "\"The third-party dynamic library (libcudnn.so) … is not configured "
                   "correctly\") fail although libcudnn.so.N is installed",
                   fx ? fx : "create a libcudnn.so symlink to libcudnn.so.N",
                   "dlopen(\"libcudnn.so\") would fail; libcudnn.so.%d exists", w->major);
        free(fx);
        free(dir);
    } else if (u) {
        char *real = gpuenv_root_realpath(ctx->root, u);
        gpuenv_add(r, GPUENV_L4, "l4.cudnn_unversioned", "libcudnn.so", GPUENV_OK, "", "", "",
                   "libcudnn.so -> %s (via %s)", real ? real : u, gpuenv_via_str(via));
        free(real);
    }
    free(u);
}

static void check_cublas_pair(lector_doctor_report *r, const fam_state *b, const fam_state *lt)
{
    for (int i = 0; i < b->nw; i++)
        for (int j = 0; j < lt->nw; j++) {
            const winner *x = &b->w[i], *y = &lt->w[j];
            if (x->major != y->major) continue;
            int vknown = strchr(x->version, '.') && strchr(y->version, '.');
            char *dx = strdup(x->real), *dy = strdup(y->real);
            char *sx = dx ? strrchr(dx, '/') : NULL, *sy = dy ? strrchr(dy, '/') : NULL;
            if (sx) *sx = 0;
            if (sy) *sy = 0;
            int samedir = dx && dy && strcmp(dx, dy) == 0;
            free(dx);
            free(dy);
            if (vknown && !ver_same(x->version, y->version)) {
                gpuenv_add(r, GPUENV_L4, "l4.cublas_pair", "cuBLAS/cuBLASLt", GPUENV_FAIL, "cublas_mixed",
                           "libcublas and libcublasLt come from different releases (\"undefined "
                           "symbol … version libcublasLt.so.N\")",
                           "load both from one install: remove the older copy from "
                           "LD_LIBRARY_PATH, or reinstall the matching nvidia-cublas wheel",
                           "%s (%s) with %s (%s)", x->real, x->version, y->real, y->version);
                return;
            }
            if (!vknown && !samedir) {
                gpuenv_add(r, GPUENV_L4, "l4.cublas_pair", "cuBLAS/cuBLASLt", GPUENV_WARN, "cublas_split_dirs",
                           "libcublas and libcublasLt resolve to different directories: they "
                           "may be different releases",
                           "keep libcublas.so.N and libcublasLt.so.N of one install together", "%s with %s", x->real,
                           y->real);
                return;
            }
        }
}

void gpuenv_check_libs(lector_doctor_report *r, const lector_doctor_options *opt)
{
    gpuenv_ctx ctx;
    if (gpuenv_ctx_init(&ctx, r->root, opt->ld_library_path)) {
        r->oom = 1;
        return;
    }
    gpuenv_check *c =
        gpuenv_add(r, GPUENV_L4, "l4.ldcache", "ld.so.cache", ctx.cache_state == 1 ? GPUENV_OK : GPUENV_WARN,
                   ctx.cache_state == 1 ? "" : "ldcache_unreadable",
                   ctx.cache_state == 1 ? "" : "/etc/ld.so.cache is missing or not a glibc cache",
                   ctx.cache_state == 1 ? "" : "sudo ldconfig", "%zu entries (%s%s%s)", ctx.cache.n,
                   ctx.cache.has_old ? "ld.so-1.7.0" : "", ctx.cache.has_old && ctx.cache.has_new ? " + " : "",
                   ctx.cache.has_new ? "glibc-ld.so.cache1.1" : "");
    for (size_t i = 0; i < ctx.default_dirs.n; i++) gpuenv_evidence(r, c, "default dir: %s", ctx.default_dirs.v[i]);

    int dc = driver_cuda(r);
    size_t nf = sizeof families / sizeof families[0];
    fam_state fs[sizeof families / sizeof families[0]];
    memset(fs, 0, sizeof fs);
    for (size_t i = 0; i < nf; i++) {
        if (collect(&fs[i].cands, &ctx, families[i].stem)) {
            r->oom = 1;
            break;
        }
        fill_winners(r, opt, &ctx, &families[i], &fs[i]);
    }
    if (!r->oom) {
        for (size_t i = 0; i < nf; i++) {
            if (strcmp(families[i].stem, "cudnn") == 0)
                check_cudnn(r, &ctx, &fs[i], &fs[0], dc);
            else
                check_runtime_like(r, &families[i], &fs[i], dc);
            if (strcmp(families[i].stem, "cublasLt") == 0) check_cublas_pair(r, &fs[1], &fs[2]);
        }
        gpuenv_buf sb = {0};
        for (size_t i = 0; i < nf; i++)
            if (fs[i].nw && strcmp(families[i].stem, "cublasLt") != 0)
                gpuenv_buf_printf(&sb, "%s%s %s", sb.len ? ", " : "", families[i].label,
                                  fs[i].w[0].version[0] ? fs[i].w[0].version : "?");
        char *s = gpuenv_buf_take(&sb);
        snprintf(r->facts.libs_summary, sizeof r->facts.libs_summary, "%s", s ? s : "");
        free(s);
    }
    for (size_t i = 0; i < nf; i++) {
        candv_free(&fs[i].cands);
        for (int k = 0; k < fs[i].nw; k++) {
            free(fs[i].w[k].path);
            free(fs[i].w[k].real);
        }
    }
    gpuenv_ctx_free(&ctx);
}

/* ---------------------------------------------- loader-facing helpers */

int gpuenv_find_best(const char *root, const char *stem, int cuda_major, gpuenv_libinfo *out)
{
    memset(out, 0, sizeof *out);
    int majors[2] = {cuda_major, -1};
    if (strcmp(stem, "cudnn") == 0) {
        /* cuDNN 9 exists for CUDA 11.8, 12 and 13; cuDNN 8 for 10.2-12.2 */
        majors[0] = 9;
        majors[1] = cuda_major <= 12 ? 8 : -1;
    }
    for (int k = 0; k < 2 && majors[k] >= 0; k++) {
        char name[64];
        snprintf(name, sizeof name, "lib%s.so.%d", stem, majors[k]);
        int rc = gpuenv_resolve_library(root, NULL, name, out);
        if (rc != -1) return rc;
    }
    /* Not on the loader's path: look where installers put it. */
    gpuenv_ctx ctx;
    if (gpuenv_ctx_init(&ctx, root, NULL)) return -2;
    candv cv = {0};
    int rc = collect(&cv, &ctx, stem) ? -2 : -1;
    for (int k = 0; k < 2 && majors[k] >= 0 && rc == -1; k++)
        for (size_t i = 0; i < cv.n; i++) {
            char *sv = gpuenv_soname_version(cv.v[i].path);
            int m = gpuenv_ver_major(sv);
            free(sv);
            if (m != majors[k]) continue;
            snprintf(out->path, sizeof out->path, "%s", cv.v[i].path);
            snprintf(out->real, sizeof out->real, "%s", cv.v[i].real);
            snprintf(out->version, sizeof out->version, "%s", cv.v[i].fver);
            out->via = GPUENV_VIA_PATH;
            rc = 0;
            break;
        }
    candv_free(&cv);
    gpuenv_ctx_free(&ctx);
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
    char exe[4096];
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
