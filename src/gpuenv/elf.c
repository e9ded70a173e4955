/* elf.c - the parts of an ELF image the dynamic loader reads.
 *
 * Input is untrusted (any file a user points --inspect at, any file found
 * in a library directory), so every offset and count is checked against the
 * image size before use. Dynamic strings are located the way ld.so does it
 * (PT_DYNAMIC + DT_STRTAB mapped through PT_LOAD), which also works for
 * stripped objects without section headers; the section table is only used
 * to find .nv_fatbin. */
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

#define DT_NULL_       0
#define DT_NEEDED_     1
#define DT_STRTAB_     5
#define DT_STRSZ_      10
#define DT_SONAME_     14
#define DT_RPATH_      15
#define DT_RUNPATH_    29
#define DT_FLAGS_1_    0x6ffffffb
#define DF_1_NODEFLIB_ 0x800
#define PT_LOAD_       1
#define PT_DYNAMIC_    2
#define PT_INTERP_     3
#define DT_VERDEF_     0x6ffffffc
#define DT_VERDEFNUM_  0x6ffffffd
#define DT_VERNEED_    0x6ffffffe
#define DT_VERNEEDNUM_ 0x6fffffff
#define VER_FLG_BASE_  0x1
#define VER_FLG_WEAK_  0x2

typedef struct rd {
    const uint8_t *d;
    size_t n;
    int is64;
} rd;

static int in_range(const rd *r, uint64_t off, uint64_t len) { return off <= r->n && len <= r->n - off; }

static uint64_t u16at(const uint8_t *p) { return (uint64_t)p[0] | (uint64_t)p[1] << 8; }
static uint64_t u32at(const uint8_t *p) { return u16at(p) | u16at(p + 2) << 16; }
static uint64_t u64at(const uint8_t *p) { return u32at(p) | u32at(p + 4) << 32; }
/* word: 4 bytes in ELFCLASS32, 8 in ELFCLASS64 */
static uint64_t wat(const rd *r, const uint8_t *p) { return r->is64 ? u64at(p) : u32at(p); }

typedef struct seg {
    uint64_t type, offset, vaddr, filesz;
} seg;

static int get_phdr(const rd *r, uint64_t phoff, uint64_t i, uint64_t phentsize, seg *s)
{
    uint64_t off = phoff + i * phentsize;
    if (!in_range(r, off, r->is64 ? 56 : 32)) return -1;
    const uint8_t *p = r->d + off;
    s->type = u32at(p);
    if (r->is64) {
        s->offset = u64at(p + 8);
        s->vaddr = u64at(p + 16);
        s->filesz = u64at(p + 32);
    } else {
        s->offset = u32at(p + 4);
        s->vaddr = u32at(p + 8);
        s->filesz = u32at(p + 16);
    }
    return 0;
}

/* Virtual address -> file offset through the PT_LOAD segments. */
static int vaddr_to_off(const rd *r, uint64_t phoff, uint64_t phnum, uint64_t phentsize, uint64_t va, uint64_t *off)
{
    for (uint64_t i = 0; i < phnum; i++) {
        seg s;
        if (get_phdr(r, phoff, i, phentsize, &s)) return -1;
        if (s.type == PT_LOAD_ && va >= s.vaddr && va - s.vaddr < s.filesz) {
            *off = s.offset + (va - s.vaddr);
            return 0;
        }
    }
    return -1;
}

/* Copy a NUL-terminated string at strtab+idx, bounded by the table. */
static char *dup_str(const rd *r, uint64_t strtab, uint64_t strsz, uint64_t idx, int *oom)
{
    if (idx >= strsz || !in_range(r, strtab, strsz)) return NULL;
    const char *s = (const char *)r->d + strtab + idx;
    size_t max = (size_t)(strsz - idx);
    const char *z = memchr(s, 0, max);
    if (!z) return NULL;
    char *c = gpuenv_strndup(s, (size_t)(z - s));
    if (!c) *oom = 1;
    return c;
}

static void find_fatbin(const rd *r, gpuenv_elf *out)
{
    const uint8_t *h = r->d;
    uint64_t shoff = r->is64 ? u64at(h + 40) : u32at(h + 32);
    uint64_t shentsize = r->is64 ? u16at(h + 58) : u16at(h + 46);
    uint64_t shnum = r->is64 ? u16at(h + 60) : u16at(h + 48);
    uint64_t shstrndx = r->is64 ? u16at(h + 62) : u16at(h + 50);
    uint64_t need = r->is64 ? 64 : 40;
    if (!shoff || shentsize < need || shstrndx >= shnum) return;
    if (!in_range(r, shoff, shnum * shentsize)) return;
#define SH(i) (r->d + shoff + (uint64_t)(i)*shentsize)
    const uint8_t *ss = SH(shstrndx);
    uint64_t str_off = r->is64 ? u64at(ss + 24) : u32at(ss + 16);
    uint64_t str_size = r->is64 ? u64at(ss + 32) : u32at(ss + 20);
    if (!in_range(r, str_off, str_size)) return;
    for (uint64_t i = 0; i < shnum; i++) {
        const uint8_t *s = SH(i);
        uint64_t name = u32at(s);
        uint64_t type = u32at(s + 4);
        uint64_t off = r->is64 ? u64at(s + 24) : u32at(s + 16);
        uint64_t size = r->is64 ? u64at(s + 32) : u32at(s + 20);
        static const char want[] = ".nv_fatbin";
        if (name >= str_size || str_size - name < sizeof want) continue;
        if (memcmp(r->d + str_off + name, want, sizeof want) != 0) continue;
        if (type == 8 /* SHT_NOBITS */ || !in_range(r, off, size)) continue;
        out->fatbin = r->d + off;
        out->fatbin_size = (size_t)size;
        return;
    }
#undef SH
}

/* DT_VERNEED: "file\tversion" for every non-weak requirement. */
static int read_verneed(const rd *r, uint64_t off, uint64_t count, uint64_t strtab, uint64_t strsz, gpuenv_elf *out)
{
    int oom = 0;
    for (uint64_t i = 0; i < count && i < 4096 && !oom; i++) {
        if (!in_range(r, off, 16)) return 0;
        const uint8_t *vn = r->d + off;
        uint64_t cnt = u16at(vn + 2), file = u32at(vn + 4), aux = u32at(vn + 8), next = u32at(vn + 12);
        char *fname = dup_str(r, strtab, strsz, file, &oom);
        uint64_t a = off + aux;
        for (uint64_t k = 0; k < cnt && k < 4096 && fname && !oom; k++) {
            if (!in_range(r, a, 16)) break;
            const uint8_t *va = r->d + a;
            uint64_t flags = u16at(va + 4), name = u32at(va + 8), anext = u32at(va + 12);
            if (!(flags & VER_FLG_WEAK_)) {
                char *vname = dup_str(r, strtab, strsz, name, &oom);
                if (vname && gpuenv_strv_push_owned(&out->verneed, gpuenv_asprintf("%s\t%s", fname, vname))) oom = 1;
                lector__free(vname);
            }
            if (!anext) break;
            a += anext;
        }
        lector__free(fname);
        if (!next) break;
        off += next;
    }
    return oom ? -2 : 0;
}

/* DT_VERDEF: the version names an object defines (the base entry, its own
 * SONAME, left out). */
static int read_verdef(const rd *r, uint64_t off, uint64_t count, uint64_t strtab, uint64_t strsz, gpuenv_elf *out)
{
    int oom = 0;
    for (uint64_t i = 0; i < count && i < 65536 && !oom; i++) {
        if (!in_range(r, off, 20)) return 0;
        const uint8_t *vd = r->d + off;
        uint64_t flags = u16at(vd + 2), aux = u32at(vd + 12), next = u32at(vd + 16);
        if (!(flags & VER_FLG_BASE_) && in_range(r, off + aux, 8)) {
            char *name = dup_str(r, strtab, strsz, u32at(r->d + off + aux), &oom);
            if (name && gpuenv_strv_push_owned(&out->verdef, name)) oom = 1;
        }
        if (!next) break;
        off += next;
    }
    return oom ? -2 : 0;
}

int gpuenv_elf_parse(const uint8_t *data, size_t size, gpuenv_elf *out)
{
    memset(out, 0, sizeof *out);
    if (size < 52 || memcmp(data, "\177ELF", 4) != 0) return -1;
    if (data[5] != 1) /* ELFDATA2LSB only: x86-64, aarch64 */
        return -1;
    rd r = {data, size, data[4] == 2};
    if (data[4] != 1 && data[4] != 2) return -1;
    if (r.is64 && size < 64) return -1;
    out->elfclass = data[4];
    out->type = (uint16_t)u16at(data + 16);
    out->machine = (uint16_t)u16at(data + 18);
    if (out->machine == 190) /* EM_CUDA: e_flags low byte is the SM */
        out->cuda_sm = (int)(u32at(data + (r.is64 ? 48 : 36)) & 0xff);

    uint64_t phoff = r.is64 ? u64at(data + 32) : u32at(data + 28);
    uint64_t phentsize = r.is64 ? u16at(data + 54) : u16at(data + 42);
    uint64_t phnum = r.is64 ? u16at(data + 56) : u16at(data + 44);
    if (phnum && phentsize < (uint64_t)(r.is64 ? 56 : 32)) return -1;

    find_fatbin(&r, out);

    uint64_t dyn_off = 0, dyn_size = 0;
    out->loads_in_file = 1;
    for (uint64_t i = 0; i < phnum; i++) {
        seg s;
        if (get_phdr(&r, phoff, i, phentsize, &s)) return -1;
        if (s.type == PT_INTERP_) out->has_interp = 1;
        if (s.type == PT_LOAD_) {
            out->n_loads++;
            if (!in_range(&r, s.offset, s.filesz)) out->loads_in_file = 0;
        }
        if (s.type == PT_DYNAMIC_) {
            dyn_off = s.offset;
            dyn_size = s.filesz;
            out->has_dynamic = 1;
        }
    }
    if (!out->has_dynamic) return 0;
    if (!in_range(&r, dyn_off, dyn_size)) return 0; /* truncated: dyn_in_file stays 0 */
    out->dyn_in_file = 1;

    size_t dsz = r.is64 ? 16 : 8, ws = r.is64 ? 8 : 4;
    uint64_t strtab_va = 0, strsz = 0, flags1 = 0, verneed_va = 0, verneednum = 0, verdef_va = 0, verdefnum = 0;
    int have_strtab = 0;
    for (uint64_t o = 0; o + dsz <= dyn_size; o += dsz) {
        const uint8_t *p = data + dyn_off + o;
        uint64_t tag = wat(&r, p), val = wat(&r, p + ws);
        if (tag == DT_NULL_) break;
        if (tag == DT_STRTAB_) {
            strtab_va = val;
            have_strtab = 1;
        } else if (tag == DT_STRSZ_)
            strsz = val;
        else if (tag == DT_FLAGS_1_)
            flags1 = val;
        else if (tag == DT_VERNEED_)
            verneed_va = val;
        else if (tag == DT_VERNEEDNUM_)
            verneednum = val;
        else if (tag == DT_VERDEF_)
            verdef_va = val;
        else if (tag == DT_VERDEFNUM_)
            verdefnum = val;
    }
    out->nodeflib = (flags1 & DF_1_NODEFLIB_) != 0;
    if (!have_strtab) return 0;
    uint64_t strtab;
    if (vaddr_to_off(&r, phoff, phnum, phentsize, strtab_va, &strtab)) return -1;
    if (!in_range(&r, strtab, 0)) return -1;
    if (!strsz || !in_range(&r, strtab, strsz))
        strsz = r.n - strtab; /* tolerate a bad DT_STRSZ: strings still NUL-bounded */

    int oom = 0;
    for (uint64_t o = 0; o + dsz <= dyn_size && !oom; o += dsz) {
        const uint8_t *p = data + dyn_off + o;
        uint64_t tag = wat(&r, p), val = wat(&r, p + ws);
        if (tag == DT_NULL_) break;
        char *s;
        switch (tag) {
        case DT_NEEDED_:
            s = dup_str(&r, strtab, strsz, val, &oom);
            if (s && gpuenv_strv_push_owned(&out->needed, s)) oom = 1;
            break;
        case DT_SONAME_:
            if (!out->soname) out->soname = dup_str(&r, strtab, strsz, val, &oom);
            break;
        case DT_RPATH_:
            if (!out->rpath_raw) out->rpath_raw = dup_str(&r, strtab, strsz, val, &oom);
            break;
        case DT_RUNPATH_:
            if (!out->runpath) out->runpath = dup_str(&r, strtab, strsz, val, &oom);
            break;
        default: break;
        }
    }
    uint64_t voff;
    if (!oom && verneed_va && !vaddr_to_off(&r, phoff, phnum, phentsize, verneed_va, &voff) &&
        read_verneed(&r, voff, verneednum, strtab, strsz, out))
        oom = 1;
    if (!oom && verdef_va && !vaddr_to_off(&r, phoff, phnum, phentsize, verdef_va, &voff) &&
        read_verdef(&r, voff, verdefnum, strtab, strsz, out))
        oom = 1;
    if (oom) {
        gpuenv_elf_free(out);
        return -2;
    }
    /* glibc (get-dynamic-info.h): "If both RUNPATH and RPATH are given, the
       latter is ignored." */
    if (out->rpath_raw && !out->runpath) {
        out->rpath = lector__strdup(out->rpath_raw);
        if (!out->rpath) {
            gpuenv_elf_free(out);
            return -2;
        }
    }
    return 0;
}

void gpuenv_elf_free(gpuenv_elf *e)
{
    lector__free(e->soname);
    lector__free(e->rpath);
    lector__free(e->rpath_raw);
    lector__free(e->runpath);
    gpuenv_strv_free(&e->needed);
    gpuenv_strv_free(&e->verneed);
    gpuenv_strv_free(&e->verdef);
    memset(e, 0, sizeof *e);
}
