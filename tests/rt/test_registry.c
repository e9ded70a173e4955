/*
 * The backend registry and the module loader: device strings as the public
 * parser takes them apart, the backends a plain link of lector_rt gets (no
 * linker flags), and each branch of the module loader against the real
 * dynamic loader with fixture modules (fake_module.c) built by the test.
 * Usage: test_registry DIR_OF_FIXTURE_MODULES
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../soft_check.h"
#include "lector_rt.h"
#include "rt/backend.h"
#include "rt/module.h"

static void parse_ok(const char *s, lector_device dev, const char *backend, int index)
{
    lector_device_spec spec;
    lector_error err = {0};
    lector_status st = lector_device_parse(s, &spec, &err);
    CHECK(st == LECTOR_OK, "'%s': %s", s ? s : "(null)", err.message);
    if (st) return;
    CHECK(spec.device == dev && !strcmp(spec.backend, backend) && spec.index == index, "'%s' -> %d %s %d", s,
          spec.device, spec.backend, spec.index);
}

static void parse_bad(const char *s, const char *words)
{
    lector_device_spec spec;
    lector_error err = {0};
    lector_status st = lector_device_parse(s, &spec, &err);
    CHECK(st == LECTOR_ERR_INVALID_ARGUMENT, "'%s' accepted (%d)", s, st);
    CHECK(strstr(err.message, words) != NULL, "'%s': message '%s' lacks '%s'", s, err.message, words);
}

static void test_parse(void)
{
    parse_ok(NULL, LECTOR_DEVICE_CPU, "cpu", 0);
    parse_ok("cpu", LECTOR_DEVICE_CPU, "cpu", 0);
    parse_ok("auto", LECTOR_DEVICE_AUTO, "auto", 0);
    parse_ok("ref", LECTOR_DEVICE_CPU, "ref", 0);
    parse_ok("onednn", LECTOR_DEVICE_CPU, "onednn", 0);
    parse_ok("cuda", LECTOR_DEVICE_CUDA, "cuda", 0);
    parse_ok("cuda:0", LECTOR_DEVICE_CUDA, "cuda", 0);
    parse_ok("cuda:7", LECTOR_DEVICE_CUDA, "cuda", 7);
    parse_ok("cuda:1023", LECTOR_DEVICE_CUDA, "cuda", 1023);
    parse_bad("cuda:", "bad device 'cuda:'");
    parse_bad("cuda:x", "expected cuda or cuda:N");
    parse_bad("cuda:-1", "bad device");
    parse_bad("cuda:+1", "bad device");
    parse_bad("cuda:1024", "bad device");
    parse_bad("cuda:1x", "bad device");
    parse_bad("ref:0", "bad device 'ref:0'");
    parse_bad("cudax", "unknown device 'cudax'");
    parse_bad("", "unknown device ''");
    parse_bad("gpu", "ref, cuda[:N]"); /* the message lists what this build registers */
    CHECK(lector_device_parse("cpu", NULL, NULL) == LECTOR_ERR_INVALID_ARGUMENT, "NULL out accepted");
}

/* What a program linking lector_rt gets, with no link option of its own. */
static void test_builtin(void)
{
    const rt_backend_iface *be = NULL;
    lector_error err = {0};
    CHECK(rt_backend_find("cpu", &be, NULL, &err) == LECTOR_OK && be && !strcmp(be->name, "onednn"), "cpu is %s (%s)",
          be ? be->name : "none", err.message);
    CHECK(rt_backend_find(NULL, &be, NULL, &err) == LECTOR_OK && be && !strcmp(be->name, "onednn"), "NULL is %s",
          be ? be->name : "none");
    CHECK(rt_backend_find("ref", &be, NULL, &err) == LECTOR_OK && be && !strcmp(be->name, "ref"), "ref is %s",
          be ? be->name : "none");
    CHECK(rt_backend_find("onednn", &be, NULL, &err) == LECTOR_OK && be && be->device.name == NULL &&
              be->run_images == NULL,
          "onednn: a host backend has no device entries");
    int index = -1;
    CHECK(rt_backend_find("cuda:3x", &be, &index, &err) == LECTOR_ERR_INVALID_ARGUMENT && !be, "cuda:3x accepted");
}

static char fixture[PATH_MAX];
static int find_fixture(char *path, size_t len)
{
    snprintf(path, len, "%s", fixture);
    return 0;
}
static int find_nothing(char *path, size_t len)
{
    snprintf(path, len, "/nonexistent/libfake.so");
    return -2;
}

static const rt_module_state *load_variant(const char *dir, const char *file, rt_module_desc d)
{
    static rt_module_state states[16];
    static int n;
    snprintf(fixture, sizeof fixture, "%s/%s", dir, file);
    rt_module_state *st = &states[n++];
    pthread_mutex_init(&st->lock, NULL);
    return rt_module_load(&d, -1, st);
}

static void test_modules(const char *dir)
{
    const rt_module_desc base = {.backend = "fake",
                                 .title = "FAKE",
                                 .find = find_fixture,
                                 .not_built = "this build has no FAKE backend",
                                 .missing_suffix = " (or elsewhere)",
                                 .no_driver = "no FAKE driver",
                                 .major = 99,
                                 .needs_hint = "FAKE needs libquux 99"};
    const rt_module_state *st = load_variant(dir, "libfake-good.so", base);
    CHECK(st->iface && !strcmp(st->iface->name, "fake") && st->score == 7, "good module: %s", st->why);

    rt_module_desc d = base;
    d.find = NULL;
    st = load_variant(dir, "libfake-good.so", d);
    CHECK(!st->iface && !strcmp(st->why, "this build has no FAKE backend"), "not built: %s", st->why);

    d = base;
    d.find = find_nothing;
    st = load_variant(dir, "libfake-good.so", d);
    CHECK(!st->iface && !strcmp(st->why, "the FAKE module is missing: no /nonexistent/libfake.so (or elsewhere)"),
          "missing: %s", st->why);

    d = base;
    d.driver = "libfake-driver-that-does-not-exist.so.1";
    st = load_variant(dir, "libfake-good.so", d);
    static const char driver_why[] = "no FAKE driver: libfake-driver-that-does-not-exist.so.1 cannot be loaded (";
    CHECK(!st->iface && !strncmp(st->why, driver_why, sizeof driver_why - 1), "driver: %s", st->why);

    static const char *const needs[] = {"lectorfakequux", NULL};
    d = base;
    d.needs = needs;
    st = load_variant(dir, "libfake-good.so", d);
    CHECK(!st->iface && !strcmp(st->why, "liblectorfakequux for FAKE 99 not found (FAKE needs libquux 99)"),
          "needs: %s", st->why);

    static const char *const wants[] = {"lectorfakequux", NULL};
    d = base;
    d.wants = wants; /* optional: its absence is no reason */
    st = load_variant(dir, "libfake-good.so", d);
    CHECK(st->iface && st->score == 7, "wants: %s", st->why);

    st = load_variant(dir, "libfake-not-a-module.so", base);
    CHECK(!st->iface && strstr(st->why, "cannot be loaded") && strstr(st->why, "libfake-not-a-module.so"),
          "not ELF: %s", st->why);

    st = load_variant(dir, "libfake-old.so", base);
    CHECK(!st->iface && strstr(st->why, "was built for another version of Lector (backend API 1, this one"),
          "old API: %s", st->why);

    /* a module built with another list of test controls refuses the host */
    st = load_variant(dir, "libfake-controls.so", base);
    CHECK(!st->iface && strstr(st->why, "was built for another version of Lector (it refused this one's: backend API"),
          "other test controls: %s", st->why);

    st = load_variant(dir, "libfake-noscore.so", base);
    CHECK(!st->iface && strstr(st->why, "has no entry point lector_backend_score: not a Lector FAKE module"),
          "no score: %s", st->why);

    st = load_variant(dir, "libfake-score0.so", base);
    CHECK(st->iface && st->score == 0 && !strcmp(st->why, "fake: no device here"), "score 0: %d %s", st->score,
          st->why);

    /* once per process: a second load returns the first result without loading again */
    rt_module_state once = RT_MODULE_STATE_INIT;
    snprintf(fixture, sizeof fixture, "%s/libfake-good.so", dir);
    rt_module_load(&base, -1, &once);
    snprintf(fixture, sizeof fixture, "%s/libfake-old.so", dir);
    CHECK(rt_module_load(&base, -1, &once)->iface != NULL, "a second load reloaded");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_registry FIXTURE_DIR\n");
        return 2;
    }
    test_parse();
    test_builtin();
    test_modules(argv[1]);
    return soft_check_exit("rt.registry");
}
