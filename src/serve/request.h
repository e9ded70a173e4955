/*
 * request.h - what a /v1/ocr request carries, as people send it: the pure
 * parsing, without HTTP (fuzzed by tests/fuzz/fuzz_serve_body.c).
 *
 * Body forms (docs/SERVICE.md):
 *   - multipart/form-data: every file field named image, file or image_file
 *     (server.c feeds libmicrohttpd's parser and keeps those parts);
 *   - application/json: {"image": "<base64>"}, {"images": ["<base64>", ...]}
 *     or PaddleX's {"file": "<base64>", "fileType": 1}; base64 may be a data
 *     URL ("data:image/png;base64,..."); a URL to fetch is refused (the server
 *     reads nothing on a client's behalf);
 *   - anything else (image/..., application/octet-stream, no Content-Type,
 *     curl's default x-www-form-urlencoded): the image bytes, recognised by
 *     their content; a body that starts with '{' is tried as JSON.
 * Parameters a client may set, from the query string or the JSON body, each
 * clamped to the server's maxima (serve_params_clamp).
 */
#ifndef LECTOR_SERVE_REQUEST_H
#define LECTOR_SERVE_REQUEST_H

#include <stddef.h>

typedef enum serve_body_kind {
    SERVE_BODY_RAW = 0,   /* the bytes are the image (sniffed) */
    SERVE_BODY_MULTIPART, /* multipart/form-data */
    SERVE_BODY_JSON       /* application/json */
} serve_body_kind;

/* The kind of body a Content-Type (NULL: none) announces. */
serve_body_kind serve_body_kind_of(const char *content_type);
/* 1 for the multipart field names that carry an image. */
int serve_is_image_field(const char *name);

/* One image of a request: its bytes and a name for messages and "file". */
typedef struct serve_blob {
    unsigned char *data;
    size_t size, cap;
    char *name;
} serve_blob;

/* Parameters a client may set. A field < 0 (drop_score, use_angle_cls,
 * timeout_ms) or 0 (det_limit_side_len) was not given. */
typedef struct serve_params {
    int det_limit_side_len;
    double drop_score;
    int use_angle_cls;
    int timeout_ms;
} serve_params;

void serve_params_init(serve_params *p);

/* A query-string or JSON value for parameter `key` (query names, or
 * PaddleX's textDetLimitSideLen / textRecScoreThresh /
 * useTextlineOrientation); NULL error = taken or not a parameter, else a
 * message for a 400. */
const char *serve_params_set(serve_params *p, const char *key, const char *value);

/* Clamps to the server's maxima; returns a bit per clamped field (1
 * det_limit_side_len, 2 timeout_ms) for the X-Lector-Clamped header. */
int serve_params_clamp(serve_params *p, int max_det_side, int max_timeout_ms);

/* serve_parse_json's message for a body that is not JSON at all (as a
 * pointer: the server tells it from the others). */
extern const char serve_not_json[];

/* Parses a JSON body into images (each a new blob, names "image", "image-2",
 * ...) and parameters. Returns NULL, or an error message and *status (400,
 * 413 too many images, 415 a PDF) for the response; on error no blob is
 * left. The blobs' data is malloc'd; free with serve_blobs_free. */
const char *serve_parse_json(const char *body, size_t len, int max_images, serve_params *params, serve_blob **blobs,
                             size_t *n_blobs, unsigned *status);

/* Decodes standard base64 (RFC 4648, padding optional; whitespace and a
 * data URL's "data:...;base64," prefix skipped) into a new malloc'd buffer.
 * -1 on an invalid character or out of memory. */
int serve_base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len);

void serve_blobs_free(serve_blob *b, size_t n);

#endif
