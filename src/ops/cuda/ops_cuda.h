/*
 * CUDA backend internals: fp32 device buffers (plain cudaMalloc memory), one
 * stream per handle on which every kernel and cuBLAS call is queued, cuBLAS
 * for the products (fp32, or on tensor cores with 16-bit operands and fp32
 * accumulation for a bf16/f16 handle), and a grow-only device workspace.
 *
 * Ordering: ops only queue work on the handle's stream and return; upload
 * and download wait for the stream, so a download sees every op queued
 * before it, and errors of a kernel's execution surface there as
 * SVP_ERR_DEVICE.  Launch errors are reported by the op itself.
 *
 * The kernels live in kernels/ (one op per .cu file); their launchers have C
 * linkage and the signatures of the table entries, declared here.  This
 * header is included from C and from CUDA C++.
 */
#ifndef SVP_OPS_CUDA_OPS_CUDA_H
#define SVP_OPS_CUDA_OPS_CUDA_H

#include <cuda_runtime.h>
#include <cublas_v2.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "ops/ops_backend.h"

/* Devices visible to this process; SVP_ERR_DEVICE when there is no driver. */
svp_status_t svp_ops_cuda_device_count(int *count_p);

typedef struct {
    int             device;
    cudaStream_t    stream;
    cublasHandle_t  cublas;
    float          *scratch;        /* grow-only workspace (im2col, scores) */
    size_t          scratch_count;
} svp_ops_cuda_t;

/*
 * The conversion of a CUDA runtime or cuBLAS result into svp_status_t, done
 * once at the library boundary: anything but success is logged with the call
 * text and the library's own message, and becomes SVP_ERR_DEVICE.
 *
 *     status = SVP_CUDA_FUNC(cudaMalloc(&p, n));
 */
svp_status_t svp_ops_cuda_check(cudaError_t err, const char *call,
                                const char *file, int line);
svp_status_t svp_ops_cublas_check(cublasStatus_t err, const char *call,
                                  const char *file, int line);

#define SVP_CUDA_FUNC(_call) \
    svp_ops_cuda_check((_call), #_call, __FILE__, __LINE__)
#define SVP_CUBLAS_FUNC(_call) \
    svp_ops_cublas_check((_call), #_call, __FILE__, __LINE__)

/* Checks that the kernel just queued was launched (bad configuration, no
 * kernel image for this device). */
#define SVP_CUDA_LAUNCHED() SVP_CUDA_FUNC(cudaGetLastError())

static inline svp_ops_cuda_t *svp_ops_cuda(svp_ops_h ops)
{
    return (svp_ops_cuda_t *)ops->impl;
}

/*
 * The workspace, at least count floats.  Valid until the next call; growing
 * it frees the old one, which cudaFree does only after queued work is done.
 */
svp_status_t svp_ops_cuda_scratch(svp_ops_h ops, size_t count, float **buf_p);

/* ---- helpers for the gemm-based ops (kernels/im2col.cu) ---- */

/* y[o, c, i] = bias[c] (0 when bias is NULL) for y [outer, c, inner]. */
svp_status_t svp_ops_cuda_fill_bias(svp_ops_h ops, int64_t outer, int c,
                                    int64_t inner, const float *bias, float *y);

/*
 * col[img, (ci*kh + i)*kw + j, oh*wo + ow] = x[img, ci, oh*s - p + i,
 * ow*s - p + j] (0 outside the image) for images [0, count) of x.
 */
svp_status_t svp_ops_cuda_im2col(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                 int count, const float *x, float *col);

/*
 * col[bt, ci*3 + k, s] = x[b, t + k - 1, ci, s] (0 outside [0, f)) for the
 * frames bt = b*f + t in [bt0, bt0 + count) of x [b, f, c_in, hw].
 */
svp_status_t svp_ops_cuda_frames_col(svp_ops_h ops, int f, int c_in,
                                     int64_t hw, int bt0, int count,
                                     const float *x, float *col);

/*
 * y[i] = x[i] rounded to dtype (SVP_DTYPE_BF16 or SVP_DTYPE_F16, to nearest
 * even) for i in [0, n): the activation operand of a 16-bit product.
 */
svp_status_t svp_ops_cuda_round16(svp_ops_h ops, svp_dtype_t dtype, int64_t n,
                                  const float *x, void *y);

/* ---- the table entries ---- */

svp_status_t svp_ops_cuda_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                 const float *x, const float *w, const float *b,
                                 float *y);
svp_status_t svp_ops_cuda_conv_frames(svp_ops_h ops, int b, int f, int c_in,
                                      int c_out, int64_t hw, const float *x,
                                      const float *w, const float *bias,
                                      float *y);
svp_status_t svp_ops_cuda_linear(svp_ops_h ops, int64_t rows, int in, int out,
                                 const float *x, const float *w, const float *b,
                                 int accumulate, float *y);
svp_status_t svp_ops_cuda_group_norm(svp_ops_h ops,
                                     const svp_ops_group_norm_t *p,
                                     const float *x, const float *gamma,
                                     const float *beta, float *y);
svp_status_t svp_ops_cuda_layer_norm(svp_ops_h ops, int64_t rows, int dim,
                                     float eps, const float *x,
                                     const float *gamma, const float *beta,
                                     float *y);
svp_status_t svp_ops_cuda_attention(svp_ops_h ops, const svp_ops_attention_t *p,
                                    const float *q, const float *k,
                                    const float *v, float *out);
svp_status_t svp_ops_cuda_geglu(svp_ops_h ops, int64_t rows, int inner,
                                const float *x, float *y);
svp_status_t svp_ops_cuda_gelu(svp_ops_h ops, int64_t n, const float *x,
                               float *y);
svp_status_t svp_ops_cuda_silu(svp_ops_h ops, int64_t n, const float *x,
                               float *y);
svp_status_t svp_ops_cuda_add(svp_ops_h ops, int64_t n, const float *a,
                              const float *b, float *y);
svp_status_t svp_ops_cuda_add_broadcast(svp_ops_h ops, int64_t outer,
                                        int64_t mid, int64_t inner, float *x,
                                        const float *v);
svp_status_t svp_ops_cuda_blend(svp_ops_h ops, int64_t n, float alpha,
                                const float *spatial, const float *temporal,
                                float *y);
svp_status_t svp_ops_cuda_timestep_embedding(svp_ops_h ops, int n, int dim,
                                             const float *t, float *y);
svp_status_t svp_ops_cuda_upsample_nearest(svp_ops_h ops, int n, int c, int h,
                                           int w, int ho, int wo,
                                           const float *x, float *y);
svp_status_t svp_ops_cuda_transpose(svp_ops_h ops, int64_t a, int64_t r,
                                    int64_t s, int64_t inner, const float *x,
                                    float *y);
svp_status_t svp_ops_cuda_concat(svp_ops_h ops, int64_t n, int64_t ca,
                                 int64_t cb, int64_t inner, const float *a,
                                 const float *b, float *y);
svp_status_t svp_ops_cuda_copy(svp_ops_h ops, int64_t n, const float *x,
                               float *y);
/* 16-bit matrix weights widened to fp32 on the device (ops_backend.h). */
svp_status_t svp_ops_cuda_widen(svp_ops_h ops, svp_dtype_t dtype,
                                const void *src, size_t count, float *dst);
/* kernels/sched.cu */
svp_status_t svp_ops_cuda_sched_scale(svp_ops_h ops, int64_t n, float c_in,
                                      const float *x, float *y);
svp_status_t svp_ops_cuda_sched_guidance(svp_ops_h ops, int64_t n, float g,
                                         const float *uncond, const float *cond,
                                         float *out);
svp_status_t svp_ops_cuda_sched_euler(svp_ops_h ops, int64_t n,
                                      const svp_sched_euler_coef_t *coef,
                                      const float *v, const float *x, float *y);

#ifdef __cplusplus
}
#endif

#endif
