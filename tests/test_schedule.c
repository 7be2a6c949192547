/*
 * The pipeline's schedule (pipe/schedule.h), checked list by list over the
 * layouts the other tests run: W = 1, 2, 4, 7 ranks with 10 and 40 samples
 * (tests/pipeline_cluster.sh), W = 6 with S = 1, 2, 3, 6 and 11 samples
 * (tests/layout_cluster.sh), shards and resumed lists (fewer samples), one
 * rank (tests/test_pipe.c, test_resume.c), the benchmark's W = 7 with 20 and
 * 42 samples; both placements and several comm.inflight; and guidance
 * pairs (C = 2) with S = 1 .. 4.  The grid below holds all of them.
 *
 * For every group the S x C lists are run together by a strict interpreter:
 *   - a wait for a receive blocks until the peer has sent that message
 *     (kind, sample, step), and a wait for a send until the peer has posted
 *     its receive (a rendezvous send, the strictest the comm may be): every
 *     list must run to its end (no deadlock) with every send received and
 *     every receive sent;
 *   - a slot is posted into, begun into, written (HALF, SHARE) or sent from
 *     only when nothing is pending on it and nothing lives in it (no frame
 *     reused in flight), and a received HALF or SHARE is read (MERGE,
 *     FINISH) from the slot it came into;
 *   - sample j is begun once per lane, on the position the spec's placement
 *     names, runs its steps once on every position in order (a pair: each
 *     step a HALF and a MERGE on both lanes, the steps of the position in
 *     order, one HALF message each way), and is finished once where the
 *     placement names (a pair's last position: both lanes decode a SHARE,
 *     lane 1's goes to lane 0, which finishes); each rank ends its walk of
 *     j once (chain).
 */
#include "pipe/schedule.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_W 8 /* ranks of a group: S x C */
#define MAX_N 48
#define MAX_K 3 /* steps per position in the pair lists */

enum { SLOT_FREE, SLOT_RECV, SLOT_HOLDS, SLOT_DATA, SLOT_SEND };

typedef struct {
    int state, j, msg, peer, key;
} slot_t;

typedef struct {
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *held;
    slot_t                       slot[SVP_SCHEDULE_MAX_SLOTS];
    int                          done, cur; /* the sample being worked on */
    int                          halves;    /* HALFs of cur so far */
    int                          merges;    /* MERGEs of cur so far */
    int                          shared;    /* cur's SHARE decoded */
} rank_t;

typedef struct {
    svp_schedule_params_t p;
    int                   C, k;
    rank_t                rank[MAX_W];
    /* [msg][from][to][j * MAX_K + step index]: 1 sent, 2 received */
    unsigned char sent[SVP_SCHEDULE_MSG_COUNT][MAX_W][MAX_W][MAX_N * MAX_K];
    unsigned char posted[SVP_SCHEDULE_MSG_COUNT][MAX_W][MAX_W][MAX_N * MAX_K];
    int           begun[2][MAX_N], finished[MAX_N], chain[MAX_W][MAX_N];
    int           steps[2][MAX_N]; /* positions that ran j's steps */
    char          what[160];
} group_t;

/* The spec's rule, as pipe.h states it (not the function under test). */
static int spec_encoder(const svp_schedule_params_t *p, int j)
{
    return p->placement == SVP_PLACEMENT_SPREAD ? j % p->stages : 0;
}

static int spec_finisher(const svp_schedule_params_t *p, int j)
{
    return p->placement == SVP_PLACEMENT_SPREAD ? j % p->stages : p->stages - 1;
}

/*
 * The message key of an action: its sample and (HALF) its step's index.  A
 * sample's message is tagged where the sample stands (schedule.c's table),
 * the same on both ends: a LATENT out of position p at (p + 1) k, into it at
 * p k; an INIT at 0; a FINAL or SHARE at T = S k.
 */
static int msg_key(const group_t *g, int r, const svp_schedule_action_t *a)
{
    int pos = r / g->C, due;

    if (a->msg == SVP_SCHEDULE_MSG_HALF) {
        cr_assert(a->step >= 0 && a->step % g->k < MAX_K, "%s: a half at step %d",
                  g->what, a->step);
        return a->j * MAX_K + a->step % g->k;
    }
    due = (a->msg == SVP_SCHEDULE_MSG_INIT) ? 0
          : (a->msg == SVP_SCHEDULE_MSG_LATENT)
              ? (pos + (a->kind == SVP_SCHEDULE_SEND)) * g->k
              : g->p.stages * g->k;
    cr_assert_eq(a->step, due, "%s rank %d: %s %s of %d tagged step %d, not %d",
                 g->what, r, svp_schedule_kind_name(a->kind),
                 svp_schedule_msg_name(a->msg), a->j, a->step, due);
    return a->j * MAX_K;
}

static slot_t *slot_of(group_t *g, int r, int slot, const svp_schedule_action_t *a)
{
    cr_assert(slot >= 0 && slot < g->rank[r].it.slots.total,
              "%s rank %d: %s of %d in slot %d of %d", g->what, r,
              svp_schedule_kind_name(a->kind), a->j, slot,
              g->rank[r].it.slots.total);
    return &g->rank[r].slot[slot];
}

/* The peer's rank in the group (position x C + lane). */
static int peer_of(const group_t *g, int r, const svp_schedule_action_t *a)
{
    int pos = r / g->C, lane = r % g->C;

    cr_assert(a->peer >= 0 && a->peer < g->p.stages && a->peer_lane >= 0 &&
                  a->peer_lane < g->C,
              "%s rank %d: peer %d lane %d", g->what, r, a->peer, a->peer_lane);
    if (a->msg == SVP_SCHEDULE_MSG_HALF || a->msg == SVP_SCHEDULE_MSG_SHARE) {
        /* the other lane of the same position */
        cr_assert(a->peer == pos && a->peer_lane == 1 - lane,
                  "%s rank %d: a %s to "
                  "position %d lane %d",
                  g->what, r, svp_schedule_msg_name(a->msg), a->peer, a->peer_lane);
    } else {
        cr_assert(a->peer_lane == lane && a->peer != pos,
                  "%s rank %d: a %s to "
                  "position %d lane %d",
                  g->what, r, svp_schedule_msg_name(a->msg), a->peer, a->peer_lane);
    }
    return a->peer * g->C + a->peer_lane;
}

static int step_wait(group_t *g, int r, const svp_schedule_action_t *a, slot_t *s)
{
    rank_t *rk = &g->rank[r];
    int     peer, key;

    cr_assert(s->state == SLOT_RECV || s->state == SLOT_SEND,
              "%s rank %d: wait on idle slot %d", g->what, r, a->slot);
    if (s->state == SLOT_SEND) {
        cr_assert_eq(a->msg, SVP_SCHEDULE_MSG_NONE);
        if (g->posted[s->msg][r][s->peer][s->key] == 0) {
            return 0; /* rendezvous: the receive is not posted yet */
        }
        s->state = SLOT_FREE;
        return 1;
    }
    peer = peer_of(g, r, a);
    key  = msg_key(g, r, a);
    cr_assert(a->msg == s->msg && key == s->key && peer == s->peer,
              "%s rank %d: wait for %d does not match the receive posted (%d)",
              g->what, r, a->j, s->j);
    if (g->sent[a->msg][peer][r][key] == 0) {
        return 0;
    }
    cr_assert_eq(g->sent[a->msg][peer][r][key], 1, "%s: received twice", g->what);
    g->sent[a->msg][peer][r][key] = 2;
    if (a->msg == SVP_SCHEDULE_MSG_HALF || a->msg == SVP_SCHEDULE_MSG_SHARE) {
        cr_assert_eq(rk->cur, a->j, "%s rank %d: a %s of %d while %d is live",
                     g->what, r, svp_schedule_msg_name(a->msg), a->j, rk->cur);
        s->state = SLOT_DATA;
        return 1;
    }
    s->state   = SLOT_HOLDS;
    rk->cur    = a->j;
    rk->halves = rk->merges = rk->shared = 0;
    return 1;
}

static void step_send(group_t *g, int r, const svp_schedule_action_t *a, slot_t *s)
{
    rank_t *rk   = &g->rank[r];
    int     peer = peer_of(g, r, a), key = msg_key(g, r, a);
    int data = (a->msg == SVP_SCHEDULE_MSG_HALF || a->msg == SVP_SCHEDULE_MSG_SHARE);

    cr_assert(s->state == (data ? SLOT_DATA : SLOT_HOLDS) && s->j == a->j &&
                  rk->cur == a->j,
              "%s rank %d: send of %d (%s) from slot %d that does not hold it",
              g->what, r, a->j, svp_schedule_msg_name(a->msg), a->slot);
    cr_assert_eq(g->sent[a->msg][r][peer][key], 0, "%s: sent twice", g->what);
    g->sent[a->msg][r][peer][key] = 1;
    *s                            = (slot_t){SLOT_SEND, a->j, a->msg, peer, key};
    if (a->msg == SVP_SCHEDULE_MSG_SHARE) {
        /* the share ends lane 1's walk: the sample's frame is free again */
        for (int q = 0; q < rk->it.slots.total; ++q) {
            if (rk->slot[q].state == SLOT_HOLDS && rk->slot[q].j == a->j) {
                rk->slot[q].state = SLOT_FREE;
            }
        }
    }
    if (!data || a->msg == SVP_SCHEDULE_MSG_SHARE) {
        rk->cur = -1; /* the sample has left */
    }
}

/* A lane's steps of j on its position: whole, or a pair's k halves. */
static void steps_done(group_t *g, int r, int j)
{
    int pos = r / g->C, lane = r % g->C;

    cr_assert_eq(g->steps[lane][j], pos,
                 "%s: sample %d on position %d lane %d after "
                 "%d positions",
                 g->what, j, pos, lane, g->steps[lane][j]);
    cr_assert(g->begun[lane][j] == 1);
    g->steps[lane][j]++;
}

static void step_pair(group_t *g, int r, const svp_schedule_action_t *a, slot_t *s)
{
    rank_t *rk  = &g->rank[r];
    int     pos = r / g->C;
    slot_t *in;

    cr_assert(g->C == 2, "%s rank %d: a %s in a list without pairs", g->what, r,
              svp_schedule_kind_name(a->kind));
    cr_assert_eq(rk->cur, a->j, "%s rank %d: %s of %d, %d is live", g->what, r,
                 svp_schedule_kind_name(a->kind), a->j, rk->cur);
    cr_assert(s != NULL && svp_schedule_slot_frame(&rk->it.slots, a->slot) ==
                               SVP_SCHEDULE_FRAME_HALF);
    if (a->kind == SVP_SCHEDULE_HALF) {
        cr_assert_eq(a->step, pos * g->k + rk->halves,
                     "%s rank %d: half of step %d, "
                     "%d due",
                     g->what, r, a->step, pos * g->k + rk->halves);
        cr_assert_eq(rk->halves, rk->merges, "%s rank %d: two halves unmerged",
                     g->what, r);
        cr_assert_eq(s->state, SLOT_FREE, "%s rank %d: half into busy slot %d",
                     g->what, r, a->slot);
        *s = (slot_t){SLOT_DATA, a->j, 0, -1, 0};
        rk->halves++;
        return;
    }
    cr_assert_eq(a->step, pos * g->k + rk->merges);
    cr_assert_eq(rk->halves, rk->merges + 1, "%s rank %d: merge without its half",
                 g->what, r);
    in = slot_of(g, r, a->slot2, a);
    cr_assert(in->state == SLOT_DATA && in->msg == SVP_SCHEDULE_MSG_HALF &&
                  in->key ==
                      msg_key(g, r,
                              &(svp_schedule_action_t){.msg  = SVP_SCHEDULE_MSG_HALF,
                                                       .j    = a->j,
                                                       .step = a->step}),
              "%s rank %d: merge of step %d without the other half in slot %d",
              g->what, r, a->step, a->slot2);
    in->state = SLOT_FREE;
    if (++rk->merges == g->k) {
        steps_done(g, r, a->j);
    }
}

/* One action of rank r; 0 when it must wait for another rank. */
static int step(group_t *g, int r, const svp_schedule_action_t *a)
{
    rank_t *rk = &g->rank[r];
    slot_t *s  = (a->slot >= 0) ? slot_of(g, r, a->slot, a) : NULL;
    int     S = g->p.stages, pos = r / g->C, lane = r % g->C;

    switch (a->kind) {
    case SVP_SCHEDULE_POST_RECV:
        cr_assert(s != NULL && s->state == SLOT_FREE,
                  "%s rank %d: receive of %d "
                  "posted into busy slot %d",
                  g->what, r, a->j, a->slot);
        *s = (slot_t){SLOT_RECV, a->j, a->msg, peer_of(g, r, a), msg_key(g, r, a)};
        g->posted[a->msg][s->peer][r][s->key]++;
        break;
    case SVP_SCHEDULE_WAIT:
        cr_assert(s != NULL);
        return step_wait(g, r, a, s);
    case SVP_SCHEDULE_BEGIN:
        cr_assert_eq(spec_encoder(&g->p, a->j), pos,
                     "%s: sample %d begun on position %d", g->what, a->j, pos);
        cr_assert_eq(g->begun[lane][a->j]++, 0, "%s: sample %d begun twice", g->what,
                     a->j);
        cr_assert_eq(rk->cur, -1, "%s rank %d: begin while %d is live", g->what, r,
                     rk->cur);
        if (s != NULL) {
            cr_assert_eq(s->state, SLOT_FREE, "%s rank %d: begin into busy slot %d",
                         g->what, r, a->slot);
            *s = (slot_t){SLOT_HOLDS, a->j, 0, -1, 0};
        }
        rk->cur    = a->j;
        rk->halves = rk->merges = rk->shared = 0;
        break;
    case SVP_SCHEDULE_STEPS:
        cr_assert(g->C == 1, "%s rank %d: whole steps on a pair", g->what, r);
        cr_assert_eq(rk->cur, a->j, "%s rank %d: steps of %d, %d is live", g->what,
                     r, a->j, rk->cur);
        steps_done(g, r, a->j);
        break;
    case SVP_SCHEDULE_HALF:
    case SVP_SCHEDULE_MERGE:
        step_pair(g, r, a, s);
        break;
    case SVP_SCHEDULE_SEND:
        cr_assert(s != NULL);
        step_send(g, r, a, s);
        break;
    case SVP_SCHEDULE_SHARE:
        cr_assert(g->C == 2 && rk->cur == a->j && g->steps[lane][a->j] == S &&
                      !rk->shared && spec_finisher(&g->p, a->j) == pos &&
                      pos == S - 1,
                  "%s rank %d: share of %d", g->what, r, a->j);
        cr_assert((lane == 1) == (s != NULL),
                  "%s rank %d: lane %d's share in slot %d", g->what, r, lane,
                  a->slot);
        if (s != NULL) {
            cr_assert(s->state == SLOT_FREE &&
                      svp_schedule_slot_frame(&rk->it.slots, a->slot) ==
                          SVP_SCHEDULE_FRAME_SHARE);
            *s = (slot_t){SLOT_DATA, a->j, 0, -1, 0};
        }
        rk->shared = 1;
        break;
    case SVP_SCHEDULE_FINISH:
        cr_assert_eq(lane, 0, "%s rank %d: lane 1 finishes", g->what, r);
        cr_assert_eq(spec_finisher(&g->p, a->j), pos,
                     "%s: sample %d finished on position "
                     "%d",
                     g->what, a->j, pos);
        cr_assert_eq(g->steps[0][a->j], S,
                     "%s: sample %d finished after %d of %d "
                     "stages",
                     g->what, a->j, g->steps[0][a->j], S);
        cr_assert_eq(g->finished[a->j]++, 0, "%s: sample %d finished twice", g->what,
                     a->j);
        cr_assert_eq(rk->cur, a->j);
        if (a->slot2 >= 0) {
            slot_t *in = slot_of(g, r, a->slot2, a);

            cr_assert(rk->shared && in->state == SLOT_DATA &&
                          in->msg == SVP_SCHEDULE_MSG_SHARE && in->j == a->j,
                      "%s rank %d: a shared finish of %d without both shares",
                      g->what, r, a->j);
            in->state = SLOT_FREE;
        } else {
            /* a pair's last position shares its finishes; a final's
             * finisher (spread) finishes alone */
            cr_assert(g->C == 1 || pos != S - 1,
                      "%s rank %d: the last position of a "
                      "pair finishes %d alone",
                      g->what, r, a->j);
        }
        if (s != NULL) {
            cr_assert(s->state == SLOT_HOLDS && s->j == a->j);
            s->state = SLOT_FREE;
        }
        rk->cur = -1;
        break;
    case SVP_SCHEDULE_DROP:
        cr_assert(lane == 1 && rk->cur == a->j && pos == S - 1 &&
                      spec_finisher(&g->p, a->j) != pos,
                  "%s rank %d: drop of %d", g->what, r, a->j);
        cr_assert(s != NULL && s->state == SLOT_HOLDS && s->j == a->j);
        s->state = SLOT_FREE;
        rk->cur  = -1;
        break;
    case SVP_SCHEDULE_KIND_COUNT:
        cr_assert_fail("%s rank %d: no such kind", g->what, r);
    }
    if (a->chain) {
        cr_assert(a->kind == SVP_SCHEDULE_SEND || a->kind == SVP_SCHEDULE_FINISH ||
                  a->kind == SVP_SCHEDULE_DROP);
        cr_assert_eq(g->chain[r][a->j]++, 0, "%s rank %d: walk of %d ended twice",
                     g->what, r, a->j);
    }
    return 1;
}

/* Runs the group's lists together to their ends. */
static void run_group(group_t *g)
{
    int R = g->p.stages * g->C, live = R, moved;

    while (live > 0) {
        moved = 0;
        live  = 0;
        for (int r = 0; r < R; ++r) {
            rank_t *rk = &g->rank[r];

            while (!rk->done) {
                if (rk->held == NULL &&
                    (rk->held = svp_schedule_iter_next(&rk->it)) == NULL) {
                    rk->done = 1;
                    moved    = 1;
                    break;
                }
                if (!step(g, r, rk->held)) {
                    break;
                }
                rk->held = NULL;
                moved    = 1;
            }
            live += !rk->done;
        }
        cr_assert(live == 0 || moved, "%s: deadlock", g->what);
    }
}

static void check_group_c(svp_placement_t placement, int S, int n, int inflight,
                          int C, int k)
{
    group_t *g = calloc(1, sizeof(*g));
    int      R = S * C, n_fin;

    cr_assert_not_null(g);
    cr_assert(R <= MAX_W && n <= MAX_N && k <= MAX_K);
    g->p = (svp_schedule_params_t){placement, S, n, inflight, C, k};
    g->C = C;
    g->k = k;
    snprintf(g->what, sizeof(g->what), "S=%d C=%d k=%d n=%d inflight=%d %s", S, C, k,
             n, inflight, placement == SVP_PLACEMENT_SPREAD ? "spread" : "ends");
    for (int r = 0; r < R; ++r) {
        cr_assert_eq(svp_schedule_iter_init_lane(&g->rank[r].it, &g->p, r / C,
                                                 r % C),
                     SVP_OK);
        g->rank[r].cur = -1;
    }
    run_group(g);
    for (int j = 0; j < n; ++j) {
        for (int lane = 0; lane < C; ++lane) {
            cr_assert_eq(g->begun[lane][j], 1,
                         "%s: sample %d never begun on lane %d", g->what, j, lane);
            cr_assert_eq(g->steps[lane][j], S,
                         "%s: sample %d: %d of %d positions ran "
                         "its steps on lane %d",
                         g->what, j, g->steps[lane][j], S, lane);
        }
        cr_assert_eq(g->finished[j], 1, "%s: sample %d never finished", g->what, j);
        for (int r = 0; r < R; ++r) {
            cr_assert_eq(g->chain[r][j], 1, "%s: rank %d's walk of %d", g->what, r,
                         j);
        }
    }
    for (int m = 1; m < SVP_SCHEDULE_MSG_COUNT; ++m) {
        for (int a = 0; a < R; ++a) {
            for (int b = 0; b < R; ++b) {
                for (int x = 0; x < n * MAX_K; ++x) {
                    cr_assert(g->sent[m][a][b][x] != 1,
                              "%s: %s message of %d from "
                              "%d to %d never received",
                              g->what, svp_schedule_msg_name(m), x / MAX_K, a, b);
                    cr_assert_eq(g->posted[m][a][b][x], g->sent[m][a][b][x] ? 1 : 0,
                                 "%s: receive of %d from %d to %d (%s) without "
                                 "its send",
                                 g->what, x / MAX_K, a, b, svp_schedule_msg_name(m));
                }
            }
        }
    }
    for (int r = 0; r < R; ++r) {
        for (int q = 0; q < g->rank[r].it.slots.total; ++q) {
            cr_assert_eq(g->rank[r].slot[q].state, SLOT_FREE,
                         "%s rank %d: slot %d "
                         "still busy at the end",
                         g->what, r, q);
        }
        n_fin = (placement == SVP_PLACEMENT_SPREAD) ? (n - r / C + S - 1) / S
                                                    : (r / C == S - 1) * n;
        cr_assert_eq(svp_schedule_finishes(&g->p, r / C), n_fin);
    }
    free(g);
}

static void check_group(svp_placement_t placement, int S, int n, int inflight)
{
    check_group_c(placement, S, n, inflight, 1, 1);
}

Test(schedule, every_layout_of_the_tests)
{
    static const int samples[]   = {0, 1, 2, 3, 5, 7, 10, 11, 20, 40, 42};
    static const int inflights[] = {1, 2, 3, 8};

    for (int W = 1; W <= MAX_W; ++W) {
        for (int S = 1; S <= W; ++S) {
            if (W % S != 0) {
                continue;
            }
            for (int pl = 0; pl < 2; ++pl) {
                for (size_t k = 0; k < sizeof(samples) / sizeof(samples[0]); ++k) {
                    for (size_t f = 0; f < sizeof(inflights) / sizeof(inflights[0]);
                         ++f) {
                        int G = W / S, N = samples[k];

                        /* the worker deals position j to group j mod G */
                        for (int grp = 0; grp < G; ++grp) {
                            check_group(pl ? SVP_PLACEMENT_SPREAD
                                           : SVP_PLACEMENT_ENDS,
                                        S, (N > grp) ? (N - grp + G - 1) / G : 0,
                                        inflights[f]);
                        }
                    }
                }
            }
        }
    }
}

/* The placement rule: one function, the layout's (jobspec/layout.h). */
Test(schedule, placement)
{
    cr_assert_eq(svp_layout_place_of(SVP_PLACEMENT_ENDS, 4, 5, SVP_LAYOUT_ENCODES),
                 0);
    cr_assert_eq(svp_layout_place_of(SVP_PLACEMENT_ENDS, 4, 5, SVP_LAYOUT_FINISHES),
                 3);
    cr_assert_eq(svp_layout_place_of(SVP_PLACEMENT_SPREAD, 4, 5, SVP_LAYOUT_ENCODES),
                 1);
    cr_assert_eq(svp_layout_place_of(SVP_PLACEMENT_SPREAD, 4, 5,
                                     SVP_LAYOUT_FINISHES),
                 1);
    cr_assert_eq(svp_layout_place_of(SVP_PLACEMENT_SPREAD, 1, 5,
                                     SVP_LAYOUT_FINISHES),
                 0);
}

/*
 * Rank 1 of 3, spread, 4 samples, inflight 1, written out: it encodes
 * sample 1 for rank 0 before it waits for sample 0 (due after one stage,
 * the first: the encode counts), and finishes sample 1's final latent one
 * sample after it left the last rank.
 */
Test(schedule, one_list_by_hand)
{
    static const struct {
        svp_schedule_kind_t kind;
        int                 msg, j, slot, peer, due;
    } want[] = {
        {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_FINAL, 1, 3, 2, -1},
        {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_LATENT, 0, 0, 0, -1},
        {SVP_SCHEDULE_BEGIN, 0, 1, 5, -1, -1},
        {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_INIT, 1, 5, 0, -1},
        {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_LATENT, 0, 0, 0, 1},
        {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_LATENT, 1, 1, 0, -1},
        {SVP_SCHEDULE_STEPS, 0, 0, 0, -1, -1},
        {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_LATENT, 0, 0, 2, -1},
        {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_LATENT, 1, 1, 0, 1},
        {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_LATENT, 2, 2, 0, -1},
        {SVP_SCHEDULE_STEPS, 0, 1, 1, -1, -1},
        {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_LATENT, 1, 1, 2, -1},
        {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_LATENT, 2, 2, 0, 1},
        {SVP_SCHEDULE_WAIT, 0, -1, 0, -1, -1},
        {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_LATENT, 3, 0, 0, -1},
        {SVP_SCHEDULE_STEPS, 0, 2, 2, -1, -1},
        {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_LATENT, 2, 2, 2, -1},
        {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_LATENT, 3, 0, 0, 1},
        {SVP_SCHEDULE_STEPS, 0, 3, 0, -1, -1},
        {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_LATENT, 3, 0, 2, -1},
        {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_FINAL, 1, 3, 2, 3},
        {SVP_SCHEDULE_FINISH, 0, 1, 3, -1, -1},
        /* the drain: the sends still in flight */
        {SVP_SCHEDULE_WAIT, 0, -1, 0, -1, -1},
        {SVP_SCHEDULE_WAIT, 0, -1, 1, -1, -1},
        {SVP_SCHEDULE_WAIT, 0, -1, 2, -1, -1},
        {SVP_SCHEDULE_WAIT, 0, -1, 5, -1, -1},
    };
    svp_schedule_params_t        p = {SVP_PLACEMENT_SPREAD, 3, 4, 1, 1, 1};
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *a;

    cr_assert_eq(svp_schedule_iter_init(&it, &p, 1), SVP_OK);
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); ++k) {
        a = svp_schedule_iter_next(&it);
        cr_assert_not_null(a);
        cr_expect(a->kind == want[k].kind && (int)a->msg == want[k].msg &&
                      a->j == want[k].j && a->slot == want[k].slot &&
                      a->peer == want[k].peer && a->due_stages == want[k].due,
                  "action %zu: %s msg %d j %d slot %d peer %d due %d", k,
                  svp_schedule_kind_name(a->kind), a->msg, a->j, a->slot, a->peer,
                  a->due_stages);
    }
    cr_assert_null(svp_schedule_iter_next(&it));
}

Test(schedule, rejects_bad_parameters)
{
    svp_schedule_iter_t   it;
    svp_schedule_params_t p = {SVP_PLACEMENT_ENDS, 2, 3, 0, 1, 1};

    cr_assert_eq(svp_schedule_iter_init(&it, &p, 0), SVP_ERR_INVALID_PARAM);
    p.inflight = 65;
    cr_assert_eq(svp_schedule_iter_init(&it, &p, 0), SVP_ERR_INVALID_PARAM);
    p.inflight = 2;
    cr_assert_eq(svp_schedule_iter_init(&it, &p, 2), SVP_ERR_INVALID_PARAM);
}

/*
 * Guidance pairs (C = 2), by the strict interpreter above: both lanes of
 * every position, HALF and SHARE as actions and messages; and, beside the
 * pair's actions, lane 0 runs the list of C = 1.
 */
static int is_pairs_own(const svp_schedule_action_t *a,
                        const svp_schedule_slots_t  *sl)
{
    return a->kind == SVP_SCHEDULE_HALF || a->kind == SVP_SCHEDULE_MERGE ||
           a->kind == SVP_SCHEDULE_SHARE || a->msg == SVP_SCHEDULE_MSG_HALF ||
           a->msg == SVP_SCHEDULE_MSG_SHARE ||
           (a->slot >= 0 &&
            svp_schedule_slot_frame(sl, a->slot) != SVP_SCHEDULE_FRAME_SAMPLE);
}

static void check_lane0(svp_placement_t placement, int S, int n, int inflight)
{
    svp_schedule_params_t        p1 = {placement, S, n, inflight, 1, 2};
    svp_schedule_params_t        p2 = {placement, S, n, inflight, 2, 2};
    svp_schedule_iter_t          one, l0;
    const svp_schedule_action_t *a, *b;

    for (int r = 0; r < S; ++r) {
        cr_assert_eq(svp_schedule_iter_init(&one, &p1, r), SVP_OK);
        cr_assert_eq(svp_schedule_iter_init_lane(&l0, &p2, r, 0), SVP_OK);
        while ((a = svp_schedule_iter_next(&one)) != NULL) {
            do {
                b = svp_schedule_iter_next(&l0);
                cr_assert_not_null(b, "S=%d n=%d rank %d: lane 0 ends early", S, n,
                                   r);
            } while (is_pairs_own(b, &l0.slots));
            if (a->kind == SVP_SCHEDULE_STEPS) {
                /* the steps are the pair's: the next of the C = 1 list follows */
                cr_assert(b->j == a->j && b->kind != SVP_SCHEDULE_STEPS);
                a = svp_schedule_iter_next(&one);
                cr_assert_not_null(a);
            }
            cr_assert(
                a->kind == b->kind && a->msg == b->msg && a->j == b->j &&
                    a->slot == b->slot && a->peer == b->peer &&
                    a->due_stages == b->due_stages && a->chain == b->chain,
                "S=%d n=%d rank %d: lane 0's %s of %d differs from one rank's %s", S,
                n, r, svp_schedule_kind_name(b->kind), b->j,
                svp_schedule_kind_name(a->kind));
        }
        while ((b = svp_schedule_iter_next(&l0)) != NULL) {
            cr_assert(is_pairs_own(b, &l0.slots),
                      "S=%d n=%d rank %d: lane 0 goes on", S, n, r);
        }
    }
}

Test(schedule, guidance_pairs)
{
    static const int samples[] = {0, 1, 3, 7, 11, 40};

    for (int S = 1; S <= 4; ++S) {
        for (int pl = 0; pl < 2; ++pl) {
            for (size_t k = 0; k < sizeof(samples) / sizeof(samples[0]); ++k) {
                svp_placement_t place =
                    pl ? SVP_PLACEMENT_SPREAD : SVP_PLACEMENT_ENDS;

                for (int steps = 1; steps <= MAX_K; ++steps) {
                    check_group_c(place, S, samples[k], 1 + (int)k % 3, 2, steps);
                }
                check_lane0(place, S, samples[k], 1 + (int)k % 3);
            }
        }
    }
    /* a lane out of range, or more than two */
    {
        svp_schedule_params_t p = {SVP_PLACEMENT_SPREAD, 2, 4, 2, 2, 1};
        svp_schedule_iter_t   it;

        cr_expect_eq(svp_schedule_iter_init_lane(&it, &p, 0, 2),
                     SVP_ERR_INVALID_PARAM);
        p.pairs = 3;
        cr_expect_eq(svp_schedule_iter_init_lane(&it, &p, 0, 1),
                     SVP_ERR_INVALID_PARAM);
    }
}

/*
 * A pair's step and shared finish, written out: position 0 of S = 1, C = 2,
 * one sample, two steps, lanes 0 and 1 (slots: half out 0, in 1, share 2).
 */
Test(schedule, pair_list_by_hand)
{
    static const struct {
        svp_schedule_kind_t kind;
        int                 msg, step, slot, slot2, peer_lane, chain;
    } want[2][12] =
        {{
             {SVP_SCHEDULE_BEGIN, 0, -1, -1, -1, 0, 0},
             {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_HALF, 0, 1, -1, 1, 0},
             {SVP_SCHEDULE_HALF, 0, 0, 0, -1, 0, 0},
             {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_HALF, 0, 0, -1, 1, 0},
             {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_HALF, 0, 1, -1, 1, 0},
             {SVP_SCHEDULE_MERGE, 0, 0, 0, 1, 0, 0},
             {SVP_SCHEDULE_WAIT, 0, -1, 0, -1, 0, 0},
             {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_HALF, 1, 1, -1, 1, 0},
             {SVP_SCHEDULE_HALF, 0, 1, 0, -1, 0, 0},
             {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_HALF, 1, 0, -1, 1, 0},
             {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_HALF, 1, 1, -1, 1, 0},
             {SVP_SCHEDULE_MERGE, 0, 1, 0, 1, 0, 0},
         },
         {
             {SVP_SCHEDULE_BEGIN, 0, -1, -1, -1, 1, 0},
             {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_HALF, 0, 1, -1, 0, 0},
             {SVP_SCHEDULE_HALF, 0, 0, 0, -1, 1, 0},
             {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_HALF, 0, 0, -1, 0, 0},
             {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_HALF, 0, 1, -1, 0, 0},
             {SVP_SCHEDULE_MERGE, 0, 0, 0, 1, 1, 0},
             {SVP_SCHEDULE_WAIT, 0, -1, 0, -1, 1, 0},
             {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_HALF, 1, 1, -1, 0, 0},
             {SVP_SCHEDULE_HALF, 0, 1, 0, -1, 1, 0},
             {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_HALF, 1, 0, -1, 0, 0},
             {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_HALF, 1, 1, -1, 0, 0},
             {SVP_SCHEDULE_MERGE, 0, 1, 0, 1, 1, 0},
         }};
    static const struct {
        svp_schedule_kind_t kind;
        int                 msg, slot, slot2, peer_lane, chain;
    } fin[2][5]                          = {{
                                                {SVP_SCHEDULE_POST_RECV, SVP_SCHEDULE_MSG_SHARE, 2, -1, 1, 0},
                                                {SVP_SCHEDULE_SHARE, 0, -1, -1, 0, 0},
                                                {SVP_SCHEDULE_WAIT, SVP_SCHEDULE_MSG_SHARE, 2, -1, 1, 0},
                                                {SVP_SCHEDULE_FINISH, 0, -1, 2, 0, 1},
                                                {SVP_SCHEDULE_WAIT, 0, 0, -1, 0,
                                                 0}, /* the drain: the last half */
                   },
                                            {
                                                {SVP_SCHEDULE_SHARE, 0, 2, -1, 1, 0},
                                                {SVP_SCHEDULE_SEND, SVP_SCHEDULE_MSG_SHARE, 2, -1, 0, 1},
                                                {SVP_SCHEDULE_WAIT, 0, 0, -1, 1, 0},
                                                {SVP_SCHEDULE_WAIT, 0, 2, -1, 1, 0},
                   }};
    static const int             nfin[2] = {5, 4};
    svp_schedule_params_t        p       = {SVP_PLACEMENT_ENDS, 1, 1, 2, 2, 2};
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *a;

    for (int lane = 0; lane < 2; ++lane) {
        cr_assert_eq(svp_schedule_iter_init_lane(&it, &p, 0, lane), SVP_OK);
        cr_assert(it.slots.half == 2 && it.slots.share == 1 && it.slots.total == 3);
        for (int k = 0; k < 12; ++k) {
            a = svp_schedule_iter_next(&it);
            cr_assert_not_null(a);
            cr_expect(a->kind == want[lane][k].kind &&
                          (int)a->msg == want[lane][k].msg &&
                          a->step == want[lane][k].step &&
                          a->slot == want[lane][k].slot &&
                          a->slot2 == want[lane][k].slot2 &&
                          a->peer_lane == want[lane][k].peer_lane &&
                          a->chain == want[lane][k].chain &&
                          a->j == ((a->kind == SVP_SCHEDULE_WAIT && a->msg == 0)
                                       ? -1
                                       : 0) &&
                          (a->kind != SVP_SCHEDULE_WAIT || a->msg == 0 ||
                           a->due_stages == 0),
                      "lane %d action %d: %s msg %d step %d slot %d/%d peer lane %d",
                      lane, k, svp_schedule_kind_name(a->kind), a->msg, a->step,
                      a->slot, a->slot2, a->peer_lane);
        }
        for (int k = 0; k < nfin[lane]; ++k) {
            a = svp_schedule_iter_next(&it);
            cr_assert_not_null(a);
            cr_expect(
                a->kind == fin[lane][k].kind && (int)a->msg == fin[lane][k].msg &&
                    a->slot == fin[lane][k].slot && a->slot2 == fin[lane][k].slot2 &&
                    a->peer_lane == fin[lane][k].peer_lane &&
                    a->chain == fin[lane][k].chain,
                "lane %d finishing action %d: %s msg %d slot %d/%d peer lane %d",
                lane, k, svp_schedule_kind_name(a->kind), a->msg, a->slot, a->slot2,
                a->peer_lane);
        }
        cr_assert_null(svp_schedule_iter_next(&it));
    }
}

/*
 * The layout object against what the executor does: for every layout of
 * the tests (G groups x S positions x C lanes, both placements), a job's
 * run list (every sample; a shard of it; a resumed list with holes) is
 * dealt by svp_layout_deal as pipe.c deals it, each rank's list is walked as
 * the worker walks it, each FINISH lane 0 runs must be the sample's owner's
 * (svp_layout_owner), once, and every message's peer must be a rank of the
 * same group and lane, a neighbour position for a walk's LATENT.
 */
static void check_owner(svp_placement_t placement, int G, int S, int C,
                        const int *run, int nrun)
{
    svp_layout_t                 l;
    svp_schedule_params_t        p;
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *a;
    svp_layout_place_t           at, peer;
    int                         *finished, g, pos, lane, rank, k, j, n;

    cr_assert_eq(svp_layout_make(2 * S, G * S * C, S, C, placement, NULL, 0, &l),
                 SVP_OK);
    cr_assert_eq(l.groups, G);
    finished = calloc((size_t)nrun + 1, sizeof(*finished));
    cr_assert_not_null(finished);
    for (g = 0; g < G; ++g) {
        /* the group's share: k = g, g + G, ... (svp_layout_deal) */
        for (n = 0, k = 0; k < nrun; ++k) {
            int gk, jk;
            svp_layout_deal(&l, k, &gk, &jk);
            n += (gk == g);
        }
        cr_assert_eq(svp_layout_group_samples(&l, nrun, g), n);
        p = svp_schedule_params_of(&l, n, 2);
        for (pos = 0; pos < S; ++pos) {
            for (lane = 0; lane < C; ++lane) {
                rank = svp_layout_rank(&l, g, pos, lane);
                at   = svp_layout_where(&l, rank);
                cr_assert(at.group == g && at.position == pos && at.lane == lane);
                cr_assert_eq(svp_schedule_iter_init_lane(&it, &p, pos, lane),
                             SVP_OK);
                while ((a = svp_schedule_iter_next(&it)) != NULL) {
                    if ((a->kind == SVP_SCHEDULE_SEND ||
                         a->kind == SVP_SCHEDULE_POST_RECV) &&
                        a->msg == SVP_SCHEDULE_MSG_LATENT) {
                        peer = svp_layout_where(&l, svp_layout_rank(&l, g, a->peer,
                                                                    a->peer_lane));
                        cr_assert(
                            peer.group == g && peer.lane == lane &&
                                abs(peer.position - pos) == 1,
                            "G=%d S=%d C=%d: rank %d's latent peer is position %d "
                            "lane %d",
                            G, S, C, rank, a->peer, a->peer_lane);
                    }
                    if (a->kind != SVP_SCHEDULE_FINISH || lane != 0) {
                        continue;
                    }
                    j = a->j;
                    k = g + j * G; /* the job's k-th sample of its run */
                    cr_assert_lt(k, nrun);
                    cr_assert_eq(svp_layout_owner(&l, k), rank,
                                 "G=%d S=%d C=%d %s: sample %d (k=%d) finished by "
                                 "rank %d, owner says %d",
                                 G, S, C,
                                 placement == SVP_PLACEMENT_SPREAD ? "spread"
                                                                   : "ends",
                                 run[k], k, rank, svp_layout_owner(&l, k));
                    ++finished[k];
                }
            }
        }
    }
    for (k = 0; k < nrun; ++k) {
        cr_assert_eq(finished[k], 1, "G=%d S=%d C=%d: sample %d finished %d times",
                     G, S, C, run[k], finished[k]);
    }
    free(finished);
}

Test(schedule, owner_is_who_the_executor_finishes_by)
{
    static const struct {
        int G, S, C;
    } layouts[] = {{1, 1, 1}, {1, 2, 1}, {1, 3, 1}, {1, 4, 1}, {1, 6, 1}, {1, 7, 1},
                   {2, 2, 1}, {2, 3, 1}, {3, 2, 1}, {4, 1, 1}, {6, 1, 1}, {1, 1, 2},
                   {1, 2, 2}, {2, 2, 2}, {4, 1, 2}, {1, 4, 2}};
    svp_placement_t pl[] = {SVP_PLACEMENT_SPREAD, SVP_PLACEMENT_ENDS};
    int             all[40], shard[14], resumed[30], n, i, x, y;

    for (i = 0; i < 40; ++i) {
        all[i] = i;
    }
    for (n = 0, i = 1; i < 40; i += 3) {
        shard[n++] = i; /* shard 1 of 3 */
    }
    for (n = 0, i = 0; i < 40; ++i) {
        if (i % 4 != 2 && n < 30) {
            resumed[n++] = i; /* an earlier run finished some */
        }
    }
    for (x = 0; x < (int)(sizeof(layouts) / sizeof(layouts[0])); ++x) {
        for (y = 0; y < 2; ++y) {
            check_owner(pl[y], layouts[x].G, layouts[x].S, layouts[x].C, all, 40);
            check_owner(pl[y], layouts[x].G, layouts[x].S, layouts[x].C, shard, 13);
            check_owner(pl[y], layouts[x].G, layouts[x].S, layouts[x].C, resumed, n);
            check_owner(pl[y], layouts[x].G, layouts[x].S, layouts[x].C, all, 1);
        }
    }
}
