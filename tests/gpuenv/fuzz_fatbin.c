/* fuzz_fatbin.c - libFuzzer target: .nv_fatbin container walker. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "gpuenv/gpuenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpuenv_fatbin fb;
    if (gpuenv_fatbin_scan(data, size, &fb) == 0) {
        (void)gpuenv_fatbin_runs_on(&fb, 9, 0);
        free(gpuenv_fatbin_describe(&fb));
    }
    return 0;
}
