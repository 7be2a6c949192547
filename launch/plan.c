/*
 * The planner's model and report (see plan.h for the model itself).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/plan.h"
#include "launch/launch_int.h"
#include "model/unet.h"
#include "pipe/schedule.h"
#include "common/log.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * SVD-XT weights, bytes of tensor data in fp16, from the diffusers
 * checkpoint's state_dict() (stable-video-diffusion-img2vid-xt: unet/,
 * vae/ split into encoder + quant_conv and decoder + post_quant_conv,
 * image_encoder/).
 */
#define PLAN_UNET_F16      3049246164.0
#define PLAN_VAE_ENC_F16     68327328.0
#define PLAN_VAE_DEC_F16    127158366.0
#define PLAN_CLIP_F16      1264153600.0

/* SVD's latent: 4 channels at 1/8 of the video's resolution */
#define PLAN_LATENT_C      4
#define PLAN_VAE_FACTOR    8
#define PLAN_IMAGE_EMBED   1024
#define PLAN_TIME_IDS      3

/*
 * Bytes per matrix weight in the spec's dtype.  Everything else (vectors,
 * activations, latents, hand-off messages) is f32 whatever the dtype: see
 * doc/DTYPES.md.
 */
static double plan_elem_size(svp_dtype_t dtype)
{
    return (double)svp_dtype_size(dtype);
}

#define PLAN_F32 4.0

/*
 * What a 16-bit run adds beside its weights.  On the CPU, the widening
 * buffer: the largest matrix weight of SVD's UNet, an up block's 3x3 conv
 * from 2560 to 1280 channels, in f32.  On CUDA, whose tensor-core products
 * take the weights as held, the 16-bit copy of a product's activation
 * operand: at most the backend's im2col limit of 64 Mi elements.
 */
#define PLAN_WIDEN_BYTES (1280.0 * 2560 * 9 * PLAN_F32)
#define PLAN_ROUND_BYTES (64.0 * 1048576 * 2)

/* Guidance doubles the UNet batch when the ramp reaches above 1. */
static int plan_cfg_batch(const svp_spec_t *spec)
{
    return spec->video.max_guidance > 1.0 ? 2 : 1;
}

svp_status_t svp_plan_costs_from_spec(const svp_spec_t *spec, const svp_hw_t *hw,
                                      char *errbuf, int errlen,
                                      svp_plan_costs_t *costs_p)
{
    svp_plan_costs_t c = {0};

    if (hw != NULL) {
        c.intra_node_gbps = hw->intra_node_gbps;
        c.inter_node_gbps = hw->inter_node_gbps;
        c.latency_s       = hw->latency_us * 1e-6;
        c.link_setup_s    = hw->setup_ms * 1e-3;
    }

    if (spec->model.kind == SVP_MODEL_DUMMY) {
        if (spec->model.dummy.cost != SVP_DUMMY_COST_SLEEP) {
            svp_errf(errbuf, errlen, "%s: model.dummy.cost: the planner "
                            "has no time model for 'compute' (use 'sleep', or "
                            "--from-log with a measured run)", spec->file);
            return SVP_ERR_UNSUPPORTED;
        }
        c.step_s   = spec->model.dummy.step_ms * 1e-3;
        c.encode_s = spec->model.dummy.encode_ms * 1e-3;
        c.decode_s = spec->model.dummy.decode_ms * 1e-3;
        snprintf(c.source, sizeof(c.source), "model.dummy (sleep)%s%s",
                 hw ? ", links from " : ", links free", hw ? hw->file : "");
    } else {
        double scale, pix, pix_ref;

        if (hw == NULL || hw->svd.unet_step_s <= 0) {
            svp_errf(errbuf, errlen, "%s: model svd needs a hardware "
                            "table with an svd section (--hardware)",
                            spec->file);
            return SVP_ERR_UNSUPPORTED;
        }
        /*
         * The table's times are for one dtype.  A 16-bit run on tensor cores
         * and an f32 run differ several-fold, and by an amount no table here
         * states, so another dtype's figures are refused rather than scaled
         * (an f32 spec was once priced with the fp16 figures, unlabelled).
         */
        if (hw->svd.dtype == NULL ||
            strcmp(hw->svd.dtype, svp_dtype_short_name(spec->dtype)) != 0) {
            svp_errf(errbuf, errlen, "%s: dtype: %s: %s%s%s has no "
                            "figures for %s (its svd times are %s%s); plan "
                            "with --set dtype=%s, or time %s on the GPU with "
                            "bench/gpu-check.sh and pass its results with "
                            "--measured",
                            spec->file, svp_dtype_short_name(spec->dtype),
                            hw->file, hw->measured_file ? " with " : "",
                            hw->measured_file ? hw->measured_file : "",
                            svp_dtype_short_name(spec->dtype),
                            hw->svd.dtype ? "for " : "of no stated dtype",
                            hw->svd.dtype ? hw->svd.dtype : "",
                            hw->svd.dtype ? hw->svd.dtype : "f16",
                            svp_dtype_short_name(spec->dtype));
            return SVP_ERR_UNSUPPORTED;
        }
        /* first order: work grows with pixels x frames x batch */
        pix     = (double)spec->video.height * spec->video.width;
        pix_ref = (double)hw->svd.height * hw->svd.width;
        scale   = pix * spec->video.num_frames * plan_cfg_batch(spec) /
                  (pix_ref * hw->svd.frames * hw->svd.batch);
        c.step_s   = hw->svd.unet_step_s * scale;
        c.encode_s = hw->svd.encode_s * pix / pix_ref;
        c.decode_s = hw->svd.decode_s * pix * spec->video.num_frames /
                     (pix_ref * hw->svd.frames);
        snprintf(c.source, sizeof(c.source), "%s (%s), UNet scaled x%.3f from "
                 "batch %d x %d frames x %dx%d, %s%s%s%s%s", hw->file, hw->name,
                 scale, hw->svd.batch, hw->svd.frames, hw->svd.height,
                 hw->svd.width, hw->svd.source ? hw->svd.source : "quoted",
                 hw->measured_file ? " in " : "",
                 hw->measured_file ? hw->measured_file : "",
                 hw->svd.dtype ? ", " : "", hw->svd.dtype ? hw->svd.dtype : "");
    }
    *costs_p = c;
    return SVP_OK;
}

svp_status_t svp_plan_costs_from_log(const char *file, char *errbuf, int errlen,
                                     svp_plan_costs_t *costs_p)
{
    static const char *kinds[] = {"encode", "step", "decode"};
    double             sum[3] = {0}, *dst[3];
    long               count[3] = {0};
    svp_plan_costs_t   c = *costs_p;
    char              *line = NULL;
    size_t             cap = 0;
    long               lineno = 0;
    FILE              *f;

    f = fopen(file, "r");
    if (f == NULL) {
        svp_errf(errbuf, errlen, "%s: %s", file, strerror(errno));
        return SVP_ERR_IO;
    }
    while (getline(&line, &cap, f) >= 0) {
        const char *tok = strstr(line, "svp-cost "), *k, *s;
        char       *end;
        double      v;
        int         i;

        ++lineno;
        if (tok == NULL) {
            /* svdworker's debug line: "sample 3 step 5/28 812.0 ms" */
            const char *smp = strstr(line, " sample ");
            int         sample, step, steps;
            double      ms;

            if (smp != NULL && sscanf(smp, " sample %d step %d/%d %lf ms",
                                      &sample, &step, &steps, &ms) == 4 &&
                ms >= 0 && isfinite(ms)) {
                sum[1] += ms * 1e-3;
                ++count[1];
            }
            continue;
        }
        k = strstr(tok, " kind=");
        s = strstr(tok, " s=");
        for (i = 0; k != NULL && i < 3; ++i) {
            size_t n = strlen(kinds[i]);
            if (!strncmp(k + 6, kinds[i], n) &&
                (k[6 + n] == ' ' || k[6 + n] == '\n' || k[6 + n] == '\0')) {
                break;
            }
        }
        v = s ? strtod(s + 3, &end) : NAN;
        if (k == NULL || i == 3 || s == NULL || end == s + 3 || !(v >= 0) ||
            !isfinite(v)) {
            svp_errf(errbuf, errlen, "%s:%ld: expected svp-cost "
                            "kind=step|encode|decode s=SECONDS", file, lineno);
            free(line);
            fclose(f);
            return SVP_ERR_BAD_FILE;
        }
        sum[i] += v;
        ++count[i];
    }
    free(line);
    fclose(f);

    dst[0] = &c.encode_s;
    dst[1] = &c.step_s;
    dst[2] = &c.decode_s;
    for (int i = 0; i < 3; ++i) {
        if (count[i] > 0) {
            *dst[i] = sum[i] / count[i];
        }
    }
    snprintf(c.source, sizeof(c.source), "measured in %s (%ld steps, %ld "
             "encodes, %ld decodes)", file, count[1], count[0], count[2]);
    *costs_p = c;
    return SVP_OK;
}

void svp_plan_message(const svp_spec_t *spec, svp_plan_message_t *msg_p)
{
    svp_plan_message_t m = {0};
    double             es = PLAN_F32;

    if (spec->model.kind == SVP_MODEL_DUMMY) {
        double elems = 1;
        for (int i = 0; i < 5; ++i) {
            elems *= (double)spec->latent_shape[i];
        }
        m.latent = elems * es;
    } else {
        double hw = (double)(spec->video.height / PLAN_VAE_FACTOR) *
                    (spec->video.width / PLAN_VAE_FACTOR);

        m.latent        = spec->video.num_frames * PLAN_LATENT_C * hw * es;
        /* the unconditional half of the guidance batch is zeros: not sent */
        m.image_latents = PLAN_LATENT_C * hw * es;
        m.image_embeds  = PLAN_IMAGE_EMBED * es;
        m.time_ids      = PLAN_TIME_IDS * es;
    }
    m.total = m.latent + m.image_latents + m.image_embeds + m.time_ids;
    *msg_p = m;
}

/* SVD-XT's UNet, as etc/models/svd-xt/unet/config.json says (test_launch
 * compares the two): the model whose weight bytes are counted above. */
static const svp_unet_config_t plan_svd_xt_unet = {
    .in_channels = 8, .out_channels = 4, .levels = 4,
    .block_out = {320, 640, 1280, 1280}, .layers = {2, 2, 2, 2},
    .transformer_layers = {1, 1, 1, 1}, .heads = {5, 10, 20, 20},
    .cross_dim = {1024, 1024, 1024, 1024},
    .down_cross_attn = {1, 1, 1, 0}, .up_cross_attn = {0, 1, 1, 1},
    .addition_time_embed_dim = 256, .projection_dim = 768,
};

const svp_unet_config_t *svp_plan_svd_xt_unet(void)
{
    return &plan_svd_xt_unet;
}

/*
 * The UNet call's activations: the memory plan the ops arena makes for it,
 * from a dry run of the forward (svp_unet_plan_bytes), of the spec's UNet
 * when model.path/unet/config.json can be read here, else of SVD-XT's.
 * Activations are fp32 whatever the dtype (ops.h), so this does not scale
 * with it.  The last answer is kept: the report asks once per rank.
 */
double svp_plan_unet_activations(const svp_spec_t *spec, int batch)
{
    static struct {
        svp_unet_config_t cfg;
        int               b, f, h, w;
        double            bytes;
    }                   last;
    svp_unet_config_t   cfg;
    char                path[4096];
    size_t              bytes = 0;
    int                 f = spec->video.num_frames;
    int                 h = spec->video.height / PLAN_VAE_FACTOR;
    int                 w = spec->video.width / PLAN_VAE_FACTOR;

    snprintf(path, sizeof(path), "%s/unet/config.json", spec->model.path);
    if (access(path, R_OK) != 0 || svp_unet_config_load(path, &cfg) != SVP_OK) {
        cfg = plan_svd_xt_unet;
    }
    if (last.bytes > 0 && memcmp(&last.cfg, &cfg, sizeof(cfg)) == 0 &&
        last.b == batch && last.f == f && last.h == h && last.w == w) {
        return last.bytes;
    }
    /* SVD's context is one image embedding per sample: seq 1 */
    if (svp_unet_plan_bytes(&cfg, batch, f, h, w, 1, &bytes) != SVP_OK) {
        svp_warn("plan: cannot size the UNet's activations (see above)");
        return 0;
    }
    last.cfg   = cfg;
    last.b     = batch;
    last.f     = f;
    last.h     = h;
    last.w     = w;
    last.bytes = (double)bytes;
    return last.bytes;
}

/* SVD-XT's VAE, as etc/models/svd-xt/vae/config.json says. */
static const svp_vae_config_t plan_svd_xt_vae = {
    .in_channels = 3, .out_channels = 3, .latent_channels = 4, .levels = 4,
    .block_out = {128, 256, 512, 512}, .layers = 2, .scaling_factor = 0.18215,
};

const svp_vae_config_t *svp_plan_svd_xt_vae(void)
{
    return &plan_svd_xt_vae;
}

/*
 * The VAE's activations, as the UNet's: a dry run of the decode of a
 * sample's frames in decode_chunk_size chunks, or of the encode of its
 * conditioning frame, for model.path's VAE or SVD-XT's.
 */
double svp_plan_vae_activations(const svp_spec_t *spec, int decode)
{
    static struct {
        svp_vae_config_t cfg;
        int              decode, n, h, w, chunk;
        double           bytes;
    }                   last[2];
    svp_vae_config_t    cfg;
    char                path[4096];
    size_t              bytes = 0;
    int                 n = decode ? spec->video.num_frames : 1;
    int                 h = spec->video.height, w = spec->video.width;
    int                 chunk = decode ? spec->video.decode_chunk_size : 0;

    snprintf(path, sizeof(path), "%s/vae/config.json", spec->model.path);
    if (access(path, R_OK) != 0 || svp_vae_config_load(path, &cfg) != SVP_OK) {
        cfg = plan_svd_xt_vae;
    }
    if (decode) {
        svp_vae_latent_size(&cfg, h, w, &h, &w);
        if (chunk <= 0 || chunk > n) {
            chunk = n;
        }
    }
    decode = !!decode;
    if (last[decode].bytes > 0 &&
        memcmp(&last[decode].cfg, &cfg, sizeof(cfg)) == 0 &&
        last[decode].n == n && last[decode].h == h && last[decode].w == w &&
        last[decode].chunk == chunk) {
        return last[decode].bytes;
    }
    if (svp_vae_plan_bytes(&cfg, decode, n, h, w, chunk, &bytes) != SVP_OK) {
        svp_warn("plan: cannot size the VAE's activations (see above)");
        return 0;
    }
    last[decode].cfg   = cfg;
    last[decode].n     = n;
    last[decode].h     = h;
    last[decode].w     = w;
    last[decode].chunk = chunk;
    last[decode].bytes = (double)bytes;
    return last[decode].bytes;
}

/* Whether rank ever encodes (decodes): the worker's placement rule, asked
 * for sample j = rank, the first the rank would get under spread. */
static int plan_places_on(svp_placement_t placement, int world, int rank,
                          svp_schedule_end_t end)
{
    return svp_schedule_place(placement, world, rank, end) == rank;
}

void svp_plan_memory(const svp_spec_t *spec, int world, int rank,
                     svp_placement_t placement, svp_plan_memory_t *mem_p)
{
    svp_plan_memory_t  m = {0};
    svp_plan_message_t msg;
    double             es = plan_elem_size(spec->dtype);
    int                enc = plan_places_on(placement, world, rank, SVP_SCHEDULE_ENCODES);
    int                dec = plan_places_on(placement, world, rank, SVP_SCHEDULE_FINISHES);
    int                inflight = spec->comm.inflight > 0 ? spec->comm.inflight : 1;

    svp_plan_message(spec, &msg);
    if (spec->model.kind == SVP_MODEL_DUMMY) {
        /* the dummy UNet's weights are negligible; input and output latent */
        m.activations = 2 * msg.latent;
    } else {
        double unet, vae_dec, vae_enc;

        m.weights = (PLAN_UNET_F16 + (enc ? PLAN_CLIP_F16 + PLAN_VAE_ENC_F16 : 0) +
                     (dec ? PLAN_VAE_DEC_F16 : 0)) * es / 2.0 +
                    (spec->dtype == SVP_DTYPE_F32 ? 0
                     : spec->device == SVP_OPS_BACKEND_CUDA ? PLAN_ROUND_BYTES
                     : PLAN_WIDEN_BYTES);

        /*
         * What the arena's plans of a UNet call, the decode of a sample and
         * the encode of its conditioning frame hold at once; they share one
         * slab, so the largest counts.  At 576x1024 the UNet's level-0
         * skips and GEGLU projection dominate (attention is fused, its
         * scores never held); the decode grows with decode_chunk_size.
         */
        unet    = svp_plan_unet_activations(spec, plan_cfg_batch(spec));
        vae_dec = dec ? svp_plan_vae_activations(spec, 1) : 0;
        vae_enc = enc ? svp_plan_vae_activations(spec, 0) : 0;
        m.activations = fmax(unet, fmax(vae_dec, vae_enc));
    }
    /* received and outgoing messages of the samples in flight */
    m.buffers = 2.0 * inflight * msg.total;
    m.total   = m.weights + m.activations + m.buffers;
    *mem_p = m;
}

void svp_plan_result_destroy(svp_plan_result_t *result)
{
    if (result == NULL) {
        return;
    }
    free(result->ranks);
    free(result->link_msgs);
    free(result->link_s);
    free(result);
}

static double plan_link_s(const svp_plan_params_t *p, int from, int to)
{
    const svp_plan_costs_t *c = &p->costs;
    int    C = (p->pairs > 1) ? p->pairs : 1;   /* position r is rank r * C */
    double gbps = ((p->first_rank + from * C) / p->ranks_per_node ==
                   (p->first_rank + to * C) / p->ranks_per_node) ?
                  c->intra_node_gbps : c->inter_node_gbps;

    return c->latency_s + (gbps > 0 ? p->message_bytes / (gbps * 1e9) : 0);
}

/*
 * The simulation runs the worker's own lists (pipe/schedule.h), one iterator
 * per rank, with a clock per rank: a begin, the steps and a finish advance
 * it by their cost, a send puts the message on its channel with its arrival
 * time (now + the link), a wait for a receive moves the clock to the
 * message's arrival and a wait for a send to the send's.  A receive is
 * matched at its wait, not at its post: the comm keeps a message that
 * arrives before its receive is posted.  Tasks of zero cost are not counted
 * (events, encodes, decodes), as a model that leaves them out would.
 *
 * Messages of a kind between two ranks arrive in the order sent, which is
 * the order they are waited for, so each channel is a queue: a LATENT
 * channel into each rank, an INIT channel out of each encoding rank and a
 * FINAL channel into each finishing rank.
 *
 * The ranks take turns of at most PLAN_TURN actions, each until it waits
 * for a message not yet sent; the queues then hold a few turns' messages and
 * the work is linear in the actions, N x (a few per rank).  A pass in which
 * no rank moves is a deadlock of the schedule: an internal error.
 */
#define PLAN_TURN 64

typedef struct {
    int    j;       /* the sample's position */
    double at;      /* when it arrives */
} plan_msg_t;

typedef struct {
    plan_msg_t *q;
    int         head, count, capacity;
} plan_chan_t;

typedef struct {
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *held;   /* the action it waits at, or NULL */
    double                       t;      /* its clock */
    double                       sent_at[SVP_SCHEDULE_MAX_SLOTS];
    int                          done;
} plan_rank_sim_t;

typedef struct {
    const svp_plan_params_t *p;
    svp_plan_result_t       *res;
    plan_rank_sim_t         *rank;       /* [W] */
    plan_chan_t             *chan;       /* [3 W] */
    char                    *link_used;  /* [W W] */
    double                  *t_begin;    /* [N]: when j's begin started */
    double                  *t_end;      /* [N]: when j's finish ended */
} plan_sim_t;

double svp_plan_pair_step_s(const svp_plan_params_t *p)
{
    const svp_plan_costs_t *c = &p->costs;

    return c->step_s / 2 + c->latency_s +
           (c->intra_node_gbps > 0 ? p->half_bytes / (c->intra_node_gbps * 1e9) : 0);
}

static svp_status_t plan_chan_push(plan_chan_t *c, int j, double at)
{
    if (c->count == c->capacity) {
        int         cap = c->capacity > 0 ? 2 * c->capacity : 16;
        plan_msg_t *q   = malloc((size_t)cap * sizeof(*q));

        if (q == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        for (int k = 0; k < c->count; ++k) {
            q[k] = c->q[(c->head + k) % c->capacity];
        }
        free(c->q);
        c->q        = q;
        c->head     = 0;
        c->capacity = cap;
    }
    c->q[(c->head + c->count) % c->capacity] = (plan_msg_t){j, at};
    c->count++;
    return SVP_OK;
}

/* The channel of a message from rank `from` to rank `to`. */
static plan_chan_t *plan_chan(plan_sim_t *sim, svp_schedule_msg_t msg, int from,
                              int to)
{
    int W = sim->p->world;

    return (msg == SVP_SCHEDULE_MSG_LATENT) ? &sim->chan[to] :
           (msg == SVP_SCHEDULE_MSG_INIT) ? &sim->chan[W + from] :
           &sim->chan[2 * W + to];
}

/* A task of the rank: its cost on its clock, and the counts. */
static void plan_task(plan_sim_t *sim, int r, double cost, int *count, int by)
{
    plan_rank_sim_t *rs = &sim->rank[r];

    if (cost <= 0) {
        return;
    }
    rs->t                       += cost;
    sim->res->ranks[r].busy_s   += cost;
    sim->res->ranks[r].finish_s  = rs->t;
    sim->res->makespan_s         = fmax(sim->res->makespan_s, rs->t);
    sim->res->events++;
    *count += by;
}

static svp_status_t plan_send(plan_sim_t *sim, int r, const svp_schedule_action_t *a)
{
    const svp_plan_params_t *p   = sim->p;
    int                      W   = p->world, link = r * W + a->peer;
    double                   hop = plan_link_s(p, r, a->peer);

    if (!sim->link_used[link]) {
        sim->link_used[link] = 1;
        hop += p->costs.link_setup_s;
    }
    sim->res->link_msgs[link] += 1;
    sim->res->link_s[link]    += hop;
    sim->rank[r].sent_at[a->slot] = sim->rank[r].t + hop;
    return plan_chan_push(plan_chan(sim, a->msg, r, a->peer), a->j,
                          sim->rank[r].t + hop);
}

/* Runs one action of rank r; *blocked_p when it waits for a message not yet
 * sent. */
static svp_status_t plan_act(plan_sim_t *sim, int r, const svp_schedule_action_t *a,
                             int *blocked_p)
{
    const svp_plan_costs_t *c   = &sim->p->costs;
    plan_rank_sim_t        *rs  = &sim->rank[r];
    svp_plan_rank_t        *out = &sim->res->ranks[r];
    int                     k   = sim->p->steps / sim->p->world;
    plan_chan_t            *ch;

    *blocked_p = 0;
    switch (a->kind) {
    case SVP_SCHEDULE_POST_RECV:
        break;
    case SVP_SCHEDULE_WAIT:
        if (a->msg == SVP_SCHEDULE_MSG_NONE) {
            rs->t = fmax(rs->t, rs->sent_at[a->slot]);
            break;
        }
        ch = plan_chan(sim, a->msg, a->peer, r);
        if (ch->count == 0) {
            *blocked_p = 1;
            break;
        }
        if (ch->q[ch->head].j != a->j) {
            svp_error("plan: rank %d waits for sample %d, sample %d came", r, a->j,
                      ch->q[ch->head].j);
            return SVP_ERR_INTERNAL;
        }
        rs->t    = fmax(rs->t, ch->q[ch->head].at);
        ch->head = (ch->head + 1) % ch->capacity;
        ch->count--;
        break;
    case SVP_SCHEDULE_BEGIN:
        sim->t_begin[a->j] = rs->t;
        plan_task(sim, r, c->encode_s, &out->encodes, 1);
        break;
    case SVP_SCHEDULE_STEPS:
        plan_task(sim, r, k * c->step_s, &out->steps, k);
        break;
    case SVP_SCHEDULE_PAIR_STEPS:
        plan_task(sim, r, k * svp_plan_pair_step_s(sim->p), &out->steps, k);
        break;
    case SVP_SCHEDULE_SEND:
        return plan_send(sim, r, a);
    case SVP_SCHEDULE_FINISH:
        /* shared by a pair (peer set): half the chunks each, and lane 1's
         * frames over the link (first order: the link's latency) */
        plan_task(sim, r, (a->peer >= 0) ? c->decode_s / 2 + c->latency_s : c->decode_s,
                  &out->decodes, 1);
        sim->t_end[a->j] = rs->t;
        break;
    case SVP_SCHEDULE_DROP:    /* lane 1: not simulated */
        break;
    }
    return SVP_OK;
}

/* Rank r's turn: *moved_p when it ran an action or reached its end. */
static svp_status_t plan_turn(plan_sim_t *sim, int r, int *moved_p)
{
    plan_rank_sim_t *rs = &sim->rank[r];
    svp_status_t     status;
    int              blocked;

    for (int k = 0; k < PLAN_TURN && !rs->done; ++k) {
        if (rs->held == NULL) {
            rs->held = svp_schedule_iter_next(&rs->it);
            if (rs->held == NULL) {
                rs->done = 1;
                *moved_p = 1;
                break;
            }
        }
        status = plan_act(sim, r, rs->held, &blocked);
        if (status != SVP_OK) {
            return status;
        }
        if (blocked) {
            break;
        }
        rs->held = NULL;
        *moved_p = 1;
    }
    return SVP_OK;
}

static svp_status_t plan_sim_run(plan_sim_t *sim)
{
    const svp_plan_params_t *p = sim->p;
    svp_schedule_params_t    sp = {
        .placement = p->placement, .stages = p->world, .samples = p->samples,
        .inflight  = p->inflight > 0 ? p->inflight : 2,
        .pairs     = p->pairs > 1 ? p->pairs : 1,
    };
    svp_status_t             status;
    int                      W = p->world, live = W, moved;

    for (int r = 0; r < W; ++r) {
        status = svp_schedule_iter_init(&sim->rank[r].it, &sp, r);
        if (status != SVP_OK) {
            return status;
        }
    }
    while (live > 0) {
        moved = 0;
        live  = 0;
        for (int r = 0; r < W; ++r) {
            status = plan_turn(sim, r, &moved);
            if (status != SVP_OK) {
                return status;
            }
            live += !sim->rank[r].done;
        }
        if (live > 0 && !moved) {
            svp_error("plan: the schedule of %d ranks, %d samples deadlocks", W,
                      p->samples);
            return SVP_ERR_INTERNAL;
        }
    }
    return SVP_OK;
}

/* Runs p's lists into res's figures (ranks, links, makespan, events). */
static svp_status_t plan_simulate(const svp_plan_params_t *p,
                                  svp_plan_result_t *res)
{
    plan_sim_t   sim = {.p = p, .res = res};
    int          W = p->world;
    svp_status_t status = SVP_ERR_NO_MEMORY;

    sim.rank      = calloc((size_t)W, sizeof(*sim.rank));
    sim.chan      = calloc((size_t)W * 3, sizeof(*sim.chan));
    sim.link_used = calloc((size_t)W * W, sizeof(*sim.link_used));
    sim.t_begin   = calloc((size_t)p->samples, sizeof(*sim.t_begin));
    sim.t_end     = calloc((size_t)p->samples, sizeof(*sim.t_end));
    if (sim.rank != NULL && sim.chan != NULL && sim.link_used != NULL &&
        sim.t_begin != NULL && sim.t_end != NULL) {
        status = plan_sim_run(&sim);
    }
    if (status == SVP_OK && p->samples > 0) {
        int    j, from = p->samples / 2;
        double sum = 0;

        res->first_out_s = sim.t_end[0];
        for (j = 0; j < p->samples; ++j) {
            res->first_out_s = fmin(res->first_out_s, sim.t_end[j]);
            sum += (j >= from) ? sim.t_end[j] - sim.t_begin[j] : 0;
        }
        res->latency_s = sum / (p->samples - from);
    }
    free(sim.t_begin);
    free(sim.t_end);
    for (int k = 0; sim.chan != NULL && k < 3 * W; ++k) {
        free(sim.chan[k].q);
    }
    free(sim.link_used);
    free(sim.chan);
    free(sim.rank);
    return status;
}

/* One sample alone, end to end, hops and link set-up included. */
static svp_status_t plan_fill(const svp_plan_params_t *p, double *fill_p)
{
    svp_plan_params_t one = *p;
    svp_plan_result_t res = {.world = p->world};
    svp_status_t      status = SVP_ERR_NO_MEMORY;
    size_t            W = (size_t)p->world;

    one.samples   = 1;
    res.ranks     = calloc(W, sizeof(*res.ranks));
    res.link_msgs = calloc(W * W, sizeof(*res.link_msgs));
    res.link_s    = calloc(W * W, sizeof(*res.link_s));
    if (res.ranks != NULL && res.link_msgs != NULL && res.link_s != NULL) {
        status = plan_simulate(&one, &res);
    }
    *fill_p = res.makespan_s;
    free(res.ranks);
    free(res.link_msgs);
    free(res.link_s);
    return status;
}

static svp_status_t plan_run(const svp_plan_params_t *p,
                             svp_plan_result_t **result_p);

/* Whether a and b describe the same simulation (the cost source aside). */
static int plan_params_same(const svp_plan_params_t *a,
                            const svp_plan_params_t *b)
{
    const svp_plan_costs_t *x = &a->costs, *y = &b->costs;

    return a->world == b->world && a->ranks_per_node == b->ranks_per_node &&
           a->steps == b->steps && a->samples == b->samples &&
           a->placement == b->placement && a->inflight == b->inflight &&
           a->message_bytes == b->message_bytes &&
           a->first_rank == b->first_rank && a->pairs == b->pairs &&
           a->half_bytes == b->half_bytes && x->step_s == y->step_s &&
           x->encode_s == y->encode_s && x->decode_s == y->decode_s &&
           x->intra_node_gbps == y->intra_node_gbps &&
           x->inter_node_gbps == y->inter_node_gbps &&
           x->latency_s == y->latency_s && x->link_setup_s == y->link_setup_s;
}

static svp_status_t plan_result_copy(const svp_plan_result_t *src,
                                     svp_plan_result_t **dst_p)
{
    svp_plan_result_t *d = malloc(sizeof(*d));
    size_t             W = (size_t)src->world;

    if (d == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    *d = *src;
    d->ranks     = malloc(W * sizeof(*d->ranks));
    d->link_msgs = malloc(W * W * sizeof(*d->link_msgs));
    d->link_s    = malloc(W * W * sizeof(*d->link_s));
    if (d->ranks == NULL || d->link_msgs == NULL || d->link_s == NULL) {
        svp_plan_result_destroy(d);
        return SVP_ERR_NO_MEMORY;
    }
    memcpy(d->ranks, src->ranks, W * sizeof(*d->ranks));
    memcpy(d->link_msgs, src->link_msgs, W * W * sizeof(*d->link_msgs));
    memcpy(d->link_s, src->link_s, W * W * sizeof(*d->link_s));
    *dst_p = d;
    return SVP_OK;
}

/*
 * The last simulation of more than this many events is kept: the report
 * asks for the same pipeline twice (its layout, then its detail), and at a
 * million samples each run takes about a second.
 */
#define PLAN_MEMO_EVENTS 100000

static struct {
    svp_plan_params_t  params;
    svp_plan_result_t *result;
} plan_memo;

svp_status_t svp_plan_run(const svp_plan_params_t *p,
                          svp_plan_result_t **result_p)
{
    if (plan_memo.result != NULL && plan_params_same(&plan_memo.params, p)) {
        return plan_result_copy(plan_memo.result, result_p);
    }
    return plan_run(p, result_p);
}

static svp_status_t plan_run(const svp_plan_params_t *p,
                             svp_plan_result_t **result_p)
{
    svp_plan_result_t *res;
    svp_status_t       status;
    int                W = p->world, N = p->samples;
    double             busy = 0;

    if (W < 1 || N < 1 || p->steps < W || p->steps % W != 0 ||
        p->ranks_per_node < 1) {
        return SVP_ERR_INVALID_PARAM;
    }

    res = calloc(1, sizeof(*res));
    if (res == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    res->world     = W;
    res->ranks     = calloc((size_t)W, sizeof(*res->ranks));
    res->link_msgs = calloc((size_t)W * W, sizeof(*res->link_msgs));
    res->link_s    = calloc((size_t)W * W, sizeof(*res->link_s));
    if (res->ranks == NULL || res->link_msgs == NULL || res->link_s == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_destroy_result;
    }
    status = plan_simulate(p, res);
    if (status == SVP_OK) {
        status = plan_fill(p, &res->fill_s);
    }
    if (status != SVP_OK) {
        goto err_destroy_result;
    }

    for (int r = 0; r < W; ++r) {
        double per_sample = res->ranks[r].busy_s / N;

        busy += res->ranks[r].busy_s;
        /* on a tie (spread balances the ranks) the first rank is named */
        if (per_sample > res->bottleneck_s * (1 + 1e-9)) {
            res->bottleneck_s    = per_sample;
            res->bottleneck_rank = r;
        }
    }
    res->samples_per_s = res->makespan_s > 0 ? N / res->makespan_s : 0;
    res->bubble        = res->makespan_s > 0 ?
                         1.0 - busy / (W * res->makespan_s) : 0;
    res->closed_form_s = res->fill_s + (N - 1) * res->bottleneck_s;
    if (res->events > PLAN_MEMO_EVENTS) {
        svp_plan_result_t *keep;

        if (plan_result_copy(res, &keep) == SVP_OK) {
            svp_plan_result_destroy(plan_memo.result);
            plan_memo.params = *p;
            plan_memo.result = keep;
        }
    }
    *result_p = res;
    return SVP_OK;

err_destroy_result:
    svp_plan_result_destroy(res);
    return status;
}

svp_status_t svp_plan_layout(const svp_plan_params_t *p, int stages,
                             svp_plan_layout_t *layout_p)
{
    return svp_plan_layout_pairs(p, stages, 1, layout_p);
}

svp_status_t svp_plan_layout_pairs(const svp_plan_params_t *p, int stages,
                                   int pairs, svp_plan_layout_t *layout_p)
{
    /* distinct (samples, node offset) pairs seen: at most 2 x ranks_per_node */
    struct { int samples, offset; double makespan, fill, first, lat; } seen[64];
    svp_plan_layout_t l = {0};
    int               nseen = 0, W = p->world, N = p->samples;

    if (stages < 1 || pairs < 1 || pairs > 2 || W % (stages * pairs) != 0 ||
        p->steps % stages != 0 || N < 1 || (pairs > 1 && p->half_bytes <= 0)) {
        return SVP_ERR_INVALID_PARAM;
    }
    l.stages = stages;
    l.pairs  = pairs;
    l.groups = W / (stages * pairs);
    l.first_out_s = -1;
    for (int g = 0; g < l.groups && g < N; ++g) {
        svp_plan_params_t  gp = *p;
        svp_plan_result_t *res;
        svp_status_t       status;
        double             makespan = -1, fill = 0, first = 0, lat = 0;
        int                n = (N - g + l.groups - 1) / l.groups, k;

        gp.world      = stages;
        gp.pairs      = pairs;
        gp.samples    = n;
        gp.first_rank = p->first_rank + g * stages * pairs;
        for (k = 0; k < nseen; ++k) {
            if (seen[k].samples == n &&
                seen[k].offset == gp.first_rank % p->ranks_per_node) {
                makespan = seen[k].makespan;
                fill     = seen[k].fill;
                first    = seen[k].first;
                lat      = seen[k].lat;
                break;
            }
        }
        if (makespan < 0) {
            status = svp_plan_run(&gp, &res);
            if (status != SVP_OK) {
                return status;
            }
            makespan = res->makespan_s;
            fill     = res->fill_s;
            first    = res->first_out_s;
            lat      = res->latency_s;
            svp_plan_result_destroy(res);
            if (nseen < (int)(sizeof(seen) / sizeof(seen[0]))) {
                seen[nseen].samples  = n;
                seen[nseen].offset   = gp.first_rank % p->ranks_per_node;
                seen[nseen].makespan = makespan;
                seen[nseen].fill     = fill;
                seen[nseen].first    = first;
                seen[nseen].lat      = lat;
                ++nseen;
            }
        }
        l.first_out_s = (l.first_out_s < 0) ? first : fmin(l.first_out_s, first);
        l.latency_s   = fmax(l.latency_s, lat);
        if (makespan > l.makespan_s) {
            l.makespan_s          = makespan;
            l.group_samples_per_s = makespan > 0 ? n / makespan : 0;
        }
        l.samples_max = (n > l.samples_max) ? n : l.samples_max;
        l.fill_s      = fill > l.fill_s ? fill : l.fill_s;
    }
    l.samples_per_s = l.makespan_s > 0 ? N / l.makespan_s : 0;
    *layout_p = l;
    return SVP_OK;
}

svp_status_t svp_plan_layouts(const svp_plan_params_t *p,
                              svp_plan_layout_t *layouts, int *n_p, int *best_p)
{
    svp_status_t status;
    int          n = 0, best = -1, lat = (p->objective == SVP_OBJECTIVE_LATENCY);

    for (int c = 1; c <= ((p->half_bytes > 0) ? 2 : 1); ++c) {
        for (int s = 1; s <= p->world / c; ++s) {
            if (p->world % (s * c) != 0 || p->steps % s != 0) {
                continue;
            }
            status = svp_plan_layout_pairs(p, s, c, &layouts[n]);
            if (status != SVP_OK) {
                return status;
            }
            if (best < 0 ||
                (lat ? layouts[n].latency_s < layouts[best].latency_s * (1 - 1e-3)
                     : layouts[n].makespan_s < layouts[best].makespan_s * (1 - 1e-3))) {
                best = n;
            }
            ++n;
        }
    }
    if (n == 0) {
        return SVP_ERR_INVALID_PARAM;
    }
    *n_p    = n;
    *best_p = best;
    return SVP_OK;
}
