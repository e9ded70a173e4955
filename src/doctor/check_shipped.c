/* check_shipped.c - L5's kernels shipped compiled beside the CUDA module
 * (lib/lector-kernels, src/backend/cuda/cuda_kcache.c): which NVRTC built
 * them and for which GPUs, read from the files' own keys, against the GPUs
 * found and whether NVRTC is installed. The module runs a shipped kernel
 * without NVRTC; a kernel that is not shipped for the GPU is compiled by
 * NVRTC, or, without NVRTC, its fused elementwise chain runs in an
 * interpreter several times slower (docs/BENCHMARKS.md: the detector 20.7
 * against 157.1 ms): the GPU path slower than it should be, with nothing
 * failing. That case is a warning with the fix. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/kcache_format.h"
#include "doctor/doctor.h"
#include "util/testctl.h"
#include "util/util.h"

#define MAX_ARCHS 32

typedef struct shipped {
    char nvrtc[64]; /* the directory's file NVRTC: "NVRTC 13.0", or "" */
    int arch[MAX_ARCHS], files[MAX_ARCHS], n_arch;
    int n_files, n_other; /* .kc files; those another NVRTC built or not of the format */
} shipped;

/* The architecture a file's key names ("NVRTC 13.0\n--gpu-architecture=sm_90 ..."), 0 when none */
static int file_arch(const char *path, const char *nvrtc)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint8_t head[256];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    const char *key;
    size_t avail;
    uint64_t key_len;
    if (kcache_key_prefix(head, n, &key, &avail, &key_len)) return 0;
    char line[sizeof head];
    memcpy(line, key, avail);
    line[avail] = 0;
    size_t v = strlen(nvrtc);
    int sm = 0;
    if (!v || strncmp(line, nvrtc, v) || line[v] != '\n' || sscanf(line + v + 1, "--gpu-architecture=sm_%d", &sm) != 1)
        return 0;
    return sm;
}

static void read_shipped(const char *dir, shipped *s)
{
    memset(s, 0, sizeof *s);
    char path[4400];
    if (kcache_read_nvrtc_file(dir, s->nvrtc, sizeof s->nvrtc)) s->nvrtc[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".kc")) continue;
        s->n_files++;
        snprintf(path, sizeof path, "%.4096s/%.255s", dir, e->d_name);
        int sm = file_arch(path, s->nvrtc), i = 0;
        if (!sm) {
            s->n_other++;
            continue;
        }
        while (i < s->n_arch && s->arch[i] != sm) i++;
        if (i == s->n_arch) {
            if (i == MAX_ARCHS) continue;
            s->arch[s->n_arch++] = sm;
        }
        s->files[i]++;
    }
    closedir(d);
    for (int i = 1; i < s->n_arch; i++) /* in order, for the finding */
        for (int j = i; j > 0 && s->arch[j - 1] > s->arch[j]; j--) {
            int a = s->arch[j], c = s->files[j];
            s->arch[j] = s->arch[j - 1];
            s->files[j] = s->files[j - 1];
            s->arch[j - 1] = a;
            s->files[j - 1] = c;
        }
}

static int covers(const shipped *s, int sm)
{
    for (int i = 0; i < s->n_arch; i++)
        if (s->arch[i] == sm) return 1;
    return 0;
}

void doctor_check_shipped_kernels(lector_doctor_report *r, const char *module_path)
{
    const char *set = lector__tc_str(LECTOR__TC_CUDA_KERNELS_SHIPPED);
    char *mdir = gpuenv_dirname(module_path);
    char dir[4200];
    if (set)
        snprintf(dir, sizeof dir, "%s", set);
    else
        snprintf(dir, sizeof dir, "%s/" KCACHE_SHIPPED_DIR, mdir ? mdir : ".");
    lector__free(mdir);
    shipped s;
    read_shipped(dir, &s);
    /* the NVRTC the module would load: LECTOR_CUDA_NVRTC_LIB's file, else the one the core finds */
    gpuenv_libinfo nv;
    const char *nv_set = lector__tc_str(LECTOR__TC_CUDA_NVRTC_LIB);
    int have_nvrtc;
    if (nv_set && *nv_set) {
        FILE *f = fopen(nv_set, "rb");
        if ((have_nvrtc = f != NULL)) fclose(f);
        snprintf(nv.path, sizeof nv.path, "%s", nv_set);
        snprintf(nv.version, sizeof nv.version, "(LECTOR_CUDA_NVRTC_LIB)");
    } else {
        have_nvrtc = !gpuenv_find_best(NULL, "nvrtc", r->facts.lector_built_major, &nv);
    }
    char nvrtc_said[4200 + 80];
    if (have_nvrtc)
        snprintf(nvrtc_said, sizeof nvrtc_said, "NVRTC %s (%s) compiles %s on first use", nv.version, nv.path,
                 s.n_arch ? "any other" : "them");
    else
        snprintf(nvrtc_said, sizeof nvrtc_said, "NVRTC is not installed");

    gpuenv_buf archs = {0};
    for (int i = 0; i < s.n_arch; i++) gpuenv_buf_printf(&archs, "%ssm_%d", i ? ", " : "", s.arch[i]);
    int kernels = s.n_arch ? s.files[0] : 0;
    char *what = s.n_arch ? doctor_own(r, gpuenv_asprintf("%s: %d kernels built by %s for %s", dir, kernels, s.nvrtc,
                                                          archs.s ? archs.s : ""))
                          : doctor_own(r, gpuenv_asprintf("%s: none", dir));
    lector__free(archs.s);

    /* the GPUs they do not cover, and what runs there */
    gpuenv_buf missing = {0};
    int n_missing = 0;
    for (int g = 0; g < r->facts.n_gpus; g++) {
        const doctor_gpu *gp = &r->facts.gpus[g];
        if (!gp->cc_major || covers(&s, gp->cc_major * 10 + gp->cc_minor)) continue;
        gpuenv_buf_printf(&missing, "%sGPU %d %s (sm_%d%d)", n_missing ? ", " : "", g, gp->name, gp->cc_major,
                          gp->cc_minor);
        n_missing++;
    }
    doctor_check *c;
    if (n_missing && !have_nvrtc) {
        const char *stem = "nvrtc";
        char *fix = doctor_fix_pip(&stem, 1, r->facts.lector_built_major);
        c = doctor_add(r, DOCTOR_L5, "l5.shipped_kernels", "Shipped kernels", DOCTOR_WARN, DOCTOR_HITS_LECTOR,
                       "lector_kernels_interpreted",
                       "No kernels are shipped compiled for this GPU and NVRTC is not installed to compile them: "
                       "the fused elementwise chains run in an interpreter, several times slower",
                       fix ? fix : "", "%s; not for %s; %s", what ? what : "?", missing.s ? missing.s : "?",
                       nvrtc_said);
        lector__free(fix);
    } else if (n_missing) {
        c = doctor_add(r, DOCTOR_L5, "l5.shipped_kernels", "Shipped kernels", DOCTOR_OK, 0, "", "", "",
                       "%s; not for %s: NVRTC %s (%s) compiles them there on first use", what ? what : "?",
                       missing.s ? missing.s : "?", nv.version, nv.path);
    } else if (r->facts.n_gpus && s.n_arch) {
        c = doctor_add(r, DOCTOR_L5, "l5.shipped_kernels", "Shipped kernels", DOCTOR_OK, 0, "", "", "",
                       "%s (every GPU found): NVRTC not needed for them", what ? what : "?");
    } else {
        c = doctor_add(r, DOCTOR_L5, "l5.shipped_kernels", "Shipped kernels", DOCTOR_OK, 0, "", "", "", "%s; %s",
                       what ? what : "?", nvrtc_said);
    }
    lector__free(missing.s);
    if (c && s.n_other)
        doctor_evidence(r, c,
                        "%d of %d files are not of the NVRTC the directory names (%s): the module never reads them",
                        s.n_other, s.n_files, s.nvrtc[0] ? s.nvrtc : "none named");
    if (c && s.n_files && !s.nvrtc[0])
        doctor_evidence(r, c,
                        "%s/NVRTC names no NVRTC version: the module looks the kernels up under this machine's "
                        "NVRTC, loading it",
                        dir);
}
