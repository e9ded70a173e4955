/* resolve.c - glibc ld.so's library search, emulated over an examined tree.
 *
 * The order (ld.so(8), glibc elf/dl-load.c _dl_map_object):
 *   0. a name containing '/' is used as is;
 *   1. DT_RPATH of the asking object, then of the object that loaded it, up
 *      to the executable - only if the asking object has no DT_RUNPATH
 *      (and an object with DT_RUNPATH contributes no DT_RPATH at all);
 *   2. LD_LIBRARY_PATH;
 *   3. DT_RUNPATH of the asking object only (not inherited);
 *   4. /etc/ld.so.cache, 5. the default dirs (4 and 5 skipped under
 *      DF_1_NODEFLIB).
 * Not emulated (documented in docs/DOCTOR.md): glibc-hwcaps and legacy
 * hwcap subdirectories, secure-execution (setuid) rules. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"

static int live(const char *root) { return !root || !root[0] || strcmp(root, "/") == 0; }

int gpuenv_ctx_init(gpuenv_ctx *ctx, const char *root, const char *ld_library_path)
{
    memset(ctx, 0, sizeof *ctx);
    if (!live(root) && !(ctx->root = strdup(root))) return -1;
    const char *llp = ld_library_path ? ld_library_path : getenv("LD_LIBRARY_PATH");
    if (llp && *llp) {
        /* ld.so splits on ':' and ';' */
        gpuenv_strv tmp = {0};
        if (gpuenv_strv_split(&tmp, llp, ':')) goto oom;
        for (size_t i = 0; i < tmp.n; i++)
            if (gpuenv_strv_split(&ctx->llp, tmp.v[i], ';')) {
                gpuenv_strv_free(&tmp);
                goto oom;
            }
        gpuenv_strv_free(&tmp);
    }
    char *host = gpuenv_host_path(ctx->root, "/etc/ld.so.cache");
    if (!host) goto oom;
    gpuenv_map m;
    ctx->cache_state = -1;
    if (gpuenv_map_file(host, &m) == 0) {
        int rc = gpuenv_ldcache_parse(m.data, m.size, &ctx->cache);
        gpuenv_unmap(&m);
        if (rc == -2) {
            free(host);
            goto oom;
        }
        ctx->cache_state = rc == 0 ? 1 : -1;
    }
    free(host);
    /* Debian/Ubuntu multiarch glibc vs upstream x86-64 (`ld.so --help`
       prints the list under "system search path"). */
    static const char *const deb[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"};
    static const char *const up[] = {"/lib64", "/usr/lib64"};
    char *probe = gpuenv_host_path(ctx->root, "/usr/lib/x86_64-linux-gnu");
    if (!probe) goto oom;
    struct stat st;
    int is_deb = stat(probe, &st) == 0 && S_ISDIR(st.st_mode);
    free(probe);
    const char *const *dirs = is_deb ? deb : up;
    size_t nd = is_deb ? 4 : 2;
    for (size_t i = 0; i < nd; i++)
        if (gpuenv_strv_push(&ctx->default_dirs, dirs[i])) goto oom;
    ctx->lib_token = is_deb ? "lib/x86_64-linux-gnu" : "lib64";
    return 0;
oom:
    gpuenv_ctx_free(ctx);
    return -1;
}

void gpuenv_ctx_free(gpuenv_ctx *ctx)
{
    free(ctx->root);
    gpuenv_strv_free(&ctx->llp);
    gpuenv_ldcache_free(&ctx->cache);
    gpuenv_strv_free(&ctx->default_dirs);
    memset(ctx, 0, sizeof *ctx);
}

int gpuenv_obj_open(const gpuenv_ctx *ctx, const char *path, gpuenv_obj *o)
{
    memset(o, 0, sizeof *o);
    char *real = gpuenv_root_realpath(ctx->root, path);
    char *host = gpuenv_host_path(ctx->root, real ? real : path);
    free(real);
    if (!host) return -2;
    int rc = gpuenv_map_file(host, &o->map);
    free(host);
    if (rc) return -1;
    rc = gpuenv_elf_parse(o->map.data, o->map.size, &o->elf);
    if (rc) {
        gpuenv_unmap(&o->map);
        return rc;
    }
    if (!(o->path = strdup(path))) {
        gpuenv_obj_close(o);
        return -2;
    }
    return 0;
}

void gpuenv_obj_close(gpuenv_obj *o)
{
    free(o->path);
    gpuenv_elf_free(&o->elf);
    gpuenv_unmap(&o->map);
    memset(o, 0, sizeof *o);
}

const char *gpuenv_via_str(gpuenv_via v)
{
    switch (v) {
    case GPUENV_VIA_PATH: return "path";
    case GPUENV_VIA_RPATH: return "DT_RPATH";
    case GPUENV_VIA_LD_LIBRARY_PATH: return "LD_LIBRARY_PATH";
    case GPUENV_VIA_RUNPATH: return "DT_RUNPATH";
    case GPUENV_VIA_CACHE: return "ld.so.cache";
    case GPUENV_VIA_DEFAULT: return "default dir";
    default: return "not found";
    }
}

/* Expand $ORIGIN, ${ORIGIN}, $LIB, $PLATFORM in one search-path item. */
static char *expand(const gpuenv_ctx *ctx, const char *item, const gpuenv_obj *owner)
{
    gpuenv_buf b = {0};
    char *origin = NULL;
    if (owner && owner->path) {
        origin = strdup(owner->path);
        if (!origin) return NULL;
        char *sl = strrchr(origin, '/');
        if (sl)
            *(sl == origin ? sl + 1 : sl) = 0;
        else
            strcpy(origin, ".");
    }
    for (const char *p = item; *p;) {
        if (*p == '$') {
            static const struct {
                const char *tok;
                int which;
            } toks[] = {{"{ORIGIN}", 0}, {"ORIGIN", 0}, {"{LIB}", 1}, {"LIB", 1}, {"{PLATFORM}", 2}, {"PLATFORM", 2}};
            size_t k;
            for (k = 0; k < sizeof toks / sizeof toks[0]; k++) {
                size_t n = strlen(toks[k].tok);
                if (strncmp(p + 1, toks[k].tok, n) == 0) {
                    const char *rep = toks[k].which == 0   ? (origin ? origin : ".")
                                      : toks[k].which == 1 ? ctx->lib_token
                                                           : "x86_64";
                    gpuenv_buf_puts(&b, rep);
                    p += 1 + n;
                    break;
                }
            }
            if (k < sizeof toks / sizeof toks[0]) continue;
        }
        char c[2] = {*p++, 0};
        gpuenv_buf_puts(&b, c);
    }
    free(origin);
    return gpuenv_buf_take(&b);
}

/* A candidate is accepted when it is an ELF of the asker's class and
 * machine; ld.so silently skips others (e.g. a 32-bit copy in the path). */
static int acceptable(const gpuenv_ctx *ctx, const char *path, const gpuenv_obj *asker)
{
    gpuenv_obj o;
    if (gpuenv_obj_open(ctx, path, &o)) return 0;
    int ok = 1;
    if (asker && (o.elf.elfclass != asker->elf.elfclass || o.elf.machine != asker->elf.machine)) ok = 0;
    if (!asker && (o.elf.elfclass != 2 || o.elf.machine != 62 /* EM_X86_64 */)) ok = 0;
    gpuenv_obj_close(&o);
    return ok;
}

/* Try each item of a ':'-list; returns the in-tree path or NULL. */
static char *search_list(const gpuenv_ctx *ctx, const char *list, const gpuenv_obj *owner, const char *name,
                         const gpuenv_obj *asker, int *oom)
{
    gpuenv_strv items = {0};
    if (gpuenv_strv_split(&items, list, ':')) {
        *oom = 1;
        return NULL;
    }
    char *found = NULL;
    for (size_t i = 0; i < items.n && !found; i++) {
        char *dir = expand(ctx, items.v[i][0] ? items.v[i] : ".", owner);
        if (!dir) {
            *oom = 1;
            break;
        }
        char *cand = gpuenv_asprintf("%s/%s", dir, name);
        free(dir);
        if (!cand) {
            *oom = 1;
            break;
        }
        if (gpuenv_root_exists(ctx->root, cand) && acceptable(ctx, cand, asker))
            found = cand;
        else
            free(cand);
    }
    gpuenv_strv_free(&items);
    return found;
}

char *gpuenv_resolve(const gpuenv_ctx *ctx, const char *name, const gpuenv_obj *loader, gpuenv_via *via)
{
    int oom = 0;
    char *p;
    *via = GPUENV_VIA_NONE;
    if (strchr(name, '/')) {
        if (!gpuenv_root_exists(ctx->root, name)) return NULL;
        *via = GPUENV_VIA_PATH;
        return strdup(name);
    }
    if (!loader || !loader->elf.runpath) {
        for (const gpuenv_obj *l = loader; l; l = l->loader) {
            if (!l->elf.rpath) continue;
            if ((p = search_list(ctx, l->elf.rpath, l, name, loader, &oom))) {
                *via = GPUENV_VIA_RPATH;
                return p;
            }
            if (oom) return NULL;
        }
    }
    for (size_t i = 0; i < ctx->llp.n; i++) {
        if ((p = search_list(ctx, ctx->llp.v[i][0] ? ctx->llp.v[i] : ".", NULL, name, loader, &oom))) {
            *via = GPUENV_VIA_LD_LIBRARY_PATH;
            return p;
        }
        if (oom) return NULL;
    }
    if (loader && loader->elf.runpath) {
        if ((p = search_list(ctx, loader->elf.runpath, loader, name, loader, &oom))) {
            *via = GPUENV_VIA_RUNPATH;
            return p;
        }
        if (oom) return NULL;
    }
    if (loader && loader->elf.nodeflib) return NULL;
    if (ctx->cache_state == 1) {
        int32_t fl = (!loader || (loader->elf.elfclass == 2 && loader->elf.machine == 62)) ? GPUENV_LDCACHE_X86_64 : 0;
        const char *c = gpuenv_ldcache_lookup(&ctx->cache, name, fl);
        if (c && gpuenv_root_exists(ctx->root, c) && acceptable(ctx, c, loader)) {
            *via = GPUENV_VIA_CACHE;
            return strdup(c);
        }
    }
    for (size_t i = 0; i < ctx->default_dirs.n; i++) {
        char *cand = gpuenv_asprintf("%s/%s", ctx->default_dirs.v[i], name);
        if (!cand) return NULL;
        if (gpuenv_root_exists(ctx->root, cand) && acceptable(ctx, cand, loader)) {
            *via = GPUENV_VIA_DEFAULT;
            return cand;
        }
        free(cand);
    }
    return NULL;
}

int gpuenv_resolve_library(const char *root, const char *ld_library_path, const char *name, gpuenv_libinfo *out)
{
    memset(out, 0, sizeof *out);
    gpuenv_ctx ctx;
    if (gpuenv_ctx_init(&ctx, root, ld_library_path)) return -2;
    gpuenv_via via;
    char *p = gpuenv_resolve(&ctx, name, NULL, &via);
    int rc = -1;
    if (p) {
        char *real = gpuenv_root_realpath(ctx.root, p);
        snprintf(out->path, sizeof out->path, "%s", p);
        snprintf(out->real, sizeof out->real, "%s", real ? real : p);
        char *v = gpuenv_soname_version(out->real);
        if (v && gpuenv_ver_major(v) < 0) {
            free(v);
            v = gpuenv_soname_version(p);
        }
        snprintf(out->version, sizeof out->version, "%s", v ? v : "");
        free(v);
        free(real);
        out->via = via;
        free(p);
        rc = 0;
    }
    gpuenv_ctx_free(&ctx);
    return rc;
}
