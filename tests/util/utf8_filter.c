/*
 * utf8_filter.c - lector__utf8_valid and lector__utf8_repair as a filter for
 * test_utf8.py: each input line is a string in hex, each output line
 * "<valid 0/1> <repaired string in hex>".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/util.h"

int main(void)
{
    static char line[1 << 16];
    static char s[1 << 15];
    while (fgets(line, sizeof line, stdin)) {
        size_t n = 0;
        for (char *p = line; p[0] && p[1] && p[0] != '\n'; p += 2) {
            unsigned v;
            if (sscanf(p, "%2x", &v) != 1) return 2;
            s[n++] = (char)v;
        }
        s[n] = '\0';
        size_t k = 0;
        char *r = lector__utf8_repair(s, &k);
        if (!r) return 3;
        printf("%d ", lector__utf8_valid(s));
        for (char *p = r; *p; p++) printf("%02x", (unsigned char)*p);
        printf("\n");
        /* the repaired string is valid, and a count of 0 means a copy */
        if (!lector__utf8_valid(r) || (k == 0) != (strcmp(r, s) == 0)) return 4;
        lector__free(r);
    }
    return 0;
}
