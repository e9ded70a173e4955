/*
 * onednn_cache.h - what the oneDNN backend keeps across the plans of a
 * model (internal): kernels (primitive descriptors and their primitives)
 * keyed by what they compute, and constants converted once (weights
 * reordered into a primitive's layout, BatchNorm and per-channel affine ops
 * folded in).
 *
 * A plan is compiled per input shape, but most of what it needs does not
 * depend on the shape, or depends on it through a handful of values: a
 * second plan of the same shape, or of a shape whose layers partly match
 * (the same batch, the same width), finds its primitives here instead of
 * creating them again (oneDNN JIT-compiles code for each), and every plan
 * reads the same converted weights.
 *
 * Keys are byte strings: the operation descriptor as oneDNN's *_desc_init
 * fills it (every field, memory descriptors included), the post-ops of the
 * attribute, the OpenMP thread count the primitive is created for. Two keys
 * are equal only when the bytes are, so a hit is the same computation.
 *
 * Kernels are kept in an LRU of DN_KERNEL_CACHE entries; an entry a plan
 * still uses stays alive (reference counted) after it leaves the LRU.
 * Constants stay until the backend is freed: there are as many as the
 * model's weights times the few layouts oneDNN chooses for them.
 * kernels_compiled counts the primitives created (cache misses).
 * Thread-safe.
 */
#ifndef LECTOR_ONEDNN_CACHE_H
#define LECTOR_ONEDNN_CACHE_H

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define DN_KERNEL_CACHE 4096 /* kernels kept per model (LRU) */

typedef struct dn_key {
    unsigned char *buf;
    size_t len, cap;
    int fail; /* out of memory: the key matches nothing and is not stored */
} dn_key;

void dn_key_init(dn_key *k, const char *tag);
void dn_key_add(dn_key *k, const void *bytes, size_t n);
/* An attribute's post-ops and scratchpad mode (NULL: the default attribute). */
void dn_key_attr(dn_key *k, const_dnnl_primitive_attr_t attr);
void dn_key_free(dn_key *k);

/* An entry's own copy of its key, with the key's hash: kernels and
 * constants are stored and looked up by the same code. */
typedef struct dn_stored_key {
    uint64_t hash;
    unsigned char *bytes;
    size_t len;
} dn_stored_key;

typedef struct dn_kernel {
    dn_stored_key key;
    dnnl_primitive_desc_t pd; /* owned */
    dnnl_primitive_t prim;    /* owned; made on first use */
    int refs;                 /* the LRU's + plans' */
    int in_lru;
    uint64_t tick;
    struct dn_kernel *next; /* hash chain */
} dn_kernel;

typedef struct dn_const {
    dn_stored_key key;
    void *data[2]; /* owned (lector__aligned_alloc): e.g. weights, bias */
    struct dn_const *next;
} dn_const;

typedef struct dn_caches {
    pthread_mutex_t lock;
    dn_kernel **kbuckets;
    int n_kbuckets, n_kernels;
    dn_const **cbuckets;
    int n_cbuckets, n_consts;
    uint64_t tick;
    uint64_t kernels_compiled; /* primitives created */
} dn_caches;

int dn_caches_init(dn_caches *c);
void dn_caches_destroy(dn_caches *c);

/* A kernel with this key, referenced for the caller; NULL if none. */
dn_kernel *dn_kernel_find(dn_caches *c, const dn_key *k);
/* Stores `pd` (taken) under the key and returns its entry, referenced for
 * the caller; when another thread stored the key first, `pd` is destroyed
 * and that entry returned. NULL (pd destroyed) when out of memory. */
dn_kernel *dn_kernel_insert(dn_caches *c, const dn_key *k, dnnl_primitive_desc_t pd);
/* The entry's primitive, created on first use (the OpenMP thread count of
 * the caller is the one its key names). NULL when oneDNN fails. */
dnnl_primitive_t dn_kernel_prim(dn_caches *c, dn_kernel *e);
/* Takes one more reference. */
void dn_kernel_ref(dn_caches *c, dn_kernel *e);
/* Drops a reference; the entry is freed when it has left the LRU and was the last. */
void dn_kernel_release(dn_caches *c, dn_kernel *e);
/* Counts a primitive created outside the cache. */
void dn_kernels_count(dn_caches *c);
uint64_t dn_kernels_compiled(dn_caches *c);

/* Converted constant buffers stored under the key; NULL if none. Valid
 * until dn_caches_destroy. */
const dn_const *dn_const_find(dn_caches *c, const dn_key *k);
/* Stores d0 and d1 (taken; either may be NULL) under the key; returns the
 * entry (the first one stored when another thread raced: d0 and d1 are
 * then freed). NULL (both freed) when out of memory. */
const dn_const *dn_const_insert(dn_caches *c, const dn_key *k, void *d0, void *d1);

#endif
