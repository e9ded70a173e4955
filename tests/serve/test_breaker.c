/* Unit test of the circuit breaker's state machine (src/serve/breaker.c). */
#include <stdio.h>

#include "serve/breaker.h"

static int fails;
#define CHECK(c)                                                         \
    do {                                                                 \
        if (!(c)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
            fails++;                                                     \
        }                                                                \
    } while (0)

int main(void)
{
    serve_breaker b;
    int probe;
    serve_breaker_init(&b, 2, 100);
    CHECK(serve_breaker_allow(&b, 0, &probe) && !probe);
    serve_breaker_record(&b, 0, 0, 1);
    CHECK(serve_breaker_get(&b, NULL, NULL) == SERVE_BREAKER_CLOSED); /* 1 of 2 */
    serve_breaker_record(&b, 1, 0, 0);                                /* success resets */
    serve_breaker_record(&b, 2, 0, 1);
    CHECK(serve_breaker_get(&b, NULL, NULL) == SERVE_BREAKER_CLOSED);
    serve_breaker_record(&b, 3, 0, 1);
    uint64_t opens, closes;
    CHECK(serve_breaker_get(&b, &opens, &closes) == SERVE_BREAKER_OPEN && opens == 1);
    CHECK(!serve_breaker_allow(&b, 50, &probe));          /* cooling down */
    CHECK(serve_breaker_allow(&b, 103, &probe) && probe); /* the probe */
    CHECK(serve_breaker_get(&b, NULL, NULL) == SERVE_BREAKER_HALF_OPEN);
    CHECK(!serve_breaker_allow(&b, 104, &probe)); /* one probe at a time */
    serve_breaker_record(&b, 105, 1, 1);          /* probe fails */
    CHECK(serve_breaker_get(&b, &opens, NULL) == SERVE_BREAKER_OPEN && opens == 2);
    CHECK(!serve_breaker_allow(&b, 150, &probe));
    CHECK(serve_breaker_allow(&b, 206, &probe) && probe);
    serve_breaker_record(&b, 207, 1, 0); /* probe succeeds */
    CHECK(serve_breaker_get(&b, &opens, &closes) == SERVE_BREAKER_CLOSED && closes == 1);
    CHECK(serve_breaker_allow(&b, 208, &probe) && !probe);
    serve_breaker_destroy(&b);
    printf("serve.breaker_unit: %s\n", fails ? "FAILED" : "ok");
    return fails != 0;
}
