/*
 * CPU convolutions and linear layers.  A 3x3 stride-1 conv on images of
 * 8x8 or more goes to Winograd's F(2x2,3x3) (winograd.c).  Any other conv:
 * im2col into the workspace, then one sgemm for a batch of images (as many
 * as keep the column buffer under 256 MiB), split over the threads by
 * svp_ops_cpu_sgemm().  Batching packs each weight once per batch rather
 * than once per image, which dominates the small deep levels of a UNet.  A
 * lone 1x1 stride-1 conv needs no im2col: the image itself is the
 * [C_in, H*W] operand.
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

/*
 * col[(ci*kh + i)*kw + j, oh*wo + ow] = x[ci, oh*s - p + i, ow*s - p + j],
 * rows ld elements apart (ld >= ho * wo).
 */
static void svp_ops_cpu_im2col(const svp_ops_conv2d_t *p, int ho, int wo,
                               const float *x, float *col, int64_t ld, int parallel)
{
    int rows = p->c_in * p->kh * p->kw;
    int r;

#pragma omp parallel for schedule(static) if (parallel)
    for (r = 0; r < rows; r++) {
        int          ci  = r / (p->kh * p->kw);
        int          i   = (r / p->kw) % p->kh;
        int          j   = r % p->kw;
        const float *img = x + (int64_t)ci * p->h * p->w;
        float       *dst = col + (int64_t)r * ld;
        int          oh, ow;

        /* stride 1: the valid columns of a row are one contiguous run */
        int lo = 0, hi = wo;
        if (p->stride == 1) {
            lo = SVP_MAX(0, p->pad - j);
            hi = SVP_MIN(wo, p->w + p->pad - j);
        }

        for (oh = 0; oh < ho; oh++) {
            int    iy   = oh * p->stride - p->pad + i;
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

/* Column-buffer elements one batched gemm may use (256 MiB of floats). */
#define SVP_OPS_CPU_COL_MAX ((int64_t)64 << 20)

/*
 * y[n, o, s] = ytmp[o, n * ss + s] + bias[o]: the batched gemm's output back
 * into the images' own layout.
 */
static void svp_ops_cpu_unbatch(int m, int c_out, int64_t ss, const float *ytmp,
                                const float *bias, float *y)
{
    int64_t r;

#pragma omp parallel for schedule(static) if ((int64_t)m * c_out * ss > \
                                              SVP_OPS_CPU_PAR_MIN)
    for (r = 0; r < (int64_t)m * c_out; r++) {
        int          n = (int)(r / c_out), o = (int)(r % c_out);
        const float *src = ytmp + (int64_t)o * m * ss + n * ss;
        float       *dst = y + r * ss;
        float        v   = bias ? bias[o] : 0.0f;
        int64_t      i;

#pragma omp simd
        for (i = 0; i < ss; i++) {
            dst[i] = src[i] + v;
        }
    }
}

/*
 * Several images per gemm: the im2col columns of images n0 .. n0+m-1 side
 * by side ([k, m * ho * wo]), one product with the weights, then back to
 * [m, c_out, ho * wo].  The weights are packed once per batch instead of
 * once per image, which is what the deep, small levels of a UNet spend
 * their time on (a 1280 x 11520 weight for 4 output positions).
 */
svp_status_t svp_ops_cpu_conv2d_im2col(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                       const float *x, const float *w,
                                       const float *b, float *y)
{
    int          ho = svp_ops_conv2d_out_h(p), wo = svp_ops_conv2d_out_w(p);
    int          k        = p->c_in * p->kh * p->kw;
    int64_t      ss       = (int64_t)ho * wo;
    int64_t      in_size  = (int64_t)p->c_in * p->h * p->w;
    int64_t      out_size = (int64_t)p->c_out * ss;
    int          batch    = (int)SVP_MAX(1, SVP_MIN((int64_t)p->n,
                                                    SVP_OPS_CPU_COL_MAX / ((int64_t)k * ss)));
    float       *col, *ytmp;
    svp_status_t status;
    int          n0;

    status = svp_ops_cpu_scratch(ops, (size_t)batch * ss * (k + p->c_out), &col);
    if (status != SVP_OK) {
        return status;
    }
    ytmp = col + (int64_t)batch * ss * k;

    for (n0 = 0; n0 < p->n; n0 += batch) {
        int     m  = SVP_MIN(batch, p->n - n0);
        int64_t ld = (int64_t)m * ss, i;

        if (m == 1) {
            /* one image: straight into y, no reordering */
            const float *xn = x + (int64_t)n0 * in_size;
            float       *yn = y + (int64_t)n0 * out_size;
            int          pointwise =
                (p->kh == 1 && p->kw == 1 && p->stride == 1 && p->pad == 0);

            if (!pointwise) {
                svp_ops_cpu_im2col(p, ho, wo, xn, col, ss, 1);
            }
            svp_ops_cpu_fill_bias(p->c_out, ss, b, yn);
            status =
                svp_ops_cpu_sgemm(ops, 0, p->c_out, (int)ss, k, w, k,
                                  pointwise ? xn : col, (int)ss, 1, yn, (int)ss);
            if (status != SVP_OK) {
                return status;
            }
            continue;
        }
        /* image i's columns at [i * ss, (i + 1) * ss) of every row */
#pragma omp parallel for schedule(static)
        for (i = 0; i < m; i++) {
            svp_ops_cpu_im2col(p, ho, wo, x + (int64_t)(n0 + i) * in_size,
                               col + i * ss, ld, 0);
        }
        status = svp_ops_cpu_sgemm(ops, 0, p->c_out, (int)ld, k, w, k, col, (int)ld,
                                   0, ytmp, (int)ld);
        if (status != SVP_OK) {
            return status;
        }
        svp_ops_cpu_unbatch(m, p->c_out, ss, ytmp, b, y + (int64_t)n0 * out_size);
    }
    return SVP_OK;
}

/*
 * The fused Winograd reads its transformed weight once per block of tiles:
 * beyond this many (c_out x c_in) the 16 whole gemms of the other version
 * do better.  28 images of 8x8, 2 threads, fused / gemms: 640 x 640 0.045 /
 * 0.056 s, 640 x 1280 0.110 / 0.107 s, 640 x 1920 0.173 / 0.160 s, 1280 x
 * 1280 0.222 / 0.190 s.
 */
#define SVP_OPS_CPU_WINO_FUSED_MAX (1024 * 1024)

svp_status_t svp_ops_cpu_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                const float *x, const float *w, const float *b,
                                float *y)
{
    /* bf16 products: every conv as im2col and one product on the BF16
     * units, as the CUDA backend computes it (Winograd's transforms would
     * round other values than the activations) */
    if (ops->native16) {
        return svp_ops_cpu_conv2d_bf16(ops, p, x, (const uint16_t *)(const void *)w,
                                       b, y);
    }
    if (svp_ops_cpu_winograd_applies(p)) {
        if (svp_ops_cpu_has_kernel() &&
            (int64_t)p->c_out * p->c_in <= SVP_OPS_CPU_WINO_FUSED_MAX) {
            return svp_ops_cpu_conv2d_winograd_fused(ops, p, x, w, b, y);
        }
        return svp_ops_cpu_conv2d_winograd(ops, p, x, w, b, y);
    }
    return svp_ops_cpu_conv2d_im2col(ops, p, x, w, b, y);
}

/*
 * The temporal conv on small frames: one gemm over a batch of output
 * frames (their columns side by side, as in conv2d), whose operand
 * stacks, for every input channel, frames t-1, t, t+1 (zero outside the
 * clip), which matches torch's weight order [c_out, c_in, 3] without
 * repacking.
 */
static svp_status_t svp_ops_cpu_conv_frames_batched(svp_ops_h ops, int b, int f,
                                                    int c_in, int c_out, int64_t hw,
                                                    const float *x, const float *w,
                                                    const float *bias, float *y)
{
    int64_t      in_frame = (int64_t)c_in * hw, out_frame = (int64_t)c_out * hw;
    int          frames = b * f;
    int          batch  = (int)SVP_MAX(1, SVP_MIN((int64_t)frames,
                                                  SVP_OPS_CPU_COL_MAX / (3 * in_frame)));
    float       *col, *ytmp;
    svp_status_t status;
    int          t0;

    status = svp_ops_cpu_scratch(ops, (size_t)batch * hw * (3 * c_in + c_out), &col);
    if (status != SVP_OK) {
        return status;
    }
    ytmp = col + (int64_t)batch * hw * 3 * c_in;

    for (t0 = 0; t0 < frames; t0 += batch) {
        int     m  = SVP_MIN(batch, frames - t0);
        int64_t ld = (int64_t)m * hw, r;

        /* row r = 3 * ci + tap, frame i's columns at [i * hw, (i + 1) * hw) */
#pragma omp parallel for schedule(static) if (ld * c_in > SVP_OPS_CPU_PAR_MIN)
        for (r = 0; r < (int64_t)3 * c_in * m; r++) {
            int          i = (int)(r % m), row = (int)(r / m);
            int          bt = t0 + i, t = bt % f;
            int          ci = row / 3, src = t + row % 3 - 1;
            const float *clip = x + (int64_t)(bt / f) * f * in_frame;
            float       *dst  = col + (int64_t)row * ld + i * hw;

            if (src < 0 || src >= f) {
                memset(dst, 0, hw * sizeof(float));
            } else {
                memcpy(dst, clip + (int64_t)src * in_frame + ci * hw,
                       hw * sizeof(float));
            }
        }
        status = svp_ops_cpu_sgemm(ops, 0, c_out, (int)ld, 3 * c_in, w, 3 * c_in,
                                   col, (int)ld, 0, ytmp, (int)ld);
        if (status != SVP_OK) {
            return status;
        }
        svp_ops_cpu_unbatch(m, c_out, hw, ytmp, bias, y + (int64_t)t0 * out_frame);
    }
    return SVP_OK;
}

/*
 * The temporal conv on large frames: one product per output frame, with no
 * copy: frames
 * t-1, t, t+1 of a clip lie one after another, so x[t-1 .. t+1] already is
 * the [3 * c_in, hw] operand, rows ordered (tap, channel).  The weight is
 * gathered once per call from torch's [c_out, c_in, 3] into that order,
 * [c_out, 3 * c_in]; at the clip's ends the missing frame's tap is left
 * out (a shorter product over the taps whose frames exist).  Whole frames
 * are shared out among the threads (each product single-threaded), so no
 * bit depends on the thread count.
 */
static svp_status_t svp_ops_cpu_conv_frames_direct(svp_ops_h ops, int b, int f,
                                                   int c_in, int c_out, int64_t hw,
                                                   const float *x, const float *w,
                                                   const float *bias, float *y)
{
    int64_t      in_frame = (int64_t)c_in * hw, out_frame = (int64_t)c_out * hw;
    int64_t      pairs  = (int64_t)c_out * c_in, i;
    int          frames = b * f, bt;
    float       *wk;
    svp_status_t status;

    status = svp_ops_cpu_scratch(ops, (size_t)(3 * pairs), &wk);
    if (status != SVP_OK) {
        return status;
    }
#pragma omp parallel for schedule(static) if (pairs > SVP_OPS_CPU_PAR_MIN)
    for (i = 0; i < pairs; i++) {
        int64_t o = i / c_in, c = i % c_in;

        wk[o * 3 * c_in + c]            = w[3 * i];
        wk[o * 3 * c_in + c_in + c]     = w[3 * i + 1];
        wk[o * 3 * c_in + 2 * c_in + c] = w[3 * i + 2];
    }

#pragma omp parallel for schedule(static)
    for (bt = 0; bt < frames; bt++) {
        int    t  = bt % f;
        int    k0 = (t == 0) ? 1 : 0, k1 = (t == f - 1) ? 2 : 3;
        float *yt = y + (int64_t)bt * out_frame;

        svp_ops_cpu_fill_bias(c_out, hw, bias, yt);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c_out, (int)hw,
                    (k1 - k0) * c_in, 1.0f, wk + k0 * c_in, 3 * c_in,
                    x + (int64_t)(bt - 1 + k0) * in_frame, (int)hw, 1.0f, yt,
                    (int)hw);
    }
    return SVP_OK;
}

/*
 * Frames of this many pixels or more take F(2,3) along the frames
 * (winograd.c, with AVX-512) or else the direct path; smaller ones the
 * batched path.  2 threads, 14 frames, c_in = c_out, F(2,3) / direct /
 * batched: 128 ch at 128x128 0.089 / 0.097 / 0.156 s, 512 at 32x32 0.069 /
 * 0.080 / 0.090 s; direct / batched: 320 at 16x16 0.024 / 0.021 s, 1280 at
 * 4x4 0.040 / 0.018 s (batch 2).
 */
#define SVP_OPS_CPU_FRAMES_DIRECT_HW 1024

svp_status_t svp_ops_cpu_conv_frames(svp_ops_h ops, int b, int f, int c_in,
                                     int c_out, int64_t hw, const float *x,
                                     const float *w, const float *bias, float *y)
{
    if (ops->native16) {
        return svp_ops_cpu_conv_frames_bf16(ops, b, f, c_in, c_out, hw, x,
                                            (const uint16_t *)(const void *)w, bias,
                                            y);
    }
    if (hw >= SVP_OPS_CPU_FRAMES_DIRECT_HW && svp_ops_cpu_has_kernel() &&
        (int64_t)c_out * c_in <= SVP_OPS_CPU_WINO_FUSED_MAX) {
        return svp_ops_cpu_conv_frames_winograd(ops, b, f, c_in, c_out, hw, x, w,
                                                bias, y);
    }
    if (hw >= SVP_OPS_CPU_FRAMES_DIRECT_HW) {
        return svp_ops_cpu_conv_frames_direct(ops, b, f, c_in, c_out, hw, x, w, bias,
                                              y);
    }
    return svp_ops_cpu_conv_frames_batched(ops, b, f, c_in, c_out, hw, x, w, bias,
                                           y);
}

svp_status_t svp_ops_cpu_linear(svp_ops_h ops, int64_t rows, int in, int out,
                                const float *x, const float *w, const float *b,
                                int accumulate, float *y)
{
    int64_t r;

    /* y = bias (or += bias), then the gemm accumulates into it */
    if (!accumulate || b != NULL) {
#pragma omp parallel for schedule(static) if (rows * out > SVP_OPS_CPU_PAR_MIN)
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
    if (ops->native16) {
        return svp_ops_cpu_linear_bf16(ops, rows, in, out, x,
                                       (const uint16_t *)(const void *)w, 1, y);
    }
    return svp_ops_cpu_sgemm(ops, 1, (int)rows, out, in, x, in, w, in, 1, y, out);
}
