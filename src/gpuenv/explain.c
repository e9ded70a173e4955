/* explain.c - match pasted error output against the knowledge base. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuenv/gpuenv.h"

/* Lower-case and collapse whitespace runs, so wrapped terminal output and
 * copy-paste artefacts still match. */
static char *normalise(const char *text)
{
    size_t n = strlen(text);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    size_t o = 0;
    int sp = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (isspace(c)) {
            sp = 1;
            continue;
        }
        if (sp && o) s[o++] = ' ';
        sp = 0;
        s[o++] = (char)tolower(c);
    }
    s[o] = 0;
    return s;
}

size_t lector_explain_known_count(void) { return gpuenv_explain_table_len; }

size_t lector_explain_match_text(const char *text, lector_explain_match *out, size_t max)
{
    if (!text || !out || !max) return 0;
    char *t = normalise(text);
    if (!t) return 0;
    size_t n = 0;
    for (size_t i = 0; i < gpuenv_explain_table_len; i++) {
        const gpuenv_explain_entry *e = &gpuenv_explain_table[i];
        size_t total = 0, hit = 0, nhit = 0;
        for (const char *const *k = e->keys; *k; k++) {
            size_t kl = strlen(*k);
            total += kl;
            if (strstr(t, *k)) {
                hit += kl;
                nhit++;
            }
        }
        if (!nhit || !total) continue;
        /* score: share of the entry's key text found, so a message that
           matches all of a specific entry beats a partial generic one */
        int score = (int)(100 * hit / total);
        lector_explain_match m = {e->id, e->message, e->layer, e->cause, e->fix, e->check, e->source, score};
        /* insertion into the top-`max`, best first; ties: more key text */
        size_t pos = n;
        while (pos > 0 && out[pos - 1].score < score) pos--;
        if (pos >= max) continue;
        size_t last = n < max ? n : max - 1;
        memmove(&out[pos + 1], &out[pos], (last - pos) * sizeof *out);
        out[pos] = m;
        if (n < max) n++;
    }
    free(t);
    return n;
}
