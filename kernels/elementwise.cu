/*
 * Activations, elementwise arithmetic and data movement: grid-stride loops,
 * one thread per element.  The formulas are written as the CPU backend's
 * (src/ops/cpu/elementwise.c) so that both round alike; nvcc may still fuse
 * a multiply and an add into one FMA, which is the only difference (1 ulp).
 */
#include "kernels.cuh"
#include "ops/ops_math.h"


static __global__ void svp_geglu_kernel(int64_t rows, int inner, const float *x,
                                        float *y)
{
    SVP_CUDA_FOR(e, rows * inner)
    {
        int64_t      r     = e / inner;
        int          i     = (int)(e % inner);
        const float *value = x + r * 2 * inner;

        y[e] = value[i] * svp_math_gelu(value[inner + i]);
    }
}

static __global__ void svp_gelu_kernel(int64_t n, const float *x, float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_math_gelu(x[i]);
    }
}

static __global__ void svp_silu_kernel(int64_t n, const float *x, float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_math_silu(x[i]);
    }
}

/* 16-bit weights to fp32, exactly (the same functions as the host's). */
static __global__ void svp_widen_bf16_kernel(int64_t n, const uint16_t *x, float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_math_bf16_to_f32(x[i]);
    }
}

static __global__ void svp_widen_f16_kernel(int64_t n, const uint16_t *x, float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_math_f16_to_f32(x[i]);
    }
}

/*
 * fp32 activations to the 16-bit operand of a tensor-core product, round to
 * nearest even with the host's functions (the CPU twin of the product,
 * src/ops/ops_weights.c, rounds with the same ones).
 */
static __global__ void svp_round_bf16_kernel(int64_t n, const float *x, uint16_t *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_math_f32_to_bf16(x[i]);
    }
}

static __global__ void svp_round_f16_kernel(int64_t n, const float *x, uint16_t *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = svp_math_f32_to_f16(x[i]);
    }
}

static __global__ void svp_add_kernel(int64_t n, const float *a, const float *b,
                                      float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = a[i] + b[i];
    }
}

static __global__ void svp_add_broadcast_kernel(int64_t outer, int64_t mid,
                                                int64_t inner, float *x,
                                                const float *v)
{
    SVP_CUDA_FOR(e, outer * mid * inner)
    {
        x[e] += v[(e / (mid * inner)) * inner + e % inner];
    }
}

static __global__ void svp_blend_kernel(int64_t n, float alpha, float beta,
                                        const float *spatial, const float *temporal,
                                        float *y)
{
    SVP_CUDA_FOR(i, n)
    {
        y[i] = spatial[i] * alpha + temporal[i] * beta;
    }
}

/* e indexes y [a, s, r, inner]; the source is x [a, r, s, inner]. */
static __global__ void svp_transpose_kernel(int64_t a, int64_t r, int64_t s,
                                            int64_t inner, const float *x, float *y)
{
    SVP_CUDA_FOR(e, a * r * s * inner)
    {
        int64_t i  = e % inner;
        int64_t ri = (e / inner) % r;
        int64_t si = (e / (inner * r)) % s;
        int64_t ai = e / (inner * r * s);

        y[e] = x[((ai * r + ri) * s + si) * inner + i];
    }
}

/* e indexes y [n, ca + cb, inner]. */
static __global__ void svp_concat_kernel(int64_t n, int64_t ca, int64_t cb,
                                         int64_t inner, const float *a,
                                         const float *b, float *y)
{
    int64_t row = (ca + cb) * inner;

    SVP_CUDA_FOR(e, n * row)
    {
        int64_t ni = e / row, off = e % row;

        y[e] = (off < ca * inner) ? a[ni * ca * inner + off]
                                  : b[ni * cb * inner + off - ca * inner];
    }
}

extern "C" {

svp_status_t svp_ops_cuda_geglu(svp_ops_h ops, int64_t rows, int inner,
                                const float *x, float *y)
{
    svp_geglu_kernel<<<svp_cuda_grid(rows * inner), SVP_CUDA_BLOCK, 0,
                       svp_cuda_stream(ops)>>>(rows, inner, x, y);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_gelu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    svp_gelu_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                      svp_cuda_stream(ops)>>>(n, x, y);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_silu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    svp_silu_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                      svp_cuda_stream(ops)>>>(n, x, y);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_widen(svp_ops_h ops, svp_dtype_t dtype, const void *src,
                                size_t count, float *dst)
{
    int64_t n = (int64_t)count;

    if (dtype == SVP_DTYPE_BF16) {
        svp_widen_bf16_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                                svp_cuda_stream(ops)>>>(n, (const uint16_t *)src,
                                                        dst);
    } else if (dtype == SVP_DTYPE_F16) {
        svp_widen_f16_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                               svp_cuda_stream(ops)>>>(n, (const uint16_t *)src,
                                                       dst);
    } else {
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_round16(svp_ops_h ops, svp_dtype_t dtype, int64_t n,
                                  const float *x, void *y)
{
    if (dtype == SVP_DTYPE_BF16) {
        svp_round_bf16_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                                svp_cuda_stream(ops)>>>(n, x, (uint16_t *)y);
    } else if (dtype == SVP_DTYPE_F16) {
        svp_round_f16_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                               svp_cuda_stream(ops)>>>(n, x, (uint16_t *)y);
    } else {
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_add(svp_ops_h ops, int64_t n, const float *a,
                              const float *b, float *y)
{
    svp_add_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0, svp_cuda_stream(ops)>>>(n,
                                                                                  a,
                                                                                  b,
                                                                                  y);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_add_broadcast(svp_ops_h ops, int64_t outer, int64_t mid,
                                        int64_t inner, float *x, const float *v)
{
    svp_add_broadcast_kernel<<<svp_cuda_grid(outer * mid * inner), SVP_CUDA_BLOCK, 0,
                               svp_cuda_stream(ops)>>>(outer, mid, inner, x, v);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_blend(svp_ops_h ops, int64_t n, float alpha,
                                const float *spatial, const float *temporal,
                                float *y)
{
    svp_blend_kernel<<<svp_cuda_grid(n), SVP_CUDA_BLOCK, 0,
                       svp_cuda_stream(ops)>>>(n, alpha, 1.0f - alpha, spatial,
                                               temporal, y);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_transpose(svp_ops_h ops, int64_t a, int64_t r, int64_t s,
                                    int64_t inner, const float *x, float *y)
{
    svp_transpose_kernel<<<svp_cuda_grid(a * r * s * inner), SVP_CUDA_BLOCK, 0,
                           svp_cuda_stream(ops)>>>(a, r, s, inner, x, y);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_concat(svp_ops_h ops, int64_t n, int64_t ca, int64_t cb,
                                 int64_t inner, const float *a, const float *b,
                                 float *y)
{
    svp_concat_kernel<<<svp_cuda_grid(n * (ca + cb) * inner), SVP_CUDA_BLOCK, 0,
                        svp_cuda_stream(ops)>>>(n, ca, cb, inner, a, b, y);
    return SVP_CUDA_LAUNCHED();
}

svp_status_t svp_ops_cuda_copy(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    return SVP_CUDA_FUNC(cudaMemcpyAsync(y, x, n * sizeof(float),
                                         cudaMemcpyDeviceToDevice,
                                         svp_cuda_stream(ops)));
}
}
