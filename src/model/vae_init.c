/*
 * Random AutoencoderKLTemporalDecoder weights in diffusers' layout, for
 * tests and demos without a real checkpoint.  The VAE's parameter walk
 * supplies names and shapes, so the file holds exactly what
 * svp_vae_create() (and diffusers) expect for the config.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/vae_int.h"
#include "model/random_weights.h"

#include <string.h>

svp_status_t svp_vae_random_add_all(const char *config_path, svp_random_weights_h rw)
{
    svp_model_random_walker_t iw;
    struct svp_vae            v;
    svp_status_t              status;

    memset(&v, 0, sizeof(v));
    status = svp_vae_config_load(config_path, &v.cfg);
    if (status != SVP_OK) {
        return status;
    }
    svp_model_random_walker_init(&iw, rw);
    status = vae_params_walk(&v, &iw.base);
    vae_params_free_tree(&v);
    return status;
}

svp_status_t svp_vae_write_random(const char *config_path, uint64_t seed,
                                  const char *out_dir)
{
    svp_random_weights_h rw;
    svp_status_t         status;

    status = svp_random_weights_create(seed, 0, &rw);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_vae_random_add_all(config_path, rw);
    if (status == SVP_OK) {
        status = svp_random_weights_commit(rw, config_path, out_dir,
                                           "diffusion_pytorch_model.safetensors");
    }
    svp_random_weights_destroy(rw);
    return status;
}
