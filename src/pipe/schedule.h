/*
 * The pipeline's schedule as data: for one rank of one pipeline (a group of
 * S ranks, pipe.h), the list of actions it runs, in order.  The worker
 * executes the list (pipe.c: one loop, one switch over the kinds); the
 * planner costs the same lists with its figures (src/plan/plan_sim.c).  The
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
#include "jobspec/layout.h"
#include "jobspec/spec.h"

/* Message kinds of the pipeline (the comm's tag keeps them apart).  LATENT
 * is SVP_COMM_KIND_LATENT (pipe.c checks it).  The protocol, who sends which
 * to whom and when, is the table at the top of schedule.c. */
typedef enum {
    SVP_SCHEDULE_MSG_NONE   = 0,
    SVP_SCHEDULE_MSG_LATENT = 1, /* a sample, to the next rank */
    SVP_SCHEDULE_MSG_FINAL  = 2, /* a final latent, to the finishing rank */
    SVP_SCHEDULE_MSG_INIT   = 3, /* an encoded sample, to rank 0 */
    SVP_SCHEDULE_MSG_HALF   = 4, /* a step's noise-prediction half, to the
                                     other lane of the position (C = 2) */
    SVP_SCHEDULE_MSG_SHARE  = 5, /* lane 1's share of a shared finish (its
                                     decode chunks), to lane 0 */
    SVP_SCHEDULE_MSG_COUNT
} svp_schedule_msg_t;

typedef enum {
    SVP_SCHEDULE_POST_RECV, /* post a receive of (msg, j, step) from peer
                                into slot */
    SVP_SCHEDULE_WAIT,      /* wait for slot's request: a receive (msg set:
                                for LATENT, INIT and FINAL sample j is then in
                                the slot's frame) or the slot's last send (msg
                                NONE) */
    SVP_SCHEDULE_BEGIN,     /* the stage's begin() of j (encode), into slot;
                                slot -1: the rank's own memory, no frame */
    SVP_SCHEDULE_STEPS,     /* this rank's steps of j */
    SVP_SCHEDULE_SEND,      /* send (msg, j, step) from slot to peer */
    SVP_SCHEDULE_FINISH,    /* the stage's finish() of j (decode, outputs);
                                slot2 >= 0 (pairs, lane 0): shared, lane 1's
                                share of the decode is in slot2 */
    SVP_SCHEDULE_HALF,      /* pairs: step `step` of j, this lane's guidance
                                half of the noise prediction, into slot (the
                                HALF message the other lane gets) */
    SVP_SCHEDULE_MERGE,     /* pairs: step `step` of j completed with the
                                other lane's half, received into slot2 (slot:
                                this lane's) */
    SVP_SCHEDULE_SHARE,     /* pairs: this lane's share of j's shared finish
                                (its decode chunks); lane 1 into slot (the
                                SHARE message), lane 0 into the stage's own
                                memory (slot -1) */
    SVP_SCHEDULE_DROP,      /* the end of j's walk on lane 1 where lane 0
                                sends j's FINAL to its finisher */
    SVP_SCHEDULE_KIND_COUNT
} svp_schedule_kind_t;

/*
 * Guidance-parallel pairs (W = G x S x C, C = 2): each position of the group
 * is a pair of ranks, lanes 0 and 1, and each lane runs the list of C = 1
 * with its own messages (a peer is a position of the same lane), but for
 * STEPS, which become per step POST_RECV, HALF, SEND, WAIT, MERGE with
 * HALF messages to the other lane of the position, and the finals: lane 1
 * neither sends, receives nor finishes a final (DROP ends its walk), and
 * where the last position finishes a sample both lanes decode a share of
 * it (SHARE), lane 1 sends its share to lane 0, which writes the outputs.
 * Both lanes emit their exchanges in the same order, so they pair up.
 */

typedef struct {
    svp_schedule_kind_t kind;
    svp_schedule_msg_t  msg;
    int                 j;          /* the sample's position in the group */
    int                 step;       /* POST_RECV, SEND, a receive's WAIT:
                                       the step the message is tagged with
                                       (where the sample stands; a HALF's
                                       step); HALF, MERGE: the global step;
                                       -1 otherwise */
    int                 slot;       /* frame slot; -1: none */
    int                 slot2;      /* MERGE, shared FINISH: the slot of the
                                       other lane's message; -1: none */
    int                 peer;       /* position in the group of the other end */
    int                 peer_lane;  /* its lane (HALF, SHARE: the other lane) */
    int                 due_stages; /* WAIT: upstream stages of k steps before
                                       the input is due (pipe/deadline.h);
                                       -1: no deadline (a send draining) */
    int                 due_first;  /* WAIT: nothing finished here yet, the
                                       encode counts into the due time */
    int                 chain;      /* SEND/FINISH/DROP: the end of the
                                       sample's walk on this rank (one per
                                       sample) */
} svp_schedule_action_t;

typedef struct {
    svp_placement_t placement;
    int             stages;   /* S, the ranks of the group */
    int             samples;  /* n, the samples dealt to the group */
    int             inflight; /* comm.inflight: receives posted ahead */
    int             pairs;    /* C, ranks per position (0 or 1: one) */
    int             steps;    /* k, the steps each position runs (pairs:
                                    the list has actions per step; 0: 1) */
} svp_schedule_params_t;

/* The schedule of one group of the layout, dealt `samples` samples, with
 * `inflight` receives posted ahead. */
static inline svp_schedule_params_t svp_schedule_params_of(const svp_layout_t *l,
                                                           int samples, int inflight)
{
    svp_schedule_params_t p;

    p.placement = l->placement;
    p.stages    = l->stages;
    p.samples   = samples;
    p.inflight  = inflight;
    p.pairs     = l->pairs;
    p.steps     = l->k;
    return p;
}

/* Frame slots of one rank, in five rings numbered one after the other. */
typedef struct {
    int latent; /* samples on their walk: inflight + 2 (S > 1), else 0 */
    int final;  /* final latents this rank finishes for the last rank */
    int encode; /* encoded samples on their way to rank 0 */
    int half;   /* pairs: the step's half out and the other's in (2) */
    int share;  /* pairs, a position that finishes: the SHARE message
                     (lane 0 receives into it, lane 1 sends from it: 1) */
    int total;
} svp_schedule_slots_t;

/* What a slot's frame holds: a sample (latent, final and encode rings),
 * a noise-prediction half or a decode share. */
typedef enum {
    SVP_SCHEDULE_FRAME_SAMPLE,
    SVP_SCHEDULE_FRAME_HALF,
    SVP_SCHEDULE_FRAME_SHARE
} svp_schedule_frame_t;

/* The frame kind of slot. */
svp_schedule_frame_t svp_schedule_slot_frame(const svp_schedule_slots_t *slots,
                                             int                         slot);

/* Slots in flight at once per ring of finals and of encodes. */
#define SVP_SCHEDULE_FINAL_SLOTS  2
#define SVP_SCHEDULE_ENCODE_SLOTS 2

/* The most slots a rank has: comm.inflight is at most 64. */
#define SVP_SCHEDULE_MAX_SLOTS \
    (64 + 2 + SVP_SCHEDULE_FINAL_SLOTS + SVP_SCHEDULE_ENCODE_SLOTS + 2 + 1)

/* The slots of lane's list at position rank. */
void svp_schedule_slots(const svp_schedule_params_t *params, int rank, int lane,
                        svp_schedule_slots_t *slots_p);

/* How many samples rank finishes (its progress lines count them); lane 0's
 * count: lane 1 finishes none. */
int svp_schedule_finishes(const svp_schedule_params_t *params, int rank);

/* Room for the actions of one phase (the set-up posts up to inflight). */
#define SVP_SCHEDULE_QUEUE 256

typedef struct {
    svp_schedule_params_t p;
    int                   rank;
    int                   lane; /* the rank's half of the pair */
    svp_schedule_slots_t  slots;
    int                   phase;      /* set-up, sample i, drain, end */
    int                   i;          /* the next sample of the walk */
    int                   next_enc;   /* next sample encoded for rank 0; -1 */
    int                   next_final; /* next final latent finished; -1 */
    int                   finished;   /* FINISH actions so far */
    int                   pair_j;     /* pairs: the sample being stepped, */
    int                   pair_slot;  /* its slot, */
    int                   pair_step;  /* its next step (-1: none) */
    unsigned char         busy[SVP_SCHEDULE_MAX_SLOTS]; /* a request pending */
    svp_schedule_action_t queue[SVP_SCHEDULE_QUEUE];
    int                   head, count;
} svp_schedule_iter_t;

/*
 * Starts rank's list.  SVP_ERR_INVALID_PARAM when rank, stages, samples or
 * inflight are out of range.  The iterator owns nothing: no cleanup.
 */
svp_status_t svp_schedule_iter_init(svp_schedule_iter_t         *it,
                                    const svp_schedule_params_t *params, int rank);

/* The same for lane (0 .. C-1) of position rank. */
svp_status_t svp_schedule_iter_init_lane(svp_schedule_iter_t         *it,
                                         const svp_schedule_params_t *params,
                                         int rank, int lane);

/* The next action (valid until the next call), NULL after the last. */
const svp_schedule_action_t *svp_schedule_iter_next(svp_schedule_iter_t *it);

/* "post_recv", "wait", ...: for logs and tests. */
const char *svp_schedule_kind_name(svp_schedule_kind_t kind);

/* "latent", "final", "init", "half", "share" ("none"): for logs. */
const char *svp_schedule_msg_name(svp_schedule_msg_t msg);

#endif
