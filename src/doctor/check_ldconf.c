/* check_ldconf.c - L4: /etc/ld.so.cache against what it should hold: the
 * cache is read directly (old and new formats), entries pointing at removed
 * files are stale, and libraries in the directories /etc/ld.so.conf names
 * that the cache does not list mean ldconfig was not re-run (a tarball of
 * cuDNN copied into /usr/local/cuda/lib64, say). */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

#define MAX_FILES 4000

/* Does the cache list `soname` in directory `canon_dir` (canonical; the
 * cache may name it through a link, /lib for /usr/lib)? -1 on oom. */
static int cached(const char *root, const gpuenv_ldcache *c, const char *canon_dir, const char *soname)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->e[i].key, soname) != 0) continue;
        char *d = gpuenv_dirname(c->e[i].value);
        if (!d) return -1;
        char *cd = gpuenv_root_realpath(root, d);
        int same = cd && strcmp(cd, canon_dir) == 0;
        lector__free(d);
        lector__free(cd);
        if (same) return 1;
    }
    return 0;
}

void doctor_check_ldconf(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    const gpuenv_ldso *L = &r->ldso;
    gpuenv_ldconf conf;
    if (gpuenv_ldconf_read(r->root, &conf)) {
        r->oom = 1;
        return;
    }
    doctor_check *c;
    if (L->cache_state != 1) {
        /* libraries in a configured directory the loader does not search
           by itself are unreachable without the cache */
        const char *lost = NULL;
        for (size_t i = 0; i < conf.dirs.n && !lost && !r->oom; i++) {
            int dflt = 0;
            for (size_t k = 0; k < L->default_dirs.n; k++) dflt |= strcmp(conf.dirs.v[i], L->default_dirs.v[k]) == 0;
            gpuenv_strv names = {0};
            if (dflt || gpuenv_root_list(r->root, conf.dirs.v[i], &names)) {
                gpuenv_strv_free(&names);
                continue;
            }
            for (size_t k = 0; k < names.n && !lost; k++)
                if (strncmp(names.v[k], "lib", 3) == 0 && strstr(names.v[k], ".so")) lost = conf.dirs.v[i];
            gpuenv_strv_free(&names);
        }
        c = doctor_add(r, DOCTOR_L4, "l4.ldcache", "ld.so.cache",
                       lost          ? DOCTOR_FAIL
                       : conf.dirs.n ? DOCTOR_WARN
                                     : DOCTOR_OK,
                       DOCTOR_HITS_NAMED, conf.dirs.n ? "ldcache_missing" : "",
                       conf.dirs.n ? "/etc/ld.so.cache is missing or not a glibc cache, so the directories "
                                     "/etc/ld.so.conf names are not searched"
                                   : "",
                       conf.dirs.n ? (r->facts.in_container ? "ldconfig" : "sudo ldconfig") : "", "%s%s%s",
                       L->cache_state == 0 ? "no /etc/ld.so.cache" : "/etc/ld.so.cache is not a glibc cache",
                       lost ? "; unreachable: " : "", lost ? lost : "");
        gpuenv_ldconf_free(&conf);
        return;
    }
    /* entries whose file is gone */
    size_t stale = 0;
    const char *first_stale = NULL;
    for (size_t i = 0; i < L->cache.n; i++) {
        if (L->cache.e[i].flags != GPUENV_LDCACHE_X86_64) continue;
        char *canon = NULL;
        int rc = gpuenv_root_resolve(r->root, L->cache.e[i].value, &canon);
        lector__free(canon);
        if (rc == -2) {
            r->oom = 1;
            break;
        }
        if (rc) {
            if (!stale) first_stale = L->cache.e[i].value;
            stale++;
        }
    }
    /* libraries in configured directories the cache does not list */
    size_t missing = 0, seen = 0;
    char *first_missing = NULL;
    for (size_t d = 0; d < conf.dirs.n && !r->oom && seen < MAX_FILES; d++) {
        gpuenv_strv names = {0};
        char *canon = gpuenv_root_realpath(r->root, conf.dirs.v[d]);
        if (!canon) continue; /* a configured directory that does not exist */
        if (gpuenv_root_list(r->root, conf.dirs.v[d], &names) == -2) r->oom = 1;
        for (size_t i = 0; i < names.n && !r->oom && seen < MAX_FILES; i++) {
            if (strncmp(names.v[i], "lib", 3) != 0 || !strstr(names.v[i], ".so.")) continue;
            seen++;
            char *p = gpuenv_asprintf("%s/%s", conf.dirs.v[d], names.v[i]);
            gpuenv_map m;
            if (!p) {
                r->oom = 1;
                break;
            }
            if (gpuenv_root_map(r->root, p, &m) == 0) {
                gpuenv_elf e;
                if (gpuenv_elf_parse(m.data, m.size, &e) == 0) {
                    /* the cache lists a library under its SONAME */
                    int in = e.elfclass == 2 && e.machine == 62 && e.soname && !strcmp(names.v[i], e.soname)
                                 ? cached(r->root, &L->cache, canon, e.soname)
                                 : 1;
                    if (in < 0) r->oom = 1;
                    if (!in) {
                        if (!missing) first_missing = gpuenv_asprintf("%s (SONAME %s)", p, e.soname);
                        missing++;
                    }
                    gpuenv_elf_free(&e);
                }
                gpuenv_unmap(&m);
            }
            lector__free(p);
        }
        gpuenv_strv_free(&names);
        lector__free(canon);
    }
    if (r->oom) {
        lector__free(first_missing);
        gpuenv_ldconf_free(&conf);
        return;
    }
    if (missing)
        c = doctor_add(r, DOCTOR_L4, "l4.ldcache", "ld.so.cache", DOCTOR_WARN, DOCTOR_HITS_NAMED, "ldconfig_not_run",
                       "Libraries in directories /etc/ld.so.conf names are not in /etc/ld.so.cache: ldconfig was not "
                       "run after they were installed, so the loader does not find them there",
                       "sudo ldconfig", "%zu libraries not cached (first: %s)", missing,
                       first_missing ? first_missing : "?");
    else if (stale)
        c = doctor_add(r, DOCTOR_L4, "l4.ldcache", "ld.so.cache", DOCTOR_WARN, DOCTOR_HITS_NAMED, "ldcache_stale",
                       "/etc/ld.so.cache lists files that were removed: the loader tries them and falls through",
                       "sudo ldconfig", "%zu stale entries (first: %s)", stale, first_stale);
    else
        c = doctor_add(r, DOCTOR_L4, "l4.ldcache", "ld.so.cache", DOCTOR_OK, 0, "", "", "",
                       "%zu entries (%s%s%s), agrees with /etc/ld.so.conf", L->cache.n,
                       L->cache.has_old ? "ld.so-1.7.0" : "", L->cache.has_old && L->cache.has_new ? " + " : "",
                       L->cache.has_new ? "glibc-ld.so.cache1.1" : "");
    lector__free(first_missing);
    for (size_t i = 0; i < conf.dirs.n; i++)
        doctor_evidence(r, c, "configured: %s (%s)", conf.dirs.v[i], conf.files.v[i]);
    for (size_t i = 0; i < L->default_dirs.n; i++) doctor_evidence(r, c, "default dir: %s", L->default_dirs.v[i]);
    gpuenv_ldconf_free(&conf);
}
