/*
 * The planner's parameters of a job spec: what the planner's model of one
 * layout needs from the spec (its steps, samples, placement and in-flight
 * window, the hand-off message, the guidance halves and the shared finish),
 * for the report of `svdlaunch plan` and the stage choice.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plan/plan.h"

void svp_plan_params_of_spec(const svp_spec_t *spec, const svp_plan_costs_t *costs,
                             int world, int ranks_per_node,
                             svp_placement_t placement, int samples,
                             svp_plan_params_t *params_p)
{
    svp_plan_message_t msg;

    svp_plan_message(spec, &msg);
    params_p->world          = world;
    params_p->stages         = 0;
    params_p->ranks_per_node = ranks_per_node;
    params_p->steps          = spec->steps;
    params_p->samples        = samples;
    params_p->placement      = placement;
    params_p->inflight       = spec->comm.inflight;
    params_p->message_bytes  = msg.total;
    params_p->costs          = *costs;
    params_p->first_rank     = 0;
    /* guidance pairs split the UNet's batch of two: svd with guidance, or
     * the dummy's stand-in of it */
    params_p->pairs = 1;
    params_p->half_bytes =
        (spec->model.kind == SVP_MODEL_DUMMY || spec->video.max_guidance > 1.0)
            ? msg.latent
            : 0;
    /* a shared finish's SHARE: the decoded frames (fp32), the dummy's
     * stand-in its final latents */
    params_p->share_bytes = (spec->model.kind == SVP_MODEL_DUMMY)
                                ? msg.latent
                                : 4.0 * spec->video.num_frames * 3 *
                                      spec->video.height * spec->video.width;
    params_p->objective   = spec->pipeline.objective;
}
