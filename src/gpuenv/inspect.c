/* inspect.c - `lector doctor --inspect FILE`: load an ELF's dependency
 * graph the way ld.so would (breadth first, each SONAME once), show the
 * tree, what is missing, the GPU libraries' versions, and the GPU code
 * embedded in every object against the GPUs present - predicting "no
 * kernel image is available for execution on the device" before anything
 * runs. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "gpuenv/gpuenv.h"

#define MAX_NODES 1024

typedef struct node {
    gpuenv_obj obj;
    gpuenv_strv names; /* names it was requested by, plus SONAME */
    char *real;
    size_t *kids; /* edge indices */
    size_t nkids, capkids;
} node;

typedef struct edge {
    char *name;
    long to; /* node index, -1 missing */
    gpuenv_via via;
} edge;

typedef struct graph {
    node **n;
    size_t nn;
    edge *e;
    size_t ne, cape;
    gpuenv_strv missing;
    int oom;
} graph;

static const char *const gpu_stems[] = {"cudart",   "cublas",   "cublasLt", "cudnn",     "nvrtc", "cufft",   "curand",
                                        "cusparse", "cusolver", "nccl",     "nvJitLink", "cuda",  "nvinfer", NULL};

static int is_gpu_lib(const char *base)
{
    for (int i = 0; gpu_stems[i]; i++) {
        size_t n = strlen(gpu_stems[i]);
        if (strncmp(base, "lib", 3) == 0 && strncmp(base + 3, gpu_stems[i], n) == 0 &&
            (base[3 + n] == '.' || base[3 + n] == '_'))
            return 1;
    }
    return 0;
}

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static long find_loaded(const graph *g, const char *name)
{
    for (size_t i = 0; i < g->nn; i++) {
        if (gpuenv_strv_has(&g->n[i]->names, name)) return (long)i;
        if (g->n[i]->obj.elf.soname && strcmp(g->n[i]->obj.elf.soname, name) == 0) return (long)i;
    }
    return -1;
}

static long add_node(graph *g, const gpuenv_ctx *ctx, const char *path, const char *name, const gpuenv_obj *loader)
{
    if (g->nn >= MAX_NODES) return -1;
    node *nd = calloc(1, sizeof *nd);
    node **nv = nd ? realloc(g->n, (g->nn + 1) * sizeof *nv) : NULL;
    if (!nd || !nv) {
        free(nd);
        g->oom = 1;
        return -1;
    }
    g->n = nv;
    int rc = gpuenv_obj_open(ctx, path, &nd->obj);
    if (rc) {
        if (rc == -2) g->oom = 1;
        free(nd);
        return -1;
    }
    nd->obj.loader = loader;
    nd->real = gpuenv_root_realpath(ctx->root, path);
    if (gpuenv_strv_push(&nd->names, name) || (nd->obj.elf.soname && gpuenv_strv_push(&nd->names, nd->obj.elf.soname)))
        g->oom = 1;
    g->n[g->nn] = nd;
    return (long)g->nn++;
}

static void add_edge(graph *g, size_t from, const char *name, long to, gpuenv_via via)
{
    if (g->ne == g->cape) {
        size_t cap = g->cape ? g->cape * 2 : 32;
        edge *e = realloc(g->e, cap * sizeof *e);
        if (!e) {
            g->oom = 1;
            return;
        }
        g->e = e;
        g->cape = cap;
    }
    node *nd = g->n[from];
    if (nd->nkids == nd->capkids) {
        size_t cap = nd->capkids ? nd->capkids * 2 : 8;
        size_t *k = realloc(nd->kids, cap * sizeof *k);
        if (!k) {
            g->oom = 1;
            return;
        }
        nd->kids = k;
        nd->capkids = cap;
    }
    char *nm = strdup(name);
    if (!nm) {
        g->oom = 1;
        return;
    }
    g->e[g->ne] = (edge){nm, to, via};
    nd->kids[nd->nkids++] = g->ne++;
}

static void graph_free(graph *g)
{
    for (size_t i = 0; i < g->nn; i++) {
        gpuenv_obj_close(&g->n[i]->obj);
        gpuenv_strv_free(&g->n[i]->names);
        free(g->n[i]->real);
        free(g->n[i]->kids);
        free(g->n[i]);
    }
    free(g->n);
    for (size_t i = 0; i < g->ne; i++) free(g->e[i].name);
    free(g->e);
    gpuenv_strv_free(&g->missing);
}

static void print_tree(const graph *g, size_t i, int depth, gpuenv_buf *b, uint8_t *shown)
{
    const node *nd = g->n[i];
    for (size_t k = 0; k < nd->nkids; k++) {
        const edge *e = &g->e[nd->kids[k]];
        gpuenv_buf_printf(b, "  %*s%s", depth * 2, "", e->name);
        if (e->to < 0) {
            gpuenv_buf_puts(b, " => NOT FOUND\n");
            continue;
        }
        const node *t = g->n[e->to];
        gpuenv_buf_printf(b, " => %s", t->obj.path);
        if (t->real && strcmp(t->real, t->obj.path)) gpuenv_buf_printf(b, " -> %s", t->real);
        gpuenv_buf_printf(b, " (%s)", gpuenv_via_str(e->via));
        if (shown[e->to]) {
            gpuenv_buf_puts(b, " [already loaded]\n");
            continue;
        }
        gpuenv_buf_puts(b, "\n");
        shown[e->to] = 1;
        if (depth < 32) print_tree(g, (size_t)e->to, depth + 1, b, shown);
    }
}

static cJSON *str_array(const gpuenv_strv *sv)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < sv->n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(sv->v[i]));
    return a;
}

static void inspect_one(lector_doctor_report *r, const gpuenv_ctx *ctx, const char *file, size_t idx, gpuenv_buf *text,
                        cJSON *jarr)
{
    char id[64];
    graph g = {0};
    char *path = NULL;
    if (!r->root_mode && file[0] != '/') {
        char buf[PATH_MAX];
        path = strdup(realpath(file, buf) ? buf : file);
    } else {
        path = strdup(file);
    }
    if (!path) {
        r->oom = 1;
        return;
    }
    snprintf(id, sizeof id, "inspect.%zu.deps", idx);
    gpuenv_buf_printf(text, "%s\n", path);
    long top = add_node(&g, ctx, path, path, NULL);
    if (top < 0) {
        gpuenv_add(r, GPUENV_LINSPECT, id, base_of(path), GPUENV_FAIL, "not_elf",
                   "The file does not exist or is not an ELF object for this machine",
                   "pass an executable or shared object (.so)", "%s: cannot read as ELF", path);
        gpuenv_buf_puts(text, "  (not a readable ELF file)\n");
        free(path);
        graph_free(&g);
        return;
    }
    /* breadth first, like _dl_map_object_deps */
    for (size_t q = 0; q < g.nn && !g.oom; q++) {
        node *nd = g.n[q];
        for (size_t k = 0; k < nd->obj.elf.needed.n && !g.oom; k++) {
            const char *name = nd->obj.elf.needed.v[k];
            long to = find_loaded(&g, name);
            gpuenv_via via = GPUENV_VIA_NONE;
            if (to < 0) {
                char *p = gpuenv_resolve(ctx, name, &nd->obj, &via);
                if (p) {
                    to = add_node(&g, ctx, p, name, &nd->obj);
                    free(p);
                }
                if (to < 0 && !gpuenv_strv_has(&g.missing, name) && gpuenv_strv_push(&g.missing, name)) g.oom = 1;
            } else {
                if (!gpuenv_strv_has(&g.n[to]->names, name) && gpuenv_strv_push(&g.n[to]->names, name)) g.oom = 1;
                via = GPUENV_VIA_NONE;
                /* keep the via of the first load for display */
                for (size_t e = 0; e < g.ne; e++)
                    if (g.e[e].to == to) {
                        via = g.e[e].via;
                        break;
                    }
            }
            add_edge(&g, q, name, to, via);
        }
    }
    if (g.oom) {
        r->oom = 1;
        graph_free(&g);
        free(path);
        return;
    }
    const gpuenv_elf *te = &g.n[0]->obj.elf;
    if (te->rpath_raw)
        gpuenv_buf_printf(text, "  DT_RPATH   %s%s\n", te->rpath_raw,
                          te->runpath ? " (ignored: DT_RUNPATH present)" : "");
    if (te->runpath) gpuenv_buf_printf(text, "  DT_RUNPATH %s\n", te->runpath);
    uint8_t *shown = calloc(g.nn, 1);
    if (shown) {
        shown[0] = 1;
        print_tree(&g, 0, 0, text, shown);
        free(shown);
    }

    cJSON *jo = cJSON_CreateObject();
    cJSON *jtree = cJSON_CreateArray(), *jgpu = cJSON_CreateArray(), *jcode = cJSON_CreateArray();
    cJSON_AddStringToObject(jo, "file", path);
    cJSON_AddItemToObject(jo, "objects", jtree);
    cJSON_AddItemToObject(jo, "missing", str_array(&g.missing));
    cJSON_AddItemToObject(jo, "gpu_libraries", jgpu);
    cJSON_AddItemToObject(jo, "gpu_code", jcode);
    cJSON_AddItemToArray(jarr, jo);
    for (size_t i = 0; i < g.nn; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", g.n[i]->obj.path);
        cJSON_AddStringToObject(o, "real", g.n[i]->real ? g.n[i]->real : g.n[i]->obj.path);
        if (g.n[i]->obj.elf.soname) cJSON_AddStringToObject(o, "soname", g.n[i]->obj.elf.soname);
        gpuenv_via via = GPUENV_VIA_PATH;
        for (size_t e = 0; e < g.ne; e++)
            if (g.e[e].to == (long)i) {
                via = g.e[e].via;
                break;
            }
        cJSON_AddStringToObject(o, "via", gpuenv_via_str(via));
        cJSON_AddItemToArray(jtree, o);
    }

    gpuenv_check *c;
    if (g.missing.n) {
        gpuenv_buf mb = {0};
        for (size_t i = 0; i < g.missing.n; i++) gpuenv_buf_printf(&mb, "%s%s", i ? ", " : "", g.missing.v[i]);
        char *ms = gpuenv_buf_take(&mb);
        c = gpuenv_add(r, GPUENV_LINSPECT, id, base_of(path), GPUENV_FAIL, "missing_dependency",
                       "Some DT_NEEDED libraries cannot be found by the loader: the binary fails "
                       "with \"cannot open shared object file\" (a CUDA major other than the "
                       "installed one, or a directory missing from the search path)",
                       "install the missing libraries for the CUDA major this binary was built "
                       "for, or add their directory to LD_LIBRARY_PATH",
                       "%zu objects, missing: %s", g.nn, ms ? ms : "?");
        free(ms);
    } else {
        c = gpuenv_add(r, GPUENV_LINSPECT, id, base_of(path), GPUENV_OK, "", "", "",
                       "%zu objects, every DT_NEEDED resolved", g.nn);
    }
    for (size_t i = 0; i < g.nn; i++) {
        const char *b = base_of(g.n[i]->real ? g.n[i]->real : g.n[i]->obj.path);
        if (!is_gpu_lib(b) && !is_gpu_lib(base_of(g.n[i]->obj.path))) continue;
        char *v = gpuenv_soname_version(b);
        gpuenv_evidence(r, c, "GPU library %s -> %s [%s]", base_of(g.n[i]->obj.path),
                        g.n[i]->real ? g.n[i]->real : g.n[i]->obj.path, v ? v : "?");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", base_of(g.n[i]->obj.path));
        cJSON_AddStringToObject(o, "path", g.n[i]->real ? g.n[i]->real : g.n[i]->obj.path);
        cJSON_AddStringToObject(o, "version", v ? v : "");
        cJSON_AddItemToArray(jgpu, o);
        free(v);
    }

    /* Embedded GPU code of every object that has any. */
    snprintf(id, sizeof id, "inspect.%zu.archs", idx);
    int any_code = 0, bad = 0;
    gpuenv_buf why = {0};
    gpuenv_strv lines = {0};
    for (size_t i = 0; i < g.nn; i++) {
        const gpuenv_elf *e = &g.n[i]->obj.elf;
        if (!e->fatbin_size) continue;
        gpuenv_fatbin fb;
        if (gpuenv_fatbin_scan(e->fatbin, e->fatbin_size, &fb)) continue;
        any_code = 1;
        char *d = gpuenv_fatbin_describe(&fb);
        if (gpuenv_strv_push_owned(&lines,
                                   gpuenv_asprintf("%s: %s (%zu containers, %zu entries)", base_of(g.n[i]->obj.path),
                                                   d ? d : "?", fb.containers, fb.entries)))
            r->oom = 1;
        cJSON *o = cJSON_CreateObject();
        cJSON *sass = cJSON_CreateArray(), *ptx = cJSON_CreateArray();
        for (int a = 0; a < 256; a++) {
            if (fb.sass[a]) cJSON_AddItemToArray(sass, cJSON_CreateNumber(a));
            if (fb.ptx[a]) cJSON_AddItemToArray(ptx, cJSON_CreateNumber(a));
        }
        cJSON_AddStringToObject(o, "object", g.n[i]->obj.path);
        cJSON_AddItemToObject(o, "sass", sass);
        cJSON_AddItemToObject(o, "ptx", ptx);
        cJSON_AddItemToArray(jcode, o);
        for (int k = 0; k < r->facts.n_gpus; k++) {
            const gpuenv_gpu *gp = &r->facts.gpus[k];
            if (!gp->cc_major) continue;
            if (!gpuenv_fatbin_runs_on(&fb, gp->cc_major, gp->cc_minor)) {
                /* The inspected file itself lacking code is certain failure.
                   A dependency may carry only helper kernels in .nv_fatbin
                   and get the rest elsewhere (seen: libcufft.so.12 of CUDA
                   13 holds one sm_75 entry, yet torch runs on an H200), so
                   for dependencies this is a warning. Node 0 (the file)
                   is walked first, so its verdict comes first. */
                if (!bad)
                    gpuenv_buf_printf(&why,
                                      "%s has no SASS for sm_%d%d and no PTX <= compute_%d%d "
                                      "(GPU %d %s); it has %s",
                                      base_of(g.n[i]->obj.path), gp->cc_major, gp->cc_minor, gp->cc_major, gp->cc_minor,
                                      k, gp->name, d ? d : "?");
                if (!bad) bad = i == 0 ? 2 : 1;
            }
        }
        free(d);
    }
    char *whys = gpuenv_buf_take(&why);
    if (!any_code) {
        c = gpuenv_add(r, GPUENV_LINSPECT, id, "GPU code", GPUENV_SKIP, "", "", "",
                       "no .nv_fatbin in %s or its dependencies", base_of(path));
    } else if (bad == 1) {
        c = gpuenv_add(r, GPUENV_LINSPECT, id, "GPU code", GPUENV_WARN, "dependency_no_kernel_image",
                       "A dependency's embedded GPU code does not cover this GPU; if that "
                       "library has no other source of kernels (JIT, LTO, separate files), "
                       "calls into it fail with \"no kernel image is available\"",
                       "check that library's release notes for this GPU, or use a build of it "
                       "that lists this GPU's sm_XY",
                       "%s", whys ? whys : "?");
    } else if (bad == 2) {
        c = gpuenv_add(r, GPUENV_LINSPECT, id, "GPU code", GPUENV_FAIL, "no_kernel_image",
                       "The binary carries no kernel for this GPU's architecture: it will fail "
                       "with \"no kernel image is available for execution on the device\" "
                       "(CUDA error 209)",
                       "use a build whose -gencode list includes this GPU (e.g. "
                       "arch=compute_XY,code=sm_XY for the GPU's compute capability, or PTX for "
                       "a lower one)",
                       "%s", whys ? whys : "?");
    } else {
        c = gpuenv_add(r, GPUENV_LINSPECT, id, "GPU code", GPUENV_OK, "", "", "",
                       r->facts.n_gpus ? "GPU code present for every GPU here"
                                       : "GPU code found (no GPU present to compare)");
    }
    free(whys);
    for (size_t i = 0; i < lines.n; i++) {
        gpuenv_evidence(r, c, "%s", lines.v[i]);
        gpuenv_buf_printf(text, "  GPU code: %s\n", lines.v[i]);
    }
    gpuenv_strv_free(&lines);
    if (g.missing.n) {
        gpuenv_buf_puts(text, "  missing:");
        for (size_t i = 0; i < g.missing.n; i++) gpuenv_buf_printf(text, " %s", g.missing.v[i]);
        gpuenv_buf_puts(text, "\n");
    }
    graph_free(&g);
    free(path);
}

void gpuenv_check_inspect(lector_doctor_report *r, const lector_doctor_options *opt)
{
    gpuenv_ctx ctx;
    if (gpuenv_ctx_init(&ctx, r->root, opt->ld_library_path)) {
        r->oom = 1;
        return;
    }
    gpuenv_buf text = {0};
    cJSON *arr = cJSON_CreateArray();
    if (!arr) {
        r->oom = 1;
        gpuenv_ctx_free(&ctx);
        return;
    }
    for (size_t i = 0; i < opt->n_inspect; i++) inspect_one(r, &ctx, opt->inspect[i], i, &text, arr);
    r->inspect_text = gpuenv_buf_take(&text);
    r->inspect_json = arr;
    if (!r->inspect_text) r->oom = 1;
    gpuenv_ctx_free(&ctx);
}
