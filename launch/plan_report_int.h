/*
 * What the report of `svdlaunch plan` shares between its files: the
 * summary computed once (plan_summary.c) and printed as text
 * (plan_report.c) or as JSON (plan_report_json.c); not part of the
 * launcher's interface (plan_report.h).
 */
#ifndef SVP_LAUNCH_PLAN_REPORT_INT_H
#define SVP_LAUNCH_PLAN_REPORT_INT_H

#include "plan/plan.h"

#include <stdio.h>

/*
 * Everything the report says, computed once and then printed as text or
 * JSON.  Every figure in the layouts table is the whole job's (or, with
 * cluster.array, one array task's): its makespan is its slowest
 * pipeline's, its bubble the idle share of all its GPUs.  The pipeline
 * detail above it is one pipeline's, and says so.
 */
typedef struct {
    int                  world;       /* ranks of the job (of one task) */
    int                  tasks;       /* array tasks, 1 for a gang job */
    int                  samples;     /* of the job (of the busiest task) */
    int                  spec_stages; /* what the spec asks for (0 = W) */
    int                  spec_valid;
    char                 spec_why[160]; /* why the spec's layout cannot run */
    svp_plan_estimate_t *layouts;
    double              *bubble, *memory;
    int                  n, best, used; /* used: the spec's, else best */
    double               work_s;        /* one sample's compute, all ranks */
    svp_plan_estimate_t  other;         /* used layout, the other placement */
    svp_placement_t      other_placement;
    double               one_gpu_s; /* every sample on one GPU */
    /* a job array of one node per task beside the gang job */
    int                 alt_tasks, alt_world, alt_samples;
    svp_plan_estimate_t alt;
    int                 alt_recommended;
    char                alt_why[512];
    /* cluster.time against the makespan */
    long limit_s;
    char warning[512];
} svp_launch_plan_summary_t;

/*
 * Fills *sm (zeroed by the caller) for spec with costs: every layout of the
 * job, the spec's own, the other placement, one GPU, the array beside a
 * gang job and the time limit's warning.  sm's arrays are the caller's to
 * free with svp_launch_plan_summary_cleanup(), after a failure too.
 */
svp_status_t svp_launch_plan_summarize(const svp_spec_t          *spec,
                                       const svp_plan_costs_t    *costs,
                                       svp_launch_plan_summary_t *sm);

void svp_launch_plan_summary_cleanup(svp_launch_plan_summary_t *sm);

/* The summary as one JSON object on out (svdlaunch plan --json). */
svp_status_t svp_launch_plan_print_json(FILE *out, const svp_spec_t *spec,
                                        const svp_plan_costs_t          *costs,
                                        const svp_launch_plan_summary_t *sm);

#endif
