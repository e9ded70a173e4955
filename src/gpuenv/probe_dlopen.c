/* probe_dlopen.c - dlopen of a driver library for a probe (NVML, libcuda):
 * the loader's error text when it fails, the file it really mapped when it
 * works (dlinfo), so that reports name the library that answered. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

#include "gpuenv/gpuenv.h"

void *gpuenv_probe_dlopen(const char *path, char *error, size_t error_size, char *loaded, size_t loaded_size)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(error, error_size, "%s", e ? e : "dlopen failed");
        return NULL;
    }
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) snprintf(loaded, loaded_size, "%s", lm->l_name);
    return h;
}
