/*
 * onednn_backend.c - the CPU backend on oneDNN 2.6 (C API): its state, init
 * and shutdown, and its table. See onednn.h for how it works. The rest, by
 * concern:
 *
 *   onednn_plan.c      a plan's compilation: one primitive per node or fused
 *                      chain, created once per plan, by the node's builder:
 *   onednn_conv.c        Conv, ConvTranspose, and their converted weights
 *   onednn_matmul.c      MatMul
 *   onednn_ops.c         every other operator, and the reference kernel
 *   onednn_fuse.c      followers fused as post-ops or folded into the weights
 *   onednn_desc.c      memory descriptors, slots, steps, primitive descriptors
 *   onednn_memory.c    the memory plan of blocked layouts (the arena)
 *   onednn_exec.c      the executor
 *   onednn_cache.c     kernels and converted constants shared by a model's plans
 *   onednn_generic.c   generic plans (shapes outside jit_size): their pointwise
 *                      convolutions on a matmul sized at run time
 */
#include "backend/cpu/onednn/onednn_internal.h"
#include "util/util.h"

static lector_status dn_init(rt_backend *be, lector_error *err)
{
    dn_backend *db = lector__calloc(1, sizeof *db);
    if (!db) return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    if (dn_caches_init(&db->caches)) {
        lector__free(db);
        return lector__error(err, LECTOR_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!dn_ok(dnnl_engine_create(&db->eng, dnnl_cpu, 0))) {
        dn_caches_destroy(&db->caches);
        lector__free(db);
        return lector__error(err, LECTOR_ERR_BACKEND, "oneDNN: cannot create a CPU engine");
    }
    be->ctx = db;
    return LECTOR_OK;
}

/* kernels_compiled: primitives created for this backend's plans */
static uint64_t dn_kernels(rt_backend *be)
{
    dn_backend *db = be->ctx;
    return db ? dn_kernels_compiled(&db->caches) : 0;
}

static void dn_shutdown(rt_backend *be)
{
    dn_backend *db = be->ctx;
    if (!db) return;
    dn_caches_destroy(&db->caches);
    dnnl_engine_destroy(db->eng);
    lector__free(db);
    be->ctx = NULL;
}

static const rt_backend_iface dn_iface = {
    .api_version = RT_BACKEND_API_VERSION,
    .name = "onednn",
    /* state: the CPU engine and the caches the plans share; no buffer_alloc: host memory */
    .init = dn_init,
    .shutdown = dn_shutdown,
    /* plans: one primitive per node or fused chain (activations fused as post-ops), built once per plan */
    .features = RT_FEATURE_HOST_MEMORY | RT_FEATURE_FUSED_ACT,
    .plan_compile = dn_plan_compile,
    .plan_execute = dn_plan_execute,
    .plan_free = dn_plan_free,
    .kernels_compiled = dn_kernels,
    /* generic plans: pointwise convolutions on a matmul sized at run time */
    .plan_generic = dn_plan_generic,
};

const rt_backend_iface *rt_backend_onednn(void) { return &dn_iface; }
