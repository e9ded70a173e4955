/* patterns.h - the graphs test_backend_ops builds (patterns.c). */
#ifndef LECTOR_TEST_PATTERNS_H
#define LECTOR_TEST_PATTERNS_H

#include <stddef.h>
#include <stdint.h>

#include "graph_builder.h"

/* A graph and its float inputs (seeded random values in [-2.2, 2.7], the
 * range of preprocessed images). */
typedef struct bo_pattern {
    const char *name;
    gb *(*build)(void);
    int n_in;
    int ndim[2];
    int64_t dims[2][5];
} bo_pattern;

extern const bo_pattern bo_patterns[];
extern const size_t bo_n_patterns;

#endif
