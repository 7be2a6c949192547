/*
 * Image resizing as the SVD pipeline's users get it from Pillow.
 *
 * diffusers' VaeImageProcessor.preprocess resizes a PIL input image to the
 * requested width x height with Image.resize(size, Image.LANCZOS).  This is
 * a re-implementation of that resampler (Pillow 9.4, libImaging/Resample.c)
 * that reproduces its output bytes: the same windowed-sinc weights, the same
 * fixed-point rounding, the same pass order.
 */
#ifndef SVP_MEDIA_RESIZE_H
#define SVP_MEDIA_RESIZE_H

#include "media/image.h"
#include "tensor/tensor.h"

/*
 * A new width x height image resampled from src with Pillow's LANCZOS
 * filter (a = 3).  The caller destroys *dst_p.  Equal sizes give a copy.
 */
svp_status_t svp_media_image_resize_lanczos(const svp_media_image_t *src, int width,
                                            int height, svp_media_image_t **dst_p);

/*
 * The VAE's conditioning image as diffusers' VaeImageProcessor.preprocess
 * makes it from a PIL image: LANCZOS resize to width x height, then
 * x / 255 * 2 - 1.  A new [1, 3, height, width] F32 tensor the caller
 * destroys.
 */
svp_status_t svp_media_vae_preprocess(const svp_media_image_t *image, int width,
                                      int height, svp_tensor_t **pixel_values_p);

#endif
