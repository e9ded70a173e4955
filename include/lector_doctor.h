/*
 * lector_doctor.h - diagnose the GPU stack layer by layer (`lector doctor`)
 * and explain pasted error messages (`lector explain`).
 *
 * Usage:
 *
 *     lector_doctor_options opt;
 *     lector_doctor_default_options(&opt);
 *     opt.root = "/mnt/image";                  // optional: examine a tree
 *     lector_doctor_report *r = lector_doctor_run(&opt);
 *     if (r) {
 *         char *json = lector_doctor_report_json(r);   // lector_doctor_string_free() it
 *         int usable = lector_doctor_report_gpu_usable(r);
 *         free(json);
 *         lector_doctor_report_free(r);
 *     }
 *
 * Layers: L0 system, L1 kernel driver, L2 NVML, L3 CUDA driver API,
 * L4 CUDA libraries, L5 Lector's engine, plus "inspect" for --inspect.
 * Everything NVIDIA is reached through dlopen/dlsym, so this works (and
 * reports what is missing) on machines without any NVIDIA software.
 * docs/DOCTOR.md documents every check and the JSON schema.
 *
 * Threading: a run loads NVML and libcuda and reads the process
 * environment; run one doctor at a time per process. Reports are plain
 * data and may be read from any thread.
 */
#ifndef LECTOR_DOCTOR_H
#define LECTOR_DOCTOR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Overall verdict, also the JSON "status". Values never renumbered. */
typedef enum lector_doctor_status {
    LECTOR_DOCTOR_READY = 0,    /* Lector can use the GPU and nothing failed */
    LECTOR_DOCTOR_DEGRADED = 1, /* Lector can use the GPU, but a check failed: e.g. programs that
                                   load CUDA libraries by name (Paddle, ONNX Runtime, torch) fail */
    LECTOR_DOCTOR_BROKEN = 2    /* Lector cannot use the GPU (only the CPU), or a file given to
                                   --inspect cannot load */
} lector_doctor_status;

/** Parameters of a run. Fill with lector_doctor_default_options() first. */
typedef struct lector_doctor_options {
    const char *root;           /* examine this tree instead of "/" (NULL: live) */
    const char *const *inspect; /* ELF files for --inspect (in-tree paths) */
    size_t n_inspect;
    const char *nvml_path;            /* NVML to dlopen; NULL: $LECTOR_DOCTOR_NVML,
                                    else "libnvidia-ml.so.1" (skipped under root) */
    const char *libcuda_path;         /* libcuda to dlopen; NULL: $LECTOR_DOCTOR_LIBCUDA,
                                    else "libcuda.so.1" (skipped under root) */
    const char *ld_library_path;      /* NULL: the environment's LD_LIBRARY_PATH */
    int no_dlopen_libs;               /* 1: never dlopen CUDA libraries for versions */
    int dlopen_in_root;               /* 1: under root, still dlopen the tree's CUDA
                                    libraries to query versions (only safe when
                                    the tree was built for this machine; tests) */
    int verbose;                      /* text output: print evidence of ok checks too */
    const char *ld_preload;           /* NULL: the environment's LD_PRELOAD */
    const char *cuda_visible_devices; /* NULL: the environment's CUDA_VISIBLE_DEVICES */
    int lector_cuda_major;            /* the CUDA major Lector's GPU libraries are checked
                                    for: a Lector built for it, as when planning a deployment
                                    from a build machine without the toolkit (the module and
                                    the self-test still need a build with the CUDA backend);
                                    0: this build's (none when built without the toolkit) */
} lector_doctor_options;

/** Opaque result of a run. */
typedef struct lector_doctor_report lector_doctor_report;

/** Fill *opt with defaults (live system, environment overrides honoured). */
void lector_doctor_default_options(lector_doctor_options *opt);

/** Run every check. Returns NULL only on allocation failure. */
lector_doctor_report *lector_doctor_run(const lector_doctor_options *opt);

/** Free a report; NULL is a no-op. */
void lector_doctor_report_free(lector_doctor_report *r);

/** Overall verdict. */
lector_doctor_status lector_doctor_report_status(const lector_doctor_report *r);

/** 1 if Lector can use the GPU: a CUDA context and a device allocation
 *  worked (under --root: nothing in the tree rules the GPU out) and the
 *  libraries Lector's CUDA backend loads are usable; else 0. */
int lector_doctor_report_gpu_usable(const lector_doctor_report *r);

/** The JSON document (schema in docs/DOCTOR.md); release it with
 *  lector_doctor_string_free(). NULL on allocation failure. */
char *lector_doctor_report_json(const lector_doctor_report *r);

/** The human-readable report, grouped by layer, ending with the one-line
 *  summary; lector_doctor_string_free() it. NULL on allocation failure. */
char *lector_doctor_report_text(const lector_doctor_report *r);

/** Convenience: run with *opt and return the JSON (lector_doctor_string_free). */
char *lector_doctor_json(const lector_doctor_options *opt);

/** Free a string returned by this API; NULL is a no-op. */
void lector_doctor_string_free(char *s);

/** One match of `lector explain`. Strings point into static tables. */
typedef struct lector_explain_match {
    const char *id, *message, *layer, *cause, *fix, *check, *source;
    int score;   /* higher is better; 0..100 */
    int generic; /* 1: no known message matched; a rule for the library family
                    named in the text (message and source are "") */
} lector_explain_match;

/** Match `text` against the knowledge base; fills up to `max` matches,
 *  best first, and returns how many were found (0: unknown text). When no
 *  known message matches, a loader error naming a CUDA, cuDNN, cuBLAS,
 *  NVRTC, NVML or driver library ("cannot open shared object file",
 *  "undefined symbol", "wrong ELF class", "version `X' not found", ...)
 *  gets one generic match for that library's layer. */
size_t lector_explain_match_text(const char *text, lector_explain_match *out, size_t max);

/** Number of messages in the knowledge base. */
size_t lector_explain_known_count(void);

/** The i-th known message (i < lector_explain_known_count()); 0 or -1. */
int lector_explain_known(size_t i, lector_explain_match *out);

#ifdef __cplusplus
}
#endif

#endif /* LECTOR_DOCTOR_H */
