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
 * Images: the sample list (pipe/samples.h) gives each sample its image, seed
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
 * Without `latents` the noise is drawn from (seed, sample) with the counter
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
 *   v     = UNet(input, t_k, [0, embeds], ids);  v = v_u + g_f (v_c - v_u)
 *   x     = Euler step (v-prediction) to sigma_{k+1}
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/stage.h"
#include "pipe/stage_svd_int.h"
#include "media/clip_preprocess.h"
#include "media/frames.h"
#include "media/image.h"
#include "media/preprocessor.h"
#include "media/resize.h"
#include "media/sample_dir.h"
#include "pipe/resume.h"
#include "pipe/samples.h"
#include "media/video.h"
#include "model/clip.h"
#include "model/unet.h"
#include "model/vae.h"
#include "ops/ops.h"
#include "ops/ops_module.h"
#include "ops/ops_sched.h"
#include "sched/euler.h"
#include "sched/guidance.h"
#include "sched/rng.h"
#include "tensor/safetensors.h"
#include "trace/range.h"
#include "ops/ops_profile.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

enum {
    SVD_T_LATENTS = 0, SVD_T_IMAGE_LATENTS, SVD_T_EMBEDS, SVD_T_IDS, SVD_T_SEED,
    SVD_T_TIMING, SVD_T_COUNT
};

typedef struct {
    const svp_spec_t *spec;
    svp_ops_h         ops;
    svp_unet_h        unet;
    svp_vae_h         vae;          /* NULL: no vae/ in the model folder */
    svp_clip_h        clip;         /* images only */
    svp_media_clip_params_t clip_params;  /* CLIP input size, mean, std */
    svp_sched_h       sched;
    svp_safetensors_h cond;         /* conditioning file, or NULL: images */
    int               sets;         /* S (file) */
    int               has_ids, has_latents;
    svp_pipe_samples_t *list;       /* each sample's image and parameters */
    int64_t           F, h, w, D, H, W;
    int               cfg;          /* classifier-free guidance on for some
                                       sample: the buffers take batch 2 */
    float            *in, *out, *ehs, *ids, *t, *v;  /* UNet work buffers */
    /*
     * The cuda backend (gpu set): the models take device buffers, and the
     * step runs on the device from the latents to the Euler update.  d_in,
     * d_out, d_v, d_ehs replace in, out, v, ehs; d_x, d_img, d_emb hold a
     * host sample's latents and conditioning while it is stepped; d_zero is
     * the unconditional half's zeros; scales the guidance per frame.
     */
    int               gpu;
    float            *d_in, *d_out, *d_v, *d_ehs, *d_x, *d_img, *d_emb, *d_zero;
    float            *scales;
} svp_stage_svd_t;

/* ---- the cuda backend ------------------------------------------------- */

/* A device buffer of n floats, holding a copy of host[0, n) unless NULL. */
static svp_status_t svp_stage_svd_dev_buf(svp_stage_svd_t *st, const float *host,
                                          int64_t n, float **buf_p)
{
    svp_status_t status = svp_ops_alloc(st->ops, (size_t)n, buf_p);

    if (status == SVP_OK && host != NULL) {
        status = svp_ops_upload(st->ops, *buf_p, host, (size_t)n);
    }
    return status;
}

/*
 * The model calls with host inputs and outputs (begin, finish): the same
 * call on the cpu backend, through device buffers of the handle on cuda.
 */
static svp_status_t svp_stage_svd_vae_encode(svp_stage_svd_t *st,
                                             const float *image, float *mean)
{
    int64_t      in = 3 * st->H * st->W, out = 4 * st->h * st->w;
    float       *d_image = NULL, *d_mean = NULL;
    svp_status_t status;

    if (!st->gpu) {
        return svp_vae_encode(st->vae, 1, (int)st->H, (int)st->W, image, mean,
                              NULL, NULL);
    }
    status = svp_stage_svd_dev_buf(st, image, in, &d_image);
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, out, &d_mean);
    }
    if (status == SVP_OK) {
        status = svp_vae_encode(st->vae, 1, (int)st->H, (int)st->W, d_image,
                                d_mean, NULL, NULL);
    }
    if (status == SVP_OK) {
        status = svp_ops_download(st->ops, mean, d_mean, (size_t)out);
    }
    svp_ops_free(st->ops, d_mean);
    svp_ops_free(st->ops, d_image);
    return status;
}

static svp_status_t svp_stage_svd_clip_encode(svp_stage_svd_t *st,
                                              const svp_tensor_t *pixels,
                                              float *embeds)
{
    float       *d_pixels = NULL, *d_embeds = NULL;
    svp_status_t status;

    if (!st->gpu) {
        return svp_clip_encode(st->clip, 1, pixels->data, embeds);
    }
    status = svp_stage_svd_dev_buf(st, pixels->data, svp_tensor_numel(pixels),
                                   &d_pixels);
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, st->D, &d_embeds);
    }
    if (status == SVP_OK) {
        status = svp_clip_encode(st->clip, 1, d_pixels, d_embeds);
    }
    if (status == SVP_OK) {
        status = svp_ops_download(st->ops, embeds, d_embeds, (size_t)st->D);
    }
    svp_ops_free(st->ops, d_embeds);
    svp_ops_free(st->ops, d_pixels);
    return status;
}

static svp_status_t svp_stage_svd_vae_decode(svp_stage_svd_t *st, int chunk,
                                             const float *latents, float *frames)
{
    int64_t      in = st->F * 4 * st->h * st->w, out = st->F * 3 * st->H * st->W;
    float       *d_latents = NULL, *d_frames = NULL;
    svp_status_t status;

    if (!st->gpu) {
        return svp_vae_decode(st->vae, (int)st->F, (int)st->h, (int)st->w, chunk,
                              latents, frames);
    }
    status = svp_stage_svd_dev_buf(st, latents, in, &d_latents);
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, out, &d_frames);
    }
    if (status == SVP_OK) {
        status = svp_vae_decode(st->vae, (int)st->F, (int)st->h, (int)st->w, chunk,
                                d_latents, d_frames);
    }
    if (status == SVP_OK) {
        status = svp_ops_download(st->ops, frames, d_frames, (size_t)out);
    }
    svp_ops_free(st->ops, d_frames);
    svp_ops_free(st->ops, d_latents);
    return status;
}

/* The step's device buffers and the guidance scales (cuda backend). */
static svp_status_t svp_stage_svd_dev_init(svp_stage_svd_t *st, int batch)
{
    int64_t      plane = st->h * st->w, fr = 4 * plane, n = st->F * fr;
    int64_t      nz = SVP_MAX(fr, st->D);
    float       *zeros;
    svp_status_t status;

    st->gpu    = 1;
    st->scales = malloc(st->F * sizeof(float));
    zeros      = calloc(nz, sizeof(float));
    if (st->scales == NULL || zeros == NULL) {
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

svp_status_t svp_stage_svd_use_ops_path(svp_stage_t *stage)
{
    svp_stage_svd_t *st = stage->self;

    return st->gpu ? SVP_OK : svp_stage_svd_dev_init(st, st->cfg ? 2 : 1);
}

static void svp_stage_svd_dev_cleanup(svp_stage_svd_t *st)
{
    if (!st->gpu) {
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
    free(st->scales);
}

#define SVD_DEV_TRY(_call) \
    do { \
        status = (_call); \
        if (status != SVP_OK) { \
            return status; \
        } \
    } while (0)

/*
 * One step on the device: the step of svp_stage_svd_step with the model
 * input, the guidance and the Euler update as ops (ops_sched.h, the CPU
 * scheduler's arithmetic).  A sample on the device (a device frame) is
 * updated in place and never leaves it but for its 3 time ids; a host
 * sample (one rank) goes up and comes back down around the step.
 */
static svp_status_t svp_stage_svd_step_dev(svp_stage_svd_t *st, svp_sample_t *s,
                                           int step)
{
    const svp_pipe_sample_params_t *p = &st->list->items[s->index];
    svp_ops_h              ops   = st->ops;
    int                    cfg   = svp_sched_guidance_enabled(p->max_guidance);
    int                    batch = cfg ? 2 : 1, b, f;
    int64_t                plane = st->h * st->w, fr = 4 * plane, n = st->F * fr;
    const float           *img, *emb, *v;
    float                 *x, ids[3], c_in, last;
    svp_sched_euler_coef_t coef;
    svp_status_t           status;

    if (s->on_device) {
        x   = s->tensors[SVD_T_LATENTS]->data;
        img = s->tensors[SVD_T_IMAGE_LATENTS]->data;
        emb = s->tensors[SVD_T_EMBEDS]->data;
        SVD_DEV_TRY(svp_ops_download(ops, ids, s->tensors[SVD_T_IDS]->data, 3));
    } else {
        x   = st->d_x;
        img = st->d_img;
        emb = st->d_emb;
        SVD_DEV_TRY(svp_ops_upload(ops, st->d_x, s->tensors[SVD_T_LATENTS]->data, n));
        SVD_DEV_TRY(svp_ops_upload(ops, st->d_img,
                                   s->tensors[SVD_T_IMAGE_LATENTS]->data, fr));
        SVD_DEV_TRY(svp_ops_upload(ops, st->d_emb, s->tensors[SVD_T_EMBEDS]->data,
                                   st->D));
        memcpy(ids, s->tensors[SVD_T_IDS]->data, sizeof(ids));
    }

    /* [B, F, 8, h, w]: scaled latents, then the image latents (zeros in the
     * unconditional half) */
    c_in = svp_sched_c_in(st->sched, step);
    for (b = 0; b < batch; ++b) {
        int cond = !cfg || b == 1;
        for (f = 0; f < st->F; ++f) {
            float *dst = st->d_in + ((int64_t)b * st->F + f) * 8 * plane;
            SVD_DEV_TRY(svp_ops_sched_scale(ops, fr, c_in, x + f * fr, dst));
            SVD_DEV_TRY(svp_ops_copy(ops, fr, cond ? img : st->d_zero, dst + fr));
        }
        st->t[b] = svp_sched_timesteps(st->sched)[step];
        memcpy(st->ids + 3 * b, ids, sizeof(ids));
        SVD_DEV_TRY(svp_ops_copy(ops, st->D, cond ? emb : st->d_zero,
                                 st->d_ehs + b * st->D));
    }
    svp_range_push_ctx("sample %d step %d", s->index, step);
    status = svp_unet_forward(st->unet, batch, (int)st->F, (int)st->h, (int)st->w,
                              st->d_in, st->t, st->d_ehs, 1, st->ids, st->d_out);
    svp_range_pop();
    if (status != SVP_OK) {
        return status;
    }
    v = st->d_out;
    if (cfg) {
        /* the sample's own ramp: a manifest line may set its guidance */
        svp_sched_guidance_scales(p->min_guidance, p->max_guidance, (int)st->F,
                                  st->scales);
        SVD_DEV_TRY(svp_ops_sched_guidance(ops, (int)st->F, fr, st->scales, st->d_out,
                                           st->d_out + n, st->d_v));
        v = st->d_v;
    }
    svp_sched_euler_coef(st->sched, step, &coef);
    SVD_DEV_TRY(svp_ops_sched_euler(ops, n, &coef, v, x, x));

    if (s->on_device) {
        /* the ops' stream is not the one the frame is copied or sent from:
         * a download waits for it, so the latents are complete before the
         * pipeline hands the frame to UCX */
        return svp_ops_download(ops, &last, x + n - 1, 1);
    }
    return svp_ops_download(ops, s->tensors[SVD_T_LATENTS]->data, st->d_x, n);
}


static svp_status_t svp_stage_svd_alloc(void *self, int index, svp_sample_t *s)
{
    svp_stage_svd_t *st = self;
    int64_t          shapes[SVD_T_COUNT][5] = {
        {1, st->F, 4, st->h, st->w}, {1, 4, st->h, st->w}, {1, 1, st->D}, {1, 3},
        {1}, {2}};
    static const int         ndims[SVD_T_COUNT]  = {5, 4, 3, 2, 1, 1};
    static const svp_dtype_t dtypes[SVD_T_COUNT] = {
        SVP_DTYPE_F32, SVP_DTYPE_F32, SVP_DTYPE_F32, SVP_DTYPE_F32, SVP_DTYPE_I64,
        SVP_DTYPE_F64};
    svp_status_t     status;
    int              i;

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

/* Row `set` of a [S, ...] tensor of the conditioning file into dst. */
static svp_status_t svp_stage_svd_row(svp_stage_svd_t *st, const char *name, int set,
                                      float *dst, int64_t n)
{
    svp_tensor_t *t;
    svp_status_t  status;

    status = svp_safetensors_load(st->cond, name, SVP_DTYPE_F32, &t);
    if (status != SVP_OK) {
        return status;
    }
    memcpy(dst, (float *)t->data + (int64_t)set * n, n * sizeof(float));
    svp_tensor_destroy(t);
    return SVP_OK;
}

/* The seed of sample i, from the sample list. */
static uint64_t svp_stage_svd_seed(const svp_stage_svd_t *st, int i)
{
    return st->list->items[i].seed;
}

/* VAE mode and CLIP embedding of the sample's image (the pipeline's encode). */
static svp_status_t svp_stage_svd_encode(svp_stage_svd_t *st, int index,
                                         uint64_t seed, svp_sample_t *s)
{
    const svp_pipe_sample_params_t *p = &st->list->items[index];
    const char             *path = svp_pipe_samples_image(st->list, index);
    svp_media_image_t      *img;
    svp_tensor_t           *px = NULL, *clip_in = NULL;
    float                  *noise = NULL;
    int64_t                 n = 3 * st->H * st->W, i;
    svp_status_t            status;

    status = svp_media_image_load(path, &img);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_media_vae_preprocess(img, (int)st->W, (int)st->H, &px);
    if (status != SVP_OK) {
        goto out;
    }
    noise = malloc(n * sizeof(float));
    if (noise == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    /* image + noise_aug_strength * randn, drawn from the sample's own stream */
    svp_rng_normal(seed, svp_rng_stream(index, SVP_RNG_NOISE_AUG), 0, n, noise);
    for (i = 0; i < n; ++i) {
        ((float *)px->data)[i] += (float)p->noise_aug_strength * noise[i];
    }
    status = svp_stage_svd_vae_encode(st, px->data,
                                      s->tensors[SVD_T_IMAGE_LATENTS]->data);
    if (status != SVP_OK) {
        goto out;
    }

    status = svp_media_clip_preprocess(img, &st->clip_params, NULL, &clip_in);
    if (status == SVP_OK) {
        status = svp_stage_svd_clip_encode(st, clip_in,
                                           s->tensors[SVD_T_EMBEDS]->data);
    }
out:
    free(noise);
    svp_tensor_destroy(px);
    svp_tensor_destroy(clip_in);
    svp_media_image_destroy(img);
    if (status != SVP_OK) {
        svp_error("encoding %s for sample %d failed: %s", path, index,
                  svp_status_string(status));
    }
    return status;
}

static svp_status_t svp_stage_svd_begin(void *self, int index, svp_sample_t *s)
{
    svp_stage_svd_t  *st   = self;
    const svp_pipe_sample_params_t *p = &st->list->items[index];
    int64_t           n    = st->F * 4 * st->h * st->w, i;
    uint64_t          seed = svp_stage_svd_seed(st, index);
    double            t0 = svp_clock_now(), *timing;
    float            *x, *ids, sigma0;
    svp_status_t      status = SVP_OK;
    int               set;

    status = svp_stage_svd_alloc(self, index, s);
    if (status != SVP_OK) {
        return status;
    }
    s->seed = seed;
    *(int64_t *)s->tensors[SVD_T_SEED]->data = (int64_t)seed;
    x   = s->tensors[SVD_T_LATENTS]->data;
    ids = s->tensors[SVD_T_IDS]->data;
    /* the pipeline conditions on fps - 1 */
    ids[0] = (float)(p->fps - 1);
    ids[1] = (float)p->motion_bucket_id;
    ids[2] = (float)p->noise_aug_strength;

    if (st->cond != NULL) {
        set = index % st->sets;
        if (st->has_latents) {
            status = svp_stage_svd_row(st, "latents", set, x, n);
        } else {
            svp_rng_normal(seed, svp_rng_stream(index, SVP_RNG_LATENTS), 0, n, x);
        }
        if (status == SVP_OK) {
            status = svp_stage_svd_row(st, "image_latents", set,
                                       s->tensors[SVD_T_IMAGE_LATENTS]->data,
                                       4 * st->h * st->w);
        }
        if (status == SVP_OK) {
            status = svp_stage_svd_row(st, "image_embeds", set,
                                       s->tensors[SVD_T_EMBEDS]->data, st->D);
        }
        if (status == SVP_OK && st->has_ids) {
            status = svp_stage_svd_row(st, "added_time_ids", set, ids, 3);
        }
    } else {
        svp_rng_normal(seed, svp_rng_stream(index, SVP_RNG_LATENTS), 0, n, x);
        svp_range_push_ctx("sample %d encode", index);
        status = svp_stage_svd_encode(st, index, seed, s);
        svp_range_pop();
    }
    if (status != SVP_OK) {
        svp_sample_cleanup(s);
        return status;
    }
    sigma0 = svp_sched_init_noise_sigma(st->sched);
    for (i = 0; i < n; ++i) {
        x[i] *= sigma0;
    }
    timing    = s->tensors[SVD_T_TIMING]->data;
    timing[0] = svp_clock_wall();
    timing[1] = svp_clock_now() - t0;
    s->next_step = 0;
    return SVP_OK;
}

static svp_status_t svp_stage_svd_step(void *self, svp_sample_t *s, int step)
{
    svp_stage_svd_t *st    = self;
    const svp_pipe_sample_params_t *p = &st->list->items[s->index];
    int              cfg   = svp_sched_guidance_enabled(p->max_guidance);
    int              batch = cfg ? 2 : 1, b, f;
    int64_t          plane = st->h * st->w, fr = 4 * plane, n = st->F * fr;
    float           *x     = s->tensors[SVD_T_LATENTS]->data;
    const float     *img   = s->tensors[SVD_T_IMAGE_LATENTS]->data;
    const float     *emb   = s->tensors[SVD_T_EMBEDS]->data;
    const float     *ids   = s->tensors[SVD_T_IDS]->data;
    svp_status_t     status;

    if (st->gpu) {
        return svp_stage_svd_step_dev(st, s, step);
    }
    /* the 8-channel input [B, F, 8, h, w]: scaled latents, then the image
     * latents (zeros in the unconditional half) */
    for (b = 0; b < batch; ++b) {
        int cond = !cfg || b == 1;
        for (f = 0; f < st->F; ++f) {
            float *dst = st->in + ((int64_t)b * st->F + f) * 8 * plane;
            svp_sched_scale_model_input(st->sched, step, x + f * fr, dst, fr);
            if (cond) {
                memcpy(dst + fr, img, fr * sizeof(float));
            } else {
                memset(dst + fr, 0, fr * sizeof(float));
            }
        }
        st->t[b] = svp_sched_timesteps(st->sched)[step];
        memcpy(st->ids + 3 * b, ids, 3 * sizeof(float));
        if (cond) {
            memcpy(st->ehs + b * st->D, emb, st->D * sizeof(float));
        } else {
            memset(st->ehs + b * st->D, 0, st->D * sizeof(float));
        }
    }
    svp_range_push_ctx("sample %d step %d", s->index, step);
    status = svp_unet_forward(st->unet, batch, (int)st->F, (int)st->h, (int)st->w,
                              st->in, st->t, st->ehs, 1, st->ids, st->out);
    svp_range_pop();
    if (status != SVP_OK) {
        return status;
    }
    if (cfg) {
        status = svp_sched_guidance_apply(st->out, st->out + n, 1, (int)st->F, fr,
                                          p->min_guidance, p->max_guidance, st->v);
        if (status != SVP_OK) {
            return status;
        }
    } else {
        memcpy(st->v, st->out, n * sizeof(float));
    }
    svp_sched_step(st->sched, step, st->v, x, x, NULL, n);
    return SVP_OK;
}

static void svp_stage_svd_json_str(FILE *f, const char *key, const char *val, int last)
{
    fprintf(f, "  \"%s\": \"", key);
    for (; *val != '\0'; ++val) {
        if (*val == '"' || *val == '\\') {
            fprintf(f, "\\%c", *val);
        } else if ((unsigned char)*val < 0x20) {
            fprintf(f, "\\u%04x", (unsigned char)*val);
        } else {
            fputc(*val, f);
        }
    }
    fprintf(f, "\"%s\n", last ? "" : ",");
}

/* sample.json: what a person needs to know what this video is. */
static svp_status_t svp_stage_svd_write_json(svp_stage_svd_t *st, const svp_sample_t *s,
                                             const char *dir, double decode_s)
{
    const svp_spec_t *spec   = st->spec;
    const svp_pipe_sample_params_t *p = &st->list->items[s->index];
    const double     *timing = s->tensors[SVD_T_TIMING]->data;
    char              path[4096], *buf = NULL, *params;
    size_t            len = 0;
    FILE             *f;
    svp_status_t      status;

    f = open_memstream(&buf, &len);
    if (f == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    fprintf(f, "{\n");
    svp_stage_svd_json_str(f, "job", spec->name, 0);
    fprintf(f, "  \"sample\": %d,\n", s->index);
    if (st->cond != NULL) {
        svp_stage_svd_json_str(f, "conditioning", spec->model.conditioning, 0);
    } else {
        svp_stage_svd_json_str(f, "image", svp_pipe_samples_image(st->list, s->index),
                               0);
    }
    fprintf(f, "  \"seed\": %" PRId64 ",\n", *(int64_t *)s->tensors[SVD_T_SEED]->data);
    fprintf(f, "  \"steps\": %d,\n  \"num_frames\": %lld,\n", spec->steps,
            (long long)st->F);
    fprintf(f, "  \"width\": %lld,\n  \"height\": %lld,\n", (long long)st->W,
            (long long)st->H);
    fprintf(f, "  \"fps\": %d,\n  \"motion_bucket_id\": %d,\n", p->fps,
            p->motion_bucket_id);
    fprintf(f, "  \"noise_aug_strength\": %.9g,\n", p->noise_aug_strength);
    fprintf(f, "  \"min_guidance\": %.9g,\n  \"max_guidance\": %.9g,\n",
            p->min_guidance, p->max_guidance);
    /* the sample's own parameters in one object (its manifest line, if
     * any): what resume compares, whichever keys sit beside it */
    params = svp_pipe_samples_params_json(st->list, s->index);
    if (params == NULL) {
        fclose(f);
        free(buf);
        return SVP_ERR_NO_MEMORY;
    }
    fprintf(f, "  \"params\": %s,\n", params);
    free(params);
    fprintf(f, "  \"decode_chunk_size\": %d,\n", spec->video.decode_chunk_size);
    svp_stage_svd_json_str(f, "device", svp_ops_backend(st->ops), 0);
    svp_stage_svd_json_str(f, "dtype", svp_ops_dtype(st->ops), 0);
    {
        /* the CPU's BLAS kernels and threads, which decide its last bits */
        svp_ops_blas_t blas;

        svp_ops_blas_query(&blas);
        fprintf(f, "  \"cpu\": {\"blas\": \"%s\", \"kernels\": \"%s\", "
                   "\"forced_by\": ", blas.library, blas.kernels);
        if (blas.forced[0] != '\0') {
            fprintf(f, "\"OPENBLAS_CORETYPE=%s\"", blas.forced);
        } else {
            fprintf(f, "null");
        }
        fprintf(f, ", \"threads\": %d},\n", svp_ops_threads(st->ops));
    }
    fprintf(f, "  \"timings\": {\"encode_s\": %.3f, \"decode_s\": %.3f, "
               "\"end_to_end_s\": %.3f}\n}\n",
            timing[1], decode_s, svp_clock_wall() - timing[0]);
    fclose(f);
    snprintf(path, sizeof(path), "%s/sample.json", dir);
    status = svp_file_write_atomic(path, buf, len);
    free(buf);
    return status;
}

static svp_status_t svp_stage_svd_finish(void *self, svp_sample_t *s)
{
    svp_stage_svd_t         *st   = self;
    const svp_spec_t        *spec = st->spec;
    svp_media_sample_dir_h   dir;
    svp_media_frames_t      *frames = NULL;
    svp_media_video_params_t vp;
    float                   *lat = NULL, *dec = NULL, inv;
    int64_t                  n = st->F * 4 * st->h * st->w, i, m;
    char                     path[4096], file[4200], name[256];
    double                   t0, decode_s = 0;
    svp_status_t             status;

    status = svp_mkdir_p(spec->output.dir, 0755);
    if (status != SVP_OK) {
        return status;
    }
    svp_pipe_samples_name(st->list, s->index, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", spec->output.dir, name);
    status = svp_media_sample_dir_begin(path, &dir);
    if (status != SVP_OK) {
        return status;
    }
    snprintf(file, sizeof(file), "%s/latents.safetensors", svp_media_sample_dir_path(dir));
    /* the seed travels in the message; this rank may not be where it began */
    s->seed = (uint64_t)*(int64_t *)s->tensors[SVD_T_SEED]->data;
    status  = svp_sample_write_tensor(spec, s, "latents", s->tensors[SVD_T_LATENTS],
                                      "svd", NULL, file);

    if (status == SVP_OK && st->vae != NULL) {
        t0  = svp_clock_now();
        m   = st->F * 3 * st->H * st->W;
        lat = malloc(n * sizeof(float));
        dec = malloc(m * sizeof(float));
        if (lat == NULL || dec == NULL) {
            status = SVP_ERR_NO_MEMORY;
            goto out;
        }
        /* the reciprocal in double, the product in float (as diffusers does:
         * dividing instead moves the frames by about 1e-6) */
        inv = (float)(1.0 / svp_vae_config(st->vae)->scaling_factor);
        for (i = 0; i < n; ++i) {
            lat[i] = ((float *)s->tensors[SVD_T_LATENTS]->data)[i] * inv;
        }
        svp_range_push_ctx("sample %d decode", s->index);
        status = svp_stage_svd_vae_decode(st, spec->video.decode_chunk_size, lat,
                                          dec);
        svp_range_pop();
        if (status != SVP_OK) {
            goto out;
        }
        for (i = 0; i < m; ++i) {
            dec[i] = dec[i] / 2.0f + 0.5f;   /* clamped to [0, 1] below */
        }
        decode_s = svp_clock_now() - t0;
        status   = svp_media_frames_from_f32(dec, (int)st->F, (int)st->H, (int)st->W,
                                             &frames);
        if (status == SVP_OK && spec->output.frames) {
            status = svp_media_frames_write_png(frames, svp_media_sample_dir_path(dir));
        }
#ifdef HAVE_FFMPEG
        if (status == SVP_OK && spec->output.mp4) {
            svp_media_video_params_init(&vp);
            vp.fps = st->list->items[s->index].fps;
            snprintf(file, sizeof(file), "%s/video.mp4", svp_media_sample_dir_path(dir));
            status = svp_media_video_write_mp4(file, frames, &vp);
        }
#else
        (void)vp;
#endif
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_write_json(st, s, svp_media_sample_dir_path(dir),
                                          decode_s);
    }
out:
    free(lat);
    free(dec);
    svp_media_frames_destroy(frames);
    if (status == SVP_OK) {
        status = svp_media_sample_dir_commit(dir);
        if (status == SVP_OK) {
            svp_debug("sample %d: wrote %s (decode %.2fs)", s->index, path, decode_s);
        }
    } else {
        svp_media_sample_dir_abort(dir);
    }
    return status;
}

static void svp_stage_svd_destroy(void *self)
{
    svp_stage_svd_t *st = self;

    svp_stage_svd_dev_cleanup(st);
    free(st->in);
    free(st->out);
    free(st->ehs);
    free(st->ids);
    free(st->t);
    free(st->v);
    svp_pipe_samples_destroy(st->list);
    if (st->cond != NULL) {
        svp_safetensors_close(st->cond);
    }
    svp_sched_destroy(st->sched);
    svp_clip_destroy(st->clip);
    svp_vae_destroy(st->vae);
    svp_unet_destroy(st->unet);
    if (st->ops != NULL && st->spec->log.profile) {
        svp_range_profile_enable(0, NULL, NULL);
        svp_ops_profile_disable(st->ops);
    }
    svp_ops_destroy(st->ops);
    free(st);
}

/*
 * Resume: sample_NNNNNN/ is complete (it was renamed into place whole), its
 * sample.json names this job's parameters, its latents file opens with this
 * job's metadata, and the frames and video this job writes are there.
 */
static svp_status_t svp_stage_svd_check_output(void *self, int index, char *why,
                                               size_t len)
{
    svp_stage_svd_t  *st   = self;
    const svp_spec_t *spec = st->spec;
    const svp_pipe_sample_params_t *p = &st->list->items[index];
    struct {
        const char *key;
        double      want;
    } nums[] = {
        {"sample", index},
        {"seed", (double)svp_stage_svd_seed(st, index)},
        {"steps", spec->steps},
        {"num_frames", (double)st->F},
        {"width", (double)st->W},
        {"height", (double)st->H},
        {"fps", p->fps},
        {"motion_bucket_id", p->motion_bucket_id},
        {"noise_aug_strength", p->noise_aug_strength},
        {"min_guidance", p->min_guidance},
        {"max_guidance", p->max_guidance},
        {"decode_chunk_size", spec->video.decode_chunk_size},
    };
    const char   *skey, *swant, *sgot;
    char          dir[4096], path[4200], txt[64], name[256], *want, *got;
    int64_t       shape[5] = {1, st->F, 4, st->h, st->w};
    json_error_t  jerr;
    json_t       *root, *v;
    struct stat   sb;
    svp_status_t  status = SVP_OK;
    size_t        i;
    int64_t       f;

    svp_pipe_samples_name(st->list, index, name, sizeof(name));
    snprintf(dir, sizeof(dir), "%s/%s", spec->output.dir, name);
    if (stat(dir, &sb) != 0) {
        return SVP_ERR_NOT_FOUND;
    }
    snprintf(path, sizeof(path), "%s/sample.json", dir);
    root = json_load_file(path, 0, &jerr);
    if (root == NULL) {
        snprintf(why, len, "%s does not read: %s", path, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    skey  = (st->cond != NULL) ? "conditioning" : "image";
    swant = (st->cond != NULL) ? spec->model.conditioning :
                                 svp_pipe_samples_image(st->list, index);
    sgot  = json_string_value(json_object_get(root, "job"));
    if (sgot == NULL || strcmp(sgot, spec->name) != 0) {
        snprintf(why, len, "%s was made with job=%s, this job has job=%s", path,
                 sgot ? sgot : "(none)", spec->name);
        status = SVP_ERR_SPEC;
        goto out;
    }
    sgot = json_string_value(json_object_get(root, skey));
    if (sgot == NULL || strcmp(sgot, swant) != 0) {
        snprintf(why, len, "%s was made with %s=%s, this job has %s=%s", path, skey,
                 sgot ? sgot : "(none)", skey, swant);
        status = SVP_ERR_SPEC;
        goto out;
    }
    for (i = 0; i < sizeof(nums) / sizeof(nums[0]); ++i) {
        /* sample.json holds doubles as %.9g: compare in that form */
        v = json_object_get(root, nums[i].key);
        snprintf(txt, sizeof(txt), "%.9g", nums[i].want);
        if (!json_is_number(v) || json_number_value(v) != strtod(txt, NULL)) {
            snprintf(why, len, "%s was made with %s=%.9g, this job has %s=%s", path,
                     nums[i].key, json_is_number(v) ? json_number_value(v) : -1.0,
                     nums[i].key, txt);
            status = SVP_ERR_SPEC;
            goto out;
        }
    }
    /* the sample's own parameters, as a manifest line gave them; a sample
     * made before they were recorded (0.3) is judged by the keys above */
    want = svp_pipe_samples_params_json(st->list, index);
    v    = json_object_get(root, "params");
    got  = (v != NULL) ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS |
                                       JSON_REAL_PRECISION(9))
                       : (want != NULL) ? svp_strdup(want) : NULL;
    if (want == NULL || got == NULL || strcmp(want, got) != 0) {
        snprintf(why, len, "%s was made with params %s, this job has %s", path,
                 got ? got : "(none)", want ? want : "(none)");
        free(want);
        free(got);
        status = SVP_ERR_SPEC;
        goto out;
    }
    free(want);
    free(got);
    snprintf(path, sizeof(path), "%s/latents.safetensors", dir);
    status = svp_pipe_resume_check_tensor(spec, path, "latents", "svd", index,
                                          svp_stage_svd_seed(st, index), 5, shape,
                                          why, len);
    if (status == SVP_ERR_NOT_FOUND) {
        snprintf(why, len, "%s is missing", path);
        status = SVP_ERR_BAD_FILE;
    }
    if (status != SVP_OK || st->vae == NULL) {
        goto out;
    }
    for (f = 0; spec->output.frames && f < st->F; ++f) {
        snprintf(path, sizeof(path), "%s/frame_%04d.png", dir, (int)f);
        if (stat(path, &sb) != 0) {
            snprintf(why, len, "%s is missing", path);
            status = SVP_ERR_BAD_FILE;
            goto out;
        }
    }
#ifdef HAVE_FFMPEG
    snprintf(path, sizeof(path), "%s/video.mp4", dir);
    if (spec->output.mp4 && stat(path, &sb) != 0) {
        snprintf(why, len, "%s is missing", path);
        status = SVP_ERR_BAD_FILE;
    }
#endif
out:
    json_decref(root);
    return status;
}

/* Latents, and frames as PNG and MP4 at most their raw size each. */
static uint64_t svp_stage_svd_output_bytes(void *self)
{
    svp_stage_svd_t *st  = self;
    uint64_t         lat = (uint64_t)(st->F * 4 * st->h * st->w) * 4;
    uint64_t         raw = (uint64_t)(st->F * 3 * st->H * st->W);

    return lat + 65536 + ((st->vae != NULL) ? 2 * raw : 0);
}

static const svp_stage_ops_t svp_stage_svd_ops = {
    .name    = "svd",
    .alloc   = svp_stage_svd_alloc,
    .begin   = svp_stage_svd_begin,
    .step    = svp_stage_svd_step,
    .finish  = svp_stage_svd_finish,
    .check_output = svp_stage_svd_check_output,
    .output_bytes = svp_stage_svd_output_bytes,
    .destroy = svp_stage_svd_destroy,
};

/* Checks a conditioning tensor's shape; the error names file and tensor. */
static svp_status_t svp_stage_svd_expect(svp_stage_svd_t *st, const char *name,
                                         int ndim, const int64_t *shape,
                                         int optional, int *present_p)
{
    svp_safetensors_info_t info;
    char                   want[96], got[96];
    int                    i, ok;

    if (svp_safetensors_find(st->cond, name, &info) != SVP_OK) {
        if (optional) {
            *present_p = 0;
            return SVP_OK;
        }
        svp_error("%s: no tensor '%s' (the conditioning needs image_latents "
                  "[S,4,h,w] and image_embeds [S,D])",
                  svp_safetensors_path(st->cond), name);
        return SVP_ERR_BAD_FILE;
    }
    ok = (info.ndim == ndim);
    for (i = 0; ok && i < ndim; ++i) {
        ok = (shape[i] < 0) || (shape[i] == info.shape[i]);
    }
    if (!ok) {
        svp_shape_str(ndim, shape, want, sizeof(want));
        svp_shape_str(info.ndim, info.shape, got, sizeof(got));
        svp_error("%s: tensor '%s': expected shape %s (-1: any), found %s",
                  svp_safetensors_path(st->cond), name, want, got);
        return SVP_ERR_SHAPE;
    }
    if (present_p != NULL) {
        *present_p = 1;
    }
    return SVP_OK;
}

static svp_status_t svp_stage_svd_open_conditioning(svp_stage_svd_t *st)
{
    const svp_spec_t      *spec = st->spec;
    svp_safetensors_info_t info;
    int64_t                shape[5];
    svp_status_t           status;

    status = svp_safetensors_open(spec->model.conditioning, &st->cond);
    if (status != SVP_OK) {
        return status;
    }
    /* h, w come from the file: the latent scale is the VAE's (2^(levels-1):
     * 8 for SVD), which the conditioning already reflects */
    shape[0] = -1; shape[1] = 4; shape[2] = -1; shape[3] = -1;
    status = svp_stage_svd_expect(st, "image_latents", 4, shape, 0, NULL);
    if (status != SVP_OK) {
        return status;
    }
    svp_safetensors_find(st->cond, "image_latents", &info);
    st->sets = (int)info.shape[0];
    st->h    = info.shape[2];
    st->w    = info.shape[3];
    shape[0] = st->sets; shape[1] = -1;
    status = svp_stage_svd_expect(st, "image_embeds", 2, shape, 0, NULL);
    if (status != SVP_OK) {
        return status;
    }
    svp_safetensors_find(st->cond, "image_embeds", &info);
    st->D    = info.shape[1];
    shape[1] = 3;
    status = svp_stage_svd_expect(st, "added_time_ids", 2, shape, 1, &st->has_ids);
    if (status != SVP_OK) {
        return status;
    }
    shape[1] = st->F; shape[2] = 4; shape[3] = st->h; shape[4] = st->w;
    return svp_stage_svd_expect(st, "latents", 5, shape, 1, &st->has_latents);
}

/*
 * The samples (pipe/samples.h) and their images.  Every image is decoded once
 * here, so a missing, truncated or non-image file stops the job before any
 * rank starts work.
 */
static svp_status_t svp_stage_svd_collect_images(svp_stage_svd_t *st)
{
    const svp_spec_t  *spec = st->spec;
    svp_media_image_t *img;
    char               err[1024];
    int                i;
    svp_status_t       status;

    status = svp_pipe_samples_create(spec, err, sizeof(err), &st->list);
    if (status != SVP_OK) {
        svp_error("%s", err);
        return status;
    }
    for (i = 0; i < st->list->nimages; ++i) {
        status = svp_media_image_load(st->list->images[i], &img);
        if (status != SVP_OK) {
            svp_error("%s: %s: %s is not a usable image", spec->file,
                      (st->list->manifest != NULL) ? "video.manifest" : "video.inputs",
                      st->list->images[i]);
            return status;
        }
        svp_media_image_destroy(img);
    }
    return SVP_OK;
}

static svp_status_t svp_stage_svd_model_part(const svp_spec_t *spec, const char *part,
                                             char *path, size_t len)
{
    struct stat sb;

    snprintf(path, len, "%s/%s", spec->model.path, part);
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        return SVP_ERR_NOT_FOUND;
    }
    return SVP_OK;
}

svp_status_t svp_stage_svd_create(const svp_spec_t *spec, svp_stage_t *stage_p)
{
    svp_stage_svd_t   *st;
    svp_sched_config_t sc;
    svp_ops_params_t   op = {0};
    const svp_ops_module_t *module;
    const svp_devmem_t *devmem = NULL;
    char               path[4096];
    struct stat        sb;
    int                lh, lw, batch, i;
    svp_status_t       status;

    if (spec->model.conditioning[0] == '\0' && spec->video.inputs.count == 0 &&
        spec->video.manifest[0] == '\0') {
        svp_error("%s: model.kind svd needs images (video.inputs or video.manifest) "
                  "or a conditioning file (model.conditioning)", spec->file);
        return SVP_ERR_SPEC;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    st->spec = spec;
    st->F    = spec->video.num_frames;
    st->H    = spec->video.height;
    st->W    = spec->video.width;

    /* the list first: the conditioning file's samples are in it too */
    status = svp_stage_svd_collect_images(st);
    if (status == SVP_OK && spec->model.conditioning[0] != '\0') {
        status = svp_stage_svd_open_conditioning(st);
    }
    if (status != SVP_OK) {
        goto err;
    }
    for (i = 0; i < st->list->count && !st->cfg; ++i) {
        st->cfg = svp_sched_guidance_enabled(st->list->items[i].max_guidance);
    }

    /* the folder itself first: a missing one is named as such, not as a
     * missing part */
    if (stat(spec->model.path, &sb) != 0) {
        svp_error("%s: model.path: cannot open %s: %m", spec->file,
                  spec->model.path);
        status = SVP_ERR_NOT_FOUND;
        goto err;
    }
    if (!S_ISDIR(sb.st_mode)) {
        svp_error("%s: model.path: %s is not a folder (expected a diffusers "
                  "SVD folder: unet/, vae/, image_encoder/, ...)", spec->file,
                  spec->model.path);
        status = SVP_ERR_NOT_FOUND;
        goto err;
    }
    if (svp_stage_svd_model_part(spec, "scheduler", path, sizeof(path)) == SVP_OK) {
        strncat(path, "/scheduler_config.json", sizeof(path) - strlen(path) - 1);
        status = svp_sched_config_load(path, &sc);
        if (status != SVP_OK) {
            goto err;
        }
    } else {
        svp_sched_config_default(&sc);
        svp_info("%s has no scheduler/: using SVD's scheduler settings",
                 spec->model.path);
    }
    status = svp_sched_create(&sc, spec->steps, &st->sched);
    if (status != SVP_OK) {
        goto err;
    }
    op.backend = (spec->device == SVP_DEVICE_CUDA) ? "cuda" : "cpu";
    op.dtype   = svp_spec_dtype_name(spec->dtype);
    status     = svp_ops_create(&op, &st->ops);
    if (status != SVP_OK) {
        svp_error("%s: dtype %s on device %s: %s", spec->file, op.dtype,
                  op.backend, svp_status_string(status));
        goto err;
    }
    if (svp_ops_product_dtype(st->ops) != SVP_DTYPE_F32) {
        svp_info("svd stage: weights in %s, products in %s on tensor cores "
                 "with fp32 accumulation, activations in f32, on the %s "
                 "backend (%d threads from %s)", svp_ops_dtype(st->ops),
                 svp_ops_dtype(st->ops), svp_ops_backend(st->ops),
                 svp_ops_threads(st->ops), svp_ops_threads_from(st->ops));
    } else {
        svp_info("svd stage: weights in %s, products and activations in f32, "
                 "on the %s backend (%d threads from %s)", svp_ops_dtype(st->ops),
                 svp_ops_backend(st->ops), svp_ops_threads(st->ops),
                 svp_ops_threads_from(st->ops));
    }
    if (spec->log.profile) {
        /* log.profile: every block and op timed; svdworker writes it out */
        status = svp_ops_profile_enable(st->ops);
        if (status != SVP_OK) {
            goto err;
        }
        svp_range_profile_enable(1, svp_ops_profile_sync, st->ops);
    }
    snprintf(path, sizeof(path), "%s/unet", spec->model.path);
    status = svp_unet_create(st->ops, path, NULL, &st->unet);
    if (status != SVP_OK) {
        goto err;
    }
    svp_info("svd stage: UNet matrix weights %.1f MiB in %s",
             svp_ops_weights_bytes(st->ops) / 1048576.0, svp_ops_dtype(st->ops));
    if (svp_stage_svd_model_part(spec, "vae", path, sizeof(path)) == SVP_OK) {
        status = svp_vae_create(st->ops, path, NULL, &st->vae);
        if (status != SVP_OK) {
            goto err;
        }
    } else if (st->cond == NULL) {
        svp_error("%s: no vae/ folder: images cannot be encoded", spec->model.path);
        status = SVP_ERR_NOT_FOUND;
        goto err;
    } else {
        svp_warn("%s has no vae/: samples are written as latents only",
                 spec->model.path);
    }
    if (st->cond == NULL) {
        if (svp_stage_svd_model_part(spec, "image_encoder", path, sizeof(path)) !=
            SVP_OK) {
            svp_error("%s: no image_encoder/ folder: images cannot be encoded",
                      spec->model.path);
            status = SVP_ERR_NOT_FOUND;
            goto err;
        }
        status = svp_clip_create(st->ops, path, NULL, &st->clip);
        if (status != SVP_OK) {
            goto err;
        }
        /* mean, std and size from the checkpoint's feature extractor when it
         * has one; else SVD's values at the encoder's own image size */
        snprintf(path, sizeof(path), "%s/feature_extractor/preprocessor_config.json",
                 spec->model.path);
        status = svp_media_clip_params_load(path, &st->clip_params);
        if (status == SVP_ERR_NOT_FOUND) {
            svp_media_clip_params_init(&st->clip_params);
            st->clip_params.height = st->clip_params.width =
                svp_clip_config(st->clip)->image_size;
            status = SVP_OK;
        }
        if (status != SVP_OK) {
            goto err;
        }
        if (st->clip_params.height != svp_clip_config(st->clip)->image_size ||
            st->clip_params.width != svp_clip_config(st->clip)->image_size) {
            svp_error("%s: the feature extractor makes %dx%d images, the image "
                      "encoder takes %dx%d", path, st->clip_params.width,
                      st->clip_params.height, svp_clip_config(st->clip)->image_size,
                      svp_clip_config(st->clip)->image_size);
            status = SVP_ERR_BAD_FILE;
            goto err;
        }
        svp_vae_latent_size(svp_vae_config(st->vae), (int)st->H, (int)st->W, &lh, &lw);
        st->h = lh;
        st->w = lw;
        st->D = svp_clip_config(st->clip)->projection_dim;
    }
    if (svp_unet_config(st->unet)->cross_dim[0] != st->D) {
        svp_error("%s: the image embedding has %lld values, the UNet's "
                  "cross_attention_dim is %d", spec->model.path, (long long)st->D,
                  svp_unet_config(st->unet)->cross_dim[0]);
        status = SVP_ERR_SHAPE;
        goto err;
    }

    batch   = st->cfg ? 2 : 1;
    st->ids = malloc(batch * 3 * sizeof(float));
    st->t   = malloc(batch * sizeof(float));
    if (!st->ids || !st->t) {
        status = SVP_ERR_NO_MEMORY;
        goto err;
    }
    if (spec->device == SVP_DEVICE_CUDA) {
        /* the step's buffers on the device, and the device memory services
         * that let the pipeline keep a sample's frame there */
        status = svp_stage_svd_dev_init(st, batch);
        if (status == SVP_OK) {
            status = svp_ops_module_load("cuda", &module);
        }
        if (status != SVP_OK) {
            goto err;
        }
        devmem = module->devmem;
    } else {
        st->in  = malloc(batch * st->F * 8 * st->h * st->w * sizeof(float));
        st->out = malloc(batch * st->F * 4 * st->h * st->w * sizeof(float));
        st->v   = malloc(st->F * 4 * st->h * st->w * sizeof(float));
        st->ehs = malloc(batch * st->D * sizeof(float));
        if (!st->in || !st->out || !st->v || !st->ehs) {
            status = SVP_ERR_NO_MEMORY;
            goto err;
        }
    }
    if (st->cond != NULL) {
        svp_info("svd stage: %lld frames, latents %lldx%lld, %d conditioning set(s) "
                 "from %s, guidance %s (%g..%g)", (long long)st->F, (long long)st->h,
                 (long long)st->w, st->sets, spec->model.conditioning,
                 st->cfg ? "on" : "off", spec->video.min_guidance,
                 spec->video.max_guidance);
    } else {
        svp_info("svd stage: %lld frames of %lldx%lld from %d image(s), latents "
                 "%lldx%lld, guidance %s (%g..%g)", (long long)st->F,
                 (long long)st->W, (long long)st->H, st->list->nimages, (long long)st->h,
                 (long long)st->w, st->cfg ? "on" : "off", spec->video.min_guidance,
                 spec->video.max_guidance);
    }
    stage_p->ops    = &svp_stage_svd_ops;
    stage_p->self   = st;
    stage_p->devmem = devmem;
    return SVP_OK;

err:
    svp_stage_svd_destroy(st);
    return status;
}
