/*
 * Random CLIPVisionModelWithProjection weights in transformers' layout, for
 * tests and demos without a real checkpoint: every parameter of the
 * model's state_dict, in its registration order, with the shape the config
 * implies (the non-persistent position_ids buffer is not a parameter and is
 * not written).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/clip.h"
#include "model/random_weights.h"

#include <stdio.h>

#define CLIP_INIT_NAME_MAX 160

/* weight [out, in] and, when bias is set, bias [out] of prefix. */
static svp_status_t clip_init_linear(svp_random_weights_h rw,
                                     const char *prefix, int in, int out,
                                     int bias)
{
    int64_t      wshape[2] = { out, in }, bshape[1] = { out };
    char         name[CLIP_INIT_NAME_MAX];
    svp_status_t status;

    snprintf(name, sizeof(name), "%s.weight", prefix);
    status = svp_random_weights_add_default(rw, name, 2, wshape);
    if (status == SVP_OK && bias) {
        snprintf(name, sizeof(name), "%s.bias", prefix);
        status = svp_random_weights_add_default(rw, name, 1, bshape);
    }
    return status;
}

static svp_status_t clip_init_norm(svp_random_weights_h rw,
                                   const char *prefix, int c)
{
    int64_t      shape[1] = { c };
    char         name[CLIP_INIT_NAME_MAX];
    svp_status_t status;

    snprintf(name, sizeof(name), "%s.weight", prefix);
    status = svp_random_weights_add_default(rw, name, 1, shape);
    if (status == SVP_OK) {
        snprintf(name, sizeof(name), "%s.bias", prefix);
        status = svp_random_weights_add_default(rw, name, 1, shape);
    }
    return status;
}

#define CLIP_INIT_TRY(_expr) \
    do { \
        status = (_expr); \
        if (status != SVP_OK) { \
            return status; \
        } \
    } while (0)

/*
 * The class and position embeddings are N(0, 0.5^2): their sum is the
 * first layer's input, so it should be O(1) like the patch embeddings.
 */
static svp_status_t clip_init_all(svp_random_weights_h rw,
                                  const svp_clip_config_t *cfg)
{
    int          D = cfg->hidden_size, I = cfg->intermediate_size;
    int          p = cfg->patch_size, g = cfg->image_size / p;
    int64_t      s_class[1] = { D };
    int64_t      s_patch[4] = { D, cfg->num_channels, p, p };
    int64_t      s_pos[2] = { 1 + (int64_t)g * g, D };
    char         pre[CLIP_INIT_NAME_MAX];
    int          i;
    svp_status_t status;

    CLIP_INIT_TRY(svp_random_weights_add(rw, "vision_model.embeddings.class_embedding",
                                         1, s_class, 0.0, 0.5, NULL));
    CLIP_INIT_TRY(svp_random_weights_add_default(rw,
                  "vision_model.embeddings.patch_embedding.weight", 4, s_patch));
    CLIP_INIT_TRY(svp_random_weights_add(rw,
                  "vision_model.embeddings.position_embedding.weight", 2,
                  s_pos, 0.0, 0.5, NULL));
    CLIP_INIT_TRY(clip_init_norm(rw, "vision_model.pre_layrnorm", D));
    for (i = 0; i < cfg->num_layers; i++) {
#define P(_what) (snprintf(pre, sizeof(pre), "vision_model.encoder.layers.%d." _what, i), pre)
        CLIP_INIT_TRY(clip_init_linear(rw, P("self_attn.k_proj"), D, D, 1));
        CLIP_INIT_TRY(clip_init_linear(rw, P("self_attn.v_proj"), D, D, 1));
        CLIP_INIT_TRY(clip_init_linear(rw, P("self_attn.q_proj"), D, D, 1));
        CLIP_INIT_TRY(clip_init_linear(rw, P("self_attn.out_proj"), D, D, 1));
        CLIP_INIT_TRY(clip_init_norm(rw, P("layer_norm1"), D));
        CLIP_INIT_TRY(clip_init_linear(rw, P("mlp.fc1"), D, I, 1));
        CLIP_INIT_TRY(clip_init_linear(rw, P("mlp.fc2"), I, D, 1));
        CLIP_INIT_TRY(clip_init_norm(rw, P("layer_norm2"), D));
#undef P
    }
    CLIP_INIT_TRY(clip_init_norm(rw, "vision_model.post_layernorm", D));
    return clip_init_linear(rw, "visual_projection", D, cfg->projection_dim, 0);
}

svp_status_t svp_clip_random_add_all(const char *config_path,
                                     svp_random_weights_h rw)
{
    svp_clip_config_t cfg;
    svp_status_t      status;

    status = svp_clip_config_load(config_path, &cfg);
    if (status != SVP_OK) {
        return status;
    }
    return clip_init_all(rw, &cfg);
}

svp_status_t svp_clip_write_random(const char *config_path, uint64_t seed,
                                   const char *out_dir)
{
    svp_random_weights_h rw;
    svp_status_t         status;

    status = svp_random_weights_create(seed, 0, &rw);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_clip_random_add_all(config_path, rw);
    if (status == SVP_OK) {
        status = svp_random_weights_commit(rw, config_path, out_dir,
                                           "model.safetensors");
    }
    svp_random_weights_destroy(rw);
    return status;
}
