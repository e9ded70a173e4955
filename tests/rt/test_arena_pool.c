/*
 * test_arena_pool.c - the activation arenas a model's runs borrow
 * (src/rt/arena.h), on host memory.
 *
 * Eight runs in flight at once, then eight again: the second round must
 * reuse the first round's arenas, allocating nothing. A pool that keeps
 * fewer idle arenas than runs were in flight frees some and allocates them
 * again on every round, and on the GPU every free waits for the whole
 * device. The pool keeps at most RT_ARENA_POOL_MAX however many ran at
 * once, grows an arena to the largest size asked for, and trim releases
 * every idle arena. A thread takes back the arena it last gave when it is
 * idle (a worker keeps its memory, and the CUDA graphs made for it), even
 * when another thread gave one back after it. A reserve (rt_arena_pool_reserve)
 * makes its arenas at once, at the size asked, and keeps them however few
 * runs are in flight later; an arena smaller than the reserve's, idle or
 * given back, is replaced at its size. With a models directory, the same
 * through a real model (lector_model_reserve on the CPU backend): the
 * reserve's arenas are counted as allocated and kept, and runs of that
 * shape or smaller allocate none.
 *   test_arena_pool [MODELS_DIR]
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../soft_check.h"
#include "lector.h"
#include "lector_rt.h"
#include "rt/arena.h"

static int take_n(rt_arena_pool *pool, rt_arena *a, int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        lector_error err = {0};
        if (rt_arena_take(pool, size, &a[i], "test", &err)) {
            fprintf(stderr, "FAIL: take %d: %s\n", i, err.message);
            return 1;
        }
        memset(a[i].ptr, 0xa5, size); /* every byte of it is ours (ASan checks) */
    }
    return 0;
}

static void give_n(rt_arena_pool *pool, rt_arena *a, int n)
{
    for (int i = 0; i < n; i++) rt_arena_give(pool, a[i]);
}

/* Two threads in lock step: both take, A gives, B gives, then B takes
 * before A does; each must get its own arena back. */
static rt_arena_pool affinity_pool;
static pthread_barrier_t step;
static int affinity_bad;

static void *affinity_thread(void *arg)
{
    int b = arg != NULL;
    rt_arena mine, again;
    lector_error err = {0};
    if (rt_arena_take(&affinity_pool, 4096, &mine, "test", &err)) affinity_bad = 1;
    pthread_barrier_wait(&step);
    if (!b) rt_arena_give(&affinity_pool, mine);
    pthread_barrier_wait(&step);
    if (b) rt_arena_give(&affinity_pool, mine);
    pthread_barrier_wait(&step);
    if (b && rt_arena_take(&affinity_pool, 4096, &again, "test", &err)) affinity_bad = 1;
    pthread_barrier_wait(&step);
    if (!b && rt_arena_take(&affinity_pool, 4096, &again, "test", &err)) affinity_bad = 1;
    pthread_barrier_wait(&step);
    if (again.ptr != mine.ptr) {
        fprintf(stderr, "FAIL: thread %c took back another thread's arena\n", b ? 'B' : 'A');
        affinity_bad = 1;
    }
    rt_arena_give(&affinity_pool, again);
    return NULL;
}

/* lector_model_reserve on the classifier: MODELS_DIR's, on the CPU */
static void model_reserve(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, LECTOR_DEFAULT_CLS_MODEL);
    lector_model *m = NULL;
    lector_error err = {0};
    lector_model_options mo = {.backend = "cpu", .threads = 1};
    if (lector_model_load_file(path, &mo, &m, &err)) {
        CHECK(0, "loading %s: %s", path, err.message);
        return;
    }
    static float x[4 * 3 * 48 * 192];
    lector_tensor big = {LECTOR_DTYPE_FLOAT32, 4, {4, 3, 48, 192}, x},
                  small = {LECTOR_DTYPE_FLOAT32, 4, {1, 3, 48, 192}, x};
    size_t bytes = 0;
    int made = -1;
    CHECK(!lector_model_arena_bytes(m, &big, 1, &bytes, &err) && bytes > 0, "arena bytes: %s", err.message);
    CHECK(!lector_model_reserve(m, &big, 1, 3, 0, &made, &err), "reserve: %s", err.message);
    lector_model_stats st;
    lector_model_get_stats(m, &st);
    CHECK(made == 3 && st.arenas_allocated == 3, "a reserve of 3 made %d, %llu allocated", made,
          (unsigned long long)st.arenas_allocated);
    CHECK(st.arena_bytes == 3 * bytes, "%zu bytes idle after the reserve, not 3 x %zu", st.arena_bytes, bytes);
    for (int i = 0; i < 4; i++) {
        lector_tensor *out = NULL;
        size_t n_out = 0;
        CHECK(!lector_model_run(m, i % 2 ? &big : &small, 1, &out, &n_out, &err), "run: %s", err.message);
        lector_tensors_free(out, n_out);
    }
    lector_model_get_stats(m, &st);
    CHECK(st.arenas_allocated == 3, "runs after the reserve allocated %llu arenas",
          (unsigned long long)st.arenas_allocated - 3);
    CHECK(st.arena_bytes == 3 * bytes, "%zu bytes idle after the runs, not the reserve's %zu", st.arena_bytes,
          3 * bytes);
    /* a bound on the bytes: 5 runs asked, room for 4 arenas, 3 there already */
    CHECK(!lector_model_reserve(m, &big, 1, 5, 4 * bytes + bytes / 2, &made, &err) && made == 1,
          "a reserve of 5 bounded to 4 arenas' bytes made %d, not 1", made);
    CHECK(lector_model_reserve(m, &big, 1, -1, 0, NULL, &err) == LECTOR_ERR_INVALID_ARGUMENT,
          "a reserve of -1 runs was not refused");
    lector_model_trim(m);
    lector_model_get_stats(m, &st);
    CHECK(st.arena_bytes == 0, "%zu bytes idle after lector_model_trim", st.arena_bytes);
    lector_model_free(m);
}

int main(int argc, char **argv)
{
    enum { IN_FLIGHT = 8, MANY = RT_ARENA_POOL_MAX + 6 };
    static rt_arena a[MANY];
    rt_arena_pool pool;
    size_t held;
    uint64_t allocated;

    /* in flight together, twice: the second round allocates nothing */
    rt_arena_pool_init(&pool, NULL);
    if (take_n(&pool, a, IN_FLIGHT, 4096)) return 1;
    give_n(&pool, a, IN_FLIGHT);
    rt_arena_pool_stats(&pool, &held, &allocated);
    CHECK(allocated == IN_FLIGHT, "first round allocated %llu arenas, not %d", (unsigned long long)allocated,
          IN_FLIGHT);
    CHECK(held == (size_t)IN_FLIGHT * 4096, "%zu bytes idle after the first round, not %d", held, IN_FLIGHT * 4096);
    for (int round = 0; round < 3; round++) {
        if (take_n(&pool, a, IN_FLIGHT, 4096)) return 1;
        give_n(&pool, a, IN_FLIGHT);
    }
    rt_arena_pool_stats(&pool, NULL, &allocated);
    CHECK(allocated == IN_FLIGHT, "three more rounds of %d runs allocated %llu arenas more", IN_FLIGHT,
          (unsigned long long)(allocated - IN_FLIGHT));

    /* a larger run grows one arena to the largest size, freeing the one it replaces */
    if (take_n(&pool, a, 1, 8192)) return 1;
    CHECK(a[0].size >= 8192, "an arena of %zu bytes for a run of 8192", a[0].size);
    rt_arena_give(&pool, a[0]);
    rt_arena_pool_stats(&pool, &held, &allocated);
    CHECK(allocated == IN_FLIGHT + 1, "growing allocated %llu arenas in all, not %d", (unsigned long long)allocated,
          IN_FLIGHT + 1);
    CHECK(held == (size_t)(IN_FLIGHT - 1) * 4096 + 8192, "%zu bytes idle after growing one arena", held);

    /* trim releases every idle arena */
    rt_arena_pool_trim(&pool);
    rt_arena_pool_stats(&pool, &held, NULL);
    CHECK(held == 0, "%zu bytes idle after trim", held);
    rt_arena_pool_destroy(&pool);

    /* more in flight than the pool keeps: at most RT_ARENA_POOL_MAX stay idle */
    rt_arena_pool_init(&pool, NULL);
    if (take_n(&pool, a, MANY, 256)) return 1;
    give_n(&pool, a, MANY);
    rt_arena_pool_stats(&pool, &held, NULL);
    size_t each = a[0].size;
    CHECK(held == (size_t)RT_ARENA_POOL_MAX * each, "%zu bytes idle after %d runs at once, not %d arenas' worth", held,
          MANY, RT_ARENA_POOL_MAX);
    rt_arena_pool_destroy(&pool);

    /* a reserve: made at once, at its size, replacing a smaller idle arena, and kept */
    rt_arena_pool_init(&pool, NULL);
    if (take_n(&pool, a, 2, 1024)) return 1;
    rt_arena_give(&pool, a[0]); /* idle, too small for the reserve */
    rt_arena small_out = a[1];  /* borrowed during the reserve, too small too */
    int made = rt_arena_pool_reserve(&pool, 6, 4096);
    rt_arena_pool_stats(&pool, &held, &allocated);
    CHECK(made == 5, "a reserve of 6 beside one borrowed arena made %d, not 5", made);
    CHECK(allocated == 2 + 5, "%llu arenas allocated in all, not 7", (unsigned long long)allocated);
    CHECK(held == (size_t)5 * 4096, "%zu bytes idle after the reserve, not 5 arenas of 4096", held);
    rt_arena_give(&pool, small_out); /* replaced at the reserve's size */
    rt_arena_pool_stats(&pool, &held, &allocated);
    CHECK(held == (size_t)6 * 4096, "%zu bytes idle once the small arena came back, not 6 arenas of 4096", held);
    uint64_t after_reserve = allocated;
    for (int round = 0; round < 3; round++) { /* fewer in flight than reserved, then as many */
        int n = round < 2 ? 2 : 6;
        if (take_n(&pool, a, n, round ? 4096 : 512)) return 1;
        for (int i = 0; i < n; i++) CHECK(a[i].size >= 4096, "a reserved arena of %zu bytes", a[i].size);
        give_n(&pool, a, n);
    }
    rt_arena_pool_stats(&pool, &held, &allocated);
    CHECK(allocated == after_reserve, "runs after the reserve allocated %llu arenas",
          (unsigned long long)(allocated - after_reserve));
    CHECK(held == (size_t)6 * 4096, "%zu bytes idle after runs of 2 at a time: the reserve of 6 not kept", held);
    CHECK(rt_arena_pool_reserve(&pool, 6, 4096) == 0, "a second reserve of the same made arenas again");
    rt_arena_pool_destroy(&pool);

    /* each thread its own arena back */
    rt_arena_pool_init(&affinity_pool, NULL);
    pthread_barrier_init(&step, NULL, 2);
    pthread_t ta, tb;
    pthread_create(&ta, NULL, affinity_thread, NULL);
    pthread_create(&tb, NULL, affinity_thread, &ta);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&step);
    CHECK(!affinity_bad, "a thread did not get its own arena back");
    rt_arena_pool_destroy(&affinity_pool);

    if (argc > 1) model_reserve(argv[1]);

    return soft_check_exit("rt.arena_pool: runs in flight reuse their arenas, at most RT_ARENA_POOL_MAX kept idle, "
                           "each thread its own, a reserve made at once and kept (through a model too)");
}
