/* ocr_reader.c - see ocr_reader.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocr_reader.h"

struct ocr_reader {
    lector_stream *stream;
    size_t max_stdin; /* the file-size limit, for standard input too */
    ocr_reader_cb cb;
    void *user;
};

/* What travels with an input through the stream: its tag, standard input's
 * bytes (read until its callback), and an error found before the engine saw it. */
typedef struct pushed {
    size_t tag;
    unsigned char *buf;
    lector_status st;
    lector_error err;
} pushed;

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

/* The stream's delivery (in the order added, never two at once). */
static void on_item(const lector_stream_item *it, void *user)
{
    ocr_reader *r = user;
    pushed *p = it->user;
    if (p->st) { /* standard input could not be read: its error, in its place */
        lector_result_free(it->result);
        r->cb(p->tag, NULL, p->st, &p->err, r->user);
    } else {
        r->cb(p->tag, it->result, it->status, it->status ? it->error : NULL, r->user);
    }
    free(p->buf);
    free(p);
}

ocr_reader *ocr_reader_create(lector_engine *engine, size_t max_stdin, ocr_reader_cb cb, void *user, lector_error *err)
{
    ocr_reader *r = calloc(1, sizeof *r);
    if (!r) {
        err->code = LECTOR_ERR_OUT_OF_MEMORY;
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    r->max_stdin = max_stdin;
    r->cb = cb;
    r->user = user;
    if (lector_stream_create(engine, NULL, on_item, r, &r->stream, err)) {
        free(r);
        return NULL;
    }
    return r;
}

int ocr_reader_add(ocr_reader *r, const char *path, size_t tag)
{
    pushed *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->tag = tag;
    lector_error err;
    lector_status st;
    if (!strcmp(path, "-")) {
        size_t n = 0;
        int over = 0;
        p->buf = read_stdin(r->max_stdin, &n, &over);
        if (!p->buf && over) {
            p->st = p->err.code = LECTOR_ERR_LIMIT;
            snprintf(p->err.message, sizeof p->err.message,
                     "<stdin>: more than the file size limit of %zu bytes (--max-file-size)", r->max_stdin);
        } else if (!p->buf) {
            p->st = p->err.code = LECTOR_ERR_IO;
            snprintf(p->err.message, sizeof p->err.message, "<stdin>: cannot read standard input: %s",
                     ferror(stdin) ? strerror(errno) : "out of memory");
        }
        /* a failed read still goes through the stream, so that it is delivered in its place */
        st = lector_stream_push_memory(r->stream, p->buf ? (const void *)p->buf : "", p->buf ? n : 0, "<stdin>", p,
                                       &err);
    } else {
        st = lector_stream_push_file(r->stream, path, p, &err);
    }
    if (st) { /* only out of memory or a misuse: nothing was queued */
        free(p->buf);
        free(p);
        return -1;
    }
    return 0;
}

void ocr_reader_finish(ocr_reader *r)
{
    lector_error err;
    if (r && r->stream) lector_stream_finish(r->stream, &err);
}

void ocr_reader_free(ocr_reader *r)
{
    if (!r) return;
    lector_stream_free(r->stream); /* finishes it */
    free(r);
}
