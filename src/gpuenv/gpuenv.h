/*
 * gpuenv.h - GPU discovery: the layer under the runtime's CUDA module
 * loader and under the doctor (src/doctor).
 *
 * It answers "which file would the dynamic loader hand out for this name,
 * or why would it fail", "which copies of the CUDA libraries exist and
 * which versions are they", and "what do NVML and libcuda say". It knows
 * nothing of reports, JSON or explanations: that is the doctor's job.
 *
 * Layout, one file per concern:
 *   strings.c    growable buffers, string vectors, version strings
 *   rootfs.c     file access inside an examined tree (--root), as after chroot
 *   elf.c        ELF header, program headers, dynamic section (untrusted bytes)
 *   ldcache.c    /etc/ld.so.cache reader, old and new formats, glibc-hwcaps
 *   ldconf.c     /etc/ld.so.conf and its include files
 *   fatbin.c     .nv_fatbin container walker (untrusted bytes)
 *   ldso.c       glibc's ld.so search and load, emulated
 *   finder.c     copies of the CUDA libraries, the one the engine loads
 *   bundle.c     the CUDA libraries an offline bundle carries; bundle or system (--cuda-libs)
 *   drvfiles.c   which libcuda / libnvidia-ml the loader hands out, and what they are
 *   tables.c     CUDA toolkit -> minimum driver, compute capabilities
 *   probe_dlopen.c dlopen of a driver library for a probe
 *   probe_nvml.c NVML through dlopen: driver, GPUs
 *   probe_cuda.c the CUDA driver API through dlopen: cuInit, devices, contexts
 *   nvml_metrics.c live per-GPU samples for `lector serve`'s /metrics
 *
 * Contracts: no function here aborts or exits; every allocation goes through
 * lector__malloc & co. (src/util) and a failure is reported through the
 * return value (-2 or NULL). Parsers of untrusted bytes never read outside
 * the (data, size) they are given. Paths called "in-tree" are absolute
 * paths inside the examined root; with no root they are host paths.
 */
#ifndef LECTOR_GPUENV_H
#define LECTOR_GPUENV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- strings */

/** Growable NUL-terminated string. A zeroed struct is an empty buffer. */
typedef struct gpuenv_buf {
    char *s;
    size_t len, cap;
    int oom; /* sticky: set when an append could not allocate */
} gpuenv_buf;

void gpuenv_buf_printf(gpuenv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gpuenv_buf_puts(gpuenv_buf *b, const char *s);
void gpuenv_buf_putn(gpuenv_buf *b, const char *s, size_t n);
/** Take the string out (caller lector__free()s); NULL if oom. Leaves b empty. */
char *gpuenv_buf_take(gpuenv_buf *b);
void gpuenv_buf_free(gpuenv_buf *b);

/** lector__strdup that accepts NULL (returns NULL). */
char *gpuenv_strdup(const char *s);
char *gpuenv_strndup(const char *s, size_t n);
/** Allocated printf; NULL on failure. */
/* The environment variable's value, or dflt when it is unset or empty. */
const char *gpuenv_env_or(const char *name, const char *dflt);
/* An error code's name from a table, or `unknown`. */
typedef struct gpuenv_code_name {
    int code;
    const char *name;
} gpuenv_code_name;
const char *gpuenv_code_name_of(const gpuenv_code_name *t, size_t n, int code, const char *unknown);
char *gpuenv_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *gpuenv_vasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/** Growable array of owned strings. */
typedef struct gpuenv_strv {
    char **v;
    size_t n, cap;
} gpuenv_strv;
/** Append a copy of s; 0 or -1 on allocation failure. */
int gpuenv_strv_push(gpuenv_strv *sv, const char *s);
/** Append s and take ownership; -1 (and s freed) on failure or s NULL. */
int gpuenv_strv_push_owned(gpuenv_strv *sv, char *s);
int gpuenv_strv_has(const gpuenv_strv *sv, const char *s);
void gpuenv_strv_free(gpuenv_strv *sv);
/** Split on any character of `seps`, keeping empty items. */
int gpuenv_strv_split(gpuenv_strv *sv, const char *list, const char *seps);
/** Join with `sep`; NULL on allocation failure. */
char *gpuenv_strv_join(const gpuenv_strv *sv, const char *sep);

/** Compare dotted numeric versions ("580.95.05" vs "580.65.06"): <0, 0, >0. */
int gpuenv_vercmp(const char *a, const char *b);
/** 1 when the components both versions have are equal ("13.1.0" ~ "13.1.0.3"). */
int gpuenv_ver_same(const char *a, const char *b);
/** Version suffix of a library file name: "libcudnn.so.9.14.0" -> "9.14.0",
 *  "libcudnn.so" -> ""; NULL on allocation failure. */
char *gpuenv_soname_version(const char *file_name);
/** Leading integer of a version string ("9.14.0" -> 9), -1 if none. */
int gpuenv_ver_major(const char *v);
/** Last path component (points into p). */
const char *gpuenv_basename(const char *p);
/** Directory part of a path ("/a/b" -> "/a", "/a" -> "/", "a" -> "."). */
char *gpuenv_dirname(const char *p);
/** Shell-quote s when it needs it (for printed commands). */
char *gpuenv_shell_quote(const char *s);

/* ----------------------------------------------------------------- rootfs */

/** 1 when root means the live system (NULL, "" or "/"). */
int gpuenv_is_live(const char *root);
/** Host path of an in-tree absolute path; NULL on allocation failure. */
char *gpuenv_host_path(const char *root, const char *path);
/** Resolve every symbolic link of an in-tree path inside root, as the kernel
 *  would after chroot(root) (absolute targets stay in the tree; at most 40
 *  links). Returns 0 and the canonical in-tree path in *canon, or the errno
 *  the kernel would give (ENOENT, ENOTDIR, ELOOP, EACCES), or -2 (oom). */
int gpuenv_root_resolve(const char *root, const char *path, char **canon);
/** Canonical in-tree path or NULL (any failure). */
char *gpuenv_root_realpath(const char *root, const char *path);
int gpuenv_root_exists(const char *root, const char *path);
/** stat() following links inside root: 0 or an errno. */
int gpuenv_root_stat(const char *root, const char *path, struct stat *st);
/** Read at most max bytes of an in-tree text file; NULL when absent. */
char *gpuenv_root_read_text(const char *root, const char *path, size_t max);
/** Sorted names in an in-tree directory (no "." / ".."): 0, errno, or -2. */
int gpuenv_root_list(const char *root, const char *dir, gpuenv_strv *names);
/** In-tree directories matching a glob pattern (in-tree), appended to out. */
int gpuenv_root_glob(const char *root, const char *pattern, gpuenv_strv *out);
/** glibc of the tree (live: this process's) as 100*major+minor, 0 unknown. */
int gpuenv_glibc_version(const char *root);

/** A read-only file mapping. */
typedef struct gpuenv_map {
    const uint8_t *data;
    size_t size;
} gpuenv_map;
/** Map a host path read-only: 0 or an errno. Empty files map to size 0. */
int gpuenv_map_file(const char *host_path, gpuenv_map *m);
/** Map an in-tree path (links resolved inside root): 0, errno or -2. */
int gpuenv_root_map(const char *root, const char *path, gpuenv_map *m);
void gpuenv_unmap(gpuenv_map *m);

/* -------------------------------------------------------------------- elf */

/** What the loader needs from an ELF object. Strings are owned copies. */
typedef struct gpuenv_elf {
    int elfclass;      /* 1 = 32-bit, 2 = 64-bit */
    uint16_t machine;  /* e_machine */
    uint16_t type;     /* e_type: 1 REL, 2 EXEC, 3 DYN */
    int has_interp;    /* PT_INTERP present (an executable) */
    int has_dynamic;   /* PT_DYNAMIC present */
    int loads_in_file; /* every PT_LOAD's file range lies inside the file */
    int dyn_in_file;   /* PT_DYNAMIC lies inside the file (else mapping it faults: SIGBUS) */
    int n_loads;
    char *soname;        /* DT_SONAME or NULL */
    char *rpath;         /* DT_RPATH, NULL when DT_RUNPATH is set (glibc ignores it then) */
    char *rpath_raw;     /* DT_RPATH as written, for display */
    char *runpath;       /* DT_RUNPATH or NULL */
    gpuenv_strv needed;  /* DT_NEEDED in order */
    gpuenv_strv verneed; /* "file\tversion" of DT_VERNEED (non-weak) */
    gpuenv_strv verdef;  /* version names of DT_VERDEF (not the base) */
    int nodeflib;        /* DF_1_NODEFLIB */
    /* .nv_fatbin section inside the bytes given to gpuenv_elf_parse */
    const uint8_t *fatbin;
    size_t fatbin_size;
    int cuda_sm; /* a CUDA cubin (e_machine 190): e_flags & 0xff */
} gpuenv_elf;

/** Parse an ELF image held in memory (little endian, 32 or 64-bit).
 *  0, -1 if not ELF or malformed beyond use, -2 on allocation failure. */
int gpuenv_elf_parse(const uint8_t *data, size_t size, gpuenv_elf *out);
void gpuenv_elf_free(gpuenv_elf *e);

/* ---------------------------------------------------------------- ldcache */

typedef struct gpuenv_ldcache_entry {
    char *key;     /* SONAME */
    char *value;   /* absolute path */
    char *hwcaps;  /* glibc-hwcaps subdirectory ("x86-64-v3") or NULL */
    int32_t flags; /* FLAG_ELF_LIBC6 | arch byte */
    uint64_t hwcap;
} gpuenv_ldcache_entry;

typedef struct gpuenv_ldcache {
    gpuenv_ldcache_entry *e;
    size_t n;
    int has_old, has_new; /* which formats the file held */
} gpuenv_ldcache;

#define GPUENV_LDCACHE_X86_64 0x0303 /* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */

/** Parse an ld.so.cache image. When both formats are present the new one's
 *  entries are used (as glibc does). 0, -1 malformed, -2 allocation. */
int gpuenv_ldcache_parse(const uint8_t *data, size_t size, gpuenv_ldcache *out);
/** What glibc's lookup returns for `name`: among x86-64 libc6 entries, the
 *  glibc-hwcaps entry of the best priority in `hwcaps` (subdirectory names,
 *  best first), else the first plain entry; NULL if none. */
const char *gpuenv_ldcache_lookup(const gpuenv_ldcache *c, const char *name, const gpuenv_strv *hwcaps);
void gpuenv_ldcache_free(gpuenv_ldcache *c);

/* ----------------------------------------------------------------- ldconf */

/** /etc/ld.so.conf of a tree: the directories ldconfig puts in the cache. */
typedef struct gpuenv_ldconf {
    gpuenv_strv dirs;  /* in-tree directories, in order */
    gpuenv_strv files; /* for dirs[i]: the file that names it */
} gpuenv_ldconf;
/** Read /etc/ld.so.conf and its include files: 0 (also when absent) or -2. */
int gpuenv_ldconf_read(const char *root, gpuenv_ldconf *out);
void gpuenv_ldconf_free(gpuenv_ldconf *c);

/* ----------------------------------------------------------------- fatbin */

typedef struct gpuenv_fatbin {
    size_t containers, entries, compressed;
    uint8_t sass[256]; /* sass[86] = 1: a cubin for sm_86 is present */
    uint8_t ptx[256];  /* ptx[90]  = 1: PTX for compute_90 is present */
    int truncated;     /* a container or entry ran past the section */
} gpuenv_fatbin;

/** Walk all containers of a .nv_fatbin section: 0, or -1 when not even one
 *  container header is valid. */
int gpuenv_fatbin_scan(const uint8_t *data, size_t size, gpuenv_fatbin *out);
/** 1 when the driver can run this code on compute capability major.minor:
 *  a cubin of the same major with minor <= the device's, or PTX <= it. */
int gpuenv_fatbin_runs_on(const gpuenv_fatbin *f, int cc_major, int cc_minor);
/** "SASS: sm_75 sm_80; PTX: compute_90"; NULL on allocation failure. */
char *gpuenv_fatbin_describe(const gpuenv_fatbin *f);

/* ------------------------------------------------------------------- ldso */

/** Where a search found (or stopped at) a file. */
typedef enum gpuenv_via {
    GPUENV_VIA_NONE = 0,
    GPUENV_VIA_PATH,            /* the name contains '/' */
    GPUENV_VIA_LOADED,          /* an object already loaded (preload, earlier dependency) */
    GPUENV_VIA_RPATH,           /* DT_RPATH of the asking object or one that loaded it */
    GPUENV_VIA_LD_LIBRARY_PATH, /* the environment */
    GPUENV_VIA_RUNPATH,         /* DT_RUNPATH of the asking object */
    GPUENV_VIA_CACHE,           /* /etc/ld.so.cache */
    GPUENV_VIA_DEFAULT,         /* the system directories */
    GPUENV_VIA_PRELOAD          /* LD_PRELOAD or /etc/ld.so.preload */
} gpuenv_via;
const char *gpuenv_via_str(gpuenv_via v);

/** The loader's view of one examined system: the tree and the environment
 *  a program started there would have. */
typedef struct gpuenv_ldso {
    char *root;               /* NULL: the live system */
    gpuenv_strv llp;          /* LD_LIBRARY_PATH items (":" and ";"), "" = current dir */
    char *llp_raw;            /* LD_LIBRARY_PATH as given (NULL when unset) */
    gpuenv_strv preload;      /* LD_PRELOAD items, then /etc/ld.so.preload's */
    gpuenv_strv preload_from; /* for preload[i]: "LD_PRELOAD" or "/etc/ld.so.preload" */
    gpuenv_ldcache cache;
    int cache_state;          /* 1 read, 0 absent, -1 not a glibc cache */
    gpuenv_strv default_dirs; /* system directories in glibc's order */
    gpuenv_strv subdirs;      /* per search directory: "glibc-hwcaps/x86-64-v4/", ..., legacy, "" */
    gpuenv_strv hwcaps;       /* supported glibc-hwcaps names, best first (cache lookups) */
    const char *lib_token;    /* $LIB */
    char platform[32];        /* $PLATFORM */
    int glibc;                /* 100*major+minor of the tree's glibc, 0 unknown */
} gpuenv_ldso;

/** Set up the loader's view. ld_library_path / ld_preload NULL mean the
 *  process environment's. 0 or -2. */
int gpuenv_ldso_init(gpuenv_ldso *L, const char *root, const char *ld_library_path, const char *ld_preload);
void gpuenv_ldso_free(gpuenv_ldso *L);

/** One object in a load: its path as the loader names it (l_name), its
 *  canonical path, and its dynamic information. */
typedef struct gpuenv_obj {
    char *path; /* in-tree path as found ("dir/" + name, the cache's value, ...) */
    char *real; /* canonical in-tree path */
    gpuenv_elf elf;
    gpuenv_map map;                  /* kept for fatbin scanning */
    const struct gpuenv_obj *loader; /* the object whose need brought it in (RPATH inheritance) */
    gpuenv_strv names;               /* names it was asked for by (plus SONAME) */
    gpuenv_via via;
    int is_main; /* the program (or the file given by path) */
    int assumed; /* not read from disk: the dynamic loader itself, or glibc assumed present */
} gpuenv_obj;
/** Open an in-tree path as an object: 0, -1 (unreadable or not an ELF), -2. */
int gpuenv_obj_open(const gpuenv_ldso *L, const char *path, gpuenv_obj *o);
void gpuenv_obj_close(gpuenv_obj *o);

/** Outcome of one search for a name. */
typedef enum gpuenv_outcome {
    GPUENV_FOUND = 0, /* path is the file the loader maps */
    GPUENV_NOT_FOUND, /* "cannot open shared object file" or "wrong ELF class" */
    GPUENV_FATAL,     /* a candidate stopped the search: path is it, error says why */
    GPUENV_MAP_FAILED /* found, but mapping it fails (error says why) */
} gpuenv_outcome;

/** A candidate the search passed over, and why. */
typedef enum gpuenv_skipwhy {
    GPUENV_SKIP_ERRNO = 0, /* open failed with err (EACCES, ELOOP, ENOTDIR, ...) */
    GPUENV_SKIP_CLASS,     /* an ELF of the other class (32-bit) */
    GPUENV_SKIP_MACHINE,   /* an ELF for another machine (aarch64, ...) */
    GPUENV_SKIP_STALE,     /* a cache entry whose file is gone */
    GPUENV_SKIP_ENDED,     /* err ended the search of this list (ELOOP, EISDIR, ...) */
    GPUENV_SKIP_BAD        /* lenient search only: a file that stops glibc (not an ELF, ...) */
} gpuenv_skipwhy;

typedef struct gpuenv_skip {
    char *path;
    gpuenv_via via;
    gpuenv_skipwhy why;
    int err;
} gpuenv_skip;

typedef struct gpuenv_find {
    gpuenv_outcome outcome;
    char *path;        /* FOUND, FATAL, MAP_FAILED: the file */
    gpuenv_via via;    /* where the search was when it stopped */
    char *list_item;   /* the search directory as the list names it (RPATH, LD_LIBRARY_PATH,
                        RUNPATH or default dir); NULL for the cache, preloads, paths */
    char *error;       /* dlerror() text for a failure */
    const char *what;  /* the message without object name and errno text ("invalid ELF header") */
    int err;           /* errno of the failure (0 for format errors) */
    gpuenv_skip *skip; /* candidates passed over, in search order */
    size_t n_skip;
} gpuenv_find;

/** Search `name` as glibc's _dl_map_object would when `loader` asks for it
 *  (NULL: a dlopen from a program without RPATH/RUNPATH): RPATH chain (unless
 *  the asker has RUNPATH), LD_LIBRARY_PATH, RUNPATH of the asker, the cache,
 *  the default directories, each directory with its glibc-hwcaps
 *  subdirectories; a non-ELF, empty or truncated candidate ends the search
 *  (fatal), a candidate of another class or machine is skipped, an error
 *  other than ENOENT/EACCES/ENOTDIR ends the current list. `loaded` (may be
 *  NULL) are objects already in the process (matched by name and SONAME).
 *  0 or -2 (allocation); the result is in *out (gpuenv_find_free it). */
int gpuenv_ldso_find(const gpuenv_ldso *L, const char *name, const gpuenv_obj *loader, gpuenv_obj *const *loaded,
                     size_t n_loaded, gpuenv_find *out);
/** The same search, but a file that would stop glibc's search (not an ELF,
 *  too short, ...) is passed over (GPUENV_SKIP_BAD): the first usable file
 *  in the loader's order, which is what Lector preloads by absolute path. */
int gpuenv_ldso_find_usable(const gpuenv_ldso *L, const char *name, gpuenv_find *out);
void gpuenv_find_free(gpuenv_find *f);

/** A whole load: what dlopen(name) (or running a program) maps, in order. */
typedef struct gpuenv_edge {
    size_t from;
    char *name;
    long to; /* object index, -1 when it failed */
    gpuenv_via via;
} gpuenv_edge;

typedef struct gpuenv_load {
    gpuenv_obj **obj; /* obj[0] is the main object; then preloads, then the rest */
    size_t n;
    gpuenv_edge *edge;
    size_t n_edge;
    size_t n_startup;           /* objects [0, n_startup) were there before the dlopen */
    size_t first_requested;     /* index of the object dlopen(name) returned */
    int ok;                     /* 1: the load succeeds */
    char *error;                /* else: dlerror() text */
    int crash_signal;           /* the loader itself dies of this signal (SIGBUS: a truncated file) */
    gpuenv_strv missing;        /* names that were not found */
    gpuenv_strv preload_errors; /* "ld.so: object 'X' from LD_PRELOAD cannot be preloaded (...): ignored." */
    long sym_from;              /* an undefined symbol: the object whose reference failed, 1-based (0: none) */
    long sym_file;              /* and the object its symbol version names, 1-based (0: none or unknown) */
} gpuenv_load;

/** dlopen(name, RTLD_NOW) from a program with no RPATH/RUNPATH: preloads
 *  first, then the search, the mapping checks, the dependencies breadth
 *  first, and the symbol-version requirements. 0 or -2. */
int gpuenv_ldso_dlopen(const gpuenv_ldso *L, const char *name, gpuenv_load *out);
/** Load the ELF at in-tree `path` as the main object (an executable, or a
 *  library given by path) with every dependency; failures are recorded and
 *  the walk goes on (like `ldd`), ok is 0 when any need fails. 0 or -2. */
int gpuenv_ldso_load_file(const gpuenv_ldso *L, const char *path, gpuenv_load *out);
void gpuenv_load_free(gpuenv_load *ld);
/** Bind the symbols of objects [first, n) of a load the way dlopen(RTLD_NOW)
 *  does (global scope, then the load's own), recording the first failure
 *  as glibc words it ("undefined symbol: X, version V"). versioned_only:
 *  check only references whose symbol version names a file (a library
 *  given to --inspect may take unversioned symbols from the program that
 *  loads it, e.g. Python's). 0 or -2. */
int gpuenv_bind_symbols(gpuenv_load *ld, size_t first, int versioned_only);

/* ----------------------------------------------------------------- finder */

/** One copy of a library found on disk. */
typedef struct gpuenv_cand {
    char *path;   /* in-tree path as found */
    char *real;   /* canonical in-tree path */
    char *where;  /* "LD_LIBRARY_PATH", "ld.so.cache", "default dir", "CUDA toolkit", "pip wheel", ... */
    char *fver;   /* version from the file names ("9.14.0"), "" unknown */
    char *soname; /* DT_SONAME (NULL: not a readable ELF) */
    int elf_ok;   /* a 64-bit x86-64 ELF shared object */
} gpuenv_cand;

typedef struct gpuenv_cands {
    gpuenv_cand *v;
    size_t n, cap;
} gpuenv_cands;

/** 1 when file name `base` belongs to family `stem` ("libcublas.so.13" is
 *  cublas, "libcublasLt.so.13" is not; a stem ending in '_' matches cuDNN's
 *  split libraries). */
int gpuenv_stem_matches(const char *base, const char *stem);
/** Every copy of family `stem` in the places installers use: LD_LIBRARY_PATH,
 *  the cache, /etc/ld.so.conf's directories, the default directories,
 *  /usr/local/cuda*, pip wheels (site-packages/nvidia/<pkg>/lib, torch/lib),
 *  conda. 0 or -2. */
int gpuenv_collect(const gpuenv_ldso *L, const char *stem, gpuenv_cands *out);
void gpuenv_cands_free(gpuenv_cands *c);

/** What the CUDA backend loader wants to know about one library. */
typedef struct gpuenv_libinfo {
    char path[4096];  /* in-tree path to load */
    char real[4096];  /* canonical path */
    char version[64]; /* from the file names, else the SONAME */
    gpuenv_via via;
} gpuenv_libinfo;

/** The library of family `stem` ("cublas", "cublasLt", "cudnn", "nvrtc") the
 *  CUDA module should preload by absolute path, for CUDA major `cuda_major`:
 *  the first loadable file in the loader's search order for that major's
 *  SONAME (unlike glibc, a non-ELF file first in the path is passed over),
 *  else the installers' places. root NULL: live. 0, -1 not found, -2 oom. */
int gpuenv_find_best(const char *root, const char *stem, int cuda_major, gpuenv_libinfo *out);
/** The same in a given loader view (its LD_LIBRARY_PATH and preloads). */
int gpuenv_find_best_in(const gpuenv_ldso *L, const char *stem, int cuda_major, gpuenv_libinfo *out);

/** Where Lector's CUDA module is: $LECTOR_CUDA_MODULE, else liblector-cuda.so
 *  next to the running executable, else in ../lib of it (the offline bundle).
 *  0 with the path; -1 (the environment's path is absent) or -2 (not found;
 *  out says <exe dir>/liblector-cuda.so). */
int gpuenv_cuda_module_path(char *out, size_t len);

/* ----------------------------------------------------------------- bundle */

/** Which CUDA libraries Lector's module preloads (--cuda-libs, LECTOR_CUDA_LIBS). */
typedef enum gpuenv_libs_choice {
    GPUENV_LIBS_AUTO = 0, /* the bundle's set when it is complete, else the system's */
    GPUENV_LIBS_SYSTEM,   /* the system's (gpuenv_find_best) */
    GPUENV_LIBS_BUNDLE    /* the bundle's, or the module does not load */
} gpuenv_libs_choice;
/** "system", "bundle", "auto" (NULL or "" is auto): 0, or -1 for anything else. */
int gpuenv_libs_choice_parse(const char *s, gpuenv_libs_choice *out);
const char *gpuenv_libs_choice_str(gpuenv_libs_choice c);
/** The process's setting: $LECTOR_CUDA_LIBS (the CLI's --cuda-libs sets it); NULL when unset. */
const char *gpuenv_libs_setting(void);

/** The CUDA libraries of an offline bundle (bundle.c): the list
 *  lector-cuda<major>.libs that scripts/bundle --with-cuda writes into the
 *  directory of liblector-cuda.so. */
typedef struct gpuenv_bundle {
    char dir[4096];       /* the directory (the module's) */
    char list[4200];      /* dir/lector-cuda<major>.libs */
    int present;          /* the list exists */
    int complete;         /* it names the required libraries and every file it names is a
                             loadable x86-64 shared object whose SONAME is its name */
    int cuda_major;       /* the module's */
    char cuda[32];        /* CUDA release of the set ("13.0") */
    gpuenv_strv files;    /* file names in load order (dependencies first) */
    gpuenv_strv versions; /* versions, per file ("" unknown) */
    char why[8800];       /* not complete: the first problem */
} gpuenv_bundle;
/** Read and check the set in libdir for CUDA major `cuda_major`; `needs` are
 *  the stems that must be listed (NULL-terminated; "cudnn" means
 *  libcudnn.so.9). 0 (present/complete say the rest) or -2. */
int gpuenv_bundle_read(const char *libdir, int cuda_major, const char *const *needs, gpuenv_bundle *out);
void gpuenv_bundle_free(gpuenv_bundle *b);
/** Version of the listed file of family `stem`: 0, or -1 when not listed. */
int gpuenv_bundle_version_of(const gpuenv_bundle *b, const char *stem, char *out, size_t len);
/** Which set to preload: setting (NULL: $LECTOR_CUDA_LIBS; unset: auto)
 *  against the bundle. 1 the bundle's, 0 the system's, -1 neither (a bad
 *  setting, or "bundle" with an incomplete set), with the reason in why. */
int gpuenv_bundle_decide(const char *setting, const gpuenv_bundle *b, char *why, size_t len);
/** 1 when a driver supporting CUDA driver_cuda (1000*major+10*minor; <= 0
 *  unknown) runs the bundle's CUDA `bundle_cuda` ("13.0"): same major or
 *  newer (minor-version compatibility). Else 0, with the cause and the fix. */
int gpuenv_bundle_driver_ok(int driver_cuda, const char *bundle_cuda, char *cause, size_t clen, char *fix, size_t flen);

/* --------------------------------------------------------------- drvfiles */

/** What a driver library file is. */
typedef enum gpuenv_drvkind {
    GPUENV_DRV_NONE = 0, /* nothing found */
    GPUENV_DRV_DRIVER,   /* the driver's own file (libcuda.so.<driver version>) */
    GPUENV_DRV_STUB,     /* the toolkit's link-time stub (stubs/libcuda.so) */
    GPUENV_DRV_COMPAT,   /* cuda-compat forward-compatibility copy (.../compat/) */
    GPUENV_DRV_WSL,      /* WSL2's /usr/lib/wsl/lib copy */
    GPUENV_DRV_BAD       /* not loadable (the find says why) */
} gpuenv_drvkind;

typedef struct gpuenv_drvfile {
    gpuenv_find find; /* the loader's answer for the SONAME */
    char *real;       /* canonical path of the file found */
    char version[64]; /* driver version from the file name ("580.95.05"), "" unknown */
    gpuenv_drvkind kind;
    long long size;
    char *preload_item; /* when a preloaded object answers: the LD_PRELOAD item */
} gpuenv_drvfile;

/** Which file a program asking for `soname` ("libcuda.so.1",
 *  "libnvidia-ml.so.1") would get (preloads included) and what it is. 0 or -2. */
int gpuenv_drvfile_examine(const gpuenv_ldso *L, const char *soname, gpuenv_drvfile *out);
void gpuenv_drvfile_free(gpuenv_drvfile *d);

/* ----------------------------------------------------------------- tables */

/** Minimum driver for CUDA major.minor (release notes' Table 3), NULL unknown. */
const char *gpuenv_min_driver_for_cuda(int major, int minor);
/** Minimum driver for minor-version compatibility of a CUDA major. */
const char *gpuenv_min_driver_for_major(int major);
/** Highest CUDA (1000*major+10*minor) a driver version supports, 0 if older
 *  than every row. */
int gpuenv_cuda_for_driver(const char *driver_version);
/** Architecture family of a compute capability ("Hopper"). */
const char *gpuenv_cc_family(int major, int minor);
/** Oldest compute capability (10*major+minor) a CUDA major builds for, 0 unknown. */
int gpuenv_min_cc_for_cuda(int cuda_major);

/* ------------------------------------------------------------------ probes */

#define GPUENV_MAX_GPUS 64

typedef struct gpuenv_nvml_gpu {
    int handle_rc; /* nvmlDeviceGetHandleByIndex result */
    char name[96];
    int cc_major, cc_minor;
    int mem_ok, temp_ok, ecc_ok, reasons_ok;
    unsigned long long mem_total, mem_used;
    unsigned temp;
    int persistence; /* -1 unknown */
    unsigned long long ecc;
    unsigned long long reasons;
} gpuenv_nvml_gpu;

/** The driver library a probe opened (NVML, libcuda). */
typedef struct gpuenv_probe_lib {
    int loaded;             /* dlopen worked */
    char error[512];        /* dlerror when not */
    char loaded_path[4096]; /* the file dlopen really mapped (dlinfo) */
} gpuenv_probe_lib;

typedef struct gpuenv_nvml_probe {
    gpuenv_probe_lib lib;
    int init_rc;      /* nvmlInit_v2 (-1: missing symbol) */
    char driver[80];  /* nvmlSystemGetDriverVersion */
    int cuda_version; /* nvmlSystemGetCudaDriverVersion_v2, 0 unknown */
    int count_rc;
    unsigned count;
    gpuenv_nvml_gpu gpu[GPUENV_MAX_GPUS];
} gpuenv_nvml_probe;

/** dlopen(path, RTLD_NOW | RTLD_LOCAL) for a probe: the handle (lib->loaded
 *  set, lib->loaded_path the file really mapped when dlinfo can tell), or
 *  NULL with the loader's message in lib->error. */
void *gpuenv_probe_dlopen(const char *path, gpuenv_probe_lib *lib);

/** $LECTOR_DOCTOR_NVML, else "libnvidia-ml.so.1". */
const char *gpuenv_nvml_default_path(void);
/** $LECTOR_DOCTOR_LIBCUDA, else "libcuda.so.1". */
const char *gpuenv_libcuda_default_path(void);

/** dlopen NVML at `path` (a name or a path), initialise it, read the driver
 *  and every GPU, shut it down. Always fills *out; returns 0, or -1 when it
 *  could not be loaded. */
int gpuenv_nvml_probe_run(const char *path, gpuenv_nvml_probe *out);
/** "NVML_ERROR_LIB_RM_VERSION_MISMATCH" for 18. */
const char *gpuenv_nvml_error_name(int rc);

typedef struct gpuenv_cuda_device {
    char name[96];
    int cc_major, cc_minor;
    int rc;                  /* 0: context + 1 MiB allocation + memset + sync worked */
    const char *failed_call; /* the call that returned rc */
} gpuenv_cuda_device;

typedef struct gpuenv_cuda_probe {
    gpuenv_probe_lib lib;
    int driver_version; /* cuDriverGetVersion */
    int init_rc;        /* cuInit(0); -1: no cuInit symbol */
    int count_rc;
    int count;
    int api_missing; /* context or memory entry points absent */
    gpuenv_cuda_device dev[GPUENV_MAX_GPUS];
} gpuenv_cuda_probe;

/** dlopen libcuda at `path`, cuInit, count devices, and on each a primary
 *  context, a 1 MiB allocation, a memset and a synchronize. libcuda stays
 *  loaded (the driver's threads must keep their code). 0, or -1 when it
 *  could not be loaded. */
int gpuenv_cuda_probe_run(const char *path, gpuenv_cuda_probe *out);
/** "CUDA_ERROR_NO_DEVICE" for 100. */
const char *gpuenv_cu_error_name(int code);

/* ----------------------------------------------------------- nvml metrics */

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

#endif /* LECTOR_GPUENV_H */
