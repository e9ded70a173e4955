/*
 * fuzz_kcache.c - libFuzzer over the CUDA backend's kernel cache files
 * (src/backend/cuda/kcache_format.c): a file in the cache directory is
 * bytes another process wrote, or anyone who can write there. Input: the
 * first byte is the key's length k, the next k bytes the key, the rest the
 * file. A file built from that key and the rest as its image must parse to
 * exactly that image; the raw bytes must parse only to an image inside them.
 * The rest is also read as records of cuBLASLt's choices file (an image of
 * src/backend/cuda/cuda_gemm.c): a record taken as in range writes back as
 * the same bytes, so no field is read wider or looser than it is written;
 * and a record made in range from the input's bytes reads back as itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/kcache_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    size_t k = data[0];
    if (k > size - 1) k = size - 1;
    const char *key = (const char *)data + 1;
    const uint8_t *rest = data + 1 + k;
    size_t n = size - 1 - k;

    const uint8_t *image = NULL;
    size_t image_len = 0;
    if (!kcache_parse(rest, n, key, k, &image, &image_len) && (image < rest || image + image_len != rest + n)) abort();

    /* the round trip: what the store writes reads back as the same image */
    size_t file_len = KCACHE_MAGIC_LEN + 8 + k + 8 + n;
    uint8_t *file = malloc(file_len);
    if (!file) return 0;
    kcache_header(file, k);
    memcpy(file + KCACHE_MAGIC_LEN + 8, key, k);
    kcache_length(file + KCACHE_MAGIC_LEN + 8 + k, n);
    memcpy(file + KCACHE_MAGIC_LEN + 16 + k, rest, n);
    int st = kcache_parse(file, file_len, key, k, &image, &image_len);
    if (n == 0 ? !st : st || image_len != n || memcmp(image, rest, n)) abort();
    /* a file cut short is never taken */
    if (file_len > 1 && !kcache_parse(file, file_len - 1, key, k, &image, &image_len)) abort();
    free(file);

    for (size_t off = 0; off + KCACHE_GEMM_REC <= n; off += KCACHE_GEMM_REC) {
        kcache_gemm_rec r;
        uint8_t back[KCACHE_GEMM_REC];
        if (kcache_gemm_get(rest + off, &r)) continue;
        if (r.state != KCACHE_GEMM_CHOSEN && r.state != KCACHE_GEMM_NONE) abort();
        kcache_gemm_put(back, &r);
        if (memcmp(back, rest + off, KCACHE_GEMM_REC)) abort();
    }
    kcache_gemm_rec r = {.state = data[0] & 1 ? KCACHE_GEMM_CHOSEN : KCACHE_GEMM_NONE}, got;
    uint8_t rec[KCACHE_GEMM_REC];
    for (int i = 1; i < KCACHE_GEMM_KEY - 1; i++) {
        uint32_t b = i < (int)size ? data[i] : 0;
        r.key[i] = i <= 4 || i == 12 ? (int32_t)(b & 1)
                   : i <= 8          ? (int32_t)(1 + (b << 22 | b << 12 | b))
                                     : (int32_t)1 << (b % 9);
    }
    for (int i = 0; i < KCACHE_GEMM_ALGO; i++) r.algo[i] = (size_t)i < n ? rest[i] : (uint8_t)i;
    kcache_gemm_put(rec, &r);
    if (kcache_gemm_get(rec, &got) || memcmp(&got, &r, sizeof r)) abort();
    return 0;
}
