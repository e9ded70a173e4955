/*
 * soft_check.h - CHECK(cond, fmt, ...) for tests that sweep many cases and
 * should report every failing one, not stop at the first (cmocka's asserts
 * stop): a failure prints the place, the condition and the message and is
 * counted; soft_check_exit() turns the count into the exit status.
 */
#ifndef LECTOR_TESTS_SOFT_CHECK_H
#define LECTOR_TESTS_SOFT_CHECK_H

#include <stdio.h>

static int soft_check_failures;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
            soft_check_failures++;                                     \
        }                                                              \
    } while (0)

/* 0 when every CHECK held, else 1 after printing the count; `what` names the test on success. */
static inline int soft_check_exit(const char *what)
{
    if (soft_check_failures) {
        fprintf(stderr, "%d failure(s)\n", soft_check_failures);
        return 1;
    }
    printf("%s: ok\n", what);
    return 0;
}

#endif
