/* matrix.c - the doctor against the broken-environment matrix.
 *
 *   doctor_matrix doctor  MATRIX_TSV TREES_DIR SHIMS_DIR [ID...]
 *   doctor_matrix oracle  MATRIX_TSV TREES_DIR [ID...]
 *
 * "doctor": for every case of matrix.tsv, the doctor examines the case's
 * tree (built by make_matrix.sh) with the case's environment and the NVML /
 * libcuda shims answering as the case's machine would; the verdict, the
 * root cause's layer and cause code and a part of its fix must be the ones
 * the table gives (they come from the case's public thread, not from the
 * doctor). Every fix is checked to be runnable in that tree: no
 * placeholder, every absolute path it names exists there (or is one the
 * command creates), every LD_LIBRARY_PATH item it sets is a directory.
 *
 * "oracle": for every case with a name in its oracle column, glibc's own
 * loader is run inside the tree (chroot) with the case's LD_LIBRARY_PATH
 * and LD_PRELOAD and asked to dlopen that name; the emulation must give
 * the same answer (loader_oracle.c), and the doctor's report must show what
 * glibc did: the file it loaded or its error text. Exit 77 when this
 * machine cannot chroot.
 *
 * Exit 0 all cases pass, 1 a case fails, 2 usage or a bad table. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpuenv/gpuenv.h"
#include "loader_oracle.h"
#include "lector_doctor.h"
#include "util/util.h"

enum { C_ID, C_ENV, C_STATUS, C_LAYER, C_CODE, C_FIX, C_ORACLE, C_THREADS, C_WHAT, NCOL };

typedef struct mcase {
    gpuenv_strv col;
    const char *llp, *preload, *cvd, *nvml, *cuda, *inspect; /* NULL: unset */
    char *tree;
} mcase;

static int env_get(const char *env, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = env; p && *p;) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            snprintf(out, len, "%.*s", (int)(n - kl - 1), p + kl + 1);
            return 1;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static char llp_buf[4096], pre_buf[4096], cvd_buf[256], nvml_buf[64], cuda_buf[64], insp_buf[1024];

static int parse(mcase *m, const char *line, const char *trees)
{
    memset(m, 0, sizeof *m);
    gpuenv_strv_split(&m->col, line, "\t");
    if (m->col.n != NCOL) return -1;
    const char *env = m->col.v[C_ENV];
    if (env_get(env, "LLP", llp_buf, sizeof llp_buf)) m->llp = llp_buf;
    if (env_get(env, "PRELOAD", pre_buf, sizeof pre_buf)) m->preload = pre_buf;
    if (env_get(env, "CVD", cvd_buf, sizeof cvd_buf)) m->cvd = cvd_buf;
    if (env_get(env, "NVML", nvml_buf, sizeof nvml_buf)) m->nvml = nvml_buf;
    if (env_get(env, "CUDA", cuda_buf, sizeof cuda_buf)) m->cuda = cuda_buf;
    if (env_get(env, "INSPECT", insp_buf, sizeof insp_buf)) m->inspect = insp_buf;
    m->tree = gpuenv_asprintf("%s/%s", trees, m->col.v[C_ID]);
    return m->tree ? 0 : -1;
}

static void mcase_free(mcase *m)
{
    gpuenv_strv_free(&m->col);
    lector__free(m->tree);
}

static int is_dash(const char *s) { return !s[0] || strcmp(s, "-") == 0; }

/* ------------------------------------------------------------ the fix */

static int in_tree(const char *tree, const char *path, int want_dir)
{
    char *p = gpuenv_asprintf("%s%s", tree, path);
    struct stat st;
    int ok = p && lstat(p, &st) == 0 && (!want_dir || stat(p, &st) == 0);
    if (ok && want_dir) ok = S_ISDIR(st.st_mode);
    lector__free(p);
    return ok;
}

/* Is the fix a command for this tree? Returns NULL or why not. */
static const char *lint_fix(const char *tree, const char *fix, char *why, size_t len)
{
    if (!fix || !fix[0]) return "no fix";
    if (strchr(fix, '<') || strstr(fix, "...") || strstr(fix, "\xe2\x80\xa6")) return "a placeholder in the fix";
    /* LD_LIBRARY_PATH items must be directories */
    const char *e = strstr(fix, "LD_LIBRARY_PATH=");
    if (e) {
        e += strlen("LD_LIBRARY_PATH=");
        char val[4096];
        size_t n = strcspn(e, " ;&");
        snprintf(val, sizeof val, "%.*s", (int)n, e);
        char *dollar = strstr(val, "${");
        if (dollar) *dollar = 0;
        gpuenv_strv items = {0};
        gpuenv_strv_split(&items, val, ":");
        for (size_t i = 0; i < items.n; i++) {
            char *it = items.v[i];
            size_t l = strlen(it);
            if (l && (it[0] == '\'' || it[0] == '"')) memmove(it, it + 1, l--);
            if (l && (it[l - 1] == '\'' || it[l - 1] == '"')) it[--l] = 0;
            if (!it[0]) continue;
            if (!in_tree(tree, it, 1)) {
                snprintf(why, len, "LD_LIBRARY_PATH item %s is not a directory of the tree", it);
                gpuenv_strv_free(&items);
                return why;
            }
        }
        gpuenv_strv_free(&items);
    }
    /* every absolute path exists, unless the command creates it */
    gpuenv_strv tok = {0};
    gpuenv_strv_split(&tok, fix, " ");
    const char *bad = NULL;
    for (size_t i = 0; i < tok.n && !bad; i++) {
        char t[4096];
        snprintf(t, sizeof t, "%s", tok.v[i]);
        size_t l = strlen(t);
        while (l && strchr("'\";)", t[l - 1])) t[--l] = 0;
        char *s = t;
        while (*s == '\'' || *s == '"' || *s == '(') s++;
        if (s[0] != '/' || strchr(s, '*') || strchr(s, '$') || strchr(s, '|')) continue;
        int created = (l > 9 && strcmp(t + l - 9, ".disabled") == 0) || (i > 0 && strcmp(tok.v[i - 1], "tee") == 0) ||
                      (i >= 3 && strcmp(tok.v[i - 3], "ln") == 0) || (i >= 2 && strcmp(tok.v[i - 2], "-s") == 0);
        if (!created && !in_tree(tree, s, 0)) {
            snprintf(why, len, "the fix names %s, which is not in the tree", s);
            bad = why;
        }
    }
    gpuenv_strv_free(&tok);
    return bad;
}

/* ------------------------------------------------------------ doctor */

static char *run_doctor(const mcase *m, const char *shims)
{
    lector_doctor_options opt;
    lector_doctor_default_options(&opt);
    /* the cases are written for a Lector built for CUDA 13, whatever this build has */
    opt.lector_cuda_major = 13;
    opt.root = m->tree;
    opt.ld_library_path = m->llp ? m->llp : "";
    opt.ld_preload = m->preload ? m->preload : "";
    opt.cuda_visible_devices = m->cvd;
    opt.dlopen_in_root = 1; /* the trees' libraries are stand-ins built for this machine */
    char *nv = NULL, *cu = NULL;
    if (m->nvml) {
        nv = gpuenv_asprintf("%s/%slibnvidia-ml.so.1", shims, strcmp(m->nvml, "missing") ? "" : "none/");
        setenv("GPUENV_NVML_MODE", m->nvml, 1);
        opt.nvml_path = nv;
    }
    if (m->cuda) {
        cu = gpuenv_asprintf("%s/%slibcuda.so.1", shims, strcmp(m->cuda, "missing") ? "" : "none/");
        setenv("GPUENV_CUDA_MODE", m->cuda, 1);
        opt.libcuda_path = cu;
    }
    if (m->cvd)
        setenv("CUDA_VISIBLE_DEVICES", m->cvd, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
    const char *insp[1] = {m->inspect};
    if (m->inspect) {
        opt.inspect = insp;
        opt.n_inspect = 1;
    }
    char *json = lector_doctor_json(&opt);
    lector__free(nv);
    lector__free(cu);
    unsetenv("GPUENV_NVML_MODE");
    unsetenv("GPUENV_CUDA_MODE");
    unsetenv("CUDA_VISIBLE_DEVICES");
    return json;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int check_doctor(const mcase *m, const char *shims)
{
    const char *id = m->col.v[C_ID];
    char *json = run_doctor(m, shims);
    if (!json) {
        printf("FAIL %-24s the doctor returned no report\n", id);
        return 1;
    }
    cJSON *j = cJSON_Parse(json);
    int bad = 0;
    char why[1024] = "";
    const char *status = str(j, "status");
    const cJSON *rc = cJSON_GetObjectItem(j, "root_cause");
    const char *layer = cJSON_IsObject(rc) ? str(rc, "layer") : "-";
    const char *code = cJSON_IsObject(rc) ? str(rc, "code") : "-";
    const char *fix = cJSON_IsObject(rc) ? str(rc, "fix") : "";
    if (!j) {
        snprintf(why, sizeof why, "the report is not JSON");
        bad = 1;
    } else if (strcmp(status, m->col.v[C_STATUS])) {
        snprintf(why, sizeof why, "status %s, want %s", status, m->col.v[C_STATUS]);
        bad = 1;
    } else if (strcmp(m->col.v[C_STATUS], "ready") == 0) {
        if (cJSON_IsObject(rc)) {
            snprintf(why, sizeof why, "ready with a root cause (%s)", code);
            bad = 1;
        }
    } else if (!cJSON_IsObject(rc)) {
        snprintf(why, sizeof why, "no root cause");
        bad = 1;
    } else if (strcmp(layer, m->col.v[C_LAYER]) || strcmp(code, m->col.v[C_CODE])) {
        snprintf(why, sizeof why, "root cause %s/%s, want %s/%s", layer, code, m->col.v[C_LAYER], m->col.v[C_CODE]);
        bad = 1;
    } else if (!is_dash(m->col.v[C_FIX]) && !strstr(fix, m->col.v[C_FIX])) {
        snprintf(why, sizeof why, "fix \"%s\" lacks \"%s\"", fix, m->col.v[C_FIX]);
        bad = 1;
    } else {
        const char *l = lint_fix(m->tree, fix, why, sizeof why);
        if (l) {
            if (l != why) snprintf(why, sizeof why, "%s", l);
            bad = 1;
        }
    }
    if (bad) {
        printf("FAIL %-24s %s\n     summary: %s\n     fix: %s\n", id, why, str(j, "summary"), fix);
        if (getenv("MATRIX_VERBOSE")) printf("%s\n", json);
    } else {
        printf("ok   %-24s %s %s/%s\n", id, status, layer, code);
    }
    cJSON_Delete(j);
    lector_doctor_string_free(json);
    return bad;
}

/* ------------------------------------------------------------ oracle */

static int check_oracle(const mcase *m, const char *shims, int mode)
{
    const char *id = m->col.v[C_ID];
    const char *name = m->col.v[C_ORACLE];
    int unpriv = strncmp(name, "unpriv:", 7) == 0;
    if (unpriv) name += 7;
    if (unpriv && geteuid() != 0) {
        printf("skip %-24s needs root to run as an unprivileged user\n", id);
        return -1;
    }
    oracle_case k = {id, m->tree, m->llp ? m->llp : "-", m->preload ? m->preload : "-", name, "", m->col.v[C_WHAT]};
    char *real = oracle_run_real(&k, mode, unpriv);
    char *emu = oracle_emulate_as(&k, unpriv);
    int bad = !real || !emu || !oracle_agree(real, emu);
    if (bad) {
        printf("DIFF %-24s dlopen(\"%s\")\n--- glibc:\n%s--- emulation:\n%s\n", id, name, real ? real : "?\n",
               emu ? emu : "?\n");
    } else {
        /* the doctor's report shows what glibc did */
        char *json = run_doctor(m, shims);
        const char *want = NULL;
        char line[4096] = "";
        const char *p = strstr(real, "\nREQ ");
        if (!p && strncmp(real, "REQ ", 4) == 0) p = real - 1;
        const char *q = strstr(real, "\nERR ");
        if (!q && strncmp(real, "ERR ", 4) == 0) q = real - 1;
        if (q) {
            /* glibc's error text (without the name it was asked for) */
            snprintf(line, sizeof line, "%.*s", (int)strcspn(q + 5, "\n"), q + 5);
        } else if (p) {
            snprintf(line, sizeof line, "%.*s", (int)strcspn(p + 5, "\n"), p + 5);
        }
        /* the report may cite the file the request resolved to, or the
           object in the load that went wrong: both appear as written by glibc */
        want = line;
        if (unpriv) {
            /* the doctor runs as root here: what a user without rights gets
               is the emulation's answer above, compared already */
            printf("ok   %-24s dlopen(\"%s\") as a user: %s\n", id, name, want);
        } else if (!json || !strstr(json, want)) {
            printf("MISS %-24s glibc: %s -- the doctor's report does not show it\n", id, want);
            bad = 1;
        } else {
            printf("ok   %-24s dlopen(\"%s\"): %s\n", id, name, want);
        }
        lector_doctor_string_free(json);
    }
    lector__free(real);
    lector__free(emu);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "doctor") && strcmp(argv[1], "oracle"))) {
        fputs("usage: doctor_matrix doctor MATRIX TREES SHIMS [ID...]\n"
              "       doctor_matrix oracle MATRIX TREES SHIMS [ID...]\n",
              stderr);
        return 2;
    }
    int oracle = strcmp(argv[1], "oracle") == 0;
    const char *shims = argc > 4 ? argv[4] : "";
    int mode = 0;
    if (oracle) {
        char why[256] = "";
        mode = oracle_chroot_mode(why, sizeof why);
        if (!mode) {
            printf("skipped: %s\n", why);
            return 77;
        }
    }
    FILE *f = fopen(argv[2], "r");
    if (!f) {
        perror(argv[2]);
        return 2;
    }
    char line[16384];
    int n = 0, bad = 0, broken_cases = 0, skipped = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        mcase m;
        if (parse(&m, line, argv[3])) {
            fprintf(stderr, "bad matrix line: %s\n", line);
            mcase_free(&m);
            fclose(f);
            return 2;
        }
        int wanted = argc <= 5;
        for (int i = 5; i < argc; i++) wanted |= strcmp(argv[i], m.col.v[C_ID]) == 0;
        if (strcmp(m.col.v[C_STATUS], "ready") != 0) {
            broken_cases++;
            if (is_dash(m.col.v[C_THREADS]) || !strchr(m.col.v[C_THREADS], '#')) {
                fprintf(stderr, "%s: a broken case needs the public thread it comes from\n", m.col.v[C_ID]);
                bad++;
            }
        }
        if (wanted && (!oracle || !is_dash(m.col.v[C_ORACLE]))) {
            int r = oracle ? check_oracle(&m, shims, mode) : check_doctor(&m, shims);
            if (r < 0)
                skipped++;
            else {
                n++;
                bad += r;
            }
        }
        mcase_free(&m);
    }
    fclose(f);
    if (broken_cases < 40) {
        fprintf(stderr, "the matrix has %d broken environments; it must have at least 40\n", broken_cases);
        bad++;
    }
    printf("%d cases checked, %d failed, %d skipped (%d broken environments in the matrix)\n", n, bad, skipped,
           broken_cases);
    if (!n) return 77;
    return bad ? 1 : 0;
}
