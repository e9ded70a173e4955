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
#define SAVE_EVERY_MS 250.0     /* a compile saves new choices at most this often */

typedef struct algo_entry {
    cu_algo_key key;
    int algo;
    size_t ws;
    int pending; /* claimed by a compile that is still choosing */
} algo_entry;

/* The table of choices. A key is claimed by the first compile that needs
 * it; the others needing the same key wait on settled until the choice is
 * stored, instead of each asking cuDNN for the same answer (the detector's
 * first plans share their size classes: 16 workers made the same choices
 * side by side, 1.1 s summed). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t settled = PTHREAD_COND_INITIALIZER;
static algo_entry *table;
static int n_table, cap_table;

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

static int find(const cu_algo_key *k)
{
    for (int i = 0; i < n_table; i++)
        if (!memcmp(&table[i].key, k, sizeof *k)) return i;
    return -1;
}

/* 1 when the table has room for one more entry (lock held). */
static int room(void)
{
    if (n_table < cap_table) return 1;
    int cap = cap_table ? 2 * cap_table : 256;
    algo_entry *na = cu_realloc(table, sizeof *na * (size_t)cap);
    if (!na) return 0;
    table = na;
    cap_table = cap;
    return 1;
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

/* Reads identity `id`'s file into the table (lock held): records of
 * another identity, or cut short, are skipped. */
static void load(const char *dir, int id)
{
    const struct ident *d = &idents[id];
    size_t n = 0;
    uint8_t *img = cu_kcache_load(dir, d->text, strlen(d->text), &n);
    if (!img) return;
    int got = 0;
    for (size_t off = 0; off + REC_BYTES <= n && got < MAX_SAVED; off += REC_BYTES) {
        algo_entry e = {.pending = 0};
        for (int w = 0; w < 20; w++) e.key.v[w] = (int64_t)get64(img + off + 8 * w);
        e.algo = (int)(int64_t)get64(img + off + 160);
        e.ws = (size_t)get64(img + off + 168);
        /* a file holds one identity's choices, written without its index */
        if (e.key.v[0] < 0 || e.key.v[0] > 0xff || e.algo < -1 || e.algo > 64) continue;
        e.key.v[0] |= (int64_t)id << 8;
        if (find(&e.key) >= 0 || !room()) continue;
        table[n_table++] = e;
        got++;
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

int cu_algo_claim(const cu_algo_key *k, int *algo, size_t *ws)
{
    pthread_mutex_lock(&lock);
    int i;
    while ((i = find(k)) >= 0 && table[i].pending) pthread_cond_wait(&settled, &lock);
    if (i >= 0) {
        *algo = table[i].algo;
        *ws = table[i].ws;
        pthread_mutex_unlock(&lock);
        return CU_ALGO_HIT;
    }
    int r = CU_ALGO_UNTABLED;
    if (room()) {
        table[n_table++] = (algo_entry){*k, -1, 0, 1};
        r = CU_ALGO_CLAIMED;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

void cu_algo_settle(const cu_algo_key *k, int algo, size_t ws)
{
    pthread_mutex_lock(&lock);
    int i = find(k);
    if (i >= 0) {
        table[i].algo = algo;
        table[i].ws = ws;
        table[i].pending = 0;
        int id = (int)(k->v[0] >> 8);
        if (id >= 0 && id < n_idents) idents[id].unsaved++;
    }
    pthread_cond_broadcast(&settled);
    pthread_mutex_unlock(&lock);
}

void cu_algo_abandon(const cu_algo_key *k)
{
    pthread_mutex_lock(&lock);
    int i = find(k);
    if (i >= 0) table[i] = table[--n_table];
    pthread_cond_broadcast(&settled);
    pthread_mutex_unlock(&lock);
}

void cu_algo_save(int id, const char *dir, int now)
{
    if (!dir || id < 0 || id >= MAX_IDENT || !disk_on()) return;
    struct ident *d = &idents[id];
    if (atomic_exchange(&d->saving, 1)) return; /* another thread is writing it */
    double t = cu_now_ms();
    uint8_t *img = NULL;
    size_t n = 0;
    pthread_mutex_lock(&lock);
    if (d->unsaved > 0 && (now || t - d->saved_ms >= SAVE_EVERY_MS)) {
        int count = 0;
        for (int i = 0; i < n_table; i++) count += !table[i].pending && (table[i].key.v[0] >> 8) == id;
        if (count > MAX_SAVED) count = MAX_SAVED;
        img = cu_malloc((size_t)count * REC_BYTES + 1);
        for (int i = 0; img && i < n_table && n < (size_t)count * REC_BYTES; i++) {
            const algo_entry *e = &table[i];
            if (e->pending || (e->key.v[0] >> 8) != id) continue;
            for (int w = 0; w < 20; w++) put64(img + n + 8 * w, (uint64_t)(w ? e->key.v[w] : e->key.v[0] & 0xff));
            put64(img + n + 160, (uint64_t)(int64_t)e->algo);
            put64(img + n + 168, (uint64_t)e->ws);
            n += REC_BYTES;
        }
        if (img) {
            d->unsaved = 0;
            d->saved_ms = t;
        }
    }
    pthread_mutex_unlock(&lock);
    if (img) {
        cu_kcache_store(dir, d->text, strlen(d->text), img, n);
        H->log(3, "cuda: %zu convolution algorithm choices written to the kernel cache in %.1f ms", n / REC_BYTES,
               cu_now_ms() - t);
        cu_free(img);
    }
    atomic_store(&d->saving, 0);
}
