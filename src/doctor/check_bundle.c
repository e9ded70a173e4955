/* check_bundle.c - L4: which CUDA libraries Lector's backend loads, the
 * offline bundle's set (its CUDA archive unpacked beside liblector-cuda.so,
 * gpuenv_bundle) or the system's, by the same rule as the module loader
 * (--cuda-libs / LECTOR_CUDA_LIBS, gpuenv_bundle_decide); for the bundle's
 * set, whether the driver supports its CUDA release and the GPUs its
 * architecture floor. The other L4 checks then judge the system's copies for
 * Lector only when Lector uses them (facts.libs_bundle). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static const char *const needs[] = {"cublasLt", "cublas", "cudnn", NULL};

/* The driver's CUDA (1000*major+10*minor), 0 unknown. */
static int driver_cuda(const lector_doctor_report *r)
{
    if (r->facts.cuda_driver_version > 0) return r->facts.cuda_driver_version;
    const char *d = r->facts.nvml_driver[0] ? r->facts.nvml_driver : r->facts.kernel_driver;
    return gpuenv_cuda_for_driver(d[0] ? d : r->facts.libcuda_version);
}

void doctor_check_bundle(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    const char *id = "l4.cuda_libs", *title = "Lector's CUDA library set";
    r->facts.libs_bundle = 0;
    int lm = r->facts.lector_major;
    if (!lm || r->root_mode) return; /* no module, or not this machine's */
    char path[4200];
    if (gpuenv_cuda_module_path(path, sizeof path)) return; /* L5 says the module is missing */
    char *dir = doctor_own(r, gpuenv_dirname(path));
    if (!dir) return;
    gpuenv_bundle b;
    if (gpuenv_bundle_read(dir, lm, needs, &b)) {
        lector__free(dir);
        r->oom = 1;
        return;
    }
    const char *setting = gpuenv_libs_setting();
    gpuenv_libs_choice choice = GPUENV_LIBS_AUTO;
    gpuenv_libs_choice_parse(setting, &choice);
    char why[sizeof b.why + 128];
    int use = gpuenv_bundle_decide(NULL, &b, why, sizeof why);
    char unpack[600];
    snprintf(unpack, sizeof unpack,
             "tar -xJf lector-<version>-cuda%d-linux-x86_64.tar.xz -C %s/../.. (again), or "
             "--cuda-libs system",
             lm, dir);
    if (use < 0) {
        r->facts.libs_bundle = -1;
        doctor_add(r, DOCTOR_L4, id, title, DOCTOR_FAIL, DOCTOR_HITS_LECTOR,
                   b.present ? "cuda_bundle_incomplete" : "cuda_bundle_missing",
                   "Lector is told to load the bundled CUDA libraries (--cuda-libs bundle), and they are not "
                   "usable: its CUDA backend does not start",
                   unpack, "%s", why);
    } else if (use == 0) {
        doctor_check *c;
        if (b.present && !b.complete)
            c = doctor_add(r, DOCTOR_L4, id, title, DOCTOR_WARN, DOCTOR_HITS_LECTOR, "cuda_bundle_incomplete",
                           "The bundle's CUDA libraries are incomplete, so Lector loads the system's instead "
                           "(--cuda-libs auto)",
                           unpack, "the system's (the bundled set is not used: %s)", b.why);
        else
            c = doctor_add(r, DOCTOR_L4, id, title, DOCTOR_OK, 0, "", "", "", "the system's (--cuda-libs %s%s)",
                           gpuenv_libs_choice_str(choice),
                           choice == GPUENV_LIBS_SYSTEM ? "" : "; no bundled CUDA libraries beside the module");
        doctor_evidence(r, c, "%s", b.list);
    } else {
        r->facts.libs_bundle = 1;
        char cause[512], fix[512];
        int dc = driver_cuda(r);
        doctor_check *c;
        if (!gpuenv_bundle_driver_ok(dc, b.cuda, cause, sizeof cause, fix, sizeof fix)) {
            c = doctor_add(r, DOCTOR_L4, id, title, DOCTOR_FAIL, DOCTOR_HITS_LECTOR, "driver_too_old_for_bundle", cause,
                           fix, "the bundled CUDA %s libraries in %s; the driver supports CUDA %d.%d", b.cuda, b.dir,
                           dc / 1000, (dc % 1000) / 10);
        } else {
            gpuenv_buf s = {0};
            static const struct {
                const char *stem, *label;
            } fam[] = {{"cublas", "cuBLAS"}, {"cudnn", "cuDNN"}, {"nvrtc", "NVRTC"}};
            for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
                char v[64];
                if (!gpuenv_bundle_version_of(&b, fam[i].stem, v, sizeof v))
                    gpuenv_buf_printf(&s, "%s%s %s", s.len ? ", " : "", fam[i].label, v);
            }
            char *sum = doctor_own(r, gpuenv_buf_take(&s));
            if (sum) snprintf(r->facts.libs_summary, sizeof r->facts.libs_summary, "bundled CUDA %s: %s", b.cuda, sum);
            c = doctor_add(r, DOCTOR_L4, id, title, DOCTOR_OK, 0, "", "", "",
                           "the bundled CUDA %s libraries in %s (--cuda-libs %s): %s", b.cuda, b.dir,
                           gpuenv_libs_choice_str(choice), sum ? sum : "");
            lector__free(sum);
            /* the GPUs against the release's architecture floor */
            int min = gpuenv_min_cc_for_cuda(gpuenv_ver_major(b.cuda));
            for (int g = 0; g < r->facts.n_gpus && min; g++) {
                const doctor_gpu *gp = &r->facts.gpus[g];
                int cc = gp->cc_major * 10 + gp->cc_minor;
                if (!gp->cc_major || cc >= min) continue;
                doctor_set(r, c, DOCTOR_FAIL, DOCTOR_HITS_LECTOR, "gpu_too_old_for_cuda",
                           "The GPU is older than the bundled CUDA release supports: its libraries carry no code "
                           "for it",
                           "use --cuda-libs system with CUDA libraries of an older release that still builds for "
                           "this GPU");
                doctor_evidence(r, c, "GPU %d %s is sm_%d%d; CUDA %s supports sm_%d and newer", g, gp->name,
                                gp->cc_major, gp->cc_minor, b.cuda, min);
                break;
            }
        }
        for (size_t i = 0; i < b.files.n; i++)
            doctor_evidence(r, c, "%s/%s [%s]", b.dir, b.files.v[i], b.versions.v[i][0] ? b.versions.v[i] : "?");
    }
    gpuenv_bundle_free(&b);
    lector__free(dir);
}
