/* render_json.c - the --json document (schema in docs/DOCTOR.md). */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static const char *status_name(lector_doctor_status s)
{
    return s == LECTOR_DOCTOR_READY ? "ready" : s == LECTOR_DOCTOR_DEGRADED ? "degraded" : "broken";
}

static void hits_array(doctor_json *j, int hits)
{
    doctor_json_open(j, '[', "hits");
    if (hits & DOCTOR_HITS_GPU) doctor_json_str(j, NULL, "gpu");
    if (hits & DOCTOR_HITS_LECTOR) doctor_json_str(j, NULL, "lector");
    if (hits & DOCTOR_HITS_NAMED) doctor_json_str(j, NULL, "name_based_loaders");
    if (hits & DOCTOR_HITS_INSPECTED) doctor_json_str(j, NULL, "inspected");
    doctor_json_close(j, ']');
}

static int layer_has(const lector_doctor_report *r, int layer, doctor_status st)
{
    for (size_t j = 0; j < r->layers[layer].n; j++)
        if (r->layers[layer].checks[j].status == st) return 1;
    return 0;
}

static int hit_by_fail(const lector_doctor_report *r, int hits)
{
    for (int l = 0; l < DOCTOR_NLAYERS; l++)
        for (size_t j = 0; j < r->layers[l].n; j++)
            if (r->layers[l].checks[j].status == DOCTOR_FAIL && (r->layers[l].checks[j].hits & hits)) return 1;
    return 0;
}

static void inspect_json(doctor_json *j, const doctor_inspect *ins)
{
    const gpuenv_load *ld = &ins->load;
    doctor_json_open(j, '{', NULL);
    doctor_json_str(j, "file", ins->file);
    if (ld->error) doctor_json_str(j, "error", ld->error);
    doctor_json_open(j, '[', "objects");
    for (size_t i = 0; i < ld->n; i++) {
        const gpuenv_obj *o = ld->obj[i];
        if (o->assumed) continue;
        doctor_json_open(j, '{', NULL);
        doctor_json_str(j, "path", o->path);
        doctor_json_str(j, "real", o->real ? o->real : o->path);
        if (o->elf.soname) doctor_json_str(j, "soname", o->elf.soname);
        doctor_json_str(j, "via", gpuenv_via_str(i == 0 ? GPUENV_VIA_PATH : o->via));
        doctor_json_close(j, '}');
    }
    doctor_json_close(j, ']');
    doctor_json_open(j, '[', "missing");
    for (size_t i = 0; i < ld->missing.n; i++) doctor_json_str(j, NULL, ld->missing.v[i]);
    doctor_json_close(j, ']');
    doctor_json_open(j, '[', "gpu_libraries");
    for (size_t i = 1; i < ld->n; i++) {
        const gpuenv_obj *o = ld->obj[i];
        const char *b = gpuenv_basename(o->path);
        if (o->assumed || strncmp(b, "lib", 3) != 0) continue;
        if (strncmp(b, "libcu", 5) && strncmp(b, "libnv", 5) && strncmp(b, "libnccl", 7)) continue;
        char *v = gpuenv_soname_version(o->real ? o->real : o->path);
        doctor_json_open(j, '{', NULL);
        doctor_json_str(j, "name", b);
        doctor_json_str(j, "path", o->real ? o->real : o->path);
        doctor_json_str(j, "version", v ? v : "");
        doctor_json_close(j, '}');
        lector__free(v);
    }
    doctor_json_close(j, ']');
    doctor_json_open(j, '[', "gpu_code");
    for (size_t i = 0; i < ld->n; i++) {
        const gpuenv_elf *e = &ld->obj[i]->elf;
        gpuenv_fatbin fb;
        if (!e->fatbin_size || gpuenv_fatbin_scan(e->fatbin, e->fatbin_size, &fb)) continue;
        doctor_json_open(j, '{', NULL);
        doctor_json_str(j, "object", ld->obj[i]->path);
        doctor_json_open(j, '[', "sass");
        for (int a = 0; a < 256; a++)
            if (fb.sass[a]) doctor_json_num(j, NULL, a);
        doctor_json_close(j, ']');
        doctor_json_open(j, '[', "ptx");
        for (int a = 0; a < 256; a++)
            if (fb.ptx[a]) doctor_json_num(j, NULL, a);
        doctor_json_close(j, ']');
        doctor_json_close(j, '}');
    }
    doctor_json_close(j, ']');
    doctor_json_close(j, '}');
}

char *lector_doctor_report_json(const lector_doctor_report *r)
{
    if (!r) return NULL;
    doctor_json j;
    memset(&j, 0, sizeof j);
    lector_doctor_status st = doctor_status_of(r);
    gpuenv_buf sb = {0};
    doctor_summary(r, &sb);
    char *sum = gpuenv_buf_take(&sb);
    doctor_json_open(&j, '{', NULL);
    doctor_json_str(&j, "status", status_name(st));
    doctor_json_bool(&j, "gpu_usable", doctor_lector_gpu_usable(r));
    doctor_json_str(&j, "summary", sum ? sum : "");
    lector__free(sum);
    doctor_json_str(&j, "root", r->root ? r->root : "/");
    int fl = -1;
    const doctor_check *p = doctor_root_cause(r, &fl);
    if (p && p->status == DOCTOR_FAIL && st != LECTOR_DOCTOR_READY) {
        doctor_json_str(&j, "first_failing_layer", r->layers[fl].id);
        doctor_json_str(&j, "cause_code", p->code);
        doctor_json_open(&j, '{', "root_cause");
        doctor_json_str(&j, "layer", r->layers[fl].id);
        doctor_json_str(&j, "check", p->id);
        doctor_json_str(&j, "code", p->code);
        doctor_json_str(&j, "cause", p->cause);
        doctor_json_str(&j, "fix", p->fix);
        hits_array(&j, p->hits);
        doctor_json_close(&j, '}');
    } else {
        doctor_json_null(&j, "first_failing_layer");
        doctor_json_str(&j, "cause_code", p ? p->code : "");
        doctor_json_null(&j, "root_cause");
    }
    doctor_json_open(&j, '{', "impact");
    doctor_json_str(&j, "lector", doctor_lector_gpu_usable(r) ? "gpu" : "cpu_only");
    doctor_json_str(&j, "name_based_loaders", hit_by_fail(r, DOCTOR_HITS_GPU | DOCTOR_HITS_NAMED) ? "broken" : "ok");
    doctor_json_str(&j, "inspected", !r->n_inspect ? "none" : hit_by_fail(r, DOCTOR_HITS_INSPECTED) ? "broken" : "ok");
    doctor_json_close(&j, '}');
    doctor_json_open(&j, '{', "facts");
    doctor_json_str(&j, "kernel_driver", r->facts.kernel_driver);
    doctor_json_str(&j, "nvml_driver", r->facts.nvml_driver);
    doctor_json_str(&j, "libcuda_driver", r->facts.libcuda_version);
    doctor_json_num(&j, "cuda_driver_version", r->facts.cuda_driver_version);
    doctor_json_num(&j, "cuda_device_count", r->facts.cuda_device_count);
    doctor_json_num(&j, "lector_cuda_major", r->facts.lector_major);
    doctor_json_bool(&j, "wsl", r->facts.wsl);
    doctor_json_bool(&j, "container", r->facts.in_container);
    doctor_json_open(&j, '[', "gpus");
    for (int i = 0; i < r->facts.n_gpus; i++) {
        const doctor_gpu *g = &r->facts.gpus[i];
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        doctor_json_open(&j, '{', NULL);
        doctor_json_num(&j, "index", i);
        doctor_json_str(&j, "name", g->name);
        doctor_json_str(&j, "compute_capability", cc);
        doctor_json_num(&j, "memory_total_mib", (double)(g->mem_total >> 20));
        doctor_json_num(&j, "memory_used_mib", (double)(g->mem_used >> 20));
        doctor_json_close(&j, '}');
    }
    doctor_json_close(&j, ']');
    doctor_json_close(&j, '}');
    doctor_json_open(&j, '[', "layers");
    for (int l = 0; l < DOCTOR_NLAYERS; l++) {
        const doctor_layer *L = &r->layers[l];
        if (!L->n) continue;
        doctor_json_open(&j, '{', NULL);
        doctor_json_str(&j, "id", L->id);
        doctor_json_str(&j, "name", L->name);
        doctor_json_str(&j, "status",
                        layer_has(r, l, DOCTOR_FAIL)   ? "fail"
                        : layer_has(r, l, DOCTOR_WARN) ? "warn"
                        : layer_has(r, l, DOCTOR_OK)   ? "ok"
                                                       : "skip");
        doctor_json_open(&j, '[', "checks");
        for (size_t k = 0; k < L->n; k++) {
            const doctor_check *c = &L->checks[k];
            doctor_json_open(&j, '{', NULL);
            doctor_json_str(&j, "id", c->id);
            doctor_json_str(&j, "title", c->title);
            doctor_json_str(&j, "status", doctor_status_str(c->status));
            doctor_json_str(&j, "finding", c->finding);
            doctor_json_str(&j, "code", c->code);
            doctor_json_str(&j, "cause", c->cause);
            doctor_json_str(&j, "fix", c->fix);
            hits_array(&j, c->hits);
            doctor_json_open(&j, '[', "evidence");
            for (size_t e = 0; e < c->evidence.n; e++) doctor_json_str(&j, NULL, c->evidence.v[e]);
            doctor_json_close(&j, ']');
            doctor_json_close(&j, '}');
        }
        doctor_json_close(&j, ']');
        doctor_json_close(&j, '}');
    }
    doctor_json_close(&j, ']');
    if (r->n_inspect) {
        doctor_json_open(&j, '[', "inspect");
        for (size_t i = 0; i < r->n_inspect; i++) inspect_json(&j, &r->inspect[i]);
        doctor_json_close(&j, ']');
    }
    doctor_json_close(&j, '}');
    return gpuenv_buf_take(&j.b);
}
