/*
 * The planner's message and memory model: the bytes of a hand-off and what
 * one rank holds on its device (see plan.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plan/plan.h"
#include "plan/plan_int.h"
#include "model/unet.h"
#include "pipe/schedule.h"
#include "common/log.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * SVD-XT weights, bytes of tensor data in fp16, from the diffusers
 * checkpoint's state_dict() (stable-video-diffusion-img2vid-xt: unet/,
 * vae/ split into encoder + quant_conv and decoder + post_quant_conv,
 * image_encoder/).
 */
#define PLAN_UNET_F16    3049246164.0
#define PLAN_VAE_ENC_F16 68327328.0
#define PLAN_VAE_DEC_F16 127158366.0
#define PLAN_CLIP_F16    1264153600.0

/* SVD's latent: 4 channels at 1/8 of the video's resolution */
#define PLAN_LATENT_C    4
#define PLAN_VAE_FACTOR  8
#define PLAN_IMAGE_EMBED 1024
#define PLAN_TIME_IDS    3

/*
 * Bytes per matrix weight in the spec's dtype.  Everything else (vectors,
 * activations, latents, hand-off messages) is f32 whatever the dtype: see
 * doc/DTYPES.md.
 */
static double plan_elem_size(svp_dtype_t dtype)
{
    return (double)svp_dtype_size(dtype);
}

#define PLAN_F32 4.0

/*
 * What a 16-bit run adds beside its weights.  On the CPU, the widening
 * buffer: the largest matrix weight of SVD's UNet, an up block's 3x3 conv
 * from 2560 to 1280 channels, in f32.  On CUDA, whose tensor-core products
 * take the weights as held, the 16-bit copy of a product's activation
 * operand: at most the backend's im2col limit of 64 Mi elements.
 */
#define PLAN_WIDEN_BYTES (1280.0 * 2560 * 9 * PLAN_F32)
#define PLAN_ROUND_BYTES (64.0 * 1048576 * 2)

void svp_plan_message(const svp_spec_t *spec, svp_plan_message_t *msg_p)
{
    svp_plan_message_t m  = {0};
    double             es = PLAN_F32;

    if (spec->model.kind == SVP_MODEL_DUMMY) {
        double elems = 1;
        for (int i = 0; i < 5; ++i) {
            elems *= (double)spec->latent_shape[i];
        }
        m.latent = elems * es;
    } else {
        /* the latent's size: the image's divided by 8, rounded down */
        int    lh = spec->video.height / PLAN_VAE_FACTOR;
        int    lw = spec->video.width / PLAN_VAE_FACTOR;
        double hw = (double)lh * lw;

        m.latent = spec->video.num_frames * PLAN_LATENT_C * hw * es;
        /* the unconditional half of the guidance batch is zeros: not sent */
        m.image_latents = PLAN_LATENT_C * hw * es;
        m.image_embeds  = PLAN_IMAGE_EMBED * es;
        m.time_ids      = PLAN_TIME_IDS * es;
    }
    m.total = m.latent + m.image_latents + m.image_embeds + m.time_ids;
    *msg_p  = m;
}

/* SVD-XT's UNet, as etc/models/svd-xt/unet/config.json says (test_launch
 * compares the two): the model whose weight bytes are counted above. */
static const svp_unet_config_t plan_svd_xt_unet = {
    .in_channels             = 8,
    .out_channels            = 4,
    .levels                  = 4,
    .block_out               = {320, 640, 1280, 1280},
    .layers                  = {2, 2, 2, 2},
    .transformer_layers      = {1, 1, 1, 1},
    .heads                   = {5, 10, 20, 20},
    .cross_dim               = {1024, 1024, 1024, 1024},
    .down_cross_attn         = {1, 1, 1, 0},
    .up_cross_attn           = {0, 1, 1, 1},
    .addition_time_embed_dim = 256,
    .projection_dim          = 768,
};

const svp_unet_config_t *svp_plan_svd_xt_unet(void)
{
    return &plan_svd_xt_unet;
}

/*
 * The UNet call's activations: the memory plan the ops arena makes for it,
 * from a dry run of the forward (svp_unet_plan_bytes), of the spec's UNet
 * when model.path/unet/config.json can be read here, else of SVD-XT's.
 * Activations are fp32 whatever the dtype (ops.h), so this does not scale
 * with it.  The last answer is kept: the report asks once per rank.
 */
double svp_plan_unet_activations(const svp_spec_t *spec, int batch)
{
    static struct {
        svp_unet_config_t cfg;
        int               b, f, h, w;
        double            bytes;
    } last;
    svp_unet_config_t cfg;
    char              path[4096];
    size_t            bytes = 0;
    int               f     = spec->video.num_frames;
    int               h     = spec->video.height / PLAN_VAE_FACTOR;
    int               w     = spec->video.width / PLAN_VAE_FACTOR;

    snprintf(path, sizeof(path), "%s/unet/config.json", spec->model.path);
    if (access(path, R_OK) != 0 || svp_unet_config_load(path, &cfg) != SVP_OK) {
        cfg = plan_svd_xt_unet;
    }
    if (last.bytes > 0 && memcmp(&last.cfg, &cfg, sizeof(cfg)) == 0 &&
        last.b == batch && last.f == f && last.h == h && last.w == w) {
        return last.bytes;
    }
    /* SVD's context is one image embedding per sample: seq 1 */
    if (svp_unet_plan_bytes(&cfg, batch, f, h, w, 1, &bytes) != SVP_OK) {
        svp_warn("plan: cannot size the UNet's activations (see above)");
        return 0;
    }
    last.cfg   = cfg;
    last.b     = batch;
    last.f     = f;
    last.h     = h;
    last.w     = w;
    last.bytes = (double)bytes;
    return last.bytes;
}

/* SVD-XT's VAE, as etc/models/svd-xt/vae/config.json says. */
static const svp_vae_config_t plan_svd_xt_vae = {
    .in_channels     = 3,
    .out_channels    = 3,
    .latent_channels = 4,
    .levels          = 4,
    .block_out       = {128, 256, 512, 512},
    .layers          = 2,
    .scaling_factor  = 0.18215,
};

const svp_vae_config_t *svp_plan_svd_xt_vae(void)
{
    return &plan_svd_xt_vae;
}

/*
 * The VAE's activations, as the UNet's: a dry run of the decode of a
 * sample's frames in decode_chunk_size chunks, or of the encode of its
 * conditioning frame, for model.path's VAE or SVD-XT's.
 */
double svp_plan_vae_activations(const svp_spec_t *spec, int decode)
{
    static struct {
        svp_vae_config_t cfg;
        int              decode, n, h, w, chunk;
        double           bytes;
    } last[2];
    svp_vae_config_t cfg;
    char             path[4096];
    size_t           bytes = 0;
    int              n     = decode ? spec->video.num_frames : 1;
    int              h = spec->video.height, w = spec->video.width;
    int              chunk = decode ? spec->video.decode_chunk_size : 0;

    snprintf(path, sizeof(path), "%s/vae/config.json", spec->model.path);
    if (access(path, R_OK) != 0 || svp_vae_config_load(path, &cfg) != SVP_OK) {
        cfg = plan_svd_xt_vae;
    }
    if (decode) {
        svp_vae_latent_size(&cfg, h, w, &h, &w);
        if (chunk <= 0 || chunk > n) {
            chunk = n;
        }
    }
    decode = !!decode;
    if (last[decode].bytes > 0 &&
        /* a cache key: padding that differs costs a recomputation, not a
         * wrong answer */
        /* NOLINTNEXTLINE(bugprone-suspicious-memory-comparison,cert-exp42-c,cert-flp37-c) */
        memcmp(&last[decode].cfg, &cfg, sizeof(cfg)) == 0 && last[decode].n == n &&
        last[decode].h == h && last[decode].w == w && last[decode].chunk == chunk) {
        return last[decode].bytes;
    }
    if (svp_vae_plan_bytes(&cfg, decode, n, h, w, chunk, &bytes) != SVP_OK) {
        svp_warn("plan: cannot size the VAE's activations (see above)");
        return 0;
    }
    last[decode].cfg   = cfg;
    last[decode].n     = n;
    last[decode].h     = h;
    last[decode].w     = w;
    last[decode].chunk = chunk;
    last[decode].bytes = (double)bytes;
    return last[decode].bytes;
}

/* Whether rank ever encodes (decodes): the worker's placement rule, asked
 * for sample j = rank, the first the rank would get under spread. */
static int plan_places_on(svp_placement_t placement, int world, int rank,
                          svp_layout_end_t end)
{
    return svp_layout_place_of(placement, world, rank, end) == rank;
}

void svp_plan_memory(const svp_spec_t *spec, int world, int rank,
                     svp_placement_t placement, svp_plan_memory_t *mem_p)
{
    svp_plan_memory_t  m = {0};
    svp_plan_message_t msg;
    double             es = plan_elem_size(spec->dtype);
    int enc      = plan_places_on(placement, world, rank, SVP_LAYOUT_ENCODES);
    int dec      = plan_places_on(placement, world, rank, SVP_LAYOUT_FINISHES);
    int inflight = spec->comm.inflight > 0 ? spec->comm.inflight : 1;

    svp_plan_message(spec, &msg);
    if (spec->model.kind == SVP_MODEL_DUMMY) {
        /* the dummy UNet's weights are negligible; input and output latent */
        m.activations = 2 * msg.latent;
    } else {
        double unet, vae_dec, vae_enc;

        m.weights = (PLAN_UNET_F16 + (enc ? PLAN_CLIP_F16 + PLAN_VAE_ENC_F16 : 0) +
                     (dec ? PLAN_VAE_DEC_F16 : 0)) *
                        es / 2.0 +
                    (spec->dtype == SVP_DTYPE_F32           ? 0
                     : spec->device == SVP_OPS_BACKEND_CUDA ? PLAN_ROUND_BYTES
                                                            : PLAN_WIDEN_BYTES);

        /*
         * What the arena's plans of a UNet call, the decode of a sample and
         * the encode of its conditioning frame hold at once; they share one
         * slab, so the largest counts.  At 576x1024 the UNet's level-0
         * skips and GEGLU projection dominate (attention is fused, its
         * scores never held); the decode grows with decode_chunk_size.
         */
        unet          = svp_plan_unet_activations(spec, svp_plan_cfg_batch(spec));
        vae_dec       = dec ? svp_plan_vae_activations(spec, 1) : 0;
        vae_enc       = enc ? svp_plan_vae_activations(spec, 0) : 0;
        m.activations = fmax(unet, fmax(vae_dec, vae_enc));
    }
    /* received and outgoing messages of the samples in flight */
    m.buffers = 2.0 * inflight * msg.total;
    m.total   = m.weights + m.activations + m.buffers;
    *mem_p    = m;
}
