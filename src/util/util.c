#include "util/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- allocation with fault injection ---------------------------------- */

static atomic_long alloc_countdown = -2; /* -2: not read yet, -1: disabled */
static atomic_long alloc_failures;       /* allocations that returned NULL */

static void *counted(void *p)
{
    if (!p) atomic_fetch_add(&alloc_failures, 1);
    return p;
}

long lector__alloc_failures(void) { return atomic_load(&alloc_failures); }

static int alloc_should_fail(void)
{
    long v = atomic_load(&alloc_countdown);
    if (v == -2) {
        const char *s = getenv("LECTOR_FAIL_ALLOC");
        long n = s ? strtol(s, NULL, 10) : -1;
        long expected = -2;
        atomic_compare_exchange_strong(&alloc_countdown, &expected, n > 0 ? n : -1);
        v = atomic_load(&alloc_countdown);
    }
    if (v < 0) return 0;
    return atomic_fetch_sub(&alloc_countdown, 1) == 1;
}

void *lector__malloc(size_t size)
{
    if (alloc_should_fail()) return counted(NULL);
    return counted(malloc(size ? size : 1));
}

void *lector__calloc(size_t n, size_t size)
{
    if (alloc_should_fail()) return counted(NULL);
    return counted(calloc(n ? n : 1, size ? size : 1));
}

void *lector__realloc(void *p, size_t size)
{
    if (alloc_should_fail()) return counted(NULL);
    return counted(realloc(p, size ? size : 1));
}

void *lector__aligned_alloc(size_t size)
{
    if (alloc_should_fail()) return counted(NULL);
    void *p = NULL;
    if (posix_memalign(&p, 64, size ? size : 64) != 0) return counted(NULL);
    return p;
}

void lector__free(void *p) { free(p); }

void lector__fail_alloc_after(long n) { atomic_store(&alloc_countdown, n > 0 ? n : -1); }

char *lector__strdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = lector__malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int lector__mul_size(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

/* ---- errors and logging ---------------------------------------------- */

lector_status lector__error(lector_error *err, lector_status code, const char *fmt, ...)
{
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

void lector__error_prefix(lector_error *err, const char *fmt, ...)
{
    if (!err) return;
    char prefix[256], old[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    size_t np = strlen(prefix), no = strlen(old), cap = sizeof err->message - 1;
    /* prefix, ": ", then as much of the old message as fits */
    if (np > cap) np = cap;
    memcpy(err->message, prefix, np);
    size_t o = np;
    if (o + 2 <= cap) {
        memcpy(err->message + o, ": ", 2);
        o += 2;
    }
    if (no > cap - o) no = cap - o;
    memcpy(err->message + o, old, no);
    err->message[o + no] = 0;
}

static int log_level(void)
{
    static atomic_int level = -1;
    int l = atomic_load(&level);
    if (l < 0) {
        const char *s = getenv("LECTOR_LOG");
        l = LECTOR_LOG_WARN;
        if (s) {
            if (!strcmp(s, "error"))
                l = LECTOR_LOG_ERROR;
            else if (!strcmp(s, "info"))
                l = LECTOR_LOG_INFO;
            else if (!strcmp(s, "debug"))
                l = LECTOR_LOG_DEBUG;
        }
        atomic_store(&level, l);
    }
    return l;
}

void lector__log(lector_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if ((int)level > log_level()) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "lector: %s: %s\n", names[level], buf);
}

double lector__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int lector__physical_cores(void)
{
    /* Count distinct (physical id, core id) pairs; hyperthreads share a core
     * and oversubscribing them slows GEMM-bound work. */
    FILE *f = fopen("/proc/cpuinfo", "r");
    int pairs[1024][2], n = 0, phys = 0, core = -1;
    char line[256];
    if (f) {
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "physical id", 11))
                phys = atoi(strchr(line, ':') + 1);
            else if (!strncmp(line, "core id", 7)) {
                core = atoi(strchr(line, ':') + 1);
                int seen = 0;
                for (int i = 0; i < n; i++)
                    if (pairs[i][0] == phys && pairs[i][1] == core) seen = 1;
                if (!seen && n < 1024) {
                    pairs[n][0] = phys;
                    pairs[n][1] = core;
                    n++;
                }
            }
        }
        fclose(f);
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) n = online > 0 ? (int)online : 1;
    if (online > 0 && n > online) n = (int)online;
    return n;
}

lector_status lector__read_file(const char *path, size_t max_size, uint8_t **data, size_t *size, lector_error *err)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return lector__error(err, LECTOR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return lector__error(err, LECTOR_ERR_IO, "%s: not a regular file", path);
    }
    if (max_size && (uint64_t)st.st_size > max_size) {
        fclose(f);
        return lector__error(err, LECTOR_ERR_LIMIT, "%s: file is %lld bytes, over the limit of %zu", path,
                             (long long)st.st_size, max_size);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = lector__malloc(n + 1);
    if (!buf) {
        fclose(f);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory reading %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != n) {
        lector__free(buf);
        return lector__error(err, LECTOR_ERR_IO, "%s: read error", path);
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return LECTOR_OK;
}
