#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "spec/steps.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>

svp_status_t svp_steps_assign(int steps, int world, int rank, char *errbuf,
                              int errlen, svp_step_range_t *range_p)
{
    int lower, upper, per;

    if (world < 1 || rank < 0 || rank >= world || steps < 1) {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "invalid step assignment: steps=%d rank %d of %d",
                     steps, rank, world);
        }
        return SVP_ERR_INVALID_PARAM;
    }
    if (steps % world != 0) {
        if (errbuf != NULL) {
            lower = (steps / world) * world;
            upper = lower + world;
            if (lower > 0) {
                snprintf(errbuf, errlen,
                         "steps=%d is not divisible by %d ranks: each rank must run "
                         "the same number of steps; use steps=%d or steps=%d, or a "
                         "rank count that divides %d",
                         steps, world, lower, upper, steps);
            } else {
                snprintf(errbuf, errlen,
                         "steps=%d is fewer than the %d ranks: use steps=%d, or at "
                         "most %d ranks",
                         steps, world, upper, steps);
            }
        }
        return SVP_ERR_SPEC;
    }
    per             = steps / world;
    range_p->begin  = rank * per;
    range_p->end    = (rank + 1) * per;
    return SVP_OK;
}

int svp_steps_layout_valid(int steps, int world, int stages)
{
    return (stages >= 1) && (stages <= world) && (world % stages == 0) &&
           (steps % stages == 0);
}

svp_status_t svp_steps_layout(int steps, int world, int stages, int rank,
                              char *errbuf, int errlen, svp_steps_layout_t *layout_p)
{
    svp_steps_layout_t l;
    char               valid[256];
    int                s, len = 0, best = -1;

    if (stages == 0) {
        stages = world;
    }
    if (stages < 0) {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "pipeline.stages: auto is chosen by svdlaunch "
                     "render (the rendered script passes the number); run that "
                     "script, or give a number");
        }
        return SVP_ERR_SPEC;
    }
    if (world < 1 || rank < 0 || rank >= world || steps < 1 || stages < 0) {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "invalid layout: steps=%d, %d stages, rank %d of %d",
                     steps, stages, rank, world);
        }
        return SVP_ERR_INVALID_PARAM;
    }
    if (!svp_steps_layout_valid(steps, world, stages)) {
        if (errbuf != NULL) {
            valid[0] = '\0';
            for (s = 1; s <= world; ++s) {
                if (!svp_steps_layout_valid(steps, world, s)) {
                    continue;
                }
                if (best < 0 || abs(s - stages) < abs(best - stages)) {
                    best = s;
                }
                if (len < (int)sizeof(valid) - 16) {
                    len += snprintf(valid + len, sizeof(valid) - len, "%s%d",
                                    (len > 0) ? ", " : "", s);
                }
            }
            snprintf(errbuf, errlen,
                     "pipeline.stages: S=%d does not fit W=%d ranks (G=W/S=%.4g) and "
                     "T=%d steps: %s; valid S: %s (nearest: S=%d, G=%d pipelines, "
                     "%d steps per stage)",
                     stages, world, (double)world / stages, steps,
                     (world % stages != 0 || stages > world)
                         ? "S must divide W (G = W / S groups)"
                         : "T must divide by S",
                     valid, best, world / best, steps / best);
        }
        return SVP_ERR_SPEC;
    }
    l.stages = stages;
    l.groups = world / stages;
    l.group  = rank / stages;
    l.first  = l.group * stages;
    l.stage  = rank % stages;
    l.range.begin = l.stage * (steps / stages);
    l.range.end   = (l.stage + 1) * (steps / stages);
    *layout_p = l;
    return SVP_OK;
}
