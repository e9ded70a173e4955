/* drvfiles.c - the driver's user-space libraries as the loader hands them
 * out: which libcuda.so.1 / libnvidia-ml.so.1 a program started in the
 * examined system gets (LD_PRELOAD and /etc/ld.so.preload included), and
 * what that file is: the driver's own copy (its name carries the driver
 * version, which must equal the kernel module's), the toolkit's link-time
 * stub, a cuda-compat forward-compatibility copy, or WSL2's. */
#include <stdio.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

/* The toolkit's stubs are a few hundred KiB; the driver's libcuda is tens
 * of MiB and its NVML over a MiB. */
#define STUB_MAX_BYTES (600 * 1024)

static gpuenv_drvkind classify(const char *real, long long size)
{
    if (strstr(real, "/stubs/")) return GPUENV_DRV_STUB;
    if (strstr(real, "/compat/")) return GPUENV_DRV_COMPAT;
    if (strncmp(real, "/usr/lib/wsl/", 13) == 0) return GPUENV_DRV_WSL;
    if (size >= 0 && size < STUB_MAX_BYTES) return GPUENV_DRV_STUB;
    return GPUENV_DRV_DRIVER;
}

int gpuenv_drvfile_examine(const gpuenv_ldso *L, const char *soname, gpuenv_drvfile *out)
{
    memset(out, 0, sizeof *out);
    out->size = -1;
    gpuenv_load ld;
    if (gpuenv_ldso_dlopen(L, soname, &ld)) return -2;
    const gpuenv_obj *o = ld.n > ld.first_requested && ld.first_requested ? ld.obj[ld.first_requested] : NULL;
    int rc = 0;
    if (o && o->via == GPUENV_VIA_PRELOAD) {
        gpuenv_find *f = &out->find;
        f->outcome = GPUENV_FOUND;
        f->via = GPUENV_VIA_PRELOAD;
        size_t i = 0;
        for (; i < L->preload.n; i++)
            if (gpuenv_strv_has(&o->names, L->preload.v[i])) break;
        if (!(f->path = lector__strdup(o->path)) ||
            (i < L->preload.n && !(out->preload_item = lector__strdup(L->preload.v[i]))))
            rc = -2;
    } else {
        rc = gpuenv_ldso_find(L, soname, NULL, NULL, 0, &out->find) ? -2 : 0;
    }
    gpuenv_load_free(&ld);
    if (rc) {
        gpuenv_drvfile_free(out);
        return -2;
    }
    if (out->find.outcome == GPUENV_NOT_FOUND) return 0;
    if (out->find.outcome != GPUENV_FOUND) {
        out->kind = GPUENV_DRV_BAD;
        return 0;
    }
    char *real = NULL;
    int r = gpuenv_root_resolve(L->root, out->find.path, &real);
    if (r == -2) {
        gpuenv_drvfile_free(out);
        return -2;
    }
    if (r) { /* a relative path on the live system */
        out->real = lector__strdup(out->find.path);
        if (!out->real) {
            gpuenv_drvfile_free(out);
            return -2;
        }
    } else {
        out->real = real;
    }
    struct stat st;
    if (gpuenv_root_stat(L->root, out->real, &st) == 0) out->size = (long long)st.st_size;
    out->kind = classify(out->real, out->size);
    char *v = gpuenv_soname_version(out->real);
    if (!v) {
        gpuenv_drvfile_free(out);
        return -2;
    }
    /* driver versions look like 580.95.05 (535.104.05, 470.82.01) */
    if (gpuenv_ver_major(v) >= 100 && strchr(v, '.')) snprintf(out->version, sizeof out->version, "%s", v);
    lector__free(v);
    return 0;
}

void gpuenv_drvfile_free(gpuenv_drvfile *d)
{
    gpuenv_find_free(&d->find);
    lector__free(d->real);
    lector__free(d->preload_item);
    memset(d, 0, sizeof *d);
}
