/*
 * test_corpus.c - every file of tests/image/corpus decodes to the outcome
 * listed in EXPECTED.tsv, with a message that names the file; every file in
 * the folder is listed. Then an allocation-failure sweep: the test re-runs
 * itself with LECTOR_FAIL_ALLOC=N (util.c fault injection) and checks that
 * decoding valid files returns OK or LECTOR_ERR_OUT_OF_MEMORY, never
 * crashes (and, under ASan, never leaks).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"
#include "image/image.h"

static const char *status_name(lector_status s)
{
    switch (s) {
    case LECTOR_OK: return "OK";
    case LECTOR_ERR_IMAGE: return "IMAGE";
    case LECTOR_ERR_LIMIT: return "LIMIT";
    case LECTOR_ERR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case LECTOR_ERR_IO: return "IO";
    default: return "OTHER";
    }
}

static int listed(char names[][128], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return 1;
    return 0;
}

static void test_corpus(void **state)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/EXPECTED.tsv", LECTOR_CORPUS_DIR);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char names[512][128];
    int n = 0, failures = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = 0;
        char *expect = tab + 1;
        expect[strcspn(expect, "\r\n")] = 0;
        assert_true(n < 512);
        if (strlen(line) >= sizeof names[0]) fail_msg("name too long: %s", line);
        memcpy(names[n++], line, strlen(line) + 1);
        snprintf(path, sizeof path, "%s/%s", LECTOR_CORPUS_DIR, line);
        img_pages pages;
        lector_error err;
        memset(&err, 0, sizeof err);
        lector_status st = img_decode_file(path, NULL, &pages, &err);
        char got[64];
        if (st == LECTOR_OK)
            snprintf(got, sizeof got, "OK:%d", pages.count);
        else
            snprintf(got, sizeof got, "%s", status_name(st));
        int ok;
        if (!strcmp(expect, "OK|IMAGE"))
            ok = st == LECTOR_ERR_IMAGE || st == LECTOR_OK;
        else
            ok = !strcmp(expect, got);
        if (st != LECTOR_OK) {
            if (!strstr(err.message, line) || err.code != st) ok = 0;
        } else {
            for (int i = 0; i < pages.count; i++)
                if (pages.pages[i].width <= 0 || pages.pages[i].height <= 0 || !pages.pages[i].data) ok = 0;
        }
        printf("%-34s %-9s %-13s %s\n", line, expect, got, st == LECTOR_OK ? "" : err.message);
        if (!ok) {
            printf("  ^ FAILED\n");
            failures++;
        }
        img_pages_free(&pages);
    }
    fclose(f);
    assert_true(n >= 30);
    DIR *d = opendir(LECTOR_CORPUS_DIR);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "EXPECTED.tsv")) continue;
        if (!listed(names, n, e->d_name)) {
            printf("%s is not listed in EXPECTED.tsv\n", e->d_name);
            failures++;
        }
    }
    closedir(d);
    assert_int_equal(failures, 0);
}

/* Child mode: decode the valid corpus files with allocation N failing. */
static const char *valid_files[] = {"valid_64x48.jpg",
                                    "cmyk.jpg",
                                    "rgba16.png",
                                    "valid_32x32.tif",
                                    "valid_16x16.webp",
                                    "valid_1x2.bmp",
                                    "palette_index_out_of_range.bmp"};

static int child_decode(void)
{
    for (size_t i = 0; i < sizeof valid_files / sizeof valid_files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", LECTOR_CORPUS_DIR, valid_files[i]);
        img_pages pages;
        lector_error err;
        lector_status st = img_decode_file(path, NULL, &pages, &err);
        if (st != LECTOR_OK && st != LECTOR_ERR_OUT_OF_MEMORY) {
            fprintf(stderr, "%s: unexpected %d: %s\n", valid_files[i], st, err.message);
            return 3;
        }
        if (st == LECTOR_OK) {
            img_image r;
            float q[4][2] = {{0, 0}, {5, 0}, {5, 3}, {0, 3}};
            if (img_resize(&pages.pages[0], 9, 7, &r, &err) == LECTOR_OK) img_release(&r);
            if (img_warp_quad(&pages.pages[0], q, 5, 3, &r, &err) == LECTOR_OK) img_release(&r);
        }
        img_pages_free(&pages);
    }
    return 0;
}

static char self_path[1024];

static void test_alloc_failures(void **state)
{
    for (int n = 1; n <= 40; n++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            char v[16];
            snprintf(v, sizeof v, "%d", n);
            setenv("LECTOR_FAIL_ALLOC", v, 1);
            execl(self_path, self_path, "--child", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail_msg("LECTOR_FAIL_ALLOC=%d: child %s %d", n, WIFEXITED(status) ? "exited" : "killed by signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--child")) return child_decode();
    ssize_t k = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (k > 0) self_path[k] = 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
