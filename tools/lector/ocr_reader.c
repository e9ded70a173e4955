/* ocr_reader.c - see ocr_reader.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocr_reader.h"

struct ocr_reader {
    lector_engine *engine;
    ocr_reader_cb cb;
    void *user;
};

static unsigned char *read_stdin(size_t *n)
{
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (len == cap) {
            unsigned char *nb = cap > ((size_t)1 << 30) ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, stdin);
        len += got;
        if (got == 0) break;
    }
    *n = len;
    return buf;
}

ocr_reader *ocr_reader_create(lector_engine *engine, ocr_reader_cb cb, void *user)
{
    ocr_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->engine = engine;
    r->cb = cb;
    r->user = user;
    return r;
}

int ocr_reader_add(ocr_reader *r, const char *path, size_t tag)
{
    lector_result *result = NULL;
    lector_error err = {0};
    lector_status st;
    if (!strcmp(path, "-")) {
        size_t n = 0;
        unsigned char *buf = read_stdin(&n);
        if (!buf) {
            st = err.code = LECTOR_ERR_IO;
            snprintf(err.message, sizeof err.message, "<stdin>: cannot read standard input");
        } else {
            st = lector_read_memory(r->engine, buf, n, "<stdin>", NULL, &result, &err);
        }
        free(buf);
    } else {
        st = lector_read_file(r->engine, path, NULL, &result, &err);
    }
    if (st) {
        lector_result_free(result);
        result = NULL;
    }
    r->cb(tag, result, st, &err, r->user);
    return 0;
}

void ocr_reader_finish(ocr_reader *r) { (void)r; }

void ocr_reader_free(ocr_reader *r)
{
    if (!r) return;
    ocr_reader_finish(r);
    free(r);
}
