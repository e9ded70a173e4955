/*
 * result_json.c - lector_result_json() (lector.h): the JSON document of one
 * read, the one renderer `lector --format json` and `lector serve` share.
 *
 * It writes the text cJSON_PrintUnformatted made of the same document when
 * the CLI built it with cJSON, byte for byte (ocr.result_json holds it to
 * cJSON): numbers as cJSON 1.7 prints them (an integral value as an int,
 * else %1.15g when that reads back as the same double, else %1.17g), strings
 * escaped as cJSON escapes them. It allocates through util.h, so a failing
 * allocation is NULL, not a partial document.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lector.h"
#include "util/utf8.h"
#include "util/util.h"

typedef struct out {
    char *p;
    size_t len, cap;
    int failed;
} out;

static void put(out *o, const char *s, size_t n)
{
    if (o->failed) return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap < o->len + n + 1) cap *= 2;
        char *p = lector__realloc(o->p, cap);
        if (!p) {
            o->failed = 1;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = 0;
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void putf(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out *o, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0) put(o, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* cJSON's compare_double */
static int same_double(double a, double b)
{
    double big = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= big * DBL_EPSILON;
}

/* cJSON's print_number (valueint saturates as cJSON_CreateNumber's does) */
static void number(out *o, double d)
{
    int as_int = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    char buf[32];
    double back = 0;
    if (isnan(d) || isinf(d)) {
        puts_(o, "null");
    } else if (d == (double)as_int) {
        putf(o, "%d", as_int);
    } else {
        snprintf(buf, sizeof buf, "%1.15g", d);
        if (sscanf(buf, "%lg", &back) != 1 || !same_double(back, d)) snprintf(buf, sizeof buf, "%1.17g", d);
        puts_(o, buf);
    }
}

/* cJSON's print_string_ptr, of a string that is valid UTF-8 (JSON text is
 * UTF-8, RFC 8259): names and messages that are not (a file name's bytes, a
 * client's filename) are written repaired, U+FFFD for each bad sequence
 * (util/utf8.h). */
static void string(out *o, const char *s)
{
    if (!s) {
        puts_(o, "null");
        return;
    }
    char *repaired = NULL;
    if (!lector__utf8_valid(s)) {
        repaired = lector__utf8_repair(s, NULL);
        s = repaired ? repaired : "\xEF\xBF\xBD";
    }
    put(o, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c > 31 && c != '"' && c != '\\') continue;
        put(o, run, (size_t)(s - run));
        run = s + 1;
        switch (c) {
        case '"': puts_(o, "\\\""); break;
        case '\\': puts_(o, "\\\\"); break;
        case '\b': puts_(o, "\\b"); break;
        case '\f': puts_(o, "\\f"); break;
        case '\n': puts_(o, "\\n"); break;
        case '\r': puts_(o, "\\r"); break;
        case '\t': puts_(o, "\\t"); break;
        default: putf(o, "\\u%04x", c); break;
        }
    }
    put(o, run, (size_t)(s - run));
    put(o, "\"", 1);
    lector__free(repaired);
}

static void key(out *o, const char *k)
{
    string(o, k);
    put(o, ":", 1);
}

static double centi(double ms) { return (int)(ms * 100) / 100.0; }

char *lector_result_json(const lector_result *r, const char *file, const char *error)
{
    out o = {0};
    put(&o, "{", 1);
    key(&o, "file");
    string(&o, file);
    put(&o, ",", 1);
    key(&o, "pages");
    put(&o, "[", 1);
    for (size_t p = 0; r && p < r->n_pages; p++) {
        const lector_page *pg = &r->pages[p];
        if (p) put(&o, ",", 1);
        puts_(&o, "{\"width\":");
        number(&o, pg->width);
        puts_(&o, ",\"height\":");
        number(&o, pg->height);
        puts_(&o, ",\"lines\":[");
        for (size_t i = 0; i < pg->n_lines; i++) {
            const lector_line *l = &pg->lines[i];
            if (i) put(&o, ",", 1);
            puts_(&o, "{\"text\":");
            string(&o, l->text);
            putf(&o, ",\"score\":%.6f,\"box\":[", l->score);
            for (int k = 0; k < 4; k++) {
                put(&o, k ? ",[" : "[", k ? 2 : 1);
                number(&o, l->box[k].x);
                put(&o, ",", 1);
                number(&o, l->box[k].y);
                put(&o, "]", 1);
            }
            put(&o, "]", 1);
            if (l->rotated) puts_(&o, ",\"rotated\":true");
            put(&o, "}", 1);
        }
        puts_(&o, "]}");
    }
    put(&o, "]", 1);
    if (r) {
        puts_(&o, ",\"timings_ms\":{\"decode\":");
        number(&o, centi(r->timings.decode_ms));
        puts_(&o, ",\"det\":");
        number(&o, centi(r->timings.det_ms));
        puts_(&o, ",\"cls\":");
        number(&o, centi(r->timings.cls_ms));
        puts_(&o, ",\"rec\":");
        number(&o, centi(r->timings.rec_ms));
        puts_(&o, ",\"total\":");
        number(&o, centi(r->timings.total_ms));
        puts_(&o, ",\"plans_compiled\":");
        number(&o, (double)r->timings.plans_compiled);
        puts_(&o, ",\"kernels_compiled\":");
        number(&o, (double)r->timings.kernels_compiled);
        put(&o, "}", 1);
    }
    puts_(&o, ",\"error\":");
    string(&o, error);
    put(&o, "}", 1);
    if (o.failed) {
        lector__free(o.p);
        return NULL;
    }
    return o.p;
}
