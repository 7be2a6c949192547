/*
 * diffusers' _resize_with_antialiasing(): a Gaussian blur sized by the
 * downscale factor, then torch bicubic interpolation with
 * align_corners=True.  SVD uses it to squash the conditioning image to the
 * CLIP encoder's 224 x 224; it is kornia's recipe, re-stated here in float32
 * the way torch evaluates it.
 *
 * All images are planar float32: `planes` planes of height x width (for an
 * RGB image planes = 3; a batch of images is just more planes).  Buffers
 * are the caller's; no function allocates what it returns.
 */
#ifndef SVP_MEDIA_ANTIALIAS_H
#define SVP_MEDIA_ANTIALIAS_H

#include "common/status.h"

/* Longest Gaussian kernel: sigma = (in/out - 1)/2 and size about 4 sigma, so
 * this covers a 2 * 255 + 1 = 511-tap kernel, a 128x downscale. */
#define SVP_MEDIA_GAUSS_MAX_TAPS 511

/* The blur of one axis going from in_size to out_size samples:
 * sigma = max((in/out - 1)/2, 0.001) (in double), and
 * size = int(max(4 sigma, 3)), plus one when even. */
typedef struct {
    double sigma;
    int    size;
} svp_media_gauss_t;

void svp_media_gauss_for_scale(int in_size, int out_size,
                               svp_media_gauss_t *gauss_p);

/*
 * kernel[k] = exp(-(k - size/2)^2 / (2 sigma^2)) / sum, k = 0..size-1, in
 * float32 with sigma first rounded to float32 (kornia's _gaussian on a
 * float32 tensor).  size must be odd and at most SVP_MEDIA_GAUSS_MAX_TAPS.
 */
svp_status_t svp_media_gauss_kernel(const svp_media_gauss_t *gauss, float *kernel);

/*
 * One-dimensional convolution along width (svp_media_blur_x) or height
 * (svp_media_blur_y) with reflect padding of (size - 1)/2: the mirror image
 * without repeating the edge sample.  The padding must be shorter than the
 * axis (torch refuses it too): SVP_ERR_INVALID_PARAM otherwise.  dst must
 * not overlap src.
 */
svp_status_t svp_media_blur_x(const float *src, int planes, int height, int width,
                              const float *kernel, int size, float *dst);
svp_status_t svp_media_blur_y(const float *src, int planes, int height, int width,
                              const float *kernel, int size, float *dst);

/*
 * torch.nn.functional.interpolate(mode="bicubic", align_corners=True) on
 * float32: source coordinate dst * (in - 1)/(out - 1), Keys cubic with
 * A = -0.75, taps clamped to the image, rows of four taps combined after the
 * columns, all in float32.  No clamping of the overshoot.
 */
svp_status_t svp_media_bicubic_resize(const float *src, int planes, int height,
                                      int width, int out_height, int out_width,
                                      float *dst);

/* Blur along x, then along y, then bicubic: _resize_with_antialiasing(). */
svp_status_t svp_media_antialias_resize(const float *src, int planes, int height,
                                        int width, int out_height, int out_width,
                                        float *dst);

#endif
