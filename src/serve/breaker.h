/* breaker.h - circuit breaker between the primary engine and the CPU one.
 *   closed --(threshold consecutive device errors)--> open
 *   open --(cool-down elapsed; next read is the probe)--> half-open
 *   half-open --probe ok--> closed,  --probe fails--> open (cool-down again)
 * All functions are thread-safe. */
#ifndef LECTOR_SERVE_BREAKER_H
#define LECTOR_SERVE_BREAKER_H

#include <pthread.h>
#include <stdint.h>

typedef enum serve_breaker_state {
    SERVE_BREAKER_CLOSED = 0,
    SERVE_BREAKER_OPEN = 1,
    SERVE_BREAKER_HALF_OPEN = 2
} serve_breaker_state;

typedef struct serve_breaker {
    pthread_mutex_t mu;
    serve_breaker_state state;
    int threshold, cooldown_ms;
    int failures; /* consecutive, while closed */
    int probe_in_flight;
    double open_until_ms;
    uint64_t opens, closes, probes;
} serve_breaker;

void serve_breaker_init(serve_breaker *b, int threshold, int cooldown_ms);
void serve_breaker_destroy(serve_breaker *b);
/* 1: use the primary (*probe set when this read is the half-open probe); 0: use the CPU. */
int serve_breaker_allow(serve_breaker *b, double now_ms, int *probe);
/* Outcome of a primary read that serve_breaker_allow() let through. */
void serve_breaker_record(serve_breaker *b, double now_ms, int probe, int device_error);
serve_breaker_state serve_breaker_get(serve_breaker *b, uint64_t *opens, uint64_t *closes);
const char *serve_breaker_name(serve_breaker_state s);

#endif
