/* patterns.h - the graphs of patterns.txt, built (patterns.c). */
#ifndef LECTOR_TEST_PATTERNS_H
#define LECTOR_TEST_PATTERNS_H

#include <stddef.h>
#include <stdint.h>

#define BO_MAX_INPUTS 4

/* A graph (serialised ONNX) and the shapes of its float inputs. */
typedef struct bo_pattern {
    char name[128];
    uint8_t *model;
    size_t len;
    int n_in;
    int ndim[BO_MAX_INPUTS];
    int64_t dims[BO_MAX_INPUTS][8];
} bo_pattern;

/* Reads and builds every pattern of `path`; the count, or -1 after printing
 * the file, line and problem. */
int bo_patterns_read(const char *path, bo_pattern **out);
void bo_patterns_free(bo_pattern *p, int n);

#endif
