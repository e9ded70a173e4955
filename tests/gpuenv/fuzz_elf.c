/* fuzz_elf.c - libFuzzer target: ELF dynamic-section parser. */
#include <stddef.h>
#include <stdint.h>

#include "gpuenv/gpuenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpuenv_elf e;
    if (gpuenv_elf_parse(data, size, &e) == 0) {
        if (e.fatbin_size) {
            gpuenv_fatbin fb;
            gpuenv_fatbin_scan(e.fatbin, e.fatbin_size, &fb);
        }
        gpuenv_elf_free(&e);
    }
    return 0;
}
