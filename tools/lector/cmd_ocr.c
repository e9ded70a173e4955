/*
 * lector [options] INPUT...   - OCR, Tesseract-style habits:
 * many files through one engine, `-` for stdin, several output formats,
 * other files go on when one fails, exit 1 if any failed. Directories, @lists,
 * --output-dir, --resume and --shard make it a batch (ocr_batch.h); this file
 * only turns the command line into the engine's parameters and the batch's
 * options.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch/inputs.h"
#include "batch/shard.h"
#include "cli.h"
#include "lector.h"
#include "ocr_batch.h"
#include "render.h"
#include "util/testctl.h"
#include "util/utf8.h"
#include "util/util.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: lector [options] INPUT...\n"
        "inputs: an image file; '-' (an image on standard input); a directory (its images, recursively:\n"
        "  .jpg .jpeg .jpe .png .tif .tiff .webp .bmp .pbm .pgm .ppm .pnm .jp2 .j2k .j2c .jpc .jpf .jpx,\n"
        "  sorted; symbolic links leading out of it are not followed); @LIST (a file naming one file or\n"
        "  directory per line, relative to the working directory; @- reads the list from standard input)\n"
        "output:\n"
        "  -f, --format txt|json|tsv|hocr   txt: lines in reading order (default); json: one JSON\n"
        "                                   object per input (JSON Lines); tsv: Tesseract-style\n"
        "                                   line-level TSV; hocr: hOCR XHTML. With --output-dir,\n"
        "                                   several: -f txt,json (or -f repeated)\n"
        "  -o, --output FILE                write there instead of standard output (with --output-dir:\n"
        "                                   also the stream, in the first format)\n"
        "  -q, --quiet                      no progress lines on stderr (the final summary stays)\n"
        "batch:\n"
        "  --output-dir DIR                 one file per input and format, DIR/<name>.<format>, where\n"
        "                                   <name> is the input's path below the directory named (or\n"
        "                                   as given); each written to a temporary name and renamed;\n"
        "                                   DIR/summary.json lists counts, speed and every failure\n"
        "  --resume                         skip inputs whose outputs all exist (a killed run restarted\n"
        "                                   with the same command does each input once)\n"
        "  --shard I/N                      take only the inputs whose name hashes to I of N (0 <= I < N);\n"
        "                                   default from JOB_COMPLETION_INDEX + LECTOR_SHARD_COUNT or\n"
        "                                   SLURM_ARRAY_TASK_ID + SLURM_ARRAY_TASK_COUNT\n"
        "  --max-failures N                 stop after N failed inputs (exit 1); 0: never (default)\n"
        "  --follow-symlinks                follow links that lead out of a directory named\n"
        "  --progress-interval S            off a terminal, a progress line every S seconds (10)\n"
        "  exit status: 0 every input done, 1 some failed, 2 bad usage\n"
        "  --draw OUT.png                   also draw the boxes, their numbers and the text\n"
        "                                   (several inputs: OUT.png, OUT-2.png, ...)\n"
        "engine:\n"
        "  --models DIR                     models directory (default: LECTOR_MODELS, else ../models\n"
        "                                   or ../share/lector/models beside the binary, else the\n"
        "                                   source tree's models/; `lector models` shows which)\n"
        "  --det-model F --rec-model F --cls-model F --rec-dict F   override one file\n"
        "  --device cpu|auto|cuda[:N]       auto: the GPU when usable, else the CPU (says why);\n"
        "                                   cuda: the GPU or an error saying why not\n"
        "  --gpu-mem-limit SIZE             GPU memory cap: bytes (8G, 512M) or a share (0.5, 50%%)\n"
        "  --gpu-kernel-cache DIR           where kernels compiled on the GPU (and cuDNN's choices) are\n"
        "                                   kept for the next process (default ~/.cache/lector/kernels;\n"
        "                                   '': none)\n"
        "  --fp16                           recognition and classifier in half precision (GPU)\n"
        "  --fp16-det                       detection in half precision too (moves some boxes)\n"
        "  --fp16-recheck F                 with --fp16: lines scoring below F also recognised again in fp32 (0: off)\n"
        "  --fp16-margin F                  with --fp16: lines whose text a change of F (0.05) in a step's\n"
        "                                   probabilities would change recognised again in fp32; 0: off\n"
        "  --threads N                      threads per inference (default 1 on the CPU, where the\n"
        "                                   workers run pages and lines in parallel instead)\n"
        "  --workers N                      threads running pages and lines at once (default: the\n"
        "                                   physical cores / --threads on the CPU, 2 per core up to\n"
        "                                   16 on a GPU)\n"
        "  --backend cpu|ref                CPU backend (ref = plain-C reference kernels)\n"
        "detection (PaddleOCR defaults):\n"
        "  --det-limit-side-len N (960) --det-limit-type max|min (max) --det-db-thresh F (0.3)\n"
        "  --det-db-box-thresh F (0.6) --det-db-unclip-ratio F (1.5) --det-db-score-mode fast|slow\n"
        "  --use-dilation --det-max-candidates N (1000) --det-min-size N (3)\n"
        "  --det-mean B,G,R (0.485,0.456,0.406) --det-std B,G,R (0.229,0.224,0.225)\n"
        "  --det-letterbox-min-height N (48) --det-letterbox-ratio F (8): images at most N px high or more\n"
        "                                   than F times as wide as high get black bands for detection\n"
        "                                   (RapidOCR's letterbox); 0 turns a rule off\n"
        "  --rec-crop-margin F (0)          each line cut from its box grown by F times its height on every\n"
        "                                   side (0.1 keeps more spaces: docs/ACCURACY.md); 0: PaddleOCR's cut\n"
        "  --no-det                         no detection: the whole image is one text line\n"
        "classification / recognition:\n"
        "  --use-angle-cls --cls-thresh F (0.9) --cls-batch-num N (6)\n"
        "  --rec-batch-num N (6, at most 64) --rec-image-height N (48) --rec-image-width N (320)\n"
        "  --rec-width-bucket N             experimental: lines whose widths round up to one multiple\n"
        "                                   of N px share a batch, each read as alone (width masks)\n"
        "  --drop-score F (0.5) --no-space-char\n"
        "limits:\n"
        "  --max-pixels N (100000000) --max-file-size BYTES (268435456) --max-pages N (1000)\n"
        "other commands: lector serve | models | run-model | bench | doctor | explain | --help | --version\n");
}

static int parse_int(const char *s, const char *opt, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < -2147483647L || v > 2147483647L) {
        fprintf(stderr, "lector: %s expects an integer, got '%s'\n", opt, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_float(const char *s, const char *opt, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s) {
        fprintf(stderr, "lector: %s expects a number, got '%s'\n", opt, s);
        return -1;
    }
    *out = (float)v;
    return 0;
}

/* -f txt,json or -f repeated: each format once, in the order named. */
static int parse_formats(const char *v, ocr_batch_options *bo)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        render_format f;
        if (render_format_parse(t, &f)) {
            fprintf(stderr, "lector: unknown format '%s' (txt, json, tsv, hocr)\n", t);
            return -1;
        }
        int seen = 0;
        for (size_t i = 0; i < bo->n_formats; i++) seen |= bo->formats[i] == f;
        if (!seen) bo->formats[bo->n_formats++] = f;
    }
    return 0;
}

static const char *env_get(const char *name) { return getenv(name); }

/* Drops the inputs of other shards. */
static void keep_shard(batch_inputs *in, const batch_shard *shard)
{
    size_t kept = 0;
    for (size_t i = 0; i < in->n; i++) {
        batch_input *it = &in->items[i];
        if (batch_shard_takes(shard, it->rel)) {
            in->items[kept++] = *it;
        } else {
            free(it->path);
            free(it->rel);
            free(it->error);
        }
    }
    in->n = kept;
}

/* On a GPU the CLI leaves its engine to the process's exit once every output
 * is written and closed: freeing a run's plans one by one (CUDA graphs,
 * device arenas, cuDNN and cuBLAS handles) took 0.4-0.6 s of a 7.5 s run over
 * 1,184 pages (H100, docs/BENCHMARKS.md), and the driver releases a
 * process's GPU memory when it ends. _exit, not exit: no atexit teardown of
 * the CUDA runtime while the engine's threads still hold its handles. On the
 * CPU the engine is freed (4 ms), so that leak checkers see every free;
 * LECTOR_CLI_FREE_ENGINE=1 frees a GPU engine too. */
static int leave_engine_to_exit(lector_engine *eng)
{
    return !strncmp(lector_engine_device(eng), "cuda", 4) && !lector__tc_flag(LECTOR__TC_CLI_FREE_ENGINE, 0);
}

int cmd_ocr(int argc, char **argv)
{
    lector_params p = lector_default_params();
    ocr_batch_options bo = {.progress_interval_s = 10.0};
    const char *out_path = NULL, *mem_arg = NULL, *shard_arg = NULL;
    batch_inputs_options io = {0, NULL};
    batch_inputs inputs = {0};
    int rc = 2;
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int n_files = 0;
    if (!files) return 1;
#define NEXT() (i + 1 < argc ? argv[++i] : (fprintf(stderr, "lector: %s needs a value\n", a), (char *)NULL))
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-") || a[0] != '-') {
            files[n_files++] = a;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            free(files);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            bo.quiet = 1;
            continue;
        }
        if (!strcmp(a, "--resume")) {
            bo.resume = 1;
            continue;
        }
        if (!strcmp(a, "--follow-symlinks")) {
            io.follow_symlinks = 1;
            continue;
        }
        if (!strcmp(a, "--use-angle-cls") || !strcmp(a, "--cls")) {
            p.use_angle_cls = 1;
            continue;
        }
        if (!strcmp(a, "--use-dilation")) {
            p.det_use_dilation = 1;
            continue;
        }
        if (!strcmp(a, "--no-space-char")) {
            p.use_space_char = 0;
            continue;
        }
        if (!strcmp(a, "--no-det")) {
            p.use_det = 0;
            continue;
        }
        if (!strcmp(a, "--fp16")) {
            p.gpu_fp16 = 1;
            continue;
        }
        if (!strcmp(a, "--fp16-det")) {
            p.gpu_fp16 = p.gpu_fp16_det = 1;
            continue;
        }
        if (!(v = NEXT())) goto bad;
        int iv = 0;
        float fv = 0;
        if (!strcmp(a, "-f") || !strcmp(a, "--format")) {
            if (parse_formats(v, &bo)) goto bad;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            out_path = v;
        else if (!strcmp(a, "--draw"))
            bo.draw_path = v;
        else if (!strcmp(a, "--output-dir"))
            bo.out_dir = v;
        else if (!strcmp(a, "--shard"))
            shard_arg = v;
        else if (!strcmp(a, "--max-failures")) {
            if (parse_int(v, a, &iv) || iv < 0) {
                if (iv < 0) fprintf(stderr, "lector: --max-failures expects a count >= 0\n");
                goto bad;
            }
            bo.max_failures = iv;
        } else if (!strcmp(a, "--progress-interval")) {
            if (parse_float(v, a, &fv) || fv <= 0) {
                if (fv <= 0) fprintf(stderr, "lector: --progress-interval expects seconds > 0\n");
                goto bad;
            }
            bo.progress_interval_s = fv;
        } else if (!strcmp(a, "--models"))
            p.models_dir = v;
        else if (!strcmp(a, "--det-model"))
            p.det_model = v;
        else if (!strcmp(a, "--rec-model"))
            p.rec_model = v;
        else if (!strcmp(a, "--cls-model"))
            p.cls_model = v;
        else if (!strcmp(a, "--rec-dict"))
            p.rec_dict = v;
        else if (!strcmp(a, "--backend"))
            p.backend = v;
        else if (!strcmp(a, "--gpu-mem-limit"))
            mem_arg = v;
        else if (!strcmp(a, "--gpu-kernel-cache"))
            p.gpu_kernel_cache = v;
        else if (!strcmp(a, "--device")) {
            if (cli_parse_device("lector", v, &p)) goto bad;
        } else if (!strcmp(a, "--det-limit-type")) {
            if (!strcmp(v, "max"))
                p.det_limit_type = LECTOR_LIMIT_MAX;
            else if (!strcmp(v, "min"))
                p.det_limit_type = LECTOR_LIMIT_MIN;
            else {
                fprintf(stderr, "lector: --det-limit-type is max or min\n");
                goto bad;
            }
        } else if (!strcmp(a, "--det-mean") || !strcmp(a, "--det-std")) {
            float *dst = !strcmp(a, "--det-mean") ? p.det_mean : p.det_std;
            if (sscanf(v, "%f,%f,%f", &dst[0], &dst[1], &dst[2]) != 3) {
                fprintf(stderr, "lector: %s expects three numbers B,G,R, got '%s'\n", a, v);
                goto bad;
            }
        } else if (!strcmp(a, "--det-db-score-mode")) {
            if (!strcmp(v, "fast"))
                p.det_db_score_mode = LECTOR_SCORE_FAST;
            else if (!strcmp(v, "slow"))
                p.det_db_score_mode = LECTOR_SCORE_SLOW;
            else {
                fprintf(stderr, "lector: --det-db-score-mode is fast or slow\n");
                goto bad;
            }
        }
#define INT_OPT(name, field)                \
    else if (!strcmp(a, name))              \
    {                                       \
        if (parse_int(v, a, &iv)) goto bad; \
        p.field = iv;                       \
    }
#define FLT_OPT(name, field)                  \
    else if (!strcmp(a, name))                \
    {                                         \
        if (parse_float(v, a, &fv)) goto bad; \
        p.field = fv;                         \
    }
        INT_OPT("--threads", threads)
        INT_OPT("--workers", workers)
        INT_OPT("--det-limit-side-len", det_limit_side_len)
        INT_OPT("--det-max-candidates", det_max_candidates)
        INT_OPT("--det-min-size", det_min_size)
        INT_OPT("--det-letterbox-min-height", det_letterbox_min_height)
        INT_OPT("--cls-batch-num", cls_batch_num)
        INT_OPT("--rec-batch-num", rec_batch_num)
        INT_OPT("--rec-width-bucket", rec_width_bucket)
        INT_OPT("--rec-image-height", rec_image_height)
        INT_OPT("--rec-image-width", rec_image_width)
        INT_OPT("--max-pages", max_pages)
        FLT_OPT("--det-db-thresh", det_db_thresh)
        FLT_OPT("--fp16-recheck", gpu_fp16_recheck)
        FLT_OPT("--fp16-margin", gpu_fp16_margin)
        FLT_OPT("--det-db-box-thresh", det_db_box_thresh)
        FLT_OPT("--det-db-unclip-ratio", det_db_unclip_ratio)
        FLT_OPT("--det-letterbox-ratio", det_letterbox_ratio)
        FLT_OPT("--rec-crop-margin", rec_crop_margin)
        FLT_OPT("--cls-thresh", cls_thresh)
        FLT_OPT("--drop-score", drop_score)
        else if (!strcmp(a, "--max-pixels")) p.max_pixels = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--max-file-size")) p.max_file_size = strtoll(v, NULL, 10);
        else
        {
            fprintf(stderr, "lector: unknown option %s (see lector --help)\n", a);
            goto bad;
        }
#undef INT_OPT
#undef FLT_OPT
    }
#undef NEXT
    if (n_files == 0) {
        usage(stderr);
        goto bad;
    }
    if (bo.n_formats == 0) bo.formats[bo.n_formats++] = RENDER_TXT;
    if (bo.n_formats > 1 && !bo.out_dir) {
        fprintf(stderr, "lector: several formats need --output-dir (one stream has one format)\n");
        goto bad;
    }
    if (bo.resume && !bo.out_dir) {
        fprintf(stderr, "lector: --resume needs --output-dir (it looks for the outputs there)\n");
        goto bad;
    }
    bo.stream_format = bo.formats[0];
    bo.max_stdin = (size_t)p.max_file_size;
    char msg[512];
    if (shard_arg ? batch_shard_parse(shard_arg, &bo.shard, msg, sizeof msg)
                  : batch_shard_from_env(env_get, &bo.shard, msg, sizeof msg)) {
        fprintf(stderr, "lector: %s\n", msg);
        goto bad;
    }
    if (mem_arg && cli_parse_gpu_mem(mem_arg, p.device_id, &p.gpu_mem_limit)) goto bad;
    /* The inputs are listed before the models load: a usage error costs nothing. */
    if (batch_inputs_collect(&inputs, files, (size_t)n_files, &io, msg, sizeof msg)) {
        fprintf(stderr, "lector: %s\n", msg);
        goto bad;
    }
    if (bo.out_dir && batch_inputs_mark_duplicates(&inputs) < 0) {
        fprintf(stderr, "lector: out of memory\n");
        rc = 1;
        goto bad;
    }
    keep_shard(&inputs, &bo.shard);
    if (!bo.quiet && inputs.symlinks_skipped)
        fprintf(stderr,
                "lector: %zu symbolic link(s) leading out of the directories named were not followed "
                "(--follow-symlinks follows them)\n",
                inputs.symlinks_skipped);
    if (!bo.quiet && bo.shard.source && strcmp(bo.shard.source, "--shard"))
        fprintf(stderr, "lector: shard %ld of %ld (from %s): %zu input(s)\n", bo.shard.index, bo.shard.count,
                bo.shard.source, inputs.n);
    size_t bad_names = 0;
    for (size_t i = 0; i < inputs.n; i++) bad_names += !lector__utf8_valid(inputs.items[i].path);
    if (bad_names) /* once: the outputs carry U+FFFD, the files are opened by their bytes */
        fprintf(stderr, "lector: %zu file name%s not valid UTF-8: U+FFFD stands for the bad bytes in the output\n",
                bad_names, bad_names > 1 ? "s are" : " is");
    lector_error err = {0};
    lector_engine *eng = NULL;
    double t_create = lector__now_ms();
    if (lector_engine_create(&p, &eng, &err)) {
        fprintf(stderr, "lector: %s (%s)\n", err.message, lector_status_str(err.code));
        rc = 1;
        goto bad;
    }
    if (p.device != LECTOR_DEVICE_CPU && !bo.quiet)
        fprintf(stderr, "lector: device: %s%s%s%s\n", lector_engine_device(eng),
                *lector_engine_fallback_reason(eng) ? " [auto: " : "", lector_engine_fallback_reason(eng),
                *lector_engine_fallback_reason(eng) ? "]" : "");
    FILE *out = NULL;
    if (out_path && !(out = fopen(out_path, "w"))) {
        fprintf(stderr, "lector: cannot write %s: %s\n", out_path, strerror(errno));
        lector_engine_free(eng);
        rc = 1;
        goto bad;
    }
    /* With --output-dir the results go to the files; -o adds the stream. */
    bo.stream = out ? out : bo.out_dir ? NULL : stdout;
    double t_run = lector__now_ms();
    rc = ocr_batch_run(eng, &inputs, &bo);
    if (out) fclose(out);
    double t_free = lector__now_ms();
    if (leave_engine_to_exit(eng)) {
        lector__log(LECTOR_LOG_DEBUG, "cli: engine created in %.0f ms, inputs read in %.0f ms, engine left to the exit",
                    t_run - t_create, t_free - t_run);
        fflush(NULL);
        _exit(rc);
    }
    lector_engine_free(eng);
    /* where a run's time outside the pages goes (docs/BENCHMARKS.md, the CLI against bench pipeline) */
    lector__log(LECTOR_LOG_DEBUG, "cli: engine created in %.0f ms, inputs read in %.0f ms, engine freed in %.0f ms",
                t_run - t_create, t_free - t_run, lector__now_ms() - t_free);
bad:
    batch_inputs_free(&inputs);
    free(files);
    return rc;
}
