/* cli.c - `lector doctor` and `lector explain` argument handling. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"

static void doctor_usage(FILE *f)
{
    fputs("usage: lector doctor [--json] [-v] [--root DIR] [--inspect FILE...]\n"
          "  Diagnose the GPU stack layer by layer (L0 system .. L5 engine).\n"
          "  --json          machine-readable report (schema: docs/DOCTOR.md)\n"
          "  -v, --verbose   show the evidence of every check\n"
          "  --root DIR      examine a filesystem tree (image rootfs) instead of /\n"
          "  --inspect FILE  resolve FILE's dependencies like ld.so and list its GPU code\n"
          "  --no-dlopen     never load CUDA libraries to query their versions\n"
          "environment: LECTOR_DOCTOR_NVML, LECTOR_DOCTOR_LIBCUDA (paths to load instead of\n"
          "  libnvidia-ml.so.1 / libcuda.so.1)\n"
          "exit: 0 GPU usable, 1 only the CPU is, 2 bad usage\n",
          f);
}

int lector_doctor_main(int argc, char **argv)
{
    lector_doctor_options opt;
    lector_doctor_default_options(&opt);
    int json = 0;
    const char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    if (!files) {
        fputs("lector doctor: out of memory\n", stderr);
        return 1;
    }
    size_t nfiles = 0;
    int in_inspect = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            opt.verbose = 1;
        } else if (strcmp(a, "--no-dlopen") == 0) {
            opt.no_dlopen_libs = 1;
        } else if (strcmp(a, "--root") == 0 || strncmp(a, "--root=", 7) == 0) {
            if (a[6] == '=')
                opt.root = a + 7;
            else if (i + 1 < argc)
                opt.root = argv[++i];
            else {
                fputs("lector doctor: --root needs a directory\n", stderr);
                free(files);
                return 2;
            }
        } else if (strcmp(a, "--inspect") == 0) {
            in_inspect = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            doctor_usage(stdout);
            free(files);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "lector doctor: unknown option %s\n", a);
            doctor_usage(stderr);
            free(files);
            return 2;
        } else if (in_inspect) {
            files[nfiles++] = a;
        } else {
            fprintf(stderr, "lector doctor: unexpected argument %s\n", a);
            doctor_usage(stderr);
            free(files);
            return 2;
        }
    }
    if (in_inspect && !nfiles) {
        fputs("lector doctor: --inspect needs at least one FILE\n", stderr);
        free(files);
        return 2;
    }
    opt.inspect = files;
    opt.n_inspect = nfiles;
    lector_doctor_report *r = lector_doctor_run(&opt);
    free(files);
    if (!r) {
        fputs("lector doctor: out of memory\n", stderr);
        return 1;
    }
    char *out = json ? lector_doctor_report_json(r) : lector_doctor_report_text(r);
    int usable = lector_doctor_report_gpu_usable(r);
    lector_doctor_report_free(r);
    if (!out) {
        fputs("lector doctor: out of memory\n", stderr);
        return 1;
    }
    fputs(out, stdout);
    if (json) fputc('\n', stdout);
    fflush(stdout);
    free(out);
    return usable ? 0 : 1;
}

static char *read_all(FILE *f)
{
    gpuenv_buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk - 1, f)) > 0) {
        chunk[n] = 0;
        gpuenv_buf_puts(&b, chunk);
        if (b.len > (1u << 24)) /* 16 MiB of log is plenty */
            break;
    }
    return gpuenv_buf_take(&b);
}

int lector_explain_main(int argc, char **argv)
{
    gpuenv_buf in = {0};
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs("usage: lector explain [TEXT... | -]\n"
                  "  Match an error message against known GPU-stack failures and print the\n"
                  "  layer, cause, fix and the doctor check that verifies it. Without TEXT or\n"
                  "  with '-', reads standard input. --list prints the knowledge base.\n",
                  stdout);
            gpuenv_buf_free(&in);
            return 0;
        }
        if (strcmp(argv[i], "--list") == 0) {
            list = 1;
            continue;
        }
        if (strcmp(argv[i], "-") == 0) continue;
        gpuenv_buf_printf(&in, "%s%s", in.len ? " " : "", argv[i]);
    }
    if (list) {
        for (size_t i = 0; i < gpuenv_explain_table_len; i++)
            printf("%-30s %s\n    source: %s\n", gpuenv_explain_table[i].id, gpuenv_explain_table[i].message,
                   gpuenv_explain_table[i].source);
        gpuenv_buf_free(&in);
        return 0;
    }
    char *text = in.len ? gpuenv_buf_take(&in) : (gpuenv_buf_free(&in), read_all(stdin));
    if (!text) {
        fputs("lector explain: out of memory\n", stderr);
        return 2;
    }
    if (!text[0]) {
        fputs("lector explain: no text given (pass it as arguments or on stdin)\n", stderr);
        free(text);
        return 2;
    }
    lector_explain_match m[5];
    size_t n = lector_explain_match_text(text, m, 5);
    free(text);
    if (!n) {
        printf("Unknown error text: it matches none of the %zu known GPU-stack messages.\n"
               "Run `lector doctor` to check the GPU stack layer by layer.\n",
               gpuenv_explain_table_len);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        printf("%zu. [%d%%] %s\n", i + 1, m[i].score, m[i].id);
        printf("   known message: %s\n", m[i].message);
        printf("   layer: %s\n   cause: %s\n   fix:   %s\n", m[i].layer, m[i].cause, m[i].fix);
        if (strcmp(m[i].check, "-") != 0) printf("   verify: lector doctor (check %s)\n", m[i].check);
        printf("   seen in: %s\n", m[i].source);
    }
    return 0;
}
