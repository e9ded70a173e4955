/* arena.c - activation arenas shared by the plans of a model (arena.h). */
#include "rt/arena.h"

#include <string.h>

#include "rt/backend.h"
#include "util/testctl.h"
#include "util/util.h"

/* The arena each thread last gave back to a pool (a thread runs a few
 * models: the detector, the classifier, the recogniser). A run takes it
 * again when it is idle and large enough, so that a thread keeps the same
 * memory and a backend's state made per arena (the CUDA module's graphs,
 * captured per stream and arena) is made once per thread, not once per
 * pairing of threads and arenas. The pointers are only compared. */
#define ARENA_AFFINITY 4
static _Thread_local struct {
    const rt_arena_pool *pool;
    void *ptr;
} last_given[ARENA_AFFINITY];
static _Thread_local unsigned last_next;

static void *last_arena(const rt_arena_pool *pool)
{
    for (int i = 0; i < ARENA_AFFINITY; i++)
        if (last_given[i].pool == pool) return last_given[i].ptr;
    return NULL;
}

static void remember_arena(const rt_arena_pool *pool, void *ptr)
{
    for (int i = 0; i < ARENA_AFFINITY; i++)
        if (last_given[i].pool == pool) {
            last_given[i].ptr = ptr;
            return;
        }
    unsigned i = last_next++ % ARENA_AFFINITY;
    last_given[i].pool = pool;
    last_given[i].ptr = ptr;
}

void rt_arena_pool_init(rt_arena_pool *pool, rt_backend *be)
{
    memset(pool, 0, sizeof *pool);
    pthread_mutex_init(&pool->lock, NULL);
    pool->be = be;
}

static void arena_free(rt_arena_pool *pool, rt_arena a)
{
    if (a.ptr) rt_buffer_free(pool->be, a.ptr);
}

void rt_arena_pool_trim(rt_arena_pool *pool)
{
    rt_arena drop[RT_ARENA_POOL_MAX];
    pthread_mutex_lock(&pool->lock);
    int n = pool->n_idle;
    memcpy(drop, pool->idle, sizeof(rt_arena) * (size_t)n);
    pool->n_idle = 0;
    pool->held = 0;
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < n; i++) arena_free(pool, drop[i]);
}

void rt_arena_pool_destroy(rt_arena_pool *pool)
{
    rt_arena_pool_trim(pool);
    pthread_mutex_destroy(&pool->lock);
}

lector_status rt_arena_take(rt_arena_pool *pool, size_t size, rt_arena *out, const char *what, lector_error *err)
{
    if (size < RT_ARENA_ALIGN) size = RT_ARENA_ALIGN;
    rt_arena drop = {0};
    pthread_mutex_lock(&pool->lock);
    if (size > pool->largest) pool->largest = size;
    int best = -1;
    void *mine = lector__tc_flag(LECTOR__TC_AFFINITY, 1) ? last_arena(pool) : NULL;
    for (int i = 0; i < pool->n_idle && mine; i++)
        if (pool->idle[i].ptr == mine && pool->idle[i].size >= size) best = i;
    if (best < 0)
        for (int i = 0; i < pool->n_idle; i++)
            if (pool->idle[i].size >= size && (best < 0 || pool->idle[i].size < pool->idle[best].size)) best = i;
    pool->borrowed++;
    if (pool->borrowed > pool->peak) pool->peak = pool->borrowed;
    if (best >= 0) {
        *out = pool->idle[best];
        pool->idle[best] = pool->idle[--pool->n_idle];
        pool->held -= out->size;
        pthread_mutex_unlock(&pool->lock);
        return LECTOR_OK;
    }
    /* none is large enough: the largest idle one is replaced, not kept beside a bigger one */
    if (pool->n_idle > 0) {
        int big = 0;
        for (int i = 1; i < pool->n_idle; i++)
            if (pool->idle[i].size > pool->idle[big].size) big = i;
        drop = pool->idle[big];
        pool->idle[big] = pool->idle[--pool->n_idle];
        pool->held -= drop.size;
    }
    size_t want = pool->largest;
    pool->allocated++;
    pthread_mutex_unlock(&pool->lock);
    arena_free(pool, drop);
    rt_backend *be = pool->be;
    void *ptr = rt_buffer_alloc(be, want);
    if (!ptr && want > size) { /* the largest size may not fit where this run's does */
        want = size;
        ptr = rt_buffer_alloc(be, want);
    }
    if (!ptr) {
        pthread_mutex_lock(&pool->lock);
        pool->borrowed--;
        pthread_mutex_unlock(&pool->lock);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: cannot allocate %zu bytes of activation memory",
                             what ? what : "model", size);
    }
    out->ptr = ptr;
    out->size = want;
    return LECTOR_OK;
}

void rt_arena_give(rt_arena_pool *pool, rt_arena a)
{
    rt_arena drop = {0};
    pthread_mutex_lock(&pool->lock);
    if (pool->reserved > 0 && a.size < pool->largest) {
        /* a reserve keeps its arenas at the largest size: this one is replaced now,
         * allocated without the lock */
        size_t largest = pool->largest;
        pthread_mutex_unlock(&pool->lock);
        void *ptr = rt_buffer_alloc(pool->be, largest);
        if (ptr) {
            arena_free(pool, a);
            a = (rt_arena){ptr, largest};
        }
        pthread_mutex_lock(&pool->lock);
        if (ptr) pool->allocated++;
    }
    remember_arena(pool, a.ptr);
    pool->borrowed--;
    int keep = pool->peak < RT_ARENA_POOL ? RT_ARENA_POOL : pool->peak;
    if (keep < pool->reserved) keep = pool->reserved;
    if (keep > RT_ARENA_POOL_MAX) keep = RT_ARENA_POOL_MAX;
    if (pool->n_idle < keep) {
        pool->idle[pool->n_idle++] = a;
        pool->held += a.size;
    } else {
        int small = 0;
        for (int i = 1; i < pool->n_idle; i++)
            if (pool->idle[i].size < pool->idle[small].size) small = i;
        if (pool->idle[small].size < a.size) {
            drop = pool->idle[small];
            pool->held += a.size - drop.size;
            pool->idle[small] = a;
        } else {
            drop = a;
        }
    }
    pthread_mutex_unlock(&pool->lock);
    arena_free(pool, drop);
}

int rt_arena_pool_reserve(rt_arena_pool *pool, int n, size_t size)
{
    if (n > RT_ARENA_POOL_MAX) n = RT_ARENA_POOL_MAX;
    if (size < RT_ARENA_ALIGN) size = RT_ARENA_ALIGN;
    int made = 0;
    /* idle arenas smaller than the reserve's are replaced now, not later by a run that
     * needs more (a growth the reserve is there to have made) */
    rt_arena drop[RT_ARENA_POOL_MAX];
    int n_drop = 0;
    pthread_mutex_lock(&pool->lock);
    if (n > pool->reserved) pool->reserved = n;
    if (size > pool->largest) pool->largest = size;
    for (int i = 0; i < pool->n_idle;)
        if (pool->idle[i].size < pool->largest) {
            drop[n_drop++] = pool->idle[i];
            pool->held -= pool->idle[i].size;
            pool->idle[i] = pool->idle[--pool->n_idle];
        } else {
            i++;
        }
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < n_drop; i++) arena_free(pool, drop[i]);
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t want = pool->largest;
        /* one at a time, the lock not held while the backend allocates: runs go on meanwhile */
        int more = pool->n_idle + pool->borrowed < n;
        pthread_mutex_unlock(&pool->lock);
        if (!more) break;
        void *ptr = rt_buffer_alloc(pool->be, want);
        if (!ptr) break;
        pthread_mutex_lock(&pool->lock);
        int keep = pool->n_idle < RT_ARENA_POOL_MAX && pool->n_idle + pool->borrowed < n;
        if (keep) {
            pool->idle[pool->n_idle++] = (rt_arena){ptr, want};
            pool->held += want;
            pool->allocated++;
        }
        pthread_mutex_unlock(&pool->lock);
        if (!keep) { /* runs made the rest meanwhile */
            rt_buffer_free(pool->be, ptr);
            break;
        }
        made++;
    }
    return made;
}

void rt_arena_pool_stats(rt_arena_pool *pool, size_t *held, uint64_t *allocated)
{
    pthread_mutex_lock(&pool->lock);
    if (held) *held = pool->held;
    if (allocated) *allocated = pool->allocated;
    pthread_mutex_unlock(&pool->lock);
}
