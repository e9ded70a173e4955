/* inputs.c - see inputs.h. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "inputs.h"

/* Deeper trees are reported as a failure rather than walked. */
#define MAX_DEPTH 256

static const char *const image_exts[] = {"jpg", "jpeg", "jpe", "png", "tif", "tiff", "webp", "bmp", "pbm",
                                         "pgm", "ppm",  "pnm", "jp2", "j2k", "j2c",  "jpc",  "jpf", "jpx"};

int batch_inputs_is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *slash = strrchr(name, '/');
    if (!dot || (slash && dot < slash) || dot == name || dot[-1] == '/') return 0;
    for (size_t i = 0; i < sizeof image_exts / sizeof image_exts[0]; i++)
        if (!strcasecmp(dot + 1, image_exts[i])) return 1;
    return 0;
}

static int add(batch_inputs *in, const char *path, const char *rel, const char *error)
{
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 64;
        batch_input *items = realloc(in->items, cap * sizeof *items);
        if (!items) return -1;
        in->items = items;
        in->cap = cap;
    }
    batch_input *it = &in->items[in->n];
    it->path = strdup(path);
    it->rel = strdup(rel);
    it->error = error ? strdup(error) : NULL;
    it->duplicate = 0;
    if (!it->path || !it->rel || (error && !it->error)) {
        free(it->path);
        free(it->rel);
        free(it->error);
        return -1;
    }
    in->n++;
    return 0;
}

/* `path` less its empty, "." and ".." parts: the relative name of a file
 * named directly. */
static char *normalised_rel(const char *path)
{
    size_t n = strlen(path);
    char *out = malloc(n + 6);
    if (!out) return NULL;
    size_t o = 0;
    for (const char *p = path; *p;) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int skip = len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.');
        if (!skip) {
            if (o) out[o++] = '/';
            memcpy(out + o, p, len);
            o += len;
        }
        p += len;
        if (*p == '/') p++;
    }
    if (!o) {
        memcpy(out, "input", 5);
        o = 5;
    }
    out[o] = 0;
    return out;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct dir_id {
    dev_t dev;
    ino_t ino;
} dir_id;

typedef struct walker {
    batch_inputs *out;
    const batch_inputs_options *opt;
    const char *root_real; /* realpath of the directory named */
    size_t root_len;
    dir_id stack[MAX_DEPTH]; /* the directories on the current path */
    int depth;
} walker;

static int add_error(walker *w, const char *path, const char *rel, const char *what, int e)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s: %s: %s", path, what, strerror(e));
    return add(w->out, path, rel[0] ? rel : ".", msg);
}

static int inside_root(const walker *w, const char *path)
{
    char *real = realpath(path, NULL);
    if (!real) return 0;
    int in = !strncmp(real, w->root_real, w->root_len) &&
             (real[w->root_len] == '/' || real[w->root_len] == 0 || w->root_len == 1);
    free(real);
    return in;
}

static int walk(walker *w, const char *dir, const char *rel, const struct stat *dst)
{
    for (int i = 0; i < w->depth; i++)
        if (w->stack[i].dev == dst->st_dev && w->stack[i].ino == dst->st_ino) return 0; /* a loop */
    if (w->depth == MAX_DEPTH) return add_error(w, dir, rel, "directory tree too deep", ELOOP);
    DIR *d = opendir(dir);
    if (!d) return add_error(w, dir, rel, "cannot read directory", errno);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 64;
            char **nn = realloc(names, c * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
            cap = c;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc == 0 && n) qsort(names, n, sizeof *names, cmp_names);
    w->stack[w->depth].dev = dst->st_dev;
    w->stack[w->depth].ino = dst->st_ino;
    w->depth++;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *path = NULL, *sub = NULL;
        if (asprintf(&path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]) < 0) path = NULL;
        if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "", names[i]) < 0) sub = NULL;
        if (!path || !sub) {
            rc = -1;
        } else {
            struct stat lst, st;
            if (lstat(path, &lst) == 0) {
                int link = S_ISLNK(lst.st_mode), ok = 1;
                if (link && !w->opt->follow_symlinks && stat(path, &st) == 0 && !inside_root(w, path)) {
                    w->out->symlinks_skipped++;
                    ok = 0;
                }
                if (ok && (link ? stat(path, &st) : (st = lst, 0)) == 0) {
                    if (S_ISDIR(st.st_mode))
                        rc = walk(w, path, sub, &st);
                    else if (S_ISREG(st.st_mode) && batch_inputs_is_image_name(names[i]))
                        rc = add(w->out, path, sub, NULL);
                } else if (ok && link && batch_inputs_is_image_name(names[i])) {
                    rc = add(w->out, path, sub, NULL); /* a dangling link: fails when read, by name */
                }
            }
        }
        free(path);
        free(sub);
    }
    w->depth--;
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

static int add_directory(batch_inputs *out, const char *dir, const struct stat *st, const batch_inputs_options *opt)
{
    walker *w = calloc(1, sizeof *w);
    if (!w) return -1;
    w->out = out;
    w->opt = opt;
    char *real = realpath(dir, NULL);
    int rc;
    if (!real) {
        rc = add_error(w, dir, "", "cannot resolve directory", errno);
    } else {
        w->root_real = real;
        w->root_len = strlen(real);
        rc = walk(w, dir, "", st);
    }
    free(real);
    free(w);
    return rc;
}

static int add_one(batch_inputs *out, const char *arg, const batch_inputs_options *opt)
{
    if (!strcmp(arg, "-")) return add(out, "-", "stdin", NULL);
    struct stat st;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) return add_directory(out, arg, &st, opt);
    char *rel = normalised_rel(arg);
    if (!rel) return -1;
    int rc = add(out, arg, rel, NULL);
    free(rel);
    return rc;
}

static int add_list(batch_inputs *out, const char *list, const batch_inputs_options *opt)
{
    int from_stdin = !strcmp(list, "-");
    FILE *f = from_stdin ? (opt->list_stdin ? opt->list_stdin : stdin) : fopen(list, "r");
    if (!f) {
        char msg[512], *rel = normalised_rel(list);
        if (!rel) return -1;
        snprintf(msg, sizeof msg, "%s: cannot read the list: %s", list, strerror(errno));
        int rc = add(out, list, rel, msg);
        free(rel);
        return rc;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        /* A line is a path: "-" and "@" have no special meaning inside a list. */
        struct stat st;
        if (stat(line, &st) == 0 && S_ISDIR(st.st_mode)) {
            rc = add_directory(out, line, &st, opt);
        } else {
            char *rel = normalised_rel(line);
            rc = rel ? add(out, line, rel, NULL) : -1;
            free(rel);
        }
    }
    free(line);
    if (!from_stdin) fclose(f);
    return rc;
}

int batch_inputs_collect(batch_inputs *out, const char *const *args, size_t n, const batch_inputs_options *opt,
                         char *msg, size_t msg_len)
{
    batch_inputs_options defaults = {0, NULL};
    if (!opt) opt = &defaults;
    int stdin_used = 0;
    for (size_t i = 0; i < n; i++) {
        const char *a = args[i];
        int uses_stdin = !strcmp(a, "-") || !strcmp(a, "@-");
        if (uses_stdin && stdin_used && !opt->list_stdin) {
            snprintf(msg, msg_len, "standard input can be read once: '-' and '@-' together or twice");
            return -1;
        }
        stdin_used |= uses_stdin;
        int rc = a[0] == '@' && a[1] ? add_list(out, a + 1, opt) : add_one(out, a, opt);
        if (rc) {
            snprintf(msg, msg_len, "out of memory while listing the inputs");
            return -1;
        }
    }
    return 0;
}

typedef struct rel_index {
    const char *rel;
    size_t i;
} rel_index;

static int cmp_rel_index(const void *a, const void *b)
{
    const rel_index *x = a, *y = b;
    int c = strcmp(x->rel, y->rel);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

long batch_inputs_mark_duplicates(batch_inputs *in)
{
    if (in->n < 2) return 0;
    rel_index *ix = malloc(in->n * sizeof *ix);
    if (!ix) return -1;
    for (size_t i = 0; i < in->n; i++) ix[i] = (rel_index){in->items[i].rel, i};
    qsort(ix, in->n, sizeof *ix, cmp_rel_index);
    long marked = 0;
    size_t first_of_run = 0;
    for (size_t k = 1; k < in->n; k++) {
        if (strcmp(ix[k].rel, ix[first_of_run].rel)) {
            first_of_run = k;
            continue;
        }
        batch_input *it = &in->items[ix[k].i];
        if (it->error) continue;
        const batch_input *first = &in->items[ix[first_of_run].i];
        char msg[1024];
        snprintf(msg, sizeof msg, "%s: its outputs would be named as those of %s (%s)", it->path, first->path, it->rel);
        if (!(it->error = strdup(msg))) {
            free(ix);
            return -1;
        }
        it->duplicate = 1;
        marked++;
    }
    free(ix);
    return marked;
}

void batch_inputs_free(batch_inputs *in)
{
    if (!in) return;
    for (size_t i = 0; i < in->n; i++) {
        free(in->items[i].path);
        free(in->items[i].rel);
        free(in->items[i].error);
    }
    free(in->items);
    memset(in, 0, sizeof *in);
}
