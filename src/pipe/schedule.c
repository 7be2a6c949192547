/*
 * The pipeline's protocol, for one group of S ranks (positions 0 .. S-1)
 * running the n samples dealt to it (positions j = 0 .. n-1), T/S steps each:
 *
 *   message  from            to              when
 *   -------  --------------  --------------  ---------------------------------
 *   INIT     encoder(j) != 0 rank 0          j encoded, ahead of rank 0's need
 *   LATENT   rank r          rank r + 1      after r's steps of j
 *   FINAL    rank S-1        finisher(j)     after the last steps, when
 *                                            finisher(j) != S-1
 *   HALF     (r, lane c)     (r, lane 1-c)   pairs: each step of j, after the
 *                                            lane's half of the prediction
 *   SHARE    (f, lane 1)     (f, lane 0)     pairs: j's finish on position
 *                                            f = finisher(j) = S-1 (spread:
 *                                            any f), after lane 1's share
 *
 *   A message is tagged (kind, sample, step): step is where the sample
 *   stands (LATENT: r's first step; INIT: 0; FINAL, SHARE: T; HALF: the
 *   step it belongs to).
 *
 *   encoder(j), finisher(j) = svp_layout_place_of():
 *       ends:   0 and S-1 for every j;
 *       spread: j mod S, both.
 *
 * Rank r's list (S > 1), with L = inflight + 2 latent slots (slot of j:
 * j mod L), two final slots and two encode slots ((j div S) mod 2):
 *
 *   set-up:  post FINAL receives of its first two finals (spread, r < S-1);
 *            post the first `inflight` receives of its walk: LATENT from
 *            r-1 (r > 0), INIT from encoder(j) where rank 0 does not encode
 *   sample i = 0 .. n-1:
 *     encodes (r > 0, spread): for each e = r, r+S, ... up to i + r + 1:
 *            wait slot; begin e; send INIT e to rank 0
 *            (r is idle in the fill anyway, and later e reaches rank 0 about
 *            one sample before rank 0 needs it)
 *     input: wait for j = i's receive (due after r stages for i = 0, one
 *            stage later on), or begin i (rank 0 encodes it);
 *            keep `inflight` receives posted: post i + inflight
 *     steps i
 *     output: send LATENT to r+1; or, on S-1, finish i (finisher(i) = S-1)
 *            or send FINAL to finisher(i)
 *     finals (spread): finish each f whose final left S-1 one sample before
 *            now (i >= f + S - r: one sample of slack, so the wait is
 *            normally zero); post the receive of f + 2S
 *   drain:   the finals left; wait for every send still draining
 *
 * Every slot is waited for before it is reused, so no frame is overwritten
 * while the comm may still read it (tests/test_schedule.c checks it, and
 * that every send has its receive, over the layouts the tests use).
 *
 * One rank (S = 1) is the same list without messages: begin, steps, finish.
 *
 * Guidance pairs (C = 2): every position is two ranks, lanes 0 and 1, and
 * lane c runs the list above with its messages between the positions of
 * lane c (so the latents travel twice, one copy per lane: the pair's two
 * ranks hold the same latents, and no rank waits for the other lane's
 * hand-off).  STEPS become, for each step of the rank's k, with the two
 * half slots (out: h0, in: h1):
 *
 *   wait h0's send; post HALF from (r, 1-c) into h1; HALF (the lane's half
 *   into h0); send HALF from h0 to (r, 1-c); wait h1 (due now); MERGE
 *
 * Both lanes encode what lane 0 encodes (the same bits: begin() is a
 * function of the sample).  Where a position finishes a sample on a pair,
 * the finish is shared, with the share slot s:
 *
 *   lane 1:  wait s's send; SHARE into s; send SHARE from s to (f, 0)
 *   lane 0:  post SHARE from (f, 1) into s; SHARE (own memory); wait s
 *            (due now); FINISH with s
 *
 * Lane 1 has no finals: where lane 0 sends a FINAL, lane 1 DROPs the
 * sample.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/schedule.h"

#include "common/util.h"

#include <string.h>

enum { PHASE_SETUP, PHASE_SAMPLE, PHASE_STEPS, PHASE_DRAIN, PHASE_END };

void svp_schedule_slots(const svp_schedule_params_t *params, int rank, int lane,
                        svp_schedule_slots_t *slots_p)
{
    int                  S = params->stages, n = params->samples;
    int                  spread = (params->placement == SVP_PLACEMENT_SPREAD);
    svp_schedule_slots_t s      = {0};

    if (S > 1) {
        s.latent = params->inflight + 2;
        s.final  = (spread && rank != S - 1 && rank < n && lane == 0)
                       ? SVP_SCHEDULE_FINAL_SLOTS
                       : 0;
        s.encode = (rank != 0 && rank < n &&
                    svp_layout_place_of(params->placement, S, rank,
                                        SVP_LAYOUT_ENCODES) == rank)
                       ? SVP_SCHEDULE_ENCODE_SLOTS
                       : 0;
    }
    if (params->pairs > 1 && n > 0) {
        s.half  = 2;
        s.share = (rank == S - 1 && svp_schedule_finishes(params, rank) > 0);
    }
    s.total  = s.latent + s.final + s.encode + s.half + s.share;
    *slots_p = s;
}

svp_schedule_frame_t svp_schedule_slot_frame(const svp_schedule_slots_t *slots,
                                             int                         slot)
{
    int half0 = slots->latent + slots->final + slots->encode;

    return (slot < half0)                 ? SVP_SCHEDULE_FRAME_SAMPLE
           : (slot < half0 + slots->half) ? SVP_SCHEDULE_FRAME_HALF
                                          : SVP_SCHEDULE_FRAME_SHARE;
}

int svp_schedule_finishes(const svp_schedule_params_t *params, int rank)
{
    int j, count = 0;

    for (j = 0; j < params->samples; ++j) {
        count += (svp_layout_place_of(params->placement, params->stages, j,
                                      SVP_LAYOUT_FINISHES) == rank);
    }
    return count;
}

svp_status_t svp_schedule_iter_init(svp_schedule_iter_t         *it,
                                    const svp_schedule_params_t *params, int rank)
{
    return svp_schedule_iter_init_lane(it, params, rank, 0);
}

svp_status_t svp_schedule_iter_init_lane(svp_schedule_iter_t         *it,
                                         const svp_schedule_params_t *params,
                                         int rank, int lane)
{
    int pairs = SVP_MAX(1, params->pairs);

    if (params->stages < 1 || rank < 0 || rank >= params->stages || pairs > 2 ||
        lane < 0 || lane >= pairs || params->steps < 0 || params->samples < 0 ||
        params->inflight < 1 ||
        params->inflight + 2 + SVP_SCHEDULE_FINAL_SLOTS + SVP_SCHEDULE_ENCODE_SLOTS +
                2 + 1 >
            SVP_SCHEDULE_MAX_SLOTS) {
        return SVP_ERR_INVALID_PARAM;
    }
    memset(it, 0, sizeof(*it));
    it->p          = *params;
    it->rank       = rank;
    it->lane       = lane;
    it->next_enc   = -1;
    it->next_final = -1;
    it->pair_step  = -1;
    it->p.steps    = SVP_MAX(1, params->steps);
    it->p.pairs    = pairs;
    svp_schedule_slots(params, rank, lane, &it->slots);
    it->phase = (params->stages == 1) ? PHASE_SAMPLE : PHASE_SETUP;
    return SVP_OK;
}

/* ---- emitting -------------------------------------------------------- */

/*
 * The step a message is tagged with (the table above): where the sample
 * stands.  LATENT into position r: r x k, out of it: (r + 1) x k; INIT: 0;
 * FINAL and SHARE: T; a HALF's is the step it belongs to, set by its
 * emitter.  A receive's WAIT carries its receive's.  -1 for what is not a
 * message.
 */
static int sched_msg_step(const svp_schedule_iter_t *it, svp_schedule_kind_t kind,
                          svp_schedule_msg_t msg)
{
    if (kind != SVP_SCHEDULE_POST_RECV && kind != SVP_SCHEDULE_SEND &&
        kind != SVP_SCHEDULE_WAIT) {
        return -1;
    }
    switch (msg) {
    case SVP_SCHEDULE_MSG_LATENT:
        return (it->rank + (kind == SVP_SCHEDULE_SEND)) * it->p.steps;
    case SVP_SCHEDULE_MSG_INIT:
        return 0;
    case SVP_SCHEDULE_MSG_FINAL:
    case SVP_SCHEDULE_MSG_SHARE:
        return it->p.stages * it->p.steps;
    default:
        return -1;
    }
}

static void sched_emit(svp_schedule_iter_t *it, svp_schedule_kind_t kind,
                       svp_schedule_msg_t msg, int j, int slot, int peer)
{
    svp_schedule_action_t *a =
        &it->queue[(it->head + it->count) % SVP_SCHEDULE_QUEUE];

    ++it->count;
    memset(a, 0, sizeof(*a));
    a->kind       = kind;
    a->msg        = msg;
    a->j          = j;
    a->step       = sched_msg_step(it, kind, msg);
    a->slot       = slot;
    a->slot2      = -1;
    a->peer       = peer;
    a->peer_lane  = it->lane;
    a->due_stages = -1;
    if (slot < 0) {
        return;
    }
    if (kind == SVP_SCHEDULE_POST_RECV || kind == SVP_SCHEDULE_SEND) {
        it->busy[slot] = 1;
    } else if (kind == SVP_SCHEDULE_WAIT) {
        it->busy[slot] = 0;
    }
}

/* The action emitted last, to set its other fields. */
static svp_schedule_action_t *sched_last(svp_schedule_iter_t *it)
{
    return &it->queue[(it->head + it->count - 1) % SVP_SCHEDULE_QUEUE];
}

/* A wait for what the slot holds, with the due time given (-1: none). */
static void sched_wait(svp_schedule_iter_t *it, int slot, svp_schedule_msg_t msg,
                       int j, int peer, int due_stages, int due_first)
{
    svp_schedule_action_t *a;

    sched_emit(it, SVP_SCHEDULE_WAIT, msg, j, slot, peer);
    a             = sched_last(it);
    a->due_stages = due_stages;
    a->due_first  = due_first;
}

/* Waits for the slot's last send, if one may still be draining. */
static void sched_free(svp_schedule_iter_t *it, int slot)
{
    if (it->busy[slot]) {
        sched_wait(it, slot, SVP_SCHEDULE_MSG_NONE, -1, -1, -1, 0);
    }
}

static void sched_post(svp_schedule_iter_t *it, svp_schedule_msg_t msg, int j,
                       int slot, int peer)
{
    sched_free(it, slot);
    sched_emit(it, SVP_SCHEDULE_POST_RECV, msg, j, slot, peer);
}

static int sched_encoder(const svp_schedule_iter_t *it, int j)
{
    return svp_layout_place_of(it->p.placement, it->p.stages, j, SVP_LAYOUT_ENCODES);
}

static int sched_finisher(const svp_schedule_iter_t *it, int j)
{
    return svp_layout_place_of(it->p.placement, it->p.stages, j,
                               SVP_LAYOUT_FINISHES);
}

/* The latent slot of j, and the receive that brings j to this rank (none:
 * rank 0 encodes j itself). */
static int sched_lat(const svp_schedule_iter_t *it, int j)
{
    return j % it->slots.latent;
}

static void sched_post_input(svp_schedule_iter_t *it, int j)
{
    if (it->rank > 0) {
        sched_post(it, SVP_SCHEDULE_MSG_LATENT, j, sched_lat(it, j), it->rank - 1);
    } else if (sched_encoder(it, j) != 0) {
        sched_post(it, SVP_SCHEDULE_MSG_INIT, j, sched_lat(it, j),
                   sched_encoder(it, j));
    }
}

/* The slots of the pair rings: the half out and in, the share. */
static int sched_half_out(const svp_schedule_iter_t *it)
{
    return it->slots.latent + it->slots.final + it->slots.encode;
}

static int sched_share(const svp_schedule_iter_t *it)
{
    return sched_half_out(it) + it->slots.half;
}

/* A message of the pair: to or from the other lane of this position. */
static void sched_pair_msg(svp_schedule_iter_t *it, svp_schedule_kind_t kind,
                           svp_schedule_msg_t msg, int j, int step, int slot)
{
    sched_emit(it, kind, msg, j, slot, it->rank);
    sched_last(it)->peer_lane = 1 - it->lane;
    if (step >= 0) {
        sched_last(it)->step = step; /* a HALF's; else the table's */
    }
}

/*
 * The finish of j where its walk ends; on a pair shared by the two lanes:
 * lane 1 decodes its share and sends it, lane 0 decodes its own while the
 * message comes, then writes.  The last action ends the walk (chain).
 */
static void sched_finish(svp_schedule_iter_t *it, int j, int slot)
{
    int sh = sched_share(it);

    if (it->p.pairs < 2) {
        sched_emit(it, SVP_SCHEDULE_FINISH, SVP_SCHEDULE_MSG_NONE, j, slot, -1);
    } else if (it->lane == 1) {
        sched_free(it, sh);
        sched_emit(it, SVP_SCHEDULE_SHARE, SVP_SCHEDULE_MSG_NONE, j, sh, -1);
        sched_pair_msg(it, SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_SHARE, j, -1, sh);
    } else {
        sched_pair_msg(it, SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_SHARE, j, -1,
                       sh);
        sched_emit(it, SVP_SCHEDULE_SHARE, SVP_SCHEDULE_MSG_NONE, j, -1, -1);
        sched_wait(it, sh, SVP_SCHEDULE_MSG_SHARE, j, it->rank, 0, 0);
        sched_last(it)->peer_lane = 1;
        sched_emit(it, SVP_SCHEDULE_FINISH, SVP_SCHEDULE_MSG_NONE, j, slot, -1);
        sched_last(it)->slot2 = sh;
    }
    sched_last(it)->chain = 1;
    it->finished += (it->lane == 0);
}

/* One step of a pair's: this lane's half out, the other's in, the merge. */
static void sched_pair_step(svp_schedule_iter_t *it)
{
    int out = sched_half_out(it), in = out + 1, j = it->pair_j;
    int step = it->pair_step;

    sched_free(it, out);
    sched_pair_msg(it, SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_HALF, j, step, in);
    sched_emit(it, SVP_SCHEDULE_HALF, SVP_SCHEDULE_MSG_NONE, j, out, -1);
    sched_last(it)->step = step;
    sched_pair_msg(it, SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_HALF, j, step, out);
    /* the other lane runs the same step at the same time: due now */
    sched_wait(it, in, SVP_SCHEDULE_MSG_HALF, j, it->rank, 0, 0);
    sched_last(it)->peer_lane = 1 - it->lane;
    sched_last(it)->step      = step;
    sched_emit(it, SVP_SCHEDULE_MERGE, SVP_SCHEDULE_MSG_NONE, j, out, -1);
    sched_last(it)->step  = step;
    sched_last(it)->slot2 = in;
}

/* This rank's steps of j: whole, or on a pair step by step (PHASE_STEPS
 * emits them, a step a call, then the rest of the sample). */
static void sched_steps(svp_schedule_iter_t *it, int j, int slot)
{
    if (it->p.pairs > 1) {
        it->pair_j    = j;
        it->pair_slot = slot;
        it->pair_step = it->rank * it->p.steps;
        it->phase     = PHASE_STEPS;
    } else {
        sched_emit(it, SVP_SCHEDULE_STEPS, SVP_SCHEDULE_MSG_NONE, j, slot, -1);
    }
}

/* ---- phases ---------------------------------------------------------- */

static void sched_setup(svp_schedule_iter_t *it)
{
    int S = it->p.stages, n = it->p.samples, f, k, j;
    int fin0 = it->slots.latent;

    if (it->slots.final > 0) {
        it->next_final = it->rank;
        for (f = it->rank, k = 0; f < n && k < it->slots.final; f += S, ++k) {
            sched_post(it, SVP_SCHEDULE_MSG_FINAL, f, fin0 + k, S - 1);
        }
    }
    if (it->slots.encode > 0) {
        it->next_enc = it->rank;
    }
    for (j = 0; j < it->p.inflight && j < n; ++j) {
        sched_post_input(it, j);
    }
}

/* Begin e and send it to rank 0. */
static void sched_encode(svp_schedule_iter_t *it, int e)
{
    int slot =
        it->slots.latent + it->slots.final + (e / it->p.stages) % it->slots.encode;

    sched_free(it, slot);
    sched_emit(it, SVP_SCHEDULE_BEGIN, SVP_SCHEDULE_MSG_NONE, e, slot, -1);
    sched_emit(it, SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_INIT, e, slot, 0);
}

/* Receive f's final latent from the last rank, finish it, post the next. */
static void sched_final(svp_schedule_iter_t *it, int f)
{
    int S = it->p.stages, next = f + it->slots.final * S;
    int slot = it->slots.latent + (f / S) % it->slots.final;

    /* the sample crosses the whole chain after this rank handled it */
    sched_wait(it, slot, SVP_SCHEDULE_MSG_FINAL, f, S - 1, S, it->finished == 0);
    sched_emit(it, SVP_SCHEDULE_FINISH, SVP_SCHEDULE_MSG_NONE, f, slot, -1);
    it->finished++;
    if (next < it->p.samples) {
        sched_post(it, SVP_SCHEDULE_MSG_FINAL, next, slot, S - 1);
    }
}

/* The output of sample i's walk: on, to the finisher, or finished here. */
static void sched_output(svp_schedule_iter_t *it, int i, int slot)
{
    int S = it->p.stages, r = it->rank;

    if (r < S - 1) {
        sched_emit(it, SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_LATENT, i, slot, r + 1);
    } else if (sched_finisher(it, i) == r) {
        sched_finish(it, i, slot);
    } else if (it->lane > 0) {
        sched_emit(it, SVP_SCHEDULE_DROP, SVP_SCHEDULE_MSG_NONE, i, slot, -1);
    } else {
        sched_emit(it, SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_FINAL, i, slot,
                   sched_finisher(it, i));
    }
    it->queue[(it->head + it->count - 1) % SVP_SCHEDULE_QUEUE].chain = 1;
}

/* Sample i's walk after its steps: the output, then the finals due. */
static void sched_sample_out(svp_schedule_iter_t *it, int i, int slot)
{
    int S = it->p.stages, n = it->p.samples, r = it->rank;

    if (S == 1) {
        sched_finish(it, i, -1);
        return;
    }
    sched_output(it, i, slot);
    while (it->next_final >= 0 && it->next_final < n &&
           i >= it->next_final + S - r) {
        sched_final(it, it->next_final);
        it->next_final += S;
    }
}

/* Sample i's walk up to its steps (pairs: PHASE_STEPS goes on). */
static void sched_sample(svp_schedule_iter_t *it)
{
    int S = it->p.stages, n = it->p.samples, r = it->rank, i = it->i;
    int ahead = it->p.inflight, slot;

    if (S == 1) {
        sched_emit(it, SVP_SCHEDULE_BEGIN, SVP_SCHEDULE_MSG_NONE, i, -1, -1);
        sched_steps(it, i, -1);
        if (it->p.pairs < 2) {
            sched_sample_out(it, i, -1);
        }
        return;
    }
    while (it->next_enc >= 0 && it->next_enc < n && it->next_enc <= i + r + 1) {
        sched_encode(it, it->next_enc);
        it->next_enc += S;
    }
    /* the first input is due after the fill: rank r waits for r stages (and
     * the first encode); later ones about one stage */
    slot = sched_lat(it, i);
    if (r > 0 || sched_encoder(it, i) != 0) {
        sched_wait(it, slot,
                   (r > 0) ? SVP_SCHEDULE_MSG_LATENT : SVP_SCHEDULE_MSG_INIT, i,
                   (r > 0) ? r - 1 : sched_encoder(it, i), (i == 0) ? r : 1, i == 0);
    } else {
        if (it->busy[slot]) {
            sched_wait(it, slot, SVP_SCHEDULE_MSG_NONE, -1, -1, (i == 0) ? r : 1,
                       i == 0);
        }
        sched_emit(it, SVP_SCHEDULE_BEGIN, SVP_SCHEDULE_MSG_NONE, i, slot, -1);
    }
    if (i + ahead < n) {
        sched_post_input(it, i + ahead);
    }
    sched_steps(it, i, slot);
    if (it->p.pairs < 2) {
        sched_sample_out(it, i, slot);
    }
}

/* A pair's next step of the sample in hand; after the last, the rest of
 * its walk, and back to the samples. */
static void sched_pair_steps(svp_schedule_iter_t *it)
{
    sched_pair_step(it);
    if (++it->pair_step == (it->rank + 1) * it->p.steps) {
        sched_sample_out(it, it->pair_j, it->pair_slot);
        it->pair_step = -1;
        it->phase     = PHASE_SAMPLE;
    }
}

static void sched_drain(svp_schedule_iter_t *it)
{
    int s;

    while (it->next_final >= 0 && it->next_final < it->p.samples) {
        sched_final(it, it->next_final);
        it->next_final += it->p.stages;
    }
    for (s = 0; s < it->slots.latent; ++s) {
        sched_free(it, s);
    }
    for (s = 0; s < it->slots.encode; ++s) {
        sched_free(it, it->slots.latent + it->slots.final + s);
    }
    if (it->slots.half > 0) {
        sched_free(it, sched_half_out(it));
    }
    if (it->slots.share > 0) {
        sched_free(it, sched_share(it));
    }
}

const svp_schedule_action_t *svp_schedule_iter_next(svp_schedule_iter_t *it)
{
    const svp_schedule_action_t *a;

    while (it->count == 0) {
        switch (it->phase) {
        case PHASE_SETUP:
            sched_setup(it);
            it->phase = PHASE_SAMPLE;
            break;
        case PHASE_SAMPLE:
            if (it->i < it->p.samples) {
                sched_sample(it);
                it->i++;
            } else {
                it->phase = PHASE_DRAIN;
            }
            break;
        case PHASE_STEPS:
            sched_pair_steps(it);
            break;
        case PHASE_DRAIN:
            sched_drain(it);
            it->phase = PHASE_END;
            break;
        default:
            return NULL;
        }
    }
    a        = &it->queue[it->head];
    it->head = (it->head + 1) % SVP_SCHEDULE_QUEUE;
    it->count--;
    return a;
}

const char *svp_schedule_kind_name(svp_schedule_kind_t kind)
{
    static const char *const names[SVP_SCHEDULE_KIND_COUNT] = {
        [SVP_SCHEDULE_POST_RECV] = "post_recv", [SVP_SCHEDULE_WAIT] = "wait",
        [SVP_SCHEDULE_BEGIN] = "begin",         [SVP_SCHEDULE_STEPS] = "steps",
        [SVP_SCHEDULE_SEND] = "send",           [SVP_SCHEDULE_FINISH] = "finish",
        [SVP_SCHEDULE_HALF] = "half",           [SVP_SCHEDULE_MERGE] = "merge",
        [SVP_SCHEDULE_SHARE] = "share",         [SVP_SCHEDULE_DROP] = "drop",
    };

    return ((unsigned)kind < SVP_SCHEDULE_KIND_COUNT) ? names[kind] : "?";
}

const char *svp_schedule_msg_name(svp_schedule_msg_t msg)
{
    static const char *const names[SVP_SCHEDULE_MSG_COUNT] = {
        [SVP_SCHEDULE_MSG_NONE] = "none",   [SVP_SCHEDULE_MSG_LATENT] = "latent",
        [SVP_SCHEDULE_MSG_FINAL] = "final", [SVP_SCHEDULE_MSG_INIT] = "init",
        [SVP_SCHEDULE_MSG_HALF] = "half",   [SVP_SCHEDULE_MSG_SHARE] = "share",
    };

    return ((unsigned)msg < SVP_SCHEDULE_MSG_COUNT) ? names[msg] : "?";
}
