/*
 * The parameter walk the UNet, the VAE and the image encoder share.  Each
 * model's walk (unet_params_walk(), vae_params_walk(), clip_load_all())
 * visits every parameter in the checkpoint's naming with the shape the
 * checkpoint gives it; what a visit does is the walker's:
 *
 *   file walker     loads the tensor from a weights file into a backend
 *                   buffer (or, with the file opened in check mode, only
 *                   checks its name, shape and dtype);
 *   random walker   adds a seeded random tensor to a file being written
 *                   (random_weights.h), for tests and demos;
 *   dry walker      leaves every weight unset, for a forward on the dry
 *                   backend that only measures memory (ops_dry.c).
 *
 * So one description of a model's tensors serves loading, checking,
 * writing and planning, and they cannot disagree about a name or a shape.
 */
#ifndef SVP_MODEL_WALKER_H
#define SVP_MODEL_WALKER_H

#include "common/status.h"
#include "model/random_weights.h"
#include "model/weights.h"

#include <stdint.h>

typedef struct svp_model_walker svp_model_walker_t;
struct svp_model_walker {
    /* a vector (bias, norm), times scale, into an fp32 buffer at *buf_p */
    svp_status_t (*param)(svp_model_walker_t *wk, const char *name, int ndim,
                          const int64_t *shape, float scale, float **buf_p);
    /* the weight of a linear or a convolution, times scale, in the
     * handle's dtype (svp_weights_load_matrix()) */
    svp_status_t (*matrix)(svp_model_walker_t *wk, const char *name, int ndim,
                           const int64_t *shape, float scale, void **buf_p);
    /* a mix factor: a host scalar */
    svp_status_t (*scalar)(svp_model_walker_t *wk, const char *name, float *value_p);
};

/* wk->param() / wk->matrix() on the name printf formats from fmt. */
svp_status_t svp_model_walk_param(svp_model_walker_t *wk, float **buf_p, float scale,
                                  int ndim, const int64_t *shape, const char *fmt,
                                  ...) __attribute__((format(printf, 6, 7)));
svp_status_t svp_model_walk_matrix(svp_model_walker_t *wk, void **buf_p, float scale,
                                   int ndim, const int64_t *shape, const char *fmt,
                                   ...) __attribute__((format(printf, 6, 7)));

/* Loads (or checks) every tensor from w, which the caller opens with
 * svp_weights_open() after svp_model_file_walker_init() (which zeroes fw)
 * and closes. */
typedef struct {
    svp_model_walker_t base;
    svp_weights_t      w;
} svp_model_file_walker_t;

void svp_model_file_walker_init(svp_model_file_walker_t *fw);

/*
 * Adds every tensor to rw, the caller's: random_weights.h's default
 * scheme, or tensor()'s where set (a model whose golden data draws some
 * tensors otherwise); mix factors N(0, 1), so that sigmoid(m) blends both
 * branches without silencing either.
 */
typedef struct {
    svp_model_walker_t   base;
    svp_random_weights_h rw;
    svp_status_t (*tensor)(svp_random_weights_h rw, const char *name, int ndim,
                           const int64_t *shape);
} svp_model_random_walker_t;

void svp_model_random_walker_init(svp_model_random_walker_t *rwk,
                                  svp_random_weights_h       rw);

/* Leaves every weight NULL and every mix factor 0: no op of the dry
 * backend reads them. */
void svp_model_dry_walker_init(svp_model_walker_t *wk);

#endif
