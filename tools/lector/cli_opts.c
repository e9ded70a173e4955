/* cli_opts.c - one loop for the subcommands whose options are plain
 * values: a table maps each option to the variable it sets. Plain C over
 * libc (tests/cli/test_cli_opts.c builds it alone). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const cli_opt *find(const cli_opt *opts, const char *name)
{
    for (const cli_opt *o = opts; o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}

int cli_opts_parse(const char *prog, const cli_opt *opts, int argc, char **argv, int from, char **rest, int *n_rest)
{
    if (n_rest) *n_rest = 0;
    for (int i = from; i < argc; i++) {
        const char *a = argv[i];
        const cli_opt *o = a[0] == '-' ? find(opts, a) : NULL;
        if (!o) {
            if (a[0] == '-' || !rest) {
                fprintf(stderr, "%s: unknown %s '%s'\n", prog, a[0] == '-' ? "option" : "argument", a);
                return -1;
            }
            rest[(*n_rest)++] = argv[i];
            continue;
        }
        if (o->kind == CLI_FLAG) {
            *(int *)o->dst = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", prog, a);
            return -1;
        }
        const char *v = argv[++i];
        if (o->kind == CLI_STR) {
            *(const char **)o->dst = v;
            continue;
        }
        char *end;
        errno = 0;
        long l = o->kind == CLI_INT ? strtol(v, &end, 10) : 0;
        double d = o->kind == CLI_FLOAT ? strtod(v, &end) : 0;
        if (end == v || *end || errno || l < INT_MIN || l > INT_MAX) {
            fprintf(stderr, "%s: %s: '%s' is not %s\n", prog, a, v, o->kind == CLI_INT ? "an integer" : "a number");
            return -1;
        }
        if (o->kind == CLI_INT)
            *(int *)o->dst = (int)l;
        else
            *(float *)o->dst = (float)d;
    }
    return 0;
}
