/* utf8.c - see utf8.h. */
#include "util/utf8.h"

#include <stdint.h>
#include <string.h>

#include "util/util.h"

/* Length of the well-formed sequence at s (1..4), or 0 when ill-formed; then
 * *bad receives the length of its maximal subpart (1..3): the bytes that
 * start a valid sequence but end too early, replaced by one U+FFFD. Table 3-7
 * of the Unicode standard gives the valid second bytes of each lead. */
static size_t seq_len(const unsigned char *s, size_t *bad)
{
    unsigned c = s[0];
    *bad = 1;
    if (c < 0x80) return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0; /* no overlong forms */
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90; /* no overlong forms */
        if (c == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
    } else
        return 0; /* 80..C1, F5..FF never start a sequence */
    for (size_t i = 1; i < n; i++) {
        unsigned b = s[i];
        if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) { /* NUL stops here too */
            *bad = i;
            return 0;
        }
    }
    return n;
}

int lector__utf8_valid(const char *s)
{
    if (!s) return 1;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t bad, n = seq_len(p, &bad);
        if (!n) return 0;
        p += n;
    }
    return 1;
}

char *lector__utf8_repair(const char *s, size_t *replaced)
{
    if (replaced) *replaced = 0;
    if (!s) return NULL;
    /* at most 3 output bytes per input byte (one U+FFFD per ill-formed byte) */
    size_t len = strlen(s), cap;
    if (lector__mul_size(len, 3, &cap) || cap == SIZE_MAX) return NULL;
    char *out = lector__malloc(cap + 1);
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, count = 0;
    while (*p) {
        size_t bad, n = seq_len(p, &bad);
        if (n) {
            memcpy(out + o, p, n);
            o += n;
            p += n;
            continue;
        }
        memcpy(out + o, "\xEF\xBF\xBD", 3);
        o += 3;
        p += bad;
        count++;
    }
    out[o] = '\0';
    if (replaced) *replaced = count;
    return out;
}
