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

/* The greedy decoding of every entry point: per step t the class of the
 * maximum, from the probabilities (probs, C per step: the first maximum,
 * like np.argmax) or given (idx[t * stride], maxp[t * stride]: ArgMax and
 * ReduceMax of them, or TopK's first). */
static lector_status decode(const float *probs, int C, const int64_t *idx, const float *maxp, int stride, int T,
                            const ocr_dict *d, char **text, float *score, lector_error *err)
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
            best = idx[(size_t)t * stride];
            pbest = maxp[(size_t)t * stride];
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
    return decode(probs, C, NULL, NULL, 1, T, d, text, score, err);
}

lector_status ocr_ctc_decode_argmax(const int64_t *idx, const float *maxp, int T, int C, const ocr_dict *d, char **text,
                                    float *score, lector_error *err)
{
    *text = NULL;
    *score = 0;
    if (C > 0 && C != d->n) return dict_mismatch(err, "", C, d);
    return decode(NULL, 0, idx, maxp, 1, T, d, text, score, err);
}

/* What steps t and t + 1 emit (0-2 classes into e, their count returned)
 * when step t holds class x: a class is emitted where it is not the blank
 * and not its step's predecessor's. Every other step emits what it did. */
static int emitted_at(const int64_t *idx, int T, int t, int64_t x, int64_t e[2])
{
    int n = 0;
    int64_t prev = t > 0 ? idx[2 * (size_t)(t - 1)] : -1;
    if (x != 0 && x != prev) e[n++] = x;
    if (t + 1 < T) {
        int64_t next = idx[2 * (size_t)(t + 1)];
        if (next != 0 && next != x) e[n++] = next;
    }
    return n;
}

static float text_margin(const int64_t *idx, const float *p, int T)
{
    float best = 1.f;
    for (int t = 0; t < T; t++) {
        float m = p[2 * (size_t)t] - p[2 * (size_t)t + 1];
        if (!(m < best)) continue;
        int64_t a[2], b[2];
        int na = emitted_at(idx, T, t, idx[2 * (size_t)t], a), nb = emitted_at(idx, T, t, idx[2 * (size_t)t + 1], b);
        if (na != nb || (na > 0 && a[0] != b[0]) || (na > 1 && a[1] != b[1])) best = m;
    }
    return best < 0.f ? 0.f : best;
}

lector_status ocr_ctc_decode_top2(const int64_t *idx, const float *p, int T, int C, const ocr_dict *d, char **text,
                                  float *score, float *margin, lector_error *err)
{
    *text = NULL;
    *score = 0;
    *margin = 1.f;
    if (C > 0 && C != d->n) return dict_mismatch(err, "", C, d);
    for (int t = 0; t < T; t++) /* the runner-up is a class too */
        if (idx[2 * (size_t)t + 1] < 0 || idx[2 * (size_t)t + 1] >= d->n)
            return dict_mismatch(err, "at least ",
                                 idx[2 * (size_t)t + 1] < 0 ? 0 : (long long)idx[2 * (size_t)t + 1] + 1, d);
    lector_status st = decode(NULL, 0, idx, p, 2, T, d, text, score, err);
    if (!st) *margin = text_margin(idx, p, T);
    return st;
}
