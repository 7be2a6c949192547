/*
 * CPU convolutions and linear layers: im2col into the workspace, then one
 * sgemm per image.  A 1x1 stride-1 conv needs no im2col: the image itself
 * is the [C_in, H*W] operand.  With at least as many images as threads, the
 * images run in parallel, each thread with its own im2col buffer and a
 * single-threaded gemm; otherwise each image's gemm is split.
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

/* y[c, s] = bias[c] for every s (the gemm then accumulates with beta 1). */
static void svp_ops_cpu_fill_bias(int c, int64_t s, const float *bias, float *y)
{
    int64_t i;
    int     o;

    for (o = 0; o < c; o++) {
        float  v   = bias ? bias[o] : 0.0f;
        float *row = y + (int64_t)o * s;
        for (i = 0; i < s; i++) {
            row[i] = v;
        }
    }
}

/* col[(ci*kh + i)*kw + j, oh*wo + ow] = x[ci, oh*s - p + i, ow*s - p + j]. */
static void svp_ops_cpu_im2col(const svp_ops_conv2d_t *p, int ho, int wo,
                               const float *x, float *col, int parallel)
{
    int rows = p->c_in * p->kh * p->kw;
    int r;

#pragma omp parallel for schedule(static) if(parallel)
    for (r = 0; r < rows; r++) {
        int          ci  = r / (p->kh * p->kw);
        int          i   = (r / p->kw) % p->kh;
        int          j   = r % p->kw;
        const float *img = x + (int64_t)ci * p->h * p->w;
        float       *dst = col + (int64_t)r * ho * wo;
        int          oh, ow;

        /* stride 1: the valid columns of a row are one contiguous run */
        int lo = 0, hi = wo;
        if (p->stride == 1) {
            lo = SVP_MAX(0, p->pad - j);
            hi = SVP_MIN(wo, p->w + p->pad - j);
        }

        for (oh = 0; oh < ho; oh++) {
            int    iy = oh * p->stride - p->pad + i;
            float *drow = dst + (int64_t)oh * wo;
            if (iy < 0 || iy >= p->h) {
                memset(drow, 0, wo * sizeof(float));
                continue;
            }
            if (p->stride == 1) {
                const float *srow = img + (int64_t)iy * p->w - p->pad + j;
                for (ow = 0; ow < lo; ow++) {
                    drow[ow] = 0.0f;
                }
                if (hi > lo) {
                    memcpy(drow + lo, srow + lo, (hi - lo) * sizeof(float));
                }
                for (ow = SVP_MAX(lo, hi); ow < wo; ow++) {
                    drow[ow] = 0.0f;
                }
                continue;
            }
            for (ow = 0; ow < wo; ow++) {
                int ix = ow * p->stride - p->pad + j;
                dst[(int64_t)oh * wo + ow] =
                    (ix >= 0 && ix < p->w) ? img[(int64_t)iy * p->w + ix] : 0.0f;
            }
        }
    }
}

svp_status_t svp_ops_cpu_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                const float *x, const float *w, const float *b,
                                float *y)
{
    int          ho = svp_ops_conv2d_out_h(p), wo = svp_ops_conv2d_out_w(p);
    int          k  = p->c_in * p->kh * p->kw;
    int64_t      in_size  = (int64_t)p->c_in * p->h * p->w;
    int64_t      out_size = (int64_t)p->c_out * ho * wo;
    int64_t      col_size = (int64_t)k * ho * wo;
    int          pointwise = (p->kh == 1 && p->kw == 1 && p->stride == 1 &&
                              p->pad == 0);
    /* per-thread im2col buffers, unless they would pass 256 MiB together
     * (SVD level 0 needs 212 MiB per buffer): then split each gemm */
    int          by_image = (p->n >= ops->threads &&
                             (pointwise || (int64_t)ops->threads * col_size *
                                           (int64_t)sizeof(float) <= ((int64_t)256 << 20)));
    float       *col = NULL;
    svp_status_t status;
    int          n;

    if (!pointwise) {
        status = svp_ops_cpu_scratch(ops, (size_t)col_size *
                                     (by_image ? ops->threads : 1), &col);
        if (status != SVP_OK) {
            return status;
        }
    }

    if (by_image) {
#pragma omp parallel for schedule(dynamic) num_threads(ops->threads)
        for (n = 0; n < p->n; n++) {
#ifdef _OPENMP
            float *mycol = col ? col + omp_get_thread_num() * col_size : NULL;
#else
            float *mycol = col;
#endif
            const float *xn = x + n * in_size;
            float       *yn = y + n * out_size;

            if (!pointwise) {
                svp_ops_cpu_im2col(p, ho, wo, xn, mycol, 0);
            }
            svp_ops_cpu_fill_bias(p->c_out, (int64_t)ho * wo, b, yn);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->c_out,
                        ho * wo, k, 1.0f, w, k, pointwise ? xn : mycol,
                        ho * wo, 1.0f, yn, ho * wo);
        }
        return SVP_OK;
    }

    for (n = 0; n < p->n; n++) {
        const float *xn = x + n * in_size;
        float       *yn = y + n * out_size;

        if (!pointwise) {
            svp_ops_cpu_im2col(p, ho, wo, xn, col, 1);
        }
        svp_ops_cpu_fill_bias(p->c_out, (int64_t)ho * wo, b, yn);
        svp_ops_cpu_sgemm(0, p->c_out, ho * wo, k, 1.0f, w, k,
                          pointwise ? xn : col, ho * wo, 1.0f, yn, ho * wo);
    }
    return SVP_OK;
}

/*
 * The temporal conv as a gemm per output frame: the operand stacks, for
 * every input channel, frames t-1, t, t+1 (zero outside the clip), which
 * matches torch's weight order [c_out, c_in, 3] without repacking.
 */
svp_status_t svp_ops_cpu_conv_frames(svp_ops_h ops, int b, int f, int c_in,
                                     int c_out, int64_t hw, const float *x,
                                     const float *w, const float *bias, float *y)
{
    int64_t      in_frame = (int64_t)c_in * hw, out_frame = (int64_t)c_out * hw;
    int64_t      col_size = 3 * in_frame;
    float       *col;
    svp_status_t status;
    int          bt;

    status = svp_ops_cpu_scratch(ops, (size_t)col_size * ops->threads, &col);
    if (status != SVP_OK) {
        return status;
    }

#pragma omp parallel for schedule(dynamic) num_threads(ops->threads)
    for (bt = 0; bt < b * f; bt++) {
#ifdef _OPENMP
        float       *mycol = col + omp_get_thread_num() * col_size;
#else
        float       *mycol = col;
#endif
        int          t    = bt % f;
        const float *clip = x + (int64_t)(bt / f) * f * in_frame;
        float       *yt   = y + (int64_t)bt * out_frame;
        int          r;

        for (r = 0; r < 3 * c_in; r++) {
            int    ci = r / 3, src = t + r % 3 - 1;
            float *dst = mycol + (int64_t)r * hw;

            if (src < 0 || src >= f) {
                memset(dst, 0, hw * sizeof(float));
            } else {
                memcpy(dst, clip + (int64_t)src * in_frame + ci * hw,
                       hw * sizeof(float));
            }
        }
        svp_ops_cpu_fill_bias(c_out, hw, bias, yt);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c_out, hw,
                    3 * c_in, 1.0f, w, 3 * c_in, mycol, hw, 1.0f, yt, hw);
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_linear(svp_ops_h ops, int64_t rows, int in, int out,
                                const float *x, const float *w, const float *b,
                                int accumulate, float *y)
{
    int64_t r;

    /* y = bias (or += bias), then the gemm accumulates into it */
    if (!accumulate || b != NULL) {
#pragma omp parallel for schedule(static) if(rows * out > SVP_OPS_CPU_PAR_MIN)
        for (r = 0; r < rows; r++) {
            float *yr = y + r * out;
            int    o;
            if (!accumulate && b == NULL) {
                memset(yr, 0, out * sizeof(float));
            } else if (!accumulate) {
                memcpy(yr, b, out * sizeof(float));
            } else {
#pragma omp simd
                for (o = 0; o < out; o++) {
                    yr[o] += b[o];
                }
            }
        }
    }
    svp_ops_cpu_sgemm(1, (int)rows, out, in, 1.0f, x, in, w, in, 1.0f, y, out);
    return SVP_OK;
}
