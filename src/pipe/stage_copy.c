/*
 * A sample moved between host and device memory (stage.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/stage.h"
#include "common/log.h"

#include <string.h>

svp_status_t svp_stage_sample_copy(const svp_stage_t *stage, svp_sample_t *dst,
                                   const svp_sample_t *src)
{
    const svp_devmem_t *dev    = stage->devmem;
    svp_status_t        status = SVP_OK;
    size_t              bytes;
    int                 k;

    if (dst->ntensors != src->ntensors) {
        svp_error("sample %d: copying %d tensors into %d", src->index, src->ntensors,
                  dst->ntensors);
        return SVP_ERR_INTERNAL;
    }
    if ((src->on_device || dst->on_device) && dev == NULL) {
        svp_error("sample %d: device tensors, but the stage has no device "
                  "memory services",
                  src->index);
        return SVP_ERR_INTERNAL;
    }
    for (k = 0; k < src->ntensors && status == SVP_OK; ++k) {
        bytes = svp_tensor_nbytes(src->tensors[k]);
        if (bytes != svp_tensor_nbytes(dst->tensors[k])) {
            svp_error("sample %d: tensor %d has %zu bytes, its copy %zu", src->index,
                      k, bytes, svp_tensor_nbytes(dst->tensors[k]));
            return SVP_ERR_INTERNAL;
        }
        if (!src->on_device && !dst->on_device) {
            memcpy(dst->tensors[k]->data, src->tensors[k]->data, bytes);
        } else if (!src->on_device) {
            status = dev->to_device(dev->ctx, dst->tensors[k]->data,
                                    src->tensors[k]->data, bytes);
        } else if (!dst->on_device) {
            status = dev->to_host(dev->ctx, dst->tensors[k]->data,
                                  src->tensors[k]->data, bytes);
        } else {
            svp_error("sample %d: device to device copies are not needed",
                      src->index);
            return SVP_ERR_INTERNAL;
        }
    }
    if (status != SVP_OK) {
        svp_error("sample %d: copying its tensors %s the device failed", src->index,
                  src->on_device ? "from" : "to");
        return status;
    }
    dst->seed      = src->seed;
    dst->next_step = src->next_step;
    return SVP_OK;
}
