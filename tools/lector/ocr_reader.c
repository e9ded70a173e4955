/* ocr_reader.c - see ocr_reader.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocr_reader.h"

typedef struct queued {
    const char *path;
    size_t tag;
} queued;

struct ocr_reader {
    lector_engine *engine;
    queued *q;
    size_t n, cap, next;
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

ocr_reader *ocr_reader_create(lector_engine *engine)
{
    ocr_reader *r = calloc(1, sizeof *r);
    if (r) r->engine = engine;
    return r;
}

int ocr_reader_add(ocr_reader *r, const char *path, size_t tag)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        queued *q = realloc(r->q, cap * sizeof *q);
        if (!q) return -1;
        r->q = q;
        r->cap = cap;
    }
    r->q[r->n++] = (queued){path, tag};
    return 0;
}

int ocr_reader_next(ocr_reader *r, size_t *tag, lector_result **result, lector_status *status, lector_error *err)
{
    if (r->next == r->n) return 0;
    const queued *in = &r->q[r->next++];
    *tag = in->tag;
    *result = NULL;
    memset(err, 0, sizeof *err);
    if (!strcmp(in->path, "-")) {
        size_t n = 0;
        unsigned char *buf = read_stdin(&n);
        if (!buf) {
            *status = err->code = LECTOR_ERR_IO;
            snprintf(err->message, sizeof err->message, "<stdin>: cannot read standard input");
        } else {
            *status = lector_read_memory(r->engine, buf, n, "<stdin>", NULL, result, err);
        }
        free(buf);
    } else {
        *status = lector_read_file(r->engine, in->path, NULL, result, err);
    }
    return 1;
}

void ocr_reader_free(ocr_reader *r)
{
    if (!r) return;
    free(r->q);
    free(r);
}
