/*
 * test_node_kernels.c - runs ONNX's backend node tests directly on the
 * operator table (shape inference + reference kernels), below the public
 * API: the graph is loaded with rt_load_onnx, every graph input is bound as
 * a constant (so operators whose output shape depends on an input's values
 * - Reshape, Slice, Resize, Expand, ... - are covered too), and the nodes
 * run in file order.
 *
 *   test_node_kernels DATA_DIR CASES_FILE [--op OP] [CASE...]
 *
 * Same case list and tolerances as test_onnx_nodes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt/loader.h"
#include "node_compare.h"
#include "rt/ops.h"
#include "util/util.h"

#define MAX_IO 32

static int run_case(const char *dir, const char *name)
{
    char path[4096];
    lector_error err = {0};
    uint8_t *bytes = NULL;
    size_t size = 0;
    rt_graph *g = NULL;
    int fail = 1;
    snprintf(path, sizeof path, "%s/%s/model.onnx", dir, name);
    if (lector__read_file(path, (size_t)1 << 30, &bytes, &size, &err) != LECTOR_OK ||
        rt_load_onnx(bytes, size, path, &g, &err) != LECTOR_OK) {
        printf("  %s: load: %s: %s\n", name, lector_status_str(err.code), err.message);
        lector__free(bytes);
        return 1;
    }
    lector__free(bytes);
    for (int i = 0; i < g->n_inputs; i++) {
        lector_tensor *t = NULL;
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", dir, name, i);
        if (lector_tensor_read_pb(path, &t, NULL, &err) != LECTOR_OK) {
            printf("  %s: %s\n", name, err.message);
            goto done;
        }
        rt_value *v = &g->values[g->inputs[i]];
        v->dtype = t->dtype;
        v->ndim = t->ndim;
        memcpy(v->dims, t->dims, sizeof v->dims);
        size_t nb = lector_dtype_size(t->dtype) * (size_t)lector_tensor_numel(t);
        v->data = lector__malloc(nb ? nb : 1);
        if (!v->data) {
            lector_tensors_free(t, 1);
            goto done;
        }
        if (nb) memcpy(v->data, t->data, nb);
        v->owns_data = true;
        lector_tensors_free(t, 1);
    }
    for (int ni = 0; ni < g->n_nodes; ni++) {
        rt_node *nd = &g->nodes[ni];
        const rt_value *ins[MAX_IO];
        rt_value *outs[MAX_IO];
        lector_tensor tin[MAX_IO], tout[MAX_IO];
        if (nd->n_in > MAX_IO || nd->n_out > MAX_IO) goto done;
        for (int i = 0; i < nd->n_in; i++) {
            ins[i] = nd->in[i] >= 0 ? &g->values[nd->in[i]] : NULL;
            memset(&tin[i], 0, sizeof tin[i]);
            if (ins[i]) tin[i] = rt_value_tensor(ins[i]);
        }
        for (int i = 0; i < nd->n_out; i++) outs[i] = nd->out[i] >= 0 ? &g->values[nd->out[i]] : NULL;
        lector_status st = rt_op_table[nd->op].infer(nd, ins, outs, &err);
        if (st != LECTOR_OK) {
            printf("  %s: infer: %s: %s\n", name, lector_status_str(st), err.message);
            goto done;
        }
        for (int i = 0; i < nd->n_out; i++) {
            memset(&tout[i], 0, sizeof tout[i]);
            if (!outs[i]) continue;
            size_t nb = rt_value_nbytes(outs[i]);
            outs[i]->data = lector__malloc(nb ? nb : 1);
            if (!outs[i]->data) goto done;
            outs[i]->owns_data = true;
            tout[i] = rt_value_tensor(outs[i]);
        }
        rt_kernel_ctx kctx = {2, &err};
        st = rt_op_table[nd->op].ref(nd, tin, tout, &kctx);
        if (st != LECTOR_OK) {
            printf("  %s: run: %s: %s\n", name, lector_status_str(st), err.message);
            goto done;
        }
    }
    fail = 0;
    for (int k = 0; k < g->n_outputs; k++) {
        lector_tensor *w = NULL;
        snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_%d.pb", dir, name, k);
        if (lector_tensor_read_pb(path, &w, NULL, &err) != LECTOR_OK) {
            printf("  %s: %s\n", name, err.message);
            fail = 1;
            continue;
        }
        lector_tensor got = rt_value_tensor(&g->values[g->outputs[k]]);
        if (!got.data) {
            printf("  %s: output %d not computed\n", name, k);
            fail = 1;
        } else {
            fail |= node_compare(name, k, &got, w);
        }
        lector_tensors_free(w, 1);
    }
done:
    rt_graph_free(g);
    return fail;
}

int main(int argc, char **argv) { return node_main(argc, argv, 1, run_case); }
