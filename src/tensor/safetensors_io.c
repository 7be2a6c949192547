/*
 * Whole tensors in and out of safetensors files; see safetensors_io.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "tensor/safetensors_io.h"
#include "common/log.h"

svp_status_t svp_safetensors_load_ranked(svp_safetensors_h st, const char *name,
                                         int min_ndim, int max_ndim,
                                         svp_tensor_t **t_p)
{
    svp_tensor_t *t;
    svp_status_t  status;

    status = svp_safetensors_load(st, name, SVP_DTYPE_F32, &t);
    if (status != SVP_OK) {
        return status;
    }
    if (t->ndim < min_ndim || t->ndim > max_ndim) {
        if (min_ndim == max_ndim) {
            svp_error("%s: '%s' has %d dimensions, expected %d",
                      svp_safetensors_path(st), name, t->ndim, min_ndim);
        } else {
            svp_error("%s: '%s' has %d dimensions, expected %d to %d",
                      svp_safetensors_path(st), name, t->ndim, min_ndim, max_ndim);
        }
        svp_tensor_destroy(t);
        return SVP_ERR_SHAPE;
    }
    *t_p = t;
    return SVP_OK;
}

svp_status_t svp_safetensors_write_all(const char *path, int count,
                                       const char *const   *names,
                                       svp_tensor_t *const *tensors)
{
    svp_safetensors_writer_h wr;
    svp_status_t             status;
    int                      i;

    status = svp_safetensors_writer_create(&wr);
    if (status != SVP_OK) {
        return status;
    }
    for (i = 0; i < count && status == SVP_OK; i++) {
        status = svp_safetensors_writer_add(wr, names[i], tensors[i]);
    }
    if (status == SVP_OK) {
        status = svp_safetensors_writer_commit(wr, path);
    }
    svp_safetensors_writer_destroy(wr);
    return status;
}
