/*
 * The CPU backend's products: OpenBLAS gemms cut into fixed blocks that the
 * threads share, and the AVX-512 kernel of the fused Winograd convolution
 * (winograd.c).
 *
 * The kernel computes an 8 x 32 tile in 16 registers, its A operand (8
 * values per k) resident in L1 and its B rows streaming from L2: that way
 * round it runs at 175 GFLOP/s per core on Sapphire Rapids, where
 * single-threaded OpenBLAS 0.3.21 reaches 150.  A whole gemm built on it
 * (Goto's blocking, packed panels) did not beat OpenBLAS on SVD's linear
 * layers (240-255 against 260-315 GFLOP/s on 2 threads), so linear layers
 * and im2col convolutions stay with OpenBLAS.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "common/util.h"

#include <cblas.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

__attribute__((target("avx512f"))) void
svp_ops_cpu_kernel_8x32(int k, const float *a, const float *b, int64_t ldb, float *c,
                        int64_t ldc, int add)
{
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0;
    __m512 c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0;
    __m512 c12 = c0, c13 = c0, c14 = c0, c15 = c0;
    int    kk;

    if (add) {
        c0  = _mm512_loadu_ps(c);
        c1  = _mm512_loadu_ps(c + 16);
        c2  = _mm512_loadu_ps(c + ldc);
        c3  = _mm512_loadu_ps(c + ldc + 16);
        c4  = _mm512_loadu_ps(c + 2 * ldc);
        c5  = _mm512_loadu_ps(c + 2 * ldc + 16);
        c6  = _mm512_loadu_ps(c + 3 * ldc);
        c7  = _mm512_loadu_ps(c + 3 * ldc + 16);
        c8  = _mm512_loadu_ps(c + 4 * ldc);
        c9  = _mm512_loadu_ps(c + 4 * ldc + 16);
        c10 = _mm512_loadu_ps(c + 5 * ldc);
        c11 = _mm512_loadu_ps(c + 5 * ldc + 16);
        c12 = _mm512_loadu_ps(c + 6 * ldc);
        c13 = _mm512_loadu_ps(c + 6 * ldc + 16);
        c14 = _mm512_loadu_ps(c + 7 * ldc);
        c15 = _mm512_loadu_ps(c + 7 * ldc + 16);
    }
    for (kk = 0; kk < k; kk++) {
        __m512       b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
        const float *ak = a + 8 * kk;
        __m512       t;

        t   = _mm512_set1_ps(ak[0]);
        c0  = _mm512_fmadd_ps(t, b0, c0);
        c1  = _mm512_fmadd_ps(t, b1, c1);
        t   = _mm512_set1_ps(ak[1]);
        c2  = _mm512_fmadd_ps(t, b0, c2);
        c3  = _mm512_fmadd_ps(t, b1, c3);
        t   = _mm512_set1_ps(ak[2]);
        c4  = _mm512_fmadd_ps(t, b0, c4);
        c5  = _mm512_fmadd_ps(t, b1, c5);
        t   = _mm512_set1_ps(ak[3]);
        c6  = _mm512_fmadd_ps(t, b0, c6);
        c7  = _mm512_fmadd_ps(t, b1, c7);
        t   = _mm512_set1_ps(ak[4]);
        c8  = _mm512_fmadd_ps(t, b0, c8);
        c9  = _mm512_fmadd_ps(t, b1, c9);
        t   = _mm512_set1_ps(ak[5]);
        c10 = _mm512_fmadd_ps(t, b0, c10);
        c11 = _mm512_fmadd_ps(t, b1, c11);
        t   = _mm512_set1_ps(ak[6]);
        c12 = _mm512_fmadd_ps(t, b0, c12);
        c13 = _mm512_fmadd_ps(t, b1, c13);
        t   = _mm512_set1_ps(ak[7]);
        c14 = _mm512_fmadd_ps(t, b0, c14);
        c15 = _mm512_fmadd_ps(t, b1, c15);
        b += ldb;
    }
    _mm512_storeu_ps(c, c0);
    _mm512_storeu_ps(c + 16, c1);
    _mm512_storeu_ps(c + ldc, c2);
    _mm512_storeu_ps(c + ldc + 16, c3);
    c += 2 * ldc;
    _mm512_storeu_ps(c, c4);
    _mm512_storeu_ps(c + 16, c5);
    _mm512_storeu_ps(c + ldc, c6);
    _mm512_storeu_ps(c + ldc + 16, c7);
    c += 2 * ldc;
    _mm512_storeu_ps(c, c8);
    _mm512_storeu_ps(c + 16, c9);
    _mm512_storeu_ps(c + ldc, c10);
    _mm512_storeu_ps(c + ldc + 16, c11);
    c += 2 * ldc;
    _mm512_storeu_ps(c, c12);
    _mm512_storeu_ps(c + 16, c13);
    _mm512_storeu_ps(c + ldc, c14);
    _mm512_storeu_ps(c + ldc + 16, c15);
}

int svp_ops_cpu_has_kernel(void)
{
    return __builtin_cpu_supports("avx512f");
}
#else
void svp_ops_cpu_kernel_8x32(int k, const float *a, const float *b, int64_t ldb,
                             float *c, int64_t ldc, int add)
{
    (void)k;
    (void)a;
    (void)b;
    (void)ldb;
    (void)c;
    (void)ldc;
    (void)add;
}

int svp_ops_cpu_has_kernel(void)
{
    return 0;
}
#endif

/*
 * Products this small run as one OpenBLAS call: splitting costs more than
 * it saves.  unet_small, 2 threads, median of 30: 32^3 0.094 s, 64^3 0.083
 * s, 128^3 0.085 s.
 */
#define SVP_OPS_CPU_GEMM_SPLIT_MIN (64 * 64 * 64)

/*
 * The longer side of C is cut into blocks whose width depends on the shape
 * alone, and the threads share the blocks.  The cut must not follow the
 * thread count: OpenBLAS's kernels compute an element by a different path
 * (a remainder kernel, a small-matrix kernel, another order of the sums)
 * depending on where it lies in the part a call was given and on the
 * call's size, and its Haswell kernels (every AVX2-only CPU, or
 * OPENBLAS_CORETYPE=Haswell) gave other bits for one thread's share than
 * for two threads' halves.  With fixed blocks every element comes from the
 * same call on any thread count.
 *
 * The block count is the largest of these that leaves blocks at least
 * SVP_OPS_CPU_GEMM_BLOCK_MIN wide: each divides evenly among many thread
 * counts (24 among 1, 2, 3, 4, 6, 8 and 12).  Every call packs the whole
 * other operand again, so narrow blocks cost: ten product shapes of the
 * SVD-XT UNet at 16x16 on one Zen 3 thread (OpenBLAS's Zen kernels, min of
 * 7, on a busy machine: a few % of noise) took 9-11% longer cut into 24
 * blocks of at least 64 than as one call, 3% longer in blocks of at least
 * 256.
 */
#define SVP_OPS_CPU_GEMM_BLOCK_MIN 256
static const int svp_ops_gemm_counts[] = {96, 48, 24, 12, 8, 6, 4, 2, 1};

/*
 * The width of the blocks the longer side (len) of a split product is cut
 * into: a multiple of 16 (kernel widths), a function of the shape alone.
 */
static int svp_ops_gemm_block(int len)
{
    int    nblocks = 1, block;
    size_t i;

    for (i = 0; i < SVP_ARRAY_SIZE(svp_ops_gemm_counts); i++) {
        if (len / svp_ops_gemm_counts[i] >= SVP_OPS_CPU_GEMM_BLOCK_MIN) {
            nblocks = svp_ops_gemm_counts[i];
            break;
        }
    }
    block = (len + nblocks - 1) / nblocks;
    return (block + 15) / 16 * 16;
}

/* OpenBLAS, in fixed blocks of the longer side of C shared by the threads. */
static void svp_ops_gemm_blas(int threads, int trans_b, int m, int n, int k,
                              const float *a, int lda, const float *b, int ldb,
                              float beta, float *c, int ldc)
{
    CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
    int             len, block, nblocks, blk;

    if ((int64_t)m * n * k < SVP_OPS_CPU_GEMM_SPLIT_MIN) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, n, k, 1.0f, a, lda, b, ldb,
                    beta, c, ldc);
        return;
    }
    len     = (m >= n) ? m : n;
    block   = svp_ops_gemm_block(len);
    nblocks = (len + block - 1) / block;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (blk = 0; blk < nblocks; blk++) {
        int lo = blk * block, hi = SVP_MIN(len, lo + block);

        if (m >= n) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, hi - lo, n, k, 1.0f,
                        a + (int64_t)lo * lda, lda, b, ldb, beta,
                        c + (int64_t)lo * ldc, ldc);
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, hi - lo, k, 1.0f, a, lda,
                        trans_b ? b + (int64_t)lo * ldb : b + lo, ldb, beta, c + lo,
                        ldc);
        }
    }
}

svp_status_t svp_ops_cpu_sgemm(svp_ops_h ops, int trans_b, int m, int n, int k,
                               const float *a, int lda, const float *b, int ldb,
                               int accumulate, float *c, int ldc)
{
    svp_ops_gemm_blas(ops->threads, trans_b, m, n, k, a, lda, b, ldb,
                      accumulate ? 1.0f : 0.0f, c, ldc);
    return SVP_OK;
}
