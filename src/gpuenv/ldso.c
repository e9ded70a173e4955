/* ldso.c - glibc's dynamic loader, emulated over an examined tree.
 *
 * Search (elf/dl-load.c, _dl_map_object): a name with '/' is opened as
 * is; otherwise DT_RPATH of the asking object and up its loader chain, then
 * the executable's (only while the asker has no DT_RUNPATH; an object with
 * DT_RUNPATH has no DT_RPATH), LD_LIBRARY_PATH, DT_RUNPATH of the asker,
 * /etc/ld.so.cache, the system directories (the last two limited under
 * DF_1_NODEFLIB). Each directory of a list is tried with the glibc-hwcaps
 * subdirectories the CPU supports first (and, before glibc 2.37, the legacy
 * tls/platform ones). Each file is checked as open_verify does: a file too
 * short to hold an ELF header, or whose magic is wrong, stops the search
 * ("invalid ELF header"); an ELF of the other class or machine is skipped;
 * after a directory, an errno other than ENOENT, EACCES or ENOTDIR ends
 * that list (ELOOP does). The messages are glibc's, word for word.
 *
 * Load (dl-open.c, dl-deps.c, dl-version.c): objects already loaded are
 * matched by the names they were loaded under, their SONAME and their
 * file; preloads come first; dependencies are mapped breadth first; each
 * DT_VERNEED entry must be defined by the object it names. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <sys/auxv.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

#define EM_X86_64_ 62
#define HDR_READ   832 /* glibc reads this much of a candidate at once */

const char *gpuenv_via_str(gpuenv_via v)
{
    switch (v) {
    case GPUENV_VIA_PATH: return "path";
    case GPUENV_VIA_LOADED: return "already loaded";
    case GPUENV_VIA_RPATH: return "DT_RPATH";
    case GPUENV_VIA_LD_LIBRARY_PATH: return "LD_LIBRARY_PATH";
    case GPUENV_VIA_RUNPATH: return "DT_RUNPATH";
    case GPUENV_VIA_CACHE: return "ld.so.cache";
    case GPUENV_VIA_DEFAULT: return "default dir";
    case GPUENV_VIA_PRELOAD: return "LD_PRELOAD";
    default: return "not found";
    }
}

/* ------------------------------------------------------------- set-up */

static int is_dir(const char *root, const char *path)
{
    struct stat st;
    return gpuenv_root_stat(root, path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The x86-64 micro-architecture level of this CPU (1 to 4), as glibc
 * decides which glibc-hwcaps subdirectories to search: the CPUID feature
 * bits of each level, the AVX ones only when the OS saves their registers
 * (XCR0). Read with cpuid/xgetbv because compilers disagree on the names
 * __builtin_cpu_supports takes (clang 14 knows no "x86-64-v4", nor "movbe"). */
static int x86_64_level(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 1;
    unsigned c1 = c;
    unsigned c81 = __get_cpuid(0x80000001u, &a, &b, &c, &d) ? c : 0;
    unsigned b7 = __get_cpuid_count(7, 0, &a, &b, &c, &d) ? b : 0;
#define BIT(r, n) (((r) >> (n)) & 1u)
    int v2 = BIT(c1, 0) && BIT(c1, 9) && BIT(c1, 13) && BIT(c1, 19) && BIT(c1, 20) && BIT(c1, 23) && BIT(c81, 0);
    if (!v2) return 1;
    unsigned long long xcr0 = 0;
    if (BIT(c1, 27)) { /* OSXSAVE: xgetbv is there */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = ((unsigned long long)hi << 32) | lo;
    }
    int os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6;
    int v3 = os_avx && BIT(c1, 12) && BIT(c1, 22) && BIT(c1, 28) && BIT(c1, 29) && BIT(c81, 5) && BIT(b7, 3) &&
             BIT(b7, 5) && BIT(b7, 8);
    if (!v3) return 2;
    int v4 = os_avx512 && BIT(b7, 16) && BIT(b7, 17) && BIT(b7, 28) && BIT(b7, 30) && BIT(b7, 31);
#undef BIT
    return v4 ? 4 : 3;
#else
    return 1;
#endif
}

/* The glibc-hwcaps subdirectories this CPU can use, best first. */
static int add_hwcaps(gpuenv_ldso *L)
{
    static const char *const names[] = {"x86-64-v4", "x86-64-v3", "x86-64-v2"};
    int level = x86_64_level();
    for (int i = 4 - level; i < 3; i++) {
        if (gpuenv_strv_push(&L->hwcaps, names[i])) return -2;
        if (gpuenv_strv_push_owned(&L->subdirs, gpuenv_asprintf("glibc-hwcaps/%s/", names[i]))) return -2;
    }
    return 0;
}

int gpuenv_ldso_init(gpuenv_ldso *L, const char *root, const char *ld_library_path, const char *ld_preload)
{
    memset(L, 0, sizeof *L);
    if (!gpuenv_is_live(root) && !(L->root = lector__strdup(root))) return -2;
    const char *llp = ld_library_path ? ld_library_path : getenv("LD_LIBRARY_PATH");
    if (llp) {
        if (!(L->llp_raw = lector__strdup(llp))) goto oom;
        if (*llp && gpuenv_strv_split(&L->llp, llp, ":;")) goto oom;
    }
    const char *pre = ld_preload ? ld_preload : getenv("LD_PRELOAD");
    gpuenv_strv items = {0};
    if (pre && gpuenv_strv_split(&items, pre, " :")) goto oom_items;
    for (size_t i = 0; i < items.n; i++)
        if (items.v[i][0] &&
            (gpuenv_strv_push(&L->preload, items.v[i]) || gpuenv_strv_push(&L->preload_from, "LD_PRELOAD")))
            goto oom_items;
    gpuenv_strv_free(&items);
    char *etc = gpuenv_root_read_text(L->root, "/etc/ld.so.preload", 1 << 16);
    if (etc) {
        /* '#' comments; names separated by white space or ':' */
        for (char *p = etc; *p;) {
            if (*p == '#') {
                p += strcspn(p, "\n");
                continue;
            }
            size_t n = strcspn(p, " \t\n:#");
            if (n && (gpuenv_strv_push_owned(&L->preload, gpuenv_strndup(p, n)) ||
                      gpuenv_strv_push(&L->preload_from, "/etc/ld.so.preload"))) {
                lector__free(etc);
                goto oom;
            }
            p += n;
            if (*p && *p != '#') p++;
        }
        lector__free(etc);
    }

    gpuenv_map m;
    int rc = gpuenv_root_map(L->root, "/etc/ld.so.cache", &m);
    if (rc == -2) goto oom;
    L->cache_state = 0;
    if (rc == 0) {
        rc = gpuenv_ldcache_parse(m.data, m.size, &L->cache);
        gpuenv_unmap(&m);
        if (rc == -2) goto oom;
        L->cache_state = rc == 0 ? 1 : -1;
    }

    /* Debian/Ubuntu's multiarch glibc vs upstream x86-64 (`ld.so --help`,
       "system search path") */
    static const char *const deb[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"};
    static const char *const up[] = {"/lib64", "/usr/lib64"};
    int is_deb = is_dir(L->root, "/usr/lib/x86_64-linux-gnu") || is_dir(L->root, "/lib/x86_64-linux-gnu");
    const char *const *dirs = is_deb ? deb : up;
    size_t nd = is_deb ? 4 : 2;
    for (size_t i = 0; i < nd; i++)
        if (gpuenv_strv_push(&L->default_dirs, dirs[i])) goto oom;
    L->lib_token = is_deb ? "lib/x86_64-linux-gnu" : "lib64";
    const char *plat = (const char *)getauxval(AT_PLATFORM);
    snprintf(L->platform, sizeof L->platform, "%s", plat && *plat ? plat : "x86_64");

    L->glibc = gpuenv_glibc_version(L->root);
    if ((L->glibc == 0 || L->glibc >= 233) && add_hwcaps(L)) goto oom;
    if (L->glibc && L->glibc < 237) {
        /* legacy hwcaps subdirectories (removed in 2.37), in ld.so's order */
        const char *P = L->platform;
        char *legacy[] = {gpuenv_asprintf("tls/%s/x86_64/", P),
                          gpuenv_asprintf("tls/%s/", P),
                          gpuenv_asprintf("tls/x86_64/"),
                          gpuenv_asprintf("tls/"),
                          gpuenv_asprintf("%s/x86_64/", P),
                          gpuenv_asprintf("%s/", P),
                          gpuenv_asprintf("x86_64/")};
        int bad = 0;
        for (size_t i = 0; i < sizeof legacy / sizeof *legacy; i++)
            if (bad || gpuenv_strv_push_owned(&L->subdirs, legacy[i])) {
                if (bad) lector__free(legacy[i]);
                bad = 1;
            }
        if (bad) goto oom;
    }
    if (gpuenv_strv_push(&L->subdirs, "")) goto oom;
    return 0;
oom_items:
    gpuenv_strv_free(&items);
oom:
    gpuenv_ldso_free(L);
    return -2;
}

void gpuenv_ldso_free(gpuenv_ldso *L)
{
    lector__free(L->root);
    lector__free(L->llp_raw);
    gpuenv_strv_free(&L->llp);
    gpuenv_strv_free(&L->preload);
    gpuenv_strv_free(&L->preload_from);
    gpuenv_ldcache_free(&L->cache);
    gpuenv_strv_free(&L->default_dirs);
    gpuenv_strv_free(&L->subdirs);
    gpuenv_strv_free(&L->hwcaps);
    memset(L, 0, sizeof *L);
}

/* ------------------------------------------------------------ objects */

int gpuenv_obj_open(const gpuenv_ldso *L, const char *path, gpuenv_obj *o)
{
    memset(o, 0, sizeof *o);
    char *real = NULL;
    int rc;
    if (path[0] == '/') {
        rc = gpuenv_root_resolve(L->root, path, &real);
    } else if (gpuenv_is_live(L->root)) {
        char buf[PATH_MAX]; /* a relative path on the live system */
        rc = realpath(path, buf) ? ((real = lector__strdup(buf)) ? 0 : -2) : ENOENT;
    } else {
        char *abs = gpuenv_asprintf("/%s", path);
        rc = abs ? gpuenv_root_resolve(L->root, abs, &real) : -2;
        lector__free(abs);
    }
    if (rc == -2) return -2;
    if (rc) return -1;
    char *host = gpuenv_host_path(L->root, real);
    if (!host) {
        lector__free(real);
        return -2;
    }
    rc = gpuenv_map_file(host, &o->map);
    lector__free(host);
    if (rc) {
        lector__free(real);
        return -1;
    }
    rc = gpuenv_elf_parse(o->map.data, o->map.size, &o->elf);
    if (rc) {
        gpuenv_unmap(&o->map);
        lector__free(real);
        return rc;
    }
    o->real = real;
    if (!(o->path = lector__strdup(path))) {
        gpuenv_obj_close(o);
        return -2;
    }
    return 0;
}

void gpuenv_obj_close(gpuenv_obj *o)
{
    lector__free(o->path);
    lector__free(o->real);
    gpuenv_elf_free(&o->elf);
    gpuenv_unmap(&o->map);
    gpuenv_strv_free(&o->names);
    memset(o, 0, sizeof *o);
}

/* --------------------------------------------------------- the search */

typedef struct search {
    const gpuenv_ldso *L;
    const char *name;
    gpuenv_find *out;
    int other_class; /* an ELF of the other class was seen (the final message says so) */
    int err;         /* errno as glibc's would be */
    int oom;
    int lenient; /* pass over files that would stop glibc */
} search;

static void add_skip(search *S, const char *path, gpuenv_via via, gpuenv_skipwhy why, int err)
{
    gpuenv_find *f = S->out;
    if (f->n_skip % 8 == 0) {
        gpuenv_skip *v = lector__realloc(f->skip, (f->n_skip + 8) * sizeof *v);
        if (!v) {
            S->oom = 1;
            return;
        }
        f->skip = v;
    }
    gpuenv_skip *k = &f->skip[f->n_skip];
    if (!(k->path = lector__strdup(path))) {
        S->oom = 1;
        return;
    }
    k->via = via;
    k->why = why;
    k->err = err;
    f->n_skip++;
}

/* dlerror()'s text: "OBJ: WHAT[: strerror(ERR)]" */
static char *error_text(const char *obj, const char *what, int err)
{
    if (err) return gpuenv_asprintf("%s: %s: %s", obj, what, strerror(err));
    return gpuenv_asprintf("%s: %s", obj, what);
}

static int fatal(search *S, const char *path, gpuenv_via via, const char *what, int err)
{
    gpuenv_find *f = S->out;
    if (S->lenient) {
        add_skip(S, path, via, GPUENV_SKIP_BAD, err);
        S->err = ENOENT;
        return 0;
    }
    f->outcome = GPUENV_FATAL;
    f->via = via;
    f->err = err;
    f->what = what;
    if (!(f->path = lector__strdup(path)) || !(f->error = error_text(path, what, err))) S->oom = 1;
    return -1;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) { return le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* open_verify: 1 usable, 0 passed over (S->err set), -1 the search stops. */
static int verify(search *S, const char *path, gpuenv_via via)
{
    const gpuenv_ldso *L = S->L;
    int fd;
    if (gpuenv_is_live(L->root)) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
    } else {
        /* a relative path is taken from the tree's root (the program's
           working directory is not known) */
        char *canon = NULL, *abs = path[0] == '/' ? NULL : gpuenv_asprintf("/%s", path);
        int rc = path[0] == '/' || abs ? gpuenv_root_resolve(L->root, abs ? abs : path, &canon) : -2;
        lector__free(abs);
        if (rc == -2) {
            S->oom = 1;
            return -1;
        }
        if (rc) {
            S->err = rc;
            if (rc != ENOENT) add_skip(S, path, via, GPUENV_SKIP_ERRNO, rc);
            return 0;
        }
        char *host = gpuenv_host_path(L->root, canon);
        lector__free(canon);
        if (!host) {
            S->oom = 1;
            return -1;
        }
        fd = open(host, O_RDONLY | O_CLOEXEC);
        lector__free(host);
    }
    if (fd < 0) {
        S->err = errno;
        if (errno != ENOENT) add_skip(S, path, via, GPUENV_SKIP_ERRNO, errno);
        return 0;
    }
    uint8_t h[HDR_READ];
    size_t len = 0;
    int rerr = 0;
    while (len < 64) {
        ssize_t k = read(fd, h + len, sizeof h - len);
        if (k < 0) rerr = errno;
        if (k <= 0) break;
        len += (size_t)k;
    }
    struct stat st;
    off_t fsize = fstat(fd, &st) == 0 ? st.st_size : 0;
    close(fd);
    if (len < 64) return fatal(S, path, via, rerr ? "cannot read file data" : "file too short", rerr);
    static const uint8_t magic[4] = {0x7f, 'E', 'L', 'F'};
    int osabi = h[7], abiver = h[8], pad = 0;
    for (int i = 9; i < 16; i++) pad |= h[i];
    int osabi_ok = osabi == 0 || osabi == 3;
    int abiver_ok = abiver == 0 || (osabi == 3 && abiver < 4);
    if (memcmp(h, magic, 4) || h[4] != 2 || h[5] != 1 || h[6] != 1 || !osabi_ok || !abiver_ok || pad) {
        if (memcmp(h, magic, 4)) return fatal(S, path, via, "invalid ELF header", 0);
        if (h[4] != 2) {
            S->other_class = 1;
            S->err = ENOENT;
            add_skip(S, path, via, GPUENV_SKIP_CLASS, 0);
            return 0;
        }
        if (le16(h + 18) != EM_X86_64_) {
            S->err = ENOENT;
            add_skip(S, path, via, GPUENV_SKIP_MACHINE, 0);
            return 0;
        }
        if (h[5] != 1) return fatal(S, path, via, "ELF file data encoding not little-endian", 0);
        if (h[6] != 1) return fatal(S, path, via, "ELF file version ident does not match current one", 0);
        if (!osabi_ok) return fatal(S, path, via, "ELF file OS ABI invalid", 0);
        if (!abiver_ok) return fatal(S, path, via, "ELF file ABI version invalid", 0);
        return fatal(S, path, via, "nonzero padding in e_ident", 0);
    }
    if (le32(h + 20) != 1) return fatal(S, path, via, "ELF file version does not match current one", 0);
    if (le16(h + 18) != EM_X86_64_) {
        S->err = ENOENT;
        add_skip(S, path, via, GPUENV_SKIP_MACHINE, 0);
        return 0;
    }
    uint16_t type = le16(h + 16);
    if (type != 2 && type != 3) return fatal(S, path, via, "only ET_DYN and ET_EXEC can be loaded", 0);
    if (le16(h + 54) != 56) return fatal(S, path, via, "ELF file's phentsize not the expected size", 0);
    uint64_t phoff = le64(h + 32), phnum = le16(h + 56);
    if (phoff + phnum * 56 > (uint64_t)fsize) return fatal(S, path, via, "cannot read file data", 0);
    return 1;
}

/* A found file: record it. */
static void found(search *S, const char *path, gpuenv_via via, const char *item)
{
    gpuenv_find *f = S->out;
    f->outcome = GPUENV_FOUND;
    f->via = via;
    if (!(f->path = lector__strdup(path)) || (item && !(f->list_item = lector__strdup(item)))) S->oom = 1;
}

/* open_path over one list of directories (already expanded, each ending
 * in '/' or empty for the current directory): 1 found, 0 not, -1 stop. */
static int search_list(search *S, const gpuenv_strv *dirs, gpuenv_via via)
{
    const gpuenv_ldso *L = S->L;
    for (size_t i = 0; i < dirs->n; i++) {
        const char *dir = dirs->v[i];
        int here_any = 0;
        for (size_t c = 0; c < L->subdirs.n; c++) {
            char *p = gpuenv_asprintf("%s%s%s", dir, L->subdirs.v[c], S->name);
            if (!p) {
                S->oom = 1;
                return -1;
            }
            int r = verify(S, p, via);
            if (r > 0) {
                char *item = gpuenv_strndup(dir, strlen(dir) > 1 ? strlen(dir) - 1 : strlen(dir));
                found(S, p, via, item ? item : "");
                lector__free(item);
                lector__free(p);
                return S->oom ? -1 : 1;
            }
            lector__free(p);
            if (r < 0) return -1;
            /* glibc then stats the directory to remember whether it exists */
            char *d = gpuenv_asprintf("%s%s", dir[0] ? dir : "./", L->subdirs.v[c]);
            if (!d) {
                S->oom = 1;
                return -1;
            }
            struct stat st;
            int serr;
            if (gpuenv_is_live(L->root))
                serr = stat(d, &st) ? errno : 0;
            else {
                char *abs = d[0] == '/' ? NULL : gpuenv_asprintf("/%s", d);
                serr = gpuenv_root_stat(L->root, abs ? abs : d, &st);
                lector__free(abs);
            }
            lector__free(d);
            if (serr)
                S->err = serr;
            else if (S_ISDIR(st.st_mode))
                here_any = 1;
        }
        if (here_any && S->err != ENOENT && S->err != EACCES && S->err != ENOTDIR) {
            char *p = gpuenv_asprintf("%s%s", dir, S->name);
            if (!p) {
                S->oom = 1;
                return -1;
            }
            add_skip(S, p, via, GPUENV_SKIP_ENDED, S->err);
            lector__free(p);
            return 0;
        }
    }
    return 0;
}

/* is_dst: $NAME or ${NAME}, not followed by an identifier character. */
static size_t dst_len(const char *p, const char *tok)
{
    size_t n = strlen(tok);
    if (p[0] == '{') return strncmp(p + 1, tok, n) == 0 && p[1 + n] == '}' ? n + 2 : 0;
    if (strncmp(p, tok, n) != 0) return 0;
    char c = p[n];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ? 0 : n;
}

/* The directory $ORIGIN stands for: the object's path without its last
 * component (the main program: its canonical path). */
static char *origin_of(const gpuenv_obj *o)
{
    if (!o) return lector__strdup(".");
    return gpuenv_dirname(o->is_main && o->real ? o->real : o->path);
}

static char *expand(const gpuenv_ldso *L, const char *item, const gpuenv_obj *owner)
{
    gpuenv_buf b = {0};
    gpuenv_buf_puts(&b, "");
    for (const char *p = item; *p;) {
        if (*p == '$') {
            size_t n;
            if ((n = dst_len(p + 1, "ORIGIN"))) {
                char *o = origin_of(owner);
                if (!o) {
                    gpuenv_buf_free(&b);
                    return NULL;
                }
                gpuenv_buf_puts(&b, o);
                lector__free(o);
                p += 1 + n;
                continue;
            }
            if ((n = dst_len(p + 1, "LIB"))) {
                gpuenv_buf_puts(&b, L->lib_token);
                p += 1 + n;
                continue;
            }
            if ((n = dst_len(p + 1, "PLATFORM"))) {
                gpuenv_buf_puts(&b, L->platform);
                p += 1 + n;
                continue;
            }
        }
        gpuenv_buf_putn(&b, p++, 1);
    }
    return gpuenv_buf_take(&b);
}

/* fillin_rpath: expand, drop trailing slashes, add one, drop duplicates;
 * an empty item is the current directory. */
static int make_list(const gpuenv_ldso *L, const char *const *items, size_t n, const gpuenv_obj *owner,
                     gpuenv_strv *out)
{
    for (size_t i = 0; i < n; i++) {
        char *d;
        if (!items[i][0]) {
            d = lector__strdup("");
        } else {
            char *e = expand(L, items[i], owner);
            if (!e) return -2;
            size_t len = strlen(e);
            if (!len) {
                lector__free(e);
                continue;
            }
            while (len > 1 && e[len - 1] == '/') len--;
            d = gpuenv_asprintf("%.*s%s", (int)len, e, e[len - 1] == '/' ? "" : "/");
            lector__free(e);
        }
        if (!d) return -2;
        if (gpuenv_strv_has(out, d)) {
            lector__free(d);
            continue;
        }
        if (gpuenv_strv_push_owned(out, d)) return -2;
    }
    return 0;
}

static int try_path_list(search *S, const char *list, const gpuenv_obj *owner, gpuenv_via via)
{
    gpuenv_strv items = {0}, dirs = {0};
    int r = 0;
    if (gpuenv_strv_split(&items, list, ":") || make_list(S->L, (const char *const *)items.v, items.n, owner, &dirs)) {
        S->oom = 1;
        r = -1;
    } else {
        r = search_list(S, &dirs, via);
    }
    gpuenv_strv_free(&items);
    gpuenv_strv_free(&dirs);
    return r;
}

static int name_matches(const gpuenv_obj *o, const char *name)
{
    if (o->path && strcmp(o->path, name) == 0) return 1;
    if (gpuenv_strv_has(&o->names, name)) return 1;
    return o->elf.soname && strcmp(o->elf.soname, name) == 0;
}

static int find(const gpuenv_ldso *L, const char *name, const gpuenv_obj *loader, gpuenv_obj *const *loaded,
                size_t n_loaded, int lenient, gpuenv_find *out)
{
    memset(out, 0, sizeof *out);
    /* errno as it is before the search: a search that tries nothing (no
       list, DF_1_NODEFLIB) leaves glibc's message without an errno text */
    search S = {L, name, out, 0, 0, 0, lenient};
    for (size_t i = 0; i < n_loaded; i++)
        if (loaded[i] && name_matches(loaded[i], name)) {
            found(&S, loaded[i]->path, GPUENV_VIA_LOADED, NULL);
            return S.oom ? -2 : 0;
        }
    int r = 0;
    if (strchr(name, '/')) {
        char *p = loader ? expand(L, name, loader) : lector__strdup(name);
        if (!p) return -2;
        r = verify(&S, p, GPUENV_VIA_PATH);
        if (r > 0) found(&S, p, GPUENV_VIA_PATH, NULL);
        lector__free(p);
        goto done;
    }
    /* DT_RPATH of the asker and up its loader chain, then the program's */
    if (!loader || !loader->elf.runpath) {
        for (const gpuenv_obj *l = loader; l && !r; l = l->loader)
            if (l->elf.rpath) r = try_path_list(&S, l->elf.rpath, l, GPUENV_VIA_RPATH);
    }
    if (!r && L->llp.n) {
        gpuenv_strv dirs = {0};
        if (make_list(L, (const char *const *)L->llp.v, L->llp.n, NULL, &dirs))
            S.oom = 1, r = -1;
        else
            r = search_list(&S, &dirs, GPUENV_VIA_LD_LIBRARY_PATH);
        gpuenv_strv_free(&dirs);
    }
    if (!r && loader && loader->elf.runpath) r = try_path_list(&S, loader->elf.runpath, loader, GPUENV_VIA_RUNPATH);
    int nodeflib = loader && loader->elf.nodeflib;
    if (!r && L->cache_state == 1) {
        const char *c = gpuenv_ldcache_lookup(&L->cache, name, &L->hwcaps);
        if (c && nodeflib)
            for (size_t i = 0; i < L->default_dirs.n; i++) {
                size_t dl = strlen(L->default_dirs.v[i]);
                if (strncmp(c, L->default_dirs.v[i], dl) == 0 && c[dl] == '/') c = NULL;
                if (!c) break;
            }
        if (c) {
            char *canon = NULL;
            int gone = gpuenv_root_resolve(L->root, c, &canon) == ENOENT;
            lector__free(canon);
            r = verify(&S, c, GPUENV_VIA_CACHE);
            if (r > 0) found(&S, c, GPUENV_VIA_CACHE, NULL);
            if (r == 0 && gone) add_skip(&S, c, GPUENV_VIA_CACHE, GPUENV_SKIP_STALE, ENOENT);
        }
    }
    if (!r && !nodeflib) {
        gpuenv_strv dirs = {0};
        if (make_list(L, (const char *const *)L->default_dirs.v, L->default_dirs.n, NULL, &dirs))
            S.oom = 1, r = -1;
        else
            r = search_list(&S, &dirs, GPUENV_VIA_DEFAULT);
        gpuenv_strv_free(&dirs);
    }
done:
    if (S.oom) {
        gpuenv_find_free(out);
        return -2;
    }
    if (r == 0) {
        out->outcome = GPUENV_NOT_FOUND;
        out->err = S.other_class ? 0 : S.err;
        out->what = S.other_class ? "wrong ELF class: ELFCLASS32" : "cannot open shared object file";
        out->error = S.other_class ? error_text(name, "wrong ELF class: ELFCLASS32", 0)
                                   : error_text(name, "cannot open shared object file", S.err);
        if (!out->error) {
            gpuenv_find_free(out);
            return -2;
        }
    }
    return 0;
}

int gpuenv_ldso_find(const gpuenv_ldso *L, const char *name, const gpuenv_obj *loader, gpuenv_obj *const *loaded,
                     size_t n_loaded, gpuenv_find *out)
{
    return find(L, name, loader, loaded, n_loaded, 0, out);
}

int gpuenv_ldso_find_usable(const gpuenv_ldso *L, const char *name, gpuenv_find *out)
{
    return find(L, name, NULL, NULL, 0, 1, out);
}

void gpuenv_find_free(gpuenv_find *f)
{
    lector__free(f->path);
    lector__free(f->list_item);
    lector__free(f->error);
    for (size_t i = 0; i < f->n_skip; i++) lector__free(f->skip[i].path);
    lector__free(f->skip);
    memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------- loading */

typedef struct loader_state {
    const gpuenv_ldso *L;
    gpuenv_load *ld;
    int keep_going; /* ldd-like: record failures and continue */
} loader_state;

static int push_obj(gpuenv_load *ld, gpuenv_obj *o)
{
    if (ld->n % 16 == 0) {
        gpuenv_obj **v = lector__realloc(ld->obj, (ld->n + 16) * sizeof *v);
        if (!v) return -2;
        ld->obj = v;
    }
    ld->obj[ld->n++] = o;
    return 0;
}

static int push_edge(gpuenv_load *ld, size_t from, const char *name, long to, gpuenv_via via)
{
    if (ld->n_edge % 16 == 0) {
        gpuenv_edge *v = lector__realloc(ld->edge, (ld->n_edge + 16) * sizeof *v);
        if (!v) return -2;
        ld->edge = v;
    }
    gpuenv_edge *e = &ld->edge[ld->n_edge];
    if (!(e->name = lector__strdup(name))) return -2;
    e->from = from;
    e->to = to;
    e->via = via;
    ld->n_edge++;
    return 0;
}

static int set_error(gpuenv_load *ld, const char *msg)
{
    ld->ok = 0;
    if (ld->error) return 0;
    return (ld->error = lector__strdup(msg)) ? 0 : -2;
}

/* Checks _dl_map_object_from_fd makes on the file found. A dynamic
 * section past the end of the file is mapped all the same (mmap does not
 * check); reading it kills the process with SIGBUS. */
static const char *map_problem(const gpuenv_obj *o, int *crash)
{
    *crash = 0;
    if (o->elf.n_loads == 0) return "object file has no loadable segments";
    if (o->elf.type == 3 && !o->elf.has_dynamic) return "object file has no dynamic section";
    if (o->elf.has_dynamic && !o->elf.dyn_in_file) {
        *crash = SIGBUS;
        return "truncated file: its dynamic section lies past the end, the loader faults on it "
               "(SIGBUS, Bus error)";
    }
    return NULL;
}

/* Map `name` as `loader` asks for it. Returns the object index, -1 when
 * it failed (the error recorded), -2 on allocation failure. */
static long map_name(loader_state *st, const char *name, long loader_idx, gpuenv_via *via_out)
{
    gpuenv_load *ld = st->ld;
    const gpuenv_obj *loader = loader_idx >= 0 ? ld->obj[loader_idx] : NULL;
    gpuenv_find f;
    if (gpuenv_ldso_find(st->L, name, loader, ld->obj, ld->n, &f)) return -2;
    *via_out = f.via;
    long idx = -1;
    if (f.outcome == GPUENV_FOUND && f.via == GPUENV_VIA_LOADED) {
        for (size_t i = 0; i < ld->n; i++)
            if (name_matches(ld->obj[i], name)) {
                idx = (long)i;
                break;
            }
        if (idx >= 0 && !gpuenv_strv_has(&ld->obj[idx]->names, name) && gpuenv_strv_push(&ld->obj[idx]->names, name))
            idx = -2;
        gpuenv_find_free(&f);
        return idx;
    }
    if (f.outcome != GPUENV_FOUND) {
        int rc = set_error(ld, f.error);
        if (!rc && !gpuenv_strv_has(&ld->missing, name)) rc = gpuenv_strv_push(&ld->missing, name);
        gpuenv_find_free(&f);
        return rc ? -2 : -1;
    }
    gpuenv_obj *o = lector__calloc(1, sizeof *o);
    if (!o) {
        gpuenv_find_free(&f);
        return -2;
    }
    int rc = gpuenv_obj_open(st->L, f.path, o);
    if (rc == -2) {
        lector__free(o);
        gpuenv_find_free(&f);
        return -2;
    }
    if (rc) { /* verified moments ago; gone or unparsable now */
        lector__free(o);
        char *msg = error_text(f.path, "cannot read file data", 0);
        rc = msg ? set_error(ld, msg) : -2;
        lector__free(msg);
        gpuenv_find_free(&f);
        return rc ? -2 : -1;
    }
    /* the same file under another name is the same object */
    for (size_t i = 0; i < ld->n; i++)
        if (ld->obj[i]->real && strcmp(ld->obj[i]->real, o->real) == 0) {
            rc = gpuenv_strv_has(&ld->obj[i]->names, name) ? 0 : gpuenv_strv_push(&ld->obj[i]->names, name);
            gpuenv_obj_close(o);
            lector__free(o);
            gpuenv_find_free(&f);
            return rc ? -2 : (long)i;
        }
    int crash;
    const char *bad = map_problem(o, &crash);
    if (bad) {
        char *msg = error_text(f.path, bad, 0);
        rc = msg ? set_error(ld, msg) : -2;
        if (crash && !ld->crash_signal) ld->crash_signal = crash;
        lector__free(msg);
        gpuenv_obj_close(o);
        lector__free(o);
        gpuenv_find_free(&f);
        return rc ? -2 : -1;
    }
    o->loader = loader;
    o->via = f.via;
    gpuenv_find_free(&f);
    if (gpuenv_strv_push(&o->names, name) || push_obj(ld, o)) {
        gpuenv_obj_close(o);
        lector__free(o);
        return -2;
    }
    return (long)ld->n - 1;
}

/* Breadth-first DT_NEEDED from object `first` on (_dl_map_object_deps). */
static int map_deps(loader_state *st, size_t first)
{
    gpuenv_load *ld = st->ld;
    for (size_t q = first; q < ld->n; q++) {
        gpuenv_obj *o = ld->obj[q];
        for (size_t k = 0; k < o->elf.needed.n; k++) {
            gpuenv_via via = GPUENV_VIA_NONE;
            long to = map_name(st, o->elf.needed.v[k], (long)q, &via);
            if (to == -2 || push_edge(ld, q, o->elf.needed.v[k], to, via)) return -2;
            if (to < 0 && !st->keep_going) return -1;
        }
    }
    return 0;
}

/* _dl_check_map_versions for objects [first, n). */
static int check_versions(loader_state *st, size_t first)
{
    gpuenv_load *ld = st->ld;
    for (size_t q = first; q < ld->n; q++) {
        const gpuenv_obj *o = ld->obj[q];
        for (size_t k = 0; k < o->elf.verneed.n; k++) {
            const char *ent = o->elf.verneed.v[k];
            const char *tab = strchr(ent, '\t');
            if (!tab) continue;
            char *file = gpuenv_strndup(ent, (size_t)(tab - ent));
            if (!file) return -2;
            const gpuenv_obj *dep = NULL;
            for (size_t i = 0; i < ld->n && !dep; i++)
                if (name_matches(ld->obj[i], file)) dep = ld->obj[i];
            lector__free(file);
            /* no version information at all: glibc only warns when verbose */
            if (!dep || !dep->elf.verdef.n || gpuenv_strv_has(&dep->elf.verdef, tab + 1)) continue;
            char *msg = gpuenv_asprintf("%s: version `%s' not found (required by %s)", dep->path, tab + 1,
                                        o->is_main && !o->path[0] ? "<main program>" : o->path);
            int rc = msg ? set_error(ld, msg) : -2;
            lector__free(msg);
            if (rc) return -2;
            if (!st->keep_going) return -1;
        }
    }
    return 0;
}

/* An object not read from disk, known by its names. */
static int add_assumed(gpuenv_load *ld, const char *path, const char *const *names, int is_main)
{
    gpuenv_obj *o = lector__calloc(1, sizeof *o);
    if (!o) return -2;
    o->is_main = is_main;
    o->assumed = 1;
    int rc = (o->path = lector__strdup(path)) ? 0 : -2;
    for (size_t i = 0; names && names[i] && !rc; i++) rc = gpuenv_strv_push(&o->names, names[i]);
    if (rc || push_obj(ld, o)) {
        gpuenv_obj_close(o);
        lector__free(o);
        return -2;
    }
    return 0;
}

/* The process a dlopen happens in: a program with no RPATH/RUNPATH, the
 * dynamic loader (known as ld-linux-x86-64.so.2), then libc.so.6 searched
 * like any dependency; a tree without libc gets glibc assumed present. */
static int add_program(gpuenv_load *ld)
{
    static const char *const rtld[] = {"ld-linux-x86-64.so.2", NULL};
    if (add_assumed(ld, "", NULL, 1) || add_assumed(ld, "/lib64/ld-linux-x86-64.so.2", rtld, 0)) return -2;
    return 0;
}

static int add_libc(loader_state *st)
{
    gpuenv_load *ld = st->ld;
    gpuenv_find f;
    if (gpuenv_ldso_find(st->L, "libc.so.6", ld->obj[0], ld->obj, ld->n, &f)) return -2;
    int found_libc = f.outcome == GPUENV_FOUND;
    gpuenv_find_free(&f);
    if (!found_libc) {
        static const char *const glibc[] = {"libc.so.6",       "libm.so.6",  "libdl.so.2",
                                            "libpthread.so.0", "librt.so.1", NULL};
        return add_assumed(ld, "libc.so.6", glibc, 0);
    }
    size_t first = ld->n;
    gpuenv_via via;
    long idx = map_name(st, "libc.so.6", 0, &via);
    if (idx == -2) return -2;
    return map_deps(st, first) == -2 ? -2 : 0;
}

/* LD_PRELOAD and /etc/ld.so.preload: a failure is a message, not fatal. */
static int preload(loader_state *st)
{
    const gpuenv_ldso *L = st->L;
    gpuenv_load *ld = st->ld;
    size_t first = ld->n;
    for (size_t i = 0; i < L->preload.n; i++) {
        gpuenv_find f;
        if (gpuenv_ldso_find(L, L->preload.v[i], ld->obj[0], ld->obj, ld->n, &f)) return -2;
        if (f.outcome != GPUENV_FOUND) {
            /* glibc prints the error string alone (no object, no errno text) */
            int rc = gpuenv_strv_push_owned(
                &ld->preload_errors, gpuenv_asprintf("ERROR: ld.so: object '%s' from %s cannot be preloaded "
                                                     "(%s): ignored.",
                                                     L->preload.v[i], L->preload_from.v[i], f.what ? f.what : "?"));
            gpuenv_find_free(&f);
            if (rc) return -2;
            continue;
        }
        gpuenv_find_free(&f);
        gpuenv_via via;
        long idx = map_name(st, L->preload.v[i], 0, &via);
        if (idx == -2) return -2;
        if (idx >= 0) ld->obj[idx]->via = GPUENV_VIA_PRELOAD;
        /* a mapping failure of a preload is fatal at start-up */
        if (idx < 0) return -1;
    }
    int saved = st->keep_going;
    st->keep_going = 0;
    int rc = map_deps(st, first);
    st->keep_going = saved;
    return rc;
}

int gpuenv_ldso_dlopen(const gpuenv_ldso *L, const char *name, gpuenv_load *out)
{
    memset(out, 0, sizeof *out);
    out->ok = 1;
    loader_state st = {L, out, 0};
    int rc = add_program(out);
    if (!rc) rc = preload(&st);
    if (!rc) rc = add_libc(&st);
    out->n_startup = out->n;
    if (rc == -1) {
        /* the program would not even start */
        rc = 0;
    } else if (!rc) {
        size_t before = out->n;
        gpuenv_via via;
        long idx = map_name(&st, name, 0, &via);
        if (idx == -2) rc = -2;
        if (idx >= 0) {
            out->first_requested = (size_t)idx;
            if ((size_t)idx >= before) {
                rc = map_deps(&st, before);
                if (rc == 0) rc = check_versions(&st, before);
                if (rc == 0 && out->ok) rc = gpuenv_bind_symbols(out, before, 0);
                if (rc == -1) rc = 0;
            }
        }
    }
    if (rc == -2) {
        gpuenv_load_free(out);
        return -2;
    }
    return 0;
}

int gpuenv_ldso_load_file(const gpuenv_ldso *L, const char *path, gpuenv_load *out)
{
    memset(out, 0, sizeof *out);
    out->ok = 1;
    loader_state st = {L, out, 1};
    gpuenv_obj *o = lector__calloc(1, sizeof *o);
    if (!o) return -2;
    int rc = gpuenv_obj_open(L, path, o);
    if (rc) {
        lector__free(o);
        if (rc == -2) return -2;
        char *msg = error_text(path, "not a readable ELF file", 0);
        rc = msg ? set_error(out, msg) : -2;
        lector__free(msg);
        return rc;
    }
    o->is_main = 1;
    o->via = GPUENV_VIA_PATH;
    if (gpuenv_strv_push(&o->names, path) || push_obj(out, o)) {
        gpuenv_obj_close(o);
        lector__free(o);
        gpuenv_load_free(out);
        return -2;
    }
    rc = preload(&st);
    if (rc != -2) rc = map_deps(&st, 0);
    if (rc != -2) rc = check_versions(&st, 0);
    if (rc != -2 && out->ok) rc = gpuenv_bind_symbols(out, 0, 1);
    if (rc == -2) {
        gpuenv_load_free(out);
        return -2;
    }
    return 0;
}

void gpuenv_load_free(gpuenv_load *ld)
{
    for (size_t i = 0; i < ld->n; i++) {
        gpuenv_obj_close(ld->obj[i]);
        lector__free(ld->obj[i]);
    }
    lector__free(ld->obj);
    for (size_t i = 0; i < ld->n_edge; i++) lector__free(ld->edge[i].name);
    lector__free(ld->edge);
    lector__free(ld->error);
    gpuenv_strv_free(&ld->missing);
    gpuenv_strv_free(&ld->preload_errors);
    memset(ld, 0, sizeof *ld);
}
