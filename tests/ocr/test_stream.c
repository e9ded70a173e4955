/*
 * test_stream.c - the pipelined driver (lector_stream_*, lector.h):
 *
 *   order     results come back in push order, a file that cannot be read
 *             and corrupt bytes each with their own error in their place,
 *             every other result equal to lector_read_file of that file
 *             alone; never more than max_inputs undelivered inputs
 *   lines     a line's text depends on that line only: every page read in
 *             one stream of several pages with rec_batch_num 6 (batches
 *             mixing lines of different pages) equals the page read with
 *             rec_batch_num 1 (each line recognised alone)
 *   compile   after a warm-up, pages of random sizes compile no kernel
 *             (lector_engine_get_stats): pages scaled to the detection
 *             limit hit sizes the warm-up compiled, smaller pages and lines
 *             of other widths run on kernels that take sizes as arguments
 *
 * usage: test_stream MODELS_DIR TMPDIR IMAGE... (exit 77 when an image is missing)
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image/image.h"
#include "../soft_check.h"
#include "lector.h"

static int same(const lector_result *a, const lector_result *b)
{
    if (!a || !b || a->n_pages != b->n_pages) return 0;
    for (size_t p = 0; p < a->n_pages; p++) {
        const lector_page *x = &a->pages[p], *y = &b->pages[p];
        if (x->width != y->width || x->height != y->height || x->n_lines != y->n_lines) return 0;
        for (size_t i = 0; i < x->n_lines; i++)
            if (strcmp(x->lines[i].text, y->lines[i].text) || x->lines[i].score != y->lines[i].score ||
                memcmp(x->lines[i].box, y->lines[i].box, sizeof x->lines[i].box))
                return 0;
    }
    return 1;
}

static size_t lines_of(const lector_result *r)
{
    size_t n = 0;
    for (size_t p = 0; r && p < r->n_pages; p++) n += r->pages[p].n_lines;
    return n;
}

/* ---- deliveries ------------------------------------------------------------------ */

#define MAXIN 64

typedef struct got {
    size_t order[MAXIN]; /* index of the k-th delivery */
    lector_status st[MAXIN];
    lector_result *res[MAXIN];
    atomic_size_t delivered;
} got;

static void on_item(const lector_stream_item *it, void *user)
{
    got *g = user;
    size_t k = atomic_load(&g->delivered);
    if (k < MAXIN && it->index < MAXIN) {
        g->order[k] = it->index;
        g->st[it->index] = it->status;
        g->res[it->index] = it->result;
    } else {
        lector_result_free(it->result);
    }
    atomic_fetch_add(&g->delivered, 1);
}

static void got_free(got *g, size_t n)
{
    for (size_t i = 0; i < n && i < MAXIN; i++) lector_result_free(g->res[i]);
}

static lector_engine *engine(const char *models, int rec_batch, int workers)
{
    lector_params p = lector_default_params();
    p.models_dir = models;
    p.threads = 1;
    p.rec_batch_num = rec_batch;
    p.workers = workers;
    lector_engine *e = NULL;
    lector_error err;
    if (lector_engine_create(&p, &e, &err)) {
        fprintf(stderr, "engine: %s\n", err.message);
        exit(1);
    }
    return e;
}

/* ---- order, errors, back-pressure -------------------------------------------------- */

static void test_order(const char *models, const char *tmp, char **imgs, int n_img)
{
    lector_engine *e = engine(models, 6, 2);
    char corrupt[1024];
    snprintf(corrupt, sizeof corrupt, "%s/corrupt.jpg", tmp);
    FILE *f = fopen(corrupt, "wb");
    static const char garbage[] = "\xff\xd8\xff\xe0 not a jpeg at all"; /* a JPEG's magic, then garbage */
    fwrite(garbage, 1, sizeof garbage - 1, f);
    fclose(f);
    const char *in[8];
    int n = 0;
    in[n++] = imgs[0];
    in[n++] = "/nonexistent/page.jpg";
    in[n++] = corrupt;
    for (int i = 1; i < n_img && n < 7; i++) in[n++] = imgs[i];
    in[n++] = imgs[0];
    got g;
    memset(&g, 0, sizeof g);
    lector_stream_options so = lector_default_stream_options();
    so.max_inputs = 2;
    lector_stream *s;
    lector_error err;
    if (lector_stream_create(e, &so, on_item, &g, &s, &err)) {
        fprintf(stderr, "FAIL: stream: %s\n", err.message);
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        CHECK(!lector_stream_push_file(s, in[i], NULL, &err), "push %s", in[i]);
        size_t undelivered = (size_t)(i + 1) - atomic_load(&g.delivered);
        CHECK(undelivered <= 2, "%zu inputs undelivered with max_inputs 2", undelivered);
    }
    CHECK(!lector_stream_finish(s, &err), "finish");
    CHECK(lector_stream_push_file(s, imgs[0], NULL, &err) == LECTOR_ERR_INVALID_ARGUMENT, "push after finish");
    lector_stream_free(s);
    CHECK(atomic_load(&g.delivered) == (size_t)n, "%zu of %d inputs delivered", atomic_load(&g.delivered), n);
    for (int i = 0; i < n; i++) CHECK(g.order[i] == (size_t)i, "delivery %d was input %zu", i, g.order[i]);
    CHECK(g.st[1] == LECTOR_ERR_IO, "a missing file: %s", lector_status_str(g.st[1]));
    CHECK(g.st[2] == LECTOR_ERR_IMAGE, "corrupt bytes: %s", lector_status_str(g.st[2]));
    for (int i = 0; i < n; i++) {
        if (i == 1 || i == 2) continue;
        lector_result *alone = NULL;
        CHECK(!lector_read_file(e, in[i], NULL, &alone, &err), "read %s", in[i]);
        CHECK(g.st[i] == LECTOR_OK && same(g.res[i], alone), "%s: the stream's result differs from a single read",
              in[i]);
        lector_result_free(alone);
    }
    printf("order: %d inputs delivered in order, 2 with their errors, max_inputs held\n", n);
    got_free(&g, (size_t)n);
    unlink(corrupt);
    lector_engine_free(e);
}

/* ---- per-line text --------------------------------------------------------------------- */

static void test_lines(const char *models, char **imgs, int n_img)
{
    lector_engine *alone = engine(models, 1, -1), *batched = engine(models, 6, 2);
    got g;
    memset(&g, 0, sizeof g);
    lector_stream *s;
    lector_error err;
    if (lector_stream_create(batched, NULL, on_item, &g, &s, &err)) exit(1);
    for (int i = 0; i < n_img; i++) lector_stream_push_file(s, imgs[i], NULL, &err);
    lector_stream_free(s);
    size_t lines = 0;
    for (int i = 0; i < n_img; i++) {
        lector_result *a = NULL;
        CHECK(!lector_read_file(alone, imgs[i], NULL, &a, &err), "read %s", imgs[i]);
        CHECK(same(a, g.res[i]), "%s: lines read in batches of 6 across pages differ from each line alone", imgs[i]);
        lines += lines_of(a);
        lector_result_free(a);
    }
    CHECK(lines > 50, "only %zu lines: the pages do not test batches", lines);
    printf("lines: %zu lines of %d pages, each equal alone and in batches across pages\n", lines, n_img);
    got_free(&g, (size_t)n_img);
    lector_engine_free(alone);
    lector_engine_free(batched);
}

/* ---- compile counters -------------------------------------------------------------------- */

/* 24-bit BMP of a BGR image (rows bottom-up, padded to 4 bytes). */
static int write_bmp(const char *path, const img_image *im)
{
    int row = (im->width * 3 + 3) & ~3;
    uint32_t size = 54 + (uint32_t)row * (uint32_t)im->height;
    uint8_t h[54] = {'B', 'M'};
    uint32_t v[] = {size, 0, 54, 40, (uint32_t)im->width, (uint32_t)im->height};
    memcpy(h + 2, &v[0], 4);
    memcpy(h + 10, &v[2], 4);
    memcpy(h + 14, &v[3], 4);
    memcpy(h + 18, &v[4], 4);
    memcpy(h + 22, &v[5], 4);
    h[26] = 1;
    h[28] = 24;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(h, 1, 54, f);
    uint8_t *buf = calloc((size_t)row, 1);
    for (int y = im->height - 1; y >= 0; y--) {
        memcpy(buf, im->data + (size_t)y * im->stride, (size_t)im->width * 3);
        fwrite(buf, 1, (size_t)row, f);
    }
    free(buf);
    return fclose(f);
}

/* `src` resized to w x h, written to tmp/name. */
static void resized(const img_image *src, int w, int h, const char *tmp, const char *name, char *path, size_t len)
{
    img_image r;
    lector_error err;
    snprintf(path, len, "%s/%s", tmp, name);
    if (img_resize(src, w, h, &r, &err) || write_bmp(path, &r)) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        exit(1);
    }
    img_release(&r);
}

static void test_compile(const char *models, const char *tmp, const char *page)
{
    img_pages pg;
    lector_error err;
    if (img_decode_file(page, NULL, &pg, &err)) {
        fprintf(stderr, "FAIL: %s\n", err.message);
        exit(1);
    }
    const img_image *src = &pg.pages[0];
    lector_engine *e = engine(models, 6, 2);
    /* warm-up: one page per detection size that portrait pages of width/height
     * in [0.5, 0.75] reach once scaled to 960 (widths 480 .. 736) */
    char path[40][1024];
    int n = 0;
    for (int dw = 480; dw <= 736; dw += 32, n++) {
        char name[64];
        snprintf(name, sizeof name, "warm_%d.bmp", dw);
        resized(src, dw * 1200 / 960, 1200, tmp, name, path[n], sizeof path[n]);
    }
    got g;
    memset(&g, 0, sizeof g);
    lector_stream *s;
    if (lector_stream_create(e, NULL, on_item, &g, &s, &err)) exit(1);
    for (int i = 0; i < n; i++) lector_stream_push_file(s, path[i], NULL, &err);
    lector_stream_free(s);
    for (int i = 0; i < n; i++) CHECK(g.st[i] == LECTOR_OK, "warm-up page %d: %s", i, lector_status_str(g.st[i]));
    got_free(&g, (size_t)n);
    lector_engine_stats a, b;
    lector_engine_get_stats(e, &a);
    /* pages of random sizes: large ones in the same range of shapes, small ones anywhere */
    uint64_t rng = 12345;
    int m = 0;
    for (int i = 0; i < 10; i++, m++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int h, w;
        if (i < 6) {
            h = 1000 + (int)((rng >> 33) % 1000);
            w = h / 2 + (int)((rng >> 20) % (uint64_t)(h / 4 - 8));
        } else {
            h = 200 + (int)((rng >> 33) % 700);
            w = 200 + (int)((rng >> 20) % 700);
        }
        char name[64];
        snprintf(name, sizeof name, "random_%dx%d.bmp", w, h);
        resized(src, w, h, tmp, name, path[m], sizeof path[m]);
    }
    memset(&g, 0, sizeof g);
    if (lector_stream_create(e, NULL, on_item, &g, &s, &err)) exit(1);
    for (int i = 0; i < m; i++) lector_stream_push_file(s, path[i], NULL, &err);
    lector_stream_free(s);
    size_t lines = 0;
    for (int i = 0; i < m; i++) {
        CHECK(g.st[i] == LECTOR_OK, "random page %d: %s", i, lector_status_str(g.st[i]));
        lines += lines_of(g.res[i]);
    }
    got_free(&g, (size_t)m);
    lector_engine_get_stats(e, &b);
    CHECK(lines > 100, "only %zu lines read from the random pages", lines);
    CHECK(b.kernels_compiled == a.kernels_compiled, "%llu kernels compiled after the warm-up",
          (unsigned long long)(b.kernels_compiled - a.kernels_compiled));
    printf("compile: warm-up %d pages compiled %llu plans, %llu kernels; %d pages of random sizes (%zu lines) then "
           "%llu plans (%llu on the generic kernels) and %llu kernels\n",
           n, (unsigned long long)a.plans_compiled, (unsigned long long)a.kernels_compiled, m, lines,
           (unsigned long long)(b.plans_compiled - a.plans_compiled),
           (unsigned long long)(b.det.plans_generic + b.rec.plans_generic - a.det.plans_generic - a.rec.plans_generic),
           (unsigned long long)(b.kernels_compiled - a.kernels_compiled));
    for (int i = 0; i < m; i++) unlink(path[i]);
    for (int dw = 480; dw <= 736; dw += 32) {
        char p[1024];
        snprintf(p, sizeof p, "%s/warm_%d.bmp", tmp, dw);
        unlink(p);
    }
    img_pages_free(&pg);
    lector_engine_free(e);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: test_stream MODELS_DIR TMPDIR IMAGE...\n");
        return 2;
    }
    for (int i = 3; i < argc; i++)
        if (access(argv[i], R_OK)) {
            printf("skipped: %s is missing\n", argv[i]);
            return 77;
        }
    const char *only = getenv("LECTOR_TEST_STREAM_PART");
    if (!only || !strcmp(only, "order")) test_order(argv[1], argv[2], argv + 3, argc - 3);
    if (!only || !strcmp(only, "lines")) test_lines(argv[1], argv + 3, argc - 3);
    if (!only || !strcmp(only, "compile")) test_compile(argv[1], argv[2], argv[3]);
    return soft_check_exit("stream");
}
