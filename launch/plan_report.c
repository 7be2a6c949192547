/*
 * The text report of `svdlaunch plan`: the job's pipeline rank by rank, its
 * links and memory, then the same job laid out differently.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "jobspec/layout.h"
#include "launch/plan.h"
#include "launch/launch_int.h"
#include "common/str.h"
#include "common/util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_GB 1e9

static void plan_params(const svp_spec_t *spec, const svp_plan_costs_t *costs,
                        int world, int ranks_per_node, svp_placement_t placement,
                        int samples, svp_plan_params_t *p)
{
    svp_plan_message_t msg;

    svp_plan_message(spec, &msg);
    p->world          = world;
    p->ranks_per_node = ranks_per_node;
    p->steps          = spec->steps;
    p->samples        = samples;
    p->placement      = placement;
    p->inflight       = spec->comm.inflight;
    p->message_bytes  = msg.total;
    p->costs          = *costs;
    p->first_rank     = 0;
    /* guidance pairs split the UNet's batch of two: svd with guidance, or
     * the dummy's stand-in of it */
    p->pairs = 1;
    p->half_bytes =
        (spec->model.kind == SVP_MODEL_DUMMY || spec->video.max_guidance > 1.0)
            ? msg.latent
            : 0;
    /* a shared finish's SHARE: the decoded frames (fp32), the dummy's
     * stand-in its final latents */
    p->share_bytes = (spec->model.kind == SVP_MODEL_DUMMY)
                         ? msg.latent
                         : 4.0 * spec->video.num_frames * 3 * spec->video.height *
                               spec->video.width;
    p->objective   = spec->pipeline.objective;
}

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

static void plan_print_message(FILE *out, const svp_spec_t *spec)
{
    svp_plan_message_t msg;

    svp_plan_message(spec, &msg);
    if (spec->model.kind == SVP_MODEL_DUMMY) {
        fprintf(out,
                "message  %.0f bytes per hand-off: latent [%lld,%lld,%lld,"
                "%lld,%lld] f32\n",
                msg.total, (long long)spec->latent_shape[0],
                (long long)spec->latent_shape[1], (long long)spec->latent_shape[2],
                (long long)spec->latent_shape[3], (long long)spec->latent_shape[4]);
        return;
    }
    fprintf(out,
            "message  %.0f bytes per hand-off (f32 in every dtype): "
            "latent [%d,4,%d,%d] %.0f + image latents [4,%d,%d] %.0f + image "
            "embeddings [1,1024] %.0f + time ids [3] %.0f\n",
            msg.total, spec->video.num_frames, spec->video.height / 8,
            spec->video.width / 8, msg.latent, spec->video.height / 8,
            spec->video.width / 8, msg.image_latents, msg.image_embeds,
            msg.time_ids);
}

static void plan_print_pipeline(FILE *out, const svp_spec_t *spec,
                                const svp_plan_params_t *p,
                                const svp_plan_result_t *res)
{
    int S = svp_plan_stages(p); /* the simulated pipeline's positions */

    fprintf(out, "\nrank  node  steps/sample  steps  encodes  decodes    busy_s  "
                 "per-sample_s  finish_s  idle\n");
    for (int r = 0; r < S; ++r) {
        const svp_plan_rank_t *rk = &res->ranks[r];

        fprintf(out,
                "%4d  %4d  %12d  %5d  %7d  %7d  %8.3f  %12.3f  %8.3f  "
                "%3.0f%%\n",
                r, r / p->ranks_per_node, p->steps / S, rk->steps, rk->encodes,
                rk->decodes, rk->busy_s, rk->busy_s / p->samples, rk->finish_s,
                100.0 * (1.0 - rk->busy_s / res->makespan_s));
    }

    fprintf(out,
            "\npipeline (placement %s): makespan %.3f s for %d samples, "
            "%.4f samples/s, bubble %.1f%%\n",
            svp_spec_placement_name(p->placement), res->makespan_s, p->samples,
            res->samples_per_s, 100.0 * res->bubble);
    fprintf(out,
            "  fill %.3f s (one sample end to end) + %d x %.3f s "
            "(bottleneck: rank %d) = %.3f s; steady state %.4f samples/s\n",
            res->fill_s, p->samples - 1, res->bottleneck_s, res->bottleneck_rank,
            res->closed_form_s, res->bottleneck_s > 0 ? 1.0 / res->bottleneck_s : 0);

    fprintf(out, "\nlink       messages     MB   busy_s\n");
    for (int from = 0; from < S; ++from) {
        for (int to = 0; to < S; ++to) {
            int n = res->link_msgs[from * S + to];

            if (n > 0) {
                fprintf(out, "%3d -> %-3d %8d %6.1f  %.6f\n", from, to, n,
                        n * p->message_bytes / 1e6, res->link_s[from * S + to]);
            }
        }
    }

    fprintf(out, "\nmemory per GPU (GB)\nrank  weights  activations  buffers  "
                 "total\n");
    for (int r = 0; r < S; ++r) {
        svp_plan_memory_t m;

        svp_plan_memory(spec, S, r, p->placement, &m);
        fprintf(out, "%4d  %7.2f  %11.2f  %7.3f  %5.2f\n", r, m.weights / PLAN_GB,
                m.activations / PLAN_GB, m.buffers / PLAN_GB, m.total / PLAN_GB);
    }
    if (spec->model.kind == SVP_MODEL_SVD) {
        fprintf(out,
                "activations: the largest of the ops arena's plans (dry "
                "runs, fp32): unet call %.2f, vae decode %.2f, vae encode "
                "%.2f\n",
                svp_plan_unet_activations(spec,
                                          spec->video.max_guidance > 1.0 ? 2 : 1) /
                    PLAN_GB,
                svp_plan_vae_activations(spec, 1) / PLAN_GB,
                svp_plan_vae_activations(spec, 0) / PLAN_GB);
    }
}

/*
 * s as a JSON string: a path or a reason may hold bytes that are not UTF-8,
 * which jansson refuses; those go escaped (svp_str_escape) rather than
 * losing the report.
 */
static json_t *plan_json_text(const char *s)
{
    char    esc[1024];
    json_t *j;

    s = (s != NULL) ? s : "";
    j = json_string(s);
    if (j == NULL) {
        svp_str_escape(s, strlen(s), esc, sizeof(esc), SVP_STR_ESCAPE_TERMINAL);
        j = json_string(esc);
    }
    return j;
}

/*
 * Everything the report says, computed once and then printed as text or
 * JSON.  Every figure in the layouts table is the whole job's (or, with
 * cluster.array, one array task's): its makespan is its slowest
 * pipeline's, its bubble the idle share of all its GPUs.  The pipeline
 * detail above it is one pipeline's, and says so.
 */
typedef struct {
    int                world;       /* ranks of the job (of one task) */
    int                tasks;       /* array tasks, 1 for a gang job */
    int                samples;     /* of the job (of the busiest task) */
    int                spec_stages; /* what the spec asks for (0 = W) */
    int                spec_valid;
    char               spec_why[160]; /* why the spec's layout cannot run */
    svp_plan_layout_t *layouts;
    double            *bubble, *memory;
    int                n, best, used; /* used: the spec's, else best */
    double             work_s;        /* one sample's compute, all ranks */
    svp_plan_layout_t  other;         /* used layout, the other placement */
    svp_placement_t    other_placement;
    double             one_gpu_s; /* every sample on one GPU */
    /* a job array of one node per task beside the gang job */
    int               alt_tasks, alt_world, alt_samples;
    svp_plan_layout_t alt;
    int               alt_recommended;
    char              alt_why[512];
    /* cluster.time against the makespan */
    long limit_s;
    char warning[512];
} plan_summary_t;

static double plan_job_bubble(const plan_summary_t *sm, const svp_plan_layout_t *l,
                              int world, int samples)
{
    return l->makespan_s > 0 ? 1.0 - samples * sm->work_s / (world * l->makespan_s)
                             : 0;
}

/* Every layout of the job, each with its bubble and peak memory; *p is left
 * as the job's planning parameters. */
static svp_status_t plan_summarize_layouts(const svp_spec_t       *spec,
                                           const svp_plan_costs_t *costs,
                                           plan_summary_t *sm, svp_plan_params_t *p)
{
    int          W = sm->world;
    svp_status_t status;

    sm->layouts = calloc((size_t)2 * W, sizeof(*sm->layouts));
    sm->bubble  = calloc((size_t)2 * W, sizeof(*sm->bubble));
    sm->memory  = calloc((size_t)2 * W, sizeof(*sm->memory));
    if (sm->layouts == NULL || sm->bubble == NULL || sm->memory == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    plan_params(spec, costs, W, spec->cluster.ranks_per_node,
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
                                plan_summary_t *sm)
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
static svp_status_t plan_summarize_others(const svp_spec_t       *spec,
                                          const svp_plan_costs_t *costs,
                                          plan_summary_t *sm, svp_plan_params_t *p)
{
    svp_plan_layout_t one;
    svp_status_t      status;

    sm->other_placement = spec->pipeline.placement == SVP_PLACEMENT_ENDS
                              ? SVP_PLACEMENT_SPREAD
                              : SVP_PLACEMENT_ENDS;
    p->placement        = sm->other_placement;
    status              = svp_plan_layout_pairs(p, sm->layouts[sm->used].stages,
                                                sm->layouts[sm->used].pairs, &sm->other);
    if (status != SVP_OK) {
        return status;
    }
    plan_params(spec, costs, 1, 1, spec->pipeline.placement, sm->samples, p);
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
static svp_status_t plan_summarize_array(const svp_spec_t       *spec,
                                         const svp_plan_costs_t *costs,
                                         plan_summary_t         *sm)
{
    svp_plan_params_t  p;
    svp_plan_layout_t *alt;
    /* against the gang job's best layout, not a worse one the spec asks */
    const svp_plan_layout_t *used = &sm->layouts[sm->best];
    int                      N = spec->samples, W = sm->world, n = 0, best = 0;
    double                   ratio;
    svp_status_t             status;

    sm->alt_tasks   = spec->cluster.nodes;
    sm->alt_world   = spec->cluster.ranks_per_node;
    sm->alt_samples = (N + sm->alt_tasks - 1) / sm->alt_tasks;
    alt             = calloc((size_t)2 * sm->alt_world, sizeof(*alt));
    if (alt == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    plan_params(spec, costs, sm->alt_world, sm->alt_world, spec->pipeline.placement,
                sm->alt_samples, &p);
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
static void plan_summarize_limit(const svp_spec_t *spec, plan_summary_t *sm)
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

static svp_status_t plan_summarize(const svp_spec_t       *spec,
                                   const svp_plan_costs_t *costs, plan_summary_t *sm)
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

static void plan_summary_cleanup(plan_summary_t *sm)
{
    free(sm->layouts);
    free(sm->bubble);
    free(sm->memory);
}

/* The spec lines of a layout. */
/* Beside a gang job of several nodes: the same work as an array. */
static void plan_print_array(FILE *out, const svp_spec_t *spec,
                             const plan_summary_t *sm)
{
    if (sm->alt_tasks > 0) {
        const svp_plan_layout_t *u = &sm->layouts[sm->best];

        fprintf(out, "\njob array or gang job:\n");
        fprintf(out,
                "  one gang job of %d nodes x %d ranks: %d pipeline%s x %d "
                "stage%s, makespan %.3f s\n",
                spec->cluster.nodes, spec->cluster.ranks_per_node, u->groups,
                u->groups > 1 ? "s" : "", u->stages, u->stages > 1 ? "s" : "",
                u->makespan_s);
        fprintf(out,
                "  %d array tasks of %d ranks (one node each, up to %d "
                "samples): %d pipeline%s x %d stage%s, makespan %.3f s once "
                "all run\n",
                sm->alt_tasks, sm->alt_world, sm->alt_samples, sm->alt.groups,
                sm->alt.groups > 1 ? "s" : "", sm->alt.stages,
                sm->alt.stages > 1 ? "s" : "", sm->alt.makespan_s);
        fprintf(out, "  recommended: %s\n", sm->alt_why);
        if (sm->alt_recommended && sm->alt.pairs > 1) {
            /* the pairs are the layout: copying the line keeps them */
            fprintf(out,
                    "  as an array: cluster: {nodes: 1, array: \"0-%d\"}, "
                    "pipeline: {stages: %d, guidance_parallel: 2}\n",
                    sm->alt_tasks - 1, sm->alt.stages);
        } else if (sm->alt_recommended) {
            fprintf(out,
                    "  as an array: cluster: {nodes: 1, array: \"0-%d\"}, "
                    "pipeline: {stages: %d}\n",
                    sm->alt_tasks - 1, sm->alt.stages);
        }
    }
}

static void plan_print_layout_lines(FILE *out, const svp_spec_t *spec,
                                    const plan_summary_t *sm)
{
    const svp_plan_layout_t *l = sm->layouts, *b = &l[sm->best];
    const svp_plan_layout_t *full = &l[sm->n - 1];
    int                      W    = sm->world, tie;
    int lat = (spec->pipeline.objective == SVP_OBJECTIVE_LATENCY);

    /* the one pipeline of C = 1 (the pairs are listed after) */
    for (int k = sm->n - 1; k > 0 && full->pairs > 1; --k) {
        full = &l[k - 1];
    }

    fprintf(out,
            "\nlayouts of %s%d ranks, %d samples (placement %s); every "
            "figure is the %s:\n",
            sm->tasks > 1 ? "one array task of " : "", W, sm->samples,
            svp_spec_placement_name(spec->pipeline.placement),
            sm->tasks > 1 ? "task's" : "job's");
    fprintf(out, "  stages  pipelines  steps/stage  samples/pipeline  "
                 "makespan_s  samples/s  per-GPU/s  bubble  memory/GPU GB  pairs  "
                 "first_out_s  latency_s  vs best\n");
    if (!sm->spec_valid) {
        int S = sm->spec_stages == 0 ? W : sm->spec_stages;

        fprintf(out, "  %6d  (this, invalid: %s)\n", S, sm->spec_why);
    }
    for (int k = 0; k < sm->n; ++k) {
        fprintf(out,
                "  %6d  %9d  %11d  %16d  %10.3f  %9.4f  %9.4f  %5.1f%%  "
                "%13.2f  %5d  %11.3f  %9.3f  %6.2fx%s%s\n",
                l[k].stages, l[k].groups, spec->steps / l[k].stages,
                l[k].samples_max, l[k].makespan_s, l[k].samples_per_s,
                l[k].samples_per_s / W, 100 * sm->bubble[k], sm->memory[k] / PLAN_GB,
                l[k].pairs, l[k].first_out_s, l[k].latency_s,
                b->makespan_s > 0 ? l[k].makespan_s / b->makespan_s : 0,
                (k == sm->used && sm->spec_valid) ? "  (this)" : "",
                (k == sm->best) ? "  <- recommended" : "");
    }
    if (b->pairs > 1) {
        fprintf(out,
                "recommended: pipeline.stages: %d, pipeline.guidance_parallel: "
                "2 (%d pipeline%s x %d stage%s x 2): ",
                b->stages, b->groups, b->groups > 1 ? "s" : "", b->stages,
                b->stages > 1 ? "s" : "");
    } else {
        fprintf(out,
                "recommended: pipeline.stages: %d (%d pipeline%s x %d stage%s): ",
                b->stages, b->groups, b->groups > 1 ? "s" : "", b->stages,
                b->stages > 1 ? "s" : "");
    }
    tie = -1;
    for (int k = 0; k < sm->n; ++k) {
        double mine = lat ? l[k].latency_s : l[k].makespan_s;
        double best = lat ? b->latency_s : b->makespan_s;

        if (k != sm->best && mine < best &&
            (tie < 0 || mine < (lat ? l[tie].latency_s : l[tie].makespan_s))) {
            tie = k;
        }
    }
    if (tie >= 0) {
        /* a layout priced faster by less than the planner's 0.1% band: no
         * win either way, and the fewer stages (less fill, fewer hand-offs
         * to go wrong) take it */
        fprintf(out,
                "a tie: %d stage%s is priced %.3f s %s (%.2g%%), within the "
                "0.1%% the prediction can tell apart; the fewer stages win a tie\n",
                l[tie].stages, l[tie].stages > 1 ? "s" : "",
                lat ? b->latency_s - l[tie].latency_s
                    : b->makespan_s - l[tie].makespan_s,
                lat ? "less latency" : "shorter",
                100 * (lat ? 1 - l[tie].latency_s / b->latency_s
                           : 1 - l[tie].makespan_s / b->makespan_s));
    } else if (spec->pipeline.objective == SVP_OBJECTIVE_LATENCY) {
        fprintf(out,
                "objective latency: a sample takes %.3f s from its start to "
                "its outputs (the first outputs at %.3f s), against %.3f s with "
                "%d replicas; %.4f samples/s against %.4f\n",
                b->latency_s, b->first_out_s, l[0].latency_s, l[0].groups,
                b->samples_per_s, l[0].samples_per_s);
    } else {
        if (full->stages != W) {
            fprintf(out, "one pipeline of %d cannot run %d steps; ", W, spec->steps);
        }
        if (b->pairs > 1) {
            fprintf(out,
                    "%d samples deal better over %d pairs than over the "
                    "layouts of one rank per stage\n",
                    sm->samples, W / 2);
        } else if (b->stages == 1) {
            fprintf(out,
                    "replicas have no fill or drain: %.3f s against %.3f s for "
                    "%d pipeline%s of %d stages, with %d samples dealt %s over %d "
                    "ranks\n",
                    b->makespan_s, full->makespan_s, full->groups,
                    full->groups > 1 ? "s" : "", full->stages, sm->samples,
                    (sm->samples % W == 0) ? "evenly" : "nearly evenly", W);
        } else if (b->stages == full->stages) {
            fprintf(out,
                    "%d samples do not deal evenly over %d replicas (the busiest "
                    "runs %d), and the pipeline's fill costs less than that\n",
                    sm->samples, W, l[0].samples_max);
        } else {
            fprintf(out,
                    "fill and drain of %d stages cost less than the imbalance of "
                    "dealing %d samples over more pipelines\n",
                    b->stages, sm->samples);
        }
    }
    fprintf(out,
            "placement %s instead: %.3f s (%.2fx); one GPU for every "
            "sample: %.3f s (this layout is %.2fx faster)\n",
            svp_spec_placement_name(sm->other_placement), sm->other.makespan_s,
            sm->layouts[sm->used].makespan_s > 0
                ? sm->other.makespan_s / sm->layouts[sm->used].makespan_s
                : 0,
            sm->one_gpu_s,
            sm->layouts[sm->used].makespan_s > 0
                ? sm->one_gpu_s / sm->layouts[sm->used].makespan_s
                : 0);

    plan_print_array(out, spec, sm);
    if (sm->warning[0] != '\0') {
        fprintf(out, "\nwarning: %s\n", sm->warning);
    }
}

static json_t *plan_json_layout(const svp_spec_t *spec, const svp_plan_layout_t *l,
                                int world, double bubble, double memory)
{
    json_t *o;

    o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f}", "stages",
                  l->stages, "pairs", l->pairs, "pipelines", l->groups,
                  "steps_per_stage", spec->steps / l->stages, "samples_per_pipeline",
                  l->samples_max, "makespan_s", l->makespan_s, "samples_per_s",
                  l->samples_per_s, "per_gpu_samples_per_s",
                  l->samples_per_s / world, "first_out_s", l->first_out_s,
                  "latency_s", l->latency_s);
    if (o != NULL && bubble >= 0 &&
        (json_object_set_new(o, "bubble", json_real(bubble)) != 0 ||
         json_object_set_new(o, "memory_per_gpu_bytes",
                             json_integer((json_int_t)llround(memory))) != 0)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The figures that follow the layouts, in the report's order; nonzero
 * when one could not be set (each value is consumed either way). */
static int plan_json_tail(json_t *doc, const svp_spec_t *spec,
                          const plan_summary_t *sm)
{
    json_t *warnings = json_array(), *array = NULL;

    if (sm->alt_tasks > 0) {
        array = json_pack("{s:i, s:i, s:i, s:o, s:b, s:o}", "tasks", sm->alt_tasks,
                          "ranks_per_task", sm->alt_world, "samples_per_task",
                          sm->alt_samples, "layout",
                          plan_json_layout(spec, &sm->alt, sm->alt_world, -1, 0),
                          "recommended", sm->alt_recommended, "why",
                          plan_json_text(sm->alt_why));
    }
    if (warnings != NULL && sm->warning[0] != '\0') {
        json_array_append_new(warnings, plan_json_text(sm->warning));
    }
    return json_object_set_new(doc, "recommended_stages",
                               json_integer(sm->layouts[sm->best].stages)) |
           json_object_set_new(doc, "makespan_s",
                               json_real(sm->layouts[sm->used].makespan_s)) |
           json_object_set_new(doc, "objective",
                               json_string(spec->pipeline.objective ==
                                                   SVP_OBJECTIVE_LATENCY
                                               ? "latency"
                                               : "throughput")) |
           json_object_set_new(doc, "recommended_pairs",
                               json_integer(sm->layouts[sm->best].pairs)) |
           json_object_set_new(doc, "latency_s",
                               json_real(sm->layouts[sm->used].latency_s)) |
           json_object_set_new(doc, "other_placement",
                               json_pack("{s:s, s:f}", "placement",
                                         svp_spec_placement_name(
                                             sm->other_placement),
                                         "makespan_s", sm->other.makespan_s)) |
           json_object_set_new(doc, "one_gpu_makespan_s", json_real(sm->one_gpu_s)) |
           (sm->alt_tasks > 0 && json_object_set_new(doc, "array", array)) |
           json_object_set_new(doc, "warnings", warnings);
}

static svp_status_t plan_print_json(FILE *out, const svp_spec_t *spec,
                                    const svp_plan_costs_t *costs,
                                    const plan_summary_t   *sm)
{
    json_t *doc, *layouts = json_array(), *spec_layout;
    int     failed;

    spec_layout = json_pack("{s:i, s:b}", "stages",
                            sm->spec_stages == SVP_PIPE_STAGES_AUTO
                                ? sm->layouts[sm->best].stages
                            : sm->spec_stages == 0 ? sm->world
                                                   : sm->spec_stages,
                            "valid", sm->spec_valid);
    if (spec_layout != NULL && !sm->spec_valid) {
        json_object_set_new(spec_layout, "why", plan_json_text(sm->spec_why));
    }
    for (int k = 0; layouts != NULL && k < sm->n; ++k) {
        json_array_append_new(layouts,
                              plan_json_layout(spec, &sm->layouts[k], sm->world,
                                               sm->bubble[k], sm->memory[k]));
    }
    doc = json_pack("{s:o, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
                    "s:{s:f, s:f, s:f, s:o}, s:s, s:o, s:o}",
                    "spec", plan_json_text(spec->file), "model",
                    svp_spec_model_kind_name(spec->model.kind), "dtype",
                    svp_dtype_short_name(spec->dtype), "steps", spec->steps,
                    "samples", spec->samples, "nodes", spec->cluster.nodes,
                    "ranks_per_node", spec->cluster.ranks_per_node, "world",
                    sm->world, "spec_array_tasks", sm->tasks, "samples_per_task",
                    sm->samples, "costs", "step_s", costs->step_s, "encode_s",
                    costs->encode_s, "decode_s", costs->decode_s, "source",
                    plan_json_text(costs->source), "placement",
                    svp_spec_placement_name(spec->pipeline.placement), "spec_layout",
                    spec_layout, "layouts", layouts);
    if (doc == NULL || plan_json_tail(doc, spec, sm) != 0) {
        json_decref(doc);
        return SVP_ERR_NO_MEMORY;
    }
    failed = json_dumpf(doc, out,
                        JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                            JSON_REAL_PRECISION(9)) != 0 ||
             fputc('\n', out) == EOF;
    json_decref(doc);
    return failed ? SVP_ERR_IO : SVP_OK;
}

svp_status_t svp_plan_report(FILE *out, const svp_spec_t *spec,
                             const svp_plan_costs_t *costs, unsigned flags)
{
    plan_summary_t           sm = {0};
    svp_plan_params_t        p;
    svp_plan_result_t       *res = NULL;
    const svp_plan_layout_t *u;
    svp_status_t             status;
    int                      S, G;

    status = plan_summarize(spec, costs, &sm);
    if (status != SVP_OK) {
        goto out;
    }
    if (flags & SVP_PLAN_REPORT_JSON) {
        status = plan_print_json(out, spec, costs, &sm);
        goto out;
    }
    u = &sm.layouts[sm.used];
    S = u->stages;
    G = u->groups;

    /* the detail below is that of one pipeline (the busiest, group 0) */
    plan_params(spec, costs, sm.world, spec->cluster.ranks_per_node,
                spec->pipeline.placement, u->samples_max, &p);
    p.stages = S;
    p.pairs  = u->pairs;
    status   = svp_plan_run(&p, &res);
    if (status != SVP_OK) {
        goto out;
    }

    fprintf(out, "plan     %s: model %s, %d samples, %d steps, %s\n", spec->file,
            svp_spec_model_kind_name(spec->model.kind), spec->samples, spec->steps,
            svp_dtype_short_name(spec->dtype));
    if (spec->model.kind == SVP_MODEL_SVD) {
        fprintf(out,
                "video    %d frames %dx%d, guidance %g..%g (UNet batch "
                "%d), decode_chunk_size %d\n",
                spec->video.num_frames, spec->video.height, spec->video.width,
                spec->video.min_guidance, spec->video.max_guidance,
                spec->video.max_guidance > 1 ? 2 : 1, spec->video.decode_chunk_size);
    }
    if (sm.tasks > 1) {
        fprintf(out,
                "array    %d tasks (cluster.array %s), each up to %d of "
                "the %d samples\n",
                sm.tasks, spec->cluster.array, sm.samples, spec->samples);
    }
    fprintf(out,
            "world    %d ranks (%d node%s x %d)%s: %d pipeline%s x %d "
            "stage%s%s, %d steps: %d per stage%s\n",
            sm.world, spec->cluster.nodes, spec->cluster.nodes > 1 ? "s" : "",
            spec->cluster.ranks_per_node, sm.tasks > 1 ? " per task" : "", G,
            G > 1 ? "s" : "", S, S > 1 ? "s" : "",
            u->pairs > 1 ? " x 2 guidance halves" : "", spec->steps, spec->steps / S,
            sm.spec_valid ? "" : " (the recommended layout: the spec's cannot run)");
    if (!sm.spec_valid) {
        fprintf(out,
                "invalid  pipeline.stages: %d: %s; check and render refuse "
                "it (set pipeline.stages: %d, or auto)\n",
                sm.spec_stages == 0 ? sm.world : sm.spec_stages, sm.spec_why,
                sm.layouts[sm.best].stages);
    }
    fprintf(out, "costs    step %.4f s, encode %.4f s, decode %.4f s: %s\n",
            costs->step_s, costs->encode_s, costs->decode_s, costs->source);
    fprintf(out,
            "links    intra-node %g GB/s, inter-node %g GB/s, latency "
            "%g us, setup %g ms (first message)\n",
            costs->intra_node_gbps, costs->inter_node_gbps, costs->latency_s * 1e6,
            costs->link_setup_s * 1e3);
    plan_print_message(out, spec);

    fprintf(out, "\npipeline 0 of %d: %d stage%s, its %d samples\n", G, S,
            S > 1 ? "s" : "", u->samples_max);
    plan_print_pipeline(out, spec, &p, res);
    plan_print_layout_lines(out, spec, &sm);
    status = SVP_OK;

out:
    svp_plan_result_destroy(res);
    plan_summary_cleanup(&sm);
    return status;
}

svp_status_t svp_plan_choose_stages(const svp_spec_t       *spec,
                                    const svp_plan_costs_t *costs,
                                    svp_plan_layout_t *best_p, char *why, int whylen)
{
    svp_plan_costs_t   c;
    svp_plan_params_t  p;
    svp_plan_layout_t *layouts;
    char               scratch[256];
    svp_status_t       status;
    int                W = svp_layout_spec_world(spec);
    int                n = 0, best = 0;

    if (costs != NULL) {
        c = *costs;
    } else if (svp_plan_costs_from_spec(spec, NULL, scratch, sizeof(scratch), &c) !=
               SVP_OK) {
        memset(&c, 0, sizeof(c));
        c.step_s = 1.0;
        snprintf(c.source, sizeof(c.source),
                 "unit step costs (no time model "
                 "for this model without a hardware table)");
    }
    layouts = calloc((size_t)2 * W, sizeof(*layouts));
    if (layouts == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    plan_params(spec, &c, W, spec->cluster.ranks_per_node, spec->pipeline.placement,
                spec->samples, &p);
    /* auto chooses S for the spec's C, by throughput (render writes S alone) */
    p.objective = SVP_OBJECTIVE_THROUGHPUT;
    if (spec->pipeline.guidance_parallel <= 1) {
        p.half_bytes = 0;
    }
    status = svp_plan_layouts(&p, layouts, &n, &best);
    if (status == SVP_OK &&
        layouts[best].pairs != SVP_MAX(1, spec->pipeline.guidance_parallel)) {
        best = -1;
        for (int k = 0; k < n; ++k) {
            if (layouts[k].pairs == SVP_MAX(1, spec->pipeline.guidance_parallel) &&
                (best < 0 ||
                 layouts[k].makespan_s < layouts[best].makespan_s * (1 - 1e-3))) {
                best = k;
            }
        }
        status = (best < 0) ? SVP_ERR_INVALID_PARAM : SVP_OK;
    }
    if (status == SVP_OK) {
        *best_p = layouts[best];
        snprintf(why, whylen, "%s", c.source);
    }
    free(layouts);
    return status;
}
