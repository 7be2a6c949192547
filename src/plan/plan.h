/*
 * The planner: an analytic model of the step pipeline, to see before a job is
 * submitted what it will cost and where the time goes.
 *
 * Model.  Each rank runs the worker's own list of actions (pipe/schedule.h:
 * the same placement, the same order, the same pre-posted receives): a
 * begin costs encode_s where the placement puts it, a rank's steps T/W x
 * step_s, a finish decode_s.  A message (latent and conditioning) crosses a
 * link in latency + bytes / bandwidth, during which neither rank is busy
 * (UCX sends are nonblocking); the first message on a link also pays the
 * link's setup (UCX connects endpoints on first use).  A wait holds the rank
 * until its message arrives.  Tasks of zero duration are not counted.
 *
 * With encode on rank 0 and decode on rank W-1 (placement ends) this is a
 * flow shop with a fixed time s_r per stage, whose makespan is exactly
 *
 *     sum_r s_r + (W-1) * link + (N-1) * max_r s_r
 *
 * (the first sample fills the pipeline, the rest leave at the pace of the
 * slowest stage); link setup, paid by the first sample only, adds to the
 * fill.  The simulation reproduces it and also covers placement
 * spread, where the stage times differ from sample to sample: there the
 * worker's order (a rank encodes ahead for rank 0, finishes a final latent
 * one sample after it left the last rank) is what the figures follow.
 *
 * Not modelled: link contention, a send that waits for its receive to be
 * posted (the in-flight window, comm.inflight, only moves the posts, which
 * cost nothing here), start-up (loading weights, PMIx and UCX wire-up) and
 * writing the outputs.
 */
#ifndef SVP_PLAN_PLAN_H
#define SVP_PLAN_PLAN_H

#include "common/status.h"
#include "plan/hardware.h"
#include "jobspec/spec.h"
#include "model/unet.h"
#include "model/vae.h"
#include "pipe/schedule.h"

#include <stdio.h>

/* What one unit of work costs, in seconds, and how fast links are. */
typedef struct {
    double step_s;          /* one denoising step of one sample */
    double encode_s;        /* preprocessing, CLIP and VAE encode of a sample */
    double decode_s;        /* VAE decode of a sample */
    double intra_node_gbps; /* 0: links are free */
    double inter_node_gbps;
    double latency_s;
    double link_setup_s; /* once per link, on its first message */
    char   source[256];  /* where the figures came from, for the report */
} svp_plan_costs_t;

/* One hand-off message (latent + conditioning), in bytes. */
typedef struct {
    double latent;        /* [F, C, H/8, W/8] (dummy: latent_shape) */
    double image_latents; /* [C, H/8, W/8], svd only */
    double image_embeds;  /* [1, 1024], svd only */
    double time_ids;      /* [3], svd only */
    double total;
} svp_plan_message_t;

/* Device memory one rank needs, in bytes. */
typedef struct {
    double weights;     /* UNet on every rank, plus the ends' models */
    double activations; /* largest of: UNet call, VAE decode, encode */
    double buffers;     /* hand-off messages in flight */
    double total;
} svp_plan_memory_t;

typedef struct {
    int                  world;          /* W ranks of the job */
    int                  stages;         /* S: the positions of the pipeline
                                        svp_plan_run simulates; 0: world
                                        (one pipeline of every rank) */
    int                  ranks_per_node; /* a link between nodes is slower */
    int                  steps;          /* T, divisible by W */
    int                  samples;        /* N */
    svp_placement_t      placement;
    double               message_bytes;
    svp_plan_costs_t     costs;
    int                  inflight;    /* comm.inflight; 0: 2, the spec's
                                        default */
    int                  first_rank;  /* the job rank of this pipeline's
                                        rank 0 (a group of a layout): node
                                        boundaries count from it */
    int                  pairs;       /* C, ranks per stage (0 or 1: one) */
    double               half_bytes;  /* a noise-prediction half, the pair's
                                        message each way per step; 0: the
                                        model has no guidance halves (no
                                        layout with C = 2) */
    double               share_bytes; /* lane 1's share of a shared finish
                                        (its decoded chunks), to lane 0 */
    svp_spec_objective_t objective;   /* what svp_plan_layouts ranks by */
} svp_plan_params_t;

typedef struct {
    int    steps, encodes, decodes; /* totals over all samples */
    double busy_s;                  /* time computing */
    double finish_s;                /* when its last task ended */
} svp_plan_rank_t;

typedef struct {
    int              stages;        /* S: the simulated pipeline's
                                        positions (its ranks: S x C) */
    double           makespan_s;    /* first task start to last task end */
    double           samples_per_s; /* N / makespan */
    double           bubble;        /* idle share of W * makespan */
    double           fill_s;        /* one sample alone, end to end */
    double           bottleneck_s;  /* max over ranks of busy / N */
    int              bottleneck_rank;
    double           closed_form_s; /* fill + (N-1) * bottleneck */
    long             events;        /* tasks simulated: N x chain length
                                        (the work is linear in it) */
    double           first_out_s;   /* start to the first sample's outputs */
    double           latency_s;     /* a sample's begin to its outputs, the
                                        mean over the later half of the
                                        samples (steady state) */
    svp_plan_rank_t *ranks;         /* [stages] */
    int             *link_msgs;     /* [stages * stages], from * S + to */
    double          *link_s;        /* [stages * stages], time on the link */
} svp_plan_result_t;

/* The positions of the pipeline svp_plan_run simulates for params: S. */
static inline int svp_plan_stages(const svp_plan_params_t *params)
{
    return (params->stages > 0) ? params->stages : params->world;
}

/*
 * Costs of spec's model: model.dummy (cost sleep) gives step/encode/decode
 * directly; model svd scales hw's reference times to the spec's frames,
 * resolution and guidance batch (linearly in pixels x frames x batch: a
 * first-order model).  hw may be NULL for a dummy model (links then cost
 * nothing).  Errors (message in errbuf): SVP_ERR_UNSUPPORTED when the figures
 * needed are not available.
 */
svp_status_t svp_plan_costs_from_spec(const svp_spec_t *spec, const svp_hw_t *hw,
                                      char *errbuf, int errlen,
                                      svp_plan_costs_t *costs_p);

/*
 * Replaces step/encode/decode in *costs_p with the means measured in a log.
 * A measurement is any line holding the token "svp-cost" followed by
 * "kind=step|encode|decode" and "s=SECONDS" (other text on the line, such as
 * a log prefix, is ignored):
 *
 *   ... svp-cost kind=step sample=3 s=0.812
 *
 * svdworker's debug lines "sample 3 step 5/28 812.0 ms" count as steps.
 * A kind with no measurement keeps its value.  Errors: SVP_ERR_IO,
 * SVP_ERR_BAD_FILE (file:line of the first malformed measurement).
 */
svp_status_t svp_plan_costs_from_log(const char *file, char *errbuf, int errlen,
                                     svp_plan_costs_t *costs_p);

/*
 * The planning parameters of spec's job run by world ranks, ranks_per_node
 * to a node, under placement, dealt samples samples, with costs: every
 * field of *params_p written, one pipeline of every rank (stages 0, pairs
 * 1, first_rank 0); half_bytes set where the model has guidance halves
 * (svd with guidance, or the dummy's stand-in of it), share_bytes to what
 * lane 1 of a pair hands lane 0 at a shared finish (plan_spec.c).
 */
void svp_plan_params_of_spec(const svp_spec_t *spec, const svp_plan_costs_t *costs,
                             int world, int ranks_per_node,
                             svp_placement_t placement, int samples,
                             svp_plan_params_t *params_p);

/* The hand-off message of spec, in bytes (f32 latents whatever the dtype). */
void svp_plan_message(const svp_spec_t *spec, svp_plan_message_t *msg_p);

/*
 * Bytes of activations of one UNet call of spec's video at the guidance
 * batch given: the ops arena's memory plan of the call, from a dry run of
 * the forward (svp_unet_plan_bytes()), for the UNet of model.path when its
 * unet/config.json can be read here, else for SVD-XT's.  0 (logged) when
 * the dry run fails.
 */
double svp_plan_unet_activations(const svp_spec_t *spec, int batch);

/* SVD-XT's UNet config, the planner's default model. */
const svp_unet_config_t *svp_plan_svd_xt_unet(void);

/*
 * Bytes of activations of the VAE's decode of one sample (decode set: its
 * num_frames in decode_chunk_size chunks) or encode of its conditioning
 * frame, as svp_plan_unet_activations() (svp_vae_plan_bytes()), for the VAE
 * of model.path or SVD-XT's.
 */
double svp_plan_vae_activations(const svp_spec_t *spec, int decode);

/* SVD-XT's VAE config. */
const svp_vae_config_t *svp_plan_svd_xt_vae(void);

/* Memory of rank in a world of W under placement (W=1: one GPU does all). */
void svp_plan_memory(const svp_spec_t *spec, int world, int rank,
                     svp_placement_t placement, svp_plan_memory_t *mem_p);

/*
 * What one action of a position's list costs, in seconds, with k steps per
 * position: the one price list of the planner's simulation and of the
 * hand-off check's gaps (messages cost their link, elsewhere).
 */
double svp_plan_action_cost(const svp_schedule_action_t *a,
                            const svp_plan_costs_t *costs, int k);

/*
 * Runs the model of one pipeline of svp_plan_stages(params) = S positions
 * (of params->pairs ranks) dealt params->samples samples.  *result_p is
 * allocated and owned by the caller (svp_plan_result_destroy).  Errors:
 * SVP_ERR_INVALID_PARAM (S < 1, T not divisible by S, N < 1),
 * SVP_ERR_NO_MEMORY.
 */
svp_status_t svp_plan_run(const svp_plan_params_t *params,
                          svp_plan_result_t      **result_p);

void svp_plan_result_destroy(svp_plan_result_t *result);

/*
 * The planner's estimate for a layout of W ranks (the layout itself is
 * jobspec/layout.h's): G = W / S pipelines of S stages, position j of the
 * sample list to pipeline j mod G (what svdworker runs), and what the
 * simulation predicts for it.  Groups are independent, so the job's
 * makespan is that of its slowest group; groups with the same sample count
 * and node alignment are simulated once.
 */
typedef struct {
    int    stages, groups;
    int    pairs;       /* C: ranks per stage */
    int    samples_max; /* samples of the busiest pipeline */
    double makespan_s;
    double samples_per_s;       /* job: N / makespan */
    double group_samples_per_s; /* busiest pipeline's samples / makespan */
    double fill_s;              /* one sample through one pipeline */
    double first_out_s;         /* the job's first outputs */
    double latency_s;           /* steady-state latency of a sample (the
                                      slowest pipeline's) */
} svp_plan_estimate_t;

/*
 * The same with C ranks per stage (guidance pairs): W = G x S x C.  Both
 * lanes' lists run: a lane's half of a step costs half the step (the UNet's
 * batch of two halves, first order), and its HALF message crosses the link
 * between the pair's ranks (half_bytes; they are adjacent); where the
 * pair's last position finishes a sample, each lane decodes half and lane
 * 1's SHARE (share_bytes) crosses to lane 0.  A position's figures are its
 * lane 0's.
 */
svp_status_t svp_plan_layout_pairs(const svp_plan_params_t *params, int stages,
                                   int pairs, svp_plan_estimate_t *layout_p);

/*
 * Costs the layout with `stages` per pipeline for params (world = W, all
 * samples).  SVP_ERR_INVALID_PARAM if S does not divide W or T.
 */
svp_status_t svp_plan_layout(const svp_plan_params_t *params, int stages,
                             svp_plan_estimate_t *layout_p);

/*
 * Every valid layout, C = 1 then (with half_bytes) C = 2, smallest S first,
 * into layouts (room for 2 W entries); *n_p their count, *best_p the index
 * of the smallest makespan, or with objective latency of the smallest
 * steady-state latency (a tie within 0.1% goes to the one listed first:
 * fewer ranks per sample, fewer hand-offs, less to go wrong).
 */
svp_status_t svp_plan_layouts(const svp_plan_params_t *params,
                              svp_plan_estimate_t *layouts, int *n_p, int *best_p);

/*
 * The layout `pipeline.stages: auto` takes: the smallest predicted makespan
 * for spec's cluster, with costs (NULL: the spec's own when it has a time
 * model, else one second a step and free ends and links: the choice then
 * rests on fill, drain and balance alone).  *why_p names the costs used.
 */
svp_status_t svp_plan_choose_stages(const svp_spec_t       *spec,
                                    const svp_plan_costs_t *costs,
                                    svp_plan_estimate_t *best_p, char *why,
                                    int whylen);

/*
 * The longest gap between two hand-offs a rank sees in a healthy job of
 * spec with these costs: the most work a position of the spec's layout
 * does between two ends of a sample's walk in its schedule (its steps, and
 * the encodes and decodes its list places there), plus the transfer
 * (handoff.c).
 */
double svp_plan_handoff_gap(const svp_spec_t *spec, const svp_plan_costs_t *costs);

/*
 * 1 with a message in buf when comm.deadline is shorter than that gap (the
 * job would take a healthy peer for a lost one), else 0.
 */
int svp_plan_deadline_warning(const svp_spec_t *spec, const svp_plan_costs_t *costs,
                              char *buf, int len);

#endif
