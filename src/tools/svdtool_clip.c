/*
 * svdtool clip: the CLIP image encoder on tensors from a file.
 *
 *   svdtool clip --model DIR --input IN.safetensors --output OUT.safetensors
 *
 * IN holds pixel_values [B,C,S,S], already CLIP-normalised (the pipeline's
 * resize and normalisation are not applied here); OUT gets image_embeds
 * [B,projection_dim] (F32), written atomically.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_cmds_vae.h"
#include "common/log.h"
#include "common/status.h"
#include "model/clip.h"
#include "tensor/safetensors_io.h"
#include "svdtool_io.h"

#include <stdio.h>

static svp_status_t svdtool_clip_run(const svdtool_io_args_t *a)
{
    static const char *const names[] = {"image_embeds"};
    svp_ops_params_t         op      = {.threads = a->threads, .dtype = a->dtype};
    svp_ops_h                ops;
    svp_clip_h               clip;
    svp_safetensors_h        st;
    svp_tensor_t            *pixels = NULL, *embeds = NULL;
    const svp_clip_config_t *cfg;
    int64_t                  shape[2];
    svp_status_t             status;

    status = svp_safetensors_open(a->input, &st);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_safetensors_load(st, "pixel_values", SVP_DTYPE_F32, &pixels);
    if (status != SVP_OK) {
        goto out_close;
    }
    status = svp_ops_create(&op, &ops);
    if (status != SVP_OK) {
        goto out_close;
    }
    status = svp_clip_create(ops, a->model, NULL, &clip);
    if (status != SVP_OK) {
        goto out_ops;
    }
    cfg = svp_clip_config(clip);
    if (pixels->ndim != 4 || pixels->shape[1] != cfg->num_channels ||
        pixels->shape[2] != cfg->image_size || pixels->shape[3] != cfg->image_size) {
        char have[96];
        svp_error("%s: pixel_values has shape %s, %s takes [B,%d,%d,%d]", a->input,
                  svp_tensor_shape_str(pixels, have, sizeof(have)), a->model,
                  cfg->num_channels, cfg->image_size, cfg->image_size);
        status = SVP_ERR_SHAPE;
        goto out_clip;
    }
    shape[0] = pixels->shape[0];
    shape[1] = cfg->projection_dim;
    status   = svp_tensor_create(SVP_DTYPE_F32, 2, shape, &embeds);
    if (status != SVP_OK) {
        goto out_clip;
    }
    status = svp_clip_encode(clip, (int)shape[0], pixels->data, embeds->data);
    if (status == SVP_OK) {
        status = svp_safetensors_write_all(a->output, 1, names, &embeds);
    }
    svp_tensor_destroy(embeds);
out_clip:
    svp_clip_destroy(clip);
out_ops:
    svp_ops_destroy(ops);
out_close:
    svp_tensor_destroy(pixels);
    svp_safetensors_close(st);
    return status;
}

static void svdtool_clip_usage(FILE *f)
{
    fprintf(f, "usage: svdtool clip --model DIR --input IN.safetensors "
               "--output OUT.safetensors [--threads N] [--dtype f32|bf16|f16]\n"
               "  runs the CLIP image encoder; IN holds pixel_values [B,3,S,S]\n"
               "  (CLIP-normalised); OUT gets image_embeds [B,P].\n");
}

int svdtool_clip_main(int argc, char **argv)
{
    return svdtool_io_main("clip", argc, argv, svdtool_clip_usage, svdtool_clip_run);
}
