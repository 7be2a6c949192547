/*
 * CUDA backend: handle setup, device memory, workspace, and the ops that are
 * cuBLAS products (linear, conv2d as im2col + gemm, the temporal conv as a
 * frame-stacking gemm; fp32, or 16-bit operands on tensor cores).
 * Everything else is a kernel in kernels/.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cuda/ops_cuda.h"
#include "common/log.h"
#include "common/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * Upper bound on an im2col (or frame-stacking) buffer, in floats: 64M =
 * 256 MiB.  Images are expanded a group at a time under it, at least one;
 * SVD level 0 (320 channels x 3x3 x 9216 pixels) is 106 MB per image.
 */
#define SVP_OPS_CUDA_COL_MAX ((int64_t)64 << 20)

/* cuBLAS takes int dimensions: longer row counts are cut into parts. */
#define SVP_OPS_CUDA_ROWS_MAX ((int64_t)1 << 30)

svp_status_t svp_ops_cuda_check(cudaError_t err, const char *call, const char *file,
                                int line)
{
    if (err == cudaSuccess) {
        return SVP_OK;
    }
    svp_error("%s failed at %s:%d: %s (%s)", call, file, line,
              cudaGetErrorString(err), cudaGetErrorName(err));
    return SVP_ERR_DEVICE;
}

svp_status_t svp_ops_cublas_check(cublasStatus_t err, const char *call,
                                  const char *file, int line)
{
    if (err == CUBLAS_STATUS_SUCCESS) {
        return SVP_OK;
    }
    svp_error("%s failed at %s:%d: %s (%s)", call, file, line,
              cublasGetStatusString(err), cublasGetStatusName(err));
    return SVP_ERR_DEVICE;
}

static void svp_ops_cuda_cleanup(svp_ops_h ops)
{
    svp_ops_cuda_t *cu = svp_ops_cuda(ops);

    /* cleanup has no status: failures here are logged by the macros only */
    (void)SVP_CUDA_FUNC(cudaStreamSynchronize(cu->stream));
    (void)SVP_CUDA_FUNC(cudaFree(cu->scratch));
    (void)SVP_CUBLAS_FUNC(cublasDestroy(cu->cublas));
    (void)SVP_CUDA_FUNC(cudaStreamDestroy(cu->stream));
    free(cu);
}

static svp_status_t svp_ops_cuda_alloc(svp_ops_h ops, size_t count, float **buf_p)
{
    void       *buf;
    cudaError_t err;

    /* out of memory is the one failure a caller can act on (smaller
     * chunks, fewer ranks per GPU), so it keeps its own status */
    err = cudaMalloc(&buf, (count ? count : 1) * sizeof(float));
    if (err == cudaErrorMemoryAllocation) {
        (void)
            cudaGetLastError(); /* clear it: the next launch check must not see it */
        svp_error("cannot allocate %zu floats of device memory", count);
        return SVP_ERR_NO_MEMORY;
    }
    if (err != cudaSuccess) {
        return svp_ops_cuda_check(err, "cudaMalloc", __FILE__, __LINE__);
    }
    *buf_p = buf;
    return SVP_OK;
}

static void svp_ops_cuda_free(svp_ops_h ops, float *buf)
{
    (void)SVP_CUDA_FUNC(cudaFree(buf));
}

/*
 * Copies on the handle's stream, then waits: the host buffer may be reused
 * as soon as we return, and a download must see every op queued before it.
 */
static svp_status_t svp_ops_cuda_memcpy(svp_ops_h ops, float *dst, const float *src,
                                        size_t count, enum cudaMemcpyKind kind)
{
    svp_ops_cuda_t *cu = svp_ops_cuda(ops);
    svp_status_t    status;

    status = SVP_CUDA_FUNC(
        cudaMemcpyAsync(dst, src, count * sizeof(float), kind, cu->stream));
    if (status != SVP_OK) {
        return status;
    }
    return SVP_CUDA_FUNC(cudaStreamSynchronize(cu->stream));
}

static svp_status_t svp_ops_cuda_upload(svp_ops_h ops, float *dst, const float *src,
                                        size_t count)
{
    return svp_ops_cuda_memcpy(ops, dst, src, count, cudaMemcpyHostToDevice);
}

static svp_status_t svp_ops_cuda_download(svp_ops_h ops, float *dst,
                                          const float *src, size_t count)
{
    return svp_ops_cuda_memcpy(ops, dst, src, count, cudaMemcpyDeviceToHost);
}

svp_status_t svp_ops_cuda_scratch(svp_ops_h ops, size_t count, float **buf_p)
{
    svp_ops_cuda_t *cu = svp_ops_cuda(ops);
    float          *buf;
    svp_status_t    status;

    if (count > cu->scratch_count) {
        status = svp_ops_cuda_alloc(ops, count, &buf);
        if (status != SVP_OK) {
            return status;
        }
        ops->mem.backend_allocs++;
        ops->mem.reserved_bytes += (count - cu->scratch_count) * sizeof(float);
        svp_ops_cuda_free(ops, cu->scratch);
        cu->scratch       = buf;
        cu->scratch_count = count;
    }
    *buf_p = cu->scratch;
    return SVP_OK;
}

/*
 * Products of a 16-bit handle (ops->product_dtype bf16 or f16) run on
 * tensor cores: both operands in that dtype (the weight as held, the
 * activation rounded by svp_ops_cuda_round16() into the workspace), the
 * product and its sum in fp32 (CUBLAS_COMPUTE_32F), the result fp32.  A
 * product of two bf16 or two f16 values is exact in fp32, so this computes
 * what the CPU computes with round_activations (ops.h), up to the order of
 * the fp32 sums.
 */
static cudaDataType_t svp_ops_cuda_type16(svp_dtype_t dtype)
{
    return (dtype == SVP_DTYPE_BF16) ? CUDA_R_16BF : CUDA_R_16F;
}

/* Floats of workspace holding n 16-bit values, whole 16-byte units: a
 * region that follows stays aligned for the tensor-core kernels. */
static size_t svp_ops_cuda_units16(int64_t n)
{
    return (size_t)((n + 7) / 8) * 4;
}

/* The same for n fp32 values. */
static size_t svp_ops_cuda_units32(int64_t n)
{
    return (size_t)((n + 3) / 4) * 4;
}

static svp_status_t svp_ops_cuda_linear16(svp_ops_h ops, int64_t rows, int in,
                                          int out, const float *x, const void *w,
                                          float beta, float *y)
{
    svp_ops_cuda_t *cu    = svp_ops_cuda(ops);
    cudaDataType_t  type  = svp_ops_cuda_type16(ops->product_dtype);
    const float     one   = 1.0f;
    int64_t         chunk = SVP_MIN(SVP_MAX(1, SVP_OPS_CUDA_COL_MAX / in),
                                    SVP_MIN(rows, SVP_OPS_CUDA_ROWS_MAX));
    float          *x16;
    svp_status_t    status;
    int64_t         r0;

    /* the rounded rows a chunk at a time, under the im2col bound */
    status = svp_ops_cuda_scratch(ops, svp_ops_cuda_units16(chunk * in), &x16);
    if (status != SVP_OK) {
        return status;
    }
    for (r0 = 0; r0 < rows; r0 += chunk) {
        int m = (int)SVP_MIN(rows - r0, chunk);

        status = svp_ops_cuda_round16(ops, ops->product_dtype, (int64_t)m * in,
                                      x + r0 * in, x16);
        if (status != SVP_OK) {
            return status;
        }
        status = SVP_CUBLAS_FUNC(
            cublasGemmEx(cu->cublas, CUBLAS_OP_T, CUBLAS_OP_N, out, m, in, &one, w,
                         type, in, x16, type, in, &beta, y + r0 * out, CUDA_R_32F,
                         out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cuda_linear(svp_ops_h ops, int64_t rows, int in, int out,
                                 const float *x, const float *w, const float *b,
                                 int accumulate, float *y)
{
    svp_ops_cuda_t *cu   = svp_ops_cuda(ops);
    const float     one  = 1.0f;
    const float     beta = (accumulate || b != NULL) ? 1.0f : 0.0f;
    svp_status_t    status;
    int64_t         r0;

    /* y = bias (or += bias), then the gemm accumulates into it */
    if (!accumulate && b != NULL) {
        status = svp_ops_cuda_fill_bias(ops, rows, out, 1, b, y);
    } else if (b != NULL) {
        status = svp_ops_cuda_add_broadcast(ops, 1, rows, out, y, b);
    } else {
        status = SVP_OK;
    }
    if (status != SVP_OK) {
        return status;
    }
    if (ops->product_dtype != SVP_DTYPE_F32) {
        return svp_ops_cuda_linear16(ops, rows, in, out, x, w, beta, y);
    }

    /* row-major y[rows, out] = x w^T is column-major y^T = w^T' x^T' with
     * w stored [in, out] and x [in, rows] column-major */
    for (r0 = 0; r0 < rows; r0 += SVP_OPS_CUDA_ROWS_MAX) {
        int m = (int)SVP_MIN(rows - r0, SVP_OPS_CUDA_ROWS_MAX);

        status = SVP_CUBLAS_FUNC(cublasSgemm(cu->cublas, CUBLAS_OP_T, CUBLAS_OP_N,
                                             out, m, in, &one, w, in, x + r0 * in,
                                             in, &beta, y + r0 * out, out));
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cuda_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                 const float *x, const float *w, const float *b,
                                 float *y)
{
    svp_ops_cuda_t *cu  = svp_ops_cuda(ops);
    const float     one = 1.0f;
    int             ho = svp_ops_conv2d_out_h(p), wo = svp_ops_conv2d_out_w(p);
    int             howo     = ho * wo;
    int             k        = p->c_in * p->kh * p->kw;
    int64_t         in_size  = (int64_t)p->c_in * p->h * p->w;
    int64_t         out_size = (int64_t)p->c_out * howo;
    int64_t         col_size = (int64_t)k * howo; /* in_size if pointwise */
    int pointwise = (p->kh == 1 && p->kw == 1 && p->stride == 1 && p->pad == 0);
    int p16       = (ops->product_dtype != SVP_DTYPE_F32);
    int group =
        (pointwise && !p16)
            ? p->n
            : (int)SVP_MAX(1, SVP_MIN(p->n, SVP_OPS_CUDA_COL_MAX / col_size));
    size_t       col_units = pointwise ? 0 : svp_ops_cuda_units32(col_size * group);
    float       *col = NULL, *col16 = NULL;
    svp_status_t status;
    int          n0;

    /* the fp32 columns, then (16-bit products) their rounded copy */
    if (!pointwise || p16) {
        status =
            svp_ops_cuda_scratch(ops,
                                 col_units +
                                     (p16 ? svp_ops_cuda_units16(col_size * group)
                                          : 0),
                                 &col);
        if (status != SVP_OK) {
            return status;
        }
        col16 = col + col_units;
    }
    status = svp_ops_cuda_fill_bias(ops, p->n, p->c_out, howo, b, y);
    if (status != SVP_OK) {
        return status;
    }

    /* per image, row-major y[c_out, howo] += w[c_out, k] col[k, howo]:
     * column-major y^T = col^T w^T, the weight shared (stride 0) */
    for (n0 = 0; n0 < p->n; n0 += group) {
        int          count = SVP_MIN(group, p->n - n0);
        const float *xn    = x + n0 * in_size;

        if (!pointwise) {
            status = svp_ops_cuda_im2col(ops, p, count, xn, col);
            if (status != SVP_OK) {
                return status;
            }
        }
        if (p16) {
            status = svp_ops_cuda_round16(ops, ops->product_dtype, count * col_size,
                                          pointwise ? xn : col, col16);
            if (status == SVP_OK) {
                status = SVP_CUBLAS_FUNC(
                    cublasGemmStridedBatchedEx(cu->cublas, CUBLAS_OP_N, CUBLAS_OP_N,
                                               howo, p->c_out, k, &one, col16,
                                               svp_ops_cuda_type16(
                                                   ops->product_dtype),
                                               howo, col_size, w,
                                               svp_ops_cuda_type16(
                                                   ops->product_dtype),
                                               k, 0, &one, y + n0 * out_size,
                                               CUDA_R_32F, howo, out_size, count,
                                               CUBLAS_COMPUTE_32F,
                                               CUBLAS_GEMM_DEFAULT));
            }
            if (status != SVP_OK) {
                return status;
            }
            continue;
        }
        status = SVP_CUBLAS_FUNC(
            cublasSgemmStridedBatched(cu->cublas, CUBLAS_OP_N, CUBLAS_OP_N, howo,
                                      p->c_out, k, &one, pointwise ? xn : col, howo,
                                      pointwise ? in_size : col_size, w, k, 0, &one,
                                      y + n0 * out_size, howo, out_size, count));
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

/*
 * The temporal conv as a gemm per output frame, as on the CPU: the operand
 * stacks frames t-1, t, t+1 of every input channel (zero outside the clip),
 * which is torch's weight order [c_out, c_in, 3] without repacking.
 */
svp_status_t svp_ops_cuda_conv_frames(svp_ops_h ops, int b, int f, int c_in,
                                      int c_out, int64_t hw, const float *x,
                                      const float *w, const float *bias, float *y)
{
    svp_ops_cuda_t *cu        = svp_ops_cuda(ops);
    const float     one       = 1.0f;
    int64_t         out_frame = (int64_t)c_out * hw;
    int64_t         col_size  = 3 * (int64_t)c_in * hw;
    int             frames    = b * f;
    int    group = (int)SVP_MAX(1, SVP_MIN(frames, SVP_OPS_CUDA_COL_MAX / col_size));
    int    p16   = (ops->product_dtype != SVP_DTYPE_F32);
    size_t col_units = svp_ops_cuda_units32(col_size * group);
    float *col, *col16;
    svp_status_t status;
    int          bt0;

    /* the fp32 columns, then (16-bit products) their rounded copy */
    status =
        svp_ops_cuda_scratch(ops,
                             col_units +
                                 (p16 ? svp_ops_cuda_units16(col_size * group) : 0),
                             &col);
    if (status != SVP_OK) {
        return status;
    }
    col16  = col + col_units;
    status = svp_ops_cuda_fill_bias(ops, frames, c_out, hw, bias, y);
    if (status != SVP_OK) {
        return status;
    }
    for (bt0 = 0; bt0 < frames; bt0 += group) {
        int count = SVP_MIN(group, frames - bt0);

        status = svp_ops_cuda_frames_col(ops, f, c_in, hw, bt0, count, x, col);
        if (status != SVP_OK) {
            return status;
        }
        if (p16) {
            status = svp_ops_cuda_round16(ops, ops->product_dtype, count * col_size,
                                          col, col16);
            if (status == SVP_OK) {
                status = SVP_CUBLAS_FUNC(
                    cublasGemmStridedBatchedEx(cu->cublas, CUBLAS_OP_N, CUBLAS_OP_N,
                                               (int)hw, c_out, 3 * c_in, &one, col16,
                                               svp_ops_cuda_type16(
                                                   ops->product_dtype),
                                               (int)hw, col_size, w,
                                               svp_ops_cuda_type16(
                                                   ops->product_dtype),
                                               3 * c_in, 0, &one,
                                               y + bt0 * out_frame, CUDA_R_32F,
                                               (int)hw, out_frame, count,
                                               CUBLAS_COMPUTE_32F,
                                               CUBLAS_GEMM_DEFAULT));
            }
            if (status != SVP_OK) {
                return status;
            }
            continue;
        }
        status = SVP_CUBLAS_FUNC(
            cublasSgemmStridedBatched(cu->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)hw,
                                      c_out, 3 * c_in, &one, col, (int)hw, col_size,
                                      w, 3 * c_in, 0, &one, y + bt0 * out_frame,
                                      (int)hw, out_frame, count));
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

/* the ops (ops_list.h): svp_ops_cuda_<name> in the slot <name> */
#define SVP_OPS_CUDA_SLOT_(_name, _out, _flops, _checks, ...) \
    ._name = svp_ops_cuda_##_name,

static const svp_ops_ops_t svp_ops_cuda_ops = {.backend    = SVP_OPS_BACKEND_CUDA,
                                               .products16 = 1,
                                               .cleanup    = svp_ops_cuda_cleanup,
                                               .alloc      = svp_ops_cuda_alloc,
                                               .free       = svp_ops_cuda_free,
                                               .upload     = svp_ops_cuda_upload,
                                               .download   = svp_ops_cuda_download,
                                               SVP_OPS_LIST(SVP_OPS_CUDA_SLOT_,
                                                            const float *)};

/* The device itself is chosen by the core (src/ops/ops_gpu.h): Slurm's
 * per-task binding, else the local rank modulo the visible devices. */
svp_status_t svp_ops_cuda_device_count(int *count_p)
{
    int          count = 0;
    svp_status_t status;

    status = SVP_CUDA_FUNC(cudaGetDeviceCount(&count));
    if (status != SVP_OK) {
        return status;
    }
    *count_p = count;
    return SVP_OK;
}

svp_status_t svp_ops_cuda_init(svp_ops_h ops)
{
    svp_ops_cuda_t       *cu;
    struct cudaDeviceProp prop;
    char                  bus_id[32];
    svp_status_t          status;

    cu = calloc(1, sizeof(*cu));
    if (cu == NULL) {
        svp_error("cannot allocate the cuda backend state");
        return SVP_ERR_NO_MEMORY;
    }
    cu->device = ops->device;
    /* the device becomes current on this thread, which is the thread that
     * uses the handle (ops.h: one thread at a time) */
    status = SVP_CUDA_FUNC(cudaSetDevice(cu->device));
    if (status != SVP_OK) {
        goto err_free_cu;
    }
    status = SVP_CUDA_FUNC(cudaGetDeviceProperties(&prop, cu->device));
    if (status != SVP_OK) {
        goto err_free_cu;
    }
    status =
        SVP_CUDA_FUNC(cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking));
    if (status != SVP_OK) {
        goto err_free_cu;
    }
    status = SVP_CUBLAS_FUNC(cublasCreate(&cu->cublas));
    if (status != SVP_OK) {
        goto err_destroy_stream;
    }
    status = SVP_CUBLAS_FUNC(cublasSetStream(cu->cublas, cu->stream));
    if (status != SVP_OK) {
        goto err_destroy_cublas;
    }
    /* full fp32 products for an f32 handle: TF32 would move a UNet
     * forward by ~1e-3 relative, far outside the 1e-5 the golden data
     * allows.  A 16-bit handle's products pass 16-bit operands with
     * CUBLAS_COMPUTE_32F, which runs on tensor cores in this mode. */
    status = SVP_CUBLAS_FUNC(cublasSetMathMode(cu->cublas, CUBLAS_DEFAULT_MATH));
    if (status != SVP_OK) {
        goto err_destroy_cublas;
    }

    ops->vt   = &svp_ops_cuda_ops;
    ops->impl = cu;
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), cu->device) != cudaSuccess) {
        snprintf(bus_id, sizeof(bus_id), "unknown");
    }
    svp_info("cuda device %d: %s, bus %s, %.1f GiB, sm_%d%d", cu->device, prop.name,
             bus_id, (double)prop.totalGlobalMem / (1 << 30), prop.major,
             prop.minor);
    return SVP_OK;

err_destroy_cublas:
    (void)SVP_CUBLAS_FUNC(cublasDestroy(cu->cublas));
err_destroy_stream:
    (void)SVP_CUDA_FUNC(cudaStreamDestroy(cu->stream));
err_free_cu:
    free(cu);
    return status;
}
