#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/pipe.h"
#include "pipe/deadline.h"
#include "common/stop.h"
#include "spec/steps.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"
#include "tensor/safetensors.h"

#include <inttypes.h>
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

void svp_sample_cleanup(svp_sample_t *sample)
{
    int i;

    for (i = 0; i < sample->ntensors; ++i) {
        svp_tensor_destroy(sample->tensors[i]);
        sample->tensors[i] = NULL;
    }
    sample->ntensors = 0;
}

/* Message kinds of the pipeline (the UCX tag keeps them apart). */
#define SVP_PIPE_KIND_LATENT SVP_COMM_KIND_LATENT  /* to the next rank */
#define SVP_PIPE_KIND_FINAL  2                     /* to the finishing rank */
#define SVP_PIPE_KIND_INIT   3                     /* encoded, to rank 0 */

/* Final-latent receives posted ahead on a finishing rank (spread). */
#define SVP_PIPE_FINAL_SLOTS 2

/* Encoded samples being sent to rank 0 from an encoding rank (spread). */
#define SVP_PIPE_ENC_SLOTS   2

/*
 * A frame and the one request that uses it.  A sample's tensors are views
 * into its frame: it is received into the frame, computed on in place and
 * sent from it, so a latent is never copied on its way through a rank.
 */
typedef struct {
    svp_comm_frame_h frame;
    svp_comm_req_h   req;
    int              is_send;
    int              sample;
} svp_pipe_slot_t;

svp_status_t svp_sample_write_tensor(const svp_spec_t *spec, const svp_sample_t *sample,
                                     const char *name, const svp_tensor_t *tensor,
                                     const char *model, const char *path)
{
    svp_safetensors_writer_h w;
    char                     val[64];
    svp_status_t             status;

    status = svp_safetensors_writer_create(&w);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_safetensors_writer_add(w, name, tensor);
    if (status == SVP_OK) {
        svp_safetensors_writer_add_metadata(w, "job", spec->name);
        snprintf(val, sizeof(val), "%d", sample->index);
        svp_safetensors_writer_add_metadata(w, "sample", val);
        snprintf(val, sizeof(val), "%d", spec->steps);
        svp_safetensors_writer_add_metadata(w, "steps", val);
        snprintf(val, sizeof(val), "%" PRIu64, sample->seed);
        svp_safetensors_writer_add_metadata(w, "seed", val);
        svp_safetensors_writer_add_metadata(w, "model", model);
        status = svp_safetensors_writer_commit(w, path);
    }
    svp_safetensors_writer_destroy(w);
    return status;
}

typedef struct {
    const svp_pipe_params_t *params;
    svp_steps_layout_t       layout;
    int                      srank;         /* position in the group */
    int                      sworld;        /* ranks in the group (S) */
    int                      base;          /* the group's first rank */
    int                      n;             /* samples of this group */
    int                     *idx;           /* their indices, in order */
    svp_step_range_t         range;
    svp_pipe_stats_t         stats;
    double                   t_start;
    int                      finished;      /* samples finished here */
    int                      to_finish;     /* samples this rank finishes */
    svp_comm_frame_desc_t    desc;
    svp_pipe_slot_t         *lat;           /* latent slots */
    int                      nlat;
    svp_pipe_slot_t          fin[SVP_PIPE_FINAL_SLOTS];
    svp_pipe_slot_t          enc[SVP_PIPE_ENC_SLOTS];
    svp_pipe_deadline_t      dl;            /* receive timeouts */
    svp_comm_mem_type_t      frame_mem;     /* where the frames live */
} svp_pipe_t;

static svp_status_t svp_pipe_steps(svp_pipe_t *p, svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_status_t       status;
    double             t0, dt, sum = 0, tmin = 1e30, tmax = 0;
    int                step;

    if (s->next_step != p->range.begin) {
        svp_error("sample %d arrived at step %d, this rank runs [%d, %d)", s->index,
                  s->next_step, p->range.begin, p->range.end);
        return SVP_ERR_MESSAGE;
    }
    for (step = p->range.begin; step < p->range.end; ++step) {
        if (svp_stop_signal() != 0) {
            return SVP_ERR_CANCELED;
        }
        /* between steps: hand-offs in flight go on, and a peer whose
         * teardown began gets its unmatched messages back (comm.h) */
        if (p->params->comm != NULL) {
            svp_comm_progress(p->params->comm);
        }
        t0     = svp_clock_now();
        status = stage->ops->step(stage->self, s, step);
        if (status != SVP_OK) {
            svp_error("sample %d step %d failed: %s", s->index, step,
                      svp_status_string(status));
            return status;
        }
        dt             = svp_clock_now() - t0;
        svp_pipe_deadline_step(&p->dl, dt);
        p->stats.busy += dt;
        p->stats.steps_done++;
        s->next_step = step + 1;
        sum         += dt;
        tmin         = SVP_MIN(tmin, dt);
        tmax         = SVP_MAX(tmax, dt);
        svp_trace_event(p->params->trace, "step", s->index, step,
                        svp_trace_now_us() - dt * 1e6, svp_trace_now_us());
        svp_debug("sample %d step %d/%d %.1f ms", s->index, step + 1,
                  p->params->spec->steps, dt * 1e3);
    }
    svp_info("sample %d: steps [%d, %d) in %.3fs, per step %.1f/%.1f/%.1f ms "
             "(min/mean/max)", s->index, p->range.begin, p->range.end, sum,
             tmin * 1e3, sum / SVP_MAX(1, p->range.end - p->range.begin) * 1e3,
             tmax * 1e3);
    return SVP_OK;
}

static void svp_pipe_progress(svp_pipe_t *p, const svp_sample_t *s)
{
    int    n   = p->to_finish, done = ++p->finished;
    double now = svp_clock_now(), el = now - p->t_start, eta;
    char   b1[32], b2[32];

    eta = (done > 0) ? el / done * (n - done) : 0;
    svp_info("sample %d done in %.2fs (%d/%d, %.0f%%), elapsed %s, eta %s", s->index,
             now - s->t_begin, done, n, 100.0 * done / n,
             svp_clock_format_duration(el, b1, sizeof(b1)),
             svp_clock_format_duration(eta, b2, sizeof(b2)));
}

/* One rank does everything: begin, all steps, finish, sample after sample. */
static svp_status_t svp_pipe_run_single(svp_pipe_t *p)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_sample_t       s;
    svp_status_t       status;
    double             t0;
    int                i;

    for (i = 0; i < p->n; ++i) {
        memset(&s, 0, sizeof(s));
        t0        = svp_clock_now();
        s.t_begin = t0;
        svp_stop_progress(p->stats.samples_done, 1);
        status    = stage->ops->begin(stage->self, p->idx[i], &s);
        if (status != SVP_OK) {
            goto err_cleanup;
        }
        p->stats.busy += svp_clock_now() - t0;
        status = svp_pipe_steps(p, &s);
        if (status != SVP_OK) {
            goto err_cleanup;
        }
        t0     = svp_clock_now();
        status = stage->ops->finish(stage->self, &s);
        if (status != SVP_OK) {
            goto err_cleanup;
        }
        p->stats.busy += svp_clock_now() - t0;
        svp_trace_event(p->params->trace, "finish", s.index, -1, svp_trace_now_us() -
                        (svp_clock_now() - t0) * 1e6, svp_trace_now_us());
        p->stats.samples_done++;
        svp_stop_progress(p->stats.samples_done, 0);
        svp_pipe_progress(p, &s);
        svp_sample_cleanup(&s);
    }
    return SVP_OK;

err_cleanup:
    svp_sample_cleanup(&s);
    return status;
}


/* ---- several ranks ---------------------------------------------------- */

/* Waits for the slot's request (if any), for at most timeout seconds
 * (negative: comm.deadline); the time counts as waiting. */
static svp_status_t svp_pipe_settle(svp_pipe_t *p, svp_pipe_slot_t *slot,
                                    double timeout)
{
    svp_status_t status;
    double       t0, dt;

    if (slot->req == NULL) {
        return SVP_OK;
    }
    t0        = svp_clock_now();
    status    = svp_comm_wait(p->params->comm, slot->req, timeout);
    slot->req = NULL;
    dt        = svp_clock_now() - t0;
    if (slot->is_send) {
        p->stats.wait_send += dt;
    } else {
        p->stats.wait_recv += dt;
    }
    if (dt > 1e-4) {
        svp_trace_event(p->params->trace, slot->is_send ? "wait send" : "wait recv",
                        slot->sample, -1, svp_trace_now_us() - dt * 1e6,
                        svp_trace_now_us());
    }
    return status;
}

static svp_status_t svp_pipe_post_recv(svp_pipe_t *p, svp_pipe_slot_t *slot,
                                       int peer, unsigned kind, int sample,
                                       int step)
{
    svp_status_t status;

    status = svp_pipe_settle(p, slot, -1.0);  /* the frame's last send */
    if (status != SVP_OK) {
        return status;
    }
    slot->is_send = 0;
    slot->sample  = sample;
    return svp_comm_irecv(p->params->comm, peer, kind, (unsigned)sample,
                          (unsigned)step, slot->frame, &slot->req);
}

static svp_status_t svp_pipe_send(svp_pipe_t *p, svp_pipe_slot_t *slot, int peer,
                                  unsigned kind, const svp_sample_t *s)
{
    size_t bytes = svp_comm_frame_length(slot->frame);

    svp_info("send sample %d step %d to rank %d (%s, %zu bytes)", s->index,
             s->next_step, peer,
             (kind == SVP_PIPE_KIND_FINAL) ? "final" :
             (kind == SVP_PIPE_KIND_INIT) ? "encoded" : "latent", bytes);
    slot->is_send = 1;
    slot->sample  = s->index;
    return svp_comm_isend(p->params->comm, peer, kind, (unsigned)s->index,
                          (unsigned)s->next_step, slot->frame, &slot->req);
}

/* The sample's tensors as views into the slot's frame. */
static svp_status_t svp_pipe_view(svp_pipe_t *p, svp_pipe_slot_t *slot, int index,
                                  svp_sample_t *s)
{
    const svp_comm_frame_desc_t *d = &p->desc;
    svp_status_t                 status;
    unsigned                     i;

    memset(s, 0, sizeof(*s));
    s->index   = index;
    s->seed    = p->params->spec->seed;
    s->t_begin = svp_clock_now();   /* times shown are this rank's */
    s->on_device = (p->frame_mem == SVP_COMM_MEM_CUDA);
    for (i = 0; i < d->num_tensors; ++i) {
        status = svp_tensor_wrap((svp_dtype_t)d->tensors[i].dtype,
                                 (int)d->tensors[i].ndim, d->tensors[i].shape,
                                 svp_comm_frame_data(slot->frame, i), &s->tensors[i]);
        if (status != SVP_OK) {
            svp_sample_cleanup(s);
            return status;
        }
        s->ntensors++;
    }
    return SVP_OK;
}

/* The frame layout of a sample, from the stage's own allocation. */
static svp_status_t svp_pipe_layout(svp_pipe_t *p)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_sample_t       tmpl;
    svp_status_t       status;
    int                i, d;

    memset(&tmpl, 0, sizeof(tmpl));
    status = stage->ops->alloc(stage->self, 0, &tmpl);
    if (status != SVP_OK) {
        return status;
    }
    if (tmpl.ntensors > SVP_COMM_MAX_TENSORS) {
        svp_error("a sample has %d tensors, a message carries at most %d",
                  tmpl.ntensors, SVP_COMM_MAX_TENSORS);
        status = SVP_ERR_INTERNAL;
        goto out;
    }
    memset(&p->desc, 0, sizeof(p->desc));
    p->desc.num_tensors = (uint32_t)tmpl.ntensors;
    for (i = 0; i < tmpl.ntensors; ++i) {
        svp_comm_tensor_desc_t *t = &p->desc.tensors[i];
        if (tmpl.tensors[i]->ndim > SVP_COMM_MAX_DIMS) {
            svp_error("tensor %d of a sample has %d dimensions, a message carries "
                      "at most %d", i, tmpl.tensors[i]->ndim, SVP_COMM_MAX_DIMS);
            status = SVP_ERR_INTERNAL;
            goto out;
        }
        t->dtype = (uint32_t)tmpl.tensors[i]->dtype;
        t->ndim  = (uint32_t)tmpl.tensors[i]->ndim;
        for (d = 0; d < tmpl.tensors[i]->ndim; ++d) {
            t->shape[d] = tmpl.tensors[i]->shape[d];
        }
        t->bytes = svp_tensor_nbytes(tmpl.tensors[i]);
    }
out:
    svp_sample_cleanup(&tmpl);
    return status;
}

static svp_status_t svp_pipe_slots_create(svp_pipe_t *p, svp_pipe_slot_t *slots,
                                          int n)
{
    svp_status_t status;
    int          i;

    for (i = 0; i < n; ++i) {
        slots[i].sample = -1;
        status = svp_comm_frame_create(p->params->comm, &p->desc, NULL, 0,
                                       p->frame_mem, &slots[i].frame);
        if (status != SVP_OK) {
            return status;
        }
    }
    return SVP_OK;
}

/* Cancels what is pending (on failure) and frees the frames. */
static void svp_pipe_slots_destroy(svp_pipe_t *p, svp_pipe_slot_t *slots, int n)
{
    int i;

    for (i = 0; i < n; ++i) {
        if (slots[i].req != NULL) {
            svp_comm_cancel(p->params->comm, slots[i].req);
            slots[i].req = NULL;
        }
        svp_comm_frame_destroy(slots[i].frame);
        slots[i].frame = NULL;
    }
}

/* Rank 0: the stage's begin(), then the sample moved into its frame. */
static svp_status_t svp_pipe_begin(svp_pipe_t *p, svp_pipe_slot_t *slot, int i,
                                   svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_sample_t       own;
    svp_status_t       status;
    double             t0 = svp_clock_now();

    memset(&own, 0, sizeof(own));
    status = stage->ops->begin(stage->self, i, &own);
    if (status != SVP_OK) {
        svp_sample_cleanup(&own);
        return status;
    }
    status = svp_pipe_view(p, slot, i, s);
    if (status == SVP_OK) {
        status = svp_stage_sample_copy(stage, s, &own);   /* into the frame */
        if (status != SVP_OK) {
            svp_sample_cleanup(s);
        }
    }
    svp_sample_cleanup(&own);
    p->stats.busy += svp_clock_now() - t0;
    svp_trace_event(p->params->trace, "begin", i, -1,
                    svp_trace_now_us() - (svp_clock_now() - t0) * 1e6,
                    svp_trace_now_us());
    return status;
}

static svp_status_t svp_pipe_finish(svp_pipe_t *p, svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_sample_t       host;
    svp_status_t       status;
    double             t0 = svp_clock_now();

    if (s->on_device) {
        /* finish() (decode, outputs) takes host tensors */
        memset(&host, 0, sizeof(host));
        status = stage->ops->alloc(stage->self, s->index, &host);
        if (status == SVP_OK) {
            status = svp_stage_sample_copy(stage, &host, s);
        }
        if (status == SVP_OK) {
            status = stage->ops->finish(stage->self, &host);
        }
        svp_sample_cleanup(&host);
    } else {
        status = stage->ops->finish(stage->self, s);
    }
    if (status != SVP_OK) {
        svp_error("finishing sample %d failed: %s", s->index,
                  svp_status_string(status));
        return status;
    }
    p->stats.busy += svp_clock_now() - t0;
    svp_trace_event(p->params->trace, "finish", s->index, -1,
                    svp_trace_now_us() - (svp_clock_now() - t0) * 1e6,
                    svp_trace_now_us());
    svp_pipe_progress(p, s);
    return SVP_OK;
}

/* The position in the group that finishes the group's i-th sample. */
static int svp_pipe_finisher(const svp_pipe_t *p, int i)
{
    return (p->params->spec->pipeline.placement == SVP_PLACEMENT_SPREAD)
               ? i % p->sworld : p->sworld - 1;
}

/* The position in the group that encodes the group's i-th sample. */
static int svp_pipe_encoder(const svp_pipe_t *p, int i)
{
    return (p->params->spec->pipeline.placement == SVP_PLACEMENT_SPREAD)
               ? i % p->sworld : 0;
}

/*
 * An encoding rank other than the group's first: begin() the group's i-th
 * sample and send it to the group's first rank.
 */
static svp_status_t svp_pipe_encode_for_rank0(svp_pipe_t *p, int i)
{
    svp_pipe_slot_t *slot = &p->enc[(i / p->sworld) % SVP_PIPE_ENC_SLOTS];
    svp_sample_t     s;
    svp_status_t     status;

    status = svp_pipe_settle(p, slot, -1.0);   /* the slot's last send */
    if (status != SVP_OK) {
        return status;
    }
    status = svp_pipe_begin(p, slot, p->idx[i], &s);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_pipe_send(p, slot, p->base, SVP_PIPE_KIND_INIT, &s);
    svp_sample_cleanup(&s);
    return status;
}

/*
 * Finishes the final latent of the group's f-th sample (received from the
 * group's last rank).
 */
static svp_status_t svp_pipe_final(svp_pipe_t *p, int f)
{
    const svp_pipe_params_t *pp   = p->params;
    svp_pipe_slot_t         *slot = &p->fin[(f / p->sworld) % SVP_PIPE_FINAL_SLOTS];
    svp_sample_t             s;
    svp_status_t             status;
    int                      next = f + SVP_PIPE_FINAL_SLOTS * p->sworld;
    int                      last = p->base + p->sworld - 1;

    /* the sample crosses the whole chain after this rank handled it */
    status = svp_pipe_settle(p, slot, svp_pipe_deadline_wait(&p->dl, p->sworld,
                                                             p->finished == 0));
    if (status != SVP_OK) {
        return status;
    }
    svp_info("recv final sample %d from rank %d", p->idx[f], last);
    status = svp_pipe_view(p, slot, p->idx[f], &s);
    if (status != SVP_OK) {
        return status;
    }
    s.next_step = pp->spec->steps;
    status      = svp_pipe_finish(p, &s);
    svp_sample_cleanup(&s);
    if (status != SVP_OK) {
        return status;
    }
    if (next < p->n) {
        return svp_pipe_post_recv(p, slot, last, SVP_PIPE_KIND_FINAL, p->idx[next],
                                  pp->spec->steps);
    }
    return SVP_OK;
}

static svp_status_t svp_pipe_run_multi(svp_pipe_t *p)
{
    const svp_pipe_params_t *pp = p->params;
    const svp_spec_t        *spec = pp->spec;
    int                      rank = p->srank, world = p->sworld, n = p->n;
    int                      base = p->base;
    int                      first = (rank == 0), last = (rank == world - 1);
    int                      ahead = spec->comm.inflight, i, f, next_final, nfin = 0;
    int                      next_enc = -1, nenc = 0;
    svp_pipe_slot_t         *slot;
    svp_sample_t             s;
    svp_status_t             status;
    double                   t0, timeout;

    if (pp->comm == NULL) {
        svp_error("internal: a %d-rank pipeline without a communication layer", world);
        return SVP_ERR_INTERNAL;
    }
    status = svp_pipe_layout(p);
    if (status != SVP_OK) {
        return status;
    }
    /* a stage that computes on a device keeps a sample's frame there from
     * rank to rank; how it crosses is the comm's (comm.gpu_direct) */
    p->frame_mem = (pp->stage.devmem != NULL) ? SVP_COMM_MEM_CUDA : SVP_COMM_MEM_HOST;

    /*
     * Latent slots: 'ahead' receives posted in advance, the sample being
     * computed, and the previous sample's send still draining.  A slot is
     * reused only after its send completed, so no buffer is overwritten while
     * UCX may still read it.
     */
    p->nlat = ahead + 2;
    p->lat  = calloc(p->nlat, sizeof(*p->lat));
    if (p->lat == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_pipe_slots_create(p, p->lat, p->nlat);
    if (status != SVP_OK) {
        goto out_slots;
    }

    /* final latents this rank finishes for others (spread placement) */
    next_final = -1;
    if (spec->pipeline.placement == SVP_PLACEMENT_SPREAD && !last && rank < n) {
        nfin   = SVP_PIPE_FINAL_SLOTS;
        status = svp_pipe_slots_create(p, p->fin, nfin);
        if (status != SVP_OK) {
            goto out_slots;
        }
        next_final = rank;
        for (f = rank, i = 0; f < n && i < nfin; f += world, ++i) {
            status = svp_pipe_post_recv(p, &p->fin[i], base + world - 1,
                                        SVP_PIPE_KIND_FINAL, p->idx[f], spec->steps);
            if (status != SVP_OK) {
                goto out_slots;
            }
        }
    }

    /*
     * Encoding (spread): sample i is encoded by rank i mod W, which sends it
     * to rank 0.  Rank r encodes sample i before it waits for its own sample
     * i - r - 1: in the fill it is idle anyway, and later the encoded sample
     * reaches rank 0 about one sample before rank 0 needs it.
     */
    if (!first && svp_pipe_encoder(p, rank) == rank && rank < n) {
        nenc   = SVP_PIPE_ENC_SLOTS;
        status = svp_pipe_slots_create(p, p->enc, nenc);
        if (status != SVP_OK) {
            goto out_slots;
        }
        next_enc = rank;
    }

    /* post the first receives before any compute: pipeline fill */
    for (i = 0; i < SVP_MIN(ahead, n); ++i) {
        if (!first) {
            status = svp_pipe_post_recv(p, &p->lat[i % p->nlat], base + rank - 1,
                                        SVP_PIPE_KIND_LATENT, p->idx[i], p->range.begin);
        } else if (svp_pipe_encoder(p, i) != 0) {
            status = svp_pipe_post_recv(p, &p->lat[i % p->nlat],
                                        base + svp_pipe_encoder(p, i),
                                        SVP_PIPE_KIND_INIT, p->idx[i], 0);
        }
        if (status != SVP_OK) {
            goto out_slots;
        }
    }

    for (i = 0; i < n; ++i) {
        while (next_enc >= 0 && next_enc < n && next_enc <= i + rank + 1) {
            status = svp_pipe_encode_for_rank0(p, next_enc);
            if (status != SVP_OK) {
                goto out_slots;
            }
            next_enc += world;
        }
        slot = &p->lat[i % p->nlat];
        t0   = svp_clock_now();
        /* the first input is due after the fill: rank r waits for r stages
         * (and the first encode); later ones about one stage */
        timeout = svp_pipe_deadline_wait(&p->dl, (i == 0) ? rank : 1, i == 0);
        if (first) {
            status = svp_pipe_settle(p, slot, timeout);
            if (status == SVP_OK && svp_pipe_encoder(p, i) == 0) {
                status = svp_pipe_begin(p, slot, p->idx[i], &s);
            } else if (status == SVP_OK) {
                svp_info("recv encoded sample %d from rank %d (waited %.3fs)", p->idx[i],
                         base + svp_pipe_encoder(p, i), svp_clock_now() - t0);
                status = svp_pipe_view(p, slot, p->idx[i], &s);
                s.next_step = 0;
            }
            /* keep the encoded samples of the next 'ahead' coming */
            if (status == SVP_OK && i + ahead < n && svp_pipe_encoder(p, i + ahead) != 0) {
                status = svp_pipe_post_recv(p, &p->lat[(i + ahead) % p->nlat],
                                            base + svp_pipe_encoder(p, i + ahead),
                                            SVP_PIPE_KIND_INIT, p->idx[i + ahead], 0);
            }
        } else {
            status = svp_pipe_settle(p, slot, timeout);
            if (status == SVP_OK) {
                svp_info("recv sample %d step %d from rank %d (%zu bytes, waited "
                         "%.3fs)", p->idx[i], p->range.begin, base + rank - 1,
                         svp_comm_frame_length(slot->frame), svp_clock_now() - t0);
                status = svp_pipe_view(p, slot, p->idx[i], &s);
                s.next_step = p->range.begin;
            }
            /* keep 'ahead' receives posted while this sample computes */
            if (status == SVP_OK && i + ahead < n) {
                status = svp_pipe_post_recv(p, &p->lat[(i + ahead) % p->nlat],
                                            base + rank - 1, SVP_PIPE_KIND_LATENT,
                                            p->idx[i + ahead], p->range.begin);
            }
        }
        if (status != SVP_OK) {
            goto out_slots;
        }
        svp_stop_progress(p->stats.samples_done, 1);

        status = svp_pipe_steps(p, &s);
        if (status == SVP_OK) {
            if (!last) {
                status = svp_pipe_send(p, slot, base + rank + 1, SVP_PIPE_KIND_LATENT, &s);
            } else if (svp_pipe_finisher(p, i) == rank) {
                status = svp_pipe_finish(p, &s);
            } else {
                status = svp_pipe_send(p, slot, base + svp_pipe_finisher(p, i),
                                       SVP_PIPE_KIND_FINAL, &s);
            }
        }
        svp_sample_cleanup(&s);
        if (status != SVP_OK) {
            goto out_slots;
        }
        p->stats.samples_done++;
        svp_stop_progress(p->stats.samples_done, 0);

        /*
         * Finish the final latents that have arrived by now: sample f left
         * the last rank about (W - 1 - rank) samples after this rank handled
         * it; one more sample of slack means the wait is normally zero.
         */
        while (next_final >= 0 && next_final < n && i >= next_final + world - rank) {
            status = svp_pipe_final(p, next_final);
            if (status != SVP_OK) {
                goto out_slots;
            }
            next_final += world;
        }
    }
    while (next_final >= 0 && next_final < n) {
        status = svp_pipe_final(p, next_final);
        if (status != SVP_OK) {
            goto out_slots;
        }
        next_final += world;
    }
    for (i = 0; i < p->nlat; ++i) {
        status = svp_pipe_settle(p, &p->lat[i], -1.0);
        if (status != SVP_OK) {
            goto out_slots;
        }
    }
    for (i = 0; i < nenc; ++i) {
        status = svp_pipe_settle(p, &p->enc[i], -1.0);
        if (status != SVP_OK) {
            goto out_slots;
        }
    }

out_slots:
    svp_pipe_slots_destroy(p, p->enc, nenc);
    svp_pipe_slots_destroy(p, p->fin, nfin);
    svp_pipe_slots_destroy(p, p->lat, p->nlat);
    free(p->lat);
    p->lat = NULL;
    return status;
}

int svp_pipe_due_steps(const svp_steps_layout_t *layout, int j)
{
    return (layout->stage + j) * (layout->range.end - layout->range.begin);
}

static int svp_pipe_nsamples(const svp_pipe_params_t *params)
{
    return (params->samples != NULL) ? params->nsamples : params->spec->samples;
}

/* This group's share of the job's sample list: positions g, g + G, ... */
static svp_status_t svp_pipe_deal(svp_pipe_t *p)
{
    const svp_pipe_params_t *pp = p->params;
    int                      total = svp_pipe_nsamples(pp), j, g = p->layout.group;
    int                      G = p->layout.groups;

    p->n   = (total > g) ? (total - g + G - 1) / G : 0;
    p->idx = malloc((size_t)SVP_MAX(1, p->n) * sizeof(*p->idx));
    if (p->idx == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (j = 0; j < p->n; ++j) {
        p->idx[j] = (pp->samples != NULL) ? pp->samples[g + j * G] : g + j * G;
    }
    return SVP_OK;
}

svp_status_t svp_pipe_run(const svp_pipe_params_t *params, svp_pipe_stats_t *stats_p)
{
    const svp_spec_t *spec = params->spec;
    svp_pipe_t        p;
    char              err[512];
    svp_status_t      status;
    int               i;

    memset(&p, 0, sizeof(p));
    p.params      = params;
    p.stats.rank  = params->rank;
    p.stats.world = params->world;

    status = svp_steps_layout(spec->steps, params->world, spec->pipeline.stages,
                              params->rank, err, sizeof(err), &p.layout);
    if (status != SVP_OK) {
        svp_error("%s", err);
        return status;
    }
    p.range  = p.layout.range;
    p.srank  = p.layout.stage;
    p.sworld = p.layout.stages;
    p.base   = p.layout.first;
    svp_pipe_deadline_init(&p.dl, spec, p.sworld);
    status   = svp_pipe_deal(&p);
    if (status != SVP_OK) {
        return status;
    }
    if (params->rank == 0) {
        svp_info("%d pipeline%s x %d stage%s (%d ranks), %d steps: %d per stage, "
                 "%d samples", p.layout.groups, (p.layout.groups == 1) ? "" : "s",
                 p.sworld, (p.sworld == 1) ? "" : "s", params->world, spec->steps,
                 spec->steps / p.sworld, svp_pipe_nsamples(params));
    }
    svp_info("rank %d of %d runs steps [%d, %d) of %d for %d samples (%s model, "
             "placement %s, pipeline %d of %d, stage %d of %d)", params->rank,
             params->world, p.range.begin, p.range.end, spec->steps, p.n,
             params->stage.ops->name, svp_spec_placement_name(spec->pipeline.placement),
             p.layout.group, p.layout.groups, p.srank, p.sworld);

    p.t_start = svp_clock_now();
    for (i = 0; i < p.n; ++i) {
        p.to_finish += (p.sworld == 1 || svp_pipe_finisher(&p, i) == p.srank);
    }
    if (p.sworld == 1) {
        status = svp_pipe_run_single(&p);
    } else {
        status = svp_pipe_run_multi(&p);
    }
    p.stats.wall = svp_clock_now() - p.t_start;
    free(p.idx);
    if (status != SVP_OK) {
        if (p.layout.groups > 1) {
            svp_error("pipeline %d of %d (ranks %d-%d) stops: %s", p.layout.group,
                      p.layout.groups, p.base, p.base + p.sworld - 1,
                      svp_status_string(status));
        }
        return status;
    }

    svp_info("summary: %d samples (%d finished here), %d steps in %.3fs: busy %.3fs (%.0f%%), waiting for "
             "input %.3fs, waiting for sends %.3fs, pipeline %d: %.3f samples/s, "
             "job: %.3f samples/s",
             p.stats.samples_done, p.finished, p.stats.steps_done, p.stats.wall,
             p.stats.busy,
             (p.stats.wall > 0) ? 100.0 * p.stats.busy / p.stats.wall : 0.0,
             p.stats.wait_recv, p.stats.wait_send, p.layout.group,
             (p.stats.wall > 0) ? p.n / p.stats.wall : 0.0,
             (p.stats.wall > 0) ? svp_pipe_nsamples(params) / p.stats.wall : 0.0);
    if (stats_p != NULL) {
        *stats_p = p.stats;
    }
    return SVP_OK;
}
