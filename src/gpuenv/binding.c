/* binding.c - symbol binding as glibc does it for dlopen(RTLD_NOW): every
 * symbol the relocations of a newly loaded object name is looked up in the
 * global scope, then in the new object's local scope (_dl_lookup_symbol_x).
 * A strong reference nobody defines is "undefined symbol: NAME[, version
 * V]"; a versioned reference stops at the file its version names when that
 * file lacks it. This is how a libcublas of one release fails next to a
 * libcublasLt of another.
 *
 * Only 64-bit little-endian objects are read here (the others are never
 * loaded). Every offset is checked against the mapped file. */
#include <stdint.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

#define DT_HASH_      4
#define DT_STRTAB_    5
#define DT_SYMTAB_    6
#define DT_RELA_      7
#define DT_RELASZ_    8
#define DT_STRSZ_     10
#define DT_JMPREL_    23
#define DT_PLTRELSZ_  2
#define DT_GNU_HASH_  0x6ffffef5
#define DT_VERSYM_    0x6ffffff0
#define DT_VERDEF_    0x6ffffffc
#define DT_VERDEFNUM  0x6ffffffd
#define DT_VERNEED_   0x6ffffffe
#define DT_VERNEEDNUM 0x6fffffff

static uint64_t u16(const uint8_t *p) { return (uint64_t)p[0] | (uint64_t)p[1] << 8; }
static uint64_t u32(const uint8_t *p) { return u16(p) | u16(p + 2) << 16; }
static uint64_t u64(const uint8_t *p) { return u32(p) | u32(p + 4) << 32; }

/* The dynamic symbol view of one object. */
typedef struct symview {
    const uint8_t *d;
    size_t n;
    uint64_t symtab, strtab, strsz, versym, nsyms;
    uint64_t hash, gnu; /* DT_HASH, DT_GNU_HASH (file offsets, 0: absent) */
    uint64_t rela, relasz, jmprel, pltrelsz;
    /* version index -> name (and, for requirements, the file) */
    const char **vname, **vfile;
    size_t nver;
    int ok;
} symview;

static int in(const symview *v, uint64_t off, uint64_t len) { return off <= v->n && len <= v->n - off; }

static int va_off(const uint8_t *d, size_t n, uint64_t va, uint64_t *off)
{
    uint64_t phoff = u64(d + 32), phentsize = u16(d + 54), phnum = u16(d + 56);
    for (uint64_t i = 0; i < phnum; i++) {
        uint64_t p = phoff + i * phentsize;
        if (p > n || n - p < 56) return -1;
        const uint8_t *h = d + p;
        uint64_t vaddr = u64(h + 16), filesz = u64(h + 32);
        if (u32(h) == 1 && va >= vaddr && va - vaddr < filesz) {
            *off = u64(h + 8) + (va - vaddr);
            return 0;
        }
    }
    return -1;
}

static const char *str_at(const symview *v, uint64_t idx)
{
    if (idx >= v->strsz || !in(v, v->strtab, v->strsz)) return NULL;
    const char *s = (const char *)v->d + v->strtab + idx;
    return memchr(s, 0, (size_t)(v->strsz - idx)) ? s : NULL;
}

/* Number of dynamic symbols: DT_HASH's nchain, else the end of the
 * longest DT_GNU_HASH chain. */
static uint64_t count_syms(const symview *v, uint64_t hash, uint64_t gnu)
{
    if (hash && in(v, hash, 8)) return u32(v->d + hash + 4);
    if (!gnu || !in(v, gnu, 16)) return 0;
    const uint8_t *g = v->d + gnu;
    uint64_t nbuckets = u32(g), symoffset = u32(g + 4), bloom = u32(g + 8);
    uint64_t buckets = gnu + 16 + bloom * 8, chains = buckets + nbuckets * 4;
    if (!in(v, buckets, nbuckets * 4)) return 0;
    uint64_t last = 0;
    for (uint64_t b = 0; b < nbuckets; b++)
        if (u32(v->d + buckets + b * 4) > last) last = u32(v->d + buckets + b * 4);
    if (last < symoffset) return symoffset;
    for (;; last++) {
        uint64_t c = chains + (last - symoffset) * 4;
        if (!in(v, c, 4)) return 0;
        if (u32(v->d + c) & 1) return last + 1;
    }
}

static int read_view(const gpuenv_obj *o, symview *v)
{
    memset(v, 0, sizeof *v);
    const uint8_t *d = o->map.data;
    size_t n = o->map.size;
    if (!d || n < 64 || d[4] != 2 || d[5] != 1 || !o->elf.dyn_in_file) return 0;
    v->d = d;
    v->n = n;
    uint64_t phoff = u64(d + 32), phentsize = u16(d + 54), phnum = u16(d + 56), dyn = 0, dynsz = 0;
    for (uint64_t i = 0; i < phnum; i++) {
        uint64_t p = phoff + i * phentsize;
        if (p > n || n - p < 56) return 0;
        if (u32(d + p) == 2) {
            dyn = u64(d + p + 8);
            dynsz = u64(d + p + 32);
        }
    }
    if (!dynsz || !in(v, dyn, dynsz)) return 0;
    uint64_t va[9] = {0}; /* symtab strtab versym rela jmprel hash gnu verdef verneed */
    uint64_t verdefnum = 0, verneednum = 0;
    for (uint64_t o2 = 0; o2 + 16 <= dynsz; o2 += 16) {
        uint64_t tag = u64(d + dyn + o2), val = u64(d + dyn + o2 + 8);
        if (tag == 0) break;
        switch (tag) {
        case DT_SYMTAB_: va[0] = val; break;
        case DT_STRTAB_: va[1] = val; break;
        case DT_VERSYM_: va[2] = val; break;
        case DT_RELA_: va[3] = val; break;
        case DT_JMPREL_: va[4] = val; break;
        case DT_HASH_: va[5] = val; break;
        case DT_GNU_HASH_: va[6] = val; break;
        case DT_VERDEF_: va[7] = val; break;
        case DT_VERNEED_: va[8] = val; break;
        case DT_STRSZ_: v->strsz = val; break;
        case DT_RELASZ_: v->relasz = val; break;
        case DT_PLTRELSZ_: v->pltrelsz = val; break;
        case DT_VERDEFNUM: verdefnum = val; break;
        case DT_VERNEEDNUM: verneednum = val; break;
        default: break;
        }
    }
    uint64_t off[9] = {0};
    for (int i = 0; i < 9; i++)
        if (va[i] && va_off(d, n, va[i], &off[i])) off[i] = 0;
    if (!off[0] || !off[1]) return 0;
    v->symtab = off[0];
    v->strtab = off[1];
    v->versym = off[2];
    v->rela = off[3];
    v->jmprel = off[4];
    v->nsyms = count_syms(v, off[5], off[6]);
    v->hash = off[5];
    v->gnu = off[6];
    if (!v->nsyms || !in(v, v->symtab, v->nsyms * 24)) return 0;
    /* version indexes: verdef entries carry their own index (vd_ndx),
       verneed auxiliaries theirs (vna_other) */
    size_t max = 2;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            v->nver = max + 1;
            v->vname = lector__calloc(v->nver, sizeof *v->vname);
            v->vfile = lector__calloc(v->nver, sizeof *v->vfile);
            if (!v->vname || !v->vfile) return -2;
        }
        uint64_t p = off[7];
        for (uint64_t i = 0; p && i < verdefnum && i < 65536 && in(v, p, 20); i++) {
            uint64_t ndx = u16(d + p + 4) & 0x7fff, aux = u32(d + p + 12), next = u32(d + p + 16);
            if (pass == 0 && ndx > max) max = ndx;
            if (pass == 1 && ndx < v->nver && in(v, p + aux, 8)) v->vname[ndx] = str_at(v, u32(d + p + aux));
            if (!next) break;
            p += next;
        }
        p = off[8];
        for (uint64_t i = 0; p && i < verneednum && i < 65536 && in(v, p, 16); i++) {
            uint64_t cnt = u16(d + p + 2), file = u32(d + p + 4), aux = u32(d + p + 8), next = u32(d + p + 12);
            uint64_t a = p + aux;
            for (uint64_t k = 0; k < cnt && k < 65536 && in(v, a, 16); k++) {
                uint64_t ndx = u16(d + a + 6) & 0x7fff, name = u32(d + a + 8), anext = u32(d + a + 12);
                if (pass == 0 && ndx > max) max = ndx;
                if (pass == 1 && ndx < v->nver) {
                    v->vname[ndx] = str_at(v, name);
                    v->vfile[ndx] = str_at(v, file);
                }
                if (!anext) break;
                a += anext;
            }
            if (!next) break;
            p += next;
        }
    }
    v->ok = 1;
    return 0;
}

static void free_view(symview *v)
{
    lector__free(v->vname);
    lector__free(v->vfile);
}

static int versym_of(const symview *v, uint64_t i, uint64_t *vs)
{
    if (!v->versym || !in(v, v->versym + i * 2, 2)) return 0;
    *vs = u16(v->d + v->versym + i * 2);
    return 1;
}

/* Does symbol i of this object answer the reference? 1 yes, 2 a public
 * versioned definition an unversioned reference may take if it is the
 * only one, 0 no (check_match of dl-lookup.c). */
static int matches(const symview *v, uint64_t i, const char *name, const char *ver)
{
    if (i == 0 || i >= v->nsyms) return 0;
    const uint8_t *s = v->d + v->symtab + i * 24;
    uint64_t shndx = u16(s + 6), info = s[4], bind = info >> 4, type = info & 0xf;
    if (shndx == 0 || (bind != 1 && bind != 2 && bind != 10)) return 0;
    if (type > 2 && type != 5 && type != 6 && type != 10) return 0;
    if (u64(s + 8) == 0 && shndx != 0xfff1 && type != 6) return 0;
    const char *sn = str_at(v, u32(s));
    if (!sn || strcmp(sn, name) != 0) return 0;
    uint64_t vs;
    if (!versym_of(v, i, &vs)) return 1; /* no version information: any reference */
    uint64_t ndx = vs & 0x7fff;
    const char *dn = ndx < v->nver ? v->vname[ndx] : NULL;
    if (ver) /* that version, or a definition whose index no version names */
        return (dn && strcmp(dn, ver) == 0) || (!dn && !(vs & 0x8000)) ? 1 : 0;
    if (ndx < 3) return 1; /* local, global, or the base definition */
    return vs & 0x8000 ? 0 : 2;
}

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = h * 33 + *p;
    return h;
}

static uint32_t elf_hash(const char *s)
{
    uint32_t h = 0, g;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h = (h << 4) + *p;
        if ((g = h & 0xf0000000)) h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* Does this object define `name` in a way that answers the reference?
 * The candidates come from its own hash table, as the loader finds them. */
static int defines(const symview *v, const char *name, const char *ver)
{
    if (!v->ok) return 0;
    int n_versioned = 0, r;
    if (v->gnu && in(v, v->gnu, 16)) {
        const uint8_t *g = v->d + v->gnu;
        uint64_t nbuckets = u32(g), symoffset = u32(g + 4), bloom = u32(g + 8);
        uint64_t buckets = v->gnu + 16 + bloom * 8, chains = buckets + nbuckets * 4;
        if (!nbuckets || !in(v, buckets, nbuckets * 4)) return 0;
        uint32_t h = gnu_hash(name);
        uint64_t i = u32(v->d + buckets + (h % nbuckets) * 4);
        if (i < symoffset) return 0;
        for (;; i++) {
            uint64_t c = chains + (i - symoffset) * 4;
            if (!in(v, c, 4)) break;
            uint32_t ch = (uint32_t)u32(v->d + c);
            if ((ch | 1) == (h | 1) && (r = matches(v, i, name, ver))) {
                if (r == 1) return 1;
                n_versioned++;
            }
            if (ch & 1) break;
        }
    } else if (v->hash && in(v, v->hash, 8)) {
        uint64_t nbucket = u32(v->d + v->hash), nchain = u32(v->d + v->hash + 4);
        uint64_t bucket = v->hash + 8, chain = bucket + nbucket * 4;
        if (!nbucket || !in(v, bucket, (nbucket + nchain) * 4)) return 0;
        for (uint64_t i = u32(v->d + bucket + (elf_hash(name) % nbucket) * 4), k = 0; i && i < nchain && k < nchain;
             i = u32(v->d + chain + i * 4), k++)
            if ((r = matches(v, i, name, ver))) {
                if (r == 1) return 1;
                n_versioned++;
            }
    } else {
        for (uint64_t i = 1; i < v->nsyms; i++)
            if ((r = matches(v, i, name, ver))) {
                if (r == 1) return 1;
                n_versioned++;
            }
    }
    /* an unversioned reference takes the one public versioned definition */
    return n_versioned == 1;
}

static int names_file(const gpuenv_obj *o, const char *file)
{
    if (gpuenv_strv_has(&o->names, file)) return 1;
    if (o->elf.soname && strcmp(o->elf.soname, file) == 0) return 1;
    return o->path && strcmp(o->path, file) == 0;
}

/* The loader itself and a libc assumed present are not read: whatever a
 * reference asks of them (by version file) is taken as there. */
static int assumed_provides(gpuenv_obj *const *scope, size_t n, const char *file)
{
    for (size_t i = 0; i < n; i++)
        if (scope[i]->assumed && file && names_file(scope[i], file)) return 1;
    return 0;
}

/* Look `name` up as glibc does: 0 found, 1 undefined, 2 not in the file
 * its version names (the search stops there). */
static int lookup(gpuenv_obj *const *scope, size_t n, const symview *views, const char *name, const char *ver,
                  const char *file)
{
    for (size_t i = 0; i < n; i++) {
        if (scope[i]->assumed) continue;
        if (defines(&views[i], name, ver)) return 0;
        if (ver && file && names_file(scope[i], file)) return 2;
    }
    return assumed_provides(scope, n, file) ? 0 : 1;
}

int gpuenv_bind_symbols(gpuenv_load *ld, size_t first, int versioned_only)
{
    if (first >= ld->n) return 0;
    /* the scope: the global one (objects before `first`), then the new ones */
    symview *views = lector__calloc(ld->n, sizeof *views);
    if (!views) return -2;
    int rc = 0;
    for (size_t i = 0; i < ld->n && !rc; i++)
        if (!ld->obj[i]->assumed) rc = read_view(ld->obj[i], &views[i]);
    /* relocation order: the new objects last to first, each .rela.dyn then .rela.plt */
    for (size_t q = ld->n; q-- > first && !rc && ld->ok;) {
        const symview *v = &views[q];
        if (!v->ok) continue;
        uint64_t ranges[2][2] = {{v->rela, v->relasz}, {v->jmprel, v->pltrelsz}};
        for (int r = 0; r < 2 && !rc && ld->ok; r++) {
            uint64_t base = ranges[r][0], size = ranges[r][1];
            if (!base || !in(v, base, size)) continue;
            for (uint64_t e = 0; e + 24 <= size && ld->ok; e += 24) {
                uint64_t info = u64(v->d + base + e + 8), sym = info >> 32;
                if (!sym || sym >= v->nsyms) continue;
                const uint8_t *s = v->d + v->symtab + sym * 24;
                uint64_t bind = s[4] >> 4;
                if (u16(s + 6) != 0 || bind == 2 || bind == 0) continue; /* defined, weak or local */
                const char *name = str_at(v, u32(s));
                if (!name) continue;
                uint64_t vs;
                const char *ver = NULL, *file = NULL;
                if (versym_of(v, sym, &vs) && (vs & 0x7fff) >= 2 && (vs & 0x7fff) < v->nver) {
                    ver = v->vname[vs & 0x7fff];
                    file = v->vfile[vs & 0x7fff];
                }
                if (versioned_only && !file) continue;
                int res = lookup(ld->obj, ld->n, views, name, ver, file);
                if (!res) continue;
                /* glibc 2.39 words both outcomes alike (older releases said
                   "symbol X version V not defined in file F with link time
                   reference" when the named file lacked it) */
                char *msg = ver ? gpuenv_asprintf("%s: undefined symbol: %s, version %s", ld->obj[q]->path, name, ver)
                                : gpuenv_asprintf("%s: undefined symbol: %s", ld->obj[q]->path, name);
                if (!msg) {
                    rc = -2;
                    break;
                }
                ld->ok = 0;
                if (!ld->error) {
                    ld->error = msg;
                    ld->sym_from = (long)q + 1;
                    for (size_t i = 0; file && i < ld->n && !ld->sym_file; i++)
                        if (names_file(ld->obj[i], file)) ld->sym_file = (long)i + 1;
                } else {
                    lector__free(msg);
                }
            }
        }
    }
    for (size_t i = 0; i < ld->n; i++) free_view(&views[i]);
    lector__free(views);
    return rc;
}
