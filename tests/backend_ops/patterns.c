/*
 * patterns.c - reads patterns.txt (its head says the format) and builds each
 * graph with graph_builder.h. Test code: an allocation failure aborts.
 */
#include "patterns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_builder.h"

/* "1,3,64,64" -> dims; the count */
static int parse_list(const char *s, int64_t *v, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *e;
        v[n++] = strtoll(s, &e, 10);
        if (e == s) return -1;
        s = *e == ',' ? e + 1 : e;
    }
    return n;
}

static int parse_floats(const char *s, float *v, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *e;
        v[n++] = strtof(s, &e);
        if (e == s) return -1;
        s = *e == ',' ? e + 1 : e;
    }
    return n;
}

/* One line into the pattern being built; 0 on success. */
static int line_into(gb *b, bo_pattern *p, char *line)
{
    char kw[16] = "", a[128] = "", c[128] = "", d[512] = "", e[512] = "";
    int k = sscanf(line, "%15s %127s %127s %511s %511s", kw, a, c, d, e);
    int64_t dims[8];
    int nd = k >= 3 ? parse_list(c, dims, 8) : -1;
    if (!strcmp(kw, "input") && k == 3 && nd > 0 && p->n_in < BO_MAX_INPUTS) {
        gb_input(b, a, nd, dims);
        p->ndim[p->n_in] = nd;
        memcpy(p->dims[p->n_in++], dims, sizeof(int64_t) * (size_t)nd);
    } else if (!strcmp(kw, "rand") && k == 5 && nd > 0) {
        float lo, hi;
        unsigned seed;
        if (sscanf(d, "%f", &lo) != 1 || sscanf(line, "%*s %*s %*s %*s %f %u", &hi, &seed) != 2) return -1;
        gb_init(b, a, nd, dims, NULL, lo, hi, seed);
    } else if (!strcmp(kw, "const") && k == 4 && nd > 0) {
        float v[64];
        if (parse_floats(d, v, 64) < 0) return -1;
        gb_init(b, a, nd, dims, v, 0, 0, 0);
    } else if (!strcmp(kw, "scalar") && k == 3) {
        gb_scalar(b, a, strtof(c, NULL));
    } else if (!strcmp(kw, "i64") && k == 3 && nd > 0) {
        gb_init_i64(b, a, nd, dims);
    } else if (!strcmp(kw, "bn") && k == 4 && nd == 1) {
        gb_bn(b, a, dims[0], (uint32_t)strtoul(d, NULL, 10));
    } else if (!strcmp(kw, "node") && k >= 4) {
        gb_node(b, a, c, d, k == 5 ? e : NULL);
    } else if (!strcmp(kw, "output") && k == 2) {
        gb_output(b, a);
    } else {
        return -1;
    }
    return 0;
}

int bo_patterns_read(const char *path, bo_pattern **out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return -1;
    }
    bo_pattern *ps = NULL;
    int n = 0, lineno = 0, bad = 0;
    gb *b = NULL;
    char line[1024];
    while (!bad && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char name[128];
        int opset;
        if (sscanf(line, "pattern %127s %d", name, &opset) == 2) {
            if (b) ps[n - 1].model = gb_finish(b, &ps[n - 1].len);
            ps = realloc(ps, sizeof *ps * (size_t)(n + 1));
            if (!ps) abort();
            memset(&ps[n], 0, sizeof ps[n]);
            snprintf(ps[n++].name, sizeof ps->name, "%s", name);
            b = gb_new(opset);
        } else if (!b || line_into(b, &ps[n - 1], line)) {
            fprintf(stderr, "%s:%d: cannot read '%s'\n", path, lineno, line);
            bad = 1;
        }
    }
    fclose(f);
    if (b) ps[n - 1].model = gb_finish(b, &ps[n - 1].len);
    if (bad) {
        bo_patterns_free(ps, n);
        return -1;
    }
    *out = ps;
    return n;
}

void bo_patterns_free(bo_pattern *p, int n)
{
    for (int i = 0; i < n; i++) free(p[i].model);
    free(p);
}
