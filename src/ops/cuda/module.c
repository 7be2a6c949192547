/*
 * The entry point of svdpipe_cuda.so (ops_module.h): the only symbol the
 * core looks up in the CUDA backend module.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_module.h"
#include "ops/cuda/ops_cuda.h"

const svp_ops_module_t   *svp_ops_module_query(void);
extern const svp_devmem_t svp_ops_cuda_devmem;

static const svp_ops_module_t svp_ops_cuda_module = {
    .abi          = SVP_OPS_MODULE_ABI,
    .name         = "cuda",
    .device_count = svp_ops_cuda_device_count,
    .init         = svp_ops_cuda_init,
    .devmem       = &svp_ops_cuda_devmem,
};

__attribute__((visibility("default"))) const svp_ops_module_t *
svp_ops_module_query(void)
{
    return &svp_ops_cuda_module;
}
