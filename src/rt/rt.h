/*
 * svdpipe runtime: who am I, who else is there, and how do we find each other.
 *
 * Under a PMIx launcher (srun --mpi=pmix, Open MPI's mpirun) the runtime is a
 * PMIx client: rank, size, local rank and the host name come from PMIx, keys
 * are exchanged through PMIx_Put/Commit/Fence/Get, and PMIx_Abort tells the
 * launcher to tear the job down.  Without a launcher (PMIX_NAMESPACE unset)
 * the process is rank 0 of 1 and keys live in a local table, so the same code
 * runs as one plain process.
 *
 * Start-up: every wait is bounded by the timeout (comm.deadline).  A start
 * that fails for want of a rank names the missing ranks with their nodes and
 * ends the whole job (PMIx_Abort), so that a rank stopped or hung before it
 * joined does not keep the job waiting until the launcher's own limit.
 *
 * Peer failure: the runtime listens for the launcher's process-termination
 * events and records the first rank reported lost.  svp_rt_lost_rank() reads
 * it, and svp_rt_event_fd() becomes readable when it happens, so a wait that
 * sleeps in poll() (svp_comm) wakes up at once instead of at its deadline.
 *
 * Threads: PMIx delivers events on its own progress thread; everything else
 * here is meant to be called from one thread.
 */
#ifndef SVP_RT_RT_H
#define SVP_RT_RT_H

#include "common/status.h"

#include <stddef.h>

/* The runtime handle.  Created by svp_rt_init(), freed by svp_rt_cleanup(). */
typedef struct svp_rt *svp_rt_h;

/* Which fields of svp_rt_params_t are set (UCX-style field mask). */
enum { SVP_RT_PARAM_FIELD_TIMEOUT = 1u << 0, SVP_RT_PARAM_FIELD_GROUP = 1u << 1 };

typedef struct {
    unsigned field_mask;
    /* Seconds a fence may take before it fails with SVP_ERR_TIMED_OUT
     * (default SVP_RT_DEFAULT_TIMEOUT). */
    double timeout;
    /* Ranks per pipeline (pipeline.stages; 0: all): a lost rank is logged
     * with its pipeline (ranks gS .. gS+S-1). */
    int group_size;
} svp_rt_params_t;

#define SVP_RT_DEFAULT_TIMEOUT 60.0

/* Longest key accepted by svp_rt_put()/svp_rt_get() (PMIx's PMIX_MAX_KEYLEN). */
#define SVP_RT_MAX_KEY 511

/*
 * Starts the runtime.  params may be NULL (defaults).  Under a PMIx launcher
 * this calls PMIx_Init and registers the peer-failure handler; otherwise it
 * sets up a plain single rank.  Sets the log identity to the rank.  On
 * failure nothing is left initialised and *rt_p is not written.
 */
svp_status_t svp_rt_init(const svp_rt_params_t *params, svp_rt_h *rt_p);

/* Finalizes PMIx (when used) and frees the handle.  NULL is allowed. */
void svp_rt_cleanup(svp_rt_h rt);

/* Identity.  Valid from svp_rt_init() until svp_rt_cleanup(). */
int svp_rt_rank(svp_rt_h rt);
int svp_rt_size(svp_rt_h rt);
int svp_rt_local_rank(svp_rt_h rt);
/* Ranks of this job on this node (PMIX_LOCAL_SIZE; 1 when plain). */
int         svp_rt_local_size(svp_rt_h rt);
const char *svp_rt_hostname(svp_rt_h rt);
/* The PMIx namespace, or "" for a plain start. */
const char *svp_rt_nspace(svp_rt_h rt);
/* 1 when started without a launcher (rank 0 of 1), 0 under PMIx. */
int svp_rt_is_plain(svp_rt_h rt);

/*
 * Publishes len bytes under key for the other ranks.  The data is copied; it
 * becomes visible to others after the next svp_rt_fence().
 */
svp_status_t svp_rt_put(svp_rt_h rt, const char *key, const void *data, size_t len);

/*
 * Commits this rank's keys and waits until every rank has done the same
 * (PMIx_Fence with data collection), for at most the runtime's timeout.
 * A rank that died before or during the fence makes it fail
 * (SVP_ERR_PEER_LOST); PMIx's "partial success" counts as failure.
 */
svp_status_t svp_rt_fence(svp_rt_h rt);

/*
 * The job's last fence: svp_rt_fence(), and when it succeeds this rank's
 * goodbye says done (SVP_RT_LEAVE_DONE), so that a neighbour still finishing
 * the same fence does not take this rank's exit for a loss.
 */
svp_status_t svp_rt_fence_final(svp_rt_h rt);

/* Sets the seconds later fences may take (the last fence waits for the
 * pipeline to drain, longer than comm.deadline with long steps). */
void svp_rt_set_fence_timeout(svp_rt_h rt, double seconds);

/*
 * Reads the blob rank published under key.  On success *data_p is a malloc'ed
 * copy the caller frees and *len_p its length; on failure neither is written.
 * SVP_ERR_NOT_FOUND when the key does not exist, SVP_ERR_TIMED_OUT when PMIx
 * did not answer within the runtime's timeout (a rank on another node that
 * never published: Slurm's own limit would be PMIxTimeout, 300 s).
 */
svp_status_t svp_rt_get(svp_rt_h rt, int rank, const char *key, void **data_p,
                        size_t *len_p);

/*
 * Tells the launcher to kill the whole job (PMIx_Abort) with the exit status
 * and message given; in a plain start it only logs.  Returns so that the
 * caller can clean up and exit with the same status.
 */
void svp_rt_abort(svp_rt_h rt, int exit_status, const char *message);

/*
 * The first rank the launcher reported lost (terminated or aborted), or -1.
 * -2 when a loss was reported without naming a rank (the connection to the
 * local PMIx server itself was lost).  Safe to call from any thread.
 */
int svp_rt_lost_rank(svp_rt_h rt);

/*
 * A file descriptor that becomes readable (and stays readable) once a peer
 * is lost; -1 in a plain start.  For poll() beside other descriptors; never
 * read or close it.
 */
int svp_rt_event_fd(svp_rt_h rt);

/* Why this rank leaves: said to the neighbours by svp_rt_cleanup(), which
 * fail at once on any reason but DONE (see watch.h). */
typedef enum {
    SVP_RT_LEAVE_EARLY = 0, /* the default: left before its work was done */
    SVP_RT_LEAVE_DONE,      /* after the last fence: the job is over */
    SVP_RT_LEAVE_ERROR,
    SVP_RT_LEAVE_SIGNAL,
    SVP_RT_LEAVE_ENDING /* ends because another rank was stopped */
} svp_rt_leave_t;

/* Sets the reason svp_rt_cleanup() gives; the last call wins.  Safe from a
 * signal handler. */
void svp_rt_set_leave_reason(svp_rt_h rt, svp_rt_leave_t reason);

/* SVP_RT_LEAVE_SIGNAL, naming the signal: the neighbours log "rank 3 was
 * stopped by SIGTERM" at warn level.  Safe from a signal handler. */
void svp_rt_set_leave_signal(svp_rt_h rt, int signo);

/* SVP_RT_LEAVE_ERROR with the error's one-line text (copied, cut at 160
 * bytes): the neighbours log "it said goodbye: failed: <text>". */
void svp_rt_set_leave_error(svp_rt_h rt, const char *text);

/* SVP_RT_LEAVE_ENDING with its cause (svp_rt_stop_cause): the neighbours
 * take it as the consequence of that stop, not as a failure. */
void svp_rt_set_leave_ending(svp_rt_h rt, const char *cause);

/*
 * 1 when this rank's job ends because another rank was stopped by a signal
 * (alone: when this rank got no signal of its own) or was lost, and then
 * writes the cause ("rank 2 was stopped by SIGTERM", "rank 4 on n3 was
 * lost") into buf (may be NULL).  Known
 * before the loss it explains is recorded (svp_rt_lost_rank), so a wait
 * that fails on that loss can tell a stop from a failure.  Any thread.
 */
int svp_rt_stop_cause(svp_rt_h rt, char *buf, size_t len);

/*
 * 1 when the cause svp_rt_stop_cause gives is a rank lost ("rank 4 on n3
 * was lost": killed, crashed, silent or failed), heard first-hand or in a
 * notice, rather than a rank stopped by a signal: the job failed.  Any
 * thread.
 */
int svp_rt_cause_is_loss(svp_rt_h rt);

/*
 * 1 when rank is known to be leaving or gone: a stop notice, a goodbye or
 * a loss, heard from it or from any rank of the ring (watch.h).  Nothing
 * connects to, sends to or receives from such a rank: a stopping rank may
 * exit at any moment, and fetching from a dead one is fatal in UCX.  Any
 * thread.
 */
int svp_rt_peer_gone(svp_rt_h rt, int rank);

#endif
