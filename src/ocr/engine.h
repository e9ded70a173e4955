/*
 * engine.h - the OCR engine's internals (src/ocr), shared by its files:
 *
 *   engine.c   the engine: parameters, models, device, statistics
 *   stages.c   what is done to a page and its lines: detection (pre- and
 *              post-processing), crops, classification, recognition
 *   driver.c   the pipelined driver: every entry point's inputs go through
 *              its stages, batched across pages, on worker threads
 *   read.c     lector_read_* on the driver
 *
 * A page's lines are read each at its own width (PaddleOCR's result for a
 * line read alone): a line's text never depends on the other lines of its
 * page, batch or stream.
 */
#ifndef LECTOR_OCR_ENGINE_H
#define LECTOR_OCR_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>

#include "image/image.h"
#include "lector.h"
#include "ocr/ctc.h"
#include "ocr/db_post.h"
#include "ocr/preprocess.h"

#define GPU_MAX_ROWS 64 /* the largest batch a run gets (as rec_batch_num's bound) */

struct lector_engine {
    lector_params p;
    lector_model *det, *cls, *rec;
    lector_model *rec32;  /* gpu_fp16 with a recheck (ocr_fp16_rechecks): the recogniser in fp32, for uncertain lines */
    int rec_argmax;       /* rec gives (argmax, max) per step (lector_model_load_file_argmax), not the probabilities */
    int rec_top2;         /* rec gives the two best per step instead (lector_model_load_file_top2): rec32 beside it */
    int rec_masked;       /* rec (and rec32) loaded with width masks: lector_params.rec_width_bucket */
    int rec_bucket_asked; /* lector_params.rec_width_bucket as given; p holds the one in use */
    ocr_dict dict;
    char rec_path[4096], dict_path[4096]; /* named when the two do not match */
    char device[128];
    char fallback[560];      /* device auto on the CPU: why */
    char models_dir[4096];   /* p.models_dir points here once found (lector_find_models) */
    char kernel_cache[4096]; /* p.gpu_kernel_cache points here, resolved (kernel_cache_resolve) */
    int on_gpu;
    /* On a GPU, from its free memory at the first recognition
     * (ocr_batch_limits): rows of a cls batch, and rows of a rec batch at the
     * base width rec_image_width (scaled down for wider batches); 0 on the
     * CPU, where PaddleOCR's cls_batch_num / rec_batch_num hold. */
    int gpu_cls_rows, gpu_rec_rows;
    atomic_int limits_known;
    pthread_mutex_t limits_lock;
    /* on a GPU: the thread that runs the line models once while the first page is read (engine.c) */
    pthread_t warmup;
    int warmup_started;
    /* streams' worker threads parked between streams (threads.c) */
    pthread_mutex_t threads_lock;
    struct ocr_thread *parked;
    int n_parked;
};

/* The engine's worker threads (threads.c): a stream's workers run on
 * threads parked by earlier streams, started only when none is parked. */
typedef struct ocr_thread ocr_thread;
/* Runs fn(arg) on a parked thread, or a new one. */
lector_status ocr_thread_start(lector_engine *e, void (*fn)(void *), void *arg, ocr_thread **out, lector_error *err);
/* Waits for fn to return; the thread parks for the next stream. */
void ocr_thread_join(lector_engine *e, ocr_thread *t);
/* Ends the parked threads (lector_engine_free: every stream freed before). */
void ocr_threads_free(lector_engine *e);

/* One text line between cropping and its text. */
typedef struct ocr_crop {
    img_image img; /* on the CPU path; empty where the device crops (on_device) */
    int w, h;      /* the crop as cls and rec see it (after the quarter turn of tall boxes) */
    float ratio;   /* width / height */
    /* on_device: the crop is made on the GPU from the page's bytes with these */
    int on_device;
    const img_image *page;
    double warp[9];
    int warp_w, warp_h, turns; /* lector_image_input.turns: bit 0 tall box, bit 1 the classifier's 180 */
    int rotated;
    char *text;
    float score;
    float margin; /* ocr_ctc_decode_top2's: how near half precision came to another text (1: not known) */
    int lw;       /* the recogniser's width for this line read alone (PaddleOCR's imgW of one crop) */
    int tw;       /* the width of the tensor it is recognised in (ocr_rec_width) */
    void *owner;  /* the driver's page */
} ocr_crop;

/* ---- engine.c ---------------------------------------------------------------------- */

/* On a GPU: batch sizes from its free memory, found once (the first call
 * compiles a one-row plan of cls and rec); a no-op on the CPU. */
lector_status ocr_batch_limits(lector_engine *e, lector_error *err);

/* The workers of an engine of these parameters (lector_engine_workers):
 * the pages and lines it runs at once. */
int ocr_workers(const lector_params *p, int on_gpu);
/* Crops per cls batch, and per rec batch of tensor width tw. */
int ocr_cls_batch_size(const lector_engine *e);
int ocr_rec_batch_size(const lector_engine *e, int tw);
/* Rows of the tensor a batch of nb lines runs in, bs at most per batch:
 * nb on the CPU; on a GPU the next power of two (the extra rows zeros,
 * their results unread; a row's result does not depend on the others). */
int ocr_batch_rows(const lector_engine *e, int nb, int bs);
/* Image limits of the engine's parameters. */
void ocr_image_limits(const lector_engine *e, img_limits *l);

/* ---- stages.c ----------------------------------------------------------------------- */

/* Models' inputs made on the GPU from the pages' bytes (LECTOR_GPU_PREPROCESS
 * != 0 and a backend that takes them). */
int ocr_gpu_preprocess(void);
int ocr_device_crops(const lector_engine *e);

/* A page's detection input, made before the model runs. */
typedef struct ocr_det_in {
    ocr_det_input di;     /* on the CPU: the normalised tensor */
    ocr_input_tables tab; /* on_device: the input made on the GPU from the page's bytes (im) */
    lector_image_input im;
    int on_device;
    int valid_h, valid_w; /* the input's own size inside a padded tensor (ocr_det_bucket) */
    int pad_rows;         /* letterbox rows above and below the page (letterbox.h); 0: none */
    img_image letterbox;  /* the padded page, when pad_rows */
} ocr_det_in;

lector_status ocr_det_prepare(lector_engine *e, const img_image *img, int limit, ocr_det_in *d, lector_error *err);
void ocr_det_in_free(ocr_det_in *d);
/* Runs detection on n pages whose inputs have the same size (n <= 64):
 * *out receives the model's outputs, row q for page q. */
lector_status ocr_det_run(lector_engine *e, ocr_det_in *const *in, int n, lector_tensor **out, size_t *n_out,
                          lector_error *err);
/* DB post-processing of row q of a detection output into sorted boxes in
 * img's pixels; valid_h x valid_w: the part of the map that belongs to the
 * page; pad_rows: the letterbox rows the detection input had above and below
 * img (ocr_det_in.pad_rows). */
lector_status ocr_det_post(lector_engine *e, const img_image *img, int pad_rows, const lector_tensor *prob, int q,
                           int valid_h, int valid_w, ocr_box **boxes, int *n_boxes, lector_error *err);

/* The crops of a page's boxes: made here on the CPU, described for the GPU
 * where it crops (ocr_device_crops), or the whole page when boxes is NULL
 * (use_det = 0). Boxes that cannot be cropped (degenerate) are dropped, from
 * `boxes` too. *crops is lector__calloc'd (ocr_crops_free). */
lector_status ocr_crops_make(lector_engine *e, const img_image *img, ocr_box *boxes, int *n, ocr_crop **crops,
                             lector_error *err);
void ocr_crops_free(ocr_crop *c, int n);

/* The tensor width a line is recognised in, from its own width lw. */
int ocr_rec_width(int lw);
/* Sets a crop's lw and tw (after classification: its size is final). */
void ocr_rec_widths(const lector_engine *e, ocr_crop *c);

/* Classifies n crops (n <= ocr_cls_batch_size): rotated ones are turned. */
lector_status ocr_cls_run(lector_engine *e, ocr_crop **cr, int n, lector_error *err);
/* Recognises n crops of one tensor width (n <= ocr_rec_batch_size): each
 * crop's text and score, rechecked in fp32 under gpu_fp16_recheck and gpu_fp16_margin. */
lector_status ocr_rec_run(lector_engine *e, ocr_crop **cr, int n, lector_error *err);

/* The lines of a page's crops that score at least `drop`, into page->lines. */
lector_status ocr_page_lines(const img_image *img, const ocr_box *boxes, ocr_crop *crops, int n, float drop,
                             lector_page *page, lector_error *err);

/* ---- driver.c ------------------------------------------------------------------------ */

/* Queues a page already decoded (lector_read_pixels), borrowed until its
 * input is delivered. */
lector_status ocr_stream_push_image(lector_stream *s, const img_image *img, const char *name, void *user,
                                    lector_error *err);

#endif
