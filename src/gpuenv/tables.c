/* tables.c - version facts (knowledge/gpu-stack-facts.md sections 1 and 3).
 * Minimum drivers are the release notes' "Toolkit driver" column (Table 3,
 * GA values); 13.1+ rows use the driver bundled in the runfile because
 * Table 3 was not verified for them. */
#include <string.h>

#include "gpuenv/gpuenv.h"

static const struct {
    int major, minor;
    const char *driver;
} cuda_driver[] = {
    {10, 2, "440.33"},    {11, 0, "450.51.05"}, {11, 1, "455.23"},    {11, 2, "460.27.03"}, {11, 3, "465.19.01"},
    {11, 4, "470.42.01"}, {11, 5, "495.29.05"}, {11, 6, "510.39.01"}, {11, 7, "515.43.04"}, {11, 8, "520.61.05"},
    {12, 0, "525.60.13"}, {12, 1, "530.30.02"}, {12, 2, "535.54.03"}, {12, 3, "545.23.06"}, {12, 4, "550.54.14"},
    {12, 5, "555.42.02"}, {12, 6, "560.28.03"}, {12, 8, "570.26"},    {12, 9, "575.51.03"}, {13, 0, "580.65.06"},
    {13, 1, "590.44.01"}, {13, 2, "595.45.04"}, {13, 3, "610.43.02"},
};
#define N_CUDA (sizeof cuda_driver / sizeof cuda_driver[0])

const char *gpuenv_min_driver_for_cuda(int major, int minor)
{
    for (size_t i = 0; i < N_CUDA; i++)
        if (cuda_driver[i].major == major && cuda_driver[i].minor == minor) return cuda_driver[i].driver;
    return NULL;
}

const char *gpuenv_min_driver_for_major(int major)
{
    /* minor-version compatibility floors */
    switch (major) {
    case 11: return "450.80.02";
    case 12: return "525.60.13";
    case 13: return "580.65.06";
    default: return NULL;
    }
}

int gpuenv_cuda_for_driver(const char *driver_version)
{
    int best = 0;
    if (!driver_version || !*driver_version) return 0;
    for (size_t i = 0; i < N_CUDA; i++)
        if (gpuenv_vercmp(driver_version, cuda_driver[i].driver) >= 0)
            best = cuda_driver[i].major * 1000 + cuda_driver[i].minor * 10;
    return best;
}

const char *gpuenv_cc_family(int major, int minor)
{
    switch (major) {
    case 3: return "Kepler";
    case 5: return "Maxwell";
    case 6: return "Pascal";
    case 7: return minor >= 5 ? "Turing" : "Volta";
    case 8: return minor == 9 ? "Ada" : "Ampere";
    case 9: return "Hopper";
    case 10: return "Blackwell";
    case 11: return "Jetson Thor";
    case 12: return "Blackwell (RTX)";
    default: return "unknown";
    }
}

int gpuenv_min_cc_for_cuda(int cuda_major)
{
    /* knowledge/gpu-stack-facts.md section 3: CUDA 12 builds for Maxwell (5.0)
       and newer, CUDA 13 for Turing (7.5) and newer, CUDA 11 for Kepler 3.5 */
    switch (cuda_major) {
    case 10: return 30;
    case 11: return 35;
    case 12: return 50;
    case 13: return 75;
    default: return 0;
    }
}
