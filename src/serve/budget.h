/*
 * budget.h - what the service may take: memory and time.
 *
 * Memory. The limit is --memory-limit, else the cgroup's (v2 memory.max,
 * v1 memory.limit_in_bytes), else the machine's RAM. The service plans for
 * 90% of it (the rest is allocator slack and what is not counted):
 *   base     resident memory once the models are loaded and warm
 *   plans    the engine's plan caches (lector_params.plan_cache_bytes):
 *            40% of what base leaves
 *   requests the other 60%: every request's body from its first byte, and
 *            from its admission the memory its reading takes at the peak
 *            (decoding, detection's input), reserved until it is answered.
 * A request that does not fit now gets 503 + Retry-After; one that could
 * never fit, 413.
 *
 * Time. The service rate is measured (seconds per job: an exponential
 * average over finished jobs, or the recent slow jobs' time when that is
 * larger, since jobs vary, a plan to compile, a page to decode); a request
 * whose expected completion, the jobs ahead of it shared by the workers
 * plus its own, is past its deadline
 * gets 503 + Retry-After at once instead of a 504 later (an idle server
 * takes every request: that keeps the measurement going). A job whose wait
 * in the queue took longer than expected gets the same 503 when a worker
 * takes it, if what remains of its deadline is less than its own time.
 * All functions are thread-safe.
 */
#ifndef LECTOR_SERVE_BUDGET_H
#define LECTOR_SERVE_BUDGET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The memory limit the service runs under and where it came from
 * ("--memory-limit", "cgroup v2", "cgroup v1", "RAM"). */
size_t serve_memory_limit(size_t configured, const char **source);
/* Resident memory of this process now (/proc/self/statm); 0 if unknown. */
size_t serve_resident_bytes(void);

/* Jobs whose times admission looks at: a page's cost ranges over a factor
 * of ten (a new page size compiles plans), so a new job is judged by the
 * slow end of the last ones, not their mean. */
#define SERVE_RECENT_JOBS 64

typedef struct serve_budget {
    pthread_mutex_t mu;
    size_t limit;                     /* the limit */
    size_t base;                      /* resident at ready */
    size_t plans;                     /* the plan caches' share */
    size_t requests;                  /* the requests' share */
    size_t reserved;                  /* of requests, reserved now */
    double service_s;                 /* seconds per job, 0 until a job finished */
    double service_hi;                /* the slow jobs: the largest, decaying by 5% a job */
    double recent[SERVE_RECENT_JOBS]; /* the last jobs' seconds, a ring */
    int n_recent, next_recent;
} serve_budget;

void serve_budget_init(serve_budget *b, size_t limit);
void serve_budget_destroy(serve_budget *b);
/* The plan caches' share before the engine exists (base estimated as 0). */
size_t serve_budget_plans_share(size_t limit);
/* With the engine warm: the base and the shares; -1 when the requests'
 * share is under `min_request` (the limit is too small to serve). */
int serve_budget_ready(serve_budget *b, size_t base, size_t plans, size_t min_request);

/* Reserves n bytes of the requests' share: 0, or -1 (nothing reserved) when
 * they do not fit now; *never = 1 when they could not fit even idle. */
int serve_budget_reserve(serve_budget *b, size_t n, int *never);
void serve_budget_release(serve_budget *b, size_t n);

/* A job's service time, for the rate. */
void serve_budget_job_done(serve_budget *b, double seconds);
/* Seconds until a new job is done with `ahead` jobs queued or running and
 * `workers` workers, on the slow side (the 95th percentile of the last
 * SERVE_RECENT_JOBS jobs' times once 8 have finished): its own time, after
 * the jobs that must finish before a worker is free for it; 0 while
 * nothing has been measured. */
double serve_budget_expected_s(serve_budget *b, int ahead, int workers);

/* A job's own time at the slowest: the slowest of the last
 * SERVE_RECENT_JOBS jobs once 8 have finished (else the slowest one,
 * decaying), at least the average; 0 while nothing has been measured. */
double serve_budget_slowest_s(serve_budget *b);
/* Whether a queued job, `remaining_s` before its deadline (of `timeout_s`
 * in all), is better answered 503 + Retry-After than run: its own time at
 * the slowest is past what remains, so it could run into a 504. A job
 * whose own time exceeds even a whole deadline runs anyway: the measurement
 * is then too slow to trust, and only jobs that run correct it (the idle
 * server's rule). 0 while nothing has been measured. */
int serve_budget_shed(serve_budget *b, double remaining_s, double timeout_s);

#endif
