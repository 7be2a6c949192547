/*
 * UNet internals shared by unet.c (lifecycle, forward), unet_params.c (the
 * parameter walk: names, shapes, loading, random init) and unet_blocks.c
 * (the spatio-temporal blocks).
 *
 * The module tree mirrors diffusers' so that every weight has one home and
 * one name.  Weight pointers are buffers of the ops backend.
 */
#ifndef SVP_MODEL_UNET_INT_H
#define SVP_MODEL_UNET_INT_H

#include "model/unet.h"
#include "model/walker.h"
#include "model/weights.h"

/* w: a matrix weight, held in the ops handle's dtype (ops.h); b: fp32. */
typedef struct {
    void  *w;
    float *b;
    int    in, out;
} unet_linear_t;
typedef struct {
    void  *w;
    float *b;
    int    in, out, k;
} unet_conv_t; /* k x k or 3x1x1 */
typedef struct {
    float *g, *b;
    int    c;
    float  eps;
} unet_norm_t;

/* ResnetBlock2D (spatial) or TemporalResnetBlock (temporal: convs over frames). */
typedef struct {
    unet_norm_t   norm1, norm2;
    unet_conv_t   conv1, conv2;
    unet_linear_t time_emb_proj;
    unet_conv_t   conv_shortcut; /* spatial only, when in != out */
    int           has_shortcut;
} unet_resnet_t;

/* SpatioTemporalResBlock: spatial, temporal, blended with alpha. */
typedef struct {
    unet_resnet_t spatial, temporal;
    float         alpha; /* sigmoid(time_mixer.mix_factor) */
} unet_st_resblock_t;

typedef struct {
    unet_linear_t to_q, to_k, to_v, to_out; /* to_q/k/v without bias */
    int           heads, dim, kv_dim;
} unet_attention_t;

/* FeedForward with GEGLU: net.0.proj (dim -> 2*4dim), net.2 (4dim -> dim). */
typedef struct {
    unet_linear_t proj, out;
    int           inner;
} unet_ff_t;

/* BasicTransformerBlock. */
typedef struct {
    unet_norm_t      norm1, norm2, norm3;
    unet_attention_t attn1, attn2;
    unet_ff_t        ff;
} unet_spatial_block_t;

/* TemporalBasicTransformerBlock. */
typedef struct {
    unet_norm_t      norm_in, norm1, norm2, norm3;
    unet_ff_t        ff_in, ff;
    unet_attention_t attn1, attn2;
} unet_temporal_block_t;

/* TransformerSpatioTemporalModel. */
typedef struct {
    int                    channels, heads, layers;
    unet_norm_t            norm;
    unet_linear_t          proj_in, proj_out;
    unet_linear_t          time_pos_embed1, time_pos_embed2;
    unet_spatial_block_t  *blocks;
    unet_temporal_block_t *temporal_blocks;
    float                  alpha; /* sigmoid(time_mixer.mix_factor) */
} unet_transformer_t;

/* A down or up block: resnets, optional transformers, optional resampler. */
typedef struct {
    int                 n_resnets;
    unet_st_resblock_t *resnets;
    unet_transformer_t *attentions; /* n_resnets of them, or NULL */
    unet_conv_t         sampler;    /* downsampler or upsampler conv */
    int                 has_sampler;
} unet_block_t;

struct svp_unet {
    svp_ops_h         ops; /* borrowed */
    svp_unet_config_t cfg;
    int               temb_dim; /* 4 * block_out[0] */

    unet_conv_t        conv_in, conv_out;
    unet_linear_t      time_linear1, time_linear2;
    unet_linear_t      add_linear1, add_linear2;
    unet_norm_t        conv_norm_out;
    unet_block_t       down[SVP_UNET_MAX_LEVELS];
    unet_block_t       up[SVP_UNET_MAX_LEVELS];
    unet_st_resblock_t mid_resnets[2];
    unet_transformer_t mid_attention;

    svp_weight_bufs_t weights; /* every backend buffer, to free */

    svp_unet_capture_cb_t capture_cb;
    void                 *capture_arg;
};

/*
 * The parameter walk (model/walker.h): every parameter in diffusers'
 * naming with the shape diffusers gives it.
 */
/* Walks every parameter of unet (cfg filled in, structs zeroed). */
svp_status_t unet_params_walk(struct svp_unet *unet, svp_model_walker_t *wk);

/* Frees the block arrays allocated by the walk (not the weights). */
void unet_params_free_tree(struct svp_unet *unet);

/* ---- forward building blocks (unet_blocks.c) ---- */

/* Forward context: shapes of the current call and the conditioning. */
typedef struct {
    svp_unet_h   unet;
    int          batch, frames, seq;
    const float *emb_silu; /* SiLU(emb) [batch*frames, temb_dim] */
    const float *context;  /* encoder_hidden_states [batch, seq, D] */
} unet_fwd_t;

/* An activation of the backend: alloc/free that log once. */
svp_status_t unet_buf(unet_fwd_t *fw, int64_t count, float **buf_p);
void         unet_buf_free(unet_fwd_t *fw, float *buf);

/* Reports x to the capture hook, if any ("out.<path>"). */
void unet_capture(unet_fwd_t *fw, const char *name, const float *x, int ndim,
                  const int64_t *shape);

/* x [B*F, c_in, h, w] -> *y_p [B*F, c_out, h, w] (new buffer). */
svp_status_t unet_st_resblock_forward(unet_fwd_t *fw, const unet_st_resblock_t *rb,
                                      int h, int w, const float *x, float **y_p);

/* x [B*F, C, h, w] -> *y_p [B*F, C, h, w] (new buffer). */
svp_status_t unet_transformer_forward(unet_fwd_t *fw, const unet_transformer_t *tr,
                                      int h, int w, const float *x, float **y_p);

#endif
