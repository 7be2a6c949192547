/*
 * The pipeline's schedule (pipe/schedule.h), checked list by list over the
 * layouts the other tests run: W = 1, 2, 4, 7 ranks with 10 and 40 samples
 * (tests/pipeline_cluster.sh), W = 6 with S = 1, 2, 3, 6 and 11 samples
 * (tests/layout_cluster.sh), shards and resumed lists (fewer samples), one
 * rank (tests/test_pipe.c, test_resume.c), the benchmark's W = 7 with 20 and
 * 42 samples; both placements and several comm.inflight.  The grid below
 * holds all of them.
 *
 * For every group the S lists are run together by a strict interpreter:
 *   - a wait for a receive blocks until the peer has sent that sample, and
 *     a wait for a send until the peer has posted its receive (a rendezvous
 *     send, the strictest the comm may be): every list must run to its end
 *     (no deadlock) with every send received and every receive sent;
 *   - a slot is posted into, begun into or sent from only when nothing is
 *     pending on it and no sample lives in it (no frame reused in flight);
 *   - sample j is begun once, on the rank the spec's placement names, runs
 *     its steps once on every rank in order, and is finished once where the
 *     placement names; each rank ends its walk of j once (chain).
 */
#include "pipe/schedule.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_W     8
#define MAX_N     48

enum { SLOT_FREE, SLOT_RECV, SLOT_HOLDS, SLOT_SEND };

typedef struct {
    int state, j, msg, peer;
} slot_t;

typedef struct {
    svp_schedule_iter_t          it;
    const svp_schedule_action_t *held;
    svp_schedule_slots_t         slots;
    slot_t                       slot[SVP_SCHEDULE_MAX_SLOTS];
    int                          done, cur;     /* the sample being worked on */
} rank_t;

typedef struct {
    svp_schedule_params_t p;
    rank_t                rank[MAX_W];
    /* [msg][from][to][j]: 1 sent, 2 received */
    unsigned char         sent[4][MAX_W][MAX_W][MAX_N];
    unsigned char         posted[4][MAX_W][MAX_W][MAX_N];
    int                   begun[MAX_N], finished[MAX_N], chain[MAX_W][MAX_N];
    int                   steps[MAX_N];   /* ranks that ran j's steps so far */
    char                  what[128];
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

static int slot_ok(group_t *g, int r, const svp_schedule_action_t *a)
{
    cr_assert(a->slot >= 0 && a->slot < g->rank[r].slots.total,
              "%s rank %d: %s of %d in slot %d of %d", g->what, r,
              svp_schedule_kind_name(a->kind), a->j, a->slot, g->rank[r].slots.total);
    return 1;
}

/* One action of rank r; 0 when it must wait for another rank. */
static int step(group_t *g, int r, const svp_schedule_action_t *a)
{
    rank_t *rk = &g->rank[r];
    slot_t *s  = (a->slot >= 0 && slot_ok(g, r, a)) ? &rk->slot[a->slot] : NULL;
    int     S  = g->p.stages;

    switch (a->kind) {
    case SVP_SCHEDULE_POST_RECV:
        cr_assert(s != NULL && s->state == SLOT_FREE, "%s rank %d: receive of %d "
                  "posted into busy slot %d", g->what, r, a->j, a->slot);
        *s = (slot_t){SLOT_RECV, a->j, a->msg, a->peer};
        g->posted[a->msg][a->peer][r][a->j]++;
        break;
    case SVP_SCHEDULE_WAIT:
        cr_assert(s != NULL && (s->state == SLOT_RECV || s->state == SLOT_SEND),
                  "%s rank %d: wait on idle slot %d", g->what, r, a->slot);
        if (s->state == SLOT_SEND) {
            cr_assert_eq(a->msg, SVP_SCHEDULE_MSG_NONE);
            if (g->posted[s->msg][r][s->peer][s->j] == 0) {
                return 0;   /* rendezvous: the receive is not posted yet */
            }
            s->state = SLOT_FREE;
            break;
        }
        cr_assert(a->msg == s->msg && a->j == s->j && a->peer == s->peer,
                  "%s rank %d: wait for %d does not match the receive posted "
                  "(%d)", g->what, r, a->j, s->j);
        if (g->sent[a->msg][a->peer][r][a->j] == 0) {
            return 0;
        }
        cr_assert_eq(g->sent[a->msg][a->peer][r][a->j], 1, "%s: received twice", g->what);
        g->sent[a->msg][a->peer][r][a->j] = 2;
        s->state = SLOT_HOLDS;
        rk->cur  = a->j;
        break;
    case SVP_SCHEDULE_BEGIN:
        cr_assert_eq(spec_encoder(&g->p, a->j), r, "%s: sample %d begun on rank %d",
                     g->what, a->j, r);
        cr_assert_eq(g->begun[a->j]++, 0, "%s: sample %d begun twice", g->what, a->j);
        cr_assert_eq(rk->cur, -1, "%s rank %d: begin while %d is live", g->what, r, rk->cur);
        if (s != NULL) {
            cr_assert_eq(s->state, SLOT_FREE, "%s rank %d: begin into busy slot %d",
                         g->what, r, a->slot);
            *s = (slot_t){SLOT_HOLDS, a->j, 0, -1};
        }
        rk->cur = a->j;
        break;
    case SVP_SCHEDULE_STEPS:
        cr_assert_eq(rk->cur, a->j, "%s rank %d: steps of %d, %d is live", g->what, r,
                     a->j, rk->cur);
        cr_assert_eq(g->steps[a->j], r, "%s: sample %d on rank %d after %d ranks",
                     g->what, a->j, r, g->steps[a->j]);
        cr_assert(g->begun[a->j] == 1);
        g->steps[a->j]++;
        break;
    case SVP_SCHEDULE_SEND:
        cr_assert(s != NULL && s->state == SLOT_HOLDS && s->j == a->j && rk->cur == a->j,
                  "%s rank %d: send of %d from slot %d that does not hold it",
                  g->what, r, a->j, a->slot);
        cr_assert(a->peer >= 0 && a->peer < S && a->peer != r);
        cr_assert_eq(g->sent[a->msg][r][a->peer][a->j], 0, "%s: sent twice", g->what);
        g->sent[a->msg][r][a->peer][a->j] = 1;
        *s      = (slot_t){SLOT_SEND, a->j, a->msg, a->peer};
        rk->cur = -1;
        break;
    case SVP_SCHEDULE_FINISH:
        cr_assert_eq(spec_finisher(&g->p, a->j), r, "%s: sample %d finished on rank "
                     "%d", g->what, a->j, r);
        cr_assert_eq(g->steps[a->j], S, "%s: sample %d finished after %d of %d "
                     "stages", g->what, a->j, g->steps[a->j], S);
        cr_assert_eq(g->finished[a->j]++, 0, "%s: sample %d finished twice", g->what, a->j);
        cr_assert_eq(rk->cur, a->j);
        if (s != NULL) {
            cr_assert(s->state == SLOT_HOLDS && s->j == a->j);
            s->state = SLOT_FREE;
        }
        rk->cur = -1;
        break;
    case SVP_SCHEDULE_PAIR_STEPS:
    case SVP_SCHEDULE_DROP:
        cr_assert_fail("%s rank %d: a %s in a list without pairs", g->what, r,
                       svp_schedule_kind_name(a->kind));
        break;
    }
    if ((a->kind == SVP_SCHEDULE_SEND || a->kind == SVP_SCHEDULE_FINISH) && a->chain) {
        cr_assert_eq(g->chain[r][a->j]++, 0, "%s rank %d: walk of %d ended twice",
                     g->what, r, a->j);
    }
    return 1;
}

static void check_group(svp_placement_t placement, int S, int n, int inflight)
{
    group_t *g = calloc(1, sizeof(*g));
    int      live = S, moved;

    cr_assert_not_null(g);
    g->p = (svp_schedule_params_t){placement, S, n, inflight, 1};
    snprintf(g->what, sizeof(g->what), "S=%d n=%d inflight=%d %s", S, n, inflight,
             placement == SVP_PLACEMENT_SPREAD ? "spread" : "ends");
    for (int r = 0; r < S; ++r) {
        cr_assert_eq(svp_schedule_iter_init(&g->rank[r].it, &g->p, r), SVP_OK);
        svp_schedule_slots(&g->p, r, &g->rank[r].slots);
        g->rank[r].cur = -1;
    }
    while (live > 0) {
        moved = 0;
        live  = 0;
        for (int r = 0; r < S; ++r) {
            rank_t *rk = &g->rank[r];

            while (!rk->done) {
                if (rk->held == NULL && (rk->held = svp_schedule_iter_next(&rk->it)) == NULL) {
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
    for (int j = 0; j < n; ++j) {
        cr_assert_eq(g->begun[j], 1, "%s: sample %d never begun", g->what, j);
        cr_assert_eq(g->finished[j], 1, "%s: sample %d never finished", g->what, j);
        for (int r = 0; r < S; ++r) {
            cr_assert_eq(g->chain[r][j], 1, "%s: rank %d's walk of %d", g->what, r, j);
        }
    }
    for (int m = 1; m < 4; ++m) {
        for (int a = 0; a < S; ++a) {
            for (int b = 0; b < S; ++b) {
                for (int j = 0; j < n; ++j) {
                    cr_assert(g->sent[m][a][b][j] != 1, "%s: message %d of %d from "
                              "%d to %d never received", g->what, m, j, a, b);
                    cr_assert_eq(g->posted[m][a][b][j], g->sent[m][a][b][j] ? 1 : 0,
                                 "%s: receive of %d from %d to %d (kind %d) without "
                                 "its send", g->what, j, a, b, m);
                }
            }
        }
    }
    for (int r = 0; r < S; ++r) {
        for (int k = 0; k < g->rank[r].slots.total; ++k) {
            cr_assert_eq(g->rank[r].slot[k].state, SLOT_FREE, "%s rank %d: slot %d "
                         "still busy at the end", g->what, r, k);
        }
        cr_assert_eq(svp_schedule_finishes(&g->p, r),
                     (int)(placement == SVP_PLACEMENT_SPREAD ? (n - r + S - 1) / S :
                           (r == S - 1) * n));
    }
    free(g);
}

Test(schedule, every_layout_of_the_tests)
{
    static const int samples[] = {0, 1, 2, 3, 5, 7, 10, 11, 20, 40, 42};
    static const int inflights[] = {1, 2, 3, 8};

    for (int W = 1; W <= MAX_W; ++W) {
        for (int S = 1; S <= W; ++S) {
            if (W % S != 0) {
                continue;
            }
            for (int pl = 0; pl < 2; ++pl) {
                for (size_t k = 0; k < sizeof(samples) / sizeof(samples[0]); ++k) {
                    for (size_t f = 0; f < sizeof(inflights) / sizeof(inflights[0]); ++f) {
                        int G = W / S, N = samples[k];

                        /* the worker deals position j to group j mod G */
                        for (int grp = 0; grp < G; ++grp) {
                            check_group(pl ? SVP_PLACEMENT_SPREAD : SVP_PLACEMENT_ENDS,
                                        S, (N > grp) ? (N - grp + G - 1) / G : 0,
                                        inflights[f]);
                        }
                    }
                }
            }
        }
    }
}

/* The placement rule: one function, as pipe.h states it. */
Test(schedule, placement)
{
    cr_assert_eq(svp_schedule_place(SVP_PLACEMENT_ENDS, 4, 5, SVP_SCHEDULE_ENCODES), 0);
    cr_assert_eq(svp_schedule_place(SVP_PLACEMENT_ENDS, 4, 5, SVP_SCHEDULE_FINISHES), 3);
    cr_assert_eq(svp_schedule_place(SVP_PLACEMENT_SPREAD, 4, 5, SVP_SCHEDULE_ENCODES), 1);
    cr_assert_eq(svp_schedule_place(SVP_PLACEMENT_SPREAD, 4, 5, SVP_SCHEDULE_FINISHES), 1);
    cr_assert_eq(svp_schedule_place(SVP_PLACEMENT_SPREAD, 1, 5, SVP_SCHEDULE_FINISHES), 0);
}

/*
 * Rank 1 of 3, spread, 4 samples, inflight 1, written out: it encodes
 * sample 1 for rank 0 before it waits for sample 0 (due after one stage,
 * the first: the encode counts), and finishes sample 1's final latent one
 * sample after it left the last rank.
 */
Test(schedule, one_list_by_hand)
{
    static const struct { svp_schedule_kind_t kind; int msg, j, slot, peer, due; } want[] = {
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
    svp_schedule_params_t        p = {SVP_PLACEMENT_SPREAD, 3, 4, 1, 1};
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
    svp_schedule_params_t p = {SVP_PLACEMENT_ENDS, 2, 3, 0, 1};

    cr_assert_eq(svp_schedule_iter_init(&it, &p, 0), SVP_ERR_INVALID_PARAM);
    p.inflight = 65;
    cr_assert_eq(svp_schedule_iter_init(&it, &p, 0), SVP_ERR_INVALID_PARAM);
    p.inflight = 2;
    cr_assert_eq(svp_schedule_iter_init(&it, &p, 2), SVP_ERR_INVALID_PARAM);
}

/*
 * Guidance pairs (C = 2): lane 0 runs the list of C = 1 with PAIR_STEPS in
 * place of STEPS, and its FINISHes on the last position shared (peer set);
 * lane 1 the same without finals (no FINAL message: a DROP where lane 0
 * sends one); both lanes run their PAIR_STEPS and shared FINISHes in the
 * same order (so each exchange finds its other half), and end each walk
 * once.
 */
static int pair_next(svp_schedule_iter_t *it, svp_schedule_action_t *a)
{
    const svp_schedule_action_t *n = svp_schedule_iter_next(it);

    if (n != NULL) {
        *a = *n;
    }
    return n != NULL;
}

static void check_pairs(svp_placement_t placement, int S, int n, int inflight)
{
    svp_schedule_params_t p = {placement, S, n, inflight, 1};
    svp_schedule_iter_t   one, l0, l1;
    svp_schedule_action_t a, b;
    int                   r, steps0[2 * MAX_N], steps1[2 * MAX_N], k0, k1, chain1, more;
    int                   pair_steps;

    for (r = 0; r < S; ++r) {
        p.pairs = 1;
        cr_assert_eq(svp_schedule_iter_init(&one, &p, r), SVP_OK);
        p.pairs = 2;
        cr_assert_eq(svp_schedule_iter_init_lane(&l0, &p, r, 0), SVP_OK);
        cr_assert_eq(svp_schedule_iter_init_lane(&l1, &p, r, 1), SVP_OK);
        k0 = 0;
        while ((more = pair_next(&one, &a)) != 0) {
            cr_assert(pair_next(&l0, &b), "S=%d n=%d rank %d: lane 0 ends early", S, n, r);
            if (a.kind == SVP_SCHEDULE_STEPS) {
                cr_assert(b.kind == SVP_SCHEDULE_PAIR_STEPS && b.msg == SVP_SCHEDULE_MSG_HALF &&
                          b.peer == r && b.j == a.j && b.slot == a.slot);
                steps0[k0++] = b.j;
            } else if (a.kind == SVP_SCHEDULE_FINISH && b.peer >= 0) {
                /* shared with lane 1: on the last position, where j's walk ends */
                cr_assert(b.kind == a.kind && b.j == a.j && b.chain && r == S - 1 &&
                          b.peer == r, "S=%d n=%d rank %d", S, n, r);
                cr_assert(k0 < 2 * MAX_N);
                steps0[k0++] = -1 - b.j;
            } else {
                cr_assert(memcmp(&a, &b, sizeof(a)) == 0, "S=%d n=%d rank %d: lane 0 "
                          "differs from one rank's list at a %s", S, n, r,
                          svp_schedule_kind_name(a.kind));
            }
        }
        cr_assert(!pair_next(&l0, &b));
        k1 = chain1 = 0;
        while (pair_next(&l1, &b)) {
            cr_assert(b.kind != SVP_SCHEDULE_STEPS && b.msg != SVP_SCHEDULE_MSG_FINAL &&
                      (b.kind != SVP_SCHEDULE_FINISH || b.peer == r),
                      "S=%d n=%d rank %d lane 1: a %s", S, n, r,
                      svp_schedule_kind_name(b.kind));
            cr_assert(b.slot < l1.slots.total);
            if (b.kind == SVP_SCHEDULE_PAIR_STEPS) {
                cr_assert(k1 < 2 * MAX_N);
                steps1[k1++] = b.j;
            }
            if (b.kind == SVP_SCHEDULE_FINISH) {
                cr_assert(k1 < 2 * MAX_N);
                steps1[k1++] = -1 - b.j;
            }
            if (b.kind == SVP_SCHEDULE_DROP) {
                cr_assert(b.chain && r == S - 1);
            }
            chain1 += b.chain;
        }
        cr_assert_eq(l1.slots.final, 0);
        pair_steps = 0;
        for (int q = 0; q < k0; ++q) {
            pair_steps += (steps0[q] >= 0);
        }
        cr_assert_eq(pair_steps, n);
        cr_assert_eq(k1, k0, "S=%d n=%d rank %d: %d pair steps on lane 0, %d on lane 1",
                     S, n, r, k0, k1);
        cr_assert(memcmp(steps0, steps1, (size_t)k0 * sizeof(int)) == 0,
                  "S=%d n=%d rank %d: the lanes' steps in another order", S, n, r);
        cr_assert_eq(chain1, n, "S=%d n=%d rank %d: lane 1 ends %d walks", S, n, r, chain1);
    }
}

Test(schedule, guidance_pairs)
{
    static const int samples[] = {0, 1, 3, 7, 11, 40};

    for (int S = 1; S <= 4; ++S) {
        for (int pl = 0; pl < 2; ++pl) {
            for (size_t k = 0; k < sizeof(samples) / sizeof(samples[0]); ++k) {
                check_pairs(pl ? SVP_PLACEMENT_SPREAD : SVP_PLACEMENT_ENDS, S,
                            samples[k], 1 + (int)k % 3);
            }
        }
    }
    /* a lane out of range, or more than two */
    {
        svp_schedule_params_t p = {SVP_PLACEMENT_SPREAD, 2, 4, 2, 2};
        svp_schedule_iter_t   it;

        cr_expect_eq(svp_schedule_iter_init_lane(&it, &p, 0, 2), SVP_ERR_INVALID_PARAM);
        p.pairs = 3;
        cr_expect_eq(svp_schedule_iter_init_lane(&it, &p, 0, 1), SVP_ERR_INVALID_PARAM);
    }
}

/*
 * svp_schedule_owner against what the executor does: for every layout of
 * the tests (G groups x S positions x C lanes, both placements), a job's
 * run list (every sample; a shard of it; a resumed list with holes) is
 * dealt as pipe.c deals it, each rank's list is walked as the worker walks
 * it, and each FINISH lane 0 runs must be the sample's owner's, once.
 */
static void check_owner(svp_placement_t placement, int G, int S, int C,
                        const int *run, int nrun)
{
    svp_schedule_layout_t l = { placement, G, S, C };
    svp_schedule_params_t p;
    svp_schedule_iter_t   it;
    const svp_schedule_action_t *a;
    int  *finished, g, pos, lane, rank, k, j, n;

    finished = calloc((size_t)nrun + 1, sizeof(*finished));
    cr_assert_not_null(finished);
    for (g = 0; g < G; ++g) {
        /* the group's share: k = g, g + G, ... (svp_schedule_deal) */
        for (n = 0, k = 0; k < nrun; ++k) {
            int gk, jk;
            svp_schedule_deal(&l, k, &gk, &jk);
            n += (gk == g);
        }
        p.placement = placement;
        p.stages    = S;
        p.samples   = n;
        p.inflight  = 2;
        p.pairs     = C;
        for (pos = 0; pos < S; ++pos) {
            for (lane = 0; lane < ((C > 1) ? C : 1); ++lane) {
                rank = (g * S + pos) * ((C > 1) ? C : 1) + lane;
                cr_assert_eq(svp_schedule_iter_init_lane(&it, &p, pos, lane), SVP_OK);
                while ((a = svp_schedule_iter_next(&it)) != NULL) {
                    if (a->kind != SVP_SCHEDULE_FINISH || lane != 0) {
                        continue;
                    }
                    j = a->j;
                    k = g + j * G;     /* the job's k-th sample of its run */
                    cr_assert_lt(k, nrun);
                    cr_assert_eq(svp_schedule_owner(&l, k), rank,
                                 "G=%d S=%d C=%d %s: sample %d (k=%d) finished by "
                                 "rank %d, owner says %d", G, S, C,
                                 placement == SVP_PLACEMENT_SPREAD ? "spread" : "ends",
                                 run[k], k, rank, svp_schedule_owner(&l, k));
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
    } layouts[] = {
        {1, 1, 1}, {1, 2, 1}, {1, 3, 1}, {1, 4, 1}, {1, 6, 1}, {1, 7, 1}, {2, 2, 1},
        {2, 3, 1}, {3, 2, 1}, {4, 1, 1}, {6, 1, 1}, {1, 1, 2}, {1, 2, 2}, {2, 2, 2},
        {4, 1, 2}, {1, 4, 2}
    };
    svp_placement_t pl[] = { SVP_PLACEMENT_SPREAD, SVP_PLACEMENT_ENDS };
    int             all[40], shard[14], resumed[30], n, i, x, y;

    for (i = 0; i < 40; ++i) {
        all[i] = i;
    }
    for (n = 0, i = 1; i < 40; i += 3) {
        shard[n++] = i;                 /* shard 1 of 3 */
    }
    for (n = 0, i = 0; i < 40; ++i) {
        if (i % 4 != 2 && n < 30) {
            resumed[n++] = i;           /* an earlier run finished some */
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
