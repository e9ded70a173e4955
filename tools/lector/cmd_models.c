#include <stdio.h>
#include "cli.h"
int cmd_models(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "lector models: not built yet\n");
    return 1;
}
