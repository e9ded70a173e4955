/* node_compare.h - comparison of node-test outputs (see node_compare.c). */
#ifndef LECTOR_TEST_NODE_COMPARE_H
#define LECTOR_TEST_NODE_COMPARE_H

#include "lector_rt.h"

#define RTOL 1e-3
#define ATOL 1e-4

/* 0 when `got` equals `want` within tolerance; else prints why (test case
 * `name`, output `k`) and returns 1. */
int node_compare(const char *name, int k, const lector_tensor *got, const lector_tensor *want);

/* The main of a node-test program: "DATA_DIR CASES_FILE [--with-const]
 * [--op OP] [CASE...]". Runs run_case(DATA_DIR, name) on each CASE (or,
 * with none, on each case of CASES_FILE, those of operator OP with --op; a
 * case marked `const` only when with_const or --with-const), printing
 * "ok"/"FAIL" per case and the totals. Returns the exit status: 0 all
 * passed, 1 some failed, 77 every selected case skipped, 2 none selected,
 * no file or a bad command line. */
int node_main(int argc, char **argv, int with_const, int (*run_case)(const char *dir, const char *name));

#endif
