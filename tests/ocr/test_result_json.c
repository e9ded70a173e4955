/*
 * lector_result_json() against cJSON: the document cJSON_PrintUnformatted
 * makes of the same result (the renderer the CLI had before it moved into
 * the library, kept here as the oracle) must be the same bytes, over random
 * results whose texts hold quotes, backslashes, control characters and
 * UTF-8 and whose numbers are integral, fractional, negative and large;
 * every allocation failing in turn gives NULL or the whole document.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lector.h"
#include "util/util.h"

static char *oracle(const char *file, const lector_result *r, const char *error)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    cJSON *pages = cJSON_AddArrayToObject(o, "pages");
    for (size_t p = 0; r && p < r->n_pages; p++) {
        const lector_page *pg = &r->pages[p];
        cJSON *jp = cJSON_CreateObject();
        cJSON_AddNumberToObject(jp, "width", pg->width);
        cJSON_AddNumberToObject(jp, "height", pg->height);
        cJSON *lines = cJSON_AddArrayToObject(jp, "lines");
        for (size_t i = 0; i < pg->n_lines; i++) {
            const lector_line *l = &pg->lines[i];
            cJSON *jl = cJSON_CreateObject();
            cJSON_AddStringToObject(jl, "text", l->text);
            char num[32];
            snprintf(num, sizeof num, "%.6f", l->score);
            cJSON_AddRawToObject(jl, "score", num);
            cJSON *box = cJSON_AddArrayToObject(jl, "box");
            for (int k = 0; k < 4; k++) {
                cJSON *pt = cJSON_CreateArray();
                cJSON_AddItemToArray(pt, cJSON_CreateNumber(l->box[k].x));
                cJSON_AddItemToArray(pt, cJSON_CreateNumber(l->box[k].y));
                cJSON_AddItemToArray(box, pt);
            }
            if (l->rotated) cJSON_AddBoolToObject(jl, "rotated", 1);
            cJSON_AddItemToArray(lines, jl);
        }
        cJSON_AddItemToArray(pages, jp);
    }
    if (r) {
        cJSON *t = cJSON_AddObjectToObject(o, "timings_ms");
        cJSON_AddNumberToObject(t, "decode", (int)(r->timings.decode_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "det", (int)(r->timings.det_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "cls", (int)(r->timings.cls_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "rec", (int)(r->timings.rec_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "total", (int)(r->timings.total_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "plans_compiled", (double)r->timings.plans_compiled);
        cJSON_AddNumberToObject(t, "kernels_compiled", (double)r->timings.kernels_compiled);
    }
    if (error)
        cJSON_AddStringToObject(o, "error", error);
    else
        cJSON_AddNullToObject(o, "error");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static uint32_t rng = 2024;
static uint32_t next(void) { return rng = rng * 1664525u + 1013904223u; }
static double unit(void) { return (next() >> 8) / (double)(1u << 24); }

static char *random_text(void)
{
    static const char *const pieces[] = {"a",    "Z",    "0",    " ",  "\"", "\\", "/", "\n", "\t", "\r", "\b", "\f",
                                         "\x01", "\x1f", "\x7f", "中", "文", "é",  "€", "😀",  "{",  "}",  ":",  ","};
    size_t n = next() % 12;
    char *s = calloc(n * 4 + 1, 1);
    for (size_t i = 0; i < n; i++) strcat(s, pieces[next() % (sizeof pieces / sizeof *pieces)]);
    return s;
}

static float random_coord(void)
{
    switch (next() % 5) {
    case 0: return (float)(next() % 2000);                         /* integral */
    case 1: return (float)(unit() * 2000);                         /* fractional */
    case 2: return (float)(-unit() * 50);                          /* negative */
    case 3: return (float)(next() % 64) / 4.f;                     /* short fractions */
    default: return (float)(unit() * 3e9 * (next() % 2 ? 1 : -1)); /* beyond int */
    }
}

static lector_result *random_result(void)
{
    lector_result *r = calloc(1, sizeof *r);
    r->n_pages = next() % 3;
    r->pages = calloc(r->n_pages + 1, sizeof *r->pages);
    for (size_t p = 0; p < r->n_pages; p++) {
        lector_page *pg = &r->pages[p];
        pg->width = (int)(next() % 5000);
        pg->height = (int)(next() % 5000);
        pg->n_lines = next() % 5;
        pg->lines = calloc(pg->n_lines + 1, sizeof *pg->lines);
        for (size_t i = 0; i < pg->n_lines; i++) {
            lector_line *l = &pg->lines[i];
            l->text = random_text();
            l->score = (float)unit();
            l->rotated = next() % 4 == 0;
            for (int k = 0; k < 4; k++) l->box[k].x = random_coord(), l->box[k].y = random_coord();
        }
    }
    r->timings.decode_ms = unit() * 100;
    r->timings.det_ms = unit() * 1000;
    r->timings.cls_ms = next() % 3 ? unit() : 0;
    r->timings.rec_ms = unit() * 1e4;
    r->timings.total_ms = unit() * 1e6;
    r->timings.plans_compiled = next() % 1000;
    r->timings.kernels_compiled = next() % 100000;
    return r;
}

static void free_result(lector_result *r)
{
    for (size_t p = 0; p < r->n_pages; p++) {
        for (size_t i = 0; i < r->pages[p].n_lines; i++) free(r->pages[p].lines[i].text);
        free(r->pages[p].lines);
    }
    free(r->pages);
    free(r);
}

int main(void)
{
    int bad = 0;
    for (int n = 0; n < 3000 && bad < 5; n++) {
        lector_result *r = random_result();
        char *file = random_text(), *error = next() % 4 ? NULL : random_text();
        const lector_result *shown = error ? NULL : r;
        char *want = oracle(file, shown, error), *got = lector_result_json(shown, file, error);
        if (!got || strcmp(want, got)) {
            fprintf(stderr, "case %d differs:\n cJSON:  %s\n lector: %s\n", n, want, got ? got : "(null)");
            bad++;
        }
        cJSON *back = got ? cJSON_Parse(got) : NULL; /* and it is JSON */
        if (!back) {
            fprintf(stderr, "case %d does not parse\n", n);
            bad++;
        }
        cJSON_Delete(back);
        /* every allocation failing in turn: NULL, or the whole document */
        if (n < 50) {
            for (long k = 1; k < 40; k++) {
                lector__fail_alloc_after(k);
                char *s = lector_result_json(shown, file, error);
                lector__fail_alloc_after(0);
                if (s && strcmp(s, want)) {
                    fprintf(stderr, "case %d, allocation %ld failing: a partial document\n", n, k);
                    bad++;
                }
                free(s);
            }
        }
        free(want);
        free(got);
        free(file);
        free(error);
        free_result(r);
    }
    printf("result_json: %s\n", bad ? "FAILED" : "3000 random results the same bytes as cJSON's");
    return bad ? 1 : 0;
}
