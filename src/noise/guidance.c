/*
 * Classifier-free guidance as SVD applies it (guidance.h): the per-frame
 * ramp of scales from min to max, and the combination of the two halves.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "noise/guidance.h"
#include "noise/sched_math.h"

#include <stdlib.h>

/* Guidance scales fit a small stack buffer for any realistic video length
 * (SVD-XT: 25 frames); longer clips fall back to the heap. */
#define SVP_SCHED_GUIDANCE_STACK_FRAMES 64

int svp_sched_guidance_enabled(double max_scale)
{
    return max_scale > 1.0;
}

void svp_sched_guidance_scales(double min_scale, double max_scale, int num_frames,
                               float *scales)
{
    float start = (float)min_scale, end = (float)max_scale, step;
    int   i, halfway;

    if (num_frames == 1) {
        scales[0] = start;
        return;
    }
    step    = (end - start) / (float)(num_frames - 1);
    halfway = num_frames / 2;
    for (i = 0; i < num_frames; ++i) {
        scales[i] = (i < halfway) ? start + step * (float)i
                                  : end - step * (float)(num_frames - i - 1);
    }
}

svp_status_t svp_sched_guidance_apply(const float *uncond, const float *cond,
                                      int batch, int num_frames, size_t frame_elems,
                                      double min_scale, double max_scale, float *out)
{
    float  stack[SVP_SCHED_GUIDANCE_STACK_FRAMES], *g = stack;
    size_t i, base;
    int    b, f;

    if (num_frames < 1 || batch < 0) {
        return SVP_ERR_INVALID_PARAM;
    }
    if (num_frames > SVP_SCHED_GUIDANCE_STACK_FRAMES) {
        g = malloc((size_t)num_frames * sizeof(*g));
        if (g == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
    }
    svp_sched_guidance_scales(min_scale, max_scale, num_frames, g);
    for (b = 0; b < batch; ++b) {
        for (f = 0; f < num_frames; ++f) {
            base = ((size_t)b * (size_t)num_frames + (size_t)f) * frame_elems;
            for (i = base; i < base + frame_elems; ++i) {
                out[i] = svp_sched_math_guidance(uncond[i], cond[i], g[f]);
            }
        }
    }
    if (g != stack) {
        free(g);
    }
    return SVP_OK;
}
