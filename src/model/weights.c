/*
 * A model's weights from its safetensors file; see weights.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/weights.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void svp_weight_bufs_free(svp_ops_h ops, svp_weight_bufs_t *bufs)
{
    int i;

    for (i = 0; i < bufs->count; i++) {
        svp_ops_free(ops, bufs->bufs[i]);
    }
    free(bufs->bufs);
    if (bufs->map != NULL) {
        munmap(bufs->map, bufs->map_len);
        bufs->map = NULL;
    }
    bufs->bufs  = NULL;
    bufs->count = 0;
    bufs->cap   = 0;
}

/* Adds buf to w->keep; on failure frees it (the caller then has nothing). */
static svp_status_t weight_bufs_add(svp_weights_t *w, float *buf)
{
    svp_weight_bufs_t *bufs = w->keep;
    float            **grown;
    int                cap;

    if (bufs->count == bufs->cap) {
        cap   = SVP_MAX(256, 2 * bufs->cap);
        grown = realloc(bufs->bufs, cap * sizeof(*grown));
        if (grown == NULL) {
            svp_ops_free(w->ops, buf);
            return SVP_ERR_NO_MEMORY;
        }
        bufs->bufs = grown;
        bufs->cap  = cap;
    }
    bufs->bufs[bufs->count++] = buf;
    return SVP_OK;
}

svp_status_t svp_weights_open(const char *model_dir, const char *weights_file,
                              const char *stem, svp_ops_h ops,
                              svp_weight_bufs_t *keep, svp_weights_t *w_p)
{
    static const char *const suffixes[] = {".safetensors", ".fp16.safetensors"};
    svp_weights_t            w          = {.ops = ops, .keep = keep};
    char                     path[4096];
    size_t                   i;
    svp_status_t             status;

    if (weights_file != NULL) {
        snprintf(path, sizeof(path), "%s/%s", model_dir, weights_file);
    } else {
        for (i = 0; i < SVP_ARRAY_SIZE(suffixes); i++) {
            snprintf(path, sizeof(path), "%s/%s%s", model_dir, stem, suffixes[i]);
            if (access(path, F_OK) == 0) {
                break;
            }
        }
        if (i == SVP_ARRAY_SIZE(suffixes)) {
            svp_error("%s: no %s%s or %s%s", model_dir, stem, suffixes[0], stem,
                      suffixes[1]);
            return SVP_ERR_NOT_FOUND;
        }
    }
    status = svp_safetensors_open(path, &w.st);
    if (status == SVP_OK) {
        *w_p = w;
    }
    return status;
}

void svp_weights_close(svp_weights_t *w)
{
    if (w->map != NULL && (w->keep == NULL || w->keep->map != w->map)) {
        munmap(w->map, w->map_len); /* nothing was borrowed from it */
    }
    w->map = NULL;
    svp_safetensors_close(w->st);
    w->st = NULL;
}

const char *svp_weights_path(const svp_weights_t *w)
{
    return svp_safetensors_path(w->st);
}

svp_status_t svp_weights_find(svp_weights_t *w, const char *name, int ndim,
                              const int64_t *shape)
{
    svp_safetensors_info_t info;
    char                   want[96], have[96];
    int                    i, same;

    if (svp_safetensors_find(w->st, name, &info) != SVP_OK) {
        svp_error("%s: missing tensor '%s'", svp_weights_path(w), name);
        return SVP_ERR_BAD_FILE;
    }
    same = (info.ndim == ndim);
    for (i = 0; same && i < ndim; i++) {
        same = (info.shape[i] == shape[i]);
    }
    if (!same) {
        svp_error("%s: tensor '%s' has shape %s, the config implies %s",
                  svp_weights_path(w), name,
                  svp_shape_str(info.ndim, info.shape, have, sizeof(have)),
                  svp_shape_str(ndim, shape, want, sizeof(want)));
        return SVP_ERR_BAD_FILE;
    }
    if (info.dtype != SVP_DTYPE_F32 && info.dtype != SVP_DTYPE_F16 &&
        info.dtype != SVP_DTYPE_BF16) {
        svp_error("%s: tensor '%s' is %s, expected F32, F16 or BF16",
                  svp_weights_path(w), name, svp_dtype_name(info.dtype));
        return SVP_ERR_BAD_FILE;
    }
    w->used++;
    return SVP_OK;
}

/* The tensor as fp32 on the host, times scale. */
static svp_status_t svp_weights_read(svp_weights_t *w, const char *name, float scale,
                                     svp_tensor_t **t_p)
{
    svp_tensor_t *t;
    float        *data;
    int64_t       i, numel;
    svp_status_t  status;

    status = svp_safetensors_load(w->st, name, SVP_DTYPE_F32, &t);
    if (status != SVP_OK) {
        return status;
    }
    if (scale != 1.0f) {
        numel = svp_tensor_numel(t);
        data  = t->data;
        for (i = 0; i < numel; i++) {
            data[i] *= scale;
        }
    }
    *t_p = t;
    return SVP_OK;
}

svp_status_t svp_weights_load(svp_weights_t *w, const char *name, int ndim,
                              const int64_t *shape, float scale, float **buf_p)
{
    svp_tensor_t *t;
    float        *buf;
    int64_t       numel;
    svp_status_t  status;

    status = svp_weights_find(w, name, ndim, shape);
    if (status != SVP_OK || w->keep == NULL) {
        return status;
    }
    status = svp_weights_read(w, name, scale, &t);
    if (status != SVP_OK) {
        return status;
    }
    numel  = svp_tensor_numel(t);
    status = svp_ops_alloc(w->ops, numel, &buf);
    if (status != SVP_OK) {
        goto out_destroy;
    }
    status = weight_bufs_add(w, buf);
    if (status != SVP_OK) {
        goto out_destroy;
    }
    status = svp_ops_upload(w->ops, buf, t->data, numel);
    if (status == SVP_OK) {
        *buf_p = buf;
    }
out_destroy:
    svp_tensor_destroy(t);
    return status;
}

/*
 * The tensor in place from the mapped file, when it holds the handle's
 * dtype, needs no scaling, lies inside the file as it is now and the
 * backend takes host memory; SVP_ERR_UNSUPPORTED when it cannot be (the
 * caller reads and uploads it).
 */
static svp_status_t svp_weights_borrow(svp_weights_t                *w,
                                       const svp_safetensors_info_t *info,
                                       float scale, void **buf_p)
{
    void        *buf;
    svp_status_t status;

    if (scale != 1.0f || info->dtype != svp_ops_weights_dtype(w->ops) ||
        w->map_state < 0) {
        return SVP_ERR_UNSUPPORTED;
    }
    if (w->map_state == 0) {
        w->map_state = -1;
        if (w->keep->map != NULL || /* one mapped file per model */
            svp_safetensors_map(w->st, &w->map, &w->map_len) != SVP_OK) {
            return SVP_ERR_UNSUPPORTED;
        }
        w->map_state = 1;
    }
    if (info->offset + info->nbytes > w->map_len ||
        info->offset % svp_dtype_size(info->dtype) != 0) {
        return SVP_ERR_UNSUPPORTED; /* shrunk: the read path says so */
    }
    status =
        svp_ops_weights_borrow(w->ops, (const char *)w->map + info->offset,
                               info->nbytes / svp_dtype_size(info->dtype), &buf);
    if (status == SVP_ERR_UNSUPPORTED) {
        munmap(w->map, w->map_len); /* a device backend: upload instead */
        w->map       = NULL;
        w->map_state = -1;
        return status;
    }
    if (status != SVP_OK) {
        return status;
    }
    w->keep->map     = w->map; /* the model keeps the file mapped */
    w->keep->map_len = w->map_len;
    *buf_p           = buf;
    return SVP_OK;
}

svp_status_t svp_weights_load_matrix(svp_weights_t *w, const char *name, int ndim,
                                     const int64_t *shape, float scale, void **buf_p)
{
    svp_safetensors_info_t info;
    svp_tensor_t          *t;
    void                  *buf;
    svp_status_t           status;

    status = svp_weights_find(w, name, ndim, shape);
    if (status != SVP_OK || w->keep == NULL) {
        return status;
    }
    svp_safetensors_find(w->st, name, &info);
    status = svp_weights_borrow(w, &info, scale, buf_p);
    if (status != SVP_ERR_UNSUPPORTED) {
        return status;
    }
    if (scale == 1.0f && info.dtype != SVP_DTYPE_F32 &&
        info.dtype == svp_ops_weights_dtype(w->ops)) {
        /* the file holds the handle's dtype: its bits, read once, as they are */
        status = svp_safetensors_load(w->st, name, info.dtype, &t);
        if (status != SVP_OK) {
            return status;
        }
        status = svp_ops_weights_upload_bits(w->ops, t->data,
                                             (size_t)svp_tensor_numel(t), &buf);
    } else {
        status = svp_weights_read(w, name, scale, &t);
        if (status != SVP_OK) {
            return status;
        }
        status = svp_ops_weights_upload(w->ops, t->data, (size_t)svp_tensor_numel(t),
                                        &buf);
    }
    if (status == SVP_ERR_INVALID_PARAM) {
        svp_error("%s: tensor '%s' cannot be held in %s", svp_weights_path(w), name,
                  svp_ops_dtype(w->ops));
    }
    if (status == SVP_OK) {
        status = weight_bufs_add(w, buf);
    }
    if (status == SVP_OK) {
        *buf_p = buf;
    }
    svp_tensor_destroy(t);
    return status;
}

svp_status_t svp_weights_scalar(svp_weights_t *w, const char *name, float *value_p)
{
    int64_t       shape[1] = {1};
    svp_tensor_t *t;
    svp_status_t  status;

    status = svp_weights_find(w, name, 1, shape);
    if (status != SVP_OK) {
        return status;
    }
    if (w->keep == NULL) {
        *value_p = 0.0f;
        return SVP_OK;
    }
    status = svp_safetensors_load(w->st, name, SVP_DTYPE_F32, &t);
    if (status != SVP_OK) {
        return status;
    }
    *value_p = *(const float *)t->data;
    svp_tensor_destroy(t);
    return SVP_OK;
}

void svp_weights_log_unused(const svp_weights_t *w, const char *what)
{
    int count = svp_safetensors_count(w->st);

    if (w->used != count) {
        svp_debug("%s: %d of %d tensors not used by %s", svp_weights_path(w),
                  count - w->used, count, what);
    }
}

svp_status_t svp_weights_config_channels(svp_config_h cj, const char *path, int max,
                                         int *out, int *count_p)
{
    int64_t      values[64];
    int          count, i;
    svp_status_t status;

    if (max > (int)(sizeof(values) / sizeof(values[0]))) {
        return SVP_ERR_INVALID_PARAM;
    }
    status = svp_config_get_int_array(cj, "block_out_channels", values, max, &count);
    if (status != SVP_OK) {
        return status;
    }
    if (count < 1) {
        svp_error("%s: 'block_out_channels' is empty", path);
        return SVP_ERR_BAD_FILE;
    }
    for (i = 0; i < count; i++) {
        if (values[i] <= 0 || values[i] % 32 != 0) {
            svp_error("%s: block_out_channels[%d] = %lld is not a positive "
                      "multiple of 32 (GroupNorm uses 32 groups)",
                      path, i, (long long)values[i]);
            return SVP_ERR_BAD_FILE;
        }
    }
    for (i = 0; i < count; i++) {
        out[i] = (int)values[i];
    }
    *count_p = count;
    return SVP_OK;
}
