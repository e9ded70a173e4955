/* bundle.c - the CUDA libraries an offline bundle carries, and the choice
 * between them and the system's (--cuda-libs).
 *
 * scripts/bundle --with-cuda writes lector-cuda<major>.libs beside
 * liblector-cuda.so: a "cuda <version>" line, then one "lib <file> <version>"
 * line per library in load order (dependencies first). The set is complete
 * when that list is there, names the libraries the module cannot start
 * without, and every file it names is a 64-bit x86-64 ELF shared object whose
 * SONAME is its name: only then is it preloaded, because half a set mixed
 * with the system's copies is the version mismatch the bundle exists to
 * prevent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

int gpuenv_libs_choice_parse(const char *s, gpuenv_libs_choice *out)
{
    if (!s || !*s || !strcmp(s, "auto"))
        *out = GPUENV_LIBS_AUTO;
    else if (!strcmp(s, "system"))
        *out = GPUENV_LIBS_SYSTEM;
    else if (!strcmp(s, "bundle"))
        *out = GPUENV_LIBS_BUNDLE;
    else
        return -1;
    return 0;
}

const char *gpuenv_libs_choice_str(gpuenv_libs_choice c)
{
    return c == GPUENV_LIBS_SYSTEM ? "system" : c == GPUENV_LIBS_BUNDLE ? "bundle" : "auto";
}

void gpuenv_bundle_free(gpuenv_bundle *b)
{
    gpuenv_strv_free(&b->files);
    gpuenv_strv_free(&b->versions);
    memset(b, 0, sizeof *b);
}

/* Checks one listed file; 0, or 1 with b->why set. */
static int check_file(gpuenv_bundle *b, const char *file)
{
    char path[sizeof b->dir + 256];
    snprintf(path, sizeof path, "%s/%s", b->dir, file);
    gpuenv_map m;
    int rc = gpuenv_map_file(path, &m);
    if (rc) {
        snprintf(b->why, sizeof b->why, "%s: %s", path, strerror(rc));
        return 1;
    }
    gpuenv_elf e;
    int bad = 0;
    if (gpuenv_elf_parse(m.data, m.size, &e)) {
        snprintf(b->why, sizeof b->why, "%s: not an ELF file", path);
        bad = 1;
    } else {
        if (e.elfclass != 2 || e.machine != 62 || e.type != 3) {
            snprintf(b->why, sizeof b->why, "%s: not a 64-bit x86-64 shared object", path);
            bad = 1;
        } else if (!e.soname || strcmp(e.soname, file)) {
            snprintf(b->why, sizeof b->why, "%s: its SONAME is %s, not %s", path, e.soname ? e.soname : "absent", file);
            bad = 1;
        }
        gpuenv_elf_free(&e);
    }
    gpuenv_unmap(&m);
    return bad;
}

int gpuenv_bundle_read(const char *libdir, int cuda_major, const char *const *needs, gpuenv_bundle *b)
{
    memset(b, 0, sizeof *b);
    b->cuda_major = cuda_major;
    /* canonical, for messages and for the loader's link map (exe/../lib is lib) */
    char *canon = realpath(libdir, NULL);
    snprintf(b->dir, sizeof b->dir, "%s", canon ? canon : libdir);
    free(canon);
    snprintf(b->list, sizeof b->list, "%s/lector-cuda%d.libs", libdir, cuda_major);
    char *text = gpuenv_root_read_text(NULL, b->list, 1 << 16);
    if (!text) {
        snprintf(b->why, sizeof b->why, "no %s (the bundle's CUDA archive is not unpacked here)", b->list);
        return 0;
    }
    b->present = 1;
    int rc = 0, bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
        char key[16], a[256], v[64] = "";
        if (line[0] == '#' || sscanf(line, "%15s %255s %63s", key, a, v) < 2) continue;
        if (!strcmp(key, "cuda"))
            snprintf(b->cuda, sizeof b->cuda, "%.31s", a);
        else if (!strcmp(key, "lib") && !strchr(a, '/'))
            rc = gpuenv_strv_push(&b->files, a) || gpuenv_strv_push(&b->versions, v) ? -2 : 0;
    }
    lector__free(text);
    if (rc) {
        gpuenv_bundle_free(b);
        return -2;
    }
    if (gpuenv_ver_major(b->cuda) != cuda_major) {
        snprintf(b->why, sizeof b->why, "%s is for CUDA %s, Lector's CUDA module for CUDA %d", b->list,
                 b->cuda[0] ? b->cuda : "(unstated)", cuda_major);
        bad = 1;
    }
    for (size_t i = 0; needs && needs[i] && !bad; i++) {
        char so[64];
        /* cuDNN 9 serves CUDA 11.8 to 13: its SONAME major is its own */
        snprintf(so, sizeof so, "lib%s.so.%d", needs[i], strcmp(needs[i], "cudnn") ? cuda_major : 9);
        if (!gpuenv_strv_has(&b->files, so)) {
            snprintf(b->why, sizeof b->why, "%s does not list %s", b->list, so);
            bad = 1;
        }
    }
    for (size_t i = 0; i < b->files.n && !bad; i++) bad = check_file(b, b->files.v[i]);
    b->complete = !bad;
    return 0;
}

int gpuenv_bundle_version_of(const gpuenv_bundle *b, const char *stem, char *out, size_t len)
{
    for (size_t i = 0; i < b->files.n; i++)
        if (gpuenv_stem_matches(b->files.v[i], stem)) {
            snprintf(out, len, "%s", b->versions.v[i][0] ? b->versions.v[i] : "?");
            return 0;
        }
    return -1;
}

const char *gpuenv_libs_setting(void) { return getenv("LECTOR_CUDA_LIBS"); }

int gpuenv_bundle_decide(const char *setting, const gpuenv_bundle *b, char *why, size_t len)
{
    if (!setting) setting = gpuenv_libs_setting();
    gpuenv_libs_choice c;
    if (gpuenv_libs_choice_parse(setting, &c)) {
        snprintf(why, len, "bad CUDA library choice '%s' (LECTOR_CUDA_LIBS / --cuda-libs: system, bundle or auto)",
                 setting);
        return -1;
    }
    if (c == GPUENV_LIBS_SYSTEM) return 0;
    if (b->complete) return 1;
    if (c == GPUENV_LIBS_AUTO) return 0;
    snprintf(why, len, "--cuda-libs bundle: the bundled CUDA %d libraries are not usable: %s", b->cuda_major, b->why);
    return -1;
}

int gpuenv_bundle_driver_ok(int driver_cuda, const char *bundle_cuda, char *cause, size_t clen, char *fix, size_t flen)
{
    int major = gpuenv_ver_major(bundle_cuda), minor = 0;
    const char *dot = strchr(bundle_cuda, '.');
    if (dot) minor = atoi(dot + 1);
    if (driver_cuda <= 0 || major <= 0 || driver_cuda >= major * 1000) return 1;
    const char *min = gpuenv_min_driver_for_major(major);
    snprintf(cause, clen,
             "the NVIDIA driver supports CUDA up to %d.%d, older than the bundled CUDA %s libraries, which need "
             "driver %s or newer (CUDA %d.x)",
             driver_cuda / 1000, (driver_cuda % 1000) / 10, bundle_cuda, min ? min : "?", major);
    snprintf(fix, flen,
             "install NVIDIA driver %s or newer (Ubuntu: apt-get install nvidia-driver-%d), or run with "
             "--cuda-libs system (LECTOR_CUDA_LIBS=system) and CUDA %d.x libraries installed; on data-center GPUs, "
             "NVIDIA's forward-compatibility package cuda-compat-%d-%d also works",
             min ? min : "?", min ? atoi(min) : 0, driver_cuda / 1000, major, minor);
    return 0;
}
