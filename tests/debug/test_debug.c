/*
 * The debug facility: test controls read once, together, thread-safely
 * (util/testctl.h), listed by lector_test_controls(); the log callback
 * (lector_log_set) with its level, under concurrent logging and setting;
 * the module host table's allocator being the fault-injectable one.
 * ThreadSanitizer runs this too (scripts/test.sh, build-tsan).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lector_rt.h"
#include "rt/module.h"
#include "util/testctl.h"
#include "util/util.h"

static int failures;
#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            failures++;                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

#define THREADS 8

static atomic_int go;
static const char *seen[THREADS];

static void *first_use(void *arg)
{
    while (!atomic_load(&go)) {
    }
    seen[(intptr_t)arg] = lector__tc_str(LECTOR__TC_GEMM_KERNEL);
    return NULL;
}

static void test_controls(void)
{
    /* set before the first use: read; the first use races on 8 threads */
    setenv("LECTOR_GEMM_KERNEL", "generic", 1);
    setenv("LECTOR_CUDA_TF32", "1", 1);
    setenv("LECTOR_CUDA_GRAPHS", "0", 1);
    setenv("LECTOR_ONEDNN_OFF", "Conv,MatMul", 1);
    setenv("LECTOR_CUDA_PROFILE", "3", 1);
    setenv("LECTOR_SERVE_FAULT", "x", 1);
    unsetenv("LECTOR_FAIL_ALLOC");
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, first_use, (void *)i);
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) CHECK(seen[i] && !strcmp(seen[i], "generic"), "thread %d saw %s", i, seen[i]);
    /* in the order of docs/DEBUG.md's table */
    CHECK(!strcmp(lector_test_controls(),
                  "LECTOR_SERVE_FAULT,LECTOR_CUDA_PROFILE,LECTOR_CUDA_TF32,LECTOR_CUDA_GRAPHS,LECTOR_ONEDNN_OFF,"
                  "LECTOR_GEMM_KERNEL"),
          "active: %s", lector_test_controls());
    CHECK(lector__tc_flag(LECTOR__TC_CUDA_TF32, 0) == 1, "TF32 flag");
    CHECK(lector__tc_flag(LECTOR__TC_CUDA_GRAPHS, 1) == 0, "GRAPHS=0 flag");
    CHECK(lector__tc_flag(LECTOR__TC_CUDA_NHWC, 1) == 1 && lector__tc_flag(LECTOR__TC_CUDA_NHWC, 0) == 0,
          "unset flag takes the default");
    CHECK(lector__tc_long(LECTOR__TC_CUDA_PROFILE, 0) == 3, "PROFILE=3");
    CHECK(lector__tc_long(LECTOR__TC_SERVE_FAULT, -5) == -5, "a non-number takes the default");
    CHECK(!strcmp(lector__tc_str(LECTOR__TC_ONEDNN_OFF), "Conv,MatMul"), "string value");
    CHECK(!strcmp(lector__tc_name(LECTOR__TC_FAIL_ALLOC), "LECTOR_FAIL_ALLOC"), "name");
    /* read once: a change afterwards is not seen */
    setenv("LECTOR_GEMM_KERNEL", "avx2", 1);
    setenv("LECTOR_ONEDNN_NOFUSE", "1", 1);
    unsetenv("LECTOR_CUDA_TF32");
    CHECK(!strcmp(lector__tc_str(LECTOR__TC_GEMM_KERNEL), "generic"), "re-read: %s",
          lector__tc_str(LECTOR__TC_GEMM_KERNEL));
    CHECK(!lector__tc_str(LECTOR__TC_ONEDNN_NOFUSE), "a control set later is seen");
    CHECK(lector__tc_flag(LECTOR__TC_CUDA_TF32, 0) == 1, "an unset control is lost");
}

/* ---- logging ---- */

typedef struct sink {
    pthread_mutex_t mu;
    int n[4];
    char last[256];
} sink;

static void on_log(lector_log_level level, const char *msg, void *user)
{
    sink *s = user;
    pthread_mutex_lock(&s->mu);
    s->n[level]++;
    snprintf(s->last, sizeof s->last, "%s", msg);
    pthread_mutex_unlock(&s->mu);
}

#define LINES 500
static atomic_int logging_done;

static void *log_loop(void *arg)
{
    for (int i = 0; i < LINES; i++) lector__log(LECTOR_LOG_WARN, "from thread %d", (int)(intptr_t)arg);
    atomic_fetch_add(&logging_done, 1);
    return NULL;
}

static void test_log(void)
{
    static sink s = {PTHREAD_MUTEX_INITIALIZER, {0}, ""};
    lector_log_set(on_log, &s, LECTOR_LOG_INFO);
    lector__log(LECTOR_LOG_ERROR, "an error %d", 1);
    lector__log(LECTOR_LOG_INFO, "some info");
    lector__log(LECTOR_LOG_DEBUG, "debug, not wanted");
    CHECK(s.n[LECTOR_LOG_ERROR] == 1 && s.n[LECTOR_LOG_INFO] == 1 && s.n[LECTOR_LOG_DEBUG] == 0, "levels %d %d %d",
          s.n[0], s.n[2], s.n[3]);
    CHECK(!strcmp(s.last, "some info"), "last line '%s'", s.last);
    lector_log_set(on_log, &s, LECTOR_LOG_ERROR);
    lector__log(LECTOR_LOG_WARN, "a warning, not wanted");
    CHECK(s.n[LECTOR_LOG_WARN] == 0, "warn below the level");

    /* set and reset while other threads log: every line reaches one of the sinks */
    int before = s.n[LECTOR_LOG_WARN];
    static sink s2 = {PTHREAD_MUTEX_INITIALIZER, {0}, ""};
    lector_log_set(on_log, &s2, LECTOR_LOG_WARN);
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, log_loop, (void *)i);
    for (int k = 0; atomic_load(&logging_done) < 4; k++) lector_log_set(on_log, k % 2 ? &s : &s2, LECTOR_LOG_WARN);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    CHECK(s.n[LECTOR_LOG_WARN] - before + s2.n[LECTOR_LOG_WARN] == 4 * LINES, "%d lines of %d arrived",
          s.n[LECTOR_LOG_WARN] - before + s2.n[LECTOR_LOG_WARN], 4 * LINES);
    lector_log_set(NULL, NULL, LECTOR_LOG_WARN); /* back to stderr */
}

static void test_module_allocator(void)
{
    const rt_host_api *h = rt_module_host_api();
    lector__fail_alloc_after(1);
    void *p = h->malloc(32);
    lector__fail_alloc_after(0);
    CHECK(p == NULL, "the module's allocator is not the fault-injectable one");
    lector__fail_alloc_after(2);
    void *a = h->calloc(4, 8), *b = h->realloc(NULL, 8);
    lector__fail_alloc_after(0);
    CHECK(a != NULL && b == NULL, "calloc then realloc: %p %p", a, b);
    h->free(a);
}

int main(void)
{
    test_controls();
    test_log();
    test_module_allocator();
    if (failures) fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
