/* node_compare.h - comparison of node-test outputs (see node_compare.c). */
#ifndef LECTOR_TEST_NODE_COMPARE_H
#define LECTOR_TEST_NODE_COMPARE_H

#include "lector_rt.h"

#define RTOL 1e-3
#define ATOL 1e-4

/* 0 when `got` equals `want` within tolerance; else prints why (test case
 * `name`, output `k`) and returns 1. */
int node_compare(const char *name, int k, const lector_tensor *got, const lector_tensor *want);

#endif
