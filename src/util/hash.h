/*
 * hash.h - 64-bit FNV-1a of a byte string, for hash tables and file names
 * (never for trust: a match is always checked byte for byte). Header-only,
 * so that the CUDA module, which links nothing of the core, shares it with
 * the oneDNN backend.
 */
#ifndef LECTOR_UTIL_HASH_H
#define LECTOR_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t lector__fnv1a64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ull; /* FNV's offset basis and prime for 64 bits */
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#endif
