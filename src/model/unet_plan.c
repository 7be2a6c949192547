/*
 * The memory plan of a UNet call, without weights or a device: the UNet's
 * structure from its config, every weight left unset, one forward on the
 * dry backend (src/ops/ops_dry.c).  The arena records and places that pass
 * as it does on a real backend, so the figure is the slab a real forward
 * at this shape makes (tests/test_unet.c compares the two).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/unet_int.h"

#include <stdlib.h>
#include <string.h>

svp_status_t svp_unet_plan_bytes(const svp_unet_config_t *cfg, int batch, int frames,
                                 int h, int w, int seq, size_t *bytes_p)
{
    svp_model_walker_t  wk;
    svp_ops_params_t    params = {.backend = SVP_OPS_BACKEND_DRY, .threads = 1};
    svp_ops_mem_stats_t mem;
    struct svp_unet    *u;
    svp_ops_h           ops;
    float              *sample = NULL, *ehs = NULL, *out = NULL;
    float              *t, *ids;
    int                 n_ids;
    svp_status_t        status;

    u = calloc(1, sizeof(*u));
    if (u == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_ops_create(&params, &ops);
    if (status != SVP_OK) {
        free(u);
        return status;
    }
    u->ops = ops;
    u->cfg = *cfg;
    n_ids  = cfg->addition_time_embed_dim > 0
                 ? cfg->projection_dim / cfg->addition_time_embed_dim
                 : 1;
    t      = calloc(batch, sizeof(*t));
    ids    = calloc((size_t)batch * (n_ids > 0 ? n_ids : 1), sizeof(*ids));
    if (t == NULL || ids == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    svp_model_dry_walker_init(&wk);
    status = unet_params_walk(u, &wk);
    if (status != SVP_OK) {
        goto out;
    }
    /* the caller's buffers, outside the pass as in the worker */
    status = svp_ops_alloc(ops, (size_t)batch * frames * cfg->in_channels * h * w,
                           &sample);
    if (status == SVP_OK) {
        status = svp_ops_alloc(ops, (size_t)batch * seq * cfg->cross_dim[0], &ehs);
    }
    if (status == SVP_OK) {
        status =
            svp_ops_alloc(ops, (size_t)batch * frames * cfg->out_channels * h * w,
                          &out);
    }
    if (status == SVP_OK) {
        status =
            svp_unet_forward(u, batch, frames, h, w, sample, t, ehs, seq, ids, out);
    }
    if (status == SVP_OK) {
        svp_ops_mem_stats(ops, &mem);
        *bytes_p = mem.slab_bytes;
    }

out:
    svp_ops_free(ops, sample);
    svp_ops_free(ops, ehs);
    svp_ops_free(ops, out);
    free(t);
    free(ids);
    unet_params_free_tree(u);
    free(u);
    svp_ops_destroy(ops);
    return status;
}
