/*
 * Internal to the SVD stage and its tests.
 */
#ifndef SVP_PIPE_STAGE_SVD_INT_H
#define SVP_PIPE_STAGE_SVD_INT_H

#include "pipe/stage.h"

/*
 * Makes an SVD stage run its step, encode and decode the way it does on the
 * cuda backend, through buffers of its ops handle and the scheduler's ops
 * (ops_sched.h), whatever the backend.  On the cpu backend those buffers are
 * host memory, so the device path runs, and is checked against the host
 * path bit for bit, without a GPU (tests/test_stage_svd.c).  A stage on the
 * cuda backend takes that path already.  Call before the first begin().
 */
svp_status_t svp_stage_svd_use_ops_path(svp_stage_t *stage);

#endif
