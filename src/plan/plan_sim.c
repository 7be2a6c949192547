/*
 * The planner's simulation: the worker's own lists of actions run against
 * the costs, one clock per rank (see plan.h for the model).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "plan/plan.h"
#include "pipe/schedule.h"
#include "common/log.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * The simulation runs the worker's own lists (pipe/schedule.h), one iterator
 * per rank (each lane of each position: sim rank pos * C + lane, the job's
 * rank order), with a clock per rank: a begin, the steps, a half, a share
 * and a finish advance it by their cost, a send puts the message on its
 * channel with its arrival time (now + the link for its bytes), a wait for
 * a receive moves the clock to the message's arrival and a wait for a send
 * to the send's.  A receive is matched at its wait, not at its post: the
 * comm keeps a message that arrives before its receive is posted.  Tasks of
 * zero cost are not counted (events, encodes, decodes), as a model that
 * leaves them out would.
 *
 * Messages of a kind between two ranks arrive in the order sent, which is
 * the order they are waited for, so each (kind, from, to) the actions name
 * is a channel, a queue, made when first used: the planner knows no
 * message of its own.  A position's figures are its lane 0's.
 *
 * The ranks take turns of at most PLAN_TURN actions, each until it waits
 * for a message not yet sent; the queues then hold a few turns' messages and
 * the work is linear in the actions, N x (a few per rank).  A pass in which
 * no rank moves is a deadlock of the schedule: an internal error.
 */
#define PLAN_TURN 64

typedef struct {
    int    j, step; /* the sample's position, the step (HALF) */
    double at;      /* when it arrives */
} plan_msg_t;

typedef struct {
    uint64_t    key; /* kind, from, to; 0: an empty entry */
    plan_msg_t *q;
    int         head, count, capacity;
} plan_chan_t;

typedef struct {
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *held; /* the action it waits at, or NULL */
    double                       t;    /* its clock */
    double                       sent_at[SVP_SCHEDULE_MAX_SLOTS];
    int                          done;
} plan_rank_sim_t;

typedef struct {
    const svp_plan_params_t *p;
    svp_plan_result_t       *res;
    svp_layout_t             group; /* the simulated pipeline: one
                                            group of S positions of C lanes */
    int                      R;     /* ranks simulated: S x C */
    plan_rank_sim_t         *rank;  /* [R] */
    plan_chan_t             *chan;  /* open addressing, [nchan] */
    int                      nchan, used;
    char                    *link_used; /* [R R] */
    double                  *t_begin;   /* [N]: when j's begin started */
    double                  *t_end;     /* [N]: when j's finish ended */
} plan_sim_t;

/* The bytes of a message of kind msg. */
static double plan_msg_bytes(const svp_plan_params_t *p, svp_schedule_msg_t msg)
{
    return (msg == SVP_SCHEDULE_MSG_HALF)    ? p->half_bytes
           : (msg == SVP_SCHEDULE_MSG_SHARE) ? p->share_bytes
                                             : p->message_bytes;
}

/* Seconds of a message of `bytes` from sim rank from to sim rank to. */
static double plan_link_s(const svp_plan_params_t *p, int from, int to, double bytes)
{
    const svp_plan_costs_t *c    = &p->costs;
    double                  gbps = ((p->first_rank + from) / p->ranks_per_node ==
                   (p->first_rank + to) / p->ranks_per_node)
                                       ? c->intra_node_gbps
                                       : c->inter_node_gbps;

    return c->latency_s + (gbps > 0 ? bytes / (gbps * 1e9) : 0);
}

static uint64_t plan_chan_key(svp_schedule_msg_t msg, int from, int to)
{
    return ((uint64_t)msg << 56) | ((uint64_t)(uint32_t)from << 28) | (uint64_t)to |
           1ULL << 62;
}

/* The channel of (msg, from, to), made when first asked for; NULL: no
 * memory. */
static plan_chan_t *plan_chan(plan_sim_t *sim, svp_schedule_msg_t msg, int from,
                              int to)
{
    uint64_t key = plan_chan_key(msg, from, to);
    int      k;

    if (2 * (sim->used + 1) > sim->nchan) {
        int          n = (sim->nchan > 0) ? 2 * sim->nchan : 64;
        plan_chan_t *t = calloc((size_t)n, sizeof(*t));

        if (t == NULL) {
            return NULL;
        }
        for (int i = 0; i < sim->nchan; ++i) {
            if (sim->chan[i].key != 0) {
                for (k = (int)(sim->chan[i].key % (uint64_t)n); t[k].key != 0;
                     k = (k + 1) % n) {
                }
                t[k] = sim->chan[i];
            }
        }
        free(sim->chan);
        sim->chan  = t;
        sim->nchan = n;
    }
    for (k = (int)(key % (uint64_t)sim->nchan); sim->chan[k].key != 0;
         k = (k + 1) % sim->nchan) {
        if (sim->chan[k].key == key) {
            return &sim->chan[k];
        }
    }
    sim->chan[k].key = key;
    sim->used++;
    return &sim->chan[k];
}

static svp_status_t plan_chan_push(plan_chan_t *c, int j, int step, double at)
{
    if (c == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
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
    c->q[(c->head + c->count) % c->capacity] = (plan_msg_t){j, step, at};
    c->count++;
    return SVP_OK;
}

/* A task of sim rank r: its cost on its clock, and (lane 0) the position's
 * counts. */
static void plan_task(plan_sim_t *sim, int r, double cost, int *count, int by)
{
    plan_rank_sim_t *rs = &sim->rank[r];

    if (cost <= 0) {
        return;
    }
    rs->t += cost;
    sim->res->makespan_s = fmax(sim->res->makespan_s, rs->t);
    if (svp_layout_where(&sim->group, r).lane == 0) {
        sim->res->ranks[svp_layout_where(&sim->group, r).position].busy_s += cost;
        sim->res->ranks[svp_layout_where(&sim->group, r).position].finish_s = rs->t;
        sim->res->events++;
        *count += by;
    }
}

/* The sim rank of the action's peer. */
static int plan_peer(const plan_sim_t *sim, const svp_schedule_action_t *a)
{
    return svp_layout_rank(&sim->group, 0, a->peer, a->peer_lane);
}

static svp_status_t plan_send(plan_sim_t *sim, int r, const svp_schedule_action_t *a)
{
    const svp_plan_params_t *p  = sim->p;
    int                      to = plan_peer(sim, a), R = sim->R;
    double                   hop = plan_link_s(p, r, to, plan_msg_bytes(p, a->msg));
    int                      W = svp_plan_stages(p), pt = a->peer;
    int                      pf = svp_layout_where(&sim->group, r).position;

    if (!sim->link_used[r * R + to]) {
        sim->link_used[r * R + to] = 1;
        hop += p->costs.link_setup_s;
    }
    if (pf != pt) { /* the positions' links (the report's) */
        sim->res->link_msgs[pf * W + pt] += 1;
        sim->res->link_s[pf * W + pt] += hop;
    }
    sim->rank[r].sent_at[a->slot] = sim->rank[r].t + hop;
    return plan_chan_push(plan_chan(sim, a->msg, r, to), a->j, a->step,
                          sim->rank[r].t + hop);
}

/* A wait for a receive: *blocked_p when the message is not sent yet. */
static svp_status_t plan_recv(plan_sim_t *sim, int r, const svp_schedule_action_t *a,
                              int *blocked_p)
{
    plan_chan_t *ch = plan_chan(sim, a->msg, plan_peer(sim, a), r);

    if (ch == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    if (ch->count == 0) {
        *blocked_p = 1;
        return SVP_OK;
    }
    if (ch->q[ch->head].j != a->j || ch->q[ch->head].step != a->step) {
        svp_error("plan: rank %d waits for sample %d (%s), sample %d came", r, a->j,
                  svp_schedule_msg_name(a->msg), ch->q[ch->head].j);
        return SVP_ERR_INTERNAL;
    }
    sim->rank[r].t = fmax(sim->rank[r].t, ch->q[ch->head].at);
    ch->head       = (ch->head + 1) % ch->capacity;
    ch->count--;
    return SVP_OK;
}

double svp_plan_action_cost(const svp_schedule_action_t *a,
                            const svp_plan_costs_t *c, int k)
{
    switch (a->kind) {
    case SVP_SCHEDULE_BEGIN:
        return c->encode_s;
    case SVP_SCHEDULE_STEPS:
        return k * c->step_s;
    case SVP_SCHEDULE_HALF:
        /* one half of the guidance batch: half a step, first order */
        return c->step_s / 2;
    case SVP_SCHEDULE_SHARE:
        /* half the decode's chunks */
        return c->decode_s / 2;
    case SVP_SCHEDULE_FINISH:
        /* a shared finish writes what the shares decoded */
        return (a->slot2 >= 0) ? 0 : c->decode_s;
    default:
        return 0;
    }
}

/* Runs one action of sim rank r; *blocked_p when it waits for a message
 * not yet sent. */
static svp_status_t plan_act(plan_sim_t *sim, int r, const svp_schedule_action_t *a,
                             int *blocked_p)
{
    const svp_plan_costs_t *c  = &sim->p->costs;
    plan_rank_sim_t        *rs = &sim->rank[r];
    svp_plan_rank_t        *out =
        &sim->res->ranks[svp_layout_where(&sim->group, r).position];
    int k = sim->p->steps / svp_plan_stages(sim->p), none = 0;

    *blocked_p = 0;
    switch (a->kind) {
    case SVP_SCHEDULE_POST_RECV:
    case SVP_SCHEDULE_MERGE:
    case SVP_SCHEDULE_DROP:
        break;
    case SVP_SCHEDULE_WAIT:
        if (a->msg == SVP_SCHEDULE_MSG_NONE) {
            rs->t = fmax(rs->t, rs->sent_at[a->slot]);
            break;
        }
        return plan_recv(sim, r, a, blocked_p);
    case SVP_SCHEDULE_BEGIN:
        if (svp_layout_where(&sim->group, r).lane == 0) {
            sim->t_begin[a->j] = rs->t;
        }
        plan_task(sim, r, svp_plan_action_cost(a, c, k), &out->encodes, 1);
        break;
    case SVP_SCHEDULE_STEPS:
        plan_task(sim, r, svp_plan_action_cost(a, c, k), &out->steps, k);
        break;
    case SVP_SCHEDULE_HALF:
        plan_task(sim, r, svp_plan_action_cost(a, c, k), &out->steps, 1);
        break;
    case SVP_SCHEDULE_SEND:
        return plan_send(sim, r, a);
    case SVP_SCHEDULE_SHARE:
        /* lane 0 counts the decode */
        plan_task(sim, r, svp_plan_action_cost(a, c, k), &out->decodes, 1);
        break;
    case SVP_SCHEDULE_FINISH:
        plan_task(sim, r, svp_plan_action_cost(a, c, k),
                  (a->slot2 >= 0) ? &none : &out->decodes, 1);
        sim->t_end[a->j] = rs->t;
        break;
    case SVP_SCHEDULE_KIND_COUNT:
        return SVP_ERR_INTERNAL;
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
    svp_schedule_params_t    sp =
        svp_schedule_params_of(&sim->group, p->samples,
                               p->inflight > 0 ? p->inflight : 2);
    svp_status_t status;
    int          R = sim->R, live = R, moved;

    for (int r = 0; r < R; ++r) {
        status =
            svp_schedule_iter_init_lane(&sim->rank[r].it, &sp,
                                        svp_layout_where(&sim->group, r).position,
                                        svp_layout_where(&sim->group, r).lane);
        if (status != SVP_OK) {
            return status;
        }
    }
    while (live > 0) {
        moved = 0;
        live  = 0;
        for (int r = 0; r < R; ++r) {
            status = plan_turn(sim, r, &moved);
            if (status != SVP_OK) {
                return status;
            }
            live += !sim->rank[r].done;
        }
        if (live > 0 && !moved) {
            svp_error("plan: the schedule of %d ranks, %d samples deadlocks", R,
                      p->samples);
            return SVP_ERR_INTERNAL;
        }
    }
    return SVP_OK;
}

/* Runs p's lists into res's figures (ranks, links, makespan, events). */
static svp_status_t plan_simulate(const svp_plan_params_t *p, svp_plan_result_t *res)
{
    plan_sim_t   sim    = {.p = p, .res = res};
    svp_status_t status = SVP_ERR_NO_MEMORY;

    sim.group =
        (svp_layout_t){.world = svp_plan_stages(p) * ((p->pairs > 1) ? p->pairs : 1),
                       .groups    = 1,
                       .stages    = svp_plan_stages(p),
                       .pairs     = (p->pairs > 1) ? p->pairs : 1,
                       .steps     = p->steps,
                       .k         = p->steps / svp_plan_stages(p),
                       .placement = p->placement};
    sim.R         = sim.group.world;
    sim.rank      = calloc((size_t)sim.R, sizeof(*sim.rank));
    sim.link_used = calloc((size_t)sim.R * sim.R, sizeof(*sim.link_used));
    sim.t_begin   = calloc((size_t)p->samples, sizeof(*sim.t_begin));
    sim.t_end     = calloc((size_t)p->samples, sizeof(*sim.t_end));
    if (sim.rank != NULL && sim.link_used != NULL && sim.t_begin != NULL &&
        sim.t_end != NULL) {
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
    for (int k = 0; k < sim.nchan; ++k) {
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
    svp_plan_params_t one    = *p;
    svp_plan_result_t res    = {.stages = svp_plan_stages(p)};
    svp_status_t      status = SVP_ERR_NO_MEMORY;
    size_t            W      = (size_t)svp_plan_stages(p);

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
                             svp_plan_result_t      **result_p);

/* Whether a and b describe the same simulation (the cost source aside). */
static int plan_params_same(const svp_plan_params_t *a, const svp_plan_params_t *b)
{
    const svp_plan_costs_t *x = &a->costs, *y = &b->costs;

    return svp_plan_stages(a) == svp_plan_stages(b) &&
           a->ranks_per_node == b->ranks_per_node && a->steps == b->steps &&
           a->samples == b->samples && a->placement == b->placement &&
           a->inflight == b->inflight && a->message_bytes == b->message_bytes &&
           a->first_rank == b->first_rank && a->pairs == b->pairs &&
           a->half_bytes == b->half_bytes && a->share_bytes == b->share_bytes &&
           x->step_s == y->step_s && x->encode_s == y->encode_s &&
           x->decode_s == y->decode_s && x->intra_node_gbps == y->intra_node_gbps &&
           x->inter_node_gbps == y->inter_node_gbps &&
           x->latency_s == y->latency_s && x->link_setup_s == y->link_setup_s;
}

static svp_status_t plan_result_copy(const svp_plan_result_t *src,
                                     svp_plan_result_t      **dst_p)
{
    svp_plan_result_t *d = malloc(sizeof(*d));
    size_t             W = (size_t)src->stages;

    if (d == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    *d           = *src;
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

svp_status_t svp_plan_run(const svp_plan_params_t *p, svp_plan_result_t **result_p)
{
    if (plan_memo.result != NULL && plan_params_same(&plan_memo.params, p)) {
        return plan_result_copy(plan_memo.result, result_p);
    }
    return plan_run(p, result_p);
}

static svp_status_t plan_run(const svp_plan_params_t *p,
                             svp_plan_result_t      **result_p)
{
    svp_plan_result_t *res;
    svp_status_t       status;
    int                W = svp_plan_stages(p), N = p->samples;
    double             busy = 0;

    if (W < 1 || N < 1 || p->steps < W || p->steps % W != 0 ||
        p->ranks_per_node < 1) {
        return SVP_ERR_INVALID_PARAM;
    }

    res = calloc(1, sizeof(*res));
    if (res == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    res->stages    = W;
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
    res->bubble = res->makespan_s > 0 ? 1.0 - busy / (W * res->makespan_s) : 0;
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
