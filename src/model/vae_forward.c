/*
 * The VAE's forward passes: the SD encoder (images are independent) and
 * SVD's temporal decoder (the frames of one chunk form one video).
 *
 * Activations are [N, C, H, W] between blocks, N = images or frames; the
 * temporal layers read the same buffer as [1, F, C, H*W], which is the
 * layout svp_ops_group_norm (frames = F) and svp_ops_conv_frames expect.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/vae_int.h"
#include "trace/range.h"
#include "common/log.h"
#include "common/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* torch's clamp of the posterior's logvar (DiagonalGaussianDistribution) */
#define VAE_LOGVAR_MIN (-30.0f)
#define VAE_LOGVAR_MAX 20.0f

static svp_status_t vae_buf(svp_vae_h v, int64_t count, float **buf_p)
{
    return svp_ops_alloc(v->ops, (size_t)count, buf_p);
}

static void vae_buf_free(svp_vae_h v, float *buf)
{
    svp_ops_free(v->ops, buf);
}

/* ---- captures (golden intermediates) ---- */

/*
 * Reports x [n, c, h, w] as "name"; with video set, x is [F, c, h*w] of one
 * video and is reported in torch's [1, c, F, h, w] view.
 */
static void vae_capture(svp_vae_h v, const char *name, const float *x, int n, int c,
                        int h, int w, int video)
{
    int64_t count = (int64_t)n * c * h * w;
    int64_t shape[5];
    float  *t = NULL, *host;

    if (v->capture_cb == NULL) {
        return;
    }
    host = malloc(count * sizeof(float));
    if (host == NULL) {
        goto err;
    }
    if (video) {
        if (vae_buf(v, count, &t) != SVP_OK ||
            svp_ops_transpose(v->ops, 1, n, c, (int64_t)h * w, x, t) != SVP_OK) {
            goto err;
        }
        x = t;
    }
    if (svp_ops_download(v->ops, host, x, count) != SVP_OK) {
        goto err;
    }
    if (video) {
        shape[0] = 1;
        shape[1] = c;
        shape[2] = n;
        shape[3] = h;
        shape[4] = w;
        v->capture_cb(name, host, 5, shape, v->capture_arg);
    } else {
        shape[0] = n;
        shape[1] = c;
        shape[2] = h;
        shape[3] = w;
        v->capture_cb(name, host, 4, shape, v->capture_arg);
    }
    vae_buf_free(v, t);
    free(host);
    return;
err:
    svp_warn("vae: cannot capture '%s'", name);
    vae_buf_free(v, t);
    free(host);
}

/* ---- blocks ---- */

static svp_status_t vae_conv(svp_vae_h v, const vae_conv_t *cv, int k, int n, int h,
                             int w, const float *x, float *y)
{
    svp_ops_conv2d_t p = {.n      = n,
                          .c_in   = cv->in,
                          .h      = h,
                          .w      = w,
                          .c_out  = cv->out,
                          .kh     = k,
                          .kw     = k,
                          .stride = 1,
                          .pad    = k / 2};

    return svp_ops_conv2d(v->ops, &p, x, cv->w, cv->b, y);
}

/*
 * ResnetBlock2D (frames = 0) or TemporalResnetBlock over one video of
 * `frames` frames: GN -> SiLU -> conv1 -> GN -> SiLU -> conv2, plus x
 * (through the 1x1 shortcut when the channel count changes).  x [n, cin,
 * h, w] -> *y_p [n, cout, h, w], a new buffer.
 */
static svp_status_t vae_resnet_forward(svp_vae_h v, const vae_resnet_t *rn,
                                       int frames, int n, int h, int w,
                                       const float *x, float **y_p)
{
    svp_ops_h            ops = v->ops;
    int64_t              hw  = (int64_t)h * w;
    int                  cin = rn->norm1.c, cout = rn->conv1.out;
    svp_ops_group_norm_t gn = {.n       = frames ? 1 : n,
                               .frames  = frames ? frames : 1,
                               .spatial = hw,
                               .groups  = 32,
                               .silu    = 1};
    float               *a = NULL, *b = NULL;
    svp_status_t         status;

    SVP_TRY_OUT(vae_buf(v, (int64_t)n * SVP_MAX(cin, cout) * hw, &a));
    SVP_TRY_OUT(vae_buf(v, (int64_t)n * cout * hw, &b));

    gn.c   = cin;
    gn.eps = rn->norm1.eps;
    SVP_TRY_OUT(svp_ops_group_norm(ops, &gn, x, rn->norm1.g, rn->norm1.b, a));
    if (frames) {
        SVP_TRY_OUT(svp_ops_conv_frames(ops, 1, frames, cin, cout, hw, a,
                                        rn->conv1.w, rn->conv1.b, b));
    } else {
        SVP_TRY_OUT(vae_conv(v, &rn->conv1, 3, n, h, w, a, b));
    }
    gn.c   = cout;
    gn.eps = rn->norm2.eps;
    SVP_TRY_OUT(svp_ops_group_norm(ops, &gn, b, rn->norm2.g, rn->norm2.b, b));
    if (frames) {
        SVP_TRY_OUT(svp_ops_conv_frames(ops, 1, frames, cout, cout, hw, b,
                                        rn->conv2.w, rn->conv2.b, a));
    } else {
        SVP_TRY_OUT(vae_conv(v, &rn->conv2, 3, n, h, w, b, a));
    }
    if (rn->has_shortcut) {
        SVP_TRY_OUT(vae_conv(v, &rn->conv_shortcut, 1, n, h, w, x, b));
        x = b;
    }
    SVP_TRY_OUT(svp_ops_add(ops, (int64_t)n * cout * hw, x, a, a));
    *y_p = a;
    a    = NULL;
out:
    vae_buf_free(v, a);
    vae_buf_free(v, b);
    return status;
}

/*
 * The decoder's SpatioTemporalResBlock on one video of n frames: spatial
 * resnet, temporal resnet on its output, then the learned blend.
 */
static svp_status_t vae_st_resblock_forward(svp_vae_h v, const vae_st_resblock_t *rb,
                                            const char *name, int n, int h, int w,
                                            const float *x, float **y_p)
{
    int          c = rb->spatial.conv1.out;
    char         cap[128];
    float       *s = NULL, *t = NULL;
    svp_status_t status;

    SVP_TRY_OUT(vae_resnet_forward(v, &rb->spatial, 0, n, h, w, x, &s));
    if (v->capture_cb) {
        snprintf(cap, sizeof(cap), "%s.spatial_res_block", name);
        vae_capture(v, cap, s, n, c, h, w, 0);
    }
    SVP_TRY_OUT(vae_resnet_forward(v, &rb->temporal, n, n, h, w, s, &t));
    if (v->capture_cb) {
        snprintf(cap, sizeof(cap), "%s.temporal_res_block", name);
        vae_capture(v, cap, t, n, c, h, w, 1);
    }
    SVP_TRY_OUT(
        svp_ops_blend(v->ops, (int64_t)n * c * h * w, rb->spatial_weight, s, t, t));
    vae_capture(v, name, t, n, c, h, w, 0);
    *y_p = t;
    t    = NULL;
out:
    vae_buf_free(v, s);
    vae_buf_free(v, t);
    return status;
}

/*
 * diffusers' Attention with one head over the h*w positions of each image,
 * GroupNorm first and the input added back: x [n, c, h, w] -> *y_p.
 */
static svp_status_t vae_attention_forward(svp_vae_h v, const vae_attention_t *at,
                                          int n, int h, int w, const float *x,
                                          float **y_p)
{
    svp_ops_h            ops = v->ops;
    int                  c   = at->c;
    int64_t              hw = (int64_t)h * w, rows = n * hw;
    svp_ops_group_norm_t gn = {.n       = n,
                               .frames  = 1,
                               .c       = c,
                               .spatial = hw,
                               .groups  = 32,
                               .eps     = at->group_norm.eps};
    svp_ops_attention_t  p  = {.batch        = n,
                               .heads        = 1,
                               .head_dim     = c,
                               .q_len        = (int)hw,
                               .kv_len       = (int)hw,
                               .kv_batch_div = 1,
                               .q_stride     = c,
                               .k_stride     = c,
                               .v_stride     = c,
                               .out_stride   = c};
    float               *a = NULL, *tok = NULL, *q = NULL, *k = NULL;
    float               *val = NULL;
    svp_status_t         status;

    SVP_TRY_OUT(vae_buf(v, rows * c, &a));
    SVP_TRY_OUT(vae_buf(v, rows * c, &tok));
    SVP_TRY_OUT(vae_buf(v, rows * c, &q));
    SVP_TRY_OUT(vae_buf(v, rows * c, &k));
    SVP_TRY_OUT(vae_buf(v, rows * c, &val));

    SVP_TRY_OUT(
        svp_ops_group_norm(ops, &gn, x, at->group_norm.g, at->group_norm.b, a));
    /* [n, c, hw] -> tokens [n, hw, c] */
    SVP_TRY_OUT(svp_ops_transpose(ops, n, c, hw, 1, a, tok));
    SVP_TRY_OUT(svp_ops_linear(ops, rows, c, c, tok, at->to_q.w, at->to_q.b, 0, q));
    SVP_TRY_OUT(svp_ops_linear(ops, rows, c, c, tok, at->to_k.w, at->to_k.b, 0, k));
    SVP_TRY_OUT(
        svp_ops_linear(ops, rows, c, c, tok, at->to_v.w, at->to_v.b, 0, val));
    SVP_TRY_OUT(svp_ops_attention(ops, &p, q, k, val, q));
    SVP_TRY_OUT(
        svp_ops_linear(ops, rows, c, c, q, at->to_out.w, at->to_out.b, 0, tok));
    SVP_TRY_OUT(svp_ops_transpose(ops, n, hw, c, 1, tok, a));
    SVP_TRY_OUT(svp_ops_add(ops, rows * c, a, x, a));
    *y_p = a;
    a    = NULL;
out:
    vae_buf_free(v, a);
    vae_buf_free(v, tok);
    vae_buf_free(v, q);
    vae_buf_free(v, k);
    vae_buf_free(v, val);
    return status;
}

/*
 * Downsample2D with padding 0: pad one zero column on the right and one
 * zero row at the bottom, then a 3x3 conv with stride 2 and no padding.
 * The op interface has only symmetric padding, so the asymmetric pad is two
 * concatenations with zeros: each row gets a zero column ([n*c*h, w] ++
 * [n*c*h, 1]), then each image a zero row ([n*c, h, w+1] ++ [n*c, 1, w+1]).
 */
static svp_status_t vae_downsample(svp_vae_h v, const vae_conv_t *cv, int n, int h,
                                   int w, const float *x, float **y_p, int *ho_p,
                                   int *wo_p)
{
    svp_ops_h        ops    = v->ops;
    int64_t          planes = (int64_t)n * cv->in;
    int64_t          nzero  = planes * SVP_MAX(h, w + 1);
    svp_ops_conv2d_t p      = {.n      = n,
                               .c_in   = cv->in,
                               .h      = h + 1,
                               .w      = w + 1,
                               .c_out  = cv->out,
                               .kh     = 3,
                               .kw     = 3,
                               .stride = 2,
                               .pad    = 0};
    float           *zeros = NULL, *host = NULL, *padw = NULL, *padded = NULL;
    float           *y = NULL;
    svp_status_t     status;

    host = calloc(nzero, sizeof(float));
    if (host == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    SVP_TRY_OUT(vae_buf(v, nzero, &zeros));
    SVP_TRY_OUT(svp_ops_upload(ops, zeros, host, nzero));
    SVP_TRY_OUT(vae_buf(v, planes * h * (w + 1), &padw));
    SVP_TRY_OUT(vae_buf(v, planes * (h + 1) * (w + 1), &padded));
    SVP_TRY_OUT(svp_ops_concat(ops, planes * h, w, 1, 1, x, zeros, padw));
    SVP_TRY_OUT(svp_ops_concat(ops, planes, h, 1, w + 1, padw, zeros, padded));

    SVP_TRY_OUT(vae_buf(v,
                        (int64_t)n * cv->out * svp_ops_conv2d_out_h(&p) *
                            svp_ops_conv2d_out_w(&p),
                        &y));
    SVP_TRY_OUT(svp_ops_conv2d(ops, &p, padded, cv->w, cv->b, y));
    *ho_p = svp_ops_conv2d_out_h(&p);
    *wo_p = svp_ops_conv2d_out_w(&p);
    *y_p  = y;
    y     = NULL;
out:
    free(host);
    vae_buf_free(v, zeros);
    vae_buf_free(v, padw);
    vae_buf_free(v, padded);
    vae_buf_free(v, y);
    return status;
}

/* Upsample2D: nearest x2, then a 3x3 conv. */
static svp_status_t vae_upsample(svp_vae_h v, const vae_conv_t *cv, int n, int h,
                                 int w, const float *x, float **y_p)
{
    float       *u = NULL, *y = NULL;
    svp_status_t status;

    SVP_TRY_OUT(vae_buf(v, (int64_t)n * cv->in * 4 * h * w, &u));
    SVP_TRY_OUT(vae_buf(v, (int64_t)n * cv->out * 4 * h * w, &y));
    SVP_TRY_OUT(
        svp_ops_upsample_nearest(v->ops, n, cv->in, h, w, 2 * h, 2 * w, x, u));
    SVP_TRY_OUT(vae_conv(v, cv, 3, n, 2 * h, 2 * w, u, y));
    *y_p = y;
    y    = NULL;
out:
    vae_buf_free(v, u);
    vae_buf_free(v, y);
    return status;
}

/* Moves *y_p into *x_p, freeing the previous *x_p. */
static void vae_swap(svp_vae_h v, float **x_p, float **y_p)
{
    vae_buf_free(v, *x_p);
    *x_p = *y_p;
    *y_p = NULL;
}

/* ---- encoder ---- */

/*
 * The posterior from the moments [n, 2*lat, hw]: mean is the first half of
 * the channels, logvar the second, clamped; std = exp(0.5 * logvar).  The
 * tensors are small (latent size), so this runs on the host for any backend.
 */
static svp_status_t vae_posterior(svp_vae_h v, int n, int64_t hw,
                                  const float *moments, float *mean, float *logvar,
                                  float *std)
{
    int          lat  = v->cfg.latent_channels;
    int64_t      half = (int64_t)lat * hw, i;
    float       *host, *lv;
    int          k;
    svp_status_t status;

    host = malloc((size_t)n * 2 * half * 2 * sizeof(float));
    if (host == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    lv     = host + (int64_t)n * 2 * half;
    status = svp_ops_download(v->ops, host, moments, (size_t)n * 2 * half);
    if (status != SVP_OK) {
        goto out;
    }
    for (k = 0; k < n; k++) {
        const float *m = host + (int64_t)k * 2 * half;
        for (i = 0; i < half; i++) {
            lv[k * half + i] =
                fminf(fmaxf(m[half + i], VAE_LOGVAR_MIN), VAE_LOGVAR_MAX);
        }
        SVP_TRY_OUT(svp_ops_upload(v->ops, mean + k * half, m, half));
    }
    if (logvar != NULL) {
        SVP_TRY_OUT(svp_ops_upload(v->ops, logvar, lv, (size_t)n * half));
    }
    if (std != NULL) {
        for (i = 0; i < n * half; i++) {
            lv[i] = expf(0.5f * lv[i]);
        }
        SVP_TRY_OUT(svp_ops_upload(v->ops, std, lv, (size_t)n * half));
    }
out:
    free(host);
    return status;
}

svp_status_t svp_vae_encode(svp_vae_h v, int n, int h, int w, const float *image,
                            float *mean, float *logvar, float *std)
{
    const svp_vae_config_t *cfg = &v->cfg;
    svp_ops_h               ops = v->ops;
    int                     L = cfg->levels, c = cfg->block_out[0];
    int                     i, j, lat2 = 2 * cfg->latent_channels;
    char                    name[96];
    svp_ops_group_norm_t    gn = {.n = n, .frames = 1, .groups = 32};
    float                  *x = NULL, *y = NULL;
    svp_status_t            status;
    int                     rdepth;
    int64_t                 pass[4];

    if (n < 1 || h < (1 << (L - 1)) || w < (1 << (L - 1))) {
        svp_error("vae: cannot encode %d images of %dx%d (at least %d pixels "
                  "per side)",
                  n, h, w, 1 << (L - 1));
        return SVP_ERR_INVALID_PARAM;
    }
    pass[0] = (int64_t)(intptr_t)v;
    pass[1] = n;
    pass[2] = h;
    pass[3] = w;
    svp_ops_pass_begin(ops, "vae encode", 4, pass);
    rdepth = svp_range_push("vae encode n%d %dx%d", n, h, w);
    SVP_TRY_OUT(vae_buf(v, (int64_t)n * c * h * w, &x));
    SVP_TRY_OUT(vae_conv(v, &v->enc_conv_in, 3, n, h, w, image, x));
    vae_capture(v, "out.encoder.conv_in", x, n, c, h, w, 0);

    for (i = 0; i < L; i++) {
        const vae_down_block_t *blk = &v->down[i];

        for (j = 0; j < blk->n_resnets; j++) {
            SVP_TRY_OUT(vae_resnet_forward(v, &blk->resnets[j], 0, n, h, w, x, &y));
            vae_swap(v, &x, &y);
            c = blk->resnets[j].conv1.out;
        }
        if (blk->has_downsampler) {
            SVP_TRY_OUT(
                vae_downsample(v, &blk->downsampler, n, h, w, x, &y, &h, &w));
            vae_swap(v, &x, &y);
        }
        snprintf(name, sizeof(name), "out.encoder.down_blocks.%d", i);
        vae_capture(v, name, x, n, c, h, w, 0);
    }

    SVP_TRY_OUT(vae_resnet_forward(v, &v->enc_mid_resnets[0], 0, n, h, w, x, &y));
    vae_swap(v, &x, &y);
    SVP_TRY_OUT(vae_attention_forward(v, &v->enc_mid_attention, n, h, w, x, &y));
    vae_swap(v, &x, &y);
    vae_capture(v, "out.encoder.mid_block.attentions.0", x, n, c, h, w, 0);
    SVP_TRY_OUT(vae_resnet_forward(v, &v->enc_mid_resnets[1], 0, n, h, w, x, &y));
    vae_swap(v, &x, &y);
    vae_capture(v, "out.encoder.mid_block", x, n, c, h, w, 0);

    /* the GroupNorm alone is the module conv_norm_out; SiLU follows */
    gn.c       = c;
    gn.spatial = (int64_t)h * w;
    gn.eps     = v->enc_norm_out.eps;
    SVP_TRY_OUT(
        svp_ops_group_norm(ops, &gn, x, v->enc_norm_out.g, v->enc_norm_out.b, x));
    vae_capture(v, "out.encoder.conv_norm_out", x, n, c, h, w, 0);
    SVP_TRY_OUT(svp_ops_silu(ops, (int64_t)n * c * h * w, x, x));
    SVP_TRY_OUT(vae_buf(v, (int64_t)n * lat2 * h * w, &y));
    SVP_TRY_OUT(vae_conv(v, &v->enc_conv_out, 3, n, h, w, x, y));
    vae_capture(v, "out.encoder.conv_out", y, n, lat2, h, w, 0);
    vae_swap(v, &x, &y);
    SVP_TRY_OUT(vae_buf(v, (int64_t)n * lat2 * h * w, &y));
    SVP_TRY_OUT(vae_conv(v, &v->quant_conv, 1, n, h, w, x, y));
    vae_capture(v, "out.quant_conv", y, n, lat2, h, w, 0);

    status = vae_posterior(v, n, (int64_t)h * w, y, mean, logvar, std);
out:
    svp_range_pop_to(rdepth);
    vae_buf_free(v, x);
    vae_buf_free(v, y);
    svp_ops_pass_end(ops);
    return status;
}

/* ---- temporal decoder ---- */

/* One video of n frames: z [n, lat, h, w] -> out [n, out_channels, H, W]. */
static svp_status_t vae_decode_video(svp_vae_h v, int n, int h, int w,
                                     const float *z, float *out)
{
    const svp_vae_config_t *cfg = &v->cfg;
    svp_ops_h               ops = v->ops;
    int                     L = cfg->levels, c = cfg->block_out[L - 1];
    int                     i, j, oc = cfg->out_channels;
    char                    name[96];
    svp_ops_group_norm_t    gn = {.n = n, .frames = 1, .groups = 32};
    float                  *x = NULL, *y = NULL;
    svp_status_t            status;

    SVP_TRY_OUT(vae_buf(v, (int64_t)n * c * h * w, &x));
    SVP_TRY_OUT(vae_conv(v, &v->dec_conv_in, 3, n, h, w, z, x));
    vae_capture(v, "out.decoder.conv_in", x, n, c, h, w, 0);

    /*
     * MidBlockTemporalDecoder runs resnets[0], then zip(attentions,
     * resnets[1:]): with its single attention that is attention and
     * resnets[1] only.  With layers_per_block = 1 the attention's weights
     * exist but are never used; further resnets would not run either.
     */
    SVP_TRY_OUT(vae_st_resblock_forward(v, &v->dec_mid_resnets[0],
                                        "out.decoder.mid_block.resnets.0", n, h, w,
                                        x, &y));
    vae_swap(v, &x, &y);
    if (v->n_dec_mid_resnets > 1) {
        SVP_TRY_OUT(vae_attention_forward(v, &v->dec_mid_attention, n, h, w, x, &y));
        vae_swap(v, &x, &y);
        vae_capture(v, "out.decoder.mid_block.attentions.0", x, n, c, h, w, 0);
        SVP_TRY_OUT(vae_st_resblock_forward(v, &v->dec_mid_resnets[1],
                                            "out.decoder.mid_block.resnets.1", n, h,
                                            w, x, &y));
        vae_swap(v, &x, &y);
    }
    vae_capture(v, "out.decoder.mid_block", x, n, c, h, w, 0);

    for (i = 0; i < L; i++) {
        const vae_up_block_t *blk = &v->up[i];

        for (j = 0; j < blk->n_resnets; j++) {
            snprintf(name, sizeof(name), "out.decoder.up_blocks.%d.resnets.%d", i,
                     j);
            SVP_TRY_OUT(
                vae_st_resblock_forward(v, &blk->resnets[j], name, n, h, w, x, &y));
            vae_swap(v, &x, &y);
            c = blk->resnets[j].spatial.conv1.out;
        }
        if (blk->has_upsampler) {
            SVP_TRY_OUT(vae_upsample(v, &blk->upsampler, n, h, w, x, &y));
            vae_swap(v, &x, &y);
            h *= 2;
            w *= 2;
        }
        snprintf(name, sizeof(name), "out.decoder.up_blocks.%d", i);
        vae_capture(v, name, x, n, c, h, w, 0);
    }

    gn.c       = c;
    gn.spatial = (int64_t)h * w;
    gn.eps     = v->dec_norm_out.eps;
    SVP_TRY_OUT(
        svp_ops_group_norm(ops, &gn, x, v->dec_norm_out.g, v->dec_norm_out.b, x));
    vae_capture(v, "out.decoder.conv_norm_out", x, n, c, h, w, 0);
    SVP_TRY_OUT(svp_ops_silu(ops, (int64_t)n * c * h * w, x, x));
    SVP_TRY_OUT(vae_buf(v, (int64_t)n * oc * h * w, &y));
    SVP_TRY_OUT(vae_conv(v, &v->dec_conv_out, 3, n, h, w, x, y));
    vae_capture(v, "out.decoder.conv_out", y, n, oc, h, w, 0);
    vae_capture(v, "in.decoder.time_conv_out", y, n, oc, h, w, 1);
    SVP_TRY_OUT(svp_ops_conv_frames(ops, 1, n, oc, oc, (int64_t)h * w, y,
                                    v->time_conv_out.w, v->time_conv_out.b, out));
    vae_capture(v, "out.decoder.time_conv_out", out, n, oc, h, w, 1);
out:
    vae_buf_free(v, x);
    vae_buf_free(v, y);
    return status;
}

svp_status_t svp_vae_decode(svp_vae_h v, int frames, int h, int w, int chunk,
                            const float *latents, float *out)
{
    const svp_vae_config_t *cfg       = &v->cfg;
    int                     up        = 1 << (cfg->levels - 1), f0, len;
    int64_t                 in_frame  = (int64_t)cfg->latent_channels * h * w;
    int64_t                 out_frame = (int64_t)cfg->out_channels * h * up * w * up;
    svp_status_t            status;
    int64_t                 pass[5];

    if (frames < 1 || h < 1 || w < 1 || chunk < 0) {
        svp_error("vae: cannot decode %d frames of %dx%d in chunks of %d", frames, h,
                  w, chunk);
        return SVP_ERR_INVALID_PARAM;
    }
    if (chunk == 0 || chunk > frames) {
        chunk = frames;
    }
    pass[0] = (int64_t)(intptr_t)v;
    pass[1] = frames;
    pass[2] = h;
    pass[3] = w;
    pass[4] = chunk;
    svp_ops_pass_begin(v->ops, "vae decode", 5, pass);
    status = SVP_OK;
    for (f0 = 0; f0 < frames && status == SVP_OK; f0 += chunk) {
        len = (frames - f0 < chunk) ? frames - f0 : chunk;
        svp_range_push("vae decode frames [%d, %d)", f0, f0 + len);
        status = vae_decode_video(v, len, h, w, latents + f0 * in_frame,
                                  out + f0 * out_frame);
        svp_range_pop();
    }
    svp_ops_pass_end(v->ops);
    return status;
}
