/*
 * gpuenv.h - internal API of the GPU-environment module (src/gpuenv).
 *
 * Shared by `lector doctor` and, later, the CUDA backend loader: what the
 * doctor reports is computed by the very functions the loader calls, so
 * "the doctor says X loads" and "the engine loads X" cannot diverge.
 *
 * Layout, one file per concern:
 *   util.c      strings, growable buffers, root-relative file access
 *   elf.c       ELF header / dynamic section / section lookup (untrusted bytes)
 *   ldcache.c   /etc/ld.so.cache reader, old and new formats (untrusted bytes)
 *   fatbin.c    .nv_fatbin container walker (untrusted bytes)
 *   resolve.c   glibc ld.so search emulation and dependency trees
 *   tables.c    CUDA toolkit -> minimum driver, compute capabilities
 *   nvml.c      NVML through dlopen
 *   nvml_metrics.c  live per-GPU samples for `lector serve`'s /metrics
 *   cudadrv.c   CUDA driver API (libcuda.so.1) through dlopen
 *   libs.c      L4: candidates, versions and compatibility of CUDA libraries
 *   checks.c    L0, L1, L2, L3, L5 and the layer orchestration
 *   inspect.c   `doctor --inspect FILE`
 *   report.c    text and JSON rendering, overall status
 *   explain.c / explain_table.c   `lector explain`
 *   cli.c       argument parsing for lector_doctor_main / lector_explain_main
 *
 * Contracts: no function here aborts or exits; every allocation is checked
 * and failure is reported through the return value (NULL / -1) or the
 * report's oom flag. Parsers of untrusted bytes never read outside the
 * (data, size) they are given. Nothing here is thread-safe unless noted:
 * one report is built by one thread.
 */
#ifndef LECTOR_GPUENV_H
#define LECTOR_GPUENV_H

#include <stddef.h>
#include <stdint.h>

#include "lector_doctor.h"

/* ------------------------------------------------------------------ util */

/** Growable NUL-terminated string. A zeroed struct is an empty buffer. */
typedef struct gpuenv_buf {
    char *s;
    size_t len, cap;
    int oom; /* sticky: set when an append could not allocate */
} gpuenv_buf;

/** Append printf-formatted text; on allocation failure sets b->oom. */
void gpuenv_buf_printf(gpuenv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Append a string. */
void gpuenv_buf_puts(gpuenv_buf *b, const char *s);
/** Take the string out (caller frees); NULL if oom. Leaves b empty. */
char *gpuenv_buf_take(gpuenv_buf *b);
/** Free the buffer's storage. */
void gpuenv_buf_free(gpuenv_buf *b);

/** strdup that accepts NULL (returns NULL). */
char *gpuenv_strdup(const char *s);
/** malloc'ed printf; NULL on failure. */
char *gpuenv_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Growable array of owned strings. */
typedef struct gpuenv_strv {
    char **v;
    size_t n, cap;
} gpuenv_strv;
/** Append a copy of s; returns 0 or -1 on allocation failure. */
int gpuenv_strv_push(gpuenv_strv *sv, const char *s);
/** Append s and take ownership; returns -1 (and frees s) on failure. */
int gpuenv_strv_push_owned(gpuenv_strv *sv, char *s);
/** 1 if sv holds a string equal to s. */
int gpuenv_strv_has(const gpuenv_strv *sv, const char *s);
/** Free all strings and the vector. */
void gpuenv_strv_free(gpuenv_strv *sv);
/** Split a ':'-separated list (empty items kept as "" like ld.so keeps them
 *  meaning the current directory). */
int gpuenv_strv_split(gpuenv_strv *sv, const char *list, char sep);

/** A read-only file mapping. */
typedef struct gpuenv_map {
    const uint8_t *data;
    size_t size;
} gpuenv_map;
/** Map a host path read-only; returns 0 or -1. Empty files map to size 0. */
int gpuenv_map_file(const char *host_path, gpuenv_map *m);
/** Unmap (NULL-safe on a zeroed map). */
void gpuenv_unmap(gpuenv_map *m);

/** Host path of `path` (absolute, inside the examined tree) under root.
 *  root NULL or "" or "/" means the live system. Caller frees. */
char *gpuenv_host_path(const char *root, const char *path);
/** Resolve symbolic links of an in-tree absolute path *inside* root, the way
 *  the kernel would after chroot(root): absolute link targets stay in the
 *  tree. Returns the in-tree canonical path (caller frees) or NULL when a
 *  component is missing or links loop. */
char *gpuenv_root_realpath(const char *root, const char *path);
/** 1 if the in-tree path exists (following links inside root). */
int gpuenv_root_exists(const char *root, const char *path);
/** Read a small in-tree text file (at most max bytes); caller frees. */
char *gpuenv_root_read_text(const char *root, const char *path, size_t max);

/** Compare dotted numeric versions ("580.95.05" vs "580.65.06"): <0, 0, >0. */
int gpuenv_vercmp(const char *a, const char *b);
/** Version suffix of a library file name: "libcudnn.so.9.14.0" -> "9.14.0",
 *  "libcudart.so.13" -> "13", "libcudnn.so" -> "" ; caller frees (NULL oom). */
char *gpuenv_soname_version(const char *file_name);
/** Leading integer of a version string ("9.14.0" -> 9), -1 if none. */
int gpuenv_ver_major(const char *v);

/* ------------------------------------------------------------------- elf */

/** What the loader needs from an ELF object. Strings are owned copies. */
typedef struct gpuenv_elf {
    int elfclass;       /* 1 = 32-bit, 2 = 64-bit */
    uint16_t machine;   /* e_machine */
    uint16_t type;      /* e_type: 1 REL, 2 EXEC, 3 DYN */
    int has_interp;     /* PT_INTERP present (an executable) */
    int has_dynamic;    /* PT_DYNAMIC present */
    char *soname;       /* DT_SONAME or NULL */
    char *rpath;        /* DT_RPATH or NULL; already NULL when DT_RUNPATH set,
                          as glibc ignores RPATH then */
    char *rpath_raw;    /* DT_RPATH as written, for display */
    char *runpath;      /* DT_RUNPATH or NULL */
    gpuenv_strv needed; /* DT_NEEDED in order */
    int nodeflib;       /* DF_1_NODEFLIB: skip cache and default dirs */
    /* .nv_fatbin section inside the mapping given to gpuenv_elf_parse
       (points into caller's bytes; valid while they are) */
    const uint8_t *fatbin;
    size_t fatbin_size;
    int cuda_sm; /* for a CUDA cubin (e_machine 190): e_flags & 0xff */
} gpuenv_elf;

/** Parse an ELF image held in memory (little endian, 32 or 64-bit).
 *  Returns 0 on success, -1 if not ELF or malformed beyond use, -2 on
 *  allocation failure. Never reads outside data[0..size). */
int gpuenv_elf_parse(const uint8_t *data, size_t size, gpuenv_elf *out);
/** Free what gpuenv_elf_parse allocated (safe on a zeroed struct). */
void gpuenv_elf_free(gpuenv_elf *e);

/* --------------------------------------------------------------- ldcache */

typedef struct gpuenv_ldcache_entry {
    char *key;     /* SONAME */
    char *value;   /* absolute path */
    int32_t flags; /* FLAG_ELF_LIBC6 | arch byte */
    uint64_t hwcap;
} gpuenv_ldcache_entry;

typedef struct gpuenv_ldcache {
    gpuenv_ldcache_entry *e;
    size_t n;
    int has_old, has_new; /* which formats the file held */
} gpuenv_ldcache;

#define GPUENV_LDCACHE_X86_64 0x0303 /* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */

/** Parse an ld.so.cache image ("ld.so-1.7.0" and/or "glibc-ld.so.cache1.1").
 *  When both are present the new format's entries are used (as glibc does).
 *  Returns 0, -1 malformed, -2 allocation failure. */
int gpuenv_ldcache_parse(const uint8_t *data, size_t size, gpuenv_ldcache *out);
/** First entry for `name` whose flags equal `flags` (0: any) and that does
 *  not require a glibc-hwcaps subdirectory; NULL if none. */
const char *gpuenv_ldcache_lookup(const gpuenv_ldcache *c, const char *name, int32_t flags);
/** Free a parsed cache. */
void gpuenv_ldcache_free(gpuenv_ldcache *c);

/* ---------------------------------------------------------------- fatbin */

/** Summary of the GPU code embedded in a .nv_fatbin section. */
typedef struct gpuenv_fatbin {
    size_t containers, entries, compressed;
    uint8_t sass[256]; /* sass[86] = 1: a cubin for sm_86 is present */
    uint8_t ptx[256];  /* ptx[90]  = 1: PTX for compute_90 is present */
    int truncated;     /* a container or entry ran past the section */
} gpuenv_fatbin;

/** Walk all containers of a .nv_fatbin section. Returns 0, or -1 when not
 *  even one container header is valid. Bounds-checked. */
int gpuenv_fatbin_scan(const uint8_t *data, size_t size, gpuenv_fatbin *out);
/** 1 if the summary holds code the driver can run on compute capability
 *  major.minor: a cubin of the same major with minor <= device minor, or PTX
 *  of a compute capability <= the device's (JIT). */
int gpuenv_fatbin_runs_on(const gpuenv_fatbin *f, int cc_major, int cc_minor);
/** "sm_75 sm_80 sm_90 | ptx compute_90" style list; caller frees. */
char *gpuenv_fatbin_describe(const gpuenv_fatbin *f);

/* --------------------------------------------------------------- resolve */

/** Search context: the examined tree and the environment ld.so would see. */
typedef struct gpuenv_ctx {
    char *root;               /* NULL or "/" : live system */
    gpuenv_strv llp;          /* LD_LIBRARY_PATH entries */
    gpuenv_ldcache cache;     /* parsed <root>/etc/ld.so.cache */
    int cache_state;          /* 0 not read, 1 ok, -1 missing/malformed */
    gpuenv_strv default_dirs; /* trusted dirs, in glibc's order */
    const char *lib_token;    /* $LIB expansion */
} gpuenv_ctx;

/** Initialise a context. ld_library_path NULL means getenv("LD_LIBRARY_PATH").
 *  Returns 0 or -1 (allocation). */
int gpuenv_ctx_init(gpuenv_ctx *ctx, const char *root, const char *ld_library_path);
/** Free a context. */
void gpuenv_ctx_free(gpuenv_ctx *ctx);

/** One loaded (or to-be-loaded) object: its in-tree path and dynamic info. */
typedef struct gpuenv_obj {
    char *path; /* in-tree path as found (not canonical) */
    gpuenv_elf elf;
    gpuenv_map map;                  /* mapping, kept for fatbin scanning */
    const struct gpuenv_obj *loader; /* object whose DT_NEEDED brought it in */
} gpuenv_obj;

/** Load an object's ELF info from an in-tree path. Returns 0, -1 (not a
 *  usable ELF), -2 (allocation). */
int gpuenv_obj_open(const gpuenv_ctx *ctx, const char *path, gpuenv_obj *o);
/** Release an object. */
void gpuenv_obj_close(gpuenv_obj *o);

/** Where a name was found. */
typedef enum gpuenv_via {
    GPUENV_VIA_NONE = 0,
    GPUENV_VIA_PATH,
    GPUENV_VIA_RPATH,
    GPUENV_VIA_LD_LIBRARY_PATH,
    GPUENV_VIA_RUNPATH,
    GPUENV_VIA_CACHE,
    GPUENV_VIA_DEFAULT
} gpuenv_via;
/** Human name of a gpuenv_via. */
const char *gpuenv_via_str(gpuenv_via v);

/** Resolve a DT_NEEDED / dlopen name exactly as glibc's ld.so would when
 *  `loader` asks for it (loader NULL: a dlopen from a program without
 *  RPATH/RUNPATH). Order: DT_RPATH of loader and up its loader chain (only
 *  while the asking object has no DT_RUNPATH; an object with DT_RUNPATH
 *  contributes no RPATH), LD_LIBRARY_PATH, DT_RUNPATH of the loader only,
 *  ld.so.cache, default dirs (the last two skipped under DF_1_NODEFLIB).
 *  $ORIGIN, $LIB and $PLATFORM are expanded. Candidates of the wrong ELF
 *  class or machine are skipped, as ld.so does. Returns the in-tree path
 *  (caller frees) or NULL; *via says where it was found. */
char *gpuenv_resolve(const gpuenv_ctx *ctx, const char *name, const gpuenv_obj *loader, gpuenv_via *via);

/** What the CUDA backend loader wants to know about one library. */
typedef struct gpuenv_libinfo {
    char path[4096];  /* in-tree path that would be loaded */
    char real[4096];  /* canonical path (symlinks resolved inside root) */
    char version[64]; /* best known version: queried, else file name, else SONAME */
    gpuenv_via via;
} gpuenv_libinfo;

/** Resolve `name` (e.g. "libcudnn.so.9") like ld.so for a program with no
 *  RPATH/RUNPATH and fill *out. root NULL: live system; ld_library_path NULL:
 *  the environment's. Returns 0 when found, -1 when not, -2 on allocation
 *  failure. Does not dlopen anything. */
int gpuenv_resolve_library(const char *root, const char *ld_library_path, const char *name, gpuenv_libinfo *out);

/** Find the library of family `stem` ("cublas", "cublasLt", "cudnn",
 *  "cudart", "nvrtc") the CUDA backend should load for CUDA major
 *  `cuda_major`: first what ld.so resolves for the versioned SONAME of that
 *  major (libcublasLt.so.13 for 13; cuDNN 9 for CUDA 12 and 13, cuDNN 8 for
 *  11), then the well-known install places (pip wheels, conda,
 *  /usr/local/cuda*) searched by libs.c. Returns 0 / -1 not found / -2 oom. */
int gpuenv_find_best(const char *root, const char *stem, int cuda_major, gpuenv_libinfo *out);

/** Where Lector's CUDA module is: $LECTOR_CUDA_MODULE, else liblector-cuda.so
 *  next to the running executable, else in ../lib of it (the offline bundle).
 *  Writes the path found into out and returns 0; when absent returns -1 with
 *  the environment's path in out, or -2 with <exe dir>/liblector-cuda.so.
 *  The loader (src/rt/cuda_loader.c) and the doctor's L5 both use it. */
int gpuenv_cuda_module_path(char *out, size_t len);

/* ---------------------------------------------------------------- tables */

/** Minimum driver for a toolkit version "major.minor" from the release-notes
 *  table (NULL if unknown). */
const char *gpuenv_min_driver_for_cuda(int major, int minor);
/** Minimum driver for minor-version compatibility of a CUDA major. */
const char *gpuenv_min_driver_for_major(int major);
/** Highest CUDA (1000*major+10*minor) a driver version supports per the
 *  table, 0 if older than every row. */
int gpuenv_cuda_for_driver(const char *driver_version);
/** Architecture family name for a compute capability ("Hopper"). */
const char *gpuenv_cc_family(int major, int minor);

/* ------------------------------------------------------------- the report */

typedef enum gpuenv_status { GPUENV_OK = 0, GPUENV_WARN, GPUENV_FAIL, GPUENV_SKIP } gpuenv_status;
/** "ok" / "warn" / "fail" / "skip". */
const char *gpuenv_status_str(gpuenv_status s);

typedef struct gpuenv_check {
    char *id;    /* stable, e.g. "l3.cuinit" */
    char *title; /* short name for the text report */
    gpuenv_status status;
    char *finding; /* what was observed */
    char *code;    /* stable cause code, e.g. "nvml_version_mismatch" ("" when ok) */
    char *cause;   /* why, in words */
    char *fix;     /* an exact command or setting */
    gpuenv_strv evidence;
} gpuenv_check;

enum { GPUENV_L0, GPUENV_L1, GPUENV_L2, GPUENV_L3, GPUENV_L4, GPUENV_L5, GPUENV_LINSPECT, GPUENV_NLAYERS };

typedef struct gpuenv_layer {
    const char *id, *name;
    gpuenv_check *checks;
    size_t n, cap;
} gpuenv_layer;

#define GPUENV_MAX_GPUS 64
typedef struct gpuenv_gpu {
    char name[96];
    int cc_major, cc_minor; /* 0 when unknown */
    unsigned long long mem_total, mem_used;
} gpuenv_gpu;

/** Facts gathered along the way, read by later layers. */
typedef struct gpuenv_facts {
    char kernel_driver[80];  /* from /proc/driver/nvidia/version */
    char nvml_driver[80];    /* nvmlSystemGetDriverVersion */
    int cuda_driver_version; /* 1000*major+10*minor from NVML or libcuda */
    int nvml_ok, cuda_ok;    /* layer worked */
    int cuda_device_count;   /* from cuDeviceGetCount, -1 unknown */
    int gpu_usable;          /* a context and an allocation succeeded */
    int n_gpus;
    gpuenv_gpu gpus[GPUENV_MAX_GPUS];
    int cvd_empty;          /* CUDA_VISIBLE_DEVICES set to "" or -1-like */
    char libs_summary[256]; /* "cuDNN 9.14.0, cuBLAS 13.0" for the summary */
} gpuenv_facts;

struct lector_doctor_report {
    gpuenv_layer layers[GPUENV_NLAYERS];
    gpuenv_facts facts;
    char *root;
    int root_mode; /* examining a tree instead of the live system */
    int verbose;   /* text: show evidence of every check */
    int oom;
    char *inspect_text; /* trees for --inspect, preformatted */
    void *inspect_json; /* cJSON array */
};

/** Add a check to a layer and return it (NULL on allocation failure, with
 *  r->oom set). Strings are copied; fmt builds the finding. */
gpuenv_check *gpuenv_add(lector_doctor_report *r, int layer, const char *id, const char *title, gpuenv_status st,
                         const char *code, const char *cause, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 9, 10)));
/** Append a printf-formatted evidence line to a check (NULL-safe). */
void gpuenv_evidence(lector_doctor_report *r, gpuenv_check *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** L5's self-test of the engine on GPU `device`: 0 ok, -1 failed, -2 not
 *  available in this program; `msg` says what happened. Weak in gpuenv; the
 *  runtime (src/rt/cuda_loader.c) provides the real one. */
int lector_engine_gpu_selftest(int device, char *msg, size_t len);

/** The layers, each filling its checks and facts. */
void gpuenv_check_system(lector_doctor_report *r, const lector_doctor_options *opt);
void gpuenv_check_kernel(lector_doctor_report *r, const lector_doctor_options *opt);
void gpuenv_check_nvml(lector_doctor_report *r, const lector_doctor_options *opt);
void gpuenv_check_cudadrv(lector_doctor_report *r, const lector_doctor_options *opt);
void gpuenv_check_libs(lector_doctor_report *r, const lector_doctor_options *opt);
void gpuenv_check_engine(lector_doctor_report *r, const lector_doctor_options *opt);
void gpuenv_check_inspect(lector_doctor_report *r, const lector_doctor_options *opt);

/** Resolve the path to dlopen for NVML / libcuda: option, then env
 *  LECTOR_DOCTOR_NVML / LECTOR_DOCTOR_LIBCUDA, then the SONAME (live system
 *  only; NULL under --root without an override, meaning "skip"). */
const char *gpuenv_nvml_path(const lector_doctor_options *opt, int root_mode);
const char *gpuenv_libcuda_path(const lector_doctor_options *opt, int root_mode);

/** Name of a CUDA driver API error code (CUresult), "CUDA_ERROR_?" if unknown. */
const char *gpuenv_cu_error_name(int code);

/* ---------------------------------------------------------- nvml metrics */

/** One GPU as NVML reports it now. A value whose *_ok is 0 was not
 *  reported (not supported on this GPU, or NVML failed for it). */
typedef struct gpuenv_gpu_sample {
    unsigned index; /* NVML index */
    char name[96];  /* "NVIDIA H200"; "?" unknown */
    int mem_ok, temp_ok, util_ok, reasons_ok;
    unsigned long long mem_used, mem_total; /* bytes; used as nvidia-smi shows it (without
                                             * the driver's reserve) where NVML has _v2 */
    unsigned temp_c;                        /* GPU die, degrees Celsius */
    unsigned util_gpu, util_mem;            /* % of the last sample period a kernel ran /
                                             * memory was read or written */
    unsigned long long reasons;             /* clock event (throttle) reasons, NVML bits */
} gpuenv_gpu_sample;

/** Samples up to max GPUs into out and returns how many (0 when the driver
 *  sees none), or -1 when NVML cannot be loaded or initialised. NVML (path:
 *  LECTOR_DOCTOR_NVML, else libnvidia-ml.so.1) is dlopen'ed and initialised
 *  by the first call only and then stays loaded. Thread-safe. */
int gpuenv_nvml_sample(gpuenv_gpu_sample *out, int max);

/** The named clock event reasons (nvmlClocksEventReason*), in bit order. */
typedef struct gpuenv_clock_reason {
    unsigned long long bit;
    const char *name; /* "hw_slowdown" */
} gpuenv_clock_reason;
extern const gpuenv_clock_reason gpuenv_clock_reasons[];
extern const size_t gpuenv_clock_reasons_len;

/* --------------------------------------------------------------- explain */

/** One known error message. */
typedef struct gpuenv_explain_entry {
    const char *id;          /* stable id, e.g. "paddle-cudnn-unversioned" */
    const char *message;     /* the exact (abridged) message as users paste it */
    const char *const *keys; /* NULL-terminated distinctive fragments, lower case */
    const char *layer;       /* "L4 libraries" */
    const char *cause;
    const char *fix;
    const char *check;  /* doctor check id that verifies it */
    const char *source; /* where the message was seen */
} gpuenv_explain_entry;

/** The knowledge base (explain_table.c). */
extern const gpuenv_explain_entry gpuenv_explain_table[];
extern const size_t gpuenv_explain_table_len;

#endif /* LECTOR_GPUENV_H */
