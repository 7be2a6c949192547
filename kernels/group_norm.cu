/*
 * GroupNorm with statistics over frames x channels-of-the-group x spatial:
 * one block per (item, group), sums in double as on the CPU (a group at SVD
 * level 0 holds 2.3M elements; an fp32 sum would drift by more than the
 * reference's own error), two passes (mean, then squared deviations).
 */
#include "kernels.cuh"
#include "ops/ops_math.h"

#define SVP_GROUP_NORM_BLOCK 512

static __global__ void svp_group_norm_kernel(int frames, int c, int64_t spatial,
                                             int groups, float eps, int silu,
                                             const float *x, const float *gamma,
                                             const float *beta, float *y)
{
    __shared__ double shared[32];
    int64_t           n     = blockIdx.x / groups;
    int               g     = blockIdx.x % groups;
    int               cpg   = c / groups;
    int64_t           run   = (int64_t)cpg * spatial; /* contiguous per frame */
    int64_t           count = frames * run;
    int64_t           base  = n * frames * c * spatial + g * run;
    double            sum = 0.0, sq = 0.0, mean;
    float             rstd, m;

    /* e in [0, count): frame e / run, offset e % run inside that frame */
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
        sum += x[base + (e / run) * c * spatial + e % run];
    }
    mean = svp_cuda_block_sum(sum, shared) / (double)count;
    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
        double d = x[base + (e / run) * c * spatial + e % run] - mean;
        sq += d * d;
    }
    rstd = svp_math_norm_rstd(svp_cuda_block_sum(sq, shared) / (double)count, eps);
    m    = (float)mean;

    for (int64_t e = threadIdx.x; e < count; e += blockDim.x) {
        int     ch;
        int64_t off =
            svp_math_group_norm_off(e, n, g, frames, c, spatial, groups, &ch);
        float scale, shift;

        svp_math_group_norm_coef(m, rstd, gamma[ch], beta[ch], &scale, &shift);
        y[off] = svp_math_group_norm_apply(x[off], scale, shift, silu);
    }
}

extern "C" svp_status_t svp_ops_cuda_group_norm(svp_ops_h                   ops,
                                                const svp_ops_group_norm_t *p,
                                                const float *x, const float *gamma,
                                                const float *beta, float *y)
{
    svp_group_norm_kernel<<<p->n * p->groups, SVP_GROUP_NORM_BLOCK, 0,
                            svp_cuda_stream(ops)>>>(p->frames, p->c, p->spatial,
                                                    p->groups, p->eps, p->silu, x,
                                                    gamma, beta, y);
    return SVP_CUDA_LAUNCHED();
}
