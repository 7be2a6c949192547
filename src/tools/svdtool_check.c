/*
 * svdtool check-model DIR: is DIR a usable SVD / SVD-XT checkpoint?
 *
 * Reads only configs and safetensors headers: every config parses, every
 * tensor the configs imply is present with the right shape (fp32 files or
 * the .fp16 variant), and the components fit together (latent channels,
 * embedding width, encoder input size).  Prints what each component holds.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "tools/svdtool_check.h"
#include "common/log.h"
#include "common/status.h"
#include "media/preprocessor.h"
#include "model/clip.h"
#include "model/unet.h"
#include "model/vae.h"
#include "tensor/config_json.h"
#include "tensor/safetensors.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHECK_PATH_MAX 4096

/* The weights file the loaders would pick: the fp32 file, else the .fp16
 * variant. */
static svp_status_t check_weights_path(const char *dir, const char *stem,
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
static svp_status_t check_summary(const char *component, const char *path,
                                  FILE *report)
{
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    char                   dtypes[128] = "";
    const char            *name;
    int64_t                params = 0, numel;
    size_t                 bytes = 0;
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
        bytes  += info.nbytes;
        name    = svp_dtype_name(info.dtype);
        if (strstr(dtypes, name) == NULL) {
            snprintf(dtypes + strlen(dtypes), sizeof(dtypes) - strlen(dtypes),
                     "%s%s", dtypes[0] ? "," : "", name);
        }
    }
    if (report == NULL) {
        goto out;
    }
    fprintf(report, "  %-14s %-42s %5d tensors  %-8s %12lld params  "
            "%8.1f MiB\n", component, strrchr(path, '/') + 1,
            svp_safetensors_count(st), dtypes, (long long)params,
            bytes / 1048576.0);
out:
    svp_safetensors_close(st);
    return status;
}

static svp_status_t check_unet(const char *dir, svp_unet_config_t *cfg,
                               FILE *report)
{
    char         sub[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 64];
    svp_status_t status;

    snprintf(sub, sizeof(sub), "%s/unet", dir);
    snprintf(path, sizeof(path), "%s/config.json", sub);
    status = svp_unet_config_load(path, cfg);
    if (status == SVP_OK) {
        status = svp_unet_check_weights(sub, NULL);
    }
    if (status == SVP_OK) {
        status = check_weights_path(sub, "diffusion_pytorch_model", path, sizeof(path));
    }
    return (status == SVP_OK) ? check_summary("unet", path, report) : status;
}

static svp_status_t check_vae(const char *dir, svp_vae_config_t *cfg,
                              FILE *report)
{
    char         sub[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 64];
    svp_status_t status;

    snprintf(sub, sizeof(sub), "%s/vae", dir);
    snprintf(path, sizeof(path), "%s/config.json", sub);
    status = svp_vae_config_load(path, cfg);
    if (status == SVP_OK) {
        status = svp_vae_check_weights(sub, NULL, NULL);
    }
    if (status == SVP_OK) {
        status = check_weights_path(sub, "diffusion_pytorch_model", path, sizeof(path));
    }
    return (status == SVP_OK) ? check_summary("vae", path, report) : status;
}

static svp_status_t check_clip(const char *dir, svp_clip_config_t *cfg,
                               FILE *report)
{
    char         sub[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 64];
    svp_status_t status;

    snprintf(sub, sizeof(sub), "%s/image_encoder", dir);
    snprintf(path, sizeof(path), "%s/config.json", sub);
    status = svp_clip_config_load(path, cfg);
    if (status == SVP_OK) {
        status = svp_clip_check_weights(sub, NULL, NULL);
    }
    if (status == SVP_OK) {
        status = check_weights_path(sub, "model", path, sizeof(path));
    }
    return (status == SVP_OK) ? check_summary("image_encoder", path, report) : status;
}

static svp_status_t check_config_parses(const char *dir, const char *rel)
{
    char         path[CHECK_PATH_MAX + 64];
    svp_config_h cj;
    svp_status_t status;

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    status = svp_config_load(path, &cj);
    if (status == SVP_OK) {
        svp_config_destroy(cj);
    }
    return status;
}

/* The components must fit together the way the SVD pipeline joins them. */
static svp_status_t check_fit(const char *dir, const svp_unet_config_t *unet,
                              const svp_vae_config_t *vae,
                              const svp_clip_config_t *clip,
                              const svp_media_clip_params_t *pre)
{
    svp_status_t status = SVP_OK;

    if (unet->in_channels != 2 * vae->latent_channels ||
        unet->out_channels != vae->latent_channels) {
        svp_error("%s: the UNet takes %d and gives %d channels, the VAE's "
                  "latents have %d (SVD: 2 x latent in, latent out)", dir,
                  unet->in_channels, unet->out_channels, vae->latent_channels);
        status = SVP_ERR_BAD_FILE;
    }
    if (unet->cross_dim[0] != clip->projection_dim) {
        svp_error("%s: unet cross_attention_dim %d != image_encoder "
                  "projection_dim %d", dir, unet->cross_dim[0],
                  clip->projection_dim);
        status = SVP_ERR_BAD_FILE;
    }
    if (pre->height != clip->image_size || pre->width != clip->image_size) {
        svp_error("%s: feature_extractor size %dx%d != image_encoder "
                  "image_size %d", dir, pre->height, pre->width,
                  clip->image_size);
        status = SVP_ERR_BAD_FILE;
    }
    return status;
}

static void check_usage(FILE *f)
{
    fprintf(f,
            "usage: svdtool check-model DIR\n"
            "  checks a diffusers SVD / SVD-XT folder (unet/, vae/,\n"
            "  image_encoder/, scheduler/, feature_extractor/; fp32 or .fp16\n"
            "  weights) without loading weights: configs parse, every tensor\n"
            "  is present with the right shape, the components fit together.\n");
}

#define CHECK_STEP(_what, _expr) \
    do { \
        svp_status_t _s = (_expr); \
        if (_s != SVP_OK) { \
            if (report != NULL) { \
                fprintf(report, "  %-14s FAILED: %s\n", _what, \
                        svp_status_string(_s)); \
            } \
            status = _s; \
        } \
    } while (0)

/* dir/rel exists (a file or a folder). */
static int check_has(const char *dir, const char *rel)
{
    char path[CHECK_PATH_MAX + 64];

    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    return access(path, F_OK) == 0;
}

svp_status_t svdtool_check_model_dir(const char *dir, unsigned flags,
                                     FILE *report)
{
    svp_unet_config_t       unet;
    svp_vae_config_t        vae;
    svp_clip_config_t       clip;
    svp_media_clip_params_t pre;
    char                    path[CHECK_PATH_MAX + 64];
    int                     all = !(flags & SVDTOOL_CHECK_FOR_JOB);
    int                     images = all || (flags & SVDTOOL_CHECK_IMAGES);
    svp_status_t            status = SVP_OK;

    if (all || check_has(dir, "model_index.json")) {
        CHECK_STEP("model_index", check_config_parses(dir, "model_index.json"));
    }
    /* a job without scheduler/ uses SVD's settings; check-model wants all */
    if (all || check_has(dir, "scheduler")) {
        CHECK_STEP("scheduler",
                   check_config_parses(dir, "scheduler/scheduler_config.json"));
    }
    if (images) {
        snprintf(path, sizeof(path),
                 "%s/feature_extractor/preprocessor_config.json", dir);
        CHECK_STEP("feature_extr.", svp_media_clip_params_load(path, &pre));
    }
    CHECK_STEP("unet", check_unet(dir, &unet, report));
    /* with a conditioning file the VAE only decodes, and may be absent */
    if (images || check_has(dir, "vae")) {
        CHECK_STEP("vae", check_vae(dir, &vae, report));
    }
    if (images) {
        CHECK_STEP("image_encoder", check_clip(dir, &clip, report));
        if (status == SVP_OK) {
            CHECK_STEP("fit", check_fit(dir, &unet, &vae, &clip, &pre));
        }
    }
    return status;
}

int svdtool_check_model_main(int argc, char **argv)
{
    static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char  *dir;
    int          c;
    svp_status_t status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'h': check_usage(stdout); return SVP_EXIT_OK;
        default:  check_usage(stderr); return SVP_EXIT_BAD_INPUT;
        }
    }
    if (optind != argc - 1) {
        check_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    dir = argv[optind];
    printf("%s:\n", dir);
    status = svdtool_check_model_dir(dir, 0, stdout);
    if (status != SVP_OK) {
        printf("%s: not a usable SVD checkpoint\n", dir);
        return svp_status_exit_code(status);
    }
    printf("%s: ok\n", dir);
    return SVP_EXIT_OK;
}
