/*
 * 3x3 stride-1 pad-1 convolutions by Winograd's minimal filtering F(2x2,3x3)
 * (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016):
 * every 2x2 block of outputs is A^T [(G g G^T) .* (B^T d B)] A for its 4x4
 * input patch d, so a block costs 16 multiplies per input channel instead of
 * 36.  Summed over input channels, the 16 element-wise products become 16
 * gemms, one per position xi of the 4x4 transformed tile:
 *
 *     M_xi[c_out, tiles] = U_xi[c_out, c_in] V_xi[c_in, tiles]
 *
 * where U is the transformed weight and V the transformed input patches of a
 * batch of images.  The transforms only add, subtract and halve (exact
 * scalings), so the result stays within the direct convolution's round-off
 * (tests/test_ops: conv2d_winograd_*; the golden UNet and VAE tests run
 * through it).  Every value is computed in one fixed order, independent of
 * the thread count.
 *
 * The weight transform is redone per call: 16/9 of the weight's size and a
 * few adds per element, small against the 2 * c_out * tiles flops each of
 * its elements then takes part in.
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

/*
 * The 1-D transforms of F(2,3), written once for every use below (2-D
 * applies them to rows, then columns).  Each operation in this order, so
 * every path computes the same bits.
 */

/* G g: the filter's taps to the 4 points */
static inline void svp_wino_g(float g0, float g1, float g2, float u[4])
{
    u[0] = g0;
    u[1] = 0.5f * ((g0 + g2) + g1);
    u[2] = 0.5f * ((g0 + g2) - g1);
    u[3] = g2;
}

/* B^T d: 4 inputs to the 4 points */
static inline void svp_wino_bt(float d0, float d1, float d2, float d3, float v[4])
{
    v[0] = d0 - d2;
    v[1] = d1 + d2;
    v[2] = d2 - d1;
    v[3] = d1 - d3;
}

/* A^T m: the 4 points' products to the 2 outputs */
static inline float svp_wino_at0(float m0, float m1, float m2)
{
    return (m0 + m1) + m2;
}

static inline float svp_wino_at1(float m1, float m2, float m3)
{
    return (m1 - m2) - m3;
}

/*
 * Transformed inputs and products one pass may hold: 2 Mi floats (8 MiB),
 * so that a pass stays in cache between its transforms and its products.
 * Measured against 64 Mi on SVD-XT's VAE decoder convolutions (14 frames,
 * 2 threads): 128 channels at 128x128 0.238 -> 0.206 s, 256 at 64x64
 * 0.176 -> 0.149 s; smaller passes lose on the deep levels.
 */
#define SVP_OPS_WINO_WS_MAX ((int64_t)2 << 20)

/* ...but at least 256 tiles per product, or packing U for each product
 * costs more than the cache saves (a 512 x 512 U for 128 tiles). */
#define SVP_OPS_WINO_LD_MIN 256

/*
 * U = G g G^T for every (o, i), xi = 4 * row + col.  packed 0: u[xi][o][i]
 * (the gemms' [c_out, c_in] operand); packed 1: u[xi][o / 8][i][o % 8],
 * blocks of 8 output channels for the AVX-512 kernel, the last block padded
 * with zeros to 8.
 */
static void svp_ops_wino_weights(int c_out, int c_in, const float *w, int packed,
                                 float *u)
{
    int64_t co8   = (c_out + 7) / 8 * 8;
    int64_t plane = (packed ? co8 : c_out) * (int64_t)c_in, oi;

    if (packed && co8 != c_out) {
        memset(u, 0, 16 * plane * sizeof(float));
    }
#pragma omp parallel for schedule(static) if (plane > 1024)
    for (oi = 0; oi < (int64_t)c_out * c_in; oi++) {
        const float *g = w + oi * 9;
        int64_t      o = oi / c_in, i = oi % c_in;
        int64_t      at = packed ? ((o / 8) * c_in + i) * 8 + o % 8 : oi;
        float        t[4][3], col[4], r[4][4];
        int          j, k;

        /* t = G g on the columns of g, then r = t G^T on the rows of t */
        for (j = 0; j < 3; j++) {
            svp_wino_g(g[j], g[3 + j], g[6 + j], col);
            for (k = 0; k < 4; k++) {
                t[k][j] = col[k];
            }
        }
        for (j = 0; j < 4; j++) {
            svp_wino_g(t[j][0], t[j][1], t[j][2], r[j]);
        }
        for (j = 0; j < 16; j++) {
            u[j * plane + at] = r[j / 4][j % 4];
        }
    }
}

/*
 * V = B^T d B for tile rows r0 .. r0+nr-1 of the batch (row r: image r / th,
 * tiles ty = r % th): v[xi][i * ld + p], p = (r - r0) * tw + tx.  Per row of tiles, the four input rows are
 * copied with their padding (zero outside the image, and past an odd last
 * tile), combined row by row (B^T, whole rows at a time), then column by
 * column into the 16 planes.
 */
static void svp_ops_wino_input(int64_t r0, int nr, int c_in, int h, int w, int th,
                               int tw, const float *x, float *v, int64_t ld)
{
    int64_t plane = (int64_t)c_in * ld;
    int64_t rows  = (int64_t)nr * c_in, r;
    int     wp    = 2 * tw + 2;

#pragma omp parallel for schedule(static)
    for (r = 0; r < rows; r++) {
        int64_t      row = r0 + r / c_in;
        int          i   = (int)(r % c_in);
        int          ty  = (int)(row % th);
        const float *src = x + ((row / th) * c_in + i) * h * w;
        float       *dst = v + (int64_t)i * ld + (r / c_in) * tw;
        float        d[4][wp], t[4][wp];
        int          a, j, tx;

        for (a = 0; a < 4; a++) {
            int iy = 2 * ty - 1 + a;

            memset(d[a], 0, wp * sizeof(float));
            if (iy >= 0 && iy < h) {
                memcpy(d[a] + 1, src + (int64_t)iy * w, w * sizeof(float));
            }
        }
        /* t = B^T d, whole rows at a time */
#pragma omp simd
        for (j = 0; j < wp; j++) {
            float e[4];

            svp_wino_bt(d[0][j], d[1][j], d[2][j], d[3][j], e);
            t[0][j] = e[0];
            t[1][j] = e[1];
            t[2][j] = e[2];
            t[3][j] = e[3];
        }
        /* V = t B, the same on the columns 2tx .. 2tx+3 */
        for (a = 0; a < 4; a++) {
            const float *e  = t[a];
            float       *v0 = dst + (4 * a) * plane;
            float       *v1 = v0 + plane, *v2 = v1 + plane, *v3 = v2 + plane;

#pragma omp simd
            for (tx = 0; tx < tw; tx++) {
                float vv[4];

                svp_wino_bt(e[2 * tx], e[2 * tx + 1], e[2 * tx + 2], e[2 * tx + 3],
                            vv);
                v0[tx] = vv[0];
                v1[tx] = vv[1];
                v2[tx] = vv[2];
                v3[tx] = vv[3];
            }
        }
    }
}

/*
 * y = A^T M A + bias, the 2x2 block of each tile of rows r0 .. r0+nr-1,
 * inside the image only: per row of tiles, the 16 planes' rows are combined into two output rows.
 */
static void svp_ops_wino_output(int64_t r0, int nr, int c_out, int h, int w, int th,
                                int tw, const float *mm, int64_t ld,
                                const float *bias, float *y)
{
    int64_t plane = (int64_t)c_out * ld;
    int64_t rows  = (int64_t)nr * c_out, r;

#pragma omp parallel for schedule(static)
    for (r = 0; r < rows; r++) {
        int64_t      row = r0 + r / c_out;
        int          o   = (int)(r % c_out);
        int          ty  = (int)(row % th);
        const float *q   = mm + (int64_t)o * ld + (r / c_out) * tw;
        float       *dst = y + ((row / th) * c_out + o) * h * w;
        float        bv  = bias ? bias[o] : 0.0f;
        float        s[2][4][tw], out[2][2 * tw];
        int          a, c, tx;

        /* s = A^T q: rows q0+q1+q2, q1-q2-q3, per column c of the tile */
        for (c = 0; c < 4; c++) {
            const float *q0 = q + c * plane, *q1 = q0 + 4 * plane;
            const float *q2 = q1 + 4 * plane, *q3 = q2 + 4 * plane;

#pragma omp simd
            for (tx = 0; tx < tw; tx++) {
                s[0][c][tx] = svp_wino_at0(q0[tx], q1[tx], q2[tx]);
                s[1][c][tx] = svp_wino_at1(q1[tx], q2[tx], q3[tx]);
            }
        }
        for (a = 0; a < 2 && 2 * ty + a < h; a++) {
#pragma omp simd
            for (tx = 0; tx < tw; tx++) {
                out[a][2 * tx] =
                    svp_wino_at0(s[a][0][tx], s[a][1][tx], s[a][2][tx]) + bv;
                out[a][2 * tx + 1] =
                    svp_wino_at1(s[a][1][tx], s[a][2][tx], s[a][3][tx]) + bv;
            }
            memcpy(dst + (int64_t)(2 * ty + a) * w, out[a], w * sizeof(float));
        }
    }
}

/*
 * 3x3, stride 1, padding 1, and images of at least 8x8 (16 tiles each):
 * below that the per-call weight transform, 16/9 of the weight written and
 * read back, costs more than the products save (SVD-XT's 1280-channel 4x4
 * level: 1.6x slower than im2col).  The choice depends on the image's shape
 * only, not on how many images a call carries, so a chunked VAE decode
 * takes the same path as a whole one.
 */
int svp_ops_cpu_winograd_applies(const svp_ops_conv2d_t *p)
{
    return p->kh == 3 && p->kw == 3 && p->stride == 1 && p->pad == 1 && p->h >= 8 &&
           p->w >= 8;
}

svp_status_t svp_ops_cpu_conv2d_winograd(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                         const float *x, const float *w,
                                         const float *b, float *y)
{
    int          th = (p->h + 1) / 2, tw = (p->w + 1) / 2;
    int64_t      rows    = (int64_t)p->n * th;
    int64_t      u_size  = 16 * (int64_t)p->c_out * p->c_in;
    int64_t      per_row = 16 * (int64_t)tw * (p->c_in + p->c_out);
    int          chunk   = (int)SVP_MIN(rows, SVP_MAX(SVP_OPS_WINO_WS_MAX / per_row,
                                                      (SVP_OPS_WINO_LD_MIN + tw - 1) / tw));
    float       *u, *v, *mm;
    svp_status_t status;
    int64_t      r0;

    status = svp_ops_cpu_scratch(ops, (size_t)(u_size + chunk * per_row), &u);
    if (status != SVP_OK) {
        return status;
    }
    v  = u + u_size;
    mm = v + 16 * (int64_t)chunk * tw * p->c_in;
    svp_ops_wino_weights(p->c_out, p->c_in, w, 0, u);

    /* a pass: some rows of tiles (of one image or several), transformed,
     * multiplied 16 times, transformed back */
    for (r0 = 0; r0 < rows; r0 += chunk) {
        int     nr = (int)SVP_MIN(chunk, rows - r0);
        int64_t ld = (int64_t)nr * tw;
        int     xi;

        svp_ops_wino_input(r0, nr, p->c_in, p->h, p->w, th, tw, x, v, ld);
        /* the 16 products, whole, a share of them per thread */
#pragma omp parallel for schedule(static)
        for (xi = 0; xi < 16; xi++) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->c_out, (int)ld,
                        p->c_in, 1.0f, u + xi * (int64_t)p->c_out * p->c_in, p->c_in,
                        v + xi * (int64_t)p->c_in * ld, (int)ld, 0.0f,
                        mm + xi * (int64_t)p->c_out * ld, (int)ld);
        }
        svp_ops_wino_output(r0, nr, p->c_out, p->h, p->w, th, tw, mm, ld, b, y);
    }
    return SVP_OK;
}

/* ---- the fused path: transforms and products per block of tiles ------- */

/*
 * Tiles per block: the block's V (16 x c_in x tiles) is about 1 MiB, so it
 * stays in the core's L2 while every block of 8 output channels sweeps it;
 * a multiple of the kernel's 32, at least 32.
 */
#define SVP_OPS_WINO_BLOCK_V ((int64_t)256 << 10)

/*
 * Input channels per pass of the kernel: partial sums over 256 channels at
 * a time are added into M, as a blocked gemm does (the round-off of one
 * chain of 1280 multiply-adds would be twice the gemm's).
 */
#define SVP_OPS_WINO_KC 256

/* A run of tiles in one row of one image: tiles tx0 .. tx0+len-1 of row ty. */
typedef struct {
    int64_t img;
    int     ty, tx0, len;
    int     at; /* the run's first column in the block */
} svp_ops_wino_run_t;

/* The runs of block [t0, t0 + nt) of the th x tw tiles of every image. */
static int svp_ops_wino_runs(int64_t t0, int nt, int th, int tw,
                             svp_ops_wino_run_t *runs)
{
    int64_t per_image = (int64_t)th * tw, t = t0;
    int     n = 0;

    while (t < t0 + nt) {
        int64_t rem = t % per_image;

        runs[n].img = t / per_image;
        runs[n].ty  = (int)(rem / tw);
        runs[n].tx0 = (int)(rem % tw);
        runs[n].len = (int)SVP_MIN(tw - runs[n].tx0, t0 + nt - t);
        runs[n].at  = (int)(t - t0);
        t += runs[n].len;
        n++;
    }
    return n;
}

/*
 * V = B^T d B of the block's tiles: v[xi][i][bt], bt < pb (zero past nt).
 * The image's rows are read where they lie; rows and columns outside it
 * (the padding, and past an odd last tile) read as zero from zero.
 */
static void svp_ops_wino_block_in(const svp_ops_conv2d_t *p, const float *x,
                                  const svp_ops_wino_run_t *runs, int nruns, int nt,
                                  int pb, float *v, float *d)
{
    int64_t plane = (int64_t)p->c_in * pb;
    int     i, r, a, j, tx;

    if (nt < pb) {
        for (j = 0; j < 16 * p->c_in; j++) {
            memset(v + (int64_t)j * pb + nt, 0, (pb - nt) * sizeof(float));
        }
    }
    for (r = 0; r < nruns; r++) {
        const svp_ops_wino_run_t *run = &runs[r];
        int                       wp = 2 * run->len + 2, c0 = 2 * run->tx0 - 1;
        /* the run's input columns c0 + j, j < wp: inside for lo <= j < hi */
        int lo = SVP_MAX(0, -c0), hi = SVP_MIN(wp, p->w - c0);
        /* rows of zeros for the rows outside, and t = B^T d per row */
        float *zero = d, *t = d + wp;

        memset(zero, 0, wp * sizeof(float));
        /* the columns outside the image: t = 0 there, for every channel */
        for (j = 0; j < wp; j++) {
            if (j < lo || j >= hi) {
                t[j] = t[wp + j] = t[2 * wp + j] = t[3 * wp + j] = 0.0f;
            }
        }
        for (i = 0; i < p->c_in; i++) {
            const float *img = x + (run->img * p->c_in + i) * p->h * p->w;
            const float *rows[4];
            float       *dst = v + (int64_t)i * pb + run->at;

            for (a = 0; a < 4; a++) {
                int iy = 2 * run->ty - 1 + a;

                rows[a] =
                    (iy >= 0 && iy < p->h) ? img + (int64_t)iy * p->w + c0 : zero;
            }
            /* t = B^T d, whole rows at a time */
#pragma omp simd
            for (j = lo; j < hi; j++) {
                float e[4];

                svp_wino_bt(rows[0][j], rows[1][j], rows[2][j], rows[3][j], e);
                t[j]          = e[0];
                t[wp + j]     = e[1];
                t[2 * wp + j] = e[2];
                t[3 * wp + j] = e[3];
            }
            for (a = 0; a < 4; a++) {
                const float *e  = t + a * wp;
                float       *v0 = dst + (4 * a) * plane;
                float       *v1 = v0 + plane, *v2 = v1 + plane, *v3 = v2 + plane;

#pragma omp simd
                for (tx = 0; tx < run->len; tx++) {
                    float vv[4];

                    svp_wino_bt(e[2 * tx], e[2 * tx + 1], e[2 * tx + 2],
                                e[2 * tx + 3], vv);
                    v0[tx] = vv[0];
                    v1[tx] = vv[1];
                    v2[tx] = vv[2];
                    v3[tx] = vv[3];
                }
            }
        }
    }
}

/* y = A^T M A + bias for output channels o0 .. o0+no-1 of the block. */
static void svp_ops_wino_block_out(const svp_ops_conv2d_t   *p,
                                   const svp_ops_wino_run_t *runs, int nruns, int o0,
                                   int no, int pb, const float *m, const float *bias,
                                   float *y, float *tmp)
{
    int64_t plane = 8 * (int64_t)pb;
    int     o, r, a, c, tx;

    for (o = 0; o < no; o++) {
        float bv = bias ? bias[o0 + o] : 0.0f;

        for (r = 0; r < nruns; r++) {
            const svp_ops_wino_run_t *run = &runs[r];
            const float              *q   = m + (int64_t)o * pb + run->at;
            float *dst = y + (run->img * p->c_out + o0 + o) * p->h * p->w;
            int    len = run->len, ox = 2 * run->tx0;
            int    nx = SVP_MIN(2 * len, p->w - ox);
            float *s  = tmp;

            for (c = 0; c < 4; c++) {
                const float *q0 = q + c * plane, *q1 = q0 + 4 * plane;
                const float *q2 = q1 + 4 * plane, *q3 = q2 + 4 * plane;
                float       *s0 = s + c * len, *s1 = s + (4 + c) * len;

#pragma omp simd
                for (tx = 0; tx < len; tx++) {
                    s0[tx] = svp_wino_at0(q0[tx], q1[tx], q2[tx]);
                    s1[tx] = svp_wino_at1(q1[tx], q2[tx], q3[tx]);
                }
            }
            for (a = 0; a < 2 && 2 * run->ty + a < p->h; a++) {
                const float *sa   = s + 4 * a * len;
                float       *row  = dst + (int64_t)(2 * run->ty + a) * p->w + ox;
                int          full = nx / 2;

                /* whole pairs straight into the row, an odd last one apart */
#pragma omp simd
                for (tx = 0; tx < full; tx++) {
                    row[2 * tx] =
                        svp_wino_at0(sa[tx], sa[len + tx], sa[2 * len + tx]) + bv;
                    row[2 * tx + 1] = svp_wino_at1(sa[len + tx], sa[2 * len + tx],
                                                   sa[3 * len + tx]) +
                                      bv;
                }
                if (nx % 2) {
                    row[nx - 1] =
                        svp_wino_at0(sa[full], sa[len + full], sa[2 * len + full]) +
                        bv;
                }
            }
        }
    }
}

/*
 * Per block of tiles, on one thread: the input transform into V (in L2),
 * then for every 8 output channels the 16 products by the kernel above into
 * M (in L1) and the output transform from it.  Neither V nor M goes to
 * memory, and nothing is packed but the weights, once per call.
 */
svp_status_t svp_ops_cpu_conv2d_winograd_fused(svp_ops_h               ops,
                                               const svp_ops_conv2d_t *p,
                                               const float *x, const float *w,
                                               const float *b, float *y)
{
    int          th = (p->h + 1) / 2, tw = (p->w + 1) / 2;
    int64_t      tiles  = (int64_t)p->n * th * tw;
    int          nob    = (p->c_out + 7) / 8;
    int64_t      u_size = 16 * (int64_t)nob * 8 * p->c_in;
    int          pb     = (int)SVP_MIN(512, SVP_MAX(32, SVP_OPS_WINO_BLOCK_V /
                                                            (16 * (int64_t)p->c_in) / 32 * 32));
    int          nblocks;
    int64_t      runs_floats, per_thread;
    float       *u;
    int64_t      blk;
    svp_status_t status;

    pb      = (int)SVP_MIN(pb, (tiles + 31) / 32 * 32);
    nblocks = (int)((tiles + pb - 1) / pb);
    /* per thread: V, M, the runs, the input rows and the output rows, in
     * whole cache lines */
    runs_floats = ((int64_t)pb * sizeof(svp_ops_wino_run_t) + 63) / 64 * 16;
    per_thread  = 16 * (int64_t)p->c_in * pb + 16 * 8 * (int64_t)pb + runs_floats +
                 8 * (2 * (int64_t)pb + 2) + 10 * (int64_t)pb;
    per_thread = (per_thread + 15) / 16 * 16;
    status =
        svp_ops_cpu_scratch(ops, (size_t)(u_size + per_thread * ops->threads), &u);
    if (status != SVP_OK) {
        return status;
    }
    svp_ops_wino_weights(p->c_out, p->c_in, w, 1, u);

#pragma omp parallel for schedule(dynamic) num_threads(ops->threads)
    for (blk = 0; blk < nblocks; blk++) {
        float              *v    = svp_ops_cpu_thread_part(u + u_size, per_thread);
        float              *m    = v + 16 * (int64_t)p->c_in * pb;
        svp_ops_wino_run_t *runs = (svp_ops_wino_run_t *)(m + 16 * 8 * (int64_t)pb);
        float              *rows = m + 16 * 8 * (int64_t)pb + runs_floats;
        float              *tmp  = rows + 8 * (2 * (int64_t)pb + 2);
        int64_t             t0   = blk * (int64_t)pb;
        int                 nt   = (int)SVP_MIN(pb, tiles - t0);
        int                 nruns, ob, xi, c, k0;

        nruns = svp_ops_wino_runs(t0, nt, th, tw, runs);
        svp_ops_wino_block_in(p, x, runs, nruns, nt, pb, v, rows);
        for (ob = 0; ob < nob; ob++) {
            for (xi = 0; xi < 16; xi++) {
                const float *uk = u + ((int64_t)xi * nob + ob) * 8 * p->c_in;
                const float *vk = v + (int64_t)xi * p->c_in * pb;
                float       *mk = m + (int64_t)xi * 8 * pb;

                for (k0 = 0; k0 < p->c_in; k0 += SVP_OPS_WINO_KC) {
                    int kc = SVP_MIN(SVP_OPS_WINO_KC, p->c_in - k0);

                    for (c = 0; c < pb; c += 32) {
                        svp_ops_cpu_kernel_8x32(kc, uk + 8 * k0, vk + k0 * pb + c,
                                                pb, mk + c, pb, k0 > 0);
                    }
                }
            }
            svp_ops_wino_block_out(p, runs, nruns, ob * 8,
                                   SVP_MIN(8, p->c_out - ob * 8), pb, m, b, y, tmp);
        }
    }
    return SVP_OK;
}

/* ---- the temporal conv: F(2,3) along the frames ------------------------ */

/*
 * The same minimal filtering in one dimension, over time: frames t and t+1
 * of a clip come from frames t-1 .. t+2 through 4 products instead of 6,
 *
 *     V = (d0 - d2, d1 + d2, d2 - d1, d1 - d3),   M_j = U_j V_j,
 *     y[t] = M0 + M1 + M2,   y[t+1] = M1 - M2 - M3,
 *
 * with U_j from the taps g0 g1 g2 as in the 2-D weight transform.  Per
 * block of pixels of a pair of frames, on one thread: V (4 x c_in x block)
 * in L2, the products by the AVX-512 kernel into M in L1, y from M.  A
 * frame outside the clip is zero; at an odd clip's end the second output
 * frame is dropped.
 */

/* U_j for every (o, i): u[j][o / 8][i][o % 8], the last block zero-padded. */
static void svp_ops_wino_frames_weights(int c_out, int c_in, const float *w,
                                        float *u)
{
    int64_t co8   = (c_out + 7) / 8 * 8;
    int64_t plane = co8 * c_in, oi;

    if (co8 != c_out) {
        memset(u, 0, 4 * plane * sizeof(float));
    }
#pragma omp parallel for schedule(static) if (plane > 1024)
    for (oi = 0; oi < (int64_t)c_out * c_in; oi++) {
        const float *g = w + oi * 3;
        int64_t      o = oi / c_in, i = oi % c_in;
        int64_t      at = ((o / 8) * c_in + i) * 8 + o % 8;
        float        uu[4];

        svp_wino_g(g[0], g[1], g[2], uu);
        u[at]             = uu[0];
        u[plane + at]     = uu[1];
        u[2 * plane + at] = uu[2];
        u[3 * plane + at] = uu[3];
    }
}

svp_status_t svp_ops_cpu_conv_frames_winograd(svp_ops_h ops, int b, int f, int c_in,
                                              int c_out, int64_t hw, const float *x,
                                              const float *w, const float *bias,
                                              float *y)
{
    int64_t in_frame = (int64_t)c_in * hw, out_frame = (int64_t)c_out * hw;
    int     nob = (c_out + 7) / 8, pairs = (f + 1) / 2;
    int64_t u_size = 4 * (int64_t)nob * 8 * c_in;
    /* V of a block about 1 MiB, as in 2-D (2 and 4 MiB: 1.5-2x slower) */
    int64_t      nb = SVP_MIN(512, SVP_MAX(32, SVP_OPS_WINO_BLOCK_V /
                                                   (4 * (int64_t)c_in) / 32 * 32));
    int64_t      nblk, units, per_thread, unit;
    float       *u;
    svp_status_t status;

    nb    = SVP_MIN(nb, (hw + 31) / 32 * 32);
    nblk  = (hw + nb - 1) / nb;
    units = (int64_t)b * pairs * nblk;
    /* per thread: V (4 x c_in x nb) and M (4 x 8 x nb) */
    per_thread = (4 * (int64_t)c_in * nb + 32 * nb + 15) / 16 * 16;
    status =
        svp_ops_cpu_scratch(ops, (size_t)(u_size + per_thread * ops->threads), &u);
    if (status != SVP_OK) {
        return status;
    }
    svp_ops_wino_frames_weights(c_out, c_in, w, u);

#pragma omp parallel for schedule(dynamic) num_threads(ops->threads)
    for (unit = 0; unit < units; unit++) {
        float       *v    = svp_ops_cpu_thread_part(u + u_size, per_thread);
        float       *m    = v + 4 * (int64_t)c_in * nb;
        int64_t      clip = unit / ((int64_t)pairs * nblk);
        int          t    = (int)(unit / nblk % pairs) * 2;
        int64_t      s0   = (unit % nblk) * nb;
        int          ns   = (int)SVP_MIN(nb, hw - s0);
        const float *base = x + clip * f * in_frame + s0;
        const float *d[4];
        int          a, i, ob, j, k0, c, o;
        int64_t      s;

        for (a = 0; a < 4; a++) {
            int src = t - 1 + a;
            d[a]    = (src >= 0 && src < f) ? base + (int64_t)src * in_frame : NULL;
        }
        /* V_j[i][s], zero past ns */
        for (i = 0; i < c_in; i++) {
            float       *v0 = v + (int64_t)i * nb, *v1 = v0 + (int64_t)c_in * nb;
            float       *v2 = v1 + (int64_t)c_in * nb, *v3 = v2 + (int64_t)c_in * nb;
            const float *r0 = d[0] ? d[0] + (int64_t)i * hw : NULL;
            const float *r1 = d[1] ? d[1] + (int64_t)i * hw : NULL;
            const float *r2 = d[2] ? d[2] + (int64_t)i * hw : NULL;
            const float *r3 = d[3] ? d[3] + (int64_t)i * hw : NULL;

#pragma omp simd
            for (s = 0; s < ns; s++) {
                float e0 = r0 ? r0[s] : 0.0f, e1 = r1 ? r1[s] : 0.0f;
                float e2 = r2 ? r2[s] : 0.0f, e3 = r3 ? r3[s] : 0.0f;
                float vv[4];

                svp_wino_bt(e0, e1, e2, e3, vv);
                v0[s] = vv[0];
                v1[s] = vv[1];
                v2[s] = vv[2];
                v3[s] = vv[3];
            }
            for (s = ns; s < nb; s++) {
                v0[s] = v1[s] = v2[s] = v3[s] = 0.0f;
            }
        }
        for (ob = 0; ob < nob; ob++) {
            for (j = 0; j < 4; j++) {
                const float *uk = u + ((int64_t)j * nob + ob) * 8 * c_in;
                const float *vk = v + (int64_t)j * c_in * nb;
                float       *mk = m + (int64_t)j * 8 * nb;

                for (k0 = 0; k0 < c_in; k0 += SVP_OPS_WINO_KC) {
                    int kc = SVP_MIN(SVP_OPS_WINO_KC, c_in - k0);

                    for (c = 0; c < nb; c += 32) {
                        svp_ops_cpu_kernel_8x32(kc, uk + 8 * k0, vk + k0 * nb + c,
                                                nb, mk + c, nb, k0 > 0);
                    }
                }
            }
            for (o = 0; o < 8 && ob * 8 + o < c_out; o++) {
                const float *q0 = m + (int64_t)o * nb, *q1 = q0 + 8 * nb;
                const float *q2 = q1 + 8 * nb, *q3 = q2 + 8 * nb;
                float        bv = bias ? bias[ob * 8 + o] : 0.0f;
                float       *y0 =
                    y + (clip * f + t) * out_frame + (int64_t)(ob * 8 + o) * hw + s0;

#pragma omp simd
                for (s = 0; s < ns; s++) {
                    y0[s] = svp_wino_at0(q0[s], q1[s], q2[s]) + bv;
                }
                if (t + 1 < f) {
                    float *y1 = y0 + out_frame;
#pragma omp simd
                    for (s = 0; s < ns; s++) {
                        y1[s] = svp_wino_at1(q1[s], q2[s], q3[s]) + bv;
                    }
                }
            }
        }
    }
    return SVP_OK;
}
