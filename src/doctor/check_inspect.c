/* check_inspect.c - `lector doctor --inspect FILE`: load an ELF's dependency
 * graph the way ld.so would (breadth first, each SONAME once; gpuenv's
 * emulation, preloads included), report what is missing with a fix, check
 * the GPU libraries it resolves against the driver and each other (as L4
 * does for name-based loading), and the GPU code embedded in every object
 * against the GPUs present - predicting "no kernel image is available for
 * execution on the device" before anything runs. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static const char *const gpu_stems[] = {"cudart",   "cublas",   "cublasLt", "cudnn",     "nvrtc", "cufft",   "curand",
                                        "cusparse", "cusolver", "nccl",     "nvJitLink", "cuda",  "nvinfer", NULL};

/* "libcublasLt.so.12" -> "cublasLt" (NULL when not a CUDA library) */
static const char *gpu_stem(const char *base)
{
    for (int i = 0; gpu_stems[i]; i++) {
        size_t n = strlen(gpu_stems[i]);
        if (strncmp(base, "lib", 3) == 0 && strncmp(base + 3, gpu_stems[i], n) == 0 &&
            (base[3 + n] == '.' || base[3 + n] == '_'))
            return gpu_stems[i];
    }
    return NULL;
}

/* Libraries whose SONAME major is the CUDA major. */
static int major_is_cuda(const char *stem)
{
    return strcmp(stem, "cudart") == 0 || strcmp(stem, "cublas") == 0 || strcmp(stem, "cublasLt") == 0 ||
           strcmp(stem, "nvrtc") == 0 || strcmp(stem, "nvJitLink") == 0;
}

static int so_major(const char *name)
{
    const char *so = strstr(name, ".so.");
    return so ? gpuenv_ver_major(so + 4) : -1;
}

static int driver_cuda_major(const lector_doctor_report *r)
{
    int dc = r->facts.cuda_driver_version;
    if (dc <= 0) {
        const char *d = r->facts.nvml_driver[0] ? r->facts.nvml_driver : r->facts.kernel_driver;
        if (!d[0]) d = r->facts.libcuda_version;
        dc = gpuenv_cuda_for_driver(d);
    }
    return dc / 1000;
}

/* The CUDA major a load was built for, from its runtime libraries. */
static int load_cuda_major(const gpuenv_load *ld)
{
    for (size_t i = 0; i < ld->n_edge; i++) {
        const char *st = gpu_stem(ld->edge[i].name);
        if (st && major_is_cuda(st) && so_major(ld->edge[i].name) > 0) return so_major(ld->edge[i].name);
    }
    return 0;
}

static const char *base_of(const char *p) { return gpuenv_basename(p); }

void doctor_check_loaded_gpu_libs(lector_doctor_report *r, int layer, const char *id_prefix, const gpuenv_load *ld,
                                  int hits)
{
    char id[96];
    int dmaj = driver_cuda_major(r);
    const gpuenv_obj *blas = NULL, *blaslt = NULL, *dnn = NULL;
    for (size_t i = 0; i < ld->n; i++) {
        const gpuenv_obj *o = ld->obj[i];
        if (o->assumed || o->is_main) continue;
        const char *name = o->elf.soname ? o->elf.soname : base_of(o->path);
        const char *st = gpu_stem(name);
        if (!st) continue;
        if (strcmp(st, "cublas") == 0) blas = o;
        if (strcmp(st, "cublasLt") == 0) blaslt = o;
        if (strcmp(st, "cudnn") == 0 && strncmp(name, "libcudnn.so", 11) == 0) dnn = o;
        int m = so_major(name);
        if (major_is_cuda(st) && m >= 10 && dmaj > 0 && m > dmaj) {
            const char *floor = gpuenv_min_driver_for_major(m);
            char *fix = doctor_own(r, doctor_fix_driver_upgrade(r, floor ? floor : "the latest"));
            snprintf(id, sizeof id, "%s.driver", id_prefix);
            doctor_add(r, layer, id, "driver vs CUDA", DOCTOR_FAIL, hits, "runtime_newer_than_driver",
                       "A CUDA library it loads is newer than the driver supports: calls fail with \"CUDA driver "
                       "version is insufficient for CUDA runtime version\" (error 35)",
                       fix ? fix : "", "%s is CUDA %d; the driver supports CUDA %d at most", o->path, m, dmaj);
            lector__free(fix);
            break;
        }
    }
    if (blas && blaslt) {
        char *vb = doctor_own(r, gpuenv_soname_version(blas->real ? blas->real : blas->path));
        char *vl = doctor_own(r, gpuenv_soname_version(blaslt->real ? blaslt->real : blaslt->path));
        if (vb && vl && strchr(vb, '.') && strchr(vl, '.') && !gpuenv_ver_same(vb, vl)) {
            snprintf(id, sizeof id, "%s.cublas_pair", id_prefix);
            doctor_add(r, layer, id, "cuBLAS/cuBLASLt", DOCTOR_FAIL, hits, "cublas_mixed",
                       "libcublas and libcublasLt come from different releases (\"undefined symbol ... version "
                       "libcublasLt.so.N\")",
                       "load both from one install: put the directory holding the matching pair first on "
                       "LD_LIBRARY_PATH",
                       "%s (%s) with %s (%s)", blas->real, vb, blaslt->real, vl);
        }
        lector__free(vb);
        lector__free(vl);
    }
    if (dnn) {
        char why[512];
        int m = so_major(dnn->elf.soname ? dnn->elf.soname : base_of(dnn->path));
        int rc = doctor_cudnn_split_state(r, dnn->real ? dnn->real : dnn->path, m > 0 ? m : 9, why, sizeof why);
        if (rc == -2)
            r->oom = 1;
        else if (rc) {
            snprintf(id, sizeof id, "%s.cudnn", id_prefix);
            doctor_add(r, layer, id, "cuDNN", DOCTOR_FAIL, hits, "cudnn_split_mixed",
                       "The cuDNN it loads has unusable split libraries: the first cuDNN call fails",
                       "put one complete cuDNN first on the search path (see l4.cudnn_split)", "%s: %s", dnn->path,
                       why);
        }
    }
    /* the GPU against the CUDA major these libraries were built for */
    int lm = load_cuda_major(ld);
    int min_cc = gpuenv_min_cc_for_cuda(lm);
    for (int g = 0; g < r->facts.n_gpus && min_cc; g++) {
        const doctor_gpu *gp = &r->facts.gpus[g];
        if (!gp->cc_major || gp->cc_major * 10 + gp->cc_minor >= min_cc) continue;
        snprintf(id, sizeof id, "%s.gpu_arch", id_prefix);
        char fix[160];
        snprintf(fix, sizeof fix, "pip install nvidia-cublas-cu%d (use a CUDA %d build of the program)", lm - 1,
                 lm - 1);
        doctor_add(r, layer, id, "GPU vs CUDA", DOCTOR_FAIL, hits, "gpu_too_old_for_cuda",
                   "The GPU is older than this CUDA release supports: no kernel image for it (error 209)", fix,
                   "GPU %d %s is sm_%d%d; CUDA %d supports sm_%d and newer", g, gp->name, gp->cc_major, gp->cc_minor,
                   lm, min_cc);
        break;
    }
}

/* A library the inspected object ships next to itself (found through its
 * DT_RUNPATH) but that LD_LIBRARY_PATH, searched before DT_RUNPATH, answers
 * with another version: the program runs with a library it was not built
 * with (torch: "cuDNN version incompatibility ... your LD_LIBRARY_PATH"). */
static void check_shadows(lector_doctor_report *r, const gpuenv_load *ld, size_t idx)
{
    gpuenv_ldso bare;
    if (gpuenv_ldso_init(&bare, r->root, "", "")) {
        r->oom = 1;
        return;
    }
    char id[64];
    snprintf(id, sizeof id, "inspect.%zu.shadows", idx);
    int found = 0;
    for (size_t i = 0; i < ld->n_edge && !found && !r->oom; i++) {
        const gpuenv_edge *e = &ld->edge[i];
        if (e->to < 0 || ld->obj[e->to]->via != GPUENV_VIA_LD_LIBRARY_PATH) continue;
        const gpuenv_obj *o = ld->obj[e->to];
        gpuenv_find f;
        if (gpuenv_ldso_find(&bare, e->name, ld->obj[e->from], NULL, 0, &f)) {
            r->oom = 1;
            break;
        }
        char *own = f.outcome == GPUENV_FOUND && (f.via == GPUENV_VIA_RUNPATH || f.via == GPUENV_VIA_RPATH)
                        ? gpuenv_root_realpath(r->root, f.path)
                        : NULL;
        char *v_llp = own ? gpuenv_soname_version(o->real) : NULL;
        char *v_own = own ? gpuenv_soname_version(own) : NULL;
        if (own && v_llp && v_own && strcmp(own, o->real) != 0 && !gpuenv_ver_same(v_llp, v_own)) {
            found = 1;
            /* the LD_LIBRARY_PATH item that brought it in */
            char *dir = doctor_own(r, gpuenv_dirname(o->path));
            const char *item = NULL;
            for (size_t k = 0; dir && k < r->ldso.llp.n && !item; k++) {
                char *c = r->ldso.llp.v[k][0] ? gpuenv_root_realpath(r->root, r->ldso.llp.v[k]) : NULL;
                char *dc = gpuenv_root_realpath(r->root, dir);
                if (c && dc && strcmp(c, dc) == 0) item = r->ldso.llp.v[k];
                lector__free(c);
                lector__free(dc);
            }
            char *fix =
                doctor_own(r, item ? doctor_fix_llp_without(&r->ldso, item) : lector__strdup("unset LD_LIBRARY_PATH"));
            doctor_add(r, DOCTOR_LINSPECT, id, "LD_LIBRARY_PATH", DOCTOR_FAIL, DOCTOR_HITS_INSPECTED,
                       "ld_library_path_shadows",
                       "LD_LIBRARY_PATH (searched before DT_RUNPATH) hands it another version of a library it ships "
                       "next to itself: it runs with a library it was not built with (\"version incompatibility\", "
                       "missing symbols, CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)",
                       fix ? fix : "", "%s -> %s (%s) from LD_LIBRARY_PATH; its own: %s (%s)", e->name, o->path, v_llp,
                       own, v_own);
            lector__free(fix);
            lector__free(dir);
        }
        lector__free(own);
        lector__free(v_llp);
        lector__free(v_own);
        gpuenv_find_free(&f);
    }
    gpuenv_ldso_free(&bare);
}

static void inspect_one(lector_doctor_report *r, doctor_inspect *ins, size_t idx)
{
    char id[64];
    const char *path = ins->file;
    if (gpuenv_ldso_load_file(&r->ldso, path, &ins->load)) {
        r->oom = 1;
        return;
    }
    gpuenv_load *ld = &ins->load;
    snprintf(id, sizeof id, "inspect.%zu.deps", idx);
    if (!ld->n) {
        doctor_add(r, DOCTOR_LINSPECT, id, base_of(path), DOCTOR_FAIL, DOCTOR_HITS_INSPECTED, "not_elf",
                   "The file does not exist or is not an ELF object for this machine",
                   "pass an executable or a shared object (.so)", "%s: cannot read as ELF", path);
        return;
    }
    doctor_check *c;
    if (ld->missing.n || !ld->ok) {
        gpuenv_buf mb = {0};
        for (size_t i = 0; i < ld->missing.n; i++) gpuenv_buf_printf(&mb, "%s%s", i ? ", " : "", ld->missing.v[i]);
        char *ms = doctor_own(r, gpuenv_buf_take(&mb));
        char *fix = NULL;
        const char *first = ld->missing.n ? ld->missing.v[0] : NULL;
        doctor_notfound nf;
        int e = first ? doctor_explain_notfound(r, first, "library_not_in_search_path", &nf) : 0;
        if (e == -2) r->oom = 1;
        if (e == 1) {
            if (strcmp(nf.code, "soname_link_missing") == 0) fix = lector__strdup(nf.fix);
            doctor_notfound_free(&nf);
        }
        if (first && !fix) {
            /* a copy elsewhere: its directory; else the package that ships it */
            const char *st = gpu_stem(first);
            char stem[96];
            snprintf(stem, sizeof stem, "%s", st ? st : first + (strncmp(first, "lib", 3) == 0 ? 3 : 0));
            char *dot = strstr(stem, ".so");
            if (dot) *dot = 0;
            gpuenv_cands cv;
            if (stem[0] && gpuenv_collect(&r->ldso, stem, &cv) == 0) {
                for (size_t i = 0; i < cv.n && !fix; i++)
                    if (cv.v[i].elf_ok && cv.v[i].soname && strcmp(cv.v[i].soname, first) == 0) {
                        char *dir = gpuenv_dirname(cv.v[i].path);
                        fix = dir ? doctor_fix_llp_prepend(dir) : NULL;
                        lector__free(dir);
                    }
                gpuenv_cands_free(&cv);
            }
            if (!fix)
                fix = doctor_fix_install_lib(first, load_cuda_major(ld) ? load_cuda_major(ld) : driver_cuda_major(r));
            fix = doctor_own(r, fix);
        }
        c = doctor_add(r, DOCTOR_LINSPECT, id, base_of(path), DOCTOR_FAIL, DOCTOR_HITS_INSPECTED,
                       ld->missing.n ? "missing_dependency" : "load_error",
                       ld->missing.n ? "A library it needs cannot be found by the loader: it fails with \"cannot open "
                                       "shared object file\" (built for another CUDA major than the one installed, or "
                                       "a directory missing from the search path)"
                                     : "It does not load",
                       fix ? fix : "", "%zu objects; %s%s%s", ld->n, ms && *ms ? "missing: " : "", ms ? ms : "",
                       ld->error ? "" : "");
        if (ld->error) doctor_evidence(r, c, "loader: %s", ld->error);
        lector__free(ms);
        lector__free(fix);
    } else {
        c = doctor_add(r, DOCTOR_LINSPECT, id, base_of(path), DOCTOR_OK, 0, "", "", "",
                       "%zu objects, every DT_NEEDED resolved", ld->n);
    }
    for (size_t i = 1; i < ld->n; i++) {
        const gpuenv_obj *o = ld->obj[i];
        if (o->assumed || !gpu_stem(base_of(o->path))) continue;
        char *v = doctor_own(r, gpuenv_soname_version(o->real ? o->real : o->path));
        doctor_evidence(r, c, "GPU library %s -> %s [%s]", base_of(o->path), o->real ? o->real : o->path,
                        v && *v ? v : "?");
        lector__free(v);
    }
    if (ld->ok) check_shadows(r, ld, idx);
    char prefix[48];
    snprintf(prefix, sizeof prefix, "inspect.%zu", idx);
    doctor_check_loaded_gpu_libs(r, DOCTOR_LINSPECT, prefix, ld, DOCTOR_HITS_INSPECTED);

    /* embedded GPU code of every object that has any */
    snprintf(id, sizeof id, "inspect.%zu.archs", idx);
    int any_code = 0, bad = 0;
    gpuenv_buf why = {0};
    gpuenv_strv lines = {0};
    for (size_t i = 0; i < ld->n; i++) {
        const gpuenv_elf *e = &ld->obj[i]->elf;
        if (!e->fatbin_size) continue;
        gpuenv_fatbin fb;
        if (gpuenv_fatbin_scan(e->fatbin, e->fatbin_size, &fb)) continue;
        any_code = 1;
        char *d = doctor_own(r, gpuenv_fatbin_describe(&fb));
        if (gpuenv_strv_push_owned(&lines,
                                   gpuenv_asprintf("%s: %s (%zu containers, %zu entries)", base_of(ld->obj[i]->path),
                                                   d ? d : "?", fb.containers, fb.entries)))
            r->oom = 1;
        for (int k = 0; k < r->facts.n_gpus; k++) {
            const doctor_gpu *gp = &r->facts.gpus[k];
            if (!gp->cc_major || gpuenv_fatbin_runs_on(&fb, gp->cc_major, gp->cc_minor)) continue;
            /* The inspected file itself lacking code is certain failure. A
               dependency may carry only helper kernels in .nv_fatbin and get
               the rest elsewhere (libcufft.so.12 of CUDA 13 holds one sm_75
               entry, yet torch runs on an H200): a warning. */
            if (!bad)
                gpuenv_buf_printf(&why, "%s has no SASS for sm_%d%d and no PTX <= compute_%d%d (GPU %d %s); it has %s",
                                  base_of(ld->obj[i]->path), gp->cc_major, gp->cc_minor, gp->cc_major, gp->cc_minor, k,
                                  gp->name, d ? d : "?");
            if (!bad) bad = i == 0 ? 2 : 1;
        }
        lector__free(d);
    }
    char *whys = doctor_own(r, gpuenv_buf_take(&why));
    if (!any_code) {
        c = doctor_add(r, DOCTOR_LINSPECT, id, "GPU code", DOCTOR_SKIP, 0, "", "", "",
                       "no .nv_fatbin in %s or its dependencies", base_of(path));
    } else if (bad == 1) {
        c = doctor_add(
            r, DOCTOR_LINSPECT, id, "GPU code", DOCTOR_WARN, DOCTOR_HITS_INSPECTED, "dependency_no_kernel_image",
            "A dependency's embedded GPU code does not cover this GPU; if that library has no other source "
            "of kernels (JIT, LTO, separate files), calls into it fail with \"no kernel image is "
            "available\"",
            "use a build of that library whose architecture list includes this GPU", "%s", whys ? whys : "?");
    } else if (bad == 2) {
        char fix[200] = "rebuild with -gencode arch=compute_XY,code=sm_XY for this GPU";
        for (int k = 0; k < r->facts.n_gpus; k++)
            if (r->facts.gpus[k].cc_major) {
                snprintf(fix, sizeof fix, "rebuild with -gencode arch=compute_%d%d,code=sm_%d%d",
                         r->facts.gpus[k].cc_major, r->facts.gpus[k].cc_minor, r->facts.gpus[k].cc_major,
                         r->facts.gpus[k].cc_minor);
                break;
            }
        c = doctor_add(r, DOCTOR_LINSPECT, id, "GPU code", DOCTOR_FAIL, DOCTOR_HITS_INSPECTED, "no_kernel_image",
                       "The binary carries no kernel for this GPU's architecture: it will fail with \"no kernel image "
                       "is available for execution on the device\" (CUDA error 209)",
                       fix, "%s", whys ? whys : "?");
    } else {
        c = doctor_add(r, DOCTOR_LINSPECT, id, "GPU code", DOCTOR_OK, 0, "", "", "",
                       r->facts.n_gpus ? "GPU code present for every GPU here"
                                       : "GPU code found (no GPU known to compare with)");
    }
    lector__free(whys);
    for (size_t i = 0; i < lines.n; i++) doctor_evidence(r, c, "%s", lines.v[i]);
    gpuenv_strv_free(&lines);
}

void doctor_check_inspect(lector_doctor_report *r, const lector_doctor_options *opt)
{
    if (!opt->n_inspect) return;
    r->inspect = lector__calloc(opt->n_inspect, sizeof *r->inspect);
    if (!r->inspect) {
        r->oom = 1;
        return;
    }
    for (size_t i = 0; i < opt->n_inspect && !r->oom; i++) {
        const char *file = opt->inspect[i];
        char buf[PATH_MAX];
        if (!r->root_mode && file[0] != '/' && realpath(file, buf)) file = buf;
        if (!(r->inspect[i].file = lector__strdup(file))) {
            r->oom = 1;
            break;
        }
        r->n_inspect = i + 1;
        inspect_one(r, &r->inspect[i], i);
    }
}
