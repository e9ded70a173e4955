/* breaker.c - see breaker.h. */
#include "breaker.h"

void serve_breaker_init(serve_breaker *b, int threshold, int cooldown_ms)
{
    pthread_mutex_init(&b->mu, NULL);
    b->state = SERVE_BREAKER_CLOSED;
    b->threshold = threshold > 0 ? threshold : 1;
    b->cooldown_ms = cooldown_ms >= 0 ? cooldown_ms : 0;
    b->failures = 0;
    b->probe_in_flight = 0;
    b->open_until_ms = 0;
    b->opens = b->closes = b->probes = 0;
}

void serve_breaker_destroy(serve_breaker *b) { pthread_mutex_destroy(&b->mu); }

int serve_breaker_allow(serve_breaker *b, double now_ms, int *probe)
{
    int use = 0;
    *probe = 0;
    pthread_mutex_lock(&b->mu);
    switch (b->state) {
    case SERVE_BREAKER_CLOSED: use = 1; break;
    case SERVE_BREAKER_OPEN:
        if (now_ms >= b->open_until_ms) {
            b->state = SERVE_BREAKER_HALF_OPEN;
            b->probe_in_flight = 1;
            b->probes++;
            *probe = use = 1;
        }
        break;
    case SERVE_BREAKER_HALF_OPEN:
        if (!b->probe_in_flight) { /* the probe's outcome was lost: probe again */
            b->probe_in_flight = 1;
            b->probes++;
            *probe = use = 1;
        }
        break;
    }
    pthread_mutex_unlock(&b->mu);
    return use;
}

static void trip(serve_breaker *b, double now_ms)
{
    b->state = SERVE_BREAKER_OPEN;
    b->open_until_ms = now_ms + b->cooldown_ms;
    b->opens++;
    b->failures = 0;
}

void serve_breaker_record(serve_breaker *b, double now_ms, int probe, int device_error)
{
    pthread_mutex_lock(&b->mu);
    if (probe) {
        b->probe_in_flight = 0;
        if (device_error)
            trip(b, now_ms);
        else {
            b->state = SERVE_BREAKER_CLOSED;
            b->failures = 0;
            b->closes++;
        }
    } else if (b->state == SERVE_BREAKER_CLOSED) {
        if (!device_error)
            b->failures = 0;
        else if (++b->failures >= b->threshold)
            trip(b, now_ms);
    }
    /* a non-probe read that started before the breaker opened changes nothing */
    pthread_mutex_unlock(&b->mu);
}

serve_breaker_state serve_breaker_get(serve_breaker *b, uint64_t *opens, uint64_t *closes)
{
    pthread_mutex_lock(&b->mu);
    serve_breaker_state s = b->state;
    if (opens) *opens = b->opens;
    if (closes) *closes = b->closes;
    pthread_mutex_unlock(&b->mu);
    return s;
}

const char *serve_breaker_name(serve_breaker_state s)
{
    switch (s) {
    case SERVE_BREAKER_CLOSED: return "closed";
    case SERVE_BREAKER_OPEN: return "open";
    case SERVE_BREAKER_HALF_OPEN: return "half-open";
    }
    return "?";
}
