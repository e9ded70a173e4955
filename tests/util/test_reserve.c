/*
 * Unit tests of lector__reserve (src/util/util.h), the growable arrays of
 * every layer: the contract in util.h, with the allocator's fault injection
 * for the failure path. Expected values written by hand.
 */
#include <stdint.h>
#include <stdio.h>

#include "../soft_check.h"
#include "util/util.h"

int main(void)
{
    int *v = NULL;
    size_t cap = 0;
    CHECK(lector__reserve(&v, &cap, 0, sizeof *v) == 0 && v == NULL && cap == 0, "nothing needed");
    CHECK(lector__reserve(&v, &cap, 1, sizeof *v) == 0 && v && cap == 16, "at least 16");
    for (int i = 0; i < 16; i++) v[i] = i;
    CHECK(lector__reserve(&v, &cap, 16, sizeof *v) == 0 && cap == 16, "room enough: untouched");
    CHECK(lector__reserve(&v, &cap, 17, sizeof *v) == 0 && cap == 32, "doubling");
    CHECK(lector__reserve(&v, &cap, 100, sizeof *v) == 0 && cap == 100, "beyond double: what is needed");
    int kept = 1;
    for (int i = 0; i < 16; i++) kept &= v[i] == i;
    CHECK(kept, "the elements move with the array");

    /* an allocation that fails leaves the array and its capacity as they were */
    int *before = v;
    lector__fail_alloc_after(1);
    CHECK(lector__reserve(&v, &cap, 101, sizeof *v) == -1 && v == before && cap == 100,
          "a failed allocation leaves the array and its capacity");
    lector__fail_alloc_after(0);
    kept = 1;
    for (int i = 0; i < 16; i++) kept &= v[i] == i;
    CHECK(kept, "a size that overflows size_t fails without allocating");
    long failures = lector__alloc_failures();
    CHECK(lector__reserve(&v, &cap, SIZE_MAX / 2, 8) == -1 && v == before && cap == 100, "an overflowing size fails");
    CHECK(lector__alloc_failures() == failures, "without allocating");
    lector__free(v);
    return soft_check_exit("util.reserve");
}
