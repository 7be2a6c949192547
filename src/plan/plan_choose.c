/*
 * What `pipeline.stages: auto` becomes: the layout of the spec's world with
 * the smallest predicted makespan, for render and check (see plan.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plan/plan.h"
#include "jobspec/layout.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

svp_status_t svp_plan_choose_stages(const svp_spec_t       *spec,
                                    const svp_plan_costs_t *costs,
                                    svp_plan_estimate_t *best_p, char *why,
                                    int whylen)
{
    svp_plan_costs_t     c;
    svp_plan_params_t    p;
    svp_plan_estimate_t *layouts;
    char                 scratch[256];
    svp_status_t         status;
    int                  W = svp_layout_spec_world(spec);
    int                  n = 0, best = 0;

    if (costs != NULL) {
        c = *costs;
    } else if (svp_plan_costs_from_spec(spec, NULL, scratch, sizeof(scratch), &c) !=
               SVP_OK) {
        memset(&c, 0, sizeof(c));
        c.step_s = 1.0;
        snprintf(c.source, sizeof(c.source),
                 "unit step costs (no time model "
                 "for this model without a hardware table)");
    }
    layouts = calloc((size_t)2 * W, sizeof(*layouts));
    if (layouts == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    svp_plan_params_of_spec(spec, &c, W, spec->cluster.ranks_per_node,
                            spec->pipeline.placement, spec->samples, &p);
    /* auto chooses S for the spec's C, by throughput (render writes S alone) */
    p.objective = SVP_OBJECTIVE_THROUGHPUT;
    if (spec->pipeline.guidance_parallel <= 1) {
        p.half_bytes = 0;
    }
    status = svp_plan_layouts(&p, layouts, &n, &best);
    if (status == SVP_OK &&
        layouts[best].pairs != SVP_MAX(1, spec->pipeline.guidance_parallel)) {
        best = -1;
        for (int k = 0; k < n; ++k) {
            if (layouts[k].pairs == SVP_MAX(1, spec->pipeline.guidance_parallel) &&
                (best < 0 ||
                 layouts[k].makespan_s < layouts[best].makespan_s * (1 - 1e-3))) {
                best = k;
            }
        }
        status = (best < 0) ? SVP_ERR_INVALID_PARAM : SVP_OK;
    }
    if (status == SVP_OK) {
        *best_p = layouts[best];
        snprintf(why, whylen, "%s", c.source);
    }
    free(layouts);
    return status;
}
