/* onednn_cache.c - kernels and converted constants shared by the plans of a model (onednn_cache.h). */
#include "backend/cpu/onednn/onednn_cache.h"

#include <string.h>

#include "util/hash.h"
#include "util/util.h"

/* ---- keys -------------------------------------------------------------------- */

void dn_key_init(dn_key *k, const char *tag)
{
    memset(k, 0, sizeof *k);
    dn_key_add(k, tag, strlen(tag) + 1);
}

void dn_key_add(dn_key *k, const void *bytes, size_t n)
{
    if (k->fail || !n) return;
    if (k->len + n > k->cap) {
        size_t cap = k->cap ? k->cap : 1024;
        while (cap < k->len + n) cap *= 2;
        unsigned char *nb = lector__realloc(k->buf, cap);
        if (!nb) {
            k->fail = 1;
            return;
        }
        k->buf = nb;
        k->cap = cap;
    }
    memcpy(k->buf + k->len, bytes, n);
    k->len += n;
}

void dn_key_attr(dn_key *k, const_dnnl_primitive_attr_t at)
{
    int has = at != NULL;
    dn_key_add(k, &has, sizeof has);
    if (!at) return;
    dnnl_scratchpad_mode_t mode = dnnl_scratchpad_mode_library;
    dnnl_primitive_attr_get_scratchpad_mode(at, &mode);
    dn_key_add(k, &mode, sizeof mode);
    const_dnnl_post_ops_t po = NULL;
    if (dnnl_primitive_attr_get_post_ops(at, &po) != dnnl_success || !po) return;
    int n = dnnl_post_ops_len(po);
    dn_key_add(k, &n, sizeof n);
    for (int i = 0; i < n; i++) {
        dnnl_primitive_kind_t kind = dnnl_post_ops_get_kind(po, i);
        dn_key_add(k, &kind, sizeof kind);
        if (kind == dnnl_eltwise) {
            float scale = 0, a = 0, b = 0;
            dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
            dnnl_post_ops_get_params_eltwise(po, i, &scale, &alg, &a, &b);
            float v[3] = {scale, a, b};
            dn_key_add(k, &alg, sizeof alg);
            dn_key_add(k, v, sizeof v);
        } else if (kind == dnnl_binary) {
            dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
            const dnnl_memory_desc_t *md = NULL;
            dnnl_post_ops_get_params_binary(po, i, &alg, &md);
            dn_key_add(k, &alg, sizeof alg);
            if (md) dn_key_add(k, md, sizeof *md);
        } else {
            k->fail = 1; /* a post-op this key cannot describe: never shared */
        }
    }
}

void dn_key_free(dn_key *k)
{
    lector__free(k->buf);
    memset(k, 0, sizeof *k);
}

static uint64_t key_hash(const dn_key *k) { return lector__fnv1a64(k->buf, k->len); }

/* Stores a copy of k and its hash in a new entry's key; -1 out of memory. */
static int key_store(dn_stored_key *s, const dn_key *k)
{
    s->bytes = lector__malloc(k->len ? k->len : 1);
    if (!s->bytes) return -1;
    memcpy(s->bytes, k->buf, k->len);
    s->hash = key_hash(k);
    s->len = k->len;
    return 0;
}

/* Is the stored key s the key k (of hash h)? */
static int key_is(const dn_stored_key *s, const dn_key *k, uint64_t h)
{
    return s->hash == h && s->len == k->len && !memcmp(s->bytes, k->buf, k->len);
}

/* ---- tables ------------------------------------------------------------------- */

int dn_caches_init(dn_caches *c)
{
    memset(c, 0, sizeof *c);
    c->n_kbuckets = 2 * DN_KERNEL_CACHE;
    c->n_cbuckets = 1024;
    c->kbuckets = lector__calloc((size_t)c->n_kbuckets, sizeof *c->kbuckets);
    c->cbuckets = lector__calloc((size_t)c->n_cbuckets, sizeof *c->cbuckets);
    if (!c->kbuckets || !c->cbuckets) {
        lector__free(c->kbuckets);
        lector__free(c->cbuckets);
        return -1;
    }
    pthread_mutex_init(&c->lock, NULL);
    return 0;
}

static void kernel_free(dn_kernel *e)
{
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->pd) dnnl_primitive_desc_destroy(e->pd);
    lector__free(e->key.bytes);
    lector__free(e);
}

void dn_caches_destroy(dn_caches *c)
{
    if (!c->kbuckets) return;
    /* plans are freed before their backend: every entry left is the LRU's only */
    for (int i = 0; i < c->n_kbuckets; i++)
        for (dn_kernel *e = c->kbuckets[i], *n; e; e = n) {
            n = e->next;
            kernel_free(e);
        }
    for (int i = 0; i < c->n_cbuckets; i++)
        for (dn_const *e = c->cbuckets[i], *n; e; e = n) {
            n = e->next;
            lector__free(e->data[0]);
            lector__free(e->data[1]);
            lector__free(e->key.bytes);
            lector__free(e);
        }
    lector__free(c->kbuckets);
    lector__free(c->cbuckets);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof *c);
}

static dn_kernel *kernel_lookup(dn_caches *c, const dn_key *k, uint64_t h)
{
    for (dn_kernel *e = c->kbuckets[h % (uint64_t)c->n_kbuckets]; e; e = e->next)
        if (key_is(&e->key, k, h)) return e;
    return NULL;
}

dn_kernel *dn_kernel_find(dn_caches *c, const dn_key *k)
{
    if (k->fail) return NULL;
    uint64_t h = key_hash(k);
    pthread_mutex_lock(&c->lock);
    dn_kernel *e = kernel_lookup(c, k, h);
    if (e) {
        e->refs++;
        e->tick = ++c->tick;
    }
    pthread_mutex_unlock(&c->lock);
    return e;
}

/* Takes the least recently used entry out of the LRU (under the lock);
 * returns it when nobody holds it any more, for the caller to free. */
static dn_kernel *evict_one(dn_caches *c)
{
    dn_kernel *lru = NULL, **lru_link = NULL;
    for (int i = 0; i < c->n_kbuckets; i++)
        for (dn_kernel **link = &c->kbuckets[i]; *link; link = &(*link)->next)
            if (!lru || (*link)->tick < lru->tick) {
                lru = *link;
                lru_link = link;
            }
    if (!lru) return NULL;
    *lru_link = lru->next;
    lru->next = NULL;
    lru->in_lru = 0;
    c->n_kernels--;
    return --lru->refs == 0 ? lru : NULL;
}

dn_kernel *dn_kernel_insert(dn_caches *c, const dn_key *k, dnnl_primitive_desc_t pd)
{
    dn_kernel *e = k->fail ? NULL : lector__calloc(1, sizeof *e);
    if (!e || key_store(&e->key, k)) {
        lector__free(e);
        dnnl_primitive_desc_destroy(pd);
        return NULL;
    }
    e->pd = pd;
    e->refs = 2; /* the LRU's and the caller's */
    e->in_lru = 1;
    dn_kernel *dead = NULL;
    pthread_mutex_lock(&c->lock);
    dn_kernel *old = kernel_lookup(c, k, e->key.hash);
    if (old) {
        old->refs++;
        old->tick = ++c->tick;
        pthread_mutex_unlock(&c->lock);
        kernel_free(e);
        return old;
    }
    if (c->n_kernels >= DN_KERNEL_CACHE) dead = evict_one(c);
    e->tick = ++c->tick;
    dn_kernel **b = &c->kbuckets[e->key.hash % (uint64_t)c->n_kbuckets];
    e->next = *b;
    *b = e;
    c->n_kernels++;
    pthread_mutex_unlock(&c->lock);
    if (dead) kernel_free(dead);
    return e;
}

dnnl_primitive_t dn_kernel_prim(dn_caches *c, dn_kernel *e)
{
    pthread_mutex_lock(&c->lock);
    dnnl_primitive_t p = e->prim;
    pthread_mutex_unlock(&c->lock);
    if (p) return p;
    /* created outside the lock: JIT compilation of other kernels goes on meanwhile */
    if (dnnl_primitive_create(&p, e->pd) != dnnl_success) return NULL;
    pthread_mutex_lock(&c->lock);
    c->kernels_compiled++;
    dnnl_primitive_t won = e->prim;
    if (!won) e->prim = p;
    pthread_mutex_unlock(&c->lock);
    if (won) { /* another plan made it first */
        dnnl_primitive_destroy(p);
        p = won;
    }
    return p;
}

void dn_kernel_ref(dn_caches *c, dn_kernel *e)
{
    pthread_mutex_lock(&c->lock);
    e->refs++;
    pthread_mutex_unlock(&c->lock);
}

void dn_kernel_release(dn_caches *c, dn_kernel *e)
{
    if (!e) return;
    pthread_mutex_lock(&c->lock);
    int last = --e->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (last) kernel_free(e);
}

void dn_kernels_count(dn_caches *c)
{
    pthread_mutex_lock(&c->lock);
    c->kernels_compiled++;
    pthread_mutex_unlock(&c->lock);
}

uint64_t dn_kernels_compiled(dn_caches *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t n = c->kernels_compiled;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ---- constants ----------------------------------------------------------------- */

static dn_const *const_lookup(dn_caches *c, const dn_key *k, uint64_t h)
{
    for (dn_const *e = c->cbuckets[h % (uint64_t)c->n_cbuckets]; e; e = e->next)
        if (key_is(&e->key, k, h)) return e;
    return NULL;
}

const dn_const *dn_const_find(dn_caches *c, const dn_key *k)
{
    if (k->fail) return NULL;
    uint64_t h = key_hash(k);
    pthread_mutex_lock(&c->lock);
    dn_const *e = const_lookup(c, k, h);
    pthread_mutex_unlock(&c->lock);
    return e;
}

const dn_const *dn_const_insert(dn_caches *c, const dn_key *k, void *d0, void *d1)
{
    dn_const *e = k->fail ? NULL : lector__calloc(1, sizeof *e);
    if (!e || key_store(&e->key, k)) {
        lector__free(e);
        lector__free(d0);
        lector__free(d1);
        return NULL;
    }
    e->data[0] = d0;
    e->data[1] = d1;
    pthread_mutex_lock(&c->lock);
    dn_const *old = const_lookup(c, k, e->key.hash);
    if (!old) {
        dn_const **b = &c->cbuckets[e->key.hash % (uint64_t)c->n_cbuckets];
        e->next = *b;
        *b = e;
        c->n_consts++;
    }
    pthread_mutex_unlock(&c->lock);
    if (old) {
        lector__free(d0);
        lector__free(d1);
        lector__free(e->key.bytes);
        lector__free(e);
        return old;
    }
    return e;
}
