/*
 * Sinusoidal timestep embedding, every step in fp32 in torch's order (see
 * src/ops/cpu/elementwise.c): exponent = (-ln 10000) * i / half, freq =
 * exp(exponent), y = [cos(t freq), sin(t freq)].  The explicit _rn
 * intrinsics keep nvcc from fusing the steps: torch rounds each one.
 */
#include "kernels.cuh"
#include "ops/ops_math.h"

static __global__ void svp_timestep_embedding_kernel(int n, int half, const float *t,
                                                     float *y)
{
    SVP_CUDA_FOR(e, (int64_t)n * half)
    {
        int64_t r   = e / half;
        int     i   = (int)(e % half);
        float   arg = svp_math_timestep_arg(t[r], i, half);

        y[r * 2 * half + i]        = cosf(arg);
        y[r * 2 * half + half + i] = sinf(arg);
    }
}

extern "C" svp_status_t svp_ops_cuda_timestep_embedding(svp_ops_h ops, int n,
                                                        int dim, const float *t,
                                                        float *y)
{
    svp_timestep_embedding_kernel<<<svp_cuda_grid((int64_t)n * (dim / 2)),
                                    SVP_CUDA_BLOCK, 0, svp_cuda_stream(ops)>>>(n,
                                                                               dim /
                                                                                   2,
                                                                               t, y);
    return SVP_CUDA_LAUNCHED();
}
