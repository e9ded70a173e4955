/* summary.c - see summary.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "summary.h"
#include "util/utf8.h"
#include "util/util.h"

int batch_summary_add_failure(batch_summary *s, const char *file, const char *rel, const char *error, const char *code)
{
    if (s->n_failures == s->cap_failures) {
        size_t cap = s->cap_failures ? s->cap_failures * 2 : 16;
        batch_failure *f = realloc(s->failures, cap * sizeof *f);
        if (!f) return -1;
        s->failures = f;
        s->cap_failures = cap;
    }
    batch_failure *f = &s->failures[s->n_failures];
    f->file = strdup(file);
    f->rel = strdup(rel);
    f->error = strdup(error);
    f->code = strdup(code);
    if (!f->file || !f->rel || !f->error || !f->code) {
        free(f->file);
        free(f->rel);
        free(f->error);
        free(f->code);
        return -1;
    }
    s->n_failures++;
    return 0;
}

/* File names are bytes and an error message quotes one: JSON must be UTF-8
 * (util/utf8.h), so each string is repaired as it is added. */
static void add_utf8(cJSON *o, const char *key, const char *s)
{
    char *r = lector__utf8_repair(s ? s : "", NULL);
    cJSON_AddStringToObject(o, key, r ? r : "");
    lector__free(r);
}

char *batch_summary_json(const batch_summary *s, const batch_summary_meta *m)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON *v = cJSON_AddObjectToObject(o, "versions");
    cJSON_AddStringToObject(v, "lector", m->version);
    cJSON_AddStringToObject(o, "device", m->device ? m->device : "");
    cJSON *fmts = cJSON_AddArrayToObject(o, "formats");
    for (size_t i = 0; i < m->n_formats; i++) cJSON_AddItemToArray(fmts, cJSON_CreateString(m->formats[i]));
    if (m->shard && m->shard->count > 1) {
        cJSON *sh = cJSON_AddObjectToObject(o, "shard");
        cJSON_AddNumberToObject(sh, "index", (double)m->shard->index);
        cJSON_AddNumberToObject(sh, "count", (double)m->shard->count);
        cJSON_AddStringToObject(sh, "from", m->shard->source ? m->shard->source : "--shard");
    } else {
        cJSON_AddNullToObject(o, "shard");
    }
    const batch_counts *c = &s->counts;
    cJSON_AddNumberToObject(o, "inputs", (double)c->total);
    cJSON_AddNumberToObject(o, "done", (double)c->done);
    cJSON_AddNumberToObject(o, "already_done", (double)c->skipped);
    cJSON_AddNumberToObject(o, "failed", (double)c->failed);
    cJSON_AddNumberToObject(o, "not_run", (double)(c->total - c->done - c->skipped - c->failed));
    cJSON_AddBoolToObject(o, "stopped_early", s->stopped_early);
    cJSON_AddNumberToObject(o, "pages", (double)c->pages);
    char num[32];
    snprintf(num, sizeof num, "%.3f", m->seconds);
    cJSON_AddRawToObject(o, "seconds", num);
    snprintf(num, sizeof num, "%.3f", m->seconds > 0 ? c->pages / m->seconds : 0.0);
    cJSON_AddRawToObject(o, "pages_per_second", num);
    cJSON *fl = cJSON_AddArrayToObject(o, "failures");
    for (size_t i = 0; fl && i < s->n_failures; i++) {
        const batch_failure *f = &s->failures[i];
        cJSON *jf = cJSON_CreateObject();
        add_utf8(jf, "file", f->file);
        add_utf8(jf, "name", f->rel);
        add_utf8(jf, "error", f->error);
        cJSON_AddStringToObject(jf, "code", f->code);
        cJSON_AddItemToArray(fl, jf);
    }
    char *out = cJSON_Print(o);
    cJSON_Delete(o);
    return out;
}

char *batch_summary_name(const batch_shard *shard)
{
    char *n = NULL;
    if (shard && shard->count > 1) {
        if (asprintf(&n, "summary.shard-%ld-of-%ld.json", shard->index, shard->count) < 0) return NULL;
        return n;
    }
    return strdup("summary.json");
}

void batch_summary_free(batch_summary *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_failures; i++) {
        free(s->failures[i].file);
        free(s->failures[i].rel);
        free(s->failures[i].error);
        free(s->failures[i].code);
    }
    free(s->failures);
    memset(s, 0, sizeof *s);
}
