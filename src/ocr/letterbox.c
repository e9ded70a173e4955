/*
 * letterbox.c - see letterbox.h.
 */
#include <math.h>
#include <string.h>

#include "ocr/letterbox.h"
#include "util/util.h"

int ocr_letterbox_rows(int width, int height, int min_height, float max_ratio, int64_t max_pixels)
{
    if (width <= 0 || height <= 0) return 0;
    int by_height = min_height > 0 && height <= min_height;
    int by_ratio = max_ratio > 0 && (double)width / height > max_ratio;
    if (!by_height && !by_ratio) return 0;
    /* RapidOCR's get_padding_h; with the ratio rule off only min_height counts */
    double target = max_ratio > 0 ? (double)(int)(width / max_ratio) : 0;
    if (target < min_height) target = min_height;
    int rows = (int)(fabs(target * 2 - height) / 2);
    if ((double)width * ((double)height + 2.0 * rows) > (double)max_pixels) return 0;
    return rows;
}

lector_status ocr_letterbox_pad(const img_image *img, int rows, img_image *out, lector_error *err)
{
    memset(out, 0, sizeof *out);
    if (!img || !img->data || img->channels <= 0 || rows <= 0 || img->height > (1 << 30) - 2 * rows)
        return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "letterbox: invalid image or padding (%d rows)", rows);
    lector_status st = img_alloc(out, img->width, img->height + 2 * rows, img->channels, err);
    if (st) return st;
    size_t row = (size_t)img->width * (size_t)img->channels;
    for (int y = 0; y < img->height; y++)
        memcpy(out->data + (size_t)(y + rows) * out->stride, img->data + (size_t)y * img->stride, row);
    return LECTOR_OK; /* the bands stay as img_alloc zeroed them: black */
}

void ocr_letterbox_unpad(ocr_box *boxes, int *n, int rows, int width, int height)
{
    if (rows <= 0) return;
    int k = 0;
    for (int i = 0; i < *n; i++) {
        ocr_box b = boxes[i];
        for (int c = 0; c < 4; c++) {
            b.p[c].x = fminf(fmaxf(b.p[c].x, 0.f), (float)(width - 1));
            b.p[c].y = fminf(fmaxf(b.p[c].y - (float)rows, 0.f), (float)(height - 1));
        }
        int rw = (int)hypotf(b.p[0].x - b.p[1].x, b.p[0].y - b.p[1].y);
        int rh = (int)hypotf(b.p[0].x - b.p[3].x, b.p[0].y - b.p[3].y);
        if (rw <= 3 || rh <= 3) continue;
        boxes[k++] = b;
    }
    *n = k;
    ocr_sort_boxes(boxes, k);
}
