/*
 * svdtool unet: one UNet call on tensors from a file.
 *
 *   svdtool unet --model DIR --input IN.safetensors --output OUT.safetensors
 *
 * IN holds sample [B,F,C,H,W], timestep [B] (or one value for every row),
 * encoder_hidden_states [B,S,D] and added_time_ids [B,3]; OUT gets `out`
 * [B,F,out_channels,H,W] (F32), written atomically.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "tools/svdtool_cmds_unet.h"
#include "common/log.h"
#include "common/status.h"
#include "model/unet.h"
#include "tensor/safetensors.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void svdtool_unet_usage(FILE *f)
{
    fprintf(f,
            "usage: svdtool unet --model DIR --input IN.safetensors "
            "--output OUT.safetensors [--threads N]\n"
            "  runs one UNet forward; IN holds sample [B,F,C,H,W], timestep [B],\n"
            "  encoder_hidden_states [B,S,D], added_time_ids [B,3]; OUT gets out.\n");
}

/* Loads name as F32 with the given rank; the error names file and tensor. */
static svp_status_t svdtool_input(svp_safetensors_h st, const char *name,
                                  int ndim, svp_tensor_t **t_p)
{
    svp_status_t status = svp_safetensors_load(st, name, SVP_DTYPE_F32, t_p);

    if (status != SVP_OK) {
        return status;
    }
    if (ndim >= 0 && (*t_p)->ndim != ndim) {
        svp_error("%s: '%s' has %d dimensions, expected %d",
                  svp_safetensors_path(st), name, (*t_p)->ndim, ndim);
        svp_tensor_destroy(*t_p);
        return SVP_ERR_SHAPE;
    }
    return SVP_OK;
}

static svp_status_t svdtool_unet_run(const char *model, const char *input,
                                     const char *output, int threads)
{
    svp_ops_params_t         op = { .threads = threads };
    svp_ops_h                ops;
    svp_unet_h               unet;
    svp_safetensors_h        st;
    svp_safetensors_writer_h wr;
    svp_tensor_t            *sample = NULL, *ts = NULL, *ehs = NULL, *ids = NULL;
    svp_tensor_t            *out = NULL;
    float                   *t = NULL;
    const svp_unet_config_t *cfg;
    int64_t                  oshape[5];
    int                      b, i;
    svp_status_t             status;

    status = svp_safetensors_open(input, &st);
    if (status != SVP_OK) {
        return status;
    }
    if ((status = svdtool_input(st, "sample", 5, &sample)) != SVP_OK ||
        (status = svdtool_input(st, "timestep", -1, &ts)) != SVP_OK ||
        (status = svdtool_input(st, "encoder_hidden_states", 3, &ehs)) != SVP_OK ||
        (status = svdtool_input(st, "added_time_ids", 2, &ids)) != SVP_OK) {
        goto out_close;
    }
    b = (int)sample->shape[0];
    if (ehs->shape[0] != b || ids->shape[0] != b ||
        (svp_tensor_numel(ts) != b && svp_tensor_numel(ts) != 1)) {
        svp_error("%s: batch mismatch: sample has %d rows, timestep %ld, "
                  "encoder_hidden_states %ld, added_time_ids %ld", input, b,
                  (long)svp_tensor_numel(ts), (long)ehs->shape[0],
                  (long)ids->shape[0]);
        status = SVP_ERR_SHAPE;
        goto out_close;
    }
    /* one timestep for every row, as diffusers broadcasts a scalar */
    t = malloc(b * sizeof(float));
    if (t == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out_close;
    }
    for (i = 0; i < b; i++) {
        t[i] = ((const float *)ts->data)[svp_tensor_numel(ts) == 1 ? 0 : i];
    }

    status = svp_ops_create(&op, &ops);
    if (status != SVP_OK) {
        goto out_close;
    }
    status = svp_unet_create(ops, model, NULL, &unet);
    if (status != SVP_OK) {
        goto out_ops;
    }
    cfg = svp_unet_config(unet);
    if (sample->shape[2] != cfg->in_channels ||
        ids->shape[1] * cfg->addition_time_embed_dim != cfg->projection_dim ||
        ehs->shape[2] != cfg->cross_dim[0]) {
        svp_error("%s: inputs do not fit %s: sample channels %ld (model %d), "
                  "%ld time ids (model %d), context width %ld (model %d)",
                  input, model, (long)sample->shape[2], cfg->in_channels,
                  (long)ids->shape[1],
                  cfg->projection_dim / cfg->addition_time_embed_dim,
                  (long)ehs->shape[2], cfg->cross_dim[0]);
        status = SVP_ERR_SHAPE;
        goto out_unet;
    }
    memcpy(oshape, sample->shape, sizeof(oshape));
    oshape[2] = cfg->out_channels;
    status = svp_tensor_create(SVP_DTYPE_F32, 5, oshape, &out);
    if (status != SVP_OK) {
        goto out_unet;
    }
    status = svp_unet_forward(unet, b, (int)sample->shape[1],
                              (int)sample->shape[3], (int)sample->shape[4],
                              sample->data, t, ehs->data, (int)ehs->shape[1],
                              ids->data, out->data);
    if (status != SVP_OK) {
        goto out_tensor;
    }
    status = svp_safetensors_writer_create(&wr);
    if (status != SVP_OK) {
        goto out_tensor;
    }
    status = svp_safetensors_writer_add(wr, "out", out);
    if (status == SVP_OK) {
        status = svp_safetensors_writer_commit(wr, output);
    }
    svp_safetensors_writer_destroy(wr);

out_tensor:
    svp_tensor_destroy(out);
out_unet:
    svp_unet_destroy(unet);
out_ops:
    svp_ops_destroy(ops);
out_close:
    free(t);
    svp_tensor_destroy(sample);
    svp_tensor_destroy(ts);
    svp_tensor_destroy(ehs);
    svp_tensor_destroy(ids);
    svp_safetensors_close(st);
    return status;
}

int svdtool_unet_main(int argc, char **argv)
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
    svp_status_t status;

    optind = 1;
    while ((c = getopt_long(argc, argv, "m:i:o:t:h", options, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'i': input = optarg; break;
        case 'o': output = optarg; break;
        case 't':
            threads = atoi(optarg);
            if (threads < 1) {
                fprintf(stderr, "svdtool unet: --threads needs a positive count, got '%s'\n",
                        optarg);
                return SVP_EXIT_BAD_INPUT;
            }
            break;
        case 'h': svdtool_unet_usage(stdout); return SVP_EXIT_OK;
        default:  svdtool_unet_usage(stderr); return SVP_EXIT_BAD_INPUT;
        }
    }
    if (model == NULL || input == NULL || output == NULL || optind != argc) {
        fprintf(stderr, "svdtool unet: --model, --input and --output are required\n");
        svdtool_unet_usage(stderr);
        return SVP_EXIT_BAD_INPUT;
    }
    status = svdtool_unet_run(model, input, output, threads);
    if (status != SVP_OK) {
        svp_error("svdtool unet failed: %s", svp_status_string(status));
        return svp_status_exit_code(status);
    }
    return SVP_EXIT_OK;
}
