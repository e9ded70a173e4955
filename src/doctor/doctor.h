/*
 * doctor.h - internal API of the doctor (src/doctor), the layer above the
 * runtime: `lector doctor` and `lector explain` (public API:
 * include/lector_doctor.h).
 *
 * A run is one loop over a table of steps {id, layer, fn} (run.c). Each
 * step looks at one layer through the discovery layer (src/gpuenv) and adds
 * checks to the report: a status, a finding, and for a problem a stable
 * cause code, the cause in words and one runnable fix (fixes.c builds the
 * commands from what the loader emulation found: real paths, never
 * placeholders). Each problem also says whom it hits: Lector itself, the
 * programs that load CUDA libraries by name (Paddle, ONNX Runtime, torch),
 * or the files given to --inspect. verdict.c turns that into the status and
 * picks the root cause for the headline.
 *
 * Files: run.c (the table and the loop), report.c (checks, evidence),
 * check_system.c L0, check_kernel.c L1, check_nvml.c L2, check_cudadrv.c L3,
 * check_bundle.c, check_libs.c and check_cudnn.c L4, check_engine.c L5, check_inspect.c
 * --inspect, fixes.c, verdict.c, render_text.c, render_json.c, json.c,
 * explain.c and explain_table.c.
 *
 * Every allocation goes through lector__malloc & co.; a failed one sets the
 * report's oom flag and lector_doctor_run returns NULL.
 */
#ifndef LECTOR_DOCTOR_INTERNAL_H
#define LECTOR_DOCTOR_INTERNAL_H

#include "gpuenv/gpuenv.h"
#include "lector_doctor.h"

typedef enum doctor_status { DOCTOR_OK = 0, DOCTOR_WARN, DOCTOR_FAIL, DOCTOR_SKIP } doctor_status;
const char *doctor_status_str(doctor_status s);

/* Whom a problem breaks (a check's `hits`). */
enum {
    DOCTOR_HITS_GPU = 1,      /* no CUDA context for anyone: driver, devices, libcuda */
    DOCTOR_HITS_LECTOR = 2,   /* Lector's CUDA backend cannot start */
    DOCTOR_HITS_NAMED = 4,    /* programs that dlopen CUDA libraries by name */
    DOCTOR_HITS_INSPECTED = 8 /* a file given to --inspect */
};

typedef struct doctor_check {
    char *id;    /* stable, e.g. "l3.libcuda" */
    char *title; /* short name for the text report */
    doctor_status status;
    char *finding; /* what was observed */
    char *code;    /* stable cause code ("" when ok) */
    char *cause;   /* why, in words */
    char *fix;     /* one runnable command (or an exact setting) */
    gpuenv_strv evidence;
    int hits; /* DOCTOR_HITS_* of a fail or warn */
} doctor_check;

enum { DOCTOR_L0, DOCTOR_L1, DOCTOR_L2, DOCTOR_L3, DOCTOR_L4, DOCTOR_L5, DOCTOR_LINSPECT, DOCTOR_NLAYERS };

typedef struct doctor_layer {
    const char *id, *name;
    doctor_check *checks;
    size_t n, cap;
} doctor_layer;

typedef struct doctor_gpu {
    char name[96];
    int cc_major, cc_minor; /* 0 when unknown */
    unsigned long long mem_total, mem_used;
} doctor_gpu;

/* Facts gathered along the way, read by later steps. */
typedef struct doctor_facts {
    char os_id[32]; /* os-release ID ("ubuntu") */
    int in_container, wsl;
    char kernel_driver[80];   /* NVRM version (/proc/driver/nvidia/version) */
    int proc_gpus;            /* GPUs under /proc/driver/nvidia/gpus, -1 unknown */
    int nouveau;              /* nouveau in /proc/modules */
    char nvml_driver[80];     /* nvmlSystemGetDriverVersion */
    char libcuda_version[64]; /* driver version of the libcuda.so.1 the loader hands out */
    int cuda_driver_version;  /* 1000*major+10*minor (NVML or libcuda) */
    int nvml_ok, nvml_probed;
    int nvml_count; /* GPUs NVML sees, -1 unknown */
    int cuda_probed, cuda_ok;
    int cuda_device_count; /* -1 unknown */
    int gpu_usable;        /* a context and an allocation worked */
    int driver_failed;     /* L1-L3 proved the GPU unusable */
    int n_gpus;
    doctor_gpu gpus[GPUENV_MAX_GPUS];
    int cvd_set; /* CUDA_VISIBLE_DEVICES is set */
    char cvd[256];
    int lector_major;       /* CUDA major of Lector's module (0: built without CUDA), or the one asked for */
    int lector_built_major; /* the CUDA major this build's module is for (0: none built) */
    int lector_libs_ok;     /* cuBLAS and cuDNN for that major are usable (-1 not checked) */
    char libs_summary[256]; /* "CUDA runtime 13.0, cuBLAS 13.1.0, cuDNN 9.14.0" */
    int libs_bundle;        /* Lector's CUDA libraries: 1 the bundle's set (check_bundle.c),
                               0 the system's, -1 none (the bundle forced and unusable) */
} doctor_facts;

/* One object shown by --inspect (rendered as text and JSON). */
typedef struct doctor_inspect {
    char *file;
    gpuenv_load load;
    char *error; /* the file itself is not a readable ELF */
} doctor_inspect;

struct lector_doctor_report {
    doctor_layer layers[DOCTOR_NLAYERS];
    doctor_facts facts;
    char *root;
    int root_mode; /* examining a tree instead of the live system */
    int verbose;
    int oom;
    gpuenv_ldso ldso; /* the loader's view of the examined system */
    doctor_inspect *inspect;
    size_t n_inspect;
};

/* ----------------------------------------------------------- report.c */

/** Add a check to a layer and return it (NULL with r->oom set on failure).
 *  Strings are copied; fmt builds the finding. hits only matters for a
 *  fail or a warn. */
doctor_check *doctor_add(lector_doctor_report *r, int layer, const char *id, const char *title, doctor_status st,
                         int hits, const char *code, const char *cause, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 10, 11)));
/** Append a printf-formatted evidence line to a check (NULL-safe). */
void doctor_evidence(lector_doctor_report *r, doctor_check *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** Take ownership of an allocated string for a report field (NULL: oom). */
char *doctor_own(lector_doctor_report *r, char *s);
/** Find a check by id (NULL if absent). */
doctor_check *doctor_find_check(lector_doctor_report *r, const char *id, int *layer);
/** Replace a check's outcome (strings copied). */
void doctor_set(lector_doctor_report *r, doctor_check *c, doctor_status st, int hits, const char *code,
                const char *cause, const char *fix);

/* ------------------------------------------------------------- steps */

typedef void (*doctor_step_fn)(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_system(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_kernel(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_nvml(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_cudadrv(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_visible(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_bundle(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_libs(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_ldconf(lector_doctor_report *r, const lector_doctor_options *opt);
void doctor_check_engine(lector_doctor_report *r, const lector_doctor_options *opt);
/** L5 (check_shipped.c): the kernels shipped compiled beside the CUDA module
 *  at module_path, against the GPUs found and NVRTC. */
void doctor_check_shipped_kernels(lector_doctor_report *r, const char *module_path);
void doctor_check_inspect(lector_doctor_report *r, const lector_doctor_options *opt);

/** The NVML / libcuda path to dlopen: option, then LECTOR_DOCTOR_NVML /
 *  LECTOR_DOCTOR_LIBCUDA, then the SONAME on the live system; NULL under
 *  --root without an override (the tree's libraries are not loaded). */
const char *doctor_nvml_path(const lector_doctor_options *opt, int root_mode);
const char *doctor_libcuda_path(const lector_doctor_options *opt, int root_mode);

/* ----------------------------------------------------------- L4 helpers */

/** What a program that dlopens `soname` by name gets, in one line. */
typedef struct doctor_named {
    gpuenv_load load;  /* dlopen emulation */
    gpuenv_find find;  /* the search for soname alone (why it failed) */
    char *path, *real; /* the object dlopen returns (ok) */
    char version[64];  /* from its file names */
} doctor_named;
/** Emulate dlopen(soname) in the examined system. 0 or -2. */
int doctor_named_open(const lector_doctor_report *r, const char *soname, doctor_named *out);
void doctor_named_free(doctor_named *n);

/** cuDNN's split libraries (resolved as the shim's own dlopen resolves them:
 *  one complete set of one version) and its unversioned name, for the
 *  cuDNN `shim` of SONAME major `major` a name-based loader gets. */
void doctor_cudnn_checks(lector_doctor_report *r, const doctor_named *shim, const char *version, int major,
                         int lector_hit, int newest);

/** 0 when the split libraries of the cuDNN at in-tree `shim_path` (loaded
 *  by absolute path, as Lector preloads it) are complete and of one
 *  version; 1 when not (why says it); -2 on allocation failure. */
int doctor_cudnn_split_state(lector_doctor_report *r, const char *shim_path, int major, char *why, size_t len);

/** Lector's engine self-test on GPU `device` (src/rt/cuda_loader.c): 0 ok,
 *  -1 failed; msg says what happened. */
int lector_engine_gpu_selftest(int device, char *msg, size_t len);

/** The checks of one inspected file's GPU libraries against the driver and
 *  the GPUs (shared by L4 and --inspect). */
void doctor_check_loaded_gpu_libs(lector_doctor_report *r, int layer, const char *id_prefix, const gpuenv_load *ld,
                                  int hits);

/* --------------------------------------------------------- notfound.c */

/** Why the loader does not find a name a file here carries. */
typedef struct doctor_notfound {
    const char *code; /* "soname_link_missing", or the caller's code for a directory nobody searches */
    char *cause, *fix;
    char *file; /* the file that carries the name */
} doctor_notfound;
/** 1 explained (fill *out; doctor_notfound_free it), 0 no such file, -2 oom.
 *  unsearched_code: the code when the file is outside every search path
 *  ("library_not_in_search_path" gets an LD_LIBRARY_PATH fix, others an
 *  /etc/ld.so.conf.d entry: a driver's directory). */
int doctor_explain_notfound(lector_doctor_report *r, const char *soname, const char *unsearched_code,
                            doctor_notfound *out);
void doctor_notfound_free(doctor_notfound *n);

/* ------------------------------------------------------------ fixes.c */

/* A container started without the GPUs: the host's runtime must hand them
 * in (the NVIDIA Container Toolkit), and the container be started with them. */
#define DOCTOR_FIX_CONTAINER_GPUS                                                                             \
    "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker (on the host; then " \
    "start the container again with --gpus all)"

/** "export LD_LIBRARY_PATH=..." without item `dir` ("unset LD_LIBRARY_PATH"
 *  when nothing is left). */
char *doctor_fix_llp_without(const gpuenv_ldso *L, const char *dir);
/** "export LD_LIBRARY_PATH=DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" */
char *doctor_fix_llp_prepend(const char *dir);
/** export LD_LIBRARY_PATH with good_dir first and bad_dir taken out. */
char *doctor_fix_llp_replace(const gpuenv_ldso *L, const char *bad_dir, const char *good_dir);
/** Undo a preload: "unset LD_PRELOAD", "export LD_PRELOAD=...", or the
 *  sed line for /etc/ld.so.preload. */
char *doctor_fix_preload_without(const gpuenv_ldso *L, const char *item);
/** Take a directory out of /etc/ld.so.conf(.d) and rebuild the cache. */
char *doctor_fix_conf_without(const char *root, const char *dir);
/** Keep the loader from handing out `path`, found as `f` describes: the
 *  command that removes its directory from the list that found it, or that
 *  moves the file away. */
char *doctor_fix_not_this(const lector_doctor_report *r, const gpuenv_find *f, int move_file);
/** Package that installs the driver's user-space libraries for a kernel
 *  driver version ("libnvidia-compute-580" on Ubuntu). */
char *doctor_fix_driver_userspace(const lector_doctor_report *r);
/** Command that installs a newer driver (>= min_version). */
char *doctor_fix_driver_upgrade(const lector_doctor_report *r, const char *min_version);
/** Remove a driver's user-space libraries (libcuda of `version`) that do not
 *  belong (a Linux driver inside WSL2): its package, else the file. */
char *doctor_fix_remove_driver_userspace(const lector_doctor_report *r, const char *version, const gpuenv_find *f);
/** Take one file out of the search: its LD_LIBRARY_PATH item or LD_PRELOAD
 *  entry if it came from there, else move it aside. */
char *doctor_fix_path_away(const lector_doctor_report *r, const char *path);
/** Reinstall cuDNN `major` whose shim is in dir: its distribution package for
 *  a system directory, else its pip wheel, for CUDA cuda_major. */
char *doctor_fix_reinstall_cudnn(const lector_doctor_report *r, const char *dir, int major, int cuda_major);
/** The stem of a CUDA library's name ("libcublasLt.so.12" -> "cublasLt"), NULL if not one. */
const char *doctor_cuda_stem(const char *name);
/** The pip package of a stem for a CUDA major into buf; -1 if none ships it. */
int doctor_pip_package(const char *stem, int cuda_major, char *buf, size_t len);
/** "pip install PKG..." for these stems. */
char *doctor_fix_pip(const char *const *stems, size_t n, int cuda_major);
/** A command that installs the library a SONAME names: its pip package for
 *  CUDA libraries (the SONAME's major when it is the CUDA major), else the
 *  distribution package that ships the file. */
char *doctor_fix_install_lib(const char *soname, int cuda_major);

/* ----------------------------------------------------------- verdict.c */

lector_doctor_status doctor_status_of(const lector_doctor_report *r);
/** The check that explains the verdict (NULL when ready with nothing to say). */
const doctor_check *doctor_root_cause(const lector_doctor_report *r, int *layer);
/** The one-line summary. */
void doctor_summary(const lector_doctor_report *r, gpuenv_buf *b);
/** 1 when Lector can use the GPU (status ready or degraded). */
int doctor_lector_gpu_usable(const lector_doctor_report *r);

/* ------------------------------------------------------------- json.c */

/** A small JSON writer over a gpuenv_buf (strings escaped per RFC 8259). */
typedef struct doctor_json {
    gpuenv_buf b;
    int depth;
    int first[32]; /* no comma needed before the next member at this depth */
} doctor_json;
void doctor_json_open(doctor_json *j, char bracket, const char *key);
void doctor_json_close(doctor_json *j, char bracket);
void doctor_json_str(doctor_json *j, const char *key, const char *v);
void doctor_json_num(doctor_json *j, const char *key, double v);
void doctor_json_bool(doctor_json *j, const char *key, int v);
void doctor_json_null(doctor_json *j, const char *key);

/* ---------------------------------------------------------- explain */

/** One known error message. */
typedef struct doctor_explain_entry {
    const char *id;          /* stable id, e.g. "paddle-cudnn-unversioned" */
    const char *message;     /* the exact (abridged) message as users paste it */
    const char *const *keys; /* NULL-terminated distinctive fragments, lower case */
    const char *layer;       /* "L4 CUDA libraries" */
    const char *cause;
    const char *fix;
    const char *check;  /* doctor check id that verifies it */
    const char *source; /* the public thread where the message was seen */
} doctor_explain_entry;

extern const doctor_explain_entry doctor_explain_table[];
extern const size_t doctor_explain_table_len;

#endif /* LECTOR_DOCTOR_INTERNAL_H */
