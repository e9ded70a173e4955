/*
 * decode_tiff.c - TIFF from memory through libtiff (TIFFClientOpenExt).
 *
 * Every directory (page) becomes one BGR image, decoded with
 * TIFFReadRGBAImageOriented (any photometric, bit depth, compression
 * libtiff supports; orientation top-left). The directory count is checked
 * against max_pages before any page is decoded, each page's size against
 * max_pixels / max_total_pixels before its raster exists. libtiff's
 * diagnostics go to per-handle handlers (libtiff >= 4.5): errors become the
 * message, warnings are dropped; nothing is printed.
 * The RGBA interface returns premultiplied alpha, so compositing on white is
 * c + 255 - a.
 */
#include <stdio.h>
#include <string.h>
#include <tiffio.h>

#include "image/decode_internal.h"
#include "util/util.h"

typedef struct {
    const uint8_t *data;
    size_t size;
    uint64_t pos;
} mem_src;

typedef struct {
    int has_error;
    const char *name;
    char msg[320];
} tiff_diag;

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t n)
{
    mem_src *s = h;
    if (n <= 0 || s->pos >= s->size) return 0;
    uint64_t left = s->size - s->pos;
    size_t k = (uint64_t)n < left ? (size_t)n : (size_t)left;
    memcpy(buf, s->data + s->pos, k);
    s->pos += k;
    return (tmsize_t)k;
}

static tmsize_t mem_write(thandle_t h, void *buf, tmsize_t n) { return -1; }

static toff_t mem_seek(thandle_t h, toff_t off, int whence)
{
    mem_src *s = h;
    uint64_t base = whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : 0;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return (toff_t)-1;
    if (off > UINT64_MAX / 2 || base + off > (uint64_t)INT64_MAX) return (toff_t)-1;
    s->pos = base + off;
    return s->pos;
}

static int mem_close(thandle_t h) { return 0; }
static toff_t mem_size(thandle_t h) { return ((mem_src *)h)->size; }
static int mem_map(thandle_t h, void **base, toff_t *size) { return 0; }
static void mem_unmap(thandle_t h, void *base, toff_t size) {}

static int on_error(TIFF *t, void *ud, const char *module, const char *fmt, va_list ap)
{
    tiff_diag *d = ud;
    if (!d->has_error) {
        char buf[sizeof d->msg];
        vsnprintf(buf, sizeof buf, fmt, ap);
        /* libtiff starts many messages with the file name we already print */
        size_t n = strlen(d->name);
        const char *m = (!strncmp(buf, d->name, n) && !strncmp(buf + n, ": ", 2)) ? buf + n + 2 : buf;
        snprintf(d->msg, sizeof d->msg, "%s", m);
        d->has_error = 1;
    }
    return 1;
}

static int on_warning(TIFF *t, void *ud, const char *module, const char *fmt, va_list ap) { return 1; }

static lector_status tiff_fail(lector_error *err, lector_status code, const char *name, int page, const char *what,
                               const tiff_diag *diag)
{
    return lector__error(err, code, "%s: TIFF page %d: %s%s%s", name, page + 1, what, diag->has_error ? ": " : "",
                         diag->has_error ? diag->msg : "");
}

/* Opens the TIFF in memory at src with the decoder's diagnostics in diag
 * and max_alloc as libtiff's largest single allocation. */
static lector_status tiff_open(mem_src *src, tiff_diag *diag, const char *name, uint64_t max_alloc, TIFF **tif,
                               lector_error *err)
{
    TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
    if (!opts) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: cannot create a TIFF decoder", name);
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts, (tmsize_t)max_alloc);
    TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, diag);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, diag);
    *tif = TIFFClientOpenExt(name, "rm", (thandle_t)src, mem_read, mem_write, mem_seek, mem_close, mem_size, mem_map,
                             mem_unmap, opts);
    TIFFOpenOptionsFree(opts);
    if (!*tif)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: invalid TIFF: %s", name,
                             diag->has_error ? diag->msg : "cannot open");
    return LECTOR_OK;
}

lector_status img_decode_tiff(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                              img_pages *out, lector_error *err)
{
    mem_src src = {data, size, 0};
    tiff_diag diag;
    memset(&diag, 0, sizeof(diag));
    diag.name = name;
    lector_status st = LECTOR_OK;
    uint32_t *raster = NULL;
    uint64_t cap = limits->max_pixels * 8;
    if (cap < ((uint64_t)64 << 20)) cap = (uint64_t)64 << 20;
    if (cap > (uint64_t)INT64_MAX) cap = (uint64_t)INT64_MAX;
    TIFF *tif;
    st = tiff_open(&src, &diag, name, cap, &tif, err);
    if (st) return st;

    tdir_t ndirs = TIFFNumberOfDirectories(tif);
    if (ndirs > (tdir_t)limits->max_pages) {
        st = lector__error(err, LECTOR_ERR_LIMIT, "%s: TIFF has %u pages, over the limit of %d pages (max_pages)", name,
                           (unsigned)ndirs, limits->max_pages);
        goto done;
    }
    if (ndirs == 0) ndirs = 1;
    /* every page's size against the limits before any page is decoded: the
     * directories are only headers, a page's raster is what costs */
    uint64_t total = 0;
    for (tdir_t dir = 0; dir < ndirs; dir++) {
        diag.has_error = 0;
        if (!TIFFSetDirectory(tif, dir)) {
            st = tiff_fail(err, LECTOR_ERR_IMAGE, name, (int)dir, "cannot read the directory", &diag);
            goto done;
        }
        uint32_t w = 0, h = 0;
        TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
        char what[48];
        if (ndirs > 1)
            snprintf(what, sizeof what, "TIFF page %u of %u", (unsigned)dir + 1, (unsigned)ndirs);
        else
            snprintf(what, sizeof what, "TIFF");
        if ((st = img_check_dims(w, h, name, what, limits, &total, err)) != LECTOR_OK) goto done;
    }
    diag.has_error = 0;
    if (!TIFFSetDirectory(tif, 0)) {
        st = tiff_fail(err, LECTOR_ERR_IMAGE, name, 0, "cannot read the directory", &diag);
        goto done;
    }
    out->pages = lector__calloc(ndirs, sizeof(img_image));
    if (!out->pages) {
        st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        goto done;
    }
    for (int page = 0;; page++) {
        if (page >= (int)ndirs) { /* more directories than counted: a loop libtiff missed */
            st = lector__error(err, LECTOR_ERR_IMAGE, "%s: TIFF directory chain is inconsistent", name);
            goto done;
        }
        uint32_t w = 0, h = 0;
        TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
        if ((uint64_t)w * h == 0 || (uint64_t)w * h > limits->max_pixels) { /* checked above; the chain must agree */
            st = lector__error(err, LECTOR_ERR_IMAGE, "%s: TIFF directory chain is inconsistent", name);
            goto done;
        }
        char emsg[1024];
        if (!TIFFRGBAImageOK(tif, emsg)) {
            st = lector__error(err, LECTOR_ERR_IMAGE, "%s: TIFF page %d: %s", name, page + 1, emsg);
            goto done;
        }
        raster = lector__malloc((size_t)w * h * 4);
        if (!raster) {
            st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory for TIFF page %d (%ux%u)", name,
                               page + 1, (unsigned)w, (unsigned)h);
            goto done;
        }
        diag.has_error = 0;
        if (!TIFFReadRGBAImageOriented(tif, w, h, raster, ORIENTATION_TOPLEFT, 1)) {
            st = tiff_fail(err, LECTOR_ERR_IMAGE, name, page, "corrupt image data", &diag);
            goto done;
        }
        img_image *img = &out->pages[page];
        st = img_alloc(img, (int)w, (int)h, 3, err);
        if (st != LECTOR_OK) {
            lector__error_prefix(err, "%s", name);
            goto done;
        }
        out->count = page + 1;
        /* TIFFRGBA packs A<<24|B<<16|G<<8|R; rewrite each as bytes R,G,B,A. */
        for (size_t i = 0; i < (size_t)w * h; i++) {
            uint32_t p = raster[i];
            uint8_t *q = (uint8_t *)&raster[i];
            q[0] = (uint8_t)TIFFGetR(p), q[1] = (uint8_t)TIFFGetG(p), q[2] = (uint8_t)TIFFGetB(p),
            q[3] = (uint8_t)TIFFGetA(p);
        }
        img_composite(img, (const uint8_t *)raster, (size_t)w * 4, 0, 1);
        lector__free(raster);
        raster = NULL;
        diag.has_error = 0;
        if (!TIFFReadDirectory(tif)) {
            if (diag.has_error) {
                st = tiff_fail(err, LECTOR_ERR_IMAGE, name, page + 1, "invalid directory", &diag);
                goto done;
            }
            break;
        }
    }
done:
    lector__free(raster);
    TIFFClose(tif);
    if (st != LECTOR_OK) img_pages_free(out);
    return st;
}

lector_status lector__tiff_probe(const uint8_t *data, size_t size, const char *name, int *pages, uint64_t *width,
                                 uint64_t *height, uint64_t *max_page, uint64_t *total, lector_error *err)
{
    mem_src src = {data, size, 0};
    tiff_diag diag;
    memset(&diag, 0, sizeof(diag));
    diag.name = name;
    *pages = 0;
    *width = *height = *max_page = *total = 0;
    TIFF *tif;
    lector_status st = tiff_open(&src, &diag, name, (uint64_t)64 << 20, &tif, err);
    if (st) return st;
    tdir_t ndirs = TIFFNumberOfDirectories(tif);
    if (ndirs == 0) ndirs = 1;
    for (tdir_t dir = 0; dir < ndirs; dir++) {
        diag.has_error = 0;
        if (!TIFFSetDirectory(tif, dir)) {
            st = tiff_fail(err, LECTOR_ERR_IMAGE, name, (int)dir, "cannot read the directory", &diag);
            break;
        }
        uint32_t w = 0, h = 0;
        TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
        uint64_t px = (uint64_t)w * h;
        if (dir == 0) *width = w, *height = h;
        if (px > *max_page) *max_page = px;
        *total += px;
        *pages = (int)dir + 1;
    }
    TIFFClose(tif);
    return st;
}
