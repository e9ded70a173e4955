/*
 * The letterbox before detection (src/ocr/letterbox.c) against RapidOCR's
 * rule worked out by hand (python/rapidocr/main.py _add_letterbox and
 * get_padding_h: h <= 30 or w / h > 8 -> pad = int(|max(int(w / 8), 30) * 2
 * - h| / 2) black rows above and below), the padded copy's pixels, and the
 * boxes moved back: up by the padding, clipped to the image, dropped when
 * they lie in a band. The end-to-end case (RapidOCR's test_without_det.jpg
 * read whole) is accuracy.rapidocr_tests.15.
 */
#include <string.h>

#include "image/image.h"
#include "ocr/letterbox.h"
#include "../soft_check.h"

static int rows(int w, int h) { return ocr_letterbox_rows(w, h, 30, 8.f, 100000000); }

static ocr_box quad(float x0, float y0, float x1, float y1)
{
    ocr_box b = {{{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}}, 0.9f};
    return b;
}

int main(void)
{
    /* test_without_det.jpg 445x39: ratio 11.4 > 8; int(445 / 8) = 55 -> 110 - 39 = 71 -> 35 */
    CHECK(rows(445, 39) == 35, "%d", rows(445, 39));
    /* test_letterbox_like.jpg 1167x54: int(1167 / 8) = 145 -> 290 - 54 = 236 -> 118 */
    CHECK(rows(1167, 54) == 118, "%d", rows(1167, 54));
    /* short.png 65x11: h <= 30; max(8, 30) = 30 -> 60 - 11 = 49 -> 24 */
    CHECK(rows(65, 11) == 24, "%d", rows(65, 11));
    /* h = 30 exactly is padded (<=); 31 at ratio 8 exactly is not (>) */
    CHECK(rows(100, 30) == 15, "%d", rows(100, 30));
    CHECK(rows(248, 31) == 0, "%d", rows(248, 31));
    /* ordinary pages: ICDAR2015, an A4 scan, a receipt */
    CHECK(rows(1280, 720) == 0 && rows(1240, 1754) == 0 && rows(600, 1200) == 0, "page padded");
    /* each rule off alone, both off */
    CHECK(ocr_letterbox_rows(445, 39, 0, 8.f, 100000000) == 35, "ratio rule alone");
    CHECK(ocr_letterbox_rows(100, 20, 0, 8.f, 100000000) == 0, "height rule off");
    CHECK(ocr_letterbox_rows(445, 39, 30, 0.f, 100000000) == 0, "ratio rule off, 39 > 30");
    CHECK(ocr_letterbox_rows(100, 20, 30, 0.f, 100000000) == 20, "height rule alone: 60 - 20 = 40 -> 20");
    CHECK(ocr_letterbox_rows(445, 39, 0, 0.f, 100000000) == 0, "both off");
    /* a padded copy over the pixel limit is not made: 100000x1000 -> 12000 rows each side */
    CHECK(ocr_letterbox_rows(100000, 1000, 30, 8.f, 100000000) == 0, "over the limit");
    CHECK(ocr_letterbox_rows(100000, 1000, 30, 8.f, 2600000000LL) == 12000, "within a larger limit");

    /* the padded copy: black bands, the image's rows in between */
    img_image img, pad;
    lector_error err;
    CHECK(img_alloc(&img, 5, 2, 3, &err) == LECTOR_OK, "alloc");
    memset(img.data, 200, (size_t)img.stride * 2);
    img.data[0] = 7;
    CHECK(ocr_letterbox_pad(&img, 3, &pad, &err) == LECTOR_OK, "%s", err.message);
    CHECK(pad.width == 5 && pad.height == 8 && pad.channels == 3, "%dx%d", pad.width, pad.height);
    int bad = 0;
    for (int y = 0; y < pad.height; y++)
        for (int x = 0; x < 15; x++) {
            int v = pad.data[(size_t)y * pad.stride + (size_t)x], want = y < 3 || y >= 5 ? 0 : 200;
            if (y == 3 && x == 0) want = 7;
            bad += v != want;
        }
    CHECK(!bad, "%d bytes differ", bad);
    img_release(&pad);
    CHECK(ocr_letterbox_pad(&img, 0, &pad, &err) == LECTOR_ERR_INVALID_ARGUMENT && !pad.data, "0 rows refused");
    img_release(&pad);
    img_release(&img);

    /* boxes back to a 445x39 image padded by 35: moved up 35 and clipped to [0, 444] x [0, 38]; a
     * box within a band is dropped; the kept ones sorted top to bottom */
    ocr_box b[3] = {quad(10, 43, 441, 69), quad(20, 0, 60, 30), quad(-5, 33, 450, 80)};
    int n = 3;
    ocr_letterbox_unpad(b, &n, 35, 445, 39);
    CHECK(n == 2, "%d boxes kept", n);
    CHECK(b[0].p[0].x == 0 && b[0].p[0].y == 0 && b[0].p[2].x == 444 && b[0].p[2].y == 38, "clipped: (%g,%g)-(%g,%g)",
          b[0].p[0].x, b[0].p[0].y, b[0].p[2].x, b[0].p[2].y);
    CHECK(b[1].p[0].x == 10 && b[1].p[0].y == 8 && b[1].p[2].x == 441 && b[1].p[2].y == 34, "moved: (%g,%g)-(%g,%g)",
          b[1].p[0].x, b[1].p[0].y, b[1].p[2].x, b[1].p[2].y);
    n = 1;
    b[0] = quad(1, 2, 30, 9);
    ocr_letterbox_unpad(b, &n, 0, 445, 39);
    CHECK(n == 1 && b[0].p[0].y == 2, "no padding: unchanged");
    return soft_check_exit("letterbox");
}
