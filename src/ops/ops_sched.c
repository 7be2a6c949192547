/*
 * The scheduler's ops (ops_sched.h): argument checks, then the backend.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_sched.h"
#include "ops/ops_backend.h"
#include "common/log.h"

svp_status_t svp_ops_sched_scale(svp_ops_h ops, int64_t n, float c_in,
                                 const float *x, float *y)
{
    SVP_OPS_CHECK(n > 0 && x != NULL && y != NULL);
    return ops->vt->sched_scale(ops, n, c_in, x, y);
}

svp_status_t svp_ops_sched_guidance(svp_ops_h ops, int frames,
                                    int64_t frame_elems, const float *scales,
                                    const float *uncond, const float *cond,
                                    float *out)
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

svp_status_t svp_ops_sched_euler(svp_ops_h ops, int64_t n,
                                 const svp_sched_euler_coef_t *coef,
                                 const float *v, const float *x, float *y)
{
    SVP_OPS_CHECK(n > 0 && coef != NULL && v != NULL && x != NULL &&
                        y != NULL);
    return ops->vt->sched_euler(ops, n, coef, v, x, y);
}
