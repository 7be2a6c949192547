/*
 * The sample object's own helpers (sample.h), apart from the executor so
 * that a stage needs nothing of pipe.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/sample.h"
#include "tensor/safetensors.h"

#include <inttypes.h>
#include <stdio.h>

void svp_sample_cleanup(svp_sample_t *sample)
{
    int i;

    for (i = 0; i < sample->ntensors; ++i) {
        svp_tensor_destroy(sample->tensors[i]);
        sample->tensors[i] = NULL;
    }
    sample->ntensors = 0;
}

/* A writer holding the tensor and the sample's metadata. */
static svp_status_t svp_sample_tensor_writer(const svp_spec_t   *spec,
                                             const svp_sample_t *sample,
                                             const char         *name,
                                             const svp_tensor_t *tensor,
                                             const char *model, const char *params,
                                             svp_safetensors_writer_h *w_p)
{
    svp_safetensors_writer_h w;
    char                     val[64];
    svp_status_t             status;

    status = svp_safetensors_writer_create(&w);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_safetensors_writer_add(w, name, tensor);
    if (status != SVP_OK) {
        svp_safetensors_writer_destroy(w);
        return status;
    }
    svp_safetensors_writer_add_metadata(w, "job", spec->name);
    snprintf(val, sizeof(val), "%d", sample->index);
    svp_safetensors_writer_add_metadata(w, "sample", val);
    snprintf(val, sizeof(val), "%d", spec->steps);
    svp_safetensors_writer_add_metadata(w, "steps", val);
    snprintf(val, sizeof(val), "%" PRIu64, sample->seed);
    svp_safetensors_writer_add_metadata(w, "seed", val);
    svp_safetensors_writer_add_metadata(w, "model", model);
    if (params != NULL) {
        svp_safetensors_writer_add_metadata(w, "params", params);
    }
    *w_p = w;
    return SVP_OK;
}

svp_status_t svp_sample_write_tensor(const svp_spec_t   *spec,
                                     const svp_sample_t *sample, const char *name,
                                     const svp_tensor_t *tensor, const char *model,
                                     const char *params, const char *path)
{
    svp_safetensors_writer_h w;
    svp_status_t             status;

    status = svp_sample_tensor_writer(spec, sample, name, tensor, model, params, &w);
    if (status == SVP_OK) {
        status = svp_safetensors_writer_commit(w, path);
        svp_safetensors_writer_destroy(w);
    }
    return status;
}

svp_status_t svp_sample_tensor_bytes(const svp_spec_t   *spec,
                                     const svp_sample_t *sample, const char *name,
                                     const svp_tensor_t *tensor, const char *model,
                                     const char *params, void **buf_p, size_t *len_p)
{
    svp_safetensors_writer_h w;
    svp_status_t             status;

    status = svp_sample_tensor_writer(spec, sample, name, tensor, model, params, &w);
    if (status == SVP_OK) {
        status = svp_safetensors_writer_bytes(w, name, buf_p, len_p);
        svp_safetensors_writer_destroy(w);
    }
    return status;
}
