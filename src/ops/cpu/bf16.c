/*
 * The CPU's bf16 products: linear, conv2d and conv_frames of a bf16 handle
 * on a CPU with AVX512-BF16 (ops->native16).  Both operands are bf16 (the
 * weight as held, the activation rounded to nearest even as the CUDA
 * backend rounds it), each pair of products is summed in fp32 by
 * VDPBF16PS, and every output element accumulates over k in one fixed
 * order: its own lane of one register, pair after pair, from the value C
 * held (the bias) to the end of k.  No element's sum depends on the tile
 * it falls in, the thread that computes it, the number of rows in the call
 * or how the call was cut: the products are bit-identical on any thread
 * count and layout, and batch-invariant.
 *
 * C[m, n] (+)= A[m, k] B[k, n]: A's rows hold k contiguous bf16 values
 * (pairs are read as one 32-bit word and broadcast), B is packed into
 * panels of SVP_BF16_NR columns, pair-interleaved ([k/2][NR][2], the
 * layout VDPBF16PS multiplies lane by lane).  The tile is 6 rows x 64
 * columns: 24 accumulators, 4 B vectors and one broadcast A pair.
 *
 * A is always the activation, B the weight (packed once per call, which
 * costs 1/rows of the product): a linear's x rows as they are; a
 * convolution's im2col rows taken from the image made channels-last, so
 * each row is kh * kw contiguous runs of c_in values, and k runs over
 * (tap, channel) with the weight reordered to match.  The result [pixels,
 * c_out] is turned back into the image's layout with the bias added after
 * the sum.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "ops/ops_math.h"
#include "common/log.h"
#include "common/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SVP_BF16_NR 64 /* columns of a packed panel: 4 vectors */
#define SVP_BF16_MR 6  /* rows of a tile */
#define SVP_BF16_MB 48 /* rows a thread takes at a time (8 tiles) */

/* Elements of the packed B of a k x n operand. */
static size_t svp_bf16_packed_count(int k, int64_t n)
{
    int64_t panels = (n + SVP_BF16_NR - 1) / SVP_BF16_NR;

    return (size_t)panels * (size_t)((k + 1) / 2) * SVP_BF16_NR * 2;
}

/* A 16-bit scratch buffer of count elements, grow-only, beside the fp32 one. */
static svp_status_t svp_bf16_scratch(svp_ops_h ops, int which, size_t count,
                                     uint16_t **buf_p)
{
    svp_ops_cpu_t *cpu = ops->impl;
    void          *buf;

    if (count > cpu->scratch16_count[which]) {
        if (posix_memalign(&buf, 64, count * sizeof(uint16_t)) != 0) {
            svp_error("cannot allocate %zu bf16 values of host memory", count);
            return SVP_ERR_NO_MEMORY;
        }
        ops->mem.backend_allocs++;
        ops->mem.reserved_bytes +=
            (count - cpu->scratch16_count[which]) * sizeof(uint16_t);
        free(cpu->scratch16[which]);
        cpu->scratch16[which]       = buf;
        cpu->scratch16_count[which] = count;
    }
    *buf_p = cpu->scratch16[which];
    return SVP_OK;
}

void svp_ops_cpu_bf16_cleanup(svp_ops_cpu_t *cpu)
{
    size_t i;

    for (i = 0; i < SVP_ARRAY_SIZE(cpu->scratch16); i++) {
        free(cpu->scratch16[i]);
    }
}

/*
 * B from bf16 rows: b[r, j] = w[j, r] (n rows of k, a linear's weight as
 * held) packed as above.
 */
static void svp_bf16_pack_rows(int threads, int k, int64_t n, const uint16_t *w,
                               uint16_t *bp)
{
    int64_t panels = (n + SVP_BF16_NR - 1) / SVP_BF16_NR;
    int     kq     = (k + 1) / 2;
    int64_t pj;

#pragma omp parallel for schedule(static) \
    num_threads(threads) if (n * k > SVP_OPS_CPU_PAR_MIN)
    for (pj = 0; pj < panels * SVP_BF16_NR; pj++) {
        int64_t         p = pj / SVP_BF16_NR, j = pj % SVP_BF16_NR;
        uint16_t       *dst = bp + (int64_t)p * kq * SVP_BF16_NR * 2 + 2 * j;
        const uint16_t *src = w + (p * SVP_BF16_NR + j) * k;
        int             q;

        if (p * SVP_BF16_NR + j >= n) {
            for (q = 0; q < kq; q++) {
                dst[(int64_t)q * SVP_BF16_NR * 2]     = 0;
                dst[(int64_t)q * SVP_BF16_NR * 2 + 1] = 0;
            }
            continue;
        }
        for (q = 0; q < k / 2; q++) {
            dst[(int64_t)q * SVP_BF16_NR * 2]     = src[2 * q];
            dst[(int64_t)q * SVP_BF16_NR * 2 + 1] = src[2 * q + 1];
        }
        if (k % 2 != 0) {
            dst[(int64_t)q * SVP_BF16_NR * 2]     = src[2 * q];
            dst[(int64_t)q * SVP_BF16_NR * 2 + 1] = 0;
        }
    }
}

/* A from fp32 rows: a[i, :] = x[i, :] rounded, padded to lda with zeros. */
static void svp_bf16_round_rows(int threads, int64_t m, int k, const float *x,
                                int64_t ldx, uint16_t *a, int64_t lda)
{
    int64_t i;

#pragma omp parallel for schedule(static) \
    num_threads(threads) if (m * k > SVP_OPS_CPU_PAR_MIN)
    for (i = 0; i < m; i++) {
        const float *src = x + i * ldx;
        uint16_t    *dst = a + i * lda;
        int          r;

        for (r = 0; r < k; r++) {
            dst[r] = svp_math_f32_to_bf16(src[r]);
        }
        for (; r < lda; r++) {
            dst[r] = 0;
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(HAVE_AVX512BF16_INTRINSICS)
#include <immintrin.h>

#define SVP_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* The pair a[0], a[1] as one 32-bit word, broadcast to every lane. */
SVP_BF16_TARGET static inline __m512bh svp_bf16_pair(const uint16_t *a)
{
    int32_t v;

    memcpy(&v, a, sizeof(v));
    return (__m512bh)_mm512_set1_epi32(v);
}

/*
 * One tile: rows [0, mr) of A (mr <= 6, a constant where it is inlined)
 * times one packed panel, into the first ncols columns of C.
 */
SVP_BF16_TARGET __attribute__((always_inline)) static inline void
svp_bf16_tile(const int mr, int kq, const uint16_t *a, int64_t lda,
              const uint16_t *bp, float *c, int64_t ldc, int ncols, int add)
{
    __m512    acc[SVP_BF16_MR][4];
    __mmask16 mk[4];
    int       i, v, q;

    for (v = 0; v < 4; v++) {
        int rem = ncols - 16 * v;

        mk[v] = (rem >= 16)  ? (__mmask16)0xffff
                : (rem <= 0) ? (__mmask16)0
                             : (__mmask16)((1u << rem) - 1);
    }
#pragma GCC unroll 6
    for (i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (v = 0; v < 4; v++) {
            acc[i][v] = add ? _mm512_maskz_loadu_ps(mk[v], c + i * ldc + 16 * v)
                            : _mm512_setzero_ps();
        }
    }
    for (q = 0; q < kq; q++) {
        const uint16_t *bq = bp + (int64_t)q * SVP_BF16_NR * 2;
        __m512bh        b0 = (__m512bh)_mm512_loadu_si512(bq);
        __m512bh        b1 = (__m512bh)_mm512_loadu_si512(bq + 32);
        __m512bh        b2 = (__m512bh)_mm512_loadu_si512(bq + 64);
        __m512bh        b3 = (__m512bh)_mm512_loadu_si512(bq + 96);

#pragma GCC unroll 6
        for (i = 0; i < mr; i++) {
            __m512bh ai = svp_bf16_pair(a + i * lda + 2 * q);

            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
            acc[i][2] = _mm512_dpbf16_ps(acc[i][2], ai, b2);
            acc[i][3] = _mm512_dpbf16_ps(acc[i][3], ai, b3);
        }
    }
#pragma GCC unroll 6
    for (i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (v = 0; v < 4; v++) {
            _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mk[v], acc[i][v]);
        }
    }
}

/* Rows [0, m) of A, m < SVP_BF16_MB, times one panel. */
SVP_BF16_TARGET
static void svp_bf16_rows(int m, int kq, const uint16_t *a, int64_t lda,
                          const uint16_t *bp, float *c, int64_t ldc, int ncols,
                          int add)
{
    int i = 0;

    for (; i + SVP_BF16_MR <= m; i += SVP_BF16_MR) {
        svp_bf16_tile(6, kq, a + i * lda, lda, bp, c + i * ldc, ldc, ncols, add);
    }
    switch (m - i) {
    case 5:
        svp_bf16_tile(5, kq, a + i * lda, lda, bp, c + i * ldc, ldc, ncols, add);
        break;
    case 4:
        svp_bf16_tile(4, kq, a + i * lda, lda, bp, c + i * ldc, ldc, ncols, add);
        break;
    case 3:
        svp_bf16_tile(3, kq, a + i * lda, lda, bp, c + i * ldc, ldc, ncols, add);
        break;
    case 2:
        svp_bf16_tile(2, kq, a + i * lda, lda, bp, c + i * ldc, ldc, ncols, add);
        break;
    case 1:
        svp_bf16_tile(1, kq, a + i * lda, lda, bp, c + i * ldc, ldc, ncols, add);
        break;
    default:
        break;
    }
}

int svp_ops_cpu_has_bf16(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16");
}
#else
static void svp_bf16_rows(int m, int kq, const uint16_t *a, int64_t lda,
                          const uint16_t *bp, float *c, int64_t ldc, int ncols,
                          int add)
{
    (void)m;
    (void)kq;
    (void)a;
    (void)lda;
    (void)bp;
    (void)c;
    (void)ldc;
    (void)ncols;
    (void)add;
}

int svp_ops_cpu_has_bf16(void)
{
    return 0;
}
#endif

/*
 * C[m, n] (+ when add)= A B: A bf16 rows of lda (k padded to even with a
 * zero), bp the packed B.  The threads share blocks of SVP_BF16_MB rows x
 * one panel.
 */
static void svp_bf16_gemm(int threads, int64_t m, int64_t n, int k,
                          const uint16_t *a, int64_t lda, const uint16_t *bp,
                          float *c, int64_t ldc, int add)
{
    int64_t panels  = (n + SVP_BF16_NR - 1) / SVP_BF16_NR;
    int64_t mblocks = (m + SVP_BF16_MB - 1) / SVP_BF16_MB;
    int     kq      = (k + 1) / 2;
    int64_t t;

#pragma omp parallel for schedule(static) \
    num_threads(threads) if (m * n * k > 64 * 64 * 64)
    for (t = 0; t < mblocks * panels; t++) {
        int64_t i0 = (t / panels) * SVP_BF16_MB, p = t % panels;
        int64_t j0 = p * SVP_BF16_NR;

        svp_bf16_rows((int)SVP_MIN((int64_t)SVP_BF16_MB, m - i0), kq, a + i0 * lda,
                      lda, bp + p * kq * SVP_BF16_NR * 2, c + i0 * ldc + j0, ldc,
                      (int)SVP_MIN((int64_t)SVP_BF16_NR, n - j0), add);
    }
}

/*
 * A convolution as the bf16 products see it: n images of c channels on an
 * h x w grid, element (img, ci, y, xw) of x at img * s_img + ci * s_c +
 * y * s_y + xw; kernel kh x kw, stride, padding per axis; the output, in
 * the same layout with c_out channels on ho x wo.  conv2d is NCHW;
 * conv_frames is the (3, 1) kernel over a clip's frames taken as rows.
 */
typedef struct {
    int     n, c, h, w, c_out, kh, kw, stride, pad_h, pad_w, ho, wo;
    int64_t s_img, s_c, s_y; /* the input's strides */
    int64_t o_img, o_c, o_y; /* the output's */
} svp_bf16_conv_t;

/* Output pixels whose im2col rows are made at a time. */
#define SVP_BF16_CONV_ROWS 2048

/* x rounded to bf16, channels last: xt[((img * h + y) * w + xw) * c + ci]. */
static void svp_bf16_channels_last(int threads, const svp_bf16_conv_t *cv,
                                   const float *x, uint16_t *xt)
{
    int64_t iy;

#pragma omp parallel for schedule(static) num_threads(threads)
    for (iy = 0; iy < (int64_t)cv->n * cv->h; iy++) {
        int64_t      img = iy / cv->h, y = iy % cv->h;
        const float *src = x + img * cv->s_img + y * cv->s_y;
        uint16_t    *dst = xt + iy * cv->w * cv->c;
        int          ci, xw;

        for (ci = 0; ci < cv->c; ci++) {
            const float *row = src + ci * cv->s_c;

            for (xw = 0; xw < cv->w; xw++) {
                dst[(int64_t)xw * cv->c + ci] = svp_math_f32_to_bf16(row[xw]);
            }
        }
    }
}

/*
 * The weight [c_out, c, kh, kw] as held, reordered to [c_out, kh, kw, c]
 * (k over tap, then channel) and packed as B.
 */
static svp_status_t svp_bf16_conv_weight(svp_ops_h ops, const svp_bf16_conv_t *cv,
                                         const uint16_t *w, uint16_t **bp_p)
{
    int          taps = cv->kh * cv->kw, k = taps * cv->c;
    uint16_t    *wr, *bp;
    svp_status_t status;
    int64_t      o;

    status = svp_bf16_scratch(ops, 3, (size_t)cv->c_out * k, &wr);
    if (status == SVP_OK) {
        status = svp_bf16_scratch(ops, 0, svp_bf16_packed_count(k, cv->c_out), &bp);
    }
    if (status != SVP_OK) {
        return status;
    }
#pragma omp parallel for schedule(static) \
    num_threads(ops->threads) if ((int64_t)cv->c_out * k > SVP_OPS_CPU_PAR_MIN)
    for (o = 0; o < cv->c_out; o++) {
        const uint16_t *src = w + o * k;
        uint16_t       *dst = wr + o * k;
        int             ci, t;

        for (ci = 0; ci < cv->c; ci++) {
            for (t = 0; t < taps; t++) {
                dst[t * cv->c + ci] = src[ci * taps + t];
            }
        }
    }
    svp_bf16_pack_rows(ops->threads, k, cv->c_out, wr, bp);
    *bp_p = bp;
    return SVP_OK;
}

/* im2col rows [r0, r0 + m) of the output pixels from the channels-last image. */
static void svp_bf16_im2col(int threads, const svp_bf16_conv_t *cv,
                            const uint16_t *xt, int64_t r0, int64_t m, uint16_t *a,
                            int64_t lda)
{
    int64_t ss  = (int64_t)cv->ho * cv->wo, r;
    size_t  run = (size_t)cv->c * sizeof(uint16_t);

#pragma omp parallel for schedule(static) num_threads(threads)
    for (r = 0; r < m; r++) {
        int64_t   g = r0 + r, img = g / ss, pix = g % ss;
        int       oy = (int)(pix / cv->wo), ox = (int)(pix % cv->wo);
        uint16_t *dst = a + r * lda;
        int       ky, kx;

        for (ky = 0; ky < cv->kh; ky++) {
            int iy = oy * cv->stride - cv->pad_h + ky;

            for (kx = 0; kx < cv->kw; kx++, dst += cv->c) {
                int ix = ox * cv->stride - cv->pad_w + kx;

                if (iy < 0 || iy >= cv->h || ix < 0 || ix >= cv->w) {
                    memset(dst, 0, run);
                } else {
                    memcpy(dst, xt + ((img * cv->h + iy) * cv->w + ix) * cv->c, run);
                }
            }
        }
        if (lda > (int64_t)cv->kh * cv->kw * cv->c) {
            *dst = 0; /* k odd: the last pair's second half */
        }
    }
}

/* c[r, :] (rows [r0, r0 + m) of the output pixels) + bias into y's layout. */
static void svp_bf16_scatter(int threads, const svp_bf16_conv_t *cv, const float *c,
                             int64_t r0, int64_t m, const float *bias, float *y)
{
    int64_t ss = (int64_t)cv->ho * cv->wo, o;

#pragma omp parallel for schedule(static) num_threads(threads)
    for (o = 0; o < cv->c_out; o++) {
        float   v = bias ? bias[o] : 0.0f;
        int64_t r;

        for (r = 0; r < m; r++) {
            int64_t g = r0 + r, img = g / ss, pix = g % ss;
            int64_t oy = pix / cv->wo, ox = pix % cv->wo;

            y[img * cv->o_img + oy * cv->o_y + o * cv->o_c + ox] =
                c[r * cv->c_out + o] + v;
        }
    }
}

static svp_status_t svp_bf16_conv(svp_ops_h ops, const svp_bf16_conv_t *cv,
                                  const float *x, const uint16_t *w,
                                  const float *bias, float *y)
{
    int          k   = cv->kh * cv->kw * cv->c;
    int64_t      lda = (k + 1) / 2 * 2, rows = (int64_t)cv->n * cv->ho * cv->wo;
    int64_t      chunk = SVP_MIN(rows, (int64_t)SVP_BF16_CONV_ROWS), r0;
    uint16_t    *xt, *bp, *a;
    float       *c;
    svp_status_t status;

    status = svp_bf16_conv_weight(ops, cv, w, &bp);
    if (status == SVP_OK) {
        status =
            svp_bf16_scratch(ops, 2, (size_t)cv->n * cv->h * cv->w * cv->c, &xt);
    }
    if (status == SVP_OK) {
        status = svp_bf16_scratch(ops, 1, (size_t)(chunk * lda), &a);
    }
    if (status == SVP_OK) {
        status = svp_ops_cpu_scratch(ops, (size_t)(chunk * cv->c_out), &c);
    }
    if (status != SVP_OK) {
        return status;
    }
    svp_bf16_channels_last(ops->threads, cv, x, xt);
    for (r0 = 0; r0 < rows; r0 += chunk) {
        int64_t m = SVP_MIN(chunk, rows - r0);

        svp_bf16_im2col(ops->threads, cv, xt, r0, m, a, lda);
        svp_bf16_gemm(ops->threads, m, cv->c_out, k, a, lda, bp, c, cv->c_out, 0);
        svp_bf16_scatter(ops->threads, cv, c, r0, m, bias, y);
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_conv2d_bf16(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                     const float *x, const uint16_t *w,
                                     const float *bias, float *y)
{
    svp_bf16_conv_t cv = {
        .n      = p->n,
        .c      = p->c_in,
        .h      = p->h,
        .w      = p->w,
        .c_out  = p->c_out,
        .kh     = p->kh,
        .kw     = p->kw,
        .stride = p->stride,
        .pad_h  = p->pad,
        .pad_w  = p->pad,
        .ho     = svp_ops_conv2d_out_h(p),
        .wo     = svp_ops_conv2d_out_w(p),
    };

    cv.s_y   = p->w;
    cv.s_c   = (int64_t)p->h * p->w;
    cv.s_img = cv.s_c * p->c_in;
    cv.o_y   = cv.wo;
    cv.o_c   = (int64_t)cv.ho * cv.wo;
    cv.o_img = cv.o_c * p->c_out;
    return svp_bf16_conv(ops, &cv, x, w, bias, y);
}

svp_status_t svp_ops_cpu_conv_frames_bf16(svp_ops_h ops, int b, int f, int c_in,
                                          int c_out, int64_t hw, const float *x,
                                          const uint16_t *w, const float *bias,
                                          float *y)
{
    /* a clip is an image whose rows are its frames: x[b, t, ci, pixel] */
    svp_bf16_conv_t cv = {
        .n      = b,
        .c      = c_in,
        .h      = f,
        .w      = (int)hw,
        .c_out  = c_out,
        .kh     = 3,
        .kw     = 1,
        .stride = 1,
        .pad_h  = 1,
        .pad_w  = 0,
        .ho     = f,
        .wo     = (int)hw,
    };

    cv.s_c   = hw;
    cv.s_y   = (int64_t)c_in * hw;
    cv.s_img = cv.s_y * f;
    /* y[b, t, o, pixel]: output pixel g = t * hw + pixel of clip b */
    cv.o_c   = hw;
    cv.o_y   = (int64_t)c_out * hw;
    cv.o_img = cv.o_y * f;
    return svp_bf16_conv(ops, &cv, x, w, bias, y);
}

/* Rows of a linear's activation rounded at a time: 4096 x in values. */
#define SVP_BF16_LINEAR_ROWS 4096

svp_status_t svp_ops_cpu_linear_bf16(svp_ops_h ops, int64_t rows, int in, int out,
                                     const float *x, const uint16_t *w,
                                     int accumulate, float *y)
{
    int64_t      lda   = (in + 1) / 2 * 2, r0;
    int64_t      chunk = SVP_MIN(rows, (int64_t)SVP_BF16_LINEAR_ROWS);
    uint16_t    *bp, *a;
    svp_status_t status;

    status = svp_bf16_scratch(ops, 0, svp_bf16_packed_count(in, out), &bp);
    if (status == SVP_OK) {
        status = svp_bf16_scratch(ops, 1, (size_t)(chunk * lda), &a);
    }
    if (status != SVP_OK) {
        return status;
    }
    svp_bf16_pack_rows(ops->threads, in, out, w, bp);
    for (r0 = 0; r0 < rows; r0 += chunk) {
        int64_t m = SVP_MIN(chunk, rows - r0);

        svp_bf16_round_rows(ops->threads, m, in, x + r0 * in, in, a, lda);
        svp_bf16_gemm(ops->threads, m, out, in, a, lda, bp, y + r0 * out, out,
                      accumulate);
    }
    return SVP_OK;
}
