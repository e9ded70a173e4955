/*
 * choice_table.c - choices made once per key, shared by threads
 * (choice_table.h says what for and the rules).
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend/cuda/choice_table.h"
#include "util/hash.h"

struct choice_entry {
    uint64_t hash;                             /* of the key: compared before the key's bytes */
    int pending;                               /* claimed by a thread that is still choosing */
    unsigned char *value;                      /* in data, after the key */
    alignas(max_align_t) unsigned char data[]; /* the key, then the value (value_offset) */
};

static size_t value_offset(const choice_table *t)
{
    size_t a = alignof(max_align_t);
    return (t->key_size + a - 1) / a * a;
}

/* The index of key's entry, or -1 (lock held). */
static int find(const choice_table *t, const void *key, uint64_t h)
{
    for (int i = t->n - 1; i >= 0; i--)
        if (t->entries[i]->hash == h && !memcmp(t->entries[i]->data, key, t->key_size)) return i;
    return -1;
}

/* A new entry for key at the table's end (lock held); NULL: no room. */
static choice_entry *add(choice_table *t, const void *key, uint64_t h, int pending)
{
    if (t->n == t->max_entries) return NULL;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        if (cap > t->max_entries) cap = t->max_entries;
        choice_entry **ne = t->realloc_fn(t->entries, sizeof *ne * (size_t)cap);
        if (!ne) return NULL;
        t->entries = ne;
        t->cap = cap;
    }
    choice_entry *e = t->calloc_fn(1, sizeof *e + value_offset(t) + t->value_size);
    if (!e) return NULL;
    e->hash = h;
    e->pending = pending;
    e->value = e->data + value_offset(t);
    memcpy(e->data, key, t->key_size);
    t->entries[t->n++] = e;
    return e;
}

int choice_claim(choice_table *t, const void *key, const choice_entry **out)
{
    uint64_t h = lector__fnv1a64(key, t->key_size);
    pthread_mutex_lock(&t->lock);
    int i;
    while ((i = find(t, key, h)) >= 0 && t->entries[i]->pending) pthread_cond_wait(&t->settled, &t->lock);
    int r = CHOICE_HIT;
    if (i >= 0)
        *out = t->entries[i];
    else
        r = (*out = add(t, key, h, 1)) ? CHOICE_CLAIMED : CHOICE_FULL;
    pthread_mutex_unlock(&t->lock);
    return r;
}

void choice_settle(choice_table *t, const choice_entry *ce, const void *value)
{
    choice_entry *e = (choice_entry *)ce; /* the claimer's own pending entry */
    pthread_mutex_lock(&t->lock);
    memcpy(e->value, value, t->value_size);
    e->pending = 0;
    pthread_cond_broadcast(&t->settled);
    pthread_mutex_unlock(&t->lock);
}

void choice_abandon(choice_table *t, const choice_entry *e)
{
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n; i++)
        if (t->entries[i] == e) {
            memmove(&t->entries[i], &t->entries[i + 1], sizeof *t->entries * (size_t)(t->n - i - 1));
            t->n--;
            t->free_fn((void *)e); /* pending: no one else holds it */
            break;
        }
    pthread_cond_broadcast(&t->settled);
    pthread_mutex_unlock(&t->lock);
}

int choice_put(choice_table *t, const void *key, const void *value)
{
    uint64_t h = lector__fnv1a64(key, t->key_size);
    pthread_mutex_lock(&t->lock);
    int r = 1;
    if (find(t, key, h) < 0) {
        choice_entry *e = add(t, key, h, 0);
        if (e) memcpy(e->value, value, t->value_size);
        r = e ? 0 : -1;
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

int choice_each(choice_table *t, void (*fn)(const void *key, const void *value, void *arg), void *arg)
{
    int count = 0;
    pthread_mutex_lock(&t->lock);
    for (int i = 0; i < t->n; i++) {
        const choice_entry *e = t->entries[i];
        if (e->pending) continue;
        fn(e->data, e->value, arg);
        count++;
    }
    pthread_mutex_unlock(&t->lock);
    return count;
}

int choice_count(choice_table *t)
{
    pthread_mutex_lock(&t->lock);
    int n = t->n;
    pthread_mutex_unlock(&t->lock);
    return n;
}

const void *choice_key(const choice_entry *e) { return e->data; }

const void *choice_value(const choice_entry *e) { return e->value; }
