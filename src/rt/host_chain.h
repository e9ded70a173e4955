/*
 * host_chain.h - runs of elementwise nodes that the host executor runs in
 * one pass (internal).
 *
 * On the host executor (the reference backend, and a compiled backend's
 * generic plans: shapes outside lector_model_options.jit_size) every node
 * is a pass over memory. PP-OCR's recognisers follow most convolutions
 * with a scale, a shift and paddle2onnx's HardSwish (x * clip(x + 3, 0, 6)
 * / 6), five such passes over a tensor that no longer fits the cache. A
 * chain is a run of consecutive elementwise nodes whose intermediate values
 * nobody else reads: it is run tile by tile, each tile through every node
 * while it is in the cache, and only its last value is written to the
 * arena. Each node still runs its own reference kernel, on a tile instead
 * of the whole tensor, so the results are the same bits as node by node.
 */
#ifndef LECTOR_RT_HOST_CHAIN_H
#define LECTOR_RT_HOST_CHAIN_H

#include "rt/plan.h"

#define RT_CHAIN_MAX_NODES 16
#define RT_CHAIN_MAX_IN    3

/* Where one input of a chain's node comes from. */
typedef enum rt_chain_src {
    RT_CHAIN_ABSENT,  /* an absent optional input */
    RT_CHAIN_TILE,    /* the output of an earlier node of the chain (its tile) */
    RT_CHAIN_WHOLE,   /* a value of the chain's shape: the tile's elements of it */
    RT_CHAIN_PER_ROW, /* broadcast: one element per row of the chain's output */
} rt_chain_src;

typedef struct rt_chain_input {
    rt_chain_src src;
    int node; /* RT_CHAIN_TILE: which node of the chain (0-based) */
    /* RT_CHAIN_PER_ROW: the element's offset is the sum over the output's
     * leading dimensions of coordinate x stride (0 where it broadcasts) */
    int64_t stride[LECTOR_MAX_DIMS];
} rt_chain_input;

/* A chain: nodes order[first .. first + n) of its plan. Its output is seen
 * as rows of `row` elements (the trailing dimensions over which every
 * broadcast operand is constant); `lead` leading dimensions number them. */
typedef struct rt_host_chain {
    int first, n;
    int lead;
    int64_t row, rows;
    rt_chain_input in[RT_CHAIN_MAX_NODES][RT_CHAIN_MAX_IN];
} rt_host_chain;

/* Finds plan p's chains (p->chains, p->n_chains, p->chain_at) from its
 * graph and order. internal[v] is set to 1 for each value that lives only
 * inside a chain (it gets no arena bytes); values read by a chain are kept
 * alive until its last node (last[], the memory plan's last readers, only
 * raised). LECTOR_ERR_OUT_OF_MEMORY on allocation failure. */
lector_status rt_host_chains_find(rt_plan *p, char *internal, int *last, lector_error *err);

/* Runs chain c of plan p over its arena, with threads from ctx. */
lector_status rt_host_chain_run(const rt_plan *p, const rt_host_chain *c, void *arena, const lector_tensor *inputs,
                                const rt_kernel_ctx *ctx);

#endif
