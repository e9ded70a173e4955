/* fuzz_ldcache.c - libFuzzer target: ld.so.cache reader (old and new formats). */
#include <stddef.h>
#include <stdint.h>

#include "gpuenv/gpuenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpuenv_ldcache c;
    if (gpuenv_ldcache_parse(data, size, &c) == 0) {
        (void)gpuenv_ldcache_lookup(&c, "libcudnn.so.9", GPUENV_LDCACHE_X86_64);
        gpuenv_ldcache_free(&c);
    }
    return 0;
}
