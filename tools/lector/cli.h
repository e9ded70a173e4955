/* cli.h - shared helpers of the lector command-line tool. */
#ifndef LECTOR_CLI_H
#define LECTOR_CLI_H

#include <stddef.h>

/* Median of n values (sorts in place). */
double cli_median(double *v, int n);

/* --gpu-mem-limit: "4G", "512M", "1073741824" (bytes), or "0.5" / "50%" of
 * GPU `device`'s memory (read through NVML). 0 on success, -1 with a message
 * on stderr. */
int cli_parse_gpu_mem(const char *s, int device, size_t *out);

struct lector_params;
/* --device (lector_device_parse): sets p->device, p->device_id and, for a CPU
 * backend named by itself ("ref"), p->backend. 0 on success, -1 with
 * "<prog>: --device: <reason>" on stderr. */
int cli_parse_device(const char *prog, const char *s, struct lector_params *p);

/* A table of options (ended by {NULL}) for cli_opts_parse: a flag sets its
 * int to 1; the others take the next argument as an int, a float or a
 * string (pointing into argv). */
typedef enum { CLI_FLAG, CLI_INT, CLI_FLOAT, CLI_STR } cli_opt_kind;
typedef struct cli_opt {
    const char *name; /* "--runs" */
    cli_opt_kind kind;
    void *dst; /* int *, float * or const char ** */
} cli_opt;
/* Reads argv[from..argc) against opts; other arguments go to rest[]
 * (argc entries at most; NULL: none are allowed). 0, or -1 with
 * "<prog>: <reason>" on stderr (an unknown option, a missing value, a value
 * that is not a number). */
int cli_opts_parse(const char *prog, const cli_opt *opts, int argc, char **argv, int from, char **rest, int *n_rest);

/* The models directory that `dir` (--models; NULL: lector_find_models'
 * search) names, into out[out_len]. 0, or -1 with "<prog>: <reason>" on
 * stderr. */
int cli_models_dir(const char *prog, const char *dir, char *out, size_t out_len);

int cmd_run_model(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `bench gpu` and `bench pipeline` (cmd_bench_gpu.c) */
int cmd_bench_gpu(int argc, char **argv);
int cmd_ocr(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_models(int argc, char **argv);
/* `lector doctor` and `lector explain` (cmd_doctor.c, cmd_explain.c) */
int cmd_doctor(int argc, char **argv);
int cmd_explain(int argc, char **argv);

#endif
