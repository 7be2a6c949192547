/*
 * Op timing for the per-block profile: svp_ops_profile_enable() puts a
 * timing table in front of a handle's backend, so that every op reports its
 * kind, time and FLOPs to svp_range_op() (trace/range.h) and the ranges open
 * around it.  Nothing in the model changes and the dispatch layer pays
 * nothing when the profile is off.
 *
 * FLOPs are counted for the products (conv2d, conv_frames, linear,
 * attention: 2 per multiply-add); the other ops move memory and count 0.
 * On an asynchronous backend each op waits for its result before the clock
 * is read (a one-element download), which serialises the device: the
 * profile then shows where time goes, at some cost to the total.
 *
 * One handle per process can be profiled (the table keeps the backend it
 * wraps); svp_ops_profile_disable() restores it and must be called before
 * svp_ops_destroy().
 */
#ifndef SVP_OPS_OPS_PROFILE_H
#define SVP_OPS_OPS_PROFILE_H

#include "ops/ops.h"

svp_status_t svp_ops_profile_enable(svp_ops_h ops);
void         svp_ops_profile_disable(svp_ops_h ops);

/* Makes ops' device catch up (for range time stamps); arg is the handle. */
void svp_ops_profile_sync(void *ops);

#endif
