/* report.c - the verdict, the text report and the JSON document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuenv/gpuenv.h"

static int layer_has(const lector_doctor_report *r, int layer, gpuenv_status st)
{
    for (size_t j = 0; j < r->layers[layer].n; j++)
        if (r->layers[layer].checks[j].status == st) return 1;
    return 0;
}

int lector_doctor_report_gpu_usable(const lector_doctor_report *r)
{
    if (!r) return 0;
    if (layer_has(r, GPUENV_LINSPECT, GPUENV_FAIL)) return 0;
    /* A CUDA context was made and memory allocated: that is "usable". */
    if (r->facts.cuda_ok) return r->facts.gpu_usable;
    if (!r->root_mode) return 0;
    /* Examining a tree without loading its driver: usable unless something
       in the tree rules the GPU out. */
    for (int l = GPUENV_L1; l <= GPUENV_L3; l++)
        if (layer_has(r, l, GPUENV_FAIL)) return 0;
    return r->facts.kernel_driver[0] != 0 || r->facts.nvml_ok;
}

lector_doctor_status lector_doctor_report_status(const lector_doctor_report *r)
{
    if (!lector_doctor_report_gpu_usable(r)) return LECTOR_DOCTOR_BROKEN;
    /* warnings are reported but do not degrade: they concern other
       frameworks' habits (libcudnn.so) or performance, not usability */
    for (int l = 0; l < GPUENV_NLAYERS; l++)
        if (layer_has(r, l, GPUENV_FAIL)) return LECTOR_DOCTOR_DEGRADED;
    return LECTOR_DOCTOR_READY;
}

static const char *status_name(lector_doctor_status s)
{
    return s == LECTOR_DOCTOR_READY ? "ready" : s == LECTOR_DOCTOR_DEGRADED ? "degraded" : "broken";
}

/* The check that explains the verdict: first fail, else first warn. */
static const gpuenv_check *first_problem(const lector_doctor_report *r, int *layer)
{
    for (int pass = 0; pass < 2; pass++) {
        gpuenv_status want = pass == 0 ? GPUENV_FAIL : GPUENV_WARN;
        for (int l = 0; l < GPUENV_NLAYERS; l++)
            for (size_t j = 0; j < r->layers[l].n; j++)
                if (r->layers[l].checks[j].status == want) {
                    if (layer) *layer = l;
                    return &r->layers[l].checks[j];
                }
    }
    return NULL;
}

static void summary(const lector_doctor_report *r, gpuenv_buf *b)
{
    lector_doctor_status st = lector_doctor_report_status(r);
    const gpuenv_check *p = first_problem(r, NULL);
    if (st == LECTOR_DOCTOR_BROKEN) {
        gpuenv_buf_printf(b, "GPU unusable: %s → %s", p && p->cause[0] ? p->cause : "no working CUDA device",
                          p && p->fix[0] ? p->fix : "run `lector doctor -v` for details");
        return;
    }
    gpuenv_buf_printf(b, "GPU %s: ", st == LECTOR_DOCTOR_READY ? "ready" : "usable, degraded");
    if (st == LECTOR_DOCTOR_READY) p = NULL;
    int shown = 0;
    for (int i = 0; i < r->facts.n_gpus && i < 4; i++) {
        const gpuenv_gpu *g = &r->facts.gpus[i];
        gpuenv_buf_printf(b, "%s%s (sm_%d%d)", i ? ", " : "", g->name, g->cc_major, g->cc_minor);
        shown = 1;
    }
    if (r->facts.n_gpus > 4) gpuenv_buf_printf(b, " +%d more", r->facts.n_gpus - 4);
    const char *drv = r->facts.nvml_driver[0] ? r->facts.nvml_driver : r->facts.kernel_driver;
    if (drv[0]) gpuenv_buf_printf(b, "%sdriver %s", shown ? ", " : "", drv);
    /* the driver's own answer, else the release-notes table */
    int dc = r->facts.cuda_driver_version ? r->facts.cuda_driver_version : gpuenv_cuda_for_driver(drv);
    if (dc) gpuenv_buf_printf(b, " (CUDA %d.%d)", dc / 1000, (dc % 1000) / 10);
    if (r->facts.libs_summary[0]) gpuenv_buf_printf(b, ", %s", r->facts.libs_summary);
    if (st == LECTOR_DOCTOR_DEGRADED && p)
        gpuenv_buf_printf(b, "; but: %s → %s", p->cause[0] ? p->cause : p->finding, p->fix[0] ? p->fix : "see above");
}

char *lector_doctor_report_text(const lector_doctor_report *r)
{
    if (!r) return NULL;
    gpuenv_buf b = {0};
    int first_fail = -1;
    first_problem(r, &first_fail);
    if (first_fail >= 0 && !layer_has(r, first_fail, GPUENV_FAIL)) first_fail = -1;
    static const char *const mark[] = {"ok  ", "WARN", "FAIL", "skip"};
    for (int l = 0; l < GPUENV_NLAYERS; l++) {
        const gpuenv_layer *L = &r->layers[l];
        if (!L->n) continue;
        gpuenv_buf_printf(&b, "%s %s%s\n", L->id, L->name, l == first_fail ? "   <== first failing layer" : "");
        for (size_t j = 0; j < L->n; j++) {
            const gpuenv_check *c = &L->checks[j];
            gpuenv_buf_printf(&b, "  [%s] %-22s %s\n", mark[c->status], c->title, c->finding);
            if (c->status == GPUENV_WARN || c->status == GPUENV_FAIL) {
                if (c->cause[0]) gpuenv_buf_printf(&b, "         cause: %s\n", c->cause);
                if (c->fix[0]) gpuenv_buf_printf(&b, "         fix:   %s\n", c->fix);
            }
            int verbose = c->status == GPUENV_WARN || c->status == GPUENV_FAIL || strncmp(c->id, "l2.gpu", 6) == 0 ||
                          strncmp(c->id, "inspect", 7) == 0;
            if (verbose || r->verbose)
                for (size_t k = 0; k < c->evidence.n; k++) gpuenv_buf_printf(&b, "         - %s\n", c->evidence.v[k]);
        }
        if (l == GPUENV_LINSPECT && r->inspect_text) gpuenv_buf_printf(&b, "\n%s", r->inspect_text);
        gpuenv_buf_puts(&b, "\n");
    }
    summary(r, &b);
    gpuenv_buf_puts(&b, "\n");
    return gpuenv_buf_take(&b);
}

char *lector_doctor_report_json(const lector_doctor_report *r)
{
    if (!r) return NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    lector_doctor_status st = lector_doctor_report_status(r);
    gpuenv_buf sb = {0};
    summary(r, &sb);
    char *sum = gpuenv_buf_take(&sb);
    cJSON_AddStringToObject(root, "status", status_name(st));
    cJSON_AddBoolToObject(root, "gpu_usable", lector_doctor_report_gpu_usable(r));
    cJSON_AddStringToObject(root, "summary", sum ? sum : "");
    free(sum);
    cJSON_AddStringToObject(root, "root", r->root ? r->root : "/");
    int fl = -1;
    const gpuenv_check *p = first_problem(r, &fl);
    if (p && p->status == GPUENV_FAIL) {
        cJSON_AddStringToObject(root, "first_failing_layer", r->layers[fl].id);
        cJSON_AddStringToObject(root, "cause_code", p->code);
    } else {
        cJSON_AddNullToObject(root, "first_failing_layer");
        cJSON_AddStringToObject(root, "cause_code", p ? p->code : "");
    }
    cJSON *facts = cJSON_AddObjectToObject(root, "facts");
    cJSON_AddStringToObject(facts, "kernel_driver", r->facts.kernel_driver);
    cJSON_AddStringToObject(facts, "nvml_driver", r->facts.nvml_driver);
    cJSON_AddNumberToObject(facts, "cuda_driver_version", r->facts.cuda_driver_version);
    cJSON_AddNumberToObject(facts, "cuda_device_count", r->facts.cuda_device_count);
    cJSON *gpus = cJSON_AddArrayToObject(facts, "gpus");
    for (int i = 0; i < r->facts.n_gpus; i++) {
        const gpuenv_gpu *g = &r->facts.gpus[i];
        cJSON *o = cJSON_CreateObject();
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        cJSON_AddNumberToObject(o, "index", i);
        cJSON_AddStringToObject(o, "name", g->name);
        cJSON_AddStringToObject(o, "compute_capability", cc);
        cJSON_AddNumberToObject(o, "memory_total_mib", (double)(g->mem_total >> 20));
        cJSON_AddNumberToObject(o, "memory_used_mib", (double)(g->mem_used >> 20));
        cJSON_AddItemToArray(gpus, o);
    }
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    for (int l = 0; l < GPUENV_NLAYERS; l++) {
        const gpuenv_layer *L = &r->layers[l];
        if (!L->n) continue;
        cJSON *lo = cJSON_CreateObject();
        cJSON_AddStringToObject(lo, "id", L->id);
        cJSON_AddStringToObject(lo, "name", L->name);
        const char *ls = layer_has(r, l, GPUENV_FAIL)   ? "fail"
                         : layer_has(r, l, GPUENV_WARN) ? "warn"
                         : layer_has(r, l, GPUENV_OK)   ? "ok"
                                                        : "skip";
        cJSON_AddStringToObject(lo, "status", ls);
        cJSON *checks = cJSON_AddArrayToObject(lo, "checks");
        for (size_t j = 0; j < L->n; j++) {
            const gpuenv_check *c = &L->checks[j];
            cJSON *co = cJSON_CreateObject();
            cJSON_AddStringToObject(co, "id", c->id);
            cJSON_AddStringToObject(co, "title", c->title);
            cJSON_AddStringToObject(co, "status", gpuenv_status_str(c->status));
            cJSON_AddStringToObject(co, "finding", c->finding);
            cJSON_AddStringToObject(co, "code", c->code);
            cJSON_AddStringToObject(co, "cause", c->cause);
            cJSON_AddStringToObject(co, "fix", c->fix);
            cJSON *ev = cJSON_AddArrayToObject(co, "evidence");
            for (size_t k = 0; k < c->evidence.n; k++) cJSON_AddItemToArray(ev, cJSON_CreateString(c->evidence.v[k]));
            cJSON_AddItemToArray(checks, co);
        }
        cJSON_AddItemToArray(layers, lo);
    }
    if (r->inspect_json) {
        cJSON *dup = cJSON_Duplicate((const cJSON *)r->inspect_json, 1);
        if (dup) cJSON_AddItemToObject(root, "inspect", dup);
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s; /* cJSON uses malloc by default: free() is right */
}

char *lector_doctor_json(const lector_doctor_options *opt)
{
    lector_doctor_report *r = lector_doctor_run(opt);
    if (!r) return NULL;
    char *s = lector_doctor_report_json(r);
    lector_doctor_report_free(r);
    return s;
}
