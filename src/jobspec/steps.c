/*
 * Step assignment (steps.h): which of the T steps a rank runs, in a
 * pipeline of stages or of guidance pairs, and the message naming the
 * nearest valid counts when T does not divide.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/steps.h"
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
    l.pairs  = 1;
    l.lane   = 0;
    *layout_p = l;
    return SVP_OK;
}

void svp_steps_layout_list(int steps, int world, int max_pairs, char *buf, int len)
{
    int c, s, n = 0;

    buf[0] = '\0';
    for (c = 1; c <= max_pairs; ++c) {
        if (world % c != 0) {
            continue;
        }
        for (s = 1; s <= world / c; ++s) {
            if (svp_steps_layout_valid(steps, world / c, s) && n < len - 24) {
                n += snprintf(buf + n, len - n, "%s(%d, %d, %d)", (n > 0) ? ", " : "",
                              world / c / s, s, c);
            }
        }
    }
}

svp_status_t svp_steps_layout_pairs(int steps, int world, int stages, int pairs,
                                    int rank, char *errbuf, int errlen,
                                    svp_steps_layout_t *layout_p)
{
    svp_steps_layout_t l;
    char               valid[512];
    svp_status_t       status;

    if (pairs == 1) {
        return svp_steps_layout(steps, world, stages, rank, errbuf, errlen, layout_p);
    }
    if (pairs != 2 || world % pairs != 0 || rank < 0 || rank >= world ||
        (stages > 0 && !svp_steps_layout_valid(steps, world / pairs, stages))) {
        if (errbuf != NULL) {
            svp_steps_layout_list(steps, world, 2, valid, sizeof(valid));
            snprintf(errbuf, errlen,
                     "pipeline.guidance_parallel: C=%d with S=%d does not fit W=%d "
                     "ranks and T=%d steps: W = G x S x C, S must divide W / C and T "
                     "must divide by S; valid (G, S, C): %s", pairs, stages, world,
                     steps, valid);
        }
        return (rank < 0 || rank >= world) ? SVP_ERR_INVALID_PARAM : SVP_ERR_SPEC;
    }
    /* the layout of the pairs, as if each were one rank */
    status = svp_steps_layout(steps, world / pairs, stages, rank / pairs, errbuf,
                              errlen, &l);
    if (status != SVP_OK) {
        return status;
    }
    l.pairs   = pairs;
    l.lane    = rank % pairs;
    l.first   = l.group * l.stages * pairs;
    *layout_p = l;
    return SVP_OK;
}
