/*
 * lector_serve.h - `lector serve`: an HTTP OCR service around one shared
 * engine, for a program that embeds it (the CLI's `lector serve` is one).
 *
 * Usage:
 *
 *     lector_serve_config c;
 *     lector_serve_default_config(&c);
 *     c.listen = "0.0.0.0:8080";
 *     c.params.models_dir = "/opt/lector/models";
 *     return lector_serve_run(&c);   // until SIGTERM or SIGINT
 *
 * The server owns a primary engine (the requested device) and, when the
 * primary can fail independently (a GPU, or the CPU-side fault hook
 * LECTOR_SERVE_FAULT), a CPU fallback engine behind a circuit breaker.
 * A fixed pool of workers pulls jobs from a bounded queue; HTTP runs on
 * libmicrohttpd, one thread per connection, each waiting for its job with
 * a deadline. See docs/SERVICE.md for the HTTP API.
 *
 * Test controls (docs/DEBUG.md) change results: lector_serve_run() refuses
 * to start with any set unless allow_test_controls says so.
 *
 * Threading: lector_serve_run() blocks SIGTERM/SIGINT in every thread it
 * starts, waits for one of them, drains, and returns.
 */
#ifndef LECTOR_SERVE_H
#define LECTOR_SERVE_H

#include <stddef.h>

#include "lector.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lector_serve_config {
    const char *listen;      /* "127.0.0.1:8080"; port 0 = any free port */
    lector_params params;    /* engine parameters (models, device, threads, limits) */
    int workers;             /* worker threads; 0 = online CPUs */
    int max_batch;           /* requests per engine dispatch at most (micro-batching); 1 = none */
    int max_wait_ms;         /* after the first request, wait this long for more (0 = take what is queued) */
    int queue;               /* queued jobs at most; more get 503 + Retry-After */
    int timeout_ms;          /* per-request deadline from the full body: 504 after it */
    size_t max_body;         /* bytes per request body: 413 above */
    const char *token;       /* bearer token for everything but /healthz; NULL = none */
    int use_angle_cls;       /* per-request default of use_angle_cls (0 = PaddleOCR's) */
    int grace_ms;            /* SIGTERM: time to finish accepted work */
    int conn_timeout_s;      /* idle connection timeout (slow clients) */
    int max_connections;     /* concurrent connections (threads) at most */
    int breaker_threshold;   /* consecutive primary device errors that open the breaker */
    int breaker_cooldown_ms; /* open -> half-open after this long */
    int fault_every;         /* fault hook: every Nth primary read fails; 0 = off */
    int allow_test_controls; /* 1: start even with test controls set (lector_test_controls()) */
    int verbose;             /* access log on stderr */
    /* The doctor's JSON for /v1/doctor (malloc'd); NULL = 404. */
    char *(*doctor_json)(void);
} lector_serve_config;

/* Defaults: 127.0.0.1:8080, CPU, workers 0, queue 64, timeout 30 s,
 * body 16 MiB, grace 30 s, connection timeout 30 s, 256 connections,
 * breaker 1 error / 5 s, fault from the test control LECTOR_SERVE_FAULT. */
void lector_serve_default_config(lector_serve_config *c);

/* Runs until SIGTERM/SIGINT; returns the process exit code (0 after a clean
 * drain, 1 when the server could not start). Messages go to stderr; the
 * line "lector serve: listening on http://HOST:PORT" is printed once bound. */
int lector_serve_run(const lector_serve_config *c);

#ifdef __cplusplus
}
#endif
#endif /* LECTOR_SERVE_H */
