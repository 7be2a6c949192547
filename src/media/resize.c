/*
 * Pillow-exact LANCZOS resampling.
 *
 * Pillow resamples separably: one pass along x into a temporary 8-bit
 * image, then one along y, each output sample a weighted sum over a window
 * of source samples.  Matching it byte for byte takes these details, all
 * of which show up as off-by-one pixels when missed:
 *
 *   - Window.  For a scale s = in/out, the filter is stretched by
 *     f = max(s, 1) (so downscaling is antialiased), its support is 3f, and
 *     output sample i is centred at c = (i + 0.5) s.  The window is
 *     [trunc(c - 3f + 0.5), trunc(c + 3f + 0.5)) clipped to the image, and
 *     source j gets weight L((j - c + 0.5) / f), L(x) = sinc(x) sinc(x/3)
 *     on [-3, 3).  Weights are computed in double and divided by their sum.
 *   - Fixed point.  Each normalised weight becomes round-half-away(w 2^22)
 *     as int; 22 = 32 - 8 - 2 bits leave room for the 8-bit result and for
 *     the overshoot of the negative lobes.  A sum starts at 2^21 (rounding),
 *     and the result is (sum >> 22) clamped to 0..255.
 *   - Order.  x first, rounded to 8 bits, then y.  Only the source rows the
 *     y pass will read go through the x pass (which does not change any
 *     value, just the work).  An axis whose size does not change is not
 *     resampled at all.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/resize.h"
#include "media/image_int.h"
#include "tensor/tensor.h"
#include "common/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SVP_MEDIA_LANCZOS_SUPPORT  3.0
#define SVP_MEDIA_RESIZE_PREC_BITS 22

/* One axis: for each output sample, a window of source samples and its
 * fixed-point weights (taps per row of weights, zero past count). */
typedef struct {
    int      taps;
    int     *first;
    int     *count;
    int32_t *weights;
} svp_media_resize_axis_t;

static double svp_media_sinc(double x)
{
    if (x == 0.0) {
        return 1.0;
    }
    x *= M_PI;
    return sin(x) / x;
}

static double svp_media_lanczos3(double x)
{
    if (x >= -SVP_MEDIA_LANCZOS_SUPPORT && x < SVP_MEDIA_LANCZOS_SUPPORT) {
        return svp_media_sinc(x) * svp_media_sinc(x / SVP_MEDIA_LANCZOS_SUPPORT);
    }
    return 0.0;
}

static void svp_media_resize_axis_cleanup(svp_media_resize_axis_t *axis)
{
    free(axis->weights);
    free(axis->count);
    free(axis->first);
}

static svp_status_t svp_media_resize_axis_init(int in_size, int out_size,
                                               svp_media_resize_axis_t *axis)
{
    double  scale   = (double)in_size / out_size;
    double  stretch = (scale < 1.0) ? 1.0 : scale;
    double  support = SVP_MEDIA_LANCZOS_SUPPORT * stretch;
    double *w;
    int     taps = (int)ceil(support) * 2 + 1;
    int     i, j, lo, hi;

    axis->taps    = taps;
    axis->first   = calloc(out_size, sizeof(int));
    axis->count   = calloc(out_size, sizeof(int));
    axis->weights = calloc((size_t)out_size * taps, sizeof(int32_t));
    w             = calloc(taps, sizeof(double));
    if (axis->first == NULL || axis->count == NULL || axis->weights == NULL ||
        w == NULL) {
        svp_error("no memory for %d resampling windows of %d taps", out_size, taps);
        free(w);
        svp_media_resize_axis_cleanup(axis);
        return SVP_ERR_NO_MEMORY;
    }

    for (i = 0; i < out_size; ++i) {
        double center = (i + 0.5) * scale;
        double sum    = 0.0;

        /* (int) truncates, as in Pillow; negatives are clipped anyway */
        lo = (int)(center - support + 0.5);
        hi = (int)(center + support + 0.5);
        lo = (lo < 0) ? 0 : lo;
        hi = (hi > in_size) ? in_size : hi;

        for (j = lo; j < hi; ++j) {
            w[j - lo] = svp_media_lanczos3((j - center + 0.5) / stretch);
            sum += w[j - lo];
        }
        for (j = 0; j < hi - lo; ++j) {
            double v     = (sum != 0.0) ? w[j] / sum : w[j];
            double fixed = v * (double)(1 << SVP_MEDIA_RESIZE_PREC_BITS);

            axis->weights[(size_t)i * taps + j] =
                (int32_t)((v < 0.0) ? fixed - 0.5 : fixed + 0.5);
        }
        axis->first[i] = lo;
        axis->count[i] = hi - lo;
    }
    free(w);
    return SVP_OK;
}

static uint8_t svp_media_resize_clip(int64_t acc)
{
    if (acc < 0) {
        return 0;
    }
    if (acc >= ((int64_t)256 << SVP_MEDIA_RESIZE_PREC_BITS)) {
        return 255;
    }
    return (uint8_t)(acc >> SVP_MEDIA_RESIZE_PREC_BITS);
}

/* dst[y][x] = sum_k src[y][first(x) + k] * w(x, k), for rows 0..rows-1 of
 * dst taken from rows row0.. of src; both RGB8. */
static void svp_media_resize_x(const uint8_t *src, int src_w, int row0, int rows,
                               const svp_media_resize_axis_t *ax, int dst_w,
                               uint8_t *dst)
{
    int y, x, k, c;

    for (y = 0; y < rows; ++y) {
        const uint8_t *srow = src + (size_t)(row0 + y) * src_w * 3;
        uint8_t       *drow = dst + (size_t)y * dst_w * 3;

        for (x = 0; x < dst_w; ++x) {
            const int32_t *w = ax->weights + (size_t)x * ax->taps;
            const uint8_t *s = srow + (size_t)ax->first[x] * 3;
            int64_t        acc[3];

            for (c = 0; c < 3; ++c) {
                acc[c] = (int64_t)1 << (SVP_MEDIA_RESIZE_PREC_BITS - 1);
            }
            for (k = 0; k < ax->count[x]; ++k) {
                for (c = 0; c < 3; ++c) {
                    acc[c] += (int64_t)s[k * 3 + c] * w[k];
                }
            }
            for (c = 0; c < 3; ++c) {
                drow[x * 3 + c] = svp_media_resize_clip(acc[c]);
            }
        }
    }
}

/* dst[y][x] = sum_k src[first(y) - row0 + k][x] * w(y, k) */
static void svp_media_resize_y(const uint8_t *src, int width, int row0,
                               const svp_media_resize_axis_t *ax, int dst_h,
                               uint8_t *dst)
{
    size_t stride = (size_t)width * 3;
    int    y, k;
    size_t i;

    for (y = 0; y < dst_h; ++y) {
        const int32_t *w    = ax->weights + (size_t)y * ax->taps;
        const uint8_t *s    = src + (size_t)(ax->first[y] - row0) * stride;
        uint8_t       *drow = dst + (size_t)y * stride;

        for (i = 0; i < stride; ++i) {
            int64_t acc = (int64_t)1 << (SVP_MEDIA_RESIZE_PREC_BITS - 1);

            for (k = 0; k < ax->count[y]; ++k) {
                acc += (int64_t)s[(size_t)k * stride + i] * w[k];
            }
            drow[i] = svp_media_resize_clip(acc);
        }
    }
}

svp_status_t svp_media_image_resize_lanczos(const svp_media_image_t *src, int width,
                                            int height, svp_media_image_t **dst_p)
{
    svp_media_resize_axis_t ax_x, ax_y;
    svp_media_image_t      *dst;
    uint8_t                *tmp  = NULL;
    int                     row0 = 0, nrows = src->height;
    svp_status_t            status;

    status = svp_media_image_alloc(width, height, "resize", &dst);
    if (status != SVP_OK) {
        return status;
    }
    if (width == src->width && height == src->height) {
        memcpy(dst->pixels, src->pixels, (size_t)width * height * 3);
        *dst_p = dst;
        return SVP_OK;
    }

    if (height != src->height) {
        status = svp_media_resize_axis_init(src->height, height, &ax_y);
        if (status != SVP_OK) {
            goto err_destroy_dst;
        }
        /* the x pass only needs the rows the y pass will read */
        row0  = ax_y.first[0];
        nrows = ax_y.first[height - 1] + ax_y.count[height - 1] - row0;
    }

    if (width != src->width) {
        status = svp_media_resize_axis_init(src->width, width, &ax_x);
        if (status != SVP_OK) {
            goto err_cleanup_y;
        }
        if (height != src->height) {
            tmp = malloc((size_t)nrows * width * 3);
            if (tmp == NULL) {
                svp_error("no memory for a %dx%d resize buffer", width, nrows);
                svp_media_resize_axis_cleanup(&ax_x);
                status = SVP_ERR_NO_MEMORY;
                goto err_cleanup_y;
            }
        }
        svp_media_resize_x(src->pixels, src->width, row0, nrows, &ax_x, width,
                           (tmp != NULL) ? tmp : dst->pixels);
        svp_media_resize_axis_cleanup(&ax_x);
    }

    if (height != src->height) {
        svp_media_resize_y((tmp != NULL) ? tmp : src->pixels, width,
                           (tmp != NULL) ? row0 : 0, &ax_y, height, dst->pixels);
        svp_media_resize_axis_cleanup(&ax_y);
    }
    free(tmp);
    *dst_p = dst;
    return SVP_OK;

err_cleanup_y:
    if (height != src->height) {
        svp_media_resize_axis_cleanup(&ax_y);
    }
err_destroy_dst:
    svp_media_image_destroy(dst);
    return status;
}

svp_status_t svp_media_vae_preprocess(const svp_media_image_t *image, int width,
                                      int height, svp_tensor_t **pixel_values_p)
{
    int64_t            shape[4] = {1, 3, height, width};
    svp_media_image_t *resized;
    svp_tensor_t      *out;
    svp_status_t       status;

    status = svp_media_image_resize_lanczos(image, width, height, &resized);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_tensor_create(SVP_DTYPE_F32, 4, shape, &out);
    if (status == SVP_OK) {
        svp_media_image_to_pm1(resized, out->data);
        *pixel_values_p = out;
    }
    svp_media_image_destroy(resized);
    return status;
}
