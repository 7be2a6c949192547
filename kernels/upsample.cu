/* Nearest resize with src = floor(dst * in / out) on each axis. */
#include "kernels.cuh"
#include "ops/ops_math.h"

static __global__ void svp_upsample_nearest_kernel(int64_t planes, int h, int w,
                                                   int ho, int wo, const float *x,
                                                   float *y)
{
    SVP_CUDA_FOR(e, planes * ho * wo)
    {
        y[e] = x[svp_math_upsample_src(e, h, w, ho, wo)];
    }
}

extern "C" svp_status_t svp_ops_cuda_upsample_nearest(svp_ops_h ops, int n, int c,
                                                      int h, int w, int ho, int wo,
                                                      const float *x, float *y)
{
    int64_t planes = (int64_t)n * c;

    svp_upsample_nearest_kernel<<<svp_cuda_grid(planes * ho * wo), SVP_CUDA_BLOCK, 0,
                                  svp_cuda_stream(ops)>>>(planes, h, w, ho, wo, x,
                                                          y);
    return SVP_CUDA_LAUNCHED();
}
