/*
 * ocr_reader.h - where a batch meets the engine: inputs are added by path,
 * and each one's outcome comes back through a callback, in the order added.
 *
 * Inputs go through one stream of the engine (lector_stream_*): pages are
 * decoded ahead and read in parallel on the engine's workers, and each
 * input's callback runs on a worker thread (or inside ocr_reader_add /
 * ocr_reader_finish) when it and every input added before it are done. The
 * callback never runs twice at once, and every input added has had its
 * callback when ocr_reader_finish returns. ocr_reader_add blocks while the
 * stream holds its limit of undelivered inputs (back-pressure).
 */
#ifndef LECTOR_OCR_READER_H
#define LECTOR_OCR_READER_H

#include <stddef.h>

#include "lector.h"

typedef struct ocr_reader ocr_reader;

/* One input's outcome: `result` on success (the callback frees it with
 * lector_result_free), else `status` and `err` naming the input and the problem. */
typedef void (*ocr_reader_cb)(size_t tag, lector_result *result, lector_status status, const lector_error *err,
                              void *user);

/* NULL when the engine's stream cannot start (*err says why) or on allocation failure. Standard input is read up to
 * max_stdin bytes (the engine's file-size limit): more is a LECTOR_ERR_LIMIT that says so. */
ocr_reader *ocr_reader_create(lector_engine *engine, size_t max_stdin, ocr_reader_cb cb, void *user, lector_error *err);
/* Adds an input ("-": standard input) under a caller's tag; the path must
 * stay valid until ocr_reader_finish. May run callbacks of inputs added
 * before. -1 on allocation failure (nothing queued, no callback). */
int ocr_reader_add(ocr_reader *r, const char *path, size_t tag);
/* Returns when every input added has had its callback. */
void ocr_reader_finish(ocr_reader *r);
/* Finishes and frees; NULL is a no-op. */
void ocr_reader_free(ocr_reader *r);

#endif
