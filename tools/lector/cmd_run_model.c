/*
 * lector run-model MODEL.onnx [--input NAME=FILE.pb | --input FILE.pb]...
 *                  [--backend cpu|ref|cuda[:N]] [--fp16] [--threads N] [--jit-size N] [--repeat N]
 *                  --out DIR
 *
 * Runs any ONNX model within Lector's op set on tensors stored as ONNX
 * TensorProto files and writes each output as DIR/output_N.pb.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "lector_rt.h"
#include "util/util.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: lector run-model MODEL.onnx [--input NAME=FILE.pb]... [--backend cpu|ref|cuda[:N]]\n"
               "                        [--fp16] [--threads N] [--jit-size N] [--repeat N] --out DIR\n"
               "  --input NAME=FILE.pb   input tensor (onnx.TensorProto); NAME may be omitted, then\n"
               "                         inputs are taken in the model's order\n"
               "  --out DIR              write outputs as DIR/output_0.pb, output_1.pb, ...\n"
               "  --backend B            cpu (default), ref (the reference kernels) or cuda[:N]\n"
               "  --fp16                 with cuda: half precision where the backend has it\n"
               "  --jit-size N           cpu: only shapes whose larger side is N get compiled kernels;\n"
               "                         the others run as the OCR engine runs them (lector_model_options)\n"
               "  --repeat N             run N times and print the median time\n");
}

int cmd_run_model(int argc, char **argv)
{
    const char *model_path = NULL, *out_dir = NULL;
    lector_model_options opt = {0};
    int repeat = 1;
    const char *in_spec[64];
    int n_spec = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--input") && i + 1 < argc) {
            if (n_spec == 64) {
                fprintf(stderr, "lector: too many inputs\n");
                return 2;
            }
            in_spec[n_spec++] = argv[++i];
        } else if (!strcmp(a, "--out") && i + 1 < argc)
            out_dir = argv[++i];
        else if (!strcmp(a, "--backend") && i + 1 < argc)
            opt.backend = argv[++i];
        else if (!strcmp(a, "--fp16"))
            opt.fp16 = 1;
        else if (!strcmp(a, "--threads") && i + 1 < argc)
            opt.threads = atoi(argv[++i]);
        else if (!strcmp(a, "--jit-size") && i + 1 < argc)
            opt.jit_size = atoi(argv[++i]);
        else if (!strcmp(a, "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "lector run-model: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (!model_path)
            model_path = a;
        else {
            fprintf(stderr, "lector run-model: unexpected argument %s\n", a);
            return 2;
        }
    }
    if (!model_path || !out_dir) {
        usage(stderr);
        return 2;
    }
    if (repeat < 1) repeat = 1;

    lector_error err = {0};
    lector_model *m = NULL;
    if (lector_model_load_file(model_path, &opt, &m, &err)) {
        fprintf(stderr, "lector: %s (%s)\n", err.message, lector_status_str(err.code));
        return 1;
    }
    size_t n_in = lector_model_num_inputs(m);
    lector_tensor *inputs = calloc(n_in ? n_in : 1, sizeof *inputs);
    lector_tensor **loaded = calloc(n_in ? n_in : 1, sizeof *loaded);
    int rc = 1;
    if (!inputs || !loaded) {
        fprintf(stderr, "lector: out of memory\n");
        goto done;
    }
    if ((size_t)n_spec != n_in) {
        fprintf(stderr, "lector: %s takes %zu input(s), %d given\n", model_path, n_in, n_spec);
        goto done;
    }
    for (int s = 0; s < n_spec; s++) {
        char name[256] = "";
        const char *file = in_spec[s];
        const char *eq = strchr(in_spec[s], '=');
        if (eq && (size_t)(eq - in_spec[s]) < sizeof name) {
            memcpy(name, in_spec[s], (size_t)(eq - in_spec[s]));
            name[eq - in_spec[s]] = 0;
            file = eq + 1;
        }
        size_t slot = (size_t)s;
        if (name[0]) {
            slot = n_in;
            for (size_t k = 0; k < n_in; k++)
                if (!strcmp(lector_model_input(m, k)->name, name)) slot = k;
            if (slot == n_in) {
                fprintf(stderr, "lector: %s has no input named '%s'\n", model_path, name);
                goto done;
            }
        }
        if (loaded[slot]) {
            fprintf(stderr, "lector: input %zu given twice\n", slot);
            goto done;
        }
        if (lector_tensor_read_pb(file, &loaded[slot], NULL, &err)) {
            fprintf(stderr, "lector: %s (%s)\n", err.message, lector_status_str(err.code));
            goto done;
        }
        inputs[slot] = *loaded[slot];
    }
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "lector: cannot create %s: %s\n", out_dir, strerror(errno));
        goto done;
    }
    double *times = calloc((size_t)repeat, sizeof *times);
    lector_tensor *outs = NULL;
    size_t n_out = 0;
    for (int r = 0; r < repeat && times; r++) {
        if (outs) lector_tensors_free(outs, n_out);
        outs = NULL;
        double t0 = lector__now_ms();
        if (lector_model_run(m, inputs, n_in, &outs, &n_out, &err)) {
            fprintf(stderr, "lector: %s (%s)\n", err.message, lector_status_str(err.code));
            free(times);
            goto done;
        }
        times[r] = lector__now_ms() - t0;
    }
    rc = 0;
    for (size_t k = 0; k < n_out; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/output_%zu.pb", out_dir, k);
        if (lector_tensor_write_pb(path, &outs[k], lector_model_output(m, k)->name, &err)) {
            fprintf(stderr, "lector: %s\n", err.message);
            rc = 1;
        }
    }
    if (times) {
        fprintf(stderr, "lector: %s on %s: median %.2f ms over %d run(s)\n", model_path, lector_model_backend(m),
                cli_median(times, repeat), repeat);
    }
    free(times);
    lector_tensors_free(outs, n_out);
done:
    for (size_t k = 0; k < n_in && loaded; k++) lector_tensors_free(loaded[k], loaded[k] ? 1 : 0);
    free(loaded);
    free(inputs);
    lector_model_free(m);
    return rc;
}
