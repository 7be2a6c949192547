/*
 * Classifier-free guidance with SVD's per-frame scale.
 *
 * SVD does not use one guidance scale: frame f of F gets
 * g_f = linspace(min_scale, max_scale, F)[f], so the first frame (which
 * resembles the conditioning image) is guided least.  The model is run on
 * the batch [uncond, cond] and the two halves are combined per frame as
 * noise_pred = u + g_f * (c - u).  Guidance is on when max_scale > 1.
 */
#ifndef SVP_NOISE_GUIDANCE_H
#define SVP_NOISE_GUIDANCE_H

#include "common/status.h"

#include <stddef.h>

/* 1 when CFG is on, i.e. the model runs on the doubled batch. */
int svp_sched_guidance_enabled(double max_scale);

/* scales[0..num_frames) = linspace(min_scale, max_scale, num_frames), in
 * float32 the way torch.linspace evaluates it (forward from the start for
 * the first half, backward from the end for the second). */
void svp_sched_guidance_scales(double min_scale, double max_scale, int num_frames,
                               float *scales);

/*
 * out = uncond + g_f * (cond - uncond) over latents laid out [B, F, ...]:
 * batch items of num_frames frames, each frame_elems floats (C*H*W).
 * out may equal uncond or cond.  SVP_ERR_INVALID_PARAM for num_frames < 1.
 */
svp_status_t svp_sched_guidance_apply(const float *uncond, const float *cond,
                                      int batch, int num_frames, size_t frame_elems,
                                      double min_scale, double max_scale,
                                      float *out);

#endif
