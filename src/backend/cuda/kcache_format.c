/* kcache_format.c - reading and writing the kernel cache's file format
 * (kcache_format.h). */
#include "backend/cuda/kcache_format.h"

#include <stdio.h>
#include <string.h>

#include "util/hash.h"

uint64_t kcache_hash(const char *key, size_t key_len) { return lector__fnv1a64(key, key_len); }

void kcache_length(uint8_t *out, uint64_t n)
{
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(n >> (8 * i));
}

static uint64_t read_length(const uint8_t *p)
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
    if (read_length(file + KCACHE_MAGIC_LEN) != key_len || file_len - at < key_len) return -1;
    if (memcmp(file + at, key, key_len)) return -1;
    at += key_len;
    if (file_len - at < 8) return -1;
    uint64_t n = read_length(file + at);
    at += 8;
    if (n == 0 || n != file_len - at) return -1;
    *image = file + at;
    *image_len = (size_t)n;
    return 0;
}

/* "NVRTC " digits "." digits, then the end of the text or a newline */
int kcache_nvrtc_line(const char *text, size_t text_len, char *out, size_t out_len)
{
    static const char head[] = "NVRTC ";
    size_t n = sizeof head - 1, dots = 0, digits = 0;
    if (text_len < n || memcmp(text, head, n)) return -1;
    for (; n < text_len && text[n] != '\n' && text[n] != '\r'; n++) {
        if (text[n] == '.' && digits && !dots) {
            dots++;
            digits = 0;
        } else if (text[n] >= '0' && text[n] <= '9') {
            digits++;
        } else {
            return -1;
        }
    }
    if (dots != 1 || !digits || n + 1 > out_len) return -1;
    memcpy(out, text, n);
    out[n] = 0;
    return 0;
}

int kcache_key_prefix(const uint8_t *file, size_t file_len, const char **key, size_t *avail, uint64_t *key_len)
{
    if (file_len < KCACHE_MAGIC_LEN + 8 || memcmp(file, KCACHE_MAGIC, KCACHE_MAGIC_LEN)) return -1;
    uint64_t n = read_length(file + KCACHE_MAGIC_LEN);
    size_t have = file_len - KCACHE_MAGIC_LEN - 8;
    *key = (const char *)file + KCACHE_MAGIC_LEN + 8;
    *avail = n < have ? (size_t)n : have;
    *key_len = n;
    return 0;
}

int kcache_read_nvrtc_file(const char *dir, char *out, size_t out_len)
{
    char path[4400], text[64];
    snprintf(path, sizeof path, "%.4096s/NVRTC", dir);
    FILE *f = fopen(path, "rbe");
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    return kcache_nvrtc_line(text, n, out, out_len);
}
