/*
 * module.c - loads module backends (module.h) at run time.
 *
 * Order: the module file (the descriptor's find); the driver; the required
 * libraries of the module's major version, found through src/gpuenv and
 * preloaded by absolute path; the optional ones when they are there; then
 * the module itself, its two entry points, its API version and its score.
 * Each failure is one sentence naming the file and the problem.
 */
#include "rt/module.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "rt/infer_util.h"
#include "util/testctl.h"
#include "util/util.h"

static void host_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void host_log(int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    lector__log((lector_log_level)level, "%s", buf);
}

static int tc_flag(int id, int dflt) { return lector__tc_flag((lector__tc)id, dflt); }
static long tc_long(int id, long dflt) { return lector__tc_long((lector__tc)id, dflt); }
static const char *tc_str(int id) { return lector__tc_str((lector__tc)id); }

static const rt_host_api host_api = {
    .api_version = RT_BACKEND_API_VERSION,
    .ops = rt_op_table,
    .n_ops = RT_OP_COUNT,
    .malloc = lector__malloc,
    .calloc = lector__calloc,
    .realloc = lector__realloc,
    .aligned_alloc = lector__aligned_alloc,
    .free = lector__free,
    .log = host_log,
    .testctl_flag = tc_flag,
    .testctl_long = tc_long,
    .testctl_str = tc_str,
    .attr_int = rt_attr_int,
    .attr_float = rt_attr_float,
    .attr_ints = rt_attr_ints,
    .attr_string = rt_attr_string,
    .node_opset = rt_node_opset,
};

const rt_host_api *rt_module_host_api(void) { return &host_api; }

static void why(rt_module_state *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why(rt_module_state *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->why, sizeof st->why, fmt, ap);
    va_end(ap);
}

/* Preloads lib<stem> of major `major`; 0 when done. */
static int preload(const rt_module_desc *d, const char *stem, rt_module_state *st)
{
    gpuenv_libinfo info;
    if (gpuenv_find_best(NULL, stem, d->major, &info)) {
        why(st, "lib%s for %s %d not found (%s)", stem, d->title, d->major, d->needs_hint);
        return -1;
    }
    if (!dlopen(info.path, RTLD_NOW | RTLD_GLOBAL)) {
        why(st, "%s cannot be loaded: %s", info.path, dlerror());
        return -1;
    }
    lector__log(LECTOR_LOG_DEBUG, "%s: preloaded %s (%s)", d->backend, info.path, info.version);
    return 0;
}

static void load(const rt_module_desc *d, rt_module_state *st)
{
    if (!d->find) {
        why(st, "%s", d->not_built);
        return;
    }
    char path[PATH_MAX + 64];
    int found = d->find(path, sizeof path);
    if (found) {
        why(st, "the %s module is missing: no %s%s", d->title, path, found == -2 ? d->missing_suffix : "");
        return;
    }
    if (d->driver && !dlopen(d->driver, RTLD_NOW | RTLD_GLOBAL)) {
        why(st, "%s: %s cannot be loaded (%s)", d->no_driver, d->driver, dlerror());
        return;
    }
    for (size_t i = 0; d->needs && d->needs[i]; i++)
        if (preload(d, d->needs[i], st)) return;
    for (size_t i = 0; d->wants && d->wants[i]; i++) {
        gpuenv_libinfo info;
        if (!gpuenv_find_best(NULL, d->wants[i], d->major, &info) && dlopen(info.path, RTLD_NOW | RTLD_GLOBAL))
            lector__log(LECTOR_LOG_DEBUG, "%s: preloaded %s (%s)", d->backend, info.path, info.version);
    }
    void *mod = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!mod) {
        why(st, "the %s module %s cannot be loaded: %s", d->title, path, dlerror());
        return;
    }
    rt_module_init_fn init;
    rt_module_score_fn score;
    *(void **)&init = dlsym(mod, RT_MODULE_INIT);
    *(void **)&score = dlsym(mod, RT_MODULE_SCORE);
    if (!init || !score) {
        why(st, "%s has no entry point %s: not a Lector %s module", path, init ? RT_MODULE_SCORE : RT_MODULE_INIT,
            d->title);
        return;
    }
    const rt_backend_iface *iface = init(&host_api);
    if (!iface || iface->api_version != RT_BACKEND_API_VERSION) {
        why(st, "%s was built for another version of Lector (backend API %u, this one %u)", path,
            iface ? iface->api_version : 0u, RT_BACKEND_API_VERSION);
        return;
    }
    st->score = score(st->why, sizeof st->why);
    lector__log(LECTOR_LOG_DEBUG, "%s: loaded %s (score %d)", d->backend, path, st->score);
    st->iface = iface;
}

const rt_module_state *rt_module_load(const rt_module_desc *d, rt_module_state *st)
{
    pthread_mutex_lock(&st->lock);
    if (!st->done) {
        load(d, st);
        st->done = 1;
    }
    pthread_mutex_unlock(&st->lock);
    return st;
}
