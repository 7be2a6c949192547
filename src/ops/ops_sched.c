/*
 * The scheduler's ops (ops_sched.h): argument checks, then the backend;
 * the guidance a frame at a time.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_sched.h"
#include "ops/ops_backend.h"
#include "common/log.h"

/* svp_ops_sched_scale() and svp_ops_sched_euler() */
SVP_OPS_SCHED_LIST(SVP_OPS_DISPATCH, const void *)

svp_status_t svp_ops_sched_guidance(svp_ops_h ops, int frames, int64_t frame_elems,
                                    const float *scales, const float *uncond,
                                    const float *cond, float *out)
{
    svp_status_t status;
    int64_t      off;
    int          f;

    SVP_OPS_CHECK(frames > 0 && frame_elems > 0 && scales != NULL);
    SVP_OPS_CHECK(uncond != NULL && cond != NULL && out != NULL);
    for (f = 0; f < frames; ++f) {
        off    = (int64_t)f * frame_elems;
        status = ops->vt->sched_guidance(ops, frame_elems, scales[f], uncond + off,
                                         cond + off, out + off);
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}
