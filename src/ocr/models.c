/*
 * models.c - where the models are: lector_find_models(), the one rule every
 * entry point (the engine, the CLI's subcommands, the service) follows.
 *
 * Order: the directory the caller names (params.models_dir, --models), the
 * LECTOR_MODELS environment variable, a directory beside the executable as
 * the offline bundle and an install lay it out (../models,
 * ../share/lector/models), then, for a binary that still lies in the build
 * tree it was built in (build/lector, the tests), the source tree's models/
 * that the build was configured from (scripts/fetch_models.sh fills it). A
 * copy of that binary elsewhere does not fall back on the build machine's
 * source tree. A named directory is
 * taken as it is: when it lacks a file the error says so, rather than
 * quietly reading another set. The search looks for the default set's
 * detection model, recogniser and dictionary; the classifier is optional
 * (use_angle_cls is off by default) and its absence is reported when it is
 * loaded.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lector.h"
#include "util/util.h"

/* The build tree a binary was built in and the source tree's models/ it was
 * configured from; empty in the bundle's build. */
#ifndef LECTOR_SOURCE_MODELS_DIR
#define LECTOR_SOURCE_MODELS_DIR ""
#endif
#ifndef LECTOR_BUILD_DIR
#define LECTOR_BUILD_DIR ""
#endif

static const char *const required[] = {LECTOR_DEFAULT_DET_MODEL, LECTOR_DEFAULT_REC_MODEL, LECTOR_DEFAULT_REC_DICT};

/* 0 when every required file is a readable regular file in `dir`; else the
 * index + 1 of the first that is not, with errno's reason in *why. */
static int dir_missing(const char *dir, int *why)
{
    for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, required[i]) >= (int)sizeof path) {
            *why = ENAMETOOLONG;
            return (int)i + 1;
        }
        if (stat(path, &st) != 0) {
            *why = errno;
            return (int)i + 1;
        }
        if (!S_ISREG(st.st_mode)) {
            *why = EISDIR;
            return (int)i + 1;
        }
        if (access(path, R_OK) != 0) {
            *why = errno;
            return (int)i + 1;
        }
    }
    return 0;
}

/* The directory of the running executable, or "" when unknown. */
static void exe_dir(char *out, size_t n)
{
    char buf[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", buf, sizeof buf - 1);
    out[0] = 0;
    if (len <= 0) return;
    buf[len] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash) return;
    *slash = 0;
    snprintf(out, n, "%s", buf[0] ? buf : "/");
}

/* Is directory `dir` the build tree or under it? */
static int in_build_tree(const char *dir)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (!LECTOR_BUILD_DIR[0] || !dir[0] || !realpath(dir, a) || !realpath(LECTOR_BUILD_DIR, b)) return 0;
    size_t n = strlen(b);
    return !strncmp(a, b, n) && (a[n] == 0 || a[n] == '/');
}

/* Appends "; " + s to the list of places looked, truncating quietly (the
 * list is only ever a message). */
static void looked_add(char *list, size_t n, const char *fmt, const char *a, const char *b)
{
    size_t used = strlen(list);
    if (used + 3 >= n) return;
    if (used) {
        strcat(list, "; ");
        used += 2;
    }
    snprintf(list + used, n - used, fmt, a, b);
}

lector_status lector_find_models(const char *dir, char *out, size_t out_len, lector_error *err)
{
    if (!out || !out_len) return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "lector_find_models: NULL argument");
    out[0] = 0;
    int why = 0, miss;
    if (dir && *dir) {
        if ((miss = dir_missing(dir, &why)))
            return lector__error(err, LECTOR_ERR_IO,
                                 "models directory %s: %s: %s (scripts/fetch_models.sh fetches the models)", dir,
                                 required[miss - 1], strerror(why));
        if ((size_t)snprintf(out, out_len, "%s", dir) >= out_len)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "models directory %s: path too long", dir);
        return LECTOR_OK;
    }

    char looked[2048] = "";
    const char *env = getenv("LECTOR_MODELS");
    if (env && *env) {
        if ((miss = dir_missing(env, &why)))
            return lector__error(err, LECTOR_ERR_IO,
                                 "LECTOR_MODELS=%s: %s: %s (scripts/fetch_models.sh fetches the models; unset "
                                 "LECTOR_MODELS to search the usual places)",
                                 env, required[miss - 1], strerror(why));
        if ((size_t)snprintf(out, out_len, "%s", env) >= out_len)
            return lector__error(err, LECTOR_ERR_INVALID_ARGUMENT, "LECTOR_MODELS=%s: path too long", env);
        return LECTOR_OK;
    }
    looked_add(looked, sizeof looked, "%s%s", "--models / LECTOR_MODELS (not set)", "");

    char exe[PATH_MAX], cand[PATH_MAX + 32];
    exe_dir(exe, sizeof exe);
    /* exe is a real path (/proc/self/exe): its parent is a plain string cut */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", exe);
    char *cut = strrchr(parent, '/');
    if (cut) *cut = 0;
    const char *beside[] = {"/models", "/share/lector/models"};
    for (size_t i = 0; exe[0] && i < sizeof beside / sizeof *beside; i++) {
        snprintf(cand, sizeof cand, "%s%s", parent, beside[i]);
        if (!dir_missing(cand, &why) && (size_t)snprintf(out, out_len, "%s", cand) < out_len) return LECTOR_OK;
        looked_add(looked, sizeof looked, "%s%s", cand, "");
    }
    if (LECTOR_SOURCE_MODELS_DIR[0] && in_build_tree(exe)) {
        if (!dir_missing(LECTOR_SOURCE_MODELS_DIR, &why) &&
            (size_t)snprintf(out, out_len, "%s", LECTOR_SOURCE_MODELS_DIR) < out_len)
            return LECTOR_OK;
        looked_add(looked, sizeof looked, "%s%s", LECTOR_SOURCE_MODELS_DIR, " (the source tree's)");
    }
    return lector__error(err, LECTOR_ERR_IO,
                         "no models found; looked in: %s. Get them with scripts/fetch_models.sh (in the source "
                         "tree), or give --models DIR or LECTOR_MODELS=DIR",
                         looked);
}
