/* cli.h - shared helpers of the lector command-line tool. */
#ifndef LECTOR_CLI_H
#define LECTOR_CLI_H

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

int cmd_run_model(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `bench gpu` and `bench pipeline` (cmd_bench_gpu.c) */
int cmd_bench_gpu(int argc, char **argv);
int cmd_ocr(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_models(int argc, char **argv);

#endif
