/*
 * The UNet: loading (config + weights through the parameter walk) and the
 * forward pass of UNetSpatioTemporalConditionModel.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/unet_int.h"
#include "trace/range.h"
#include "common/log.h"
#include "common/util.h"
#include "model/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- loading ---- */

static void unet_free(struct svp_unet *u)
{
    svp_weight_bufs_free(u->ops, &u->weights);
    unet_params_free_tree(u);
    free(u);
}

static const char *unet_weights_file(const svp_unet_params_t *params)
{
    return params ? params->weights_file : NULL;
}

svp_status_t svp_unet_create(svp_ops_h ops, const char *model_dir,
                             const svp_unet_params_t *params, svp_unet_h *unet_p)
{
    svp_model_file_walker_t fwk;
    struct svp_unet        *u;
    char                    path[4096];
    svp_status_t            status;

    u = calloc(1, sizeof(*u));
    if (u == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    u->ops = ops;
    if (params) {
        u->capture_cb  = params->capture_cb;
        u->capture_arg = params->capture_arg;
    }

    snprintf(path, sizeof(path), "%s/config.json", model_dir);
    status = svp_unet_config_load(path, &u->cfg);
    if (status != SVP_OK) {
        goto err_free_unet;
    }
    svp_model_file_walker_init(&fwk);
    status = svp_weights_open(model_dir, unet_weights_file(params),
                              "diffusion_pytorch_model", ops, &u->weights, &fwk.w);
    if (status != SVP_OK) {
        goto err_free_unet;
    }
    status = unet_params_walk(u, &fwk.base);
    if (status != SVP_OK) {
        goto err_close_weights;
    }
    svp_weights_log_unused(&fwk.w, "the UNet");
    svp_debug("unet: %d levels, %d tensors from %s", u->cfg.levels, fwk.w.used,
              svp_weights_path(&fwk.w));
    svp_weights_close(&fwk.w);
    *unet_p = u;
    return SVP_OK;

err_close_weights:
    svp_weights_close(&fwk.w);
err_free_unet:
    unet_free(u);
    return status;
}

svp_status_t svp_unet_check_weights(const char              *model_dir,
                                    const svp_unet_params_t *params)
{
    svp_model_file_walker_t fwk;
    struct svp_unet         u;
    char                    path[4096];
    svp_status_t            status;

    memset(&u, 0, sizeof(u));
    snprintf(path, sizeof(path), "%s/config.json", model_dir);
    status = svp_unet_config_load(path, &u.cfg);
    if (status != SVP_OK) {
        return status;
    }
    svp_model_file_walker_init(&fwk);
    status = svp_weights_open(model_dir, unet_weights_file(params),
                              "diffusion_pytorch_model", NULL, NULL, &fwk.w);
    if (status != SVP_OK) {
        return status;
    }
    status = unet_params_walk(&u, &fwk.base);
    if (status == SVP_OK) {
        svp_debug("%s: %d of %d tensors checked", svp_weights_path(&fwk.w),
                  fwk.w.used, svp_safetensors_count(fwk.w.st));
    }
    svp_weights_close(&fwk.w);
    unet_params_free_tree(&u);
    return status;
}

void svp_unet_destroy(svp_unet_h unet)
{
    if (unet != NULL) {
        unet_free(unet);
    }
}

const svp_unet_config_t *svp_unet_config(svp_unet_h unet)
{
    return &unet->cfg;
}

/* ---- activations ---- */

svp_status_t unet_buf(unet_fwd_t *fw, int64_t count, float **buf_p)
{
    return svp_ops_alloc(fw->unet->ops, (size_t)count, buf_p);
}

void unet_buf_free(unet_fwd_t *fw, float *buf)
{
    svp_ops_free(fw->unet->ops, buf);
}

void unet_capture(unet_fwd_t *fw, const char *name, const float *x, int ndim,
                  const int64_t *shape)
{
    int64_t count = 1;
    float  *host;
    int     i;

    if (fw->unet->capture_cb == NULL) {
        return;
    }
    for (i = 0; i < ndim; i++) {
        count *= shape[i];
    }
    host = malloc(count * sizeof(float));
    if (host == NULL || svp_ops_download(fw->unet->ops, host, x, count) != SVP_OK) {
        svp_warn("unet: cannot capture '%s'", name);
        free(host);
        return;
    }
    fw->unet->capture_cb(name, host, ndim, shape, fw->unet->capture_arg);
    free(host);
}

static void unet_capture_image(unet_fwd_t *fw, const float *x, int c, int h, int w,
                               const char *fmt, int a, int b)
{
    char    name[128];
    int64_t shape[4] = {(int64_t)fw->batch * fw->frames, c, h, w};

    if (fw->unet->capture_cb != NULL) {
        snprintf(name, sizeof(name), fmt, a, b);
        unet_capture(fw, name, x, 4, shape);
    }
}

/* ---- forward ---- */

/*
 * emb = time_embedding(Timesteps(t)) + add_embedding(Timesteps(ids)), then
 * SiLU(emb) repeated per frame: every resnet applies SiLU before its
 * time_emb_proj, so only the activated form is kept.
 */
static svp_status_t unet_embedding(unet_fwd_t *fw, const float *timestep,
                                   const float *time_ids, float **emb_silu_p)
{
    struct svp_unet *u   = fw->unet;
    svp_ops_h        ops = u->ops;
    int              b = fw->batch, td = u->temb_dim, c0 = u->cfg.block_out[0];
    int              n_ids = u->cfg.projection_dim / u->cfg.addition_time_embed_dim;
    int64_t          shape[2] = {b, td};
    float           *t = NULL, *sin = NULL, *mid = NULL, *emb = NULL;
    float           *rep = NULL;
    int              i;
    svp_status_t     status;

    SVP_TRY_OUT(unet_buf(fw, (int64_t)b * n_ids, &t));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)b * SVP_MAX(c0, u->cfg.projection_dim), &sin));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)b * td, &mid));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)b * td, &emb));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)b * fw->frames * td, &rep));

    SVP_TRY_OUT(svp_ops_upload(ops, t, timestep, b));
    SVP_TRY_OUT(svp_ops_timestep_embedding(ops, b, c0, t, sin));
    SVP_TRY_OUT(svp_ops_linear(ops, b, c0, td, sin, u->time_linear1.w,
                               u->time_linear1.b, 0, mid));
    SVP_TRY_OUT(svp_ops_silu(ops, (int64_t)b * td, mid, mid));
    SVP_TRY_OUT(svp_ops_linear(ops, b, td, td, mid, u->time_linear2.w,
                               u->time_linear2.b, 0, emb));
    unet_capture(fw, "out.time_embedding", emb, 2, shape);

    /* ids [b, n_ids] flattened: Timesteps per id, concatenated in id order */
    SVP_TRY_OUT(svp_ops_upload(ops, t, time_ids, (size_t)b * n_ids));
    SVP_TRY_OUT(svp_ops_timestep_embedding(ops, b * n_ids,
                                           u->cfg.addition_time_embed_dim, t, sin));
    SVP_TRY_OUT(svp_ops_linear(ops, b, u->cfg.projection_dim, td, sin,
                               u->add_linear1.w, u->add_linear1.b, 0, mid));
    SVP_TRY_OUT(svp_ops_silu(ops, (int64_t)b * td, mid, mid));
    SVP_TRY_OUT(svp_ops_linear(ops, b, td, td, mid, u->add_linear2.w,
                               u->add_linear2.b, 1, emb));
    unet_capture(fw, "emb", emb, 2, shape);

    SVP_TRY_OUT(svp_ops_silu(ops, (int64_t)b * td, emb, emb));
    for (i = 0; i < b * fw->frames; i++) {
        SVP_TRY_OUT(svp_ops_copy(ops, td, emb + (int64_t)(i / fw->frames) * td,
                                 rep + (int64_t)i * td));
    }
    *emb_silu_p = rep;
    rep         = NULL;
out:
    unet_buf_free(fw, t);
    unet_buf_free(fw, sin);
    unet_buf_free(fw, mid);
    unet_buf_free(fw, emb);
    unet_buf_free(fw, rep);
    return status;
}

/* A skip connection: the buffer and its geometry. */
typedef struct {
    float *x;
    int    c, h, w;
} unet_skip_t;

#define UNET_MAX_SKIPS (1 + SVP_UNET_MAX_LEVELS * 65)

/*
 * The forward's state from one phase to the next: the activation x, its
 * channels and size, the skip stack, and the 3x3 convolution that conv_in,
 * the samplers and conv_out share.  x belongs to the skip stack up to the
 * mid block, to the walk from there on.
 */
typedef struct {
    svp_ops_conv2d_t conv;
    unet_skip_t     *skips;
    int              n_skips;
    float           *x;
    int              c, ch, cw;
} unet_walk_t;

/* down: every resnet(+transformer) output and every downsample is a skip */
static svp_status_t unet_down(unet_fwd_t *fw, unet_walk_t *s)
{
    svp_unet_h   u = fw->unet;
    int          n = fw->batch * fw->frames, c = s->c, ch = s->ch, cw = s->cw, i, j;
    float       *x = s->x, *y = NULL;
    svp_status_t status = SVP_OK;

    for (i = 0; i < u->cfg.levels; i++) {
        const unet_block_t *blk = &u->down[i];

        svp_range_push("down.%d", i);
        for (j = 0; j < blk->n_resnets; j++) {
            SVP_TRY_OUT(
                unet_st_resblock_forward(fw, &blk->resnets[j], ch, cw, x, &y));
            c = blk->resnets[j].spatial.conv1.out;
            unet_capture_image(fw, y, c, ch, cw, "out.down_blocks.%d.resnets.%d", i,
                               j);
            if (blk->attentions) {
                float *a;
                SVP_TRY_OUT(unet_transformer_forward(fw, &blk->attentions[j], ch, cw,
                                                     y, &a));
                unet_buf_free(fw, y);
                y = a;
                unet_capture_image(fw, y, c, ch, cw,
                                   "out.down_blocks.%d.attentions.%d", i, j);
            }
            x                      = y;
            y                      = NULL;
            s->skips[s->n_skips++] = (unet_skip_t){x, c, ch, cw};
        }
        if (blk->has_sampler) {
            svp_range_push("downsample");
            s->conv.c_in   = c;
            s->conv.c_out  = c;
            s->conv.h      = ch;
            s->conv.w      = cw;
            s->conv.stride = 2;
            ch             = svp_ops_conv2d_out_h(&s->conv);
            cw             = svp_ops_conv2d_out_w(&s->conv);
            SVP_TRY_OUT(unet_buf(fw, (int64_t)n * c * ch * cw, &y));
            SVP_TRY_OUT(svp_ops_conv2d(u->ops, &s->conv, x, blk->sampler.w,
                                       blk->sampler.b, y));
            s->conv.stride         = 1;
            x                      = y;
            y                      = NULL;
            s->skips[s->n_skips++] = (unet_skip_t){x, c, ch, cw};
            svp_range_pop();
        }
        svp_range_pop();
        unet_capture_image(fw, x, c, ch, cw, "out.down_blocks.%d", i, 0);
    }
out:
    s->x  = x;
    s->c  = c;
    s->ch = ch;
    s->cw = cw;
    unet_buf_free(fw, y);
    return status;
}

/* mid: resnet, transformer, resnet; its input stays owned by the skip
 * stack, its output is the walk's */
static svp_status_t unet_mid(unet_fwd_t *fw, unet_walk_t *s)
{
    svp_unet_h   u = fw->unet;
    float       *x = NULL, *y = NULL, *a = NULL;
    svp_status_t status;

    svp_range_push("mid");
    status =
        unet_st_resblock_forward(fw, &u->mid_resnets[0], s->ch, s->cw, s->x, &y);
    if (status != SVP_OK) {
        return status;
    }
    unet_capture_image(fw, y, s->c, s->ch, s->cw, "out.mid_block.resnets.0", 0, 0);
    status = unet_transformer_forward(fw, &u->mid_attention, s->ch, s->cw, y, &a);
    unet_buf_free(fw, y);
    if (status != SVP_OK) {
        return status;
    }
    unet_capture_image(fw, a, s->c, s->ch, s->cw, "out.mid_block.attentions.0", 0,
                       0);
    status = unet_st_resblock_forward(fw, &u->mid_resnets[1], s->ch, s->cw, a, &x);
    unet_buf_free(fw, a);
    if (status != SVP_OK) {
        return status;
    }
    s->x = x;
    unet_capture_image(fw, x, s->c, s->ch, s->cw, "out.mid_block", 0, 0);
    svp_range_pop();
    return SVP_OK;
}

/* up: concat [hidden, skip] last-in-first-out; x is owned from here */
static svp_status_t unet_up(unet_fwd_t *fw, unet_walk_t *s)
{
    svp_unet_h   u   = fw->unet;
    svp_ops_h    ops = u->ops;
    int          n = fw->batch * fw->frames, c = s->c, ch = s->ch, cw = s->cw, i, j;
    float       *x = s->x, *y = NULL, *cat = NULL;
    svp_status_t status = SVP_OK;

    for (i = 0; i < u->cfg.levels; i++) {
        const unet_block_t *blk = &u->up[i];

        svp_range_push("up.%d", i);
        for (j = 0; j < blk->n_resnets; j++) {
            unet_skip_t sk = s->skips[--s->n_skips];

            SVP_TRY_OUT(unet_buf(fw, (int64_t)n * (c + sk.c) * ch * cw, &cat));
            SVP_TRY_OUT(
                svp_ops_concat(ops, n, c, sk.c, (int64_t)ch * cw, x, sk.x, cat));
            unet_buf_free(fw, sk.x);
            unet_buf_free(fw, x);
            x = NULL;
            SVP_TRY_OUT(
                unet_st_resblock_forward(fw, &blk->resnets[j], ch, cw, cat, &x));
            unet_buf_free(fw, cat);
            cat = NULL;
            c   = blk->resnets[j].spatial.conv1.out;
            unet_capture_image(fw, x, c, ch, cw, "out.up_blocks.%d.resnets.%d", i,
                               j);
            if (blk->attentions) {
                SVP_TRY_OUT(unet_transformer_forward(fw, &blk->attentions[j], ch, cw,
                                                     x, &y));
                unet_buf_free(fw, x);
                x = y;
                y = NULL;
                unet_capture_image(fw, x, c, ch, cw,
                                   "out.up_blocks.%d.attentions.%d", i, j);
            }
        }
        if (blk->has_sampler) {
            /* to the size of the skip that comes next: x2 unless odd */
            const unet_skip_t *next = &s->skips[s->n_skips - 1];

            svp_range_push("upsample");
            SVP_TRY_OUT(unet_buf(fw, (int64_t)n * c * next->h * next->w, &y));
            SVP_TRY_OUT(
                svp_ops_upsample_nearest(ops, n, c, ch, cw, next->h, next->w, x, y));
            unet_buf_free(fw, x);
            x             = NULL;
            ch            = next->h;
            cw            = next->w;
            s->conv.c_in  = c;
            s->conv.c_out = c;
            s->conv.h     = ch;
            s->conv.w     = cw;
            SVP_TRY_OUT(unet_buf(fw, (int64_t)n * c * ch * cw, &x));
            SVP_TRY_OUT(
                svp_ops_conv2d(ops, &s->conv, y, blk->sampler.w, blk->sampler.b, x));
            unet_buf_free(fw, y);
            y = NULL;
            svp_range_pop();
        }
        svp_range_pop();
        unet_capture_image(fw, x, c, ch, cw, "out.up_blocks.%d", i, 0);
    }
out:
    s->x  = x;
    s->c  = c;
    s->ch = ch;
    s->cw = cw;
    unet_buf_free(fw, y);
    unet_buf_free(fw, cat);
    return status;
}

svp_status_t svp_unet_forward(svp_unet_h u, int batch, int frames, int h, int w,
                              const float *sample, const float *timestep,
                              const float *encoder_hidden_states, int seq,
                              const float *added_time_ids, float *out)
{
    const svp_unet_config_t *cfg = &u->cfg;
    svp_ops_h                ops = u->ops;
    int                      n   = batch * frames, i;
    unet_fwd_t               fw  = {.unet    = u,
                                    .batch   = batch,
                                    .frames  = frames,
                                    .seq     = seq,
                                    .context = encoder_hidden_states};
    unet_walk_t s = {.conv = {.n = n, .kh = 3, .kw = 3, .stride = 1, .pad = 1}};
    float      *emb_silu    = NULL;
    svp_ops_group_norm_t gn = {.n      = n,
                               .frames = 1,
                               .groups = 32,
                               .eps    = u->conv_norm_out.eps};
    svp_status_t         status;
    int                  rdepth;
    /* this UNet at this shape: one kind of pass of the memory plan */
    int64_t pass[6] = {(int64_t)(intptr_t)u, batch, frames, h, w, seq};

    if (batch < 1 || frames < 1 || h < 1 || w < 1 || seq < 1) {
        svp_error("unet: invalid input shape batch %d frames %d %dx%d seq %d", batch,
                  frames, h, w, seq);
        return SVP_ERR_INVALID_PARAM;
    }
    s.skips = calloc(UNET_MAX_SKIPS, sizeof(*s.skips));
    if (s.skips == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    fw.emb_silu = NULL;
    svp_ops_pass_begin(ops, "unet", 6, pass);
    rdepth = svp_range_push("unet b%d f%d %dx%d", batch, frames, h, w);
    svp_range_push("embedding");
    SVP_TRY_OUT(unet_embedding(&fw, timestep, added_time_ids, &emb_silu));
    fw.emb_silu = emb_silu;

    svp_range_pop();

    /* conv_in: the first skip */
    svp_range_push("conv_in");
    s.c          = cfg->block_out[0];
    s.ch         = h;
    s.cw         = w;
    s.conv.c_in  = cfg->in_channels;
    s.conv.c_out = s.c;
    s.conv.h     = h;
    s.conv.w     = w;
    SVP_TRY_OUT(unet_buf(&fw, (int64_t)n * s.c * h * w, &s.x));
    SVP_TRY_OUT(
        svp_ops_conv2d(ops, &s.conv, sample, u->conv_in.w, u->conv_in.b, s.x));
    unet_capture_image(&fw, s.x, s.c, h, w, "out.conv_in", 0, 0);
    s.skips[s.n_skips++] = (unet_skip_t){s.x, s.c, s.ch, s.cw};
    svp_range_pop();

    SVP_TRY_OUT(unet_down(&fw, &s));
    SVP_TRY_OUT(unet_mid(&fw, &s));
    SVP_TRY_OUT(unet_up(&fw, &s));

    /* GroupNorm, SiLU, conv_out straight into [B, F, out, H, W] */
    gn.c       = s.c;
    gn.spatial = (int64_t)s.ch * s.cw;
    svp_range_push("conv_out");
    SVP_TRY_OUT(svp_ops_group_norm(ops, &gn, s.x, u->conv_norm_out.g,
                                   u->conv_norm_out.b, s.x));
    unet_capture_image(&fw, s.x, s.c, s.ch, s.cw, "out.conv_norm_out", 0, 0);
    SVP_TRY_OUT(svp_ops_silu(ops, (int64_t)n * s.c * s.ch * s.cw, s.x, s.x));
    s.conv.c_in  = s.c;
    s.conv.c_out = cfg->out_channels;
    s.conv.h     = s.ch;
    s.conv.w     = s.cw;
    SVP_TRY_OUT(
        svp_ops_conv2d(ops, &s.conv, s.x, u->conv_out.w, u->conv_out.b, out));

out:
    svp_range_pop_to(rdepth);
    /* x is a skip (owned by the stack) until the mid block replaces it */
    for (i = 0; i < s.n_skips; i++) {
        if (s.skips[i].x == s.x) {
            s.x = NULL;
        }
        unet_buf_free(&fw, s.skips[i].x);
    }
    unet_buf_free(&fw, s.x);
    unet_buf_free(&fw, emb_silu);
    svp_ops_pass_end(ops);
    free(s.skips);
    return status;
}
