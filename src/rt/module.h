/*
 * module.h - the loader of module backends (internal).
 *
 * A module backend is a shared object loaded with dlopen at run time (the
 * CUDA backend, liblector-cuda.so), so that the core has no link-time
 * dependency on a vendor stack. Its descriptor says where the file is, what
 * must be loaded before it (a driver, then libraries found by src/gpuenv the
 * way `lector doctor` finds them and preloaded by absolute path, so that the
 * module's DT_NEEDED entries bind to exactly those files, or the offline
 * bundle's set beside the module, gpuenv_bundle) and how to word each
 * failure. The module exports RT_MODULE_INIT and RT_MODULE_SCORE
 * (backend.h). Loading happens once per process; the result, the table or
 * the reason, is kept.
 */
#ifndef LECTOR_RT_MODULE_H
#define LECTOR_RT_MODULE_H

#include <pthread.h>
#include <stddef.h>

#include "rt/backend.h"

typedef struct rt_module_desc {
    const char *backend; /* registry name, prefix of the debug log lines ("cuda") */
    const char *title;   /* in messages ("CUDA") */
    /* NULL when the build has no such module; the reason is `not_built` */
    int (*find)(char *path, size_t len);
    const char *not_built;
    /* find's nonzero return: "no <path><missing_suffix>" names where it looked */
    const char *missing_suffix;
    /* loaded first (RTLD_GLOBAL): its absence is the most common reason, and
     * the clearest; NULL for none */
    const char *driver;
    const char *no_driver; /* "no NVIDIA driver" */
    /* libraries of major version `major` found by gpuenv_find_best: `needs`
     * are preloaded and required (their absence is the reason, with
     * needs_hint), `wants` are optional and only found, for the module to
     * load when it needs one (rt_host_api.wanted_lib). NULL-terminated. */
    const char *const *needs;
    const char *const *wants;
    int major;
    const char *needs_hint;
    /* 1: the libraries may come from an offline bundle's set in the module's
     * directory (gpuenv_bundle_read with `needs`), chosen by
     * LECTOR_CUDA_LIBS (gpuenv_bundle_decide); its files are preloaded by
     * absolute path in the list's order instead of `needs` and `wants` */
    int bundle;
    /* with the bundle's set: 1 when the loaded driver runs libraries of
     * release `version`, else 0 with the message and the fix in why */
    int (*bundle_driver_ok)(void *driver, const char *version, char *why, size_t len);
    /* Run on a thread of its own while the libraries and the module load:
     * makes GPU `device`'s context through the loaded driver when the
     * module's settings ask for it; 1 when made (held for the process, and
     * the module then shares it), 0 not. ctx_release gives it back when the
     * module cannot run. NULL: none. */
    int (*ctx_ahead)(void *driver, int device);
    void (*ctx_release)(void *driver, int device);
} rt_module_desc;

typedef struct rt_module_state {
    pthread_mutex_t lock;
    int done;
    const rt_backend_iface *iface;
    int score;
    char why[1024];
    char libs[4400]; /* where its libraries came from (for messages and the doctor) */
} rt_module_state;

#define RT_MODULE_STATE_INIT                          \
    {                                                 \
        PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0, "", "" \
    }

/* Loads the module once (later calls return the first result) and returns
 * its state: st->iface is its table, or NULL with the reason in st->why;
 * st->score is what its score entry point said (0: loaded, but it cannot run
 * on this machine, the module's reason in st->why). `device`: the GPU the
 * first caller asked for (its context may be made ahead, ctx_ahead; -1
 * none). Thread-safe. */
const rt_module_state *rt_module_load(const rt_module_desc *d, int device, rt_module_state *st);

/* The table of the core's services given to modules. */
const rt_host_api *rt_module_host_api(void);

#endif
