/*
 * threads.c - the engine's worker threads, kept between streams (engine.h).
 *
 * lector_read_file and lector_read_batch run a stream of their own per
 * call, and `lector serve` a batch per request: each stream used to start
 * its workers and join them at its end, so every read started 16 threads
 * on a GPU. A thread a stream has finished with parks in its engine for the
 * next stream instead. Besides the thread starts, this keeps what the
 * runtime and the CUDA module attach to a thread (the arena and the GPU
 * worker it last used, and so the CUDA graphs made for that pair:
 * rt/arena.c, cuda_memory.c) from one read to the next.
 */
#include <stdlib.h>

#include "ocr/engine.h"
#include "util/util.h"

/* parked threads kept per engine; more end (a burst of concurrent streams) */
#define OCR_THREADS_PARKED 256

struct ocr_thread {
    pthread_t tid;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* fn given, fn returned, or quit */
    void (*fn)(void *);
    void *arg;
    int busy; /* fn given and not yet returned */
    int quit;
    ocr_thread *next; /* in the engine's parked list */
};

static void *thread_main(void *p)
{
    ocr_thread *t = p;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->busy && !t->quit) pthread_cond_wait(&t->cond, &t->lock);
        if (!t->busy) break;
        void (*fn)(void *) = t->fn;
        void *arg = t->arg;
        pthread_mutex_unlock(&t->lock);
        fn(arg);
        pthread_mutex_lock(&t->lock);
        t->fn = NULL;
        t->busy = 0;
        pthread_cond_broadcast(&t->cond);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

static void thread_end(ocr_thread *t)
{
    pthread_mutex_lock(&t->lock);
    t->quit = 1;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->tid, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    lector__free(t);
}

lector_status ocr_thread_start(lector_engine *e, void (*fn)(void *), void *arg, ocr_thread **out, lector_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&e->threads_lock);
    ocr_thread *t = e->parked;
    if (t) {
        e->parked = t->next;
        e->n_parked--;
    }
    pthread_mutex_unlock(&e->threads_lock);
    if (!t) {
        t = lector__calloc(1, sizeof *t);
        if (!t) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        pthread_mutex_init(&t->lock, NULL);
        pthread_cond_init(&t->cond, NULL);
        if (pthread_create(&t->tid, NULL, thread_main, t)) {
            pthread_cond_destroy(&t->cond);
            pthread_mutex_destroy(&t->lock);
            lector__free(t);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "cannot start a worker thread");
        }
    }
    pthread_mutex_lock(&t->lock);
    t->fn = fn;
    t->arg = arg;
    t->busy = 1;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    *out = t;
    return LECTOR_OK;
}

void ocr_thread_join(lector_engine *e, ocr_thread *t)
{
    if (!t) return;
    pthread_mutex_lock(&t->lock);
    while (t->busy) pthread_cond_wait(&t->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);
    pthread_mutex_lock(&e->threads_lock);
    int keep = e->n_parked < OCR_THREADS_PARKED;
    if (keep) {
        t->next = e->parked;
        e->parked = t;
        e->n_parked++;
    }
    pthread_mutex_unlock(&e->threads_lock);
    if (!keep) thread_end(t);
}

void ocr_threads_free(lector_engine *e)
{
    pthread_mutex_lock(&e->threads_lock);
    ocr_thread *t = e->parked;
    e->parked = NULL;
    e->n_parked = 0;
    pthread_mutex_unlock(&e->threads_lock);
    while (t) {
        ocr_thread *next = t->next;
        thread_end(t);
        t = next;
    }
}
