/*
 * host_profile.h - LECTOR_HOST_PROFILE: where the host executor's time goes
 * (internal).
 *
 * The host executor (the reference backend, and a compiled backend's
 * generic plans) runs node by node, with chains of elementwise nodes in one
 * pass (host_chain.h). With LECTOR_HOST_PROFILE=1 each node and chain is
 * timed and the sums, per operator and per kind (the reference kernel, a
 * backend's own kernel, a chain named by its first operator), are printed
 * on stderr at exit; LECTOR_HOST_PROFILE=2 also prints each step of every
 * run as it ends (its operator, kernel, time, output dims and node name).
 * The CUDA module's LECTOR_CUDA_PROFILE does the same for a GPU plan. Off,
 * it costs one branch per node.
 */
#ifndef LECTOR_RT_HOST_PROFILE_H
#define LECTOR_RT_HOST_PROFILE_H

/* What ran a node's (or chain's) work. */
typedef enum rt_prof_kind {
    RT_PROF_REF,   /* the operator's reference kernel */
    RT_PROF_OWN,   /* a kernel of the plan's backend (rt_own_kernel) */
    RT_PROF_CHAIN, /* a chain, counted under its first node's operator */
    RT_PROF_KINDS
} rt_prof_kind;

#include "rt/plan.h"

/* LECTOR_HOST_PROFILE's level: 0 off, 1 sums, 2 also every step. */
int rt_host_profiling(void);

/* Step s of plan p (n nodes of its order from s: a chain's length, else
 * 1), run by a kernel of kind `kind`, took ms: added to the sums of its
 * first node's operator (thread-safe). */
void rt_host_profile_node(const rt_plan *p, int s, int n, rt_prof_kind kind, double ms);

#endif
