/*
 * SVD's spatio-temporal building blocks, forward only:
 * SpatioTemporalResBlock and TransformerSpatioTemporalModel.
 *
 * Activations are [B*F, C, H, W] between blocks.  Inside the transformer the
 * tokens are rows of C channels: [B*F, H*W, C] for the spatial blocks and
 * [B*H*W, F, C] for the temporal ones (a sequence over frames per pixel).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/unet_int.h"
#include "trace/range.h"
#include "common/log.h"

#include <stdlib.h>

/*
 * ResnetBlock2D (frames = 0) or TemporalResnetBlock (frames = 1: GroupNorm
 * statistics over all F frames, convs over frames) on x [B*F, c_in, hw]:
 * GN -> SiLU -> conv1 -> + time_emb_proj(SiLU(emb)) -> GN -> SiLU -> conv2,
 * plus x (through the 1x1 shortcut when channels change).
 */
static svp_status_t unet_resnet_forward(unet_fwd_t *fw, const unet_resnet_t *rn,
                                        int temporal, int h, int w, const float *x,
                                        float **y_p)
{
    svp_ops_h            ops = fw->unet->ops;
    int                  n   = fw->batch * fw->frames;
    int64_t              hw  = (int64_t)h * w;
    int                  cin = rn->norm1.c, cout = rn->conv1.out;
    svp_ops_group_norm_t gn = {.n       = temporal ? fw->batch : n,
                               .frames  = temporal ? fw->frames : 1,
                               .spatial = hw,
                               .groups  = 32,
                               .silu    = 1};
    svp_ops_conv2d_t     conv =
        {.n = n, .h = h, .w = w, .kh = 3, .kw = 3, .stride = 1, .pad = 1};
    float       *a = NULL, *b = NULL, *t = NULL, *sc = NULL;
    svp_status_t status;

    SVP_TRY_OUT(unet_buf(fw, (int64_t)n * cin * hw, &a));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)n * cout * hw, &b));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)n * cout, &t));

    gn.c   = cin;
    gn.eps = rn->norm1.eps;
    SVP_TRY_OUT(svp_ops_group_norm(ops, &gn, x, rn->norm1.g, rn->norm1.b, a));
    if (temporal) {
        SVP_TRY_OUT(svp_ops_conv_frames(ops, fw->batch, fw->frames, cin, cout, hw, a,
                                        rn->conv1.w, rn->conv1.b, b));
    } else {
        conv.c_in  = cin;
        conv.c_out = cout;
        SVP_TRY_OUT(svp_ops_conv2d(ops, &conv, a, rn->conv1.w, rn->conv1.b, b));
    }
    SVP_TRY_OUT(svp_ops_linear(ops, n, rn->time_emb_proj.in, cout, fw->emb_silu,
                               rn->time_emb_proj.w, rn->time_emb_proj.b, 0, t));
    SVP_TRY_OUT(svp_ops_add_broadcast(ops, (int64_t)n * cout, hw, 1, b, t));

    gn.c   = cout;
    gn.eps = rn->norm2.eps;
    SVP_TRY_OUT(svp_ops_group_norm(ops, &gn, b, rn->norm2.g, rn->norm2.b, b));
    /* a is free again and large enough when cin >= cout; else regrow */
    if (cin < cout) {
        unet_buf_free(fw, a);
        a = NULL;
        SVP_TRY_OUT(unet_buf(fw, (int64_t)n * cout * hw, &a));
    }
    if (temporal) {
        SVP_TRY_OUT(svp_ops_conv_frames(ops, fw->batch, fw->frames, cout, cout, hw,
                                        b, rn->conv2.w, rn->conv2.b, a));
    } else {
        conv.c_in  = cout;
        conv.c_out = cout;
        SVP_TRY_OUT(svp_ops_conv2d(ops, &conv, b, rn->conv2.w, rn->conv2.b, a));
    }

    if (rn->has_shortcut) {
        svp_ops_conv2d_t pw = {.n      = n,
                               .c_in   = cin,
                               .h      = h,
                               .w      = w,
                               .c_out  = cout,
                               .kh     = 1,
                               .kw     = 1,
                               .stride = 1};
        SVP_TRY_OUT(svp_ops_conv2d(ops, &pw, x, rn->conv_shortcut.w,
                                   rn->conv_shortcut.b, b));
        sc = b;
    }
    SVP_TRY_OUT(svp_ops_add(ops, (int64_t)n * cout * hw, a, sc ? sc : x, a));

    *y_p = a;
    a    = NULL;
out:
    unet_buf_free(fw, a);
    unet_buf_free(fw, b);
    unet_buf_free(fw, t);
    return status;
}

svp_status_t unet_st_resblock_forward(unet_fwd_t *fw, const unet_st_resblock_t *rb,
                                      int h, int w, const float *x, float **y_p)
{
    int64_t count = (int64_t)fw->batch * fw->frames * rb->spatial.conv1.out * h * w;
    float  *s = NULL, *t = NULL;
    svp_status_t status;
    int          rdepth = svp_range_push("resnet");

    svp_range_push("spatial");
    SVP_TRY_OUT(unet_resnet_forward(fw, &rb->spatial, 0, h, w, x, &s));
    svp_range_pop();
    svp_range_push("temporal");
    SVP_TRY_OUT(unet_resnet_forward(fw, &rb->temporal, 1, h, w, s, &t));
    svp_range_pop();
    /* alpha weighs the spatial branch (UNet; the VAE decoder is opposite) */
    SVP_TRY_OUT(svp_ops_blend(fw->unet->ops, count, rb->alpha, s, t, t));
    *y_p = t;
    t    = NULL;
out:
    svp_range_pop_to(rdepth);
    unet_buf_free(fw, s);
    unet_buf_free(fw, t);
    return status;
}

/*
 * h [batch * q_len, dim] += to_out(attention(to_q(xq), to_k(kv), to_v(kv))).
 * Self-attention when ctx is NULL (keys from xq); otherwise keys come from
 * ctx [kv_batches * kv_len, kv_dim], query batch i using context
 * i / kv_div.
 */
static svp_status_t unet_attention_apply(unet_fwd_t *fw, const unet_attention_t *at,
                                         int batch, int q_len, const float *xq,
                                         const float *ctx, int kv_len, int kv_div,
                                         float *h)
{
    svp_ops_h           ops     = fw->unet->ops;
    int64_t             rows    = (int64_t)batch * q_len;
    int64_t             kv_rows = ctx ? (int64_t)batch / kv_div * kv_len : rows;
    const float        *src     = ctx ? ctx : xq;
    float              *q = NULL, *k = NULL, *v = NULL;
    svp_ops_attention_t p = {.batch        = batch,
                             .heads        = at->heads,
                             .head_dim     = at->dim / at->heads,
                             .q_len        = q_len,
                             .kv_len       = ctx ? kv_len : q_len,
                             .kv_batch_div = ctx ? kv_div : 1,
                             .q_stride     = at->dim,
                             .k_stride     = at->dim,
                             .v_stride     = at->dim,
                             .out_stride   = at->dim};
    svp_status_t        status;

    SVP_TRY_OUT(unet_buf(fw, rows * at->dim, &q));
    SVP_TRY_OUT(unet_buf(fw, kv_rows * at->dim, &k));
    SVP_TRY_OUT(unet_buf(fw, kv_rows * at->dim, &v));
    SVP_TRY_OUT(
        svp_ops_linear(ops, rows, at->dim, at->dim, xq, at->to_q.w, NULL, 0, q));
    SVP_TRY_OUT(svp_ops_linear(ops, kv_rows, at->to_k.in, at->dim, src, at->to_k.w,
                               NULL, 0, k));
    SVP_TRY_OUT(svp_ops_linear(ops, kv_rows, at->to_v.in, at->dim, src, at->to_v.w,
                               NULL, 0, v));
    /* the output overwrites q (allowed by the op: see ops.h) */
    SVP_TRY_OUT(svp_ops_attention(ops, &p, q, k, v, q));
    SVP_TRY_OUT(svp_ops_linear(ops, rows, at->dim, at->dim, q, at->to_out.w,
                               at->to_out.b, 1, h));
out:
    unet_buf_free(fw, q);
    unet_buf_free(fw, k);
    unet_buf_free(fw, v);
    return status;
}

/* h [rows, dim] += ff(xn): GEGLU projection, then the output linear. */
static svp_status_t unet_ff_apply(unet_fwd_t *fw, const unet_ff_t *ff, int64_t rows,
                                  const float *xn, float *h)
{
    svp_ops_h    ops = fw->unet->ops;
    int          dim = ff->out.out;
    float       *p = NULL, *g = NULL;
    svp_status_t status;

    SVP_TRY_OUT(unet_buf(fw, rows * 2 * ff->inner, &p));
    SVP_TRY_OUT(unet_buf(fw, rows * ff->inner, &g));
    SVP_TRY_OUT(svp_ops_linear(ops, rows, dim, 2 * ff->inner, xn, ff->proj.w,
                               ff->proj.b, 0, p));
    SVP_TRY_OUT(svp_ops_geglu(ops, rows, ff->inner, p, g));
    SVP_TRY_OUT(
        svp_ops_linear(ops, rows, ff->inner, dim, g, ff->out.w, ff->out.b, 1, h));
out:
    unet_buf_free(fw, p);
    unet_buf_free(fw, g);
    return status;
}

/* BasicTransformerBlock on h [N*S, C], in place; scratch [N*S, C]. */
static svp_status_t unet_spatial_block(unet_fwd_t                 *fw,
                                       const unet_spatial_block_t *blk, int64_t s,
                                       float *h, float *scratch)
{
    svp_ops_h    ops = fw->unet->ops;
    int          n = fw->batch * fw->frames, c = blk->norm1.c;
    int64_t      rows = (int64_t)n * s;
    svp_status_t status;

    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, c, blk->norm1.eps, h, blk->norm1.g,
                                   blk->norm1.b, scratch));
    SVP_TRY_OUT(
        unet_attention_apply(fw, &blk->attn1, n, (int)s, scratch, NULL, 0, 1, h));
    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, c, blk->norm2.eps, h, blk->norm2.g,
                                   blk->norm2.b, scratch));
    /* the context of frame f of item b is item b's: one per F frames */
    SVP_TRY_OUT(unet_attention_apply(fw, &blk->attn2, n, (int)s, scratch,
                                     fw->context, fw->seq, fw->frames, h));
    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, c, blk->norm3.eps, h, blk->norm3.g,
                                   blk->norm3.b, scratch));
    SVP_TRY_OUT(unet_ff_apply(fw, &blk->ff, rows, scratch, h));
out:
    return status;
}

/*
 * TemporalBasicTransformerBlock on t [B*S, F, C] in place.  Its cross
 * attention context is the first frame's encoder_hidden_states of each item
 * (all frames carry the same), shared by the item's S pixel sequences.
 */
static svp_status_t unet_temporal_block(unet_fwd_t                  *fw,
                                        const unet_temporal_block_t *blk, int64_t s,
                                        float *t, float *scratch)
{
    svp_ops_h    ops  = fw->unet->ops;
    int          c    = blk->norm1.c;
    int          seqs = (int)(fw->batch * s);
    int64_t      rows = (int64_t)seqs * fw->frames;
    svp_status_t status;

    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, c, blk->norm_in.eps, t, blk->norm_in.g,
                                   blk->norm_in.b, scratch));
    SVP_TRY_OUT(unet_ff_apply(fw, &blk->ff_in, rows, scratch, t));
    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, c, blk->norm1.eps, t, blk->norm1.g,
                                   blk->norm1.b, scratch));
    SVP_TRY_OUT(unet_attention_apply(fw, &blk->attn1, seqs, fw->frames, scratch,
                                     NULL, 0, 1, t));
    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, c, blk->norm2.eps, t, blk->norm2.g,
                                   blk->norm2.b, scratch));
    SVP_TRY_OUT(unet_attention_apply(fw, &blk->attn2, seqs, fw->frames, scratch,
                                     fw->context, fw->seq, (int)s, t));
    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, c, blk->norm3.eps, t, blk->norm3.g,
                                   blk->norm3.b, scratch));
    SVP_TRY_OUT(unet_ff_apply(fw, &blk->ff, rows, scratch, t));
out:
    return status;
}

/*
 * Frame position embedding time_pos_embed(Timesteps(C)(f)) for every row
 * n = b*F + f: [B*F, C].
 */
static svp_status_t unet_frame_embedding(unet_fwd_t               *fw,
                                         const unet_transformer_t *tr, float **emb_p)
{
    svp_ops_h    ops = fw->unet->ops;
    int          n = fw->batch * fw->frames, c = tr->channels, i;
    float       *idx_host, *idx = NULL, *sin = NULL, *mid = NULL, *emb = NULL;
    svp_status_t status;

    idx_host = malloc(n * sizeof(float));
    if (idx_host == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < n; i++) {
        idx_host[i] = (float)(i % fw->frames);
    }
    SVP_TRY_OUT(unet_buf(fw, n, &idx));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)n * c, &sin));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)n * 4 * c, &mid));
    SVP_TRY_OUT(unet_buf(fw, (int64_t)n * c, &emb));
    SVP_TRY_OUT(svp_ops_upload(ops, idx, idx_host, n));
    SVP_TRY_OUT(svp_ops_timestep_embedding(ops, n, c, idx, sin));
    SVP_TRY_OUT(svp_ops_linear(ops, n, c, 4 * c, sin, tr->time_pos_embed1.w,
                               tr->time_pos_embed1.b, 0, mid));
    SVP_TRY_OUT(svp_ops_silu(ops, (int64_t)n * 4 * c, mid, mid));
    SVP_TRY_OUT(svp_ops_linear(ops, n, 4 * c, c, mid, tr->time_pos_embed2.w,
                               tr->time_pos_embed2.b, 0, emb));
    *emb_p = emb;
    emb    = NULL;
out:
    free(idx_host);
    unet_buf_free(fw, idx);
    unet_buf_free(fw, sin);
    unet_buf_free(fw, mid);
    unet_buf_free(fw, emb);
    return status;
}

svp_status_t unet_transformer_forward(unet_fwd_t *fw, const unet_transformer_t *tr,
                                      int h, int w, const float *x, float **y_p)
{
    svp_ops_h            ops = fw->unet->ops;
    int                  n = fw->batch * fw->frames, c = tr->channels, l;
    int64_t              s = (int64_t)h * w, count = (int64_t)n * c * s;
    svp_ops_group_norm_t gn = {.n       = n,
                               .frames  = 1,
                               .c       = c,
                               .spatial = s,
                               .groups  = 32,
                               .eps     = tr->norm.eps};
    float               *a = NULL, *b = NULL, *hid = NULL, *mix = NULL;
    float               *femb = NULL;
    svp_status_t         status;
    int                  rdepth = svp_range_push("transformer");

    SVP_TRY_OUT(unet_buf(fw, count, &a));
    SVP_TRY_OUT(unet_buf(fw, count, &b));
    SVP_TRY_OUT(unet_buf(fw, count, &hid));
    SVP_TRY_OUT(unet_buf(fw, count, &mix));

    /* GroupNorm, [N, C, S] -> [N, S, C] tokens, proj_in (a Linear in SVD) */
    SVP_TRY_OUT(svp_ops_group_norm(ops, &gn, x, tr->norm.g, tr->norm.b, a));
    SVP_TRY_OUT(svp_ops_transpose(ops, n, c, s, 1, a, b));
    SVP_TRY_OUT(
        svp_ops_linear(ops, n * s, c, c, b, tr->proj_in.w, tr->proj_in.b, 0, hid));
    SVP_TRY_OUT(unet_frame_embedding(fw, tr, &femb));

    for (l = 0; l < tr->layers; l++) {
        svp_range_push("spatial");
        SVP_TRY_OUT(unet_spatial_block(fw, &tr->blocks[l], s, hid, a));
        svp_range_pop();

        /* temporal branch on hid + frame embedding, as [B, S, F, C] */
        SVP_TRY_OUT(svp_ops_copy(ops, count, hid, b));
        SVP_TRY_OUT(svp_ops_add_broadcast(ops, n, s, c, b, femb));
        svp_range_push("temporal");
        SVP_TRY_OUT(svp_ops_transpose(ops, fw->batch, fw->frames, s, c, b, mix));
        SVP_TRY_OUT(unet_temporal_block(fw, &tr->temporal_blocks[l], s, mix, a));
        SVP_TRY_OUT(svp_ops_transpose(ops, fw->batch, s, fw->frames, c, mix, b));
        svp_range_pop();

        SVP_TRY_OUT(svp_ops_blend(ops, count, tr->alpha, hid, b, hid));
    }

    /* proj_out, back to [N, C, S], plus the block input */
    SVP_TRY_OUT(
        svp_ops_linear(ops, n * s, c, c, hid, tr->proj_out.w, tr->proj_out.b, 0, a));
    SVP_TRY_OUT(svp_ops_transpose(ops, n, s, c, 1, a, b));
    SVP_TRY_OUT(svp_ops_add(ops, count, b, x, b));
    *y_p = b;
    b    = NULL;
out:
    svp_range_pop_to(rdepth);
    unet_buf_free(fw, a);
    unet_buf_free(fw, b);
    unet_buf_free(fw, hid);
    unet_buf_free(fw, mix);
    unet_buf_free(fw, femb);
    return status;
}
