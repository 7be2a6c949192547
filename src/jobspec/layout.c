/*
 * The job's layout (layout.h): made and checked from the spec and the
 * world size, with the message naming the valid layouts when T or W does
 * not divide; the dealing of samples and the placement of their ends.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/layout.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>

svp_status_t svp_layout_assign(int steps, int world, int rank, char *errbuf,
                               int errlen, svp_step_range_t *range_p)
{
    int lower, upper, per;

    if (world < 1 || rank < 0 || rank >= world || steps < 1) {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen,
                     "invalid step assignment: steps=%d rank %d of %d", steps, rank,
                     world);
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
    per            = steps / world;
    range_p->begin = rank * per;
    range_p->end   = (rank + 1) * per;
    return SVP_OK;
}

int svp_layout_valid(int steps, int world, int stages)
{
    return (stages >= 1) && (stages <= world) && (world % stages == 0) &&
           (steps % stages == 0);
}

/* The layout of C = 1 (each position one rank) on W ranks. */
static svp_status_t svp_layout_single(int steps, int world, int stages, char *errbuf,
                                      int errlen, svp_layout_t *layout_p)
{
    char valid[256];
    int  s, len = 0, best = -1;

    if (stages == 0) {
        stages = world;
    }
    if (stages < 0) {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen,
                     "pipeline.stages: auto is chosen by svdlaunch "
                     "render (the rendered script passes the number); run that "
                     "script, or give a number");
        }
        return SVP_ERR_SPEC;
    }
    if (world < 1 || steps < 1) {
        if (errbuf != NULL) {
            snprintf(errbuf, errlen, "invalid layout: steps=%d, %d stages, %d ranks",
                     steps, stages, world);
        }
        return SVP_ERR_INVALID_PARAM;
    }
    if (!svp_layout_valid(steps, world, stages)) {
        if (errbuf != NULL) {
            valid[0] = '\0';
            for (s = 1; s <= world; ++s) {
                if (!svp_layout_valid(steps, world, s)) {
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
            snprintf(
                errbuf, errlen,
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
    layout_p->world  = world;
    layout_p->groups = world / stages;
    layout_p->stages = stages;
    layout_p->pairs  = 1;
    layout_p->steps  = steps;
    layout_p->k      = steps / stages;
    return SVP_OK;
}

void svp_layout_list(int steps, int world, int max_pairs, char *buf, int len)
{
    int c, s, n = 0;

    buf[0] = '\0';
    for (c = 1; c <= max_pairs; ++c) {
        if (world % c != 0) {
            continue;
        }
        for (s = 1; s <= world / c; ++s) {
            if (svp_layout_valid(steps, world / c, s) && n < len - 24) {
                n += snprintf(buf + n, len - n, "%s(%d, %d, %d)",
                              (n > 0) ? ", " : "", world / c / s, s, c);
            }
        }
    }
}

svp_status_t svp_layout_make(int steps, int world, int stages, int pairs,
                             svp_placement_t placement, char *errbuf, int errlen,
                             svp_layout_t *layout_p)
{
    svp_layout_t l;
    char         valid[512];
    svp_status_t status;

    if (pairs == 1) {
        status = svp_layout_single(steps, world, stages, errbuf, errlen, &l);
    } else if (pairs != 2 || world < 1 || world % pairs != 0 ||
               (stages > 0 && !svp_layout_valid(steps, world / pairs, stages))) {
        if (errbuf != NULL) {
            svp_layout_list(steps, world, 2, valid, sizeof(valid));
            snprintf(
                errbuf, errlen,
                "pipeline.guidance_parallel: C=%d with S=%d does not fit W=%d "
                "ranks and T=%d steps: W = G x S x C, S must divide W / C and T "
                "must divide by S; valid (G, S, C): %s",
                pairs, stages, world, steps, valid);
        }
        return (world < 1) ? SVP_ERR_INVALID_PARAM : SVP_ERR_SPEC;
    } else {
        /* the layout of the pairs, as if each were one rank */
        status = svp_layout_single(steps, world / pairs, stages, errbuf, errlen, &l);
        l.world = world;
        l.pairs = pairs;
    }
    if (status != SVP_OK) {
        return status;
    }
    l.placement = placement;
    *layout_p   = l;
    return SVP_OK;
}

svp_status_t svp_layout_of_spec(const svp_spec_t *spec, int world, char *errbuf,
                                int errlen, svp_layout_t *layout_p)
{
    return svp_layout_make(spec->steps, world, spec->pipeline.stages,
                           SVP_MAX(1, spec->pipeline.guidance_parallel),
                           spec->pipeline.placement, errbuf, errlen, layout_p);
}

int svp_layout_spec_world(const svp_spec_t *spec)
{
    return SVP_MAX(1, spec->cluster.nodes * spec->cluster.ranks_per_node);
}

int svp_layout_place_of(svp_placement_t placement, int stages, int j,
                        svp_layout_end_t end)
{
    if (placement == SVP_PLACEMENT_SPREAD) {
        return j % stages;
    }
    return (end == SVP_LAYOUT_ENCODES) ? 0 : stages - 1;
}

int svp_layout_owner(const svp_layout_t *l, int k)
{
    int g, j;

    svp_layout_deal(l, k, &g, &j);
    return svp_layout_rank(l, g, svp_layout_place(l, j, SVP_LAYOUT_FINISHES), 0);
}
