/* cli.h - shared helpers of the lector command-line tool. */
#ifndef LECTOR_CLI_H
#define LECTOR_CLI_H

double cli_now_ms(void);
/* Median of n values (sorts in place). */
double cli_median(double *v, int n);

int cmd_run_model(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* `bench gpu` and `bench pipeline` (cmd_bench_gpu.c) */
int cmd_bench_gpu(int argc, char **argv);
int cmd_ocr(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif
