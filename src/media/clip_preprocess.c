/*
 * CLIP preprocessing of the conditioning image, as diffusers does it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "media/clip_preprocess.h"
#include "media/antialias.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

void svp_media_clip_params_init(svp_media_clip_params_t *params)
{
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    static const float std[3]  = {0.26862954f, 0.26130258f, 0.27577711f};

    params->height = 224;
    params->width  = 224;
    memcpy(params->mean, mean, sizeof(mean));
    memcpy(params->std, std, sizeof(std));
}

svp_status_t svp_media_clip_preprocess(const svp_media_image_t       *image,
                                       const svp_media_clip_params_t *params,
                                       float         *clip_pixel_input,
                                       svp_tensor_t **pixel_values_p)
{
    int64_t       shape[4] = {1, 3, params->height, params->width};
    size_t        plane    = (size_t)params->height * params->width;
    svp_tensor_t *out;
    float        *pm1, *v;
    size_t        i;
    int           c;
    svp_status_t  status;

    if (params->height < 1 || params->width < 1) {
        svp_error("clip preprocessing: bad target size %dx%d", params->width,
                  params->height);
        return SVP_ERR_INVALID_PARAM;
    }
    pm1 = malloc(sizeof(float) * 3 * (size_t)image->width * image->height);
    if (pm1 == NULL) {
        svp_error("clip preprocessing: no memory for a %dx%d image", image->width,
                  image->height);
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_tensor_create(SVP_DTYPE_F32, 4, shape, &out);
    if (status != SVP_OK) {
        goto out_free_pm1;
    }

    svp_media_image_to_pm1(image, pm1);
    v      = out->data;
    status = svp_media_antialias_resize(pm1, 3, image->height, image->width,
                                        params->height, params->width, v);
    if (status != SVP_OK) {
        svp_tensor_destroy(out);
        goto out_free_pm1;
    }
    for (c = 0; c < 3; ++c) {
        for (i = 0; i < plane; ++i) {
            float x = (v[c * plane + i] + 1.0f) / 2.0f;

            if (clip_pixel_input != NULL) {
                clip_pixel_input[c * plane + i] = x;
            }
            v[c * plane + i] = (x - params->mean[c]) / params->std[c];
        }
    }
    *pixel_values_p = out;

out_free_pm1:
    free(pm1);
    return status;
}
