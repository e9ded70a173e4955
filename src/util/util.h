/*
 * util.h - internal helpers shared by every layer: allocation wrappers,
 * error reporting, logging, timing.
 *
 * All host allocation goes through lector__malloc & co. so that a test can
 * make the Nth allocation fail (lector__fail_alloc_after, or the test control
 * LECTOR_FAIL_ALLOC=N: curl/SQLite style) and check that every path returns
 * LECTOR_ERR_OUT_OF_MEMORY without leaking.
 */
#ifndef LECTOR_UTIL_H
#define LECTOR_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"

void *lector__malloc(size_t size);
void *lector__calloc(size_t n, size_t size);
void *lector__realloc(void *p, size_t size);
/* 64-byte aligned allocation (SIMD-friendly); free with lector__free. */
void *lector__aligned_alloc(size_t size);
void lector__free(void *p);
/* Test hook: make the n-th allocation from now fail (n <= 0 disables). */
void lector__fail_alloc_after(long n);
/* How many allocations have returned NULL so far (injected or real): a
 * caller that cannot tell "absent" from "out of memory" everywhere compares
 * it before and after its work. */
long lector__alloc_failures(void);
char *lector__strdup(const char *s);
/* Room for `need` elements of `elem` bytes in a growable array: `items` is
 * the address of the array's pointer (T **), *cap its capacity in elements,
 * grown by doubling (at least 16). 0, or -1 (allocation failed or size
 * overflow) with the array and *cap untouched. */
int lector__reserve(void *items, size_t *cap, size_t need, size_t elem);
/* Overflow-checked size_t multiplication: 0 on success, -1 on overflow. */
int lector__mul_size(size_t a, size_t b, size_t *out);

/* Fills `err` (if non-NULL) and returns `code`. printf-style message. */
lector_status lector__error(lector_error *err, lector_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes an already-filled error message with "<prefix>: ". */
void lector__error_prefix(lector_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One log line through lector_log_set()'s callback when `level` is within
 * the level set there (log.c). */
void lector__log(lector_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Monotonic clock in milliseconds. */
double lector__now_ms(void);

/* Physical cores of this machine (falls back to online CPUs). */
int lector__physical_cores(void);

/* Reads a whole file into a new buffer (lector__free). */
lector_status lector__read_file(const char *path, size_t max_size, uint8_t **data, size_t *size, lector_error *err);

#define LECTOR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define LECTOR_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define LECTOR_MAX(a, b)    ((a) > (b) ? (a) : (b))

#endif
