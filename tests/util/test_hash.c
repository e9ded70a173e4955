/*
 * lector__fnv1a64 (util/hash.h) against the published FNV-1a 64-bit test
 * vectors (the FNV authors' reference test suite), and the kernel cache's
 * file names (kcache_hash), which must be that function.
 */
#include <stdio.h>
#include <string.h>

#include "../soft_check.h"
#include "backend/cuda/kcache_format.h"
#include "util/hash.h"

int main(void)
{
    static const struct {
        const char *s;
        uint64_t h;
    } v[] = {{"", 0xcbf29ce484222325ull}, {"a", 0xaf63dc4c8601ec8cull}, {"foobar", 0x85944171f73967e8ull}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        uint64_t h = lector__fnv1a64(v[i].s, strlen(v[i].s));
        CHECK(h == v[i].h, "FNV-1a 64 of \"%s\": %016llx, published %016llx", v[i].s, (unsigned long long)h,
              (unsigned long long)v[i].h);
        CHECK(kcache_hash(v[i].s, strlen(v[i].s)) == v[i].h, "kcache_hash of \"%s\" is not FNV-1a 64", v[i].s);
    }
    return soft_check_exit("util.hash");
}
