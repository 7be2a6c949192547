/*
 * Seeded random weights in a model directory; see random_weights.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/random_weights.h"
#include "common/log.h"
#include "common/file.h"
#include "common/str.h"
#include "common/hash.h"
#include "common/util.h"
#include "noise/rng.h"
#include "tensor/config_json.h"
#include "tensor/tensor.h"
#include "tensor/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char         *name;
    int           ndim;
    int64_t       shape[SVP_TENSOR_MAX_DIMS];
    svp_tensor_t *tensor; /* NULL when layout only; borrowed by the writer */
} random_entry_t;

struct svp_random_weights {
    uint64_t                 seed;
    int                      layout_only;
    svp_safetensors_writer_h writer;
    random_entry_t          *entries;
    int                      count, cap;
};

svp_status_t svp_random_weights_create(uint64_t seed, int layout_only,
                                       svp_random_weights_h *rw_p)
{
    struct svp_random_weights *rw;
    svp_status_t               status;

    rw = calloc(1, sizeof(*rw));
    if (rw == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_safetensors_writer_create(&rw->writer);
    if (status != SVP_OK) {
        free(rw);
        return status;
    }
    rw->seed        = seed;
    rw->layout_only = layout_only;
    *rw_p           = rw;
    return SVP_OK;
}

void svp_random_weights_destroy(svp_random_weights_h rw)
{
    int i;

    if (rw == NULL) {
        return;
    }
    svp_safetensors_writer_destroy(rw->writer);
    for (i = 0; i < rw->count; i++) {
        free(rw->entries[i].name);
        svp_tensor_destroy(rw->entries[i].tensor);
    }
    free(rw->entries);
    free(rw);
}

svp_status_t svp_random_weights_add(svp_random_weights_h rw, const char *name,
                                    int ndim, const int64_t *shape, double mean,
                                    double std, float *first_p)
{
    uint64_t        stream = svp_hash_fnv1a(name, strlen(name), 0);
    random_entry_t *entries, *e;
    float          *data;
    int64_t         i, numel;
    svp_status_t    status;

    if (ndim < 0 || ndim > SVP_TENSOR_MAX_DIMS) {
        return SVP_ERR_INVALID_PARAM;
    }
    if (rw->count == rw->cap) {
        int cap = SVP_MAX(256, 2 * rw->cap);
        entries = realloc(rw->entries, cap * sizeof(*entries));
        if (entries == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        rw->entries = entries;
        rw->cap     = cap;
    }
    e = &rw->entries[rw->count];
    memset(e, 0, sizeof(*e));
    e->name = svp_strdup(name);
    if (e->name == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    e->ndim = ndim;
    memcpy(e->shape, shape, ndim * sizeof(*shape));
    rw->count++;
    if (rw->layout_only) {
        if (first_p != NULL) {
            *first_p = 0.0f;
        }
        return SVP_OK;
    }
    status = svp_tensor_create(SVP_DTYPE_F32, ndim, shape, &e->tensor);
    if (status != SVP_OK) {
        return status;
    }
    numel = svp_tensor_numel(e->tensor);
    data  = e->tensor->data;
    svp_rng_normal(rw->seed, stream, 0, (size_t)numel, data);
    for (i = 0; i < numel; i++) {
        data[i] = (float)(mean + std * data[i]);
    }
    if (first_p != NULL) {
        *first_p = data[0];
    }
    return svp_safetensors_writer_add(rw->writer, name, e->tensor);
}

svp_status_t svp_random_weights_add_default(svp_random_weights_h rw,
                                            const char *name, int ndim,
                                            const int64_t *shape)
{
    size_t  len    = strlen(name);
    int64_t fan_in = 1;
    int     i;

    if (ndim >= 2) {
        for (i = 1; i < ndim; i++) {
            fan_in *= shape[i];
        }
        return svp_random_weights_add(rw, name, ndim, shape, 0.0,
                                      1.0 / sqrt((double)fan_in), NULL);
    }
    if (len > 7 && strcmp(name + len - 7, ".weight") == 0) {
        return svp_random_weights_add(rw, name, ndim, shape, 1.0, 0.1, NULL);
    }
    return svp_random_weights_add(rw, name, ndim, shape, 0.0, 0.05, NULL);
}

int svp_random_weights_count(svp_random_weights_h rw)
{
    return rw->count;
}

void svp_random_weights_entry(svp_random_weights_h rw, int index,
                              const char **name_p, int *ndim_p,
                              const int64_t **shape_p)
{
    *name_p  = rw->entries[index].name;
    *ndim_p  = rw->entries[index].ndim;
    *shape_p = rw->entries[index].shape;
}

svp_status_t svp_random_weights_commit(svp_random_weights_h rw,
                                       const char *config_path, const char *out_dir,
                                       const char *weights_name)
{
    char         path[4096], *text = NULL;
    size_t       len;
    svp_status_t status;

    if (rw->layout_only) {
        return SVP_ERR_INVALID_PARAM;
    }
    status = svp_file_read_limit(config_path, SVP_CONFIG_LIMIT_BYTES,
                                 "a JSON config", &text, &len);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_mkdir_p(out_dir, 0755);
    if (status != SVP_OK) {
        goto out;
    }
    snprintf(path, sizeof(path), "%s/%s", out_dir, weights_name);
    status = svp_safetensors_writer_commit(rw->writer, path);
    if (status != SVP_OK) {
        goto out;
    }
    snprintf(path, sizeof(path), "%s/config.json", out_dir);
    status = svp_file_write_atomic(path, text, len);
    if (status == SVP_OK) {
        svp_info("wrote %d random tensors (seed %llu) to %s/%s", rw->count,
                 (unsigned long long)rw->seed, out_dir, weights_name);
    }
out:
    free(text);
    return status;
}
