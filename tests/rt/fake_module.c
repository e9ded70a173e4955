/*
 * fake_module.c - module backends for rt.registry, built as shared objects in
 * several variants (FAKE_VARIANT) to meet each branch of the module loader.
 */
#include <stdio.h>

#include "rt/backend.h"

#define EXPORT __attribute__((visibility("default")))

static const rt_backend_iface good = {.api_version = RT_BACKEND_API_VERSION, .name = "fake"};
static const rt_backend_iface old = {.api_version = 1, .name = "fake"};
static const rt_host_api *host;

EXPORT const rt_backend_iface *lector_backend_init(const rt_host_api *h);
const rt_backend_iface *lector_backend_init(const rt_host_api *h)
{
#if FAKE_VARIANT == 5
    /* built with one test control more, inserted before the last */
    static const char *const own[] = RT_MODULE_TESTCTLS;
    enum { N = sizeof own / sizeof own[0] };
    const char *testctls[N + 1];
    for (int i = 0; i < N - 1; i++) testctls[i] = own[i];
    testctls[N - 1] = "LECTOR_FAKE_NEW_CONTROL";
    testctls[N] = own[N - 1];
    int n = N + 1;
#else
    static const char *const testctls[] = RT_MODULE_TESTCTLS;
    int n = (int)(sizeof testctls / sizeof testctls[0]);
#endif
    if (!h || h->api_version != RT_BACKEND_API_VERSION || !rt_host_testctls_match(h, testctls, n)) return NULL;
    host = h;
    return FAKE_VARIANT == 2 ? &old : &good;
}

/* variant 3 exports no score entry point */
#if FAKE_VARIANT != 3
EXPORT int lector_backend_score(char *why, size_t len);
int lector_backend_score(char *why, size_t len)
{
#if FAKE_VARIANT == 4
    snprintf(why, len, "fake: no device here");
    return 0;
#else
    /* the host's allocator is usable from the module */
    void *p = host->malloc(16);
    host->free(p);
    (void)why, (void)len;
    return p ? 7 : 1;
#endif
}
#endif
