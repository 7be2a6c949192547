/*
 * Gaussian pre-blur and torch-style bicubic interpolation, in float32.
 *
 * Everything rounds where torch rounds: the kernel is built from a float32
 * sigma, the cubic scale and weights are stored as float32 (see
 * svp_media_cubic_axis_init for the one place where that needed
 * measuring), and sums accumulate in float32.  What we do not reproduce is
 * torch's summation order inside conv2d and its vector exp(): the blurred
 * images land within 2e-7 of diffusers', the resized ones within 7e-7.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/antialias.h"
#include "common/log.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* Keys' cubic convolution with A = -0.75, torch's choice (Pillow's BICUBIC
 * uses -0.5). */
#define SVP_MEDIA_CUBIC_A (-0.75)

void svp_media_gauss_for_scale(int in_size, int out_size, svp_media_gauss_t *gauss_p)
{
    double factor = (double)in_size / out_size;
    double sigma  = fmax((factor - 1.0) / 2.0, 0.001);
    int    size   = (int)fmax(2.0 * 2 * sigma, 3);

    gauss_p->sigma = sigma;
    gauss_p->size  = (size % 2 == 0) ? size + 1 : size;
}

svp_status_t svp_media_gauss_kernel(const svp_media_gauss_t *gauss, float *kernel)
{
    float sigma = (float)gauss->sigma;
    float denom = 2.0f * (sigma * sigma);
    float sum   = 0.0f;
    int   k;

    if (gauss->size < 1 || gauss->size % 2 == 0 ||
        gauss->size > SVP_MEDIA_GAUSS_MAX_TAPS) {
        svp_error("gaussian kernel size %d is not odd in 1..%d", gauss->size,
                  SVP_MEDIA_GAUSS_MAX_TAPS);
        return SVP_ERR_INVALID_PARAM;
    }
    for (k = 0; k < gauss->size; ++k) {
        int   center = gauss->size / 2;
        float x      = (float)(k - center);

        kernel[k] = expf(-(x * x) / denom);
        sum += kernel[k];
    }
    for (k = 0; k < gauss->size; ++k) {
        kernel[k] /= sum;
    }
    return SVP_OK;
}

/* Index i in [-pad, n + pad) mirrored into [0, n) without repeating the
 * edge: -1 -> 1, n -> n - 2.  Needs pad < n. */
static inline int svp_media_reflect(int i, int n)
{
    if (i < 0) {
        return -i;
    }
    if (i >= n) {
        return 2 * (n - 1) - i;
    }
    return i;
}

static svp_status_t svp_media_blur_check(int axis_len, int size, const char *axis)
{
    if (size < 1 || size % 2 == 0 || (size - 1) / 2 >= axis_len) {
        svp_error("cannot blur %d samples along %s with a %d-tap kernel: "
                  "reflect padding needs more samples than (taps - 1)/2",
                  axis_len, axis, size);
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_OK;
}

svp_status_t svp_media_blur_x(const float *src, int planes, int height, int width,
                              const float *kernel, int size, float *dst)
{
    int    pad = (size - 1) / 2;
    int    x, k;
    size_t row, rows = (size_t)planes * height;

    if (svp_media_blur_check(width, size, "width") != SVP_OK) {
        return SVP_ERR_INVALID_PARAM;
    }
    for (row = 0; row < rows; ++row) {
        const float *s = src + row * width;
        float       *d = dst + row * width;

        for (x = 0; x < width; ++x) {
            float acc = 0.0f;

            for (k = 0; k < size; ++k) {
                acc += s[svp_media_reflect(x - pad + k, width)] * kernel[k];
            }
            d[x] = acc;
        }
    }
    return SVP_OK;
}

svp_status_t svp_media_blur_y(const float *src, int planes, int height, int width,
                              const float *kernel, int size, float *dst)
{
    int pad = (size - 1) / 2;
    int p, y, x, k;

    if (svp_media_blur_check(height, size, "height") != SVP_OK) {
        return SVP_ERR_INVALID_PARAM;
    }
    for (p = 0; p < planes; ++p) {
        const float *s = src + (size_t)p * height * width;
        float       *d = dst + (size_t)p * height * width;

        for (y = 0; y < height; ++y) {
            float *drow = d + (size_t)y * width;

            for (x = 0; x < width; ++x) {
                drow[x] = 0.0f;
            }
            for (k = 0; k < size; ++k) {
                const float *srow =
                    s + (size_t)svp_media_reflect(y - pad + k, height) * width;

                for (x = 0; x < width; ++x) {
                    /* src (the x pass's output) is written in full */
                    /* NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult) */
                    drow[x] += srow[x] * kernel[k];
                }
            }
        }
    }
    return SVP_OK;
}

/* For one axis: per output sample, the four clamped source indices and
 * their float32 Keys weights (torch's compute_indices_weights_cubic). */
typedef struct {
    int (*idx)[4];
    float (*w)[4];
} svp_media_cubic_axis_t;

static double svp_media_cubic_near(double x) /* |x| <= 1 */
{
    const double a = SVP_MEDIA_CUBIC_A;

    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
}

static double svp_media_cubic_far(double x) /* 1 < |x| < 2 */
{
    const double a = SVP_MEDIA_CUBIC_A;

    return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
}

/*
 * Where torch rounds: the scale (in - 1)/(out - 1) is a float32, but the
 * source coordinate and the four weights behave as if computed in double
 * from that float scale and only then stored as float32.  Measured on the
 * golden clip_preprocess "resized" tensors, fed the golden "blurred":
 *
 *   float32 scale, double coordinate and weights       max |d| 7.2e-7
 *   float32 scale, coordinate and weights all float32  max |d| 8.6e-6
 *   double scale (= torch's float64 run)               max |d| 7.0e-6
 *
 * The remaining 7e-7 does not move with the summation order or FMA.
 */
static svp_status_t svp_media_cubic_axis_init(int in_size, int out_size,
                                              svp_media_cubic_axis_t *ax)
{
    /* align_corners=True: the first and last samples of both grids meet */
    float scale =
        (out_size > 1) ? (float)(in_size - 1) / (float)(out_size - 1) : 0.0f;
    int i, j, base, tap;

    ax->idx = malloc(sizeof(*ax->idx) * out_size);
    ax->w   = malloc(sizeof(*ax->w) * out_size);
    if (ax->idx == NULL || ax->w == NULL) {
        free(ax->idx);
        free(ax->w);
        svp_error("no memory for %d bicubic taps", out_size);
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < out_size; ++i) {
        double src = (double)scale * i;
        double t;

        base        = (int)floor(src);
        t           = src - base;
        ax->w[i][0] = (float)svp_media_cubic_far(t + 1.0);
        ax->w[i][1] = (float)svp_media_cubic_near(t);
        ax->w[i][2] = (float)svp_media_cubic_near(1.0 - t);
        ax->w[i][3] = (float)svp_media_cubic_far(2.0 - t);
        for (j = 0; j < 4; ++j) {
            tap           = base - 1 + j;
            tap           = (tap < 0) ? 0 : (tap > in_size - 1) ? in_size - 1 : tap;
            ax->idx[i][j] = tap;
        }
    }
    return SVP_OK;
}

static void svp_media_cubic_axis_cleanup(svp_media_cubic_axis_t *ax)
{
    free(ax->idx);
    free(ax->w);
}

svp_status_t svp_media_bicubic_resize(const float *src, int planes, int height,
                                      int width, int out_height, int out_width,
                                      float *dst)
{
    svp_media_cubic_axis_t ax_x, ax_y;
    float                 *rows;
    svp_status_t           status;
    int                    p, y, x, j;

    if (height < 1 || width < 1 || out_height < 1 || out_width < 1) {
        svp_error("bicubic resize %dx%d -> %dx%d: empty image", width, height,
                  out_width, out_height);
        return SVP_ERR_INVALID_PARAM;
    }
    status = svp_media_cubic_axis_init(width, out_width, &ax_x);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_media_cubic_axis_init(height, out_height, &ax_y);
    if (status != SVP_OK) {
        goto out_cleanup_x;
    }
    /* Columns first for every source row, then rows: the same float32
     * operations, in the same order, as torch's per-pixel nested loop (four
     * column interpolations, then their combination), done once per row. */
    rows = malloc(sizeof(float) * (size_t)height * out_width);
    if (rows == NULL) {
        svp_error("no memory for a %dx%d bicubic buffer", out_width, height);
        status = SVP_ERR_NO_MEMORY;
        goto out_cleanup_y;
    }

    for (p = 0; p < planes; ++p) {
        const float *s = src + (size_t)p * height * width;
        float       *d = dst + (size_t)p * out_height * out_width;

        for (y = 0; y < height; ++y) {
            const float *srow = s + (size_t)y * width;
            float       *rrow = rows + (size_t)y * out_width;

            for (x = 0; x < out_width; ++x) {
                float acc = srow[ax_x.idx[x][0]] * ax_x.w[x][0];

                for (j = 1; j < 4; ++j) {
                    acc += srow[ax_x.idx[x][j]] * ax_x.w[x][j];
                }
                rrow[x] = acc;
            }
        }
        for (y = 0; y < out_height; ++y) {
            float *drow = d + (size_t)y * out_width;

            for (x = 0; x < out_width; ++x) {
                float acc =
                    rows[(size_t)ax_y.idx[y][0] * out_width + x] * ax_y.w[y][0];

                for (j = 1; j < 4; ++j) {
                    acc +=
                        rows[(size_t)ax_y.idx[y][j] * out_width + x] * ax_y.w[y][j];
                }
                drow[x] = acc;
            }
        }
    }
    free(rows);

out_cleanup_y:
    svp_media_cubic_axis_cleanup(&ax_y);
out_cleanup_x:
    svp_media_cubic_axis_cleanup(&ax_x);
    return status;
}

svp_status_t svp_media_antialias_resize(const float *src, int planes, int height,
                                        int width, int out_height, int out_width,
                                        float *dst)
{
    svp_media_gauss_t gx, gy;
    float             kx[SVP_MEDIA_GAUSS_MAX_TAPS], ky[SVP_MEDIA_GAUSS_MAX_TAPS];
    float            *tmp, *blurred;
    size_t            n = (size_t)planes * height * width;
    svp_status_t      status;

    svp_media_gauss_for_scale(width, out_width, &gx);
    svp_media_gauss_for_scale(height, out_height, &gy);
    status = svp_media_gauss_kernel(&gx, kx);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_media_gauss_kernel(&gy, ky);
    if (status != SVP_OK) {
        return status;
    }

    tmp     = malloc(sizeof(float) * n);
    blurred = malloc(sizeof(float) * n);
    if (tmp == NULL || blurred == NULL) {
        svp_error("no memory to blur a %dx%d image", width, height);
        status = SVP_ERR_NO_MEMORY;
        goto out_free;
    }
    status = svp_media_blur_x(src, planes, height, width, kx, gx.size, tmp);
    if (status != SVP_OK) {
        goto out_free;
    }
    status = svp_media_blur_y(tmp, planes, height, width, ky, gy.size, blurred);
    if (status != SVP_OK) {
        goto out_free;
    }
    status = svp_media_bicubic_resize(blurred, planes, height, width, out_height,
                                      out_width, dst);

out_free:
    free(blurred);
    free(tmp);
    return status;
}
