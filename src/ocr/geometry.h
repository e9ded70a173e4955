/*
 * geometry.h - the plane geometry of PaddleOCR's DB post-processing, written
 * to agree with what PaddleOCR gets from OpenCV and pyclipper:
 *   - contours of a binary map (cv2.findContours, RETR_LIST, Suzuki-Abe
 *     border following),
 *   - convex hull and minimum-area rectangle (cv2.minAreaRect, rotating
 *     calipers) and PaddleOCR's get_mini_boxes corner order,
 *   - polygon filling like cv2.fillPoly (outline drawn with 8-connected
 *     Bresenham lines plus scan-line spans in 16.16 fixed point),
 *   - polygon offset with round joins (pyclipper's ClipperOffset: integer
 *     coordinates, arc tolerance 0.25),
 *   - PaddleOCR's order_points_clockwise.
 */
#ifndef LECTOR_OCR_GEOMETRY_H
#define LECTOR_OCR_GEOMETRY_H

#include <stddef.h>
#include <stdint.h>

typedef struct ocr_pt {
    float x, y;
} ocr_pt;

typedef struct ocr_ipt {
    int x, y;
} ocr_ipt;

/* One contour: points into a shared array. */
typedef struct ocr_contour {
    size_t start, count;
} ocr_contour;

typedef struct ocr_contours {
    ocr_ipt *pts;
    size_t n_pts, cap_pts;
    ocr_contour *list;
    size_t n, cap;
} ocr_contours;

/* Contours (outer borders and holes) of the non-zero pixels of a w*h map,
 * in OpenCV's discovery order (raster scan). Returns 0, -1 on OOM. */
int ocr_find_contours(const uint8_t *map, int w, int h, ocr_contours *out);
void ocr_contours_free(ocr_contours *c);

/* Convex hull (counter-clockwise in image coordinates); returns its size.
 * `hull` must hold n points. */
int ocr_convex_hull(const ocr_pt *pts, int n, ocr_pt *hull);

/* cv2.minAreaRect + cv2.boxPoints + PaddleOCR's get_mini_boxes: the four
 * corners ordered top-left, top-right, bottom-right, bottom-left by
 * PaddleOCR's rule, and the length of the shorter side. Returns -1 on OOM. */
int ocr_mini_box(const ocr_pt *pts, int n, ocr_pt box[4], float *short_side);

/* Fills polygon `poly` (n integer vertices) into mask (w*h, value 1), the
 * way cv2.fillPoly(mask, [poly], 1) does. Returns -1 on OOM. */
int ocr_fill_poly(uint8_t *mask, int w, int h, const ocr_ipt *poly, int n);

/* pyclipper: PyclipperOffset().AddPath(box, JT_ROUND, ET_CLOSEDPOLYGON);
 * Execute(delta). Returns a malloc'd array of *n_out points (or NULL). */
ocr_ipt *ocr_offset_round(const ocr_pt *poly, int n, double delta, int *n_out);

/* PaddleOCR's order_points_clockwise (sum/diff rule). */
void ocr_order_clockwise(ocr_pt box[4]);

/* Area and perimeter of a simple polygon (shapely's Polygon.area/length). */
double ocr_poly_area(const ocr_pt *p, int n);
double ocr_poly_length(const ocr_pt *p, int n);

#endif
