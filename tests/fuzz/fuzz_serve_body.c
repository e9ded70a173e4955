/*
 * fuzz_serve_body.c - libFuzzer over what `lector serve` parses of a
 * request body and its parameters (src/serve/request.c): the JSON body
 * (cJSON, base64, data URLs, PaddleX's fields), base64 alone, the
 * parameters a client may set and their clamps, the Content-Type's kind.
 * The first byte picks the parser; the rest is its input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    int mode = data[0] % 4;
    data++, size--;
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    serve_params p;
    serve_params_init(&p);
    switch (mode) {
    case 0: {
        serve_blob *b = NULL;
        size_t n = 0;
        unsigned status = 0;
        const char *bad = serve_parse_json(s, size, 64, &p, &b, &n, &status);
        if (bad && (b || n)) abort(); /* an error leaves nothing */
        for (size_t i = 0; i < n; i++)
            if (!b[i].data || !b[i].size || !b[i].name) abort();
        serve_blobs_free(b, n);
        break;
    }
    case 1: {
        unsigned char *o = NULL;
        size_t n = 0;
        if (!serve_base64_decode(s, size, &o, &n) && n > size) abort();
        free(o);
        break;
    }
    case 2: { /* key NUL value */
        const char *v = memchr(s, '\0', size) ? s + strlen(s) + 1 : "";
        if (v > s + size) v = "";
        serve_params_set(&p, s, v);
        serve_params_clamp(&p, 2048, 30000);
        if (p.det_limit_side_len > 2048 || p.timeout_ms > 30000) abort();
        break;
    }
    default: (void)serve_body_kind_of(s); (void)serve_is_image_field(s);
    }
    free(s);
    return 0;
}
