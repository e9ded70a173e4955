/* explain.c - match pasted error output against the knowledge base
 * (explain_table.c), and, when no known message matches, fall back to a
 * rule for the library family the text names: a loader error ("cannot
 * open shared object file", "undefined symbol", "wrong ELF class",
 * "version `X' not found", "invalid ELF header", ...) naming a CUDA, cuDNN,
 * cuBLAS, NVRTC, NVML or driver library maps to that library's layer, a
 * generic cause and the doctor check to run. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

/* Lower-case and collapse whitespace runs, so wrapped terminal output and
 * copy-paste artefacts still match. */
static char *normalise(const char *text)
{
    size_t n = strlen(text);
    char *s = lector__malloc(n + 1);
    if (!s) return NULL;
    size_t o = 0;
    int sp = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (isspace(c)) {
            sp = 1;
            continue;
        }
        if (sp && o) s[o++] = ' ';
        sp = 0;
        s[o++] = (char)tolower(c);
    }
    s[o] = 0;
    return s;
}

size_t lector_explain_known_count(void) { return doctor_explain_table_len; }

static lector_explain_match from_entry(const doctor_explain_entry *e, int score)
{
    lector_explain_match m = {e->id, e->message, e->layer, e->cause, e->fix, e->check, e->source, score, 0};
    return m;
}

int lector_explain_known(size_t i, lector_explain_match *out)
{
    if (i >= doctor_explain_table_len || !out) return -1;
    *out = from_entry(&doctor_explain_table[i], 100);
    return 0;
}

/* ------------------------------------------------- generic family rules */

typedef struct family_rule {
    const char *lib;   /* a lower-case fragment of the library's file name */
    const char *layer; /* where it lives */
    const char *what;  /* the library, in words */
    const char *check; /* the doctor check that examines it */
} family_rule;

/* Longer fragments first: "libcublaslt" before "libcublas", "libcudnn_" before "libcudnn". */
static const family_rule families[] = {
    {"libcudnn_", "L4 CUDA libraries", "a cuDNN split library (loaded by libcudnn.so.N on demand)", "l4.cudnn_split"},
    {"libcudnn", "L4 CUDA libraries", "cuDNN", "l4.cudnn"},
    {"libcublaslt", "L4 CUDA libraries", "cuBLASLt", "l4.cublasLt"},
    {"libcublas", "L4 CUDA libraries", "cuBLAS", "l4.cublas"},
    {"libcudart", "L4 CUDA libraries", "the CUDA runtime", "l4.cudart"},
    {"libnvrtc", "L4 CUDA libraries", "NVRTC (the runtime compiler)", "l4.nvrtc"},
    {"libnvjitlink", "L4 CUDA libraries", "nvJitLink", "l4.cudart"},
    {"libcufft", "L4 CUDA libraries", "cuFFT", "l4.cudart"},
    {"libcurand", "L4 CUDA libraries", "cuRAND", "l4.cudart"},
    {"libcusparse", "L4 CUDA libraries", "cuSPARSE", "l4.cudart"},
    {"libcusolver", "L4 CUDA libraries", "cuSOLVER", "l4.cudart"},
    {"libnccl", "L4 CUDA libraries", "NCCL", "l4.cudart"},
    {"libnvinfer", "L4 CUDA libraries", "TensorRT", "l4.cudart"},
    {"libnvidia-ml", "L2 NVML", "NVML (libnvidia-ml, part of the driver)", "l2.nvml"},
    {"libcuda.so", "L3 CUDA driver API", "the CUDA driver library (libcuda, part of the driver)", "l3.libcuda"},
    {"libnvidia-", "L2 NVML", "a library of the NVIDIA driver's user-space part", "l2.nvml"},
    {"libonnxruntime_providers_cuda", "L4 CUDA libraries",
     "ONNX Runtime's CUDA provider (it needs cuBLAS, cuDNN and the CUDA runtime of its build)", "l4.cudnn"},
};

typedef struct error_rule {
    const char *key;   /* lower-case fragment of the loader's message */
    const char *cause; /* printf: %s = the library in words */
    const char *fix;   /* printf: %s = the library file name as written in the text */
} error_rule;

static const error_rule errors[] = {
    {"cannot open shared object file",
     "The loader cannot find %s by that name: it is not installed, it is of another major version (built for "
     "another CUDA), or its directory is on no search path (LD_LIBRARY_PATH, ld.so.cache, RPATH)",
     "lector doctor --inspect THE_FAILING_BINARY (shows where %s would resolve, and what to install or add to "
     "LD_LIBRARY_PATH)"},
    {"undefined symbol",
     "%s was loaded but lacks a symbol the caller needs: two releases are mixed (e.g. libcublas of one CUDA update "
     "with libcublasLt of another, or a wheel's library shadowed by a system copy)",
     "lector doctor -v (compare the versions of %s and the libraries next to it; load them from one install)"},
    {"not defined in file",
     "%s was loaded from another release than the library that links to it (symbol version mismatch)",
     "lector doctor -v (load %s and its partner from one install)"},
    {"version `",
     "%s is older than the program needs (a symbol version it requires is missing): an older copy comes first on "
     "the search path",
     "lector doctor -v (find the older copy of %s on LD_LIBRARY_PATH or in the cache and remove it)"},
    {"wrong elf class",
     "The file found for %s is a 32-bit (or otherwise other-class) build: the loader skips it and finds no 64-bit "
     "copy",
     "install the x86_64 build of %s (lector doctor shows the 32-bit copy it passed over)"},
    {"invalid elf header",
     "The file found for %s is not a library (a text file, a Git LFS pointer, an HTML error page saved under its "
     "name): the loader stops there",
     "lector doctor (it names the file; move it away or fetch the real %s)"},
    {"file too short",
     "The file found for %s is empty or cut short (an interrupted copy or download): the loader stops there",
     "lector doctor (it names the file; reinstall %s)"},
    {"too many levels of symbolic links",
     "The symbolic links for %s form a loop: the loader gives up on that directory",
     "lector doctor (it names the looping link; recreate %s's links, e.g. sudo ldconfig)"},
    {"permission denied", "The file for %s is not readable by this user", "ls -l the file; chmod a+r it (%s)"},
    {"failed to map segment", "The file for %s is truncated or damaged", "reinstall %s"},
    {"could not load library",
     "%s could not be loaded at run time (cuDNN and cuBLAS load parts of themselves on demand)",
     "lector doctor (checks %s's split libraries and their versions)"},
    {"cannot be preloaded",
     "LD_PRELOAD or /etc/ld.so.preload names %s, which cannot be loaded; every program prints this",
     "unset LD_PRELOAD (or remove %s from /etc/ld.so.preload)"},
};

/* The library file name the text mentions first among the families:
 * copies "libcudnn_cnn_infer.so.8" into name, returns the rule. */
static const family_rule *find_family(const char *t, char *name, size_t len)
{
    const family_rule *best = NULL;
    const char *at = NULL;
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
        const char *p = strstr(t, families[i].lib);
        if (p && (!at || p < at || (p == at && strlen(families[i].lib) > strlen(best->lib)))) {
            at = p;
            best = &families[i];
        }
    }
    if (!best) return NULL;
    size_t n = strcspn(at, " :;,()'\"`[]\n");
    snprintf(name, len, "%.*s", (int)n, at);
    return best;
}

static const char *generic_ids[] = {"generic-not-found",   "generic-undefined-symbol", "generic-symbol-version",
                                    "generic-version",     "generic-wrong-class",      "generic-invalid-elf",
                                    "generic-file-short",  "generic-symlink-loop",     "generic-permission",
                                    "generic-map-segment", "generic-runtime-load",     "generic-preload"};

/* One generic match, built into caller-owned static-lifetime storage:
 * lector_explain_match holds pointers, so the texts live in a small ring
 * of buffers (thread-local: the matcher is reentrant per thread). */
static _Thread_local char gen_cause[4][640], gen_fix[4][400], gen_layer[4][64];
static _Thread_local unsigned gen_slot;

static int generic(const char *t, const char *original, lector_explain_match *out)
{
    char lib[128];
    const family_rule *f = find_family(t, lib, sizeof lib);
    if (!f) return 0;
    /* the library's name as the text spells it */
    const char *at = strcasestr(original, lib);
    if (at) snprintf(lib, sizeof lib, "%.*s", (int)strlen(lib), at);
    for (size_t i = 0; i < sizeof errors / sizeof *errors; i++) {
        if (!strstr(t, errors[i].key)) continue;
        unsigned s = gen_slot++ % 4;
        snprintf(gen_cause[s], sizeof gen_cause[s], errors[i].cause, f->what);
        snprintf(gen_fix[s], sizeof gen_fix[s], errors[i].fix, lib);
        snprintf(gen_layer[s], sizeof gen_layer[s], "%s", f->layer);
        lector_explain_match m = {generic_ids[i], "", gen_layer[s], gen_cause[s], gen_fix[s], f->check, "", 50, 1};
        *out = m;
        return 1;
    }
    return 0;
}

size_t lector_explain_match_text(const char *text, lector_explain_match *out, size_t max)
{
    if (!text || !out || !max) return 0;
    char *t = normalise(text);
    if (!t) return 0;
    size_t n = 0;
    size_t hits[16];
    if (max > 16) max = 16;
    for (size_t i = 0; i < doctor_explain_table_len; i++) {
        const doctor_explain_entry *e = &doctor_explain_table[i];
        size_t total = 0, hit = 0, nhit = 0;
        for (const char *const *k = e->keys; *k; k++) {
            size_t kl = strlen(*k);
            total += kl;
            if (strstr(t, *k)) {
                hit += kl;
                nhit++;
            }
        }
        if (!nhit || !total) continue;
        /* score: share of the entry's key text found, so a message that
           matches all of a specific entry beats a partial generic one */
        int score = (int)(100 * hit / total);
        lector_explain_match m = from_entry(e, score);
        /* best first; at equal scores the entry whose keys cover more of the
           text is the more specific one */
        size_t pos = n;
        while (pos > 0 && (out[pos - 1].score < score || (out[pos - 1].score == score && hits[pos - 1] < hit))) pos--;
        if (pos >= max) continue;
        size_t last = n < max ? n : max - 1;
        memmove(&out[pos + 1], &out[pos], (last - pos) * sizeof *out);
        memmove(&hits[pos + 1], &hits[pos], (last - pos) * sizeof *hits);
        out[pos] = m;
        hits[pos] = hit;
        if (n < max) n++;
    }
    /* no known message matched in full: the rule for the library family
       the text names comes first (a partial match shares only a generic
       phrase such as "wrong ELF class" with it) */
    lector_explain_match g;
    if ((n == 0 || out[0].score < 100) && generic(t, text, &g)) {
        size_t last = n < max ? n : max - 1;
        memmove(&out[1], &out[0], last * sizeof *out);
        out[0] = g;
        if (n < max) n++;
    }
    lector__free(t);
    return n;
}
