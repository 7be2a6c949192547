/*
 * SVD's image encoder: transformers' CLIPVisionModelWithProjection (OpenCLIP
 * ViT-H/14 in SVD), loaded from a transformers model directory (config.json
 * + model[.fp16].safetensors, weights in F32, F16 or BF16; they are
 * converted to fp32 at load).  It maps CLIP-normalised pixel values to
 * image_embeds, the projected CLS token (not L2-normalised).
 *
 * Ownership: svp_clip_create() reads the config and every weight into
 * buffers of the given ops backend; the ops handle is borrowed and must
 * outlive the encoder.  svp_clip_destroy() frees the weights.  Inputs and
 * outputs of svp_clip_encode() are buffers of that backend, owned by the
 * caller; activations are allocated and freed inside each call.  An encoder
 * is used by one thread at a time (it shares the ops handle's scratch).
 */
#ifndef SVP_MODEL_CLIP_H
#define SVP_MODEL_CLIP_H

#include "common/status.h"
#include "ops/ops.h"

#include <stdint.h>

typedef enum {
    SVP_CLIP_ACT_GELU = 0,  /* "gelu": exact erf form (SVD's) */
    SVP_CLIP_ACT_QUICK_GELU /* "quick_gelu": x * sigmoid(1.702 x) */
} svp_clip_act_t;

/* What config.json says, after CLIPVisionConfig's defaults. */
typedef struct {
    int            hidden_size;       /* SVD: 1280 */
    int            intermediate_size; /* 5120 */
    int            num_layers;        /* num_hidden_layers, 32 */
    int            num_heads;         /* num_attention_heads, 16 */
    int            num_channels;      /* 3 */
    int            image_size;        /* 224 */
    int            patch_size;        /* 14 */
    int            projection_dim;    /* 1024 */
    svp_clip_act_t hidden_act;
    double         layer_norm_eps; /* 1e-5 */
} svp_clip_config_t;

/*
 * Parses a CLIPVisionConfig config.json.  Absent keys take
 * CLIPVisionConfig's defaults, which are NOT SVD's (quick_gelu, patch 32,
 * hidden 768): a real checkpoint sets them all.  An unknown hidden_act or
 * inconsistent sizes (hidden not divisible by heads, image not by patch) is
 * SVP_ERR_BAD_FILE naming the key.
 */
svp_status_t svp_clip_config_load(const char *path, svp_clip_config_t *cfg_p);

/*
 * Called with module outputs named like the golden intermediates
 * ("out.vision_model.embeddings", "out.vision_model.encoder.layers.0", ...,
 * "out.visual_projection"), data in host memory valid only during the call.
 * Token tensors are [B, T, D].
 */
typedef void (*svp_clip_capture_cb_t)(const char *name, const float *data, int ndim,
                                      const int64_t *shape, void *arg);

typedef struct {
    /* The weights file in the directory; NULL tries model.safetensors, then
     * model.fp16.safetensors. */
    const char           *weights_file;
    svp_clip_capture_cb_t capture_cb; /* NULL: no captures */
    void                 *capture_arg;
} svp_clip_params_t;

typedef struct svp_clip *svp_clip_h;

/*
 * Loads model_dir/config.json and its weights.  params may be NULL.  A
 * missing tensor or one of the wrong shape fails with SVP_ERR_BAD_FILE, the
 * message naming the tensor, the file and both shapes; a stray
 * vision_model.embeddings.position_ids buffer is ignored.  On failure
 * nothing is left allocated and *clip_p is untouched.
 */
svp_status_t svp_clip_create(svp_ops_h ops, const char *model_dir,
                             const svp_clip_params_t *params, svp_clip_h *clip_p);
void         svp_clip_destroy(svp_clip_h clip);

/*
 * Checks, reading only the safetensors header, that model_dir's weights
 * file holds every tensor the config implies with the right shape and a
 * float dtype (the checks svp_clip_create() makes, with the same errors).
 * *mapped_p (may be NULL) receives how many of the file's tensors the model
 * uses.
 */
svp_status_t svp_clip_check_weights(const char              *model_dir,
                                    const svp_clip_params_t *params, int *mapped_p);

const svp_clip_config_t *svp_clip_config(svp_clip_h clip);

/*
 * pixel_values [batch, num_channels, image_size, image_size] (already
 * CLIP-normalised) -> image_embeds [batch, projection_dim].
 */
svp_status_t svp_clip_encode(svp_clip_h clip, int batch, const float *pixel_values,
                             float *image_embeds);

/*
 * Writes an image encoder with seeded random weights for the config at
 * config_path: out_dir/model.safetensors (every parameter of transformers'
 * CLIPVisionModelWithProjection for that config, F32; linears N(0,
 * 1/fan_in), class and position embeddings N(0, 0.5^2), norm scales near
 * 1) and a copy of the config as out_dir/config.json, each file written
 * atomically.  out_dir is created if needed.  Same config and seed, same
 * bytes.
 */
svp_status_t svp_clip_write_random(const char *config_path, uint64_t seed,
                                   const char *out_dir);

#endif
