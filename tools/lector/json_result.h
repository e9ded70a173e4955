/* json_result.h - the JSON document of one OCR result, shared by
 * `lector --format json` (one object per line) and `lector serve` (/v1/ocr). */
#ifndef LECTOR_JSON_RESULT_H
#define LECTOR_JSON_RESULT_H

#include "lector.h"

/* {"file":..., "pages":[{"width","height","lines":[{"text","score","box"[,"rotated"]}]}],
 *  "timings_ms":{...} (only with a result), "error": null | "message"}.
 * `r` may be NULL (a failed read: pages is empty, `error` says why).
 * Returns a NUL-terminated string without a trailing newline; free() it.
 * NULL on allocation failure. */
char *json_result_string(const char *file, const lector_result *r, const char *error);

/* The same with "compiled": {"plans": N, "kernels": K}: what the engine had
 * compiled in all when this result was written (stats may be NULL: none). */
char *json_result_string_stats(const char *file, const lector_result *r, const char *error,
                               const lector_engine_stats *stats);

#endif
