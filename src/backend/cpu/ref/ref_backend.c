/*
 * ref_backend.c - the reference CPU backend: host memory, the shared
 * executor, and the reference kernel of every op (chosen by rt_plan_build):
 * C, with AVX-512 / AVX2 micro-kernels in the GEMM (gemm.c).
 * It is the oracle the oneDNN and CUDA backends are tested against.
 */
#include "rt/backend.h"
#include "util/util.h"

static const rt_backend_iface ref_iface = {
    .api_version = RT_BACKEND_API_VERSION,
    .name = "ref",
    .features = RT_FEATURE_HOST_MEMORY | RT_FEATURE_FUSED_ACT,
    .plan_execute = rt_execute_host,
};

const rt_backend_iface *rt_backend_ref(void) { return &ref_iface; }
