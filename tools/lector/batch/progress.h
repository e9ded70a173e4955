/*
 * progress.h - what a batch tells its user on stderr while it runs.
 *
 * On a terminal: one line rewritten in place (carriage return and the
 * erase-line control, at most a few times a second): done/total, failures,
 * pages/s and the time left. Off a terminal (a pipe, a log file, a pod's log):
 * a plain line every `interval_s` seconds and no control characters at all;
 * none when quiet. Either way, one summary line at the end.
 */
#ifndef LECTOR_BATCH_PROGRESS_H
#define LECTOR_BATCH_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

typedef struct batch_counts {
    size_t total;   /* inputs of this run (this shard) */
    size_t done;    /* read and written */
    size_t skipped; /* complete outputs found (--resume) */
    size_t failed;
    size_t pages; /* pages read by this run */
} batch_counts;

typedef struct batch_progress {
    FILE *out;
    int tty, quiet;
    double interval_ms;     /* between plain lines off a terminal */
    double (*now_ms)(void); /* a monotonic clock (tests pass their own) */
    double start_ms, last_ms;
    int line_shown; /* a terminal line is on screen */
} batch_progress;

/* `tty`: stderr is a terminal that understands the erase-line control
 * (batch_progress_is_tty). */
void batch_progress_init(batch_progress *p, FILE *out, int tty, int quiet, double interval_s, double (*now_ms)(void));

/* A monotonic clock in milliseconds (CLOCK_MONOTONIC). */
double batch_progress_clock_ms(void);

/* isatty(fileno(f)) and TERM is set and not "dumb". */
int batch_progress_is_tty(FILE *f);

/* Called after each input; prints when a line is due. */
void batch_progress_update(batch_progress *p, const batch_counts *c);

/* Prints a message line (an input's error) without mixing it into the
 * terminal's progress line. */
void batch_progress_message(batch_progress *p, const char *line);

/* Clears the terminal line and prints the summary line. */
void batch_progress_finish(batch_progress *p, const batch_counts *c);

/* The progress text of `c` after `elapsed_ms` (no newline); the time left is
 * estimated from the inputs read or failed so far (those found done are not
 * work). Exposed for tests. */
void batch_progress_format(char *buf, size_t len, const batch_counts *c, double elapsed_ms);

#endif
