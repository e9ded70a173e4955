/* Every public header compiles as plain C11 on its own (whisper's test-c.c),
 * each included twice (its guard): built with -std=c11 -pedantic-errors
 * -Wall -Wextra -Werror. lector_doctor.h: tests/gpuenv/test_header.c. */
#include "lector_rt.h"
#include "lector_rt.h" /* include guards */
#include "lector_rt_image.h"
#include "lector_rt_image.h"
#include "lector.h"
#include "lector.h"
#include "lector_serve.h"
#include "lector_serve.h"

int main(void)
{
    lector_model_options opt = {0};
    lector_error err;
    lector_model *m = NULL;
    (void)opt;
    lector_status st = lector_model_load_file("/nonexistent.onnx", NULL, &m, &err);
    return st == LECTOR_ERR_IO && m == NULL ? 0 : 1;
}
