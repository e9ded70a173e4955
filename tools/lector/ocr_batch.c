/* ocr_batch.c - see ocr_batch.h. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch/atomic_file.h"
#include "batch/progress.h"
#include "batch/summary.h"
#include "ocr_batch.h"
#include "ocr_reader.h"

enum { INPUT_READ, INPUT_LISTING_ERROR, INPUT_ALREADY_DONE };

/* The run's state. Inputs are handled in order: one that is not read (a
 * listing error, already done) waits until every input before it is handled,
 * so the stream, the messages and the summary keep the input order. Touched
 * by the reader's callback (which may run on another thread, never twice at
 * once) and by the main thread only before the first add and after finish. */
typedef struct run {
    const ocr_batch_options *o;
    batch_inputs *inputs;
    unsigned char *state;
    size_t next; /* inputs before this one are handled */
    batch_summary summary;
    batch_progress progress;
    render_stream stream;
    atomic_int stop; /* --max-failures reached: the rest is left */
    int oom;
} run;

/* Every requested output of the input exists (written atomically: complete). */
static int outputs_complete(const run *b, const batch_input *it)
{
    for (size_t f = 0; f < b->o->n_formats; f++) {
        char *path = atomic_file_output_path(b->o->out_dir, it->rel, render_format_name(b->o->formats[f]));
        struct stat st;
        int ok = path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
        free(path);
        if (!ok) return 0;
    }
    return 1;
}

/* A killed run's temporary files of this input, if any. */
static void remove_temps(const run *b, const batch_input *it)
{
    for (size_t f = 0; b->o->out_dir && f < b->o->n_formats; f++) {
        char *path = atomic_file_output_path(b->o->out_dir, it->rel, render_format_name(b->o->formats[f]));
        char *temp = path ? atomic_file_temp_path(path) : NULL;
        if (temp) unlink(temp);
        free(temp);
        free(path);
    }
}

static void fail(run *b, const batch_input *it, const char *message, const char *code)
{
    b->summary.counts.failed++;
    if (batch_summary_add_failure(&b->summary, it->path, it->rel, message, code)) b->oom = 1;
    char line[1200];
    snprintf(line, sizeof line, "lector: %s (%s)", message, code);
    batch_progress_message(&b->progress, line);
    if (b->o->stream) render_stream_error(&b->stream, it->path, message);
    remove_temps(b, it);
}

static int write_outputs(const run *b, const batch_input *it, const lector_result *r, char *msg, size_t len)
{
    for (size_t f = 0; f < b->o->n_formats; f++) {
        char *path = atomic_file_output_path(b->o->out_dir, it->rel, render_format_name(b->o->formats[f]));
        if (!path) {
            snprintf(msg, len, "%s: out of memory", it->path);
            return -1;
        }
        atomic_file af;
        int rc = atomic_file_open(&af, path, msg, len);
        free(path);
        if (rc) return -1;
        render_single(af.f, b->o->formats[f], it->path, r);
        if (atomic_file_commit(&af, msg, len)) return -1;
    }
    return 0;
}

/* --draw: OUT.png for the first input, OUT-2.png, ... for the others. */
static int draw(const run *b, size_t index, const batch_input *it, const lector_result *r, char *msg, size_t len)
{
    const char *d = b->o->draw_path;
    char path[4096];
    const char *dot = strrchr(d, '.');
    if (index == 0 || !dot)
        snprintf(path, sizeof path, "%s", d);
    else
        snprintf(path, sizeof path, "%.*s-%zu%s", (int)(dot - d), d, index + 1, dot);
    lector_error err = {0};
    if (lector_draw_result(it->path, r, 0, path, &err)) {
        snprintf(msg, len, "--draw: %s", err.message);
        return -1;
    }
    return 0;
}

static void handle_result(run *b, size_t i, lector_result *r, lector_status st, const lector_error *err)
{
    const batch_input *it = &b->inputs->items[i];
    if (st) {
        fail(b, it, err->message, lector_status_str(st));
        /* the models, not this input: every other input would fail alike */
        if (st == LECTOR_ERR_INVALID_MODEL) atomic_store(&b->stop, 1);
        return;
    }
    char msg[1024];
    if (b->o->stream) {
        render_stream_result(&b->stream, it->path, r);
        fflush(b->o->stream);
    }
    if (b->o->out_dir && write_outputs(b, it, r, msg, sizeof msg)) {
        fail(b, it, msg, lector_status_str(LECTOR_ERR_IO));
    } else if (b->o->draw_path && strcmp(it->path, "-") && draw(b, i, it, r, msg, sizeof msg)) {
        fail(b, it, msg, lector_status_str(LECTOR_ERR_IO));
    } else {
        b->summary.counts.done++;
        b->summary.counts.pages += r->n_pages;
    }
}

/* After each input: progress, and --max-failures. */
static void after_input(run *b, size_t i)
{
    batch_progress_update(&b->progress, &b->summary.counts);
    const ocr_batch_options *o = b->o;
    if (o->max_failures > 0 && (long)b->summary.counts.failed >= o->max_failures && i + 1 < b->inputs->n &&
        !atomic_load(&b->stop)) {
        atomic_store(&b->stop, 1);
        b->summary.stopped_early = 1;
        char line[128];
        snprintf(line, sizeof line, "lector: stopping after %ld failure(s) (--max-failures)", o->max_failures);
        batch_progress_message(&b->progress, line);
    }
}

/* Handles the inputs that are not read, up to (not including) `limit`. */
static void handle_unread_until(run *b, size_t limit)
{
    for (; b->next < limit && !atomic_load(&b->stop); b->next++) {
        size_t i = b->next;
        const batch_input *it = &b->inputs->items[i];
        if (b->state[i] == INPUT_LISTING_ERROR)
            fail(b, it, it->error, lector_status_str(it->duplicate ? LECTOR_ERR_INVALID_ARGUMENT : LECTOR_ERR_IO));
        else if (b->state[i] == INPUT_ALREADY_DONE) {
            b->summary.counts.skipped++;
            remove_temps(b, it);
        } else {
            continue; /* read: its callback handled it */
        }
        after_input(b, i);
    }
}

static void on_read(size_t tag, lector_result *r, lector_status st, const lector_error *err, void *user)
{
    run *b = user;
    handle_unread_until(b, tag);
    if (!atomic_load(&b->stop)) {
        handle_result(b, tag, r, st, err);
        b->next = tag + 1;
        after_input(b, tag);
    }
    lector_result_free(r);
}

static int write_summary(run *b, lector_engine *engine, double seconds)
{
    const char *names[RENDER_N_FORMATS];
    for (size_t f = 0; f < b->o->n_formats; f++) names[f] = render_format_name(b->o->formats[f]);
    batch_summary_meta m = {lector_version(), lector_engine_device(engine), names, b->o->n_formats, &b->o->shard,
                            seconds};
    char *json = batch_summary_json(&b->summary, &m);
    char *name = batch_summary_name(&b->o->shard);
    char *path = NULL, msg[1024] = "out of memory";
    int rc = -1;
    if (json && name && asprintf(&path, "%s/%s", b->o->out_dir, name) >= 0) {
        atomic_file af;
        if (atomic_file_open(&af, path, msg, sizeof msg) == 0) {
            fputs(json, af.f);
            fputc('\n', af.f);
            rc = atomic_file_commit(&af, msg, sizeof msg);
        }
    } else {
        path = NULL;
    }
    if (rc) fprintf(stderr, "lector: cannot write the summary: %s\n", msg);
    free(path);
    free(name);
    free(json);
    return rc;
}

int ocr_batch_run(lector_engine *engine, batch_inputs *inputs, const ocr_batch_options *o)
{
    run b = {.o = o, .inputs = inputs};
    atomic_init(&b.stop, 0);
    b.summary.counts.total = inputs->n;
    double start = batch_progress_clock_ms();
    /* One image, as before batches existed: no progress lines. */
    int show = inputs->n > 1 || o->out_dir;
    batch_progress_init(&b.progress, stderr, batch_progress_is_tty(stderr), o->quiet || !show, o->progress_interval_s,
                        batch_progress_clock_ms);
    b.state = calloc(inputs->n ? inputs->n : 1, 1);
    lector_error err = {0};
    ocr_reader *reader = b.state ? ocr_reader_create(engine, o->max_stdin, on_read, &b, &err) : NULL;
    if (!reader) { /* nothing was read: the engine cannot start a stream (or no memory) */
        fprintf(stderr, "lector: %s\n", b.state ? err.message : "out of memory");
        free(b.state);
        ocr_reader_free(reader);
        return 1;
    }
    if (o->stream) render_stream_begin(&b.stream, o->stream, o->stream_format, 1);
    for (size_t i = 0; i < inputs->n && !atomic_load(&b.stop); i++) {
        const batch_input *it = &inputs->items[i];
        if (it->error)
            b.state[i] = INPUT_LISTING_ERROR;
        else if (o->resume && o->out_dir && outputs_complete(&b, it))
            b.state[i] = INPUT_ALREADY_DONE;
        else if (ocr_reader_add(reader, it->path, i)) {
            b.oom = 1;
            break;
        }
    }
    ocr_reader_free(reader); /* every callback has run */
    if (!b.oom) handle_unread_until(&b, inputs->n);
    free(b.state);
    if (o->stream) {
        render_stream_end(&b.stream);
        fflush(o->stream);
    }
    int rc = b.summary.counts.failed || b.summary.stopped_early ? 1 : 0;
    if (b.oom) {
        fprintf(stderr, "lector: out of memory\n");
        rc = 1;
    }
    if (o->out_dir && write_summary(&b, engine, (batch_progress_clock_ms() - start) / 1000.0)) rc = 1;
    if (show) batch_progress_finish(&b.progress, &b.summary.counts);
    batch_summary_free(&b.summary);
    return rc;
}
