/*
 * The profiling backend (ops_profile.h): wraps another backend's ops, times
 * each call (waiting for the device where there is one) and counts its
 * FLOPs, for svdtool unet --profile and log.profile.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_profile.h"
#include "ops/ops_backend.h"
#include "common/clock.h"
#include "trace/range.h"

#include <string.h>

static const svp_ops_ops_t *svp_ops_prof_inner; /* the wrapped backend */
static svp_ops_ops_t        svp_ops_prof_vt;
static int                  svp_ops_prof_async; /* not the CPU backend */
static float               *svp_ops_prof_one;   /* device scratch for syncs */

/* The last result must be there before the clock is read. */
static void svp_ops_prof_wait(svp_ops_h ops, const float *y)
{
    float one;

    if (svp_ops_prof_async && y != NULL) {
        svp_ops_prof_inner->download(ops, &one, y, 1);
    }
}

void svp_ops_profile_sync(void *arg)
{
    svp_ops_h ops = arg;
    float     one;

    if (svp_ops_prof_async && svp_ops_prof_one != NULL) {
        svp_ops_prof_inner->download(ops, &one, svp_ops_prof_one, 1);
    }
}

/* Times one call of the wrapped backend; _y is the output to wait for. */
#define SVP_OPS_PROF(_kind, _flops, _y, _call) \
    do { \
        double       _t0 = svp_clock_now(); \
        svp_status_t _st = svp_ops_prof_inner->_call; \
        svp_ops_prof_wait(ops, _y); \
        svp_range_op(_kind, svp_clock_now() - _t0, (double)(_flops)); \
        return _st; \
    } while (0)

/* One per op of the list (ops_list.h): prof_<name>, timing the wrapped
 * backend's <name> under the kind "<name>" with the row's FLOPs. */
#define SVP_OPS_PROF_OP_(_name, _out, _flops, _checks, ...) \
    static svp_status_t prof_##_name(SVP_OPS_PARAMS(__VA_ARGS__)) \
    { \
        SVP_OPS_PROF(#_name, _flops, _out, _name(SVP_OPS_ARGS(__VA_ARGS__))); \
    }
SVP_OPS_LIST(SVP_OPS_PROF_OP_, const float *)

/* A slot the wrapped backend lacks (the widening of an fp32-only one)
 * stays NULL. */
#define SVP_OPS_PROF_SLOT_(_name, _out, _flops, _checks, ...) \
    svp_ops_prof_vt._name = \
        (svp_ops_prof_inner->_name != NULL) ? prof_##_name : NULL;

svp_status_t svp_ops_profile_enable(svp_ops_h ops)
{
    if (svp_ops_prof_inner != NULL) {
        return (ops->vt == &svp_ops_prof_vt) ? SVP_OK : SVP_ERR_UNSUPPORTED;
    }
    svp_ops_prof_inner = ops->vt;
    svp_ops_prof_async = ops->vt->backend != SVP_OPS_BACKEND_CPU;
    if (svp_ops_prof_async && ops->vt->alloc(ops, 1, &svp_ops_prof_one) != SVP_OK) {
        svp_ops_prof_inner = NULL;
        return SVP_ERR_NO_MEMORY;
    }
    /* memory management, cleanup and the name pass straight through */
    svp_ops_prof_vt = *ops->vt;
    SVP_OPS_LIST(SVP_OPS_PROF_SLOT_, const float *)
    ops->vt = &svp_ops_prof_vt;
    return SVP_OK;
}

void svp_ops_profile_disable(svp_ops_h ops)
{
    if (svp_ops_prof_inner != NULL && ops->vt == &svp_ops_prof_vt) {
        ops->vt = svp_ops_prof_inner;
        if (svp_ops_prof_one != NULL) {
            ops->vt->free(ops, svp_ops_prof_one);
            svp_ops_prof_one = NULL;
        }
        svp_ops_prof_inner = NULL;
    }
}
