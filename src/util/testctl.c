/* testctl.c - see testctl.h. */
#include "util/testctl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lector_rt.h"

#define TC_VALUE_MAX 256

static const char *const names[LECTOR__TC_COUNT] = {
#define LECTOR__TC_NAME(id, var, doc) [id] = var,
    LECTOR__TESTCTL_LIST(LECTOR__TC_NAME)
#undef LECTOR__TC_NAME
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char values[LECTOR__TC_COUNT][TC_VALUE_MAX];
static int set[LECTOR__TC_COUNT];
static char active[LECTOR__TC_COUNT * 32];

/* Copies, so that a later setenv() cannot change what was read. */
static void read_once(void)
{
    size_t o = 0;
    for (int i = 0; i < LECTOR__TC_COUNT; i++) {
        const char *v = getenv(names[i]);
        if (!v) continue;
        set[i] = 1;
        snprintf(values[i], sizeof values[i], "%s", v);
        o += (size_t)snprintf(active + o, sizeof active - o, "%s%s", o ? "," : "", names[i]);
    }
}

const char *lector__tc_str(lector__tc id)
{
    pthread_once(&once, read_once);
    return id >= 0 && id < LECTOR__TC_COUNT && set[id] ? values[id] : NULL;
}

int lector__tc_flag(lector__tc id, int dflt)
{
    const char *v = lector__tc_str(id);
    return v && *v ? strcmp(v, "0") != 0 : dflt;
}

long lector__tc_long(lector__tc id, long dflt)
{
    const char *v = lector__tc_str(id);
    if (!v || !*v) return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    return end == v ? dflt : n;
}

const char *lector__tc_name(lector__tc id) { return id >= 0 && id < LECTOR__TC_COUNT ? names[id] : ""; }

const char *lector_test_controls(void)
{
    pthread_once(&once, read_once);
    return active;
}
