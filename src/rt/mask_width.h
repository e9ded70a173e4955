/*
 * mask_width.h - batches of items of different widths, each item's result
 * as if it ran alone (internal; lector_model_options.width_masks,
 * lector_model_run_masked). The rule and its limits: mask_width.c.
 */
#ifndef LECTOR_RT_MASK_WIDTH_H
#define LECTOR_RT_MASK_WIDTH_H

#include <pthread.h>

#include "rt/graph.h"

enum {
    RT_WIDTH_MASK_ZERO,  /* x * mask: 1 inside an item's extent, 0 past it */
    RT_WIDTH_MASK_BIAS,  /* x + mask: 0 inside, -1e30 past it (before a Softmax) */
    RT_WIDTH_MASK_SCALE, /* x * (W / extent) per item (after a GlobalAveragePool) */
};

typedef struct rt_width_mask {
    int kind;
    int value; /* the value (index in the graph as loaded) whose extent it follows */
    int axis;  /* that value's width axis */
    int batch_axis;
    int rank;
    int input; /* the graph input that carries it */
} rt_width_mask;

typedef struct rt_width_masks rt_width_masks;

/* Rewrites g (as loaded: before any pass) so that every operator reading
 * across a width axis reads through a mask input, added after g's own
 * inputs. LECTOR_ERR_UNSUPPORTED_OP with the node's name when an operator
 * reads across the width in a way no rule covers. */
lector_status rt_width_masks_build(rt_graph *g, rt_width_masks **out, lector_error *err);
void rt_width_masks_free(rt_width_masks *wm);
/* The inputs the caller gives (the graph's before the rewrite). */
int rt_width_masks_user_inputs(const rt_width_masks *wm);
int rt_width_masks_count(const rt_width_masks *wm);
/* full[] = the caller's inputs, then each mask for input 0's batch with
 * item widths valid[] (NULL: every item the whole width); out_valid (may be
 * NULL) receives each item's extent on output 0's width axis. Free the
 * masks with rt_width_masks_inputs_free. Thread-safe. */
lector_status rt_width_masks_inputs(rt_width_masks *wm, const rt_graph *masked, const lector_tensor *user,
                                    const int64_t *valid, lector_tensor *full, int64_t *out_valid, lector_error *err);
void rt_width_masks_inputs_free(const rt_width_masks *wm, lector_tensor *full);

#endif
