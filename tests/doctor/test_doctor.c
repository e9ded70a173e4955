/* test_doctor.c - tests of the doctor (src/doctor) without a GPU.
 *
 * Usage: test_doctor GROUP FIXTURES_DIR
 *   scenarios  the doctor against the gpuenv fixture trees and the NVML /
 *              libcuda shims: each asserts status, layer, check and cause
 *              code (the broken-environment matrix with its sources and the
 *              loader oracle is tests/doctor/matrix.c)
 *   nvcc       --inspect against nvcc-built objects (exit 77 = skipped)
 *   explain    the knowledge base, table-driven, and its generic rules
 *   oom        every allocation of a run failed in turn: a clean NULL, no
 *              crash, no leak (under ASan)
 * Fixtures are built by tests/gpuenv/make_fixtures.sh (ctest fixture
 * gpuenv_fx). */
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

#include "fixtures.h"
#include "gpuenv/gpuenv.h"
#include "lector_doctor.h"
#include "util/util.h"

/* ------------------------------------------------------------ helpers */

/* Run the doctor and return the parsed JSON. */
static cJSON *doctor(const lector_doctor_options *opt)
{
    char *s = lector_doctor_json(opt);
    assert_non_null(s);
    cJSON *j = cJSON_Parse(s);
    lector_doctor_string_free(s);
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
    /* the scenarios are written for a Lector built for CUDA 13, whatever this build has */
    s->opt.lector_cuda_major = 13;
    if (root) {
        s->root = gpuenv_asprintf("%s/roots/%s", fx_dir, root);
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
    s->opt.ld_preload = "";
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

/* Assert the root cause (JSON root_cause / first_failing_layer). */
static void expect_root(const cJSON *j, const char *layer, const char *code, const char *fix_part)
{
    expect_first_failing(j, layer, code);
    const cJSON *rc = cJSON_GetObjectItem(j, "root_cause");
    assert_true(cJSON_IsObject(rc));
    const char *fix = cJSON_GetObjectItem(rc, "fix")->valuestring;
    if (fix_part && !strstr(fix, fix_part)) {
        print_error("root cause fix \"%s\" lacks \"%s\"\n", fix, fix_part);
        fail();
    }
}

/* =========================================================== scenarios */

/* What a scenario asserts of one check: its status and cause code. */
typedef struct check_want {
    const char *layer, *id, *status, *code;
} check_want;

/* What a scenario asserts of the root cause; `fix_part` must stand in its fix. */
typedef struct root_cause_want {
    const char *layer, *code, *fix_part;
} root_cause_want;

/* A scenario judged by its JSON verdict alone: the environment (as
 * scen_init takes it; a NULL shim is "-", a NULL mode "ok"), then what the
 * verdict must say. A NULL `status` or `root_cause.layer` is not asserted. */
typedef struct json_scenario {
    const char *name;
    const char *root, *nvml, *cuda, *mode;
    const char *ld_library_path;      /* NULL: the empty one of scen_init */
    const char *cuda_visible_devices; /* NULL: unset */
    int dlopen_in_root;               /* dlopen the root's libraries, as a real run does */
    check_want checks[4];             /* up to the first without a layer */
    const char *status;
    root_cause_want root_cause;
} json_scenario;

static const json_scenario json_scenarios[] = {
    {.name = "s02_kernel_module_missing",
     .root = "nokmod",
     .checks = {{"L1", "l1.driver", "fail", "kernel_module_not_loaded"}},
     .status = "broken",
     .root_cause = {"L1", "kernel_module_not_loaded", "modprobe nvidia"}},
    {.name = "s03_device_nodes_missing",
     .root = "nodev",
     .checks = {{"L1", "l1.devnodes", "fail", "device_nodes_missing"}},
     .status = "broken"},
    {.name = "s04_uvm_missing",
     .root = "nouvm",
     .checks = {{"L1", "l1.devnodes", "fail", "nvidia_uvm_missing"}},
     .root_cause = {"L1", "nvidia_uvm_missing", "modprobe nvidia_uvm"}},
    {.name = "s05_nvml_no_device",
     .root = "good",
     .nvml = "shim",
     .mode = "nodevice",
     .checks = {{"L2", "l2.gpus", "fail", "no_gpu"}},
     .status = "broken"},
    /* R470 (CUDA 11.4) under CUDA 13 libraries: Lector's cuBLAS 13 cannot run */
    {.name = "s06_old_driver_new_runtime",
     .root = "old",
     .nvml = "shim",
     .cuda = "shim",
     .mode = "old",
     .checks = {{"L2", "l2.nvml", "ok", ""},
                {"L3", "l3.device0", "ok", ""},
                {"L4", "l4.cudart", "fail", "runtime_newer_than_driver"},
                {"L4", "l4.cublas", "fail", "runtime_newer_than_driver"}},
     .status = "broken",
     .root_cause = {"L4", "runtime_newer_than_driver", "nvidia-driver-580"}},
    {.name = "s07_old_driver_from_proc_only",
     .root = "old",
     .checks = {{"L4", "l4.cudart", "fail", "runtime_newer_than_driver"}}},
    {.name = "s08_nvml_init_mismatch",
     .root = "good",
     .nvml = "shim",
     .mode = "mismatch",
     .checks = {{"L2", "l2.nvml", "fail", "nvml_version_mismatch"}},
     .root_cause = {"L2", "nvml_version_mismatch", "reboot"}},
    /* /proc says 580.65.06, NVML says 580.95.05 */
    {.name = "s09_nvml_vs_kernel_version",
     .root = "kver",
     .nvml = "shim",
     .checks = {{"L2", "l2.nvml", "fail", "nvml_version_mismatch"}}},
    {.name = "s10_nvml_missing",
     .root = "good",
     .nvml = "missing",
     .checks = {{"L2", "l2.nvml", "fail", "nvml_missing"}}},
    {.name = "s11_nvml_driver_not_loaded",
     .root = "good",
     .nvml = "shim",
     .mode = "nodriver",
     .checks = {{"L2", "l2.nvml", "fail", "kernel_module_not_loaded"}}},
    {.name = "s12_cuinit_999",
     .root = "good",
     .nvml = "shim",
     .cuda = "shim",
     .mode = "e999",
     .checks = {{"L3", "l3.cuinit", "fail", "cuda_unknown_uvm"}},
     .status = "broken",
     .root_cause = {"L3", "cuda_unknown_uvm", "modprobe nvidia_uvm"}},
    {.name = "s13_cuinit_no_device",
     .root = "good",
     .cuda = "shim",
     .mode = "nodevice",
     .checks = {{"L3", "l3.cuinit", "fail", "no_device"}}},
    {.name = "s14_cuda_visible_devices_empty",
     .root = "good",
     .nvml = "shim",
     .cuda = "shim",
     .cuda_visible_devices = "",
     .checks = {{"L0", "l0.cuda_visible_devices", "warn", "cuda_visible_devices_empty"},
                {"L3", "l3.cuinit", "fail", "cuda_visible_devices_hides_all"}},
     .root_cause = {"L3", "cuda_visible_devices_hides_all", "export CUDA_VISIBLE_DEVICES=0"}},
    {.name = "s15_cuinit_not_initialized",
     .root = "good",
     .cuda = "shim",
     .mode = "e3",
     .checks = {{"L3", "l3.cuinit", "fail", "cuda_init_failed"}}},
    {.name = "s16_forward_compat_804",
     .root = "good",
     .cuda = "shim",
     .mode = "e804",
     .checks = {{"L3", "l3.cuinit", "fail", "forward_compat_unsupported"}}},
    {.name = "s17_stub_libcuda_by_path",
     .root = "good",
     .cuda = "stubpath",
     .checks = {{"L3", "l3.libcuda", "fail", "libcuda_stub"}}},
    {.name = "s18_stub_libcuda_by_error",
     .root = "good",
     .cuda = "shim",
     .mode = "stub",
     .checks = {{"L3", "l3.libcuda", "fail", "libcuda_stub"}}},
    {.name = "s19_alloc_fails",
     .root = "good",
     .cuda = "shim",
     .mode = "oom",
     .checks = {{"L3", "l3.device0", "fail", "out_of_memory"}},
     .status = "broken"},
    {.name = "s21_libcuda_missing",
     .root = "good",
     .cuda = "missing",
     .checks = {{"L3", "l3.libcuda", "fail", "libcuda_missing"}}},
    /* a partial cuDNN 9.1 copy on LD_LIBRARY_PATH before a full 9.14; the
       verdict is broken as Lector would preload that partial copy too */
    {.name = "s22_cudnn_split_mixed",
     .root = "split",
     .ld_library_path = "/opt/fake",
     .checks = {{"L4", "l4.cudnn_split", "fail", "cudnn_split_mixed"}},
     .status = "broken",
     .root_cause = {"L4", "cudnn_split_mixed", "unset LD_LIBRARY_PATH"}},
    /* degraded: Paddle asks for libcudnn.so; Lector preloads libcudnn.so.9 */
    {.name = "s23_cudnn_unversioned_missing",
     .root = "nounv",
     .checks = {{"L4", "l4.cudnn_unversioned", "fail", "cudnn_unversioned_missing"}},
     .status = "degraded"},
    /* cuDNN reports it was built for CUDA 12.8; the runtime is 13: a
       warning, a CUDA 12 program beside it is fine */
    {.name = "s24_cudnn_other_cuda_major",
     .root = "cudnn12",
     .dlopen_in_root = 1,
     .checks = {{"L4", "l4.cudnn", "warn", "cudnn_other_cuda_major"}}},
    /* cuDNN for CUDA 12 on an R470 (CUDA 11.4) driver */
    {.name = "s25_cudnn_newer_than_driver",
     .root = "cudnn12old",
     .dlopen_in_root = 1,
     .checks = {{"L4", "l4.cudnn", "fail", "cudnn_cuda_newer_than_driver"}}},
    {.name = "s26_cublas_mixed", .root = "cublasmix", .checks = {{"L4", "l4.cublas_pair", "fail", "cublas_mixed"}}},
    {.name = "s27_minor_version_compat",
     .root = "minor",
     .checks = {{"L4", "l4.cudart", "warn", "minor_version_compat"}}},
    {.name = "s28_libraries_missing",
     .root = "empty",
     .checks = {{"L4", "l4.cudart", "fail", "library_missing"},
                {"L4", "l4.cudnn", "fail", "library_missing"},
                {"L5", "l5.libraries", "fail", "lector_libraries_missing"}},
     .status = "broken",
     .root_cause = {"L4", "library_missing", "pip install"}},
    /* a pip wheel is found by the framework that ships it: no warning */
    {.name = "s29_wheel_outside_search_path", .root = "wheel", .checks = {{"L4", "l4.cudnn", "ok", ""}}},
    {.name = "s31_image_without_proc",
     .root = "image",
     .checks = {{"L1", "l1.driver", "skip", ""}, {"L3", "l3.libcuda", "skip", ""}, {"L5", "l5.module", "skip", ""}}},
};

static void run_json_scenario(void **state)
{
    const json_scenario *js = *state;
    scen s;
    scen_init(&s, js->root, js->nvml, js->cuda, js->mode);
    if (js->ld_library_path) s.opt.ld_library_path = js->ld_library_path;
    if (js->dlopen_in_root) {
        s.opt.no_dlopen_libs = 0;
        s.opt.dlopen_in_root = 1;
    }
    if (js->cuda_visible_devices) {
        s.opt.cuda_visible_devices = js->cuda_visible_devices;
        setenv("CUDA_VISIBLE_DEVICES", js->cuda_visible_devices, 1); /* the shim reads it as libcuda does */
    }
    cJSON *j = doctor(&s.opt);
    if (js->cuda_visible_devices) unsetenv("CUDA_VISIBLE_DEVICES");
    for (const check_want *c = js->checks; c < js->checks + LECTOR_ARRAY_LEN(js->checks) && c->layer; c++)
        expect(j, c->layer, c->id, c->status, c->code);
    if (js->status) expect_status(j, js->status);
    if (js->root_cause.layer) expect_root(j, js->root_cause.layer, js->root_cause.code, js->root_cause.fix_part);
    cJSON_Delete(j);
    scen_free(&s);
}

SCENARIO(s01_ready_tree)
{
    scen s;
    scen_init(&s, "good", "-", "-", NULL);
    lector_doctor_report *r = lector_doctor_run(&s.opt);
    assert_non_null(r);
    assert_int_equal(lector_doctor_report_status(r), LECTOR_DOCTOR_READY);
    char *text = lector_doctor_report_text(r);
    assert_non_null(strstr(text, "GPU ready: driver 580.95.05 (CUDA 13.0), CUDA runtime 13.0.96"));
    lector_doctor_string_free(text);
    lector_doctor_report_free(r);
    cJSON *j = doctor(&s.opt);
    expect_status(j, "ready");
    expect(j, "L1", "l1.driver", "ok", "");
    expect(j, "L2", "l2.nvml", "ok", "");
    expect(j, "L3", "l3.libcuda", "ok", "");
    expect(j, "L4", "l4.cudnn", "ok", "");
    expect(j, "L4", "l4.cudnn_split", "ok", "");
    expect(j, "L5", "l5.libraries", "ok", "");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "root_cause")));
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
    lector_doctor_string_free(text);
    lector_doctor_report_free(r);
    cJSON *j = doctor(&s.opt);
    expect(j, "L2", "l2.gpu0", "ok", "");
    expect(j, "L3", "l3.device0", "ok", "");
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

SCENARIO(s32_inspect_rpath_chain)
{
    scen s;
    scen_init(&s, NULL, "missing", "missing", NULL);
    char *f1 = fx("inspect/chain/app_rpath.so"), *f2 = fx("inspect/chain/app_runpath.so"),
         *f3 = fx("inspect/cu11/app_cu11.so");
    const char *files[] = {f1, f2, f3};
    s.opt.inspect = files;
    s.opt.n_inspect = 3;
    cJSON *j = doctor(&s.opt);
    /* RPATH is inherited: libleaf.so is found through the app's RPATH */
    expect(j, "inspect", "inspect.0.deps", "ok", "");
    /* RUNPATH is not: libmid.so cannot find libleaf.so */
    expect(j, "inspect", "inspect.1.deps", "fail", "missing_dependency");
    expect(j, "inspect", "inspect.2.deps", "fail", "missing_dependency");
    const cJSON *c = find_check(j, "inspect", "inspect.2.deps");
    assert_non_null(strstr(cJSON_GetObjectItem(c, "fix")->valuestring, "pip install nvidia-cublas-cu11"));
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

SCENARIO(s33_cuda11_healthy)
{
    scen s; /* CUDA 11's runtime is libcudart.so.11.0: found, no false warning */
    scen_init(&s, "cuda11", "-", "-", NULL);
    cJSON *j = doctor(&s.opt);
    const cJSON *c = find_check(j, "L4", "l4.cudart");
    assert_non_null(c);
    assert_string_equal(cJSON_GetObjectItem(c, "status")->valuestring, "ok");
    assert_non_null(strstr(cJSON_GetObjectItem(c, "finding")->valuestring, "libcudart.so.11.0"));
    cJSON_Delete(j);
    scen_free(&s);
}

/* ================================================================ nvcc */

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

/* ============================================================= explain */

static void t_explain_table(void **state)
{
    (void)state;
    assert_true(lector_explain_known_count() >= 80);
    lector_explain_match e;
    for (size_t i = 0; lector_explain_known(i, &e) == 0; i++) {
        /* every message names the public thread (or Lector's own file) it comes from */
        assert_true(strlen(e.source) > 8);
        lector_explain_match m[5];
        size_t n = lector_explain_match_text(e.message, m, 5);
        if (n == 0 || strcmp(m[0].id, e.id) != 0) {
            print_error("message of %s matched %s first\n", e.id, n ? m[0].id : "nothing");
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

/* The README's own examples, read from README.md: the backticked messages
 * of the paragraph that introduces `lector explain`. */
static void t_explain_readme(void **state)
{
    (void)state;
    char *readme = gpuenv_root_read_text(NULL, LECTOR_SOURCE_DIR "/README.md", 1 << 20);
    assert_non_null(readme);
    const char *p = strstr(readme, "`lector explain` matches a pasted error message (");
    assert_non_null(p);
    const char *end = strstr(p, "…");
    assert_non_null(end);
    p = strchr(p + 1, '`'); /* past "`lector explain`" */
    int n_examples = 0;
    while ((p = strchr(p + 1, '`')) && p < end) {
        const char *q = strchr(p + 1, '`');
        assert_non_null(q);
        char text[256];
        snprintf(text, sizeof text, "%.*s", (int)(q - p - 1), p + 1);
        /* the README wraps lines: collapse the break */
        for (char *c = text; *c; c++)
            if (*c == '\n') *c = ' ';
        lector_explain_match m[5];
        size_t n = lector_explain_match_text(text, m, 5);
        if (!n) {
            print_error("README example not explained: %s\n", text);
            fail();
        }
        assert_true(strlen(m[0].cause) > 20 && strlen(m[0].fix) > 5 && m[0].layer[0] == 'L');
        n_examples++;
        p = q;
    }
    assert_int_equal(n_examples, 3);
    lector__free(readme);
}

/* Messages in no table: the family rules give layer, cause and check. */
static void t_explain_generic(void **state)
{
    (void)state;
    static const struct {
        const char *text, *layer, *check;
    } g[] = {
        {"ImportError: libnvrtc-builtins.so.13.1: cannot open shared object file: No such file or directory", "L4",
         "l4.nvrtc"},
        {"OSError: /opt/venv/lib/libcublasLt.so.14: undefined symbol: cublasLtSomethingNew_v3", "L4", "l4.cublasLt"},
        {"libcudnn_engines_tensor_ir.so.9: wrong ELF class: ELFCLASS32", "L4", "l4.cudnn_split"},
        {"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: version `NVML_42' not found", "L2", "l2.nvml"},
        {"/usr/lib/x86_64-linux-gnu/libcuda.so.1: file too short", "L3", "l3.libcuda"},
        {"/srv/models/libcudart.so.12: invalid ELF header", "L4", "l4.cudart"},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        lector_explain_match m[5];
        size_t n = lector_explain_match_text(g[i].text, m, 5);
        if (!n || strncmp(m[0].layer, g[i].layer, 2) != 0 || strcmp(m[0].check, g[i].check) != 0) {
            print_error("%s -> %s / %s\n", g[i].text, n ? m[0].layer : "-", n ? m[0].check : "-");
            fail();
        }
    }
}

/* ================================================================= oom */

/* Fail the 1st, 2nd, ... allocation of a whole run: every run returns NULL
 * or exactly the report of a run without failures (no silent gaps), never
 * crashes; under ASan the leak checker sees every path. */
static void t_oom_sweep(void **state)
{
    (void)state;
    scen s;
    scen_init(&s, "split", "-", "-", NULL);
    s.opt.ld_library_path = "/opt/fake";
    char *ref = lector_doctor_json(&s.opt);
    assert_non_null(ref);
    int done = 0;
    long n, nulls = 0;
    /* every one of the first allocations, then a sample (a full sweep takes minutes) */
    for (n = 1; n < 1000000 && !done; n += n < 300 ? 1 : 1 + n / 25) {
        lector__fail_alloc_after(n);
        lector_doctor_report *r = lector_doctor_run(&s.opt);
        char *js = r ? lector_doctor_report_json(r) : NULL;
        char *tx = r ? lector_doctor_report_text(r) : NULL;
        lector__fail_alloc_after(0);
        if (!r || !js || !tx) {
            nulls++;
        } else {
            if (strcmp(js, ref) != 0) {
                print_error("allocation %ld failed, yet the run returned a different report\n", n);
                fail();
            }
            done = 1; /* the n-th allocation was never reached: the sweep is complete */
        }
        lector_doctor_string_free(js);
        lector_doctor_string_free(tx);
        lector_doctor_report_free(r);
    }
    print_message("%ld failed runs, all clean, before a run needed fewer than %ld allocations\n", nulls, n);
    assert_true(done && nulls > 100);
    lector_doctor_string_free(ref);
    scen_free(&s);
}

/* ================================================================ main */

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s GROUP FIXTURES_DIR\n", argv[0]);
        return 2;
    }
    const char *group = argv[1];
    fx_dir = argv[2];
    unsetenv("LECTOR_DOCTOR_NVML");
    unsetenv("LECTOR_DOCTOR_LIBCUDA");
    unsetenv("CUDA_VISIBLE_DEVICES");
    if (strcmp(group, "scenarios") == 0) {
        static const struct CMUnitTest own_code[] = {
            cmocka_unit_test(s01_ready_tree),         cmocka_unit_test(s20_all_good_with_shims),
            cmocka_unit_test(s30_cache_only_library), cmocka_unit_test(s32_inspect_rpath_chain),
            cmocka_unit_test(s33_cuda11_healthy),
        };
        struct CMUnitTest t[LECTOR_ARRAY_LEN(own_code) + LECTOR_ARRAY_LEN(json_scenarios)];
        memcpy(t, own_code, sizeof own_code);
        for (size_t i = 0; i < LECTOR_ARRAY_LEN(json_scenarios); i++)
            t[LECTOR_ARRAY_LEN(own_code) + i] = (struct CMUnitTest){.name = json_scenarios[i].name,
                                                                    .test_func = run_json_scenario,
                                                                    .initial_state = (void *)&json_scenarios[i]};
        return cmocka_run_group_tests_name("doctor_scenarios", t, NULL, NULL);
    }
    if (strcmp(group, "nvcc") == 0) {
        if (!fx_have_nvcc()) return 77;
        const struct CMUnitTest t[] = {cmocka_unit_test(t_nvcc_inspect_arch)};
        return cmocka_run_group_tests_name("doctor_nvcc", t, NULL, NULL);
    }
    if (strcmp(group, "explain") == 0) {
        const struct CMUnitTest t[] = {cmocka_unit_test(t_explain_table),
                                       cmocka_unit_test(t_explain_ranked_and_unknown),
                                       cmocka_unit_test(t_explain_readme), cmocka_unit_test(t_explain_generic)};
        return cmocka_run_group_tests_name("doctor_explain", t, NULL, NULL);
    }
    if (strcmp(group, "oom") == 0) {
        const struct CMUnitTest t[] = {cmocka_unit_test(t_oom_sweep)};
        return cmocka_run_group_tests_name("doctor_oom", t, NULL, NULL);
    }
    fprintf(stderr, "unknown group %s\n", group);
    return 2;
}
