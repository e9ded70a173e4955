/* ldcache.c - read /etc/ld.so.cache without asking ldconfig.
 *
 * Formats (glibc sysdeps/generic/dl-cache.h):
 *   old: "ld.so-1.7.0", u32 nlibs, nlibs x {i32 flags; u32 key; u32 value},
 *        strings after the entries; offsets relative to the end of entries.
 *        A new-format block may follow, aligned to 8 ("compat" format).
 *   new: "glibc-ld.so.cache" "1.1", u32 nlibs, u32 len_strings, u8 flags,
 *        3 pad, u32 extension_offset, 3 x u32 unused (48 bytes), then
 *        nlibs x {i32 flags; u32 key; u32 value; u32 osversion; u64 hwcap},
 *        offsets relative to the start of the new header.
 * glibc uses the new block when present; so do we. The file comes from the
 * examined tree and is untrusted: every offset is bounds-checked. */
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"

#define OLD_MAGIC       "ld.so-1.7.0"
#define NEW_MAGIC       "glibc-ld.so.cache1.1"
#define HWCAP_EXTENSION (1ULL << 62)

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* String at base+off within [base, end), NUL-terminated; NULL if out of bounds. */
static const char *str_at(const uint8_t *base, size_t avail, uint32_t off)
{
    if (off >= avail) return NULL;
    const char *s = (const char *)base + off;
    if (!memchr(s, 0, avail - off)) return NULL;
    return s;
}

static int add(gpuenv_ldcache *c, size_t *cap, const char *k, const char *v, int32_t flags, uint64_t hwcap)
{
    if (c->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        gpuenv_ldcache_entry *e = realloc(c->e, nc * sizeof *e);
        if (!e) return -2;
        c->e = e;
        *cap = nc;
    }
    gpuenv_ldcache_entry *e = &c->e[c->n];
    e->key = strdup(k);
    e->value = strdup(v);
    if (!e->key || !e->value) {
        free(e->key);
        free(e->value);
        return -2;
    }
    e->flags = flags;
    e->hwcap = hwcap;
    c->n++;
    return 0;
}

static int parse_new(const uint8_t *d, size_t size, gpuenv_ldcache *c, size_t *cap)
{
    if (size < 48 || memcmp(d, NEW_MAGIC, sizeof NEW_MAGIC - 1) != 0) return -1;
    uint32_t nlibs = rd32(d + 20);
    if (d[28] == 3) /* big-endian cache: not for this machine */
        return -1;
    if ((size - 48) / 24 < nlibs) return -1;
    for (uint32_t i = 0; i < nlibs; i++) {
        const uint8_t *e = d + 48 + (size_t)i * 24;
        const char *k = str_at(d, size, rd32(e + 4));
        const char *v = str_at(d, size, rd32(e + 8));
        if (!k || !v) continue; /* skip a damaged entry, keep the rest usable */
        int rc = add(c, cap, k, v, (int32_t)rd32(e), rd64(e + 16));
        if (rc) return rc;
    }
    c->has_new = 1;
    return 0;
}

int gpuenv_ldcache_parse(const uint8_t *data, size_t size, gpuenv_ldcache *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    if (size >= sizeof OLD_MAGIC - 1 + 4 && memcmp(data, OLD_MAGIC, sizeof OLD_MAGIC - 1) == 0) {
        size_t hdr = sizeof OLD_MAGIC - 1 + 1; /* magic is 11 chars, padded to 12 */
        if (size < hdr + 4) return -1;
        uint32_t nlibs = rd32(data + hdr);
        size_t ents = hdr + 4;
        if ((size - ents) / 12 < nlibs) return -1;
        size_t strs = ents + (size_t)nlibs * 12;
        out->has_old = 1;
        /* compat format: a new block follows, aligned to 8 */
        size_t nb = (strs + 7) & ~(size_t)7;
        if (nb + 48 <= size && memcmp(data + nb, NEW_MAGIC, sizeof NEW_MAGIC - 1) == 0) {
            int rc = parse_new(data + nb, size - nb, out, &cap);
            if (rc == -2) {
                gpuenv_ldcache_free(out);
                return -2;
            }
            if (rc == 0) {
                out->has_old = 1;
                return 0;
            }
        }
        for (uint32_t i = 0; i < nlibs; i++) {
            const uint8_t *e = data + ents + (size_t)i * 12;
            const char *k = str_at(data + strs, size - strs, rd32(e + 4));
            const char *v = str_at(data + strs, size - strs, rd32(e + 8));
            if (!k || !v) continue;
            if (add(out, &cap, k, v, (int32_t)rd32(e), 0)) {
                gpuenv_ldcache_free(out);
                return -2;
            }
        }
        return 0;
    }
    int rc = parse_new(data, size, out, &cap);
    if (rc) gpuenv_ldcache_free(out);
    return rc;
}

const char *gpuenv_ldcache_lookup(const gpuenv_ldcache *c, const char *name, int32_t flags)
{
    for (size_t i = 0; i < c->n; i++) {
        const gpuenv_ldcache_entry *e = &c->e[i];
        if (strcmp(e->key, name) != 0) continue;
        if (flags && e->flags != flags) continue;
        /* glibc-hwcaps entries live in subdirectories chosen by CPU level;
           the baseline entry (hwcap 0) is what every CPU can load. */
        if (e->hwcap & HWCAP_EXTENSION) continue;
        return e->value;
    }
    return NULL;
}

void gpuenv_ldcache_free(gpuenv_ldcache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->e[i].key);
        free(c->e[i].value);
    }
    free(c->e);
    memset(c, 0, sizeof *c);
}
