/*
 * ocr_reader.h - where a batch meets the engine: inputs are queued by path,
 * results come back one at a time in the order queued.
 *
 * This is the one place to change when the engine gets a pipelined driver:
 * today each input is one lector_read_file() (or lector_read_memory() of
 * standard input for "-") at the time its result is asked for; a streaming
 * driver takes the whole queue and keeps several inputs in flight, and
 * nothing else in the batch changes.
 */
#ifndef LECTOR_OCR_READER_H
#define LECTOR_OCR_READER_H

#include <stddef.h>

#include "lector.h"

typedef struct ocr_reader ocr_reader;

ocr_reader *ocr_reader_create(lector_engine *engine);
/* Queues an input ("-": standard input) under a caller's tag. -1 on
 * allocation failure. The path must outlive the reader. */
int ocr_reader_add(ocr_reader *r, const char *path, size_t tag);
/* The next input's outcome in queue order: 1 with `tag`, `status` and either
 * `result` (free with lector_result_free) or `err` filled; 0 when the queue is
 * done. */
int ocr_reader_next(ocr_reader *r, size_t *tag, lector_result **result, lector_status *status, lector_error *err);
/* Frees the reader; inputs not yet returned are dropped. NULL is a no-op. */
void ocr_reader_free(ocr_reader *r);

#endif
