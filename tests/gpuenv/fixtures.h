/* fixtures.h - the fixture tree that make_fixtures.sh builds, as the cmocka
 * tests of tests/gpuenv and tests/doctor reach it (both compile fixtures.c). */
#ifndef LECTOR_TESTS_GPUENV_FIXTURES_H
#define LECTOR_TESTS_GPUENV_FIXTURES_H

/* The fixtures dir, from the test's command line; set before any fx(). */
extern const char *fx_dir;

/* fx_dir/rel, malloc'd; fails the running test when out of memory. */
char *fx(const char *rel);

/* Whether make_fixtures.sh found nvcc and built the nvcc/ objects. When not,
 * it says so on stdout, for the caller to exit 77 (ctest's skipped). */
int fx_have_nvcc(void);

#endif
