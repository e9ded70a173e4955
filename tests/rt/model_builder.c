#include "model_builder.h"

#include <stdio.h>
#include <stdlib.h>

#include "graph_builder.h"
#include "util/util.h"

uint8_t *build_unary_model(const char *op_type, const char *domain, int64_t opset, const int64_t dims[4], size_t *len)
{
    char op[256];
    snprintf(op, sizeof op, "%s%s%s", domain, *domain ? ":" : "", op_type);
    gb *b = gb_new(opset);
    gb_input(b, "x", 4, dims);
    gb_node(b, op, "x", "y", NULL);
    gb_output_shaped(b, "y", 4, dims);
    return gb_finish(b, len);
}

int alloc_failure_sweep(const uint8_t *model, size_t len, const char *name, const lector_model_options *o, int argmax,
                        const lector_tensor *in, long max_n, int *oks)
{
    int bad = 0;
    *oks = 0;
    for (long n = 1; n < max_n; n++) {
        lector__fail_alloc_after(n);
        lector_model *m = NULL;
        lector_error err = {0};
        lector_status st = argmax == 2 ? lector_model_load_memory_top2(model, len, name, o, &m, &err)
                           : argmax    ? lector_model_load_memory_argmax(model, len, name, o, &m, &err)
                                       : lector_model_load_memory(model, len, name, o, &m, &err);
        if (st == LECTOR_OK) {
            lector_tensor *out = NULL;
            size_t n_out = 0;
            st = lector_model_run(m, in, 1, &out, &n_out, &err);
            if (st == LECTOR_OK) (*oks)++;
            lector_tensors_free(out, n_out);
            lector_model_free(m);
        }
        lector__fail_alloc_after(0);
        if (st != LECTOR_OK && st != LECTOR_ERR_OUT_OF_MEMORY) {
            fprintf(stderr, "%s: allocation %ld failing: %s %s\n", name, n, lector_status_str(st), err.message);
            bad++;
        }
    }
    return bad;
}
