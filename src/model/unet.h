/*
 * SVD's denoising UNet: diffusers' UNetSpatioTemporalConditionModel, for any
 * configuration of that class, loaded from a diffusers model directory
 * (config.json + diffusion_pytorch_model[.fp16].safetensors, weights in F32,
 * F16 or BF16; they are converted to fp32 at load).
 *
 * Ownership: svp_unet_create() reads the config and every weight into
 * buffers of the given ops backend; the ops handle is borrowed and must
 * outlive the UNet.  svp_unet_destroy() frees the weights.  Forward inputs
 * and outputs are buffers of that backend, owned by the caller; activations
 * are allocated and freed inside each call.  A UNet is used by one thread at
 * a time (it shares the ops handle's scratch).
 */
#ifndef SVP_MODEL_UNET_H
#define SVP_MODEL_UNET_H

#include "common/status.h"
#include "ops/ops.h"

#include <stddef.h>
#include <stdint.h>

#define SVP_UNET_MAX_LEVELS 8

/* What config.json says, after defaults and per-level broadcasting. */
typedef struct {
    int in_channels;  /* 8 in SVD: noisy + image latents */
    int out_channels; /* 4 */
    int levels;       /* len(block_out_channels) */
    int block_out[SVP_UNET_MAX_LEVELS];
    int layers[SVP_UNET_MAX_LEVELS]; /* layers_per_block */
    int transformer_layers[SVP_UNET_MAX_LEVELS];
    int heads[SVP_UNET_MAX_LEVELS];           /* num_attention_heads */
    int cross_dim[SVP_UNET_MAX_LEVELS];       /* cross_attention_dim */
    int down_cross_attn[SVP_UNET_MAX_LEVELS]; /* CrossAttnDown vs Down */
    int up_cross_attn[SVP_UNET_MAX_LEVELS];   /* CrossAttnUp vs Up */
    int addition_time_embed_dim;              /* 256 in SVD */
    int projection_dim; /* projection_class_embeddings_input_dim */
} svp_unet_config_t;

/*
 * Parses a UNet config.json.  Unknown keys are ignored; a block type other
 * than the four spatio-temporal ones, or inconsistent list lengths, is
 * SVP_ERR_BAD_FILE naming the key.
 */
svp_status_t svp_unet_config_load(const char *path, svp_unet_config_t *cfg_p);

/*
 * Called by svp_unet_forward() with module outputs, named like the golden
 * intermediates ("out.down_blocks.0", "emb", ...), the data in host memory
 * valid only during the call.  4-D image tensors are [B*F, C, H, W].
 */
typedef void (*svp_unet_capture_cb_t)(const char *name, const float *data, int ndim,
                                      const int64_t *shape, void *arg);

typedef struct {
    /*
     * The weights file inside the model directory; NULL tries
     * diffusion_pytorch_model.safetensors, then the .fp16 variant.
     */
    const char           *weights_file;
    svp_unet_capture_cb_t capture_cb; /* NULL: no captures */
    void                 *capture_arg;
} svp_unet_params_t;

typedef struct svp_unet *svp_unet_h;

/*
 * Loads model_dir/config.json and its weights.  params may be NULL.  A
 * missing tensor or a tensor of the wrong shape fails with
 * SVP_ERR_BAD_FILE, the message naming the tensor, the file and both shapes.
 * On failure nothing is left allocated and *unet_p is untouched.
 */
svp_status_t svp_unet_create(svp_ops_h ops, const char *model_dir,
                             const svp_unet_params_t *params, svp_unet_h *unet_p);
void         svp_unet_destroy(svp_unet_h unet);

/*
 * Checks, without reading any tensor data, that model_dir's weights file
 * holds every tensor the config implies with the right shape and a float
 * dtype (what svp_unet_create() would check first; errors are the same).
 * Cheap even for SVD-XT: only the safetensors header is parsed.
 */
svp_status_t svp_unet_check_weights(const char              *model_dir,
                                    const svp_unet_params_t *params);

const svp_unet_config_t *svp_unet_config(svp_unet_h unet);

/*
 * One denoising call.
 *   sample                 [batch, frames, in_channels, h, w]
 *   timestep               [batch] (host memory), the scheduler's t
 *   encoder_hidden_states  [batch, seq, cross_dim]
 *   added_time_ids         [batch, 3] (host memory): fps-1, motion bucket,
 *                          noise augmentation strength
 *   out                    [batch, frames, out_channels, h, w]
 * Any h, w >= 1 works: odd sizes follow diffusers (the up path resizes to
 * each skip's size).
 */
svp_status_t svp_unet_forward(svp_unet_h unet, int batch, int frames, int h, int w,
                              const float *sample, const float *timestep,
                              const float *encoder_hidden_states, int seq,
                              const float *added_time_ids, float *out);

/*
 * Multiply-accumulates of one forward call of this shape: every conv,
 * linear, QK^T and AV product of diffusers' forward (the reference's work,
 * which is the basis for throughput figures; this implementation skips some
 * redundant products).
 */
int64_t svp_unet_macs(const svp_unet_config_t *cfg, int batch, int frames, int h,
                      int w, int seq);

/*
 * Bytes of the memory plan of one forward call of this shape: the slab the
 * ops arena makes for the call's activations (fp32 on every backend), the
 * same on every backend, apart from the backend's own workspace.  Computed
 * by running the call on the dry backend, without weights or a device, in
 * milliseconds even for SVD-XT.  The launch planner's activation figure.
 */
svp_status_t svp_unet_plan_bytes(const svp_unet_config_t *cfg, int batch, int frames,
                                 int h, int w, int seq, size_t *bytes_p);

/*
 * Writes a UNet with seeded random weights for the config at config_path
 * into out_dir (created if needed): config.json (copied) and
 * diffusion_pytorch_model.safetensors with exactly diffusers' tensor names
 * and shapes.  Weights ~ N(0, 1/fan_in), biases ~ N(0, 0.05^2), norm
 * weights ~ 1 + N(0, 0.1^2), mix factors ~ N(0, 1).  Each file is written
 * atomically.
 */
svp_status_t svp_unet_write_random(const char *config_path, uint64_t seed,
                                   const char *out_dir);

#endif
