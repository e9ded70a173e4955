/*
 * ocr_batch.h - `lector` over many inputs: the loop behind every OCR run of
 * the CLI, from one image to an archive.
 *
 * For each input, in order: a listing error or a duplicate output name is a
 * failure; with `resume`, an input whose every requested output exists is
 * skipped (the outputs are written atomically, so existing means complete);
 * the rest are read through ocr_reader and their results go to the stream
 * (standard output or -o, as before) and/or one file per format in out_dir.
 * A failure is reported on stderr, recorded in the summary and the run goes
 * on, until max_failures failures when that is set.
 */
#ifndef LECTOR_OCR_BATCH_H
#define LECTOR_OCR_BATCH_H

#include <stdio.h>

#include "batch/inputs.h"
#include "batch/shard.h"
#include "lector.h"
#include "render.h"

typedef struct ocr_batch_options {
    FILE *stream; /* NULL: no stream */
    render_format stream_format;
    const char *out_dir; /* NULL: no per-input files, no summary */
    render_format formats[RENDER_N_FORMATS];
    size_t n_formats;
    int resume;
    long max_failures; /* 0: no limit */
    batch_shard shard;
    const char *draw_path; /* --draw */
    int quiet;
    double progress_interval_s; /* off a terminal */
    size_t max_stdin;           /* bytes of standard input at most (--max-file-size) */
} ocr_batch_options;

/* Runs the batch over `inputs` (already filtered to the shard). Returns the
 * exit status: 0 every input done, 1 some failed (or the summary could not
 * be written). */
int ocr_batch_run(lector_engine *engine, batch_inputs *inputs, const ocr_batch_options *o);

#endif
