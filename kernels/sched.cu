/*
 * The scheduler's per-step arithmetic on the device (src/ops/ops_sched.h):
 * one thread per element, each evaluating src/noise/sched_math.h's function,
 * the one the CPU scheduler runs, so the latents are the CPU's bits.
 */
#include "kernels.cuh"
#include "noise/sched_math.h"

static __global__ void svp_sched_scale_kernel(int64_t n, float c_in, const float *x,
                                              float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_sched_math_scale(x[i], c_in);
    }
}

static __global__ void svp_sched_guidance_kernel(int64_t n, float g,
                                                 const float *uncond,
                                                 const float *cond, float *out)
{
    SVP_CUDA_FOR(i, n)
    {
        out[i] = svp_sched_math_guidance(uncond[i], cond[i], g);
    }
}

/* coef by value: the kernel's parameters hold it, no host pointer crosses */
static __global__ void svp_sched_euler_kernel(int64_t n, svp_sched_euler_coef_t coef,
                                              const float *v, const float *x,
                                              float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_sched_math_euler(&coef, v[i], x[i], NULL);
    }
}

extern "C" svp_status_t svp_ops_cuda_sched_scale(svp_ops_h ops, int64_t n,
                                                 float c_in, const float *x,
                                                 float *y)
{
    svp_sched_scale_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                             svp_cuda_stream(ops)>>>(n, c_in, x, y);
    return SVP_CUDA_LAUNCHED();
}

extern "C" svp_status_t svp_ops_cuda_sched_guidance(svp_ops_h ops, int64_t n,
                                                    float g, const float *uncond,
                                                    const float *cond, float *out)
{
    svp_sched_guidance_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                                svp_cuda_stream(ops)>>>(n, g, uncond, cond, out);
    return SVP_CUDA_LAUNCHED();
}

extern "C" svp_status_t svp_ops_cuda_sched_euler(svp_ops_h ops, int64_t n,
                                                 const svp_sched_euler_coef_t *coef,
                                                 const float *v, const float *x,
                                                 float *y)
{
    svp_sched_euler_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                             svp_cuda_stream(ops)>>>(n, *coef, v, x, y);
    return SVP_CUDA_LAUNCHED();
}
