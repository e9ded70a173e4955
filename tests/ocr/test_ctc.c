/*
 * ocr_ctc_decode_argmax gives exactly what ocr_ctc_decode gives on the
 * probabilities it was reduced from (np.argmax's first maximum, np.max):
 * same text, same score bit for bit, over random sequences with repeats,
 * blanks and ties; and the dictionary-size errors of both. ocr_ctc_decode_top2
 * gives the same text and score from each step's two best, and as its margin
 * the smallest gap between them over the steps where putting the runner-up
 * in the best's place changes the text, found here by decoding every such
 * substituted sequence whole.
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
    float probs[T * C], maxp[T], p2[2 * T];
    int64_t idx[T], idx2[2 * T], sub[T];
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
            int r = b == 0 ? 1 : 0; /* the runner-up: of equal values the lower index */
            for (int c = 0; c < C; c++)
                if (c != b && probs[t * C + c] > probs[t * C + r]) r = c;
            idx2[2 * t] = b, idx2[2 * t + 1] = r;
            p2[2 * t] = maxp[t], p2[2 * t + 1] = probs[t * C + r];
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
        char *t3 = NULL;
        float s3 = -3, margin = -1, want = 1.f;
        lector_status c = ocr_ctc_decode_top2(idx2, p2, n, C, &d, &t3, &s3, &margin, &err);
        CHECK(c == LECTOR_OK, "round %d: top2 %d", round, c);
        for (int t = 0; t < n && t1; t++) { /* each runner-up in its step, the sequence decoded whole */
            memcpy(sub, idx, sizeof sub);
            sub[t] = idx2[2 * t + 1];
            char *ts = NULL;
            float ss;
            if (ocr_ctc_decode_argmax(sub, maxp, n, C, &d, &ts, &ss, &err) == LECTOR_OK && strcmp(ts, t1) &&
                p2[2 * t] - p2[2 * t + 1] < want)
                want = p2[2 * t] - p2[2 * t + 1];
            lector__free(ts);
        }
        if (t1 && t3) {
            CHECK(!strcmp(t1, t3), "round %d: top2 '%s' vs '%s'", round, t3, t1);
            CHECK(!memcmp(&s1, &s3, sizeof s1), "round %d: top2 score %.9g vs %.9g", round, (double)s3, (double)s1);
            CHECK(margin == want, "round %d: margin %.9g, expected %.9g", round, (double)margin, (double)want);
        }
        lector__free(t1);
        lector__free(t2);
        lector__free(t3);
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
    idx2[2 * (T / 2) + 1] = C; /* a runner-up past the dictionary */
    t = (char *)1;
    float mg = -1;
    CHECK(ocr_ctc_decode_top2(idx2, p2, T, 0, &d, &t, &s, &mg, &err) == LECTOR_ERR_SHAPE && !t, "top2 index >= n");
    CHECK(ocr_ctc_decode_top2(idx2, p2, T, C + 1, &d, &t, &s, &mg, &err) == LECTOR_ERR_SHAPE && !t, "top2 C != n");
    return soft_check_exit("ctc");
}
