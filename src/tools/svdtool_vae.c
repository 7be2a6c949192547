/*
 * svdtool vae-encode and vae-decode: the VAE on tensors from a file.
 *
 *   svdtool vae-encode --model DIR --input IN.safetensors --output OUT.safetensors
 *     IN holds image [N,C,H,W] in [-1,1]; OUT gets the posterior's mean,
 *     logvar and std [N,latent,H/8,W/8] (no scaling factor applied).
 *
 *   svdtool vae-decode --model DIR --input IN.safetensors --output OUT.safetensors
 *                      [--frames N] [--chunk N] [--unscale]
 *     IN holds latents, either [B,F,latent,h,w] (B videos of F frames) or
 *     [N,latent,h,w] with the frame count from --frames or from a tensor
 *     num_frames in IN (N a multiple of it: N / frames videos, as diffusers'
 *     decode(z, num_frames)); OUT gets frames [.., out_channels, 8h, 8w] of
 *     the same rank, the raw decoder output (about [-1,1], not clamped).
 *     --chunk decodes each video in chunks of that many frames, like the
 *     pipeline's decode_chunk_size (default: all frames at once).
 *     --unscale multiplies the latents by 1/scaling_factor first, as the
 *     pipeline does with the denoised latents.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_cmds_vae.h"
#include "common/log.h"
#include "common/status.h"
#include "model/vae.h"
#include "tensor/safetensors_io.h"
#include "svdtool_io.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *model, *input, *output;
    int         threads;
    int         frames; /* 0: from the input file */
    int         chunk;  /* 0: whole videos */
    int         unscale;
} svdtool_vae_args_t;

static svp_status_t svdtool_vae_open(const svdtool_vae_args_t *a, svp_ops_h *ops_p,
                                     svp_vae_h *vae_p)
{
    svp_ops_params_t op = {.threads = a->threads};
    svp_status_t     status;

    status = svp_ops_create(&op, ops_p);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_vae_create(*ops_p, a->model, NULL, vae_p);
    if (status != SVP_OK) {
        svp_ops_destroy(*ops_p);
    }
    return status;
}

static svp_status_t svdtool_vae_encode_run(const svdtool_vae_args_t *a)
{
    static const char *const names[] = {"mean", "logvar", "std"};
    svp_ops_h                ops;
    svp_vae_h                vae;
    svp_safetensors_h        st;
    svp_tensor_t            *image = NULL, *out[3] = {NULL, NULL, NULL};
    const svp_vae_config_t  *cfg;
    int64_t                  shape[4];
    int                      i;
    svp_status_t             status;

    status = svp_safetensors_open(a->input, &st);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_safetensors_load_ranked(st, "image", 4, 4, &image);
    if (status != SVP_OK) {
        goto out_close;
    }
    status = svdtool_vae_open(a, &ops, &vae);
    if (status != SVP_OK) {
        goto out_close;
    }
    cfg = svp_vae_config(vae);
    if (image->shape[1] != cfg->in_channels) {
        svp_error("%s: image has %ld channels, %s takes %d", a->input,
                  (long)image->shape[1], a->model, cfg->in_channels);
        status = SVP_ERR_SHAPE;
        goto out_vae;
    }
    shape[0] = image->shape[0];
    shape[1] = cfg->latent_channels;
    {
        int lh, lw;
        svp_vae_latent_size(cfg, (int)image->shape[2], (int)image->shape[3], &lh,
                            &lw);
        shape[2] = lh;
        shape[3] = lw;
    }
    for (i = 0; i < 3; i++) {
        status = svp_tensor_create(SVP_DTYPE_F32, 4, shape, &out[i]);
        if (status != SVP_OK) {
            goto out_tensors;
        }
    }
    status = svp_vae_encode(vae, (int)image->shape[0], (int)image->shape[2],
                            (int)image->shape[3], image->data, out[0]->data,
                            out[1]->data, out[2]->data);
    if (status == SVP_OK) {
        status = svp_safetensors_write_all(a->output, 3, names, out);
    }
out_tensors:
    for (i = 0; i < 3; i++) {
        svp_tensor_destroy(out[i]);
    }
out_vae:
    svp_vae_destroy(vae);
    svp_ops_destroy(ops);
out_close:
    svp_tensor_destroy(image);
    svp_safetensors_close(st);
    return status;
}

/* --frames, else the file's num_frames tensor (an F32 holding an integer). */
static svp_status_t svdtool_vae_frames(const svdtool_vae_args_t *a,
                                       svp_safetensors_h st, int *frames_p)
{
    svp_safetensors_info_t info;
    svp_tensor_t          *t;
    double                 f;
    svp_status_t           status;

    if (a->frames > 0) {
        *frames_p = a->frames;
        return SVP_OK;
    }
    if (svp_safetensors_find(st, "num_frames", &info) != SVP_OK) {
        svp_error("%s: 4-D latents need the frame count: give --frames or a "
                  "tensor 'num_frames'",
                  a->input);
        return SVP_ERR_INVALID_PARAM;
    }
    status = svp_safetensors_load(st, "num_frames", SVP_DTYPE_F32, &t);
    if (status != SVP_OK) {
        return status;
    }
    f = (svp_tensor_numel(t) == 1) ? *(const float *)t->data : -1.0;
    svp_tensor_destroy(t);
    if (!(f >= 1.0) || f != floor(f) || f > 1e6) {
        svp_error("%s: 'num_frames' must hold one positive integer", a->input);
        return SVP_ERR_BAD_FILE;
    }
    *frames_p = (int)f;
    return SVP_OK;
}

static svp_status_t svdtool_vae_decode_run(const svdtool_vae_args_t *a)
{
    static const char *const names[] = {"frames"};
    svp_ops_h                ops;
    svp_vae_h                vae;
    svp_safetensors_h        st;
    svp_tensor_t            *lat = NULL, *out = NULL;
    const svp_vae_config_t  *cfg;
    int64_t                  shape[5], n, i, in_video, out_video;
    int                      d, frames, videos, up, h, w;
    float                    inv;
    svp_status_t             status;

    status = svp_safetensors_open(a->input, &st);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_safetensors_load_ranked(st, "latents", 4, 5, &lat);
    if (status != SVP_OK) {
        goto out_close;
    }
    d = lat->ndim;
    if (d == 5) {
        videos = (int)lat->shape[0];
        frames = (int)lat->shape[1];
        if (a->frames > 0 && a->frames != frames) {
            svp_error("%s: latents hold %d frames per video, --frames says %d",
                      a->input, frames, a->frames);
            status = SVP_ERR_SHAPE;
            goto out_close;
        }
    } else {
        status = svdtool_vae_frames(a, st, &frames);
        if (status != SVP_OK) {
            goto out_close;
        }
        if (lat->shape[0] % frames != 0) {
            svp_error("%s: %ld latent frames are not a whole number of "
                      "videos of %d frames",
                      a->input, (long)lat->shape[0], frames);
            status = SVP_ERR_SHAPE;
            goto out_close;
        }
        videos = (int)(lat->shape[0] / frames);
    }
    h = (int)lat->shape[d - 2];
    w = (int)lat->shape[d - 1];

    status = svdtool_vae_open(a, &ops, &vae);
    if (status != SVP_OK) {
        goto out_close;
    }
    cfg = svp_vae_config(vae);
    if (lat->shape[d - 3] != cfg->latent_channels) {
        svp_error("%s: latents have %ld channels, %s takes %d", a->input,
                  (long)lat->shape[d - 3], a->model, cfg->latent_channels);
        status = SVP_ERR_SHAPE;
        goto out_vae;
    }
    if (a->unscale) {
        /* the pipeline's latents * (1 / scaling_factor): the reciprocal is
         * a double, the product fp32 */
        inv = (float)(1.0 / cfg->scaling_factor);
        n   = svp_tensor_numel(lat);
        for (i = 0; i < n; i++) {
            ((float *)lat->data)[i] *= inv;
        }
    }
    up = 1 << (cfg->levels - 1);
    memcpy(shape, lat->shape, sizeof(shape));
    shape[d - 3] = cfg->out_channels;
    shape[d - 2] = (int64_t)h * up;
    shape[d - 1] = (int64_t)w * up;
    status       = svp_tensor_create(SVP_DTYPE_F32, d, shape, &out);
    if (status != SVP_OK) {
        goto out_vae;
    }
    in_video  = (int64_t)frames * cfg->latent_channels * h * w;
    out_video = (int64_t)frames * cfg->out_channels * h * up * w * up;
    for (i = 0; i < videos && status == SVP_OK; i++) {
        status = svp_vae_decode(vae, frames, h, w, a->chunk,
                                (const float *)lat->data + i * in_video,
                                (float *)out->data + i * out_video);
    }
    if (status == SVP_OK) {
        status = svp_safetensors_write_all(a->output, 1, names, &out);
    }
    svp_tensor_destroy(out);
out_vae:
    svp_vae_destroy(vae);
    svp_ops_destroy(ops);
out_close:
    svp_tensor_destroy(lat);
    svp_safetensors_close(st);
    return status;
}

static void svdtool_vae_usage(FILE *f, int decode)
{
    if (decode) {
        fprintf(
            f,
            "usage: svdtool vae-decode --model DIR --input IN.safetensors "
            "--output OUT.safetensors\n"
            "                          [--frames N] [--chunk N] [--unscale] "
            "[--threads N]\n"
            "  decodes latents [B,F,4,h,w] (or [N,4,h,w] with --frames or a\n"
            "  num_frames tensor) into frames; --chunk: frames per decoder call;\n"
            "  --unscale: multiply by 1/scaling_factor first.\n");
    } else {
        fprintf(
            f, "usage: svdtool vae-encode --model DIR --input IN.safetensors "
               "--output OUT.safetensors [--threads N]\n"
               "  encodes image [N,3,H,W] in [-1,1]; OUT gets mean, logvar, std.\n");
    }
}

static int svdtool_vae_main(int argc, char **argv, int decode)
{
    static const struct option options[] = {
        {"model", required_argument, NULL, 'm'},
        {"input", required_argument, NULL, 'i'},
        {"output", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 't'},
        {"frames", required_argument, NULL, 'f'},
        {"chunk", required_argument, NULL, 'c'},
        {"unscale", no_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char        *cmd = decode ? "vae-decode" : "vae-encode";
    svdtool_vae_args_t a   = {0};
    int                c, bad = 0;
    svp_status_t       status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "m:i:o:t:f:c:uh", options, NULL)) != -1) {
        switch (c) {
        case 'm':
            a.model = optarg;
            break;
        case 'i':
            a.input = optarg;
            break;
        case 'o':
            a.output = optarg;
            break;
        case 't':
            bad |= svdtool_io_count(cmd, "threads", optarg, 1, &a.threads);
            break;
        case 'f':
            bad |= !decode || svdtool_io_count(cmd, "frames", optarg, 1, &a.frames);
            break;
        case 'c':
            bad |= !decode || svdtool_io_count(cmd, "chunk", optarg, 0, &a.chunk);
            break;
        case 'u':
            bad |= !decode;
            a.unscale = 1;
            break;
        case 'h':
            svdtool_vae_usage(stdout, decode);
            return SVP_EXIT_OK;
        default:
            bad = 1;
            break;
        }
    }
    if (bad) {
        svdtool_vae_usage(stderr, decode);
        return SVP_EXIT_BAD_INPUT;
    }
    if (a.model == NULL || a.input == NULL || a.output == NULL || optind != argc) {
        fprintf(stderr, "svdtool %s: --model, --input and --output are required\n",
                cmd);
        svdtool_vae_usage(stderr, decode);
        return SVP_EXIT_BAD_INPUT;
    }
    status = decode ? svdtool_vae_decode_run(&a) : svdtool_vae_encode_run(&a);
    if (status != SVP_OK) {
        svp_error("svdtool %s failed: %s", cmd, svp_status_string(status));
        return svp_status_exit_code(status);
    }
    return SVP_EXIT_OK;
}

int svdtool_vae_encode_main(int argc, char **argv)
{
    return svdtool_vae_main(argc, argv, 0);
}

int svdtool_vae_decode_main(int argc, char **argv)
{
    return svdtool_vae_main(argc, argv, 1);
}
