/*
 * The SVD pipeline's CLIP image path up to the encoder input
 * (StableVideoDiffusionPipeline._encode_image):
 *
 *   x = uint8 / 255 * 2 - 1          from the ORIGINAL image, not the copy
 *                                    resized for the VAE
 *   x = _resize_with_antialiasing(x, (224, 224))   blur + bicubic, see
 *                                    media/antialias.h; aspect not kept
 *   x = (x + 1) / 2                  "clip_pixel_input"
 *   x = (x - mean_c) / std_c         CLIPImageProcessor normalisation, a
 *                                    float32 division
 */
#ifndef SVP_MEDIA_CLIP_PREPROCESS_H
#define SVP_MEDIA_CLIP_PREPROCESS_H

#include "media/image.h"
#include "tensor/tensor.h"

typedef struct {
    int   height; /* encoder input size: the encoder config's image_size */
    int   width;
    float mean[3]; /* per channel, applied as (x - mean) / std */
    float std[3];
} svp_media_clip_params_t;

/* SVD's values: 224 x 224 and the OpenAI CLIP mean/std that
 * feature_extractor/preprocessor_config.json carries. */
void svp_media_clip_params_init(svp_media_clip_params_t *params);

/*
 * The encoder input for one image: a new [1, 3, height, width] F32 tensor
 * the caller destroys.  When clip_pixel_input is not NULL it also receives
 * the [0, 1] image before normalisation (3 * height * width floats, the
 * caller's buffer).
 */
svp_status_t svp_media_clip_preprocess(const svp_media_image_t       *image,
                                       const svp_media_clip_params_t *params,
                                       float         *clip_pixel_input,
                                       svp_tensor_t **pixel_values_p);

#endif
