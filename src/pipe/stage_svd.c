/*
 * The SVD stage: real Euler denoising with the SVD UNet, classifier-free
 * guidance with the per-frame scale ramp, and v-prediction.
 *
 * A sample carries, from rank to rank:
 *   0 latents        [1, F, 4, h, w]  the noisy latents
 *   1 image_latents  [1, 4, h, w]     VAE mode of the conditioning image
 *                                     (unscaled), repeated over F at the UNet
 *   2 image_embeds   [1, 1, D]        CLIP image embedding
 *   3 added_time_ids [1, 3]           fps - 1, motion bucket, noise aug
 * so any rank can run any step with nothing but the message.
 *
 *   4 seed           [1] I64         the sample's seed
 *   5 timing         [2] F64         wall clock at entry, encode seconds
 *
 * Conditioning comes from images (video.inputs) or from a file.
 *
 * Images: the sample list (job/samples.h) gives each sample its image, seed
 * and parameters (fps, motion bucket, noise augmentation, guidance), from a
 * manifest line or from video.inputs x video.seeds and the spec's values.
 * Every rank holds the list, so a sample's parameters need not travel with
 * it: a rank looks them up by its index.  Where the sample enters (rank 0),
 * as diffusers does:
 *   VAE input = LANCZOS resize to width x height, x/127.5 - 1, plus
 *               noise_aug_strength * N(0,1) (the sample's noise stream),
 *               encoded, the posterior mode taken (unscaled);
 *   CLIP      = the original image, antialiased resize, CLIP normalisation,
 *               the vision encoder's image_embeds.
 *
 * File (model.conditioning): a safetensors file holding S conditioning sets;
 * sample i uses set i mod S:
 *   image_latents  [S, 4, h, w]          required
 *   image_embeds   [S, D]                required
 *   added_time_ids [S, 3]                optional (default: from video.*)
 *   latents        [S, F, 4, h, w]       optional initial noise, N(0,1)
 *                                        before the scheduler's scaling
 *                                        (diffusers' `latents` argument)
 * Without `latents` the noise is drawn from the sample's own seed with the counter
 * RNG, so it does not depend on ranks.  This also reproduces a diffusers run
 * exactly when its tensors are written into such a file.
 *
 * Where the sample leaves: latents / scaling_factor, VAE decode in chunks
 * of video.decode_chunk_size frames, clamp(x/2 + 0.5, 0, 1), then the
 * sample directory <output.dir>/sample_NNNNNN/ with frame_NNNN.png,
 * video.mp4, sample.json and latents.safetensors, written whole or not at
 * all.  A model folder without vae/ gives latents and sample.json only.
 *
 * One step, for global step k (CFG on when max_guidance > 1):
 *   x_in  = x / sqrt(sigma_k^2 + 1)
 *   input = [x_in | 0] and [x_in | image_latents] (8 channels, batch [u, c])
 *   v     = UNet(input, t_k, [0, embeds], ids), one call for the batch
 *           (a guidance pair: one per rank, a half each); v_u, v_c;
 *           v = v_u + g_f (v_c - v_u)
 *   x     = Euler step (v-prediction) to sigma_{k+1}
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "stages/stage_svd_int.h"
#include "ops/ops_sched.h"
#include "noise/guidance.h"
#include "trace/range.h"
#include "common/log.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

svp_status_t svp_stage_svd_dev_buf(svp_stage_svd_t *st, const float *host, int64_t n,
                                   float **buf_p)
{
    svp_status_t status = svp_ops_alloc(st->ops, (size_t)n, buf_p);

    if (status == SVP_OK && host != NULL) {
        status = svp_ops_upload(st->ops, *buf_p, host, (size_t)n);
    }
    return status;
}

uint64_t svp_stage_svd_seed(const svp_stage_svd_t *st, int i)
{
    return st->list->items[i].seed;
}

svp_status_t svp_stage_svd_alloc(void *self, int index, svp_sample_t *s)
{
    svp_stage_svd_t         *st                     = self;
    int64_t                  shapes[SVD_T_COUNT][5] = {{1, st->F, 4, st->h, st->w},
                                                       {1, 4, st->h, st->w},
                                                       {1, 1, st->D},
                                                       {1, 3},
                                                       {1},
                                                       {2}};
    static const int         ndims[SVD_T_COUNT]     = {5, 4, 3, 2, 1, 1};
    static const svp_dtype_t dtypes[SVD_T_COUNT]    = {SVP_DTYPE_F32, SVP_DTYPE_F32,
                                                       SVP_DTYPE_F32, SVP_DTYPE_F32,
                                                       SVP_DTYPE_I64, SVP_DTYPE_F64};
    svp_status_t             status;
    int                      i;

    for (i = 0; i < SVD_T_COUNT; ++i) {
        status = svp_tensor_create(dtypes[i], ndims[i], shapes[i], &s->tensors[i]);
        if (status != SVP_OK) {
            svp_sample_cleanup(s);
            return status;
        }
        s->ntensors = i + 1;
    }
    s->index = index;
    s->seed  = st->spec->seed;
    return SVP_OK;
}

/*
 * The step's buffers (stage_svd_int.h) for a UNet batch of batch, and the
 * guidance scales.  On the cuda backend they are device memory, on cpu host
 * memory: the same step runs on both.
 */
svp_status_t svp_stage_svd_buffers_init(svp_stage_svd_t *st, int batch)
{
    int64_t      plane = st->h * st->w, fr = 4 * plane, n = st->F * fr;
    int64_t      nz = SVP_MAX(fr, st->D);
    float       *zeros;
    svp_status_t status;

    st->scales = malloc(st->F * sizeof(float));
    st->ids    = malloc(batch * 3 * sizeof(float));
    st->t      = malloc(batch * sizeof(float));
    zeros      = calloc(nz, sizeof(float));
    if (st->scales == NULL || st->ids == NULL || st->t == NULL || zeros == NULL) {
        free(zeros);
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_stage_svd_dev_buf(st, NULL, batch * st->F * 8 * plane, &st->d_in);
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, batch * n, &st->d_out);
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, n, &st->d_v);
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, batch * st->D, &st->d_ehs);
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, n, &st->d_x);
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, fr, &st->d_img);
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, st->D, &st->d_emb);
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, zeros, nz, &st->d_zero);
    }
    free(zeros);
    return status;
}

/* svp_ops_free(NULL) is a no-op: a part-made set is released too. */
void svp_stage_svd_buffers_cleanup(svp_stage_svd_t *st)
{
    if (st->ops == NULL) {
        return;
    }
    svp_ops_free(st->ops, st->d_zero);
    svp_ops_free(st->ops, st->d_emb);
    svp_ops_free(st->ops, st->d_img);
    svp_ops_free(st->ops, st->d_x);
    svp_ops_free(st->ops, st->d_ehs);
    svp_ops_free(st->ops, st->d_v);
    svp_ops_free(st->ops, st->d_out);
    svp_ops_free(st->ops, st->d_in);
}

/*
 * A step, on either backend, in three parts: the model input, the UNet, and
 * the guidance and Euler update, all ops (ops_sched.h, the CPU scheduler's
 * arithmetic: on the cpu backend the latents are bit for bit those of
 * svp_sched_scale_model_input, svp_sched_guidance_apply and svp_sched_step)
 * on the handle's buffers.  A sample on the device (a device frame) is
 * updated in place and never leaves it but for its 3 time ids; a host
 * sample goes up and comes back down around the step (a copy on the cpu
 * backend, whose buffers are host memory).
 *
 * One rank runs the guidance batch [unconditional, conditional] in one
 * UNet call.  A guidance pair runs one batch-1 call per lane (half), which
 * moves the latents by fp32 round-off against the batch (a product's
 * blocking depends on its rows): bit for bit the same on every pair, within
 * about 1e-6 of one rank (tests/pairs_cluster.sh; doc/internals.md
 * "Guidance pairs").
 */

/* The latents in hand: the device frame's, or the step's copy of a host
 * sample's (the same buffer from svp_stage_svd_step_in to _out). */
static float *svp_stage_svd_x(svp_stage_svd_t *st, svp_sample_t *s)
{
    return s->on_device ? s->tensors[SVD_T_LATENTS]->data : st->d_x;
}

/* [B, F, 8, h, w]: the scaled latents, then the image latents (zeros in
 * the unconditional half); the timestep, embeddings and ids per half.
 * Halves [first, first + count) of a batch of `batch` (a pair's rank
 * builds its own half only). */
static svp_status_t svp_stage_svd_step_in(svp_stage_svd_t *st, svp_sample_t *s,
                                          int step, int batch, int first, int count)
{
    svp_ops_h    ops   = st->ops;
    int64_t      plane = st->h * st->w, fr = 4 * plane, n = st->F * fr;
    const float *img, *emb, *x;
    float        ids[3], c_in;
    int          b, f;

    if (s->on_device) {
        img = s->tensors[SVD_T_IMAGE_LATENTS]->data;
        emb = s->tensors[SVD_T_EMBEDS]->data;
        SVP_TRY(svp_ops_download(ops, ids, s->tensors[SVD_T_IDS]->data, 3));
    } else {
        img = st->d_img;
        emb = st->d_emb;
        SVP_TRY(svp_ops_upload(ops, st->d_x, s->tensors[SVD_T_LATENTS]->data, n));
        SVP_TRY(svp_ops_upload(ops, st->d_img, s->tensors[SVD_T_IMAGE_LATENTS]->data,
                               fr));
        SVP_TRY(
            svp_ops_upload(ops, st->d_emb, s->tensors[SVD_T_EMBEDS]->data, st->D));
        memcpy(ids, s->tensors[SVD_T_IDS]->data, sizeof(ids));
    }
    x    = svp_stage_svd_x(st, s);
    c_in = svp_sched_c_in(st->sched, step);
    for (b = first; b < first + count; ++b) {
        int cond = (batch == 1 || b == 1);
        for (f = 0; f < st->F; ++f) {
            float *dst = st->d_in + ((int64_t)b * st->F + f) * 8 * plane;
            SVP_TRY(svp_ops_sched_scale(ops, fr, c_in, x + f * fr, dst));
            SVP_TRY(svp_ops_copy(ops, fr, cond ? img : st->d_zero, dst + fr));
        }
        st->t[b] = svp_sched_timesteps(st->sched)[step];
        memcpy(st->ids + 3 * b, ids, sizeof(ids));
        SVP_TRY(svp_ops_copy(ops, st->D, cond ? emb : st->d_zero,
                             st->d_ehs + b * st->D));
    }
    return SVP_OK;
}

/* The UNet on halves [b, b + count) of the batch svp_stage_svd_step_in made. */
static svp_status_t svp_stage_svd_step_unet(svp_stage_svd_t    *st,
                                            const svp_sample_t *s, int step, int b,
                                            int count)
{
    int64_t      plane = st->h * st->w, n = st->F * 4 * plane;
    svp_status_t status;

    svp_range_push_ctx("sample %d step %d", s->index, step);
    status = svp_unet_forward(st->unet, count, (int)st->F, (int)st->h, (int)st->w,
                              st->d_in + (int64_t)b * st->F * 8 * plane, st->t + b,
                              st->d_ehs + b * st->D, 1, st->ids + 3 * b,
                              st->d_out + b * n);
    svp_range_pop();
    return status;
}

/* The guidance (cfg: d_out holds both halves) and the Euler update of the
 * latents in hand, which go back to the sample. */
static svp_status_t svp_stage_svd_step_out(svp_stage_svd_t *st, svp_sample_t *s,
                                           int step, int cfg)
{
    const svp_job_sample_params_t *p   = &st->list->items[s->index];
    svp_ops_h                      ops = st->ops;
    int64_t                        fr = 4 * st->h * st->w, n = st->F * fr;
    float                         *x = svp_stage_svd_x(st, s), last;
    const float                   *v = st->d_out;
    svp_sched_euler_coef_t         coef;

    if (cfg) {
        /* the sample's own ramp: a manifest line may set its guidance */
        svp_sched_guidance_scales(p->min_guidance, p->max_guidance, (int)st->F,
                                  st->scales);
        SVP_TRY(svp_ops_sched_guidance(ops, (int)st->F, fr, st->scales, st->d_out,
                                       st->d_out + n, st->d_v));
        v = st->d_v;
    }
    svp_sched_euler_coef(st->sched, step, &coef);
    SVP_TRY(svp_ops_sched_euler(ops, n, &coef, v, x, x));
    if (s->on_device) {
        /* the ops' stream is not the one the frame is copied or sent from:
         * a download waits for it, so the latents are complete before the
         * pipeline hands the frame to UCX */
        return svp_ops_download(ops, &last, x + n - 1, 1);
    }
    return svp_ops_download(ops, s->tensors[SVD_T_LATENTS]->data, st->d_x, n);
}

static int svp_stage_svd_cfg(const svp_stage_svd_t *st, const svp_sample_t *s)
{
    return svp_sched_guidance_enabled(st->list->items[s->index].max_guidance);
}

static svp_status_t svp_stage_svd_step(void *self, svp_sample_t *s, int step)
{
    svp_stage_svd_t *st    = self;
    int              cfg   = svp_stage_svd_cfg(st, s);
    int              batch = cfg ? 2 : 1;

    SVP_TRY(svp_stage_svd_step_in(st, s, step, batch, 0, batch));
    SVP_TRY(svp_stage_svd_step_unet(st, s, step, 0, batch));
    return svp_stage_svd_step_out(st, s, step, cfg);
}

/* A pair's step (stage.h): this lane's half (without guidance, the one
 * prediction), out to the other lane; then the step with both. */
static svp_status_t svp_stage_svd_half(void *self, svp_sample_t *s, int step,
                                       int lane, void *out, size_t bytes)
{
    svp_stage_svd_t *st  = self;
    int              cfg = svp_stage_svd_cfg(st, s), b = cfg ? lane : 0;
    int64_t          n = st->F * 4 * st->h * st->w;

    if ((size_t)n * sizeof(float) != bytes) {
        svp_error("internal: a guidance half is %zu bytes, the pair's message %zu",
                  (size_t)n * sizeof(float), bytes);
        return SVP_ERR_INTERNAL;
    }
    SVP_TRY(svp_stage_svd_step_in(st, s, step, cfg ? 2 : 1, b, 1));
    SVP_TRY(svp_stage_svd_step_unet(st, s, step, b, 1));
    return svp_ops_download(st->ops, out, st->d_out + b * n, n);
}

static svp_status_t svp_stage_svd_merge(void *self, svp_sample_t *s, int step,
                                        int lane, const void *mine,
                                        const void *theirs, size_t bytes)
{
    svp_stage_svd_t *st  = self;
    int              cfg = svp_stage_svd_cfg(st, s);
    int64_t          n   = st->F * 4 * st->h * st->w;

    (void)mine;
    if ((size_t)n * sizeof(float) != bytes) {
        return SVP_ERR_INTERNAL;
    }
    if (cfg) {
        SVP_TRY(svp_ops_upload(st->ops, st->d_out + (1 - lane) * n, theirs, n));
    }
    return svp_stage_svd_step_out(st, s, step, cfg);
}

/* Latents, and frames as PNG and MP4 at most their raw size each. */
static uint64_t svp_stage_svd_output_bytes(void *self)
{
    svp_stage_svd_t *st  = self;
    uint64_t         lat = (uint64_t)(st->F * 4 * st->h * st->w) * 4;
    uint64_t         raw = (uint64_t)(st->F * 3 * st->H * st->W);

    return lat + 65536 + ((st->vae != NULL) ? 2 * raw : 0);
}

const svp_stage_ops_t svp_stage_svd_ops = {
    .name          = "svd",
    .alloc         = svp_stage_svd_alloc,
    .begin         = svp_stage_svd_begin,
    .step          = svp_stage_svd_step,
    .half          = svp_stage_svd_half,
    .merge         = svp_stage_svd_merge,
    .finish        = svp_stage_svd_finish,
    .share_bytes   = svp_stage_svd_share_bytes,
    .share         = svp_stage_svd_share,
    .finish_shared = svp_stage_svd_finish_shared,
    .check_output  = svp_stage_svd_check_output,
    .output_bytes  = svp_stage_svd_output_bytes,
    .set_task      = svp_stage_svd_set_task,
    .pack          = svp_stage_svd_pack,
    .destroy       = svp_stage_svd_destroy,
};
