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
#include "tools/svdtool_io.h"

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

/* The memory plan of the forward just run: what a planner must budget. */
static void svdtool_unet_log_arena(svp_ops_h ops, size_t weight_bytes)
{
    svp_ops_mem_stats_t mem;

    svp_ops_mem_stats(ops, &mem);
    svp_info("unet arena (%s): %zu bytes reserved (weights %zu, activations "
             "and workspace %zu), peak %zu live, %llu backend allocations",
             svp_ops_backend(ops), mem.reserved_bytes, weight_bytes,
             mem.reserved_bytes - weight_bytes, mem.peak_live_bytes,
             (unsigned long long)mem.backend_allocs);
}

static svp_status_t svdtool_unet_run(const svdtool_io_args_t *a)
{
    static const char *const names[] = { "out" };
    svp_ops_params_t         op = { .threads = a->threads };
    svp_ops_h                ops;
    svp_unet_h               unet;
    svp_safetensors_h        st;
    svp_tensor_t            *sample = NULL, *ts = NULL, *ehs = NULL, *ids = NULL;
    svp_tensor_t            *out = NULL;
    float                   *t = NULL;
    const svp_unet_config_t *cfg;
    int64_t                  oshape[5];
    int                      b, i;
    svp_ops_mem_stats_t      mem;
    size_t                   weight_bytes;
    svp_status_t             status;

    status = svp_safetensors_open(a->input, &st);
    if (status != SVP_OK) {
        return status;
    }
    if ((status = svdtool_io_input(st, "sample", 5, 5, &sample)) != SVP_OK ||
        (status = svdtool_io_input(st, "timestep", 0, SVP_TENSOR_MAX_DIMS,
                                   &ts)) != SVP_OK ||
        (status = svdtool_io_input(st, "encoder_hidden_states", 3, 3,
                                   &ehs)) != SVP_OK ||
        (status = svdtool_io_input(st, "added_time_ids", 2, 2, &ids)) != SVP_OK) {
        goto out_close;
    }
    b = (int)sample->shape[0];
    if (ehs->shape[0] != b || ids->shape[0] != b ||
        (svp_tensor_numel(ts) != b && svp_tensor_numel(ts) != 1)) {
        svp_error("%s: batch mismatch: sample has %d rows, timestep %ld, "
                  "encoder_hidden_states %ld, added_time_ids %ld", a->input, b,
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
    status = svp_unet_create(ops, a->model, NULL, &unet);
    if (status != SVP_OK) {
        goto out_ops;
    }
    svp_ops_mem_stats(ops, &mem);
    weight_bytes = mem.live_bytes;
    cfg = svp_unet_config(unet);
    if (sample->shape[2] != cfg->in_channels ||
        ids->shape[1] * cfg->addition_time_embed_dim != cfg->projection_dim ||
        ehs->shape[2] != cfg->cross_dim[0]) {
        svp_error("%s: inputs do not fit %s: sample channels %ld (model %d), "
                  "%ld time ids (model %d), context width %ld (model %d)",
                  a->input, a->model, (long)sample->shape[2], cfg->in_channels,
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
    if (status == SVP_OK) {
        svdtool_unet_log_arena(ops, weight_bytes);
        status = svdtool_io_write(a->output, 1, names, &out);
    }
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
    return svdtool_io_main("unet", argc, argv, svdtool_unet_usage,
                           svdtool_unet_run);
}
