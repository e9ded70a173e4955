/* node_compare.h - comparison of node-test outputs (see node_compare.c). */
#ifndef LECTOR_TEST_NODE_COMPARE_H
#define LECTOR_TEST_NODE_COMPARE_H

#include "lector_rt.h"

#define RTOL 1e-3
#define ATOL 1e-4

/* 0 when `got` equals `want` within tolerance; else prints why (test case
 * `name`, output `k`) and returns 1. */
int node_compare(const char *name, int k, const lector_tensor *got, const lector_tensor *want);

/* Runs run_case(dir, name) on the cases named after argv[first] (or, with
 * none, on each case of CASES_FILE, those of operator `op` when op is not
 * NULL; a case marked `const` only when with_const), printing "ok"/"FAIL"
 * per case and the totals. Returns the exit status: 0 all passed, 1 some
 * failed, 77 every selected case skipped, 2 none selected or no file. */
int node_run_cases(const char *dir, const char *cases_file, const char *op, int with_const, int argc, char **argv,
                   int first, int (*run_case)(const char *dir, const char *name));

#endif
