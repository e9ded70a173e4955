/*
 * Unit tests of the option tables of `lector bench` (tools/lector/cli_opts.c):
 * each expected value is written by hand from the contract in cli.h.
 */
#include <stdio.h>
#include <string.h>

#include "../soft_check.h"
#include "cli.h"

typedef struct vals {
    int json, runs;
    float recheck;
    const char *device;
} vals;

/* parses argv (NULL-terminated) after a command word, as `bench` does */
static int parse(vals *v, char **rest, int *n_rest, char **argv)
{
    int argc = 0;
    while (argv[argc]) argc++;
    const cli_opt opts[] = {{"--json", CLI_FLAG, &v->json},
                            {"--runs", CLI_INT, &v->runs},
                            {"--fp16-recheck", CLI_FLOAT, &v->recheck},
                            {"--device", CLI_STR, &v->device},
                            {NULL, CLI_FLAG, NULL}};
    return cli_opts_parse("test", opts, argc, argv, 1, rest, n_rest);
}

int main(void)
{
    char *rest[8];
    int n = -1;
    {
        vals v = {0, 10, 0.9f, "cuda"};
        char *argv[] = {"bench", "--json", "--runs",         "3",    "a.jpg", "--device",
                        "cpu",   "b.jpg",  "--fp16-recheck", "0.25", NULL};
        CHECK(parse(&v, rest, &n, argv) == 0, "options and arguments mixed: parsed");
        CHECK(v.json == 1 && v.runs == 3 && v.recheck == 0.25f && !strcmp(v.device, "cpu"),
              "each option sets its variable");
        CHECK(n == 2 && !strcmp(rest[0], "a.jpg") && !strcmp(rest[1], "b.jpg"), "the arguments in order");
    }
    { /* nothing given: the defaults stay */
        vals v = {0, 10, 0.9f, "cuda"};
        char *argv[] = {"bench", NULL};
        CHECK(parse(&v, rest, &n, argv) == 0 && n == 0, "nothing given: parsed");
        CHECK(v.json == 0 && v.runs == 10 && v.recheck == 0.9f && !strcmp(v.device, "cuda"),
              "nothing given: the defaults stay");
    }
    { /* the last of a repeated option wins */
        vals v = {0};
        char *argv[] = {"bench", "--runs", "3", "--runs", "-2", NULL};
        CHECK(parse(&v, NULL, NULL, argv) == 0 && v.runs == -2, "the last of a repeated option wins");
    }
    {
        vals v = {0};
        char *bad[][4] = {
            {"bench", "--bogus", NULL},               /* unknown option */
            {"bench", "--runs", NULL},                /* missing value */
            {"bench", "--runs", "x", NULL},           /* not a number */
            {"bench", "--runs", "3.5", NULL},         /* not an integer */
            {"bench", "--runs", "99999999999", NULL}, /* beyond int */
            {"bench", "--fp16-recheck", "", NULL},    /* empty */
            {"bench", "--fp16-recheck", "1e", NULL},  /* trailing bytes */
        };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
            CHECK(parse(&v, rest, &n, bad[i]) == -1, "rejected: %s %s", bad[i][1], bad[i][2] ? bad[i][2] : "");
        char *positional[] = {"bench", "a.jpg", NULL};
        CHECK(parse(&v, NULL, NULL, positional) == -1, "no rest[]: no argument is allowed");
    }
    return soft_check_exit("cli.opts");
}
