/*
 * decode_jpeg.c - JPEG through the TurboJPEG 2.x API, EXIF orientation.
 *
 * Decoding settings match cv2.imread (libjpeg defaults: accurate integer
 * IDCT, fancy upsampling, output BGR). libjpeg warnings (e.g. a truncated
 * file, "Premature end of JPEG file") are accepted like OpenCV and PIL do:
 * the missing part is grey. Errors become LECTOR_ERR_IMAGE with libjpeg's
 * text. Progressive files are limited to 500 scans (TJFLAG_LIMITSCANS).
 */
#include <string.h>
#include <turbojpeg.h>

#include "image/decode_internal.h"
#include "util/util.h"

#define JPEG_MAX_SIDE 65500 /* libjpeg's JPEG_MAX_DIMENSION */

static unsigned rd16(const uint8_t *p, int le) { return le ? p[0] | p[1] << 8 : p[0] << 8 | p[1]; }
static uint32_t rd32(const uint8_t *p, int le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
              : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int exif_orientation(const uint8_t *t, size_t n)
{
    if (n < 8) return 1;
    int le;
    if (t[0] == 'I' && t[1] == 'I')
        le = 1;
    else if (t[0] == 'M' && t[1] == 'M')
        le = 0;
    else
        return 1;
    if (rd16(t + 2, le) != 42) return 1;
    uint32_t ifd = rd32(t + 4, le);
    if (ifd > n || n - ifd < 2) return 1;
    unsigned count = rd16(t + ifd, le);
    for (unsigned i = 0; i < count; i++) {
        size_t e = (size_t)ifd + 2 + (size_t)i * 12;
        if (e + 12 > n) break;
        if (rd16(t + e, le) == 0x0112 && rd16(t + e + 2, le) == 3) {
            unsigned v = rd16(t + e + 8, le);
            return v >= 1 && v <= 8 ? (int)v : 1;
        }
    }
    return 1;
}

/* The next marker segment with a length from *pos on (standalone markers
 * and fill bytes skipped): 1 with its marker, and its payload at
 * d + *pos + 4 of *len - 2 bytes, *pos then pointing past it; 0 at the scan,
 * the end of the image, the end of the bytes or anything malformed. */
static int jpeg_segment(const uint8_t *d, size_t n, size_t *pos, unsigned *marker, size_t *len, size_t *at)
{
    while (*pos + 4 <= n) {
        size_t p = *pos;
        if (d[p] != 0xFF) return 0;
        unsigned m = d[p + 1];
        if (m == 0xFF) {
            (*pos)++;
            continue;
        }
        if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
            *pos += 2;
            continue;
        }
        if (m == 0xDA || m == 0xD9) return 0;
        size_t l = rd16(d + p + 2, 0);
        if (l < 2 || l > n - p - 2) return 0;
        *marker = m;
        *len = l;
        *at = p;
        *pos = p + 2 + l;
        return 1;
    }
    return 0;
}

int img_jpeg_frame(const uint8_t *d, size_t n, unsigned *w, unsigned *h, unsigned *components)
{
    size_t pos = 2, len, at;
    unsigned marker;
    while (jpeg_segment(d, n, &pos, &marker, &len, &at)) /* SOF0..SOF15 but DHT (C4), JPG (C8), DAC (CC) */
        if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
            if (len < 8) return 0;
            *h = rd16(d + at + 5, 0);
            *w = rd16(d + at + 7, 0);
            *components = d[at + 9];
            return 1;
        }
    return 0;
}

int img_jpeg_exif_orientation(const uint8_t *d, size_t n)
{
    size_t pos = 2, len, at;
    unsigned marker;
    while (jpeg_segment(d, n, &pos, &marker, &len, &at)) {
        const uint8_t *seg = d + at + 4;
        size_t seglen = len - 2;
        if (marker == 0xE1 && seglen >= 14 && !memcmp(seg, "Exif\0\0", 6)) return exif_orientation(seg + 6, seglen - 6);
    }
    return 1;
}

lector_status img_decode_jpeg(const uint8_t *data, size_t size, const char *name, const img_limits *limits,
                              img_image *out, lector_error *err)
{
    lector_status st = LECTOR_OK;
    uint8_t *cmyk = NULL;
    if (size > (size_t)0xFFFFFFFFu) return lector__error(err, LECTOR_ERR_LIMIT, "%s: JPEG over 4 GiB", name);
    tjhandle tj = tjInitDecompress();
    if (!tj) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: cannot create a JPEG decoder", name);
    unsigned fw = 0, fh = 0, nc = 0;
    /* libjpeg refuses sides over 65500 with an error of its own: the limits
     * decide first. A height of 0 is defined later by a DNL marker: libjpeg
     * decides then. */
    if (img_jpeg_frame(data, size, &fw, &fh, &nc) && fw && fh) {
        st = img_check_dims(fw, fh, name, "JPEG", limits, NULL, err);
        if (st != LECTOR_OK) goto done;
        if (fw > JPEG_MAX_SIDE || fh > JPEG_MAX_SIDE) {
            st = lector__error(err, LECTOR_ERR_LIMIT,
                               "%s: JPEG: %ux%u pixels, over libjpeg's limit of %d pixels for one side", name, fw, fh,
                               JPEG_MAX_SIDE);
            goto done;
        }
    }
    int w = 0, h = 0, subsamp = 0, cs = 0;
    if (tjDecompressHeader3(tj, data, (unsigned long)size, &w, &h, &subsamp, &cs) != 0) {
        st = lector__error(err, LECTOR_ERR_IMAGE, "%s: invalid JPEG header: %s", name, tjGetErrorStr2(tj));
        goto done;
    }
    st = img_check_dims((uint64_t)(w > 0 ? w : 0), (uint64_t)(h > 0 ? h : 0), name, "JPEG", limits, NULL, err);
    if (st != LECTOR_OK) goto done;
    st = img_alloc(out, w, h, 3, err);
    if (st != LECTOR_OK) {
        lector__error_prefix(err, "%s", name);
        goto done;
    }
    int flags = TJFLAG_LIMITSCANS;
    int is_cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
    int rc;
    if (is_cmyk) {
        size_t n;
        if (lector__mul_size((size_t)w * 4, (size_t)h, &n) || !(cmyk = lector__malloc(n))) {
            st = lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "%s: out of memory for a CMYK JPEG", name);
            goto done;
        }
        rc = tjDecompress2(tj, data, (unsigned long)size, cmyk, w, w * 4, h, TJPF_CMYK, flags);
    } else {
        rc = tjDecompress2(tj, data, (unsigned long)size, out->data, w, (int)out->stride, h, TJPF_BGR, flags);
    }
    if (rc != 0 && tjGetErrorCode(tj) != TJERR_WARNING) {
        st = lector__error(err, LECTOR_ERR_IMAGE, "%s: corrupt JPEG: %s", name, tjGetErrorStr2(tj));
        goto done;
    }
    if (is_cmyk) {
        /* Adobe CMYK JPEGs store inverted values; same formula as OpenCV. */
        for (int y = 0; y < h; y++) {
            const uint8_t *s = cmyk + (size_t)y * w * 4;
            uint8_t *d = out->data + (size_t)y * out->stride;
            for (int x = 0; x < w; x++, s += 4, d += 3) {
                int k = s[3];
                d[0] = (uint8_t)(k - ((255 - s[2]) * k >> 8));
                d[1] = (uint8_t)(k - ((255 - s[1]) * k >> 8));
                d[2] = (uint8_t)(k - ((255 - s[0]) * k >> 8));
            }
        }
    }
    st = img_apply_orientation(out, img_jpeg_exif_orientation(data, size), err);
    if (st != LECTOR_OK) lector__error_prefix(err, "%s", name);
done:
    lector__free(cmyk);
    tjDestroy(tj);
    if (st != LECTOR_OK) img_release(out);
    return st;
}
