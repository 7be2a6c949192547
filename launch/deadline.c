/*
 * comm.deadline against the planned hand-off gaps (svdlaunch check, plan).
 *
 * The job's receive waits allow for the pipeline fill and about one
 * upstream stage of measured steps (src/pipe/deadline.h); beyond that, a
 * gap between two hand-offs longer than comm.deadline is taken for a lost
 * peer.  The longest gap a rank sees in a healthy job is one upstream
 * rank's work on one sample: its k steps, plus the encode and decode it
 * carries (rank 0 encodes and the last rank decodes under placement ends;
 * one rank may do both for a sample under spread), plus the message's
 * transfer.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/launch_int.h"
#include "launch/plan.h"
#include "common/util.h"

#include <stdio.h>

double svp_plan_handoff_gap(const svp_spec_t *spec, const svp_plan_costs_t *costs)
{
    svp_plan_message_t msg;
    int                world = spec->cluster.nodes * spec->cluster.ranks_per_node;
    double             gap, gbps;

    world = (world > 0) ? world : 1;
    gap   = spec->steps / world * costs->step_s;
    if (spec->pipeline.placement == SVP_PLACEMENT_SPREAD) {
        gap += costs->encode_s + costs->decode_s;
    } else {
        gap += (costs->encode_s > costs->decode_s) ? costs->encode_s : costs->decode_s;
    }
    svp_plan_message(spec, &msg);
    gbps = (spec->cluster.nodes > 1 && costs->inter_node_gbps > 0) ?
               costs->inter_node_gbps : costs->intra_node_gbps;
    if (gbps > 0) {
        gap += costs->latency_s + msg.total / (gbps * 1e9);
    }
    return gap;
}

int svp_plan_deadline_warning(const svp_spec_t *spec, const svp_plan_costs_t *costs,
                                char *buf, int len)
{
    double gap = svp_plan_handoff_gap(spec, costs);

    if (!(spec->comm.deadline < gap)) {
        return 0;
    }
    snprintf(buf, len, "%s: comm.deadline (%.3g s) is shorter than the longest "
             "expected gap between hand-offs (%.3g s: %d steps of %.3g s%s): a "
             "healthy job may time out; raise comm.deadline above %.0f s",
             spec->file ? spec->file : "<spec>", spec->comm.deadline, gap,
             spec->steps / SVP_MAX(1, spec->cluster.nodes * spec->cluster.ranks_per_node),
             costs->step_s,
             (costs->encode_s > 0 || costs->decode_s > 0) ? " with encode/decode" : "",
             gap * 2 + 1);
    return 1;
}
