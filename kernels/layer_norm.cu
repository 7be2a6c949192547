/*
 * LayerNorm over the last axis: one block per row, double sums and two
 * passes as on the CPU (src/ops/cpu/norm.c).
 */
#include "kernels.cuh"
#include "ops/ops_math.h"

#define SVP_LAYER_NORM_BLOCK 256

static __global__ void svp_layer_norm_kernel(int dim, float eps, const float *x,
                                             const float *gamma, const float *beta,
                                             float *y)
{
    __shared__ double shared[32];
    const float      *xr  = x + (int64_t)blockIdx.x * dim;
    float            *yr  = y + (int64_t)blockIdx.x * dim;
    double            sum = 0.0, sq = 0.0, mean;
    float             rstd, m;

    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        sum += xr[i];
    }
    mean = svp_cuda_block_sum(sum, shared) / dim;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        double d = xr[i] - mean;
        sq += d * d;
    }
    rstd = svp_math_norm_rstd(svp_cuda_block_sum(sq, shared) / dim, eps);
    m    = (float)mean;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        yr[i] = svp_math_layer_norm_apply(xr[i], m, rstd, gamma[i], beta[i]);
    }
}

/* Rows go on grid.x (up to 2^31 - 1 blocks); longer inputs run in parts. */
#define SVP_LAYER_NORM_ROWS_MAX ((int64_t)1 << 30)

extern "C" svp_status_t svp_ops_cuda_layer_norm(svp_ops_h ops, int64_t rows, int dim,
                                                float eps, const float *x,
                                                const float *gamma,
                                                const float *beta, float *y)
{
    for (int64_t r0 = 0; r0 < rows; r0 += SVP_LAYER_NORM_ROWS_MAX) {
        int64_t      part = rows - r0;
        svp_status_t status;

        part = (part < SVP_LAYER_NORM_ROWS_MAX) ? part : SVP_LAYER_NORM_ROWS_MAX;
        svp_layer_norm_kernel<<<(unsigned)part, SVP_LAYER_NORM_BLOCK, 0,
                                svp_cuda_stream(ops)>>>(dim, eps, x + r0 * dim,
                                                        gamma, beta, y + r0 * dim);
        status = SVP_CUDA_LAUNCHED();
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}
