/*
 * ocr_ctc_decode_argmax gives exactly what ocr_ctc_decode gives on the
 * probabilities it was reduced from (np.argmax's first maximum, np.max):
 * same text, same score bit for bit, over random sequences with repeats,
 * blanks and ties; and the dictionary-size errors of both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocr/ctc.h"
#include "util/util.h"
#include "../soft_check.h"

static uint32_t rng = 7;
static uint32_t next(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

int main(void)
{
    enum { C = 7, T = 40 };
    static char *chars[C + 1] = {"", "a", "b", "\xe4\xb8\xad", "d", "e", " "};
    ocr_dict d = {chars, C, NULL, NULL, 0};
    float probs[T * C], maxp[T];
    int64_t idx[T];
    lector_error err;
    for (int round = 0; round < 2000; round++) {
        /* few distinct values, so that ties are frequent; runs of one class */
        int cls = 0;
        for (int t = 0; t < T; t++) {
            if (next() % 3 == 0) cls = (int)(next() % C);
            for (int c = 0; c < C; c++) probs[t * C + c] = (float)(next() % 4) / 8.f;
            if (round % 2) probs[t * C + cls] = 0.5f + (float)(next() % 3) / 8.f; /* often the max, sometimes tied */
            int b = 0;
            for (int c = 1; c < C; c++)
                if (probs[t * C + c] > probs[t * C + b]) b = c;
            idx[t] = b;
            maxp[t] = probs[t * C + b];
        }
        int n = (int)(next() % (T + 1));
        char *t1 = NULL, *t2 = NULL;
        float s1 = -1, s2 = -2;
        lector_status a = ocr_ctc_decode(probs, n, C, &d, &t1, &s1, &err);
        lector_status b = ocr_ctc_decode_argmax(idx, maxp, n, round % 3 ? C : 0, &d, &t2, &s2, &err);
        CHECK(a == LECTOR_OK && b == LECTOR_OK, "round %d: %d %d", round, a, b);
        if (t1 && t2) {
            CHECK(!strcmp(t1, t2), "round %d: '%s' vs '%s'", round, t1, t2);
            CHECK(!memcmp(&s1, &s2, sizeof s1), "round %d: score %.9g vs %.9g", round, (double)s1, (double)s2);
        }
        lector__free(t1);
        lector__free(t2);
    }
    /* the dictionary does not match the model */
    char *t = (char *)1;
    float s = -1;
    CHECK(ocr_ctc_decode(probs, T, C + 1, &d, &t, &s, &err) == LECTOR_ERR_SHAPE && !t, "probs C != n");
    CHECK(strstr(err.message, "predicts 8 classes but the dictionary has 7") != NULL, "%s", err.message);
    t = (char *)1;
    CHECK(ocr_ctc_decode_argmax(idx, maxp, T, C - 1, &d, &t, &s, &err) == LECTOR_ERR_SHAPE && !t, "argmax C != n");
    CHECK(strstr(err.message, "predicts 6 classes but the dictionary has 7") != NULL, "%s", err.message);
    idx[T / 2] = C; /* an index past the dictionary, the class count unknown */
    t = (char *)1;
    CHECK(ocr_ctc_decode_argmax(idx, maxp, T, 0, &d, &t, &s, &err) == LECTOR_ERR_SHAPE && !t, "index >= n");
    CHECK(strstr(err.message, "wrong dictionary for this model?") != NULL &&
              strstr(err.message, "at least 8 classes but the dictionary has 7 (dictionary + blank + space)") != NULL,
          "%s", err.message);
    return soft_check_exit("ctc");
}
