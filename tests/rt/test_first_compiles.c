/*
 * The first compiles of a process, eight at once. A host plan's compile
 * asks glibc's mallinfo2 how much the heap grew (model.c), and glibc sets
 * its malloc up on the first call into it, marking it set up before it is:
 * under AddressSanitizer, which replaces malloc, that first call can be
 * two compiles' mallinfo2 at once, and the second faulted (about one
 * process in five with eight threads; the CLI's batch tests failed with it
 * now and then, exit 134). Each round here is a fresh process (fork before
 * any thread) whose first act after loading a model is eight threads,
 * released together, each compiling a shape of its own; the round passes
 * when the child exits 0. Outside a sanitizer the process's own mallocs
 * set glibc up first and the test is a plain concurrency check.
 *   test_first_compiles [ROUNDS]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lector_rt.h"
#include "model_builder.h"

#define THREADS 8

static lector_model *model;
static pthread_barrier_t start;
static int failed[THREADS];

static void *compile_one(void *arg)
{
    int id = (int)(intptr_t)arg;
    int64_t side = 4 + id; /* a shape no other thread runs: a compile each */
    float *x = calloc((size_t)(3 * side * side), sizeof *x);
    lector_tensor in = {.dtype = LECTOR_DTYPE_FLOAT32, .ndim = 4, .dims = {1, 3, side, side}, .data = x};
    lector_tensor *out = NULL;
    size_t n = 0;
    lector_error err = {0};
    pthread_barrier_wait(&start);
    failed[id] = !x || lector_model_run(model, &in, 1, &out, &n, &err) != LECTOR_OK;
    if (failed[id]) fprintf(stderr, "thread %d: %s\n", id, err.message);
    lector_tensors_free(out, n);
    free(x);
    return NULL;
}

/* One round, in the child: 0 when every thread's run succeeded. */
static int round_child(void)
{
    int64_t dims[4] = {1, 3, -1, -1};
    size_t len = 0;
    uint8_t *bytes = build_unary_model("Relu", "", 13, dims, &len);
    lector_model_options o = {.backend = "cpu", .threads = 1};
    lector_error err = {0};
    if (!bytes || lector_model_load_memory(bytes, len, "relu", &o, &model, &err) != LECTOR_OK) {
        fprintf(stderr, "load: %s\n", err.message);
        return 1;
    }
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, compile_one, (void *)(intptr_t)i)) return 1;
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        bad += failed[i];
    }
    lector_model_free(model);
    free(bytes);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 16, failures = 0;
    for (int r = 0; r < rounds; r++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) _exit(round_child());
        int status = 0;
        if (waitpid(pid, &status, 0) < 0) {
            perror("waitpid");
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            failures++;
            if (WIFSIGNALED(status))
                printf("FAIL: round %d: the child died of signal %d\n", r, WTERMSIG(status));
            else
                printf("FAIL: round %d: the child exited %d\n", r, WEXITSTATUS(status));
        }
    }
    printf("%d rounds of %d first compiles at once: %d failed\n", rounds, THREADS, failures);
    return failures != 0;
}
