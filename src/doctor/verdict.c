/* verdict.c - the status, the root cause and the one-line summary.
 *
 * broken:   the GPU cannot be used by anyone (a failure that hits the
 *           driver layers, or no working context), or Lector's own CUDA
 *           backend cannot start, or a file given to --inspect cannot load;
 * degraded: Lector can use the GPU, but something failed: typically a
 *           library programs load by name (Paddle, ONNX Runtime, torch)
 *           does not load, while Lector, which preloads by absolute path,
 *           gets a good copy;
 * ready:    nothing failed (warnings are listed, they do not change it).
 * The headline is the root cause: a failure that takes the GPU from
 * everyone, in the lowest layer (a missing kernel module explains a failing
 * NVML and cuInit, not the other way round); else the file given to
 * --inspect, which is what the user asked about; else among the failures
 * that make the status the one in the lowest layer, the driver's before
 * Lector's before the rest within a layer. */
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"

static int any_fail(const lector_doctor_report *r, int hits)
{
    for (int l = 0; l < DOCTOR_NLAYERS; l++)
        for (size_t j = 0; j < r->layers[l].n; j++) {
            const doctor_check *c = &r->layers[l].checks[j];
            if (c->status == DOCTOR_FAIL && (!hits || (c->hits & hits))) return 1;
        }
    return 0;
}

static int driver_ok(const lector_doctor_report *r)
{
    if (any_fail(r, DOCTOR_HITS_GPU)) return 0;
    if (r->facts.cuda_probed) return r->facts.gpu_usable;
    return r->root_mode; /* a tree: nothing in it rules the GPU out */
}

int doctor_lector_gpu_usable(const lector_doctor_report *r)
{
    return r && driver_ok(r) && !any_fail(r, DOCTOR_HITS_LECTOR);
}

lector_doctor_status doctor_status_of(const lector_doctor_report *r)
{
    if (!doctor_lector_gpu_usable(r) || any_fail(r, DOCTOR_HITS_INSPECTED)) return LECTOR_DOCTOR_BROKEN;
    return any_fail(r, 0) ? LECTOR_DOCTOR_DEGRADED : LECTOR_DOCTOR_READY;
}

lector_doctor_status lector_doctor_report_status(const lector_doctor_report *r) { return doctor_status_of(r); }

int lector_doctor_report_gpu_usable(const lector_doctor_report *r) { return doctor_lector_gpu_usable(r); }

static int rank_hits(int hits)
{
    if (hits & DOCTOR_HITS_GPU) return 0;
    if (hits & DOCTOR_HITS_LECTOR) return 1;
    if (hits & DOCTOR_HITS_INSPECTED) return 2;
    return 3;
}

const doctor_check *doctor_root_cause(const lector_doctor_report *r, int *layer)
{
    lector_doctor_status st = doctor_status_of(r);
    int want = st == LECTOR_DOCTOR_BROKEN ? DOCTOR_HITS_GPU | DOCTOR_HITS_LECTOR | DOCTOR_HITS_INSPECTED : 0;
    /* a failure that takes the GPU from everyone; then what the user asked
       about (--inspect); then what makes the status; then any failure;
       then warnings */
    static const struct {
        doctor_status st;
        int hits; /* -1: the status-making ones, 0: any */
    } passes[] = {{DOCTOR_FAIL, DOCTOR_HITS_GPU},
                  {DOCTOR_FAIL, DOCTOR_HITS_INSPECTED},
                  {DOCTOR_FAIL, -1},
                  {DOCTOR_FAIL, 0},
                  {DOCTOR_WARN, 0}};
    for (size_t pass = 0; pass < sizeof passes / sizeof *passes; pass++) {
        int mask = passes[pass].hits < 0 ? want : passes[pass].hits;
        if (passes[pass].hits < 0 && !want) continue;
        for (int l = 0; l < DOCTOR_NLAYERS; l++) {
            const doctor_check *best = NULL;
            for (size_t j = 0; j < r->layers[l].n; j++) {
                const doctor_check *c = &r->layers[l].checks[j];
                if (c->status != passes[pass].st || (mask && !(c->hits & mask))) continue;
                if (!best || rank_hits(c->hits) < rank_hits(best->hits)) best = c;
            }
            if (best) {
                if (layer) *layer = l;
                return best;
            }
        }
    }
    return NULL;
}

static void machine(const lector_doctor_report *r, gpuenv_buf *b)
{
    int shown = 0;
    for (int i = 0; i < r->facts.n_gpus && i < 4; i++) {
        const doctor_gpu *g = &r->facts.gpus[i];
        gpuenv_buf_printf(b, "%s%s (sm_%d%d)", i ? ", " : "", g->name, g->cc_major, g->cc_minor);
        shown = 1;
    }
    if (r->facts.n_gpus > 4) gpuenv_buf_printf(b, " +%d more", r->facts.n_gpus - 4);
    const char *drv = r->facts.nvml_driver[0] ? r->facts.nvml_driver : r->facts.kernel_driver;
    if (!drv[0]) drv = r->facts.libcuda_version;
    if (drv[0]) gpuenv_buf_printf(b, "%sdriver %s", shown ? ", " : "", drv);
    int dc = r->facts.cuda_driver_version ? r->facts.cuda_driver_version : gpuenv_cuda_for_driver(drv);
    if (dc) gpuenv_buf_printf(b, " (CUDA %d.%d)", dc / 1000, (dc % 1000) / 10);
    if (r->facts.libs_summary[0]) gpuenv_buf_printf(b, "%s%s", shown || drv[0] ? ", " : "", r->facts.libs_summary);
}

/* The file an inspect check is about (ids are "inspect.<index>.<what>"). */
static const char *inspected_name(const lector_doctor_report *r, const doctor_check *c)
{
    size_t i = (size_t)strtoul(c->id + strlen("inspect."), NULL, 10);
    return i < r->n_inspect && r->inspect[i].file ? gpuenv_basename(r->inspect[i].file) : c->title;
}

void doctor_summary(const lector_doctor_report *r, gpuenv_buf *b)
{
    lector_doctor_status st = doctor_status_of(r);
    int layer = -1;
    const doctor_check *p = doctor_root_cause(r, &layer);
    const char *cause = p && p->cause[0] ? p->cause : p ? p->finding : "";
    const char *fix = p && p->fix[0] ? p->fix : "run `lector doctor -v` for details";
    if (st == LECTOR_DOCTOR_BROKEN) {
        if (layer == DOCTOR_LINSPECT)
            gpuenv_buf_printf(b, "%s cannot run: %s → %s%s", inspected_name(r, p), cause, fix,
                              doctor_lector_gpu_usable(r) ? " (Lector itself can use the GPU)"
                                                          : " (Lector's CUDA backend cannot start either: see L5)");
        else
            gpuenv_buf_printf(b, "GPU unusable: %s → %s", p ? cause : "no working CUDA device", fix);
        return;
    }
    if (st == LECTOR_DOCTOR_DEGRADED && p && !(p->hits & (DOCTOR_HITS_GPU | DOCTOR_HITS_LECTOR))) {
        gpuenv_buf_puts(b, "GPU ready for Lector, broken for programs that load CUDA libraries by name (Paddle, "
                           "ONNX Runtime, torch): ");
        gpuenv_buf_printf(b, "%s → %s", cause, fix);
        return;
    }
    gpuenv_buf_printf(b, "GPU %s: ", st == LECTOR_DOCTOR_READY ? "ready" : "usable by Lector, degraded");
    machine(r, b);
    if (st == LECTOR_DOCTOR_DEGRADED && p) gpuenv_buf_printf(b, "; but: %s → %s", cause, fix);
}
