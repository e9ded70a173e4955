/* request.c - see request.h. */
#include "request.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "util/util.h"

const char serve_not_json[] = "the body is not valid JSON";

serve_body_kind serve_body_kind_of(const char *ct)
{
    if (!ct) return SERVE_BODY_RAW;
    while (*ct == ' ' || *ct == '\t') ct++;
    if (!strncasecmp(ct, "multipart/form-data", 19)) return SERVE_BODY_MULTIPART;
    if (!strncasecmp(ct, "application/json", 16)) return SERVE_BODY_JSON;
    return SERVE_BODY_RAW;
}

int serve_is_image_field(const char *name)
{
    return name && (!strcmp(name, "image") || !strcmp(name, "file") || !strcmp(name, "image_file"));
}

void serve_params_init(serve_params *p)
{
    p->det_limit_side_len = 0;
    p->drop_score = -1;
    p->use_angle_cls = -1;
    p->timeout_ms = -1;
}

static int parse_long(const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

const char *serve_params_set(serve_params *p, const char *key, const char *v)
{
    long x;
    if (!key || !v) return NULL;
    if (!strcmp(key, "det_limit_side_len") || !strcmp(key, "textDetLimitSideLen")) {
        if (parse_long(v, 1, 1L << 30, &x)) return "det_limit_side_len: a positive integer";
        p->det_limit_side_len = (int)x;
    } else if (!strcmp(key, "drop_score") || !strcmp(key, "textRecScoreThresh")) {
        char *end;
        double d = strtod(v, &end);
        if (end == v || *end || !(d >= 0 && d <= 1)) return "drop_score: a number in 0..1";
        p->drop_score = d;
    } else if (!strcmp(key, "use_angle_cls") || !strcmp(key, "useTextlineOrientation")) {
        if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "on"))
            p->use_angle_cls = 1;
        else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "off"))
            p->use_angle_cls = 0;
        else
            return "use_angle_cls: 0 or 1";
    } else if (!strcmp(key, "timeout_ms")) {
        if (parse_long(v, 1, 86400000L, &x)) return "timeout_ms: a positive integer (milliseconds)";
        p->timeout_ms = (int)x;
    }
    return NULL;
}

int serve_params_clamp(serve_params *p, int max_det_side, int max_timeout_ms)
{
    int clamped = 0;
    if (p->det_limit_side_len > max_det_side) {
        p->det_limit_side_len = max_det_side;
        clamped |= 1;
    }
    if (p->timeout_ms > max_timeout_ms) {
        p->timeout_ms = max_timeout_ms;
        clamped |= 2;
    }
    return clamped;
}

static int b64_value(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62; /* and the URL-safe alphabet (RFC 4648, 5) */
    if (c == '/' || c == '_') return 63;
    return -1;
}

int serve_base64_decode(const char *s, size_t len, unsigned char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    /* a data URL: "data:[<type>][;...];base64,<data>" */
    if (len > 5 && !strncasecmp(s, "data:", 5)) {
        const char *comma = memchr(s, ',', len);
        if (!comma) return -1;
        size_t head = (size_t)(comma - s);
        if (head < 7 || strncasecmp(comma - 7, ";base64", 7)) return -1;
        len -= head + 1;
        s = comma + 1;
    }
    unsigned char *o = lector__malloc(len / 4 * 3 + 3);
    if (!o) return -1;
    size_t k = 0, pad = 0;
    uint32_t acc = 0;
    int nbits = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad) { /* nothing but padding after padding */
            lector__free(o);
            return -1;
        }
        acc = acc << 6 | (uint32_t)v;
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            o[k++] = (unsigned char)(acc >> nbits);
        }
    }
    if (pad > 2 || nbits >= 6) { /* a lone sixth bit group is no byte */
        lector__free(o);
        return -1;
    }
    *out = o;
    *out_len = k;
    return 0;
}

void serve_blobs_free(serve_blob *b, size_t n)
{
    for (size_t i = 0; b && i < n; i++) {
        lector__free(b[i].data);
        lector__free(b[i].name);
    }
    lector__free(b);
}

/* One base64 string of the body into blob *n of *blobs. */
static const char *add_b64(const cJSON *item, serve_blob **blobs, size_t *n, unsigned *status)
{
    if (!cJSON_IsString(item) || !item->valuestring) {
        *status = 400;
        return "the image must be a base64 string";
    }
    const char *v = item->valuestring;
    size_t len = strlen(v);
    if (!strncasecmp(v, "http://", 7) || !strncasecmp(v, "https://", 8) || !strncasecmp(v, "file:", 5)) {
        *status = 400;
        return "URLs are not fetched: send the image's bytes in base64";
    }
    serve_blob *grown = lector__realloc(*blobs, sizeof *grown * (*n + 1));
    if (!grown) {
        *status = 503;
        return "out of memory";
    }
    *blobs = grown;
    serve_blob *b = &grown[*n];
    memset(b, 0, sizeof *b);
    if (serve_base64_decode(v, len, &b->data, &b->size)) {
        *status = 400;
        return "the image is not valid base64";
    }
    if (!b->size) {
        lector__free(b->data);
        *status = 400;
        return "an image is empty";
    }
    char name[32];
    if (*n)
        snprintf(name, sizeof name, "image-%zu", *n + 1);
    else
        snprintf(name, sizeof name, "image");
    b->name = lector__strdup(name);
    if (!b->name) {
        lector__free(b->data);
        *status = 503;
        return "out of memory";
    }
    b->cap = b->size;
    (*n)++;
    return NULL;
}

/* A JSON value of a parameter as the query string would write it. */
static const char *json_param(serve_params *p, const cJSON *v, const char *key)
{
    char buf[64];
    if (cJSON_IsBool(v))
        snprintf(buf, sizeof buf, "%d", cJSON_IsTrue(v) ? 1 : 0);
    else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        /* the range first: converting a double outside long's is undefined */
        if (d > -1e15 && d < 1e15 && d == (double)(long)d)
            snprintf(buf, sizeof buf, "%ld", (long)d);
        else
            snprintf(buf, sizeof buf, "%.17g", d);
    } else if (cJSON_IsString(v) && v->valuestring && strlen(v->valuestring) < sizeof buf)
        snprintf(buf, sizeof buf, "%s", v->valuestring);
    else
        return "a parameter must be a number, a boolean or a short string";
    return serve_params_set(p, key, buf);
}

const char *serve_parse_json(const char *body, size_t len, int max_images, serve_params *params, serve_blob **blobs,
                             size_t *n_blobs, unsigned *status)
{
    *blobs = NULL;
    *n_blobs = 0;
    *status = 400;
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root) return serve_not_json;
    const char *bad = NULL;
    if (!cJSON_IsObject(root)) {
        bad = "the JSON body must be an object: {\"image\": \"<base64>\"}";
        goto done;
    }
    const cJSON *ft = cJSON_GetObjectItemCaseSensitive(root, "fileType");
    if (ft && (!cJSON_IsNumber(ft) || (ft->valuedouble != 0 && ft->valuedouble != 1))) {
        bad = "fileType: 0 (PDF) or 1 (image)";
        goto done;
    }
    if (ft && ft->valuedouble == 0) {
        *status = 415;
        bad = "fileType 0 (PDF) is not supported yet: send images";
        goto done;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, root)
    {
        const char *k = item->string;
        if (!k) continue;
        if (!strcmp(k, "image") || !strcmp(k, "file")) {
            if ((int)*n_blobs >= max_images) {
                *status = 413;
                bad = "too many images in one request";
                goto done;
            }
            if ((bad = add_b64(item, blobs, n_blobs, status))) goto done;
        } else if (!strcmp(k, "images")) {
            if (!cJSON_IsArray(item)) {
                bad = "images: an array of base64 strings";
                goto done;
            }
            const cJSON *e;
            cJSON_ArrayForEach(e, item)
            {
                if ((int)*n_blobs >= max_images) {
                    *status = 413;
                    bad = "too many images in one request";
                    goto done;
                }
                if ((bad = add_b64(e, blobs, n_blobs, status))) goto done;
            }
        } else if (strcmp(k, "fileType") && (bad = json_param(params, item, k))) {
            goto done;
        }
    }
    if (!*n_blobs) bad = "no image: send {\"image\": \"<base64>\"} (or \"images\", or PaddleX's \"file\")";
done:
    cJSON_Delete(root);
    if (bad) {
        serve_blobs_free(*blobs, *n_blobs);
        *blobs = NULL;
        *n_blobs = 0;
    }
    return bad;
}
