/*
 * Random UNet weights in diffusers' layout, for tests and demos without a
 * real checkpoint.  The parameter walk supplies names and shapes, so the
 * file holds exactly what svp_unet_create() (and diffusers) expect.  The
 * values come from random_weights.h: every tensor from its own stream,
 * seeded by (seed, name), so a tensor's values do not depend on which
 * tensors come before it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/unet_int.h"
#include "model/random_weights.h"

#include <string.h>

svp_status_t svp_unet_write_random(const char *config_path, uint64_t seed,
                                   const char *out_dir)
{
    svp_model_random_walker_t iw;
    svp_random_weights_h      rw;
    struct svp_unet           u;
    svp_status_t              status;

    memset(&u, 0, sizeof(u));
    status = svp_unet_config_load(config_path, &u.cfg);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_random_weights_create(seed, 0, &rw);
    if (status != SVP_OK) {
        return status;
    }
    svp_model_random_walker_init(&iw, rw);
    status = unet_params_walk(&u, &iw.base);
    if (status == SVP_OK) {
        status = svp_random_weights_commit(rw, config_path, out_dir,
                                           "diffusion_pytorch_model.safetensors");
    }
    svp_random_weights_destroy(rw);
    unet_params_free_tree(&u);
    return status;
}
