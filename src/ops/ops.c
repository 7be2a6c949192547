/*
 * The backend-independent half of the op interface: handle lifecycle,
 * argument checks (once, here, so every backend sees sane shapes), dispatch.
 * The ops' public functions are generated from their list (ops_list.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_backend.h"
#include "ops/ops_module.h"
#include "ops/ops_gpu.h"
#include "ops/ops_weights.h"
#include "common/log.h"
#include "common/threads.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The per-thread score tile cap by default: large enough that the CPU
 * backend's own tile (64 x 256 = 16K scores, src/ops/cpu/attention.c)
 * decides; tests set it small to force many partial key tiles. */
#define SVP_OPS_ATTN_MAX_SCORES_DEFAULT ((size_t)4 << 20)

#ifdef HAVE_CUDA
#define SVP_OPS_BACKENDS "cpu, cuda (module svdpipe_cuda.so)"
#else
#define SVP_OPS_BACKENDS "cpu"
#endif

/* A device backend is a module, opened here only when asked for: a CPU run
 * maps no device library.  No fallback to the CPU: a job that asked for a
 * device and gets none fails, saying what is missing. */
static svp_status_t svp_ops_module_init(const char *name, svp_ops_h ops)
{
    const svp_ops_module_t     *module;
    svp_ops_gpu_bind_t          bind;
    svp_ops_gpu_select_params_t sel;
    svp_ops_gpu_choice_t        choice;
    char                        err[512];
    svp_status_t                status;

    status = svp_ops_module_load(name, &module);
    if (status != SVP_OK) {
        return status;
    }
    svp_ops_gpu_bind_get(&bind);
    sel.visible    = getenv("CUDA_VISIBLE_DEVICES");
    sel.requested  = getenv("SVP_CUDA_DEVICE");
    sel.local_rank = bind.local_rank;
    sel.local_size = bind.local_size;
    sel.share_gpu  = bind.share_gpu;
    status         = module->device_count(&sel.device_count);
    if (status == SVP_OK) {
        status = svp_ops_gpu_select(&sel, &choice, err, sizeof(err));
        if (status != SVP_OK) {
            svp_error("%s backend: %s", name, err);
            return status;
        }
        svp_info("%s backend: device %d, %s%s", name, choice.device, choice.how,
                 choice.shared ? " (shared with another rank: cluster.share_gpu)"
                               : "");
        ops->device = choice.device;
        status      = module->init(ops);
    }
    if (status == SVP_ERR_DEVICE) {
        svp_error("%s backend: no usable %s driver or device on this node "
                  "(see above)",
                  name, name);
    }
    return status;
}


/*
 * The dtype matrix weights are held in: f32 on every backend; bf16 and f16
 * where the backend can widen them (ops_weights.c), never an f32 run that
 * claims to be something else.
 */
static svp_status_t svp_ops_check_dtype(svp_ops_h ops)
{
    if (ops->weight_dtype == SVP_DTYPE_F32 || ops->vt->widen != NULL) {
        return SVP_OK;
    }
    svp_error("ops backend '%s' cannot hold weights in %s (it holds f32 "
              "weights only): set dtype: f32",
              svp_ops_backend(ops), svp_dtype_short_name(ops->weight_dtype));
    return SVP_ERR_UNSUPPORTED;
}

static const char *const svp_ops_backend_names[] = {
    SVP_OPS_BACKEND_TABLE(SVP_OPS_BACKEND_NAME_)};

_Static_assert(sizeof(svp_ops_backend_names) / sizeof(svp_ops_backend_names[0]) ==
                   SVP_OPS_BACKEND_LAST,
               "one name per backend");

const char *svp_ops_backend_name(svp_ops_backend_t backend)
{
    return ((unsigned)backend < SVP_OPS_BACKEND_LAST)
               ? svp_ops_backend_names[backend]
               : "?";
}

svp_status_t svp_ops_backend_parse(const char *name, svp_ops_backend_t *backend_p)
{
    int i;

    for (i = 0; name != NULL && i < SVP_OPS_BACKEND_LAST; ++i) {
        if (strcmp(name, svp_ops_backend_names[i]) == 0) {
            *backend_p = (svp_ops_backend_t)i;
            return SVP_OK;
        }
    }
    svp_error("ops backend '%s' is not available in this build (have: %s)",
              name ? name : "(none)", SVP_OPS_BACKENDS);
    return SVP_ERR_UNSUPPORTED;
}

svp_status_t svp_ops_create(const svp_ops_params_t *params, svp_ops_h *ops_p)
{
    svp_ops_backend_t backend = params ? params->backend : SVP_OPS_BACKEND_CPU;
    svp_dtype_t       dtype   = params ? params->dtype : SVP_DTYPE_F32;
    svp_ops_h         ops;
    svp_status_t      status;

    if (!svp_dtype_is_weight(dtype)) {
        svp_error("ops dtype %s cannot hold matrix weights (have: f32, bf16, f16)",
                  svp_dtype_short_name(dtype));
        return SVP_ERR_INVALID_PARAM;
    }
    ops = calloc(1, sizeof(*ops));
    if (ops == NULL) {
        svp_error("cannot allocate the ops handle");
        return SVP_ERR_NO_MEMORY;
    }
    if (params && params->threads > 0) {
        ops->threads      = params->threads;
        ops->threads_from = "the caller";
    } else {
        ops->threads = svp_threads_default(&ops->threads_from);
    }
    ops->attn_max_scores = (params && params->attn_max_scores > 0)
                               ? params->attn_max_scores
                               : SVP_OPS_ATTN_MAX_SCORES_DEFAULT;
    ops->weight_dtype    = dtype;

    switch (backend) {
    case SVP_OPS_BACKEND_CPU:
        status = svp_ops_cpu_init(ops);
        break;
    case SVP_OPS_BACKEND_DRY:
        status = svp_ops_dry_init(ops);
        break;
#ifdef HAVE_CUDA
    case SVP_OPS_BACKEND_CUDA:
        status = svp_ops_module_init(svp_ops_backend_name(backend), ops);
        break;
#endif
    default:
        svp_error("ops backend '%s' is not available in this build (have: %s)",
                  svp_ops_backend_name(backend), SVP_OPS_BACKENDS);
        status = SVP_ERR_UNSUPPORTED;
        break;
    }
    if (status != SVP_OK) {
        goto err_free_ops;
    }
    status = svp_ops_check_dtype(ops);
    if (status != SVP_OK) {
        ops->vt->cleanup(ops);
        goto err_free_ops;
    }
    /* 16-bit products: the backend's own (tensor cores), or the CPU's
     * twin of them for tests */
    ops->product_dtype = SVP_DTYPE_F32;
    if (backend == SVP_OPS_BACKEND_CPU && ops->weight_dtype == SVP_DTYPE_BF16 &&
        !(params != NULL && params->f32_products) && svp_ops_cpu_has_bf16()) {
        ops->native16      = 1;
        ops->product_dtype = SVP_DTYPE_BF16;
    }
    if (ops->weight_dtype != SVP_DTYPE_F32 &&
        (ops->vt->products16 ||
         (params != NULL && params->round_activations && ops->vt->host_memory))) {
        ops->product_dtype = ops->weight_dtype;
    }

    *ops_p = ops;
    return SVP_OK;

err_free_ops:
    free(ops);
    return status;
}

void svp_ops_destroy(svp_ops_h ops)
{
    if (ops == NULL) {
        return;
    }
    svp_ops_arena_cleanup(ops);
    svp_ops_weights_cleanup(ops);
    ops->vt->cleanup(ops);
    free(ops);
}

const char *svp_ops_backend(svp_ops_h ops)
{
    return svp_ops_backend_name(ops->vt->backend);
}

const char *svp_ops_dtype(svp_ops_h ops)
{
    return svp_dtype_short_name(ops->weight_dtype);
}

svp_dtype_t svp_ops_product_dtype(svp_ops_h ops)
{
    return ops->product_dtype;
}

const char *svp_ops_product_units(svp_ops_h ops)
{
    if (ops->product_dtype == SVP_DTYPE_F32) {
        return NULL;
    }
    if (ops->native16) {
        return "the CPU's AVX512-BF16 units";
    }
    return ops->vt->products16 ? "tensor cores"
                               : "fp32 on the CPU (round_activations)";
}

int svp_ops_threads(svp_ops_h ops)
{
    return ops->threads;
}

const char *svp_ops_threads_from(svp_ops_h ops)
{
    return ops->threads_from;
}

svp_status_t svp_ops_upload(svp_ops_h ops, float *dst, const float *host_src,
                            size_t count)
{
    return ops->vt->upload(ops, dst, host_src, count);
}

svp_status_t svp_ops_download(svp_ops_h ops, float *host_dst, const float *src,
                              size_t count)
{
    return ops->vt->download(ops, host_dst, src, count);
}

/* The model's ops: svp_ops_conv2d() ... svp_ops_copy() (ops_list.h). */
SVP_OPS_MODEL_LIST(SVP_OPS_DISPATCH, const void *)
