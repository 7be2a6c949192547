/*
 * The text report of `svdlaunch plan`: the job's pipeline rank by rank, its
 * links and memory, then the same job laid out differently.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/plan.h"

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
    p->message_bytes  = msg.total;
    p->costs          = *costs;
    p->first_rank     = 0;
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
        fprintf(out, "message  %.0f bytes per hand-off: latent [%lld,%lld,%lld,"
                "%lld,%lld] %s\n", msg.total, (long long)spec->latent_shape[0],
                (long long)spec->latent_shape[1],
                (long long)spec->latent_shape[2],
                (long long)spec->latent_shape[3],
                (long long)spec->latent_shape[4], svp_spec_dtype_name(spec->dtype));
        return;
    }
    fprintf(out, "message  %.0f bytes per hand-off (%s): latent [%d,4,%d,%d] "
            "%.0f + image latents [4,%d,%d] %.0f + image embeddings [1,1024] "
            "%.0f + time ids [3] %.0f\n", msg.total,
            svp_spec_dtype_name(spec->dtype), spec->video.num_frames,
            spec->video.height / 8, spec->video.width / 8, msg.latent,
            spec->video.height / 8, spec->video.width / 8, msg.image_latents,
            msg.image_embeds, msg.time_ids);
}

static void plan_print_pipeline(FILE *out, const svp_spec_t *spec,
                                const svp_plan_params_t *p,
                                const svp_plan_result_t *res)
{
    int W = p->world;

    fprintf(out, "\nrank  node  steps/sample  steps  encodes  decodes    busy_s  "
            "per-sample_s  finish_s  idle\n");
    for (int r = 0; r < W; ++r) {
        const svp_plan_rank_t *rk = &res->ranks[r];

        fprintf(out, "%4d  %4d  %12d  %5d  %7d  %7d  %8.3f  %12.3f  %8.3f  "
                "%3.0f%%\n", r, r / p->ranks_per_node, p->steps / W, rk->steps,
                rk->encodes, rk->decodes, rk->busy_s, rk->busy_s / p->samples,
                rk->finish_s, 100.0 * (1.0 - rk->busy_s / res->makespan_s));
    }

    fprintf(out, "\npipeline (placement %s): makespan %.3f s for %d samples, "
            "%.4f samples/s, bubble %.1f%%\n",
            svp_spec_placement_name(p->placement), res->makespan_s, p->samples,
            res->samples_per_s, 100.0 * res->bubble);
    fprintf(out, "  fill %.3f s (one sample end to end) + %d x %.3f s "
            "(bottleneck: rank %d) = %.3f s; steady state %.4f samples/s\n",
            res->fill_s, p->samples - 1, res->bottleneck_s, res->bottleneck_rank,
            res->closed_form_s,
            res->bottleneck_s > 0 ? 1.0 / res->bottleneck_s : 0);

    fprintf(out, "\nlink       messages     MB   busy_s\n");
    for (int from = 0; from < W; ++from) {
        for (int to = 0; to < W; ++to) {
            int n = res->link_msgs[from * W + to];

            if (n > 0) {
                fprintf(out, "%3d -> %-3d %8d %6.1f  %.6f\n", from, to, n,
                        n * p->message_bytes / 1e6, res->link_s[from * W + to]);
            }
        }
    }

    fprintf(out, "\nmemory per GPU (GB)\nrank  weights  activations  buffers  "
            "total\n");
    for (int r = 0; r < W; ++r) {
        svp_plan_memory_t m;

        svp_plan_memory(spec, W, r, p->placement, &m);
        fprintf(out, "%4d  %7.2f  %11.2f  %7.3f  %5.2f\n", r,
                m.weights / PLAN_GB, m.activations / PLAN_GB,
                m.buffers / PLAN_GB, m.total / PLAN_GB);
    }
    if (spec->model.kind == SVP_MODEL_SVD) {
        fprintf(out, "activations: the largest of the ops arena's plans (dry "
                "runs, fp32): unet call %.2f, vae decode %.2f, vae encode "
                "%.2f\n",
                svp_plan_unet_activations(spec, spec->video.max_guidance > 1.0
                                                ? 2 : 1) / PLAN_GB,
                svp_plan_vae_activations(spec, 1) / PLAN_GB,
                svp_plan_vae_activations(spec, 0) / PLAN_GB);
    }
}

/* Every valid pipeline.stages for the job, and the one to take. */
static void plan_print_layouts(FILE *out, const svp_spec_t *spec,
                               const svp_plan_layout_t *l, int n, int best,
                               int chosen)
{
    const svp_plan_layout_t *b = &l[best], *full = &l[n - 1];
    int                      W = b->stages * b->groups;

    fprintf(out, "\npipeline.stages (placement %s)  pipelines  steps/stage  "
            "samples/pipeline  makespan_s  samples/s  per pipeline/s  vs best\n",
            svp_spec_placement_name(spec->pipeline.placement));
    for (int k = 0; k < n; ++k) {
        fprintf(out, "  %5d%-26s %9d  %11d  %16d  %10.3f  %9.4f  %14.4f  %6.2fx%s\n",
                l[k].stages, (k == chosen) ? " (this)" : "", l[k].groups,
                spec->steps / l[k].stages, l[k].samples_max, l[k].makespan_s,
                l[k].samples_per_s, l[k].group_samples_per_s,
                b->makespan_s > 0 ? l[k].makespan_s / b->makespan_s : 0,
                (k == best) ? "  <- recommended" : "");
    }
    fprintf(out, "recommended: pipeline.stages: %d (%d pipeline%s x %d stage%s): ",
            b->stages, b->groups, b->groups > 1 ? "s" : "", b->stages,
            b->stages > 1 ? "s" : "");
    if (full->stages != W) {
        fprintf(out, "one pipeline of %d cannot run %d steps; ", W, spec->steps);
    }
    if (b->stages == 1) {
        fprintf(out, "replicas have no fill or drain: %.3f s against %.3f s for "
                "%d pipeline%s of %d stages, with %d samples dealt %s over %d "
                "ranks\n", b->makespan_s, full->makespan_s, full->groups,
                full->groups > 1 ? "s" : "", full->stages, spec->samples,
                (spec->samples % W == 0) ? "evenly" : "nearly evenly", W);
    } else if (b->stages == full->stages) {
        fprintf(out, "%d samples do not deal evenly over %d replicas (the busiest "
                "runs %d), and the pipeline's fill costs less than that\n",
                spec->samples, W, l[0].samples_max);
    } else {
        fprintf(out, "fill and drain of %d stages cost less than the imbalance of "
                "dealing %d samples over more pipelines\n", b->stages,
                spec->samples);
    }
}

svp_status_t svp_plan_report(FILE *out, const svp_spec_t *spec,
                             const svp_plan_costs_t *costs)
{
    svp_plan_params_t  p, alt;
    svp_plan_result_t *res, *other = NULL, *one = NULL, *rep = NULL;
    svp_plan_layout_t *layouts;
    svp_placement_t    other_placement;
    svp_status_t       status;
    int                W = spec->cluster.nodes * spec->cluster.ranks_per_node;
    int                N = spec->samples;
    int                per_replica = (N + W - 1) / W;
    int                nlayouts = 0, best = 0, S, G, chosen = -1;
    double             base;

    layouts = calloc((size_t)W, sizeof(*layouts));
    if (layouts == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    plan_params(spec, costs, W, spec->cluster.ranks_per_node,
                spec->pipeline.placement, N, &p);
    status = svp_plan_layouts(&p, layouts, &nlayouts, &best);
    if (status != SVP_OK) {
        free(layouts);
        return status;
    }
    /* the layout the spec asks for; one pipeline of W when it fits */
    S = spec->pipeline.stages;
    if (S == SVP_PIPE_STAGES_AUTO) {
        S = layouts[best].stages;
    } else if (S == 0) {
        S = (spec->steps % W == 0) ? W : layouts[best].stages;
    }
    for (int k = 0; k < nlayouts; ++k) {
        chosen = (layouts[k].stages == S) ? k : chosen;
    }
    if (chosen < 0) {
        free(layouts);
        return SVP_ERR_INVALID_PARAM;
    }
    G = W / S;

    /* the detail below is that of one pipeline (the busiest, group 0) */
    plan_params(spec, costs, S, spec->cluster.ranks_per_node,
                spec->pipeline.placement, layouts[chosen].samples_max, &p);
    status = svp_plan_run(&p, &res);
    if (status != SVP_OK) {
        free(layouts);
        return status;
    }

    other_placement = spec->pipeline.placement == SVP_PLACEMENT_ENDS ?
                      SVP_PLACEMENT_SPREAD : SVP_PLACEMENT_ENDS;
    plan_params(spec, costs, S, spec->cluster.ranks_per_node, other_placement,
                layouts[chosen].samples_max, &alt);
    status = svp_plan_run(&alt, &other);
    if (status != SVP_OK) {
        goto out_destroy;
    }
    plan_params(spec, costs, 1, 1, spec->pipeline.placement, N, &alt);
    status = svp_plan_run(&alt, &one);
    if (status != SVP_OK) {
        goto out_destroy;
    }
    plan_params(spec, costs, 1, 1, spec->pipeline.placement, per_replica, &alt);
    status = svp_plan_run(&alt, &rep);
    if (status != SVP_OK) {
        goto out_destroy;
    }

    fprintf(out, "plan     %s: model %s, %d samples, %d steps, %s\n",
            spec->file, svp_spec_model_kind_name(spec->model.kind), N,
            spec->steps, svp_spec_dtype_name(spec->dtype));
    if (spec->model.kind == SVP_MODEL_SVD) {
        fprintf(out, "video    %d frames %dx%d, guidance %g..%g (UNet batch "
                "%d), decode_chunk_size %d\n", spec->video.num_frames,
                spec->video.height, spec->video.width, spec->video.min_guidance,
                spec->video.max_guidance, spec->video.max_guidance > 1 ? 2 : 1,
                spec->video.decode_chunk_size);
    }
    fprintf(out, "world    %d ranks (%d node%s x %d): %d pipeline%s x %d stage%s, "
            "%d steps: %d per stage%s\n", W, spec->cluster.nodes,
            spec->cluster.nodes > 1 ? "s" : "", spec->cluster.ranks_per_node, G,
            G > 1 ? "s" : "", S, S > 1 ? "s" : "", spec->steps, spec->steps / S,
            (G > 1) ? "; the detail below is pipeline 0" : "");
    fprintf(out, "costs    step %.4f s, encode %.4f s, decode %.4f s: %s\n",
            costs->step_s, costs->encode_s, costs->decode_s, costs->source);
    fprintf(out, "links    intra-node %g GB/s, inter-node %g GB/s, latency "
            "%g us, setup %g ms (first message)\n", costs->intra_node_gbps,
            costs->inter_node_gbps, costs->latency_s * 1e6,
            costs->link_setup_s * 1e3);
    plan_print_message(out, spec);

    plan_print_pipeline(out, spec, &p, res);

    base = one->makespan_s;
    fprintf(out, "\nlayouts for %d samples               gpus  makespan_s  "
            "samples/s  per-GPU  speed-up  bubble  memory/GPU GB\n", N);
    fprintf(out, "  pipeline, placement %-6s (this)  %4d  %10.3f  %9.4f  %7.4f  "
            "%7.2fx  %5.1f%%  %13.2f\n", svp_spec_placement_name(p.placement),
            S, res->makespan_s, res->samples_per_s, res->samples_per_s / S,
            base / res->makespan_s, 100 * res->bubble,
            plan_peak_memory(spec, S, p.placement) / PLAN_GB);
    fprintf(out, "  pipeline, placement %-6s         %4d  %10.3f  %9.4f  %7.4f  "
            "%7.2fx  %5.1f%%  %13.2f\n",
            svp_spec_placement_name(other_placement), S, other->makespan_s,
            other->samples_per_s, other->samples_per_s / S,
            base / other->makespan_s, 100 * other->bubble,
            plan_peak_memory(spec, S, other_placement) / PLAN_GB);
    fprintf(out, "  one GPU, every step                 %4d  %10.3f  %9.4f  "
            "%7.4f  %7.2fx  %5.1f%%  %13.2f\n", 1, one->makespan_s,
            one->samples_per_s, one->samples_per_s, 1.0, 100 * one->bubble,
            plan_peak_memory(spec, 1, p.placement) / PLAN_GB);
    fprintf(out, "  %3d replicas, %4d samples each     %4d  %10.3f  %9.4f  "
            "%7.4f  %7.2fx  %5.1f%%  %13.2f\n", W, per_replica, W,
            rep->makespan_s, N / rep->makespan_s, N / rep->makespan_s / W,
            base / rep->makespan_s,
            100 * (1.0 - (double)N / (W * per_replica) * (1 - rep->bubble)),
            plan_peak_memory(spec, 1, p.placement) / PLAN_GB);

    plan_print_layouts(out, spec, layouts, nlayouts, best, chosen);
    status = SVP_OK;

out_destroy:
    free(layouts);
    svp_plan_result_destroy(rep);
    svp_plan_result_destroy(one);
    svp_plan_result_destroy(other);
    svp_plan_result_destroy(res);
    return status;
}

svp_status_t svp_plan_choose_stages(const svp_spec_t *spec,
                                    const svp_plan_costs_t *costs,
                                    svp_plan_layout_t *best_p,
                                    char *why, int whylen)
{
    svp_plan_costs_t   c;
    svp_plan_params_t  p;
    svp_plan_layout_t *layouts;
    char               scratch[256];
    svp_status_t       status;
    int                W = spec->cluster.nodes * spec->cluster.ranks_per_node;
    int                n = 0, best = 0;

    if (costs != NULL) {
        c = *costs;
    } else if (svp_plan_costs_from_spec(spec, NULL, scratch, sizeof(scratch),
                                        &c) != SVP_OK) {
        memset(&c, 0, sizeof(c));
        c.step_s = 1.0;
        snprintf(c.source, sizeof(c.source), "unit step costs (no time model "
                 "for this model without a hardware table)");
    }
    layouts = calloc((size_t)W, sizeof(*layouts));
    if (layouts == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    plan_params(spec, &c, W, spec->cluster.ranks_per_node,
                spec->pipeline.placement, spec->samples, &p);
    status = svp_plan_layouts(&p, layouts, &n, &best);
    if (status == SVP_OK) {
        *best_p = layouts[best];
        snprintf(why, whylen, "%s", c.source);
    }
    free(layouts);
    return status;
}
