/* test_gpuenv.c - tests of src/gpuenv without a GPU.
 *
 * Usage: test_gpuenv GROUP FIXTURES_DIR [EXTRA]
 *   unit       ELF, ld.so.cache, ld.so search order, versions, tables
 *   scenarios  the doctor against fixture trees and NVML/libcuda shims:
 *              each asserts the layer and the cause code it reports
 *   nvcc       .nv_fatbin of objects built by nvcc (exit 77 = skipped)
 *   cublaslt   .nv_fatbin of the real libcublasLt.so.13 (EXTRA = its path)
 *   explain    the knowledge base, table-driven
 *   nvml_sample gpuenv_nvml_sample with NVML = EXTRA, the shim's "throttled"
 *              mode (.../legacy/...: the old-driver build; absent when EXTRA
 *              does not exist): one group per process, as NVML is loaded
 *              once per process
 * Fixtures are built by make_fixtures.sh (a ctest fixture). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "gpuenv/gpuenv.h"
#include "lector_doctor.h"

static const char *FX;    /* fixtures dir */
static const char *EXTRA; /* group-specific argument */

static char *fx(const char *rel)
{
    char *p = gpuenv_asprintf("%s/%s", FX, rel);
    assert_non_null(p);
    return p;
}

/* ------------------------------------------------------------ helpers */

/* Run the doctor and return the parsed JSON. */
static cJSON *doctor(const lector_doctor_options *opt)
{
    char *s = lector_doctor_json(opt);
    assert_non_null(s);
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    return j;
}

static const cJSON *find_check(const cJSON *j, const char *layer, const char *id)
{
    const cJSON *layers = cJSON_GetObjectItem(j, "layers"), *l;
    cJSON_ArrayForEach(l, layers)
    {
        if (strcmp(cJSON_GetObjectItem(l, "id")->valuestring, layer) != 0) continue;
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(l, "checks")) if (strcmp(cJSON_GetObjectItem(c, "id")->valuestring,
                                                                           id) == 0) return c;
    }
    return NULL;
}

/* Assert that check `id` in `layer` has status `st` and cause code `code`. */
static void expect(const cJSON *j, const char *layer, const char *id, const char *st, const char *code)
{
    const cJSON *c = find_check(j, layer, id);
    if (!c) {
        char *s = cJSON_Print(j);
        print_error("check %s/%s not found in:\n%s\n", layer, id, s);
        free(s);
        fail();
    }
    const char *got_st = cJSON_GetObjectItem(c, "status")->valuestring;
    const char *got_code = cJSON_GetObjectItem(c, "code")->valuestring;
    if (strcmp(got_st, st) || strcmp(got_code, code)) {
        print_error("%s/%s: want %s/%s, got %s/%s (%s)\n", layer, id, st, code, got_st, got_code,
                    cJSON_GetObjectItem(c, "finding")->valuestring);
        fail();
    }
}

static void expect_status(const cJSON *j, const char *status)
{
    assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, status);
}

static void expect_first_failing(const cJSON *j, const char *layer, const char *code)
{
    const cJSON *f = cJSON_GetObjectItem(j, "first_failing_layer");
    assert_true(cJSON_IsString(f));
    assert_string_equal(f->valuestring, layer);
    assert_string_equal(cJSON_GetObjectItem(j, "cause_code")->valuestring, code);
}

typedef struct scen {
    lector_doctor_options opt;
    char *root, *nvml, *cuda, *llp;
} scen;

/* A scenario: a fixture root (or NULL), shim modes for NVML/libcuda
 * ("-" = do not load, "missing" = a path that does not exist). */
static void scen_init(scen *s, const char *root, const char *nvml, const char *cuda, const char *mode)
{
    memset(s, 0, sizeof *s);
    lector_doctor_default_options(&s->opt);
    if (root) {
        s->root = gpuenv_asprintf("%s/roots/%s", FX, root);
        s->opt.root = s->root;
    }
    if (nvml && strcmp(nvml, "-")) {
        s->nvml = strcmp(nvml, "missing") ? fx("shims/libnvidia-ml.so.1") : fx("shims/none/libnvidia-ml.so.1");
        s->opt.nvml_path = s->nvml;
    }
    if (cuda && strcmp(cuda, "-")) {
        s->cuda = strcmp(cuda, "missing") == 0    ? fx("shims/none/libcuda.so.1")
                  : strcmp(cuda, "stubpath") == 0 ? fx("stubs/libcuda.so.1")
                                                  : fx("shims/libcuda.so.1");
        s->opt.libcuda_path = s->cuda;
    }
    setenv("GPUENV_SHIM_MODE", mode ? mode : "ok", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    s->opt.ld_library_path = "";
    s->opt.no_dlopen_libs = 1;
}

static void scen_free(scen *s)
{
    free(s->root);
    free(s->nvml);
    free(s->cuda);
    free(s->llp);
}

#define SCENARIO(name) static void name(void **state)

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
    const char *v = gpuenv_ldcache_lookup(&c, "libmid.so", GPUENV_LDCACHE_X86_64);
    assert_non_null(v);
    assert_string_equal(v, libmid);
    assert_null(gpuenv_ldcache_lookup(&c, "libdoesnotexist.so.1", 0));
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
        const char *v = gpuenv_ldcache_lookup(&c, line, GPUENV_LDCACHE_X86_64);
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

static char *resolve_for(const char *obj_rel, const char *name, const char *llp, gpuenv_via *via)
{
    gpuenv_ctx ctx;
    assert_int_equal(gpuenv_ctx_init(&ctx, NULL, llp), 0);
    char *path = fx(obj_rel);
    gpuenv_obj o;
    assert_int_equal(gpuenv_obj_open(&ctx, path, &o), 0);
    char *r = gpuenv_resolve(&ctx, name, &o, via);
    gpuenv_obj_close(&o);
    gpuenv_ctx_free(&ctx);
    free(path);
    return r;
}

/* DT_RPATH beats LD_LIBRARY_PATH; LD_LIBRARY_PATH beats DT_RUNPATH. */
static void t_resolve_order(void **state)
{
    (void)state;
    char *L = fx("inspect/order/L"), *P = fx("inspect/order/P");
    gpuenv_via via;
    char *r = resolve_for("inspect/order/app_ord_rpath.so", "libord.so", L, &via);
    assert_non_null(r);
    assert_int_equal(via, GPUENV_VIA_RPATH);
    assert_true(strncmp(r, P, strlen(P)) == 0);
    free(r);
    r = resolve_for("inspect/order/app_ord_runpath.so", "libord.so", L, &via);
    assert_non_null(r);
    assert_int_equal(via, GPUENV_VIA_LD_LIBRARY_PATH);
    assert_true(strncmp(r, L, strlen(L)) == 0);
    free(r);
    /* without LD_LIBRARY_PATH, RUNPATH finds P */
    r = resolve_for("inspect/order/app_ord_runpath.so", "libord.so", "", &via);
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
    char *r = resolve_for("inspect/tok/app_tok.so", "libtok.so", "", &via);
    assert_non_null(r);
    assert_int_equal(via, GPUENV_VIA_RPATH);
    assert_non_null(strstr(r, "/tok/x86_64/libtok.so"));
    free(r);
}

/* A loader with DT_RUNPATH contributes no DT_RPATH and inherits none. */
static void t_resolve_runpath_hides_rpath(void **state)
{
    (void)state;
    gpuenv_ctx ctx;
    assert_int_equal(gpuenv_ctx_init(&ctx, NULL, ""), 0);
    char *dir = fx("inspect/order/P");
    gpuenv_obj parent = {0}, child = {0};
    parent.path = fx("inspect/order/app.so");
    parent.elf.elfclass = 2;
    parent.elf.machine = 62;
    parent.elf.rpath = dir; /* parent's RPATH would find libord.so */
    child.path = fx("inspect/order/child.so");
    child.elf.elfclass = 2;
    child.elf.machine = 62;
    child.loader = &parent;
    gpuenv_via via;
    char *r = gpuenv_resolve(&ctx, "libord.so", &child, &via);
    assert_non_null(r); /* inherited through the loader chain */
    assert_int_equal(via, GPUENV_VIA_RPATH);
    free(r);
    child.elf.runpath = (char *)"/nonexistent";
    r = gpuenv_resolve(&ctx, "libord.so", &child, &via);
    /* with a RUNPATH on the asker, the parent's RPATH is not searched; the
       cache may still find the other copy registered there */
    if (r) assert_int_not_equal(via, GPUENV_VIA_RPATH);
    free(r);
    free(parent.path);
    free(child.path);
    free(dir);
    gpuenv_ctx_free(&ctx);
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
    gpuenv_libinfo li;
    assert_int_equal(gpuenv_resolve_library(root, "", "libcudnn.so.9", &li), 0);
    assert_string_equal(li.version, "9.14.0");
    assert_int_equal(gpuenv_find_best(root, "cublasLt", 13, &li), 0);
    assert_string_equal(li.real, "/usr/lib/x86_64-linux-gnu/libcublasLt.so.13.1.0.3");
    assert_int_equal(gpuenv_find_best(root, "cublasLt", 11, &li), -1);
    free(root);
    /* the wheel is outside every search path, but the loader helper finds it */
    root = fx("roots/wheel");
    assert_int_equal(gpuenv_resolve_library(root, "", "libcudnn.so.9", &li), -1);
    assert_int_equal(gpuenv_find_best(root, "cudnn", 13, &li), 0);
    assert_non_null(strstr(li.path, "site-packages/nvidia/cudnn/lib/libcudnn.so.9"));
    free(root);
}

static void t_versions_tables(void **state)
{
    (void)state;
    assert_true(gpuenv_vercmp("580.95.05", "580.65.06") > 0);
    assert_true(gpuenv_vercmp("470.82.01", "525.60.13") < 0);
    assert_int_equal(gpuenv_vercmp("9.14.0", "9.14.0"), 0);
    char *v = gpuenv_soname_version("/x/libcudnn.so.9.14.0");
    assert_string_equal(v, "9.14.0");
    free(v);
    assert_int_equal(gpuenv_cuda_for_driver("470.82.01"), 11040);
    assert_int_equal(gpuenv_cuda_for_driver("580.95.05"), 13000);
    assert_int_equal(gpuenv_cuda_for_driver("525.60.13"), 12000);
    assert_string_equal(gpuenv_min_driver_for_cuda(12, 8), "570.26");
    assert_string_equal(gpuenv_cc_family(9, 0), "Hopper");
}

/* =========================================================== scenarios */

SCENARIO(s01_ready_tree)
{
    scen s;
    scen_init(&s, "good", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect_status(j, "ready");
    expect(j, "L1", "l1.driver", "ok", "");
    expect(j, "L4", "l4.cudnn", "ok", "");
    expect(j, "L4", "l4.cudnn_split", "ok", "");
    expect(j, "L2", "l2.nvml", "skip", "");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s02_kernel_module_missing)
{
    scen s;
    scen_init(&s, "nokmod", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L1", "l1.driver", "fail", "kernel_module_not_loaded");
    expect_status(j, "broken");
    expect_first_failing(j, "L1", "kernel_module_not_loaded");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s03_device_nodes_missing)
{
    scen s;
    scen_init(&s, "nodev", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L1", "l1.devnodes", "warn", "device_nodes_missing");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s04_uvm_missing)
{
    scen s;
    scen_init(&s, "nouvm", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L1", "l1.uvm", "fail", "nvidia_uvm_missing");
    expect_first_failing(j, "L1", "nvidia_uvm_missing");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s05_nvml_no_device)
{
    scen s;
    scen_init(&s, "good", "shim", "-", "nodevice");
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.gpus", "fail", "no_gpu");
    expect_status(j, "broken");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s06_old_driver_new_runtime)
{
    scen s;
    scen_init(&s, "old", "shim", "shim", "old");
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.nvml", "ok", "");
    expect(j, "L3", "l3.device0", "ok", "");
    expect(j, "L4", "l4.cudart", "fail", "runtime_newer_than_driver");
    expect(j, "L4", "l4.cublas", "fail", "runtime_newer_than_driver");
    expect_status(j, "degraded");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s07_old_driver_from_proc_only)
{
    scen s;
    scen_init(&s, "old", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudart", "fail", "runtime_newer_than_driver");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s08_nvml_init_mismatch)
{
    scen s;
    scen_init(&s, "good", "shim", "-", "mismatch");
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.nvml", "fail", "nvml_version_mismatch");
    expect_first_failing(j, "L2", "nvml_version_mismatch");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s09_nvml_vs_kernel_version)
{
    scen s; /* /proc says 580.65.06, NVML says 580.95.05 */
    scen_init(&s, "kver", "shim", "-", "ok");
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.nvml", "fail", "nvml_version_mismatch");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s10_nvml_missing)
{
    scen s;
    scen_init(&s, "good", "missing", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.nvml", "fail", "nvml_missing");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s11_nvml_driver_not_loaded)
{
    scen s;
    scen_init(&s, "good", "shim", "-", "nodriver");
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.nvml", "fail", "kernel_module_not_loaded");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s12_cuinit_999)
{
    scen s;
    scen_init(&s, "good", "shim", "shim", "e999");
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.cuinit", "fail", "cuda_unknown_uvm");
    expect_status(j, "broken");
    expect_first_failing(j, "L3", "cuda_unknown_uvm");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s13_cuinit_no_device)
{
    scen s;
    scen_init(&s, "good", "-", "shim", "nodevice");
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.cuinit", "fail", "no_device");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s14_cuda_visible_devices_empty)
{
    scen s;
    scen_init(&s, "good", "-", "shim", "nodevice");
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    cJSON *j = doctor(&s.opt);
    unsetenv("CUDA_VISIBLE_DEVICES");
    expect(j, "L0", "l0.cuda_visible_devices", "warn", "cuda_visible_devices_empty");
    expect(j, "L3", "l3.cuinit", "fail", "cuda_visible_devices_hides_all");
    expect_first_failing(j, "L3", "cuda_visible_devices_hides_all");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s15_cuinit_not_initialized)
{
    scen s;
    scen_init(&s, "good", "-", "shim", "e3");
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.cuinit", "fail", "cuda_init_failed");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s16_forward_compat_804)
{
    scen s;
    scen_init(&s, "good", "-", "shim", "e804");
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.cuinit", "fail", "forward_compat_unsupported");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s17_stub_libcuda_by_path)
{
    scen s;
    scen_init(&s, "good", "-", "stubpath", "ok");
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.libcuda", "fail", "libcuda_stub");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s18_stub_libcuda_by_error)
{
    scen s;
    scen_init(&s, "good", "-", "shim", "stub");
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.cuinit", "fail", "libcuda_stub");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s19_alloc_fails)
{
    scen s;
    scen_init(&s, "good", "-", "shim", "oom");
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.device0", "fail", "out_of_memory");
    expect_status(j, "broken");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s20_all_good_with_shims)
{
    scen s;
    scen_init(&s, "good", "shim", "shim", "ok");
    lector_doctor_report *r = lector_doctor_run(&s.opt);
    assert_non_null(r);
    assert_int_equal(lector_doctor_report_status(r), LECTOR_DOCTOR_READY);
    assert_true(lector_doctor_report_gpu_usable(r));
    char *text = lector_doctor_report_text(r);
    assert_non_null(text);
    assert_non_null(strstr(text, "GPU ready: NVIDIA H200 (sm_90), driver 580.95.05 (CUDA 13.0)"));
    free(text);
    lector_doctor_report_free(r);
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.gpu0", "ok", "");
    expect(j, "L3", "l3.device0", "ok", "");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s21_libcuda_missing)
{
    scen s;
    scen_init(&s, "good", "-", "missing", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L3", "l3.libcuda", "fail", "libcuda_missing");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s22_cudnn_split_mixed)
{
    scen s;
    scen_init(&s, "split", "-", "-", NULL);
    s.opt.ld_library_path = "/opt/fake";
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudnn", "warn", "ld_library_path_shadows");
    expect(j, "L4", "l4.cudnn_split", "fail", "cudnn_split_mixed");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s23_cudnn_unversioned_missing)
{
    scen s;
    scen_init(&s, "nounv", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudnn_unversioned", "warn", "cudnn_unversioned_missing");
    expect_status(j, "ready"); /* a warning, not a failure */
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s24_cudnn_other_cuda_major)
{
    scen s; /* cuDNN reports it was built for CUDA 12.8; runtime is 13 */
    scen_init(&s, "cudnn12", "-", "-", NULL);
    s.opt.no_dlopen_libs = 0;
    s.opt.dlopen_in_root = 1;
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudnn", "fail", "cudnn_other_cuda_major");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s25_cudnn_newer_than_driver)
{
    scen s; /* cuDNN for CUDA 12 on an R470 (CUDA 11.4) driver */
    scen_init(&s, "cudnn12old", "-", "-", NULL);
    s.opt.no_dlopen_libs = 0;
    s.opt.dlopen_in_root = 1;
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudnn", "fail", "cudnn_cuda_newer_than_driver");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s26_cublas_mixed)
{
    scen s;
    scen_init(&s, "cublasmix", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cublas_pair", "fail", "cublas_mixed");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s27_minor_version_compat)
{
    scen s;
    scen_init(&s, "minor", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudart", "warn", "minor_version_compat");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s28_libraries_missing)
{
    scen s;
    scen_init(&s, "empty", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudart", "warn", "library_missing");
    expect(j, "L4", "l4.cudnn", "warn", "library_missing");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s29_wheel_outside_search_path)
{
    scen s;
    scen_init(&s, "wheel", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L4", "l4.cudnn", "warn", "library_not_in_search_path");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s30_cache_only_library)
{
    scen s;
    scen_init(&s, "cacheonly", "-", "-", NULL);
    char *cache = fx("roots/cacheonly/etc/ld.so.cache");
    int have_cache = access(cache, R_OK) == 0;
    free(cache);
    cJSON *j = doctor(&s.opt);
    if (have_cache) {
        const cJSON *c = find_check(j, "L4", "l4.cudnn");
        assert_non_null(c);
        assert_non_null(strstr(cJSON_GetObjectItem(c, "finding")->valuestring, "/opt/cudnn/lib/libcudnn.so.9.14.0"));
        assert_non_null(strstr(cJSON_GetObjectItem(c, "finding")->valuestring, "ld.so.cache"));
    } else {
        print_message("note: ldconfig -r unavailable (no chroot rights); cache part skipped\n");
    }
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s31_image_without_proc)
{
    scen s;
    scen_init(&s, "image", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    expect(j, "L1", "l1.driver", "skip", "");
    expect(j, "L5", "l5.module", "skip", "");
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s32_inspect_rpath_chain)
{
    scen s;
    scen_init(&s, NULL, "-", "-", NULL);
    s.opt.libcuda_path = NULL;
    char *f1 = fx("inspect/chain/app_rpath.so"), *f2 = fx("inspect/chain/app_runpath.so"),
         *f3 = fx("inspect/cu11/app_cu11.so");
    const char *files[] = {f1, f2, f3};
    s.opt.inspect = files;
    s.opt.n_inspect = 3;
    setenv("LECTOR_DOCTOR_NVML", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("LECTOR_DOCTOR_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    cJSON *j = doctor(&s.opt);
    unsetenv("LECTOR_DOCTOR_NVML");
    unsetenv("LECTOR_DOCTOR_LIBCUDA");
    /* RPATH is inherited: libleaf.so is found through the app's RPATH */
    expect(j, "inspect", "inspect.0.deps", "ok", "");
    /* RUNPATH is not: libmid.so cannot find libleaf.so */
    expect(j, "inspect", "inspect.1.deps", "fail", "missing_dependency");
    expect(j, "inspect", "inspect.2.deps", "fail", "missing_dependency");
    const cJSON *ins = cJSON_GetObjectItem(j, "inspect");
    assert_int_equal(cJSON_GetArraySize(ins), 3);
    const cJSON *miss = cJSON_GetObjectItem(cJSON_GetArrayItem(ins, 1), "missing");
    assert_string_equal(cJSON_GetArrayItem(miss, 0)->valuestring, "libleaf.so");
    miss = cJSON_GetObjectItem(cJSON_GetArrayItem(ins, 2), "missing");
    assert_string_equal(cJSON_GetArrayItem(miss, 0)->valuestring, "libcublasLt.so.11");
    cJSON_Delete(j);
    free(f1);
    free(f2);
    free(f3);
    scen_free(&s);
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

/* An sm_80-only library on an H200 (sm_90): "no kernel image" predicted;
 * PTX for compute_80 or SASS for sm_90 is fine. */
static void t_nvcc_inspect_arch(void **state)
{
    (void)state;
    const char *libs[] = {"nvcc/libk_sm80.so", "nvcc/libk_ptx80.so", "nvcc/libk_sm90.so", "nvcc/libapp_dep80.so"};
    const char *want[] = {"fail", "ok", "ok", "warn"};
    const char *code[] = {"no_kernel_image", "", "", "dependency_no_kernel_image"};
    for (int i = 0; i < 4; i++) {
        scen s;
        scen_init(&s, NULL, "shim", "shim", "ok");
        char *f = fx(libs[i]);
        const char *files[] = {f};
        s.opt.inspect = files;
        s.opt.n_inspect = 1;
        cJSON *j = doctor(&s.opt);
        expect(j, "inspect", "inspect.0.archs", want[i], code[i]);
        if (i == 0) expect_status(j, "broken");
        cJSON_Delete(j);
        free(f);
        scen_free(&s);
    }
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

/* ============================================================= explain */

static void t_explain_table(void **state)
{
    (void)state;
    assert_true(lector_explain_known_count() >= 30);
    for (size_t i = 0; i < gpuenv_explain_table_len; i++) {
        const gpuenv_explain_entry *e = &gpuenv_explain_table[i];
        assert_non_null(e->source);
        assert_true(strlen(e->source) > 3);
        lector_explain_match m[5];
        size_t n = lector_explain_match_text(e->message, m, 5);
        if (n == 0 || strcmp(m[0].id, e->id) != 0) {
            print_error("message of %s matched %s first\n", e->id, n ? m[0].id : "nothing");
            fail();
        }
        assert_int_equal(m[0].score, 100);
    }
}

static void t_explain_ranked_and_unknown(void **state)
{
    (void)state;
    lector_explain_match m[5];
    /* a real log with noise around the line, wrapped over two lines */
    const char *log = "W1129 12:00:01 dynamic_loader.cc:307] The third-party dynamic library (libcudnn.so)\n"
                      "   that Paddle depends on is not configured correctly. (error code is libcudnn.so: "
                      "cannot open shared object file: No such file or directory)\n  Suggestions: ...";
    size_t n = lector_explain_match_text(log, m, 5);
    assert_true(n >= 2);
    assert_string_equal(m[0].id, "paddle-libcudnn-unversioned");
    assert_string_equal(m[0].check, "l4.cudnn_unversioned");
    for (size_t i = 1; i < n; i++) assert_true(m[i].score <= m[i - 1].score);
    assert_int_equal(lector_explain_match_text("the quick brown fox", m, 5), 0);
    /* case-insensitive */
    n = lector_explain_match_text("FAILED TO INITIALIZE NVML: DRIVER/LIBRARY VERSION MISMATCH", m, 5);
    assert_true(n >= 1);
    assert_string_equal(m[0].id, "nvml-version-mismatch");
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
    FX = argv[2];
    EXTRA = argc > 3 ? argv[3] : NULL;
    /* Environment that would leak into scenarios. */
    unsetenv("LECTOR_DOCTOR_NVML");
    unsetenv("LECTOR_DOCTOR_LIBCUDA");
    unsetenv("CUDA_VISIBLE_DEVICES");
    if (strcmp(group, "unit") == 0) {
        const struct CMUnitTest t[] = {
            cmocka_unit_test(t_elf_self),
            cmocka_unit_test(t_elf_runpath),
            cmocka_unit_test(t_ldcache_formats),
            cmocka_unit_test(t_ldcache_matches_ldconfig),
            cmocka_unit_test(t_resolve_order),
            cmocka_unit_test(t_resolve_tokens),
            cmocka_unit_test(t_resolve_runpath_hides_rpath),
            cmocka_unit_test(t_root_realpath),
            cmocka_unit_test(t_versions_tables),
        };
        return cmocka_run_group_tests_name("gpuenv_unit", t, NULL, NULL);
    }
    if (strcmp(group, "scenarios") == 0) {
        const struct CMUnitTest t[] = {
            cmocka_unit_test(s01_ready_tree),
            cmocka_unit_test(s02_kernel_module_missing),
            cmocka_unit_test(s03_device_nodes_missing),
            cmocka_unit_test(s04_uvm_missing),
            cmocka_unit_test(s05_nvml_no_device),
            cmocka_unit_test(s06_old_driver_new_runtime),
            cmocka_unit_test(s07_old_driver_from_proc_only),
            cmocka_unit_test(s08_nvml_init_mismatch),
            cmocka_unit_test(s09_nvml_vs_kernel_version),
            cmocka_unit_test(s10_nvml_missing),
            cmocka_unit_test(s11_nvml_driver_not_loaded),
            cmocka_unit_test(s12_cuinit_999),
            cmocka_unit_test(s13_cuinit_no_device),
            cmocka_unit_test(s14_cuda_visible_devices_empty),
            cmocka_unit_test(s15_cuinit_not_initialized),
            cmocka_unit_test(s16_forward_compat_804),
            cmocka_unit_test(s17_stub_libcuda_by_path),
            cmocka_unit_test(s18_stub_libcuda_by_error),
            cmocka_unit_test(s19_alloc_fails),
            cmocka_unit_test(s20_all_good_with_shims),
            cmocka_unit_test(s21_libcuda_missing),
            cmocka_unit_test(s22_cudnn_split_mixed),
            cmocka_unit_test(s23_cudnn_unversioned_missing),
            cmocka_unit_test(s24_cudnn_other_cuda_major),
            cmocka_unit_test(s25_cudnn_newer_than_driver),
            cmocka_unit_test(s26_cublas_mixed),
            cmocka_unit_test(s27_minor_version_compat),
            cmocka_unit_test(s28_libraries_missing),
            cmocka_unit_test(s29_wheel_outside_search_path),
            cmocka_unit_test(s30_cache_only_library),
            cmocka_unit_test(s31_image_without_proc),
            cmocka_unit_test(s32_inspect_rpath_chain),
        };
        return cmocka_run_group_tests_name("gpuenv_scenarios", t, NULL, NULL);
    }
    if (strcmp(group, "nvcc") == 0) {
        char *ok = fx("nvcc/ok");
        int have = access(ok, F_OK) == 0;
        free(ok);
        if (!have) {
            printf("skipped: nvcc (/usr/local/cuda/bin/nvcc) not found, no fatbin fixtures\n");
            return 77;
        }
        const struct CMUnitTest t[] = {cmocka_unit_test(t_nvcc_fatbin), cmocka_unit_test(t_nvcc_inspect_arch)};
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
    if (strcmp(group, "explain") == 0) {
        const struct CMUnitTest t[] = {cmocka_unit_test(t_explain_table),
                                       cmocka_unit_test(t_explain_ranked_and_unknown)};
        return cmocka_run_group_tests_name("gpuenv_explain", t, NULL, NULL);
    }
    if (strcmp(group, "nvml_sample") == 0 && EXTRA) {
        const struct CMUnitTest t[] = {cmocka_unit_test(t_nvml_sample), cmocka_unit_test(t_clock_reason_names)};
        return cmocka_run_group_tests_name("gpuenv_nvml_sample", t, NULL, NULL);
    }
    fprintf(stderr, "unknown group %s\n", group);
    return 2;
}
