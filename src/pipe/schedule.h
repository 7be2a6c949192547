/*
 * The pipeline's schedule as data: for one rank of one pipeline (a group of
 * S ranks, pipe.h), the list of actions it runs, in order.  The worker
 * executes the list (pipe.c: one loop, one switch over the kinds); the
 * planner costs the same lists with its figures (launch/plan.c).  The
 * protocol itself (who sends what to whom, when) is written once, at the top
 * of schedule.c.
 *
 * The list is a stream, not an array: a million samples would otherwise hold
 * tens of millions of actions per rank.  An iterator yields one action at a
 * time from a few integers of state (the position in the group's list, the
 * next encode and final due, the state of each frame slot).
 *
 * Samples are named by their position j in the group's list (0 .. n-1);
 * ranks by their position in the group (0 .. S-1).
 */
#ifndef SVP_PIPE_SCHEDULE_H
#define SVP_PIPE_SCHEDULE_H

#include "common/status.h"
#include "spec/spec.h"

/* Message kinds of the pipeline (the comm's tag keeps them apart).  LATENT
 * is SVP_COMM_KIND_LATENT (pipe.c checks it). */
typedef enum {
    SVP_SCHEDULE_MSG_NONE   = 0,
    SVP_SCHEDULE_MSG_LATENT = 1,  /* a sample, to the next rank */
    SVP_SCHEDULE_MSG_FINAL  = 2,  /* a final latent, to the finishing rank */
    SVP_SCHEDULE_MSG_INIT   = 3,  /* an encoded sample, to rank 0 */
    SVP_SCHEDULE_MSG_HALF   = 4,  /* a step's noise-prediction half, to the
                                     other rank of the pair (C = 2) */
    SVP_SCHEDULE_MSG_SHARE  = 5   /* lane 1's share of a shared finish (its
                                     decode chunks), to lane 0 */
} svp_schedule_msg_t;

typedef enum {
    SVP_SCHEDULE_POST_RECV,  /* post a receive of (msg, j) from peer into slot */
    SVP_SCHEDULE_WAIT,       /* wait for slot's request: a receive (msg set:
                                sample j is then in the slot's frame) or the
                                slot's last send (msg NONE) */
    SVP_SCHEDULE_BEGIN,      /* the stage's begin() of j (encode), into slot;
                                slot -1: the rank's own memory, no frame */
    SVP_SCHEDULE_STEPS,      /* this rank's steps of j */
    SVP_SCHEDULE_SEND,       /* send j from slot to peer as msg */
    SVP_SCHEDULE_FINISH,     /* the stage's finish() of j (decode, outputs);
                                peer >= 0 (pairs): shared by the position's
                                two lanes, lane 0 writing */
    SVP_SCHEDULE_PAIR_STEPS, /* this rank's steps of j as one half of a pair:
                                each step computes the lane's guidance half,
                                exchanges it with the same position of the
                                other lane (msg HALF, one message each way)
                                and applies the guidance and Euler update */
    SVP_SCHEDULE_DROP        /* the end of j's walk on lane 1 where lane 0
                                sends j's FINAL to its finisher */
} svp_schedule_kind_t;

/*
 * Guidance-parallel pairs (W = G x S x C, C = 2): each position of the group
 * is a pair of ranks, lanes 0 and 1, and each lane runs the list of C = 1
 * with its own messages (a peer is a position of the same lane), but for
 * STEPS, which become PAIR_STEPS, and the finals: lane 1 neither sends,
 * receives nor finishes a final (DROP ends its walk).  A FINISH on the last
 * position is both lanes' (peer set).  Both lanes run the same PAIR_STEPS
 * and shared FINISHes in the same order, so their messages pair up.
 */

typedef struct {
    svp_schedule_kind_t kind;
    svp_schedule_msg_t  msg;
    int                 j;          /* the sample's position in the group */
    int                 slot;       /* frame slot; -1: none */
    int                 peer;       /* position in the group of the other end */
    int                 due_stages; /* WAIT: upstream stages of k steps before
                                       the input is due (pipe/deadline.h);
                                       -1: no deadline (a send draining) */
    int                 due_first;  /* WAIT: nothing finished here yet, the
                                       encode counts into the due time */
    int                 chain;      /* SEND/FINISH: the end of the sample's
                                       walk on this rank (one per sample) */
} svp_schedule_action_t;

typedef struct {
    svp_placement_t placement;
    int             stages;      /* S, the ranks of the group */
    int             samples;     /* n, the samples dealt to the group */
    int             inflight;    /* comm.inflight: receives posted ahead */
    int             pairs;       /* C, ranks per position (0 or 1: one) */
} svp_schedule_params_t;

/* Frame slots of one rank, in three rings numbered one after the other. */
typedef struct {
    int latent;   /* samples on their walk: inflight + 2 (S > 1), else 0 */
    int final;    /* final latents this rank finishes for the last rank */
    int encode;   /* encoded samples on their way to rank 0 */
    int total;
} svp_schedule_slots_t;

/* Slots in flight at once per ring of finals and of encodes. */
#define SVP_SCHEDULE_FINAL_SLOTS  2
#define SVP_SCHEDULE_ENCODE_SLOTS 2

/* The most slots a rank has: comm.inflight is at most 64. */
#define SVP_SCHEDULE_MAX_SLOTS    (64 + 2 + SVP_SCHEDULE_FINAL_SLOTS + \
                                   SVP_SCHEDULE_ENCODE_SLOTS)

/* What svp_schedule_place() is asked for. */
typedef enum {
    SVP_SCHEDULE_ENCODES,
    SVP_SCHEDULE_FINISHES
} svp_schedule_end_t;

/*
 * The placement rule, the only place it is written: the position in the
 * group that encodes (begin) or finishes (decode, outputs) sample j.
 */
int svp_schedule_place(svp_placement_t placement, int stages, int j,
                       svp_schedule_end_t end);

/*
 * The job's layout as the schedule deals samples over it: G groups of S
 * positions of C lanes, rank = g * S * C + position * C + lane.
 */
typedef struct {
    svp_placement_t placement;
    int             groups;      /* G */
    int             stages;      /* S */
    int             pairs;       /* C (0 or 1: one lane) */
} svp_schedule_layout_t;

/*
 * The dealing rule, the only place it is written: the k-th sample of the
 * samples a job runs (in order, after its shard and resume) goes to group
 * k mod G, as that group's sample k div G.
 */
static inline void svp_schedule_deal(const svp_schedule_layout_t *l, int k,
                                     int *group_p, int *j_p)
{
    *group_p = k % l->groups;
    *j_p     = k / l->groups;
}

/*
 * Which job rank finishes (decodes, writes the outputs of) the k-th sample
 * the job runs: its group's position svp_schedule_place(.., FINISHES), lane
 * 0.  The one answer to "who writes sample k"; the executor's FINISH
 * actions agree with it (tests/test_schedule.c walks the layouts).
 */
int svp_schedule_owner(const svp_schedule_layout_t *l, int k);

/* The slots of rank's list (of lane 0: lane 1 has no final slots, the
 * iterator's slots say). */
void svp_schedule_slots(const svp_schedule_params_t *params, int rank,
                        svp_schedule_slots_t *slots_p);

/* How many samples rank finishes (its progress lines count them); lane 0's
 * count: lane 1 finishes none. */
int svp_schedule_finishes(const svp_schedule_params_t *params, int rank);

/* Room for the actions of one phase (the set-up posts up to inflight). */
#define SVP_SCHEDULE_QUEUE 256

typedef struct {
    svp_schedule_params_t p;
    int                   rank;
    int                   lane;        /* the rank's half of the pair */
    svp_schedule_slots_t  slots;
    int                   phase;       /* set-up, sample i, drain, end */
    int                   i;           /* the next sample of the walk */
    int                   next_enc;    /* next sample encoded for rank 0; -1 */
    int                   next_final;  /* next final latent finished; -1 */
    int                   finished;    /* FINISH actions so far */
    unsigned char         busy[SVP_SCHEDULE_MAX_SLOTS]; /* a request pending */
    svp_schedule_action_t queue[SVP_SCHEDULE_QUEUE];
    int                   head, count;
} svp_schedule_iter_t;

/*
 * Starts rank's list.  SVP_ERR_INVALID_PARAM when rank, stages, samples or
 * inflight are out of range.  The iterator owns nothing: no cleanup.
 */
svp_status_t svp_schedule_iter_init(svp_schedule_iter_t *it,
                                    const svp_schedule_params_t *params,
                                    int rank);

/* The same for lane (0 .. C-1) of position rank. */
svp_status_t svp_schedule_iter_init_lane(svp_schedule_iter_t *it,
                                         const svp_schedule_params_t *params,
                                         int rank, int lane);

/* The next action (valid until the next call), NULL after the last. */
const svp_schedule_action_t *svp_schedule_iter_next(svp_schedule_iter_t *it);

/* "post_recv", "wait", ...: for logs and tests. */
const char *svp_schedule_kind_name(svp_schedule_kind_t kind);

#endif
