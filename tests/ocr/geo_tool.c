/*
 * geo_tool - exposes Lector's DB geometry to the OpenCV/pyclipper oracle
 * (geometry_oracle.py). Reads one command per line on stdin, answers one
 * line per command on stdout:
 *   minrect N x1 y1 ... xN yN        -> 8 floats (get_mini_boxes order) + short side
 *   fill W H N x1 y1 ... xN yN       -> W*H mask as a string of 0/1
 *   contours W H BITS(row-major 0/1) -> per contour "x,y;x,y;..." separated by '|'
 *   offset D N x1 y1 ... (floats)    -> "x,y;x,y;..."
 *   dbpost PW PH SW SH THRESH BOXT UNCLIP SLOW FILE(raw float32 map)
 *                                    -> per box "x1 y1 ... x4 y4 score" separated by '|'
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocr/db_post.h"
#include "ocr/geometry.h"
#include "util/util.h"

static char line[1 << 22];

/* Readers of a command's numbers: each moves the cursor past what it read. */
static int next_int(char **s)
{
    char *end;
    int v = (int)strtol(*s, &end, 10);
    *s = end;
    return v;
}

static float next_float(char **s)
{
    char *end;
    float v = strtof(*s, &end);
    *s = end;
    return v;
}

/* N points "x y" with float coordinates, malloc'd. */
static ocr_pt *next_float_points(char **s, int n)
{
    ocr_pt *p = malloc(sizeof *p * (size_t)n);
    for (int i = 0; i < n; i++) {
        p[i].x = next_float(s);
        p[i].y = next_float(s);
    }
    return p;
}

int main(void)
{
    while (fgets(line, sizeof line, stdin)) {
        char *s = line;
        char cmd[32];
        int off;
        if (sscanf(s, "%31s%n", cmd, &off) != 1) continue;
        s += off;
        if (!strcmp(cmd, "minrect")) {
            int n = next_int(&s);
            ocr_pt *p = next_float_points(&s, n);
            ocr_pt b[4];
            float ss;
            ocr_mini_box(p, n, b, &ss);
            for (int i = 0; i < 4; i++) printf("%.4f %.4f ", b[i].x, b[i].y);
            printf("%.4f\n", ss);
            free(p);
        } else if (!strcmp(cmd, "fill")) {
            int w = next_int(&s);
            int h = next_int(&s);
            int n = next_int(&s);
            ocr_ipt *p = malloc(sizeof *p * (size_t)n);
            for (int i = 0; i < n; i++) {
                p[i].x = next_int(&s);
                p[i].y = next_int(&s);
            }
            uint8_t *m = calloc((size_t)w * h, 1);
            ocr_fill_poly(m, w, h, p, n);
            for (int i = 0; i < w * h; i++) putchar('0' + m[i]);
            putchar('\n');
            free(m);
            free(p);
        } else if (!strcmp(cmd, "contours")) {
            int w = next_int(&s);
            int h = next_int(&s);
            while (*s == ' ') s++;
            uint8_t *m = malloc((size_t)w * h);
            for (int i = 0; i < w * h; i++) m[i] = s[i] == '1';
            ocr_contours c;
            ocr_find_contours(m, w, h, &c);
            for (size_t k = 0; k < c.n; k++) {
                if (k) putchar('|');
                for (size_t i = 0; i < c.list[k].count; i++) {
                    const ocr_ipt *q = &c.pts[c.list[k].start + i];
                    printf(i ? ";%d,%d" : "%d,%d", q->x, q->y);
                }
            }
            putchar('\n');
            ocr_contours_free(&c);
            free(m);
        } else if (!strcmp(cmd, "offset")) {
            char *end;
            double d = strtod(s, &end);
            s = end;
            int n = next_int(&s);
            ocr_pt *p = next_float_points(&s, n);
            int no;
            ocr_ipt *o = ocr_offset_round(p, n, d, &no);
            for (int i = 0; i < no; i++) printf(i ? ";%d,%d" : "%d,%d", o[i].x, o[i].y);
            putchar('\n');
            lector__free(o);
            free(p);
        } else if (!strcmp(cmd, "dbpost")) {
            int pw, ph, sw, sh, slow;
            float th, bt, uc;
            char file[4096];
            if (sscanf(s, "%d %d %d %d %f %f %f %d %4095s", &pw, &ph, &sw, &sh, &th, &bt, &uc, &slow, file) != 9) {
                printf("error\n");
                continue;
            }
            float *map = malloc(sizeof *map * (size_t)pw * ph);
            FILE *f = fopen(file, "rb");
            if (!f || fread(map, sizeof *map, (size_t)pw * ph, f) != (size_t)pw * ph) {
                printf("error\n");
                if (f) fclose(f);
                free(map);
                continue;
            }
            fclose(f);
            ocr_db_params dp = {th, bt, uc, slow, 0, 1000, 3};
            ocr_box *b;
            int nb;
            lector_error err;
            if (ocr_db_postprocess(map, pw, ph, sw, sh, &dp, &b, &nb, &err)) {
                printf("error %s\n", err.message);
            } else {
                for (int i = 0; i < nb; i++) {
                    if (i) putchar('|');
                    for (int k = 0; k < 4; k++) printf("%g %g ", b[i].p[k].x, b[i].p[k].y);
                    printf("%.6f", b[i].score);
                }
                putchar('\n');
                lector__free(b);
            }
            free(map);
        }
        fflush(stdout);
    }
    return 0;
}
