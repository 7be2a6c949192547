/*
 * Random VAE weights in diffusers' layout, for tests and demos without a
 * real checkpoint.  The parameter walk supplies names and shapes, so the
 * file holds exactly what svp_vae_create() (and diffusers) expect.
 *
 * Every tensor draws from its own counter-based stream, keyed by (seed,
 * name), so a tensor's values do not depend on which tensors come first.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/vae_int.h"
#include "common/log.h"
#include "common/util.h"
#include "sched/rng.h"
#include "tensor/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    vae_walker_t             base;
    uint64_t                 seed;
    svp_safetensors_writer_h writer;
    svp_tensor_t           **tensors;   /* owned until the file is written */
    int                      count, cap;
} vae_init_walker_t;

static svp_status_t vae_init_add(vae_init_walker_t *iw, const char *name,
                                 int ndim, const int64_t *shape, double mean,
                                 double std)
{
    svp_tensor_t *t, **tensors;
    int64_t       i, numel;
    float        *data;
    svp_status_t  status;

    if (iw->count == iw->cap) {
        int cap = SVP_MAX(256, 2 * iw->cap);
        tensors = realloc(iw->tensors, cap * sizeof(*tensors));
        if (tensors == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        iw->tensors = tensors;
        iw->cap     = cap;
    }
    status = svp_tensor_create(SVP_DTYPE_F32, ndim, shape, &t);
    if (status != SVP_OK) {
        return status;
    }
    iw->tensors[iw->count++] = t;
    numel = svp_tensor_numel(t);
    data  = t->data;
    svp_rng_normal(iw->seed, svp_hash_fnv1a(name, strlen(name), 0), 0,
                   (size_t)numel, data);
    for (i = 0; i < numel; i++) {
        data[i] = (float)(mean + std * data[i]);
    }
    return svp_safetensors_writer_add(iw->writer, name, t);
}

/*
 * The golden data's scheme: kernels and matrices N(0, 1/fan_in), vectors
 * named *.weight are GroupNorm scales (1 + N(0, 0.1^2)), biases
 * N(0, 0.05^2).
 */
static svp_status_t vae_init_param(vae_walker_t *wk, const char *name,
                                   int ndim, const int64_t *shape,
                                   float **buf_p)
{
    vae_init_walker_t *iw = (vae_init_walker_t *)wk;
    size_t             len = strlen(name);
    int64_t            fan_in = 1;
    int                i;

    if (ndim >= 2) {
        for (i = 1; i < ndim; i++) {
            fan_in *= shape[i];
        }
        return vae_init_add(iw, name, ndim, shape, 0.0, 1.0 / sqrt((double)fan_in));
    }
    if (len > 7 && strcmp(name + len - 7, ".weight") == 0) {
        return vae_init_add(iw, name, ndim, shape, 1.0, 0.1);
    }
    return vae_init_add(iw, name, ndim, shape, 0.0, 0.05);
}

/* mix factors ~ N(0, 1): every block gets its own blend */
static svp_status_t vae_init_scalar(vae_walker_t *wk, const char *name,
                                    float *value_p)
{
    vae_init_walker_t *iw = (vae_init_walker_t *)wk;
    int64_t            shape[1] = { 1 };
    svp_status_t       status;

    status = vae_init_add(iw, name, 1, shape, 0.0, 1.0);
    if (status == SVP_OK) {
        *value_p = *(float *)iw->tensors[iw->count - 1]->data;
    }
    return status;
}

svp_status_t svp_vae_write_random(const char *config_path, uint64_t seed,
                                  const char *out_dir)
{
    vae_init_walker_t iw = { .base = { vae_init_param, vae_init_scalar },
                             .seed = seed };
    struct svp_vae    v;
    char              path[4096], *text = NULL;
    size_t            len;
    int               i;
    svp_status_t      status;

    memset(&v, 0, sizeof(v));
    status = svp_vae_config_load(config_path, &v.cfg);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_safetensors_writer_create(&iw.writer);
    if (status != SVP_OK) {
        return status;
    }
    status = vae_params_walk(&v, &iw.base);
    if (status != SVP_OK) {
        goto out;
    }
    status = svp_mkdir_p(out_dir, 0755);
    if (status != SVP_OK) {
        goto out;
    }
    snprintf(path, sizeof(path), "%s/diffusion_pytorch_model.safetensors", out_dir);
    status = svp_safetensors_writer_commit(iw.writer, path);
    if (status != SVP_OK) {
        goto out;
    }
    status = svp_file_read_all(config_path, &text, &len);
    if (status != SVP_OK) {
        goto out;
    }
    snprintf(path, sizeof(path), "%s/config.json", out_dir);
    status = svp_file_write_atomic(path, text, len);
    if (status == SVP_OK) {
        svp_info("wrote %d random VAE tensors (seed %llu) to %s", iw.count,
                 (unsigned long long)seed, out_dir);
    }
out:
    free(text);
    svp_safetensors_writer_destroy(iw.writer);
    for (i = 0; i < iw.count; i++) {
        svp_tensor_destroy(iw.tensors[i]);
    }
    free(iw.tensors);
    vae_params_free_tree(&v);
    return status;
}
