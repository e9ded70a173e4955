/* driver.c - standalone `doctor`/`explain` front end for the tests and for
 * running the doctor where the full lector CLI is not built (the device). */
#include <stdio.h>
#include <string.h>

#include "lector_doctor.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "doctor") == 0) return lector_doctor_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "explain") == 0) return lector_explain_main(argc - 1, argv + 1);
    fputs("usage: gpuenv_driver doctor|explain [ARGS...]\n", stderr);
    return 2;
}
