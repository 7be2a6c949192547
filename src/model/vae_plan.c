/*
 * The memory plan of a VAE encode or decode without weights or a device:
 * the VAE's structure from its config, every weight left unset, one call on
 * the dry backend (src/ops/ops_dry.c), as unet_plan.c does for the UNet.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/vae_int.h"

#include <stdlib.h>

svp_status_t svp_vae_plan_bytes(const svp_vae_config_t *cfg, int decode, int n,
                                int h, int w, int chunk, size_t *bytes_p)
{
    svp_model_walker_t  wk;
    svp_ops_params_t    params = {.backend = SVP_OPS_BACKEND_DRY, .threads = 1};
    svp_ops_mem_stats_t mem;
    struct svp_vae     *v;
    svp_ops_h           ops;
    float              *in = NULL, *out = NULL;
    int                 up = 1 << (cfg->levels - 1), lh, lw;
    size_t              n_in, n_out;
    svp_status_t        status;

    v = calloc(1, sizeof(*v));
    if (v == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_ops_create(&params, &ops);
    if (status != SVP_OK) {
        free(v);
        return status;
    }
    v->ops = ops;
    v->cfg = *cfg;
    svp_model_dry_walker_init(&wk);
    status = vae_params_walk(v, &wk);
    if (status != SVP_OK) {
        goto out;
    }
    if (decode) {
        n_in  = (size_t)n * cfg->latent_channels * h * w;
        n_out = (size_t)n * cfg->out_channels * h * up * w * up;
    } else {
        svp_vae_latent_size(cfg, h, w, &lh, &lw);
        n_in  = (size_t)n * cfg->in_channels * h * w;
        n_out = (size_t)n * cfg->latent_channels * lh * lw;
    }
    /* the caller's buffers, outside the pass as in the worker */
    status = svp_ops_alloc(ops, n_in, &in);
    if (status == SVP_OK) {
        status = svp_ops_alloc(ops, n_out, &out);
    }
    if (status == SVP_OK) {
        status = decode ? svp_vae_decode(v, n, h, w, chunk, in, out)
                        : svp_vae_encode(v, n, h, w, in, out, NULL, NULL);
    }
    if (status == SVP_OK) {
        svp_ops_mem_stats(ops, &mem);
        *bytes_p = mem.slab_bytes;
    }

out:
    svp_ops_free(ops, in);
    svp_ops_free(ops, out);
    vae_params_free_tree(v);
    free(v);
    svp_ops_destroy(ops);
    return status;
}
