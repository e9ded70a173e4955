/* rootfs.c - file access inside an examined tree, as a process chrooted
 * there would see it: absolute symbolic links stay inside the tree, and the
 * errors are the ones the kernel gives (ENOENT, ENOTDIR, ELOOP, EACCES). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

/* The kernel follows at most this many links in one path lookup. */
#define MAX_LINK_HOPS 40

int gpuenv_is_live(const char *root) { return !root || !root[0] || strcmp(root, "/") == 0; }

char *gpuenv_host_path(const char *root, const char *path)
{
    if (gpuenv_is_live(root) || path[0] != '/') return lector__strdup(path);
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/') rl--;
    return gpuenv_asprintf("%.*s%s", (int)rl, root, path);
}

int gpuenv_root_resolve(const char *root, const char *path, char **canon)
{
    *canon = NULL;
    if (!path || path[0] != '/') return ENOENT;
    gpuenv_buf out = {0};
    char *rest = lector__strdup(path);
    if (!rest) return -2;
    gpuenv_buf_puts(&out, "");
    char *p = rest;
    int hops = 0, err = 0;
    for (;;) {
        while (*p == '/') p++;
        if (!*p) break;
        size_t n = strcspn(p, "/");
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
        gpuenv_buf_puts(&out, "/");
        gpuenv_buf_putn(&out, p, n);
        if (out.oom) {
            err = -2;
            break;
        }
        p += n;
        char *host = gpuenv_host_path(root, out.s);
        if (!host) {
            err = -2;
            break;
        }
        struct stat st;
        if (lstat(host, &st)) {
            err = errno;
            lector__free(host);
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t tl = readlink(host, target, sizeof target - 1);
            lector__free(host);
            if (tl < 0) {
                err = errno;
                break;
            }
            if (++hops > MAX_LINK_HOPS) {
                err = ELOOP;
                break;
            }
            target[tl] = 0;
            char *nrest = gpuenv_asprintf("%s/%s", target, p);
            if (!nrest) {
                err = -2;
                break;
            }
            lector__free(rest);
            rest = p = nrest;
            out.len = target[0] == '/' ? 0 : save;
            out.s[out.len] = 0;
            continue;
        }
        lector__free(host);
        /* a component followed by more must be a directory */
        if (!S_ISDIR(st.st_mode)) {
            while (*p == '/') p++;
            if (*p) {
                err = ENOTDIR;
                break;
            }
        }
    }
    lector__free(rest);
    if (err) {
        gpuenv_buf_free(&out);
        return err;
    }
    if (!out.len) gpuenv_buf_puts(&out, "/");
    *canon = gpuenv_buf_take(&out);
    return *canon ? 0 : -2;
}

char *gpuenv_root_realpath(const char *root, const char *path)
{
    char *c = NULL;
    return gpuenv_root_resolve(root, path, &c) == 0 ? c : NULL;
}

int gpuenv_root_stat(const char *root, const char *path, struct stat *st)
{
    char *c = NULL;
    int rc = gpuenv_root_resolve(root, path, &c);
    if (rc) return rc == -2 ? ENOMEM : rc;
    char *h = gpuenv_host_path(root, c);
    lector__free(c);
    if (!h) return ENOMEM;
    rc = stat(h, st) ? errno : 0;
    lector__free(h);
    return rc;
}

int gpuenv_root_exists(const char *root, const char *path)
{
    struct stat st;
    return gpuenv_root_stat(root, path, &st) == 0;
}

char *gpuenv_root_read_text(const char *root, const char *path, size_t max)
{
    char *r = gpuenv_root_realpath(root, path);
    /* /proc files cannot be canonicalised inside a tree: use the literal path */
    char *h = gpuenv_host_path(root, r ? r : path);
    lector__free(r);
    if (!h) return NULL;
    int fd = open(h, O_RDONLY | O_CLOEXEC);
    lector__free(h);
    if (fd < 0) return NULL;
    char *s = lector__malloc(max + 1);
    size_t n = 0;
    if (s) {
        while (n < max) {
            ssize_t k = read(fd, s + n, max - n);
            if (k <= 0) break;
            n += (size_t)k;
        }
        s[n] = 0;
    }
    close(fd);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int gpuenv_root_list(const char *root, const char *dir, gpuenv_strv *names)
{
    char *c = NULL;
    int rc = gpuenv_root_resolve(root, dir, &c);
    if (rc) return rc;
    char *h = gpuenv_host_path(root, c);
    lector__free(c);
    if (!h) return -2;
    DIR *d = opendir(h);
    lector__free(h);
    if (!d) return errno;
    struct dirent *e;
    size_t first = names->n;
    rc = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && gpuenv_strv_push(names, e->d_name)) {
            rc = -2;
            break;
        }
    closedir(d);
    if (names->n > first) /* an empty directory: names->v may still be NULL */
        qsort(names->v + first, names->n - first, sizeof *names->v, cmp_str);
    return rc;
}

int gpuenv_root_glob(const char *root, const char *pattern, gpuenv_strv *out)
{
    char *hp = gpuenv_host_path(root, pattern);
    if (!hp) return -2;
    glob_t g;
    int rc = 0;
    if (glob(hp, GLOB_ONLYDIR, NULL, &g) == 0) {
        size_t skip = gpuenv_is_live(root) ? 0 : strlen(root);
        while (skip > 1 && root[skip - 1] == '/') skip--;
        for (size_t i = 0; i < g.gl_pathc && !rc; i++)
            if (gpuenv_strv_push(out, g.gl_pathv[i] + skip)) rc = -2;
        globfree(&g);
    }
    lector__free(hp);
    return rc;
}

int gpuenv_map_file(const char *host_path, gpuenv_map *m)
{
    memset(m, 0, sizeof *m);
    int fd = open(host_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    }
    if (st.st_size == 0) {
        close(fd);
        return 0;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return e;
    m->data = p;
    m->size = (size_t)st.st_size;
    return 0;
}

int gpuenv_root_map(const char *root, const char *path, gpuenv_map *m)
{
    memset(m, 0, sizeof *m);
    char *c = NULL;
    int rc = gpuenv_root_resolve(root, path, &c);
    if (rc) return rc;
    char *h = gpuenv_host_path(root, c);
    lector__free(c);
    if (!h) return -2;
    rc = gpuenv_map_file(h, m);
    lector__free(h);
    return rc;
}

void gpuenv_unmap(gpuenv_map *m)
{
    if (m->data && m->size) munmap((void *)m->data, m->size);
    memset(m, 0, sizeof *m);
}

/* "stable release version 2.36." in libc.so.6's banner; before 2.34 the
 * file itself was named libc-2.31.so. */
static int version_in(const uint8_t *d, size_t n)
{
    static const char key[] = "release version ";
    const uint8_t *p = memmem(d, n, key, sizeof key - 1);
    if (!p) return 0;
    p += sizeof key - 1;
    size_t left = n - (size_t)(p - d);
    int major = 0, minor = 0, i = 0;
    while ((size_t)i < left && p[i] >= '0' && p[i] <= '9') major = major * 10 + (p[i++] - '0');
    if ((size_t)i >= left || p[i++] != '.') return 0;
    while ((size_t)i < left && p[i] >= '0' && p[i] <= '9') minor = minor * 10 + (p[i++] - '0');
    return major > 0 && major < 10 && minor < 100 ? major * 100 + minor : 0;
}

int gpuenv_glibc_version(const char *root)
{
    if (gpuenv_is_live(root)) {
        const char *v = gnu_get_libc_version();
        int major = 0, minor = 0;
        if (sscanf(v, "%d.%d", &major, &minor) == 2) return major * 100 + minor;
        return 0;
    }
    static const char *const libc[] = {"/lib/x86_64-linux-gnu/libc.so.6",
                                       "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                       "/lib64/libc.so.6",
                                       "/usr/lib64/libc.so.6",
                                       "/lib/libc.so.6",
                                       "/usr/lib/libc.so.6"};
    for (size_t i = 0; i < sizeof libc / sizeof *libc; i++) {
        char *real = gpuenv_root_realpath(root, libc[i]);
        if (!real) continue;
        int v = 0, major, minor;
        if (sscanf(gpuenv_basename(real), "libc-%d.%d.so", &major, &minor) == 2) v = major * 100 + minor;
        gpuenv_map m;
        if (!v && gpuenv_root_map(root, real, &m) == 0) {
            v = version_in(m.data, m.size);
            gpuenv_unmap(&m);
        }
        lector__free(real);
        if (v) return v;
    }
    return 0;
}
