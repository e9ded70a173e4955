/*
 * lector serve [options]   - the HTTP OCR service (docs/SERVICE.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lector.h"
#ifdef LECTOR_HAVE_DOCTOR
#include "lector_doctor.h"
#endif
#ifdef LECTOR_HAVE_SERVE
#include "lector_serve.h"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: lector serve [options]\n"
            "  --listen HOST:PORT      address to bind (default 127.0.0.1:8080; port 0 = any free port)\n"
            "  --device auto|cpu|cuda[:N]  primary engine's device (default cpu); GPU errors open the\n"
            "                          breaker and the CPU engine answers\n"
            "  --gpu-mem-limit SIZE    GPU memory cap: bytes (8G, 512M) or a share of the card (0.5, 50%%)\n"
            "  --gpu-kernel-cache DIR  kernels compiled on the GPU, kept for the next process\n"
            "                          (default ~/.cache/lector/kernels; '': none)\n"
            "  --fp16 / --fp16-det     recognition and classifier / also detection in half precision\n"
            "  --fp16-recheck F        with --fp16: lines scoring below F also recognised again in fp32 (0: off)\n"
            "  --fp16-margin F         with --fp16: lines a change of F (0.05) in a step could change, again in fp32\n"
            "  --models DIR            models directory (default: as `lector models` finds it)\n"
            "  --threads N             threads per inference (default 1)\n"
            "  --workers N             worker threads pulling from the queue (default: online CPUs)\n"
            "  --queue N               queued requests at most; more get 503 + Retry-After (default 64)\n"
            "  --timeout-ms T          per-request deadline from the full body; then 504 (default 30000)\n"
            "  --max-body MB           request body limit; more gets 413 (default 16)\n"
            "  --max-pixels N          pixels per page; more gets 413 (default 100000000)\n"
            "  --token-file F          require 'Authorization: Bearer <first line of F>' (all but /healthz)\n"
            "  --use-angle-cls         turn the angle classifier on by default (per request: ?use_angle_cls=)\n"
            "  --grace-ms G            SIGTERM/SIGINT: time to finish accepted requests (default 30000)\n"
            "  --conn-timeout S        idle connection timeout in seconds (default 30)\n"
            "  --max-connections N     concurrent connections at most (default 256)\n"
            "  --max-connections-per-ip N   from one address at most (default 64; raise it behind a proxy)\n"
            "  --header-timeout S      a request's headers complete within S s of the connection or the\n"
            "                          previous response (default 10); then the connection is closed\n"
            "  --body-timeout S        its body within S s of its headers (default 60)\n"
            "  --probe-listen HOST:PORT  a second address for /healthz, /readyz and /metrics only\n"
            "  --memory-limit SIZE     memory the process may take (4G, 512M, bytes); default: the cgroup's\n"
            "                          limit, else RAM; requests that do not fit get 503 (docs/SERVICE.md)\n"
            "  --max-det-side N        det_limit_side_len a request may ask at most; larger is lowered (2048)\n"
            "  --breaker-threshold N   consecutive device errors that open the breaker (default 1)\n"
            "  --breaker-cooldown-ms M open -> half-open probe after M ms (default 5000)\n"
            "  --max-batch N --max-wait-ms M   micro-batching: up to N requests per engine dispatch, waiting up to M "
            "ms (1, 0)\n"
            "  --det-batch N           within a dispatch, pages of one det input size share det runs, N at a time (1)\n"
            "  --allow-test-controls   start even with test controls set (LECTOR_SERVE_FAULT=N: every Nth\n"
            "                          read of the primary engine fails; docs/DEBUG.md lists them all)\n"
            "  -v, --verbose           access log on stderr: one line per request\n");
}

#if defined(LECTOR_HAVE_DOCTOR) && defined(LECTOR_HAVE_SERVE)
static char *doctor_json(void)
{
    lector_doctor_options o;
    lector_doctor_default_options(&o);
    return lector_doctor_json(&o);
}
#endif

#ifdef LECTOR_HAVE_SERVE
/* "4G", "512M", "64K", "1073741824": bytes (binary units); -1 when not a size. */
static int parse_size(const char *v, size_t *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || !(x > 0)) return -1;
    double mul = 1;
    switch (*end) {
    case 'k':
    case 'K': mul = 1024.0, end++; break;
    case 'm':
    case 'M': mul = 1024.0 * 1024, end++; break;
    case 'g':
    case 'G': mul = 1024.0 * 1024 * 1024, end++; break;
    case 't':
    case 'T': mul = 1024.0 * 1024 * 1024 * 1024, end++; break;
    default: break;
    }
    if ((*end == 'i' || *end == 'I') && mul > 1) end++; /* 4Gi as Kubernetes writes it */
    if (*end == 'b' || *end == 'B') end++;
    if (*end || x * mul >= 1.8e19) return -1;
    *out = (size_t)(x * mul);
    return 0;
}

static int to_int(const char *opt, const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "lector serve: %s expects an integer in %ld..%ld, got '%s'\n", opt, lo, hi, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static char *read_token(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "lector serve: cannot read --token-file %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char buf[1024];
    char *t = fgets(buf, sizeof buf, f) ? buf : NULL;
    fclose(f);
    if (t) t[strcspn(t, "\r\n")] = '\0';
    if (!t || !*t) {
        fprintf(stderr, "lector serve: --token-file %s: the first line is empty\n", path);
        return NULL;
    }
    return strdup(t);
}
#endif

int cmd_serve(int argc, char **argv)
{
#ifndef LECTOR_HAVE_SERVE
    (void)argc, (void)argv;
    usage(stderr);
    fprintf(stderr, "lector serve: this build has no server (libmicrohttpd-dev was missing)\n");
    return 2;
#else
    lector_serve_config c;
    lector_serve_default_config(&c);
    c.params.threads = 1;
    c.params.workers = 1; /* the server's own workers run requests in parallel: each read in its worker's thread */
#ifdef LECTOR_HAVE_DOCTOR
    c.doctor_json = doctor_json;
#endif
    char *token = NULL;
    const char *mem_arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            c.verbose = 1;
            continue;
        }
        if (!strcmp(a, "--allow-test-controls")) {
            c.allow_test_controls = 1;
            continue;
        }
        if (!strcmp(a, "--use-angle-cls")) {
            c.use_angle_cls = 1;
            continue;
        }
        if (!strcmp(a, "--fp16")) {
            c.params.gpu_fp16 = 1;
            continue;
        }
        if (!strcmp(a, "--fp16-det")) {
            c.params.gpu_fp16 = c.params.gpu_fp16_det = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "lector serve: %s: unknown option or missing value (see --help)\n", a);
            goto bad;
        }
        const char *v = argv[++i];
        int n = 0;
        if (!strcmp(a, "--gpu-mem-limit"))
            mem_arg = v;
        else if (!strcmp(a, "--gpu-kernel-cache"))
            c.params.gpu_kernel_cache = v;
        else if (!strcmp(a, "--fp16-recheck"))
            c.params.gpu_fp16_recheck = (float)atof(v);
        else if (!strcmp(a, "--fp16-margin"))
            c.params.gpu_fp16_margin = (float)atof(v);
        else if (!strcmp(a, "--listen"))
            c.listen = v;
        else if (!strcmp(a, "--models"))
            c.params.models_dir = v;
        else if (!strcmp(a, "--device")) {
            if (cli_parse_device("lector serve", v, &c.params)) goto bad;
        } else if (!strcmp(a, "--threads")) {
            if (to_int(a, v, 0, 1024, &c.params.threads)) goto bad;
        } else if (!strcmp(a, "--workers")) {
            if (to_int(a, v, 1, 1024, &c.workers)) goto bad;
        } else if (!strcmp(a, "--max-batch")) {
            if (to_int(a, v, 1, 1024, &c.max_batch)) goto bad;
        } else if (!strcmp(a, "--det-batch")) {
            if (to_int(a, v, 1, 64, &c.params.det_batch_num)) goto bad;
        } else if (!strcmp(a, "--max-wait-ms")) {
            if (to_int(a, v, 0, 60000, &c.max_wait_ms)) goto bad;
        } else if (!strcmp(a, "--queue")) {
            if (to_int(a, v, 1, 1000000, &c.queue)) goto bad;
        } else if (!strcmp(a, "--timeout-ms")) {
            if (to_int(a, v, 1, 86400000, &c.timeout_ms)) goto bad;
        } else if (!strcmp(a, "--grace-ms")) {
            if (to_int(a, v, 0, 86400000, &c.grace_ms)) goto bad;
        } else if (!strcmp(a, "--conn-timeout")) {
            if (to_int(a, v, 1, 86400, &c.conn_timeout_s)) goto bad;
        } else if (!strcmp(a, "--max-connections")) {
            if (to_int(a, v, 1, 100000, &c.max_connections)) goto bad;
        } else if (!strcmp(a, "--max-connections-per-ip")) {
            if (to_int(a, v, 1, 100000, &c.max_connections_per_ip)) goto bad;
        } else if (!strcmp(a, "--header-timeout")) {
            if (to_int(a, v, 1, 86400, &c.header_timeout_s)) goto bad;
        } else if (!strcmp(a, "--body-timeout")) {
            if (to_int(a, v, 1, 86400, &c.body_timeout_s)) goto bad;
        } else if (!strcmp(a, "--max-det-side")) {
            if (to_int(a, v, 32, 16384, &c.max_det_side)) goto bad;
        } else if (!strcmp(a, "--probe-listen")) {
            c.probe_listen = v;
        } else if (!strcmp(a, "--memory-limit")) {
            if (parse_size(v, &c.memory_limit)) {
                fprintf(stderr, "lector serve: --memory-limit expects a size (4G, 512M, bytes), got '%s'\n", v);
                goto bad;
            }
        } else if (!strcmp(a, "--breaker-threshold")) {
            if (to_int(a, v, 1, 1000000, &c.breaker_threshold)) goto bad;
        } else if (!strcmp(a, "--breaker-cooldown-ms")) {
            if (to_int(a, v, 0, 86400000, &c.breaker_cooldown_ms)) goto bad;
        } else if (!strcmp(a, "--max-body")) {
            if (to_int(a, v, 1, 4096, &n)) goto bad;
            c.max_body = (size_t)n << 20;
        } else if (!strcmp(a, "--max-pixels")) {
            char *end;
            long long px = strtoll(v, &end, 10);
            if (*end || px <= 0) {
                fprintf(stderr, "lector serve: --max-pixels expects a positive integer\n");
                goto bad;
            }
            c.params.max_pixels = px;
        } else if (!strcmp(a, "--token-file")) {
            free(token);
            if (!(token = read_token(v))) goto bad;
            c.token = token;
        } else {
            fprintf(stderr, "lector serve: unknown option %s (see --help)\n", a);
            goto bad;
        }
    }
    if (mem_arg && cli_parse_gpu_mem(mem_arg, c.params.device_id, &c.params.gpu_mem_limit)) goto bad;
    c.params.max_file_size = (int64_t)c.max_body;
    int rc = lector_serve_run(&c);
    if (token) memset(token, 0, strlen(token));
    free(token);
    return rc;
bad:
    free(token);
    return 2;
#endif
}
