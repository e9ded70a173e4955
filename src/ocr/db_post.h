/*
 * db_post.h - DB (Differentiable Binarization) post-processing: the
 * probability map of the detector -> text boxes in image coordinates,
 * following PaddleOCR's DBPostProcess.boxes_from_bitmap and
 * TextDetector.filter_tag_det_res step by step.
 */
#ifndef LECTOR_OCR_DB_POST_H
#define LECTOR_OCR_DB_POST_H

#include "lector_rt.h"
#include "ocr/geometry.h"

typedef struct ocr_db_params {
    float thresh;       /* binarisation threshold (0.3) */
    float box_thresh;   /* minimum box score (0.6) */
    float unclip_ratio; /* 1.5 */
    int slow_score;     /* 0: mean inside the box, 1: inside the contour */
    int use_dilation;   /* 2x2 dilation of the bitmap */
    int max_candidates; /* 1000 */
    int min_size;       /* 3 */
} ocr_db_params;

typedef struct ocr_box {
    ocr_pt p[4]; /* clockwise from top-left, image pixels */
    float score;
} ocr_box;

/* prob: pw*ph map (the model output at the resized size); src_w/src_h: the
 * original image size. *boxes is malloc'd (lector__free), possibly empty. */
lector_status ocr_db_postprocess(const float *prob, int pw, int ph, int src_w, int src_h, const ocr_db_params *p,
                                 ocr_box **boxes, int *n_boxes, lector_error *err);

/* PaddleOCR's sorted_boxes: top-to-bottom, then left-to-right within 10 px. */
void ocr_sort_boxes(ocr_box *b, int n);

#endif
