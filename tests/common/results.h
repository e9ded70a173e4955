/* results.h - equality of two OCR results, for the tests that hold a read
 * to another (threads, batches): the same pages, lines, texts, scores,
 * boxes and turns, exactly. */
#ifndef LECTOR_TESTS_RESULTS_H
#define LECTOR_TESTS_RESULTS_H

#include <string.h>

#include "lector.h"

static inline int results_equal(const lector_result *a, const lector_result *b)
{
    if (a->n_pages != b->n_pages) return 0;
    for (size_t p = 0; p < a->n_pages; p++) {
        const lector_page *x = &a->pages[p], *y = &b->pages[p];
        if (x->width != y->width || x->height != y->height || x->n_lines != y->n_lines) return 0;
        for (size_t i = 0; i < x->n_lines; i++) {
            if (strcmp(x->lines[i].text, y->lines[i].text) || x->lines[i].score != y->lines[i].score ||
                x->lines[i].rotated != y->lines[i].rotated ||
                memcmp(x->lines[i].box, y->lines[i].box, sizeof x->lines[i].box))
                return 0;
        }
    }
    return 1;
}

#endif
