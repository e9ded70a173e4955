/*
 * read.c - lector_read_file, _memory, _pixels and _batch: each is a stream
 * (driver.c) of the engine's workers, run to its end.
 */
#include <string.h>

#include "ocr/engine.h"
#include "util/util.h"

/* One input's delivery into the caller's variables. */
typedef struct one_read {
    lector_result *res;
    lector_status st;
    lector_error err;
} one_read;

static void on_one(const lector_stream_item *it, void *user)
{
    one_read *r = user;
    r->res = it->result;
    r->st = it->status;
    if (it->error) r->err = *it->error;
}

/* The read of one input through a stream of the engine's workers (its lines
 * recognised in parallel); with one worker, in this thread. kind: 0 file,
 * 1 memory, 2 pixels. */
static lector_status read_one(lector_engine *e, int kind, const char *path, const void *data, size_t size,
                              const img_image *img, const char *name, const lector_read_options *o, lector_result **out,
                              lector_error *err)
{
    lector_stream_options so = {.workers = lector_engine_workers(e) > 1 ? 0 : -1, .max_inputs = 1, .read = o};
    lector_stream *s;
    one_read r = {NULL, LECTOR_ERR_INTERNAL, {0}};
    lector_status st = lector_stream_create(e, &so, on_one, &r, &s, err);
    if (st) return st;
    st = kind == 0   ? lector_stream_push_file(s, path, NULL, err)
         : kind == 1 ? lector_stream_push_memory(s, data, size, name, NULL, err)
                     : ocr_stream_push_image(s, img, name, NULL, err);
    lector_stream_free(s);
    if (st) return st;
    if (r.st) {
        if (err) *err = r.err;
        return r.st;
    }
    *out = r.res;
    return LECTOR_OK;
}

lector_status lector_read_memory(lector_engine *e, const void *data, size_t size, const char *name,
                                 const lector_read_options *o, lector_result **out, lector_error *err)
{
    if (!e || !out || (!data && size)) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    return read_one(e, 1, NULL, data, size, NULL, name ? name : "image", o, out, err);
}

lector_status lector_read_file(lector_engine *e, const char *path, const lector_read_options *o, lector_result **out,
                               lector_error *err)
{
    if (!e || !path || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    return read_one(e, 0, path, NULL, 0, NULL, path, o, out, err);
}

lector_status lector_read_pixels(lector_engine *e, const uint8_t *px, int width, int height, size_t stride,
                                 lector_pixel_format format, const lector_read_options *o, lector_result **out,
                                 lector_error *err)
{
    if (!e || !px || !out) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = NULL;
    double t0 = lector__now_ms();
    img_limits lim;
    ocr_image_limits(e, &lim);
    img_image img;
    lector_status st = img_from_pixels(px, width, height, stride, format, "pixels", &lim, &img, err);
    if (st) return st;
    double conv_ms = lector__now_ms() - t0;
    st = read_one(e, 2, NULL, NULL, 0, &img, "pixels", o, out, err);
    img_release(&img);
    if (!st) { /* converting the pixels is this read's decoding */
        (*out)->timings.decode_ms += conv_ms;
        (*out)->timings.total_ms += conv_ms;
    }
    return st;
}

/* lector_read_batch's deliveries into its arrays. */
typedef struct batch_read {
    const lector_batch_input *inputs;
    lector_result **results;
    lector_status *statuses;
    lector_error *errs;
} batch_read;

static void on_batch(const lector_stream_item *it, void *user)
{
    batch_read *b = user;
    const lector_batch_input *in = &b->inputs[it->index];
    if (!in->data && in->size) return; /* refused before it was pushed */
    b->results[it->index] = it->result;
    b->statuses[it->index] = it->status;
    if (b->errs && it->error) b->errs[it->index] = *it->error;
}

lector_status lector_read_batch(lector_engine *e, const lector_batch_input *inputs, size_t n,
                                const lector_read_options *o, lector_result **results, lector_status *statuses,
                                lector_error *errs)
{
    if (!e || (n && (!inputs || !results || !statuses)))
        return lector__error(errs, LECTOR_ERR_INVALID_ARGUMENT, "NULL argument");
    for (size_t i = 0; i < n; i++) {
        results[i] = NULL;
        statuses[i] = LECTOR_OK;
        if (errs) memset(&errs[i], 0, sizeof errs[i]);
    }
    if (!n) return LECTOR_OK;
    batch_read b = {inputs, results, statuses, errs};
    /* every input in flight at once: detection and lines batch across all of them */
    lector_stream_options so = {.workers = 0, .max_inputs = n > 1 << 20 ? 1 << 20 : (int)n, .read = o};
    lector_stream *s;
    lector_error e0;
    lector_status st = lector_stream_create(e, &so, on_batch, &b, &s, &e0);
    if (st) {
        if (errs) errs[0] = e0;
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        const lector_batch_input *in = &inputs[i];
        lector_error pe;
        if (!in->data && in->size) {
            statuses[i] = lector__error(errs ? &errs[i] : &pe, LECTOR_ERR_INVALID_ARGUMENT, "%s: NULL argument",
                                        in->name ? in->name : "image");
            /* keeps the stream's indices equal to the inputs' */
            st = lector_stream_push_memory(s, "", 0, in->name, NULL, &pe);
        } else {
            st = lector_stream_push_memory(s, in->data, in->size, in->name, NULL, &pe);
        }
        if (st) { /* out of memory: the inputs not pushed fail */
            for (size_t j = i; j < n; j++) {
                statuses[j] = st;
                if (errs) errs[j] = pe;
            }
            break;
        }
    }
    lector_stream_free(s);
    return LECTOR_OK;
}

void lector_result_free(lector_result *r)
{
    if (!r) return;
    for (size_t p = 0; p < r->n_pages; p++) {
        for (size_t i = 0; i < r->pages[p].n_lines; i++) lector__free(r->pages[p].lines[i].text);
        lector__free(r->pages[p].lines);
    }
    lector__free(r->pages);
    lector__free(r);
}
