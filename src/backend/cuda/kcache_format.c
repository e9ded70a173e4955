/* kcache_format.c - reading and writing the kernel cache's file format
 * (kcache_format.h). */
#include "backend/cuda/kcache_format.h"

#include <string.h>

#include "util/hash.h"

uint64_t kcache_hash(const char *key, size_t key_len) { return lector__fnv1a64(key, key_len); }

void kcache_length(uint8_t *out, uint64_t n)
{
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(n >> (8 * i));
}

uint64_t kcache_get64(const uint8_t *p)
{
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)p[i] << (8 * i);
    return n;
}

void kcache_header(uint8_t *out, size_t key_len)
{
    memcpy(out, KCACHE_MAGIC, KCACHE_MAGIC_LEN);
    kcache_length(out + KCACHE_MAGIC_LEN, key_len);
}

int kcache_parse(const uint8_t *file, size_t file_len, const char *key, size_t key_len, const uint8_t **image,
                 size_t *image_len)
{
    size_t at = KCACHE_MAGIC_LEN + 8;
    if (file_len < at || memcmp(file, KCACHE_MAGIC, KCACHE_MAGIC_LEN)) return -1;
    /* every length is checked against what is left before it is used */
    if (kcache_get64(file + KCACHE_MAGIC_LEN) != key_len || file_len - at < key_len) return -1;
    if (memcmp(file + at, key, key_len)) return -1;
    at += key_len;
    if (file_len - at < 8) return -1;
    uint64_t n = kcache_get64(file + at);
    at += 8;
    if (n == 0 || n != file_len - at) return -1;
    *image = file + at;
    *image_len = (size_t)n;
    return 0;
}

void kcache_gemm_put(uint8_t *out, const kcache_gemm_rec *r)
{
    for (int i = 0; i < KCACHE_GEMM_KEY; i++) kcache_length(out + 8 * i, (uint64_t)(i ? r->key[i] : 0));
    kcache_length(out + 8 * KCACHE_GEMM_KEY, (uint64_t)r->state);
    memcpy(out + 8 * (KCACHE_GEMM_KEY + 1), r->algo, KCACHE_GEMM_ALGO);
}

static int pow2_upto(uint64_t v, uint64_t max) { return v && v <= max && !(v & (v - 1)); }

int kcache_gemm_get(const uint8_t *in, kcache_gemm_rec *r)
{
    uint64_t w[KCACHE_GEMM_KEY + 1];
    for (int i = 0; i <= KCACHE_GEMM_KEY; i++) w[i] = kcache_get64(in + 8 * i);
    /* flags are 0 or 1, sizes 1 .. 2^30, alignments powers of two up to 256 */
    if (w[0] || w[1] > 1 || w[2] > 1 || w[3] > 1 || w[4] > 1 || w[12] > 1 || w[13]) return -1;
    for (int i = 5; i <= 8; i++)
        if (w[i] < 1 || w[i] > ((uint64_t)1 << 30)) return -1;
    for (int i = 9; i <= 11; i++)
        if (!pow2_upto(w[i], 256)) return -1;
    if (w[KCACHE_GEMM_KEY] != KCACHE_GEMM_CHOSEN && w[KCACHE_GEMM_KEY] != KCACHE_GEMM_NONE) return -1;
    for (int i = 0; i < KCACHE_GEMM_KEY; i++) r->key[i] = (int32_t)w[i];
    r->state = (int32_t)w[KCACHE_GEMM_KEY];
    memcpy(r->algo, in + 8 * (KCACHE_GEMM_KEY + 1), KCACHE_GEMM_ALGO);
    return 0;
}
