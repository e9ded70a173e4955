/* ldconf.c - the directories ldconfig would put in the cache: the lines of
 * /etc/ld.so.conf and of the files its "include" lines name (glob patterns,
 * relative ones taken from the including file's directory), as ldconfig's
 * parse_conf reads them: '#' starts a comment, a line may list several
 * directories separated by spaces, tabs, ':' or ',', "hwcap" lines are
 * ignored, "dir=TYPE" keeps the directory. */
#include <fnmatch.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

#define MAX_DEPTH 8

static int add_dir(gpuenv_ldconf *c, const char *dir, size_t n, const char *file)
{
    while (n > 1 && dir[n - 1] == '/') n--;
    char *d = gpuenv_strndup(dir, n);
    if (!d) return -2;
    char *eq = strchr(d, '=');
    if (eq) *eq = 0;
    if (!d[0] || gpuenv_strv_has(&c->dirs, d)) {
        lector__free(d);
        return 0;
    }
    if (gpuenv_strv_push_owned(&c->dirs, d)) return -2;
    return gpuenv_strv_push(&c->files, file) ? -2 : 0;
}

static int parse_file(const char *root, const char *file, gpuenv_ldconf *c, int depth);

static int do_include(const char *root, const char *from, const char *pattern, gpuenv_ldconf *c, int depth)
{
    char *pat;
    if (pattern[0] == '/') {
        pat = lector__strdup(pattern);
    } else {
        char *dir = gpuenv_dirname(from);
        pat = dir ? gpuenv_asprintf("%s/%s", strcmp(dir, "/") ? dir : "", pattern) : NULL;
        lector__free(dir);
    }
    if (!pat) return -2;
    /* glob over files (not only directories): list the directory and match */
    char *dir = gpuenv_dirname(pat);
    gpuenv_strv names = {0};
    int rc = dir ? 0 : -2;
    if (!rc && gpuenv_root_list(root, dir, &names) == -2) rc = -2;
    const char *fpat = gpuenv_basename(pat);
    for (size_t i = 0; i < names.n && !rc; i++) {
        if (fnmatch(fpat, names.v[i], 0) != 0) continue;
        char *f = gpuenv_asprintf("%s/%s", strcmp(dir, "/") ? dir : "", names.v[i]);
        rc = f ? parse_file(root, f, c, depth + 1) : -2;
        lector__free(f);
    }
    gpuenv_strv_free(&names);
    lector__free(dir);
    lector__free(pat);
    return rc;
}

static int parse_file(const char *root, const char *file, gpuenv_ldconf *c, int depth)
{
    if (depth > MAX_DEPTH) return 0;
    char *text = gpuenv_root_read_text(root, file, 1 << 20);
    if (!text) return 0;
    int rc = 0;
    for (char *line = text; *line && !rc;) {
        char *end = line + strcspn(line, "\n");
        char save = *end;
        *end = 0;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *p = line + strspn(line, " \t");
        if (strncmp(p, "include", 7) == 0 && (p[7] == ' ' || p[7] == '\t')) {
            p += 7;
            for (;;) {
                p += strspn(p, " \t");
                size_t n = strcspn(p, " \t");
                if (!n) break;
                char *pat = gpuenv_strndup(p, n);
                rc = pat ? do_include(root, file, pat, c, depth) : -2;
                lector__free(pat);
                if (rc) break;
                p += n;
            }
        } else if (strncmp(p, "hwcap", 5) == 0 && (p[5] == ' ' || p[5] == '\t')) {
            /* "hwcap N NAME": not a directory */
        } else {
            for (;;) {
                p += strspn(p, " \t:,");
                size_t n = strcspn(p, " \t:,");
                if (!n) break;
                if (p[0] == '/' && (rc = add_dir(c, p, n, file))) break;
                p += n;
            }
        }
        *end = save;
        line = save ? end + 1 : end;
    }
    lector__free(text);
    return rc;
}

int gpuenv_ldconf_read(const char *root, gpuenv_ldconf *out)
{
    memset(out, 0, sizeof *out);
    int rc = parse_file(root, "/etc/ld.so.conf", out, 0);
    if (rc) gpuenv_ldconf_free(out);
    return rc;
}

void gpuenv_ldconf_free(gpuenv_ldconf *c)
{
    gpuenv_strv_free(&c->dirs);
    gpuenv_strv_free(&c->files);
}
