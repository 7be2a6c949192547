/*
 * What every kernel file shares: the backend's declarations (C linkage),
 * launch geometry, and block reductions.  Internal to kernels/.
 */
#ifndef SVP_KERNELS_KERNELS_CUH
#define SVP_KERNELS_KERNELS_CUH

#include "ops/cuda/ops_cuda.h"

#include <stdint.h>

/* Threads per block of the elementwise kernels. */
#define SVP_CUDA_BLOCK 256

/*
 * Blocks for n elements with grid-stride loops: enough to fill any current
 * GPU many times over, few enough that int64 loops never need more.
 */
static inline unsigned svp_cuda_grid(int64_t n)
{
    int64_t blocks = (n + SVP_CUDA_BLOCK - 1) / SVP_CUDA_BLOCK;
    return (unsigned)((blocks < 65536) ? blocks : 65536);
}

static inline cudaStream_t svp_cuda_stream(svp_ops_h ops)
{
    return svp_ops_cuda(ops)->stream;
}

#define SVP_CUDA_FOR(_i, _n) \
    for (int64_t _i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; _i < (_n); \
         _i += (int64_t)gridDim.x * blockDim.x)

/*
 * Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the result.  shared holds 32 doubles.  A barrier ends it, so
 * shared may be reused right after.
 */
static __device__ inline double svp_cuda_block_sum(double v, double *shared)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int warps = blockDim.x / 32;

    for (int o = 16; o > 0; o /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    v = (lane < warps) ? shared[lane] : 0.0;
    for (int o = 16; o > 0; o /= 2) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    __syncthreads();
    return v;
}

/* Maximum of v over the block, as svp_cuda_block_sum. */
static __device__ inline float svp_cuda_block_max(float v, float *shared)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int warps = blockDim.x / 32;

    for (int o = 16; o > 0; o /= 2) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    v = (lane < warps) ? shared[lane] : -INFINITY;
    for (int o = 16; o > 0; o /= 2) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    __syncthreads();
    return v;
}

#endif
