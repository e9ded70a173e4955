/*
 * ctc.h - the recognition dictionary and CTC greedy decoding (PaddleOCR's
 * CTCLabelDecode): argmax per time step, repeats collapsed, blank (class 0)
 * dropped, score = mean probability of the kept steps (0 if none).
 */
#ifndef LECTOR_OCR_CTC_H
#define LECTOR_OCR_CTC_H

#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"

typedef struct ocr_dict {
    char **chars; /* chars[0] = blank (""), then the dictionary, then " " */
    int n;        /* number of classes */
    char *storage;
    char **repaired; /* entries that were not valid UTF-8, repaired (owned) */
    int n_repaired;
} ocr_dict;

/* Loads a dictionary file (one UTF-8 character per line); `use_space`
 * appends " ". An entry that is not valid UTF-8 is read with U+FFFD in
 * place of its bad bytes (util/utf8.h), so that every text is valid UTF-8;
 * one warning per file says so. */
lector_status ocr_dict_load(const char *path, int use_space, ocr_dict *d, lector_error *err);
void ocr_dict_free(ocr_dict *d);

/* Decodes one sequence of T steps of C class probabilities. *text is
 * malloc'd (lector__free). Returns LECTOR_ERR_SHAPE if C != d->n. */
lector_status ocr_ctc_decode(const float *probs, int T, int C, const ocr_dict *d, char **text, float *score,
                             lector_error *err);

/* The same decoding from the recogniser's probabilities reduced on the
 * device (lector_model_load_file_argmax): per step the class of the
 * maximum, idx[t] (the first maximum), and that maximum, maxp[t]. Gives
 * exactly the text and score ocr_ctc_decode gives on the probabilities (NaN
 * aside: ArgMax takes a NaN for the maximum, as np.argmax does).
 * C is the model's number of classes, LECTOR_ERR_SHAPE if C != d->n; C <= 0
 * when it is not known: then LECTOR_ERR_SHAPE when an index is not a class
 * of the dictionary (a model with fewer classes than the dictionary is not
 * detected). */
lector_status ocr_ctc_decode_argmax(const int64_t *idx, const float *maxp, int T, int C, const ocr_dict *d, char **text,
                                    float *score, lector_error *err);

/* The same from each step's two best classes (lector_model_load_file_top2):
 * idx[2t] and p[2t] the best (the text and score are ocr_ctc_decode_argmax's
 * of them), idx[2t + 1] and p[2t + 1] the runner-up. *margin is how near
 * the text came to another: the smallest p[2t] - p[2t + 1] over the steps
 * whose runner-up, put in the best's place, would change the text (1 when
 * none would). Rounding that moves probabilities by less than the margin
 * cannot change the text: the pipeline reads a half-precision line again in
 * fp32 where it is small (lector_params.gpu_fp16_margin). */
lector_status ocr_ctc_decode_top2(const int64_t *idx, const float *p, int T, int C, const ocr_dict *d, char **text,
                                  float *score, float *margin, lector_error *err);

#endif
