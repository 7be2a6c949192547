/*
 * Neighbour watch: notices within milliseconds that the rank before or after
 * this one in the ring is gone, whatever the launcher and the transport.
 * Private to src/rt.
 *
 * Why: neither launcher tells the surviving processes.  Killing one of 4
 * ranks with SIGKILL (PMIx 4.2, a default event handler registered for every
 * code) delivered no PMIx event at all to the others, under Slurm 22.05's
 * mpi/pmix_v4 (its slurmstepd logs "Error handler invoked: status = -61"
 * (PMIX_ERR_LOST_CONNECTION) for itself and, when the dead rank shared the
 * node, kills the step ~1 s later) and under Open MPI 4.1.4's mpirun (which
 * kills the job at once).  With the dead rank alone on its node Slurm kills
 * nothing, and the others sat until their deadline.  UCX's own peer error
 * handling would notice, but it rules out the shared-memory transports.
 *
 * How: each rank keeps one TCP connection to its next rank and accepts one
 * from its previous rank.  The kernel closes a dead process's sockets, so
 * the neighbour sees end-of-file at once, even after SIGKILL.  A rank that
 * leaves first sends a goodbye with its reason (done, error, signal, or left
 * before its work was done); only "done" is not a loss, so a rank that
 * leaves cleanly in the middle of the job is named at once too.  A thread
 * sleeps in poll() on the connections and reports a loss through a callback.
 *
 * The same thread sends a heartbeat byte on both connections every
 * SVP_RT_WATCH_BEAT_S seconds and reports a neighbour from which nothing came
 * for SVP_RT_WATCH_SILENT_S seconds: a stopped process (SIGSTOP, a hung
 * driver holding every thread) keeps its sockets open and would otherwise be
 * caught only at the receive deadline.  The thread runs beside the compute
 * thread, so a long step does not delay its heartbeats.  (A node that loses
 * power sends nothing and closes nothing: the heartbeat catches that too.)
 *
 * Notices: what one rank learns of a departure, every rank learns.  A rank
 * stopped by a signal tells both neighbours at once, from this thread, before
 * its teardown begins; a rank that hears a goodbye, a notice or the loss of
 * a neighbour passes a notice on to its other neighbour, once per departed
 * rank.  The ring, cut where ranks left, still reaches every rank from both
 * ends, so each rank knows within milliseconds which ranks are leaving or
 * gone (svp_rt_watch_gone), including ranks it never talked to: a rank that
 * first connects to a stopping peer would otherwise fail on the connect.
 */
#ifndef SVP_RT_WATCH_H
#define SVP_RT_WATCH_H

#include "common/status.h"

#include <stddef.h>

typedef struct svp_rt_watch svp_rt_watch_t;

/* Seconds between heartbeats, and of silence after which a neighbour is
 * lost.  The silence bound is 5 beats: a loaded 2-core node still wakes a
 * sleeping thread within milliseconds, and SIGSTOP is caught in about 5 s. */
#define SVP_RT_WATCH_BEAT_S   1.0
#define SVP_RT_WATCH_SILENT_S 5.0

/* Why a rank leaves; sent in its goodbye. */
typedef enum {
    SVP_RT_WATCH_BYE_NONE  = -1, /* (lost without a goodbye; never sent) */
    SVP_RT_WATCH_BYE_EARLY = 0,  /* left before its work was done */
    SVP_RT_WATCH_BYE_DONE,       /* the job is over for everyone */
    SVP_RT_WATCH_BYE_ERROR,      /* failed */
    SVP_RT_WATCH_BYE_SIGNAL,     /* stopped by a signal */
    SVP_RT_WATCH_BYE_ENDING      /* ending because another rank stopped */
} svp_rt_watch_bye_t;

/* "left before its work was done", "done", "failed", "stopped by a signal",
 * "ending" */
const char *svp_rt_watch_bye_string(svp_rt_watch_bye_t reason);

/* Longest error text a goodbye carries (longer text is cut). */
#define SVP_RT_WATCH_BYE_TEXT_MAX 160

/*
 * Called on the watch thread, once per rank that leaves (any rank of the
 * ring, not only the neighbours: see "Notices" above); why says how (a
 * string valid during the call: "stopped by SIGTERM", "it said goodbye:
 * failed: ...", for SVP_RT_WATCH_BYE_ENDING the cause the rank gave),
 * reason is the goodbye's reason or SVP_RT_WATCH_BYE_NONE when the rank
 * went without one (closed, silent).  A rank that leaves with "done" is
 * not reported.
 */
typedef void (*svp_rt_watch_lost_cb_t)(void *arg, int rank,
                                       svp_rt_watch_bye_t reason, const char *why);

/*
 * Opens the listening socket, and a second one that answers presence probes
 * (svp_rt_watch_probe) from a thread of its own until the watch starts;
 * *addr_p gets "host port probe-port ip ..." for the other ranks (a
 * NUL-terminated string inside the watch, valid until stop).
 */
svp_status_t svp_rt_watch_listen(svp_rt_watch_t **watch_p, const char **addr_p);

/* Where a rank is in its start-up, as its presence answer says. */
typedef enum {
    SVP_RT_PRESENCE_PUBLISHED = 'P', /* its address is out, no fence yet */
    SVP_RT_PRESENCE_FENCE     = 'F'  /* it entered the first fence */
} svp_rt_presence_t;

/* Sets what this rank answers to presence probes from now on (PUBLISHED
 * until told otherwise).  Any thread. */
void svp_rt_watch_set_presence(svp_rt_watch_t *watch, svp_rt_presence_t state);

/*
 * Asks the presence port of each of addrs[0..n) (watch addresses; NULL
 * entries are skipped) where that rank is, all at once, until `until`:
 * answers[i] gets its svp_rt_presence_t, or 0 when it did not answer (a
 * stopped or hung process: its kernel still accepts the connection).
 */
void svp_rt_watch_probe(char *const *addrs, int n, double until, int *answers);

/*
 * Connects to next (at next_addr), accepts the connection of prev, both
 * within timeout seconds, and starts the watch thread.  On failure the
 * watch is destroyed; SVP_ERR_TIMED_OUT says prev never connected (not
 * logged: the caller names it).
 */
svp_status_t svp_rt_watch_start(svp_rt_watch_t *watch, int rank, int size, int prev,
                                int next, const char *next_addr, double timeout,
                                svp_rt_watch_lost_cb_t cb, void *arg);

/*
 * Whether rank is known to be leaving or gone (a goodbye, a stop notice, a
 * loss, heard directly or passed on).  Any thread; 0 for a NULL watch.
 */
int svp_rt_watch_gone(const svp_rt_watch_t *watch, int rank);

/*
 * Tells the ring now that this rank leaves with reason (and text, as for
 * svp_rt_watch_stop), before its teardown: the other ranks stop sending to
 * it and waiting for it.  On the watch thread only, that is from the
 * callback; once.
 */
void svp_rt_watch_tell_self(svp_rt_watch_t *watch, svp_rt_watch_bye_t reason,
                            const char *text);

/*
 * Says goodbye to the neighbours with reason, stops the thread, closes
 * everything.  NULL is allowed.  The goodbye carries signo with
 * SVP_RT_WATCH_BYE_SIGNAL ("stopped by SIGTERM") and text (may be NULL, cut
 * at SVP_RT_WATCH_BYE_TEXT_MAX bytes) with SVP_RT_WATCH_BYE_ERROR ("failed:
 * timed out") and SVP_RT_WATCH_BYE_ENDING (the cause: "rank 2 was stopped
 * by SIGTERM"); both are ignored with the other reasons.
 */
void svp_rt_watch_stop(svp_rt_watch_t *watch, svp_rt_watch_bye_t reason, int signo,
                       const char *text);

#endif
