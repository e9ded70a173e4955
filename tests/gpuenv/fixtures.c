/* fixtures.c - see fixtures.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures.h"
#include "gpuenv/gpuenv.h"

const char *fx_dir;

char *fx(const char *rel)
{
    char *p = gpuenv_asprintf("%s/%s", fx_dir, rel);
    assert_non_null(p);
    return p;
}

int fx_have_nvcc(void)
{
    char *ok = fx("nvcc/ok");
    int have = access(ok, F_OK) == 0;
    free(ok);
    if (!have) printf("skipped: nvcc (/usr/local/cuda/bin/nvcc) not found, no fatbin fixtures\n");
    return have;
}
