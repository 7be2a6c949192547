/*
 * The planner's layout search: the job's ranks cut into groups of stages
 * (and pairs), each group simulated, the best layout named (see plan.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/layout.h"
#include "plan/plan.h"

#include <math.h>

svp_status_t svp_plan_layout(const svp_plan_params_t *p, int stages,
                             svp_plan_estimate_t *layout_p)
{
    return svp_plan_layout_pairs(p, stages, 1, layout_p);
}

svp_status_t svp_plan_layout_pairs(const svp_plan_params_t *p, int stages, int pairs,
                                   svp_plan_estimate_t *layout_p)
{
    /* distinct (samples, node offset) pairs seen: at most 2 x ranks_per_node */
    struct {
        int    samples, offset;
        double makespan, fill, first, lat;
    } seen[64];
    svp_plan_estimate_t l = {0};
    svp_layout_t        job;
    int                 nseen = 0, N = p->samples;

    if (pairs > 2 || N < 1 || (pairs > 1 && p->half_bytes <= 0) || stages < 1 ||
        svp_layout_make(p->steps, p->world, stages, pairs, p->placement, NULL, 0,
                        &job) != SVP_OK) {
        return SVP_ERR_INVALID_PARAM;
    }
    l.stages      = job.stages;
    l.pairs       = job.pairs;
    l.groups      = job.groups;
    l.first_out_s = -1;
    for (int g = 0; g < l.groups && g < N; ++g) {
        svp_plan_params_t  gp = *p;
        svp_plan_result_t *res;
        svp_status_t       status;
        double             makespan = -1, fill = 0, first = 0, lat = 0;
        int                n = svp_layout_group_samples(&job, N, g), k;

        /* group g: its S positions of C lanes, its share of the samples */
        gp.stages     = job.stages;
        gp.pairs      = job.pairs;
        gp.samples    = n;
        gp.first_rank = p->first_rank + svp_layout_rank(&job, g, 0, 0);
        for (k = 0; k < nseen; ++k) {
            if (seen[k].samples == n &&
                seen[k].offset == gp.first_rank % p->ranks_per_node) {
                makespan = seen[k].makespan;
                fill     = seen[k].fill;
                first    = seen[k].first;
                lat      = seen[k].lat;
                break;
            }
        }
        if (makespan < 0) {
            status = svp_plan_run(&gp, &res);
            if (status != SVP_OK) {
                return status;
            }
            makespan = res->makespan_s;
            fill     = res->fill_s;
            first    = res->first_out_s;
            lat      = res->latency_s;
            svp_plan_result_destroy(res);
            if (nseen < (int)(sizeof(seen) / sizeof(seen[0]))) {
                seen[nseen].samples  = n;
                seen[nseen].offset   = gp.first_rank % p->ranks_per_node;
                seen[nseen].makespan = makespan;
                seen[nseen].fill     = fill;
                seen[nseen].first    = first;
                seen[nseen].lat      = lat;
                ++nseen;
            }
        }
        l.first_out_s = (l.first_out_s < 0) ? first : fmin(l.first_out_s, first);
        l.latency_s   = fmax(l.latency_s, lat);
        if (makespan > l.makespan_s) {
            l.makespan_s          = makespan;
            l.group_samples_per_s = makespan > 0 ? n / makespan : 0;
        }
        l.samples_max = (n > l.samples_max) ? n : l.samples_max;
        l.fill_s      = fill > l.fill_s ? fill : l.fill_s;
    }
    l.samples_per_s = l.makespan_s > 0 ? N / l.makespan_s : 0;
    *layout_p       = l;
    return SVP_OK;
}

svp_status_t svp_plan_layouts(const svp_plan_params_t *p,
                              svp_plan_estimate_t *layouts, int *n_p, int *best_p)
{
    svp_status_t status;
    int          n = 0, best = -1, lat = (p->objective == SVP_OBJECTIVE_LATENCY);

    for (int c = 1; c <= ((p->half_bytes > 0) ? 2 : 1); ++c) {
        for (int s = 1; s <= p->world / c; ++s) {
            if (p->world % c != 0 || !svp_layout_valid(p->steps, p->world / c, s)) {
                continue;
            }
            status = svp_plan_layout_pairs(p, s, c, &layouts[n]);
            if (status != SVP_OK) {
                return status;
            }
            if (best < 0 ||
                (lat ? layouts[n].latency_s < layouts[best].latency_s * (1 - 1e-3)
                     : layouts[n].makespan_s <
                           layouts[best].makespan_s * (1 - 1e-3))) {
                best = n;
            }
            ++n;
        }
    }
    if (n == 0) {
        return SVP_ERR_INVALID_PARAM;
    }
    *n_p    = n;
    *best_p = best;
    return SVP_OK;
}
