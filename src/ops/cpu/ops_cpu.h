/*
 * CPU backend internals: fp32 host buffers, OpenBLAS sgemm for products,
 * OpenMP for everything parallel.
 *
 * One thread pool only.  With OpenBLAS threading its own gemms, its pthread
 * pool and OpenMP's spun against each other between ops: on 2 cores the
 * unet_small forward spent most of its time in sched_yield and libgomp's
 * spin loop (perf), 0.7 s median with outliers of 5 s.  So OpenBLAS runs
 * single-threaded and the backend splits every gemm across OpenMP threads
 * itself (svp_ops_cpu_sgemm) or runs independent gemms in parallel.
 */
#ifndef SVP_OPS_CPU_OPS_CPU_H
#define SVP_OPS_CPU_OPS_CPU_H

#include "ops/ops_backend.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    float *scratch; /* grow-only workspace (im2col, scores) */
    size_t scratch_count;
    /* grow-only bf16 workspaces of the bf16 products (bf16.c): the packed
     * weight, the rounded rows, the channels-last image, the reordered
     * weight */
    uint16_t *scratch16[4];
    size_t    scratch16_count[4];
} svp_ops_cpu_t;

/*
 * The workspace, at least count floats.  Valid until the next call; one op
 * uses it at a time (handles are single-threaded).
 */
svp_status_t svp_ops_cpu_scratch(svp_ops_h ops, size_t count, float **buf_p);

/*
 * Row-major C[m,n] = A[m,k] B[k,n] (B^T when trans_b, B then [n,k]), + C
 * when accumulate, cut along the longer side of C into blocks whose width
 * depends on the shape alone, shared among the OpenMP threads; each block
 * is one single-threaded OpenBLAS call (gemm.c), so the bits do not depend
 * on the thread count.  Call it outside parallel regions; inside one, call
 * cblas_sgemm directly.
 */
svp_status_t svp_ops_cpu_sgemm(svp_ops_h ops, int trans_b, int m, int n, int k,
                               const float *a, int lda, const float *b, int ldb,
                               int accumulate, float *c, int ldc);

/*
 * The kernel: c[r][0..31] (+)= sum_kk a[kk][r] b[kk][0..31] for r < 8, b's
 * rows ldb apart, added to c when add; every value one chain of fused
 * multiply-adds in kk's order.  Needs AVX-512 (svp_ops_cpu_has_kernel()).
 */
void svp_ops_cpu_kernel_8x32(int k, const float *a, const float *b, int64_t ldb,
                             float *c, int64_t ldc, int add);
int  svp_ops_cpu_has_kernel(void);

/*
 * The calling thread's part of a workspace cut into parts of per_thread
 * floats, one per OpenMP thread (inside a parallel region).
 */
static inline float *svp_ops_cpu_thread_part(float *base, int64_t per_thread)
{
#ifdef _OPENMP
    return base + (int64_t)omp_get_thread_num() * per_thread;
#else
    (void)per_thread;
    return base;
#endif
}

/*
 * Below this many elements a loop runs on one thread (fork cost > work).
 * unet_small, 2 threads, median of 30: 4096 0.085 s, 16384 0.084 s, 65536
 * 0.107 s.
 */
#define SVP_OPS_CPU_PAR_MIN 16384

/*
 * Element loops run in blocks of this many values, fixed from the start of
 * the buffer, that the threads share; each block is one `omp simd` loop.
 * A vectorised loop computes its last few values by the scalar code, and
 * for expf and erff that is glibc's scalar function where the rest get
 * libmvec's vector one, a few ulp apart: a split that followed the thread
 * count (`parallel for simd`) moved that remainder, and the bits, with it.
 * 4096 values (16 KiB) are a few microseconds of work, far above a block's
 * scheduling cost.
 */
#define SVP_OPS_CPU_BLOCK 4096

/*
 * The ops (ops_list.h), svp_ops_cpu_<name> of the type svp_ops_<name>_fn_t
 * each (ops_backend.h): conv.c, norm.c, gemm.c, attention.c, elementwise.c,
 * sched.c, and the widening in ops_cpu.c.
 */
#define SVP_OPS_CPU_DECLARE_(_name, _out, _flops, _checks, ...) \
    svp_ops_##_name##_fn_t svp_ops_cpu_##_name;
SVP_OPS_LIST(SVP_OPS_CPU_DECLARE_, const float *)

/*
 * bf16.c: the products of a bf16 handle on the CPU's BF16 units
 * (ops->native16): conv2d and conv_frames as the ops list defines them
 * (ops_list.h), with the weight as held and the activation rounded to
 * bf16.  svp_ops_cpu_linear_bf16(): y[rows, out] (+ when
 * accumulate)= x w^T with w [out, in] bf16 as held, x rounded.  Every sum
 * in fp32, in one order per element whatever the shape, tiling or threads.
 * (svp_ops_cpu_has_bf16() is declared in ops_backend.h.)
 */
svp_status_t svp_ops_cpu_conv2d_bf16(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                     const float *x, const uint16_t *w,
                                     const float *bias, float *y);
svp_status_t svp_ops_cpu_conv_frames_bf16(svp_ops_h ops, int b, int f, int c_in,
                                          int c_out, int64_t hw, const float *x,
                                          const uint16_t *w, const float *bias,
                                          float *y);
svp_status_t svp_ops_cpu_linear_bf16(svp_ops_h ops, int64_t rows, int in, int out,
                                     const float *x, const uint16_t *w,
                                     int accumulate, float *y);
void         svp_ops_cpu_bf16_cleanup(svp_ops_cpu_t *cpu);

/* The ways conv2d and conv_frames run, which svp_ops_cpu_conv2d() and
 * svp_ops_cpu_conv_frames() choose among. */
/* conv.c: im2col and one gemm per batch of images, any shape */
svp_ops_conv2d_fn_t svp_ops_cpu_conv2d_im2col;
/* winograd.c: F(2x2,3x3), for 3x3 kernels at stride 1, padding 1 */
int                 svp_ops_cpu_winograd_applies(const svp_ops_conv2d_t *p);
svp_ops_conv2d_fn_t svp_ops_cpu_conv2d_winograd;
/* winograd.c: the same, transforms and products fused per block of tiles
 * by svp_ops_cpu_kernel_8x32 (needs AVX-512) */
svp_ops_conv2d_fn_t svp_ops_cpu_conv2d_winograd_fused;
/* winograd.c: the temporal conv by F(2,3) along the frames (needs AVX-512) */
svp_ops_conv_frames_fn_t svp_ops_cpu_conv_frames_winograd;

#endif
