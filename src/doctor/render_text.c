/* render_text.c - the report for people: each layer with its checks (the
 * cause and fix of every problem, the evidence of problems or, with -v, of
 * everything), the --inspect trees, and the one-line summary last. */
#include <string.h>

#include "doctor/doctor.h"
#include "util/util.h"

static void print_tree(const gpuenv_load *ld, size_t node, int depth, gpuenv_buf *b, uint8_t *shown)
{
    for (size_t k = 0; k < ld->n_edge; k++) {
        const gpuenv_edge *e = &ld->edge[k];
        if (e->from != node) continue;
        gpuenv_buf_printf(b, "  %*s%s", depth * 2, "", e->name);
        if (e->to < 0) {
            gpuenv_buf_puts(b, " => NOT FOUND\n");
            continue;
        }
        const gpuenv_obj *t = ld->obj[e->to];
        gpuenv_buf_printf(b, " => %s", t->path);
        if (t->real && strcmp(t->real, t->path)) gpuenv_buf_printf(b, " -> %s", t->real);
        gpuenv_buf_printf(b, " (%s)", gpuenv_via_str(e->via));
        if (shown[e->to]) {
            gpuenv_buf_puts(b, " [already loaded]\n");
            continue;
        }
        gpuenv_buf_puts(b, "\n");
        shown[e->to] = 1;
        if (depth < 32) print_tree(ld, (size_t)e->to, depth + 1, b, shown);
    }
}

static void inspect_text(const doctor_inspect *ins, gpuenv_buf *b)
{
    const gpuenv_load *ld = &ins->load;
    gpuenv_buf_printf(b, "%s\n", ins->file);
    if (!ld->n) {
        gpuenv_buf_puts(b, "  (not a readable ELF file)\n");
        return;
    }
    const gpuenv_elf *te = &ld->obj[0]->elf;
    if (te->rpath_raw)
        gpuenv_buf_printf(b, "  DT_RPATH   %s%s\n", te->rpath_raw, te->runpath ? " (ignored: DT_RUNPATH present)" : "");
    if (te->runpath) gpuenv_buf_printf(b, "  DT_RUNPATH %s\n", te->runpath);
    uint8_t *shown = lector__calloc(ld->n, 1);
    if (shown) {
        shown[0] = 1;
        print_tree(ld, 0, 0, b, shown);
        lector__free(shown);
    }
    if (ld->missing.n) {
        gpuenv_buf_puts(b, "  missing:");
        for (size_t i = 0; i < ld->missing.n; i++) gpuenv_buf_printf(b, " %s", ld->missing.v[i]);
        gpuenv_buf_puts(b, "\n");
    }
    if (ld->error) gpuenv_buf_printf(b, "  loader: %s\n", ld->error);
}

char *lector_doctor_report_text(const lector_doctor_report *r)
{
    if (!r) return NULL;
    gpuenv_buf b = {0};
    int root_layer = -1;
    const doctor_check *root = doctor_root_cause(r, &root_layer);
    if (root && root->status != DOCTOR_FAIL) root = NULL;
    static const char *const mark[] = {"ok  ", "WARN", "FAIL", "skip"};
    for (int l = 0; l < DOCTOR_NLAYERS; l++) {
        const doctor_layer *L = &r->layers[l];
        if (!L->n) continue;
        gpuenv_buf_printf(&b, "%s %s%s\n", L->id, L->name,
                          root && l == root_layer ? "   <== root cause in this layer" : "");
        for (size_t j = 0; j < L->n; j++) {
            const doctor_check *c = &L->checks[j];
            gpuenv_buf_printf(&b, "  [%s] %-22s %s\n", mark[c->status], c->title, c->finding);
            int problem = c->status == DOCTOR_WARN || c->status == DOCTOR_FAIL;
            if (problem) {
                if (c->cause[0]) gpuenv_buf_printf(&b, "         cause: %s\n", c->cause);
                if (c->fix[0]) gpuenv_buf_printf(&b, "         fix:   %s\n", c->fix);
                if (c->hits & DOCTOR_HITS_NAMED && !(c->hits & (DOCTOR_HITS_GPU | DOCTOR_HITS_LECTOR)))
                    gpuenv_buf_puts(&b, "         hits:  programs that load CUDA libraries by name (Paddle, ONNX "
                                        "Runtime, torch); not Lector\n");
            }
            if (problem || r->verbose || strncmp(c->id, "l2.gpu", 6) == 0 || strncmp(c->id, "inspect", 7) == 0)
                for (size_t k = 0; k < c->evidence.n; k++) gpuenv_buf_printf(&b, "         - %s\n", c->evidence.v[k]);
        }
        if (l == DOCTOR_LINSPECT) {
            gpuenv_buf_puts(&b, "\n");
            for (size_t i = 0; i < r->n_inspect; i++) inspect_text(&r->inspect[i], &b);
        }
        gpuenv_buf_puts(&b, "\n");
    }
    doctor_summary(r, &b);
    gpuenv_buf_puts(&b, "\n");
    return gpuenv_buf_take(&b);
}
