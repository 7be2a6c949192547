/*
 * Random-weight models for tests and demos: one model from its config, or a
 * whole SVD checkpoint folder from a folder of configs.
 */
#ifndef SVP_MODEL_SVD_INIT_H
#define SVP_MODEL_SVD_INIT_H

#include "common/status.h"
#include "model/checkpoint.h"

#include <stdint.h>

/* svp_model_arch_t is the checkpoint table's (model/checkpoint.h). */

/*
 * What config.json describes: diffusers' "_class_name", or for
 * transformers "model_type": "clip_vision_model" or "architectures":
 * ["CLIPVisionModelWithProjection"].  Anything else is SVP_ERR_UNSUPPORTED,
 * logged with the file and what it names.
 */
svp_status_t svp_model_config_kind(const char       *config_path,
                                   svp_model_arch_t *kind_p);

/*
 * Writes the model config_path describes with seeded random weights into
 * out_dir (svp_unet_write_random(), svp_vae_write_random() or
 * svp_clip_write_random(), by svp_model_config_kind()).
 */
svp_status_t svp_model_write_random(const char *config_path, uint64_t seed,
                                    const char *out_dir);

/*
 * From config_dir laid out like a diffusers SVD checkpoint without weights
 * (model_index.json, unet/config.json, vae/config.json,
 * image_encoder/config.json, scheduler/scheduler_config.json,
 * feature_extractor/preprocessor_config.json), writes the complete
 * checkpoint at out_dir: random weights for the three models, each from its
 * own seed derived from seed, and copies of the other files.
 *
 * The folder is built as "out_dir.tmp.PID" and renamed into place only when
 * whole, replacing an older out_dir; an interrupted run leaves no out_dir
 * that looks complete.  The same configs and seed give the same bytes.
 */
svp_status_t svp_svd_write_random(const char *config_dir, uint64_t seed,
                                  const char *out_dir);

#endif
