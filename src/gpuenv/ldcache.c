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
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

#define OLD_MAGIC       "ld.so-1.7.0"
#define NEW_MAGIC       "glibc-ld.so.cache1.1"
#define HWCAP_EXTENSION (1ULL << 62)
#define EXT_MAGIC       0xEAA42174u
#define EXT_TAG_HWCAPS  1u

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

static int add(gpuenv_ldcache *c, size_t *cap, const char *k, const char *v, int32_t flags, uint64_t hwcap,
               const char *hwcaps)
{
    if (lector__reserve(&c->e, cap, c->n + 1, sizeof *c->e)) return -2;
    gpuenv_ldcache_entry *e = &c->e[c->n];
    e->key = lector__strdup(k);
    e->value = lector__strdup(v);
    e->hwcaps = hwcaps ? lector__strdup(hwcaps) : NULL;
    if (!e->key || !e->value || (hwcaps && !e->hwcaps)) {
        lector__free(e->key);
        lector__free(e->value);
        lector__free(e->hwcaps);
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
    /* the glibc-hwcaps extension: subdirectory names the entries index */
    const uint8_t *names = NULL;
    uint32_t n_names = 0, ext = rd32(d + 32);
    if (ext && ext <= size - 8 && rd32(d + ext) == EXT_MAGIC) {
        uint32_t count = rd32(d + ext + 4);
        for (uint32_t i = 0; i < count && i < 64; i++) {
            size_t sec = (size_t)ext + 8 + (size_t)i * 16;
            if (sec + 16 > size) break;
            uint32_t tag = rd32(d + sec), off = rd32(d + sec + 8), sz = rd32(d + sec + 12);
            if (tag == EXT_TAG_HWCAPS && off <= size && sz <= size - off) {
                names = d + off;
                n_names = sz / 4;
            }
        }
    }
    for (uint32_t i = 0; i < nlibs; i++) {
        const uint8_t *e = d + 48 + (size_t)i * 24;
        const char *k = str_at(d, size, rd32(e + 4));
        const char *v = str_at(d, size, rd32(e + 8));
        if (!k || !v) continue; /* skip a damaged entry, keep the rest usable */
        uint64_t hwcap = rd64(e + 16);
        const char *sub = NULL;
        if (hwcap & HWCAP_EXTENSION) {
            uint32_t idx = (uint32_t)hwcap;
            sub = idx < n_names ? str_at(d, size, rd32(names + (size_t)idx * 4)) : NULL;
            if (!sub) sub = "?"; /* names no subdirectory this cache lists: never usable */
        }
        int rc = add(c, cap, k, v, (int32_t)rd32(e), hwcap, sub);
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
            if (add(out, &cap, k, v, (int32_t)rd32(e), 0, NULL)) {
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

const char *gpuenv_ldcache_lookup(const gpuenv_ldcache *c, const char *name, const gpuenv_strv *hwcaps)
{
    /* glibc's search_cache: entries of one name are sorted with the
       glibc-hwcaps ones first; among those the best-priority supported
       subdirectory wins, else the first plain entry of this ABI does. */
    const char *best = NULL;
    size_t best_prio = 0;
    for (size_t i = 0; i < c->n; i++) {
        const gpuenv_ldcache_entry *e = &c->e[i];
        if (strcmp(e->key, name) != 0 || e->flags != GPUENV_LDCACHE_X86_64) continue;
        if (e->hwcaps) {
            size_t prio = 0;
            for (size_t k = 0; hwcaps && k < hwcaps->n && !prio; k++)
                if (strcmp(hwcaps->v[k], e->hwcaps) == 0) prio = k + 1;
            if (prio && (!best || prio < best_prio)) {
                best = e->value;
                best_prio = prio;
            }
            continue;
        }
        return best ? best : e->value;
    }
    return best;
}

void gpuenv_ldcache_free(gpuenv_ldcache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        lector__free(c->e[i].key);
        lector__free(c->e[i].value);
        lector__free(c->e[i].hwcaps);
    }
    lector__free(c->e);
    memset(c, 0, sizeof *c);
}
