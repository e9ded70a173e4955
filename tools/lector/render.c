/* render.c - see render.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "util/utf8.h"
#include "util/util.h"

static const char *const format_names[RENDER_N_FORMATS] = {"txt", "json", "tsv", "hocr"};

const char *render_format_name(render_format f) { return (unsigned)f < RENDER_N_FORMATS ? format_names[f] : "?"; }

int render_format_parse(const char *s, render_format *out)
{
    for (int f = 0; f < RENDER_N_FORMATS; f++)
        if (!strcmp(s, format_names[f])) {
            *out = (render_format)f;
            return 0;
        }
    return -1;
}

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

/* Without "timings_ms" (per-input files): the document of lector_result_json
 * less that member. Its text is the renderer's: "timings_ms" is the member
 * before "error" and holds numbers only, and no string value can hold the
 * key's quotes unescaped, so its last occurrence starts the member and the
 * next '}' ends it. */
static void drop_timings(char *s)
{
    const char *key = ",\"timings_ms\":{";
    char *at = NULL;
    for (char *p = strstr(s, key); p; p = strstr(p + 1, key)) at = p;
    char *end = at ? strchr(at, '}') : NULL;
    if (end) memmove(at, end + 1, strlen(end + 1) + 1);
}

static void write_json(FILE *out, const char *file, const lector_result *r, const char *error, int with_timings)
{
    char *s = lector_result_json(r, file, error);
    if (s && !with_timings) drop_timings(s);
    if (s) fprintf(out, "%s\n", s);
    free(s);
}

/* s as valid UTF-8: itself, or a repaired copy in *tmp (lector__free it);
 * the outputs are UTF-8 whatever bytes a name holds (util/utf8.h) */
static const char *as_utf8(const char *s, char **tmp)
{
    *tmp = NULL;
    if (lector__utf8_valid(s)) return s;
    *tmp = lector__utf8_repair(s, NULL);
    return *tmp ? *tmp : "\xEF\xBF\xBD";
}

static void tsv_text(FILE *out, const char *s)
{
    char *tmp;
    for (s = as_utf8(s, &tmp); *s; s++) fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, out);
    lector__free(tmp);
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

/* XML 1.0 text: valid UTF-8, markup escaped, and no C0 control other than
 * tab, newline and carriage return (those are not XML characters at all) */
static void xml_text(FILE *out, const char *s)
{
    char *tmp;
    for (s = as_utf8(s, &tmp); *s; s++) {
        if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n' && *s != '\r') {
            fputs("\xEF\xBF\xBD", out);
            continue;
        }
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
    lector__free(tmp);
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

void render_stream_begin(render_stream *s, FILE *out, render_format format, int with_timings)
{
    *s = (render_stream){out, format, with_timings, 0, 0, 0};
    if (format == RENDER_HOCR) hocr_begin(out);
}

void render_stream_result(render_stream *s, const char *name, const lector_result *r)
{
    switch (s->format) {
    case RENDER_TXT: write_txt(s->out, r, s->inputs == 0); break;
    case RENDER_JSON: write_json(s->out, name, r, NULL, s->with_timings); break;
    case RENDER_TSV: write_tsv(s->out, r, s->page_base, s->page_base == 0); break;
    case RENDER_HOCR: write_hocr_pages(s->out, name, r, &s->page_no); break;
    default: break;
    }
    s->page_base += (int)r->n_pages;
    s->inputs++;
}

void render_stream_error(render_stream *s, const char *name, const char *error)
{
    if (s->format == RENDER_JSON) write_json(s->out, name, NULL, error, s->with_timings);
    s->inputs++;
}

void render_stream_end(render_stream *s)
{
    if (s->format == RENDER_HOCR) fprintf(s->out, "</body>\n</html>\n");
}

void render_single(FILE *out, render_format format, const char *name, const lector_result *r)
{
    render_stream s;
    render_stream_begin(&s, out, format, 0);
    render_stream_result(&s, name, r);
    render_stream_end(&s);
}
