/*
 * render.h - the output formats of `lector`: txt, json, tsv, hocr.
 *
 * One set of writers serves both ways results leave the CLI: a stream of
 * every input into one output (standard output or -o: txt pages separated by
 * form feeds, JSON Lines, one TSV table, one hOCR document) and one file per
 * input (--output-dir), which is the stream of that input alone, its pages
 * numbered from 1 and without timings, so the file depends on the input only.
 */
#ifndef LECTOR_RENDER_H
#define LECTOR_RENDER_H

#include <stdio.h>

#include "lector.h"

typedef enum render_format { RENDER_TXT, RENDER_JSON, RENDER_TSV, RENDER_HOCR, RENDER_N_FORMATS } render_format;

/* "txt", "json", "tsv", "hocr": also the extension of a per-input file. */
const char *render_format_name(render_format f);
/* 0 and `out` set when `s` names a format; -1 otherwise. */
int render_format_parse(const char *s, render_format *out);

typedef struct render_stream {
    FILE *out;
    render_format format;
    int with_timings; /* json: "timings_ms" in each object */
    int inputs;       /* inputs written so far (results and errors) */
    int page_no;      /* hocr: pages written so far */
    int page_base;    /* tsv: pages written so far */
} render_stream;

/* Starts a stream (the hOCR document's head). */
void render_stream_begin(render_stream *s, FILE *out, render_format format, int with_timings);
/* One input's result; `name` is how the input was named. */
void render_stream_result(render_stream *s, const char *name, const lector_result *r);
/* One input that failed: a JSON object with "error"; nothing in the other
 * formats (the message goes to stderr). */
void render_stream_error(render_stream *s, const char *name, const char *error);
/* Ends a stream (closes the hOCR document). */
void render_stream_end(render_stream *s);

/* The whole output of one input alone (a per-input file). */
void render_single(FILE *out, render_format format, const char *name, const lector_result *r);

#endif
