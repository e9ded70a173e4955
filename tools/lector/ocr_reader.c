/* ocr_reader.c - see ocr_reader.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocr_reader.h"

struct ocr_reader {
    lector_engine *engine;
    size_t max_stdin; /* the file-size limit, for standard input too */
    ocr_reader_cb cb;
    void *user;
};

/* Standard input up to `max` bytes (the file-size limit): NULL with
 * *over = 1 when there is more, NULL with *over = 0 on a read error or when
 * out of memory. */
static unsigned char *read_stdin(size_t max, size_t *n, int *over)
{
    size_t cap = 1 << 20, len = 0;
    *over = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (len == cap) {
            if (len > max) break;
            size_t want = cap * 2 > max + 1 ? max + 1 : cap * 2; /* one byte past the limit tells */
            unsigned char *nb = realloc(buf, want);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap = want;
        }
        size_t got = fread(buf + len, 1, cap - len, stdin);
        len += got;
        if (got == 0) break;
    }
    if (len > max || ferror(stdin)) {
        *over = len > max;
        free(buf);
        return NULL;
    }
    *n = len;
    return buf;
}

ocr_reader *ocr_reader_create(lector_engine *engine, size_t max_stdin, ocr_reader_cb cb, void *user)
{
    ocr_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->engine = engine;
    r->max_stdin = max_stdin;
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
        int over = 0;
        unsigned char *buf = read_stdin(r->max_stdin, &n, &over);
        if (!buf && over) {
            st = err.code = LECTOR_ERR_LIMIT;
            snprintf(err.message, sizeof err.message,
                     "<stdin>: more than the file size limit of %zu bytes (--max-file-size)", r->max_stdin);
        } else if (!buf) {
            st = err.code = LECTOR_ERR_IO;
            snprintf(err.message, sizeof err.message, "<stdin>: cannot read standard input: %s",
                     ferror(stdin) ? strerror(errno) : "out of memory");
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
