/*
 * fuzz_kcache.c - libFuzzer over the CUDA backend's kernel cache files
 * (src/backend/cuda/kcache_format.c): a file in the cache directory is
 * bytes another process wrote, or anyone who can write there. Input: the
 * first byte is the key's length k, the next k bytes the key, the rest the
 * file. A file built from that key and the rest as its image must parse to
 * exactly that image; the raw bytes must parse only to an image inside them.
 * The whole input is also read as a shipped directory's file NVRTC: a line
 * taken is a prefix of the input that names a version.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/kcache_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char line[24];
    if (!kcache_nvrtc_line((const char *)data, size, line, sizeof line)) {
        size_t l = strlen(line);
        if (l < 9 || l > size || memcmp(line, data, l) || memcmp(line, "NVRTC ", 6) || !strchr(line, '.')) abort();
        if (l < size && data[l] != '\n' && data[l] != '\r') abort();
    }
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
    return 0;
}
