#include "ocr/ctc.h"

#include <string.h>

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
        if (e > p && e[-1] == '\r') e[-1] = 0; /* strip("\r\n") */
        if (!(nl == NULL && *p == 0)) d->chars[d->n++] = p; /* no entry after a final newline */
        p = e + 1;
    }
    if (d->n < 2) {
        ocr_dict_free(d);
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "%s: the dictionary is empty", path);
    }
    if (use_space) d->chars[d->n++] = space;
    return LECTOR_OK;
}

void ocr_dict_free(ocr_dict *d)
{
    lector__free(d->chars);
    lector__free(d->storage);
    memset(d, 0, sizeof *d);
}

lector_status ocr_ctc_decode(const float *probs, int T, int C, const ocr_dict *d, char **text,
                             float *score, lector_error *err)
{
    *text = NULL;
    *score = 0;
    if (C != d->n)
        return lector__error(err, LECTOR_ERR_SHAPE,
                             "the recognition model predicts %d classes but the dictionary has %d "
                             "(dictionary + blank%s): wrong dictionary for this model?",
                             C, d->n, d->chars[d->n - 1][0] == ' ' ? " + space" : "");
    size_t cap = 1;
    for (int t = 0; t < T; t++) cap += 8;
    char *out = lector__malloc(cap);
    if (!out) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    size_t o = 0;
    double sum = 0;
    int kept = 0, prev = -1;
    for (int t = 0; t < T; t++) {
        const float *p = probs + (size_t)t * C;
        int best = 0;
        for (int c = 1; c < C; c++)
            if (p[c] > p[best]) best = c; /* first maximum, like np.argmax */
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
            sum += p[best];
            kept++;
        }
        prev = best;
    }
    out[o] = 0;
    *text = out;
    *score = kept ? (float)(sum / kept) : 0.f;
    return LECTOR_OK;
}
