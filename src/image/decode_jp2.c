/*
 * decode_jp2.c - JPEG 2000, in its JP2 file format and as a bare codestream
 * (J2K), through OpenJPEG (libopenjp2, BSD-2-Clause; OpenCV's own reader
 * uses it). Archives keep scans in JPEG 2000 (libraries' digitised books,
 * PDF's JPXDecode images), and cv2.imread, so PaddleOCR, reads it.
 *
 * The pixels are those cv2.imread(path, IMREAD_COLOR) gives (OpenCV's
 * modules/imgcodecs/src/grfmt_jpeg2000_openjpeg.cpp): samples shifted right
 * by (the largest component precision - 8) when that is over 8; three or
 * more components in an sRGB, unknown or unspecified colour space are R, G,
 * B; a grey image's one component goes to all three. Where Lector departs
 * from OpenCV: a component the file marks as alpha is composited on white as
 * every other format's alpha is (docs/IMAGES.md; OpenCV drops it); a grey codestream without a colour space is read as grey
 * (OpenCV refuses it); precisions under 8 bits are scaled to 8 (a bilevel
 * image's 1 is white; OpenCV refuses them). Signed or subsampled components,
 * sYCC, e-YCC and CMYK are refused with a message.
 *
 * The header is read first and its size checked against the limits before
 * OpenJPEG decodes a sample; OpenJPEG's own messages become the error.
 */
#include <openjpeg.h>
#include <stdio.h>
#include <string.h>

#include "image/decode_internal.h"
#include "util/util.h"

typedef struct {
    const uint8_t *d;
    size_t n, pos;
} jp2_in;

static OPJ_SIZE_T jp2_read(void *buf, OPJ_SIZE_T count, void *user)
{
    jp2_in *s = user;
    size_t left = s->n - s->pos;
    if (!left) return (OPJ_SIZE_T)-1;
    if (count > left) count = left;
    memcpy(buf, s->d + s->pos, count);
    s->pos += count;
    return count;
}

static OPJ_OFF_T jp2_skip(OPJ_OFF_T count, void *user)
{
    jp2_in *s = user;
    size_t left = s->n - s->pos;
    if (count < 0 || !left) return -1;
    if ((uint64_t)count > left) count = (OPJ_OFF_T)left;
    s->pos += (size_t)count;
    return count;
}

static OPJ_BOOL jp2_seek(OPJ_OFF_T to, void *user)
{
    jp2_in *s = user;
    if (to < 0 || (uint64_t)to > s->n) return OPJ_FALSE;
    s->pos = (size_t)to;
    return OPJ_TRUE;
}

/* OpenJPEG's last error, kept for the message (it never prints). */
static void jp2_error(const char *msg, void *user)
{
    char *last = user;
    snprintf(last, 256, "%s", msg);
    size_t n = strlen(last);
    while (n && (last[n - 1] == '\n' || last[n - 1] == '\r')) last[--n] = 0;
}

static void jp2_quiet(const char *msg, void *user)
{
    (void)msg;
    (void)user;
}

int img_jp2_kind(const uint8_t *d, size_t n)
{
    static const uint8_t jp2[12] = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 13, 10, 0x87, 10};
    if (n >= sizeof jp2 && !memcmp(d, jp2, sizeof jp2)) return 1;
    if (n >= 4 && d[0] == 0xFF && d[1] == 0x4F && d[2] == 0xFF && d[3] == 0x51) return 2;
    return 0;
}

/* The decoder with its stream, after the header: the caller destroys all three. */
typedef struct {
    jp2_in in;
    opj_stream_t *stream;
    opj_codec_t *codec;
    opj_image_t *image;
    char last[256];
} jp2_dec;

static void jp2_close(jp2_dec *j)
{
    if (j->image) opj_image_destroy(j->image);
    if (j->codec) opj_destroy_codec(j->codec);
    if (j->stream) opj_stream_destroy(j->stream);
}

static lector_status jp2_open(jp2_dec *j, const uint8_t *d, size_t n, const char *name, lector_error *err)
{
    memset(j, 0, sizeof *j);
    j->in = (jp2_in){d, n, 0};
    int kind = img_jp2_kind(d, n);
    j->stream = opj_stream_default_create(OPJ_TRUE);
    j->codec = opj_create_decompress(kind == 1 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
    if (!j->stream || !j->codec) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    opj_stream_set_user_data(j->stream, &j->in, NULL);
    opj_stream_set_user_data_length(j->stream, n);
    opj_stream_set_read_function(j->stream, jp2_read);
    opj_stream_set_skip_function(j->stream, jp2_skip);
    opj_stream_set_seek_function(j->stream, jp2_seek);
    opj_set_error_handler(j->codec, jp2_error, j->last);
    opj_set_warning_handler(j->codec, jp2_quiet, NULL);
    opj_set_info_handler(j->codec, jp2_quiet, NULL);
    opj_dparameters_t p;
    opj_set_default_decoder_parameters(&p);
    if (!opj_setup_decoder(j->codec, &p) || !opj_read_header(j->stream, j->codec, &j->image) || !j->image)
        return lector__error(err, LECTOR_ERR_IMAGE, "%s: invalid JPEG 2000 header%s%s", name, j->last[0] ? ": " : "",
                             j->last);
    return LECTOR_OK;
}

lector_status img_jp2_size(const uint8_t *d, size_t n, const char *name, uint64_t *width, uint64_t *height,
                           int *components, lector_error *err)
{
    jp2_dec j;
    lector_status st = jp2_open(&j, d, n, name, err);
    if (!st) {
        *width = j.image->x1 > j.image->x0 ? j.image->x1 - j.image->x0 : 0;
        *height = j.image->y1 > j.image->y0 ? j.image->y1 - j.image->y0 : 0;
        *components = (int)j.image->numcomps;
    }
    jp2_close(&j);
    return st;
}

/* What the header says that Lector does not read: NULL when it reads it. */
static const char *unsupported(const opj_image_t *im)
{
    if (im->numcomps < 1 || im->numcomps > 4) return "a number of components other than 1 to 4";
    switch (im->color_space) {
    case OPJ_CLRSPC_SYCC: return "the sYCC colour space";
    case OPJ_CLRSPC_EYCC: return "the e-YCC colour space";
    case OPJ_CLRSPC_CMYK: return "the CMYK colour space";
    default: break;
    }
    for (OPJ_UINT32 c = 0; c < im->numcomps; c++) {
        const opj_image_comp_t *k = &im->comps[c];
        if (k->sgnd) return "signed samples";
        if (k->dx != 1 || k->dy != 1) return "subsampled components";
        if (k->prec < 1 || k->prec > 31) return "a sample precision other than 1 to 31 bits";
    }
    return NULL;
}

lector_status img_decode_jp2(const uint8_t *d, size_t n, const char *name, const img_limits *limits, img_image *out,
                             lector_error *err)
{
    jp2_dec j;
    lector_status st = jp2_open(&j, d, n, name, err);
    opj_image_t *im = j.image;
    uint64_t w = 0, h = 0;
    if (!st) {
        w = im->x1 > im->x0 ? im->x1 - im->x0 : 0;
        h = im->y1 > im->y0 ? im->y1 - im->y0 : 0;
        st = img_check_dims(w, h, name, "JPEG 2000", limits, NULL, err);
    }
    const char *why = st ? NULL : unsupported(im);
    if (why) st = lector__error(err, LECTOR_ERR_IMAGE, "%s: JPEG 2000 with %s is not supported", name, why);
    if (!st && (!opj_decode(j.codec, j.stream, im) || !opj_end_decompress(j.codec, j.stream)))
        st = lector__error(err, LECTOR_ERR_IMAGE, "%s: JPEG 2000 data cannot be decoded%s%s", name,
                           j.last[0] ? ": " : "", j.last);
    OPJ_UINT32 nc = st ? 0 : im->numcomps, prec = 0;
    for (OPJ_UINT32 c = 0; c < nc; c++) {
        const opj_image_comp_t *k = &im->comps[c];
        if (!k->data || k->w != w || k->h != h) {
            st = lector__error(err, LECTOR_ERR_IMAGE, "%s: JPEG 2000 component %u is not the image's size", name, c);
            break;
        }
        if (k->prec > prec) prec = k->prec;
    }
    if (st) {
        jp2_close(&j);
        return st;
    }
    /* colour: R, G, B; grey: one; alpha: the first component after them the
     * file marks as alpha (its cdef box), others ignored as OpenCV does */
    OPJ_UINT32 ncolor = nc >= 3 && im->color_space != OPJ_CLRSPC_GRAY ? 3 : 1;
    const OPJ_INT32 *r = im->comps[0].data, *g = im->comps[ncolor - 1 ? 1 : 0].data;
    const OPJ_INT32 *b = im->comps[ncolor - 1 ? 2 : 0].data, *a = NULL;
    for (OPJ_UINT32 c = ncolor; c < nc && !a; c++)
        if (im->comps[c].alpha) a = im->comps[c].data;
    int alpha = a != NULL;
    int shift = prec > 8 ? (int)prec - 8 : 0;
    uint32_t top = prec < 8 ? (1u << prec) - 1 : 0; /* precisions under 8 bits: scaled */
    size_t npx = (size_t)w * (size_t)h;
    uint8_t *rgba = alpha ? lector__malloc(npx * 4) : NULL;
    if ((alpha && !rgba) || (st = img_alloc(out, (int)w, (int)h, 3, err))) {
        lector__free(rgba);
        jp2_close(&j);
        return st ? st : lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    }
#define JP2_SAMPLE(p, i) ((uint8_t)(top ? (uint32_t)(p)[i] * 255u / top : (uint32_t)((p)[i] >> shift)))
    for (size_t y = 0, i = 0; y < h; y++) {
        uint8_t *o = rgba ? rgba + i * 4 : out->data + y * out->stride;
        for (size_t x = 0; x < w; x++, i++, o += rgba ? 4 : 3) {
            uint8_t px[4] = {JP2_SAMPLE(r, i), JP2_SAMPLE(g, i), JP2_SAMPLE(b, i), a ? JP2_SAMPLE(a, i) : 255};
            if (rgba)
                memcpy(o, px, 4);
            else
                o[0] = px[2], o[1] = px[1], o[2] = px[0];
        }
    }
#undef JP2_SAMPLE
    if (rgba) img_composite(out, rgba, (size_t)w * 4, 0, 0);
    lector__free(rgba);
    jp2_close(&j);
    return LECTOR_OK;
}
