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

typedef struct geo_pt {
    float x, y;
} geo_pt;

typedef struct geo_ipt {
    int x, y;
} geo_ipt;

/* One contour: points into a shared array. */
typedef struct geo_contour {
    size_t start, count;
} geo_contour;

typedef struct geo_contours {
    geo_ipt *pts;
    size_t n_pts, cap_pts;
    geo_contour *list;
    size_t n, cap;
} geo_contours;

/* Contours (outer borders and holes) of the non-zero pixels of a w*h map,
 * in OpenCV's discovery order (raster scan). Returns 0, -1 on OOM. */
int geo_find_contours(const uint8_t *map, int w, int h, geo_contours *out);
void geo_contours_free(geo_contours *c);

/* Convex hull (counter-clockwise in image coordinates); returns its size.
 * `hull` must hold n points. */
int geo_convex_hull(const geo_pt *pts, int n, geo_pt *hull);

/* cv2.minAreaRect + cv2.boxPoints + PaddleOCR's get_mini_boxes: the four
 * corners ordered top-left, top-right, bottom-right, bottom-left by
 * PaddleOCR's rule, and the length of the shorter side. Returns -1 on OOM. */
int geo_mini_box(const geo_pt *pts, int n, geo_pt box[4], float *short_side);

/* Fills polygon `poly` (n integer vertices) into mask (w*h, value 1), the
 * way cv2.fillPoly(mask, [poly], 1) does. Returns -1 on OOM. */
int geo_fill_poly(uint8_t *mask, int w, int h, const geo_ipt *poly, int n);

/* pyclipper: PyclipperOffset().AddPath(box, JT_ROUND, ET_CLOSEDPOLYGON);
 * Execute(delta). Returns a malloc'd array of *n_out points (or NULL). */
geo_ipt *geo_offset_round(const geo_pt *poly, int n, double delta, int *n_out);

/* PaddleOCR's order_points_clockwise (sum/diff rule). */
void geo_order_clockwise(geo_pt box[4]);

/* Area and perimeter of a simple polygon (shapely's Polygon.area/length). */
double geo_poly_area(const geo_pt *p, int n);
double geo_poly_length(const geo_pt *p, int n);

#endif
