/*
 * backend_reg.c - the registry of backends: a table filled at build time
 * from what is compiled in (LECTOR_USE_* definitions from CMake, as
 * ggml-backend-reg.cpp does with GGML_USE_*), the device-string parser, and
 * backend creation.
 *
 * Host backends are built into the core; "cpu" is the one with the highest
 * score. Module backends are loaded at run time (module.c) on first use;
 * they accept a device ordinal ("cuda:N").
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt/backend.h"
#include "rt/module.h"
#include "util/util.h"

extern const rt_module_desc rt_cuda_module; /* cuda_loader.c */

typedef struct backend_entry {
    const char *name;
    lector_device device; /* LECTOR_DEVICE_CPU for host backends */
    int score;            /* host backends: preference for "cpu" (higher wins) */
    const rt_backend_iface *(*builtin)(void);
    const rt_module_desc *module;
    rt_module_state *state;
} backend_entry;

static rt_module_state cuda_state = RT_MODULE_STATE_INIT;

static const backend_entry registry[] = {
#ifdef LECTOR_USE_ONEDNN
    {"onednn", LECTOR_DEVICE_CPU, 20, rt_backend_onednn, NULL, NULL},
#endif
    {"ref", LECTOR_DEVICE_CPU, 10, rt_backend_ref, NULL, NULL},
    /* always listed: without the toolkit its loader says so */
    {"cuda", LECTOR_DEVICE_CUDA, 0, NULL, &rt_cuda_module, &cuda_state},
};

static const backend_entry *entry_named(const char *name, size_t len)
{
    for (size_t i = 0; i < LECTOR_ARRAY_LEN(registry); i++)
        if (strlen(registry[i].name) == len && !strncmp(registry[i].name, name, len)) return &registry[i];
    return NULL;
}

static const backend_entry *best_host(void)
{
    const backend_entry *best = NULL;
    for (size_t i = 0; i < LECTOR_ARRAY_LEN(registry); i++)
        if (registry[i].builtin && (!best || registry[i].score > best->score)) best = &registry[i];
    return best;
}

/* "ref, onednn, cuda[:N]" for messages */
static void names(char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < LECTOR_ARRAY_LEN(registry) && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, ", %s%s", registry[i].name, registry[i].module ? "[:N]" : "");
}

const char *rt_backend_registered(size_t i) { return i < LECTOR_ARRAY_LEN(registry) ? registry[i].name : NULL; }

lector_status lector_device_parse(const char *s, lector_device_spec *out, lector_error *err)
{
    if (!out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_device_parse: NULL argument");
    memset(out, 0, sizeof *out);
    if (!s || !strcmp(s, "cpu")) {
        out->device = LECTOR_DEVICE_CPU;
        out->backend = "cpu";
        return LECTOR_OK;
    }
    if (!strcmp(s, "auto")) {
        out->device = LECTOR_DEVICE_AUTO;
        out->backend = "auto";
        return LECTOR_OK;
    }
    const char *colon = strchr(s, ':');
    const backend_entry *e = entry_named(s, colon ? (size_t)(colon - s) : strlen(s));
    if (e && colon) {
        if (!e->module)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "bad device '%s' (%s takes no device number)", s,
                                 e->name);
        char *end = NULL;
        long d = isdigit((unsigned char)colon[1]) ? strtol(colon + 1, &end, 10) : -1;
        if (d < 0 || d > 1023 || *end)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                                 "bad device '%s' (expected %s or %s:N, N in 0..1023)", s, e->name, e->name);
        out->index = (int)d;
    }
    if (!e) {
        char known[128];
        names(known, sizeof known);
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "unknown device '%s' (expected cpu, auto%s)", s, known);
    }
    out->device = e->device;
    out->backend = e->name;
    return LECTOR_OK;
}

lector_status rt_backend_find(const char *name, const rt_backend_iface **out, int *index, lector_error *err)
{
    *out = NULL;
    lector_device_spec spec;
    lector_status st = lector_device_parse(name, &spec, err);
    if (st) return st;
    if (index) *index = spec.index;
    /* "cpu", and "auto" at this level, are the best host backend (lector.h's
     * engine tries the GPU itself for its device auto) */
    const backend_entry *e = spec.device == LECTOR_DEVICE_CPU && strcmp(spec.backend, "cpu")
                                 ? entry_named(spec.backend, strlen(spec.backend))
                             : spec.device == LECTOR_DEVICE_CUDA ? entry_named(spec.backend, strlen(spec.backend))
                                                                 : best_host();
    if (e->builtin) {
        *out = e->builtin();
        return LECTOR_OK;
    }
    const rt_module_state *ms = rt_module_load(e->module, spec.index, e->state);
    if (!ms->iface) return lector__error(err, LECTOR_ERR_UNAVAILABLE, "device %s: %s", e->name, ms->why);
    if (ms->score <= 0) return lector__error(err, LECTOR_ERR_UNAVAILABLE, "%s", ms->why);
    *out = ms->iface;
    return LECTOR_OK;
}

lector_status rt_backend_create(const lector_model_options *opt, rt_backend **out, lector_error *err)
{
    *out = NULL;
    static const lector_model_options defaults = {0};
    if (!opt) opt = &defaults;
    const rt_backend_iface *iface;
    int index;
    int fp16 = opt->fp16, threads = opt->threads;
    lector_status st = rt_backend_find(opt->backend, &iface, &index, err);
    if (st) return st;
    if (fp16 && !(iface->features & RT_FEATURE_FP16))
        return lector__error(err, LECTOR_ERR_UNAVAILABLE, "backend '%s' cannot run in half precision (fp16)",
                             iface->name);
    rt_backend *be = lector__calloc(1, sizeof *be);
    if (!be) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    be->iface = iface;
    be->threads = threads > 0 ? threads : lector__physical_cores();
    be->device = index;
    be->gpu_mem_limit = opt->gpu_mem_limit;
    be->fp16 = fp16;
    be->gpu_workers = opt->gpu_workers > 0 ? opt->gpu_workers : 0;
    if (opt->kernel_cache_dir && *opt->kernel_cache_dir &&
        !(be->kernel_cache_dir = lector__strdup(opt->kernel_cache_dir))) {
        lector__free(be);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (iface->init) {
        st = iface->init(be, err);
        if (st) {
            lector__free(be->kernel_cache_dir);
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
    lector__free(be->kernel_cache_dir);
    lector__free(be);
}

void *rt_buffer_alloc(rt_backend *be, size_t size)
{
    if (be && be->iface->buffer_alloc) return be->iface->buffer_alloc(be, size);
    return lector__aligned_alloc(size);
}

void rt_buffer_free(rt_backend *be, void *p)
{
    if (be && be->iface->buffer_free)
        be->iface->buffer_free(be, p);
    else
        lector__free(p);
}
