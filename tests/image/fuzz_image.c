/*
 * fuzz_image.c - libFuzzer entry over img_decode (all formats),
 * plus a resize and a warp of what decodes. Limits are lowered so that the
 * fuzzer explores parsers instead of allocating huge valid images.
 *   fuzz_image -max_total_time=60 work_dir tests/image/corpus
 */
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    img_limits lim;
    img_limits_default(&lim);
    lim.max_pixels = 4u << 20;
    lim.max_total_pixels = 16u << 20;
    lim.max_pages = 64;
    img_pages pages;
    lector_error err;
    if (img_decode(data, size, "fuzz-input", &lim, &pages, &err) != LECTOR_OK) return 0;
    const img_image *im = &pages.pages[0];
    img_image out;
    if (img_resize(im, 17, 9, &out, &err) == LECTOR_OK) img_release(&out);
    float q[4][2] = {{0, 0}, {(float)im->width, 1}, {(float)im->width - 1, (float)im->height}, {1, (float)im->height}};
    if (img_warp_quad(im, q, 8, 5, &out, &err) == LECTOR_OK) img_release(&out);
    img_pages_free(&pages);
    return 0;
}
