/* fuzz_ldcache.c - libFuzzer target: ld.so.cache reader (old and new formats). */
#include <stddef.h>
#include <stdint.h>

#include "gpuenv/gpuenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpuenv_ldcache c;
    if (gpuenv_ldcache_parse(data, size, &c) == 0) {
        /* the lookup with and without glibc-hwcaps subdirectories */
        char v4[] = "x86-64-v4", v2[] = "x86-64-v2";
        char *names[] = {v4, v2};
        gpuenv_strv hwcaps = {names, 2, 2};
        (void)gpuenv_ldcache_lookup(&c, "libcudnn.so.9", &hwcaps);
        (void)gpuenv_ldcache_lookup(&c, "libcuda.so.1", NULL);
        gpuenv_ldcache_free(&c);
    }
    return 0;
}
