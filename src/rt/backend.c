#include "rt/backend.h"

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Weak so that the core links without the oneDNN backend compiled in. */
__attribute__((weak)) const rt_backend_iface *rt_backend_onednn(void) { return NULL; }

lector_status rt_backend_create(const char *name, int threads, rt_backend **out, lector_error *err)
{
    return rt_backend_create_ex(name, threads, 0, 0, out, err);
}

lector_status rt_backend_create_ex(const char *name, int threads, size_t gpu_mem_limit, int fp16, rt_backend **out,
                                   lector_error *err)
{
    *out = NULL;
    const rt_backend_iface *iface = NULL;
    int device = 0;
    if (name && !strncmp(name, "cuda", 4) && (name[4] == 0 || name[4] == ':')) {
        if (name[4] == ':') {
            char *end;
            long d = strtol(name + 5, &end, 10);
            if (end == name + 5 || *end || d < 0 || d > 1023)
                return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "bad device '%s' (expected cuda or cuda:N)",
                                     name);
            device = (int)d;
        }
        char why[512] = "";
        iface = rt_cuda_module(why, sizeof why);
        if (!iface) return lector__error(err, LECTOR_ERR_UNAVAILABLE, "device cuda: %s", why);
    } else if (!name || !strcmp(name, "cpu") || !strcmp(name, "auto")) {
        iface = rt_backend_onednn();
        if (!iface) iface = rt_backend_ref();
    } else if (!strcmp(name, "ref")) {
        iface = rt_backend_ref();
    } else if (!strcmp(name, "onednn")) {
        iface = rt_backend_onednn();
        if (!iface)
            return lector__error(err, LECTOR_ERR_UNAVAILABLE, "backend 'onednn' is not compiled into this build");
    } else {
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                             "unknown backend '%s' (expected cpu, ref, onednn or cuda[:N])", name);
    }
    if (iface->api_version != RT_BACKEND_API_VERSION)
        return lector__error(err, LECTOR_ERR_BACKEND, "backend '%s' has API version %u, expected %u", iface->name,
                             iface->api_version, RT_BACKEND_API_VERSION);
    if (fp16 && !(iface->features & RT_FEATURE_FP16))
        return lector__error(err, LECTOR_ERR_UNAVAILABLE, "backend '%s' cannot run in half precision (fp16)",
                             iface->name);
    rt_backend *be = lector__calloc(1, sizeof *be);
    if (!be) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    be->iface = iface;
    be->threads = threads > 0 ? threads : lector__physical_cores();
    be->device = device;
    be->gpu_mem_limit = gpu_mem_limit;
    be->fp16 = fp16;
    if (iface->init) {
        lector_status st = iface->init(be, err);
        if (st) {
            lector__free(be);
            return st;
        }
    }
    *out = be;
    return LECTOR_OK;
}

void rt_backend_free(rt_backend *be)
{
    if (!be) return;
    if (be->iface->shutdown) be->iface->shutdown(be);
    lector__free(be);
}
