/*
 * log.c - the library's log lines: lector_log_set() (lector_rt.h) and
 * lector__log (util.h). The level is an atomic read on every call; the
 * callback and its data change together under a lock, and a line is handed
 * to the callback outside it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static pthread_once_t level_once = PTHREAD_ONCE_INIT;
static atomic_int level = LECTOR_LOG_WARN;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static lector_log_callback sink;
static void *sink_data;

/* LECTOR_LOG: the default level, read once. */
static void level_from_env(void)
{
    const char *s = getenv("LECTOR_LOG");
    int l = LECTOR_LOG_WARN;
    if (s) {
        if (!strcmp(s, "error"))
            l = LECTOR_LOG_ERROR;
        else if (!strcmp(s, "info"))
            l = LECTOR_LOG_INFO;
        else if (!strcmp(s, "debug"))
            l = LECTOR_LOG_DEBUG;
    }
    atomic_store(&level, l);
}

void lector_log_set(lector_log_callback callback, void *user_data, lector_log_level lvl)
{
    pthread_once(&level_once, level_from_env);
    pthread_mutex_lock(&sink_lock);
    sink = callback;
    sink_data = user_data;
    pthread_mutex_unlock(&sink_lock);
    atomic_store(&level, lvl < LECTOR_LOG_ERROR ? LECTOR_LOG_ERROR : lvl > LECTOR_LOG_DEBUG ? LECTOR_LOG_DEBUG : lvl);
}

void lector__log(lector_log_level lvl, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    pthread_once(&level_once, level_from_env);
    if ((int)lvl > atomic_load_explicit(&level, memory_order_relaxed) || lvl < 0) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&sink_lock);
    lector_log_callback cb = sink;
    void *data = sink_data;
    pthread_mutex_unlock(&sink_lock);
    if (cb)
        cb(lvl, buf, data);
    else
        fprintf(stderr, "lector: %s: %s\n", names[lvl], buf);
}
