/*
 * The file, random and dry walkers of the models' parameter walk; see
 * walker.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/walker.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define WALKER_NAME_MAX 256

static svp_status_t walker_vvisit(svp_model_walker_t *wk, float **vec, void **mat,
                                  float scale, int ndim, const int64_t *shape,
                                  const char *fmt, va_list ap)
{
    char name[WALKER_NAME_MAX];

    vsnprintf(name, sizeof(name), fmt, ap);
    return mat ? wk->matrix(wk, name, ndim, shape, scale, mat)
               : wk->param(wk, name, ndim, shape, scale, vec);
}

svp_status_t svp_model_walk_param(svp_model_walker_t *wk, float **buf_p, float scale,
                                  int ndim, const int64_t *shape, const char *fmt,
                                  ...)
{
    va_list      ap;
    svp_status_t status;

    va_start(ap, fmt);
    status = walker_vvisit(wk, buf_p, NULL, scale, ndim, shape, fmt, ap);
    va_end(ap);
    return status;
}

svp_status_t svp_model_walk_matrix(svp_model_walker_t *wk, void **buf_p, float scale,
                                   int ndim, const int64_t *shape, const char *fmt,
                                   ...)
{
    va_list      ap;
    svp_status_t status;

    va_start(ap, fmt);
    status = walker_vvisit(wk, NULL, buf_p, scale, ndim, shape, fmt, ap);
    va_end(ap);
    return status;
}

/* ---- the file walker ---- */

static svp_status_t walker_file_param(svp_model_walker_t *wk, const char *name,
                                      int ndim, const int64_t *shape, float scale,
                                      float **buf_p)
{
    return svp_weights_load(&((svp_model_file_walker_t *)wk)->w, name, ndim, shape,
                            scale, buf_p);
}

static svp_status_t walker_file_matrix(svp_model_walker_t *wk, const char *name,
                                       int ndim, const int64_t *shape, float scale,
                                       void **buf_p)
{
    return svp_weights_load_matrix(&((svp_model_file_walker_t *)wk)->w, name, ndim,
                                   shape, scale, buf_p);
}

static svp_status_t walker_file_scalar(svp_model_walker_t *wk, const char *name,
                                       float *value_p)
{
    return svp_weights_scalar(&((svp_model_file_walker_t *)wk)->w, name, value_p);
}

void svp_model_file_walker_init(svp_model_file_walker_t *fw)
{
    memset(fw, 0, sizeof(*fw));
    fw->base.param  = walker_file_param;
    fw->base.matrix = walker_file_matrix;
    fw->base.scalar = walker_file_scalar;
}

/* ---- the random walker ---- */

static svp_status_t walker_random_tensor(svp_model_walker_t *wk, const char *name,
                                         int ndim, const int64_t *shape)
{
    svp_model_random_walker_t *rwk = (svp_model_random_walker_t *)wk;

    /* the scale applies when the file is loaded, not to what it holds */
    if (rwk->tensor != NULL) {
        return rwk->tensor(rwk->rw, name, ndim, shape);
    }
    return svp_random_weights_add_default(rwk->rw, name, ndim, shape);
}

static svp_status_t walker_random_param(svp_model_walker_t *wk, const char *name,
                                        int ndim, const int64_t *shape, float scale,
                                        float **buf_p)
{
    return walker_random_tensor(wk, name, ndim, shape);
}

static svp_status_t walker_random_matrix(svp_model_walker_t *wk, const char *name,
                                         int ndim, const int64_t *shape, float scale,
                                         void **buf_p)
{
    return walker_random_tensor(wk, name, ndim, shape);
}

static svp_status_t walker_random_scalar(svp_model_walker_t *wk, const char *name,
                                         float *value_p)
{
    int64_t shape[1] = {1};

    return svp_random_weights_add(((svp_model_random_walker_t *)wk)->rw, name, 1,
                                  shape, 0.0, 1.0, value_p);
}

void svp_model_random_walker_init(svp_model_random_walker_t *rwk,
                                  svp_random_weights_h       rw)
{
    rwk->base.param  = walker_random_param;
    rwk->base.matrix = walker_random_matrix;
    rwk->base.scalar = walker_random_scalar;
    rwk->rw          = rw;
    rwk->tensor      = NULL;
}

/* ---- the dry walker ---- */

static svp_status_t walker_dry_param(svp_model_walker_t *wk, const char *name,
                                     int ndim, const int64_t *shape, float scale,
                                     float **buf_p)
{
    return SVP_OK;
}

static svp_status_t walker_dry_matrix(svp_model_walker_t *wk, const char *name,
                                      int ndim, const int64_t *shape, float scale,
                                      void **buf_p)
{
    return SVP_OK;
}

static svp_status_t walker_dry_scalar(svp_model_walker_t *wk, const char *name,
                                      float *value_p)
{
    *value_p = 0.0f;
    return SVP_OK;
}

void svp_model_dry_walker_init(svp_model_walker_t *wk)
{
    wk->param  = walker_dry_param;
    wk->matrix = walker_dry_matrix;
    wk->scalar = walker_dry_scalar;
}
