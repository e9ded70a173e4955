/* test_gpuenv.c - tests of the discovery layer (src/gpuenv) without a GPU.
 *
 * Usage: test_gpuenv GROUP FIXTURES_DIR [EXTRA]
 *   unit        ELF, ld.so.cache (checked against `ldconfig -p`), ld.so.conf,
 *               the loader's search order, root-relative links, versions, tables
 *   nvcc        .nv_fatbin of objects built by nvcc (exit 77 = skipped)
 *   cublaslt    .nv_fatbin of the real libcublasLt.so.13 (EXTRA = its path)
 *   nvml_sample gpuenv_nvml_sample with NVML = EXTRA, the shim's "throttled"
 *               mode (.../legacy/...: the old-driver build; absent when EXTRA
 *               does not exist): one group per process, as NVML is loaded
 *               once per process
 * The loader emulation itself is checked case by case against glibc's own
 * loader by tests/doctor (doctor_oracle). Fixtures are built by
 * make_fixtures.sh (a ctest fixture). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures.h"
#include "gpuenv/gpuenv.h"

static const char *EXTRA; /* group-specific argument */

/* ================================================================ unit */

static void t_elf_self(void **state)
{
    (void)state;
    char *p = fx("inspect/chain/app_rpath.so");
    gpuenv_map m;
    assert_int_equal(gpuenv_map_file(p, &m), 0);
    gpuenv_elf e;
    assert_int_equal(gpuenv_elf_parse(m.data, m.size, &e), 0);
    assert_int_equal(e.elfclass, 2);
    assert_int_equal(e.machine, 62);
    assert_string_equal(e.soname, "app_rpath.so");
    assert_string_equal(e.rpath, "$ORIGIN/lib");
    assert_null(e.runpath);
    assert_true(gpuenv_strv_has(&e.needed, "libmid.so"));
    assert_true(e.loads_in_file && e.dyn_in_file);
    gpuenv_elf_free(&e);
    /* truncations of a valid image must never crash or read outside */
    for (size_t n = 0; n < m.size && n < 20000; n += 7) {
        gpuenv_elf t;
        if (gpuenv_elf_parse(m.data, n, &t) == 0) gpuenv_elf_free(&t);
    }
    gpuenv_unmap(&m);
    free(p);
}

static void t_elf_runpath(void **state)
{
    (void)state;
    char *p = fx("inspect/chain/app_runpath.so");
    gpuenv_map m;
    assert_int_equal(gpuenv_map_file(p, &m), 0);
    gpuenv_elf e;
    assert_int_equal(gpuenv_elf_parse(m.data, m.size, &e), 0);
    assert_string_equal(e.runpath, "$ORIGIN/lib");
    assert_null(e.rpath);
    gpuenv_elf_free(&e);
    gpuenv_unmap(&m);
    free(p);
    uint8_t junk[64] = "\177ELF";
    assert_int_not_equal(gpuenv_elf_parse(junk, 3, &e), 0);
}

/* DT_VERNEED / DT_VERDEF as readelf -V shows them for the versioned fixtures. */
static void t_elf_versions(void **state)
{
    (void)state;
    char *dep = fx("inspect/ver/libver.so.1"), *app = fx("inspect/ver/libuses.so");
    gpuenv_map m;
    gpuenv_elf e;
    assert_int_equal(gpuenv_map_file(dep, &m), 0);
    assert_int_equal(gpuenv_elf_parse(m.data, m.size, &e), 0);
    assert_true(gpuenv_strv_has(&e.verdef, "VER_1") && gpuenv_strv_has(&e.verdef, "VER_2"));
    gpuenv_elf_free(&e);
    gpuenv_unmap(&m);
    assert_int_equal(gpuenv_map_file(app, &m), 0);
    assert_int_equal(gpuenv_elf_parse(m.data, m.size, &e), 0);
    assert_true(gpuenv_strv_has(&e.verneed, "libver.so.1\tVER_2"));
    gpuenv_elf_free(&e);
    gpuenv_unmap(&m);
    free(dep);
    free(app);
}

static void check_cache_file(const char *file, int want_old, int want_new)
{
    char *p = fx(file);
    gpuenv_map m;
    assert_int_equal(gpuenv_map_file(p, &m), 0);
    gpuenv_ldcache c;
    assert_int_equal(gpuenv_ldcache_parse(m.data, m.size, &c), 0);
    assert_int_equal(c.has_old, want_old);
    assert_int_equal(c.has_new, want_new);
    char *libmid = fx("inspect/chain/lib/libmid.so");
    const char *v = gpuenv_ldcache_lookup(&c, "libmid.so", NULL);
    assert_non_null(v);
    assert_string_equal(v, libmid);
    assert_null(gpuenv_ldcache_lookup(&c, "libdoesnotexist.so.1", NULL));
    /* every truncation parses or fails cleanly */
    for (size_t n = 0; n < m.size && n < 4096; n += 3) {
        gpuenv_ldcache t;
        if (gpuenv_ldcache_parse(m.data, n, &t) == 0) gpuenv_ldcache_free(&t);
    }
    gpuenv_ldcache_free(&c);
    gpuenv_unmap(&m);
    free(libmid);
    free(p);
}

static void t_ldcache_formats(void **state)
{
    (void)state;
    check_cache_file("cache/new.cache", 0, 1);
    check_cache_file("cache/old.cache", 1, 0);
    check_cache_file("cache/compat.cache", 1, 1);
}

/* Our reader agrees with `ldconfig -p` on every x86-64 entry. */
static void t_ldcache_matches_ldconfig(void **state)
{
    (void)state;
    char *p = fx("cache/new.cache"), *e = fx("cache/new.expected");
    gpuenv_map m;
    assert_int_equal(gpuenv_map_file(p, &m), 0);
    gpuenv_ldcache c;
    assert_int_equal(gpuenv_ldcache_parse(m.data, m.size, &c), 0);
    FILE *f = fopen(e, "r");
    assert_non_null(f);
    char line[4096];
    gpuenv_strv seen = {0};
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        *sp = 0;
        if (gpuenv_strv_has(&seen, line)) continue;
        gpuenv_strv_push(&seen, line);
        const char *v = gpuenv_ldcache_lookup(&c, line, NULL);
        assert_non_null(v);
        assert_string_equal(v, sp + 1);
        n++;
    }
    fclose(f);
    assert_true(n > 5);
    gpuenv_strv_free(&seen);
    gpuenv_ldcache_free(&c);
    gpuenv_unmap(&m);
    free(p);
    free(e);
}

/* include lines with globs, comments, several directories on one line */
static void t_ldconf(void **state)
{
    (void)state;
    char *root = fx("roots/conf");
    gpuenv_ldconf c;
    assert_int_equal(gpuenv_ldconf_read(root, &c), 0);
    const char *want[] = {"/opt/first", "/opt/a", "/opt/b", "/opt/cuda/lib64", "/opt/last"};
    assert_int_equal(c.dirs.n, 5);
    for (size_t i = 0; i < 5; i++) assert_string_equal(c.dirs.v[i], want[i]);
    assert_string_equal(c.files.v[3], "/etc/ld.so.conf.d/cuda.conf");
    gpuenv_ldconf_free(&c);
    free(root);
}

static char *find_for(const char *obj_rel, const char *name, const char *llp, gpuenv_via *via)
{
    gpuenv_ldso L;
    assert_int_equal(gpuenv_ldso_init(&L, NULL, llp, ""), 0);
    char *path = fx(obj_rel);
    gpuenv_obj o;
    assert_int_equal(gpuenv_obj_open(&L, path, &o), 0);
    gpuenv_find f;
    assert_int_equal(gpuenv_ldso_find(&L, name, &o, NULL, 0, &f), 0);
    char *r = f.outcome == GPUENV_FOUND ? gpuenv_strdup(f.path) : NULL;
    *via = f.via;
    gpuenv_find_free(&f);
    gpuenv_obj_close(&o);
    gpuenv_ldso_free(&L);
    free(path);
    return r;
}

/* DT_RPATH beats LD_LIBRARY_PATH; LD_LIBRARY_PATH beats DT_RUNPATH. */
static void t_resolve_order(void **state)
{
    (void)state;
    char *L = fx("inspect/order/L"), *P = fx("inspect/order/P");
    gpuenv_via via;
    char *r = find_for("inspect/order/app_ord_rpath.so", "libord.so", L, &via);
    assert_non_null(r);
    assert_int_equal(via, GPUENV_VIA_RPATH);
    assert_true(strncmp(r, P, strlen(P)) == 0);
    free(r);
    r = find_for("inspect/order/app_ord_runpath.so", "libord.so", L, &via);
    assert_non_null(r);
    assert_int_equal(via, GPUENV_VIA_LD_LIBRARY_PATH);
    assert_true(strncmp(r, L, strlen(L)) == 0);
    free(r);
    r = find_for("inspect/order/app_ord_runpath.so", "libord.so", "", &via);
    assert_non_null(r);
    assert_int_equal(via, GPUENV_VIA_RUNPATH);
    free(r);
    free(L);
    free(P);
}

/* $ORIGIN and $PLATFORM expansion. */
static void t_resolve_tokens(void **state)
{
    (void)state;
    gpuenv_via via;
    char *r = find_for("inspect/tok/app_tok.so", "libtok.so", "", &via);
    assert_non_null(r);
    assert_int_equal(via, GPUENV_VIA_RPATH);
    assert_non_null(strstr(r, "/tok/x86_64/libtok.so"));
    free(r);
}

static void t_root_realpath(void **state)
{
    (void)state;
    char *root = fx("roots/good");
    /* the soname link resolves inside the tree, never to the host */
    char *r = gpuenv_root_realpath(root, "/usr/lib/x86_64-linux-gnu/libcudnn.so");
    assert_non_null(r);
    assert_string_equal(r, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0");
    free(r);
    /* the kernel's errors: a loop, a missing file, a file used as a directory */
    char *c = NULL;
    assert_int_equal(gpuenv_root_resolve(root, "/loop/a", &c), ELOOP);
    assert_int_equal(gpuenv_root_resolve(root, "/no/such/file", &c), ENOENT);
    assert_int_equal(gpuenv_root_resolve(root, "/etc/os-release/x", &c), ENOTDIR);
    gpuenv_libinfo li;
    assert_int_equal(gpuenv_find_best(root, "cublasLt", 13, &li), 0);
    assert_string_equal(li.real, "/usr/lib/x86_64-linux-gnu/libcublasLt.so.13.1.0.3");
    assert_int_equal(gpuenv_find_best(root, "cublasLt", 11, &li), -1);
    free(root);
    /* a wheel is outside every search path, but the module loader's finder finds it */
    root = fx("roots/wheel");
    assert_int_equal(gpuenv_find_best(root, "cudnn", 13, &li), 0);
    assert_non_null(strstr(li.path, "site-packages/nvidia/cudnn/lib/libcudnn.so.9"));
    free(root);
    /* CUDA 11's runtime SONAME is libcudart.so.11.0, not .so.11 */
    root = fx("roots/cuda11");
    assert_int_equal(gpuenv_find_best(root, "cudart", 11, &li), 0);
    assert_string_equal(li.path, "/usr/local/cuda-11.8/lib64/libcudart.so.11.0");
    free(root);
}

static void t_versions_tables(void **state)
{
    (void)state;
    assert_true(gpuenv_vercmp("580.95.05", "580.65.06") > 0);
    assert_true(gpuenv_vercmp("470.82.01", "525.60.13") < 0);
    assert_int_equal(gpuenv_vercmp("9.14.0", "9.14.0"), 0);
    assert_true(gpuenv_ver_same("13.1.0", "13.1.0.3"));
    assert_false(gpuenv_ver_same("9.1.0", "9.14.0"));
    char *v = gpuenv_soname_version("/x/libcudnn.so.9.14.0");
    assert_string_equal(v, "9.14.0");
    free(v);
    assert_int_equal(gpuenv_cuda_for_driver("470.82.01"), 11040);
    assert_int_equal(gpuenv_cuda_for_driver("580.95.05"), 13000);
    assert_int_equal(gpuenv_cuda_for_driver("525.60.13"), 12000);
    assert_string_equal(gpuenv_min_driver_for_cuda(12, 8), "570.26");
    assert_string_equal(gpuenv_cc_family(9, 0), "Hopper");
    assert_int_equal(gpuenv_min_cc_for_cuda(13), 75);
    char *q = gpuenv_shell_quote("/opt/it's here");
    assert_string_equal(q, "'/opt/it'\\''s here'");
    free(q);
}

/* ================================================================ nvcc */

static void t_nvcc_fatbin(void **state)
{
    (void)state;
    char *p = fx("nvcc/multi.o");
    gpuenv_map m;
    assert_int_equal(gpuenv_map_file(p, &m), 0);
    gpuenv_elf e;
    assert_int_equal(gpuenv_elf_parse(m.data, m.size, &e), 0);
    assert_true(e.fatbin_size > 0);
    gpuenv_fatbin fb;
    assert_int_equal(gpuenv_fatbin_scan(e.fatbin, e.fatbin_size, &fb), 0);
    assert_true(fb.sass[75] && fb.sass[90] && fb.ptx[90]);
    int others = 0;
    for (int a = 0; a < 256; a++) others += (fb.sass[a] && a != 75 && a != 90) + (fb.ptx[a] && a != 90);
    assert_int_equal(others, 0);
    assert_true(gpuenv_fatbin_runs_on(&fb, 9, 0));  /* sm_90 SASS */
    assert_true(gpuenv_fatbin_runs_on(&fb, 7, 5));  /* sm_75 SASS */
    assert_true(gpuenv_fatbin_runs_on(&fb, 10, 0)); /* compute_90 PTX JIT */
    assert_false(gpuenv_fatbin_runs_on(&fb, 8, 0)); /* nothing for Ampere */
    /* every truncation is handled */
    for (size_t n = 0; n < e.fatbin_size; n += 5) {
        gpuenv_fatbin t;
        gpuenv_fatbin_scan(e.fatbin, n, &t);
    }
    gpuenv_elf_free(&e);
    gpuenv_unmap(&m);
    free(p);
}

static void t_cublaslt_fatbin(void **state)
{
    (void)state;
    gpuenv_map m;
    assert_int_equal(gpuenv_map_file(EXTRA, &m), 0);
    gpuenv_elf e;
    assert_int_equal(gpuenv_elf_parse(m.data, m.size, &e), 0);
    assert_string_equal(e.soname, "libcublasLt.so.13");
    assert_true(e.fatbin_size > 0);
    gpuenv_fatbin fb;
    assert_int_equal(gpuenv_fatbin_scan(e.fatbin, e.fatbin_size, &fb), 0);
    print_message("libcublasLt.so.13: %zu containers, %zu entries\n", fb.containers, fb.entries);
    assert_true(fb.containers > 1000); /* 2,775 in the knowledge file's copy */
    assert_false(fb.truncated);
    /* CUDA 13 supports Turing through Blackwell */
    assert_true(fb.sass[75] && fb.sass[80] && fb.sass[90] && fb.sass[100] && fb.sass[120]);
    assert_false(fb.sass[70] || fb.sass[60] || fb.sass[50]);
    assert_true(gpuenv_fatbin_runs_on(&fb, 9, 0));
    assert_false(gpuenv_fatbin_runs_on(&fb, 6, 1)); /* Pascal was dropped in 13.0 */
    gpuenv_elf_free(&e);
    gpuenv_unmap(&m);
}

/* ========================================================= nvml_sample */

static void t_nvml_sample(void **state)
{
    (void)state;
    setenv("LECTOR_DOCTOR_NVML", EXTRA, 1);
    setenv("GPUENV_SHIM_MODE", "throttled", 1);
    gpuenv_gpu_sample s[4];
    if (access(EXTRA, F_OK) != 0) {
        assert_int_equal(gpuenv_nvml_sample(s, 4), -1);
        assert_int_equal(gpuenv_nvml_sample(s, 4), -1);
        return;
    }
    int legacy = strstr(EXTRA, "/legacy/") != NULL;
    assert_int_equal(gpuenv_nvml_sample(s, 4), 2);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(s[i].index, i);
        assert_string_equal(s[i].name, "NVIDIA H200");
        assert_true(s[i].mem_ok && s[i].temp_ok && s[i].util_ok && s[i].reasons_ok);
        assert_int_equal(s[i].mem_total, 143771ULL << 20);
        /* _v2 leaves the driver's 300 MiB reserve out; a legacy NVML has only v1 */
        assert_int_equal(s[i].mem_used, (512ULL << (20 + i)) + (legacy ? 300ULL << 20 : 0));
        assert_int_equal(s[i].temp_c, 35 + i);
        assert_int_equal(s[i].util_gpu, 42);
        assert_int_equal(s[i].util_mem, 17);
    }
    /* GPU 1: HW slowdown + HW thermal slowdown, also through the legacy
     * nvmlDeviceGetCurrentClocksThrottleReasons */
    assert_int_equal(s[0].reasons, 0x1);
    assert_int_equal(s[1].reasons, 0x48);
    assert_int_equal(gpuenv_nvml_sample(s, 1), 1); /* max is honoured */
    setenv("GPUENV_SHIM_MODE", "ok", 1);           /* loaded once, asked every time */
    assert_int_equal(gpuenv_nvml_sample(s, 4), 1);
    unsetenv("GPUENV_SHIM_MODE");
}

static void t_clock_reason_names(void **state)
{
    (void)state;
    assert_int_equal(gpuenv_clock_reasons_len, 9);
    for (size_t i = 0; i < gpuenv_clock_reasons_len; i++) assert_int_equal(gpuenv_clock_reasons[i].bit, 1ULL << i);
    assert_string_equal(gpuenv_clock_reasons[3].name, "hw_slowdown");
    assert_string_equal(gpuenv_clock_reasons[6].name, "hw_thermal_slowdown");
}

/* ================================================================ main */

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s GROUP FIXTURES_DIR [EXTRA]\n", argv[0]);
        return 2;
    }
    const char *group = argv[1];
    fx_dir = argv[2];
    EXTRA = argc > 3 ? argv[3] : NULL;
    unsetenv("LECTOR_DOCTOR_NVML");
    if (strcmp(group, "unit") == 0) {
        const struct CMUnitTest t[] = {
            cmocka_unit_test(t_elf_self),
            cmocka_unit_test(t_elf_runpath),
            cmocka_unit_test(t_elf_versions),
            cmocka_unit_test(t_ldcache_formats),
            cmocka_unit_test(t_ldcache_matches_ldconfig),
            cmocka_unit_test(t_ldconf),
            cmocka_unit_test(t_resolve_order),
            cmocka_unit_test(t_resolve_tokens),
            cmocka_unit_test(t_root_realpath),
            cmocka_unit_test(t_versions_tables),
        };
        return cmocka_run_group_tests_name("gpuenv_unit", t, NULL, NULL);
    }
    if (strcmp(group, "nvcc") == 0) {
        if (!fx_have_nvcc()) return 77;
        const struct CMUnitTest t[] = {cmocka_unit_test(t_nvcc_fatbin)};
        return cmocka_run_group_tests_name("gpuenv_nvcc", t, NULL, NULL);
    }
    if (strcmp(group, "cublaslt") == 0) {
        if (!EXTRA || access(EXTRA, R_OK) != 0) {
            printf("skipped: libcublasLt.so.13 not found\n");
            return 77;
        }
        const struct CMUnitTest t[] = {cmocka_unit_test(t_cublaslt_fatbin)};
        return cmocka_run_group_tests_name("gpuenv_cublaslt", t, NULL, NULL);
    }
    if (strcmp(group, "nvml_sample") == 0 && EXTRA) {
        const struct CMUnitTest t[] = {cmocka_unit_test(t_nvml_sample), cmocka_unit_test(t_clock_reason_names)};
        return cmocka_run_group_tests_name("gpuenv_nvml_sample", t, NULL, NULL);
    }
    fprintf(stderr, "unknown group %s\n", group);
    return 2;
}
