/*
 * lector - the command-line tool. It uses the public headers (include/) and
 * the util layer (src/util/util.h: the allocator, the clock, reading a file)
 * only, as `lector serve` (src/serve) does.
 */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lector.h"
#ifdef LECTOR_HAVE_DOCTOR
#include "lector_doctor.h"
#endif

int cli_parse_gpu_mem(const char *s, int device, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) goto bad;
    int pct = *end == '%';
    if (pct || (v > 0 && v <= 1 && !*end && strchr(s, '.'))) { /* a share of the card */
        double frac = pct ? v / 100 : v;
        if (pct && end[1]) goto bad;
        if (frac <= 0 || frac > 1) goto bad;
        lector_gpu_sample g[64];
        int n = lector_gpu_sample_all(g, 64);
        for (int i = 0; i < n; i++)
            if ((int)g[i].index == device && g[i].mem_ok) {
                *out = (size_t)(frac * (double)g[i].mem_total);
                return 0;
            }
        fprintf(stderr,
                "lector: --gpu-mem-limit %s: the memory of GPU %d is unknown (no NVML): give bytes "
                "(e.g. 8G)\n",
                s, device);
        return -1;
    }
    double mul = 1;
    switch (*end) {
    case 0: break;
    case 'k':
    case 'K':
        mul = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    default: goto bad;
    }
    if (*end == 'i' || *end == 'B') end++;
    if (*end == 'B') end++;
    if (*end) goto bad;
    *out = (size_t)(v * mul);
    return 0;
bad:
    fprintf(stderr,
            "lector: --gpu-mem-limit '%s': expected bytes (4G, 512M, 1073741824) or a share of the "
            "GPU (0.5, 50%%)\n",
            s);
    return -1;
}

int cli_parse_device(const char *prog, const char *s, lector_params *p)
{
    lector_device_spec spec;
    lector_error err;
    if (lector_device_parse(s, &spec, &err)) {
        fprintf(stderr, "%s: --device: %s\n", prog, err.message);
        return -1;
    }
    p->device = spec.device;
    p->device_id = spec.index;
    if (spec.device == LECTOR_DEVICE_CPU && strcmp(spec.backend, "cpu")) p->backend = spec.backend;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(FILE *f)
{
    fprintf(f,
            "lector %s - OCR engine for PaddleOCR's PP-OCR models\n\n"
            "usage: lector [options] INPUT...      OCR of images, directories, @lists (lector ocr --help)\n"
            "       lector COMMAND [options]\n\n"
            "commands:\n"
            "  serve [--listen ADDR:PORT] ...       the HTTP service (docs/SERVICE.md)\n"
            "  models [--models DIR] [--json]       the models lector uses: where, sha256, release\n"
            "  run-model MODEL.onnx ...             run any ONNX model on TensorProto files\n"
            "  bench models [--json] [--threads N]  median latency of Lector and ONNX Runtime\n"
            "  bench gpu [--fp16] [--json]          per-model latency/throughput on the GPU\n"
            "  bench pipeline [--device D] IMAGE... end-to-end pages/s and latency\n"
            "  doctor [--json] [--inspect FILE...]  diagnose the GPU stack layer by layer\n"
            "  explain [TEXT|-]                     explain a pasted GPU/ONNX error message\n"
            "  --version, --help\n\n"
            "any command: --cuda-libs system|bundle|auto   the CUDA libraries the GPU backend loads: the\n"
            "  offline bundle's (its CUDA archive, lib/lector-cuda<N>.libs), the system's, or auto (default:\n"
            "  the bundle's when complete); the same as LECTOR_CUDA_LIBS (docs/DEPLOY.md)\n",
            lector_version());
}

/* A crash (a bug: library code never aborts on bad input) leaves a stack
 * trace on stderr, as redis does, so that a report can name the code: the
 * addresses of a stripped binary resolve with addr2line against the same
 * build. Only async-signal-safe calls; then the default action (core dump). */
static void on_fatal_signal(int sig)
{
    static const char head[] = "lector: fatal signal; stack (addr2line -f -e FILE OFFSET resolves a line):\n";
    if (write(2, head, sizeof head - 1) < 0) { /* nothing to do about it */
    }
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_crash_report(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return; /* the sanitizer's own report is better */
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
    return;
#endif
#endif
    void *warm[1];
    backtrace(warm, 1); /* loads libgcc's unwinder now, not inside the handler */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);
}

int cli_models_dir(const char *prog, const char *dir, char *out, size_t out_len)
{
    lector_error err;
    if (!lector_find_models(dir, out, out_len, &err)) return 0;
    fprintf(stderr, "%s: %s\n", prog, err.message);
    return -1;
}

/* --cuda-libs X / --cuda-libs=X, taken out of argv wherever it is: the
 * CUDA module is loaded once per process, so the choice is the process's
 * (LECTOR_CUDA_LIBS, read by the module loader and the doctor). 0, or -1
 * with a message. */
static int take_cuda_libs(int *argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--")) {
            while (i < *argc) argv[out++] = argv[i++];
            break;
        }
        if (!strncmp(argv[i], "--cuda-libs=", 12))
            v = argv[i] + 12;
        else if (!strcmp(argv[i], "--cuda-libs")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "lector: --cuda-libs needs a value: system, bundle or auto\n");
                return -1;
            }
            v = argv[++i];
        }
        if (!v) {
            argv[out++] = argv[i];
            continue;
        }
        if (strcmp(v, "system") && strcmp(v, "bundle") && strcmp(v, "auto")) {
            fprintf(stderr, "lector: --cuda-libs '%s': expected system, bundle or auto\n", v);
            return -1;
        }
        setenv("LECTOR_CUDA_LIBS", v, 1);
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

int main(int argc, char **argv)
{
    install_crash_report();
    if (take_cuda_libs(&argc, argv)) return 2;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "ocr")) return cmd_ocr(argc - 1, argv + 1);
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        fputc('\n', stdout);
        char *ocr_help[] = {argv[0], "--help", NULL};
        return cmd_ocr(2, ocr_help); /* the OCR options */
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-v")) {
        printf("lector %s\n", lector_version());
        return 0;
    }
    if (!strcmp(cmd, "run-model")) return cmd_run_model(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return cmd_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "models")) return cmd_models(argc - 1, argv + 1);
#ifdef LECTOR_HAVE_DOCTOR
    if (!strcmp(cmd, "doctor")) return cmd_doctor(argc - 1, argv + 1);
    if (!strcmp(cmd, "explain")) return cmd_explain(argc - 1, argv + 1);
#endif
    /* anything else: OCR of the files given (Tesseract's habit) */
    return cmd_ocr(argc, argv);
}
