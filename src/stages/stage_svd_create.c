/*
 * The SVD stage's create and destroy (stage_svd_int.h): the sample list and
 * its images or the conditioning file, the scheduler, the ops handle of the
 * spec's backend and dtype, the UNet, VAE and CLIP, and the step's one
 * buffer set.  Everything a sample needs that can fail is checked here,
 * before any rank starts work.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "stages/stage_svd_int.h"
#include "media/image.h"
#include "media/preprocessor.h"
#include "noise/guidance.h"
#include "ops/ops_module.h"
#include "ops/ops_profile.h"
#include "trace/range.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void svp_stage_svd_destroy(void *self)
{
    svp_stage_svd_t *st = self;

    svp_stage_svd_buffers_cleanup(st);
    free(st->scales);
    free(st->share_dec);
    free(st->ids);
    free(st->t);
    svp_job_samples_destroy(st->list);
    svp_job_wds_destroy(st->wds);
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
    shape[0] = -1;
    shape[1] = 4;
    shape[2] = -1;
    shape[3] = -1;
    status   = svp_stage_svd_expect(st, "image_latents", 4, shape, 0, NULL);
    if (status != SVP_OK) {
        return status;
    }
    svp_safetensors_find(st->cond, "image_latents", &info);
    st->sets = (int)info.shape[0];
    st->h    = info.shape[2];
    st->w    = info.shape[3];
    shape[0] = st->sets;
    shape[1] = -1;
    status   = svp_stage_svd_expect(st, "image_embeds", 2, shape, 0, NULL);
    if (status != SVP_OK) {
        return status;
    }
    svp_safetensors_find(st->cond, "image_embeds", &info);
    st->D    = info.shape[1];
    shape[1] = 3;
    status   = svp_stage_svd_expect(st, "added_time_ids", 2, shape, 1, &st->has_ids);
    if (status != SVP_OK) {
        return status;
    }
    shape[1] = st->F;
    shape[2] = 4;
    shape[3] = st->h;
    shape[4] = st->w;
    return svp_stage_svd_expect(st, "latents", 5, shape, 1, &st->has_latents);
}

/*
 * The samples (job/samples.h) and their images.  Every image is decoded once
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

    status = svp_job_samples_create(spec, err, sizeof(err), &st->list);
    if (status != SVP_OK) {
        svp_error("%s", err);
        return status;
    }
    for (i = 0; i < st->list->nimages; ++i) {
        status = svp_media_image_load(st->list->images[i], &img);
        if (status != SVP_OK) {
            svp_error("%s: %s: %s is not a usable image", spec->file,
                      (st->list->manifest != NULL) ? "video.manifest"
                                                   : "video.inputs",
                      st->list->images[i]);
            return status;
        }
        svp_media_image_destroy(img);
    }
    return SVP_OK;
}

static svp_status_t svp_stage_svd_model_part(const svp_spec_t *spec,
                                             const char *part, char *path,
                                             size_t len)
{
    struct stat sb;

    snprintf(path, len, "%s/%s", spec->model.path, part);
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        return SVP_ERR_NOT_FOUND;
    }
    return SVP_OK;
}

/* The folder itself first (a missing one is named as such, not as a
 * missing part), then its scheduler settings or SVD's. */
static svp_status_t svp_stage_svd_load_sched(svp_stage_svd_t *st)
{
    const svp_spec_t  *spec = st->spec;
    svp_sched_config_t sc;
    char               path[4096];
    struct stat        sb;
    svp_status_t       status;

    if (stat(spec->model.path, &sb) != 0) {
        svp_error("%s: model.path: cannot open %s: %m", spec->file,
                  spec->model.path);
        return SVP_ERR_NOT_FOUND;
    }
    if (!S_ISDIR(sb.st_mode)) {
        svp_error("%s: model.path: %s is not a folder (expected a diffusers "
                  "SVD folder: unet/, vae/, image_encoder/, ...)",
                  spec->file, spec->model.path);
        return SVP_ERR_NOT_FOUND;
    }
    if (svp_stage_svd_model_part(spec, "scheduler", path, sizeof(path)) == SVP_OK) {
        strncat(path, "/scheduler_config.json", sizeof(path) - strlen(path) - 1);
        status = svp_sched_config_load(path, &sc);
        if (status != SVP_OK) {
            return status;
        }
    } else {
        svp_sched_config_default(&sc);
        svp_info("%s has no scheduler/: using SVD's scheduler settings",
                 spec->model.path);
    }
    return svp_sched_create(&sc, spec->steps, &st->sched);
}

/* The ops handle of the spec's backend and dtype; log.profile times it. */
static svp_status_t svp_stage_svd_open_ops(svp_stage_svd_t *st)
{
    const svp_spec_t *spec = st->spec;
    svp_ops_params_t  op   = {0};
    svp_status_t      status;

    /* the spec's enums as they are: the names are only for messages */
    op.backend = spec->device;
    op.dtype   = spec->dtype;
    status     = svp_ops_create(&op, &st->ops);
    if (status != SVP_OK) {
        svp_error("%s: dtype %s on device %s: %s", spec->file,
                  svp_dtype_short_name(op.dtype), svp_ops_backend_name(op.backend),
                  svp_status_string(status));
        return status;
    }
    if (svp_ops_product_dtype(st->ops) != SVP_DTYPE_F32) {
        svp_info("svd stage: weights in %s, products in %s on %s "
                 "with fp32 accumulation, activations in f32, on the %s "
                 "backend (%d threads from %s)",
                 svp_ops_dtype(st->ops), svp_ops_dtype(st->ops),
                 svp_ops_product_units(st->ops), svp_ops_backend(st->ops),
                 svp_ops_threads(st->ops), svp_ops_threads_from(st->ops));
    } else {
        /* a 16-bit dtype on a CPU without BF16 units: said, not hidden */
        svp_info("svd stage: weights in %s, products and activations in f32%s, "
                 "on the %s backend (%d threads from %s)",
                 svp_ops_dtype(st->ops),
                 (op.dtype == SVP_DTYPE_F32) ? ""
                 : (op.dtype == SVP_DTYPE_BF16 && op.backend == SVP_OPS_BACKEND_CPU)
                     ? " (this CPU has no AVX512-BF16 units)"
                     : " (the weights widened before each product)",
                 svp_ops_backend(st->ops), svp_ops_threads(st->ops),
                 svp_ops_threads_from(st->ops));
    }
    if (spec->log.profile) {
        /* log.profile: every block and op timed; svdworker writes it out */
        status = svp_ops_profile_enable(st->ops);
        if (status != SVP_OK) {
            return status;
        }
        svp_range_profile_enable(1, svp_ops_profile_sync, st->ops);
    }
    return SVP_OK;
}

/* The UNet, and the VAE when the folder has one (a conditioning file can
 * do without: its samples are written as latents). */
static svp_status_t svp_stage_svd_load_unet_vae(svp_stage_svd_t *st)
{
    const svp_spec_t *spec = st->spec;
    char              path[4096];
    svp_status_t      status;

    snprintf(path, sizeof(path), "%s/unet", spec->model.path);
    status = svp_unet_create(st->ops, path, NULL, &st->unet);
    if (status != SVP_OK) {
        return status;
    }
    svp_info("svd stage: UNet matrix weights %.1f MiB in %s",
             svp_ops_weights_bytes(st->ops) / 1048576.0, svp_ops_dtype(st->ops));
    if (svp_stage_svd_model_part(spec, "vae", path, sizeof(path)) == SVP_OK) {
        return svp_vae_create(st->ops, path, NULL, &st->vae);
    }
    if (st->cond == NULL) {
        svp_error("%s: no vae/ folder: images cannot be encoded", spec->model.path);
        return SVP_ERR_NOT_FOUND;
    }
    svp_warn("%s has no vae/: samples are written as latents only",
             spec->model.path);
    return SVP_OK;
}

/*
 * Images only: the image encoder and its input's size, mean and std (from
 * the checkpoint's feature extractor when it has one; else SVD's values at
 * the encoder's own image size), and the latent size and embedding width
 * that the conditioning file gives otherwise.
 */
static svp_status_t svp_stage_svd_load_clip(svp_stage_svd_t *st)
{
    const svp_spec_t *spec = st->spec;
    char              path[4096];
    int               lh, lw, size;
    svp_status_t      status;

    if (svp_stage_svd_model_part(spec, "image_encoder", path, sizeof(path)) !=
        SVP_OK) {
        svp_error("%s: no image_encoder/ folder: images cannot be encoded",
                  spec->model.path);
        return SVP_ERR_NOT_FOUND;
    }
    status = svp_clip_create(st->ops, path, NULL, &st->clip);
    if (status != SVP_OK) {
        return status;
    }
    size = svp_clip_config(st->clip)->image_size;
    snprintf(path, sizeof(path), "%s/feature_extractor/preprocessor_config.json",
             spec->model.path);
    status = svp_media_clip_params_load(path, &st->clip_params);
    if (status == SVP_ERR_NOT_FOUND) {
        svp_media_clip_params_init(&st->clip_params);
        st->clip_params.height = st->clip_params.width = size;
        status                                         = SVP_OK;
    }
    if (status != SVP_OK) {
        return status;
    }
    if (st->clip_params.height != size || st->clip_params.width != size) {
        svp_error("%s: the feature extractor makes %dx%d images, the image "
                  "encoder takes %dx%d",
                  path, st->clip_params.width, st->clip_params.height, size, size);
        return SVP_ERR_BAD_FILE;
    }
    svp_vae_latent_size(svp_vae_config(st->vae), (int)st->H, (int)st->W, &lh, &lw);
    st->h = lh;
    st->w = lw;
    st->D = svp_clip_config(st->clip)->projection_dim;
    return SVP_OK;
}

static void svp_stage_svd_log_layout(const svp_stage_svd_t *st)
{
    const svp_spec_t *spec = st->spec;

    if (st->cond != NULL) {
        svp_info("svd stage: %lld frames, latents %lldx%lld, %d conditioning set(s) "
                 "from %s, guidance %s (%g..%g)",
                 (long long)st->F, (long long)st->h, (long long)st->w, st->sets,
                 spec->model.conditioning, st->cfg ? "on" : "off",
                 spec->video.min_guidance, spec->video.max_guidance);
    } else {
        svp_info("svd stage: %lld frames of %lldx%lld from %d image(s), latents "
                 "%lldx%lld, guidance %s (%g..%g)",
                 (long long)st->F, (long long)st->W, (long long)st->H,
                 st->list->nimages, (long long)st->h, (long long)st->w,
                 st->cfg ? "on" : "off", spec->video.min_guidance,
                 spec->video.max_guidance);
    }
}

/* The samples and their conditioning, then the models, then the buffers. */
static svp_status_t svp_stage_svd_setup(svp_stage_svd_t *st)
{
    const svp_spec_t *spec = st->spec;
    int               i;
    svp_status_t      status;

    /* the list first: the conditioning file's samples are in it too */
    status = svp_stage_svd_collect_images(st);
    if (status == SVP_OK && spec->model.conditioning[0] != '\0') {
        status = svp_stage_svd_open_conditioning(st);
    }
    if (status == SVP_OK && spec->output.format == SVP_OUTPUT_WEBDATASET) {
        status = svp_job_wds_create(spec, st->list, svp_stage_svd_wds_check, st,
                                    &st->wds);
    }
    if (status != SVP_OK) {
        return status;
    }
    for (i = 0; i < st->list->count && !st->cfg; ++i) {
        st->cfg = svp_sched_guidance_enabled(st->list->items[i].max_guidance);
    }
    status = svp_stage_svd_load_sched(st);
    if (status == SVP_OK) {
        status = svp_stage_svd_open_ops(st);
    }
    if (status == SVP_OK) {
        status = svp_stage_svd_load_unet_vae(st);
    }
    if (status == SVP_OK && st->cond == NULL) {
        status = svp_stage_svd_load_clip(st);
    }
    if (status != SVP_OK) {
        return status;
    }
    if (svp_unet_config(st->unet)->cross_dim[0] != st->D) {
        svp_error("%s: the image embedding has %lld values, the UNet's "
                  "cross_attention_dim is %d",
                  spec->model.path, (long long)st->D,
                  svp_unet_config(st->unet)->cross_dim[0]);
        return SVP_ERR_SHAPE;
    }
    return svp_stage_svd_buffers_init(st, st->cfg ? 2 : 1);
}

svp_status_t svp_stage_svd_create(const svp_spec_t *spec, svp_stage_t *stage_p)
{
    svp_stage_svd_t        *st;
    const svp_ops_module_t *module;
    const svp_devmem_t     *devmem = NULL;
    svp_status_t            status;

    if (spec->model.conditioning[0] == '\0' && spec->video.inputs.count == 0 &&
        spec->video.manifest[0] == '\0') {
        svp_error("%s: model.kind svd needs images (video.inputs or video.manifest) "
                  "or a conditioning file (model.conditioning)",
                  spec->file);
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

    status = svp_stage_svd_setup(st);
    if (status == SVP_OK && spec->device == SVP_OPS_BACKEND_CUDA) {
        /* the device memory services that let the pipeline keep a
         * sample's frame on the device */
        status = svp_ops_module_load(svp_ops_backend_name(spec->device), &module);
        if (status == SVP_OK) {
            devmem = module->devmem;
        }
    }
    if (status != SVP_OK) {
        svp_stage_svd_destroy(st);
        return status;
    }
    svp_stage_svd_log_layout(st);
    stage_p->ops    = &svp_stage_svd_ops;
    stage_p->self   = st;
    stage_p->devmem = devmem;
    return SVP_OK;
}
