/*
 * What the planner's files (plan_cost.c, plan_model.c) share; not part of
 * its interface (plan.h).
 */
#ifndef SVP_PLAN_PLAN_INT_H
#define SVP_PLAN_PLAN_INT_H

#include "jobspec/spec.h"

/* Guidance doubles the UNet batch when the ramp reaches above 1. */
static inline int svp_plan_cfg_batch(const svp_spec_t *spec)
{
    return spec->video.max_guidance > 1.0 ? 2 : 1;
}

#endif
