#include "util/util.h"

#include "util/testctl.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- allocation with fault injection ---------------------------------- */

/* The countdown of the fault injection: -1 off; n > 0: the nth allocation
 * from now fails. LECTOR_FAIL_ALLOC (a test control) sets it first. */
static atomic_long alloc_countdown = -1;
static pthread_once_t alloc_once = PTHREAD_ONCE_INIT;

static void alloc_init(void)
{
    long n = lector__tc_long(LECTOR__TC_FAIL_ALLOC, -1);
    atomic_store(&alloc_countdown, n > 0 ? n : -1);
}
static atomic_long alloc_failures; /* allocations that returned NULL */

static void *counted(void *p)
{
    if (!p) atomic_fetch_add(&alloc_failures, 1);
    return p;
}

long lector__alloc_failures(void) { return atomic_load(&alloc_failures); }

static int alloc_should_fail(void)
{
    pthread_once(&alloc_once, alloc_init);
    if (atomic_load_explicit(&alloc_countdown, memory_order_relaxed) < 0) return 0;
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

int lector__reserve(void *items, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t want = *cap > 8 ? *cap * 2 : 16, bytes;
    if (want < need || want < *cap) want = need;
    void *old;
    memcpy(&old, items, sizeof old); /* items is a T **: read the pointer without type-punning it */
    if (lector__mul_size(want, elem, &bytes)) return -1;
    void *grown = lector__realloc(old, bytes);
    if (!grown) return -1;
    memcpy(items, &grown, sizeof grown);
    *cap = want;
    return 0;
}

void *lector__aligned_alloc(size_t size)
{
    if (alloc_should_fail()) return counted(NULL);
    void *p = NULL;
    if (posix_memalign(&p, 64, size ? size : 64) != 0) return counted(NULL);
    return p;
}

void lector__free(void *p) { free(p); }

void lector__fail_alloc_after(long n)
{
    pthread_once(&alloc_once, alloc_init);
    atomic_store(&alloc_countdown, n > 0 ? n : -1);
}

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

/* ---- errors ----------------------------------------------------------- */

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

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

lector_status lector__read_file(const char *path, size_t max_size, uint8_t **data, size_t *size, lector_error *err)
{
    *data = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO without a writer (or a device) must not
     * block; only regular files are read, and those never block anyway */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return lector__error(err, LECTOR_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return lector__error(err, LECTOR_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return lector__error(err, LECTOR_ERR_IO, "%s: not a regular file (%s)", path, file_kind(st.st_mode));
    }
    if (max_size && (uint64_t)st.st_size > max_size) {
        close(fd);
        return lector__error(err, LECTOR_ERR_LIMIT, "%s: file is %lld bytes, over the file size limit of %zu bytes",
                             path, (long long)st.st_size, max_size);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = lector__malloc(n + 1);
    if (!buf) {
        close(fd);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory reading %zu bytes", path, n);
    }
    /* a file that grows while it is read is read up to its size at fstat */
    size_t got = 0;
    int e = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) e = errno;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        lector__free(buf);
        return lector__error(err, LECTOR_ERR_IO, "%s: read error: %s", path,
                             e ? strerror(e) : "the file shrank while it was read");
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return LECTOR_OK;
}
