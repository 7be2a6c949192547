/*
 * The operands of the gemm-based convolutions (src/ops/cuda/ops_cuda.c):
 * im2col for conv2d and the bias fill the gemms accumulate onto.
 */
#include "kernels.cuh"
#include "ops/ops_math.h"

/* e indexes col [count, k, ho*wo], k = c_in*kh*kw. */
static __global__ void svp_im2col_kernel(int count, int c_in, int h, int w, int kh,
                                         int kw, int stride, int pad, int ho, int wo,
                                         const float *x, float *col)
{
    int64_t howo = (int64_t)ho * wo;
    int64_t k    = (int64_t)c_in * kh * kw;

    SVP_CUDA_FOR(e, count * k * howo)
    {
        int64_t src =
            svp_math_im2col_src(e, c_in, h, w, kh, kw, stride, pad, ho, wo);

        col[e] = (src >= 0) ? x[src] : 0.0f;
    }
}

static __global__ void svp_fill_bias_kernel(int64_t outer, int c, int64_t inner,
                                            const float *bias, float *y)
{
    SVP_CUDA_FOR(e, outer * c * inner)
    {
        y[e] = bias ? bias[(e / inner) % c] : 0.0f;
    }
}

extern "C" {

svp_status_t svp_ops_cuda_im2col(svp_ops_h ops, const svp_ops_conv2d_t *p, int count,
                                 const float *x, float *col)
{
    int     ho = svp_ops_conv2d_out_h(p), wo = svp_ops_conv2d_out_w(p);
    int64_t total = (int64_t)count * p->c_in * p->kh * p->kw * ho * wo;

    svp_im2col_kernel<<<svp_cuda_grid(total), SVP_CUDA_BLOCK, 0,
                        svp_cuda_stream(ops)>>>(count, p->c_in, p->h, p->w, p->kh,
                                                p->kw, p->stride, p->pad, ho, wo, x,
                                                col);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_fill_bias(svp_ops_h ops, int64_t outer, int c,
                                    int64_t inner, const float *bias, float *y)
{
    svp_fill_bias_kernel<<<svp_cuda_grid(outer * c * inner), SVP_CUDA_BLOCK, 0,
                           svp_cuda_stream(ops)>>>(outer, c, inner, bias, y);
    return SVP_CUDA_LAUNCHED();
}
}
