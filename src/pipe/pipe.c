/*
 * The executor (pipe.h): deals the job's samples to this rank's pipeline,
 * walks the schedule's actions for this rank (schedule.h) in one loop with
 * one switch (post, wait, begin, steps, send, finish, pair steps, drop),
 * runs the stage's callbacks for each, and keeps the progress lines, the
 * summary and the stop report's figures.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/pipe.h"
#include "pipe/deadline.h"
#include "pipe/schedule.h"
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

/* The schedule's message kinds go on the wire as the comm's kinds. */
_Static_assert((int)SVP_SCHEDULE_MSG_LATENT == (int)SVP_COMM_KIND_LATENT,
               "the latent message is the comm's latent kind");
_Static_assert(SVP_SCHEDULE_MSG_SHARE <= SVP_COMM_MAX_KIND, "kinds fit the tag");

/* A frame and the one request that uses it (a slot of the schedule). */
typedef struct {
    svp_comm_frame_h frame;
    svp_comm_req_h   req;
    int              is_send;
    int              sample;
} svp_pipe_slot_t;

svp_status_t svp_sample_write_tensor(const svp_spec_t *spec, const svp_sample_t *sample,
                                     const char *name, const svp_tensor_t *tensor,
                                     const char *model, const char *params,
                                     const char *path)
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
        if (params != NULL) {
            svp_safetensors_writer_add_metadata(w, "params", params);
        }
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
    double                   t_told;        /* last progress line at info */
    int                      finished;      /* samples finished here */
    int                      to_finish;     /* samples this rank finishes */
    svp_schedule_params_t    sched;         /* the group's schedule */
    svp_comm_frame_desc_t    desc;
    svp_pipe_slot_t         *slots;         /* the schedule's slots */
    int                      nslots;
    svp_pipe_deadline_t      dl;            /* receive timeouts */
    svp_comm_mem_type_t      frame_mem;     /* where the frames live */
    int                      pairs;         /* C: ranks per position */
    int                      lane;          /* this rank's guidance half */
    svp_comm_frame_h         half_send;     /* C = 2: the step's halves */
    svp_comm_frame_h         half_recv;
    double                   t_exchange;    /* seconds in the exchanges */
    svp_comm_frame_h         fin_frame;     /* a shared finish's message */
    size_t                   fin_bytes;
} svp_pipe_t;

/* The rank of position pos of the group, in this rank's lane. */
static int svp_pipe_peer(const svp_pipe_t *p, int pos)
{
    return p->base + pos * p->pairs + p->lane;
}

/*
 * This rank's steps of the sample: the stage's step, or with pair (this
 * lane's half of a guidance pair) its step_pair, which exchanges the halves.
 */
static svp_status_t svp_pipe_steps(svp_pipe_t *p, svp_sample_t *s,
                                   const svp_stage_pair_t *pair)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_status_t       status;
    double             t0, dt, sum = 0, tmin = 1e30, tmax = 0;
    int                step;
    char               half[32] = "";

    if (s->next_step != p->range.begin) {
        svp_error("sample %d arrived at step %d, this rank runs [%d, %d)", s->index,
                  s->next_step, p->range.begin, p->range.end);
        return SVP_ERR_MESSAGE;
    }
    if (pair != NULL) {
        snprintf(half, sizeof(half), " (guidance half %d)", pair->lane);
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
        status = (pair == NULL) ? stage->ops->step(stage->self, s, step) :
                                  stage->ops->step_pair(stage->self, s, step, pair);
        if (status != SVP_OK) {
            svp_log_failure(status, "sample %d step %d%s failed: %s", s->index, step, half,
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
        svp_debug("sample %d step %d/%d%s %.1f ms", s->index, step + 1,
                  p->params->spec->steps, half, dt * 1e3);
    }
    svp_debug("sample %d: steps [%d, %d) in %.3fs, per step %.1f/%.1f/%.1f ms "
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
    /*
     * A line per sample at info is what made a 20,000-sample job's log
     * 280,000 lines: at info a rank says so at every percent of its share
     * (every sample up to 100), at its end and at least every 30 s; the
     * others are debug.
     */
    if (done == n || done % SVP_MAX(1, n / 100) == 0 || now - p->t_told >= 30) {
        p->t_told = now;
        svp_info("sample %d done in %.2fs (%d/%d, %.0f%%), elapsed %s, eta %s",
                 s->index, now - s->t_begin, done, n, 100.0 * done / n,
                 svp_clock_format_duration(el, b1, sizeof(b1)),
                 svp_clock_format_duration(eta, b2, sizeof(b2)));
    } else {
        svp_debug("sample %d done in %.2fs (%d/%d, %.0f%%), elapsed %s, eta %s",
                  s->index, now - s->t_begin, done, n, 100.0 * done / n,
                  svp_clock_format_duration(el, b1, sizeof(b1)),
                  svp_clock_format_duration(eta, b2, sizeof(b2)));
    }
}

/* ---- the executor ---------------------------------------------------- */

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

/* The step a message of this kind carries the sample at. */
static int svp_pipe_msg_step(const svp_pipe_t *p, svp_schedule_msg_t msg)
{
    return (msg == SVP_SCHEDULE_MSG_LATENT) ? p->range.begin :
           (msg == SVP_SCHEDULE_MSG_INIT) ? 0 : p->params->spec->steps;
}

static svp_status_t svp_pipe_post_recv(svp_pipe_t *p, const svp_schedule_action_t *a)
{
    svp_pipe_slot_t *slot = &p->slots[a->slot];
    svp_status_t     status;

    status = svp_pipe_settle(p, slot, -1.0);  /* the frame's last send */
    if (status != SVP_OK) {
        return status;
    }
    slot->is_send = 0;
    slot->sample  = p->idx[a->j];
    return svp_comm_irecv(p->params->comm, svp_pipe_peer(p, a->peer), (unsigned)a->msg,
                          (unsigned)p->idx[a->j], (unsigned)svp_pipe_msg_step(p, a->msg),
                          slot->frame, &slot->req);
}

static svp_status_t svp_pipe_send(svp_pipe_t *p, const svp_schedule_action_t *a,
                                  const svp_sample_t *s)
{
    svp_pipe_slot_t *slot  = &p->slots[a->slot];
    size_t           bytes = svp_comm_frame_length(slot->frame);
    int              peer  = svp_pipe_peer(p, a->peer);

    svp_debug("send sample %d step %d to rank %d (%s, %zu bytes)", s->index,
             s->next_step, peer,
             (a->msg == SVP_SCHEDULE_MSG_FINAL) ? "final" :
             (a->msg == SVP_SCHEDULE_MSG_INIT) ? "encoded" : "latent", bytes);
    slot->is_send = 1;
    slot->sample  = s->index;
    return svp_comm_isend(p->params->comm, peer, (unsigned)a->msg, (unsigned)s->index,
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

/*
 * A wait of the schedule: for a receive (the sample is then a view of the
 * slot's frame) or for the slot's last send, bounded by its due time.
 */
static svp_status_t svp_pipe_wait(svp_pipe_t *p, const svp_schedule_action_t *a,
                                  svp_sample_t *s)
{
    svp_pipe_slot_t *slot = &p->slots[a->slot];
    double           t0   = svp_clock_now(), timeout = -1.0;
    svp_status_t     status;

    if (a->due_stages >= 0) {
        timeout = svp_pipe_deadline_wait(&p->dl, a->due_stages, a->due_first);
    }
    status = svp_pipe_settle(p, slot, timeout);
    if (status != SVP_OK || a->msg == SVP_SCHEDULE_MSG_NONE) {
        return status;
    }
    if (a->msg == SVP_SCHEDULE_MSG_INIT) {
        svp_debug("recv encoded sample %d from rank %d (waited %.3fs)", p->idx[a->j],
                 svp_pipe_peer(p, a->peer), svp_clock_now() - t0);
    } else if (a->msg == SVP_SCHEDULE_MSG_LATENT) {
        svp_debug("recv sample %d step %d from rank %d (%zu bytes, waited "
                 "%.3fs)", p->idx[a->j], p->range.begin, svp_pipe_peer(p, a->peer),
                 svp_comm_frame_length(slot->frame), svp_clock_now() - t0);
    } else {
        svp_debug("recv final sample %d from rank %d", p->idx[a->j],
                  svp_pipe_peer(p, a->peer));
    }
    status = svp_pipe_view(p, slot, p->idx[a->j], s);
    if (status == SVP_OK) {
        s->next_step = svp_pipe_msg_step(p, a->msg);
    }
    return status;
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

/* Cancels what is pending (on failure) and frees the frames. */
static void svp_pipe_slots_destroy(svp_pipe_t *p)
{
    int i;

    for (i = 0; i < p->nslots; ++i) {
        if (p->slots[i].req != NULL) {
            svp_comm_cancel(p->params->comm, p->slots[i].req);
            p->slots[i].req = NULL;
        }
        svp_comm_frame_destroy(p->slots[i].frame);
        p->slots[i].frame = NULL;
    }
    free(p->slots);
    p->slots  = NULL;
    p->nslots = 0;
}

/*
 * The frames of the schedule's slots (none on one rank).  A sample's
 * tensors are views into its frame: it is received into the frame, computed
 * on in place and sent from it, so a latent is never copied on its way
 * through a rank.
 */
static svp_status_t svp_pipe_slots_create(svp_pipe_t *p, const svp_schedule_slots_t *slots)
{
    const svp_pipe_params_t *pp = p->params;
    svp_schedule_slots_t     ns = *slots;
    svp_status_t             status;
    int                      i;

    if (ns.total == 0) {
        return SVP_OK;
    }
    if (pp->comm == NULL) {
        svp_error("internal: a %d-rank pipeline without a communication layer", p->sworld);
        return SVP_ERR_INTERNAL;
    }
    status = svp_pipe_layout(p);
    if (status != SVP_OK) {
        return status;
    }
    /* a stage that computes on a device keeps a sample's frame there from
     * rank to rank; how it crosses is the comm's (comm.gpu_direct) */
    p->frame_mem = (pp->stage.devmem != NULL) ? SVP_COMM_MEM_CUDA : SVP_COMM_MEM_HOST;
    p->slots     = calloc((size_t)ns.total, sizeof(*p->slots));
    if (p->slots == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < ns.total; ++i) {
        p->slots[i].sample = -1;
        status = svp_comm_frame_create(pp->comm, &p->desc, NULL, 0, p->frame_mem,
                                       &p->slots[i].frame);
        p->nslots += (status == SVP_OK);
        if (status != SVP_OK) {
            svp_pipe_slots_destroy(p);
            return status;
        }
    }
    return SVP_OK;
}

/*
 * An encode's or a decode's time at debug level, in the form `svdlaunch plan
 * --from-log` reads beside the step lines: the planner then costs the
 * schedule with what the tasks took here, outputs written included.
 */
static void svp_pipe_cost(const char *kind, int sample, double seconds)
{
    svp_debug("svp-cost kind=%s sample=%d s=%.6f", kind, sample, seconds);
}

/*
 * The stage's begin() of a sample: into the slot's frame (the sample then
 * travels in it), or, without a slot (one rank), in the stage's own memory.
 */
static svp_status_t svp_pipe_begin(svp_pipe_t *p, const svp_schedule_action_t *a,
                                   svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_sample_t       own;
    svp_status_t       status;
    double             t0 = svp_clock_now();
    int                i  = p->idx[a->j];

    memset(s, 0, sizeof(*s));
    if (a->slot < 0) {
        s->t_begin = t0;
        svp_stop_progress(p->finished, 1);
        status = stage->ops->begin(stage->self, i, s);
        goto out;
    }
    memset(&own, 0, sizeof(own));
    status = stage->ops->begin(stage->self, i, &own);
    if (status != SVP_OK) {
        svp_sample_cleanup(&own);
        return status;
    }
    status = svp_pipe_view(p, &p->slots[a->slot], i, s);
    if (status == SVP_OK) {
        status = svp_stage_sample_copy(stage, s, &own);   /* into the frame */
        if (status != SVP_OK) {
            svp_sample_cleanup(s);
        }
    }
    svp_sample_cleanup(&own);
out:
    p->stats.busy += svp_clock_now() - t0;
    if (status == SVP_OK) {
        svp_pipe_cost("encode", i, svp_clock_now() - t0);
    }
    svp_trace_event(p->params->trace, "begin", i, -1,
                    svp_trace_now_us() - (svp_clock_now() - t0) * 1e6,
                    svp_trace_now_us());
    return status;
}

/* The frame of a shared finish's message (svp_stage_finish_pair_t). */
static void *svp_pipe_fin_buffer(void *ctx, size_t bytes)
{
    svp_pipe_t           *p = ctx;
    svp_comm_frame_desc_t desc;

    if (p->fin_frame != NULL && p->fin_bytes == bytes) {
        return svp_comm_frame_data(p->fin_frame, 0);
    }
    svp_comm_frame_destroy(p->fin_frame);
    p->fin_frame = NULL;
    memset(&desc, 0, sizeof(desc));
    desc.num_tensors = 1;
    desc.tensors[0]  = (svp_comm_tensor_desc_t){
        .dtype = SVP_DTYPE_U8, .ndim = 1, .shape = {(int64_t)bytes}, .bytes = bytes};
    if (svp_comm_frame_create(p->params->comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                              &p->fin_frame) != SVP_OK) {
        p->fin_frame = NULL;
        return NULL;
    }
    p->fin_bytes = bytes;
    return svp_comm_frame_data(p->fin_frame, 0);
}

/* Lane 1 sends its share of the finish to lane 0, which receives it. */
static svp_status_t svp_pipe_fin_transfer(void *ctx, int sample)
{
    svp_pipe_t    *p     = ctx;
    int            other = p->base + p->srank * p->pairs + (1 - p->lane);
    svp_comm_req_h req   = NULL;
    svp_status_t   status;

    if (p->lane == 1) {
        status = svp_comm_isend(p->params->comm, other, SVP_SCHEDULE_MSG_SHARE,
                                (unsigned)sample, (unsigned)p->params->spec->steps,
                                p->fin_frame, &req);
    } else {
        status = svp_comm_irecv(p->params->comm, other, SVP_SCHEDULE_MSG_SHARE,
                                (unsigned)sample, (unsigned)p->params->spec->steps,
                                p->fin_frame, &req);
    }
    if (status == SVP_OK) {
        status = svp_comm_wait(p->params->comm, req, svp_pipe_deadline_wait(&p->dl, 0, 0));
    }
    if (status != SVP_OK) {
        svp_log_failure(status, "sample %d: the shared decode %s rank %d failed: %s", sample,
                  (p->lane == 1) ? "to" : "from", other, svp_status_string(status));
    } else {
        svp_debug("sample %d: a share of the decode %s rank %d (%zu bytes)", sample,
                  (p->lane == 1) ? "sent to" : "received from", other, p->fin_bytes);
    }
    return status;
}

static svp_status_t svp_pipe_finish(svp_pipe_t *p, const svp_schedule_action_t *a,
                                    svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_stage_finish_pair_t fp, *pair = NULL;
    svp_sample_t       host;
    svp_status_t       status;
    double             t0 = svp_clock_now();

    if (a->peer >= 0 && p->pairs > 1) {
        if (stage->ops->finish_pair == NULL && p->lane > 0) {
            return SVP_OK;           /* lane 0 finishes alone */
        }
        if (stage->ops->finish_pair != NULL) {
            fp   = (svp_stage_finish_pair_t){.lane = p->lane, .buffer = svp_pipe_fin_buffer,
                                             .transfer = svp_pipe_fin_transfer, .ctx = p};
            pair = &fp;
        }
    }

    if (s->on_device) {
        /* finish() (decode, outputs) takes host tensors */
        memset(&host, 0, sizeof(host));
        status = stage->ops->alloc(stage->self, s->index, &host);
        if (status == SVP_OK) {
            status = svp_stage_sample_copy(stage, &host, s);
        }
        if (status == SVP_OK) {
            status = (pair != NULL) ? stage->ops->finish_pair(stage->self, &host, pair)
                                    : stage->ops->finish(stage->self, &host);
        }
        svp_sample_cleanup(&host);
    } else {
        status = (pair != NULL) ? stage->ops->finish_pair(stage->self, s, pair)
                                : stage->ops->finish(stage->self, s);
    }
    if (status != SVP_OK) {
        if (a->slot >= 0) {
            svp_log_failure(status, "finishing sample %d failed: %s", s->index,
                      svp_status_string(status));
        }
        return status;
    }
    p->stats.busy += svp_clock_now() - t0;
    svp_pipe_cost("decode", s->index, svp_clock_now() - t0);
    svp_trace_event(p->params->trace, "finish", s->index, -1,
                    svp_trace_now_us() - (svp_clock_now() - t0) * 1e6,
                    svp_trace_now_us());
    if (p->lane == 0) {
        svp_pipe_progress(p, s);
    }
    return SVP_OK;
}

/*
 * The exchange of a pair's step (svp_stage_pair_t.exchange): this lane's
 * half to the other rank of the pair, its half back, one message each way
 * through the comm's frames.  The other rank runs the same step at the same
 * time, so the wait is bounded by comm.deadline alone; a rank of the pair
 * that dies is the other's ring neighbour, which the liveness watch names
 * within seconds.
 */
static svp_status_t svp_pipe_exchange(void *ctx, int sample, int step)
{
    svp_pipe_t    *p     = ctx;
    int            other = p->base + p->srank * p->pairs + (1 - p->lane);
    svp_comm_req_h rreq  = NULL, sreq = NULL;
    svp_status_t   status, st2;
    double         t0 = svp_clock_now();

    status = svp_comm_irecv(p->params->comm, other, SVP_SCHEDULE_MSG_HALF,
                            (unsigned)sample, (unsigned)step, p->half_recv, &rreq);
    if (status == SVP_OK) {
        status = svp_comm_isend(p->params->comm, other, SVP_SCHEDULE_MSG_HALF,
                                (unsigned)sample, (unsigned)step, p->half_send, &sreq);
    }
    if (status == SVP_OK) {
        status = svp_comm_wait(p->params->comm, rreq, svp_pipe_deadline_wait(&p->dl, 0, 0));
        rreq   = NULL;
    }
    if (sreq != NULL) {
        st2    = svp_comm_wait(p->params->comm, sreq, (status == SVP_OK) ? -1.0 : 0.0);
        status = (status == SVP_OK) ? st2 : status;
    }
    if (rreq != NULL) {
        svp_comm_cancel(p->params->comm, rreq);
    }
    if (status != SVP_OK) {
        svp_log_failure(status, "sample %d step %d: the guidance exchange with rank %d failed: %s",
                  sample, step, other, svp_status_string(status));
    }
    p->t_exchange += svp_clock_now() - t0;
    return status;
}

/* The frames of a pair's halves: the sample's latents' layout (tensor 0). */
static svp_status_t svp_pipe_pair_create(svp_pipe_t *p)
{
    svp_comm_frame_desc_t desc;
    svp_status_t          status;

    if (p->pairs < 2) {
        return SVP_OK;
    }
    if (p->params->stage.ops->step_pair == NULL || p->params->comm == NULL) {
        svp_error("pipeline.guidance_parallel: 2: the %s model has no guidance "
                  "halves", p->params->stage.ops->name);
        return SVP_ERR_SPEC;
    }
    status = svp_pipe_layout(p);
    if (status != SVP_OK) {
        return status;
    }
    memset(&desc, 0, sizeof(desc));
    desc.num_tensors = 1;
    desc.tensors[0]  = p->desc.tensors[0];
    status = svp_comm_frame_create(p->params->comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                   &p->half_send);
    if (status == SVP_OK) {
        status = svp_comm_frame_create(p->params->comm, &desc, NULL, 0,
                                       SVP_COMM_MEM_HOST, &p->half_recv);
    }
    return status;
}

/* This rank's steps of the sample as its lane's half of the pair. */
static svp_status_t svp_pipe_pair_steps(svp_pipe_t *p, svp_sample_t *s)
{
    svp_stage_pair_t pair;

    memset(&pair, 0, sizeof(pair));
    pair.lane     = p->lane;
    pair.send     = svp_comm_frame_data(p->half_send, 0);
    pair.recv     = svp_comm_frame_data(p->half_recv, 0);
    pair.bytes    = p->desc.tensors[0].bytes;
    pair.exchange = svp_pipe_exchange;
    pair.ctx      = p;
    return svp_pipe_steps(p, s, &pair);
}

/*
 * Runs this rank's list of the schedule (pipe/schedule.h), action by action;
 * one rank's list has no slots and no messages.  The sample being worked on
 * is s: a wait for a receive, or a begin, makes it; a send or a finish ends
 * it.
 */
static svp_status_t svp_pipe_execute(svp_pipe_t *p)
{
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *a;
    svp_sample_t                 s;
    svp_status_t                 status;

    memset(&s, 0, sizeof(s));
    status = svp_schedule_iter_init_lane(&it, &p->sched, p->srank, p->lane);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_pipe_slots_create(p, &it.slots);
    if (status == SVP_OK) {
        status = svp_pipe_pair_create(p);
    }
    while (status == SVP_OK && (a = svp_schedule_iter_next(&it)) != NULL) {
        switch (a->kind) {
        case SVP_SCHEDULE_POST_RECV:
            status = svp_pipe_post_recv(p, a);
            break;
        case SVP_SCHEDULE_WAIT:
            status = svp_pipe_wait(p, a, &s);
            break;
        case SVP_SCHEDULE_BEGIN:
            status = svp_pipe_begin(p, a, &s);
            break;
        case SVP_SCHEDULE_STEPS:
            svp_stop_progress(p->finished, 1);
            status = svp_pipe_steps(p, &s, NULL);
            break;
        case SVP_SCHEDULE_SEND:
            status = svp_pipe_send(p, a, &s);
            svp_sample_cleanup(&s);
            break;
        case SVP_SCHEDULE_FINISH:
            status = svp_pipe_finish(p, a, &s);
            svp_sample_cleanup(&s);
            break;
        case SVP_SCHEDULE_PAIR_STEPS:
            svp_stop_progress(p->finished, 1);
            status = svp_pipe_pair_steps(p, &s);
            break;
        case SVP_SCHEDULE_DROP:
            svp_debug("sample %d: its outputs are rank %d's", s.index,
                      p->base + p->srank * p->pairs);
            svp_sample_cleanup(&s);
            break;
        }
        if (status == SVP_OK && a->chain) {
            p->stats.samples_done++;
            svp_stop_progress(p->finished, 0);
        }
    }
    svp_sample_cleanup(&s);
    svp_pipe_slots_destroy(p);
    svp_comm_frame_destroy(p->half_send);
    svp_comm_frame_destroy(p->half_recv);
    svp_comm_frame_destroy(p->fin_frame);
    p->half_send = NULL;
    p->half_recv = NULL;
    p->fin_frame = NULL;
    return status;
}



static int svp_pipe_nsamples(const svp_pipe_params_t *params)
{
    return (params->samples != NULL) ? params->nsamples : params->spec->samples;
}

/* This group's share of the job's sample list: positions g, g + G, ... */
static svp_status_t svp_pipe_deal(svp_pipe_t *p)
{
    const svp_pipe_params_t *pp    = p->params;
    svp_schedule_layout_t    l     = { pp->spec->pipeline.placement, p->layout.groups,
                                       p->layout.stages, p->layout.pairs };
    int                      total = svp_pipe_nsamples(pp), k, g, j, n = 0;

    /* this group's samples, dealt by the schedule's rule (svp_schedule_deal) */
    p->idx = malloc((size_t)SVP_MAX(1, total) * sizeof(*p->idx));
    if (p->idx == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (k = 0; k < total; ++k) {
        svp_schedule_deal(&l, k, &g, &j);
        if (g == p->layout.group) {
            p->idx[j] = (pp->samples != NULL) ? pp->samples[k] : k;
            n         = j + 1;
        }
    }
    p->n = n;
    return SVP_OK;
}

svp_status_t svp_pipe_run(const svp_pipe_params_t *params, svp_pipe_stats_t *stats_p)
{
    const svp_spec_t *spec = params->spec;
    svp_pipe_t        p;
    char              err[512];
    svp_status_t      status;

    memset(&p, 0, sizeof(p));
    p.params      = params;
    p.stats.rank  = params->rank;
    p.stats.world = params->world;

    status = svp_steps_layout_pairs(spec->steps, params->world, spec->pipeline.stages,
                                    SVP_MAX(1, spec->pipeline.guidance_parallel),
                                    params->rank, err, sizeof(err), &p.layout);
    if (status != SVP_OK) {
        svp_error("%s", err);
        return status;
    }
    p.range  = p.layout.range;
    p.srank  = p.layout.stage;
    p.sworld = p.layout.stages;
    p.base   = p.layout.first;
    p.pairs  = p.layout.pairs;
    p.lane   = p.layout.lane;
    svp_pipe_deadline_init(&p.dl, spec, p.sworld);
    status   = svp_pipe_deal(&p);
    if (status != SVP_OK) {
        return status;
    }
    if (params->rank == 0) {
        svp_info("%d pipeline%s x %d stage%s%s (%d ranks), %d steps: %d per stage, "
                 "%d samples", p.layout.groups, (p.layout.groups == 1) ? "" : "s",
                 p.sworld, (p.sworld == 1) ? "" : "s",
                 (p.pairs > 1) ? " x 2 guidance halves" : "", params->world, spec->steps,
                 spec->steps / p.sworld, svp_pipe_nsamples(params));
    }
    svp_info("rank %d of %d runs steps [%d, %d) of %d for %d samples (%s model, "
             "placement %s, pipeline %d of %d, stage %d of %d)", params->rank,
             params->world, p.range.begin, p.range.end, spec->steps, p.n,
             params->stage.ops->name, svp_spec_placement_name(spec->pipeline.placement),
             p.layout.group, p.layout.groups, p.srank, p.sworld);

    p.t_start = svp_clock_now();
    p.t_told  = p.t_start;
    p.sched.placement = spec->pipeline.placement;
    p.sched.stages    = p.sworld;
    p.sched.samples   = p.n;
    p.sched.inflight  = spec->comm.inflight;
    p.sched.pairs     = p.pairs;
    p.to_finish       = (p.lane > 0) ? 0 : svp_schedule_finishes(&p.sched, p.srank);
    status            = svp_pipe_execute(&p);
    p.stats.wall = svp_clock_now() - p.t_start;
    free(p.idx);
    if (status != SVP_OK) {
        if (p.layout.groups > 1) {
            svp_log_failure(status, "pipeline %d of %d (ranks %d-%d) stops: %s", p.layout.group,
                      p.layout.groups, p.base, p.base + p.sworld * p.pairs - 1,
                      svp_status_string(status));
        }
        return status;
    }

    /* the job's rate is not this rank's to say: its window ends before the
     * slowest rank's (the worker logs the job's, over the window all ranks
     * share) */
    svp_info("summary: %d samples (%d finished here), %d steps in %.3fs: busy %.3fs (%.0f%%), waiting for "
             "input %.3fs, waiting for sends %.3fs, pipeline %d: %.3f samples/s "
             "while this rank ran",
             p.stats.samples_done, p.finished, p.stats.steps_done, p.stats.wall,
             p.stats.busy,
             (p.stats.wall > 0) ? 100.0 * p.stats.busy / p.stats.wall : 0.0,
             p.stats.wait_recv, p.stats.wait_send, p.layout.group,
             (p.stats.wall > 0) ? p.n / p.stats.wall : 0.0);
    if (stats_p != NULL) {
        *stats_p = p.stats;
    }
    return SVP_OK;
}
