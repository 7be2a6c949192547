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

/* Workspace elements one batch may use (256 MiB of floats, as im2col). */
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

/* U = G g G^T for every (o, i): u[xi][o * c_in + i], xi = 4 * row + col. */
static void svp_ops_wino_weights(int c_out, int c_in, const float *w, float *u)
{
    int64_t plane = (int64_t)c_out * c_in, oi;

#pragma omp parallel for schedule(static) if(plane > 1024)
    for (oi = 0; oi < plane; oi++) {
        const float *g = w + oi * 9;
        float        t[4][3], r[4][4];
        int          j;

        /* t = G g: rows g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2 */
        for (j = 0; j < 3; j++) {
            float g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
            t[0][j] = g0;
            t[1][j] = 0.5f * ((g0 + g2) + g1);
            t[2][j] = 0.5f * ((g0 + g2) - g1);
            t[3][j] = g2;
        }
        /* r = t G^T, the same on the columns */
        for (j = 0; j < 4; j++) {
            float a = t[j][0], b = t[j][1], c = t[j][2];
            r[j][0] = a;
            r[j][1] = 0.5f * ((a + c) + b);
            r[j][2] = 0.5f * ((a + c) - b);
            r[j][3] = c;
        }
        for (j = 0; j < 16; j++) {
            u[j * plane + oi] = r[j / 4][j % 4];
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
static void svp_ops_wino_input(int64_t r0, int nr, int c_in, int h, int w,
                               int th, int tw, const float *x, float *v,
                               int64_t ld)
{
    int64_t plane = (int64_t)c_in * ld;
    int64_t rows = (int64_t)nr * c_in, r;
    int     wp = 2 * tw + 2;

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
        /* t = B^T d: rows d0-d2, d1+d2, d2-d1, d1-d3 */
#pragma omp simd
        for (j = 0; j < wp; j++) {
            t[0][j] = d[0][j] - d[2][j];
            t[1][j] = d[1][j] + d[2][j];
            t[2][j] = d[2][j] - d[1][j];
            t[3][j] = d[1][j] - d[3][j];
        }
        /* V = t B, the same on the columns 2tx .. 2tx+3 */
        for (a = 0; a < 4; a++) {
            const float *e  = t[a];
            float       *v0 = dst + (4 * a) * plane;
            float       *v1 = v0 + plane, *v2 = v1 + plane, *v3 = v2 + plane;

#pragma omp simd
            for (tx = 0; tx < tw; tx++) {
                v0[tx] = e[2 * tx] - e[2 * tx + 2];
                v1[tx] = e[2 * tx + 1] + e[2 * tx + 2];
                v2[tx] = e[2 * tx + 2] - e[2 * tx + 1];
                v3[tx] = e[2 * tx + 1] - e[2 * tx + 3];
            }
        }
    }
}

/*
 * y = A^T M A + bias, the 2x2 block of each tile of rows r0 .. r0+nr-1,
 * inside the image only: per row of tiles, the 16 planes' rows are combined into two output rows.
 */
static void svp_ops_wino_output(int64_t r0, int nr, int c_out, int h, int w,
                                int th, int tw, const float *mm, int64_t ld,
                                const float *bias, float *y)
{
    int64_t plane = (int64_t)c_out * ld;
    int64_t rows = (int64_t)nr * c_out, r;

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
                s[0][c][tx] = (q0[tx] + q1[tx]) + q2[tx];
                s[1][c][tx] = (q1[tx] - q2[tx]) - q3[tx];
            }
        }
        for (a = 0; a < 2 && 2 * ty + a < h; a++) {
#pragma omp simd
            for (tx = 0; tx < tw; tx++) {
                out[a][2 * tx] = ((s[a][0][tx] + s[a][1][tx]) + s[a][2][tx]) + bv;
                out[a][2 * tx + 1] =
                    ((s[a][1][tx] - s[a][2][tx]) - s[a][3][tx]) + bv;
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
    return p->kh == 3 && p->kw == 3 && p->stride == 1 && p->pad == 1 &&
           p->h >= 8 && p->w >= 8;
}

svp_status_t svp_ops_cpu_conv2d_winograd(svp_ops_h ops,
                                         const svp_ops_conv2d_t *p,
                                         const float *x, const float *w,
                                         const float *b, float *y)
{
    int          th = (p->h + 1) / 2, tw = (p->w + 1) / 2;
    int64_t      rows = (int64_t)p->n * th;
    int64_t      u_size = 16 * (int64_t)p->c_out * p->c_in;
    int64_t      per_row = 16 * (int64_t)tw * (p->c_in + p->c_out);
    int          chunk = (int)SVP_MIN(rows, SVP_MAX(SVP_OPS_WINO_WS_MAX / per_row,
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
    svp_ops_wino_weights(p->c_out, p->c_in, w, u);

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
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->c_out,
                        (int)ld, p->c_in, 1.0f,
                        u + xi * (int64_t)p->c_out * p->c_in, p->c_in,
                        v + xi * (int64_t)p->c_in * ld, (int)ld, 0.0f,
                        mm + xi * (int64_t)p->c_out * ld, (int)ld);
        }
        svp_ops_wino_output(r0, nr, p->c_out, p->h, p->w, th, tw, mm, ld, b, y);
    }
    return SVP_OK;
}
