/*
 * The scheduler's per-step arithmetic as ops, so that a backend whose
 * buffers are device memory updates the latents where they are: the model
 * input scaling, the classifier-free guidance combine and the Euler
 * v-prediction update.  Both backends evaluate sched_math.h's functions,
 * the ones the CPU scheduler (src/noise) uses, so they give the CPU
 * scheduler's bits (tests/test_sched.c on the host, tests/test_ops_cuda.c
 * on a device).
 *
 * Buffers are the handle's (ops.h); scales and coef are host memory.  Every
 * output may alias an input of the same index.
 */
#ifndef SVP_OPS_OPS_SCHED_H
#define SVP_OPS_OPS_SCHED_H

#include "ops/ops.h"
#include "noise/sched_math.h"

/*
 * out = u + g_f (c - u) over [frames, frame_elems] (svp_sched_guidance_apply
 * with batch 1): frame f uses scales[f].
 */
svp_status_t svp_ops_sched_guidance(svp_ops_h ops, int frames, int64_t frame_elems,
                                    const float *scales, const float *uncond,
                                    const float *cond, float *out);

/*
 * svp_ops_sched_scale() and svp_ops_sched_euler(): one function per row of
 * SVP_OPS_SCHED_LIST (ops/ops_list.h), where each is documented.
 */
SVP_OPS_SCHED_LIST(SVP_OPS_DECLARE, const void *)

#endif
