/*
 * The UNet's configuration and its parameter tree: which tensors exist, what
 * they are called and what shape they have.  This is the one place that
 * knows diffusers' naming (UNetSpatioTemporalConditionModel.state_dict());
 * the loader and the random initialiser both walk it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/unet_int.h"
#include "model/weights.h"
#include "common/log.h"
#include "tensor/config_json.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- config.json ---- */

/* A per-level int list: a single value is broadcast to every level. */
static svp_status_t unet_config_levels(svp_config_h cj, const char *key, int levels,
                                       int required, int def, int *out)
{
    int64_t      values[SVP_UNET_MAX_LEVELS];
    int          count, i;
    svp_status_t status;

    status = svp_config_get_int_array(cj, key, values, SVP_UNET_MAX_LEVELS, &count);
    if (status != SVP_OK) {
        return status;
    }
    if (count == 0 && !required) {
        for (i = 0; i < levels; i++) {
            out[i] = def;
        }
        return SVP_OK;
    }
    if (count != 1 && count != levels) {
        svp_error("%s: '%s' has %d entries, expected 1 or %d (one per level)",
                  svp_config_path(cj), key, count, levels);
        return SVP_ERR_BAD_FILE;
    }
    for (i = 0; i < levels; i++) {
        out[i] = (int)values[(count == 1) ? 0 : i];
        if (out[i] <= 0) {
            svp_error("%s: '%s' must be positive, found %d", svp_config_path(cj),
                      key, out[i]);
            return SVP_ERR_BAD_FILE;
        }
    }
    return SVP_OK;
}

static svp_status_t unet_config_block_types(svp_config_h cj, const char *key,
                                            int levels, const char *plain,
                                            const char *cross, int *out)
{
    const char  *types[SVP_UNET_MAX_LEVELS];
    int          count, i;
    svp_status_t status;

    status =
        svp_config_get_string_array(cj, key, types, SVP_UNET_MAX_LEVELS, &count);
    if (status != SVP_OK) {
        return status;
    }
    if (count != levels) {
        svp_error("%s: '%s' has %d entries, expected %d (len(block_out_channels))",
                  svp_config_path(cj), key, count, levels);
        return SVP_ERR_BAD_FILE;
    }
    for (i = 0; i < levels; i++) {
        if (strcmp(types[i], cross) == 0) {
            out[i] = 1;
        } else if (strcmp(types[i], plain) == 0) {
            out[i] = 0;
        } else {
            svp_error("%s: %s[%d] is '%s', expected '%s' or '%s'",
                      svp_config_path(cj), key, i, types[i], cross, plain);
            return SVP_ERR_BAD_FILE;
        }
    }
    return SVP_OK;
}

svp_status_t svp_unet_config_load(const char *path, svp_unet_config_t *cfg_p)
{
    static const char *const required[] = {"block_out_channels", "down_block_types",
                                           "up_block_types", NULL};
    svp_unet_config_t        cfg;
    svp_config_h             cj;
    int                      i;
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

    status = svp_weights_config_channels(cj, path, SVP_UNET_MAX_LEVELS,
                                         cfg.block_out, &cfg.levels);
    if (status != SVP_OK) {
        goto out;
    }

    /* Defaults are the class defaults, i.e. SVD's values. */
    SVP_TRY_OUT(
        svp_config_get_count(cj, "in_channels", 8, INT_MAX, &cfg.in_channels));
    SVP_TRY_OUT(
        svp_config_get_count(cj, "out_channels", 4, INT_MAX, &cfg.out_channels));
    SVP_TRY_OUT(svp_config_get_count(cj, "addition_time_embed_dim", 256, INT_MAX,
                                     &cfg.addition_time_embed_dim));
    SVP_TRY_OUT(svp_config_get_count(cj, "projection_class_embeddings_input_dim",
                                     768, INT_MAX, &cfg.projection_dim));

    if ((status = unet_config_levels(cj, "layers_per_block", cfg.levels, 0, 2,
                                     cfg.layers)) != SVP_OK ||
        (status = unet_config_levels(cj, "transformer_layers_per_block", cfg.levels,
                                     0, 1, cfg.transformer_layers)) != SVP_OK ||
        (status = unet_config_levels(cj, "num_attention_heads", cfg.levels, 0, 0,
                                     cfg.heads)) != SVP_OK ||
        (status = unet_config_levels(cj, "cross_attention_dim", cfg.levels, 0, 1024,
                                     cfg.cross_dim)) != SVP_OK ||
        (status = unet_config_block_types(cj, "down_block_types", cfg.levels,
                                          "DownBlockSpatioTemporal",
                                          "CrossAttnDownBlockSpatioTemporal",
                                          cfg.down_cross_attn)) != SVP_OK ||
        (status = unet_config_block_types(cj, "up_block_types", cfg.levels,
                                          "UpBlockSpatioTemporal",
                                          "CrossAttnUpBlockSpatioTemporal",
                                          cfg.up_cross_attn)) != SVP_OK) {
        goto out;
    }
    if (!svp_config_has(cj, "num_attention_heads")) {
        /* the class default, SVD's (5, 10, 20, 20), fits only 4 levels */
        static const int svd_heads[4] = {5, 10, 20, 20};
        if (cfg.levels != 4) {
            svp_error("%s: 'num_attention_heads' is required for %d levels "
                      "(the default has 4)",
                      path, cfg.levels);
            status = SVP_ERR_BAD_FILE;
            goto out;
        }
        memcpy(cfg.heads, svd_heads, sizeof(svd_heads));
    }
    for (i = 0; i < cfg.levels; i++) {
        if (cfg.block_out[i] % cfg.heads[i] != 0) {
            svp_error("%s: block_out_channels[%d] = %d is not divisible by "
                      "num_attention_heads[%d] = %d",
                      path, i, cfg.block_out[i], i, cfg.heads[i]);
            status = SVP_ERR_BAD_FILE;
            goto out;
        }
    }
    if (cfg.projection_dim % cfg.addition_time_embed_dim != 0) {
        svp_error("%s: projection_class_embeddings_input_dim %d is not a "
                  "multiple of addition_time_embed_dim %d",
                  path, cfg.projection_dim, cfg.addition_time_embed_dim);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }

    *cfg_p = cfg;
out:
    svp_config_destroy(cj);
    return status;
}

/* ---- the parameter walk ---- */

#define UNET_NAME_MAX 256

static svp_status_t unet_walk_linear(svp_model_walker_t *wk, unet_linear_t *l,
                                     int in, int out, int bias, const char *prefix)
{
    int64_t wshape[2] = {out, in}, bshape[1] = {out};

    l->in  = in;
    l->out = out;
    SVP_TRY(svp_model_walk_matrix(wk, &l->w, 1.0f, 2, wshape, "%s.weight", prefix));
    if (bias) {
        SVP_TRY(svp_model_walk_param(wk, &l->b, 1.0f, 1, bshape, "%s.bias", prefix));
    }
    return SVP_OK;
}

/* k x k conv (frames = 0) or the (3,1,1) temporal conv (frames = 1). */
static svp_status_t unet_walk_conv(svp_model_walker_t *wk, unet_conv_t *c, int in,
                                   int out, int k, int frames, const char *prefix)
{
    int64_t wshape[5] = {out, in, k, k, 1}, bshape[1] = {out};

    if (frames) {
        wshape[2] = 3;
        wshape[3] = 1;
    }
    c->in  = in;
    c->out = out;
    c->k   = k;
    SVP_TRY(svp_model_walk_matrix(wk, &c->w, 1.0f, frames ? 5 : 4, wshape,
                                  "%s.weight", prefix));
    SVP_TRY(svp_model_walk_param(wk, &c->b, 1.0f, 1, bshape, "%s.bias", prefix));
    return SVP_OK;
}

static svp_status_t unet_walk_norm(svp_model_walker_t *wk, unet_norm_t *n, int c,
                                   float eps, const char *prefix)
{
    int64_t shape[1] = {c};

    n->c   = c;
    n->eps = eps;
    SVP_TRY(svp_model_walk_param(wk, &n->g, 1.0f, 1, shape, "%s.weight", prefix));
    SVP_TRY(svp_model_walk_param(wk, &n->b, 1.0f, 1, shape, "%s.bias", prefix));
    return SVP_OK;
}

static svp_status_t unet_walk_mix(svp_model_walker_t *wk, float *alpha,
                                  const char *prefix)
{
    char  name[UNET_NAME_MAX];
    float mix;

    snprintf(name, sizeof(name), "%s.time_mixer.mix_factor", prefix);
    SVP_TRY(wk->scalar(wk, name, &mix));
    /* AlphaBlender "learned_with_images" with image_only_indicator = 0 */
    *alpha = 1.0f / (1.0f + expf(-mix));
    return SVP_OK;
}

static svp_status_t unet_walk_st_resblock(svp_model_walker_t *wk, int temb,
                                          unet_st_resblock_t *rb, int in, int out,
                                          float eps, const char *prefix)
{
    char           p[UNET_NAME_MAX];
    unet_resnet_t *s = &rb->spatial, *t = &rb->temporal;

#define P(_fmt) (snprintf(p, sizeof(p), "%s." _fmt, prefix), p)
    SVP_TRY(unet_walk_norm(wk, &s->norm1, in, eps, P("spatial_res_block.norm1")));
    SVP_TRY(
        unet_walk_conv(wk, &s->conv1, in, out, 3, 0, P("spatial_res_block.conv1")));
    SVP_TRY(unet_walk_linear(wk, &s->time_emb_proj, temb, out, 1,
                             P("spatial_res_block.time_emb_proj")));
    SVP_TRY(unet_walk_norm(wk, &s->norm2, out, eps, P("spatial_res_block.norm2")));
    SVP_TRY(
        unet_walk_conv(wk, &s->conv2, out, out, 3, 0, P("spatial_res_block.conv2")));
    s->has_shortcut = (in != out);
    if (s->has_shortcut) {
        SVP_TRY(unet_walk_conv(wk, &s->conv_shortcut, in, out, 1, 0,
                               P("spatial_res_block.conv_shortcut")));
    }
    SVP_TRY(unet_walk_norm(wk, &t->norm1, out, eps, P("temporal_res_block.norm1")));
    SVP_TRY(unet_walk_conv(wk, &t->conv1, out, out, 1, 1,
                           P("temporal_res_block.conv1")));
    SVP_TRY(unet_walk_linear(wk, &t->time_emb_proj, temb, out, 1,
                             P("temporal_res_block.time_emb_proj")));
    SVP_TRY(unet_walk_norm(wk, &t->norm2, out, eps, P("temporal_res_block.norm2")));
    SVP_TRY(unet_walk_conv(wk, &t->conv2, out, out, 1, 1,
                           P("temporal_res_block.conv2")));
#undef P
    return unet_walk_mix(wk, &rb->alpha, prefix);
}

static svp_status_t unet_walk_attention(svp_model_walker_t *wk, unet_attention_t *a,
                                        int dim, int kv_dim, int heads,
                                        const char *prefix)
{
    char p[UNET_NAME_MAX];

    a->dim    = dim;
    a->kv_dim = kv_dim;
    a->heads  = heads;
#define P(_fmt) (snprintf(p, sizeof(p), "%s." _fmt, prefix), p)
    SVP_TRY(unet_walk_linear(wk, &a->to_q, dim, dim, 0, P("to_q")));
    SVP_TRY(unet_walk_linear(wk, &a->to_k, kv_dim, dim, 0, P("to_k")));
    SVP_TRY(unet_walk_linear(wk, &a->to_v, kv_dim, dim, 0, P("to_v")));
    SVP_TRY(unet_walk_linear(wk, &a->to_out, dim, dim, 1, P("to_out.0")));
#undef P
    return SVP_OK;
}

static svp_status_t unet_walk_ff(svp_model_walker_t *wk, unet_ff_t *ff, int dim,
                                 const char *prefix)
{
    char p[UNET_NAME_MAX];

    ff->inner = 4 * dim;
#define P(_fmt) (snprintf(p, sizeof(p), "%s." _fmt, prefix), p)
    SVP_TRY(unet_walk_linear(wk, &ff->proj, dim, 2 * ff->inner, 1, P("net.0.proj")));
    SVP_TRY(unet_walk_linear(wk, &ff->out, ff->inner, dim, 1, P("net.2")));
#undef P
    return SVP_OK;
}

/*
 * Eps of the transformer's GroupNorm is 1e-6 and of every LayerNorm 1e-5
 * (golden README, norm_layers.json).
 */
static svp_status_t unet_walk_transformer(svp_model_walker_t *wk,
                                          unet_transformer_t *tr, int c, int heads,
                                          int layers, int cross, const char *prefix)
{
    char p[UNET_NAME_MAX];
    int  l;

    tr->channels        = c;
    tr->heads           = heads;
    tr->layers          = layers;
    tr->blocks          = calloc(layers, sizeof(*tr->blocks));
    tr->temporal_blocks = calloc(layers, sizeof(*tr->temporal_blocks));
    if (tr->blocks == NULL || tr->temporal_blocks == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
#define P(_fmt, ...) (snprintf(p, sizeof(p), "%s." _fmt, prefix, ##__VA_ARGS__), p)
    SVP_TRY(unet_walk_norm(wk, &tr->norm, c, 1e-6f, P("norm")));
    SVP_TRY(unet_walk_linear(wk, &tr->proj_in, c, c, 1, P("proj_in")));
    for (l = 0; l < layers; l++) {
        unet_spatial_block_t  *b = &tr->blocks[l];
        unet_temporal_block_t *t = &tr->temporal_blocks[l];

        SVP_TRY(unet_walk_norm(wk, &b->norm1, c, 1e-5f,
                               P("transformer_blocks.%d.norm1", l)));
        SVP_TRY(unet_walk_attention(wk, &b->attn1, c, c, heads,
                                    P("transformer_blocks.%d.attn1", l)));
        SVP_TRY(unet_walk_norm(wk, &b->norm2, c, 1e-5f,
                               P("transformer_blocks.%d.norm2", l)));
        SVP_TRY(unet_walk_attention(wk, &b->attn2, c, cross, heads,
                                    P("transformer_blocks.%d.attn2", l)));
        SVP_TRY(unet_walk_norm(wk, &b->norm3, c, 1e-5f,
                               P("transformer_blocks.%d.norm3", l)));
        SVP_TRY(unet_walk_ff(wk, &b->ff, c, P("transformer_blocks.%d.ff", l)));

        SVP_TRY(unet_walk_norm(wk, &t->norm_in, c, 1e-5f,
                               P("temporal_transformer_blocks.%d.norm_in", l)));
        SVP_TRY(unet_walk_ff(wk, &t->ff_in, c,
                             P("temporal_transformer_blocks.%d.ff_in", l)));
        SVP_TRY(unet_walk_norm(wk, &t->norm1, c, 1e-5f,
                               P("temporal_transformer_blocks.%d.norm1", l)));
        SVP_TRY(unet_walk_attention(wk, &t->attn1, c, c, heads,
                                    P("temporal_transformer_blocks.%d.attn1", l)));
        SVP_TRY(unet_walk_norm(wk, &t->norm2, c, 1e-5f,
                               P("temporal_transformer_blocks.%d.norm2", l)));
        SVP_TRY(unet_walk_attention(wk, &t->attn2, c, cross, heads,
                                    P("temporal_transformer_blocks.%d.attn2", l)));
        SVP_TRY(unet_walk_norm(wk, &t->norm3, c, 1e-5f,
                               P("temporal_transformer_blocks.%d.norm3", l)));
        SVP_TRY(
            unet_walk_ff(wk, &t->ff, c, P("temporal_transformer_blocks.%d.ff", l)));
    }
    SVP_TRY(unet_walk_linear(wk, &tr->time_pos_embed1, c, 4 * c, 1,
                             P("time_pos_embed.linear_1")));
    SVP_TRY(unet_walk_linear(wk, &tr->time_pos_embed2, 4 * c, c, 1,
                             P("time_pos_embed.linear_2")));
    SVP_TRY(unet_walk_linear(wk, &tr->proj_out, c, c, 1, P("proj_out")));
#undef P
    return unet_walk_mix(wk, &tr->alpha, prefix);
}

static svp_status_t unet_block_alloc(unet_block_t *blk, int n, int attn)
{
    blk->n_resnets = n;
    blk->resnets   = calloc(n, sizeof(*blk->resnets));
    if (blk->resnets == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    if (attn) {
        blk->attentions = calloc(n, sizeof(*blk->attentions));
        if (blk->attentions == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
    }
    return SVP_OK;
}

/*
 * Channel bookkeeping follows diffusers' constructor; the resnet eps values
 * are what the instantiated model has (golden README, "GroupNorm eps is not
 * uniform"): 1e-6 in CrossAttnDown and in every up block, 1e-5 in Down and
 * mid.
 */
svp_status_t unet_params_walk(struct svp_unet *u, svp_model_walker_t *wk)
{
    const svp_unet_config_t *cfg = &u->cfg;
    int                      L = cfg->levels, c0 = cfg->block_out[0];
    int                      temb = 4 * c0, i, j;
    char                     p[UNET_NAME_MAX];

    u->temb_dim = temb;
    SVP_TRY(unet_walk_conv(wk, &u->conv_in, cfg->in_channels, c0, 3, 0, "conv_in"));
    SVP_TRY(unet_walk_linear(wk, &u->time_linear1, c0, temb, 1,
                             "time_embedding.linear_1"));
    SVP_TRY(unet_walk_linear(wk, &u->time_linear2, temb, temb, 1,
                             "time_embedding.linear_2"));
    SVP_TRY(unet_walk_linear(wk, &u->add_linear1, cfg->projection_dim, temb, 1,
                             "add_embedding.linear_1"));
    SVP_TRY(unet_walk_linear(wk, &u->add_linear2, temb, temb, 1,
                             "add_embedding.linear_2"));

    for (i = 0; i < L; i++) {
        unet_block_t *blk = &u->down[i];
        int           out = cfg->block_out[i];
        int           in  = (i == 0) ? c0 : cfg->block_out[i - 1];
        float         eps = cfg->down_cross_attn[i] ? 1e-6f : 1e-5f;

        SVP_TRY(unet_block_alloc(blk, cfg->layers[i], cfg->down_cross_attn[i]));
        for (j = 0; j < blk->n_resnets; j++) {
            snprintf(p, sizeof(p), "down_blocks.%d.resnets.%d", i, j);
            SVP_TRY(unet_walk_st_resblock(wk, temb, &blk->resnets[j],
                                          j == 0 ? in : out, out, eps, p));
            if (blk->attentions) {
                snprintf(p, sizeof(p), "down_blocks.%d.attentions.%d", i, j);
                SVP_TRY(unet_walk_transformer(wk, &blk->attentions[j], out,
                                              cfg->heads[i],
                                              cfg->transformer_layers[i],
                                              cfg->cross_dim[i], p));
            }
        }
        blk->has_sampler = (i < L - 1);
        if (blk->has_sampler) {
            snprintf(p, sizeof(p), "down_blocks.%d.downsamplers.0.conv", i);
            SVP_TRY(unet_walk_conv(wk, &blk->sampler, out, out, 3, 0, p));
        }
    }

    SVP_TRY(unet_walk_st_resblock(wk, temb, &u->mid_resnets[0],
                                  cfg->block_out[L - 1], cfg->block_out[L - 1],
                                  1e-5f, "mid_block.resnets.0"));
    SVP_TRY(unet_walk_transformer(wk, &u->mid_attention, cfg->block_out[L - 1],
                                  cfg->heads[L - 1], cfg->transformer_layers[L - 1],
                                  cfg->cross_dim[L - 1], "mid_block.attentions.0"));
    SVP_TRY(unet_walk_st_resblock(wk, temb, &u->mid_resnets[1],
                                  cfg->block_out[L - 1], cfg->block_out[L - 1],
                                  1e-5f, "mid_block.resnets.1"));

    for (i = 0; i < L; i++) {
        unet_block_t *blk = &u->up[i];
        int           rev = L - 1 - i;
        int           out = cfg->block_out[rev];
        int prev = (i == 0) ? cfg->block_out[L - 1] : cfg->block_out[rev + 1];
        int in   = cfg->block_out[rev > 0 ? rev - 1 : 0];

        SVP_TRY(unet_block_alloc(blk, cfg->layers[rev] + 1, cfg->up_cross_attn[i]));
        for (j = 0; j < blk->n_resnets; j++) {
            int skip = (j == blk->n_resnets - 1) ? in : out;
            snprintf(p, sizeof(p), "up_blocks.%d.resnets.%d", i, j);
            SVP_TRY(unet_walk_st_resblock(wk, temb, &blk->resnets[j],
                                          (j == 0 ? prev : out) + skip, out, 1e-6f,
                                          p));
            if (blk->attentions) {
                snprintf(p, sizeof(p), "up_blocks.%d.attentions.%d", i, j);
                SVP_TRY(unet_walk_transformer(wk, &blk->attentions[j], out,
                                              cfg->heads[rev],
                                              cfg->transformer_layers[rev],
                                              cfg->cross_dim[rev], p));
            }
        }
        blk->has_sampler = (i < L - 1);
        if (blk->has_sampler) {
            snprintf(p, sizeof(p), "up_blocks.%d.upsamplers.0.conv", i);
            SVP_TRY(unet_walk_conv(wk, &blk->sampler, out, out, 3, 0, p));
        }
    }

    SVP_TRY(unet_walk_norm(wk, &u->conv_norm_out, c0, 1e-5f, "conv_norm_out"));
    SVP_TRY(
        unet_walk_conv(wk, &u->conv_out, c0, cfg->out_channels, 3, 0, "conv_out"));
    return SVP_OK;
}

static void unet_transformer_free(unet_transformer_t *tr)
{
    free(tr->blocks);
    free(tr->temporal_blocks);
}

static void unet_block_free(unet_block_t *blk)
{
    int j;

    if (blk->attentions) {
        for (j = 0; j < blk->n_resnets; j++) {
            unet_transformer_free(&blk->attentions[j]);
        }
    }
    free(blk->attentions);
    free(blk->resnets);
}

void unet_params_free_tree(struct svp_unet *u)
{
    int i;

    for (i = 0; i < u->cfg.levels; i++) {
        unet_block_free(&u->down[i]);
        unet_block_free(&u->up[i]);
    }
    unet_transformer_free(&u->mid_attention);
}
