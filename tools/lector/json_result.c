/* json_result.c - see json_result.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json_result.h"

char *json_result_string(const char *file, const lector_result *r, const char *error)
{
    return json_result_string_stats(file, r, error, NULL);
}

char *json_result_string_stats(const char *file, const lector_result *r, const char *error,
                               const lector_engine_stats *stats)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "file", file);
    cJSON *pages = cJSON_AddArrayToObject(o, "pages");
    for (size_t p = 0; r && p < r->n_pages; p++) {
        const lector_page *pg = &r->pages[p];
        cJSON *jp = cJSON_CreateObject();
        cJSON_AddNumberToObject(jp, "width", pg->width);
        cJSON_AddNumberToObject(jp, "height", pg->height);
        cJSON *lines = cJSON_AddArrayToObject(jp, "lines");
        for (size_t i = 0; i < pg->n_lines; i++) {
            const lector_line *l = &pg->lines[i];
            cJSON *jl = cJSON_CreateObject();
            cJSON_AddStringToObject(jl, "text", l->text);
            char num[32];
            snprintf(num, sizeof num, "%.6f", l->score);
            cJSON_AddRawToObject(jl, "score", num);
            cJSON *box = cJSON_AddArrayToObject(jl, "box");
            for (int k = 0; k < 4; k++) {
                cJSON *pt = cJSON_CreateArray();
                cJSON_AddItemToArray(pt, cJSON_CreateNumber(l->box[k].x));
                cJSON_AddItemToArray(pt, cJSON_CreateNumber(l->box[k].y));
                cJSON_AddItemToArray(box, pt);
            }
            if (l->rotated) cJSON_AddBoolToObject(jl, "rotated", 1);
            cJSON_AddItemToArray(lines, jl);
        }
        cJSON_AddItemToArray(pages, jp);
    }
    if (r) {
        cJSON *t = cJSON_AddObjectToObject(o, "timings_ms");
        cJSON_AddNumberToObject(t, "decode", (int)(r->timings.decode_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "det", (int)(r->timings.det_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "cls", (int)(r->timings.cls_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "rec", (int)(r->timings.rec_ms * 100) / 100.0);
        cJSON_AddNumberToObject(t, "total", (int)(r->timings.total_ms * 100) / 100.0);
    }
    if (stats) {
        cJSON *c = cJSON_AddObjectToObject(o, "compiled");
        cJSON_AddNumberToObject(c, "plans", (double)stats->plans_compiled);
        cJSON_AddNumberToObject(c, "kernels", (double)stats->kernels_compiled);
    }
    if (error)
        cJSON_AddStringToObject(o, "error", error);
    else
        cJSON_AddNullToObject(o, "error");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
