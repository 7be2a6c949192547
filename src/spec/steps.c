#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "spec/steps.h"

#include <stdio.h>

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
