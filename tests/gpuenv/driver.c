/* driver.c - standalone `doctor`/`explain` front end for the tests and for
 * running the doctor where the full lector CLI is not built: the CLI's own
 * commands (tools/lector/cmd_doctor.c, cmd_explain.c) without OCR. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "doctor") == 0) return cmd_doctor(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "explain") == 0) return cmd_explain(argc - 1, argv + 1);
    fputs("usage: gpuenv_driver doctor|explain [ARGS...]\n", stderr);
    return 2;
}
