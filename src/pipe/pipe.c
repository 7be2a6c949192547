/*
 * The executor (pipe.h): deals the job's samples to this rank's pipeline,
 * walks the schedule's actions for this rank (schedule.h) in one loop with
 * one switch (post, wait, begin, steps, half, merge, send, share, finish,
 * drop): it posts, waits and sends what the actions name, runs the stage's
 * callbacks for the rest, and keeps the progress lines, the summary and
 * the stop report's figures.  It holds no protocol of its own.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/pipe.h"
#include "job/lease.h"
#include "pipe/deadline.h"
#include "pipe/schedule.h"
#include "common/stop.h"
#include "jobspec/layout.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    size_t           bytes; /* a half's or share's frame: its data's */
} svp_pipe_slot_t;

typedef struct {
    const svp_pipe_params_t *params;
    svp_layout_t             layout; /* the job's (G, S, C, k) */
    svp_layout_place_t       at;     /* this rank's group, position
                                               and lane in it */
    int                      n;      /* samples of this group */
    int                     *idx;    /* their indices, in order */
    svp_step_range_t         range;
    svp_pipe_stats_t         stats;
    double                   t_start;
    double                   t_told;    /* last progress line at info */
    int                      finished;  /* samples finished here */
    int                      to_finish; /* samples this rank finishes */
    svp_schedule_params_t    sched;     /* the group's schedule */
    svp_comm_frame_desc_t    desc;
    svp_pipe_slot_t         *slots; /* the schedule's slots */
    int                      nslots;
    svp_pipe_deadline_t      dl;        /* receive timeouts */
    svp_comm_mem_type_t      frame_mem; /* where the frames live */
    svp_schedule_slots_t     rings;     /* the slots' rings */
    double                   t_step;    /* pairs: the step's time so far */
} svp_pipe_t;

/* The rank of the action's peer (a position of the group, in a lane). */
static int svp_pipe_peer(const svp_pipe_t *p, const svp_schedule_action_t *a)
{
    return svp_layout_rank(&p->layout, p->at.group, a->peer, a->peer_lane);
}

/* A slot's frame's data (the one tensor of a half or share frame), and
 * its bytes; slot -1: none (NULL, 0). */
static void *svp_pipe_slot_data(const svp_pipe_t *p, int slot)
{
    return (slot >= 0) ? svp_comm_frame_data(p->slots[slot].frame, 0) : NULL;
}

static size_t svp_pipe_slot_bytes(const svp_pipe_t *p, int slot)
{
    return (slot >= 0) ? p->slots[slot].bytes : 0;
}

/*
 * One step's bookkeeping once it is done (seconds of work in it): the
 * deadline's figure, the counts, the trace and the debug line.
 */
static void svp_pipe_step_done(svp_pipe_t *p, svp_sample_t *s, int step, double dt)
{
    svp_pipe_deadline_step(&p->dl, dt);
    p->stats.busy += dt;
    p->stats.steps_done++;
    s->next_step = step + 1;
    svp_trace_event(p->params->trace, "step", s->index, step,
                    svp_trace_now_us() - dt * 1e6, svp_trace_now_us());
    svp_debug("sample %d step %d/%d%s %.1f ms", s->index, step + 1,
              p->params->spec->steps, (p->layout.pairs > 1) ? " (a pair's)" : "",
              dt * 1e3);
}

/* Before a step: a stop, hand-offs in flight go on, and a peer whose
 * teardown began gets its unmatched messages back (comm.h). */
static svp_status_t svp_pipe_step_check(svp_pipe_t *p, const svp_sample_t *s,
                                        int step)
{
    if (svp_stop_pending()) {
        return SVP_ERR_CANCELED;
    }
    if (step == p->range.begin && s->next_step != p->range.begin) {
        svp_error("sample %d arrived at step %d, this rank runs [%d, %d)", s->index,
                  s->next_step, p->range.begin, p->range.end);
        return SVP_ERR_MESSAGE;
    }
    if (p->params->comm != NULL) {
        svp_comm_progress(p->params->comm);
    }
    return SVP_OK;
}

/* This rank's steps of the sample (STEPS). */
static svp_status_t svp_pipe_steps(svp_pipe_t *p, svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_status_t       status;
    double             t0, dt, sum = 0;
    int                step;

    for (step = p->range.begin; step < p->range.end; ++step) {
        status = svp_pipe_step_check(p, s, step);
        if (status != SVP_OK) {
            return status;
        }
        t0     = svp_clock_now();
        status = stage->ops->step(stage->self, s, step);
        if (status != SVP_OK) {
            svp_log_failure(status, "sample %d step %d failed: %s", s->index, step,
                            svp_status_string(status));
            return status;
        }
        dt = svp_clock_now() - t0;
        sum += dt;
        svp_pipe_step_done(p, s, step, dt);
    }
    svp_debug("sample %d: steps [%d, %d) in %.3fs", s->index, p->range.begin,
              p->range.end, sum);
    return SVP_OK;
}

/*
 * A pair's step in its two parts (HALF, MERGE): this lane's half into the
 * slot's frame, which the schedule then sends; the step completed with the
 * other lane's, received into slot2.  The exchange between is the
 * schedule's; the step's time is the two parts'.
 */
static svp_status_t svp_pipe_half(svp_pipe_t *p, const svp_schedule_action_t *a,
                                  svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_status_t       status;
    double             t0;

    status = svp_pipe_step_check(p, s, a->step);
    if (status != SVP_OK) {
        return status;
    }
    t0        = svp_clock_now();
    status    = stage->ops->half(stage->self, s, a->step, p->at.lane,
                                 svp_pipe_slot_data(p, a->slot),
                                 svp_pipe_slot_bytes(p, a->slot));
    p->t_step = svp_clock_now() - t0;
    if (status != SVP_OK) {
        svp_log_failure(status, "sample %d step %d (guidance half %d) failed: %s",
                        s->index, a->step, p->at.lane, svp_status_string(status));
    }
    return status;
}

static svp_status_t svp_pipe_merge(svp_pipe_t *p, const svp_schedule_action_t *a,
                                   svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_status_t       status;
    double             t0 = svp_clock_now();

    status = stage->ops->merge(stage->self, s, a->step, p->at.lane,
                               svp_pipe_slot_data(p, a->slot),
                               svp_pipe_slot_data(p, a->slot2),
                               svp_pipe_slot_bytes(p, a->slot2));
    if (status != SVP_OK) {
        svp_log_failure(status, "sample %d step %d (guidance half %d) failed: %s",
                        s->index, a->step, p->at.lane, svp_status_string(status));
        return status;
    }
    svp_pipe_step_done(p, s, a->step, p->t_step + svp_clock_now() - t0);
    return SVP_OK;
}

static void svp_pipe_progress(svp_pipe_t *p, const svp_sample_t *s)
{
    int    n = p->to_finish, done = ++p->finished;
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

static svp_status_t svp_pipe_post_recv(svp_pipe_t *p, const svp_schedule_action_t *a)
{
    svp_pipe_slot_t *slot = &p->slots[a->slot];
    svp_status_t     status;

    status = svp_pipe_settle(p, slot, -1.0); /* the frame's last send */
    if (status != SVP_OK) {
        return status;
    }
    slot->is_send = 0;
    slot->sample  = p->idx[a->j];
    return svp_comm_irecv(p->params->comm, svp_pipe_peer(p, a), (unsigned)a->msg,
                          (unsigned)p->idx[a->j], (unsigned)a->step, slot->frame,
                          &slot->req);
}

static svp_status_t svp_pipe_send(svp_pipe_t *p, const svp_schedule_action_t *a,
                                  const svp_sample_t *s)
{
    svp_pipe_slot_t *slot  = &p->slots[a->slot];
    size_t           bytes = svp_comm_frame_length(slot->frame);
    int              peer  = svp_pipe_peer(p, a);
    int              step  = a->step; /* the message's tag (schedule.c) */

    /* a sample's message carries it where it stands: the schedule's tag and
     * the sample's own state agree, or the protocol is broken */
    if ((a->msg == SVP_SCHEDULE_MSG_LATENT || a->msg == SVP_SCHEDULE_MSG_INIT ||
         a->msg == SVP_SCHEDULE_MSG_FINAL) &&
        s->next_step != step) {
        svp_error("internal: sample %d stands at step %d, its %s to rank %d is "
                  "tagged %d",
                  s->index, s->next_step, svp_schedule_msg_name(a->msg), peer, step);
        return SVP_ERR_INTERNAL;
    }
    if (a->msg != SVP_SCHEDULE_MSG_HALF) {
        svp_debug("send sample %d step %d to rank %d (%s, %zu bytes)", s->index,
                  step, peer, svp_schedule_msg_name(a->msg), bytes);
    }
    slot->is_send = 1;
    slot->sample  = s->index;
    return svp_comm_isend(p->params->comm, peer, (unsigned)a->msg,
                          (unsigned)s->index, (unsigned)step, slot->frame,
                          &slot->req);
}

/* The sample's tensors as views into the slot's frame. */
static svp_status_t svp_pipe_view(svp_pipe_t *p, svp_pipe_slot_t *slot, int index,
                                  svp_sample_t *s)
{
    const svp_comm_frame_desc_t *d = &p->desc;
    svp_status_t                 status;
    unsigned                     i;

    memset(s, 0, sizeof(*s));
    s->index     = index;
    s->seed      = p->params->spec->seed;
    s->t_begin   = svp_clock_now(); /* times shown are this rank's */
    s->on_device = (p->frame_mem == SVP_COMM_MEM_CUDA);
    for (i = 0; i < d->num_tensors; ++i) {
        status =
            svp_tensor_wrap((svp_dtype_t)d->tensors[i].dtype,
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
    double           t0 = svp_clock_now(), timeout = -1.0;
    svp_status_t     status;

    if (a->due_stages >= 0) {
        timeout = svp_pipe_deadline_wait(&p->dl, a->due_stages, a->due_first);
    }
    status = svp_pipe_settle(p, slot, timeout);
    if (status != SVP_OK || a->msg == SVP_SCHEDULE_MSG_NONE) {
        return status;
    }
    if (svp_schedule_slot_frame(&p->rings, a->slot) != SVP_SCHEDULE_FRAME_SAMPLE) {
        /* a half or a share: its data stays in the slot's frame */
        if (a->msg == SVP_SCHEDULE_MSG_SHARE) {
            svp_debug(
                "sample %d: lane 1's share of the decode received from rank %d "
                "(%zu bytes)",
                p->idx[a->j], svp_pipe_peer(p, a), slot->bytes);
        }
        return SVP_OK;
    }
    if (a->msg == SVP_SCHEDULE_MSG_INIT) {
        svp_debug("recv encoded sample %d from rank %d (waited %.3fs)", p->idx[a->j],
                  svp_pipe_peer(p, a), svp_clock_now() - t0);
    } else if (a->msg == SVP_SCHEDULE_MSG_LATENT) {
        svp_debug("recv sample %d step %d from rank %d (%zu bytes, waited "
                  "%.3fs)",
                  p->idx[a->j], a->step, svp_pipe_peer(p, a),
                  svp_comm_frame_length(slot->frame), svp_clock_now() - t0);
    } else {
        svp_debug("recv final sample %d from rank %d", p->idx[a->j],
                  svp_pipe_peer(p, a));
    }
    status = svp_pipe_view(p, slot, p->idx[a->j], s);
    if (status == SVP_OK) {
        s->next_step = a->step;
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
                      "at most %d",
                      i, tmpl.tensors[i]->ndim, SVP_COMM_MAX_DIMS);
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
 * The frame of one slot (schedule.h svp_schedule_slot_frame): a sample's,
 * in the stage's device memory where it has one; a pair's half (the
 * latents' layout) or share (the stage's share_bytes()) in host memory.
 */
static svp_status_t svp_pipe_frame_create(svp_pipe_t *p, int slot,
                                          svp_comm_frame_h *frame_p, size_t *bytes_p)
{
    const svp_pipe_params_t *pp = p->params;
    svp_comm_frame_desc_t    desc;
    size_t                   bytes;

    memset(&desc, 0, sizeof(desc));
    desc.num_tensors = 1;
    switch (svp_schedule_slot_frame(&p->rings, slot)) {
    case SVP_SCHEDULE_FRAME_SAMPLE:
        *bytes_p = 0;
        return svp_comm_frame_create(pp->comm, &p->desc, NULL, 0, p->frame_mem,
                                     frame_p);
    case SVP_SCHEDULE_FRAME_HALF:
        desc.tensors[0] = p->desc.tensors[0];
        break;
    case SVP_SCHEDULE_FRAME_SHARE:
        bytes           = SVP_MAX(1, pp->stage.ops->share_bytes(pp->stage.self));
        desc.tensors[0] = (svp_comm_tensor_desc_t){.dtype = SVP_DTYPE_U8,
                                                   .ndim  = 1,
                                                   .shape = {(int64_t)bytes},
                                                   .bytes = bytes};
        break;
    }
    *bytes_p = desc.tensors[0].bytes;
    return svp_comm_frame_create(pp->comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                 frame_p);
}

/*
 * The frames of the schedule's slots (none on one rank).  A sample's
 * tensors are views into its frame: it is received into the frame, computed
 * on in place and sent from it, so a latent is never copied on its way
 * through a rank.
 */
static svp_status_t svp_pipe_slots_create(svp_pipe_t                 *p,
                                          const svp_schedule_slots_t *slots)
{
    const svp_pipe_params_t *pp = p->params;
    const svp_stage_ops_t   *so = pp->stage.ops;
    svp_status_t             status;
    int                      i;

    p->rings = *slots;
    if (p->layout.pairs > 1 &&
        (so->half == NULL || so->merge == NULL || so->share == NULL ||
         so->share_bytes == NULL || so->finish_shared == NULL)) {
        svp_error(
            "pipeline.guidance_parallel: 2: the %s model has no guidance halves",
            so->name);
        return SVP_ERR_SPEC;
    }
    if (slots->total == 0) {
        return SVP_OK;
    }
    if (pp->comm == NULL) {
        svp_error("internal: a %d-rank pipeline without a communication layer",
                  p->layout.stages * p->layout.pairs);
        return SVP_ERR_INTERNAL;
    }
    status = svp_pipe_layout(p);
    if (status != SVP_OK) {
        return status;
    }
    /* a stage that computes on a device keeps a sample's frame there from
     * rank to rank; how it crosses is the comm's (comm.gpu_direct) */
    p->frame_mem =
        (pp->stage.devmem != NULL) ? SVP_COMM_MEM_CUDA : SVP_COMM_MEM_HOST;
    p->slots = calloc((size_t)slots->total, sizeof(*p->slots));
    if (p->slots == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < slots->total; ++i) {
        p->slots[i].sample = -1;
        status = svp_pipe_frame_create(p, i, &p->slots[i].frame, &p->slots[i].bytes);
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
        status = svp_stage_sample_copy(stage, s, &own); /* into the frame */
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

/*
 * Calls a stage's finishing part, which takes host tensors: a sample on the
 * device goes through a host copy.  share: the SHARE part (out, bytes: its
 * message, or NULL), else the finish (theirs: lane 1's share, or NULL).
 */
static svp_status_t svp_pipe_finish_call(svp_pipe_t *p, svp_sample_t *s, int share,
                                         void *buf, size_t bytes)
{
    const svp_stage_t     *stage = &p->params->stage;
    const svp_stage_ops_t *so    = stage->ops;
    svp_sample_t           host, *x = s;
    svp_status_t           status = SVP_OK;

    memset(&host, 0, sizeof(host));
    if (s->on_device) {
        status = so->alloc(stage->self, s->index, &host);
        if (status == SVP_OK) {
            status = svp_stage_sample_copy(stage, &host, s);
        }
        x = &host;
    }
    if (status == SVP_OK) {
        status = share           ? so->share(stage->self, x, p->at.lane, buf, bytes)
                 : (buf != NULL) ? so->finish_shared(stage->self, x, buf, bytes)
                                 : so->finish(stage->self, x);
    }
    svp_sample_cleanup(&host);
    return status;
}

/* A pair's share of a shared finish (SHARE): lane 1's into its message. */
static svp_status_t svp_pipe_share(svp_pipe_t *p, const svp_schedule_action_t *a,
                                   svp_sample_t *s)
{
    svp_status_t status;
    double       t0 = svp_clock_now();

    status = svp_pipe_finish_call(p, s, 1, svp_pipe_slot_data(p, a->slot),
                                  svp_pipe_slot_bytes(p, a->slot));
    if (status != SVP_OK) {
        svp_log_failure(status, "sample %d: decoding lane %d's share failed: %s",
                        s->index, p->at.lane, svp_status_string(status));
        return status;
    }
    p->stats.busy += svp_clock_now() - t0;
    svp_pipe_cost("decode", s->index, svp_clock_now() - t0);
    return SVP_OK;
}

static svp_status_t svp_pipe_finish(svp_pipe_t *p, const svp_schedule_action_t *a,
                                    svp_sample_t *s)
{
    svp_status_t status;
    double       t0 = svp_clock_now();

    /* after a gap (a suspended job), output.dir may be another job's now:
     * nothing of this one replaces its files (lease.h, Fencing) */
    status = svp_job_lease_guard(p->params->lease);
    if (status != SVP_OK) {
        svp_debug("sample %d: not written: output.dir's lease is lost", s->index);
        return status;
    }
    status = svp_pipe_finish_call(p, s, 0, svp_pipe_slot_data(p, a->slot2),
                                  svp_pipe_slot_bytes(p, a->slot2));
    if (status != SVP_OK) {
        if (a->slot >= 0) {
            svp_log_failure(status, "finishing sample %d failed: %s", s->index,
                            svp_status_string(status));
        }
        return status;
    }
    p->stats.busy += svp_clock_now() - t0;
    if (a->slot2 < 0) {
        svp_pipe_cost("decode", s->index, svp_clock_now() - t0);
    }
    svp_trace_event(p->params->trace, "finish", s->index, -1,
                    svp_trace_now_us() - (svp_clock_now() - t0) * 1e6,
                    svp_trace_now_us());
    svp_pipe_progress(p, s);
    return SVP_OK;
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
    status = svp_schedule_iter_init_lane(&it, &p->sched, p->at.position, p->at.lane);
    if (status != SVP_OK) {
        return status;
    }
    status = svp_pipe_slots_create(p, &it.slots);
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
            status = svp_pipe_steps(p, &s);
            break;
        case SVP_SCHEDULE_SEND:
            status = svp_pipe_send(p, a, &s);
            if (a->msg != SVP_SCHEDULE_MSG_HALF) {
                svp_sample_cleanup(&s); /* the sample has left */
            }
            break;
        case SVP_SCHEDULE_FINISH:
            status = svp_pipe_finish(p, a, &s);
            svp_sample_cleanup(&s);
            break;
        case SVP_SCHEDULE_HALF:
            svp_stop_progress(p->finished, 1);
            status = svp_pipe_half(p, a, &s);
            break;
        case SVP_SCHEDULE_MERGE:
            status = svp_pipe_merge(p, a, &s);
            break;
        case SVP_SCHEDULE_SHARE:
            status = svp_pipe_share(p, a, &s);
            break;
        case SVP_SCHEDULE_KIND_COUNT:
            status = SVP_ERR_INTERNAL;
            break;
        case SVP_SCHEDULE_DROP:
            svp_debug("sample %d: its outputs are rank %d's", s.index,
                      svp_layout_rank(&p->layout, p->at.group,
                                      svp_layout_place(&p->layout, a->j,
                                                       SVP_LAYOUT_FINISHES),
                                      0));
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
    int                      total = svp_pipe_nsamples(pp), k, g, j, n = 0;

    /* this group's samples, dealt by the layout's rule (svp_layout_deal) */
    p->idx = malloc((size_t)SVP_MAX(1, total) * sizeof(*p->idx));
    if (p->idx == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (k = 0; k < total; ++k) {
        svp_layout_deal(&p->layout, k, &g, &j);
        if (g == p->at.group) {
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

    status = svp_layout_of_spec(spec, params->world, err, sizeof(err), &p.layout);
    if (status != SVP_OK) {
        svp_error("%s", err);
        return status;
    }
    p.at    = svp_layout_where(&p.layout, params->rank);
    p.range = svp_layout_range(&p.layout, p.at.position);
    svp_pipe_deadline_init(&p.dl, spec, &p.layout);
    status = svp_pipe_deal(&p);
    if (status != SVP_OK) {
        return status;
    }
    if (params->rank == 0) {
        svp_info("%d pipeline%s x %d stage%s%s (%d ranks), %d steps: %d per stage, "
                 "%d samples",
                 p.layout.groups, (p.layout.groups == 1) ? "" : "s", p.layout.stages,
                 (p.layout.stages == 1) ? "" : "s",
                 (p.layout.pairs > 1) ? " x 2 guidance halves" : "", params->world,
                 spec->steps, p.layout.k, svp_pipe_nsamples(params));
    }
    svp_info("rank %d of %d runs steps [%d, %d) of %d for %d samples (%s model, "
             "placement %s, pipeline %d of %d, stage %d of %d)",
             params->rank, params->world, p.range.begin, p.range.end, spec->steps,
             p.n, params->stage.ops->name,
             svp_spec_placement_name(spec->pipeline.placement), p.at.group,
             p.layout.groups, p.at.position, p.layout.stages);

    p.t_start = svp_clock_now();
    p.t_told  = p.t_start;
    p.sched   = svp_schedule_params_of(&p.layout, p.n, spec->comm.inflight);
    p.to_finish =
        (p.at.lane > 0) ? 0 : svp_schedule_finishes(&p.sched, p.at.position);
    status       = svp_pipe_execute(&p);
    p.stats.wall = svp_clock_now() - p.t_start;
    free(p.idx);
    if (status != SVP_OK) {
        if (p.layout.groups > 1) {
            svp_log_failure(status, "pipeline %d of %d (ranks %d-%d) stops: %s",
                            p.at.group, p.layout.groups,
                            svp_layout_rank(&p.layout, p.at.group, 0, 0),
                            svp_layout_rank(&p.layout, p.at.group + 1, 0, 0) - 1,
                            svp_status_string(status));
        }
        return status;
    }

    /* the job's rate is not this rank's to say: its window ends before the
     * slowest rank's (the worker logs the job's, over the window all ranks
     * share) */
    svp_info(
        "summary: %d samples (%d finished here), %d steps in %.3fs: busy %.3fs (%.0f%%), waiting for "
        "input %.3fs, waiting for sends %.3fs, pipeline %d: %.3f samples/s "
        "while this rank ran",
        p.stats.samples_done, p.finished, p.stats.steps_done, p.stats.wall,
        p.stats.busy, (p.stats.wall > 0) ? 100.0 * p.stats.busy / p.stats.wall : 0.0,
        p.stats.wait_recv, p.stats.wait_send, p.at.group,
        (p.stats.wall > 0) ? p.n / p.stats.wall : 0.0);
    if (stats_p != NULL) {
        *stats_p = p.stats;
    }
    return SVP_OK;
}
