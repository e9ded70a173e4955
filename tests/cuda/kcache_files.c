/*
 * kcache_files DIR - every file of a kernel cache directory is one the CUDA
 * module would read (src/backend/cuda/kcache_format.c, the module's own
 * parser and file-name hash, is the oracle): named by the hash of the key it
 * holds, parsed whole, its key naming NVRTC's version and a GPU
 * architecture. Run on scripts/kernels.py's output (ctest
 * cuda.kernels_format), so that its writer and the module's reader cannot
 * drift apart unseen on a machine without a GPU.
 * --shipped: DIR is a shipped directory, so its file NVRTC must name a
 * version (the module's kcache_nvrtc_line) and every key's first line must
 * be that version, under which the module looks for them.
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

static char nvrtc[64]; /* DIR/NVRTC's version line, with --shipped */

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
    } else if (nvrtc[0] && (strncmp(key, nvrtc, strlen(nvrtc)) || key[strlen(nvrtc)] != '\n')) {
        bad = printf("FAIL %s: its key's NVRTC is not the directory's %s\n", name, nvrtc);
    }
    free(buf);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int shipped = argc == 3 && !strcmp(argv[1], "--shipped");
    if (argc != 2 + shipped) return fprintf(stderr, "usage: kcache_files [--shipped] DIR\n"), 2;
    const char *dir = argv[1 + shipped];
    if (shipped) {
        if (kcache_read_nvrtc_file(dir, nvrtc, sizeof nvrtc))
            return printf("FAIL %s/NVRTC names no NVRTC version\n", dir), 1;
        printf("kcache_files: built by %s\n", nvrtc);
    }
    DIR *d = opendir(dir);
    if (!d) return printf("FAIL cannot open %s\n", dir), 1;
    int files = 0, bad = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || (shipped && !strcmp(e->d_name, "NVRTC"))) continue;
        files++;
        bad += check(dir, e->d_name);
    }
    closedir(d);
    printf("kcache_files: %d files, %d bad\n", files, bad);
    return bad || !files;
}
