#include "ocr/ctc.h"

#include <string.h>

#include "util/utf8.h"
#include "util/util.h"

lector_status ocr_dict_load(const char *path, int use_space, ocr_dict *d, lector_error *err)
{
    memset(d, 0, sizeof *d);
    uint8_t *buf;
    size_t len;
    lector_status st = lector__read_file(path, (size_t)64 << 20, &buf, &len, err);
    if (st) return st;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    lines += 1;
    d->chars = lector__calloc(lines + 3, sizeof *d->chars);
    d->storage = (char *)buf;
    if (!d->chars) {
        ocr_dict_free(d);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    static char blank[] = "", space[] = " ";
    d->chars[d->n++] = blank;
    char *p = (char *)buf, *end = (char *)buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl ? nl : end;
        *e = 0;
        if (e > p && e[-1] == '\r') e[-1] = 0;              /* strip("\r\n") */
        if (!(nl == NULL && *p == 0)) d->chars[d->n++] = p; /* no entry after a final newline */
        p = e + 1;
    }
    if (d->n < 2) {
        ocr_dict_free(d);
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: the dictionary is empty", path);
    }
    if (use_space) d->chars[d->n++] = space;
    int first_bad = 0, n_bad = 0;
    for (int i = 1; i < d->n; i++)
        if (!lector__utf8_valid(d->chars[i])) {
            n_bad++;
            if (!first_bad) first_bad = i; /* entry i is on line i */
        }
    if (!n_bad) return LECTOR_OK;
    d->repaired = lector__calloc((size_t)n_bad, sizeof *d->repaired);
    for (int i = 1; d->repaired && i < d->n; i++) {
        if (lector__utf8_valid(d->chars[i])) continue;
        char *r = lector__utf8_repair(d->chars[i], NULL);
        if (!r) break;
        d->repaired[d->n_repaired++] = d->chars[i] = r;
    }
    if (d->n_repaired < n_bad) {
        ocr_dict_free(d);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    lector__log(LECTOR_LOG_WARN,
                "%s: %d entr%s not valid UTF-8 (the first on line %d): read with U+FFFD for the bad bytes", path, n_bad,
                n_bad > 1 ? "ies are" : "y is", first_bad);
    return LECTOR_OK;
}

void ocr_dict_free(ocr_dict *d)
{
    for (int i = 0; i < d->n_repaired; i++) lector__free(d->repaired[i]);
    lector__free(d->repaired);
    lector__free(d->chars);
    lector__free(d->storage);
    memset(d, 0, sizeof *d);
}

static lector_status dict_mismatch(lector_error *err, const char *at_least, long long classes, const ocr_dict *d)
{
    return lector__error(err, LECTOR_ERR_SHAPE,
                         "the recognition model predicts %s%lld classes but the dictionary has %d "
                         "(dictionary + blank%s): wrong dictionary for this model?",
                         at_least, classes, d->n, d->chars[d->n - 1][0] == ' ' ? " + space" : "");
}

/* The greedy decoding of both entry points: per step t the class of the
 * maximum, from the probabilities (probs, C per step: the first maximum,
 * like np.argmax) or given (idx, maxp: ArgMax/ReduceMax of them). */
static lector_status decode(const float *probs, int C, const int64_t *idx, const float *maxp, int T, const ocr_dict *d,
                            char **text, float *score, lector_error *err)
{
    size_t cap = 1;
    for (int t = 0; t < T; t++) cap += 8;
    char *out = lector__malloc(cap);
    if (!out) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    size_t o = 0;
    double sum = 0;
    int kept = 0;
    int64_t prev = -1;
    for (int t = 0; t < T; t++) {
        int64_t best = 0;
        float pbest;
        if (probs) {
            const float *p = probs + (size_t)t * C;
            for (int c = 1; c < C; c++)
                if (p[c] > p[best]) best = c; /* first maximum, like np.argmax */
            pbest = p[best];
        } else {
            best = idx[t];
            pbest = maxp[t];
            if (best < 0 || best >= d->n) { /* the model has more classes than the dictionary */
                lector__free(out);
                return dict_mismatch(err, "at least ", best < 0 ? 0 : (long long)best + 1, d);
            }
        }
        if (best != prev && best != 0) {
            const char *s = d->chars[best];
            size_t l = strlen(s);
            if (o + l + 1 > cap) {
                cap = (o + l + 1) * 2;
                char *n2 = lector__realloc(out, cap);
                if (!n2) {
                    lector__free(out);
                    return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
                }
                out = n2;
            }
            memcpy(out + o, s, l);
            o += l;
            sum += pbest;
            kept++;
        }
        prev = best;
    }
    out[o] = 0;
    *text = out;
    *score = kept ? (float)(sum / kept) : 0.f;
    return LECTOR_OK;
}

lector_status ocr_ctc_decode(const float *probs, int T, int C, const ocr_dict *d, char **text, float *score,
                             lector_error *err)
{
    *text = NULL;
    *score = 0;
    if (C != d->n) return dict_mismatch(err, "", C, d);
    return decode(probs, C, NULL, NULL, T, d, text, score, err);
}

lector_status ocr_ctc_decode_argmax(const int64_t *idx, const float *maxp, int T, int C, const ocr_dict *d, char **text,
                                    float *score, lector_error *err)
{
    *text = NULL;
    *score = 0;
    if (C > 0 && C != d->n) return dict_mismatch(err, "", C, d);
    return decode(NULL, 0, idx, maxp, T, d, text, score, err);
}
