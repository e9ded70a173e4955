/* run.c - one loop over the table of steps (redis syscheck.c style). The
 * order matters: each layer reads the facts the ones below it gathered. */
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

typedef struct doctor_step {
    const char *id;
    int layer;
    doctor_step_fn fn;
} doctor_step;

static const doctor_step steps[] = {
    {"system", DOCTOR_L0, doctor_check_system},        /* OS, container, environment */
    {"kernel", DOCTOR_L1, doctor_check_kernel},        /* module, device nodes, nvidia_uvm */
    {"nvml", DOCTOR_L2, doctor_check_nvml},            /* libnvidia-ml: file, driver, GPUs */
    {"cudadrv", DOCTOR_L3, doctor_check_cudadrv},      /* libcuda: file, cuInit, contexts */
    {"visible", DOCTOR_L3, doctor_check_visible},      /* CUDA_VISIBLE_DEVICES against the GPUs */
    {"ldconf", DOCTOR_L4, doctor_check_ldconf},        /* ld.so.conf against ld.so.cache */
    {"bundle", DOCTOR_L4, doctor_check_bundle},        /* the bundle's CUDA libraries or the system's */
    {"libs", DOCTOR_L4, doctor_check_libs},            /* CUDA libraries by name, versions */
    {"engine", DOCTOR_L5, doctor_check_engine},        /* Lector's own module and libraries */
    {"inspect", DOCTOR_LINSPECT, doctor_check_inspect} /* --inspect FILE... */
};

static const char *const layer_ids[DOCTOR_NLAYERS] = {"L0", "L1", "L2", "L3", "L4", "L5", "inspect"};
static const char *const layer_names[DOCTOR_NLAYERS] = {
    "system", "kernel driver", "NVML", "CUDA driver API", "CUDA libraries", "Lector engine", "inspected files"};

#ifndef LECTOR_CUDA_MAJOR
#define LECTOR_CUDA_MAJOR 0 /* built without the CUDA toolkit: no module */
#endif

void lector_doctor_default_options(lector_doctor_options *opt) { memset(opt, 0, sizeof *opt); }

const char *doctor_nvml_path(const lector_doctor_options *opt, int root_mode)
{
    if (opt->nvml_path && *opt->nvml_path) return opt->nvml_path;
    const char *e = getenv("LECTOR_DOCTOR_NVML");
    if (e && *e) return e;
    return root_mode ? NULL : "libnvidia-ml.so.1";
}

const char *doctor_libcuda_path(const lector_doctor_options *opt, int root_mode)
{
    if (opt->libcuda_path && *opt->libcuda_path) return opt->libcuda_path;
    const char *e = getenv("LECTOR_DOCTOR_LIBCUDA");
    if (e && *e) return e;
    return root_mode ? NULL : "libcuda.so.1";
}

lector_doctor_report *lector_doctor_run(const lector_doctor_options *opt)
{
    lector_doctor_options defaults;
    if (!opt) {
        lector_doctor_default_options(&defaults);
        opt = &defaults;
    }
    /* A failed allocation deep in a helper may read as "file absent": any
       failure during the run makes the run fail, rather than report on
       half-read facts. */
    long failures = lector__alloc_failures();
    lector_doctor_report *r = lector__calloc(1, sizeof *r);
    if (!r) return NULL;
    for (int i = 0; i < DOCTOR_NLAYERS; i++) {
        r->layers[i].id = layer_ids[i];
        r->layers[i].name = layer_names[i];
    }
    if (!gpuenv_is_live(opt->root)) {
        r->root_mode = 1;
        if (!(r->root = lector__strdup(opt->root))) {
            lector__free(r);
            return NULL;
        }
    }
    r->verbose = opt->verbose;
    r->facts.cuda_device_count = -1;
    r->facts.nvml_count = -1;
    r->facts.proc_gpus = -1;
    r->facts.lector_major = opt->lector_cuda_major > 0 ? opt->lector_cuda_major : LECTOR_CUDA_MAJOR;
    r->facts.lector_built_major = LECTOR_CUDA_MAJOR;
    r->facts.lector_libs_ok = -1;
    if (gpuenv_ldso_init(&r->ldso, r->root, opt->ld_library_path, opt->ld_preload)) {
        lector_doctor_report_free(r);
        return NULL;
    }
    for (size_t i = 0; i < sizeof steps / sizeof steps[0] && !r->oom; i++) steps[i].fn(r, opt);
    if (r->oom || lector__alloc_failures() != failures) {
        lector_doctor_report_free(r);
        return NULL;
    }
    return r;
}

void lector_doctor_report_free(lector_doctor_report *r)
{
    if (!r) return;
    for (int i = 0; i < DOCTOR_NLAYERS; i++) {
        doctor_layer *L = &r->layers[i];
        for (size_t j = 0; j < L->n; j++) {
            doctor_check *c = &L->checks[j];
            lector__free(c->id);
            lector__free(c->title);
            lector__free(c->finding);
            lector__free(c->code);
            lector__free(c->cause);
            lector__free(c->fix);
            gpuenv_strv_free(&c->evidence);
        }
        lector__free(L->checks);
    }
    for (size_t i = 0; i < r->n_inspect; i++) {
        lector__free(r->inspect[i].file);
        lector__free(r->inspect[i].error);
        gpuenv_load_free(&r->inspect[i].load);
    }
    lector__free(r->inspect);
    gpuenv_ldso_free(&r->ldso);
    lector__free(r->root);
    lector__free(r);
}

void lector_doctor_string_free(char *s) { lector__free(s); }

char *lector_doctor_json(const lector_doctor_options *opt)
{
    lector_doctor_report *r = lector_doctor_run(opt);
    if (!r) return NULL;
    char *s = lector_doctor_report_json(r);
    lector_doctor_report_free(r);
    return s;
}
