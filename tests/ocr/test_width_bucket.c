/*
 * lector_params.rec_width_bucket: lines whose widths round up to one bucket
 * share a recognition batch, each read through width masks. Every line of
 * a page must read as it does with the default (each line at its own exact
 * width, PaddleOCR's single-line result): the same text and box, the score
 * within 1e-4; and with a bucket wide enough to fill batches, fewer rec runs,
 * or the bucket did nothing. A recogniser the masks cannot cover (here the
 * detector, whose height is free) still loads with the default bucket, the
 * engine saying why, and reads as with no bucket.
 *
 * usage: test_width_bucket MODELS_DIR IMAGE...
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../soft_check.h"
#include "lector.h"

static lector_engine *engine_with(const char *models, const char *rec, int bucket, int workers)
{
    lector_params p = lector_default_params();
    p.models_dir = models;
    p.rec_model = rec;
    p.device = LECTOR_DEVICE_CPU;
    p.workers = workers;
    p.rec_width_bucket = bucket;
    lector_engine *e = NULL;
    lector_error err;
    if (lector_engine_create(&p, &e, &err)) fprintf(stderr, "%s\n", err.message);
    return e;
}

static lector_engine *engine(const char *models, int bucket, int workers)
{
    return engine_with(models, NULL, bucket, workers);
}

static void keep_line(lector_log_level level, const char *message, void *user)
{
    if (level == LECTOR_LOG_INFO && strstr(message, "recognition without width buckets") &&
        strstr(message, "width masks"))
        *(int *)user = 1;
}

/* The detector as the recogniser: refused by the masks, so read as with bucket 0 (which fails on its output). */
static void uncovered_recogniser(const char *models, const char *image)
{
    char det[4096];
    snprintf(det, sizeof det, "%s/ch_PP-OCRv4_det_infer.onnx", models);
    int said = 0;
    lector_log_set(keep_line, &said, LECTOR_LOG_INFO);
    lector_engine *with = engine_with(models, det, 64, 1), *without = engine_with(models, det, 0, 1);
    lector_log_set(NULL, NULL, LECTOR_LOG_WARN);
    CHECK(with && without, "an uncovered recogniser: the engine does not load (bucket 64: %s, 0: %s)",
          with ? "loaded" : "failed", without ? "loaded" : "failed");
    CHECK(said, "an uncovered recogniser: no log line says why the buckets are off");
    if (with && without) {
        lector_result *ra = NULL, *rb = NULL;
        lector_error ea, eb;
        lector_status sa = lector_read_file(with, image, NULL, &ra, &ea),
                      sb = lector_read_file(without, image, NULL, &rb, &eb);
        CHECK(sa == sb && (!sa || !strcmp(ea.message, eb.message)), "an uncovered recogniser: %s (%s) against %s (%s)",
              lector_status_str(sa), sa ? ea.message : "", lector_status_str(sb), sb ? eb.message : "");
        lector_result_free(ra);
        lector_result_free(rb);
    }
    lector_engine_free(with);
    lector_engine_free(without);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODELS_DIR IMAGE...\n", argv[0]);
        return 2;
    }
    /* 64: a bucket a GPU would use; 1024: every line of the page in one bucket, so that the
     * batches fill (on the CPU a batch runs only when full) and a line sits beside lines up
     * to three times its width */
    const int buckets[] = {64, 1024};
    lector_engine *own = engine(argv[1], 0, 1);
    if (!own) return 1;
    for (size_t b = 0; b < sizeof buckets / sizeof *buckets; b++) {
        lector_engine *bk = engine(argv[1], buckets[b], 1);
        if (!bk) return 1;
        int lines = 0;
        for (int f = 2; f < argc; f++) {
            lector_result *ra = NULL, *rb = NULL;
            lector_error err;
            if (lector_read_file(own, argv[f], NULL, &ra, &err) || lector_read_file(bk, argv[f], NULL, &rb, &err)) {
                fprintf(stderr, "%s\n", err.message);
                return 1;
            }
            const lector_page *pa = &ra->pages[0], *pb = &rb->pages[0];
            CHECK(pa->n_lines == pb->n_lines, "%s, bucket %d: %zu lines, %zu at own widths", argv[f], buckets[b],
                  pb->n_lines, pa->n_lines);
            for (size_t i = 0; i < pa->n_lines && i < pb->n_lines; i++, lines++) {
                const lector_line *la = &pa->lines[i], *lb = &pb->lines[i];
                CHECK(!strcmp(la->text, lb->text), "%s line %zu, bucket %d: '%s', alone '%s'", argv[f], i, buckets[b],
                      lb->text, la->text);
                CHECK(fabsf(la->score - lb->score) <= 1e-4f, "%s line %zu, bucket %d: score %f, alone %f", argv[f], i,
                      buckets[b], lb->score, la->score);
                CHECK(!memcmp(la->box, lb->box, sizeof la->box), "%s line %zu, bucket %d: box moved", argv[f], i,
                      buckets[b]);
            }
            lector_result_free(ra);
            lector_result_free(rb);
        }
        lector_engine_stats sa, sb;
        lector_engine_get_stats(own, &sa);
        lector_engine_get_stats(bk, &sb);
        /* own has read the files once per bucket so far */
        double runs_own = (double)sa.rec.runs / (double)(b + 1);
        printf("bucket %d: %d lines, %llu rec runs against %.0f at own widths\n", buckets[b], lines,
               (unsigned long long)sb.rec.runs, runs_own);
        if (buckets[b] == 1024)
            CHECK((double)sb.rec.runs < runs_own, "bucket %d: %llu rec runs, not fewer than %.0f", buckets[b],
                  (unsigned long long)sb.rec.runs, runs_own);
        lector_engine_free(bk);
    }
    lector_engine_free(own);
    uncovered_recogniser(argv[1], argv[2]);
    return soft_check_exit("ocr.width_bucket");
}
