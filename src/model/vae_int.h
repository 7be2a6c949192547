/*
 * VAE internals shared by vae.c (config, parameter walk, lifecycle) and
 * vae_forward.c (encoder and temporal decoder).
 *
 * The module tree mirrors diffusers' AutoencoderKLTemporalDecoder so that
 * every weight has one home and one name.  Weight pointers are buffers of
 * the ops backend.
 */
#ifndef SVP_MODEL_VAE_INT_H
#define SVP_MODEL_VAE_INT_H

#include "model/vae.h"
#include "model/walker.h"
#include "model/weights.h"

/* w: a matrix weight, held in the ops handle's dtype (ops.h); b: fp32. */
typedef struct {
    void  *w;
    float *b;
    int    in, out;
} vae_linear_t;
typedef struct {
    void  *w;
    float *b;
    int    in, out;
} vae_conv_t; /* 1x1, 3x3 or 3x1x1 */
typedef struct {
    float *g, *b;
    int    c;
    float  eps;
} vae_norm_t;

/*
 * ResnetBlock2D without time embedding (spatial: 3x3 convs, a 1x1 shortcut
 * when the channel count changes) or TemporalResnetBlock (convs over frames,
 * GroupNorm statistics over all frames of the video).
 */
typedef struct {
    vae_norm_t norm1, norm2;
    vae_conv_t conv1, conv2;
    vae_conv_t conv_shortcut;
    int        has_shortcut;
} vae_resnet_t;

/*
 * The decoder's SpatioTemporalResBlock.  Its AlphaBlender is "learned" with
 * switch_spatial_to_temporal_mix, so sigmoid(mix_factor) weighs the
 * temporal branch; spatial_weight = 1 - sigmoid(mix_factor) is what the
 * blend op takes (rounded as torch rounds it).
 */
typedef struct {
    vae_resnet_t spatial, temporal;
    float        spatial_weight;
} vae_st_resblock_t;

/* Single-head self-attention over H*W with its GroupNorm and a residual. */
typedef struct {
    vae_norm_t   group_norm;
    vae_linear_t to_q, to_k, to_v, to_out;
    int          c;
} vae_attention_t;

typedef struct {
    int           n_resnets;
    vae_resnet_t *resnets;
    vae_conv_t    downsampler; /* pad (0,1,0,1), 3x3, stride 2 */
    int           has_downsampler;
} vae_down_block_t;

typedef struct {
    int                n_resnets;
    vae_st_resblock_t *resnets;
    vae_conv_t         upsampler; /* nearest x2, then 3x3 */
    int                has_upsampler;
} vae_up_block_t;

struct svp_vae {
    svp_ops_h        ops; /* borrowed */
    svp_vae_config_t cfg;

    /* encoder */
    vae_conv_t       enc_conv_in;
    vae_down_block_t down[SVP_VAE_MAX_LEVELS];
    vae_resnet_t     enc_mid_resnets[2];
    vae_attention_t  enc_mid_attention;
    vae_norm_t       enc_norm_out;
    vae_conv_t       enc_conv_out;
    vae_conv_t       quant_conv;

    /* temporal decoder */
    vae_conv_t         dec_conv_in;
    int                n_dec_mid_resnets; /* layers_per_block */
    vae_st_resblock_t *dec_mid_resnets;
    vae_attention_t    dec_mid_attention;
    vae_up_block_t     up[SVP_VAE_MAX_LEVELS];
    vae_norm_t         dec_norm_out;
    vae_conv_t         dec_conv_out;
    vae_conv_t         time_conv_out; /* Conv3d (3,1,1) over frames */

    svp_weight_bufs_t weights; /* every backend buffer, to free */

    svp_vae_capture_cb_t capture_cb;
    void                *capture_arg;
};

/*
 * The parameter walk (model/walker.h): every parameter in diffusers'
 * naming with the shape diffusers gives it.
 */
/* Walks every parameter of vae (cfg filled in, structs zeroed). */
svp_status_t vae_params_walk(struct svp_vae *vae, svp_model_walker_t *wk);

/* Frees the block arrays allocated by the walk (not the weights). */
void vae_params_free_tree(struct svp_vae *vae);

#endif
