/* cmd_doctor.c - `lector doctor`: argument handling and output around the
 * public doctor API (include/lector_doctor.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lector_doctor.h"

static void usage(FILE *f)
{
    fputs("usage: lector doctor [--json] [-v] [--root DIR] [--inspect FILE...]\n"
          "  Diagnose the GPU stack layer by layer (L0 system .. L5 engine): the root cause\n"
          "  and one runnable fix for each problem.\n"
          "  --json                 machine-readable report (schema: docs/DOCTOR.md)\n"
          "  -v, --verbose          show the evidence of every check\n"
          "  --root DIR             examine a filesystem tree (an image's rootfs) instead of /\n"
          "  --inspect FILE         resolve FILE's dependencies as ld.so would, check its GPU\n"
          "                         libraries and code (more FILEs may follow)\n"
          "  --ld-library-path LIST the LD_LIBRARY_PATH of the examined system (default: ours)\n"
          "  --ld-preload LIST      its LD_PRELOAD (default: ours)\n"
          "  --no-dlopen            never load CUDA libraries to query their versions\n"
          "environment: LECTOR_DOCTOR_NVML, LECTOR_DOCTOR_LIBCUDA (NVML / libcuda to load instead of\n"
          "  libnvidia-ml.so.1 / libcuda.so.1; under --root only these are loaded)\n"
          "exit: 0 Lector can use the GPU (ready or degraded), 1 broken, 2 bad usage\n",
          f);
}

/* The value of an option given as "--opt V" or "--opt=V"; NULL if absent. */
static const char *value(int argc, char **argv, int *i, const char *opt)
{
    size_t n = strlen(opt);
    const char *a = argv[*i];
    if (strncmp(a, opt, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] || *i + 1 >= argc) return NULL;
    return argv[++*i];
}

int cmd_doctor(int argc, char **argv)
{
    lector_doctor_options opt;
    lector_doctor_default_options(&opt);
    int json = 0, in_inspect = 0;
    const char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    if (!files) {
        fputs("lector doctor: out of memory\n", stderr);
        return 1;
    }
    size_t nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            opt.verbose = 1;
        } else if (strcmp(a, "--no-dlopen") == 0) {
            opt.no_dlopen_libs = 1;
        } else if ((v = value(argc, argv, &i, "--root"))) {
            opt.root = v;
        } else if ((v = value(argc, argv, &i, "--ld-library-path"))) {
            opt.ld_library_path = v;
        } else if ((v = value(argc, argv, &i, "--ld-preload"))) {
            opt.ld_preload = v;
        } else if (strcmp(a, "--inspect") == 0) {
            in_inspect = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            free(files);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "lector doctor: unknown option or missing value: %s\n", a);
            usage(stderr);
            free(files);
            return 2;
        } else if (in_inspect) {
            files[nfiles++] = a;
        } else {
            fprintf(stderr, "lector doctor: unexpected argument %s\n", a);
            usage(stderr);
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
    lector_doctor_status st = lector_doctor_report_status(r);
    lector_doctor_report_free(r);
    if (!out) {
        fputs("lector doctor: out of memory\n", stderr);
        return 1;
    }
    fputs(out, stdout);
    if (json) fputc('\n', stdout);
    fflush(stdout);
    lector_doctor_string_free(out);
    return st == LECTOR_DOCTOR_BROKEN ? 1 : 0;
}
