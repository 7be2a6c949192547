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
 * Conditioning comes from a safetensors file (model.conditioning) holding S
 * conditioning sets; sample i uses set i mod S:
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
#include "model/unet.h"
#include "ops/ops.h"
#include "sched/euler.h"
#include "sched/guidance.h"
#include "sched/rng.h"
#include "tensor/safetensors.h"
#include "common/log.h"
#include "common/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const svp_spec_t *spec;
    svp_ops_h         ops;
    svp_unet_h        unet;
    svp_sched_h       sched;
    svp_safetensors_h cond;         /* the conditioning file */
    int               sets;         /* S */
    int               has_ids, has_latents;
    int64_t           F, h, w, D;
    int               cfg;          /* classifier-free guidance on */
    float            *in, *out, *ehs, *ids, *t, *v;  /* UNet work buffers */
} svp_stage_svd_t;

enum { SVD_T_LATENTS = 0, SVD_T_IMAGE_LATENTS, SVD_T_EMBEDS, SVD_T_IDS, SVD_T_COUNT };

static svp_status_t svp_stage_svd_alloc(void *self, int index, svp_sample_t *s)
{
    svp_stage_svd_t *st = self;
    int64_t          shapes[SVD_T_COUNT][5] = {
        {1, st->F, 4, st->h, st->w}, {1, 4, st->h, st->w}, {1, 1, st->D}, {1, 3}};
    static const int ndims[SVD_T_COUNT] = {5, 4, 3, 2};
    svp_status_t     status;
    int              i;

    for (i = 0; i < SVD_T_COUNT; ++i) {
        status = svp_tensor_create(SVP_DTYPE_F32, ndims[i], shapes[i], &s->tensors[i]);
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

static svp_status_t svp_stage_svd_begin(void *self, int index, svp_sample_t *s)
{
    svp_stage_svd_t  *st   = self;
    const svp_spec_t *spec = st->spec;
    int               set  = index % st->sets;
    int64_t           n    = st->F * 4 * st->h * st->w, i;
    float            *x, *ids, sigma0;
    svp_status_t      status;

    status = svp_stage_svd_alloc(self, index, s);
    if (status != SVP_OK) {
        return status;
    }
    x = s->tensors[SVD_T_LATENTS]->data;
    if (st->has_latents) {
        status = svp_stage_svd_row(st, "latents", set, x, n);
    } else {
        svp_rng_normal(spec->seed, svp_rng_stream(index, SVP_RNG_LATENTS), 0, n, x);
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
    ids = s->tensors[SVD_T_IDS]->data;
    if (status == SVP_OK && st->has_ids) {
        status = svp_stage_svd_row(st, "added_time_ids", set, ids, 3);
    } else {
        /* the pipeline conditions on fps - 1 */
        ids[0] = (float)(spec->video.fps - 1);
        ids[1] = (float)spec->video.motion_bucket_id;
        ids[2] = (float)spec->video.noise_aug_strength;
    }
    if (status != SVP_OK) {
        svp_sample_cleanup(s);
        return status;
    }
    sigma0 = svp_sched_init_noise_sigma(st->sched);
    for (i = 0; i < n; ++i) {
        x[i] *= sigma0;
    }
    s->next_step = 0;
    return SVP_OK;
}

static svp_status_t svp_stage_svd_step(void *self, svp_sample_t *s, int step)
{
    svp_stage_svd_t *st    = self;
    int              batch = st->cfg ? 2 : 1, b, f;
    int64_t          plane = st->h * st->w, fr = 4 * plane, n = st->F * fr;
    float           *x     = s->tensors[SVD_T_LATENTS]->data;
    const float     *img   = s->tensors[SVD_T_IMAGE_LATENTS]->data;
    const float     *emb   = s->tensors[SVD_T_EMBEDS]->data;
    const float     *ids   = s->tensors[SVD_T_IDS]->data;
    svp_status_t     status;

    /* the 8-channel input [B, F, 8, h, w]: scaled latents, then the image
     * latents (zeros in the unconditional half) */
    for (b = 0; b < batch; ++b) {
        int cond = !st->cfg || b == 1;
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
    status = svp_unet_forward(st->unet, batch, (int)st->F, (int)st->h, (int)st->w,
                              st->in, st->t, st->ehs, 1, st->ids, st->out);
    if (status != SVP_OK) {
        return status;
    }
    if (st->cfg) {
        status = svp_sched_guidance_apply(st->out, st->out + n, 1, (int)st->F, fr,
                                          st->spec->video.min_guidance,
                                          st->spec->video.max_guidance, st->v);
        if (status != SVP_OK) {
            return status;
        }
    } else {
        memcpy(st->v, st->out, n * sizeof(float));
    }
    svp_sched_step(st->sched, step, st->v, x, x, NULL, n);
    return SVP_OK;
}

static svp_status_t svp_stage_svd_finish(void *self, svp_sample_t *s)
{
    svp_stage_svd_t         *st = self;
    svp_safetensors_writer_h w;
    char                     path[4096], val[64];
    svp_status_t             status;

    status = svp_mkdir_p(st->spec->output.dir, 0755);
    if (status != SVP_OK) {
        return status;
    }
    snprintf(path, sizeof(path), "%s/sample_%06d.safetensors", st->spec->output.dir,
             s->index);
    status = svp_safetensors_writer_create(&w);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_safetensors_writer_add(w, "latents", s->tensors[SVD_T_LATENTS]);
    if (status != SVP_OK) {
        goto out_destroy;
    }
    svp_safetensors_writer_add_metadata(w, "job", st->spec->name);
    snprintf(val, sizeof(val), "%d", s->index);
    svp_safetensors_writer_add_metadata(w, "sample", val);
    snprintf(val, sizeof(val), "%d", st->spec->steps);
    svp_safetensors_writer_add_metadata(w, "steps", val);
    snprintf(val, sizeof(val), "%" PRIu64, s->seed);
    svp_safetensors_writer_add_metadata(w, "seed", val);
    svp_safetensors_writer_add_metadata(w, "model", "svd");
    status = svp_safetensors_writer_commit(w, path);
out_destroy:
    svp_safetensors_writer_destroy(w);
    return status;
}

static void svp_stage_svd_destroy(void *self)
{
    svp_stage_svd_t *st = self;

    free(st->in);
    free(st->out);
    free(st->ehs);
    free(st->ids);
    free(st->t);
    free(st->v);
    svp_safetensors_close(st->cond);
    svp_sched_destroy(st->sched);
    svp_unet_destroy(st->unet);
    svp_ops_destroy(st->ops);
    free(st);
}

static const svp_stage_ops_t svp_stage_svd_ops = {
    .name    = "svd",
    .alloc   = svp_stage_svd_alloc,
    .begin   = svp_stage_svd_begin,
    .step    = svp_stage_svd_step,
    .finish  = svp_stage_svd_finish,
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

svp_status_t svp_stage_svd_create(const svp_spec_t *spec, svp_stage_t *stage_p)
{
    svp_stage_svd_t       *st;
    svp_sched_config_t     sc;
    svp_safetensors_info_t info;
    svp_ops_params_t       op = {0};
    char                   path[4096];
    int64_t                shape[5];
    svp_status_t           status;
    int                    batch;

    if (spec->model.conditioning[0] == '\0') {
        svp_error("%s: model.kind svd needs model.conditioning (a safetensors file "
                  "with image_latents and image_embeds) in this build",
                  spec->file);
        return SVP_ERR_SPEC;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    st->spec = spec;
    st->cfg  = svp_sched_guidance_enabled(spec->video.max_guidance);

    status = svp_safetensors_open(spec->model.conditioning, &st->cond);
    if (status != SVP_OK) {
        goto err;
    }
    /* h, w come from the file: the latent scale is the VAE's
     * (2^(levels-1): 8 for SVD), which the conditioning already reflects */
    shape[0] = -1; shape[1] = 4; shape[2] = -1; shape[3] = -1;
    status = svp_stage_svd_expect(st, "image_latents", 4, shape, 0, NULL);
    if (status != SVP_OK) {
        goto err;
    }
    svp_safetensors_find(st->cond, "image_latents", &info);
    st->sets = (int)info.shape[0];
    st->h    = info.shape[2];
    st->w    = info.shape[3];
    st->F    = spec->video.num_frames;
    shape[0] = st->sets; shape[1] = -1;
    status = svp_stage_svd_expect(st, "image_embeds", 2, shape, 0, NULL);
    if (status != SVP_OK) {
        goto err;
    }
    svp_safetensors_find(st->cond, "image_embeds", &info);
    st->D    = info.shape[1];
    shape[1] = 3;
    status = svp_stage_svd_expect(st, "added_time_ids", 2, shape, 1, &st->has_ids);
    if (status != SVP_OK) {
        goto err;
    }
    shape[1] = st->F; shape[2] = 4; shape[3] = st->h; shape[4] = st->w;
    status = svp_stage_svd_expect(st, "latents", 5, shape, 1, &st->has_latents);
    if (status != SVP_OK) {
        goto err;
    }

    snprintf(path, sizeof(path), "%s/scheduler/scheduler_config.json", spec->model.path);
    status = svp_sched_config_load(path, &sc);
    if (status != SVP_OK) {
        goto err;
    }
    status = svp_sched_create(&sc, spec->steps, &st->sched);
    if (status != SVP_OK) {
        goto err;
    }
    op.backend = (spec->device == SVP_DEVICE_CUDA) ? "cuda" : "cpu";
    status     = svp_ops_create(&op, &st->ops);
    if (status != SVP_OK) {
        goto err;
    }
    snprintf(path, sizeof(path), "%s/unet", spec->model.path);
    status = svp_unet_create(st->ops, path, NULL, &st->unet);
    if (status != SVP_OK) {
        goto err;
    }
    if (svp_unet_config(st->unet)->cross_dim[0] != st->D) {
        svp_error("%s: image_embeds has %lld values, the UNet's cross_attention_dim "
                  "is %d", spec->model.conditioning, (long long)st->D,
                  svp_unet_config(st->unet)->cross_dim[0]);
        status = SVP_ERR_SHAPE;
        goto err;
    }

    batch   = st->cfg ? 2 : 1;
    st->in  = malloc(batch * st->F * 8 * st->h * st->w * sizeof(float));
    st->out = malloc(batch * st->F * 4 * st->h * st->w * sizeof(float));
    st->v   = malloc(st->F * 4 * st->h * st->w * sizeof(float));
    st->ehs = malloc(batch * st->D * sizeof(float));
    st->ids = malloc(batch * 3 * sizeof(float));
    st->t   = malloc(batch * sizeof(float));
    if (!st->in || !st->out || !st->v || !st->ehs || !st->ids || !st->t) {
        status = SVP_ERR_NO_MEMORY;
        goto err;
    }
    svp_info("svd stage: %lld frames of %lldx%lld latents, %d conditioning set(s) "
             "from %s, guidance %s (%g..%g)", (long long)st->F, (long long)st->h,
             (long long)st->w, st->sets, spec->model.conditioning,
             st->cfg ? "on" : "off", spec->video.min_guidance,
             spec->video.max_guidance);
    stage_p->ops  = &svp_stage_svd_ops;
    stage_p->self = st;
    return SVP_OK;

err:
    svp_stage_svd_destroy(st);
    return status;
}
