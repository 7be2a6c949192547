/*
 * A checkpoint folder's parts and their check; see checkpoint.h.
 *
 * The check reads only configs and safetensors headers, so that svdlaunch
 * can run it on the submitting host before a job waits in the queue.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/checkpoint.h"
#include "common/log.h"
#include "media/preprocessor.h"
#include "model/clip.h"
#include "model/unet.h"
#include "model/vae.h"
#include "tensor/config_json.h"
#include "tensor/safetensors.h"

#include <string.h>
#include <unistd.h>

#define CHECK_PATH_MAX 4096

static const svp_checkpoint_part_t checkpoint_parts[] = {
    {"model_index", "", "model_index.json", NULL, SVP_MODEL_ARCH_UNKNOWN,
     SVP_CHECKPOINT_JOB_PRESENT},
    /* a job without scheduler/ uses SVD's settings */
    {"scheduler", "scheduler", "scheduler_config.json", NULL, SVP_MODEL_ARCH_UNKNOWN,
     SVP_CHECKPOINT_JOB_PRESENT},
    {"feature_extr.", "feature_extractor", "preprocessor_config.json", NULL,
     SVP_MODEL_ARCH_UNKNOWN, SVP_CHECKPOINT_JOB_IMAGES},
    {"unet", "unet", "config.json", "diffusion_pytorch_model", SVP_MODEL_ARCH_UNET,
     SVP_CHECKPOINT_JOB_ALWAYS},
    /* with a conditioning file the VAE only decodes, and may be absent */
    {"vae", "vae", "config.json", "diffusion_pytorch_model", SVP_MODEL_ARCH_VAE,
     SVP_CHECKPOINT_JOB_IMAGES | SVP_CHECKPOINT_JOB_PRESENT},
    {"image_encoder", "image_encoder", "config.json", "model", SVP_MODEL_ARCH_CLIP,
     SVP_CHECKPOINT_JOB_IMAGES},
};

#define CHECKPOINT_PART_COUNT \
    ((int)(sizeof(checkpoint_parts) / sizeof(checkpoint_parts[0])))

/* What the checks of the parts keep for the check of their fit. */
typedef struct {
    svp_unet_config_t       unet;
    svp_vae_config_t        vae;
    svp_clip_config_t       clip;
    svp_media_clip_params_t pre;
} checkpoint_configs_t;

const svp_checkpoint_part_t *svp_checkpoint_parts(int *count_p)
{
    *count_p = CHECKPOINT_PART_COUNT;
    return checkpoint_parts;
}

/* dir/part's folder, or dir itself for the top-level files. */
static void checkpoint_sub(const char *dir, const svp_checkpoint_part_t *part,
                           char *sub, size_t len)
{
    if (part->dir[0] == '\0') {
        snprintf(sub, len, "%s", dir);
    } else {
        snprintf(sub, len, "%s/%s", dir, part->dir);
    }
}

/* The weights file the loaders would pick: the fp32 file, else the .fp16
 * variant. */
static svp_status_t checkpoint_weights_path(const char *dir, const char *stem,
                                            char *path, size_t len)
{
    snprintf(path, len, "%s/%s.safetensors", dir, stem);
    if (access(path, F_OK) == 0) {
        return SVP_OK;
    }
    snprintf(path, len, "%s/%s.fp16.safetensors", dir, stem);
    if (access(path, F_OK) == 0) {
        return SVP_OK;
    }
    svp_error("%s: no %s.safetensors or %s.fp16.safetensors", dir, stem, stem);
    return SVP_ERR_NOT_FOUND;
}

/* One line per component: file, tensors, dtypes, parameters, bytes. */
static svp_status_t checkpoint_summary(const char *component, const char *path,
                                       FILE *report)
{
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    char                   dtypes[128] = "";
    const char            *name;
    int64_t                params = 0, numel;
    size_t                 bytes  = 0;
    int                    i, j;
    svp_status_t           status;

    status = svp_safetensors_open(path, &st);
    if (status != SVP_OK) {
        return status;
    }
    for (i = 0; i < svp_safetensors_count(st); i++) {
        status = svp_safetensors_info(st, i, &info);
        if (status != SVP_OK) {
            goto out;
        }
        for (numel = 1, j = 0; j < info.ndim; j++) {
            numel *= info.shape[j];
        }
        params += numel;
        bytes += info.nbytes;
        name = svp_dtype_name(info.dtype);
        if (strstr(dtypes, name) == NULL) {
            snprintf(dtypes + strlen(dtypes), sizeof(dtypes) - strlen(dtypes),
                     "%s%s", dtypes[0] ? "," : "", name);
        }
    }
    if (report == NULL) {
        goto out;
    }
    fprintf(report,
            "  %-14s %-42s %5d tensors  %-8s %12lld params  "
            "%8.1f MiB\n",
            component, strrchr(path, '/') + 1, svp_safetensors_count(st), dtypes,
            (long long)params, bytes / 1048576.0);
out:
    svp_safetensors_close(st);
    return status;
}

/* A model part: its config, every tensor it implies, and its summary. */
static svp_status_t checkpoint_model(const char                  *dir,
                                     const svp_checkpoint_part_t *part,
                                     checkpoint_configs_t *cfg, FILE *report)
{
    char         sub[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 64];
    svp_status_t status;

    checkpoint_sub(dir, part, sub, sizeof(sub));
    snprintf(path, sizeof(path), "%s/%s", sub, part->config);
    switch (part->kind) {
    case SVP_MODEL_ARCH_UNET:
        status = svp_unet_config_load(path, &cfg->unet);
        if (status == SVP_OK) {
            status = svp_unet_check_weights(sub, NULL);
        }
        break;
    case SVP_MODEL_ARCH_VAE:
        status = svp_vae_config_load(path, &cfg->vae);
        if (status == SVP_OK) {
            status = svp_vae_check_weights(sub, NULL, NULL);
        }
        break;
    case SVP_MODEL_ARCH_CLIP:
        status = svp_clip_config_load(path, &cfg->clip);
        if (status == SVP_OK) {
            status = svp_clip_check_weights(sub, NULL, NULL);
        }
        break;
    default:
        return SVP_ERR_INTERNAL;
    }
    if (status == SVP_OK) {
        status = checkpoint_weights_path(sub, part->weights, path, sizeof(path));
    }
    return (status == SVP_OK) ? checkpoint_summary(part->name, path, report)
                              : status;
}

/* A part without weights: its config parses (the feature extractor's is
 * kept for the fit). */
static svp_status_t checkpoint_config(const char                  *dir,
                                      const svp_checkpoint_part_t *part,
                                      checkpoint_configs_t        *cfg)
{
    char         path[CHECK_PATH_MAX + 64];
    svp_config_h cj;
    svp_status_t status;

    checkpoint_sub(dir, part, path, CHECK_PATH_MAX);
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", part->config);
    if (strcmp(part->dir, "feature_extractor") == 0) {
        return svp_media_clip_params_load(path, &cfg->pre);
    }
    status = svp_config_load(path, &cj);
    if (status == SVP_OK) {
        svp_config_destroy(cj);
    }
    return status;
}

/* The components must fit together the way the SVD pipeline joins them. */
static svp_status_t checkpoint_fit(const char *dir, const checkpoint_configs_t *cfg)
{
    const svp_unet_config_t       *unet   = &cfg->unet;
    const svp_vae_config_t        *vae    = &cfg->vae;
    const svp_clip_config_t       *clip   = &cfg->clip;
    const svp_media_clip_params_t *pre    = &cfg->pre;
    svp_status_t                   status = SVP_OK;

    if (unet->in_channels != 2 * vae->latent_channels ||
        unet->out_channels != vae->latent_channels) {
        svp_error("%s: the UNet takes %d and gives %d channels, the VAE's "
                  "latents have %d (SVD: 2 x latent in, latent out)",
                  dir, unet->in_channels, unet->out_channels, vae->latent_channels);
        status = SVP_ERR_BAD_FILE;
    }
    if (unet->cross_dim[0] != clip->projection_dim) {
        svp_error("%s: unet cross_attention_dim %d != image_encoder "
                  "projection_dim %d",
                  dir, unet->cross_dim[0], clip->projection_dim);
        status = SVP_ERR_BAD_FILE;
    }
    if (pre->height != clip->image_size || pre->width != clip->image_size) {
        svp_error("%s: feature_extractor size %dx%d != image_encoder "
                  "image_size %d",
                  dir, pre->height, pre->width, clip->image_size);
        status = SVP_ERR_BAD_FILE;
    }
    return status;
}

/*
 * The status of the check after one step of it: a step that failed is
 * reported and its status kept, and the check goes on to the next step, so
 * that the report names every part that fails.
 */
static svp_status_t checkpoint_step(FILE *report, const char *what,
                                    svp_status_t step, svp_status_t status)
{
    if (step == SVP_OK) {
        return status;
    }
    if (report != NULL) {
        fprintf(report, "  %-14s FAILED: %s\n", what, svp_status_string(step));
    }
    return step;
}

/* dir/rel exists (a file or a folder). */
static int checkpoint_has(const char *dir, const char *rel)
{
    char path[CHECK_PATH_MAX + 64];

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return access(path, F_OK) == 0;
}

svp_status_t svp_checkpoint_check(const char *dir, unsigned flags, FILE *report)
{
    checkpoint_configs_t cfg;
    int                  all    = !(flags & SVP_CHECKPOINT_FOR_JOB);
    int                  images = all || (flags & SVP_CHECKPOINT_IMAGES);
    int                  i;
    svp_status_t         status = SVP_OK;

    memset(&cfg, 0, sizeof(cfg));
    for (i = 0; i < CHECKPOINT_PART_COUNT; i++) {
        const svp_checkpoint_part_t *part = &checkpoint_parts[i];
        int wanted = all || (part->job & SVP_CHECKPOINT_JOB_ALWAYS) ||
                     (images && (part->job & SVP_CHECKPOINT_JOB_IMAGES)) ||
                     ((part->job & SVP_CHECKPOINT_JOB_PRESENT) &&
                      checkpoint_has(dir, part->dir[0] ? part->dir : part->config));

        if (!wanted) {
            continue;
        }
        if (part->kind == SVP_MODEL_ARCH_UNKNOWN) {
            status = checkpoint_step(report, part->name,
                                     checkpoint_config(dir, part, &cfg), status);
        } else {
            status =
                checkpoint_step(report, part->name,
                                checkpoint_model(dir, part, &cfg, report), status);
        }
    }
    if (images && status == SVP_OK) {
        status = checkpoint_step(report, "fit", checkpoint_fit(dir, &cfg), status);
    }
    return status;
}
