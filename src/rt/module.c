/*
 * module.c - loads module backends (module.h) at run time.
 *
 * Order: the module file (the descriptor's find); the driver; the libraries:
 * the offline bundle's set beside the module when it is complete and chosen
 * (LECTOR_CUDA_LIBS, gpuenv_bundle_decide), after the driver is checked
 * against its release, each file preloaded by absolute path in the list's
 * order; otherwise the required libraries of the module's major version,
 * found through src/gpuenv and preloaded by absolute path, and the optional
 * ones when they are there; then the module itself, its two entry points,
 * its API version and its score.
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
static const char *tc_name(int id) { return lector__tc_name((lector__tc)id); }

static int host_slice_params(const rt_node *n, const rt_value *const *in, int64_t *start, int64_t *step, int64_t *count)
{
    if (n->n_in < 3 || n->n_in > 5 || !in[0] || !in[1] || !in[2]) return 1;
    for (int i = 1; i < n->n_in; i++)
        if (in[i] && (!in[i]->data || (in[i]->dtype != LECTOR_DTYPE_INT64 && in[i]->dtype != LECTOR_DTYPE_INT32)))
            return 1;
    lector_tensor ts, te, ta, tp;
    return rt_slice_params(n, in[0]->ndim, in[0]->dims, rt_opt_view(n, in, 1, &ts), rt_opt_view(n, in, 2, &te),
                           rt_opt_view(n, in, 3, &ta), rt_opt_view(n, in, 4, &tp), start, step, count,
                           NULL) != LECTOR_OK;
}

/* The optional libraries preload_system found (module.c loads one module
 * once, before any call of wanted_lib) */
#define MAX_WANTED 4
static struct {
    const char *stem;
    char path[PATH_MAX];
} wanted[MAX_WANTED];

static const char *host_wanted_lib(const char *stem)
{
    for (int i = 0; i < MAX_WANTED && wanted[i].stem; i++)
        if (!strcmp(wanted[i].stem, stem)) return wanted[i].path;
    return NULL;
}

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
    .n_testctls = LECTOR__TC_COUNT,
    .testctl_name = tc_name,
    .testctl_flag = tc_flag,
    .testctl_long = tc_long,
    .testctl_str = tc_str,
    .attr_int = rt_attr_int,
    .attr_float = rt_attr_float,
    .attr_ints = rt_attr_ints,
    .attr_string = rt_attr_string,
    .node_opset = rt_node_opset,
    .slice_params = host_slice_params,
    .wanted_lib = host_wanted_lib,
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

/* The system's libraries: the required ones, then the optional ones. */
static int preload_system(const rt_module_desc *d, rt_module_state *st)
{
    for (size_t i = 0; d->needs && d->needs[i]; i++)
        if (preload(d, d->needs[i], st)) return -1;
    /* the optional ones are found, not loaded: the module loads one when it
     * needs it (NVRTC's 0.24 s from a cold disk is not on every start's path) */
    for (size_t i = 0, n = 0; d->wants && d->wants[i] && n < MAX_WANTED; i++) {
        gpuenv_libinfo info;
        if (gpuenv_find_best(NULL, d->wants[i], d->major, &info) || strlen(info.path) >= sizeof wanted[n].path)
            continue;
        wanted[n].stem = d->wants[i];
        memcpy(wanted[n].path, info.path, strlen(info.path) + 1);
        n++;
        lector__log(LECTOR_LOG_DEBUG, "%s: found %s (%s), for the module to load when it needs it", d->backend,
                    info.path, info.version);
    }
    snprintf(st->libs, sizeof st->libs, "the system's %s libraries", d->title);
    return 0;
}

/* The bundle's set beside the module when chosen: 1 preloaded, 0 not chosen
 * (the system's are wanted), -1 failed (st->why says why). */
static int preload_bundle(const rt_module_desc *d, const char *module_path, void *driver, rt_module_state *st)
{
    char *dir = gpuenv_dirname(module_path);
    gpuenv_bundle b;
    if (!dir || gpuenv_bundle_read(dir, d->major, d->needs, &b)) {
        lector__free(dir);
        why(st, "out of memory reading the %s library bundle", d->title);
        return -1;
    }
    lector__free(dir);
    char msg[sizeof st->why];
    int use = gpuenv_bundle_decide(NULL, &b, msg, sizeof msg);
    if (use < 0) why(st, "%s", msg);
    if (use == 1 && d->bundle_driver_ok && !d->bundle_driver_ok(driver, b.cuda, msg, sizeof msg)) {
        why(st, "%s", msg);
        use = -1;
    }
    for (size_t i = 0; use == 1 && i < b.files.n; i++) {
        char path[sizeof b.dir + 256];
        snprintf(path, sizeof path, "%s/%s", b.dir, b.files.v[i]);
        if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
            why(st, "the bundled %s library %s cannot be loaded: %s", d->title, path, dlerror());
            use = -1;
        } else {
            lector__log(LECTOR_LOG_DEBUG, "%s: preloaded %s (bundle, %s)", d->backend, path, b.versions.v[i]);
        }
    }
    if (use == 1)
        snprintf(st->libs, sizeof st->libs, "the bundled %s %s libraries in %s", d->title, b.cuda, b.dir);
    else if (use == 0 && b.present)
        lector__log(LECTOR_LOG_DEBUG, "%s: the bundled libraries are not used (%s)", d->backend,
                    b.complete ? "--cuda-libs system" : b.why);
    gpuenv_bundle_free(&b);
    return use;
}

/* The descriptor's ctx_ahead on a thread of its own: the GPU's context made
 * while this thread loads the libraries (each about 0.1-0.2 s of a start,
 * one after the other before). */
typedef struct ahead_job {
    const rt_module_desc *d;
    void *driver;
    int device, made;
} ahead_job;

static void *ahead_run(void *arg)
{
    ahead_job *j = arg;
    j->made = j->d->ctx_ahead(j->driver, j->device);
    return NULL;
}

static void load_libs(const rt_module_desc *d, const char *path, void *driver, rt_module_state *st);

static void load(const rt_module_desc *d, int device, rt_module_state *st)
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
    void *driver = NULL;
    if (d->driver && !(driver = dlopen(d->driver, RTLD_NOW | RTLD_GLOBAL))) {
        why(st, "%s: %s cannot be loaded (%s)", d->no_driver, d->driver, dlerror());
        return;
    }
    ahead_job job = {d, driver, device, 0};
    pthread_t ahead;
    int started = d->ctx_ahead && driver && device >= 0 && pthread_create(&ahead, NULL, ahead_run, &job) == 0;
    load_libs(d, path, driver, st);
    if (started) {
        pthread_join(ahead, NULL);
        if (job.made && (!st->iface || st->score <= 0)) d->ctx_release(driver, device);
    }
}

/* The rest of load(): the libraries, the module, its entry points. */
static void load_libs(const rt_module_desc *d, const char *path, void *driver, rt_module_state *st)
{
    int bundled = d->bundle ? preload_bundle(d, path, driver, st) : 0;
    if (bundled < 0 || (!bundled && preload_system(d, st))) return;
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
    if (!iface) {
        why(st,
            "%s was built for another version of Lector (it refused this one's: backend API %u, %d operators, %d test "
            "controls)",
            path, RT_BACKEND_API_VERSION, (int)RT_OP_COUNT, (int)LECTOR__TC_COUNT);
        return;
    }
    if (iface->api_version != RT_BACKEND_API_VERSION) {
        why(st, "%s was built for another version of Lector (backend API %u, this one %u)", path,
            iface ? iface->api_version : 0u, RT_BACKEND_API_VERSION);
        return;
    }
    st->score = score(st->why, sizeof st->why);
    lector__log(LECTOR_LOG_DEBUG, "%s: loaded %s (score %d) with %s", d->backend, path, st->score, st->libs);
    st->iface = iface;
}

const rt_module_state *rt_module_load(const rt_module_desc *d, int device, rt_module_state *st)
{
    pthread_mutex_lock(&st->lock);
    if (!st->done) {
        load(d, device, st);
        st->done = 1;
    }
    pthread_mutex_unlock(&st->lock);
    return st;
}
