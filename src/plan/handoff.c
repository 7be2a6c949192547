/*
 * comm.deadline against the planned hand-off gaps (svdlaunch check, plan).
 *
 * The job's receive waits allow for the pipeline fill and about one
 * upstream stage of measured steps (src/pipe/deadline.h); beyond that, a
 * gap between two hand-offs longer than comm.deadline is taken for a lost
 * peer.  The longest gap a rank sees in a healthy job is one upstream
 * rank's work on one sample, with the encodes and decodes its list places
 * there, plus the message's transfer.  The work is read off the schedule
 * itself (pipe/schedule.h): each position's list of one group of the
 * spec's layout (G x S x C), the work between two ends of a sample's walk
 * on that position (its chain actions) costed with the planner's figures.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plan/plan.h"
#include "pipe/schedule.h"
#include "jobspec/layout.h"
#include "common/util.h"

#include <stdio.h>

/* The longest work of one position between two ends of a walk. */
static double handoff_position(const svp_schedule_params_t *sp, int pos,
                               const svp_plan_costs_t *c)
{
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *a;
    double                       work = 0, longest = 0;

    if (svp_schedule_iter_init(&it, sp, pos) != SVP_OK) {
        return 0;
    }
    while ((a = svp_schedule_iter_next(&it)) != NULL) {
        work += svp_plan_action_cost(a, c, sp->steps);
        if (a->chain) {
            longest = SVP_MAX(longest, work);
            work    = 0;
        }
    }
    return SVP_MAX(longest, work); /* the finals finished after the last */
}

/*
 * The spec's layout as the schedule runs it: S positions of C lanes, k
 * steps each.  An invalid layout is the check's to name: then one chain
 * of all ranks.
 */
static void handoff_layout(const svp_spec_t *spec, svp_schedule_params_t *sp_p)
{
    int          world = svp_layout_spec_world(spec);
    svp_layout_t l;

    if (svp_layout_of_spec(spec, world, NULL, 0, &l) != SVP_OK) {
        l = (svp_layout_t){.world     = world,
                           .groups    = 1,
                           .stages    = world,
                           .pairs     = 1,
                           .steps     = spec->steps,
                           .k         = spec->steps / world,
                           .placement = spec->pipeline.placement};
    }
    /* a group's list in its steady state: a few samples a position (a job
     * of fewer samples has no longer gaps) */
    *sp_p = svp_schedule_params_of(&l, 4 * l.stages + 4,
                                   SVP_MAX(1, spec->comm.inflight));
}

double svp_plan_handoff_gap(const svp_spec_t *spec, const svp_plan_costs_t *costs)
{
    svp_plan_message_t    msg;
    svp_schedule_params_t sp;
    int                   pos;
    double                gap = 0, gbps;

    handoff_layout(spec, &sp);
    for (pos = 0; pos < sp.stages; ++pos) {
        gap = SVP_MAX(gap, handoff_position(&sp, pos, costs));
    }
    svp_plan_message(spec, &msg);
    gbps = (spec->cluster.nodes > 1 && costs->inter_node_gbps > 0)
               ? costs->inter_node_gbps
               : costs->intra_node_gbps;
    if (gbps > 0) {
        gap += costs->latency_s + msg.total / (gbps * 1e9);
    }
    return gap;
}

int svp_plan_deadline_warning(const svp_spec_t *spec, const svp_plan_costs_t *costs,
                              char *buf, int len)
{
    double                gap = svp_plan_handoff_gap(spec, costs);
    svp_schedule_params_t sp;

    if (!(spec->comm.deadline < gap)) {
        return 0;
    }
    handoff_layout(spec, &sp);
    snprintf(buf, len,
             "%s: comm.deadline (%.3g s) is shorter than the longest "
             "expected gap between hand-offs (%.3g s: %d steps of %.3g s%s): a "
             "healthy job may time out; raise comm.deadline above %.0f s",
             spec->file ? spec->file : "<spec>", spec->comm.deadline, gap, sp.steps,
             costs->step_s,
             (costs->encode_s > 0 || costs->decode_s > 0) ? " with encode/decode"
                                                          : "",
             gap * 2 + 1);
    return 1;
}
