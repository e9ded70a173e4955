/*
 * server.c - `lector serve`: HTTP (libmicrohttpd, a thread per connection),
 * a bounded job queue, a fixed worker pool, deadlines, the breaker, drain.
 *
 * Ownership of a job: the connection thread and the worker each hold a
 * reference (under srv.mu); whoever drops the last one frees it. A request
 * whose deadline passes while its job is queued takes the job out of the
 * queue; while it runs, the worker finishes, sees it abandoned and frees the
 * result. Either way nothing outlives both parties.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "breaker.h"
#include "metrics.h"
#include "lector_serve.h"
#include "util/testctl.h"
#include "util/util.h"

/* ---- jobs and the queue ------------------------------------------------------- */

typedef struct serve_image {
    unsigned char *data;
    size_t size, cap;
    char *name;
} serve_image;

typedef enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE } job_state;

typedef struct job {
    int refs;
    job_state state;
    int abandoned;
    int multipart;
    serve_image *imgs;
    size_t n_imgs;
    lector_read_options opt;
    char *out;       /* response body (JSON) */
    unsigned status; /* HTTP status */
    pthread_cond_t done;
    struct job *next;
} job;

typedef struct server {
    const lector_serve_config *cfg;
    lector_engine *primary, *cpu; /* cpu == primary when nothing can fail independently */
    char primary_dev[160], cpu_dev[160];
    serve_breaker breaker;
    serve_metrics metrics;

    pthread_mutex_t mu;
    pthread_cond_t q_cond;
    job *head, *tail;
    int q_len, running;
    int stop_workers;
    int ready, draining, abort_waits;
    int inflight;
    uint64_t accepted, answered, aborted;
    unsigned long long fault_counter;
    pthread_t *workers;
    int n_workers;
} server;

static server srv;

static void job_free(job *j)
{
    for (size_t i = 0; i < j->n_imgs; i++) {
        lector__free(j->imgs[i].data);
        lector__free(j->imgs[i].name);
    }
    lector__free(j->imgs);
    lector__free(j->out);
    pthread_cond_destroy(&j->done);
    lector__free(j);
}

/* srv.mu held */
static void job_release(job *j)
{
    if (--j->refs == 0) job_free(j);
}

/* ---- reading through the breaker ------------------------------------------------ */

static int is_device_error(lector_status st)
{
    return st == LECTOR_ERR_BACKEND || st == LECTOR_ERR_OUT_OF_MEMORY || st == LECTOR_ERR_UNAVAILABLE;
}

/* The fault hook (LECTOR_SERVE_FAULT): 1 when this primary read is the Nth. */
static int fault_now(lector_error *err)
{
    if (srv.cfg->fault_every <= 0) return 0;
    pthread_mutex_lock(&srv.mu);
    unsigned long long n = ++srv.fault_counter;
    pthread_mutex_unlock(&srv.mu);
    if (n % (unsigned long long)srv.cfg->fault_every) return 0;
    err->code = LECTOR_ERR_BACKEND;
    snprintf(err->message, sizeof err->message, "injected device error (LECTOR_SERVE_FAULT=%d, read %llu)",
             srv.cfg->fault_every, n);
    return 1;
}

/* Reads n images in one engine dispatch (lector_read_batch) through the
 * breaker: on the primary engine while the breaker allows it; images that
 * fail there with a device error (or the fault hook) are read again, in one
 * dispatch, on the CPU engine. */
static void read_batch(const lector_batch_input *in, size_t n, const lector_read_options *opt, lector_result **r,
                       lector_status *st, lector_error *err)
{
    if (srv.cpu == srv.primary && srv.cfg->fault_every <= 0) {
        if (lector_read_batch(srv.primary, in, n, opt, r, st, err))
            for (size_t i = 0; i < n; i++) {
                st[i] = err[0].code ? err[0].code : LECTOR_ERR_INTERNAL;
                err[i] = err[0];
            }
        return;
    }
    size_t *idx = lector__calloc(n ? n : 1, sizeof *idx);
    lector_batch_input *sub = lector__calloc(n ? n : 1, sizeof *sub);
    lector_result **sr = lector__calloc(n ? n : 1, sizeof *sr);
    lector_status *ss = lector__calloc(n ? n : 1, sizeof *ss);
    lector_error *se = lector__calloc(n ? n : 1, sizeof *se);
    int *on_cpu = lector__calloc(n ? n : 1, sizeof *on_cpu);
    if (!idx || !sub || !sr || !ss || !se || !on_cpu) {
        for (size_t i = 0; i < n; i++) {
            r[i] = NULL;
            st[i] = LECTOR_ERR_OUT_OF_MEMORY;
            snprintf(err[i].message, sizeof err[i].message, "out of memory");
        }
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        r[i] = NULL;
        on_cpu[i] = 1;
    }
    int probe = 0;
    if (serve_breaker_allow(&srv.breaker, lector__now_ms(), &probe)) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (fault_now(&err[i])) {
                st[i] = LECTOR_ERR_BACKEND;
                continue;
            }
            idx[m] = i;
            sub[m++] = in[i];
        }
        if (m && lector_read_batch(srv.primary, sub, m, opt, sr, ss, se))
            for (size_t k = 0; k < m; k++) {
                ss[k] = se[0].code ? se[0].code : LECTOR_ERR_INTERNAL;
                se[k] = se[0];
            }
        for (size_t k = 0; k < m; k++) {
            size_t i = idx[k];
            st[i] = ss[k];
            err[i] = se[k];
            r[i] = sr[k];
        }
        int dev = 0;
        for (size_t i = 0; i < n; i++) {
            on_cpu[i] = is_device_error(st[i]);
            if (on_cpu[i]) {
                dev++;
                fprintf(stderr, "lector serve: primary engine: %s; reading on the CPU engine\n", err[i].message);
            }
        }
        serve_breaker_record(&srv.breaker, lector__now_ms(), probe, dev > 0);
        if (dev) serve_metrics_add(&srv.metrics, &srv.metrics.primary_errors, (uint64_t)dev);
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (on_cpu[i]) {
            idx[m] = i;
            sub[m++] = in[i];
        }
    if (!m) goto done;
    serve_metrics_add(&srv.metrics, &srv.metrics.cpu_fallbacks, (uint64_t)m);
    if (lector_read_batch(srv.cpu, sub, m, opt, sr, ss, se))
        for (size_t k = 0; k < m; k++) {
            ss[k] = se[0].code ? se[0].code : LECTOR_ERR_INTERNAL;
            se[k] = se[0];
        }
    for (size_t k = 0; k < m; k++) {
        size_t i = idx[k];
        lector_result_free(r[i]);
        r[i] = sr[k];
        st[i] = ss[k];
        err[i] = se[k];
    }
done:
    lector__free(idx);
    lector__free(sub);
    lector__free(sr);
    lector__free(ss);
    lector__free(se);
    lector__free(on_cpu);
}

static unsigned http_status_of(lector_status st)
{
    switch (st) {
    case LECTOR_OK: return 200;
    case LECTOR_ERR_INVALID_ARGUMENT: return 400;
    case LECTOR_ERR_IMAGE:
    case LECTOR_ERR_PARSE: return 422;
    case LECTOR_ERR_LIMIT: return 413;
    case LECTOR_ERR_TIMEOUT: return 504;
    case LECTOR_ERR_OUT_OF_MEMORY:
    case LECTOR_ERR_UNAVAILABLE: return 503;
    default: return 500;
    }
}

/* Renders j->out and j->status from its images' results. */
static void render_job(job *j, lector_result **res, const lector_status *sts, const lector_error *errs)
{
    size_t len = 0;
    char *out = NULL;
    unsigned status = 0;
    int any_ok = 0;
    for (size_t i = 0; i < j->n_imgs; i++) {
        lector_status st = sts[i];
        const lector_result *r = res[i];
        if (!st) {
            serve_metrics_add(&srv.metrics, &srv.metrics.pages, r->n_pages);
            any_ok = 1;
        } else if (!status)
            status = http_status_of(st);
        char *s = lector_result_json(st ? NULL : r, j->imgs[i].name, st ? errs[i].message : NULL);
        if (!s) {
            status = 500;
            break;
        }
        size_t n = strlen(s);
        char *grown = lector__realloc(out, len + n + 3); /* separator, ']' and NUL */
        if (!grown) {
            lector__free(s);
            status = 500;
            break;
        }
        out = grown;
        if (j->multipart) {
            out[len] = len ? ',' : '[';
            len++;
        }
        memcpy(out + len, s, n);
        len += n;
        lector__free(s);
    }
    if (out && j->multipart) out[len++] = ']';
    if (out) out[len] = '\0';
    if (any_ok && j->multipart) status = 200; /* per-file errors are in the array */
    if (!status) status = 200;
    j->out = out;
    j->status = out ? status : 500;
}

/* Runs the images of the batch's jobs (same read options) in one engine
 * dispatch and builds every job's j->out and j->status. Jobs abandoned by
 * their client (504) are skipped. Runs on a worker without srv.mu. */
static void run_jobs(job **jobs, int nj)
{
    size_t n = 0;
    int *live = lector__calloc((size_t)nj, sizeof *live);
    if (!live) {
        for (int b = 0; b < nj; b++) jobs[b]->status = 500;
        return;
    }
    pthread_mutex_lock(&srv.mu);
    for (int b = 0; b < nj; b++) {
        live[b] = !jobs[b]->abandoned;
        if (live[b]) n += jobs[b]->n_imgs;
    }
    pthread_mutex_unlock(&srv.mu);
    lector_batch_input *in = lector__calloc(n ? n : 1, sizeof *in);
    lector_result **res = lector__calloc(n ? n : 1, sizeof *res);
    lector_status *sts = lector__calloc(n ? n : 1, sizeof *sts);
    lector_error *errs = lector__calloc(n ? n : 1, sizeof *errs);
    if (!in || !res || !sts || !errs) {
        for (int b = 0; b < nj; b++) jobs[b]->status = 500;
        goto done;
    }
    size_t k = 0;
    for (int b = 0; b < nj; b++)
        for (size_t i = 0; live[b] && i < jobs[b]->n_imgs; i++, k++)
            in[k] = (lector_batch_input){jobs[b]->imgs[i].data, jobs[b]->imgs[i].size, jobs[b]->imgs[i].name};
    if (n) {
        read_batch(in, n, &jobs[0]->opt, res, sts, errs);
        serve_metrics_add(&srv.metrics, &srv.metrics.images, n);
        serve_metrics_batch(&srv.metrics, (int)n);
    }
    k = 0;
    for (int b = 0; b < nj; b++) {
        if (!live[b]) continue;
        render_job(jobs[b], res + k, sts + k, errs + k);
        k += jobs[b]->n_imgs;
    }
    for (size_t i = 0; i < n; i++) lector_result_free(res[i]);
done:
    lector__free(live);
    lector__free(in);
    lector__free(res);
    lector__free(sts);
    lector__free(errs);
}

static int same_options(const lector_read_options *a, const lector_read_options *b)
{
    return a->det_limit_side_len == b->det_limit_side_len && a->drop_score == b->drop_score &&
           a->use_angle_cls == b->use_angle_cls;
}

/* srv.mu held: unlinks job j (after prev, NULL = head) and marks it running */
static void take_job(job *prev, job *j)
{
    if (prev)
        prev->next = j->next;
    else
        srv.head = j->next;
    if (srv.tail == j) srv.tail = prev;
    j->next = NULL;
    srv.q_len--;
    srv.running++;
    j->state = JOB_RUNNING;
}

/* A worker takes the oldest job, then up to --max-batch requests in all
 * with the same read options, waiting at most --max-wait-ms after the first
 * for more; they run as one engine dispatch. */
static void *worker_main(void *arg)
{
    (void)arg;
    int maxb = srv.cfg->max_batch > 1 ? srv.cfg->max_batch : 1;
    job **batch = lector__calloc((size_t)maxb, sizeof *batch);
    if (!batch) return NULL;
    pthread_mutex_lock(&srv.mu);
    for (;;) {
        while (!srv.head && !srv.stop_workers) pthread_cond_wait(&srv.q_cond, &srv.mu);
        if (!srv.head) break; /* stopping and the queue is empty */
        int nb = 0;
        batch[nb++] = srv.head;
        take_job(NULL, srv.head);
        double until = lector__now_ms() + srv.cfg->max_wait_ms;
        while (nb < maxb) {
            job *prev = NULL, *q = srv.head;
            int other = 0; /* a job this batch cannot take: let another worker have it */
            while (q && nb < maxb) {
                job *next = q->next;
                if (same_options(&q->opt, &batch[0]->opt)) {
                    batch[nb++] = q;
                    take_job(prev, q);
                } else {
                    other = 1;
                    prev = q;
                }
                q = next;
            }
            if (other) pthread_cond_signal(&srv.q_cond);
            double t = lector__now_ms();
            if (nb >= maxb || t >= until || srv.stop_workers || srv.draining) break;
            struct timespec ts;
            ts.tv_sec = (time_t)(until / 1e3);
            ts.tv_nsec = (long)((until - (double)ts.tv_sec * 1e3) * 1e6);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (ts.tv_nsec < 0) ts.tv_nsec = 0;
            pthread_cond_timedwait(&srv.q_cond, &srv.mu, &ts);
        }
        pthread_mutex_unlock(&srv.mu);
        run_jobs(batch, nb);
        pthread_mutex_lock(&srv.mu);
        for (int b = 0; b < nb; b++) {
            srv.running--;
            batch[b]->state = JOB_DONE;
            pthread_cond_signal(&batch[b]->done);
            job_release(batch[b]);
        }
    }
    pthread_mutex_unlock(&srv.mu);
    lector__free(batch);
    return NULL;
}

/* ---- HTTP --------------------------------------------------------------------- */

typedef enum req_kind { REQ_OTHER, REQ_RAW, REQ_MULTIPART } req_kind;

typedef struct request {
    double t0;
    int counted; /* an /v1/ocr request: observe its latency */
    req_kind kind;
    unsigned fail; /* an HTTP status decided while receiving the body */
    const char *fail_msg;
    size_t total; /* body bytes received */
    serve_image raw;
    serve_image *files;
    size_t n_files;
    struct MHD_PostProcessor *pp;
} request;

static void image_clear(serve_image *im)
{
    lector__free(im->data);
    lector__free(im->name);
    memset(im, 0, sizeof *im);
}

static void request_free(request *rq)
{
    if (rq->pp) MHD_destroy_post_processor(rq->pp);
    image_clear(&rq->raw);
    for (size_t i = 0; i < rq->n_files; i++) image_clear(&rq->files[i]);
    lector__free(rq->files);
    lector__free(rq);
}

static int append(serve_image *im, const char *data, size_t n)
{
    if (im->size + n > im->cap) {
        size_t cap = im->cap ? im->cap : 65536;
        while (cap < im->size + n) cap *= 2;
        unsigned char *p = lector__realloc(im->data, cap);
        if (!p) return -1;
        im->data = p;
        im->cap = cap;
    }
    memcpy(im->data + im->size, data, n);
    im->size += n;
    return 0;
}

static enum MHD_Result send_body(struct MHD_Connection *c, request *rq, unsigned code, const char *type, char *body,
                                 int retry_after)
{
    size_t n = body ? strlen(body) : 0;
    /* the body is the allocator's (util.h): MHD hands it back to lector__free */
    struct MHD_Response *resp = body ? MHD_create_response_from_buffer_with_free_callback(n, body, lector__free)
                                     : MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        lector__free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (retry_after) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (code == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"lector\"");
    pthread_mutex_lock(&srv.mu);
    int draining = srv.draining;
    pthread_mutex_unlock(&srv.mu);
    if (draining) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, code, resp);
    MHD_destroy_response(resp);
    serve_metrics_response(&srv.metrics, code);
    if (rq && rq->counted) serve_metrics_latency(&srv.metrics, (lector__now_ms() - rq->t0) / 1e3);
    return ret;
}

static char *json_escape_dup(const char *s)
{
    size_t n = strlen(s);
    char *o = lector__malloc(n * 6 + 1), *p = o;
    if (!o) return NULL;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            *p++ = '\\';
            *p++ = (char)ch;
        } else if (ch < 0x20)
            p += sprintf(p, "\\u%04x", ch);
        else
            *p++ = (char)ch;
    }
    *p = '\0';
    return o;
}

static enum MHD_Result send_error(struct MHD_Connection *c, request *rq, unsigned code, const char *msg)
{
    char *e = json_escape_dup(msg);
    char *body = NULL;
    if (e && asprintf(&body, "{\"error\":\"%s\",\"status\":%u}\n", e, code) < 0) body = NULL;
    lector__free(e);
    return send_body(c, rq, code, "application/json", body, code == 503);
}

/* Constant time in the length of the secret. */
static int token_ok(struct MHD_Connection *c)
{
    const char *tok = srv.cfg->token;
    if (!tok) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
    h += 7;
    while (*h == ' ') h++;
    size_t hl = strlen(h), tl = strlen(tok);
    unsigned char d = hl != tl;
    for (size_t i = 0; i < tl; i++) d |= (unsigned char)((i < hl ? h[i] : 0) ^ tok[i]);
    return d == 0;
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                 const char *content_type, const char *transfer_encoding, const char *data,
                                 uint64_t off, size_t size)
{
    request *rq = cls;
    (void)kind, (void)content_type, (void)transfer_encoding;
    if (!key || strcmp(key, "image")) return MHD_YES; /* other fields are ignored */
    if (off == 0) {
        if (rq->n_files >= 64) {
            rq->fail = 413;
            rq->fail_msg = "more than 64 files in one request";
            return MHD_NO;
        }
        serve_image *f = lector__realloc(rq->files, (rq->n_files + 1) * sizeof *f);
        if (!f) return MHD_NO;
        rq->files = f;
        memset(&f[rq->n_files], 0, sizeof *f);
        f[rq->n_files].name = lector__strdup(filename && *filename ? filename : "image");
        if (!f[rq->n_files].name) return MHD_NO;
        rq->n_files++;
    }
    if (!rq->n_files) return MHD_NO;
    if (size && append(&rq->files[rq->n_files - 1], data, size)) return MHD_NO;
    return MHD_YES;
}

static int parse_query_int(struct MHD_Connection *c, const char *k, long lo, long hi, long *out, int *bad)
{
    const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
    if (!v) return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        *bad = 1;
        return 0;
    }
    *out = x;
    return 1;
}

static int query_bool(const char *v, int *out)
{
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "on"))
        *out = 1;
    else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "off"))
        *out = 0;
    else
        return -1;
    return 0;
}

/* Reads the per-request options; returns an error message or NULL. */
static const char *read_options(struct MHD_Connection *c, lector_read_options *o)
{
    *o = lector_default_read_options();
    o->use_angle_cls = srv.cfg->use_angle_cls;
    int bad = 0;
    long v;
    if (parse_query_int(c, "det_limit_side_len", 1, 16384, &v, &bad)) o->det_limit_side_len = (int)v;
    if (bad) return "det_limit_side_len: an integer in 1..16384";
    const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "drop_score");
    if (s) {
        char *end;
        double d = strtod(s, &end);
        if (end == s || *end || !(d >= 0 && d <= 1)) return "drop_score: a number in 0..1";
        o->drop_score = (float)d;
    }
    s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "use_angle_cls");
    if (s && query_bool(s, &o->use_angle_cls)) return "use_angle_cls: 0 or 1";
    return NULL;
}

/* Queues the job and waits for it with the deadline. */
static enum MHD_Result run_ocr(struct MHD_Connection *c, request *rq)
{
    lector_read_options opt;
    const char *bad = read_options(c, &opt);
    if (bad) return send_error(c, rq, 400, bad);

    job *j = lector__calloc(1, sizeof *j);
    if (!j) return send_error(c, rq, 503, "out of memory");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->done, &ca);
    pthread_condattr_destroy(&ca);
    j->opt = opt;
    j->refs = 2;
    if (rq->kind == REQ_RAW) {
        j->imgs = lector__calloc(1, sizeof *j->imgs);
        if (!j->imgs) {
            job_free(j);
            return send_error(c, rq, 503, "out of memory");
        }
        j->imgs[0] = rq->raw; /* moves the body */
        memset(&rq->raw, 0, sizeof rq->raw);
        j->imgs[0].name = lector__strdup("-"); /* as `lector --format json -` names standard input */
        j->n_imgs = 1;
        if (!j->imgs[0].name) {
            job_free(j);
            return send_error(c, rq, 503, "out of memory");
        }
    } else {
        j->multipart = 1;
        j->imgs = rq->files;
        j->n_imgs = rq->n_files;
        rq->files = NULL;
        rq->n_files = 0;
    }

    pthread_mutex_lock(&srv.mu);
    /* a request that arrives while draining came on a connection accepted
     * before: it is served too (the grace period bounds the wait) */
    if (srv.q_len >= srv.cfg->queue) {
        pthread_mutex_unlock(&srv.mu);
        job_free(j);
        serve_metrics_add(&srv.metrics, &srv.metrics.rejected_full, 1);
        return send_error(c, rq, 503, "queue full, retry later");
    }
    if (srv.tail)
        srv.tail->next = j;
    else
        srv.head = j;
    srv.tail = j;
    srv.q_len++;
    pthread_cond_signal(&srv.q_cond);

    /* wait in slices of 100 ms at most, so that the end of a drain's grace
     * period (srv.abort_waits) is seen without a wake-up per job */
    double deadline = lector__now_ms() + srv.cfg->timeout_ms;
    int timed_out = 0;
    while (j->state != JOB_DONE && !srv.abort_waits) {
        double t = lector__now_ms();
        if (t >= deadline) {
            timed_out = 1;
            break;
        }
        double wake = t + 100 < deadline ? t + 100 : deadline;
        struct timespec ts;
        ts.tv_sec = (time_t)(wake / 1e3);
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec * 1e3) * 1e6);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (ts.tv_nsec < 0) ts.tv_nsec = 0;
        pthread_cond_timedwait(&j->done, &srv.mu, &ts);
    }
    if (j->state != JOB_DONE) {
        if (j->state == JOB_QUEUED) { /* unlink: the worker will never see it */
            job **pp = &srv.head;
            job *prev = NULL;
            while (*pp != j) {
                prev = *pp;
                pp = &(*pp)->next;
            }
            *pp = j->next;
            if (srv.tail == j) srv.tail = prev;
            srv.q_len--;
            j->refs--;
        }
        j->abandoned = 1;
        job_release(j);
        pthread_mutex_unlock(&srv.mu);
        if (timed_out) {
            serve_metrics_add(&srv.metrics, &srv.metrics.timeouts, 1);
            return send_error(c, rq, 504, "deadline exceeded (--timeout-ms)");
        }
        return send_error(c, rq, 503, "shutting down");
    }
    char *out = j->out;
    unsigned status = j->status;
    j->out = NULL;
    job_release(j);
    pthread_mutex_unlock(&srv.mu);
    if (!out) return send_error(c, rq, 500, "out of memory");
    size_t n = strlen(out); /* newline-terminated like the CLI's output */
    char *nl = lector__realloc(out, n + 2);
    if (nl) {
        out = nl;
        out[n] = '\n';
        out[n + 1] = '\0';
    }
    return send_body(c, rq, status, "application/json", out, 0);
}

static enum MHD_Result send_readyz(struct MHD_Connection *c, request *rq)
{
    char dev[2][sizeof srv.primary_dev];
    pthread_mutex_lock(&srv.mu);
    int ready = srv.ready && !srv.draining, loaded = srv.ready, draining = srv.draining;
    memcpy(dev[0], srv.primary_dev, sizeof dev[0]);
    memcpy(dev[1], srv.cpu_dev, sizeof dev[1]);
    pthread_mutex_unlock(&srv.mu);
    serve_breaker_state bs = serve_breaker_get(&srv.breaker, NULL, NULL);
    char *body = NULL;
    char *d1 = json_escape_dup(dev[0]), *d2 = json_escape_dup(dev[1]);
    if (d1 && d2 &&
        asprintf(&body,
                 "{\"ready\":%s,\"models_loaded\":%s,\"draining\":%s,\"device\":\"%s\","
                 "\"fallback_device\":\"%s\",\"breaker\":\"%s\"}\n",
                 ready ? "true" : "false", loaded ? "true" : "false", draining ? "true" : "false", d1, d2,
                 serve_breaker_name(bs)) < 0)
        body = NULL;
    lector__free(d1);
    lector__free(d2);
    return send_body(c, rq, ready ? 200 : 503, "application/json", body, 0);
}

static enum MHD_Result send_metrics(struct MHD_Connection *c, request *rq)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return send_error(c, rq, 500, "out of memory");
    serve_metrics_write(&srv.metrics, f);
    char dev[2][sizeof srv.primary_dev];
    pthread_mutex_lock(&srv.mu);
    int q = srv.q_len, running = srv.running, inflight = srv.inflight, ready = srv.ready;
    int workers = ready ? srv.n_workers : 0; /* set before ready */
    memcpy(dev[0], srv.primary_dev, sizeof dev[0]);
    memcpy(dev[1], srv.cpu_dev, sizeof dev[1]);
    pthread_mutex_unlock(&srv.mu);
    uint64_t opens = 0, closes = 0;
    serve_breaker_state bs = serve_breaker_get(&srv.breaker, &opens, &closes);
    fprintf(
        f,
        "# HELP lector_serve_queue_depth Jobs waiting for a worker.\n# TYPE lector_serve_queue_depth gauge\n"
        "lector_serve_queue_depth %d\n"
        "# HELP lector_serve_queue_capacity Jobs the queue holds at most.\n# TYPE lector_serve_queue_capacity gauge\n"
        "lector_serve_queue_capacity %d\n"
        "# HELP lector_serve_jobs_running Jobs on a worker now.\n# TYPE lector_serve_jobs_running gauge\n"
        "lector_serve_jobs_running %d\n"
        "# HELP lector_serve_workers Worker threads.\n# TYPE lector_serve_workers gauge\n"
        "lector_serve_workers %d\n"
        "# HELP lector_serve_inflight_requests HTTP requests being served.\n# TYPE lector_serve_inflight_requests "
        "gauge\n"
        "lector_serve_inflight_requests %d\n"
        "# HELP lector_serve_ready 1 when the models are loaded and warm.\n# TYPE lector_serve_ready gauge\n"
        "lector_serve_ready %d\n"
        "# HELP lector_serve_breaker_state Circuit breaker: 0 closed, 1 open, 2 half-open.\n"
        "# TYPE lector_serve_breaker_state gauge\nlector_serve_breaker_state %d\n"
        "# HELP lector_serve_breaker_opens_total Times the breaker opened.\n"
        "# TYPE lector_serve_breaker_opens_total counter\nlector_serve_breaker_opens_total %llu\n"
        "# HELP lector_serve_breaker_closes_total Times a half-open probe closed the breaker.\n"
        "# TYPE lector_serve_breaker_closes_total counter\nlector_serve_breaker_closes_total %llu\n",
        q, srv.cfg->queue, running, workers, inflight, ready, (int)bs, (unsigned long long)opens,
        (unsigned long long)closes);
    fprintf(f, "# HELP lector_serve_device_info The engines' devices.\n# TYPE lector_serve_device_info gauge\n");
    fprintf(f, "lector_serve_device_info{engine=\"primary\",device=\"%s\"} 1\n", dev[0]);
    fprintf(f, "lector_serve_device_info{engine=\"fallback\",device=\"%s\"} 1\n", dev[1]);
    if (ready) { /* what the engines compiled: flat once the shapes of the traffic have been seen */
        lector_engine_stats es[2];
        lector_engine_get_stats(srv.primary, &es[0]);
        lector_engine_get_stats(srv.cpu, &es[1]);
        int n = srv.cpu != srv.primary ? 2 : 1;
        fprintf(f, "# HELP lector_plans_compiled_total Execution plans compiled (one per input shape not cached).\n"
                   "# TYPE lector_plans_compiled_total counter\n");
        for (int i = 0; i < n; i++)
            fprintf(f, "lector_plans_compiled_total{engine=\"%s\"} %llu\n", i ? "fallback" : "primary",
                    (unsigned long long)es[i].plans_compiled);
        fprintf(f, "# HELP lector_kernels_compiled_total Kernels compiled for those plans (JIT primitives, device "
                   "kernels).\n# TYPE lector_kernels_compiled_total counter\n");
        for (int i = 0; i < n; i++)
            fprintf(f, "lector_kernels_compiled_total{engine=\"%s\"} %llu\n", i ? "fallback" : "primary",
                    (unsigned long long)es[i].kernels_compiled);
    }
    if (ready && lector_engine_on_gpu(srv.primary)) { /* the engines are set before ready */
        size_t used, limit;
        lector_engine_gpu_memory(srv.primary, &used, &limit);
        fprintf(f,
                "# HELP lector_serve_engine_gpu_memory_bytes GPU memory the engine holds (weights, activation "
                "arenas, workspaces).\n# TYPE lector_serve_engine_gpu_memory_bytes gauge\n"
                "lector_serve_engine_gpu_memory_bytes %zu\n"
                "# HELP lector_serve_engine_gpu_memory_limit_bytes The cap (gpu_mem_limit); 0 = none.\n"
                "# TYPE lector_serve_engine_gpu_memory_limit_bytes gauge\n"
                "lector_serve_engine_gpu_memory_limit_bytes %zu\n",
                used, limit);
    }
    serve_metrics_write_gpus(f);
    fclose(f);
    return send_body(c, rq, 200, "text/plain; version=0.0.4; charset=utf-8", buf, 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)cls, (void)version;
    request *rq = *con_cls;
    if (!rq) {
        rq = lector__calloc(1, sizeof *rq);
        if (!rq) return MHD_NO;
        rq->t0 = lector__now_ms();
        *con_cls = rq;
        pthread_mutex_lock(&srv.mu);
        srv.inflight++;
        srv.accepted++;
        pthread_mutex_unlock(&srv.mu);

        int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
        if (!strcmp(url, "/healthz")) {
            if (!get) return send_error(c, rq, 405, "use GET");
            return send_body(c, rq, 200, "text/plain", lector__strdup("ok\n"), 0);
        }
        if (!token_ok(c)) return send_error(c, rq, 401, "missing or wrong bearer token");
        if (!strcmp(url, "/readyz")) return get ? send_readyz(c, rq) : send_error(c, rq, 405, "use GET");
        if (!strcmp(url, "/metrics")) return get ? send_metrics(c, rq) : send_error(c, rq, 405, "use GET");
        if (!strcmp(url, "/v1/doctor")) {
            if (!get) return send_error(c, rq, 405, "use GET");
            char *d = srv.cfg->doctor_json ? srv.cfg->doctor_json() : NULL;
            if (!d) return send_error(c, rq, 404, "the doctor is not built in");
            return send_body(c, rq, 200, "application/json", d, 0);
        }
        if (strcmp(url, "/v1/ocr")) return send_error(c, rq, 404, "no such endpoint");
        if (strcmp(method, "POST")) return send_error(c, rq, 405, "use POST");
        rq->counted = 1;
        pthread_mutex_lock(&srv.mu);
        int ready = srv.ready;
        pthread_mutex_unlock(&srv.mu);
        if (!ready) return send_error(c, rq, 503, "models are loading");

        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (ct && !strncasecmp(ct, "image/", 6))
            rq->kind = REQ_RAW;
        else if (ct && !strncasecmp(ct, "multipart/form-data", 19)) {
            rq->kind = REQ_MULTIPART;
            rq->pp = MHD_create_post_processor(c, 65536, post_iter, rq);
            if (!rq->pp) return send_error(c, rq, 400, "malformed multipart/form-data (boundary?)");
        } else
            return send_error(c, rq, 415,
                              "send the image as Content-Type image/* or multipart/form-data (field 'image')");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv.cfg->max_body)
            return send_error(c, rq, 413, "request body over --max-body");
        return MHD_YES;
    }

    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rq->fail) return MHD_YES; /* discard the rest, answer at the end */
        rq->total += n;
        if (rq->total > srv.cfg->max_body) {
            rq->fail = 413;
            rq->fail_msg = "request body over --max-body";
            image_clear(&rq->raw);
            return MHD_YES;
        }
        if (rq->kind == REQ_RAW) {
            if (append(&rq->raw, upload_data, n)) {
                rq->fail = 503;
                rq->fail_msg = "out of memory";
            }
        } else if (MHD_post_process(rq->pp, upload_data, n) != MHD_YES && !rq->fail) {
            rq->fail = 400;
            rq->fail_msg = "malformed multipart/form-data";
        }
        return MHD_YES;
    }

    /* the whole body is here */
    if (rq->kind == REQ_MULTIPART && !rq->fail) {
        enum MHD_Result ok = MHD_destroy_post_processor(rq->pp);
        rq->pp = NULL;
        if (ok != MHD_YES) {
            rq->fail = 400;
            rq->fail_msg = "malformed multipart/form-data";
        }
    }
    if (rq->fail) return send_error(c, rq, rq->fail, rq->fail_msg);
    if (rq->kind == REQ_RAW && rq->raw.size == 0) return send_error(c, rq, 400, "empty body: send the image bytes");
    if (rq->kind == REQ_MULTIPART) {
        if (!rq->n_files) return send_error(c, rq, 400, "multipart/form-data without an 'image' file field");
        for (size_t i = 0; i < rq->n_files; i++)
            if (!rq->files[i].size) return send_error(c, rq, 400, "an 'image' part is empty");
    }
    return run_ocr(c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c;
    request *rq = *con_cls;
    if (!rq) return;
    request_free(rq);
    *con_cls = NULL;
    pthread_mutex_lock(&srv.mu);
    srv.inflight--;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        srv.answered++;
    else
        srv.aborted++;
    pthread_mutex_unlock(&srv.mu);
}

/* ---- start, warm, drain ------------------------------------------------------- */

static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[256];
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof host) return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port > 65535) return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    memset(ss, 0, sizeof *ss);
    if (host[0] == '[') {
        size_t hl = strlen(host);
        if (hl < 3 || host[hl - 1] != ']') return -1;
        host[hl - 1] = '\0';
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1) return -1;
        *len = sizeof *a;
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost")) strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) return -1;
    *len = sizeof *a;
    return 0;
}

/* A synthetic page with dark bars: compiles the det and rec plans. */
static void warm(lector_engine *e)
{
    enum { W = 320, H = 160 };
    static uint8_t px[W * H];
    memset(px, 255, sizeof px);
    for (int y = 40; y < 64; y++)
        for (int x = 20; x < 300; x++) px[y * W + x] = (uint8_t)(((x / 6) % 2) ? 0 : 255);
    for (int y = 90; y < 110; y++)
        for (int x = 20; x < 200; x++) px[y * W + x] = (uint8_t)(((x / 4) % 3) ? 0 : 255);
    lector_result *r = NULL;
    lector_error err;
    if (lector_read_pixels(e, px, W, H, 0, LECTOR_PIXEL_GRAY, NULL, &r, &err) == LECTOR_OK) lector_result_free(r);
}

void lector_serve_default_config(lector_serve_config *c)
{
    memset(c, 0, sizeof *c);
    c->listen = "127.0.0.1:8080";
    c->params = lector_default_params();
    c->workers = 0;
    c->max_batch = 1;
    c->max_wait_ms = 0;
    c->queue = 64;
    c->timeout_ms = 30000;
    c->max_body = (size_t)16 << 20;
    c->grace_ms = 30000;
    c->conn_timeout_s = 30;
    c->max_connections = 256;
    c->breaker_threshold = 1;
    c->breaker_cooldown_ms = 5000;
    c->fault_every = (int)lector__tc_long(LECTOR__TC_SERVE_FAULT, 0);
}

/* Waits until no request is in flight or the clock reaches `end` (ms). */
static void wait_idle(double end)
{
    for (;;) {
        pthread_mutex_lock(&srv.mu);
        int busy = srv.inflight;
        pthread_mutex_unlock(&srv.mu);
        if (!busy || lector__now_ms() >= end) return;
        usleep(10000);
    }
}

int lector_serve_run(const lector_serve_config *cfg)
{
    /* test controls inject faults and change results: never silently in a service */
    const char *tc = lector_test_controls();
    if (*tc && !cfg->allow_test_controls) {
        fprintf(stderr,
                "lector serve: test controls are set (%s): they inject faults or change results "
                "(docs/DEBUG.md); unset them, or start with --allow-test-controls to run with them\n",
                tc);
        return 1;
    }
    if (*tc) fprintf(stderr, "lector serve: running with test controls %s (--allow-test-controls)\n", tc);
    memset(&srv, 0, sizeof srv);
    srv.cfg = cfg;
    pthread_mutex_init(&srv.mu, NULL);
    pthread_condattr_t qa; /* the batch wait (--max-wait-ms) is on the monotonic clock */
    pthread_condattr_init(&qa);
    pthread_condattr_setclock(&qa, CLOCK_MONOTONIC);
    pthread_cond_init(&srv.q_cond, &qa);
    pthread_condattr_destroy(&qa);
    serve_metrics_init(&srv.metrics);
    serve_breaker_init(&srv.breaker, cfg->breaker_threshold, cfg->breaker_cooldown_ms);
    snprintf(srv.primary_dev, sizeof srv.primary_dev, "loading");
    snprintf(srv.cpu_dev, sizeof srv.cpu_dev, "loading");

    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, &old);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    struct MHD_Daemon *d = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    if (parse_listen(cfg->listen, &ss, &sl)) {
        fprintf(stderr, "lector serve: --listen expects HOST:PORT or [V6]:PORT, got '%s'\n", cfg->listen);
        goto out;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)cfg->max_connections, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
                         MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "lector serve: cannot listen on %s: %s\n", cfg->listen, strerror(errno));
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[128];
    snprintf(host, sizeof host, "%.*s", (int)(strrchr(cfg->listen, ':') - cfg->listen), cfg->listen);
    fprintf(stderr, "lector serve: listening on http://%s:%u\n", host, di ? di->port : 0);

    /* models: loaded once, warmed before /readyz says yes */
    lector_params p = cfg->params;
    p.use_angle_cls = 1; /* loaded so that any request may turn it on */
    lector_error err = {0};
    double t0 = lector__now_ms();
    if (lector_engine_create(&p, &srv.primary, &err)) {
        fprintf(stderr, "lector serve: %s (%s)\n", err.message, lector_status_str(err.code));
        goto out;
    }
    srv.cpu = srv.primary;
    if (p.device != LECTOR_DEVICE_CPU || cfg->fault_every > 0) {
        lector_params pc = p;
        pc.device = LECTOR_DEVICE_CPU;
        if (lector_engine_create(&pc, &srv.cpu, &err)) {
            fprintf(stderr, "lector serve: CPU fallback engine: %s (%s)\n", err.message, lector_status_str(err.code));
            goto out;
        }
    }
    pthread_mutex_lock(&srv.mu); /* /readyz and /metrics read them meanwhile */
    snprintf(srv.primary_dev, sizeof srv.primary_dev, "%s", lector_engine_device(srv.primary));
    snprintf(srv.cpu_dev, sizeof srv.cpu_dev, "%s", lector_engine_device(srv.cpu));
    pthread_mutex_unlock(&srv.mu);
    warm(srv.primary);
    if (srv.cpu != srv.primary) warm(srv.cpu);

    srv.n_workers = cfg->workers > 0 ? cfg->workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (srv.n_workers < 1) srv.n_workers = 1;
    srv.workers = lector__calloc((size_t)srv.n_workers, sizeof *srv.workers);
    if (!srv.workers) goto out;
    for (int i = 0; i < srv.n_workers; i++) {
        if (pthread_create(&srv.workers[i], NULL, worker_main, NULL)) {
            srv.n_workers = i;
            fprintf(stderr, "lector serve: cannot start worker threads\n");
            goto out;
        }
    }
    pthread_mutex_lock(&srv.mu);
    srv.ready = 1;
    pthread_mutex_unlock(&srv.mu);
    if (cfg->max_batch > 1)
        fprintf(stderr, "lector serve: micro-batching: up to %d requests per engine dispatch, waiting up to %d ms\n",
                cfg->max_batch, cfg->max_wait_ms);
    if (cfg->fault_every > 0)
        fprintf(stderr, "lector serve: fault injection: every %d-th primary read fails (LECTOR_SERVE_FAULT)\n",
                cfg->fault_every);
    fprintf(stderr, "lector serve: ready in %.0f ms: %d workers, device %s%s%s\n", lector__now_ms() - t0, srv.n_workers,
            srv.primary_dev, srv.cpu != srv.primary ? ", CPU fallback " : "",
            srv.cpu != srv.primary ? srv.cpu_dev : "");
    if (*lector_engine_fallback_reason(srv.primary))
        fprintf(stderr, "lector serve: device auto: not on the GPU: %s\n", lector_engine_fallback_reason(srv.primary));

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "lector serve: %s: draining (grace %d ms)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", cfg->grace_ms);
    rc = 0;

out:
    if (d) {
        pthread_mutex_lock(&srv.mu);
        srv.draining = 1;
        pthread_mutex_unlock(&srv.mu);
        MHD_socket ls = MHD_quiesce_daemon(d); /* stop accepting */
        if (ls != MHD_INVALID_SOCKET) close(ls);
        wait_idle(lector__now_ms() + cfg->grace_ms);
        pthread_mutex_lock(&srv.mu);
        srv.abort_waits = 1; /* past the grace period: waiting requests get 503 */
        for (job *j = srv.head; j; j = j->next) pthread_cond_signal(&j->done);
        pthread_mutex_unlock(&srv.mu);
        /* let those 503s reach their clients before the connections close */
        wait_idle(lector__now_ms() + 5000);
        MHD_stop_daemon(d);
    }
    pthread_mutex_lock(&srv.mu);
    srv.stop_workers = 1;
    pthread_cond_broadcast(&srv.q_cond);
    pthread_mutex_unlock(&srv.mu);
    for (int i = 0; i < srv.n_workers; i++) pthread_join(srv.workers[i], NULL);
    lector__free(srv.workers);
    if (d || rc == 0)
        fprintf(stderr, "lector serve: stopped: %llu requests accepted, %llu answered, %llu aborted\n",
                (unsigned long long)srv.accepted, (unsigned long long)srv.answered, (unsigned long long)srv.aborted);
    if (srv.cpu != srv.primary) lector_engine_free(srv.cpu);
    lector_engine_free(srv.primary);
    serve_breaker_destroy(&srv.breaker);
    serve_metrics_destroy(&srv.metrics);
    pthread_cond_destroy(&srv.q_cond);
    pthread_mutex_destroy(&srv.mu);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
