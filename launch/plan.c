/*
 * The planner's model and report (see plan.h for the model itself).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "launch/plan.h"
#include "launch/launch_int.h"
#include "model/unet.h"
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

/* Ties between start times closer than this are ties (seconds). */
#define PLAN_TIE_S         1e-12

enum { PLAN_ENCODE, PLAN_STEPS, PLAN_DECODE };

typedef struct {
    int    rank;
    int    kind;
    double duration;
} plan_task_t;

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
            svp_launch_errf(errbuf, errlen, "%s: model.dummy.cost: the planner "
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
            svp_launch_errf(errbuf, errlen, "%s: model svd needs a hardware "
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
            svp_launch_errf(errbuf, errlen, "%s: dtype: %s: %s%s%s has no "
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
        svp_launch_errf(errbuf, errlen, "%s: %s", file, strerror(errno));
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
            svp_launch_errf(errbuf, errlen, "%s:%ld: expected svp-cost "
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

/* As the worker places them (src/pipe/pipe.h): spread encodes sample i on
 * rank i mod W, ends on rank 0. */
static int plan_encodes_on(svp_placement_t placement, int world, int rank)
{
    return world == 1 || placement == SVP_PLACEMENT_SPREAD || rank == 0;
}

static int plan_decodes_on(svp_placement_t placement, int world, int rank)
{
    return world == 1 || placement == SVP_PLACEMENT_SPREAD || rank == world - 1;
}

void svp_plan_memory(const svp_spec_t *spec, int world, int rank,
                     svp_placement_t placement, svp_plan_memory_t *mem_p)
{
    svp_plan_memory_t  m = {0};
    svp_plan_message_t msg;
    double             es = plan_elem_size(spec->dtype);
    int                enc = plan_encodes_on(placement, world, rank);
    int                dec = plan_decodes_on(placement, world, rank);
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
    double gbps = ((p->first_rank + from) / p->ranks_per_node ==
                   (p->first_rank + to) / p->ranks_per_node) ?
                  c->intra_node_gbps : c->inter_node_gbps;

    return c->latency_s + (gbps > 0 ? p->message_bytes / (gbps * 1e9) : 0);
}

/* How many tasks the chain of a sample has (the same for every sample). */
static int plan_chain_length(const svp_plan_params_t *p)
{
    int per_rank = p->steps / p->world;

    return (p->costs.encode_s > 0) +
           ((per_rank > 0 && p->costs.step_s > 0) ? p->world : 0) +
           (p->costs.decode_s > 0);
}

/*
 * Task k of sample i's chain: encode (where the placement puts it), the
 * steps rank by rank, decode.  Computed, not stored: a million samples of a
 * 30-task chain would otherwise take half a gigabyte.
 */
static plan_task_t plan_chain_task(const svp_plan_params_t *p, int i, int k)
{
    int per_rank = p->steps / p->world;
    int has_steps = per_rank > 0 && p->costs.step_s > 0;

    if (p->costs.encode_s > 0) {
        if (k == 0) {
            return (plan_task_t){p->placement == SVP_PLACEMENT_SPREAD ?
                                 i % p->world : 0, PLAN_ENCODE,
                                 p->costs.encode_s};
        }
        --k;
    }
    if (has_steps && k < p->world) {
        return (plan_task_t){k, PLAN_STEPS, per_rank * p->costs.step_s};
    }
    return (plan_task_t){p->placement == SVP_PLACEMENT_SPREAD ? i % p->world :
                         p->world - 1, PLAN_DECODE, p->costs.decode_s};
}

/*
 * A binary min-heap of samples ordered by (key, sample): the samples whose
 * next task waits for one rank.
 */
typedef struct {
    int    *sample;
    double *key;
    int     size, capacity;
} plan_heap_t;

static int plan_heap_less(const plan_heap_t *h, int a, int b)
{
    return h->key[a] < h->key[b] ||
           (h->key[a] == h->key[b] && h->sample[a] < h->sample[b]);
}

static void plan_heap_swap(plan_heap_t *h, int a, int b)
{
    int    s = h->sample[a];
    double k = h->key[a];

    h->sample[a] = h->sample[b];
    h->key[a]    = h->key[b];
    h->sample[b] = s;
    h->key[b]    = k;
}

/* Grows by doubling: every sample is in one heap at a time, so the heaps
 * together hold N entries, however they are spread over the ranks. */
static svp_status_t plan_heap_push(plan_heap_t *h, int sample, double key)
{
    int i;

    if (h->size == h->capacity) {
        int     cap = h->capacity > 0 ? 2 * h->capacity : 64;
        int    *s   = realloc(h->sample, (size_t)cap * sizeof(*s));
        double *k;

        if (s == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        h->sample = s;
        k = realloc(h->key, (size_t)cap * sizeof(*k));
        if (k == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        h->key      = k;
        h->capacity = cap;
    }
    i = h->size++;

    h->sample[i] = sample;
    h->key[i]    = key;
    while (i > 0 && plan_heap_less(h, i, (i - 1) / 2)) {
        plan_heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return SVP_OK;
}

static void plan_heap_pop(plan_heap_t *h)
{
    int i = 0;

    h->sample[0] = h->sample[--h->size];
    h->key[0]    = h->key[h->size];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;

        if (l < h->size && plan_heap_less(h, l, m)) {
            m = l;
        }
        if (r < h->size && plan_heap_less(h, r, m)) {
            m = r;
        }
        if (m == i) {
            return;
        }
        plan_heap_swap(h, i, m);
        i = m;
    }
}

/*
 * Event by event: the task that can start earliest runs next; among equal
 * starts the oldest sample wins (a rank finishes what is in flight before it
 * takes new work).
 *
 * Starts never go back in time (a task ends after it starts, and what it
 * makes ready is ready later still), so each rank can keep the samples that
 * wait for it in two heaps: those already ready when the rank frees up
 * ("waiting", oldest sample first) and those still in transit ("arriving",
 * earliest ready first), beside a cursor for the samples not started.  A rank's next task is the oldest waiting sample,
 * else the earliest arrival; the event is the earliest of the W ranks'
 * candidates.  A scan over all N samples per event, as a first version did,
 * made the plan quadratic in N (1,000,000 samples ran for over ten minutes);
 * this is O(N (W + 2) W) with heaps of the samples in flight.
 */
static svp_status_t plan_simulate(const svp_plan_params_t *p,
                                  svp_plan_result_t *res)
{
    int           W = p->world, N = p->samples, len = plan_chain_length(p);
    plan_heap_t  *waiting, *arriving;
    int          *next, *fresh, fresh_step;
    double       *ready, *free_at;
    char         *link_used;
    long          remaining = (long)N * len;
    svp_status_t  status = SVP_ERR_NO_MEMORY;

    waiting   = calloc((size_t)W, sizeof(*waiting));
    arriving  = calloc((size_t)W, sizeof(*arriving));
    next      = calloc((size_t)N, sizeof(*next));
    ready     = calloc((size_t)N, sizeof(*ready));
    free_at   = calloc((size_t)W, sizeof(*free_at));
    fresh     = calloc((size_t)W, sizeof(*fresh));
    link_used = calloc((size_t)W * W, sizeof(*link_used));
    if (waiting == NULL || arriving == NULL || next == NULL || ready == NULL ||
        free_at == NULL || fresh == NULL || link_used == NULL) {
        goto out_free;
    }
    res->events = remaining;
    if (len == 0) {
        status = SVP_OK;
        goto out_free;
    }
    /*
     * Samples not started yet are all ready at 0 and wait for the rank of
     * their first task in sample order: rank i mod W under spread with an
     * encode, rank 0 otherwise.  A cursor per rank stands for them, so the
     * heaps hold only the samples in flight (a few per rank) and stay small.
     */
    fresh_step = (N > 1 && W > 1 &&
                  plan_chain_task(p, 1, 0).rank != plan_chain_task(p, 0, 0).rank)
                 ? W : 1;
    for (int r = 0; r < W; ++r) {
        fresh[r] = N;
    }
    for (int i = 0; i < N && i < fresh_step; ++i) {
        fresh[plan_chain_task(p, i, 0).rank] = i;
    }

    /* one sample alone: its chain end to end, hops included */
    for (int k = 0; k < len; ++k) {
        plan_task_t t = plan_chain_task(p, 0, k);

        res->fill_s += t.duration;
        if (k > 0) {
            int from = plan_chain_task(p, 0, k - 1).rank;

            if (from != t.rank) {
                res->fill_s += plan_link_s(p, from, t.rank) +
                               p->costs.link_setup_s;
            }
        }
    }

    /*
     * One rank runs every task of every sample back to back from time 0:
     * nothing to simulate (the one-GPU baseline and each replica of S = 1
     * would otherwise take a third of a million-sample plan).
     */
    if (W == 1) {
        for (int k = 0; k < len; ++k) {
            plan_task_t t = plan_chain_task(p, 0, k);

            res->ranks[0].busy_s  += (double)N * t.duration;
            res->ranks[0].steps   += t.kind == PLAN_STEPS ? N * p->steps : 0;
            res->ranks[0].encodes += t.kind == PLAN_ENCODE ? N : 0;
            res->ranks[0].decodes += t.kind == PLAN_DECODE ? N : 0;
        }
        res->ranks[0].finish_s = res->ranks[0].busy_s;
        res->makespan_s        = res->ranks[0].busy_s;
        remaining              = 0;
    }

    while (remaining-- > 0) {
        plan_task_t t;
        double      best_start = DBL_MAX, finish;
        int         best = -1, best_rank = -1, best_waiting = 0;

        for (int r = 0; r < W; ++r) {
            double start;
            int    i, from_waiting;

            /* arrivals that are ready by the time the rank is free wait */
            while (arriving[r].size > 0 &&
                   arriving[r].key[0] <= free_at[r] + PLAN_TIE_S) {
                int s = arriving[r].sample[0];

                plan_heap_pop(&arriving[r]);
                if (plan_heap_push(&waiting[r], s, 0) != SVP_OK) {
                    goto out_free;
                }
            }
            if (fresh[r] < N &&
                (waiting[r].size == 0 || fresh[r] < waiting[r].sample[0])) {
                i            = fresh[r];
                start        = free_at[r];
                from_waiting = 2;
            } else if (waiting[r].size > 0) {
                i            = waiting[r].sample[0];
                start        = free_at[r];
                from_waiting = 1;
            } else if (arriving[r].size > 0) {
                i            = arriving[r].sample[0];
                start        = arriving[r].key[0];
                from_waiting = 0;
            } else {
                continue;
            }
            if (start < best_start - PLAN_TIE_S ||
                (start < best_start + PLAN_TIE_S && i < best)) {
                best_start   = start;
                best         = i;
                best_rank    = r;
                best_waiting = from_waiting;
            }
        }

        if (best_waiting == 2) {
            fresh[best_rank] += fresh_step;
        } else {
            plan_heap_pop(best_waiting ? &waiting[best_rank] :
                          &arriving[best_rank]);
        }
        t      = plan_chain_task(p, best, next[best]);
        finish = best_start + t.duration;
        free_at[t.rank] = finish;
        res->ranks[t.rank].busy_s  += t.duration;
        res->ranks[t.rank].finish_s = finish;
        res->ranks[t.rank].steps   += t.kind == PLAN_STEPS ? p->steps / W : 0;
        res->ranks[t.rank].encodes += t.kind == PLAN_ENCODE;
        res->ranks[t.rank].decodes += t.kind == PLAN_DECODE;
        res->makespan_s = fmax(res->makespan_s, finish);

        ready[best] = finish;
        if (++next[best] < len) {
            int to = plan_chain_task(p, best, next[best]).rank;

            if (to != t.rank) {
                double hop = plan_link_s(p, t.rank, to);

                if (!link_used[t.rank * W + to]) {
                    link_used[t.rank * W + to] = 1;
                    hop += p->costs.link_setup_s;
                }
                ready[best] += hop;
                res->link_msgs[t.rank * W + to] += 1;
                res->link_s[t.rank * W + to]    += hop;
            }
        }
        if (next[best] < len &&
            plan_heap_push(&arriving[plan_chain_task(p, best, next[best]).rank],
                           best, ready[best]) != SVP_OK) {
            goto out_free;
        }
    }
    status = SVP_OK;

out_free:
    for (int r = 0; waiting != NULL && arriving != NULL && r < W; ++r) {
        free(waiting[r].sample);
        free(waiting[r].key);
        free(arriving[r].sample);
        free(arriving[r].key);
    }
    free(link_used);
    free(fresh);
    free(free_at);
    free(ready);
    free(next);
    free(arriving);
    free(waiting);
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
           a->placement == b->placement &&
           a->message_bytes == b->message_bytes &&
           a->first_rank == b->first_rank && x->step_s == y->step_s &&
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
    /* distinct (samples, node offset) pairs seen: at most 2 x ranks_per_node */
    struct { int samples, offset; double makespan, fill; } seen[64];
    svp_plan_layout_t l = {0};
    int               nseen = 0, W = p->world, N = p->samples;

    if (stages < 1 || W % stages != 0 || p->steps % stages != 0 || N < 1) {
        return SVP_ERR_INVALID_PARAM;
    }
    l.stages = stages;
    l.groups = W / stages;
    for (int g = 0; g < l.groups && g < N; ++g) {
        svp_plan_params_t  gp = *p;
        svp_plan_result_t *res;
        svp_status_t       status;
        double             makespan = -1, fill = 0;
        int                n = (N - g + l.groups - 1) / l.groups, k;

        gp.world      = stages;
        gp.samples    = n;
        gp.first_rank = p->first_rank + g * stages;
        for (k = 0; k < nseen; ++k) {
            if (seen[k].samples == n &&
                seen[k].offset == gp.first_rank % p->ranks_per_node) {
                makespan = seen[k].makespan;
                fill     = seen[k].fill;
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
            svp_plan_result_destroy(res);
            if (nseen < (int)(sizeof(seen) / sizeof(seen[0]))) {
                seen[nseen].samples  = n;
                seen[nseen].offset   = gp.first_rank % p->ranks_per_node;
                seen[nseen].makespan = makespan;
                seen[nseen].fill     = fill;
                ++nseen;
            }
        }
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
    int          n = 0, best = -1;

    for (int s = 1; s <= p->world; ++s) {
        if (p->world % s != 0 || p->steps % s != 0) {
            continue;
        }
        status = svp_plan_layout(p, s, &layouts[n]);
        if (status != SVP_OK) {
            return status;
        }
        if (best < 0 ||
            layouts[n].makespan_s < layouts[best].makespan_s * (1 - 1e-3)) {
            best = n;
        }
        ++n;
    }
    if (n == 0) {
        return SVP_ERR_INVALID_PARAM;
    }
    *n_p    = n;
    *best_p = best;
    return SVP_OK;
}
