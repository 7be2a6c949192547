/*
 * The figures of `svdlaunch plan`, computed once for the text and the JSON
 * report: every layout of the job with its bubble and peak memory, the
 * layout the spec asks for and why it cannot run, the other placement, one
 * GPU for every sample, a job array beside a gang job of several nodes, and
 * cluster.time against the makespan.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/plan_report_int.h"
#include "launch/launch_int.h"
#include "jobspec/layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The largest memory of any rank of a layout. */
static double plan_peak_memory(const svp_spec_t *spec, int world,
                               svp_placement_t placement)
{
    double peak = 0;

    for (int r = 0; r < world; ++r) {
        svp_plan_memory_t m;

        svp_plan_memory(spec, world, r, placement, &m);
        peak = fmax(peak, m.total);
    }
    return peak;
}

static double plan_job_bubble(const svp_launch_plan_summary_t *sm,
                              const svp_plan_estimate_t *l, int world, int samples)
{
    return l->makespan_s > 0 ? 1.0 - samples * sm->work_s / (world * l->makespan_s)
                             : 0;
}

/* Every layout of the job, each with its bubble and peak memory; *p is left
 * as the job's planning parameters. */
static svp_status_t plan_summarize_layouts(const svp_spec_t          *spec,
                                           const svp_plan_costs_t    *costs,
                                           svp_launch_plan_summary_t *sm,
                                           svp_plan_params_t         *p)
{
    int          W = sm->world;
    svp_status_t status;

    sm->layouts = calloc((size_t)2 * W, sizeof(*sm->layouts));
    sm->bubble  = calloc((size_t)2 * W, sizeof(*sm->bubble));
    sm->memory  = calloc((size_t)2 * W, sizeof(*sm->memory));
    if (sm->layouts == NULL || sm->bubble == NULL || sm->memory == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    svp_plan_params_of_spec(spec, costs, W, spec->cluster.ranks_per_node,
                            spec->pipeline.placement, sm->samples, p);
    status = svp_plan_layouts(p, sm->layouts, &sm->n, &sm->best);
    if (status != SVP_OK) {
        return status;
    }
    for (int k = 0; k < sm->n; ++k) {
        sm->bubble[k] = plan_job_bubble(sm, &sm->layouts[k], W, sm->samples);
        /* both ranks of a pair hold what one rank of C = 1 holds */
        sm->memory[k] =
            plan_peak_memory(spec, sm->layouts[k].stages, spec->pipeline.placement);
    }
    return SVP_OK;
}

/* The layout the spec asks for, valid or not, and why not. */
static void plan_summarize_spec(const svp_spec_t *spec, const svp_plan_params_t *p,
                                svp_launch_plan_summary_t *sm)
{
    int W = sm->world, S = spec->pipeline.stages, C;

    sm->spec_stages = S;
    sm->used        = sm->best;
    if (S == SVP_PIPE_STAGES_AUTO) {
        sm->spec_valid = 1;
        return;
    }
    C              = (spec->pipeline.guidance_parallel > 1) ? 2 : 1;
    S              = (S == 0) ? W / C : S;
    sm->spec_valid = 0;
    for (int k = 0; k < sm->n; ++k) {
        if (sm->layouts[k].stages == S && sm->layouts[k].pairs == C) {
            sm->spec_valid = 1;
            sm->used       = k;
        }
    }
    if (sm->spec_valid) {
        return;
    }
    if (C > 1 && (p->half_bytes <= 0 || W % (S * C) != 0)) {
        snprintf(sm->spec_why, sizeof(sm->spec_why), "%s",
                 p->half_bytes <= 0 ? "pairs need guidance halves "
                                      "(model.kind svd, video.max_guidance > 1)"
                                    : "S x 2 does not divide the ranks");
    } else if (W % S != 0) {
        snprintf(sm->spec_why, sizeof(sm->spec_why),
                 "%d stages do not "
                 "divide %d ranks",
                 S, W);
    } else {
        snprintf(sm->spec_why, sizeof(sm->spec_why),
                 "%d steps do not "
                 "divide over %d stages",
                 spec->steps, S);
    }
}

/* The used layout with the other placement, and every sample on one GPU. */
static svp_status_t plan_summarize_others(const svp_spec_t          *spec,
                                          const svp_plan_costs_t    *costs,
                                          svp_launch_plan_summary_t *sm,
                                          svp_plan_params_t         *p)
{
    svp_plan_estimate_t one;
    svp_status_t        status;

    sm->other_placement = spec->pipeline.placement == SVP_PLACEMENT_ENDS
                              ? SVP_PLACEMENT_SPREAD
                              : SVP_PLACEMENT_ENDS;
    p->placement        = sm->other_placement;
    status              = svp_plan_layout_pairs(p, sm->layouts[sm->used].stages,
                                                sm->layouts[sm->used].pairs, &sm->other);
    if (status != SVP_OK) {
        return status;
    }
    svp_plan_params_of_spec(spec, costs, 1, 1, spec->pipeline.placement, sm->samples,
                            p);
    status = svp_plan_layout(p, 1, &one);
    if (status != SVP_OK) {
        return status;
    }
    sm->one_gpu_s = one.makespan_s;
    return SVP_OK;
}

/*
 * Beside a gang job of several nodes: one array task per node.  Each
 * task starts when one node is free instead of waiting for all of them
 * at once, and a failed node costs its own task (rerun or requeued
 * alone), not the whole job.  What it gives up: pipelines that span
 * nodes, and the balance of dealing all samples over all ranks.
 */
static svp_status_t plan_summarize_array(const svp_spec_t          *spec,
                                         const svp_plan_costs_t    *costs,
                                         svp_launch_plan_summary_t *sm)
{
    svp_plan_params_t    p;
    svp_plan_estimate_t *alt;
    /* against the gang job's best layout, not a worse one the spec asks */
    const svp_plan_estimate_t *used = &sm->layouts[sm->best];
    int                        N = spec->samples, W = sm->world, n = 0, best = 0;
    double                     ratio;
    svp_status_t               status;

    sm->alt_tasks   = spec->cluster.nodes;
    sm->alt_world   = spec->cluster.ranks_per_node;
    sm->alt_samples = (N + sm->alt_tasks - 1) / sm->alt_tasks;
    alt             = calloc((size_t)2 * sm->alt_world, sizeof(*alt));
    if (alt == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    svp_plan_params_of_spec(spec, costs, sm->alt_world, sm->alt_world,
                            spec->pipeline.placement, sm->alt_samples, &p);
    status = svp_plan_layouts(&p, alt, &n, &best);
    if (status == SVP_OK) {
        sm->alt = alt[best];
    }
    free(alt);
    if (status != SVP_OK) {
        return status;
    }
    ratio = used->makespan_s > 0 ? sm->alt.makespan_s / used->makespan_s : 1;
    /* within 5%: the queue and the failure domain decide */
    sm->alt_recommended = ratio <= 1.05;
    if (used->stages > spec->cluster.ranks_per_node && !sm->alt_recommended) {
        snprintf(sm->alt_why, sizeof(sm->alt_why),
                 "one gang job: its "
                 "pipelines of %d stages span nodes, and a node's %d "
                 "ranks alone take %.2fx as long",
                 used->stages, spec->cluster.ranks_per_node, ratio);
    } else if (!sm->alt_recommended) {
        snprintf(sm->alt_why, sizeof(sm->alt_why),
                 "one gang job: %d "
                 "samples dealt over %d nodes separately are %.2fx as long "
                 "as dealt over all %d ranks",
                 N, sm->alt_tasks, ratio, W);
    } else {
        snprintf(sm->alt_why, sizeof(sm->alt_why),
                 "the array: its "
                 "predicted makespan is %.2fx the gang job's once its "
                 "tasks run, each task waits for one free node instead of "
                 "%d at once, and a failed node costs one task's %d "
                 "samples (rerun alone, finished samples kept), not the "
                 "whole job",
                 ratio, spec->cluster.nodes, sm->alt_samples);
    }
    return SVP_OK;
}

/* The time limit against the layout that will run. */
static void plan_summarize_limit(const svp_spec_t          *spec,
                                 svp_launch_plan_summary_t *sm)
{
    sm->limit_s = 0;
    if (spec->cluster.time != NULL && spec->cluster.time[0] != '\0' &&
        svp_launch_time_parse(spec->cluster.time, &sm->limit_s) == SVP_OK &&
        sm->limit_s > 0 && sm->layouts[sm->used].makespan_s > (double)sm->limit_s) {
        snprintf(sm->warning, sizeof(sm->warning),
                 "the predicted makespan "
                 "%.0f s%s exceeds cluster.time %s (%ld s), before start-up "
                 "is counted: Slurm would stop the job%s",
                 sm->layouts[sm->used].makespan_s,
                 sm->tasks > 1 ? " of an array task" : "", spec->cluster.time,
                 sm->limit_s,
                 spec->cluster.requeue
                     ? " and requeue it (the requeued run resumes)"
                     : "; finished samples are kept and a rerun resumes");
    }
}

svp_status_t svp_launch_plan_summarize(const svp_spec_t          *spec,
                                       const svp_plan_costs_t    *costs,
                                       svp_launch_plan_summary_t *sm)
{
    svp_plan_params_t p;
    svp_status_t      status;
    int               N = spec->samples;

    sm->world = svp_layout_spec_world(spec);
    sm->tasks = svp_launch_array_tasks(spec);
    sm->tasks = sm->tasks > 0 ? sm->tasks : 1;
    /* task i of n makes every n-th sample: the busiest makes ceil(N / n) */
    sm->samples = (N + sm->tasks - 1) / sm->tasks;
    sm->work_s  = spec->steps * costs->step_s + costs->encode_s + costs->decode_s;

    status = plan_summarize_layouts(spec, costs, sm, &p);
    if (status != SVP_OK) {
        return status;
    }
    plan_summarize_spec(spec, &p, sm);
    status = plan_summarize_others(spec, costs, sm, &p);
    if (status != SVP_OK) {
        return status;
    }
    if (sm->tasks == 1 && spec->cluster.nodes > 1) {
        status = plan_summarize_array(spec, costs, sm);
        if (status != SVP_OK) {
            return status;
        }
    }
    plan_summarize_limit(spec, sm);
    return SVP_OK;
}

void svp_launch_plan_summary_cleanup(svp_launch_plan_summary_t *sm)
{
    free(sm->layouts);
    free(sm->bubble);
    free(sm->memory);
}
