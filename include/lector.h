/*
 * lector.h - Lector's OCR API: images in, text lines with boxes out.
 *
 * Lector runs PaddleOCR's PP-OCR pipeline: DB text detection, an optional
 * text-line orientation classifier, and CTC text recognition, with
 * PaddleOCR's defaults for every parameter.
 *
 * Usage:
 *
 *     lector_params p = lector_default_params();   // models found as lector_find_models() says
 *     lector_engine *eng = NULL;
 *     lector_error err;
 *     if (lector_engine_create(&p, &eng, &err) != LECTOR_OK) {
 *         fprintf(stderr, "%s\n", err.message);
 *         return 1;
 *     }
 *     lector_result *res = NULL;
 *     if (lector_read_file(eng, "page.jpg", NULL, &res, &err) == LECTOR_OK) {
 *         for (size_t i = 0; i < res->pages[0].n_lines; i++)
 *             printf("%s\n", res->pages[0].lines[i].text);
 *         lector_result_free(res);
 *     } else {
 *         fprintf(stderr, "%s\n", err.message);   // names the file and the problem
 *     }
 *     lector_engine_free(eng);
 *
 * Threading contract: an engine is created once and shared. Any number of
 * threads may call the lector_read_*() functions on the same engine at the
 * same time; results are identical to single-threaded calls. Models are
 * loaded once per engine; per-call memory is released before each call
 * returns (or with lector_result_free()).
 *
 * Errors: every fallible call returns a lector_status (lector_rt.h) and
 * fills `err` when non-NULL. Library code never aborts or exits.
 */
#ifndef LECTOR_H
#define LECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "lector_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lector_limit_type {
    LECTOR_LIMIT_MAX = 0, /* scale down so that the longest side is <= det_limit_side_len */
    LECTOR_LIMIT_MIN = 1  /* scale up so that the shortest side is >= det_limit_side_len */
} lector_limit_type;

typedef enum lector_score_mode {
    LECTOR_SCORE_FAST = 0, /* mean probability inside the box (PaddleOCR's default) */
    LECTOR_SCORE_SLOW = 1  /* mean probability inside the contour polygon */
} lector_score_mode;

/* Engine parameters. Always start from lector_default_params(): new fields
 * are appended and get their defaults there. */
typedef struct lector_params {
    /* Models: a directory holding ch_PP-OCRv4_det_infer.onnx,
     * ch_PP-OCRv4_rec_infer.onnx, ch_ppocr_mobile_v2.0_cls_infer.onnx and
     * ppocr_keys_v1.txt; any of the four paths below overrides its file.
     * NULL (the default): found as lector_find_models() says. */
    const char *models_dir;
    const char *det_model;
    const char *cls_model;
    const char *rec_model;
    const char *rec_dict; /* one character per line; a space is appended */

    lector_device device; /* default LECTOR_DEVICE_CPU */
    int device_id;        /* GPU ordinal for LECTOR_DEVICE_CUDA/AUTO */
    int threads;          /* threads per inference; 0: 1 on the CPU, where `workers` run pages and
                             lines in parallel instead (no thread waits for another) */
    const char *backend;  /* CPU backend: NULL/"cpu" (best), "ref" (reference) */

    /* Detection (DB). */
    int det_limit_side_len;              /* 960 */
    lector_limit_type det_limit_type;    /* LECTOR_LIMIT_MAX */
    float det_db_thresh;                 /* 0.3: binarisation threshold of the probability map */
    float det_db_box_thresh;             /* 0.6: minimum box score */
    float det_db_unclip_ratio;           /* 1.5: box expansion */
    lector_score_mode det_db_score_mode; /* LECTOR_SCORE_FAST */
    int det_use_dilation;                /* 0: dilate the bitmap with a 2x2 kernel */
    int det_max_candidates;              /* 1000 contours at most */
    int det_min_size;                    /* 3 px: shortest side of a box */
    float det_mean[3];                   /* input normalisation (x/255 - mean)/std, B, G, R order: */
    float det_std[3];                    /* ImageNet's {0.485,0.456,0.406} / {0.229,0.224,0.225} */

    /* Text-line orientation classifier. */
    int use_angle_cls;    /* 0 (PaddleOCR's default); 1 = rotate lines read as 180 deg */
    float cls_thresh;     /* 0.9 */
    int cls_batch_num;    /* 6 */
    int cls_image_height; /* 48 */
    int cls_image_width;  /* 192 */

    /* Recognition. Every line is read at its own width, as PaddleOCR reads a
     * line alone (predict_rec.py with one crop: imgW = 48 * max(320/48, w/h)):
     * its text depends on that line only. PaddleOCR's batches pad each line to
     * the widest line of its batch, which changes text (padded lines lose
     * spaces between words and digits); Lector batches only lines whose text
     * the batch cannot change (docs/RUNTIME.md), so rec_batch_num is the size
     * of a batch and never changes a result. */
    int rec_batch_num;    /* 6 */
    int rec_image_height; /* 48 */
    int rec_image_width;  /* 320 */
    float drop_score;     /* 0.5: lines scoring below are dropped */
    int use_space_char;   /* 1: a space is appended to the dictionary */

    /* Input limits. */
    int64_t max_pixels;    /* per page, 100,000,000 */
    int64_t max_file_size; /* bytes, 256 MiB */
    int max_pages;         /* per TIFF file, 1000 */

    /* 1 (default): detect text lines. 0: the whole image is one text line
     * (PaddleOCR's det=False: classify and recognise the image as it is). */
    int use_det;

    /* GPU (device cuda/auto). */
    size_t gpu_mem_limit; /* bytes of GPU memory for the process; 0 = no cap */
    int gpu_fp16;         /* 1: the recogniser and the classifier in half precision (tensor
                                    cores); 0 (default): fp32 */

    /* Streams and lector_read_batch(): pages whose detection input has the
     * same size run through the det model together, up to this many at a
     * time. 1 (default): one page per run, as PaddleOCR does. */
    int det_batch_num;

    /* With gpu_fp16: 1 runs detection in half precision too. 0 (default):
     * detection stays fp32, because its probability map meets a hard
     * threshold and fp16 moves boxes (docs/GPU.md has the measurements). */
    int gpu_fp16_det;

    /* With gpu_fp16: a line whose half-precision score is below this is
     * recognised again in fp32 (a second recogniser on the GPU), besides
     * the lines of gpu_fp16_margin. 0 (default): off; a score says less of
     * what half precision changed than the margin does (docs/GPU.md gives
     * what each rule costs and keeps; 0.9 was the default until the margin). */
    float gpu_fp16_recheck;

    /* Letterbox before detection (RapidOCR's rule): an image at most
     * det_letterbox_min_height px high, or more than det_letterbox_ratio
     * times as wide as high, gets black bands above and below, each
     * int(|max(int(w / ratio), min_height) * 2 - h| / 2) rows, so that text
     * filling a small or very wide image is detected whole (without them
     * RapidOCR's 445x39 test_without_det.jpg read as two fragments with
     * the middle characters lost). Boxes are given in the image's own
     * pixels. Other images are not padded, nor one whose padded copy would
     * exceed max_pixels. 48 (default: an image no higher than the
     * recogniser's line; RapidOCR's min_height is 30, and 48 read 17 of the
     * shared data's 29 line images whole against 13, none worse:
     * docs/ACCURACY.md) and 8 (RapidOCR's width_height_ratio); 0 turns a
     * rule off. */
    int det_letterbox_min_height;
    float det_letterbox_ratio;
    /* Bytes the engine's execution plans may hold (one plan per input
     * shape, and the activation arenas they run in), shared by the models:
     * 45% detection, 45% recognition, 10% the classifier. The least recently
     * used plans are evicted to stay under it, so memory does not grow with
     * the number of distinct image sizes. 0 (default): a count instead,
     * whatever the plans' size: on the CPU 64 plans per model, on a GPU
     * 4,096 for the recogniser (a plan per line width and row count) and
     * 512 for the others. */
    size_t plan_cache_bytes;
    /* Threads that run the work of every read (lector_read_*, streams with
     * workers 0): decoding, detection, post-processing, crops,
     * classification and recognition of several pages and lines at once,
     * each inference with `threads` threads. 0 (default): on the CPU, the
     * physical cores divided by `threads` (1 when unset), at least 1; on a
     * GPU, 2 per core, at most 16. */
    int workers;
    /* Threads that call lector_read_*() on this engine at the same time,
     * when more than `workers` (a server whose own threads each run one
     * read, with workers 1). A GPU engine makes its models' GPU workers and
     * the line models' full-batch arenas for that many runs ahead, so its
     * memory does not grow when they first all read at once. 0 (default):
     * `workers`. */
    int callers;
    /* Experimental. > 0: recognition batches lines whose tensor widths
     * round up to the same multiple of this many pixels (fewer, fuller
     * batches), each line read through width masks
     * (lector_model_options.width_masks) so that its text is the one it has
     * alone at its own width. 0 (default): a batch holds lines of one exact
     * width. A recogniser the masks cannot cover reads each line at its own
     * width (the engine logs why). What it gains where: docs/RUNTIME.md. */
    int rec_width_bucket;
    /* GPU: the directory where the kernels compiled at run time and cuDNN's
     * algorithm choices are kept between processes
     * (lector_model_options.kernel_cache_dir), so that a process after the
     * first starts sooner. NULL (default):
     * $XDG_CACHE_HOME/lector/kernels, or ~/.cache/lector/kernels; "": none. */
    const char *gpu_kernel_cache;
    /* With gpu_fp16: a line is recognised again in fp32 (a second
     * recogniser on the GPU) where half precision came nearer than this to
     * another text: a step whose runner-up class, within this much
     * probability of the best, would change the text, or a score this near
     * drop_score. Rounding seldom moves probabilities that far: with 0.05,
     * 2 of 32,080 document lines differed from fp32 (docs/GPU.md). 0.05
     * (default); 0: off. This and gpu_fp16_recheck both 0: half precision
     * only. */
    float gpu_fp16_margin;
    /* Each line is cut for the classifier and the recogniser from its box
     * grown on every side by this fraction of its shorter side (its height,
     * for a line), the corners kept within the image; the box reported
     * stays detection's. The recogniser drops the spaces of lines cut
     * tight: with 0.1 word F1 rose from 0.936 to 0.973 on the document
     * benchmark's pages and from 0.432 to 0.468 on SROIE, and ICDAR2015's
     * word CER fell from 0.478 to 0.465 (docs/ACCURACY.md). 0 (default):
     * the box itself, as PaddleOCR cuts it, so PaddleOCR's texts. */
    float rec_crop_margin;
} lector_params;

/* PaddleOCR's defaults (tools/infer/utility.py); models_dir NULL. */
lector_params lector_default_params(void);

/* The default model set's file names (scripts/fetch_models.sh fetches them). */
#define LECTOR_DEFAULT_DET_MODEL "ch_PP-OCRv4_det_infer.onnx"
#define LECTOR_DEFAULT_REC_MODEL "ch_PP-OCRv4_rec_infer.onnx"
#define LECTOR_DEFAULT_CLS_MODEL "ch_ppocr_mobile_v2.0_cls_infer.onnx"
#define LECTOR_DEFAULT_REC_DICT  "ppocr_keys_v1.txt"

/* Finds the models directory, the rule of every entry point (the engine
 * with models_dir NULL, the CLI's commands, the service). `dir` non-NULL:
 * that directory and no other. Otherwise the first that holds the default
 * set's detection model, recogniser and dictionary of:
 *   1. the LECTOR_MODELS environment variable (taken as it is, like `dir`);
 *   2. beside the executable: ../models (the offline bundle's layout), then
 *      ../share/lector/models (an install under a prefix);
 *   3. the source tree's models/ the build was configured from (build/lector
 *      run from anywhere).
 * On success `out` receives the directory. LECTOR_ERR_IO otherwise, with a
 * message naming every place looked and how to get the models
 * (scripts/fetch_models.sh). Thread-safe. */
lector_status lector_find_models(const char *dir, char *out, size_t out_len, lector_error *err);

/* Per-read overrides: NULL means the engine's parameters. */
/* Per-read overrides: NULL means the engine's parameters. Always start from
 * lector_default_read_options(): new fields are appended. */
typedef struct lector_read_options {
    int det_limit_side_len; /* 0 = engine's */
    float drop_score;       /* < 0 = engine's */
    int use_angle_cls;      /* -1 = engine's, 0 off, 1 on */
    /* Asked between the stages of a read (after decoding, after each page's
     * detection, between recognition batches), from the reading thread:
     * nonzero stops the read there with LECTOR_ERR_CANCELLED and frees its
     * work. NULL = never. A server uses it to drop the work of a client
     * that has gone. */
    int (*cancel)(void *user);
    void *cancel_user;
} lector_read_options;
/* {0, -1, -1, NULL, NULL}: everything from the engine, never cancelled. */
lector_read_options lector_default_read_options(void);

typedef struct lector_engine lector_engine;

/* Loads the models and the dictionary. */
lector_status lector_engine_create(const lector_params *params, lector_engine **out, lector_error *err);
/* Frees an engine; NULL is a no-op. No read may be in progress. */
void lector_engine_free(lector_engine *engine);
/* "cpu (onednn, 2 threads)", "cpu (ref, 1 threads)", "cuda:0", ... for logs. */
const char *lector_engine_device(const lector_engine *engine);
/* With device auto on the CPU: why the GPU was not used (the loader's or the
 * backend's message); "" otherwise. */
const char *lector_engine_fallback_reason(const lector_engine *engine);
/* 1 when the engine runs its models on a GPU. */
int lector_engine_on_gpu(const lector_engine *engine);
/* GPU memory held through Lector on the engine's GPU and the cap (0, 0 on the CPU). */
void lector_engine_gpu_memory(const lector_engine *engine, size_t *used, size_t *limit);
/* Bytes the engine's plan caches hold now (see plan_cache_bytes). */
size_t lector_engine_cache_bytes(const lector_engine *engine);
/* Returns cached buffers (activation arenas, GPU workspaces) to the system;
 * on a GPU, what the CUDA module's memory pool keeps for reuse too
 * (docs/GPU.md, "Allocation without waits"). */
void lector_engine_trim(lector_engine *engine);

/* The worker threads a stream of this engine gets by default (lector_params.workers, or its default). */
int lector_engine_workers(const lector_engine *engine);

/* What an engine's models have compiled and hold (lector_rt.h's
 * lector_model_stats per model; zeros for a model the engine did not load).
 * Models are prepared once and run any input size: after a warm-up, a
 * stream of pages of any size leaves plans_compiled and kernels_compiled
 * where they were. */
typedef struct lector_engine_stats {
    lector_model_stats det, cls, rec;
    lector_model_stats rec_fp32; /* gpu_fp16 with gpu_fp16_recheck: the fp32 recogniser */
    uint64_t plans_compiled;     /* sums over the models */
    uint64_t kernels_compiled;
} lector_engine_stats;

/* Fills *stats. Thread-safe. */
void lector_engine_get_stats(const lector_engine *engine, lector_engine_stats *stats);

typedef struct lector_point {
    float x, y;
} lector_point;

typedef struct lector_line {
    lector_point box[4]; /* clockwise from top-left, in page pixels */
    char *text;          /* UTF-8, NUL-terminated */
    float score;         /* mean probability of the kept characters */
    int rotated;         /* 1 when the classifier turned the line by 180 deg */
} lector_line;

typedef struct lector_page {
    int width, height;
    lector_line *lines; /* in reading order */
    size_t n_lines;
} lector_page;

/* Each stage's time for this read: its share of the stage's batches (a
 * batch's time split over its lines or pages), so with several workers the
 * stages may add up to more than total_ms, the wall time from the start of
 * its decoding to its last line. */
typedef struct lector_timings {
    double decode_ms, det_ms, cls_ms, rec_ms, total_ms;
    /* what the engine had compiled in all when this read finished
     * (lector_engine_get_stats): the same from one read to the next once the
     * shapes a stream needs have been seen */
    uint64_t plans_compiled, kernels_compiled;
} lector_timings;

typedef struct lector_result {
    lector_page *pages; /* one per image; a multi-page TIFF gives several */
    size_t n_pages;
    lector_timings timings;
} lector_result;

/* Reads an image file (JPEG, PNG, TIFF, WebP, BMP, PBM/PGM/PPM, JPEG 2000; format by content). */
lector_status lector_read_file(lector_engine *engine, const char *path, const lector_read_options *opt,
                               lector_result **out, lector_error *err);

/* Reads an encoded image held in memory; `name` is used in messages. */
lector_status lector_read_memory(lector_engine *engine, const void *data, size_t size, const char *name,
                                 const lector_read_options *opt, lector_result **out, lector_error *err);

/* One encoded image of a lector_read_batch() call (as lector_read_memory). */
typedef struct lector_batch_input {
    const void *data;
    size_t size;
    const char *name; /* used in messages; NULL = "image" */
} lector_batch_input;

/* Reads n encoded images in one call: they go through one stream
 * (lector_stream_create with the engine's workers), so decoding,
 * detection (pages whose detection input has the same size run together,
 * up to det_batch_num), post-processing and cropping of different images
 * overlap, and the classifier and the recogniser run over the lines of all
 * images together, in batches of cls_batch_num / rec_batch_num lines.
 *
 * Results equal lector_read_memory() of each image alone (texts, boxes,
 * scores): every line is read at its own width, whatever the other lines of
 * its batch (lector_params.rec_batch_num).
 *
 * Per input i: statuses[i], results[i] (NULL on error; free each with
 * lector_result_free()) and errs[i] when errs is non-NULL. One failing
 * image (corrupt, over a limit) does not fail the others; an error in a
 * shared cls/rec batch (out of memory, backend) fails the images that had
 * lines in it. Timings: decode, det, cls and rec are each image's share of
 * the stages' time (a batch's time split over its lines); total from the
 * start of its decoding to its last line. Returns LECTOR_OK when the call
 * ran (see statuses), LECTOR_ERR_INVALID_ARGUMENT / OUT_OF_MEMORY (with
 * errs[0] filled when errs is non-NULL) when it could not start. */
lector_status lector_read_batch(lector_engine *engine, const lector_batch_input *inputs, size_t n,
                                const lector_read_options *opt, lector_result **results, lector_status *statuses,
                                lector_error *errs);

/* What an encoded image's headers say (lector_probe_image). */
typedef struct lector_image_info {
    const char *format;      /* "JPEG", "PNG", "TIFF", "WebP", "BMP", "PNM", "JPEG 2000" */
    int pages;               /* 1, or a TIFF's directories */
    int width, height;       /* the first page */
    int64_t max_page_pixels; /* the largest page */
    int64_t total_pixels;    /* all pages */
    int64_t decode_bytes;    /* host memory decoding takes at its peak (all pages in BGR and one page's scratch) */
} lector_image_info;

/* Reads an encoded image's headers (a TIFF's directories) without decoding
 * a pixel: its format, pages and sizes, so that the work can be refused or
 * scheduled before it costs anything. No limit is checked. LECTOR_ERR_IMAGE
 * when the bytes are not one of the formats or a header is unreadable (the
 * message starts with `name`, NULL = "image"). Thread-safe. */
lector_status lector_probe_image(const void *data, size_t size, const char *name, lector_image_info *info,
                                 lector_error *err);
/* ---- streams: many inputs through the pipelined driver --------------------------
 *
 * A stream reads any number of inputs with a pool of worker threads:
 * decoding, detection, DB post-processing and cropping of several pages run
 * at once, detection is batched across pages of the same input size, and
 * the classifier and the recogniser run over the lines of all pages in
 * flight together. Results come back through a callback in the order the
 * inputs were pushed, each as soon as it and every input before it are done.
 * Memory is bounded: lector_stream_push_*() blocks while max_inputs inputs
 * are pushed and not yet delivered (back-pressure).
 *
 *     static void on_result(const lector_stream_item *it, void *user) {
 *         if (it->status == LECTOR_OK) print(it->name, it->result);
 *         else fprintf(stderr, "%s\n", it->error->message);
 *         lector_result_free(it->result);
 *     }
 *     lector_stream *s;
 *     lector_stream_create(eng, NULL, on_result, NULL, &s, &err);
 *     for (i = 0; i < n; i++) lector_stream_push_file(s, paths[i], NULL, &err);
 *     lector_stream_finish(s, &err);   // every callback has run
 *     lector_stream_free(s);
 *
 * Threading: push, finish and free are called from one thread at a time.
 * The callback runs on a worker thread or inside push/finish, never twice
 * at once; it must not call push or finish of its own stream. Several
 * streams may share one engine. A stream's workers are the engine's
 * threads: started by the first stream that needs them, parked when a
 * stream is freed and taken by the next (lector_read_file and the other
 * single reads run a stream of their own), ended by lector_engine_free. */
typedef struct lector_stream lector_stream;

/* One delivered input. `result` belongs to the callback (free it with
 * lector_result_free; NULL when status != LECTOR_OK, and then `error` names
 * the input and the problem). */
typedef struct lector_stream_item {
    size_t index;     /* 0 for the first input pushed, then 1, 2, ... */
    const char *name; /* the path, or the name given with the bytes */
    void *user;       /* push's `user` */
    lector_status status;
    const lector_error *error;
    lector_result *result;
} lector_stream_item;

typedef void (*lector_stream_cb)(const lector_stream_item *item, void *cb_user);

typedef struct lector_stream_options {
    int workers;                     /* worker threads; 0 = the engine's (lector_params.workers); -1 = none: the
                       calling thread does all the work inside push and finish */
    int max_inputs;                  /* inputs pushed and not yet delivered before push blocks; 0 = 4 per worker + 4 */
    const lector_read_options *read; /* NULL = the engine's parameters */
} lector_stream_options;

/* {0, 0, NULL}. */
lector_stream_options lector_default_stream_options(void);

/* Starts a stream on `engine` (which must outlive it); `cb` is required. */
lector_status lector_stream_create(lector_engine *engine, const lector_stream_options *opt, lector_stream_cb cb,
                                   void *cb_user, lector_stream **out, lector_error *err);
/* Queues an image file (the path is copied). Blocks while the stream holds
 * max_inputs undelivered inputs. An input that cannot be read is delivered
 * with its error, in its place; push itself fails only on a NULL argument
 * or a finished stream. */
lector_status lector_stream_push_file(lector_stream *s, const char *path, void *user, lector_error *err);
/* Queues encoded image bytes; `data` is read until this input's callback has
 * returned, not copied. `name` is used in messages (copied; NULL = "image"). */
lector_status lector_stream_push_memory(lector_stream *s, const void *data, size_t size, const char *name, void *user,
                                        lector_error *err);
/* Waits until every pushed input has been delivered; no push after it. */
lector_status lector_stream_finish(lector_stream *s, lector_error *err);
/* Finishes the stream if needed and frees it; NULL is a no-op. */
void lector_stream_free(lector_stream *s);

typedef enum lector_pixel_format {
    LECTOR_PIXEL_RGB = 0,
    LECTOR_PIXEL_BGR = 1,
    LECTOR_PIXEL_GRAY = 2,
    LECTOR_PIXEL_RGBA = 3,
    LECTOR_PIXEL_BGRA = 4
} lector_pixel_format;

/* Reads raw 8-bit pixels: `stride` bytes per row (0 = packed). */
lector_status lector_read_pixels(lector_engine *engine, const uint8_t *pixels, int width, int height, size_t stride,
                                 lector_pixel_format format, const lector_read_options *opt, lector_result **out,
                                 lector_error *err);

/* Frees a result; NULL is a no-op. */
void lector_result_free(lector_result *result);

/* The JSON document of one read, as `lector --format json` writes it (one
 * per line) and `lector serve` answers it:
 *   {"file": file, "pages": [{"width", "height", "lines": [{"text", "score",
 *    "box": [[x, y] x 4][, "rotated": true]}]}], "timings_ms": {"decode",
 *    "det", "cls", "rec", "total"} (with a result only), "error": null | error}
 * `result` NULL is a failed read (no pages; `error` says why). Returns a
 * NUL-terminated string without a newline, to release with free(); NULL when
 * out of memory. */
char *lector_result_json(const lector_result *result, const char *file, const char *error);

/* Draws page `page` of a result read from `image_path` into a PNG: the page
 * with every line's box outlined and numbered on the left, the recognised
 * text inside the same boxes on a white panel on the right (PaddleOCR's
 * draw_ocr_box_txt layout). Uses a CJK font from the system when one is
 * installed (fonts-wqy-microhei, fonts-noto-cjk), else numbers only. */
lector_status lector_draw_result(const char *image_path, const lector_result *result, size_t page, const char *out_png,
                                 lector_error *err);

#ifdef __cplusplus
}
#endif
#endif /* LECTOR_H */
