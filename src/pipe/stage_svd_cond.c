/*
 * The SVD stage's begin (stage_svd_int.h): where a sample enters.  Its
 * conditioning comes from a row of the conditioning file, or from its image
 * (VAE encode of the noise-augmented image, CLIP embedding of the original,
 * as diffusers does; stage_svd.c has the formulas), and its initial noise
 * from the file or from the sample's own seed with the counter RNG.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "stages/stage_svd_int.h"
#include "media/image.h"
#include "media/preprocessor.h"
#include "media/resize.h"
#include "noise/rng.h"
#include "trace/range.h"
#include "common/clock.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

/*
 * The model calls with host inputs and outputs: through buffers of the ops
 * handle on every backend (device memory on cuda, host memory on cpu).
 */
static svp_status_t svp_stage_svd_vae_encode(svp_stage_svd_t *st, const float *image,
                                             float *mean)
{
    int64_t      in = 3 * st->H * st->W, out = 4 * st->h * st->w;
    float       *d_image = NULL, *d_mean = NULL;
    svp_status_t status;

    status = svp_stage_svd_dev_buf(st, image, in, &d_image);
    if (status == SVP_OK) {
        status = svp_stage_svd_dev_buf(st, NULL, out, &d_mean);
    }
    if (status == SVP_OK) {
        status = svp_vae_encode(st->vae, 1, (int)st->H, (int)st->W, d_image, d_mean,
                                NULL, NULL);
    }
    if (status == SVP_OK) {
        status = svp_ops_download(st->ops, mean, d_mean, (size_t)out);
    }
    svp_ops_free(st->ops, d_mean);
    svp_ops_free(st->ops, d_image);
    return status;
}

static svp_status_t svp_stage_svd_clip_encode(svp_stage_svd_t    *st,
                                              const svp_tensor_t *pixels,
                                              float              *embeds)
{
    float       *d_pixels = NULL, *d_embeds = NULL;
    svp_status_t status;

    status =
        svp_stage_svd_dev_buf(st, pixels->data, svp_tensor_numel(pixels), &d_pixels);
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

/* VAE mode and CLIP embedding of the sample's image (the pipeline's encode). */
static svp_status_t svp_stage_svd_encode(svp_stage_svd_t *st, int index,
                                         uint64_t seed, svp_sample_t *s)
{
    const svp_job_sample_params_t *p    = &st->list->items[index];
    const char                    *path = svp_job_samples_image(st->list, index);
    svp_media_image_t             *img;
    svp_tensor_t                  *px = NULL, *clip_in = NULL;
    float                         *noise = NULL;
    int64_t                        n     = 3 * st->H * st->W, i;
    svp_status_t                   status;

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
    svp_rng_normal(seed, svp_rng_stream(SVP_RNG_NOISE_AUG), 0, n, noise);
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
        status =
            svp_stage_svd_clip_encode(st, clip_in, s->tensors[SVD_T_EMBEDS]->data);
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

svp_status_t svp_stage_svd_begin(void *self, int index, svp_sample_t *s)
{
    svp_stage_svd_t               *st   = self;
    const svp_job_sample_params_t *p    = &st->list->items[index];
    int64_t                        n    = st->F * 4 * st->h * st->w, i;
    uint64_t                       seed = svp_stage_svd_seed(st, index);
    double                         t0   = svp_clock_now(), *timing;
    float                         *x, *ids, sigma0;
    svp_status_t                   status = SVP_OK;
    int                            set;

    status = svp_stage_svd_alloc(self, index, s);
    if (status != SVP_OK) {
        return status;
    }
    s->seed                                  = seed;
    *(int64_t *)s->tensors[SVD_T_SEED]->data = (int64_t)seed;
    x                                        = s->tensors[SVD_T_LATENTS]->data;
    ids                                      = s->tensors[SVD_T_IDS]->data;
    /* the pipeline conditions on fps - 1 */
    ids[0] = (float)(p->fps - 1);
    ids[1] = (float)p->motion_bucket_id;
    ids[2] = (float)p->noise_aug_strength;

    if (st->cond != NULL) {
        set = index % st->sets;
        if (st->has_latents) {
            status = svp_stage_svd_row(st, "latents", set, x, n);
        } else {
            svp_rng_normal(seed, svp_rng_stream(SVP_RNG_LATENTS), 0, n, x);
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
        svp_rng_normal(seed, svp_rng_stream(SVP_RNG_LATENTS), 0, n, x);
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
    timing       = s->tensors[SVD_T_TIMING]->data;
    timing[0]    = svp_clock_wall();
    timing[1]    = svp_clock_now() - t0;
    s->next_step = 0;
    return SVP_OK;
}
