/*
 * Device memory services of the CUDA module (ops_module.h): what the core
 * needs for hand-off frames in device memory, without linking CUDA itself.
 * Copies are synchronous (the frame must be complete before UCX sees it).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_module.h"
#include "ops/cuda/ops_cuda.h"

static svp_status_t svp_ops_cuda_dev_alloc(void *ctx, size_t bytes, void **ptr_p)
{
    void        *p = NULL;
    svp_status_t status;

    status = SVP_CUDA_FUNC(cudaMalloc(&p, bytes ? bytes : 1));
    if (status == SVP_OK) {
        *ptr_p = p;
    }
    return status;
}

static void svp_ops_cuda_dev_free(void *ctx, void *ptr)
{
    (void)SVP_CUDA_FUNC(cudaFree(ptr));
}

static svp_status_t svp_ops_cuda_dev_to_host(void *ctx, void *host, const void *dev,
                                             size_t bytes)
{
    return SVP_CUDA_FUNC(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

static svp_status_t svp_ops_cuda_dev_to_device(void *ctx, void *dev,
                                               const void *host, size_t bytes)
{
    svp_status_t status;

    /* From pageable memory cudaMemcpy may return once the bytes are staged,
     * before they reach the device; the ops' stream (non-blocking) would not
     * wait for that DMA.  Waiting for the default stream makes the copy
     * complete for any reader (pinned sources are complete already). */
    status = SVP_CUDA_FUNC(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    if (status == SVP_OK) {
        status = SVP_CUDA_FUNC(cudaStreamSynchronize(0));
    }
    return status;
}

static svp_status_t svp_ops_cuda_host_alloc(void *ctx, size_t bytes, void **ptr_p)
{
    void        *p = NULL;
    svp_status_t status;

    status =
        SVP_CUDA_FUNC(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault));
    if (status == SVP_OK) {
        *ptr_p = p;
    }
    return status;
}

static void svp_ops_cuda_host_free(void *ctx, void *ptr)
{
    (void)SVP_CUDA_FUNC(cudaFreeHost(ptr));
}

const svp_devmem_t svp_ops_cuda_devmem = {
    .alloc      = svp_ops_cuda_dev_alloc,
    .free       = svp_ops_cuda_dev_free,
    .to_host    = svp_ops_cuda_dev_to_host,
    .to_device  = svp_ops_cuda_dev_to_device,
    .host_alloc = svp_ops_cuda_host_alloc,
    .host_free  = svp_ops_cuda_host_free,
};
