/* progress.c - see progress.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

/* How often the terminal line is redrawn. */
#define TTY_REDRAW_MS 200.0

double batch_progress_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int batch_progress_is_tty(FILE *f)
{
    const char *term = getenv("TERM");
    return isatty(fileno(f)) && term && *term && strcmp(term, "dumb");
}

void batch_progress_init(batch_progress *p, FILE *out, int tty, int quiet, double interval_s, double (*now_ms)(void))
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = tty;
    p->quiet = quiet;
    p->interval_ms = interval_s * 1000.0;
    p->now_ms = now_ms;
    p->start_ms = p->last_ms = now_ms();
}

static void format_duration(char *buf, size_t len, double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

void batch_progress_format(char *buf, size_t len, const batch_counts *c, double elapsed_ms)
{
    size_t processed = c->done + c->failed + c->skipped, processed_since_start = c->done + c->failed;
    double s = elapsed_ms / 1000.0;
    int n = snprintf(buf, len, "%zu/%zu", processed, c->total);
    if (c->skipped && n > 0 && (size_t)n < len) n += snprintf(buf + n, len - n, " (%zu already done)", c->skipped);
    if (n > 0 && (size_t)n < len) n += snprintf(buf + n, len - n, ", %zu failed", c->failed);
    if (s > 0 && n > 0 && (size_t)n < len) n += snprintf(buf + n, len - n, ", %.1f pages/s", c->pages / s);
    if (processed_since_start && processed < c->total && n > 0 && (size_t)n < len) {
        char eta[32];
        format_duration(eta, sizeof eta, s / processed_since_start * (c->total - processed));
        snprintf(buf + n, len - n, ", %s left", eta);
    }
}

static void clear_line(batch_progress *p)
{
    if (p->tty && p->line_shown) {
        fputs("\r\033[K", p->out);
        p->line_shown = 0;
    }
}

void batch_progress_update(batch_progress *p, const batch_counts *c)
{
    if (p->quiet) return;
    double now = p->now_ms();
    if (now - p->last_ms < (p->tty ? TTY_REDRAW_MS : p->interval_ms)) return;
    p->last_ms = now;
    char line[256];
    batch_progress_format(line, sizeof line, c, now - p->start_ms);
    if (p->tty) {
        fprintf(p->out, "\r\033[Klector: %s", line);
        p->line_shown = 1;
    } else {
        fprintf(p->out, "lector: %s\n", line);
    }
    fflush(p->out);
}

void batch_progress_message(batch_progress *p, const char *line)
{
    clear_line(p);
    fprintf(p->out, "%s\n", line);
    fflush(p->out);
}

void batch_progress_finish(batch_progress *p, const batch_counts *c)
{
    clear_line(p);
    double s = (p->now_ms() - p->start_ms) / 1000.0;
    fprintf(p->out, "lector: %zu input(s): %zu done, ", c->total, c->done);
    if (c->skipped) fprintf(p->out, "%zu already done, ", c->skipped);
    fprintf(p->out, "%zu failed; %zu page(s) in %.1f s (%.1f pages/s)\n", c->failed, c->pages, s,
            s > 0 ? c->pages / s : 0.0);
    fflush(p->out);
}
