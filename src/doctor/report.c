/* report.c - the checks of a report: adding, amending, evidence. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

const char *doctor_status_str(doctor_status s)
{
    switch (s) {
    case DOCTOR_OK: return "ok";
    case DOCTOR_WARN: return "warn";
    case DOCTOR_FAIL: return "fail";
    default: return "skip";
    }
}

doctor_check *doctor_add(lector_doctor_report *r, int layer, const char *id, const char *title, doctor_status st,
                         int hits, const char *code, const char *cause, const char *fix, const char *fmt, ...)
{
    doctor_layer *L = &r->layers[layer];
    if (lector__reserve(&L->checks, &L->cap, L->n + 1, sizeof *L->checks)) {
        r->oom = 1;
        return NULL;
    }
    doctor_check *c = &L->checks[L->n];
    memset(c, 0, sizeof *c);
    va_list ap;
    va_start(ap, fmt);
    c->finding = gpuenv_vasprintf(fmt, ap);
    va_end(ap);
    c->id = lector__strdup(id);
    c->title = lector__strdup(title);
    c->code = lector__strdup(code ? code : "");
    c->cause = lector__strdup(cause ? cause : "");
    c->fix = lector__strdup(fix ? fix : "");
    c->status = st;
    c->hits = st == DOCTOR_OK || st == DOCTOR_SKIP ? 0 : hits;
    if (!c->finding || !c->id || !c->title || !c->code || !c->cause || !c->fix) {
        lector__free(c->finding);
        lector__free(c->id);
        lector__free(c->title);
        lector__free(c->code);
        lector__free(c->cause);
        lector__free(c->fix);
        r->oom = 1;
        return NULL;
    }
    L->n++;
    return c;
}

void doctor_evidence(lector_doctor_report *r, doctor_check *c, const char *fmt, ...)
{
    if (!c) return;
    va_list ap;
    va_start(ap, fmt);
    char *s = gpuenv_vasprintf(fmt, ap);
    va_end(ap);
    if (!s || gpuenv_strv_push_owned(&c->evidence, s)) r->oom = 1;
}

char *doctor_own(lector_doctor_report *r, char *s)
{
    if (!s) r->oom = 1;
    return s;
}

doctor_check *doctor_find_check(lector_doctor_report *r, const char *id, int *layer)
{
    for (int l = 0; l < DOCTOR_NLAYERS; l++)
        for (size_t i = 0; i < r->layers[l].n; i++)
            if (strcmp(r->layers[l].checks[i].id, id) == 0) {
                if (layer) *layer = l;
                return &r->layers[l].checks[i];
            }
    return NULL;
}

static void replace(lector_doctor_report *r, char **field, const char *v)
{
    char *s = lector__strdup(v ? v : "");
    if (!s) {
        r->oom = 1;
        return;
    }
    lector__free(*field);
    *field = s;
}

void doctor_set(lector_doctor_report *r, doctor_check *c, doctor_status st, int hits, const char *code,
                const char *cause, const char *fix)
{
    if (!c) return;
    c->status = st;
    c->hits = st == DOCTOR_OK || st == DOCTOR_SKIP ? 0 : hits;
    replace(r, &c->code, code);
    replace(r, &c->cause, cause);
    replace(r, &c->fix, fix);
}
