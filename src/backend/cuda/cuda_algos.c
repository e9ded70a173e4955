/*
 * cuda_algos.c - cuDNN's convolution algorithm choices: one table for the
 * process (a choice is made once, by the first compile that needs it), kept
 * on disk between processes in the kernel cache's directory.
 *
 * Why on disk: the choice is cuDNN's heuristic (cudnnGet*_v7), a function
 * of the GPU, cuDNN's version and the convolution's shapes alone, and it is
 * most of a first plan's compile: over an archive of 1,000 distinct pages
 * the detector's 114 plans spent 1.9 s of their 2.3 s in it, its first ones
 * 73-108 ms each while the first pages waited (2026-12-05, H100). A process
 * after the first on a machine takes the choices from the file and asks
 * cuDNN for the new ones only. The same choices as asking again, so the same
 * results: the file's key names everything the heuristic's answer may
 * depend on (the GPU, cuDNN, CUDA, the driver, TF32, the workspace limit),
 * and a file of another key is never read (kcache_format.h).
 *
 * The file is the kernel cache's format with the records as its image,
 * written whole under a temporary name and renamed (cu_kcache_store): two
 * processes writing at once lose at most the other's new choices, which a
 * later process makes again. The timed search (LECTOR_CUDA_CONV_SEARCH=1)
 * is not a function of the shapes alone: it neither reads nor writes it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"

/* A record: the key's 20 numbers, the algorithm and its workspace (bytes),
 * each 8 bytes little-endian. */
#define REC_WORDS     22
#define REC_BYTES     (REC_WORDS * 8)
#define MAX_SAVED     (1 << 16) /* records a file holds at most (11 MiB) */
#define SAVE_EVERY_MS 250.0     /* a compile saves new choices at most this often... */
#define SAVE_AT_ONCE  512       /* ...once the table holds this many (a 90 KiB file); before, at once */

typedef struct algo_value {
    int64_t algo; /* -1: none */
    uint64_t ws;
} algo_value;

/* The table of choices (choice_table.h): the detector's first plans share
 * their size classes, and 16 workers made the same choices side by side
 * (1.1 s summed) before a compile waited for another's. */
static choice_table table = CU_CHOICE_TABLE(cu_algo_key, algo_value, 1 << 20);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the identities below */

/* What a choice depends on besides its key, one per kind of GPU in the
 * process; its index is in every key's v[0] (bits 8 and up), so that two
 * GPUs of different kinds never share a choice and a file holds one kind's.
 * A process has at most CU_MAX_DEV GPUs, so every kind has its own index. */
#define MAX_IDENT CU_MAX_DEV
static struct ident {
    char text[320];
    int loaded;      /* its file was read (or there was none to read) */
    int unsaved;     /* choices made since its file was last written */
    double saved_ms; /* when it was last written */
    atomic_int saving;
} idents[MAX_IDENT];
static int n_idents;

static int disk_on(void)
{
    return cu_switch(LECTOR__TC_CUDA_ALGO_CACHE, 1) && !cu_switch(LECTOR__TC_CUDA_CONV_SEARCH, 0);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads identity `id`'s file into the table: records of
 * another identity, or cut short, are skipped. */
static void load(const char *dir, int id)
{
    const struct ident *d = &idents[id];
    size_t n = 0;
    uint8_t *img = cu_kcache_load(dir, d->text, strlen(d->text), &n);
    if (!img) return;
    int got = 0;
    for (size_t off = 0; off + REC_BYTES <= n && got < MAX_SAVED; off += REC_BYTES) {
        cu_algo_key key;
        algo_value v;
        for (int w = 0; w < 20; w++) key.v[w] = (int64_t)get64(img + off + 8 * w);
        v.algo = (int64_t)get64(img + off + 160);
        v.ws = get64(img + off + 168);
        /* a file holds one identity's choices, written without its index */
        if (key.v[0] < 0 || key.v[0] > 0xff || v.algo < -1 || v.algo > 64) continue;
        key.v[0] |= (int64_t)id << 8;
        got += choice_put(&table, &key, &v) == 0;
    }
    cu_free(img);
    H->log(3, "cuda: %d convolution algorithm choices read from the kernel cache", got);
}

int cu_algo_ident(const cu_ctx *c, const char *dir)
{
    char text[sizeof idents[0].text];
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    snprintf(text, sizeof text,
             "lector cudnn algorithm choices 1 | %s | sm_%d | cuDNN %zu | CUDA %d | driver %d | tf32 %d | "
             "workspace %zu | records %d bytes",
             c->name, c->sm, cudnnGetVersion(), rt, drv, cu_switch(LECTOR__TC_CUDA_TF32, 0), (size_t)CU_WS_LIMIT,
             REC_BYTES);
    pthread_mutex_lock(&lock);
    int id = 0;
    while (id < n_idents && strcmp(idents[id].text, text)) id++;
    if (id == n_idents) snprintf(idents[n_idents++].text, sizeof text, "%s", text); /* id < CU_MAX_DEV: cu_init */
    if (!idents[id].loaded && dir && disk_on()) load(dir, id);
    idents[id].loaded = 1;
    pthread_mutex_unlock(&lock);
    return id;
}

int cu_algo_claim(const cu_algo_key *k, int *algo, size_t *ws, const choice_entry **claim)
{
    int r = choice_claim(&table, k, claim);
    if (r == CHOICE_HIT) {
        const algo_value *v = choice_value(*claim);
        *algo = (int)v->algo;
        *ws = (size_t)v->ws;
        return CU_ALGO_HIT;
    }
    return r == CHOICE_CLAIMED ? CU_ALGO_CLAIMED : CU_ALGO_UNTABLED;
}

void cu_algo_settle(const choice_entry *claim, int algo, size_t ws)
{
    algo_value v = {algo, ws};
    int id = (int)(((const cu_algo_key *)choice_key(claim))->v[0] >> 8);
    choice_settle(&table, claim, &v);
    pthread_mutex_lock(&lock);
    if (id >= 0 && id < n_idents) idents[id].unsaved++;
    pthread_mutex_unlock(&lock);
}

void cu_algo_abandon(const choice_entry *claim) { choice_abandon(&table, claim); }

/* The records of one identity's choices, as choice_each finds them. */
typedef struct records {
    int id;
    uint8_t *img;
    size_t n, cap; /* bytes written, bytes room */
} records;

static void add_record(const void *key, const void *value, void *arg)
{
    records *r = arg;
    const cu_algo_key *k = key;
    const algo_value *v = value;
    if ((k->v[0] >> 8) != r->id || r->n + REC_BYTES > r->cap) return;
    for (int w = 0; w < 20; w++) put64(r->img + r->n + 8 * w, (uint64_t)(w ? k->v[w] : k->v[0] & 0xff));
    put64(r->img + r->n + 160, (uint64_t)v->algo);
    put64(r->img + r->n + 168, v->ws);
    r->n += REC_BYTES;
}

void cu_algo_save(int id, const char *dir, int now)
{
    if (!dir || id < 0 || id >= MAX_IDENT || !disk_on()) return;
    struct ident *d = &idents[id];
    if (atomic_exchange(&d->saving, 1)) return; /* another thread is writing it */
    double t = cu_now_ms();
    pthread_mutex_lock(&lock);
    /* A short process (the CLI on one page leaves its engine to the exit,
     * which saves nothing) makes all its choices within 250 ms: they are
     * written at once while the file is small, or the next process makes
     * them again (the detector's first plan: 125 ms against 20). */
    int due = d->unsaved > 0 && (now || t - d->saved_ms >= SAVE_EVERY_MS || choice_count(&table) < SAVE_AT_ONCE);
    if (due) {
        d->unsaved = 0;
        d->saved_ms = t;
    }
    pthread_mutex_unlock(&lock);
    /* room for every entry the table may hold, up to a file's most */
    int entries = choice_count(&table);
    size_t cap = (size_t)(entries < MAX_SAVED ? entries : MAX_SAVED) * REC_BYTES;
    records r = {id, due ? cu_malloc(cap + 1) : NULL, 0, cap};
    if (r.img) {
        choice_each(&table, add_record, &r);
        cu_kcache_store(dir, d->text, strlen(d->text), r.img, r.n);
        H->log(3, "cuda: %zu convolution algorithm choices written to the kernel cache in %.1f ms", r.n / REC_BYTES,
               cu_now_ms() - t);
        cu_free(r.img);
    } else if (due) {
        pthread_mutex_lock(&lock);
        d->unsaved++; /* try again later */
        pthread_mutex_unlock(&lock);
    }
    atomic_store(&d->saving, 0);
}
