/* test_header.c - the public header compiles alone as plain C11 and its
 * declarations are usable (whisper.cpp's test-c.c idea). */
#include "lector_doctor.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    lector_doctor_options opt;
    lector_doctor_default_options(&opt);
    opt.no_dlopen_libs = 1;
    lector_explain_match m[3];
    size_t n = lector_explain_match_text("Failed to initialize NVML: Driver/library version mismatch", m, 3);
    printf("%zu known messages, %zu match(es)\n", lector_explain_known_count(), n);
    return n >= 1 && lector_explain_known_count() >= 30 ? 0 : 1;
}
