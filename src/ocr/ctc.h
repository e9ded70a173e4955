/*
 * ctc.h - the recognition dictionary and CTC greedy decoding (PaddleOCR's
 * CTCLabelDecode): argmax per time step, repeats collapsed, blank (class 0)
 * dropped, score = mean probability of the kept steps (0 if none).
 */
#ifndef LECTOR_OCR_CTC_H
#define LECTOR_OCR_CTC_H

#include <stddef.h>

#include "lector_rt.h"

typedef struct ocr_dict {
    char **chars;   /* chars[0] = blank (""), then the dictionary, then " " */
    int n;          /* number of classes */
    char *storage;
} ocr_dict;

/* Loads a dictionary file (one UTF-8 character per line); `use_space`
 * appends " ". */
lector_status ocr_dict_load(const char *path, int use_space, ocr_dict *d, lector_error *err);
void ocr_dict_free(ocr_dict *d);

/* Decodes one sequence of T steps of C class probabilities. *text is
 * malloc'd (lector__free). Returns LECTOR_ERR_SHAPE if C != d->n. */
lector_status ocr_ctc_decode(const float *probs, int T, int C, const ocr_dict *d, char **text,
                             float *score, lector_error *err);

#endif
