/*
 * The report of `svdlaunch plan`, over the planner (plan/plan.h).
 */
#ifndef SVP_LAUNCH_PLAN_REPORT_H
#define SVP_LAUNCH_PLAN_REPORT_H

#include "common/status.h"
#include "jobspec/spec.h"
#include "plan/plan.h"

#include <stdio.h>

/* svp_launch_plan_report() flags */
#define SVP_LAUNCH_PLAN_JSON 0x1u /* one JSON object instead of the text */

/*
 * The full report of `svdlaunch plan`: one pipeline rank by rank, then every
 * valid layout of the job (or of one array task, with cluster.array), the
 * one recommended, the spec's own marked (invalid ones too: the report is
 * still made), a job array beside a gang job of several nodes, and a
 * warning when the makespan exceeds cluster.time.
 */
svp_status_t svp_launch_plan_report(FILE *out, const svp_spec_t *spec,
                                    const svp_plan_costs_t *costs, unsigned flags);

#endif
