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

typedef struct {
    unet_walker_t        base;
    svp_random_weights_h rw;
} unet_init_walker_t;

/* random_weights.h's default scheme, which is the golden data's. */
static svp_status_t unet_init_param(unet_walker_t *wk, const char *name,
                                    int ndim, const int64_t *shape,
                                    float **buf_p)
{
    return svp_random_weights_add_default(((unet_init_walker_t *)wk)->rw, name,
                                          ndim, shape);
}

static svp_status_t unet_init_matrix(unet_walker_t *wk, const char *name,
                                     int ndim, const int64_t *shape,
                                     void **buf_p)
{
    return svp_random_weights_add_default(((unet_init_walker_t *)wk)->rw, name,
                                          ndim, shape);
}

/* The mix factors: N(0, 1), so neither branch of a blend is silenced. */
static svp_status_t unet_init_scalar(unet_walker_t *wk, const char *name,
                                     float *value_p)
{
    int64_t shape[1] = { 1 };

    return svp_random_weights_add(((unet_init_walker_t *)wk)->rw, name, 1,
                                  shape, 0.0, 1.0, value_p);
}

svp_status_t svp_unet_write_random(const char *config_path, uint64_t seed,
                                   const char *out_dir)
{
    unet_init_walker_t iw = { .base = { unet_init_param, unet_init_matrix,
                                                   unet_init_scalar } };
    struct svp_unet    u;
    svp_status_t       status;

    memset(&u, 0, sizeof(u));
    status = svp_unet_config_load(config_path, &u.cfg);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_random_weights_create(seed, 0, &iw.rw);
    if (status != SVP_OK) {
        return status;
    }
    status = unet_params_walk(&u, &iw.base);
    if (status == SVP_OK) {
        status = svp_random_weights_commit(iw.rw, config_path, out_dir,
                                           "diffusion_pytorch_model.safetensors");
    }
    svp_random_weights_destroy(iw.rw);
    unet_params_free_tree(&u);
    return status;
}
