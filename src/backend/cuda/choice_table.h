/* choice_table.h - a table of choices made once per key and shared by the
 * threads of a process: cuDNN's convolution algorithms (cuda_algos.c) and
 * cuBLASLt's product algorithms (cuda_gemm.c). Plain C with pthreads, no
 * CUDA, so that its test builds and runs (under the sanitizers) anywhere.
 *
 * A choice is slow to make (a library's heuristic, milliseconds on the
 * host) and the same for every thread, so the first thread to need a key
 * claims it and makes the choice while the others needing the same key
 * wait for it, instead of each asking the same question. An entry is
 * allocated on its own and never moves, and once settled its value never
 * changes: a caller may keep a pointer to it and read the value without the
 * lock (cuda_gemm.c's steps do). Keys and values are bytes of fixed sizes,
 * compared with memcmp: their padding must be zeroed. */
#ifndef LECTOR_CUDA_CHOICE_TABLE_H
#define LECTOR_CUDA_CHOICE_TABLE_H

#include <pthread.h>
#include <stddef.h>

typedef struct choice_entry choice_entry;

typedef struct choice_table {
    pthread_mutex_t lock;
    pthread_cond_t settled;
    size_t key_size, value_size;
    int max_entries; /* beyond this, claims answer CHOICE_FULL */
    void *(*calloc_fn)(size_t n, size_t size);
    void *(*realloc_fn)(void *p, size_t n);
    void (*free_fn)(void *p);
    choice_entry **entries;
    int n, cap;
} choice_table;

/* A table's static initialiser: key and value sizes, the most entries, and
 * the allocator it takes its memory from. */
#define CHOICE_TABLE_INIT(key_size, value_size, max_entries, calloc_fn, realloc_fn, free_fn)                       \
    {                                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, (key_size), (value_size), (max_entries), (calloc_fn), \
            (realloc_fn), (free_fn), NULL, 0, 0                                                                    \
    }

enum { CHOICE_HIT, CHOICE_CLAIMED, CHOICE_FULL };

/* CHOICE_HIT: *e is key's settled entry (after waiting while another
 * thread was choosing it). CHOICE_CLAIMED: *e is a new pending entry; the
 * caller makes the choice and must end with choice_settle or
 * choice_abandon. CHOICE_FULL: *e is NULL, the table cannot grow; the
 * caller chooses and keeps nothing. */
int choice_claim(choice_table *t, const void *key, const choice_entry **e);
/* Stores a claimed entry's value and wakes the threads waiting for it. */
void choice_settle(choice_table *t, const choice_entry *e, const void *value);
/* Gives a claim up without a value: the next thread needing the key claims it. */
void choice_abandon(choice_table *t, const choice_entry *e);
/* A settled entry for key (a choice read from a file), unless the key is
 * there already: 0 added, 1 there, -1 no room. */
int choice_put(choice_table *t, const void *key, const void *value);
/* fn on every settled entry, under the table's lock (fn must not call into
 * the table); returns how many. */
int choice_each(choice_table *t, void (*fn)(const void *key, const void *value, void *arg), void *arg);
/* Entries in the table, settled or pending. */
int choice_count(choice_table *t);
/* A settled entry's key and value (never changed once settled). */
const void *choice_key(const choice_entry *e);
const void *choice_value(const choice_entry *e);

#endif
