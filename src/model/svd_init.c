/*
 * Random-weight models and SVD checkpoint folders; see svd_init.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/svd_init.h"
#include "model/clip.h"
#include "model/unet.h"
#include "model/vae.h"
#include "common/log.h"
#include "common/file.h"
#include "common/hash.h"
#include "common/util.h"
#include "tensor/config_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SVD_INIT_PATH_MAX 4096
/* a path under the folder: room for a part's folder and file names */
#define SVD_INIT_SUB_MAX (SVD_INIT_PATH_MAX + 128)

svp_status_t svp_model_config_kind(const char *config_path, svp_model_arch_t *kind_p)
{
    svp_config_h     cj;
    const char      *cls = NULL, *type = NULL, *archs[8];
    int              n_archs = 0, i;
    svp_model_arch_t kind    = SVP_MODEL_ARCH_UNKNOWN;
    svp_status_t     status;

    status = svp_config_load(config_path, &cj);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_config_get_string(cj, "_class_name", NULL, &cls);
    if (status == SVP_OK) {
        status = svp_config_get_string(cj, "model_type", NULL, &type);
    }
    if (status == SVP_OK) {
        status = svp_config_get_string_array(cj, "architectures", archs,
                                             (int)SVP_ARRAY_SIZE(archs), &n_archs);
    }
    if (status != SVP_OK) {
        goto out;
    }
    if (cls != NULL && strcmp(cls, "UNetSpatioTemporalConditionModel") == 0) {
        kind = SVP_MODEL_ARCH_UNET;
    } else if (cls != NULL && strcmp(cls, "AutoencoderKLTemporalDecoder") == 0) {
        kind = SVP_MODEL_ARCH_VAE;
    } else if (type != NULL && strcmp(type, "clip_vision_model") == 0) {
        kind = SVP_MODEL_ARCH_CLIP;
    }
    for (i = 0; kind == SVP_MODEL_ARCH_UNKNOWN && i < n_archs; i++) {
        if (strcmp(archs[i], "CLIPVisionModelWithProjection") == 0) {
            kind = SVP_MODEL_ARCH_CLIP;
        }
    }
    if (kind == SVP_MODEL_ARCH_UNKNOWN) {
        svp_error("%s: not a UNetSpatioTemporalConditionModel, "
                  "AutoencoderKLTemporalDecoder or CLIPVisionModelWithProjection "
                  "config (_class_name '%s', model_type '%s')",
                  config_path, cls ? cls : "", type ? type : "");
        status = SVP_ERR_UNSUPPORTED;
        goto out;
    }
    *kind_p = kind;
out:
    svp_config_destroy(cj);
    return status;
}

svp_status_t svp_model_write_random(const char *config_path, uint64_t seed,
                                    const char *out_dir)
{
    svp_model_arch_t kind;
    svp_status_t     status;

    status = svp_model_config_kind(config_path, &kind);
    if (status != SVP_OK) {
        return status;
    }
    switch (kind) {
    case SVP_MODEL_ARCH_UNET:
        return svp_unet_write_random(config_path, seed, out_dir);
    case SVP_MODEL_ARCH_VAE:
        return svp_vae_write_random(config_path, seed, out_dir);
    case SVP_MODEL_ARCH_CLIP:
        return svp_clip_write_random(config_path, seed, out_dir);
    default:
        return SVP_ERR_INTERNAL;
    }
}

/* Copies config_dir/rel to dir/rel (atomically), creating its folder. */
static svp_status_t svd_init_copy(const char *config_dir, const char *dir,
                                  const char *sub, const char *file)
{
    char         src[SVD_INIT_SUB_MAX], dst[SVD_INIT_SUB_MAX], *text;
    size_t       len;
    svp_status_t status;

    snprintf(src, sizeof(src), "%s/%s%s%s", config_dir, sub, *sub ? "/" : "", file);
    snprintf(dst, sizeof(dst), "%s/%s", dir, sub);
    status = svp_file_read_limit(src, SVP_CONFIG_LIMIT_BYTES, "a JSON config", &text,
                                 &len);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_mkdir_p(dst, 0755);
    if (status == SVP_OK) {
        snprintf(dst, sizeof(dst), "%s/%s%s%s", dir, sub, *sub ? "/" : "", file);
        status = svp_file_write_atomic(dst, text, len);
    }
    free(text);
    return status;
}

/*
 * Each model's seed: the folder seed hashed with the component's name, so
 * the three models never share a stream and reordering them changes
 * nothing.
 */
static svp_status_t svd_init_model(const char *config_dir, const char *dir,
                                   const char *sub, uint64_t seed,
                                   svp_model_arch_t want)
{
    char             cfg[SVD_INIT_SUB_MAX], out[SVD_INIT_SUB_MAX];
    svp_model_arch_t kind;
    svp_status_t     status;

    snprintf(cfg, sizeof(cfg), "%s/%s/config.json", config_dir, sub);
    snprintf(out, sizeof(out), "%s/%s", dir, sub);
    status = svp_model_config_kind(cfg, &kind);
    if (status != SVP_OK) {
        return status;
    }
    if (kind != want) {
        svp_error("%s: not the config of the model '%s' holds", cfg, sub);
        return SVP_ERR_BAD_FILE;
    }
    return svp_model_write_random(cfg, svp_hash_fnv1a(sub, strlen(sub), seed), out);
}

svp_status_t svp_svd_write_random(const char *config_dir, uint64_t seed,
                                  const char *out_dir)
{
    const svp_checkpoint_part_t *parts;
    char                         tmp[SVD_INIT_PATH_MAX], old[SVD_INIT_PATH_MAX];
    struct stat                  sb;
    int                          have_old, count, i;
    svp_status_t                 status;

    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", out_dir, (long)getpid());
    snprintf(old, sizeof(old), "%s.old.%ld", out_dir, (long)getpid());
    svp_rmtree(tmp);
    status = svp_mkdir_p(tmp, 0755);
    if (status != SVP_OK) {
        return status;
    }
    /* the checkpoint's parts in the table's order: configs copied, models
     * written with random weights */
    parts = svp_checkpoint_parts(&count);
    for (i = 0; i < count && status == SVP_OK; i++) {
        if (parts[i].kind == SVP_MODEL_ARCH_UNKNOWN) {
            status = svd_init_copy(config_dir, tmp, parts[i].dir, parts[i].config);
        } else {
            status =
                svd_init_model(config_dir, tmp, parts[i].dir, seed, parts[i].kind);
        }
    }
    if (status != SVP_OK) {
        goto err_remove_tmp;
    }

    /* a directory cannot be renamed over a non-empty one: move the old
     * folder aside first, and remove it once the new one is in place */
    have_old = (stat(out_dir, &sb) == 0);
    if (have_old && rename(out_dir, old) != 0) {
        svp_error("cannot move %s aside to %s: %m", out_dir, old);
        status = SVP_ERR_IO;
        goto err_remove_tmp;
    }
    if (rename(tmp, out_dir) != 0) {
        svp_error("cannot rename %s to %s: %m", tmp, out_dir);
        status = SVP_ERR_IO;
        if (have_old && rename(old, out_dir) != 0) {
            svp_error("cannot move %s back to %s: %m", old, out_dir);
        }
        goto err_remove_tmp;
    }
    if (have_old) {
        svp_rmtree(old);
    }
    svp_info("wrote an SVD model folder with random weights (seed %llu) to %s",
             (unsigned long long)seed, out_dir);
    return SVP_OK;

err_remove_tmp:
    svp_rmtree(tmp);
    return status;
}
