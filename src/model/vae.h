/*
 * SVD's VAE: diffusers' AutoencoderKLTemporalDecoder, loaded from a diffusers
 * model directory (config.json + diffusion_pytorch_model[.fp16].safetensors,
 * weights in F32, F16 or BF16; they are converted to fp32 at load).
 *
 * The encoder is the plain SD VAE encoder (one image at a time, no temporal
 * layers); the decoder is SVD's temporal decoder, whose temporal layers mix
 * the frames of one video.  Neither applies the latent scaling factor: the
 * pipeline multiplies by scaling_factor after encoding (SVD does not even do
 * that for its image latents) and by 1/scaling_factor before decoding.
 *
 * Ownership: svp_vae_create() reads the config and every weight into buffers
 * of the given ops backend; the ops handle is borrowed and must outlive the
 * VAE.  svp_vae_destroy() frees the weights.  Inputs and outputs of encode
 * and decode are buffers of that backend, owned by the caller; activations
 * are allocated and freed inside each call.  A VAE is used by one thread at a
 * time (it shares the ops handle's scratch).
 */
#ifndef SVP_MODEL_VAE_H
#define SVP_MODEL_VAE_H

#include "common/status.h"
#include "ops/ops.h"

#include <stddef.h>
#include <stdint.h>

#define SVP_VAE_MAX_LEVELS 8

/* What config.json says, after defaults. */
typedef struct {
    int    in_channels;                   /* 3 */
    int    out_channels;                  /* 3 */
    int    latent_channels;               /* 4 */
    int    levels;                        /* len(block_out_channels) */
    int    block_out[SVP_VAE_MAX_LEVELS]; /* SVD: 128, 256, 512, 512 */
    int    layers;                        /* layers_per_block, SVD: 2 */
    double scaling_factor;                /* 0.18215 */
} svp_vae_config_t;

/*
 * Parses an AutoencoderKLTemporalDecoder config.json.  Unknown keys are
 * ignored; a down block type other than DownEncoderBlock2D, or channel
 * counts GroupNorm(32) cannot take, is SVP_ERR_BAD_FILE naming the key.
 */
svp_status_t svp_vae_config_load(const char *path, svp_vae_config_t *cfg_p);

/*
 * Called with module outputs named like the golden intermediates
 * ("out.encoder.down_blocks.0", "out.decoder.mid_block", ...), data in host
 * memory valid only during the call.  Image tensors are [N, C, H, W]; the
 * decoder's 5-D tensors (temporal_res_block, time_conv_out) are reported in
 * torch's [B, C, F, H, W] view.
 */
typedef void (*svp_vae_capture_cb_t)(const char *name, const float *data, int ndim,
                                     const int64_t *shape, void *arg);

typedef struct {
    /*
     * The weights file inside the model directory; NULL tries
     * diffusion_pytorch_model.safetensors, then the .fp16 variant.
     */
    const char          *weights_file;
    svp_vae_capture_cb_t capture_cb; /* NULL: no captures */
    void                *capture_arg;
} svp_vae_params_t;

typedef struct svp_vae *svp_vae_h;

/*
 * Loads model_dir/config.json and its weights.  params may be NULL.  A
 * missing tensor or a tensor of the wrong shape fails with SVP_ERR_BAD_FILE,
 * the message naming the tensor, the file and both shapes.  On failure
 * nothing is left allocated and *vae_p is untouched.
 */
svp_status_t svp_vae_create(svp_ops_h ops, const char *model_dir,
                            const svp_vae_params_t *params, svp_vae_h *vae_p);
void         svp_vae_destroy(svp_vae_h vae);

/*
 * Checks, reading only the safetensors header, that model_dir's weights
 * file holds every tensor the config implies, with the right shape and a
 * float dtype (the checks svp_vae_create() makes, with the same errors).
 * *mapped_p (may be NULL) receives how many of the file's tensors the model
 * uses; the others are logged at debug level.
 */
svp_status_t svp_vae_check_weights(const char             *model_dir,
                                   const svp_vae_params_t *params, int *mapped_p);

const svp_vae_config_t *svp_vae_config(svp_vae_h vae);

/*
 * The latent size of an h x w image: each of the levels-1 downsamplers
 * (pad right and bottom by one, 3x3 conv, stride 2) maps n to floor(n / 2),
 * so SVD's 576 x 1024 gives 72 x 128.
 */
void svp_vae_latent_size(const svp_vae_config_t *cfg, int h, int w, int *lh_p,
                         int *lw_p);

/*
 * Encodes n images [n, in_channels, h, w] (values in [-1, 1]) into the
 * posterior's mean, logvar (clamped to [-30, 20]) and std = exp(logvar / 2),
 * each [n, latent_channels, lh, lw] (svp_vae_latent_size()).  logvar and std
 * may be NULL when not wanted.  h and w must be at least 2^(levels-1).
 */
svp_status_t svp_vae_encode(svp_vae_h vae, int n, int h, int w, const float *image,
                            float *mean, float *logvar, float *std);

/*
 * Decodes one video: latents [frames, latent_channels, h, w] (already
 * multiplied by 1/scaling_factor) into out [frames, out_channels, 2^(L-1) h,
 * 2^(L-1) w], L = levels.  The frames are decoded in chunks of chunk frames
 * (0: all at once), the last chunk holding the rest, like the pipeline's
 * decode_chunk_size; the temporal layers only see the frames of their chunk,
 * so the result depends on chunk.  Memory grows with the chunk size.
 */
svp_status_t svp_vae_decode(svp_vae_h vae, int frames, int h, int w, int chunk,
                            const float *latents, float *out);

/*
 * Bytes of the memory plan of one call (the slab the ops arena makes for its
 * activations, fp32 on every backend, apart from the backend's workspace),
 * by running it on the dry backend without weights: with decode set,
 * svp_vae_decode() of n latent frames of h x w in chunks of chunk; else
 * svp_vae_encode() of n images of h x w.
 */
svp_status_t svp_vae_plan_bytes(const svp_vae_config_t *cfg, int decode, int n,
                                int h, int w, int chunk, size_t *bytes_p);

/*
 * Writes a VAE with seeded random weights for the config at config_path:
 * out_dir/diffusion_pytorch_model.safetensors (every tensor diffusers'
 * AutoencoderKLTemporalDecoder has for that config, F32; convs and linears
 * N(0, 1/fan_in), norm scales near 1, mix factors N(0, 1)) and a copy of
 * the config as out_dir/config.json, each file written atomically.
 * out_dir is created if needed.  Same config and seed, same bytes.
 */
svp_status_t svp_vae_write_random(const char *config_path, uint64_t seed,
                                  const char *out_dir);

#endif
