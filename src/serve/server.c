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
#include <malloc.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "breaker.h"
#include "budget.h"
#include "conn.h"
#include "metrics.h"
#include "lector_serve.h"
#include "request.h"
#include "util/testctl.h"
#include "util/utf8.h"
#include "util/util.h"

#define MAX_IMAGES 64 /* per request */

extern const char lector_openapi_json[]; /* docs/openapi.json, embedded at build time */

/* ---- jobs and the queue ------------------------------------------------------- */

typedef serve_blob serve_image;

typedef enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE } job_state;

typedef struct job {
    int refs;
    job_state state;
    atomic_int abandoned; /* its client is gone (or its deadline passed): read by the engine's cancel hook */
    int array;            /* the response is an array: multipart or a JSON "images" list */
    serve_image *imgs;
    size_t n_imgs;
    size_t reserved; /* bytes of the budget's requests' share, released with the job */
    lector_read_options opt;
    char *out;        /* response body (JSON) */
    unsigned status;  /* HTTP status */
    double deadline;  /* lector__now_ms() at which its request is answered 504 */
    double timeout_s; /* its whole deadline */
    int shed;         /* taken by a worker too late to finish in time: answered 503, not run */
    pthread_cond_t done;
    struct job *next;
} job;

typedef struct server {
    const lector_serve_config *cfg;
    lector_engine *primary, *cpu; /* cpu == primary when nothing can fail independently */
    char primary_dev[160], cpu_dev[160];
    serve_breaker breaker;
    serve_metrics metrics;
    serve_budget budget;
    serve_conns *conns;
    const char *limit_source;
    int max_det_side;

    pthread_mutex_t mu;
    pthread_cond_t q_cond;
    job *head, *tail;
    int q_len, running;
    int stop_workers;
    int ready, draining, abort_waits;
    int inflight;
    uint64_t accepted, answered, aborted;
    uint64_t abandoned_queued, abandoned_running, rejected_wait, rejected_memory, clamped;
    uint64_t shed_queued; /* jobs answered 503 when a worker took them (serve_budget_shed) */
    unsigned long long fault_counter;
    pthread_t *workers;
    int n_workers;
} server;

static server srv;

static void job_free(job *j)
{
    serve_blobs_free(j->imgs, j->n_imgs);
    serve_budget_release(&srv.budget, j->reserved);
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
        if (j->array) {
            out[len] = len ? ',' : '[';
            len++;
        }
        memcpy(out + len, s, n);
        len += n;
        lector__free(s);
    }
    if (out && j->array) out[len++] = ']';
    if (out) out[len] = '\0';
    if (any_ok && j->array) status = 200; /* per-file errors are in the array */
    if (!status) status = 200;
    j->out = out;
    j->status = out ? status : 500;
}

/* The engine's cancel hook (lector_read_options.cancel): a batch stops at
 * the next stage boundary once every job in it is abandoned. */
typedef struct batch_ref {
    job **jobs;
    int n;
} batch_ref;

static int batch_abandoned(void *user)
{
    const batch_ref *b = user;
    for (int i = 0; i < b->n; i++)
        if (!atomic_load(&b->jobs[i]->abandoned)) return 0;
    return 1;
}

/* Runs the images of the batch's jobs (same read options) and builds every
 * job's j->out and j->status. Several jobs (micro-batching, one image each)
 * share one engine dispatch; a job of several images (multipart, a JSON
 * list) reads them one at a time, so that one image's decoded pages are in
 * memory at once. Jobs abandoned by their client are skipped, and a read
 * whose jobs all left stops at its next stage. Runs on a worker without
 * srv.mu. */
static void run_jobs(job **jobs, int nj)
{
    size_t n = 0;
    int *live = lector__calloc((size_t)nj, sizeof *live);
    if (!live) {
        for (int b = 0; b < nj; b++) jobs[b]->status = 500;
        return;
    }
    for (int b = 0; b < nj; b++) {
        live[b] = !atomic_load(&jobs[b]->abandoned);
        if (live[b]) n += jobs[b]->n_imgs;
    }
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
    batch_ref ref = {jobs, nj};
    lector_read_options opt = jobs[0]->opt;
    opt.cancel = batch_abandoned;
    opt.cancel_user = &ref;
    if (n) {
        size_t step = nj == 1 ? 1 : n; /* one job's images one at a time */
        for (size_t i = 0; i < n; i += step) {
            if (batch_abandoned(&ref)) {
                for (size_t q = i; q < n; q++) {
                    sts[q] = LECTOR_ERR_CANCELLED;
                    snprintf(errs[q].message, sizeof errs[q].message, "the client has gone");
                }
                break;
            }
            read_batch(in + i, step, &opt, res + i, sts + i, errs + i);
            serve_metrics_batch(&srv.metrics, (int)step);
        }
        serve_metrics_add(&srv.metrics, &srv.metrics.images, n);
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

/* Jobs that may share an engine dispatch: one image each (a job of several
 * reads them one at a time), the same read options. */
static int batchable(const job *a, const job *b)
{
    return a->n_imgs == 1 && b->n_imgs == 1 && same_options(&a->opt, &b->opt);
}

/* srv.mu held: job j, queued or just taken, will not run: its request is
 * answered 503 (send_shed), a running read would skip it */
static void shed_job(job *j)
{
    j->shed = 1;
    atomic_store(&j->abandoned, 1);
    srv.shed_queued++;
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
        while (nb < maxb && batch[0]->n_imgs == 1) {
            job *prev = NULL, *q = srv.head;
            int other = 0; /* a job this batch cannot take: let another worker have it */
            while (q && nb < maxb) {
                job *next = q->next;
                if (batchable(q, batch[0])) {
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
        /* a job whose wait in the queue ran long and which would now run
         * into its deadline is answered 503 + Retry-After instead of a 504
         * later (run_jobs skips it as abandoned) */
        double now = lector__now_ms();
        int shed = 0;
        for (int b = 0; b < nb; b++) {
            job *j = batch[b];
            if (!atomic_load(&j->abandoned) &&
                serve_budget_shed(&srv.budget, (j->deadline - now) / 1e3, j->timeout_s)) {
                shed_job(j);
                shed++;
            }
        }
        pthread_mutex_unlock(&srv.mu);
        if (shed < nb) {
            double t0 = lector__now_ms();
            run_jobs(batch, nb);
            /* the service rate, over the jobs that ran: a batch whose
             * clients all left (or timed out) stopped early, its time only
             * a lower bound: counted when it says the jobs take longer than
             * measured so far */
            int cancelled = 1;
            for (int b = 0; b < nb; b++) cancelled &= atomic_load(&batch[b]->abandoned); /* shed ones too */
            double per_job = (lector__now_ms() - t0) / 1e3 / (nb - shed);
            pthread_mutex_lock(&srv.budget.mu);
            double known = srv.budget.service_s;
            pthread_mutex_unlock(&srv.budget.mu);
            if (!cancelled || per_job > known) serve_budget_job_done(&srv.budget, per_job);
        }
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

typedef struct request {
    double t0;
    int counted; /* an /v1/ocr request: observe its latency */
    serve_body_kind kind;
    int declared_image; /* Content-Type image/... */
    unsigned fail;      /* an HTTP status decided while receiving the body */
    const char *fail_msg;
    size_t total;    /* body bytes received */
    size_t reserved; /* bytes of the budget reserved for the body so far */
    serve_image raw; /* a raw or JSON body */
    serve_image *files;
    size_t n_files;
    int file_open; /* the last multipart part is an image field still arriving */
    struct MHD_PostProcessor *pp;
    serve_params params;
    int clamped;
    /* access log */
    unsigned status;
    size_t bytes;
    char method[16];
    char url[256];
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
    serve_blobs_free(rq->files, rq->n_files);
    serve_budget_release(&srv.budget, rq->reserved);
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

static enum MHD_Result send_body_h(struct MHD_Connection *c, request *rq, unsigned code, const char *type, char *body,
                                   int retry_after, int close, const char *clamped)
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
    if (retry_after) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
    }
    if (clamped && *clamped) MHD_add_response_header(resp, "X-Lector-Clamped", clamped);
    if (code == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"lector\"");
    pthread_mutex_lock(&srv.mu);
    int draining = srv.draining;
    pthread_mutex_unlock(&srv.mu);
    if (draining || close) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(c, code, resp);
    MHD_destroy_response(resp);
    serve_metrics_response(&srv.metrics, code);
    if (rq) {
        rq->status = code;
        rq->bytes = n;
        if (rq->counted) serve_metrics_latency(&srv.metrics, (lector__now_ms() - rq->t0) / 1e3);
    }
    return ret;
}

static enum MHD_Result send_body(struct MHD_Connection *c, request *rq, unsigned code, const char *type, char *body,
                                 int retry_after)
{
    return send_body_h(c, rq, code, type, body, retry_after, 0, NULL);
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

/* {"error":..., "status":N}; 503 carries Retry-After (retry_after s, at least 1). */
static enum MHD_Result send_error_ra(struct MHD_Connection *c, request *rq, unsigned code, const char *msg,
                                     int retry_after, int close)
{
    char *e = json_escape_dup(msg);
    char *body = NULL;
    if (e && asprintf(&body, "{\"error\":\"%s\",\"status\":%u}\n", e, code) < 0) body = NULL;
    lector__free(e);
    if (code == 503 && retry_after < 1) retry_after = 1;
    return send_body_h(c, rq, code, "application/json", body, code == 503 ? retry_after : 0, close, NULL);
}

static enum MHD_Result send_error(struct MHD_Connection *c, request *rq, unsigned code, const char *msg)
{
    return send_error_ra(c, rq, code, msg, 1, 0);
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

/* A filename a client sent, as valid UTF-8 (JSON needs it); said once. */
static char *client_name(const char *filename)
{
    if (!filename || !*filename) return lector__strdup("image");
    if (lector__utf8_valid(filename)) return lector__strdup(filename);
    static atomic_int said;
    if (!atomic_exchange(&said, 1))
        fprintf(stderr, "lector serve: a multipart filename is not valid UTF-8: U+FFFD stands for its bad bytes "
                        "(said once)\n");
    char *r = lector__utf8_repair(filename, NULL), *d = r ? lector__strdup(r) : NULL;
    lector__free(r);
    return d;
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                 const char *content_type, const char *transfer_encoding, const char *data,
                                 uint64_t off, size_t size)
{
    request *rq = cls;
    (void)kind, (void)content_type, (void)transfer_encoding;
    if (!serve_is_image_field(key)) { /* other fields: parameters, or ignored */
        rq->file_open = 0;
        if (!filename && off == 0 && size < 64 && key) {
            char v[64];
            memcpy(v, data, size);
            v[size] = '\0';
            const char *bad = serve_params_set(&rq->params, key, v);
            if (bad && !rq->fail) {
                rq->fail = 400;
                rq->fail_msg = bad;
            }
        }
        return MHD_YES;
    }
    if (off == 0) {
        if (rq->n_files >= MAX_IMAGES) {
            rq->fail = 413;
            rq->fail_msg = "more than 64 images in one request";
            return MHD_NO;
        }
        serve_image *f = lector__realloc(rq->files, (rq->n_files + 1) * sizeof *f);
        if (!f) return MHD_NO;
        rq->files = f;
        memset(&f[rq->n_files], 0, sizeof *f);
        f[rq->n_files].name = client_name(filename);
        if (!f[rq->n_files].name) return MHD_NO;
        rq->n_files++;
    }
    if (!rq->n_files) return MHD_NO;
    if (size && append(&rq->files[rq->n_files - 1], data, size)) return MHD_NO;
    return MHD_YES;
}

/* Reads the query's parameters into rq->params; an error message or NULL. */
static enum MHD_Result query_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    request *rq = cls;
    (void)kind;
    const char *bad = serve_params_set(&rq->params, key, value ? value : "");
    if (bad && !rq->fail) {
        rq->fail = 400;
        rq->fail_msg = bad;
    }
    return MHD_YES;
}

/* The read options of the request's parameters, clamped to the server's
 * maxima (docs/SERVICE.md lists them); *clamped names what was lowered. */
static void read_options(request *rq, lector_read_options *o, int *timeout_ms, char *clamped, size_t clen)
{
    rq->clamped = serve_params_clamp(&rq->params, srv.max_det_side, srv.cfg->timeout_ms);
    *o = lector_default_read_options();
    o->use_angle_cls = srv.cfg->use_angle_cls;
    if (rq->params.det_limit_side_len > 0) o->det_limit_side_len = rq->params.det_limit_side_len;
    if (rq->params.drop_score >= 0) o->drop_score = (float)rq->params.drop_score;
    if (rq->params.use_angle_cls >= 0) o->use_angle_cls = rq->params.use_angle_cls;
    *timeout_ms = rq->params.timeout_ms > 0 ? rq->params.timeout_ms : srv.cfg->timeout_ms;
    clamped[0] = '\0';
    if (rq->clamped & 1) snprintf(clamped, clen, "det_limit_side_len=%d", srv.max_det_side);
    if (rq->clamped & 2)
        snprintf(clamped + strlen(clamped), clen - strlen(clamped), "%stimeout_ms=%d", *clamped ? ", " : "",
                 srv.cfg->timeout_ms);
    if (rq->clamped) {
        pthread_mutex_lock(&srv.mu);
        srv.clamped++;
        pthread_mutex_unlock(&srv.mu);
    }
}

/* Memory the reading of image `im` takes at its peak, beyond its bytes:
 * decoding (lector_probe_image), detection's input and probability map at
 * the size the limit gives it, and a margin for crops and recognition
 * batches (plans are the plan caches'). 0 when the headers say nothing:
 * decoding then fails at once. */
static size_t work_bytes(const serve_image *im, int limit)
{
    lector_image_info info;
    if (lector_probe_image(im->data, im->size, NULL, &info, NULL)) return 0;
    double side = info.width > info.height ? info.width : info.height, px = (double)info.max_page_pixels;
    double ratio = limit > 0 && side > limit ? limit / side : 1;
    double det_px = px * ratio * ratio + 64.0 * (info.width + info.height) * ratio + 4096;
    return (size_t)info.decode_bytes + (size_t)(det_px * 20) + ((size_t)16 << 20);
}

/* 1 when the client has closed its side of the connection (a reset, or
 * EOF: nginx's test for a client that went away, as no HTTP/1.1 client
 * half-closes and then waits for an answer). */
static int client_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd pfd = {ci->connect_fd, POLLIN | POLLRDHUP, 0};
    if (poll(&pfd, 1, 0) <= 0) return 0;
    if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) return 1;
    char b;
    return (pfd.revents & POLLIN) && recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* The images of a finished body, in rq->files: 0; or 1 with an error
 * response queued (its result in *ret). */
static int collect_images(struct MHD_Connection *c, request *rq, int *array, enum MHD_Result *ret)
{
    *array = 0;
#define FAIL(code, msg)                      \
    do {                                     \
        *ret = send_error(c, rq, code, msg); \
        return 1;                            \
    } while (0)
    if (rq->kind == SERVE_BODY_MULTIPART) {
        if (!rq->n_files) FAIL(400, "multipart/form-data without an image part (field image, file or image_file)");
        for (size_t i = 0; i < rq->n_files; i++)
            if (!rq->files[i].size) FAIL(400, "an image part is empty");
        *array = 1;
        return 0;
    }
    if (!rq->raw.size) FAIL(400, "empty body: send the image bytes");
    const unsigned char *d = rq->raw.data;
    size_t i = 0;
    while (i < rq->raw.size && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n')) i++;
    int looks_json = i < rq->raw.size && d[i] == '{';
    lector_image_info info;
    if (rq->kind == SERVE_BODY_JSON || (looks_json && lector_probe_image(d, rq->raw.size, NULL, &info, NULL))) {
        unsigned status = 400;
        serve_image *blobs = NULL;
        size_t n = 0;
        const char *bad = serve_parse_json((const char *)d, rq->raw.size, MAX_IMAGES, &rq->params, &blobs, &n, &status);
        if (!bad) {
            image_clear(&rq->raw);
            rq->files = blobs;
            rq->n_files = n;
            *array = n > 1;
            return 0;
        }
        /* a body declared an image that is no JSON at all and no image is a corrupt image (422
         * below), whatever its first byte: random bytes begin with '{' one time in 256 */
        if (bad != serve_not_json || rq->kind == SERVE_BODY_JSON || !rq->declared_image) FAIL(status, bad);
    }
    /* the bytes are the image: by their content whatever the type said;
     * a declared image that is none gets the CLI's JSON with its error */
    if (!rq->declared_image && lector_probe_image(d, rq->raw.size, NULL, &info, NULL))
        FAIL(415, "the body is not an image (JPEG, PNG, TIFF, WebP, BMP, PNM or JPEG 2000, found by its content), nor "
                  "multipart/form-data or JSON with base64");
    rq->files = lector__calloc(1, sizeof *rq->files);
    if (!rq->files) FAIL(503, "out of memory");
    rq->files[0] = rq->raw; /* moves the body */
    memset(&rq->raw, 0, sizeof rq->raw);
    rq->files[0].name = lector__strdup("-"); /* as `lector --format json -` names standard input */
    rq->n_files = 1;
    if (!rq->files[0].name) FAIL(503, "out of memory");
    return 0;
#undef FAIL
}

/* 503 + Retry-After for a job shed from the queue (serve_budget_shed). */
static enum MHD_Result send_shed(struct MHD_Connection *c, request *rq, int timeout_ms)
{
    double own = serve_budget_slowest_s(&srv.budget);
    char msg[200];
    snprintf(msg, sizeof msg,
             "busy: this request waited in the queue until less of its deadline of %.1f s was left than a "
             "reading may take (up to %.1f s)",
             timeout_ms / 1e3, own);
    return send_error_ra(c, rq, 503, msg, own >= 1 ? (int)ceil(own) : 1, 0);
}

/* Admits the request (memory, expected wait), queues its job and waits
 * for it with the deadline, watching that the client is still there. */
static enum MHD_Result run_ocr(struct MHD_Connection *c, request *rq)
{
    int array;
    enum MHD_Result ret;
    if (collect_images(c, rq, &array, &ret)) return ret;
    if (rq->fail) return send_error(c, rq, rq->fail, rq->fail_msg); /* a bad parameter in the JSON body */
    lector_read_options opt;
    int timeout_ms;
    char clamped[96];
    read_options(rq, &opt, &timeout_ms, clamped, sizeof clamped);

    /* memory: the largest image's reading (they run one at a time) */
    int limit = opt.det_limit_side_len > 0 ? opt.det_limit_side_len : srv.cfg->params.det_limit_side_len;
    size_t work = 0;
    for (size_t i = 0; i < rq->n_files; i++) {
        size_t w = work_bytes(&rq->files[i], limit);
        if (w > work) work = w;
    }
    int never = 0;
    if (serve_budget_reserve(&srv.budget, work, &never)) {
        pthread_mutex_lock(&srv.mu);
        srv.rejected_memory++;
        pthread_mutex_unlock(&srv.mu);
        char msg[200];
        snprintf(msg, sizeof msg,
                 "reading this image takes about %zu MiB, %s the service's memory budget (--memory-limit)", work >> 20,
                 never ? "more than" : "not free now in");
        return send_error(c, rq, never ? 413 : 503, msg);
    }

    job *j = lector__calloc(1, sizeof *j);
    if (!j) {
        serve_budget_release(&srv.budget, work);
        return send_error(c, rq, 503, "out of memory");
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->done, &ca);
    pthread_condattr_destroy(&ca);
    j->opt = opt;
    j->refs = 2;
    j->array = array;
    j->imgs = rq->files;
    j->n_imgs = rq->n_files;
    rq->files = NULL;
    rq->n_files = 0;
    j->reserved = work + rq->reserved; /* the job owns the body's reservation now */
    rq->reserved = 0;

    pthread_mutex_lock(&srv.mu);
    /* a request that arrives while draining came on a connection accepted
     * before: it is served too (the grace period bounds the wait) */
    if (srv.q_len >= srv.cfg->queue) {
        pthread_mutex_unlock(&srv.mu);
        job_free(j);
        serve_metrics_add(&srv.metrics, &srv.metrics.rejected_full, 1);
        return send_error(c, rq, 503, "queue full, retry later");
    }
    /* an idle server always tries: rejecting then would help no one, and only
     * jobs that run keep the measured rate true (it would stay at a bad
     * moment's value otherwise) */
    int ahead = srv.q_len + srv.running;
    double expect = serve_budget_expected_s(&srv.budget, ahead, srv.n_workers);
    if (ahead > 0 && expect * 1e3 > timeout_ms) {
        srv.rejected_wait++;
        pthread_mutex_unlock(&srv.mu);
        job_free(j);
        char msg[200];
        snprintf(msg, sizeof msg, "busy: this request would be answered in about %.1f s, past its deadline of %.1f s",
                 expect, timeout_ms / 1e3);
        return send_error_ra(c, rq, 503, msg, (int)ceil(expect - timeout_ms / 1e3), 0);
    }
    double deadline = lector__now_ms() + timeout_ms;
    j->deadline = deadline;
    j->timeout_s = timeout_ms / 1e3;
    if (srv.tail)
        srv.tail->next = j;
    else
        srv.head = j;
    srv.tail = j;
    srv.q_len++;
    pthread_cond_signal(&srv.q_cond);

    /* wait in slices of 100 ms at most: the end of a drain's grace period
     * (srv.abort_waits) and a client that leaves are seen within that */
    int timed_out = 0, gone = 0, shed = 0;
    while (j->state != JOB_DONE && !srv.abort_waits) {
        double t = lector__now_ms();
        if (t >= deadline) {
            timed_out = 1;
            break;
        }
        /* still queued with less of the deadline left than its reading
         * takes: a 503 now rather than a 504 at the deadline */
        if (j->state == JOB_QUEUED && serve_budget_shed(&srv.budget, (deadline - t) / 1e3, timeout_ms / 1e3)) {
            shed = 1;
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
        if (j->state != JOB_DONE && client_gone(c)) {
            gone = 1;
            break;
        }
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
            if (gone) srv.abandoned_queued++;
            if (shed) shed_job(j);
        } else if (gone)
            srv.abandoned_running++;
        atomic_store(&j->abandoned, 1); /* a running read stops at its next stage */
        job_release(j);
        pthread_mutex_unlock(&srv.mu);
        if (gone) {
            rq->status = 499; /* nginx's "client closed request", for the access log */
            return MHD_NO;    /* no one to answer: close */
        }
        if (shed) return send_shed(c, rq, timeout_ms);
        if (timed_out) {
            serve_metrics_add(&srv.metrics, &srv.metrics.timeouts, 1);
            return send_error(c, rq, 504, "deadline exceeded (--timeout-ms)");
        }
        return send_error(c, rq, 503, "shutting down");
    }
    if (j->shed) {
        job_release(j);
        pthread_mutex_unlock(&srv.mu);
        return send_shed(c, rq, timeout_ms);
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
    return send_body_h(c, rq, status, "application/json", out, 0, 0, clamped);
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

static void gauge(FILE *f, const char *name, const char *help, double v)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
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
    uint64_t aq = srv.abandoned_queued, ar = srv.abandoned_running, rw = srv.rejected_wait, rm = srv.rejected_memory,
             cl = srv.clamped, sq = srv.shed_queued;
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
    fprintf(f,
            "# HELP lector_serve_abandoned_total Requests whose client left before the answer: their job dropped "
            "from the queue, or stopped at its next stage.\n# TYPE lector_serve_abandoned_total counter\n"
            "lector_serve_abandoned_total{state=\"queued\"} %llu\nlector_serve_abandoned_total{state=\"running\"} "
            "%llu\n",
            (unsigned long long)aq, (unsigned long long)ar);
    fprintf(f,
            "# HELP lector_serve_rejected_total Requests answered 503: at once, the expected wait past the "
            "deadline or no room in the memory budget; when a worker took the job, too little of its deadline "
            "left (a full queue: lector_serve_rejected_queue_full_total).\n"
            "# TYPE lector_serve_rejected_total counter\nlector_serve_rejected_total{reason=\"expected_wait\"} "
            "%llu\nlector_serve_rejected_total{reason=\"memory\"} %llu\n"
            "lector_serve_rejected_total{reason=\"deadline_in_queue\"} %llu\n",
            (unsigned long long)rw, (unsigned long long)rm, (unsigned long long)sq);
    fprintf(f,
            "# HELP lector_serve_clamped_total Requests whose parameters were lowered to the server's maxima.\n"
            "# TYPE lector_serve_clamped_total counter\nlector_serve_clamped_total %llu\n",
            (unsigned long long)cl);
    int open_conns;
    uint64_t ht, bt;
    serve_conns_counts(srv.conns, &open_conns, &ht, &bt);
    gauge(f, "lector_serve_connections", "Connections open.", open_conns);
    fprintf(f,
            "# HELP lector_serve_connections_timed_out_total Connections closed for a slow client: headers past "
            "--header-timeout, a body past --body-timeout.\n# TYPE lector_serve_connections_timed_out_total "
            "counter\nlector_serve_connections_timed_out_total{phase=\"headers\"} %llu\n"
            "lector_serve_connections_timed_out_total{phase=\"body\"} %llu\n",
            (unsigned long long)ht, (unsigned long long)bt);
    pthread_mutex_lock(&srv.budget.mu);
    serve_budget b = srv.budget;
    pthread_mutex_unlock(&srv.budget.mu);
    gauge(f, "lector_serve_memory_limit_bytes", "The memory limit (--memory-limit, the cgroup's, or RAM).",
          (double)b.limit);
    gauge(f, "lector_serve_memory_requests_budget_bytes", "The requests' share of the limit.", (double)b.requests);
    gauge(f, "lector_serve_memory_reserved_bytes", "Of the requests' share, reserved by requests now.",
          (double)b.reserved);
    gauge(f, "lector_serve_memory_plans_budget_bytes", "The plan caches' share of the limit.", (double)b.plans);
    gauge(f, "lector_serve_plan_cache_bytes", "Bytes the engines' plan caches hold.",
          (double)(lector_engine_cache_bytes(srv.primary) +
                   (srv.cpu != srv.primary ? lector_engine_cache_bytes(srv.cpu) : 0)));
    gauge(f, "lector_serve_resident_bytes", "Resident memory of the process (the kernel's count).",
          (double)serve_resident_bytes());
    gauge(f, "lector_serve_service_seconds", "Measured seconds per job (exponential average).", b.service_s);
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

/* Header checks libmicrohttpd leaves to the application: two different
 * Content-Lengths (RFC 9112 6.3: an error), a Transfer-Encoding and a
 * Content-Length together (request smuggling), a Transfer-Encoding other
 * than chunked (RFC 9112 6.1: 501). NULL when the headers are fine. */
typedef struct header_check {
    const char *cl;
    int n_cl, cl_differ, n_te;
} header_check;

static enum MHD_Result count_headers(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    header_check *h = cls;
    (void)kind;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        if (h->n_cl++ && strcmp(h->cl, value ? value : "")) h->cl_differ = 1;
        h->cl = value ? value : "";
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        h->n_te++;
    return MHD_YES;
}

static const char *bad_framing(struct MHD_Connection *c, unsigned *code)
{
    header_check h = {NULL, 0, 0, 0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_headers, &h);
    *code = 400;
    if (h.cl_differ) return "two different Content-Length headers";
    if (h.n_te && h.n_cl) return "both Transfer-Encoding and Content-Length";
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (h.n_te > 1 || (te && strcasecmp(te, "chunked"))) {
        *code = 501;
        return "Transfer-Encoding other than chunked is not implemented (send the body plain or chunked)";
    }
    return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    int probe_only = cls != NULL; /* the --probe-listen daemon */
    (void)version;
    request *rq = *con_cls;
    if (!rq) {
        rq = lector__calloc(1, sizeof *rq);
        if (!rq) return MHD_NO;
        rq->t0 = lector__now_ms();
        serve_params_init(&rq->params);
        snprintf(rq->method, sizeof rq->method, "%s", method);
        snprintf(rq->url, sizeof rq->url, "%s", url);
        *con_cls = rq;
        pthread_mutex_lock(&srv.mu);
        srv.inflight++;
        srv.accepted++;
        pthread_mutex_unlock(&srv.mu);
        serve_conns_headers_done(srv.conns, c);

        unsigned code;
        const char *framing = bad_framing(c, &code);
        if (framing) return send_error_ra(c, rq, code, framing, 0, 1);
        int get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
        if (!strcmp(url, "/healthz")) {
            if (!get) return send_error(c, rq, 405, "use GET");
            return send_body(c, rq, 200, "text/plain", lector__strdup("ok\n"), 0);
        }
        if (!token_ok(c)) return send_error(c, rq, 401, "missing or wrong bearer token");
        if (!strcmp(url, "/readyz")) return get ? send_readyz(c, rq) : send_error(c, rq, 405, "use GET");
        if (!strcmp(url, "/metrics")) return get ? send_metrics(c, rq) : send_error(c, rq, 405, "use GET");
        if (probe_only) return send_error(c, rq, 404, "the probe address serves /healthz, /readyz and /metrics");
        if (!strcmp(url, "/openapi.json")) {
            if (!get) return send_error(c, rq, 405, "use GET");
            return send_body(c, rq, 200, "application/json", lector__strdup(lector_openapi_json), 0);
        }
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
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_param, rq);
        if (rq->fail) return send_error(c, rq, rq->fail, rq->fail_msg);

        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        rq->kind = serve_body_kind_of(ct);
        rq->declared_image = ct && !strncasecmp(ct, "image/", 6);
        if (rq->kind == SERVE_BODY_MULTIPART) {
            rq->pp = MHD_create_post_processor(c, 65536, post_iter, rq);
            if (!rq->pp) return send_error(c, rq, 400, "malformed multipart/form-data (boundary?)");
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
        if (n > srv.cfg->max_body) return send_error_ra(c, rq, 413, "request body over --max-body", 0, 1);
        /* the body counts in the memory budget from its first byte */
        int never;
        if (n && serve_budget_reserve(&srv.budget, (size_t)n, &never)) {
            pthread_mutex_lock(&srv.mu);
            srv.rejected_memory++;
            pthread_mutex_unlock(&srv.mu);
            return send_error_ra(c, rq, 503, "no room for this body in the service's memory budget now", 1, 1);
        }
        rq->reserved = (size_t)n;
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
        if (rq->total > rq->reserved) { /* chunked: reserve as it comes */
            int never;
            size_t more = rq->total - rq->reserved;
            if (serve_budget_reserve(&srv.budget, more, &never)) {
                rq->fail = 503;
                rq->fail_msg = "no room for this body in the service's memory budget now";
                image_clear(&rq->raw);
                return MHD_YES;
            }
            rq->reserved += more;
        }
        if (rq->kind != SERVE_BODY_MULTIPART) {
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
    serve_conns_body_done(srv.conns, c);
    if (rq->kind == SERVE_BODY_MULTIPART && !rq->fail) {
        enum MHD_Result ok = MHD_destroy_post_processor(rq->pp);
        rq->pp = NULL;
        if (ok != MHD_YES) {
            rq->fail = 400;
            rq->fail_msg = "malformed multipart/form-data";
        }
    }
    if (rq->fail) return send_error(c, rq, rq->fail, rq->fail_msg);
    return run_ocr(c, rq);
}

/* -v: one line per request on stderr, the Common Log Format and the time
 * taken: ADDRESS - - [TIME] "METHOD URL" STATUS BYTES MS */
static void access_log(struct MHD_Connection *c, const request *rq)
{
    char addr[INET6_ADDRSTRLEN] = "-";
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
        else if (sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
    }
    time_t t = time(NULL);
    struct tm tm;
    char when[64];
    strftime(when, sizeof when, "%d/%b/%Y:%H:%M:%S %z", localtime_r(&t, &tm));
    char url[sizeof rq->url];
    size_t k = 0;
    for (const char *p = rq->url; *p && k + 1 < sizeof url; p++) /* no quote or control byte breaks the line */
        url[k++] = (unsigned char)*p < 0x20 || *p == '"' || *p == 0x7f ? '?' : *p;
    url[k] = '\0';
    fprintf(stderr, "%s - - [%s] \"%s %s\" %u %zu %.0f\n", addr, when, rq->method, url, rq->status ? rq->status : 499,
            rq->bytes, lector__now_ms() - rq->t0);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    request *rq = *con_cls;
    if (!rq) return;
    if (srv.cfg->verbose) access_log(c, rq);
    request_free(rq);
    *con_cls = NULL;
    serve_conns_request_done(srv.conns, c);
    pthread_mutex_lock(&srv.mu);
    srv.inflight--;
    if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        srv.answered++;
    else
        srv.aborted++;
    pthread_mutex_unlock(&srv.mu);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)cls, (void)socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) serve_conns_opened(srv.conns, c, ci->connect_fd);
    } else
        serve_conns_closed(srv.conns, c);
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
    c->max_det_side = 2048;
    c->header_timeout_s = 10;
    c->body_timeout_s = 60;
    c->max_connections_per_ip = 64;
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
    srv.max_det_side = cfg->max_det_side > 0 ? cfg->max_det_side : 2048;
    /* memory: large blocks (arenas, images) mmapped and given back when
     * freed (glibc would otherwise raise the threshold as they are freed and
     * keep them as heap holes), a few malloc arenas for the many connection
     * threads, and oneDNN's primitive cache off (the plans hold theirs; its
     * copies of evicted plans' primitives would sit outside the budget) */
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    mallopt(M_ARENA_MAX, 4);
    setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0", 0);
    serve_budget_init(&srv.budget, serve_memory_limit(cfg->memory_limit, &srv.limit_source));

    sigset_t sigs, old;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, &old);
    signal(SIGPIPE, SIG_IGN);

    int rc = 1;
    struct MHD_Daemon *d = NULL, *pd = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    if (parse_listen(cfg->listen, &ss, &sl)) {
        fprintf(stderr, "lector serve: --listen expects HOST:PORT or [V6]:PORT, got '%s'\n", cfg->listen);
        goto out;
    }
    srv.conns = serve_conns_start(cfg->header_timeout_s > 0 ? cfg->header_timeout_s : 10,
                                  cfg->body_timeout_s > 0 ? cfg->body_timeout_s : 60);
    if (!srv.conns) {
        fprintf(stderr, "lector serve: cannot start the connection watchdog\n");
        goto out;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->conn_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)cfg->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                         (unsigned)(cfg->max_connections_per_ip > 0 ? cfg->max_connections_per_ip : 0),
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
                         NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "lector serve: cannot listen on %s: %s\n", cfg->listen, strerror(errno));
        goto out;
    }
    if (cfg->probe_listen) { /* probes answer there whatever the API's connections do */
        struct sockaddr_storage ps;
        socklen_t pl = 0;
        if (parse_listen(cfg->probe_listen, &ps, &pl)) {
            fprintf(stderr, "lector serve: --probe-listen expects HOST:PORT or [V6]:PORT, got '%s'\n",
                    cfg->probe_listen);
            goto out;
        }
        unsigned pflags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                          MHD_USE_ERROR_LOG | (ps.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
        pd = MHD_start_daemon(pflags, 0, NULL, NULL, on_request, (void *)1, MHD_OPTION_SOCK_ADDR,
                              (struct sockaddr *)&ps, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_LIMIT,
                              32u, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
        if (!pd) {
            fprintf(stderr, "lector serve: cannot listen on %s: %s\n", cfg->probe_listen, strerror(errno));
            goto out;
        }
        const union MHD_DaemonInfo *pi = MHD_get_daemon_info(pd, MHD_DAEMON_INFO_BIND_PORT);
        char phost[128];
        snprintf(phost, sizeof phost, "%.*s", (int)(strrchr(cfg->probe_listen, ':') - cfg->probe_listen),
                 cfg->probe_listen);
        fprintf(stderr, "lector serve: probes on http://%s:%u\n", phost, pi ? pi->port : 0);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char host[128];
    snprintf(host, sizeof host, "%.*s", (int)(strrchr(cfg->listen, ':') - cfg->listen), cfg->listen);
    fprintf(stderr, "lector serve: listening on http://%s:%u\n", host, di ? di->port : 0);

    /* models: loaded once, warmed before /readyz says yes */
    lector_params p = cfg->params;
    p.use_angle_cls = 1; /* loaded so that any request may turn it on */
    srv.n_workers = cfg->workers > 0 ? cfg->workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (srv.n_workers < 1) srv.n_workers = 1;
    /* each worker runs one read in its own thread: a GPU engine makes what that many runs need ahead */
    if (srv.n_workers > p.callers) p.callers = srv.n_workers;
    /* the plan caches' share of the memory budget; with a CPU fallback
     * engine too, half each */
    size_t plans = serve_budget_plans_share(srv.budget.limit);
    int two = p.device != LECTOR_DEVICE_CPU || cfg->fault_every > 0;
    if (!p.plan_cache_bytes) p.plan_cache_bytes = two ? plans / 2 : plans;
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
    size_t base = serve_resident_bytes();
    if (serve_budget_ready(&srv.budget, base, plans, (size_t)64 << 20)) {
        fprintf(stderr,
                "lector serve: a memory limit of %zu MiB (%s) is too small: the models take %zu MiB warm, the plan "
                "caches get %zu MiB and requests need at least 64 MiB of the 90%% planned for\n",
                srv.budget.limit >> 20, srv.limit_source, base >> 20, plans >> 20);
        goto out;
    }

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
    fprintf(stderr, "lector serve: memory limit %zu MiB (%s): %zu MiB warm, %zu MiB for plans, %zu MiB for requests\n",
            srv.budget.limit >> 20, srv.limit_source, base >> 20, plans >> 20, srv.budget.requests >> 20);
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
        if (pd) MHD_stop_daemon(pd);
        pd = NULL;
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
    if (pd) MHD_stop_daemon(pd);
    serve_conns_stop(srv.conns);
    if (srv.cpu != srv.primary) lector_engine_free(srv.cpu);
    lector_engine_free(srv.primary);
    serve_budget_destroy(&srv.budget);
    serve_breaker_destroy(&srv.breaker);
    serve_metrics_destroy(&srv.metrics);
    pthread_cond_destroy(&srv.q_cond);
    pthread_mutex_destroy(&srv.mu);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
