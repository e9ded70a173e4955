/*
 * letterbox.h - black bands above and below an image before detection, so
 * that text filling a small or very wide image is found whole.
 *
 * DB's probability map loses a line whose glyphs touch the top and bottom
 * edges of the detector's input: RapidOCR's test_without_det.jpg (445x39, one
 * line of Chinese) gave two fragments with its middle characters lost. The
 * rule is RapidOCR's (python/rapidocr/main.py, _add_letterbox and
 * get_padding_h): an image of height h and width w with h <= min_height, or
 * with w / h > max_ratio, gets
 *     pad = int(|max(int(w / max_ratio), min_height) * 2 - h| / 2)
 * black rows at the top and at the bottom; detection runs on the padded
 * image and the boxes are moved back by -pad and clipped to the image.
 * Ordinary pages (taller than min_height, at most max_ratio times as wide as
 * high) are never padded, so their boxes do not move.
 */
#ifndef LECTOR_OCR_LETTERBOX_H
#define LECTOR_OCR_LETTERBOX_H

#include "image/image.h"
#include "lector_rt.h"
#include "ocr/db_post.h"

/* Rows of black added at the top and at the bottom of a width x height image
 * (0: none). min_height <= 0 turns the height rule off, max_ratio <= 0 the
 * ratio rule (both off: never padded). An image whose padded copy would have
 * more than max_pixels pixels is not padded: the bands of a very wide image
 * grow with its width (RapidOCR pads after scaling the image to 2000 px at
 * most), and the engine's page limit bounds what one read may allocate. */
int ocr_letterbox_rows(int width, int height, int min_height, float max_ratio, int64_t max_pixels);

/* A copy of img with `rows` black rows above and below (rows > 0).
 * LECTOR_ERR_OUT_OF_MEMORY or LECTOR_ERR_INVALID_ARGUMENT (too large) with a
 * message; `out` is then empty. */
lector_status ocr_letterbox_pad(const img_image *img, int rows, img_image *out, lector_error *err);

/* Boxes found on the padded image back to the width x height original: moved
 * up by `rows`, clipped to the image (PaddleOCR's filter_tag_det_res: x in
 * [0, width - 1], y in [0, height - 1]); a box left with a side of 3 px or
 * less (one lying in a band) is dropped, as that filter drops it. The kept
 * boxes are sorted again (ocr_sort_boxes); *n is updated. */
void ocr_letterbox_unpad(ocr_box *boxes, int *n, int rows, int width, int height);

#endif
