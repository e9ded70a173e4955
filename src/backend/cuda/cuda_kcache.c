/* cuda_kcache.c - NVRTC's compiled code kept on disk between processes
 * (the backend's kernel_cache_dir; format and its checks in
 * kcache_format.h), so that a process after the first loads a plan's
 * kernels instead of compiling them again: NVRTC costs a few hundred
 * milliseconds a plan, most of a cold start. A file is written whole under
 * a temporary name and renamed, so processes sharing the directory never
 * read half a file; a failure to read or write costs only the compile.
 *
 * A second, read-only directory holds the kernels shipped with the CUDA
 * module (the offline bundle's lib/lector-kernels, made by
 * scripts/kernels.py from src/backend/cuda/kernels.manifest), so that a
 * new machine's first process, whose cache is empty, compiles nothing it
 * covers: NVRTC's first program there costs 1-3 s. Its file NVRTC names the
 * NVRTC that built them ("NVRTC 13.0"), and their keys name that version,
 * not the one this machine has: a compiled kernel runs whatever NVRTC is
 * installed, or none, so a process whose kernels are all shipped never
 * loads NVRTC (0.24 s from a new machine's cold disk). */
/* dladdr: _GNU_SOURCE is set for the whole tree (CMake) */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/kcache_format.h"

#define KCACHE_MAX_FILE (64u << 20) /* larger is not ours: NVRTC's images are well below 1 MiB */

static int path_of(const char *dir, const char *key, size_t key_len, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/%016llx.kc", dir, (unsigned long long)kcache_hash(key, key_len));
    return n > 0 && (size_t)n < len ? 0 : -1;
}

void *cu_kcache_load(const char *dir, const char *key, size_t key_len, size_t *image_len)
{
    char path[4200];
    if (!dir || path_of(dir, key, key_len, path, sizeof path)) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    size_t n = 0;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= KCACHE_MAX_FILE &&
        (buf = cu_malloc((size_t)st.st_size))) {
        while (n < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            n += (size_t)r;
        }
    }
    close(fd);
    const uint8_t *image;
    if (!buf || kcache_parse(buf, n, key, key_len, &image, image_len)) {
        if (buf) H->log(3, "cuda: kernel cache: %s is not a compile of this program: compiling", path);
        cu_free(buf);
        return NULL;
    }
    memmove(buf, image, *image_len);
    return buf;
}

static char shipped[4096], shipped_nvrtc[64];
static pthread_once_t shipped_once = PTHREAD_ONCE_INIT;

/* LECTOR_CUDA_KERNELS_SHIPPED, else KCACHE_SHIPPED_DIR beside this module's file,
 * when it is a directory */
static void find_shipped(void)
{
    const char *set = H->testctl_str(LECTOR__TC_CUDA_KERNELS_SHIPPED);
    Dl_info info;
    if (set) {
        snprintf(shipped, sizeof shipped, "%s", set);
    } else if (dladdr((void *)find_shipped, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        const char *slash = strrchr(info.dli_fname, '/');
        int n = snprintf(shipped, sizeof shipped, "%.*s/" KCACHE_SHIPPED_DIR, (int)(slash - info.dli_fname),
                         info.dli_fname);
        if (n < 0 || (size_t)n >= sizeof shipped) shipped[0] = 0;
    }
    struct stat st;
    if (shipped[0] && (stat(shipped, &st) || !S_ISDIR(st.st_mode))) shipped[0] = 0;
    if (shipped[0] && kcache_read_nvrtc_file(shipped, shipped_nvrtc, sizeof shipped_nvrtc)) shipped_nvrtc[0] = 0;
    H->log(3, "cuda: shipped kernels: %s%s%s", shipped[0] ? shipped : "none", shipped_nvrtc[0] ? ", built by " : "",
           shipped_nvrtc);
}

const char *cu_kcache_shipped_dir(void)
{
    pthread_once(&shipped_once, find_shipped);
    return shipped[0] ? shipped : NULL;
}

const char *cu_kcache_shipped_nvrtc(void)
{
    pthread_once(&shipped_once, find_shipped);
    return shipped_nvrtc[0] ? shipped_nvrtc : NULL;
}

/* mkdir -p, mode 0700 (the kernels are code this process will run) */
static int make_dirs(const char *dir)
{
    char p[4200];
    int n = snprintf(p, sizeof p, "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof p) return -1;
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0700) && errno != EEXIST) return -1;
            *s = '/';
        }
    return mkdir(p, 0700) && errno != EEXIST ? -1 : 0;
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

void cu_kcache_store(const char *dir, const char *key, size_t key_len, const void *image, size_t image_len)
{
    char path[4200], tmp[4300];
    if (!dir || path_of(dir, key, key_len, path, sizeof path)) return;
    if (make_dirs(dir)) {
        H->log(3, "cuda: kernel cache: cannot create %s: %s", dir, strerror(errno));
        return;
    }
    static atomic_uint seq; /* two threads may store the same program */
    snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&seq, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        H->log(3, "cuda: kernel cache: cannot write %s: %s", tmp, strerror(errno));
        return;
    }
    uint8_t head[KCACHE_MAGIC_LEN + 8], len[8];
    kcache_header(head, key_len);
    kcache_length(len, image_len);
    int bad = write_all(fd, head, sizeof head) || write_all(fd, key, key_len) || write_all(fd, len, sizeof len) ||
              write_all(fd, image, image_len);
    if (close(fd)) bad = 1;
    if (bad || rename(tmp, path)) {
        H->log(3, "cuda: kernel cache: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
}
