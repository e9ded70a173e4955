/* notfound.c - why the loader does not find a name that a file here
 * carries. A library is found by the name in its DT_SONAME only through a
 * file (or link) of that name in a directory the loader searches, or an
 * ld.so.cache entry; ldconfig makes both. So when a file whose DT_SONAME
 * is the name exists but the search fails, either ldconfig has not run
 * since the file came (a copy without its links, a container runtime whose
 * ldconfig hook failed: "soname_link_missing"), or the file sits in a
 * directory no search path names. */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

void doctor_notfound_free(doctor_notfound *n)
{
    lector__free(n->cause);
    lector__free(n->fix);
    lector__free(n->file);
    memset(n, 0, sizeof *n);
}

/* "libcublasLt.so.13" -> "cublasLt" */
static int stem_of(const char *soname, char *out, size_t len)
{
    const char *b = gpuenv_basename(soname);
    const char *so = strstr(b, ".so");
    if (strncmp(b, "lib", 3) != 0 || !so || so - b <= 3) return -1;
    snprintf(out, len, "%.*s", (int)(so - b - 3), b + 3);
    return 0;
}

/* Is dir (canonical) one the loader searches? 1 LD_LIBRARY_PATH, 2 a
 * directory ldconfig scans (/etc/ld.so.conf or a system one), 0 neither. */
static int searched(const lector_doctor_report *r, const char *dir, const gpuenv_ldconf *conf)
{
    const gpuenv_ldso *L = &r->ldso;
    int kind = 0;
    for (size_t i = 0; i < L->llp.n && !kind; i++) {
        char *c = L->llp.v[i][0] ? gpuenv_root_realpath(L->root, L->llp.v[i]) : NULL;
        if (c && strcmp(c, dir) == 0) kind = 1;
        lector__free(c);
    }
    for (size_t i = 0; i < conf->dirs.n && !kind; i++) {
        char *c = gpuenv_root_realpath(L->root, conf->dirs.v[i]);
        if (c && strcmp(c, dir) == 0) kind = 2;
        lector__free(c);
    }
    for (size_t i = 0; i < L->default_dirs.n && !kind; i++) {
        char *c = gpuenv_root_realpath(L->root, L->default_dirs.v[i]);
        if (c && strcmp(c, dir) == 0) kind = 2;
        lector__free(c);
    }
    return kind;
}

int doctor_explain_notfound(lector_doctor_report *r, const char *soname, const char *unsearched_code,
                            doctor_notfound *out)
{
    memset(out, 0, sizeof *out);
    char stem[128];
    if (stem_of(soname, stem, sizeof stem)) return 0;
    gpuenv_cands cv;
    if (gpuenv_collect(&r->ldso, stem, &cv)) return -2;
    gpuenv_ldconf conf;
    if (gpuenv_ldconf_read(r->root, &conf)) {
        gpuenv_cands_free(&cv);
        return -2;
    }
    const gpuenv_cand *best = NULL;
    int best_kind = -1, rc = 0;
    char *best_dir = NULL;
    for (size_t i = 0; i < cv.n && rc == 0; i++) {
        const gpuenv_cand *c = &cv.v[i];
        if (!c->elf_ok || !c->soname || strcmp(c->soname, soname) != 0) continue;
        char *dir = gpuenv_dirname(c->real);
        char *named = dir ? gpuenv_asprintf("%s/%s", dir, soname) : NULL;
        if (!named) {
            lector__free(dir);
            rc = -2;
            break;
        }
        /* a file of that name is there: the loader's reason lies elsewhere */
        int has_name = gpuenv_root_exists(r->root, named);
        lector__free(named);
        int kind = searched(r, dir, &conf);
        if (has_name && kind > 0) kind = -1;
        if (kind > best_kind) {
            lector__free(best_dir);
            best = c;
            best_kind = kind;
            best_dir = dir;
        } else {
            lector__free(dir);
        }
    }
    if (rc == 0 && best && best_kind >= 0) {
        const char *file = gpuenv_basename(best->real);
        const char *sudo = r->facts.in_container ? "" : "sudo ";
        if (best_kind == 2) {
            out->code = "soname_link_missing";
            out->cause = gpuenv_asprintf("%s is there (%s/%s, whose SONAME is %s) but neither a %s link nor an "
                                         "ld.so.cache entry leads to it: ldconfig has not run since it was "
                                         "installed (copied without its links, or a container runtime's ldconfig "
                                         "hook failed)",
                                         soname, best_dir, file, soname, soname);
            out->fix = gpuenv_asprintf("%sldconfig", sudo);
        } else if (best_kind == 1) {
            out->code = "soname_link_missing";
            char *q = gpuenv_asprintf("%s/%s", best_dir, soname);
            out->cause = gpuenv_asprintf("%s/%s carries the SONAME %s, but no file of that name is in %s (on "
                                         "LD_LIBRARY_PATH), and the loader looks for the name",
                                         best_dir, file, soname, best_dir);
            out->fix = q ? gpuenv_asprintf("ln -s %s %s", file, q) : NULL;
            lector__free(q);
        } else {
            out->code = unsearched_code;
            out->cause = gpuenv_asprintf("%s is in %s, a directory that neither LD_LIBRARY_PATH, /etc/ld.so.conf "
                                         "nor the system directories name",
                                         soname, best_dir);
            out->fix = strstr(unsearched_code, "library")
                           ? doctor_fix_llp_prepend(best_dir)
                           : gpuenv_asprintf("echo %s | %stee /etc/ld.so.conf.d/nvidia.conf && %sldconfig", best_dir,
                                             sudo, sudo);
        }
        out->file = gpuenv_asprintf("%s/%s", best_dir, file);
        if (!out->cause || !out->fix || !out->file) rc = -2;
    }
    lector__free(best_dir);
    gpuenv_ldconf_free(&conf);
    gpuenv_cands_free(&cv);
    if (rc) {
        doctor_notfound_free(out);
        return -2;
    }
    return out->code ? 1 : 0;
}
