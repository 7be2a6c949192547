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
 * linkage and the types of the table entries, declared here from the list
 * of ops.  This header is included from C and from CUDA C++.
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
    int            device;
    cudaStream_t   stream;
    cublasHandle_t cublas;
    float         *scratch; /* grow-only workspace (im2col, scores) */
    size_t         scratch_count;
} svp_ops_cuda_t;

/*
 * The conversion of a CUDA runtime or cuBLAS result into svp_status_t, done
 * once at the library boundary: anything but success is logged with the call
 * text and the library's own message, and becomes SVP_ERR_DEVICE.
 *
 *     status = SVP_CUDA_FUNC(cudaMalloc(&p, n));
 */
svp_status_t svp_ops_cuda_check(cudaError_t err, const char *call, const char *file,
                                int line);
svp_status_t svp_ops_cublas_check(cublasStatus_t err, const char *call,
                                  const char *file, int line);

#define SVP_CUDA_FUNC(_call) svp_ops_cuda_check((_call), #_call, __FILE__, __LINE__)
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
svp_status_t svp_ops_cuda_im2col(svp_ops_h ops, const svp_ops_conv2d_t *p, int count,
                                 const float *x, float *col);

/*
 * col[bt, ci*3 + k, s] = x[b, t + k - 1, ci, s] (0 outside [0, f)) for the
 * frames bt = b*f + t in [bt0, bt0 + count) of x [b, f, c_in, hw].
 */
svp_status_t svp_ops_cuda_frames_col(svp_ops_h ops, int f, int c_in, int64_t hw,
                                     int bt0, int count, const float *x, float *col);

/*
 * y[i] = x[i] rounded to dtype (SVP_DTYPE_BF16 or SVP_DTYPE_F16, to nearest
 * even) for i in [0, n): the activation operand of a 16-bit product.
 */
svp_status_t svp_ops_cuda_round16(svp_ops_h ops, svp_dtype_t dtype, int64_t n,
                                  const float *x, void *y);

/* ---- the table entries ---- */

/*
 * The ops (ops_list.h), svp_ops_cuda_<name> of the type svp_ops_<name>_fn_t
 * each (ops_backend.h): the products in ops_cuda.c, the rest in kernels/.
 */
#define SVP_OPS_CUDA_DECLARE_(_name, _out, _flops, _checks, ...) \
    svp_ops_##_name##_fn_t svp_ops_cuda_##_name;
SVP_OPS_LIST(SVP_OPS_CUDA_DECLARE_, const float *)

#ifdef __cplusplus
}
#endif

#endif
