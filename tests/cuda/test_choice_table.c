/* The table of choices the CUDA module shares between its compiles
 * (src/backend/cuda/choice_table.c: cuDNN's and cuBLASLt's algorithms),
 * without a GPU: a key chosen once however many threads need it at once,
 * waiters given the chooser's value, an abandoned claim taken up by a
 * waiter, entries that never move, a bounded table and a failed allocation
 * answering "full". Run under ThreadSanitizer in scripts/test.sh. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../soft_check.h"
#include "backend/cuda/choice_table.h"

typedef struct key {
    long a, b;
} key;
typedef struct value {
    long v;
} value;

static atomic_int fail_calloc; /* the next allocation fails */
static void *t_calloc(size_t n, size_t s) { return atomic_exchange(&fail_calloc, 0) ? NULL : calloc(n, s); }
static void *t_realloc(void *p, size_t n) { return realloc(p, n); }

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* The value a key's chooser stores: a function of the key, so a waiter can
 * check what it was given. */
static long expected(const key *k) { return k->a * 1000 + k->b; }

static choice_table shared = CHOICE_TABLE_INIT(sizeof(key), sizeof(value), 1 << 16, t_calloc, t_realloc, free);

#define KEYS    40
#define THREADS 16
static atomic_int chosen[KEYS]; /* how many times each key's choice was made */
static atomic_int wrong;        /* values that were not the key's */

static void *need_all(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < KEYS; i++) {
        int j = (i * 7 + t * 3) % KEYS; /* each thread in its own order */
        key k = {j, j % 3};
        const choice_entry *e;
        int r = choice_claim(&shared, &k, &e);
        if (r == CHOICE_CLAIMED) {
            atomic_fetch_add(&chosen[j], 1);
            nap_us(300); /* a heuristic's time: others come for the same key meanwhile */
            value v = {expected(&k)};
            choice_settle(&shared, e, &v);
        } else if (r != CHOICE_HIT) {
            atomic_fetch_add(&wrong, 1);
            continue;
        }
        const value *v = choice_value(e);
        if (v->v != expected(&k) || memcmp(choice_key(e), &k, sizeof k)) atomic_fetch_add(&wrong, 1);
    }
    return NULL;
}

static void test_once_per_key(void)
{
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, need_all, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    int made = 0;
    for (int j = 0; j < KEYS; j++) {
        CHECK(atomic_load(&chosen[j]) == 1, "key %d chosen %d times", j, atomic_load(&chosen[j]));
        made += atomic_load(&chosen[j]);
    }
    CHECK(made == KEYS, "%d choices made for %d keys", made, KEYS);
    CHECK(atomic_load(&wrong) == 0, "%d values not the key's", atomic_load(&wrong));
    CHECK(choice_count(&shared) == KEYS, "%d entries", choice_count(&shared));
}

/* A claim given up while another thread waits for it: the waiter claims it. */
static choice_table small = CHOICE_TABLE_INIT(sizeof(key), sizeof(value), 3, t_calloc, t_realloc, free);
static atomic_int waiter_result = -1;

static void *wait_for_abandoned(void *arg)
{
    (void)arg;
    key k = {7, 7};
    const choice_entry *e;
    int r = choice_claim(&small, &k, &e);
    if (r == CHOICE_CLAIMED) {
        value v = {77};
        choice_settle(&small, e, &v);
    }
    atomic_store(&waiter_result, r);
    return NULL;
}

static void test_abandon(void)
{
    key k = {7, 7};
    const choice_entry *e;
    CHECK(choice_claim(&small, &k, &e) == CHOICE_CLAIMED, "a new key is claimed");
    pthread_t th;
    pthread_create(&th, NULL, wait_for_abandoned, NULL);
    nap_us(20000);
    CHECK(atomic_load(&waiter_result) == -1, "the waiter returned while the entry was pending");
    choice_abandon(&small, e);
    pthread_join(th, NULL);
    CHECK(atomic_load(&waiter_result) == CHOICE_CLAIMED, "the waiter got %d, not the abandoned claim",
          atomic_load(&waiter_result));
    CHECK(choice_claim(&small, &k, &e) == CHOICE_HIT, "the waiter's choice is found");
    CHECK(((const value *)choice_value(e))->v == 77, "the waiter's value");
    CHECK(choice_count(&small) == 1, "%d entries", choice_count(&small));
}

/* At most max_entries; a failed allocation is "full" too, and later ones succeed. */
static void test_full(void)
{
    const choice_entry *e;
    key k1 = {1, 0}, k2 = {2, 0}, k3 = {3, 0};
    value v = {5};
    CHECK(choice_put(&small, &k1, &v) == 0, "a new key is put");
    CHECK(choice_put(&small, &k1, &v) == 1, "a key put twice is there already");
    atomic_store(&fail_calloc, 1);
    CHECK(choice_claim(&small, &k2, &e) == CHOICE_FULL && e == NULL, "a failed allocation answers full");
    CHECK(choice_claim(&small, &k2, &e) == CHOICE_CLAIMED,
          "the next allocation succeeds"); /* the table is at 3 of 3 now */
    CHECK(choice_claim(&small, &k3, &e) == CHOICE_FULL && e == NULL, "the table holds at most 3");
    CHECK(choice_put(&small, &k3, &v) == -1, "put into a full table");
}

static void count_entry(const void *k, const void *v, void *arg)
{
    (void)k;
    (void)v;
    (*(int *)arg)++;
}

/* choice_each sees settled entries only; entries keep their address and
 * value while the table grows past its first allocations. */
static void test_each_and_stable(void)
{
    choice_table t = CHOICE_TABLE_INIT(sizeof(key), sizeof(value), 4096, t_calloc, t_realloc, free);
    key k0 = {0, 0};
    value v0 = {42};
    const choice_entry *first, *pending;
    CHECK(choice_claim(&t, &k0, &first) == CHOICE_CLAIMED, "a new key is claimed");
    choice_settle(&t, first, &v0);
    key kp = {-1, -1};
    CHECK(choice_claim(&t, &kp, &pending) == CHOICE_CLAIMED, "a second key is claimed");
    for (long i = 1; i < 1000; i++) {
        key k = {i, i};
        value v = {i};
        CHECK(choice_put(&t, &k, &v) == 0, "key %ld is put", i);
    }
    const choice_entry *again;
    CHECK(choice_claim(&t, &k0, &again) == CHOICE_HIT && again == first,
          "the first entry found at its address after growth");
    CHECK(((const value *)choice_value(first))->v == 42, "the first entry keeps its value");
    int n = 0;
    CHECK(choice_each(&t, count_entry, &n) == 1000 && n == 1000, "%d settled entries seen",
          n); /* the pending one not among them */
    CHECK(choice_count(&t) == 1001, "%d entries with the pending one", choice_count(&t));
    choice_abandon(&t, pending);
    CHECK(choice_count(&t) == 1000, "%d entries after the abandon", choice_count(&t));
    /* a test's table is freed by hand: the module's live as long as the process */
    for (int i = 0; i < t.n; i++) free(t.entries[i]);
    free(t.entries);
}

int main(void)
{
    test_once_per_key();
    test_abandon();
    test_full();
    test_each_and_stable();
    return soft_check_exit("choice table");
}
