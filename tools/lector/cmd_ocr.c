/*
 * lector [options] IMAGE...   - OCR, Tesseract-style habits:
 * many files through one engine, `-` for stdin, several output formats,
 * other files go on when one fails, exit 1 if any failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lector.h"

typedef enum { FMT_TXT, FMT_JSON, FMT_TSV, FMT_HOCR } out_format;

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: lector [options] IMAGE...      (IMAGE '-' reads standard input)\n"
        "output:\n"
        "  -f, --format txt|json|tsv|hocr   txt: lines in reading order (default); json: one JSON\n"
        "                                   object per input (JSON Lines); tsv: Tesseract-style\n"
        "                                   line-level TSV; hocr: hOCR XHTML\n"
        "  -o, --output FILE                write there instead of standard output\n"
        "  -q, --quiet                      no progress or timing lines on stderr\n"
        "  --draw OUT.png                   also draw the boxes, their numbers and the text\n"
        "                                   (several inputs: OUT.png, OUT-2.png, ...)\n"
        "engine:\n"
        "  --models DIR                     models directory (default: LECTOR_MODELS, else ../models\n"
        "                                   or ../share/lector/models beside the binary, else the\n"
        "                                   source tree's models/; `lector models` shows which)\n"
        "  --det-model F --rec-model F --cls-model F --rec-dict F   override one file\n"
        "  --device cpu|auto|cuda[:N]       auto: the GPU when usable, else the CPU (says why);\n"
        "                                   cuda: the GPU or an error saying why not\n"
        "  --gpu-mem-limit SIZE             GPU memory cap: bytes (8G, 512M) or a share (0.5, 50%%)\n"
        "  --fp16                           recognition and classifier in half precision (GPU)\n"
        "  --fp16-det                       detection in half precision too (moves some boxes)\n"
        "  --fp16-recheck F                 with --fp16: lines scoring below F (0.9) recognised again in fp32; 0: off\n"
        "  --threads N                      threads per inference (default 1 on the CPU, where the\n"
        "                                   workers run pages and lines in parallel instead)\n"
        "  --workers N                      threads running pages and lines at once (default: the\n"
        "                                   physical cores / --threads on the CPU, 2 per core up to\n"
        "                                   16 on a GPU)\n"
        "  --backend cpu|ref                CPU backend (ref = plain-C reference kernels)\n"
        "detection (PaddleOCR defaults):\n"
        "  --det-limit-side-len N (960) --det-limit-type max|min (max) --det-db-thresh F (0.3)\n"
        "  --det-db-box-thresh F (0.6) --det-db-unclip-ratio F (1.5) --det-db-score-mode fast|slow\n"
        "  --use-dilation --det-max-candidates N (1000) --det-min-size N (3)\n"
        "  --det-mean B,G,R (0.485,0.456,0.406) --det-std B,G,R (0.229,0.224,0.225)\n"
        "  --no-det                         no detection: the whole image is one text line\n"
        "classification / recognition:\n"
        "  --use-angle-cls --cls-thresh F (0.9) --cls-batch-num N (6)\n"
        "  --rec-batch-num N (6, at most 64) --rec-image-height N (48) --rec-image-width N (320)\n"
        "  --drop-score F (0.5) --no-space-char\n"
        "limits:\n"
        "  --max-pixels N (100000000) --max-file-size BYTES (268435456) --max-pages N (1000)\n"
        "other commands: lector serve | models | run-model | bench | doctor | explain | --help | --version\n");
}

static int parse_int(const char *s, const char *opt, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < -2147483647L || v > 2147483647L) {
        fprintf(stderr, "lector: %s expects an integer, got '%s'\n", opt, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_float(const char *s, const char *opt, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s) {
        fprintf(stderr, "lector: %s expects a number, got '%s'\n", opt, s);
        return -1;
    }
    *out = (float)v;
    return 0;
}

/* ---- output writers ----------------------------------------------------------- */

static void write_txt(FILE *out, const lector_result *r, int first)
{
    if (!first) fputc('\f', out); /* Tesseract separates pages with a form feed */
    for (size_t p = 0; p < r->n_pages; p++) {
        if (p) fputc('\f', out);
        for (size_t i = 0; i < r->pages[p].n_lines; i++) fprintf(out, "%s\n", r->pages[p].lines[i].text);
    }
}

static void bbox_of(const lector_line *l, int *x0, int *y0, int *x1, int *y1)
{
    float a = l->box[0].x, b = l->box[0].y, c = a, d = b;
    for (int k = 1; k < 4; k++) {
        if (l->box[k].x < a) a = l->box[k].x;
        if (l->box[k].y < b) b = l->box[k].y;
        if (l->box[k].x > c) c = l->box[k].x;
        if (l->box[k].y > d) d = l->box[k].y;
    }
    *x0 = (int)a;
    *y0 = (int)b;
    *x1 = (int)c;
    *y1 = (int)d;
}

static void write_json(FILE *out, const char *file, const lector_result *r, const char *error)
{
    char *s = lector_result_json(r, file, error);
    if (s) fprintf(out, "%s\n", s);
    free(s);
}

static void tsv_text(FILE *out, const char *s)
{
    for (; *s; s++) fputc(*s == '\t' || *s == '\n' ? ' ' : *s, out);
}

/* Tesseract's TSV columns; level 1 = page, level 4 = line (with its text). */
static void write_tsv(FILE *out, const lector_result *r, int page_base, int header)
{
    if (header)
        fprintf(out, "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n");
    for (size_t p = 0; p < r->n_pages; p++) {
        const lector_page *pg = &r->pages[p];
        int pn = page_base + (int)p + 1;
        fprintf(out, "1\t%d\t0\t0\t0\t0\t0\t0\t%d\t%d\t-1\t\n", pn, pg->width, pg->height);
        for (size_t i = 0; i < pg->n_lines; i++) {
            int x0, y0, x1, y1;
            bbox_of(&pg->lines[i], &x0, &y0, &x1, &y1);
            fprintf(out, "4\t%d\t1\t1\t%zu\t0\t%d\t%d\t%d\t%d\t%.2f\t", pn, i + 1, x0, y0, x1 - x0, y1 - y0,
                    pg->lines[i].score * 100.0);
            tsv_text(out, pg->lines[i].text);
            fputc('\n', out);
        }
    }
}

static void xml_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

static void hocr_begin(FILE *out)
{
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\"\n"
            "    \"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n"
            "<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"en\" lang=\"en\">\n"
            "<head>\n<title></title>\n"
            "<meta http-equiv=\"Content-Type\" content=\"text/html;charset=utf-8\"/>\n"
            "<meta name=\"ocr-system\" content=\"lector %s\"/>\n"
            "<meta name=\"ocr-capabilities\" content=\"ocr_page ocr_carea ocr_par ocr_line\"/>\n"
            "</head>\n<body>\n",
            lector_version());
}

static void write_hocr_pages(FILE *out, const char *file, const lector_result *r, int *page_no)
{
    for (size_t p = 0; p < r->n_pages; p++) {
        const lector_page *pg = &r->pages[p];
        int pn = ++*page_no;
        fprintf(out, "<div class=\"ocr_page\" id=\"page_%d\" title=\"image &quot;", pn);
        xml_text(out, file);
        fprintf(out, "&quot;; bbox 0 0 %d %d; ppageno %zu\">\n", pg->width, pg->height, p);
        for (size_t i = 0; i < pg->n_lines; i++) {
            int x0, y0, x1, y1;
            bbox_of(&pg->lines[i], &x0, &y0, &x1, &y1);
            fprintf(out,
                    " <div class=\"ocr_carea\" id=\"block_%d_%zu\" title=\"bbox %d %d %d %d\">\n"
                    "  <p class=\"ocr_par\" id=\"par_%d_%zu\" title=\"bbox %d %d %d %d\">\n"
                    "   <span class=\"ocr_line\" id=\"line_%d_%zu\" title=\"bbox %d %d %d %d; x_wconf %d\">",
                    pn, i + 1, x0, y0, x1, y1, pn, i + 1, x0, y0, x1, y1, pn, i + 1, x0, y0, x1, y1,
                    (int)(pg->lines[i].score * 100 + 0.5f));
            xml_text(out, pg->lines[i].text);
            fprintf(out, "</span>\n  </p>\n </div>\n");
        }
        fprintf(out, "</div>\n");
    }
}

static unsigned char *read_stdin(size_t *n)
{
    size_t cap = 1 << 20, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (len == cap) {
            unsigned char *nb = cap > ((size_t)1 << 30) ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, stdin);
        len += got;
        if (got == 0) break;
    }
    *n = len;
    return buf;
}

/* What the stream's callback writes to, in input order. */
typedef struct ocr_out {
    lector_engine *eng;
    FILE *out;
    out_format fmt;
    const char *draw_path;
    int quiet, n_files;
    int failed, page_no, page_base;
} ocr_out;

static void on_result(const lector_stream_item *it, void *user)
{
    ocr_out *o = user;
    const char *name = it->name;
    const lector_result *r = it->result;
    free(it->user); /* standard input's bytes */
    if (it->status) {
        o->failed++;
        fprintf(stderr, "lector: %s (%s)\n", it->error->message, lector_status_str(it->status));
        if (o->fmt == FMT_JSON) write_json(o->out, name, NULL, it->error->message);
        return;
    }
    switch (o->fmt) {
    case FMT_TXT: write_txt(o->out, r, it->index == 0); break;
    case FMT_JSON: write_json(o->out, name, r, NULL); break;
    case FMT_TSV: write_tsv(o->out, r, o->page_base, o->page_base == 0); break;
    case FMT_HOCR: write_hocr_pages(o->out, name, r, &o->page_no); break;
    }
    if (o->draw_path && !it->user) {
        /* several inputs: OUT.png, OUT-2.png, ... */
        char path[4096];
        const char *dot = strrchr(o->draw_path, '.');
        if (it->index == 0 || !dot)
            snprintf(path, sizeof path, "%s", o->draw_path);
        else
            snprintf(path, sizeof path, "%.*s-%zu%s", (int)(dot - o->draw_path), o->draw_path, it->index + 1, dot);
        lector_error derr = {0};
        if (lector_draw_result(name, r, 0, path, &derr)) {
            fprintf(stderr, "lector: --draw: %s\n", derr.message);
            o->failed++;
        }
    }
    o->page_base += (int)r->n_pages;
    if (!o->quiet && o->n_files > 1)
        fprintf(stderr, "lector: %s: %zu page(s), %.1f ms\n", name, r->n_pages, r->timings.total_ms);
    lector_result_free(it->result);
    fflush(o->out);
}

int cmd_ocr(int argc, char **argv)
{
    lector_params p = lector_default_params();
    out_format fmt = FMT_TXT;
    const char *out_path = NULL, *draw_path = NULL, *mem_arg = NULL;
    int quiet = 0;
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int n_files = 0;
    if (!files) return 1;
#define NEXT() (i + 1 < argc ? argv[++i] : (fprintf(stderr, "lector: %s needs a value\n", a), (char *)NULL))
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-") || a[0] != '-') {
            files[n_files++] = a;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            free(files);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        }
        if (!strcmp(a, "--use-angle-cls") || !strcmp(a, "--cls")) {
            p.use_angle_cls = 1;
            continue;
        }
        if (!strcmp(a, "--use-dilation")) {
            p.det_use_dilation = 1;
            continue;
        }
        if (!strcmp(a, "--no-space-char")) {
            p.use_space_char = 0;
            continue;
        }
        if (!strcmp(a, "--no-det")) {
            p.use_det = 0;
            continue;
        }
        if (!strcmp(a, "--fp16")) {
            p.gpu_fp16 = 1;
            continue;
        }
        if (!strcmp(a, "--fp16-det")) {
            p.gpu_fp16 = p.gpu_fp16_det = 1;
            continue;
        }
        if (!(v = NEXT())) goto bad;
        int iv = 0;
        float fv = 0;
        if (!strcmp(a, "-f") || !strcmp(a, "--format")) {
            if (!strcmp(v, "txt"))
                fmt = FMT_TXT;
            else if (!strcmp(v, "json"))
                fmt = FMT_JSON;
            else if (!strcmp(v, "tsv"))
                fmt = FMT_TSV;
            else if (!strcmp(v, "hocr"))
                fmt = FMT_HOCR;
            else {
                fprintf(stderr, "lector: unknown format '%s' (txt, json, tsv, hocr)\n", v);
                goto bad;
            }
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            out_path = v;
        else if (!strcmp(a, "--draw"))
            draw_path = v;
        else if (!strcmp(a, "--models"))
            p.models_dir = v;
        else if (!strcmp(a, "--det-model"))
            p.det_model = v;
        else if (!strcmp(a, "--rec-model"))
            p.rec_model = v;
        else if (!strcmp(a, "--cls-model"))
            p.cls_model = v;
        else if (!strcmp(a, "--rec-dict"))
            p.rec_dict = v;
        else if (!strcmp(a, "--backend"))
            p.backend = v;
        else if (!strcmp(a, "--gpu-mem-limit"))
            mem_arg = v;
        else if (!strcmp(a, "--device")) {
            if (cli_parse_device("lector", v, &p)) goto bad;
        } else if (!strcmp(a, "--det-limit-type")) {
            if (!strcmp(v, "max"))
                p.det_limit_type = LECTOR_LIMIT_MAX;
            else if (!strcmp(v, "min"))
                p.det_limit_type = LECTOR_LIMIT_MIN;
            else {
                fprintf(stderr, "lector: --det-limit-type is max or min\n");
                goto bad;
            }
        } else if (!strcmp(a, "--det-mean") || !strcmp(a, "--det-std")) {
            float *dst = !strcmp(a, "--det-mean") ? p.det_mean : p.det_std;
            if (sscanf(v, "%f,%f,%f", &dst[0], &dst[1], &dst[2]) != 3) {
                fprintf(stderr, "lector: %s expects three numbers B,G,R, got '%s'\n", a, v);
                goto bad;
            }
        } else if (!strcmp(a, "--det-db-score-mode")) {
            if (!strcmp(v, "fast"))
                p.det_db_score_mode = LECTOR_SCORE_FAST;
            else if (!strcmp(v, "slow"))
                p.det_db_score_mode = LECTOR_SCORE_SLOW;
            else {
                fprintf(stderr, "lector: --det-db-score-mode is fast or slow\n");
                goto bad;
            }
        }
#define INT_OPT(name, field)                \
    else if (!strcmp(a, name))              \
    {                                       \
        if (parse_int(v, a, &iv)) goto bad; \
        p.field = iv;                       \
    }
#define FLT_OPT(name, field)                  \
    else if (!strcmp(a, name))                \
    {                                         \
        if (parse_float(v, a, &fv)) goto bad; \
        p.field = fv;                         \
    }
        INT_OPT("--threads", threads)
        INT_OPT("--workers", workers)
        INT_OPT("--det-limit-side-len", det_limit_side_len)
        INT_OPT("--det-max-candidates", det_max_candidates)
        INT_OPT("--det-min-size", det_min_size)
        INT_OPT("--cls-batch-num", cls_batch_num)
        INT_OPT("--rec-batch-num", rec_batch_num)
        INT_OPT("--rec-image-height", rec_image_height)
        INT_OPT("--rec-image-width", rec_image_width)
        INT_OPT("--max-pages", max_pages)
        FLT_OPT("--det-db-thresh", det_db_thresh)
        FLT_OPT("--fp16-recheck", gpu_fp16_recheck)
        FLT_OPT("--det-db-box-thresh", det_db_box_thresh)
        FLT_OPT("--det-db-unclip-ratio", det_db_unclip_ratio)
        FLT_OPT("--cls-thresh", cls_thresh)
        FLT_OPT("--drop-score", drop_score)
        else if (!strcmp(a, "--max-pixels")) p.max_pixels = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--max-file-size")) p.max_file_size = strtoll(v, NULL, 10);
        else
        {
            fprintf(stderr, "lector: unknown option %s (see lector --help)\n", a);
            goto bad;
        }
#undef INT_OPT
#undef FLT_OPT
    }
#undef NEXT
    if (n_files == 0) {
        usage(stderr);
        goto bad;
    }
    if (mem_arg && cli_parse_gpu_mem(mem_arg, p.device_id, &p.gpu_mem_limit)) goto bad;
    lector_error err = {0};
    lector_engine *eng = NULL;
    if (lector_engine_create(&p, &eng, &err)) {
        fprintf(stderr, "lector: %s (%s)\n", err.message, lector_status_str(err.code));
        free(files);
        return 1;
    }
    if (p.device != LECTOR_DEVICE_CPU && !quiet)
        fprintf(stderr, "lector: device: %s%s%s%s\n", lector_engine_device(eng),
                *lector_engine_fallback_reason(eng) ? " [auto: " : "", lector_engine_fallback_reason(eng),
                *lector_engine_fallback_reason(eng) ? "]" : "");
    FILE *out = stdout;
    if (out_path && !(out = fopen(out_path, "w"))) {
        fprintf(stderr, "lector: cannot write %s: %s\n", out_path, strerror(errno));
        lector_engine_free(eng);
        free(files);
        return 1;
    }
    ocr_out o = {eng, out, fmt, draw_path, quiet, n_files, 0, 0, 0};
    if (fmt == FMT_HOCR) hocr_begin(out);
    /* every input through one stream: pages read in parallel, written in order as each is done */
    lector_stream_options so = lector_default_stream_options();
    lector_stream *s = NULL;
    if (lector_stream_create(eng, &so, on_result, &o, &s, &err)) {
        fprintf(stderr, "lector: %s (%s)\n", err.message, lector_status_str(err.code));
        o.failed = 1;
        n_files = 0;
    }
    for (int f = 0; f < n_files; f++) {
        const char *name = files[f];
        lector_status st;
        if (!strcmp(name, "-")) {
            size_t n = 0;
            unsigned char *buf = read_stdin(&n);
            if (!buf) { /* delivered in its place, as an input that cannot be read */
                st = lector_stream_push_memory(s, "", 0, "<stdin>: cannot read standard input", NULL, &err);
            } else {
                st = lector_stream_push_memory(s, buf, n, "<stdin>", buf, &err); /* freed by on_result */
                if (st) free(buf);
            }
        } else {
            st = lector_stream_push_file(s, name, NULL, &err);
        }
        if (st) {
            fprintf(stderr, "lector: %s (%s)\n", err.message, lector_status_str(st));
            o.failed++;
        }
    }
    lector_stream_free(s);
    if (fmt == FMT_HOCR) fprintf(out, "</body>\n</html>\n");
    if (out != stdout) fclose(out);
    lector_engine_free(eng);
    free(files);
    return o.failed ? 1 : 0;
bad:
    free(files);
    return 2;
}
