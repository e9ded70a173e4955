/* check_cudnn.c - L4: cuDNN's split libraries and its unversioned name.
 *
 * libcudnn.so.N is a shim: at its first use it dlopens its split libraries
 * (cuDNN 9: graph, ops, cnn, adv, engines_precompiled,
 * engines_runtime_compiled, heuristic, and in newer releases more, such as
 * engines_tensor_ir; cuDNN 8: {ops,cnn,adv}_{infer,train}) by name, so they
 * are searched as the shim's own dlopen would search them (its RUNPATH
 * $ORIGIN, LD_LIBRARY_PATH, the cache). They must all be found and all be of
 * one version: a partial copy of cuDNN on LD_LIBRARY_PATH mixes versions
 * (CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, or cudnnCreate failing). */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static const char *const split9[] = {
    "graph", "ops", "cnn", "adv", "engines_precompiled", "engines_runtime_compiled", "heuristic", NULL};
static const char *const split8[] = {"ops_infer", "ops_train", "cnn_infer", "cnn_train",
                                     "adv_infer", "adv_train", NULL};

/* Add libcudnn_X.so.N names of `major` found in a list of file names. */
static int add_split(gpuenv_strv *out, const char *name, int major)
{
    char suffix[16];
    snprintf(suffix, sizeof suffix, ".so.%d", major);
    size_t nl = strlen(name), sl = strlen(suffix);
    if (strncmp(name, "libcudnn_", 9) == 0 && nl > sl && strcmp(name + nl - sl, suffix) == 0 &&
        !gpuenv_strv_has(out, name))
        return gpuenv_strv_push(out, name) ? -2 : 0;
    return 0;
}

/* The split names the shim may ask for: the release's known list, every
 * libcudnn_*.so.N of the shim's own install, and every one another install
 * on the search path offers (a newer sub-library found there is loaded too:
 * pytorch/pytorch#185512). */
static int split_names(lector_doctor_report *r, const char *real_dir, int major, gpuenv_strv *out)
{
    const char *const *known = major >= 9 ? split9 : split8;
    for (int i = 0; known[i]; i++) {
        char *n = gpuenv_asprintf("libcudnn_%s.so.%d", known[i], major);
        if (gpuenv_strv_push_owned(out, n)) return -2;
    }
    gpuenv_strv names = {0};
    if (gpuenv_root_list(r->root, real_dir, &names) == -2) {
        gpuenv_strv_free(&names);
        return -2;
    }
    int rc = 0;
    for (size_t i = 0; i < names.n && !rc; i++) rc = add_split(out, names.v[i], major);
    gpuenv_strv_free(&names);
    gpuenv_cands cv;
    if (!rc && gpuenv_collect(&r->ldso, "cudnn_", &cv) == 0) {
        for (size_t i = 0; i < cv.n && !rc; i++) /* only copies the loader reaches by name */
            if (!strcmp(cv.v[i].where, "LD_LIBRARY_PATH") || !strcmp(cv.v[i].where, "ld.so.cache") ||
                !strcmp(cv.v[i].where, "default dir"))
                rc = add_split(out, gpuenv_basename(cv.v[i].path), major);
        gpuenv_cands_free(&cv);
    } else if (!rc) {
        rc = -2;
    }
    return rc;
}

/* How many of `names` a directory holds. */
static size_t held(const lector_doctor_report *r, const char *dir, const gpuenv_strv *names)
{
    size_t n = 0;
    for (size_t i = 0; i < names->n; i++) {
        char *p = gpuenv_asprintf("%s/%s", dir, names->v[i]);
        if (p && gpuenv_root_exists(r->root, p)) n++;
        lector__free(p);
    }
    return n;
}

typedef struct split_result {
    gpuenv_strv lines, missing, versions, dirs;
    char *bad_path;  /* a split library that stops the search */
    gpuenv_find bad; /* its search */
} split_result;

static void split_result_free(split_result *sr)
{
    gpuenv_strv_free(&sr->lines);
    gpuenv_strv_free(&sr->missing);
    gpuenv_strv_free(&sr->versions);
    gpuenv_strv_free(&sr->dirs);
    if (sr->bad_path) gpuenv_find_free(&sr->bad);
    lector__free(sr->bad_path);
}

static void resolve_splits(lector_doctor_report *r, const doctor_named *shim, const char *version,
                           const gpuenv_strv *names, split_result *sr)
{
    const gpuenv_load *ld = &shim->load;
    const gpuenv_obj *so = ld->obj[ld->first_requested];
    char *sd = doctor_own(r, gpuenv_dirname(so->path));
    if (sd && gpuenv_strv_push_owned(&sr->dirs, sd)) r->oom = 1;
    if (strchr(version, '.') && gpuenv_strv_push(&sr->versions, version)) r->oom = 1;
    for (size_t i = 0; i < names->n && !r->oom; i++) {
        gpuenv_find f;
        if (gpuenv_ldso_find(&r->ldso, names->v[i], so, ld->obj, ld->n, &f)) {
            r->oom = 1;
            break;
        }
        if (f.outcome == GPUENV_FOUND) {
            char *real = gpuenv_root_realpath(r->root, f.path);
            char *v = real ? gpuenv_soname_version(real) : NULL;
            char *d = gpuenv_dirname(f.path);
            if (!real || !v || !d) r->oom = 1;
            if (v && strchr(v, '.') && gpuenv_ver_major(v) >= 0) {
                int seen = 0;
                for (size_t k = 0; k < sr->versions.n; k++) seen |= gpuenv_ver_same(sr->versions.v[k], v);
                if (!seen && gpuenv_strv_push(&sr->versions, v)) r->oom = 1;
            }
            if (d && !gpuenv_strv_has(&sr->dirs, d) && gpuenv_strv_push(&sr->dirs, d)) r->oom = 1;
            if (gpuenv_strv_push_owned(&sr->lines,
                                       gpuenv_asprintf("%s -> %s [%s] (via %s)", names->v[i], real ? real : f.path,
                                                       v && *v ? v : "?", gpuenv_via_str(f.via))))
                r->oom = 1;
            lector__free(real);
            lector__free(v);
            lector__free(d);
            gpuenv_find_free(&f);
        } else if (f.outcome == GPUENV_NOT_FOUND) {
            /* the loader's own words */
            if (gpuenv_strv_push(&sr->missing, f.error ? f.error : names->v[i])) r->oom = 1;
            gpuenv_find_free(&f);
        } else if (!sr->bad_path) {
            sr->bad_path = doctor_own(r, lector__strdup(f.path));
            sr->bad = f;
        } else {
            gpuenv_find_free(&f);
        }
    }
}

/* A directory holding every split library of one install. */
static char *complete_dir(lector_doctor_report *r, const gpuenv_strv *names, int major)
{
    gpuenv_cands cv;
    if (gpuenv_collect(&r->ldso, "cudnn", &cv)) {
        r->oom = 1;
        return NULL;
    }
    char *best = NULL;
    for (size_t i = 0; i < cv.n && !best; i++) {
        const char *so = strstr(gpuenv_basename(cv.v[i].path), ".so.");
        if (!cv.v[i].elf_ok || !so || gpuenv_ver_major(so + 4) != major) continue;
        char *d = gpuenv_dirname(cv.v[i].path);
        if (d && held(r, d, names) == names->n)
            best = d;
        else
            lector__free(d);
    }
    gpuenv_cands_free(&cv);
    return best;
}

void doctor_cudnn_checks(lector_doctor_report *r, const doctor_named *shim, const char *version, int major,
                         int lector_hit, int newest)
{
    /* the newest loadable major owns the plain ids; an older one (cuDNN 8
       next to 9) gets its own */
    char split_id[32];
    snprintf(split_id, sizeof split_id, newest ? "l4.cudnn_split" : "l4.cudnn%d_split", major);
    if (major != 8 && major < 9) return;
    const gpuenv_load *ld = &shim->load;
    const gpuenv_obj *so = ld->obj[ld->first_requested];
    char *real_dir = doctor_own(r, gpuenv_dirname(so->real ? so->real : so->path));
    gpuenv_strv names = {0};
    split_result sr;
    memset(&sr, 0, sizeof sr);
    if (!real_dir || split_names(r, real_dir, major, &names)) r->oom = 1;
    if (!r->oom) resolve_splits(r, shim, version, &names, &sr);
    int hits = DOCTOR_HITS_NAMED | (lector_hit ? DOCTOR_HITS_LECTOR : 0);
    doctor_check *c = NULL;
    if (r->oom) {
        /* nothing to report */
    } else if (sr.bad_path) {
        char *fix = doctor_own(r, doctor_fix_not_this(r, &sr.bad, 1));
        c = doctor_add(r, DOCTOR_L4, split_id, "cuDNN split libraries", DOCTOR_FAIL, hits, "library_unloadable",
                       "A cuDNN split library the shim loads by name is not a usable library, and the loader stops "
                       "there: the first cuDNN call that needs it fails",
                       fix, "%s", sr.bad.error ? sr.bad.error : sr.bad_path);
        lector__free(fix);
    } else if (sr.versions.n > 1) {
        /* the directory that holds only part of the set is the stray copy */
        const char *partial = NULL;
        for (size_t i = 0; i < sr.dirs.n && !partial; i++)
            if (held(r, sr.dirs.v[i], &names) < names.n) partial = sr.dirs.v[i];
        char *fix = NULL;
        int in_llp = 0;
        for (size_t i = 0; partial && i < r->ldso.llp.n; i++) in_llp |= strcmp(r->ldso.llp.v[i], partial) == 0;
        if (partial && in_llp)
            fix = doctor_fix_llp_without(&r->ldso, partial);
        else if (partial)
            fix = gpuenv_asprintf("sudo mkdir -p %s/cudnn-partial && sudo mv %s/libcudnn*.so* %s/cudnn-partial/ && "
                                  "sudo ldconfig",
                                  partial, partial, partial);
        else
            fix = doctor_fix_reinstall_cudnn(r, real_dir, major, r->facts.lector_major);
        fix = doctor_own(r, fix);
        gpuenv_buf vb = {0};
        for (size_t i = 0; i < sr.versions.n; i++) gpuenv_buf_printf(&vb, "%s%s", i ? ", " : "", sr.versions.v[i]);
        char *vs = doctor_own(r, gpuenv_buf_take(&vb));
        char *cause = doctor_own(
            r, gpuenv_asprintf("cuDNN's split libraries come from different versions (%s)%s%s: cudnnCreate or the "
                               "first convolution fails (CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)",
                               vs ? vs : "?", partial ? ": a partial copy in " : "", partial ? partial : ""));
        c = doctor_add(r, DOCTOR_L4, split_id, "cuDNN split libraries", DOCTOR_FAIL, hits, "cudnn_split_mixed", cause,
                       fix, "mixed versions: %s", vs ? vs : "?");
        lector__free(vs);
        lector__free(cause);
        lector__free(fix);
    } else if (sr.missing.n) {
        char *full = complete_dir(r, &names, major);
        char *fix;
        const gpuenv_find *sf = &shim->find;
        if (full && sf->via == GPUENV_VIA_LD_LIBRARY_PATH && sf->list_item)
            fix = doctor_fix_llp_without(&r->ldso, sf->list_item);
        else if (full)
            fix = doctor_fix_llp_prepend(full);
        else
            fix = doctor_fix_reinstall_cudnn(r, real_dir, major, r->facts.lector_major);
        fix = doctor_own(r, fix);
        c = doctor_add(r, DOCTOR_L4, split_id, "cuDNN split libraries", DOCTOR_FAIL, hits, "cudnn_split_missing",
                       "libcudnn.so.N loads its split libraries on demand; the missing ones fail the first cuDNN call "
                       "that needs them (\"Could not load library libcudnn_...\")",
                       fix, "%zu of %zu split libraries not found next to %s (first: %s)", sr.missing.n, names.n,
                       so->path, sr.missing.v[0]);
        lector__free(full);
        lector__free(fix);
    } else {
        c = doctor_add(r, DOCTOR_L4, split_id, "cuDNN split libraries", DOCTOR_OK, 0, "", "", "",
                       "all %zu split libraries found, one version", names.n);
    }
    for (size_t i = 0; c && i < sr.lines.n; i++) doctor_evidence(r, c, "%s", sr.lines.v[i]);
    for (size_t i = 0; c && i < sr.missing.n; i++) doctor_evidence(r, c, "dlopen from the shim: %s", sr.missing.v[i]);

    /* Paddle (non-pip builds) and cuDNN 8's sub-libraries dlopen the
       unversioned name; pip wheels and runtime images do not ship it */
    doctor_named u;
    if (!newest) {
        /* libcudnn.so is one name: checked with the newest major */
    } else if (!r->oom && doctor_named_open(r, "libcudnn.so", &u) == 0) {
        if (!u.load.ok) {
            char *dir = doctor_own(r, gpuenv_dirname(so->real ? so->real : so->path));
            int user = dir && (strncmp(dir, "/home/", 6) == 0 || strstr(dir, "site-packages"));
            char *fix =
                dir ? doctor_own(r, gpuenv_asprintf("%sln -s %s %s/libcudnn.so%s", user ? "" : "sudo ",
                                                    gpuenv_basename(so->path), dir, user ? "" : " && sudo ldconfig"))
                    : NULL;
            doctor_add(r, DOCTOR_L4, "l4.cudnn_unversioned", "libcudnn.so", DOCTOR_FAIL, DOCTOR_HITS_NAMED,
                       "cudnn_unversioned_missing",
                       "The unversioned libcudnn.so is missing: loaders that ask for it (Paddle: \"The third-party "
                       "dynamic library (libcudnn.so) ... is not configured correctly\") fail although "
                       "libcudnn.so.N is installed",
                       fix ? fix : "", "dlopen(\"libcudnn.so\"): %s; %s exists", u.load.error ? u.load.error : "fails",
                       so->path);
            lector__free(fix);
            lector__free(dir);
        } else {
            doctor_add(r, DOCTOR_L4, "l4.cudnn_unversioned", "libcudnn.so", DOCTOR_OK, 0, "", "", "",
                       "libcudnn.so -> %s (via %s)", u.real ? u.real : "?", gpuenv_via_str(u.find.via));
        }
        doctor_named_free(&u);
    } else if (!r->oom) {
        r->oom = 1;
    }
    gpuenv_strv_free(&names);
    split_result_free(&sr);
    lector__free(real_dir);
}

int doctor_cudnn_split_state(lector_doctor_report *r, const char *shim_path, int major, char *why, size_t len)
{
    doctor_named shim;
    memset(&shim, 0, sizeof shim);
    why[0] = 0;
    if (gpuenv_ldso_dlopen(&r->ldso, shim_path, &shim.load)) return -2;
    int rc = 0;
    if (!shim.load.ok || shim.load.crash_signal) {
        snprintf(why, len, "%s", shim.load.error ? shim.load.error : "it does not load");
        doctor_named_free(&shim);
        return 1;
    }
    const gpuenv_obj *so = shim.load.obj[shim.load.first_requested];
    char *real_dir = gpuenv_dirname(so->real ? so->real : so->path);
    char *ver = gpuenv_soname_version(so->real ? so->real : so->path);
    gpuenv_strv names = {0};
    split_result sr;
    memset(&sr, 0, sizeof sr);
    if (!real_dir || !ver || split_names(r, real_dir, major, &names)) rc = -2;
    if (!rc) {
        resolve_splits(r, &shim, ver, &names, &sr);
        if (r->oom) rc = -2;
    }
    if (!rc && sr.bad_path) {
        snprintf(why, len, "%s", sr.bad.error ? sr.bad.error : sr.bad_path);
        rc = 1;
    } else if (!rc && sr.versions.n > 1) {
        snprintf(why, len, "its split libraries are of %zu different versions (%s, %s)", sr.versions.n,
                 sr.versions.v[0], sr.versions.v[1]);
        rc = 1;
    } else if (!rc && sr.missing.n) {
        snprintf(why, len, "%zu split libraries are missing (first: %s)", sr.missing.n, sr.missing.v[0]);
        rc = 1;
    }
    gpuenv_strv_free(&names);
    split_result_free(&sr);
    lector__free(real_dir);
    lector__free(ver);
    doctor_named_free(&shim);
    return rc;
}
