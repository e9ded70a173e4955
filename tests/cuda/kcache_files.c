/*
 * kcache_files DIR - every file of a kernel cache directory is one the CUDA
 * module would read (src/backend/cuda/kcache_format.c, the module's own
 * parser and file-name hash, is the oracle): named by the hash of the key it
 * holds, parsed whole, its key naming NVRTC's version and a GPU
 * architecture. Run on scripts/kernels.py's output (ctest
 * cuda.kernels_format), so that its writer and the module's reader cannot
 * drift apart unseen on a machine without a GPU.
 * Exit: 0 every file good (and at least one), 1 otherwise.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/kcache_format.h"

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int check(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return printf("FAIL %s: cannot open\n", name), 1;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536))) return fclose(f), 1;
        size_t r = fread(buf + n, 1, cap - n, f);
        if (!r) break;
        n += r;
    }
    fclose(f);
    int bad = 0;
    uint64_t klen = n >= KCACHE_MAGIC_LEN + 8 ? le64(buf + KCACHE_MAGIC_LEN) : 0;
    const char *key = (const char *)buf + KCACHE_MAGIC_LEN + 8;
    const uint8_t *image;
    size_t image_len;
    char want[64];
    if (!klen || klen > n - KCACHE_MAGIC_LEN - 8) {
        bad = printf("FAIL %s: no key\n", name);
    } else if (kcache_parse(buf, n, key, (size_t)klen, &image, &image_len) || !image_len) {
        bad = printf("FAIL %s: the module's parser refuses it\n", name);
    } else if (snprintf(want, sizeof want, "%016" PRIx64 ".kc", kcache_hash(key, (size_t)klen)), strcmp(want, name)) {
        bad = printf("FAIL %s: the module would look for it as %s\n", name, want);
    } else if (strncmp(key, "NVRTC ", 6) || !strstr(key, "\n--gpu-architecture=sm_")) {
        bad = printf("FAIL %s: its key names no NVRTC version or architecture\n", name);
    }
    free(buf);
    return bad != 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: kcache_files DIR\n"), 2;
    DIR *d = opendir(argv[1]);
    if (!d) return printf("FAIL cannot open %s\n", argv[1]), 1;
    int files = 0, bad = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        files++;
        bad += check(argv[1], e->d_name);
    }
    closedir(d);
    printf("kcache_files: %d files, %d bad\n", files, bad);
    return bad || !files;
}
