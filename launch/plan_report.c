/*
 * The text report of `svdlaunch plan`: the job's pipeline rank by rank, its
 * links and memory, then the same job laid out differently (the figures
 * are plan_summary.c's; --json prints them with plan_report_json.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/plan_report.h"
#include "launch/plan_report_int.h"

#include <stdio.h>

#define PLAN_GB 1e9

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

/* Beside a gang job of several nodes: the same work as an array. */
static void plan_print_array(FILE *out, const svp_spec_t *spec,
                             const svp_launch_plan_summary_t *sm)
{
    if (sm->alt_tasks > 0) {
        const svp_plan_estimate_t *u = &sm->layouts[sm->best];

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
                                    const svp_launch_plan_summary_t *sm)
{
    const svp_plan_estimate_t *l = sm->layouts, *b = &l[sm->best];
    const svp_plan_estimate_t *full = &l[sm->n - 1];
    int                        W    = sm->world, tie;
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


svp_status_t svp_launch_plan_report(FILE *out, const svp_spec_t *spec,
                                    const svp_plan_costs_t *costs, unsigned flags)
{
    svp_launch_plan_summary_t  sm = {0};
    svp_plan_params_t          p;
    svp_plan_result_t         *res = NULL;
    const svp_plan_estimate_t *u;
    svp_status_t               status;
    int                        S, G;

    status = svp_launch_plan_summarize(spec, costs, &sm);
    if (status != SVP_OK) {
        goto out;
    }
    if (flags & SVP_LAUNCH_PLAN_JSON) {
        status = svp_launch_plan_print_json(out, spec, costs, &sm);
        goto out;
    }
    u = &sm.layouts[sm.used];
    S = u->stages;
    G = u->groups;

    /* the detail below is that of one pipeline (the busiest, group 0) */
    svp_plan_params_of_spec(spec, costs, sm.world, spec->cluster.ranks_per_node,
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
    svp_launch_plan_summary_cleanup(&sm);
    return status;
}
