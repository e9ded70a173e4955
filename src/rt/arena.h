/*
 * arena.h - activation memory shared by every plan of a model (internal).
 *
 * A run borrows one arena of at least its plan's arena_size bytes and gives
 * it back. The arenas belong to the model, not to a plan: plans of
 * different input shapes run in the same memory, so a stream of pages of
 * varied sizes allocates nothing once the largest shape in use has been
 * seen. An arena too small for a run is replaced by one of the largest size
 * requested so far (grown on demand, never per shape). As many idle arenas
 * are kept as runs were ever in flight at once (at least RT_ARENA_POOL, at
 * most RT_ARENA_POOL_MAX), so that concurrent workers do not free and
 * allocate arenas on every run (on the GPU each free waits for the whole
 * device); rt_arena_pool_trim (lector_model_trim) releases them.
 * rt_arena_pool_reserve makes them ahead: memory that stops growing from
 * the start instead of when runs in flight reach a new high. Thread-safe.
 */
#ifndef LECTOR_RT_ARENA_H
#define LECTOR_RT_ARENA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"

#define RT_ARENA_POOL     4  /* idle arenas kept per model at least */
#define RT_ARENA_POOL_MAX 64 /* and at most, however many runs were in flight */

typedef struct rt_backend rt_backend;

typedef struct rt_arena {
    void *ptr;
    size_t size;
} rt_arena;

typedef struct rt_arena_pool {
    pthread_mutex_t lock;
    rt_backend *be; /* buffer_alloc / buffer_free: device memory for device backends */
    rt_arena idle[RT_ARENA_POOL_MAX];
    int n_idle;
    int borrowed;       /* arenas taken and not given back */
    int peak;           /* the most borrowed at once: how many idle ones are kept */
    int reserved;       /* and at least this many (rt_arena_pool_reserve) */
    size_t largest;     /* the largest size a run asked for */
    size_t held;        /* bytes of idle arenas */
    uint64_t allocated; /* arenas allocated so far (first ones and growths) */
} rt_arena_pool;

void rt_arena_pool_init(rt_arena_pool *pool, rt_backend *be);
/* Frees the idle arenas; none may be borrowed. */
void rt_arena_pool_destroy(rt_arena_pool *pool);
/* An arena of at least `size` bytes: the one the calling thread last gave
 * back to this pool when it is idle and large enough (a backend's state made
 * per arena, such as the CUDA module's graphs, is then reused; arena.c),
 * else the smallest idle one that is large enough, else a new one of
 * max(size, the largest size asked for so far). `what` names the model in
 * the error message. */
lector_status rt_arena_take(rt_arena_pool *pool, size_t size, rt_arena *out, const char *what, lector_error *err);
/* Back to the pool, or freed when as many arenas are idle as the pool keeps
 * (the smallest goes). */
void rt_arena_give(rt_arena_pool *pool, rt_arena a);
/* Makes arenas of `size` bytes (or of the largest size asked for, if
 * larger) until `n` exist, idle or borrowed, and keeps that many from then
 * on; idle arenas smaller than that are replaced at once, borrowed ones
 * when they are given back. Returns how many it made; it stops at the
 * first allocation that fails. */
int rt_arena_pool_reserve(rt_arena_pool *pool, int n, size_t size);
/* Frees every idle arena. */
void rt_arena_pool_trim(rt_arena_pool *pool);
/* Bytes of idle arenas and arenas allocated so far. */
void rt_arena_pool_stats(rt_arena_pool *pool, size_t *held, uint64_t *allocated);

#endif
