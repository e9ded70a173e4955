/*
 * lector_read_batch (lector.h): N images in one call give, per image, the
 * result of lector_read_memory on that image alone (texts, boxes, scores,
 * exactly), with and without the angle classifier and at drop score 0 (every
 * crop kept, so many aspect ratios and batch widths); a corrupt and an empty
 * input among them get their own error while the others succeed.
 *
 * With LECTOR_TEST_DET_BATCH=N the engine batches detection (det_batch_num
 * = N): pages of one det input size share model runs, and every result must
 * still equal the single read's.
 *
 * usage: test_read_batch MODELS_DIR IMAGE... (missing images are skipped)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../soft_check.h"
#include "lector.h"
#include "results.h"

#define MAXIN 32

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODELS IMAGE...\n", argv[0]);
        return 2;
    }
    lector_params p = lector_default_params();
    p.models_dir = argv[1];
    p.use_angle_cls = 1; /* loaded; used per read through the options */
    if (getenv("LECTOR_TEST_DET_BATCH")) p.det_batch_num = atoi(getenv("LECTOR_TEST_DET_BATCH"));
    lector_engine *eng = NULL;
    lector_error err;
    if (lector_engine_create(&p, &eng, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }

    lector_batch_input in[MAXIN];
    unsigned char *bufs[MAXIN] = {0};
    int n = 0, corrupt = -1, empty = -1;
    for (int a = 2; a < argc && n < MAXIN - 4; a++) {
        size_t sz;
        unsigned char *b = slurp(argv[a], &sz);
        if (!b) {
            fprintf(stderr, "note: %s skipped (missing)\n", argv[a]);
            continue;
        }
        bufs[n] = b;
        in[n] = (lector_batch_input){b, sz, argv[a]};
        n++;
        if (n == 1) { /* a corrupt JPEG (a JPEG marker, then junk) and an empty input right after it */
            size_t len = 4096;
            unsigned char *c = malloc(len);
            memcpy(c, "\xff\xd8\xff\xdb", 4);
            for (size_t i = 4; i < len; i++) c[i] = (unsigned char)(i * 37 + 11);
            bufs[n] = c;
            corrupt = n;
            in[n++] = (lector_batch_input){c, len, "corrupt.jpg"};
            empty = n;
            in[n++] = (lector_batch_input){"", 0, "empty.jpg"};
        }
    }
    if (n) { /* the first image once more: the same page twice in one batch */
        in[n] = in[0];
        n++;
    }
    const struct {
        int cls;
        float drop;
    } modes[] = {{0, -1.f}, {1, -1.f}, {0, 0.f}, {1, 0.f}};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        lector_read_options o = lector_default_read_options();
        o.use_angle_cls = modes[m].cls;
        o.drop_score = modes[m].drop;
        lector_result *res[MAXIN];
        lector_status st[MAXIN];
        lector_error errs[MAXIN];
        CHECK(lector_read_batch(eng, in, (size_t)n, &o, res, st, errs) == LECTOR_OK, "batch call");
        size_t lines = 0;
        for (int i = 0; i < n; i++) {
            lector_result *one = NULL;
            lector_error e1;
            lector_status s1 = lector_read_memory(eng, in[i].data, in[i].size, in[i].name, &o, &one, &e1);
            if (i == corrupt || i == empty) {
                CHECK(s1 != LECTOR_OK && st[i] == s1 && !res[i], "mode %zu input %s: status %d, alone %d", m,
                      in[i].name, st[i], s1);
                CHECK(strstr(errs[i].message, in[i].name) != NULL, "error names the input: %s", errs[i].message);
            } else {
                CHECK(s1 == LECTOR_OK && st[i] == LECTOR_OK && res[i], "mode %zu input %s: %s", m, in[i].name,
                      st[i] ? errs[i].message : e1.message);
                if (one && res[i]) {
                    CHECK(results_equal(res[i], one), "mode %zu input %s: batch result differs from a single read", m,
                          in[i].name);
                    for (size_t pg = 0; pg < one->n_pages; pg++) lines += one->pages[pg].n_lines;
                }
            }
            lector_result_free(one);
            lector_result_free(res[i]);
        }
        printf("mode cls=%d drop=%g: %d inputs, %zu lines compared\n", modes[m].cls, modes[m].drop, n, lines);
        CHECK(lines > 0, "no lines read");
    }
    /* n = 0 and bad arguments */
    CHECK(lector_read_batch(eng, NULL, 0, NULL, NULL, NULL, NULL) == LECTOR_OK, "empty batch");
    CHECK(lector_read_batch(NULL, in, 1, NULL, NULL, NULL, NULL) == LECTOR_ERR_INVALID_ARGUMENT, "NULL engine");
    for (int i = 0; i < n; i++)
        if (i != empty && (i == 0 || in[i].data != in[0].data)) free(bufs[i]);
    lector_engine_free(eng);
    return soft_check_exit("read_batch");
}
