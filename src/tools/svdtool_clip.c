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
#include "tools/svdtool_cmds_vae.h"
#include "common/log.h"
#include "common/status.h"
#include "model/clip.h"
#include "tensor/safetensors.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static svp_status_t svdtool_clip_run(const char *model, const char *input,
                                     const char *output, int threads)
{
    svp_ops_params_t         op = { .threads = threads };
    svp_ops_h                ops;
    svp_clip_h               clip;
    svp_safetensors_h        st;
    svp_safetensors_writer_h wr;
    svp_tensor_t            *pixels = NULL, *embeds = NULL;
    const svp_clip_config_t *cfg;
    int64_t                  shape[2];
    svp_status_t             status;

    status = svp_safetensors_open(input, &st);
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
    status = svp_clip_create(ops, model, NULL, &clip);
    if (status != SVP_OK) {
        goto out_ops;
    }
    cfg = svp_clip_config(clip);
    if (pixels->ndim != 4 || pixels->shape[1] != cfg->num_channels ||
        pixels->shape[2] != cfg->image_size ||
        pixels->shape[3] != cfg->image_size) {
        char have[96];
        svp_error("%s: pixel_values has shape %s, %s takes [B,%d,%d,%d]",
                  input, svp_tensor_shape_str(pixels, have, sizeof(have)),
                  model, cfg->num_channels, cfg->image_size, cfg->image_size);
        status = SVP_ERR_SHAPE;
        goto out_clip;
    }
    shape[0] = pixels->shape[0];
    shape[1] = cfg->projection_dim;
    status = svp_tensor_create(SVP_DTYPE_F32, 2, shape, &embeds);
    if (status != SVP_OK) {
        goto out_clip;
    }
    status = svp_clip_encode(clip, (int)shape[0], pixels->data, embeds->data);
    if (status != SVP_OK) {
        goto out_embeds;
    }
    status = svp_safetensors_writer_create(&wr);
    if (status != SVP_OK) {
        goto out_embeds;
    }
    status = svp_safetensors_writer_add(wr, "image_embeds", embeds);
    if (status == SVP_OK) {
        status = svp_safetensors_writer_commit(wr, output);
    }
    svp_safetensors_writer_destroy(wr);
out_embeds:
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
    fprintf(f,
            "usage: svdtool clip --model DIR --input IN.safetensors "
            "--output OUT.safetensors [--threads N]\n"
            "  runs the CLIP image encoder; IN holds pixel_values [B,3,S,S]\n"
            "  (CLIP-normalised); OUT gets image_embeds [B,P].\n");
}

int svdtool_clip_main(int argc, char **argv)
{
    static const struct option options[] = {
        { "model",   required_argument, NULL, 'm' },
        { "input",   required_argument, NULL, 'i' },
        { "output",  required_argument, NULL, 'o' },
        { "threads", required_argument, NULL, 't' },
        { "help",    no_argument,       NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char  *model = NULL, *input = NULL, *output = NULL;
    int          threads = 0, c;
    char        *end;
    svp_status_t status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "m:i:o:t:h", options, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'i': input = optarg; break;
        case 'o': output = optarg; break;
        case 't':
            threads = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || threads < 1) {
                fprintf(stderr, "svdtool clip: --threads needs a positive count, got '%s'\n",
                        optarg);
                return SVP_EXIT_BAD_INPUT;
            }
            break;
        case 'h': svdtool_clip_usage(stdout); return SVP_EXIT_OK;
        default:  svdtool_clip_usage(stderr); return SVP_EXIT_BAD_INPUT;
        }
    }
    if (model == NULL || input == NULL || output == NULL || optind != argc) {
        fprintf(stderr, "svdtool clip: --model, --input and --output are required\n");
        svdtool_clip_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    status = svdtool_clip_run(model, input, output, threads);
    if (status != SVP_OK) {
        svp_error("svdtool clip failed: %s", svp_status_string(status));
        return svp_status_exit_code(status);
    }
    return SVP_EXIT_OK;
}
