/*
 * svdtool unet: one UNet call on tensors from a file.
 *
 *   svdtool unet --model DIR --input IN.safetensors --output OUT.safetensors
 *                [--threads N] [--dtype f32|bf16|f16] [--profile PROFILE.json]
 *
 * --dtype holds the matrix weights in that dtype (ops.h); bf16 on a CPU
 * with AVX512-BF16 runs the products on those units.
 *
 * IN holds sample [B,F,C,H,W], timestep [B] (or one value for every row),
 * encoder_hidden_states [B,S,D] and added_time_ids [B,3]; OUT gets `out`
 * [B,F,out_channels,H,W] (F32), written atomically.
 *
 * --profile runs the call twice and profiles the second (the first pays for
 * page faults on the mapped weights and the backend's warm-up): time and
 * FLOPs per block and per op kind (trace/range.h), the counted FLOPs of the
 * call (svp_unet_macs), backend, threads and shape, for svdtool report.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_cmds_unet.h"
#include "common/log.h"
#include "common/status.h"
#include "model/unet.h"
#include "ops/ops_profile.h"
#include "common/clock.h"
#include "trace/range.h"
#include "tensor/safetensors_io.h"
#include "svdtool_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void svdtool_unet_usage(FILE *f)
{
    fprintf(
        f, "usage: svdtool unet --model DIR --input IN.safetensors "
           "--output OUT.safetensors [--threads N]\n"
           "       [--dtype f32|bf16|f16] [--profile PROFILE.json]\n"
           "  runs one UNet forward; IN holds sample [B,F,C,H,W], timestep [B],\n"
           "  encoder_hidden_states [B,S,D], added_time_ids [B,3]; OUT gets out.\n");
}

/* The memory plan of the forward just run: what a planner must budget. */
static void svdtool_unet_log_arena(svp_ops_h ops, size_t weight_bytes)
{
    svp_ops_mem_stats_t mem;

    svp_ops_mem_stats(ops, &mem);
    svp_info("unet arena (%s): %zu bytes reserved (weights %zu, activations' "
             "slab %zu, workspace %zu), peak %zu live, %llu backend "
             "allocations",
             svp_ops_backend(ops), mem.reserved_bytes, weight_bytes, mem.slab_bytes,
             mem.workspace_bytes, mem.peak_live_bytes,
             (unsigned long long)mem.backend_allocs);
}

static const char *svdtool_unet_profile;

/* Writes the profile of the call just made, with what it was made on. */
static svp_status_t svdtool_unet_profile_save(const char *path, svp_ops_h ops,
                                              const svp_unet_config_t *cfg, int b,
                                              int f, int h, int w, int seq, double s)
{
    json_t *about;

    about = json_pack("{s:s, s:s, s:i, s:{s:i, s:i, s:i, s:i, s:i}, s:f, s:f}",
                      "kind", "unet", "backend", svp_ops_backend(ops), "threads",
                      svp_ops_threads(ops), "shape", "batch", b, "frames", f,
                      "height", h, "width", w, "seq", seq, "s", s, "flops_counted",
                      2.0 * (double)svp_unet_macs(cfg, b, f, h, w, seq));
    svp_info("profile of one call: %.3fs", s);
    return svp_range_profile_save(path, about);
}

/* One call of the UNet on the file's inputs: sample's rows, t their
 * timesteps. */
static svp_status_t svdtool_unet_call(svp_unet_h unet, const svp_tensor_t *sample,
                                      const float *t, const svp_tensor_t *ehs,
                                      const svp_tensor_t *ids, svp_tensor_t *out)
{
    return svp_unet_forward(unet, (int)sample->shape[0], (int)sample->shape[1],
                            (int)sample->shape[3], (int)sample->shape[4],
                            sample->data, t, ehs->data, (int)ehs->shape[1],
                            ids->data, out->data);
}

static svp_status_t svdtool_unet_run(const svdtool_io_args_t *a)
{
    static const char *const names[] = {"out"};
    svp_ops_params_t         op      = {.threads = a->threads, .dtype = a->dtype};
    double                   t0;
    svp_ops_h                ops;
    svp_unet_h               unet;
    svp_safetensors_h        st;
    svp_tensor_t            *sample = NULL, *ts = NULL, *ehs = NULL, *ids = NULL;
    svp_tensor_t            *out = NULL;
    float                   *t   = NULL;
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
    if ((status = svp_safetensors_load_ranked(st, "sample", 5, 5, &sample)) !=
            SVP_OK ||
        (status = svp_safetensors_load_ranked(st, "timestep", 0, SVP_TENSOR_MAX_DIMS,
                                              &ts)) != SVP_OK ||
        (status = svp_safetensors_load_ranked(st, "encoder_hidden_states", 3, 3,
                                              &ehs)) != SVP_OK ||
        (status = svp_safetensors_load_ranked(st, "added_time_ids", 2, 2, &ids)) !=
            SVP_OK) {
        goto out_close;
    }
    b = (int)sample->shape[0];
    if (ehs->shape[0] != b || ids->shape[0] != b ||
        (svp_tensor_numel(ts) != b && svp_tensor_numel(ts) != 1)) {
        svp_error("%s: batch mismatch: sample has %d rows, timestep %ld, "
                  "encoder_hidden_states %ld, added_time_ids %ld",
                  a->input, b, (long)svp_tensor_numel(ts), (long)ehs->shape[0],
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
    cfg          = svp_unet_config(unet);
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
    status    = svp_tensor_create(SVP_DTYPE_F32, 5, oshape, &out);
    if (status != SVP_OK) {
        goto out_unet;
    }
    if (svdtool_unet_profile != NULL) {
        status = svdtool_unet_call(unet, sample, t, ehs, ids, out); /* warm-up */
        if (status == SVP_OK) {
            status = svp_ops_profile_enable(ops);
        }
        if (status == SVP_OK) {
            svp_range_profile_reset();
            svp_range_profile_enable(1, svp_ops_profile_sync, ops);
            svp_ops_profile_sync(ops);
            t0     = svp_clock_now();
            status = svdtool_unet_call(unet, sample, t, ehs, ids, out);
            svp_ops_profile_sync(ops);
            t0 = svp_clock_now() - t0;
            svp_range_profile_enable(0, NULL, NULL);
            svp_ops_profile_disable(ops);
        }
        if (status == SVP_OK) {
            status = svdtool_unet_profile_save(svdtool_unet_profile, ops, cfg, b,
                                               (int)sample->shape[1],
                                               (int)sample->shape[3],
                                               (int)sample->shape[4],
                                               (int)ehs->shape[1], t0);
        }
    } else {
        status = svdtool_unet_call(unet, sample, t, ehs, ids, out);
    }
    if (status == SVP_OK) {
        svdtool_unet_log_arena(ops, weight_bytes);
        status = svp_safetensors_write_all(a->output, 1, names, &out);
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
    char **rest;
    int    i, n = 0, code;

    /* this command's own options; the common ones go to svdtool_io_main */
    rest = calloc(argc + 1, sizeof(*rest));
    if (rest == NULL) {
        return SVP_EXIT_FAILURE;
    }
    for (i = 0; i < argc; ++i) {
        if (!strcmp(argv[i], "--profile") && i + 1 >= argc) {
            fprintf(stderr, "svdtool unet: %s needs a value\n", argv[i]);
            free(rest);
            return SVP_EXIT_BAD_INPUT;
        }
        if (!strcmp(argv[i], "--profile")) {
            svdtool_unet_profile = argv[++i];
        } else {
            rest[n++] = argv[i];
        }
    }
    code = svdtool_io_main("unet", n, rest, svdtool_unet_usage, svdtool_unet_run);
    free(rest);
    return code;
}
