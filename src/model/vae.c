/*
 * The VAE's configuration, its parameter tree (diffusers'
 * AutoencoderKLTemporalDecoder.state_dict() names and shapes) and its
 * lifecycle: loading every weight through the walk, or only checking the
 * names and shapes a file's header promises.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/vae_int.h"
#include "model/weights.h"
#include "common/log.h"
#include "tensor/config_json.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VAE_NAME_MAX 256

/* ---- config.json ---- */

svp_status_t svp_vae_config_load(const char *path, svp_vae_config_t *cfg_p)
{
    static const char *const required[] = {"block_out_channels", NULL};
    svp_vae_config_t         cfg;
    svp_config_h             cj;
    const char              *types[SVP_VAE_MAX_LEVELS];
    int                      count, i;
    svp_status_t             status;

    memset(&cfg, 0, sizeof(cfg));
    status = svp_config_load(path, &cj);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_config_require(cj, required);
    if (status != SVP_OK) {
        goto out;
    }
    status = svp_weights_config_channels(cj, path, SVP_VAE_MAX_LEVELS, cfg.block_out,
                                         &cfg.levels);
    if (status != SVP_OK) {
        goto out;
    }

    /* the encoder's blocks: DownEncoderBlock2D is the only kind it builds */
    status = svp_config_get_string_array(cj, "down_block_types", types,
                                         SVP_VAE_MAX_LEVELS, &count);
    if (status != SVP_OK) {
        goto out;
    }
    if (count != 0 && count != cfg.levels) {
        svp_error("%s: 'down_block_types' has %d entries, expected %d "
                  "(len(block_out_channels))",
                  path, count, cfg.levels);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    for (i = 0; i < count; i++) {
        if (strcmp(types[i], "DownEncoderBlock2D") != 0) {
            svp_error("%s: down_block_types[%d] is '%s', expected "
                      "'DownEncoderBlock2D'",
                      path, i, types[i]);
            status = SVP_ERR_BAD_FILE;
            goto out;
        }
    }

    /* defaults are the class defaults (not SVD's: its file sets them all) */
    SVP_TRY_OUT(
        svp_config_get_count(cj, "in_channels", 3, INT_MAX, &cfg.in_channels));
    SVP_TRY_OUT(
        svp_config_get_count(cj, "out_channels", 3, INT_MAX, &cfg.out_channels));
    SVP_TRY_OUT(svp_config_get_count(cj, "latent_channels", 4, INT_MAX,
                                     &cfg.latent_channels));
    SVP_TRY_OUT(
        svp_config_get_count(cj, "layers_per_block", 1, INT_MAX, &cfg.layers));
    status =
        svp_config_get_double(cj, "scaling_factor", 0.18215, &cfg.scaling_factor);
    if (status != SVP_OK) {
        goto out;
    }
    if (!(cfg.scaling_factor > 0.0)) {
        svp_error("%s: 'scaling_factor' must be positive, found %g", path,
                  cfg.scaling_factor);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    *cfg_p = cfg;
out:
    svp_config_destroy(cj);
    return status;
}

/* ---- the parameter walk ---- */

static svp_status_t vae_walk_linear(svp_model_walker_t *wk, vae_linear_t *l, int in,
                                    int out, const char *prefix)
{
    int64_t wshape[2] = {out, in}, bshape[1] = {out};

    l->in  = in;
    l->out = out;
    SVP_TRY(svp_model_walk_matrix(wk, &l->w, 1.0f, 2, wshape, "%s.weight", prefix));
    return svp_model_walk_param(wk, &l->b, 1.0f, 1, bshape, "%s.bias", prefix);
}

/* k x k conv, or the (3,1,1) conv over frames when frames is set. */
static svp_status_t vae_walk_conv(svp_model_walker_t *wk, vae_conv_t *c, int in,
                                  int out, int k, int frames, const char *prefix)
{
    int64_t wshape[5] = {out, in, k, k, 1}, bshape[1] = {out};

    if (frames) {
        wshape[2] = 3;
        wshape[3] = 1;
    }
    c->in  = in;
    c->out = out;
    SVP_TRY(svp_model_walk_matrix(wk, &c->w, 1.0f, frames ? 5 : 4, wshape,
                                  "%s.weight", prefix));
    return svp_model_walk_param(wk, &c->b, 1.0f, 1, bshape, "%s.bias", prefix);
}

static svp_status_t vae_walk_norm(svp_model_walker_t *wk, vae_norm_t *n, int c,
                                  float eps, const char *prefix)
{
    int64_t shape[1] = {c};

    n->c   = c;
    n->eps = eps;
    SVP_TRY(svp_model_walk_param(wk, &n->g, 1.0f, 1, shape, "%s.weight", prefix));
    return svp_model_walk_param(wk, &n->b, 1.0f, 1, shape, "%s.bias", prefix);
}

/*
 * ResnetBlock2D (temporal = 0) or TemporalResnetBlock (temporal = 1, no
 * shortcut: its channel count never changes).  eps: golden README,
 * norm_layers.json of vae_tiny.
 */
static svp_status_t vae_walk_resnet(svp_model_walker_t *wk, vae_resnet_t *r, int in,
                                    int out, int temporal, float eps,
                                    const char *prefix)
{
    char p[VAE_NAME_MAX];

#define P(_fmt) (snprintf(p, sizeof(p), "%s." _fmt, prefix), p)
    SVP_TRY(vae_walk_norm(wk, &r->norm1, in, eps, P("norm1")));
    SVP_TRY(vae_walk_conv(wk, &r->conv1, in, out, 3, temporal, P("conv1")));
    SVP_TRY(vae_walk_norm(wk, &r->norm2, out, eps, P("norm2")));
    SVP_TRY(vae_walk_conv(wk, &r->conv2, out, out, 3, temporal, P("conv2")));
    r->has_shortcut = (in != out);
    if (r->has_shortcut) {
        SVP_TRY(
            vae_walk_conv(wk, &r->conv_shortcut, in, out, 1, 0, P("conv_shortcut")));
    }
#undef P
    return SVP_OK;
}

/* Spatial eps 1e-6, temporal eps 1e-5 (golden README, VAE decoder). */
static svp_status_t vae_walk_st_resblock(svp_model_walker_t *wk,
                                         vae_st_resblock_t *rb, int in, int out,
                                         const char *prefix)
{
    char  p[VAE_NAME_MAX];
    float mix, temporal_weight;

#define P(_fmt) (snprintf(p, sizeof(p), "%s." _fmt, prefix), p)
    SVP_TRY(vae_walk_resnet(wk, &rb->spatial, in, out, 0, 1e-6f,
                            P("spatial_res_block")));
    SVP_TRY(vae_walk_resnet(wk, &rb->temporal, out, out, 1, 1e-5f,
                            P("temporal_res_block")));
    SVP_TRY(wk->scalar(wk, P("time_mixer.mix_factor"), &mix));
#undef P
    /*
     * switch_spatial_to_temporal_mix: torch computes alpha = 1 - sigmoid(m)
     * in fp32 and blends alpha * spatial + (1 - alpha) * temporal; the
     * blend op does the same with the same rounding.
     */
    temporal_weight    = 1.0f / (1.0f + expf(-mix));
    rb->spatial_weight = 1.0f - temporal_weight;
    return SVP_OK;
}

static svp_status_t vae_walk_attention(svp_model_walker_t *wk, vae_attention_t *a,
                                       int c, const char *prefix)
{
    char p[VAE_NAME_MAX];

    a->c = c;
#define P(_fmt) (snprintf(p, sizeof(p), "%s." _fmt, prefix), p)
    SVP_TRY(vae_walk_norm(wk, &a->group_norm, c, 1e-6f, P("group_norm")));
    SVP_TRY(vae_walk_linear(wk, &a->to_q, c, c, P("to_q")));
    SVP_TRY(vae_walk_linear(wk, &a->to_k, c, c, P("to_k")));
    SVP_TRY(vae_walk_linear(wk, &a->to_v, c, c, P("to_v")));
    SVP_TRY(vae_walk_linear(wk, &a->to_out, c, c, P("to_out.0")));
#undef P
    return SVP_OK;
}

static svp_status_t vae_walk_encoder(struct svp_vae *v, svp_model_walker_t *wk)
{
    const svp_vae_config_t *cfg = &v->cfg;
    int                     L = cfg->levels, top = cfg->block_out[L - 1];
    int                     i, j;
    char                    p[VAE_NAME_MAX];

    SVP_TRY(vae_walk_conv(wk, &v->enc_conv_in, cfg->in_channels, cfg->block_out[0],
                          3, 0, "encoder.conv_in"));
    for (i = 0; i < L; i++) {
        vae_down_block_t *blk = &v->down[i];
        int               in  = (i == 0) ? cfg->block_out[0] : cfg->block_out[i - 1];
        int               out = cfg->block_out[i];

        blk->n_resnets = cfg->layers;
        blk->resnets   = calloc(blk->n_resnets, sizeof(*blk->resnets));
        if (blk->resnets == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        for (j = 0; j < blk->n_resnets; j++) {
            snprintf(p, sizeof(p), "encoder.down_blocks.%d.resnets.%d", i, j);
            SVP_TRY(vae_walk_resnet(wk, &blk->resnets[j], j == 0 ? in : out, out, 0,
                                    1e-6f, p));
        }
        blk->has_downsampler = (i < L - 1);
        if (blk->has_downsampler) {
            snprintf(p, sizeof(p), "encoder.down_blocks.%d.downsamplers.0.conv", i);
            SVP_TRY(vae_walk_conv(wk, &blk->downsampler, out, out, 3, 0, p));
        }
    }
    /* UNetMidBlock2D with one layer: resnet, attention, resnet */
    SVP_TRY(vae_walk_attention(wk, &v->enc_mid_attention, top,
                               "encoder.mid_block.attentions.0"));
    for (j = 0; j < 2; j++) {
        snprintf(p, sizeof(p), "encoder.mid_block.resnets.%d", j);
        SVP_TRY(vae_walk_resnet(wk, &v->enc_mid_resnets[j], top, top, 0, 1e-6f, p));
    }
    SVP_TRY(
        vae_walk_norm(wk, &v->enc_norm_out, top, 1e-6f, "encoder.conv_norm_out"));
    SVP_TRY(vae_walk_conv(wk, &v->enc_conv_out, top, 2 * cfg->latent_channels, 3, 0,
                          "encoder.conv_out"));
    return vae_walk_conv(wk, &v->quant_conv, 2 * cfg->latent_channels,
                         2 * cfg->latent_channels, 1, 0, "quant_conv");
}

static svp_status_t vae_walk_decoder(struct svp_vae *v, svp_model_walker_t *wk)
{
    const svp_vae_config_t *cfg = &v->cfg;
    int                     L = cfg->levels, top = cfg->block_out[L - 1];
    int                     i, j;
    char                    p[VAE_NAME_MAX];

    SVP_TRY(vae_walk_conv(wk, &v->dec_conv_in, cfg->latent_channels, top, 3, 0,
                          "decoder.conv_in"));

    v->n_dec_mid_resnets = cfg->layers;
    v->dec_mid_resnets   = calloc(cfg->layers, sizeof(*v->dec_mid_resnets));
    if (v->dec_mid_resnets == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (j = 0; j < cfg->layers; j++) {
        snprintf(p, sizeof(p), "decoder.mid_block.resnets.%d", j);
        SVP_TRY(vae_walk_st_resblock(wk, &v->dec_mid_resnets[j], top, top, p));
    }
    SVP_TRY(vae_walk_attention(wk, &v->dec_mid_attention, top,
                               "decoder.mid_block.attentions.0"));

    for (i = 0; i < L; i++) {
        vae_up_block_t *blk = &v->up[i];
        int             out = cfg->block_out[L - 1 - i];
        int             in  = (i == 0) ? top : cfg->block_out[L - i];

        blk->n_resnets = cfg->layers + 1;
        blk->resnets   = calloc(blk->n_resnets, sizeof(*blk->resnets));
        if (blk->resnets == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        for (j = 0; j < blk->n_resnets; j++) {
            snprintf(p, sizeof(p), "decoder.up_blocks.%d.resnets.%d", i, j);
            SVP_TRY(vae_walk_st_resblock(wk, &blk->resnets[j], j == 0 ? in : out,
                                         out, p));
        }
        blk->has_upsampler = (i < L - 1);
        if (blk->has_upsampler) {
            snprintf(p, sizeof(p), "decoder.up_blocks.%d.upsamplers.0.conv", i);
            SVP_TRY(vae_walk_conv(wk, &blk->upsampler, out, out, 3, 0, p));
        }
    }
    SVP_TRY(vae_walk_norm(wk, &v->dec_norm_out, cfg->block_out[0], 1e-6f,
                          "decoder.conv_norm_out"));
    SVP_TRY(vae_walk_conv(wk, &v->dec_conv_out, cfg->block_out[0], cfg->out_channels,
                          3, 0, "decoder.conv_out"));
    return vae_walk_conv(wk, &v->time_conv_out, cfg->out_channels, cfg->out_channels,
                         3, 1, "decoder.time_conv_out");
}

svp_status_t vae_params_walk(struct svp_vae *v, svp_model_walker_t *wk)
{
    SVP_TRY(vae_walk_encoder(v, wk));
    return vae_walk_decoder(v, wk);
}

void vae_params_free_tree(struct svp_vae *v)
{
    int i;

    for (i = 0; i < SVP_VAE_MAX_LEVELS; i++) {
        free(v->down[i].resnets);
        free(v->up[i].resnets);
        v->down[i].resnets = NULL;
        v->up[i].resnets   = NULL;
    }
    free(v->dec_mid_resnets);
    v->dec_mid_resnets = NULL;
}

/* ---- loading ---- */

static const char *vae_weights_file(const svp_vae_params_t *params)
{
    return params ? params->weights_file : NULL;
}

static void vae_free(struct svp_vae *v)
{
    svp_weight_bufs_free(v->ops, &v->weights);
    vae_params_free_tree(v);
    free(v);
}

svp_status_t svp_vae_create(svp_ops_h ops, const char *model_dir,
                            const svp_vae_params_t *params, svp_vae_h *vae_p)
{
    svp_model_file_walker_t fwk;
    struct svp_vae         *v;
    char                    path[4096];
    svp_status_t            status;

    v = calloc(1, sizeof(*v));
    if (v == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    v->ops = ops;
    if (params) {
        v->capture_cb  = params->capture_cb;
        v->capture_arg = params->capture_arg;
    }
    snprintf(path, sizeof(path), "%s/config.json", model_dir);
    status = svp_vae_config_load(path, &v->cfg);
    if (status != SVP_OK) {
        goto err_free_vae;
    }
    svp_model_file_walker_init(&fwk);
    status = svp_weights_open(model_dir, vae_weights_file(params),
                              "diffusion_pytorch_model", ops, &v->weights, &fwk.w);
    if (status != SVP_OK) {
        goto err_free_vae;
    }
    status = vae_params_walk(v, &fwk.base);
    if (status != SVP_OK) {
        goto err_close_weights;
    }
    svp_weights_log_unused(&fwk.w, "the VAE");
    svp_debug("vae: %d levels, %d tensors from %s", v->cfg.levels, fwk.w.used,
              svp_weights_path(&fwk.w));
    svp_weights_close(&fwk.w);
    *vae_p = v;
    return SVP_OK;

err_close_weights:
    svp_weights_close(&fwk.w);
err_free_vae:
    vae_free(v);
    return status;
}

svp_status_t svp_vae_check_weights(const char             *model_dir,
                                   const svp_vae_params_t *params, int *mapped_p)
{
    svp_model_file_walker_t fwk;
    struct svp_vae          v;
    char                    path[4096];
    svp_status_t            status;

    memset(&v, 0, sizeof(v));
    snprintf(path, sizeof(path), "%s/config.json", model_dir);
    status = svp_vae_config_load(path, &v.cfg);
    if (status != SVP_OK) {
        return status;
    }
    svp_model_file_walker_init(&fwk);
    status = svp_weights_open(model_dir, vae_weights_file(params),
                              "diffusion_pytorch_model", NULL, NULL, &fwk.w);
    if (status != SVP_OK) {
        return status;
    }
    status = vae_params_walk(&v, &fwk.base);
    if (status == SVP_OK) {
        svp_weights_log_unused(&fwk.w, "the VAE");
        if (mapped_p != NULL) {
            *mapped_p = fwk.w.used;
        }
    }
    svp_weights_close(&fwk.w);
    vae_params_free_tree(&v);
    return status;
}

void svp_vae_destroy(svp_vae_h vae)
{
    if (vae != NULL) {
        vae_free(vae);
    }
}

const svp_vae_config_t *svp_vae_config(svp_vae_h vae)
{
    return &vae->cfg;
}

void svp_vae_latent_size(const svp_vae_config_t *cfg, int h, int w, int *lh_p,
                         int *lw_p)
{
    int i;

    for (i = 0; i < cfg->levels - 1; i++) {
        h /= 2;
        w /= 2;
    }
    *lh_p = h;
    *lw_p = w;
}
