/* check_libs.c - L4: the CUDA user-space libraries.
 *
 * For each family (CUDA runtime, cuBLAS, cuBLASLt, cuDNN, NVRTC): every copy
 * on disk (gpuenv_collect), the SONAMEs those copies carry (libcudart.so.11.0
 * for CUDA 11, libcudnn.so.9, ...), and for each SONAME what a program that
 * dlopens it by name gets (the loader emulation, preloads included) and what
 * Lector gets (the first usable copy in the loader's order, which it
 * preloads by absolute path). A name that does not load is a failure for
 * name-based loaders (Paddle, ONNX Runtime, torch); it is also Lector's when
 * Lector's own copy is hit. Versions come from the libraries themselves when
 * they may be loaded (cudaRuntimeGetVersion, cublasGetProperty,
 * cudnnGetVersion, cudnnGetCudartVersion, nvrtcVersion), else from the file
 * names and the pip wheels' dist-info directories. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

typedef struct family {
    const char *stem, *label;
    int lector; /* Lector's CUDA backend loads it */
} family;

static const family families[] = {
    {"cudart", "CUDA runtime", 0}, {"cublas", "cuBLAS", 1}, {"cublasLt", "cuBLASLt", 1},
    {"cudnn", "cuDNN", 1},         {"nvrtc", "NVRTC", 0},
};
#define N_FAMILIES  (sizeof families / sizeof families[0])
#define MAX_SONAMES 4

/* ------------------------------------------------------ doctor_named */

int doctor_named_open(const lector_doctor_report *r, const char *soname, doctor_named *out)
{
    memset(out, 0, sizeof *out);
    if (gpuenv_ldso_dlopen(&r->ldso, soname, &out->load) ||
        gpuenv_ldso_find(&r->ldso, soname, NULL, NULL, 0, &out->find)) {
        doctor_named_free(out);
        return -2;
    }
    if (out->load.ok && !out->load.crash_signal) {
        const gpuenv_obj *o = out->load.obj[out->load.first_requested];
        out->path = lector__strdup(o->path);
        out->real = lector__strdup(o->real ? o->real : o->path);
        char *v = out->real ? gpuenv_soname_version(out->real) : NULL;
        char *w = out->path ? gpuenv_soname_version(out->path) : NULL;
        if (!out->path || !out->real || !v || !w) {
            lector__free(v);
            lector__free(w);
            doctor_named_free(out);
            return -2;
        }
        const char *best = strlen(v) >= strlen(w) ? v : w;
        if (gpuenv_ver_major(best) >= 0) snprintf(out->version, sizeof out->version, "%s", best);
        lector__free(v);
        lector__free(w);
    }
    return 0;
}

void doctor_named_free(doctor_named *n)
{
    gpuenv_load_free(&n->load);
    gpuenv_find_free(&n->find);
    lector__free(n->path);
    lector__free(n->real);
    memset(n, 0, sizeof *n);
}

/* ------------------------------------------------------------ versions */

typedef struct qver {
    char version[64]; /* "13.0", "9.14.0"; "" unknown */
    int cuda_build;   /* cuDNN: CUDA it was built for (1000*major+10*minor), 0 unknown */
} qver;

/* dlopen a library by its host path and ask it for its version. The CUDA
 * libraries are not unloaded: some register atexit handlers. */
static void query_version(const char *stem, const char *host_path, qver *q)
{
    memset(q, 0, sizeof *q);
    void *h = dlopen(host_path, RTLD_LAZY | RTLD_LOCAL);
    if (!h) return;
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
}

/* A pip wheel's dist-info: site-packages/nvidia/<pkg>/lib/x ->
 * site-packages/nvidia_<pkg>_cu<M>-<version>.dist-info. */
static int wheel_info(const char *root, const char *path, char *ver, size_t len, int *cuda_major)
{
    *cuda_major = 0;
    ver[0] = 0;
    const char *sp = strstr(path, "/site-packages/nvidia/");
    if (!sp) sp = strstr(path, "/dist-packages/nvidia/");
    if (!sp) return 0;
    const char *pkg = strchr(sp + 1, '/') + 8; /* after "/nvidia/" */
    size_t pl = strcspn(pkg, "/");
    if (pl == 4 && strncmp(pkg, "cu13", 4) == 0) *cuda_major = 13;
    char *dir = gpuenv_strndup(path, (size_t)(strchr(sp + 1, '/') - path));
    if (!dir) return -2;
    gpuenv_strv names = {0};
    int rc = gpuenv_root_list(root, dir, &names) == -2 ? -2 : 0;
    char prefix[96];
    snprintf(prefix, sizeof prefix, "nvidia_%.*s", (int)pl, pkg);
    for (size_t i = 0; i < names.n && !rc; i++) {
        const char *n = names.v[i];
        size_t nl = strlen(n);
        if (strncmp(n, prefix, strlen(prefix)) != 0 || nl < 10 || strcmp(n + nl - 10, ".dist-info") != 0) continue;
        const char *rest = n + strlen(prefix);
        if (strncmp(rest, "_cu", 3) == 0) *cuda_major = atoi(rest + 3);
        const char *dash = strchr(rest, '-');
        if (dash) snprintf(ver, len, "%.*s", (int)(n + nl - 10 - dash - 1), dash + 1);
    }
    gpuenv_strv_free(&names);
    lector__free(dir);
    return rc;
}

/* ------------------------------------------------------------ families */

typedef struct soname_state {
    char soname[128];
    int major;
    doctor_named named; /* what a name-based loader gets */
    gpuenv_find usable; /* the first usable copy (what Lector preloads) */
    char version[64];   /* best known version of the named (else usable) copy */
    int cuda_build;     /* cuDNN: 1000*major+10*minor of the CUDA it was built for */
    char wheel_ver[64];
} soname_state;

typedef struct fam_state {
    gpuenv_cands cands;
    soname_state s[MAX_SONAMES];
    int ns;
} fam_state;

static int may_dlopen(const lector_doctor_report *r, const lector_doctor_options *opt)
{
    if (opt->no_dlopen_libs) return 0;
    return !r->root_mode || opt->dlopen_in_root;
}

/* The driver's CUDA (1000*major+10*minor): NVML or libcuda, else the
 * release-notes table applied to the kernel module or libcuda's version. */
static int driver_cuda(const lector_doctor_report *r)
{
    if (r->facts.cuda_driver_version > 0) return r->facts.cuda_driver_version;
    const char *d = r->facts.nvml_driver[0] ? r->facts.nvml_driver : r->facts.kernel_driver;
    if (!d[0]) d = r->facts.libcuda_version;
    return gpuenv_cuda_for_driver(d);
}

static const char *driver_version(const lector_doctor_report *r)
{
    if (r->facts.nvml_driver[0]) return r->facts.nvml_driver;
    if (r->facts.kernel_driver[0]) return r->facts.kernel_driver;
    return r->facts.libcuda_version;
}

/* SONAME major of a candidate: its DT_SONAME, else its file name. */
static int cand_major(const gpuenv_cand *c)
{
    const char *name = c->soname ? c->soname : gpuenv_basename(c->path);
    const char *so = strstr(name, ".so.");
    return so ? gpuenv_ver_major(so + 4) : gpuenv_ver_major(c->fver);
}

static int add_soname(fam_state *fs, const char *soname, int major)
{
    for (int i = 0; i < fs->ns; i++)
        if (strcmp(fs->s[i].soname, soname) == 0) return 0;
    if (fs->ns == MAX_SONAMES) return 0;
    soname_state *s = &fs->s[fs->ns++];
    memset(s, 0, sizeof *s);
    snprintf(s->soname, sizeof s->soname, "%s", soname);
    s->major = major;
    return 0;
}

/* The SONAMEs the copies carry, newest major first. A file that is not an
 * ELF (a text file named libcudnn.so.9) counts under lib<stem>.so.<major>. */
static void sonames_of(const family *f, fam_state *fs)
{
    int majors[16], nm = 0;
    for (size_t i = 0; i < fs->cands.n; i++) {
        int m = cand_major(&fs->cands.v[i]);
        int seen = 0;
        for (int k = 0; k < nm; k++) seen |= majors[k] == m;
        if (m >= 0 && !seen && nm < 16) majors[nm++] = m;
    }
    for (int i = 1; i < nm; i++)
        for (int j = i; j > 0 && majors[j - 1] < majors[j]; j--) {
            int t = majors[j];
            majors[j] = majors[j - 1];
            majors[j - 1] = t;
        }
    for (int k = 0; k < nm; k++) {
        const char *sn = NULL;
        for (size_t i = 0; i < fs->cands.n && !sn; i++) {
            const gpuenv_cand *c = &fs->cands.v[i];
            if (c->elf_ok && c->soname && cand_major(c) == majors[k] && gpuenv_stem_matches(c->soname, f->stem))
                sn = c->soname;
        }
        char fallback[128];
        snprintf(fallback, sizeof fallback, "lib%s.so.%d", f->stem, majors[k]);
        add_soname(fs, sn ? sn : fallback, majors[k]);
    }
}

/* Lector loads the system's copies (not the offline bundle's set,
 * check_bundle.c) */
static int lector_uses_system(const lector_doctor_report *r) { return r->facts.lector_major && !r->facts.libs_bundle; }

/* Is this SONAME the one Lector's CUDA module needs? */
static int lectors(const lector_doctor_report *r, const family *f, int major)
{
    int lm = r->facts.lector_major;
    if (!f->lector || !lm || !lector_uses_system(r)) return 0;
    if (strcmp(f->stem, "cudnn") == 0) return major == 9;
    return major == lm;
}

/* The copies of a SONAME, for "it exists but not on the path" findings. */
static const gpuenv_cand *copy_of(const fam_state *fs, const soname_state *s, int elf_only)
{
    for (size_t i = 0; i < fs->cands.n; i++) {
        const gpuenv_cand *c = &fs->cands.v[i];
        if (cand_major(c) == s->major && (!elf_only || c->elf_ok)) return c;
    }
    return NULL;
}

typedef struct verdict {
    doctor_status st;
    int hits;
    const char *code;
    char *cause, *fix; /* owned */
} verdict;

static void verdict_set(lector_doctor_report *r, verdict *v, doctor_status st, int hits, const char *code, char *cause,
                        char *fix)
{
    lector__free(v->cause);
    lector__free(v->fix);
    v->st = st;
    v->hits = hits;
    v->code = code;
    v->cause = cause;
    v->fix = fix;
    if (st != DOCTOR_OK && (!cause || !fix)) r->oom = 1; /* a problem always has both */
}

/* A configured directory the cache does not list (ldconfig not re-run). */
static int configured_not_cached(const lector_doctor_report *r, const char *dir)
{
    gpuenv_ldconf conf;
    if (gpuenv_ldconf_read(r->root, &conf)) return 0;
    int configured = 0;
    for (size_t i = 0; i < conf.dirs.n; i++) configured |= strcmp(conf.dirs.v[i], dir) == 0;
    gpuenv_ldconf_free(&conf);
    return configured;
}

/* Lector preloads cuBLASLt, cuBLAS and cuDNN by absolute path, each its
 * first usable copy: a dependency of one of those that fails by name (a
 * broken libcublasLt.so.N first on LD_LIBRARY_PATH) is already loaded when
 * the next one asks for it. */
static int dependency_hits_lector(const lector_doctor_report *r, const doctor_named *n, const char *err)
{
    char dep[256];
    if (n->load.missing.n)
        snprintf(dep, sizeof dep, "%s", n->load.missing.v[0]);
    else
        snprintf(dep, sizeof dep, "%.*s", (int)strcspn(err, ":"), err);
    const char *stem = doctor_cuda_stem(dep);
    if (!stem || !r->facts.lector_major ||
        (strcmp(stem, "cublasLt") && strcmp(stem, "cublas") && strcmp(stem, "cudnn")))
        return 1;
    gpuenv_libinfo best;
    if (gpuenv_find_best_in(&r->ldso, stem, r->facts.lector_major, &best)) return 1;
    return strcmp(best.path, dep) == 0;
}

/* A loop with no real file left: remove the links, install the library. */
static char *loop_fix(const lector_doctor_report *r, const char *link, const char *soname)
{
    char *dir = gpuenv_dirname(link);
    char *inst = doctor_fix_install_lib(soname, r->facts.lector_major);
    const char *sudo = strncmp(link, "/home/", 6) == 0 ? "" : "sudo ";
    char *s =
        dir && inst
            ? gpuenv_asprintf("%sfind %s -maxdepth 1 -xtype l -name '%.*s*' -delete && %s", sudo, dir,
                              (int)(strstr(soname, ".so") ? strstr(soname, ".so") - soname + 3 : (long)strlen(soname)),
                              soname, inst)
            : NULL;
    lector__free(dir);
    lector__free(inst);
    return s;
}

/* Why a name-based load of s->soname fails, if it does. */
static void load_problem(lector_doctor_report *r, const family *f, const fam_state *fs, const soname_state *s,
                         int lector_hit, verdict *v)
{
    const doctor_named *n = &s->named;
    const gpuenv_find *fd = &n->find;
    int hits = DOCTOR_HITS_NAMED | (lector_hit ? DOCTOR_HITS_LECTOR : 0);
    if (n->load.crash_signal || fd->outcome == GPUENV_FATAL) {
        const char *what = fd->what ? fd->what : "not a loadable library";
        verdict_set(r, v, DOCTOR_FAIL, hits, n->load.crash_signal ? "library_truncated" : "library_unloadable",
                    gpuenv_asprintf("The first %s the loader finds is not a usable library (%s), and the loader "
                                    "stops there: dlopen(\"%s\") fails%s%s",
                                    s->soname, what, s->soname,
                                    lector_hit ? ""
                                               : "; Lector skips it and preloads the next usable copy by absolute "
                                                 "path, but Paddle, ONNX Runtime and torch load it by name",
                                    lector_hit ? " for Lector too (no usable copy)" : ""),
                    doctor_fix_not_this(r, fd, 1));
        return;
    }
    if (fd->outcome == GPUENV_FOUND) {
        /* found, but a dependency or a symbol version fails */
        const char *err = n->load.error ? n->load.error : "?";
        if (lector_hit && !dependency_hits_lector(r, n, err)) hits &= ~DOCTOR_HITS_LECTOR;
        const char *code = strstr(err, "version `") ? "library_version_mismatch" : "library_dependency_missing";
        char *fix = NULL;
        if (n->load.sym_from > 0) {
            /* two releases mixed: the copy that came through LD_LIBRARY_PATH
               or LD_PRELOAD goes, else the library the symbol was expected in
               is reinstalled */
            const gpuenv_obj *from = n->load.obj[n->load.sym_from - 1];
            const gpuenv_obj *in = n->load.sym_file > 0 ? n->load.obj[n->load.sym_file - 1] : NULL;
            const gpuenv_obj *stray =
                in && (in->via == GPUENV_VIA_LD_LIBRARY_PATH || in->via == GPUENV_VIA_PRELOAD) ? in
                : from->via == GPUENV_VIA_LD_LIBRARY_PATH || from->via == GPUENV_VIA_PRELOAD   ? from
                                                                                               : NULL;
            const char *from_stem = doctor_cuda_stem(from->path), *in_stem = in ? doctor_cuda_stem(in->path) : NULL;
            int blas =
                from_stem && in_stem && strncmp(from_stem, "cublas", 6) == 0 && strncmp(in_stem, "cublas", 6) == 0;
            verdict_set(r, v, DOCTOR_FAIL, hits, blas ? "cublas_mixed" : "library_symbol_missing",
                        gpuenv_asprintf("%s (%s) does not load: %s. Two releases are mixed: %s asks for a symbol "
                                        "%s does not have",
                                        s->soname, fd->path, err, from->path, in ? in->path : "its dependency"),
                        stray ? doctor_fix_path_away(r, stray->path)
                              : doctor_fix_install_lib(in && in->elf.soname ? in->elf.soname : s->soname,
                                                       r->facts.lector_major));
            return;
        }
        int unusable = !strstr(err, "cannot open shared object file") && !strstr(err, "version `") && strchr(err, ':');
        if (n->load.missing.n && !unusable) {
            doctor_notfound nf;
            int e = doctor_explain_notfound(r, n->load.missing.v[0], "library_not_in_search_path", &nf);
            if (e == -2) {
                r->oom = 1;
                return;
            }
            if (e == 1 && strcmp(nf.code, "soname_link_missing") == 0) {
                verdict_set(
                    r, v, DOCTOR_FAIL, hits, nf.code,
                    gpuenv_asprintf("%s is found (%s) but does not load: %s. %s", s->soname, fd->path, err, nf.cause),
                    nf.fix);
                nf.fix = NULL;
                doctor_notfound_free(&nf);
                return;
            }
            if (e == 1) doctor_notfound_free(&nf);
        } else if (unusable) {
            /* a dependency the loader cannot use ("file too short", "invalid
               ELF header"): glibc names it first */
            char *bad = doctor_own(r, gpuenv_strndup(err, strcspn(err, ":")));
            if (!bad) return;
            verdict_set(r, v, DOCTOR_FAIL, hits, "library_unloadable",
                        gpuenv_asprintf("%s (%s) needs a library whose first copy on the loader's path is not "
                                        "usable: %s",
                                        s->soname, fd->path, err),
                        doctor_fix_path_away(r, bad));
            lector__free(bad);
            return;
        }
        if (n->load.missing.n) {
            /* a copy of the missing dependency elsewhere? */
            gpuenv_cands dc;
            char stem[128];
            snprintf(stem, sizeof stem, "%s", n->load.missing.v[0] + 3);
            char *dot = strstr(stem, ".so");
            if (dot) *dot = 0;
            if (strncmp(n->load.missing.v[0], "lib", 3) == 0 && stem[0] && gpuenv_collect(&r->ldso, stem, &dc) == 0) {
                for (size_t i = 0; i < dc.n && !fix; i++)
                    if (dc.v[i].elf_ok && dc.v[i].soname && strcmp(dc.v[i].soname, n->load.missing.v[0]) == 0) {
                        char *dir = gpuenv_dirname(dc.v[i].path);
                        fix = dir ? doctor_fix_llp_prepend(dir) : NULL;
                        lector__free(dir);
                    }
                gpuenv_cands_free(&dc);
            }
        }
        if (!fix && n->load.missing.n) fix = doctor_fix_install_lib(n->load.missing.v[0], s->major);
        if (!fix) fix = doctor_fix_install_lib(s->soname, r->facts.lector_major);
        verdict_set(r, v, DOCTOR_FAIL, hits, code,
                    gpuenv_asprintf("%s is found (%s) but does not load: %s", s->soname, fd->path, err), fix);
        return;
    }
    /* not found by name: what the search passed over says why */
    const gpuenv_skip *loop = NULL, *denied = NULL;
    int only_class = fd->n_skip > 0, only_machine = fd->n_skip > 0;
    for (size_t i = 0; i < fd->n_skip; i++) {
        const gpuenv_skip *k = &fd->skip[i];
        only_class &= k->why == GPUENV_SKIP_CLASS;
        only_machine &= k->why == GPUENV_SKIP_MACHINE;
        if (k->err == ELOOP && !loop) loop = k;
        if (k->err == EACCES && !denied) denied = k;
    }
    if (loop) {
        /* the real file of that SONAME in the same directory, if any */
        char *dir = doctor_own(r, gpuenv_dirname(loop->path));
        const char *target = NULL;
        for (size_t i = 0; dir && i < fs->cands.n && !target; i++) {
            const gpuenv_cand *c = &fs->cands.v[i];
            char *cd = gpuenv_dirname(c->real);
            if (c->elf_ok && cand_major(c) == s->major && cd && strcmp(cd, dir) == 0) target = gpuenv_basename(c->real);
            lector__free(cd);
        }
        verdict_set(r, v, DOCTOR_FAIL, hits, "library_symlink_loop",
                    gpuenv_asprintf("The links for %s form a loop (%s: Too many levels of symbolic links): the loader "
                                    "gives up on that directory and finds no other copy",
                                    s->soname, loop->path),
                    target ? gpuenv_asprintf("sudo ln -sf %s %s && sudo ldconfig", target, loop->path)
                           : loop_fix(r, loop->path, s->soname));
        lector__free(dir);
        return;
    }
    if (denied) {
        char *real = gpuenv_root_realpath(r->root, denied->path);
        verdict_set(r, v, DOCTOR_FAIL, hits, "library_permission_denied",
                    gpuenv_asprintf("%s exists (%s) but this user may not read it (Permission denied): the loader "
                                    "passes over it",
                                    s->soname, denied->path),
                    gpuenv_asprintf("sudo chmod a+r %s", real ? real : denied->path));
        lector__free(real);
        return;
    }
    if (only_machine) {
        verdict_set(r, v, DOCTOR_FAIL, hits, "library_wrong_arch",
                    gpuenv_asprintf("Only a copy of %s built for another machine (not x86_64, e.g. a Jetson/aarch64 "
                                    "build) is on the loader's path: %s",
                                    s->soname, fd->skip[0].path),
                    doctor_fix_install_lib(s->soname, r->facts.lector_major));
        return;
    }
    const gpuenv_cand *c64 = (only_class || only_machine) ? copy_of(fs, s, 1) : NULL;
    if (c64 && fd->skip[0].via == GPUENV_VIA_LD_LIBRARY_PATH) {
        /* a usable copy elsewhere: LD_LIBRARY_PATH names the wrong directory */
        char *bad = doctor_own(r, gpuenv_dirname(fd->skip[0].path));
        char *good = doctor_own(r, gpuenv_dirname(c64->path));
        if (bad && good)
            verdict_set(r, v, DOCTOR_FAIL, hits, only_class ? "library_wrong_class" : "library_wrong_arch",
                        gpuenv_asprintf("LD_LIBRARY_PATH leads to a %s %s (%s), which the loader passes over; the "
                                        "x86_64 copy is in %s, which no search path names",
                                        only_class ? "32-bit" : "foreign-machine", s->soname, fd->skip[0].path, good),
                        doctor_fix_llp_replace(&r->ldso, bad, good));
        lector__free(bad);
        lector__free(good);
        return;
    }
    if (only_class) {
        verdict_set(r, v, DOCTOR_FAIL, hits, "library_wrong_class",
                    gpuenv_asprintf("Only a 32-bit %s is on the loader's path: %s (\"wrong ELF class: ELFCLASS32\")",
                                    s->soname, fd->skip[0].path),
                    doctor_fix_install_lib(s->soname, r->facts.lector_major));
        return;
    }
    doctor_notfound nf;
    int e = doctor_explain_notfound(r, s->soname, "library_not_in_search_path", &nf);
    if (e == -2) {
        r->oom = 1;
        return;
    }
    if (e == 1 && strcmp(nf.code, "soname_link_missing") == 0) {
        verdict_set(r, v, DOCTOR_FAIL, hits, nf.code, nf.cause, nf.fix);
        nf.cause = nf.fix = NULL;
        doctor_notfound_free(&nf);
        return;
    }
    if (e == 1) doctor_notfound_free(&nf);
    const gpuenv_cand *c = copy_of(fs, s, 1);
    if (!c) {
        verdict_set(r, v, DOCTOR_FAIL, hits, "library_missing",
                    gpuenv_asprintf("No usable %s anywhere: dlopen(\"%s\") fails (%s)", s->soname, s->soname,
                                    fd->error ? fd->error : "not found"),
                    doctor_fix_install_lib(s->soname, r->facts.lector_major));
        return;
    }
    char *dir = doctor_own(r, gpuenv_dirname(c->path));
    if (!dir) return;
    int stale = 0;
    for (size_t i = 0; i < fd->n_skip; i++) stale |= fd->skip[i].why == GPUENV_SKIP_STALE;
    if (configured_not_cached(r, dir) || stale) {
        verdict_set(r, v, DOCTOR_FAIL, hits, "ldconfig_not_run",
                    gpuenv_asprintf("%s is in %s, a directory /etc/ld.so.conf names, but /etc/ld.so.cache does not "
                                    "list it: ldconfig was not run after it was installed",
                                    s->soname, dir),
                    lector__strdup("sudo ldconfig"));
    } else if (strcmp(c->where, "pip wheel") == 0) {
        /* wheels are found by the frameworks that ship them (RPATH, preload) */
        verdict_set(r, v, DOCTOR_OK, 0, "", NULL, NULL);
    } else {
        verdict_set(r, v, DOCTOR_FAIL, hits, "library_not_in_search_path",
                    gpuenv_asprintf("%s exists in %s (%s) but no search path leads there: dlopen(\"%s\") fails",
                                    s->soname, dir, c->where, s->soname),
                    doctor_fix_llp_prepend(dir));
    }
    lector__free(dir);
}

/* Versions against the driver, and a copy on LD_LIBRARY_PATH shadowing
 * another version. */
static void version_problem(lector_doctor_report *r, const family *f, const fam_state *fs, const soname_state *s,
                            int lector_hit, verdict *v)
{
    int dc = driver_cuda(r);
    int hits = DOCTOR_HITS_NAMED | (lector_hit ? DOCTOR_HITS_LECTOR : 0);
    /* readable by its owner only: loads for root, fails for a service's user */
    struct stat st;
    if (s->named.real && gpuenv_root_stat(r->root, s->named.real, &st) == 0 && (st.st_mode & 0444) != 0444) {
        verdict_set(r, v, DOCTOR_FAIL, hits, "library_permission_denied",
                    gpuenv_asprintf("%s (%s) has mode %03o: other users than its owner get \"Permission denied\" and "
                                    "the loader passes over it",
                                    s->soname, s->named.real, (unsigned)(st.st_mode & 0777)),
                    gpuenv_asprintf("sudo chmod a+r %s", s->named.real));
        return;
    }
    if (strcmp(f->stem, "cudnn") != 0 && dc > 0 && s->major >= 10 && s->major < 100) {
        const char *floor = gpuenv_min_driver_for_major(s->major);
        if (s->major > dc / 1000) {
            const char *need = floor ? floor : "a newer one";
            verdict_set(r, v, DOCTOR_FAIL, hits, "runtime_newer_than_driver",
                        gpuenv_asprintf("%s %s (%s) is CUDA %d, but driver %s supports CUDA %d.%d at most: every call "
                                        "fails with \"CUDA driver version is insufficient for CUDA runtime version\" "
                                        "(error 35)",
                                        f->label, s->version[0] ? s->version : s->soname,
                                        s->named.real ? s->named.real : s->soname, s->major, driver_version(r),
                                        dc / 1000, (dc % 1000) / 10),
                        doctor_fix_driver_upgrade(r, need));
            return;
        }
        int minor = strcmp(f->stem, "cudart") == 0 || strcmp(f->stem, "nvrtc") == 0
                        ? (s->version[0] ? atoi(strchr(s->version, '.') ? strchr(s->version, '.') + 1 : "0") : 0)
                        : 0;
        int want = s->major * 1000 + minor * 10;
        if (s->major == dc / 1000 && want > dc) {
            const char *exact = gpuenv_min_driver_for_cuda(s->major, minor);
            verdict_set(r, v, DOCTOR_WARN, DOCTOR_HITS_NAMED, "minor_version_compat",
                        gpuenv_asprintf("%s %s is CUDA %d.%d, newer than the driver's CUDA %d.%d: it runs under "
                                        "minor-version compatibility, without the newest features (PTX of %d.%d "
                                        "does not JIT)",
                                        f->label, s->version, s->major, minor, dc / 1000, (dc % 1000) / 10, s->major,
                                        minor),
                        doctor_fix_driver_upgrade(r, exact   ? exact
                                                     : floor ? floor
                                                             : "the latest"));
            return;
        }
    }
    /* a copy on LD_LIBRARY_PATH shadowing another version of the same SONAME */
    if (s->named.load.ok && s->named.find.via == GPUENV_VIA_LD_LIBRARY_PATH && s->version[0]) {
        for (size_t i = 0; i < fs->cands.n; i++) {
            const gpuenv_cand *o = &fs->cands.v[i];
            if (strcmp(o->where, "LD_LIBRARY_PATH") == 0 || strcmp(o->real, s->named.real) == 0) continue;
            if (cand_major(o) != s->major || !strchr(o->fver, '.') || gpuenv_ver_same(o->fver, s->version)) continue;
            verdict_set(r, v, DOCTOR_WARN, DOCTOR_HITS_NAMED, "ld_library_path_shadows",
                        gpuenv_asprintf("LD_LIBRARY_PATH puts %s (%s) ahead of %s (%s): programs get the first",
                                        s->named.real, s->version, o->real, o->fver),
                        doctor_fix_llp_without(&r->ldso, s->named.find.list_item ? s->named.find.list_item : ""));
            return;
        }
    }
}

/* cuDNN: the CUDA it was built for against the driver and the runtime. */
static void cudnn_cuda_problem(lector_doctor_report *r, const fam_state *rt, const soname_state *s, int lector_hit,
                               verdict *v)
{
    int cb = s->cuda_build / 1000, dc = driver_cuda(r);
    int hits = DOCTOR_HITS_NAMED | (lector_hit ? DOCTOR_HITS_LECTOR : 0);
    if (!cb) return;
    if (dc > 0 && cb > dc / 1000) {
        verdict_set(r, v, DOCTOR_FAIL, hits, "cudnn_cuda_newer_than_driver",
                    gpuenv_asprintf("cuDNN %s (%s) is built for CUDA %d but driver %s supports CUDA %d.%d at most",
                                    s->version, s->named.real ? s->named.real : s->soname, cb, driver_version(r),
                                    dc / 1000, (dc % 1000) / 10),
                    gpuenv_asprintf("pip install nvidia-cudnn-cu%d (the cuDNN build for the driver's CUDA %d)",
                                    dc / 1000, dc / 1000));
        return;
    }
    int rt_has = 0, rt_any = 0, rt_major = 0;
    for (int j = 0; j < rt->ns; j++)
        if (rt->s[j].named.load.ok) {
            rt_any = 1;
            rt_has |= rt->s[j].major == cb;
            if (!rt_major) rt_major = rt->s[j].major;
        }
    if (rt_any && !rt_has) {
        verdict_set(r, v, DOCTOR_WARN, hits, "cudnn_other_cuda_major",
                    gpuenv_asprintf("cuDNN %s (%s) is built for CUDA %d, but the CUDA runtime here is CUDA %d",
                                    s->version, s->named.real ? s->named.real : s->soname, cb, rt_major),
                    gpuenv_asprintf("pip install nvidia-cudnn-cu%d", rt_major));
    }
}

static void evidence_cands(lector_doctor_report *r, doctor_check *c, const fam_state *fs)
{
    for (size_t i = 0; i < fs->cands.n; i++) {
        const gpuenv_cand *k = &fs->cands.v[i];
        doctor_evidence(r, c, "%s%s%s [%s] (%s)%s", k->path, strcmp(k->path, k->real) ? " -> " : "",
                        strcmp(k->path, k->real) ? k->real : "", k->fver[0] ? k->fver : "?", k->where,
                        k->elf_ok ? "" : " NOT A 64-BIT ELF LIBRARY");
    }
    for (int j = 0; j < fs->ns; j++) {
        const soname_state *s = &fs->s[j];
        if (s->named.load.ok)
            doctor_evidence(r, c, "dlopen(\"%s\") -> %s (via %s)", s->soname, s->named.path,
                            gpuenv_via_str(s->named.find.via));
        else
            doctor_evidence(r, c, "dlopen(\"%s\") fails: %s", s->soname,
                            s->named.load.error ? s->named.load.error : "?");
        if (s->usable.outcome == GPUENV_FOUND && (!s->named.path || strcmp(s->usable.path, s->named.path)))
            doctor_evidence(r, c, "first usable %s: %s (Lector preloads this one by absolute path)", s->soname,
                            s->usable.path);
        for (size_t k = 0; k < s->named.find.n_skip; k++) {
            const gpuenv_skip *sk = &s->named.find.skip[k];
            doctor_evidence(r, c, "passed over: %s (%s)", sk->path,
                            sk->why == GPUENV_SKIP_CLASS     ? "32-bit"
                            : sk->why == GPUENV_SKIP_MACHINE ? "another machine"
                            : sk->why == GPUENV_SKIP_STALE   ? "stale ld.so.cache entry"
                            : sk->why == GPUENV_SKIP_ENDED   ? "this error ended the search of its list"
                            : sk->err                        ? strerror(sk->err)
                                                             : "unusable");
        }
    }
}

static void check_family(lector_doctor_report *r, const family *f, fam_state *fs, const fam_state *rt)
{
    char id[64];
    snprintf(id, sizeof id, "l4.%s", f->stem);
    verdict worst = {DOCTOR_OK, 0, "", NULL, NULL};
    const soname_state *worst_s = NULL;
    /* the copy Lector's CUDA backend preloads (src/rt/cuda_loader.c): the
       first usable one in the loader's order, else where installers put it */
    gpuenv_libinfo best;
    int have_best = 0;
    if (f->lector && lector_uses_system(r)) {
        int b = gpuenv_find_best_in(&r->ldso, f->stem, r->facts.lector_major, &best);
        if (b == -2) {
            r->oom = 1;
            return;
        }
        have_best = b == 0;
    }
    for (int j = 0; j < fs->ns; j++) {
        soname_state *s = &fs->s[j];
        int lh = lectors(r, f, s->major);
        /* Lector is hit when it has no usable copy, or its copy is the broken one */
        int lector_hit = lh && (!have_best || (s->named.find.path && strcmp(best.path, s->named.find.path) == 0));
        verdict v = {DOCTOR_OK, 0, "", NULL, NULL};
        if (!s->named.load.ok)
            load_problem(r, f, fs, s, lector_hit, &v);
        else
            version_problem(r, f, fs, s, lh, &v);
        if (v.st == DOCTOR_OK && strcmp(f->stem, "cudnn") == 0 && s->named.load.ok)
            cudnn_cuda_problem(r, rt, s, lh, &v);
        int better = v.st == DOCTOR_FAIL ? 2 : v.st == DOCTOR_WARN ? 1 : 0;
        int have = worst.st == DOCTOR_FAIL ? 2 : worst.st == DOCTOR_WARN ? 1 : 0;
        if (better > have ||
            (better == have && better && lh && !(worst.hits & DOCTOR_HITS_LECTOR) && (v.hits & DOCTOR_HITS_LECTOR))) {
            lector__free(worst.cause);
            lector__free(worst.fix);
            worst = v;
            worst_s = s;
        } else {
            lector__free(v.cause);
            lector__free(v.fix);
        }
    }
    doctor_check *c;
    if (!fs->cands.n) {
        int lh = f->lector && lector_uses_system(r);
        /* with the bundle's set, no system copy is a gap for other programs only */
        doctor_status st = strcmp(f->stem, "nvrtc") == 0 || (r->facts.libs_bundle == 1) ? DOCTOR_WARN : DOCTOR_FAIL;
        /* the CUDA major to install: Lector's for its libraries, else the driver's */
        int dm = driver_cuda(r) / 1000;
        int m = lh || !dm ? (r->facts.lector_major ? r->facts.lector_major : 12) : dm;
        char fix[160], cause[320], *pip = doctor_fix_pip(&f->stem, 1, m);
        snprintf(fix, sizeof fix, "%s", pip ? pip : "");
        lector__free(pip);
        if (strcmp(f->stem, "nvrtc") == 0 && r->facts.libs_bundle == 1)
            snprintf(cause, sizeof cause,
                     "NVRTC (libnvrtc.so.*) is not installed on the system (Lector uses its bundled copy); programs "
                     "that compile kernels at run time fail");
        else if (strcmp(f->stem, "nvrtc") == 0)
            snprintf(cause, sizeof cause,
                     "NVRTC (libnvrtc.so.*) is not installed: Lector runs the kernels its CUDA module ships "
                     "compiled, and any other fused elementwise chain in an interpreter, slower; programs that "
                     "compile kernels at run time fail");
        else
            snprintf(cause, sizeof cause,
                     "No copy of %s (lib%s.so.*) is installed anywhere the loader or an installer would put it%s",
                     f->label, f->stem,
                     lh ? ": Lector's CUDA backend cannot start"
                     : r->facts.libs_bundle == 1 && (f->lector || strcmp(f->stem, "nvrtc") == 0)
                         ? " (Lector uses its bundled copy; programs that load it by name fail)"
                         : "");
        c = doctor_add(r, DOCTOR_L4, id, f->label, st,
                       DOCTOR_HITS_NAMED | (lh && strcmp(f->stem, "nvrtc") ? DOCTOR_HITS_LECTOR : 0), "library_missing",
                       cause, fix, "no lib%s.so.* found", f->stem);
    } else if (worst.st != DOCTOR_OK) {
        c = doctor_add(r, DOCTOR_L4, id, f->label, worst.st, worst.hits, worst.code, worst.cause, worst.fix, "%s: %s",
                       worst_s->soname,
                       worst_s->named.load.ok      ? worst_s->named.real
                       : worst_s->named.load.error ? worst_s->named.load.error
                                                   : "?");
    } else {
        gpuenv_buf b = {0};
        for (int j = 0; j < fs->ns; j++) {
            const soname_state *s = &fs->s[j];
            if (s->named.load.ok) {
                char built[48] = "";
                if (s->cuda_build)
                    snprintf(built, sizeof built, ", built for CUDA %d.%d", s->cuda_build / 1000,
                             (s->cuda_build % 1000) / 10);
                gpuenv_buf_printf(&b, "%s%s -> %s (%s%s, via %s)", b.len ? "; " : "", s->soname, s->named.real,
                                  s->version[0] ? s->version : "?", built, gpuenv_via_str(s->named.find.via));
            } else
                gpuenv_buf_printf(&b, "%s%s only in a pip wheel (%s): found by the framework that ships it",
                                  b.len ? "; " : "", s->soname, copy_of(fs, s, 1) ? copy_of(fs, s, 1)->path : "?");
        }
        char *fin = doctor_own(r, gpuenv_buf_take(&b));
        c = doctor_add(r, DOCTOR_L4, id, f->label, DOCTOR_OK, 0, "", "", "", "%s", fin ? fin : "");
        lector__free(fin);
    }
    lector__free(worst.cause);
    lector__free(worst.fix);
    evidence_cands(r, c, fs);
}

static void fill_soname(lector_doctor_report *r, const lector_doctor_options *opt, const family *f, soname_state *s)
{
    if (doctor_named_open(r, s->soname, &s->named) || gpuenv_ldso_find_usable(&r->ldso, s->soname, &s->usable)) {
        r->oom = 1;
        return;
    }
    snprintf(s->version, sizeof s->version, "%s", s->named.version);
    const char *real = s->named.real;
    if (real) {
        int wm = 0;
        if (wheel_info(r->root, real, s->wheel_ver, sizeof s->wheel_ver, &wm) == -2) r->oom = 1;
        if (strcmp(f->stem, "cudnn") == 0 && wm) s->cuda_build = wm * 1000;
        if (!s->version[0] && s->wheel_ver[0]) snprintf(s->version, sizeof s->version, "%s", s->wheel_ver);
    }
    if (real && may_dlopen(r, opt)) {
        char *host = doctor_own(r, gpuenv_host_path(r->root, real));
        if (host) {
            qver q;
            query_version(f->stem, host, &q);
            if (q.version[0]) snprintf(s->version, sizeof s->version, "%s", q.version);
            if (q.cuda_build) s->cuda_build = q.cuda_build;
        }
        lector__free(host);
    }
}

/* cuBLAS and cuBLASLt of one major must come from one release. */
static void check_cublas_pair(lector_doctor_report *r, const fam_state *b, const fam_state *lt)
{
    for (int i = 0; i < b->ns; i++)
        for (int j = 0; j < lt->ns; j++) {
            const soname_state *x = &b->s[i], *y = &lt->s[j];
            if (x->major != y->major || !x->named.load.ok || !y->named.load.ok) continue;
            int vknown = strchr(x->version, '.') && strchr(y->version, '.');
            char *dx = doctor_own(r, gpuenv_dirname(x->named.real)), *dy = doctor_own(r, gpuenv_dirname(y->named.real));
            int samedir = dx && dy && strcmp(dx, dy) == 0;
            lector__free(dx);
            lector__free(dy);
            int lh = lector_uses_system(r) && r->facts.lector_major == x->major;
            if (vknown && !gpuenv_ver_same(x->version, y->version)) {
                /* the odd one out is the copy LD_LIBRARY_PATH brought in */
                const gpuenv_find *odd =
                    x->named.find.via == GPUENV_VIA_LD_LIBRARY_PATH && y->named.find.via != GPUENV_VIA_LD_LIBRARY_PATH
                        ? &x->named.find
                        : &y->named.find;
                char *fix = doctor_own(r, doctor_fix_not_this(r, odd, 0));
                doctor_add(r, DOCTOR_L4, "l4.cublas_pair", "cuBLAS/cuBLASLt", DOCTOR_FAIL,
                           DOCTOR_HITS_NAMED | (lh ? DOCTOR_HITS_LECTOR : 0), "cublas_mixed",
                           "libcublas and libcublasLt come from different releases (\"undefined symbol ... version "
                           "libcublasLt.so.N\" or \"symbol ... not defined in file libcublasLt.so.N\")",
                           fix, "%s (%s) with %s (%s)", x->named.real, x->version, y->named.real, y->version);
                lector__free(fix);
                return;
            }
            if (!vknown && !samedir) {
                const gpuenv_find *odd =
                    x->named.find.via == GPUENV_VIA_LD_LIBRARY_PATH && y->named.find.via != GPUENV_VIA_LD_LIBRARY_PATH
                        ? &x->named.find
                        : &y->named.find;
                char *fix = doctor_own(r, doctor_fix_not_this(r, odd, 0));
                doctor_add(r, DOCTOR_L4, "l4.cublas_pair", "cuBLAS/cuBLASLt", DOCTOR_WARN, DOCTOR_HITS_NAMED,
                           "cublas_split_dirs",
                           "libcublas and libcublasLt resolve to different directories: they may be different "
                           "releases",
                           fix ? fix : "", "%s with %s", x->named.real, y->named.real);
                lector__free(fix);
                return;
            }
        }
}

/* The GPU against the CUDA release of the libraries: CUDA 13 builds for
 * Turing (7.5) and newer, CUDA 12 for Maxwell (5.0) and newer, ... A cuBLASLt
 * whose .nv_fatbin the doctor can read is checked against the GPU too. */
static void check_gpu_arch(lector_doctor_report *r, const fam_state *fs)
{
    static const size_t fams[] = {1, 2, 0}; /* cuBLAS, cuBLASLt, CUDA runtime */
    for (size_t k = 0; k < 3; k++) {
        const fam_state *f = &fs[fams[k]];
        for (int j = 0; j < f->ns; j++) {
            const soname_state *s = &f->s[j];
            if (!s->named.load.ok || s->major < 10) continue;
            int min = gpuenv_min_cc_for_cuda(s->major);
            for (int g = 0; g < r->facts.n_gpus && min; g++) {
                const doctor_gpu *gp = &r->facts.gpus[g];
                int cc = gp->cc_major * 10 + gp->cc_minor;
                if (!gp->cc_major || cc >= min) continue;
                int lh = lector_uses_system(r) && s->major == r->facts.lector_major;
                char fix[200];
                snprintf(fix, sizeof fix,
                         "pip install nvidia-cuda-runtime-cu%d nvidia-cublas-cu%d nvidia-cudnn-cu%d (CUDA %d still "
                         "builds for sm_%d)",
                         s->major - 1, s->major - 1, s->major - 1, s->major - 1, cc);
                doctor_check *c = doctor_add(
                    r, DOCTOR_L4, "l4.gpu_arch", "GPU vs CUDA", DOCTOR_FAIL,
                    DOCTOR_HITS_NAMED | (lh ? DOCTOR_HITS_LECTOR : 0), "gpu_too_old_for_cuda",
                    "The GPU is older than this CUDA release supports: its libraries carry no code for it and every "
                    "kernel fails with \"no kernel image is available for execution on the device\" (error 209)",
                    fix, "GPU %d %s is sm_%d%d (%s); %s is CUDA %d, which supports sm_%d and newer", g, gp->name,
                    gp->cc_major, gp->cc_minor, gpuenv_cc_family(gp->cc_major, gp->cc_minor), s->named.real, s->major,
                    min);
                if (lh) doctor_evidence(r, c, "Lector's CUDA backend is built for CUDA %d", r->facts.lector_major);
                return;
            }
        }
    }
}

void doctor_check_libs(lector_doctor_report *r, const lector_doctor_options *opt)
{
    fam_state *fs = lector__calloc(N_FAMILIES, sizeof *fs);
    if (!fs) {
        r->oom = 1;
        return;
    }
    for (size_t i = 0; i < N_FAMILIES && !r->oom; i++) {
        if (gpuenv_collect(&r->ldso, families[i].stem, &fs[i].cands)) {
            r->oom = 1;
            break;
        }
        sonames_of(&families[i], &fs[i]);
        for (int j = 0; j < fs[i].ns && !r->oom; j++) fill_soname(r, opt, &families[i], &fs[i].s[j]);
    }
    for (size_t i = 0; i < N_FAMILIES && !r->oom; i++) {
        check_family(r, &families[i], &fs[i], &fs[0]);
        if (strcmp(families[i].stem, "cublasLt") == 0) check_cublas_pair(r, &fs[1], &fs[2]);
    }
    if (!r->oom) check_gpu_arch(r, fs);
    if (!r->oom) {
        /* cuDNN's split libraries and unversioned name, per loadable major */
        const fam_state *dn = &fs[3];
        gpuenv_libinfo best;
        int have_best =
            lector_uses_system(r) && gpuenv_find_best_in(&r->ldso, "cudnn", r->facts.lector_major, &best) == 0;
        int newest = 1;
        for (int j = 0; j < dn->ns && !r->oom; j++) {
            const soname_state *s = &dn->s[j];
            if (!s->named.load.ok) continue;
            /* Lector preloads its best copy: hit when that is this one */
            int lh = lectors(r, &families[3], s->major) && (!have_best || strcmp(best.path, s->named.path) == 0);
            doctor_cudnn_checks(r, &s->named, s->version, s->major, lh, newest);
            newest = 0;
        }
        gpuenv_buf sb = {0};
        for (size_t i = 0; i < N_FAMILIES; i++) {
            if (strcmp(families[i].stem, "cublasLt") == 0) continue;
            for (int j = 0; j < fs[i].ns; j++)
                if (fs[i].s[j].named.load.ok) {
                    gpuenv_buf_printf(&sb, "%s%s %s", sb.len ? ", " : "", families[i].label,
                                      fs[i].s[j].version[0] ? fs[i].s[j].version : "?");
                    break;
                }
        }
        char *sum = doctor_own(r, gpuenv_buf_take(&sb));
        /* the bundle's set names itself (check_bundle.c) */
        if (sum && r->facts.libs_bundle != 1) snprintf(r->facts.libs_summary, sizeof r->facts.libs_summary, "%s", sum);
        lector__free(sum);
    }
    for (size_t i = 0; i < N_FAMILIES; i++) {
        gpuenv_cands_free(&fs[i].cands);
        for (int j = 0; j < fs[i].ns; j++) {
            doctor_named_free(&fs[i].s[j].named);
            gpuenv_find_free(&fs[i].s[j].usable);
        }
    }
    lector__free(fs);
}
