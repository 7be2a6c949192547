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
    float  *scratch;        /* grow-only workspace (im2col, scores) */
    size_t  scratch_count;
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

svp_status_t svp_ops_cpu_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                const float *x, const float *w, const float *b,
                                float *y);
/* conv.c: im2col and one gemm per batch of images, any shape */
svp_status_t svp_ops_cpu_conv2d_im2col(svp_ops_h ops,
                                       const svp_ops_conv2d_t *p,
                                       const float *x, const float *w,
                                       const float *b, float *y);
/* winograd.c: F(2x2,3x3), for 3x3 kernels at stride 1, padding 1 */
int          svp_ops_cpu_winograd_applies(const svp_ops_conv2d_t *p);
svp_status_t svp_ops_cpu_conv2d_winograd(svp_ops_h ops,
                                         const svp_ops_conv2d_t *p,
                                         const float *x, const float *w,
                                         const float *b, float *y);
/* winograd.c: the same, transforms and products fused per block of tiles
 * by svp_ops_cpu_kernel_8x32 (needs AVX-512) */
svp_status_t svp_ops_cpu_conv2d_winograd_fused(svp_ops_h ops,
                                               const svp_ops_conv2d_t *p,
                                               const float *x, const float *w,
                                               const float *b, float *y);
/* winograd.c: the temporal conv by F(2,3) along the frames (needs AVX-512) */
svp_status_t svp_ops_cpu_conv_frames_winograd(svp_ops_h ops, int b, int f,
                                              int c_in, int c_out, int64_t hw,
                                              const float *x, const float *w,
                                              const float *bias, float *y);
svp_status_t svp_ops_cpu_conv_frames(svp_ops_h ops, int b, int f, int c_in,
                                     int c_out, int64_t hw, const float *x,
                                     const float *w, const float *bias, float *y);
svp_status_t svp_ops_cpu_linear(svp_ops_h ops, int64_t rows, int in, int out,
                                const float *x, const float *w, const float *b,
                                int accumulate, float *y);
svp_status_t svp_ops_cpu_group_norm(svp_ops_h ops, const svp_ops_group_norm_t *p,
                                    const float *x, const float *gamma,
                                    const float *beta, float *y);
svp_status_t svp_ops_cpu_layer_norm(svp_ops_h ops, int64_t rows, int dim,
                                    float eps, const float *x,
                                    const float *gamma, const float *beta,
                                    float *y);
svp_status_t svp_ops_cpu_attention(svp_ops_h ops, const svp_ops_attention_t *p,
                                   const float *q, const float *k,
                                   const float *v, float *out);
svp_status_t svp_ops_cpu_geglu(svp_ops_h ops, int64_t rows, int inner,
                               const float *x, float *y);
svp_status_t svp_ops_cpu_gelu(svp_ops_h ops, int64_t n, const float *x, float *y);
svp_status_t svp_ops_cpu_silu(svp_ops_h ops, int64_t n, const float *x, float *y);
svp_status_t svp_ops_cpu_add(svp_ops_h ops, int64_t n, const float *a,
                             const float *b, float *y);
svp_status_t svp_ops_cpu_add_broadcast(svp_ops_h ops, int64_t outer, int64_t mid,
                                       int64_t inner, float *x, const float *v);
svp_status_t svp_ops_cpu_blend(svp_ops_h ops, int64_t n, float alpha,
                               const float *spatial, const float *temporal,
                               float *y);
svp_status_t svp_ops_cpu_timestep_embedding(svp_ops_h ops, int n, int dim,
                                            const float *t, float *y);
svp_status_t svp_ops_cpu_upsample_nearest(svp_ops_h ops, int n, int c, int h,
                                          int w, int ho, int wo, const float *x,
                                          float *y);
svp_status_t svp_ops_cpu_transpose(svp_ops_h ops, int64_t a, int64_t r,
                                   int64_t s, int64_t inner, const float *x,
                                   float *y);
svp_status_t svp_ops_cpu_concat(svp_ops_h ops, int64_t n, int64_t ca,
                                int64_t cb, int64_t inner, const float *a,
                                const float *b, float *y);
svp_status_t svp_ops_cpu_copy(svp_ops_h ops, int64_t n, const float *x, float *y);
/* sched.c */
svp_status_t svp_ops_cpu_sched_scale(svp_ops_h ops, int64_t n, float c_in,
                                     const float *x, float *y);
svp_status_t svp_ops_cpu_sched_guidance(svp_ops_h ops, int64_t n, float g,
                                        const float *uncond, const float *cond,
                                        float *out);
svp_status_t svp_ops_cpu_sched_euler(svp_ops_h ops, int64_t n,
                                     const svp_sched_euler_coef_t *coef,
                                     const float *v, const float *x, float *y);

#endif
