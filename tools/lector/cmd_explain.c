/* cmd_explain.c - `lector explain`: match a pasted error message against
 * the doctor's knowledge base (include/lector_doctor.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lector_doctor.h"

/* Append s to a growing string; returns the new string or NULL. */
static char *append(char *acc, size_t *len, const char *s, size_t n)
{
    char *p = realloc(acc, *len + n + 1);
    if (!p) {
        free(acc);
        return NULL;
    }
    memcpy(p + *len, s, n);
    *len += n;
    p[*len] = 0;
    return p;
}

static char *read_all(FILE *f)
{
    size_t len = 0;
    char *acc = append(NULL, &len, "", 0), chunk[4096];
    size_t n;
    while (acc && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        acc = append(acc, &len, chunk, n);
        if (len > (1u << 24)) break; /* 16 MiB of log is plenty */
    }
    return acc;
}

int cmd_explain(int argc, char **argv)
{
    size_t len = 0;
    char *text = append(NULL, &len, "", 0);
    int list = 0;
    for (int i = 1; i < argc && text; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs("usage: lector explain [TEXT... | -]\n"
                  "  Match an error message against known GPU-stack failures and print the layer,\n"
                  "  cause, fix and the doctor check that verifies it. Without TEXT or with '-',\n"
                  "  reads standard input. --list prints the knowledge base with its sources.\n",
                  stdout);
            free(text);
            return 0;
        }
        if (strcmp(argv[i], "--list") == 0) {
            list = 1;
            continue;
        }
        if (strcmp(argv[i], "-") == 0) continue;
        if (len) text = append(text, &len, " ", 1);
        if (text) text = append(text, &len, argv[i], strlen(argv[i]));
    }
    if (!text) {
        fputs("lector explain: out of memory\n", stderr);
        return 2;
    }
    if (list) {
        lector_explain_match m;
        for (size_t i = 0; lector_explain_known(i, &m) == 0; i++)
            printf("%-32s %s\n    layer: %s; source: %s\n", m.id, m.message, m.layer, m.source);
        free(text);
        return 0;
    }
    if (!len) {
        free(text);
        text = read_all(stdin);
        if (!text) {
            fputs("lector explain: out of memory\n", stderr);
            return 2;
        }
    }
    if (!text[strspn(text, " \t\r\n")]) {
        fputs("lector explain: no text given (pass it as arguments or on stdin)\n", stderr);
        free(text);
        return 2;
    }
    lector_explain_match m[5];
    size_t n = lector_explain_match_text(text, m, 5);
    free(text);
    if (!n) {
        printf("Unknown error text: it matches none of the %zu known GPU-stack messages and names no CUDA,\n"
               "cuDNN, cuBLAS, NVRTC, NVML or driver library. Run `lector doctor` to check the GPU stack layer\n"
               "by layer.\n",
               lector_explain_known_count());
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (m[i].generic)
            printf("%zu. [rule] %s (no known message matched; a rule for the library it names)\n", i + 1, m[i].id);
        else
            printf("%zu. [%d%%] %s\n   known message: %s\n", i + 1, m[i].score, m[i].id, m[i].message);
        printf("   layer: %s\n   cause: %s\n   fix:   %s\n", m[i].layer, m[i].cause, m[i].fix);
        if (strcmp(m[i].check, "-") != 0) printf("   verify: lector doctor (check %s)\n", m[i].check);
        if (m[i].source[0]) printf("   seen in: %s\n", m[i].source);
    }
    return 0;
}
