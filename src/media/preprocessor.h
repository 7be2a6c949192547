/*
 * feature_extractor/preprocessor_config.json of a diffusers SVD checkpoint
 * (transformers' CLIPImageProcessor) as CLIP preprocessing parameters.
 *
 * The SVD pipeline calls the processor with resize, crop and rescale off:
 * it resizes itself, to the crop size, and only the normalisation comes
 * from the processor.  So what is read is the encoder input size
 * (crop_size, else size) and image_mean / image_std.
 */
#ifndef SVP_MEDIA_PREPROCESSOR_H
#define SVP_MEDIA_PREPROCESSOR_H

#include "common/status.h"
#include "media/clip_preprocess.h"

/*
 * Reads path into *params_p (written only on success).  The input size is
 * crop_size ({"height", "width"} or one integer), else size ({"height",
 * "width"}, {"shortest_edge"} or one integer); image_mean and image_std are
 * three numbers each, the std positive.  A missing or malformed key is
 * SVP_ERR_BAD_FILE, logged with the file and the key.
 */
svp_status_t svp_media_clip_params_load(const char              *path,
                                        svp_media_clip_params_t *params_p);

#endif
