/* strings.c - growable buffers, string vectors and version strings. */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"
#include "util/util.h"

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
    char *s = lector__realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    if (!b->s) s[0] = 0;
    b->s = s;
    b->cap = cap;
    return 0;
}

void gpuenv_buf_putn(gpuenv_buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n)) return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void gpuenv_buf_puts(gpuenv_buf *b, const char *s) { gpuenv_buf_putn(b, s, strlen(s)); }

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
    lector__free(b->s);
    memset(b, 0, sizeof *b);
}

char *gpuenv_strdup(const char *s) { return s ? lector__strdup(s) : NULL; }

char *gpuenv_strndup(const char *s, size_t n)
{
    size_t l = strnlen(s, n);
    char *d = lector__malloc(l + 1);
    if (!d) return NULL;
    memcpy(d, s, l);
    d[l] = 0;
    return d;
}

char *gpuenv_vasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return NULL;
    char *s = lector__malloc((size_t)n + 1);
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *gpuenv_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = gpuenv_vasprintf(fmt, ap);
    va_end(ap);
    return s;
}

int gpuenv_strv_push_owned(gpuenv_strv *sv, char *s)
{
    if (!s) return -1;
    if (lector__reserve(&sv->v, &sv->cap, sv->n + 1, sizeof *sv->v)) {
        lector__free(s);
        return -1;
    }
    sv->v[sv->n++] = s;
    return 0;
}

int gpuenv_strv_push(gpuenv_strv *sv, const char *s) { return gpuenv_strv_push_owned(sv, lector__strdup(s ? s : "")); }

int gpuenv_strv_has(const gpuenv_strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], s) == 0) return 1;
    return 0;
}

void gpuenv_strv_free(gpuenv_strv *sv)
{
    for (size_t i = 0; i < sv->n; i++) lector__free(sv->v[i]);
    lector__free(sv->v);
    memset(sv, 0, sizeof *sv);
}

int gpuenv_strv_split(gpuenv_strv *sv, const char *list, const char *seps)
{
    if (!list) return 0;
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, seps);
        if (gpuenv_strv_push_owned(sv, gpuenv_strndup(p, n))) return -1;
        if (!p[n]) break;
        p += n + 1;
    }
    return 0;
}

char *gpuenv_strv_join(const gpuenv_strv *sv, const char *sep)
{
    gpuenv_buf b = {0};
    gpuenv_buf_puts(&b, "");
    for (size_t i = 0; i < sv->n; i++) gpuenv_buf_printf(&b, "%s%s", i ? sep : "", sv->v[i]);
    return gpuenv_buf_take(&b);
}

int gpuenv_vercmp(const char *a, const char *b)
{
    while (*a || *b) {
        while (*a && !isdigit((unsigned char)*a)) a++;
        while (*b && !isdigit((unsigned char)*b)) b++;
        if (!*a || !*b) return (*a != 0) - (*b != 0);
        unsigned long long x = 0, y = 0;
        while (isdigit((unsigned char)*a)) x = x * 10 + (unsigned)(*a++ - '0');
        while (isdigit((unsigned char)*b)) y = y * 10 + (unsigned)(*b++ - '0');
        if (x != y) return x < y ? -1 : 1;
    }
    return 0;
}

int gpuenv_ver_same(const char *a, const char *b)
{
    if (!*a || !*b) return 1;
    while (*a && *b) {
        if (!isdigit((unsigned char)*a) || !isdigit((unsigned char)*b)) return 1;
        unsigned long long x = 0, y = 0;
        while (isdigit((unsigned char)*a)) x = x * 10 + (unsigned)(*a++ - '0');
        while (isdigit((unsigned char)*b)) y = y * 10 + (unsigned)(*b++ - '0');
        if (x != y) return 0;
        if (*a != '.' || *b != '.') return 1;
        a++;
        b++;
    }
    return 1;
}

char *gpuenv_soname_version(const char *file_name)
{
    const char *base = gpuenv_basename(file_name);
    const char *so = strstr(base, ".so");
    if (!so) return lector__strdup("");
    so += 3;
    if (*so == '.') so++;
    return lector__strdup(so);
}

int gpuenv_ver_major(const char *v)
{
    if (!v || !isdigit((unsigned char)v[0])) return -1;
    int m = 0;
    while (isdigit((unsigned char)*v) && m < 100000) m = m * 10 + (*v++ - '0');
    return m;
}

const char *gpuenv_basename(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

char *gpuenv_dirname(const char *p)
{
    const char *s = strrchr(p, '/');
    if (!s) return lector__strdup(".");
    if (s == p) return lector__strdup("/");
    return gpuenv_strndup(p, (size_t)(s - p));
}

char *gpuenv_shell_quote(const char *s)
{
    int plain = *s != 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("/._-+:=,@%", *p)) plain = 0;
    if (plain) return lector__strdup(s);
    gpuenv_buf b = {0};
    gpuenv_buf_puts(&b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            gpuenv_buf_puts(&b, "'\\''");
        else
            gpuenv_buf_putn(&b, p, 1);
    }
    gpuenv_buf_puts(&b, "'");
    return gpuenv_buf_take(&b);
}

const char *gpuenv_env_or(const char *name, const char *dflt)
{
    const char *e = getenv(name);
    return e && *e ? e : dflt;
}

const char *gpuenv_code_name_of(const gpuenv_code_name *t, size_t n, int code, const char *unknown)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].code == code) return t[i].name;
    return unknown;
}
