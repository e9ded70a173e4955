/*
 * Unit tests of the batch machinery of the CLI (tools/lector/batch/): input
 * listing, shard selection, atomic outputs, progress lines, the summary.
 * Expected values are written by hand from the contracts in the headers, the
 * FNV-1a reference vectors and the real kernel (a child killed with SIGKILL).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "batch/atomic_file.h"
#include "batch/inputs.h"
#include "batch/progress.h"
#include "batch/shard.h"
#include "batch/summary.h"

static int passed, failed;
#define CHECK(c)                                                         \
    do {                                                                 \
        if (c)                                                           \
            passed++;                                                    \
        else {                                                           \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
            failed++;                                                    \
        }                                                                \
    } while (0)

static char root[256];

static void put(const char *rel, const char *content)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(content, f);
    fclose(f);
}

static void dir(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    mkdir(path, 0777);
}

static void link_to(const char *target, const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    if (symlink(target, path)) perror(path);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

static void test_inputs(void)
{
    /* tree/
     *   b.PNG  a.jpg  notes.txt  c.webp/ (a directory named like an image)
     *   sub/x.tiff  sub/y.bmp  sub/loop -> ..  sub/in.jpg -> ../a.jpg
     *   out.png -> ../outside.png   (leads out of the tree)
     *   gone.jpg -> nowhere.jpg     (dangling)          */
    dir("tree");
    dir("tree/sub");
    dir("tree/c.webp");
    put("tree/b.PNG", "x");
    put("tree/a.jpg", "x");
    put("tree/notes.txt", "x");
    put("tree/c.webp/d.jpe", "x");
    put("tree/sub/x.tiff", "x");
    put("tree/sub/y.bmp", "x");
    put("outside.png", "x");
    link_to("..", "tree/sub/loop");
    link_to("../a.jpg", "tree/sub/in.jpg");
    link_to("../outside.png", "tree/out.png");
    link_to("nowhere.jpg", "tree/gone.jpg");

    char tree[300], msg[256];
    snprintf(tree, sizeof tree, "%s/tree", root);
    const char *args[] = {tree};
    batch_inputs in = {0};
    CHECK(batch_inputs_collect(&in, args, 1, NULL, msg, sizeof msg) == 0);
    /* bytewise order per directory; the link loop entered once; the link out
     * skipped and counted; the dangling link kept (it fails when read) */
    const char *want[] = {"a.jpg", "b.PNG", "c.webp/d.jpe", "gone.jpg", "sub/in.jpg", "sub/x.tiff", "sub/y.bmp"};
    size_t nw = sizeof want / sizeof want[0];
    CHECK(in.n == nw);
    for (size_t i = 0; i < nw && i < in.n; i++) {
        CHECK(!strcmp(in.items[i].rel, want[i]));
        char path[600];
        snprintf(path, sizeof path, "%s/%s", tree, want[i]);
        CHECK(!strcmp(in.items[i].path, path));
        CHECK(in.items[i].error == NULL);
    }
    CHECK(in.symlinks_skipped == 1);
    batch_inputs_free(&in);

    /* asked to: the link out is followed too */
    batch_inputs_options follow = {1, NULL};
    CHECK(batch_inputs_collect(&in, args, 1, &follow, msg, sizeof msg) == 0);
    CHECK(in.n == nw + 1 && in.symlinks_skipped == 0);
    int found = 0;
    for (size_t i = 0; i < in.n; i++) found |= !strcmp(in.items[i].rel, "out.png");
    CHECK(found);
    batch_inputs_free(&in);

    /* files as given: relative names lose '/', '.' and '..' parts; '-' is stdin */
    const char *files[] = {"/abs/p.png", "./q.png", "../up/r.png", "-", "x/./y/../z.jpg"};
    CHECK(batch_inputs_collect(&in, files, 5, NULL, msg, sizeof msg) == 0);
    CHECK(in.n == 5);
    if (in.n == 5) {
        CHECK(!strcmp(in.items[0].rel, "abs/p.png") && !strcmp(in.items[0].path, "/abs/p.png"));
        CHECK(!strcmp(in.items[1].rel, "q.png"));
        CHECK(!strcmp(in.items[2].rel, "up/r.png"));
        CHECK(!strcmp(in.items[3].rel, "stdin") && !strcmp(in.items[3].path, "-"));
        CHECK(!strcmp(in.items[4].rel, "x/y/z.jpg"));
    }
    batch_inputs_free(&in);

    /* @list: one path per line, CRLF and empty lines tolerated, a directory
     * expanded; @- reads the list from the stream given */
    char list[600];
    snprintf(list, sizeof list, "%s/tree/sub/x.tiff\r\n\n%s/tree/c.webp\n", root, root);
    put("list.txt", list);
    char arg[600];
    snprintf(arg, sizeof arg, "@%s/list.txt", root);
    const char *largs[] = {arg, "@-"};
    FILE *fake_stdin = fmemopen((void *)"one.png\ntwo.jpg\n", 16, "r");
    batch_inputs_options lo = {0, fake_stdin};
    CHECK(batch_inputs_collect(&in, largs, 2, &lo, msg, sizeof msg) == 0);
    CHECK(in.n == 4);
    if (in.n == 4) {
        CHECK(!strcmp(in.items[0].path + strlen(in.items[0].path) - 6, "x.tiff"));
        CHECK(!strcmp(in.items[1].rel, "d.jpe")); /* below the listed directory */
        CHECK(!strcmp(in.items[2].rel, "one.png") && !strcmp(in.items[3].rel, "two.jpg"));
    }
    fclose(fake_stdin);
    batch_inputs_free(&in);

    /* a list that cannot be read is an input that fails, not a usage error */
    const char *missing[] = {"@/nonexistent/list"};
    CHECK(batch_inputs_collect(&in, missing, 1, NULL, msg, sizeof msg) == 0);
    CHECK(in.n == 1 && in.items[0].error && strstr(in.items[0].error, "/nonexistent/list"));
    batch_inputs_free(&in);

    /* standard input can be read once */
    const char *twice[] = {"-", "@-"};
    CHECK(batch_inputs_collect(&in, twice, 2, NULL, msg, sizeof msg) == -1 && strstr(msg, "once"));
    batch_inputs_free(&in);

    /* two inputs that would write the same outputs: the later one fails */
    const char *dups[] = {"d/x.png", "y.png", "./d/x.png", "../d/x.png"};
    CHECK(batch_inputs_collect(&in, dups, 4, NULL, msg, sizeof msg) == 0);
    CHECK(batch_inputs_mark_duplicates(&in) == 2);
    CHECK(!in.items[0].error && !in.items[1].error);
    CHECK(in.items[2].error && in.items[2].duplicate && strstr(in.items[2].error, "./d/x.png") &&
          strstr(in.items[2].error, "of d/x.png"));
    CHECK(in.items[3].error && strstr(in.items[3].error, "of d/x.png"));
    batch_inputs_free(&in);

    CHECK(batch_inputs_is_image_name("a/B.JPEG") && batch_inputs_is_image_name("x.tif"));
    CHECK(batch_inputs_is_image_name("scan.PGM") && batch_inputs_is_image_name("s.pbm") &&
          batch_inputs_is_image_name("s.ppm") && batch_inputs_is_image_name("s.pnm"));
    CHECK(batch_inputs_is_image_name("b.JP2") && batch_inputs_is_image_name("c.j2k"));
    CHECK(!batch_inputs_is_image_name("a.pdf") && !batch_inputs_is_image_name(".png") &&
          !batch_inputs_is_image_name("png") && !batch_inputs_is_image_name("d.png/x"));
}

static const char *env_vals[8][2];
static const char *fake_env(const char *name)
{
    for (int i = 0; i < 8 && env_vals[i][0]; i++)
        if (!strcmp(env_vals[i][0], name)) return env_vals[i][1];
    return NULL;
}
static void set_env(const char *a, const char *av, const char *b, const char *bv, const char *c, const char *cv)
{
    memset(env_vals, 0, sizeof env_vals);
    env_vals[0][0] = a, env_vals[0][1] = av;
    env_vals[1][0] = b, env_vals[1][1] = bv;
    env_vals[2][0] = c, env_vals[2][1] = cv;
}

static void test_shard(void)
{
    /* FNV-1a 64 reference vectors (Fowler/Noll/Vo's test suite) */
    CHECK(batch_shard_hash("") == 0xcbf29ce484222325ULL);
    CHECK(batch_shard_hash("a") == 0xaf63dc4c8601ec8cULL);
    CHECK(batch_shard_hash("foobar") == 0x85944171f73967e8ULL);

    batch_shard s;
    char msg[256];
    CHECK(batch_shard_parse("2/4", &s, msg, sizeof msg) == 0 && s.index == 2 && s.count == 4);
    CHECK(batch_shard_parse("4/4", &s, msg, sizeof msg) == -1 && strstr(msg, "below"));
    CHECK(batch_shard_parse("1/0", &s, msg, sizeof msg) == -1);
    CHECK(batch_shard_parse("-1/4", &s, msg, sizeof msg) == -1);
    CHECK(batch_shard_parse("1", &s, msg, sizeof msg) == -1);
    CHECK(batch_shard_parse("a/4", &s, msg, sizeof msg) == -1);

    /* every name in exactly one of N shards; adding names moves none */
    for (long n = 1; n <= 7; n++) {
        int ok = 1;
        for (int i = 0; i < 500; i++) {
            char name[32];
            snprintf(name, sizeof name, "dir%d/page%04d.png", i % 7, i);
            int owners = 0;
            for (long k = 0; k < n; k++) owners += batch_shard_takes(&(batch_shard){k, n, "--shard"}, name);
            ok &= owners == 1;
        }
        CHECK(ok);
    }
    /* roughly even: each of 4 shards gets 400..600 of 2000 names */
    long counts[4] = {0};
    for (int i = 0; i < 2000; i++) {
        char name[32];
        snprintf(name, sizeof name, "scan-%05d.tif", i);
        for (long k = 0; k < 4; k++) counts[k] += batch_shard_takes(&(batch_shard){k, 4, NULL}, name);
    }
    for (int k = 0; k < 4; k++) CHECK(counts[k] > 400 && counts[k] < 600);

    set_env(NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == 0 && s.count == 1 && !s.source);
    set_env("JOB_COMPLETION_INDEX", "3", "LECTOR_SHARD_COUNT", "8", NULL, NULL);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == 0 && s.index == 3 && s.count == 8 &&
          !strcmp(s.source, "JOB_COMPLETION_INDEX"));
    set_env("JOB_COMPLETION_INDEX", "3", NULL, NULL, NULL, NULL);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == -1 && strstr(msg, "LECTOR_SHARD_COUNT"));
    set_env("JOB_COMPLETION_INDEX", "8", "LECTOR_SHARD_COUNT", "8", NULL, NULL);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == -1);
    /* Slurm: --array=1-4 runs IDs 1..4 with MIN 1 and COUNT 4 */
    set_env("SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_MIN", "1");
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == 0 && s.index == 3 && s.count == 4);
    memset(env_vals, 0, sizeof env_vals); /* --array=0-14:2 */
    const char *stepped[][2] = {{"SLURM_ARRAY_TASK_ID", "14"},
                                {"SLURM_ARRAY_TASK_COUNT", "8"},
                                {"SLURM_ARRAY_TASK_MIN", "0"},
                                {"SLURM_ARRAY_TASK_STEP", "2"}};
    memcpy(env_vals, stepped, sizeof stepped);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == 0 && s.index == 7 && s.count == 8);
    env_vals[0][1] = "3";
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == -1);
    set_env("SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_COUNT", "2", NULL, NULL);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == 0 && s.index == 0 && s.count == 2);
    set_env("SLURM_ARRAY_TASK_ID", "x", "SLURM_ARRAY_TASK_COUNT", "2", NULL, NULL);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == -1 && strstr(msg, "SLURM_ARRAY_TASK_ID"));
    /* a sparse array (--array=0,5) cannot be split by index */
    set_env("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_COUNT", "2", NULL, NULL);
    CHECK(batch_shard_from_env(fake_env, &s, msg, sizeof msg) == -1);
}

static void test_atomic_file(void)
{
    char final[512], msg[512];
    snprintf(final, sizeof final, "%s/out/deep/er/page.png.txt", root);
    atomic_file af;
    CHECK(atomic_file_open(&af, final, msg, sizeof msg) == 0);
    fputs("hello\n", af.f);
    char temp[600];
    snprintf(temp, sizeof temp, "%s/out/deep/er/.page.png.txt.lector-tmp", root);
    CHECK(access(final, F_OK) != 0 && access(temp, F_OK) == 0); /* not visible before the commit */
    CHECK(atomic_file_commit(&af, msg, sizeof msg) == 0);
    char *got = slurp(final);
    CHECK(got && !strcmp(got, "hello\n"));
    CHECK(access(temp, F_OK) != 0);

    /* abort: the old file stays whole, no temporary left */
    CHECK(atomic_file_open(&af, final, msg, sizeof msg) == 0);
    fputs("half", af.f);
    atomic_file_abort(&af);
    got = slurp(final);
    CHECK(got && !strcmp(got, "hello\n") && access(temp, F_OK) != 0);

    /* a writer killed with SIGKILL mid-write leaves the final name untouched
     * and its temporary behind; the next writer of that output replaces it */
    char final2[512];
    snprintf(final2, sizeof final2, "%s/out/killed.png.json", root);
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        atomic_file k;
        char m[256];
        if (atomic_file_open(&k, final2, m, sizeof m)) _exit(1);
        fputs("{\"partial\":", k.f);
        fflush(k.f);
        if (write(pipefd[1], "x", 1) != 1) _exit(1);
        pause(); /* killed here, before the commit */
        _exit(0);
    }
    char c;
    CHECK(read(pipefd[0], &c, 1) == 1);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    close(pipefd[0]);
    close(pipefd[1]);
    char *temp2 = atomic_file_temp_path(final2);
    CHECK(access(final2, F_OK) != 0 && access(temp2, F_OK) == 0);
    CHECK(atomic_file_open(&af, final2, msg, sizeof msg) == 0);
    fputs("{}\n", af.f);
    CHECK(atomic_file_commit(&af, msg, sizeof msg) == 0);
    got = slurp(final2);
    CHECK(got && !strcmp(got, "{}\n") && access(temp2, F_OK) != 0);
    free(temp2);

    /* failures name the path: a parent that is a file, a final name that is a directory */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/out/killed.png.json/x.txt", root);
    CHECK(atomic_file_open(&af, bad, msg, sizeof msg) == -1 && strstr(msg, "killed.png.json"));
    char isdir[512];
    snprintf(isdir, sizeof isdir, "%s/out/deep", root);
    CHECK(atomic_file_open(&af, isdir, msg, sizeof msg) == 0);
    CHECK(atomic_file_commit(&af, msg, sizeof msg) == -1 && strstr(msg, "cannot rename"));
    char *t3 = atomic_file_temp_path(isdir);
    CHECK(access(t3, F_OK) != 0);
    free(t3);

    char *p = atomic_file_output_path("o/", "a/b.png", "hocr");
    CHECK(p && !strcmp(p, "o/a/b.png.hocr"));
    free(p);
}

static double fake_now;
static double fake_clock(void) { return fake_now; }

static void test_progress(void)
{
    char buf[256];
    batch_counts c = {100, 20, 0, 5, 20};
    batch_progress_format(buf, sizeof buf, &c, 50000); /* 25 inputs in 50 s: 75 left take 150 s */
    CHECK(!strcmp(buf, "25/100, 5 failed, 0.4 pages/s, 2:30 left"));
    batch_counts r = {100, 10, 40, 0, 30};
    batch_progress_format(buf, sizeof buf, &r, 10000); /* the 40 found done are not work: 50 left at 1/s */
    CHECK(!strcmp(buf, "50/100 (40 already done), 0 failed, 3.0 pages/s, 0:50 left"));

    /* off a terminal: a plain line per interval, no control characters */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    batch_progress p;
    fake_now = 0;
    batch_progress_init(&p, f, 0, 0, 10.0, fake_clock);
    batch_counts k = {10, 0, 0, 0, 0};
    for (int i = 1; i <= 10; i++) {
        k.done = (size_t)i;
        k.pages = (size_t)i;
        fake_now = i * 3000.0; /* 3 s per input: lines at 12 s, 24 s */
        batch_progress_update(&p, &k);
    }
    batch_progress_message(&p, "lector: x.png: corrupt");
    batch_progress_finish(&p, &k);
    fclose(f);
    int lines = 0;
    for (char *s = text; *s; s++) lines += *s == '\n';
    CHECK(lines == 4); /* two progress lines, the message, the summary */
    CHECK(strstr(text, "lector: 4/10, 0 failed, 0.3 pages/s, 0:18 left\n") != NULL);
    CHECK(!strchr(text, '\r') && !strchr(text, '\033'));
    CHECK(strstr(text, "lector: 10 input(s): 10 done, 0 failed; 10 page(s) in 30.0 s (0.3 pages/s)\n") != NULL);
    free(text);

    /* quiet: the summary only */
    f = open_memstream(&text, &len);
    fake_now = 0;
    batch_progress_init(&p, f, 0, 1, 0.001, fake_clock);
    fake_now = 5000;
    batch_progress_update(&p, &k);
    batch_progress_finish(&p, &k);
    fclose(f);
    CHECK(!strncmp(text, "lector: 10 input(s)", 19) && strchr(text, '\n') == text + strlen(text) - 1);
    free(text);

    /* on a terminal: the line is redrawn in place and erased before a message */
    f = open_memstream(&text, &len);
    fake_now = 0;
    batch_progress_init(&p, f, 1, 0, 10.0, fake_clock);
    k.done = 3;
    fake_now = 1000;
    batch_progress_update(&p, &k);
    batch_progress_message(&p, "lector: bad");
    batch_progress_finish(&p, &k);
    fclose(f);
    CHECK(!strncmp(text, "\r\033[Klector: 3/10", 16));
    CHECK(strstr(text, "\r\033[Klector: bad\n") != NULL);
    free(text);
}

static void test_summary(void)
{
    batch_summary s = {0};
    s.counts = (batch_counts){5, 2, 1, 2, 3};
    CHECK(batch_summary_add_failure(&s, "in/x.png", "x.png", "in/x.png: corrupt PNG", "LECTOR_ERR_IMAGE") == 0);
    CHECK(batch_summary_add_failure(&s, "in/y.jpg", "y.jpg", "in/y.jpg: empty file", "LECTOR_ERR_IMAGE") == 0);
    const char *fmts[] = {"txt", "json"};
    batch_shard sh = {1, 4, "--shard"};
    batch_summary_meta m = {"9.9.9", "cpu", fmts, 2, &sh, 2.0};
    char *json = batch_summary_json(&s, &m);
    cJSON *o = cJSON_Parse(json);
    CHECK(o != NULL);
    CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "versions"), "lector")->valuestring, "9.9.9"));
    CHECK(cJSON_GetObjectItem(o, "inputs")->valueint == 5 && cJSON_GetObjectItem(o, "done")->valueint == 2 &&
          cJSON_GetObjectItem(o, "already_done")->valueint == 1 && cJSON_GetObjectItem(o, "failed")->valueint == 2 &&
          cJSON_GetObjectItem(o, "not_run")->valueint == 0 && cJSON_GetObjectItem(o, "pages")->valueint == 3);
    CHECK(cJSON_GetObjectItem(o, "pages_per_second")->valuedouble == 1.5);
    CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "shard"), "count")->valueint == 4);
    cJSON *fl = cJSON_GetObjectItem(o, "failures");
    CHECK(cJSON_GetArraySize(fl) == 2);
    cJSON *f1 = cJSON_GetArrayItem(fl, 1);
    CHECK(f1 && !strcmp(cJSON_GetObjectItem(f1, "file")->valuestring, "in/y.jpg") &&
          !strcmp(cJSON_GetObjectItem(f1, "error")->valuestring, "in/y.jpg: empty file") &&
          !strcmp(cJSON_GetObjectItem(f1, "code")->valuestring, "LECTOR_ERR_IMAGE"));
    cJSON_Delete(o);
    free(json);
    char *name = batch_summary_name(&sh);
    CHECK(name && !strcmp(name, "summary.shard-1-of-4.json"));
    free(name);
    name = batch_summary_name(&(batch_shard){0, 1, NULL});
    CHECK(name && !strcmp(name, "summary.json"));
    free(name);
    batch_summary_free(&s);
}

int main(void)
{
    snprintf(root, sizeof root, "/tmp/lector-batch-units-XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_inputs();
    test_shard();
    test_atomic_file();
    test_progress();
    test_summary();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", root);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
