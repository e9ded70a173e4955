/*
 * driver.c - the pipelined driver behind every entry point (lector.h's
 * streams; lector_read_* run one in the calling thread).
 *
 * Work is a set of queues that worker threads take tasks from:
 *
 *   decode   an input: decoded into pages, each page's detection input made
 *   det      up to det_batch_num pages whose detection inputs have one size
 *   post     a page: DB post-processing, reading order, crops
 *   cls      up to cls batch size lines of any pages
 *   rec      up to rec batch size lines of one tensor width, of any pages
 *
 * A worker takes the most advanced task first (rec, cls, post, det, then
 * decode), so pages in flight finish before new ones start, and decoding is
 * admitted only while fewer than max_pages pages are in flight. A batch
 * waits to be full; a partial one runs when nothing else can run (on a GPU:
 * when no running task can add to it either, since a GPU wants full
 * batches, while on a CPU a partial batch costs nothing per line). Results
 * are delivered in push order, each as soon as it and every input before it
 * are done; push blocks while max_inputs inputs are undelivered.
 *
 * With no worker threads the calling thread runs the tasks inside push
 * (when it would block) and finish: lector_read_file and friends run
 * their single input that way on an engine of one worker; with more, on
 * the engine's worker threads (threads.c), so that the lines of one page
 * run side by side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocr/engine.h"
#include "util/testctl.h"
#include "util/util.h"

typedef struct drv_page drv_page;

typedef struct drv_input {
    size_t index;
    char *path;             /* a file (owned), or */
    const void *data;       /* encoded bytes (borrowed), or */
    const img_image *given; /* a page already decoded (borrowed: lector_read_pixels) */
    size_t size;
    char *name; /* owned */
    void *user;
    int limit, use_cls; /* read options, resolved */
    float drop;
    lector_status st;
    lector_error err;
    img_pages pages; /* decoded (pages.pages NULL for `given`) */
    drv_page *pg;
    int n_pages, pages_left;
    lector_result *res;
    double t_start;
    int done;
    struct drv_input *next;
} drv_input;

/* Detection's outputs of one batch, shared by its pages' post tasks. */
typedef struct drv_detout {
    lector_tensor *out;
    size_t n_out;
    int refs;
} drv_detout;

struct drv_page {
    drv_input *in;
    int no;
    const img_image *img;
    ocr_det_in det;
    drv_detout *dout;
    int drow, valid_h, valid_w, pad_rows;
    ocr_box *boxes; /* NULL: no detection, the page is one line */
    ocr_crop *c;
    int nc, left; /* crops, crops not yet recognised */
    double det_ms, cls_ms, rec_ms;
    lector_status st; /* the last det or post task's, applied to the input under the lock */
    lector_error err;
    drv_page *next; /* det or post queue */
};

/* A FIFO of lines (cls, or rec of one tensor width). */
typedef struct crop_q {
    int tw;
    ocr_crop **v;
    int head, n, cap; /* v[head..n) queued */
} crop_q;

enum { T_NONE, T_DECODE, T_DET, T_POST, T_CLS, T_REC };

typedef struct drv_task {
    int kind;
    drv_input *in;
    drv_page *pages[64];
    int n;
    ocr_crop *cr[GPU_MAX_ROWS];
    int nc;
    double ms_per_line; /* cls, rec: the batch's time per line */
} drv_task;

struct lector_stream {
    lector_engine *e;
    lector_stream_cb cb;
    void *cb_user;
    lector_read_options ropt;
    int workers, max_inputs, max_pages, gpu_batching;
    int batch_wait;       /* on a GPU, a partial batch waits for the running tasks that may add to it */
    ocr_thread **threads; /* on the engine's threads (threads.c) */
    int n_threads;
    pthread_mutex_t lock;
    pthread_cond_t work; /* a task may have become available, or the stream stops */
    pthread_cond_t room; /* an input was delivered */
    drv_input *head, *tail, *decode_next;
    size_t pushed, delivered;
    int pages_in_flight;
    drv_page *det_head, *det_tail, *post_head, *post_tail;
    crop_q cls;
    crop_q *rec;
    int n_rec, cap_rec;
    int running, producing; /* tasks running; of them, those that add lines or pages (not rec) */
    int stop, finished, emitting;
};

/* ---- queues --------------------------------------------------------------------- */

static int q_len(const crop_q *q) { return q->n - q->head; }

static int q_push(crop_q *q, ocr_crop *c)
{
    if (q->head > 0 && q->head * 2 >= q->n) { /* compact */
        memmove(q->v, q->v + q->head, sizeof *q->v * (size_t)(q->n - q->head));
        q->n -= q->head;
        q->head = 0;
    }
    if (q->n == q->cap) {
        int cap = q->cap ? q->cap * 2 : 64;
        ocr_crop **nv = lector__realloc(q->v, sizeof *nv * (size_t)cap);
        if (!nv) return -1;
        q->v = nv;
        q->cap = cap;
    }
    q->v[q->n++] = c;
    return 0;
}

static crop_q *rec_queue(lector_stream *s, int tw)
{
    for (int i = 0; i < s->n_rec; i++)
        if (s->rec[i].tw == tw) return &s->rec[i];
    if (s->n_rec == s->cap_rec) {
        int cap = s->cap_rec ? s->cap_rec * 2 : 16;
        crop_q *nq = lector__realloc(s->rec, sizeof *nq * (size_t)cap);
        if (!nq) return NULL;
        s->rec = nq;
        s->cap_rec = cap;
    }
    crop_q *q = &s->rec[s->n_rec++];
    memset(q, 0, sizeof *q);
    q->tw = tw;
    return q;
}

static void page_q_push(drv_page **head, drv_page **tail, drv_page *p)
{
    p->next = NULL;
    if (*tail)
        (*tail)->next = p;
    else
        *head = p;
    *tail = p;
}

/* ---- completion (under the lock) ------------------------------------------------------ */

static drv_page *crop_page(const ocr_crop *c) { return c->owner; }

/* Prefixes an input's error with its name, unless the input is not to
 * blame: a model that gives NaN or does not fit its dictionary
 * (LECTOR_ERR_INVALID_MODEL, its message names the model) or a read the
 * caller cancelled. */
static void blame_input(drv_input *in)
{
    if (in->st == LECTOR_ERR_INVALID_MODEL || in->st == LECTOR_ERR_CANCELLED) return;
    if (strncmp(in->err.message, in->name, strlen(in->name))) lector__error_prefix(&in->err, "%s", in->name);
}

static void input_fail(drv_input *in, lector_status st, const lector_error *err)
{
    if (in->st) return; /* the first error is the input's */
    in->st = st;
    if (err)
        in->err = *err;
    else
        lector__error(&in->err, st, "%s", lector_status_str(st));
    blame_input(in);
}

/* lector_read_options.cancel: asked before each stage of an input's work,
 * so that a cancelled read stops at its next stage. */
static int cancelled(const lector_stream *s) { return s->ropt.cancel && s->ropt.cancel(s->ropt.cancel_user); }

static lector_status cancel_error(lector_error *err)
{
    return lector__error(err, LECTOR_ERR_CANCELLED, "the read was cancelled by its caller");
}

static void input_done(lector_stream *s, drv_input *in)
{
    if (in->res) {
        in->res->timings.total_ms = lector__now_ms() - in->t_start;
        lector_engine_stats st;
        lector_engine_get_stats(s->e, &st);
        in->res->timings.plans_compiled = st.plans_compiled;
        in->res->timings.kernels_compiled = st.kernels_compiled;
    }
    in->done = 1;
}

static void dout_release(drv_page *pg)
{
    drv_detout *d = pg->dout;
    pg->dout = NULL;
    if (d && --d->refs == 0) {
        lector_tensors_free(d->out, d->n_out);
        lector__free(d);
    }
}

/* A page has all its lines (or has failed): its lines into the result, its
 * work freed. */
static void page_done(lector_stream *s, drv_page *pg)
{
    dout_release(pg);
    drv_input *in = pg->in;
    if (!in->st && in->res) {
        lector_error err;
        lector_status st = ocr_page_lines(pg->img, pg->boxes, pg->c, pg->nc, in->drop, &in->res->pages[pg->no], &err);
        if (st) input_fail(in, st, &err);
    }
    if (in->res) {
        lector_timings *t = &in->res->timings;
        t->det_ms += pg->det_ms;
        t->cls_ms += pg->cls_ms;
        t->rec_ms += pg->rec_ms;
    }
    ocr_crops_free(pg->c, pg->nc);
    pg->c = NULL;
    pg->nc = 0;
    lector__free(pg->boxes);
    pg->boxes = NULL;
    ocr_det_in_free(&pg->det);
    s->pages_in_flight--;
    if (--in->pages_left == 0) input_done(s, in);
}

static void crop_done(lector_stream *s, ocr_crop *c)
{
    drv_page *pg = crop_page(c);
    if (--pg->left == 0) page_done(s, pg);
}

/* Lines of a page that has been post-processed go to cls or rec. */
static void page_lines_queued(lector_stream *s, drv_page *pg)
{
    pg->left = pg->nc;
    if (!pg->nc) {
        page_done(s, pg);
        return;
    }
    for (int i = 0; i < pg->nc; i++) {
        ocr_crop *c = &pg->c[i];
        c->owner = pg;
        crop_q *q = NULL;
        if (pg->in->use_cls) {
            q = &s->cls;
        } else {
            ocr_rec_widths(s->e, c);
            q = rec_queue(s, c->tw);
        }
        if (!q || q_push(q, c)) {
            lector_error err;
            input_fail(pg->in, lector__error(&err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory"), &err);
            crop_done(s, c);
        }
    }
}

/* Delivers the inputs at the head that are done, in order. The callback runs
 * without the lock, one delivery at a time. */
static void deliver(lector_stream *s)
{
    if (s->emitting) return;
    s->emitting = 1;
    while (s->head && s->head->done) {
        drv_input *in = s->head;
        s->head = in->next;
        if (!s->head) s->tail = NULL;
        pthread_mutex_unlock(&s->lock);
        lector_result *r = in->st ? NULL : in->res;
        if (in->st) lector_result_free(in->res);
        lector_stream_item it = {in->index, in->name, in->user, in->st, in->st ? &in->err : NULL, r};
        s->cb(&it, s->cb_user);
        lector__free(in->pg);
        if (in->pages.pages) img_pages_free(&in->pages);
        lector__free(in->path);
        lector__free(in->name);
        lector__free(in);
        pthread_mutex_lock(&s->lock);
        s->delivered++;
        pthread_cond_broadcast(&s->room);
    }
    s->emitting = 0;
}

/* ---- choosing a task (under the lock) -------------------------------------------------- */

/* Lines of failed inputs leave the queue without work. */
static void q_drop_failed(lector_stream *s, crop_q *q)
{
    while (q_len(q) && crop_page(q->v[q->head])->in->st) crop_done(s, q->v[q->head++]);
}

static int take_lines(lector_stream *s, crop_q *q, int bs, int partial, drv_task *t, int kind)
{
    /* on the CPU a partial batch runs line by line: a batch of n lines costs n
     * lines' time, and each batch size is a plan (compiled kernels) */
    if (partial && !s->gpu_batching) bs = 1;
    q_drop_failed(s, q);
    int n = q_len(q);
    if (!n || (n < bs && !partial)) return 0;
    t->kind = kind;
    t->nc = 0;
    while (t->nc < bs && q->head < q->n) {
        ocr_crop *c = q->v[q->head++];
        if (crop_page(c)->in->st)
            crop_done(s, c);
        else
            t->cr[t->nc++] = c;
    }
    if (!t->nc) return 0;
    return 1;
}

/* The rec queue whose first line is the oldest among those with a batch (or
 * any line, partial). */
static crop_q *rec_pick(lector_stream *s, int partial)
{
    crop_q *best = NULL;
    size_t best_idx = 0;
    for (int i = 0; i < s->n_rec; i++) {
        crop_q *q = &s->rec[i];
        q_drop_failed(s, q);
        int n = q_len(q);
        if (!n || (!partial && n < ocr_rec_batch_size(s->e, q->tw))) continue;
        size_t idx = crop_page(q->v[q->head])->in->index;
        if (!best || idx < best_idx) {
            best = q;
            best_idx = idx;
        }
    }
    return best;
}

/* Pages of failed inputs leave the det and post queues without work. */
static drv_page *page_pop(lector_stream *s, drv_page **head, drv_page **tail)
{
    while (*head) {
        drv_page *p = *head;
        *head = p->next;
        if (!*head) *tail = NULL;
        if (!p->in->st) return p;
        page_done(s, p);
    }
    return NULL;
}

static int take_det(lector_stream *s, int partial, drv_task *t)
{
    drv_page *first = page_pop(s, &s->det_head, &s->det_tail);
    if (!first) return 0;
    int max = s->e->p.det_batch_num;
    int h = first->det.di.height, w = first->det.di.width, dev = first->det.on_device, n = 1;
    for (drv_page *p = s->det_head; p && n < max; p = p->next)
        if (!p->in->st && p->det.di.height == h && p->det.di.width == w && p->det.on_device == dev) n++;
    if (n < max && !partial) { /* back at the head: wait for more of its size */
        first->next = s->det_head;
        s->det_head = first;
        if (!s->det_tail) s->det_tail = first;
        return 0;
    }
    t->kind = T_DET;
    t->pages[0] = first;
    t->n = 1;
    for (drv_page **link = &s->det_head, *p; (p = *link) && t->n < n;) {
        if (!p->in->st && p->det.di.height == h && p->det.di.width == w && p->det.on_device == dev) {
            *link = p->next;
            t->pages[t->n++] = p;
        } else {
            link = &p->next;
        }
    }
    s->det_tail = NULL;
    for (drv_page *p = s->det_head; p; p = p->next) s->det_tail = p;
    return 1;
}

static int pick(lector_stream *s, drv_task *t)
{
    memset(t, 0, sizeof *t);
    crop_q *q = rec_pick(s, 0);
    if (q && take_lines(s, q, ocr_rec_batch_size(s->e, q->tw), 0, t, T_REC)) return 1;
    if (take_lines(s, &s->cls, ocr_cls_batch_size(s->e), 0, t, T_CLS)) return 1;
    drv_page *p = page_pop(s, &s->post_head, &s->post_tail);
    if (p) {
        t->kind = T_POST;
        t->pages[0] = p;
        t->n = 1;
        return 1;
    }
    if (take_det(s, s->e->p.det_batch_num <= 1, t)) return 1;
    if (s->decode_next && s->pages_in_flight < s->max_pages) {
        t->kind = T_DECODE;
        t->in = s->decode_next;
        s->decode_next = s->decode_next->next;
        return 1;
    }
    /* nothing full: a partial batch, unless (on a GPU) a running task may still fill it */
    if (s->gpu_batching && s->batch_wait && s->producing > 0) return 0;
    if ((q = rec_pick(s, 1)) && take_lines(s, q, ocr_rec_batch_size(s->e, q->tw), 1, t, T_REC)) return 1;
    if (take_lines(s, &s->cls, ocr_cls_batch_size(s->e), 1, t, T_CLS)) return 1;
    return take_det(s, 1, t);
}

/* ---- running a task (without the lock) ----------------------------------------------- */

static void run_decode(lector_stream *s, drv_input *in)
{
    lector_engine *e = s->e;
    lector_error err;
    lector_status st = LECTOR_OK;
    in->t_start = lector__now_ms();
    const img_image *imgs = in->given;
    int n = 1;
    if (cancelled(s)) {
        st = cancel_error(&err);
        n = 0;
    } else if (!in->given) {
        img_limits lim;
        ocr_image_limits(e, &lim);
        st = in->path ? img_decode_file(in->path, &lim, &in->pages, &err)
                      : img_decode(in->data, in->size, in->name, &lim, &in->pages, &err);
        imgs = in->pages.pages;
        n = st ? 0 : in->pages.count;
    }
    if (!st) {
        in->res = lector__calloc(1, sizeof *in->res);
        if (in->res) in->res->pages = lector__calloc((size_t)(n ? n : 1), sizeof *in->res->pages);
        in->pg = lector__calloc((size_t)(n ? n : 1), sizeof *in->pg);
        if (!in->res || !in->res->pages || !in->pg) st = lector__error(&err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!st && in->use_cls && !e->cls)
        st = lector__error(&err, LECTOR_ERR_INVALID_ARGUMENT,
                           "the angle classifier was not loaded (create the engine with use_angle_cls=1)");
    if (st) {
        in->st = st;
        in->err = err;
        blame_input(in);
        in->n_pages = 0;
        return;
    }
    in->res->n_pages = (size_t)n;
    in->n_pages = n;
    for (int i = 0; i < n; i++) {
        drv_page *pg = &in->pg[i];
        pg->in = in;
        pg->no = i;
        pg->img = &imgs[i];
        in->res->pages[i].width = imgs[i].width;
        in->res->pages[i].height = imgs[i].height;
        if (in->st) continue;
        double t0 = lector__now_ms();
        if (e->p.use_det) {
            st = ocr_det_prepare(e, pg->img, in->limit, &pg->det, &err);
        } else { /* the whole page is one line */
            pg->nc = 1;
            st = ocr_crops_make(e, pg->img, NULL, &pg->nc, &pg->c, &err);
            if (!st) st = ocr_batch_limits(e, &err); /* before its line is batched */
        }
        pg->det_ms += lector__now_ms() - t0;
        if (st) input_fail(in, st, &err);
    }
    in->res->timings.decode_ms = lector__now_ms() - in->t_start;
}

static void run_det(lector_stream *s, drv_task *t)
{
    ocr_det_in *in[64];
    for (int q = 0; q < t->n; q++) in[q] = &t->pages[q]->det;
    double t0 = lector__now_ms();
    lector_error err;
    drv_detout *d = lector__calloc(1, sizeof *d);
    lector_status st = !d             ? lector__error(&err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory")
                       : cancelled(s) ? cancel_error(&err)
                                      : ocr_det_run(s->e, in, t->n, &d->out, &d->n_out, &err);
    double ms = (lector__now_ms() - t0) / t->n;
    for (int q = 0; q < t->n; q++) {
        drv_page *pg = t->pages[q];
        pg->det_ms += ms;
        pg->valid_h = pg->det.valid_h;
        pg->valid_w = pg->det.valid_w;
        pg->pad_rows = pg->det.pad_rows;
        ocr_det_in_free(&pg->det);
        pg->st = st;
        if (st) {
            pg->err = err;
            continue;
        }
        pg->dout = d;
        pg->drow = q;
        d->refs++;
    }
    if (d && !d->refs) {
        lector_tensors_free(d->out, d->n_out);
        lector__free(d);
    }
}

static void run_post(lector_stream *s, drv_page *pg)
{
    double t0 = lector__now_ms();
    lector_error err;
    int nb = 0;
    lector_status st = cancelled(s) ? cancel_error(&err)
                                    : ocr_det_post(s->e, pg->img, pg->pad_rows, &pg->dout->out[0], pg->drow,
                                                   pg->valid_h, pg->valid_w, &pg->boxes, &nb, &err);
    if (!st) {
        pg->nc = nb;
        st = ocr_crops_make(s->e, pg->img, pg->boxes, &pg->nc, &pg->c, &err);
    }
    if (!st && pg->nc) st = ocr_batch_limits(s->e, &err); /* before its lines are batched */
    pg->st = st;
    if (st) {
        pg->nc = 0;
        pg->err = err;
    }
    pg->det_ms += lector__now_ms() - t0;
}

static void run_lines(lector_stream *s, drv_task *t, lector_status *st, lector_error *err)
{
    double t0 = lector__now_ms();
    *st = cancelled(s)       ? cancel_error(err)
          : t->kind == T_CLS ? ocr_cls_run(s->e, t->cr, t->nc, err)
                             : ocr_rec_run(s->e, t->cr, t->nc, err);
    t->ms_per_line = (lector__now_ms() - t0) / t->nc;
}

/* Runs one task if one can run, or delivers what picking finished; 0 if
 * neither. Called and returns with the lock. */
static int run_one(lector_stream *s)
{
    drv_task t;
    if (!pick(s, &t)) {
        /* picking drops the queued lines of failed inputs, which can finish
         * an input: it is delivered now, as no task will end after it. That
         * is progress: a caller working the stream in its own thread (no
         * workers) must look at what is left before it waits, or it waits
         * for nothing */
        size_t before = s->delivered;
        deliver(s);
        return s->delivered != before;
    }
    int producer = t.kind != T_REC;
    s->running++;
    s->producing += producer;
    pthread_mutex_unlock(&s->lock);
    lector_status st = LECTOR_OK;
    lector_error err;
    switch (t.kind) {
    case T_DECODE: run_decode(s, t.in); break;
    case T_DET: run_det(s, &t); break;
    case T_POST: run_post(s, t.pages[0]); break;
    default: run_lines(s, &t, &st, &err); break;
    }
    pthread_mutex_lock(&s->lock);
    s->running--;
    s->producing -= producer;
    switch (t.kind) {
    case T_DECODE: {
        drv_input *in = t.in;
        in->pages_left = in->n_pages;
        s->pages_in_flight += in->n_pages;
        if (!in->n_pages) input_done(s, in);
        for (int i = 0; i < in->n_pages; i++) {
            drv_page *pg = &in->pg[i];
            if (in->st)
                page_done(s, pg);
            else if (s->e->p.use_det)
                page_q_push(&s->det_head, &s->det_tail, pg);
            else
                page_lines_queued(s, pg);
        }
        break;
    }
    case T_DET:
        for (int q = 0; q < t.n; q++) {
            drv_page *pg = t.pages[q];
            if (pg->st) input_fail(pg->in, pg->st, &pg->err);
            if (pg->in->st)
                page_done(s, pg);
            else
                page_q_push(&s->post_head, &s->post_tail, pg);
        }
        break;
    case T_POST: {
        drv_page *pg = t.pages[0];
        dout_release(pg);
        if (pg->st) input_fail(pg->in, pg->st, &pg->err);
        if (pg->in->st)
            page_done(s, pg);
        else
            page_lines_queued(s, pg);
        break;
    }
    case T_CLS:
        for (int k = 0; k < t.nc; k++) crop_page(t.cr[k])->cls_ms += t.ms_per_line;
        for (int k = 0; k < t.nc; k++) {
            ocr_crop *c = t.cr[k];
            if (st) input_fail(crop_page(c)->in, st, &err);
            crop_q *q = NULL;
            if (!st) {
                ocr_rec_widths(s->e, c);
                q = rec_queue(s, c->tw);
            }
            if (!st && (!q || q_push(q, c))) {
                lector_error e2;
                input_fail(crop_page(c)->in, lector__error(&e2, LECTOR_ERR_OUT_OF_MEMORY, "out of memory"), &e2);
                q = NULL;
            }
            if (!q) crop_done(s, c);
        }
        break;
    case T_REC:
        for (int k = 0; k < t.nc; k++) crop_page(t.cr[k])->rec_ms += t.ms_per_line;
        for (int k = 0; k < t.nc; k++) {
            if (st) input_fail(crop_page(t.cr[k])->in, st, &err);
            crop_done(s, t.cr[k]);
        }
        break;
    }
    pthread_cond_broadcast(&s->work);
    deliver(s);
    return 1;
}

static void worker_main(void *arg)
{
    lector_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (run_one(s)) continue;
        if (s->stop) break;
        pthread_cond_wait(&s->work, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- public API -------------------------------------------------------------------- */

lector_stream_options lector_default_stream_options(void)
{
    lector_stream_options o = {0, 0, NULL};
    return o;
}

int ocr_workers(const lector_params *p, int on_gpu)
{
    if (p->workers > 0) return p->workers;
    int cores = lector__physical_cores();
    if (on_gpu) return 2 * cores < 16 ? 2 * cores : 16;
    int threads = p->threads > 0 ? p->threads : 1;
    int w = cores / threads;
    return w < 1 ? 1 : w;
}

static int default_workers(const lector_engine *e) { return ocr_workers(&e->p, e->on_gpu); }

int lector_engine_workers(const lector_engine *e) { return e ? default_workers(e) : 0; }

lector_status lector_stream_create(lector_engine *e, const lector_stream_options *opt, lector_stream_cb cb,
                                   void *cb_user, lector_stream **out, lector_error *err)
{
    if (!e || !cb || !out)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_stream_create: NULL argument");
    *out = NULL;
    if (opt && (opt->workers < -1 || opt->workers > 1024 || opt->max_inputs < 0))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT,
                             "lector_stream_create: workers must be in [-1, 1024], max_inputs >= 0");
    /* A GPU's batch sizes come from its free memory, found before the first
     * lines are queued (run_post, run_decode), not here: the engine's GPU
     * warm-up holds them while it compiles the recogniser's first plan
     * (150-320 ms), and the first page's reading and detection need not
     * wait for that. */
    lector_stream *s = lector__calloc(1, sizeof *s);
    if (!s) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    s->e = e;
    s->cb = cb;
    s->cb_user = cb_user;
    s->ropt = opt && opt->read ? *opt->read : lector_default_read_options();
    s->workers = !opt || opt->workers == 0 ? default_workers(e) : opt->workers < 0 ? 0 : opt->workers;
    int w = s->workers ? s->workers : 1;
    s->max_inputs = opt && opt->max_inputs > 0 ? opt->max_inputs : 4 * w + 4;
    s->max_pages = 2 * w + 2;
    s->gpu_batching = e->on_gpu;
    s->batch_wait = lector__tc_flag(LECTOR__TC_GPU_BATCH_WAIT, 1);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->room, NULL);
    if (s->workers && s->workers > 1) {
        /* workers of one inference thread each would oversubscribe nothing; more is the caller's choice */
        s->threads = lector__calloc((size_t)s->workers, sizeof *s->threads);
        if (!s->threads) {
            lector_stream_free(s);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        }
    } else if (s->workers == 1) {
        s->threads = lector__calloc(1, sizeof *s->threads);
        if (!s->threads) {
            lector_stream_free(s);
            return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    for (int i = 0; i < s->workers; i++) {
        lector_status started = ocr_thread_start(e, worker_main, s, &s->threads[i], err);
        if (started) {
            lector_stream_free(s);
            return started;
        }
        s->n_threads++;
    }
    *out = s;
    return LECTOR_OK;
}

/* Waits (worker threads) or works (none) until `cond` holds; with the lock. */
static void wait_for_room(lector_stream *s)
{
    while (s->pushed - s->delivered >= (size_t)s->max_inputs) {
        if (!s->workers) {
            if (!run_one(s)) pthread_cond_wait(&s->room, &s->lock); /* cannot happen: nothing else runs */
        } else {
            pthread_cond_wait(&s->room, &s->lock);
        }
    }
}

static lector_status push(lector_stream *s, drv_input *in, lector_error *err)
{
    pthread_mutex_lock(&s->lock);
    if (s->finished) {
        pthread_mutex_unlock(&s->lock);
        lector__free(in->path);
        lector__free(in->name);
        lector__free(in);
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_stream_push: the stream is finished");
    }
    wait_for_room(s);
    in->index = s->pushed++;
    const lector_read_options *o = &s->ropt;
    in->limit = o->det_limit_side_len > 0 ? o->det_limit_side_len : s->e->p.det_limit_side_len;
    in->drop = o->drop_score >= 0 ? o->drop_score : s->e->p.drop_score;
    in->use_cls = o->use_angle_cls >= 0 ? o->use_angle_cls : s->e->p.use_angle_cls;
    if (s->tail)
        s->tail->next = in;
    else
        s->head = in;
    s->tail = in;
    if (!s->decode_next) s->decode_next = in;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    return LECTOR_OK;
}

static drv_input *input_new(const char *name, void *user, lector_error *err)
{
    drv_input *in = lector__calloc(1, sizeof *in);
    if (in) in->name = lector__strdup(name);
    if (!in || !in->name) {
        lector__free(in);
        lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    in->user = user;
    return in;
}

lector_status lector_stream_push_file(lector_stream *s, const char *path, void *user, lector_error *err)
{
    if (!s || !path) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_stream_push_file: NULL argument");
    drv_input *in = input_new(path, user, err);
    if (!in) return LECTOR_ERR_OUT_OF_MEMORY;
    if (!(in->path = lector__strdup(path))) {
        lector__free(in->name);
        lector__free(in);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return push(s, in, err);
}

lector_status lector_stream_push_memory(lector_stream *s, const void *data, size_t size, const char *name, void *user,
                                        lector_error *err)
{
    if (!s || (!data && size))
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_stream_push_memory: NULL argument");
    drv_input *in = input_new(name ? name : "image", user, err);
    if (!in) return LECTOR_ERR_OUT_OF_MEMORY;
    in->data = data ? data : (const void *)"";
    in->size = size;
    return push(s, in, err);
}

/* Internal: a page already decoded (lector_read_pixels), borrowed until delivered. */
lector_status ocr_stream_push_image(lector_stream *s, const img_image *img, const char *name, void *user,
                                    lector_error *err)
{
    drv_input *in = input_new(name, user, err);
    if (!in) return LECTOR_ERR_OUT_OF_MEMORY;
    in->given = img;
    return push(s, in, err);
}

lector_status lector_stream_finish(lector_stream *s, lector_error *err)
{
    if (!s) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_stream_finish: NULL argument");
    pthread_mutex_lock(&s->lock);
    s->finished = 1;
    while (s->delivered < s->pushed) {
        if (!s->workers) {
            if (!run_one(s)) pthread_cond_wait(&s->room, &s->lock);
        } else {
            pthread_cond_wait(&s->room, &s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return LECTOR_OK;
}

void lector_stream_free(lector_stream *s)
{
    if (!s) return;
    lector_stream_finish(s, NULL);
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
    for (int i = 0; i < s->n_threads; i++) ocr_thread_join(s->e, s->threads[i]);
    lector__free(s->threads);
    lector__free(s->cls.v);
    for (int i = 0; i < s->n_rec; i++) lector__free(s->rec[i].v);
    lector__free(s->rec);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->room);
    pthread_mutex_destroy(&s->lock);
    lector__free(s);
}
