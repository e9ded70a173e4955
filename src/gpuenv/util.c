/* util.c - strings, buffers and file access relative to an examined root. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"

static int buf_reserve(gpuenv_buf *b, size_t extra)
{
    if (b->oom) return -1;
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    if (!b->s) s[0] = 0;
    b->s = s;
    b->cap = cap;
    return 0;
}

void gpuenv_buf_puts(gpuenv_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (buf_reserve(b, n)) return;
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void gpuenv_buf_printf(gpuenv_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *gpuenv_buf_take(gpuenv_buf *b)
{
    if (b->oom) {
        gpuenv_buf_free(b);
        return NULL;
    }
    if (!b->s && buf_reserve(b, 0)) return NULL;
    char *s = b->s;
    memset(b, 0, sizeof *b);
    return s;
}

void gpuenv_buf_free(gpuenv_buf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

char *gpuenv_strdup(const char *s) { return s ? strdup(s) : NULL; }

char *gpuenv_asprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

int gpuenv_strv_push_owned(gpuenv_strv *sv, char *s)
{
    if (!s) return -1;
    if (sv->n == sv->cap) {
        size_t cap = sv->cap ? sv->cap * 2 : 8;
        char **v = realloc(sv->v, cap * sizeof *v);
        if (!v) {
            free(s);
            return -1;
        }
        sv->v = v;
        sv->cap = cap;
    }
    sv->v[sv->n++] = s;
    return 0;
}

int gpuenv_strv_push(gpuenv_strv *sv, const char *s) { return gpuenv_strv_push_owned(sv, strdup(s ? s : "")); }

int gpuenv_strv_has(const gpuenv_strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], s) == 0) return 1;
    return 0;
}

void gpuenv_strv_free(gpuenv_strv *sv)
{
    for (size_t i = 0; i < sv->n; i++) free(sv->v[i]);
    free(sv->v);
    memset(sv, 0, sizeof *sv);
}

int gpuenv_strv_split(gpuenv_strv *sv, const char *list, char sep)
{
    if (!list) return 0;
    const char *p = list;
    for (;;) {
        const char *e = strchr(p, sep);
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (gpuenv_strv_push_owned(sv, strndup(p, n))) return -1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

int gpuenv_map_file(const char *host_path, gpuenv_map *m)
{
    memset(m, 0, sizeof *m);
    int fd = open(host_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    if (st.st_size == 0) {
        close(fd);
        return 0;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return -1;
    m->data = p;
    m->size = (size_t)st.st_size;
    return 0;
}

void gpuenv_unmap(gpuenv_map *m)
{
    if (m->data && m->size) munmap((void *)m->data, m->size);
    memset(m, 0, sizeof *m);
}

static int live_root(const char *root) { return !root || !root[0] || strcmp(root, "/") == 0; }

char *gpuenv_host_path(const char *root, const char *path)
{
    if (live_root(root) || path[0] != '/') return strdup(path);
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    return gpuenv_asprintf("%.*s%s", (int)rl, root, path);
}

/* Canonicalise inside root: walk components, follow links with absolute
 * targets re-anchored at root. Bounded to 40 link hops like the kernel. */
char *gpuenv_root_realpath(const char *root, const char *path)
{
    if (!path || path[0] != '/') return NULL;
    gpuenv_buf out = {0};
    char *rest = strdup(path);
    if (!rest) return NULL;
    int hops = 0;
    gpuenv_buf_puts(&out, "");
    char *p = rest;
    char *result = NULL;
    for (;;) {
        while (*p == '/') p++;
        if (!*p) {
            result = out.len ? gpuenv_buf_take(&out) : strdup("/");
            break;
        }
        char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 1 && p[0] == '.') {
            p += n;
            continue;
        }
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            char *slash = out.s ? strrchr(out.s, '/') : NULL;
            if (slash) {
                *slash = 0;
                out.len = (size_t)(slash - out.s);
            }
            p += n;
            continue;
        }
        size_t save = out.len;
        gpuenv_buf_printf(&out, "/%.*s", (int)n, p);
        if (out.oom) break;
        p += n;
        char *host = gpuenv_host_path(root, out.s);
        if (!host) break;
        struct stat st;
        if (lstat(host, &st)) {
            free(host);
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t tl = readlink(host, target, sizeof target - 1);
            free(host);
            if (tl < 0 || ++hops > 40) break;
            target[tl] = 0;
            /* new rest = target + remaining */
            char *nrest = gpuenv_asprintf("%s/%s", target, p);
            if (!nrest) break;
            free(rest);
            rest = p = nrest;
            if (target[0] == '/') {
                out.len = 0;
                out.s[0] = 0;
            } else {
                out.len = save;
                out.s[save] = 0;
            }
            continue;
        }
        free(host);
    }
    free(rest);
    gpuenv_buf_free(&out);
    return result;
}

int gpuenv_root_exists(const char *root, const char *path)
{
    char *r = gpuenv_root_realpath(root, path);
    if (!r) return 0;
    char *h = gpuenv_host_path(root, r);
    free(r);
    if (!h) return 0;
    int ok = access(h, F_OK) == 0;
    free(h);
    return ok;
}

char *gpuenv_root_read_text(const char *root, const char *path, size_t max)
{
    char *r = gpuenv_root_realpath(root, path);
    /* /proc files are not symlinks we can chase inside a root; fall back to
       the literal path when canonicalisation fails. */
    char *h = gpuenv_host_path(root, r ? r : path);
    free(r);
    if (!h) return NULL;
    FILE *f = fopen(h, "re");
    free(h);
    if (!f) return NULL;
    char *s = malloc(max + 1);
    if (!s) {
        fclose(f);
        return NULL;
    }
    size_t n = fread(s, 1, max, f);
    fclose(f);
    s[n] = 0;
    return s;
}

int gpuenv_vercmp(const char *a, const char *b)
{
    while (*a || *b) {
        while (*a && !isdigit((unsigned char)*a)) a++;
        while (*b && !isdigit((unsigned char)*b)) b++;
        if (!*a || !*b) return (*a != 0) - (*b != 0);
        unsigned long long x = strtoull(a, (char **)&a, 10);
        unsigned long long y = strtoull(b, (char **)&b, 10);
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

char *gpuenv_soname_version(const char *file_name)
{
    const char *base = strrchr(file_name, '/');
    base = base ? base + 1 : file_name;
    const char *so = strstr(base, ".so");
    if (!so) return strdup("");
    so += 3;
    if (*so == '.') so++;
    return strdup(so);
}

int gpuenv_ver_major(const char *v)
{
    if (!v || !isdigit((unsigned char)v[0])) return -1;
    return (int)strtol(v, NULL, 10);
}
