/* probe_dlopen.c - dlopen of a driver library for a probe (NVML, libcuda):
 * the loader's error text when it fails, the file it really mapped when it
 * works (dlinfo), so that reports name the library that answered. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

#include "gpuenv/gpuenv.h"

void *gpuenv_probe_dlopen(const char *path, gpuenv_probe_lib *lib)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(lib->error, sizeof lib->error, "%s", e ? e : "dlopen failed");
        return NULL;
    }
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
        snprintf(lib->loaded_path, sizeof lib->loaded_path, "%s", lm->l_name);
    lib->loaded = 1;
    return h;
}
