/* conn.c - see conn.h. */
#include "conn.h"

#include "util/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

typedef enum phase { PHASE_HEADERS, PHASE_BODY, PHASE_WORK } phase;

typedef struct entry {
    const void *conn;
    int fd;
    phase ph;
    double deadline; /* monotonic seconds, for PHASE_HEADERS and PHASE_BODY */
    int shut;
} entry;

struct serve_conns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int stop;
    int header_s, body_s;
    entry *e;
    int n, cap;
    uint64_t header_timeouts, body_timeouts;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *watchdog(void *arg)
{
    serve_conns *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        double t = now_s();
        for (int i = 0; i < c->n; i++) {
            entry *e = &c->e[i];
            if (e->shut || e->ph == PHASE_WORK || t < e->deadline) continue;
            /* the registry's lock is held and the entry lives until
             * libmicrohttpd's "closed", before its close(): fd is this one */
            shutdown(e->fd, SHUT_RDWR);
            e->shut = 1;
            if (e->ph == PHASE_HEADERS)
                c->header_timeouts++;
            else
                c->body_timeouts++;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 250000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

serve_conns *serve_conns_start(int header_s, int body_s)
{
    serve_conns *c = lector__calloc(1, sizeof *c);
    if (!c) return NULL;
    c->header_s = header_s;
    c->body_s = body_s;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&c->thread, NULL, watchdog, c)) {
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        lector__free(c);
        return NULL;
    }
    return c;
}

void serve_conns_stop(serve_conns *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    lector__free(c->e);
    lector__free(c);
}

/* c->mu held */
static entry *find(serve_conns *c, const void *conn)
{
    for (int i = 0; i < c->n; i++)
        if (c->e[i].conn == conn) return &c->e[i];
    return NULL;
}

void serve_conns_opened(serve_conns *c, const void *conn, int fd)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        entry *e = lector__realloc(c->e, sizeof *e * (size_t)cap);
        if (!e) { /* untracked: libmicrohttpd's idle timeout still applies */
            pthread_mutex_unlock(&c->mu);
            return;
        }
        c->e = e;
        c->cap = cap;
    }
    c->e[c->n++] = (entry){conn, fd, PHASE_HEADERS, now_s() + c->header_s, 0};
    pthread_mutex_unlock(&c->mu);
}

void serve_conns_closed(serve_conns *c, const void *conn)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, conn);
    if (e) *e = c->e[--c->n];
    pthread_mutex_unlock(&c->mu);
}

static void set_phase(serve_conns *c, const void *conn, phase ph, int seconds)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, conn);
    if (e) {
        e->ph = ph;
        e->deadline = now_s() + seconds;
    }
    pthread_mutex_unlock(&c->mu);
}

void serve_conns_headers_done(serve_conns *c, const void *conn) { set_phase(c, conn, PHASE_BODY, c ? c->body_s : 0); }
void serve_conns_body_done(serve_conns *c, const void *conn) { set_phase(c, conn, PHASE_WORK, 0); }
void serve_conns_request_done(serve_conns *c, const void *conn)
{
    set_phase(c, conn, PHASE_HEADERS, c ? c->header_s : 0);
}

void serve_conns_counts(serve_conns *c, int *open, uint64_t *ht, uint64_t *bt)
{
    *open = 0;
    *ht = *bt = 0;
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    *open = c->n;
    *ht = c->header_timeouts;
    *bt = c->body_timeouts;
    pthread_mutex_unlock(&c->mu);
}
