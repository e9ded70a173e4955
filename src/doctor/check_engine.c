/* check_engine.c - L5: Lector's own CUDA backend. Which cuBLAS, cuBLASLt
 * and cuDNN it would preload by absolute path (the same finder the runtime's
 * module loader calls, src/rt/cuda_loader.c) and whether that cuDNN's split
 * libraries are complete; on the live system also the module file, its
 * dependencies, its kernels against every GPU, and a self-test through the
 * real loader. */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static void check_libraries(lector_doctor_report *r)
{
    int lm = r->facts.lector_major;
    if (!lm) {
        doctor_add(r, DOCTOR_L5, "l5.libraries", "Lector's CUDA libraries", DOCTOR_SKIP, 0, "", "", "",
                   "this build of Lector has no CUDA backend (configured without the CUDA toolkit)");
        return;
    }
    if (r->facts.libs_bundle) {
        /* the bundle's set, checked by l4.cuda_libs */
        doctor_check *b = doctor_find_check(r, "l4.cuda_libs", NULL);
        int ok = r->facts.libs_bundle == 1 && b && b->status == DOCTOR_OK;
        r->facts.lector_libs_ok = ok;
        doctor_add(r, DOCTOR_L5, "l5.libraries", "Lector's CUDA libraries", ok ? DOCTOR_OK : DOCTOR_FAIL,
                   DOCTOR_HITS_LECTOR, ok ? "" : "lector_bundle_unusable",
                   ok ? "" : "Lector's CUDA backend cannot use the bundled libraries (see l4.cuda_libs)",
                   ok ? "" : (b ? b->fix : ""), "preloads %s", b ? b->finding : "?");
        return;
    }
    static const char *const stems[] = {"cublasLt", "cublas", "cudnn"};
    gpuenv_libinfo info[3];
    const char *missing = NULL;
    for (int i = 0; i < 3; i++) {
        int rc = gpuenv_find_best_in(&r->ldso, stems[i], lm, &info[i]);
        if (rc == -2) {
            r->oom = 1;
            return;
        }
        if (rc && !missing) missing = stems[i];
    }
    if (missing) {
        r->facts.lector_libs_ok = 0;
        static const char *const pkgs[] = {"cublas", "cudnn"};
        char fix[160], *pip = doctor_fix_pip(pkgs, 2, lm);
        snprintf(fix, sizeof fix, "%s", pip ? pip : "");
        lector__free(pip);
        doctor_add(r, DOCTOR_L5, "l5.libraries", "Lector's CUDA libraries", DOCTOR_FAIL, DOCTOR_HITS_LECTOR,
                   "lector_libraries_missing",
                   "Lector's CUDA backend needs cuBLAS and cuBLASLt of its CUDA major and cuDNN 9, and finds no "
                   "usable copy in the loader's path or where installers put them: Lector runs on the CPU",
                   fix, "no usable lib%s for CUDA %d", missing, lm);
        return;
    }
    char why[512];
    int cudnn_major = gpuenv_ver_major(info[2].version) > 0 ? gpuenv_ver_major(info[2].version) : 9;
    int rc = doctor_cudnn_split_state(r, info[2].path, cudnn_major, why, sizeof why);
    if (rc == -2) {
        r->oom = 1;
        return;
    }
    doctor_check *c;
    if (rc) {
        r->facts.lector_libs_ok = 0;
        /* a partial copy on LD_LIBRARY_PATH goes; a damaged install is redone */
        char *dir = doctor_own(r, gpuenv_dirname(info[2].real));
        char *fix = info[2].via == GPUENV_VIA_LD_LIBRARY_PATH ? doctor_fix_path_away(r, info[2].path)
                                                              : doctor_fix_reinstall_cudnn(r, dir, cudnn_major, lm);
        fix = doctor_own(r, fix);
        c = doctor_add(r, DOCTOR_L5, "l5.libraries", "Lector's CUDA libraries", DOCTOR_FAIL, DOCTOR_HITS_LECTOR,
                       "lector_cudnn_unusable",
                       "The cuDNN Lector would preload is unusable (its split libraries are missing or of another "
                       "version): the CUDA backend fails to start and Lector runs on the CPU",
                       fix ? fix : "", "%s: %s", info[2].path, why);
        lector__free(fix);
        lector__free(dir);
    } else {
        r->facts.lector_libs_ok = 1;
        c = doctor_add(r, DOCTOR_L5, "l5.libraries", "Lector's CUDA libraries", DOCTOR_OK, 0, "", "", "",
                       "preloads %s, %s, %s", info[0].real, info[1].real, info[2].real);
    }
    for (int i = 0; i < 3; i++)
        doctor_evidence(r, c, "lib%s: %s -> %s [%s] (via %s)", stems[i], info[i].path, info[i].real, info[i].version,
                        gpuenv_via_str(info[i].via));
}

static void check_module(lector_doctor_report *r)
{
    if (r->root_mode) {
        doctor_add(r, DOCTOR_L5, "l5.module", "Lector CUDA module", DOCTOR_SKIP, 0, "", "", "",
                   "examining a tree (--root): the module is checked on the live system only");
        return;
    }
    if (!r->facts.lector_built_major) return;
    char path[4200];
    int where = gpuenv_cuda_module_path(path, sizeof path);
    if (where) {
        doctor_add(r, DOCTOR_L5, "l5.module", "Lector CUDA module", DOCTOR_WARN, DOCTOR_HITS_LECTOR,
                   "lector_cuda_module_missing",
                   "liblector-cuda.so is not installed next to lector (a build without the CUDA toolkit, or a copied "
                   "binary); lector runs on the CPU",
                   "export LECTOR_CUDA_MODULE=/path/to/liblector-cuda.so (or use the offline bundle)",
                   "not found: %s%s", path, where == -2 ? " (or ../lib/)" : "");
        return;
    }
    gpuenv_load ld;
    if (gpuenv_ldso_load_file(&r->ldso, path, &ld)) {
        r->oom = 1;
        return;
    }
    if (!ld.n) {
        doctor_add(r, DOCTOR_L5, "l5.module", "Lector CUDA module", DOCTOR_FAIL, DOCTOR_HITS_LECTOR,
                   "lector_cuda_module_bad", "the file is not a loadable ELF shared object",
                   "reinstall lector (the offline bundle ships lib/liblector-cuda.so)", "%s", path);
        gpuenv_load_free(&ld);
        return;
    }
    /* cuBLAS and cuDNN are preloaded by absolute path; the rest must resolve */
    gpuenv_strv other = {0};
    for (size_t i = 0; i < ld.missing.n; i++)
        if (strncmp(ld.missing.v[i], "libcublas", 9) && strncmp(ld.missing.v[i], "libcudnn", 8) &&
            gpuenv_strv_push(&other, ld.missing.v[i]))
            r->oom = 1;
    doctor_check *c;
    if (other.n)
        c = doctor_add(r, DOCTOR_L5, "l5.module", "Lector CUDA module", DOCTOR_FAIL, DOCTOR_HITS_LECTOR,
                       "lector_cuda_deps_missing",
                       "liblector-cuda.so needs libraries the loader cannot find: the CUDA backend cannot load",
                       "reinstall lector (the offline bundle ships its dependencies in lib/)", "%s: missing %s", path,
                       other.v[0]);
    else
        c = doctor_add(r, DOCTOR_L5, "l5.module", "Lector CUDA module", DOCTOR_OK, 0, "", "", "", "%s", path);
    gpuenv_strv_free(&other);
    for (size_t i = 0; i < ld.n_edge; i++)
        doctor_evidence(r, c, "%s => %s", ld.edge[i].name,
                        ld.edge[i].to >= 0 ? ld.obj[ld.edge[i].to]->path : "NOT FOUND (preloaded by the loader)");
    /* kernels: the module's .nv_fatbin against every GPU */
    const gpuenv_elf *e = &ld.obj[0]->elf;
    gpuenv_fatbin fb;
    if (e->fatbin_size && !gpuenv_fatbin_scan(e->fatbin, e->fatbin_size, &fb)) {
        char *d = doctor_own(r, gpuenv_fatbin_describe(&fb));
        int bad = 0;
        for (int g = 0; g < r->facts.n_gpus; g++) {
            const doctor_gpu *gp = &r->facts.gpus[g];
            if (gp->cc_major && !gpuenv_fatbin_runs_on(&fb, gp->cc_major, gp->cc_minor)) {
                bad++;
                char fix[160];
                snprintf(fix, sizeof fix, "cmake -S . -B build -DCMAKE_CUDA_ARCHITECTURES=%d%d && cmake --build build",
                         gp->cc_major, gp->cc_minor);
                doctor_add(r, DOCTOR_L5, "l5.kernels", "CUDA module kernels", DOCTOR_FAIL, DOCTOR_HITS_LECTOR,
                           "lector_no_kernels_for_gpu",
                           "liblector-cuda.so has no machine code and no PTX this GPU can run", fix,
                           "GPU %d %s is sm_%d%d; the module has %s", g, gp->name, gp->cc_major, gp->cc_minor,
                           d ? d : "?");
            }
        }
        if (!bad)
            doctor_add(r, DOCTOR_L5, "l5.kernels", "CUDA module kernels", DOCTOR_OK, 0, "", "", "", "%s%s", d ? d : "?",
                       r->facts.n_gpus ? " (runs on every GPU found)" : "");
        lector__free(d);
    }
    gpuenv_load_free(&ld);
    doctor_check_shipped_kernels(r, path);
}

static void check_selftest(lector_doctor_report *r)
{
    if (r->root_mode || !r->facts.lector_built_major) return;
    if (!r->facts.gpu_usable || r->facts.lector_libs_ok != 1) {
        doctor_add(r, DOCTOR_L5, "l5.selftest", "Engine self-test", DOCTOR_SKIP, 0, "", "", "",
                   "no usable GPU or libraries in the layers above");
        return;
    }
    char msg[600];
    if (lector_engine_gpu_selftest(0, msg, sizeof msg)) {
        char *q = doctor_own(r, gpuenv_shell_quote(msg));
        char *fix = q ? doctor_own(r, gpuenv_asprintf("lector explain %s", q)) : NULL;
        doctor_add(r, DOCTOR_L5, "l5.selftest", "Engine self-test", DOCTOR_FAIL, DOCTOR_HITS_LECTOR,
                   "lector_cuda_selftest_failed", "the CUDA backend could not start on GPU 0", fix ? fix : "", "%s",
                   msg);
        lector__free(q);
        lector__free(fix);
    } else
        doctor_add(r, DOCTOR_L5, "l5.selftest", "Engine self-test", DOCTOR_OK, 0, "", "", "", "%s", msg);
}

void doctor_check_engine(lector_doctor_report *r, const lector_doctor_options *opt)
{
    (void)opt;
    check_libraries(r);
    check_module(r);
    check_selftest(r);
}
