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
 * stops normally first sends a goodbye byte, so its end-of-file is not a
 * loss.  A thread sleeps in poll() on the connections and reports a loss
 * through a callback.  (A node that loses power sends nothing: the wait
 * deadlines still catch that.)
 */
#ifndef SVP_RT_WATCH_H
#define SVP_RT_WATCH_H

#include "common/status.h"

#include <stddef.h>

typedef struct svp_rt_watch svp_rt_watch_t;

/* Called on the watch thread, once per lost rank. */
typedef void (*svp_rt_watch_lost_cb_t)(void *arg, int rank);

/* Opens the listening socket; *addr_p gets "host:port" for the other ranks
 * (a NUL-terminated string inside the watch, valid until stop). */
svp_status_t svp_rt_watch_listen(svp_rt_watch_t **watch_p,
                                 const char **addr_p);

/*
 * Connects to next (at next_addr), accepts the connection of prev, both
 * within timeout seconds, and starts the watch thread.  On failure the
 * watch is destroyed.
 */
svp_status_t svp_rt_watch_start(svp_rt_watch_t *watch, int rank, int prev,
                                int next, const char *next_addr,
                                double timeout, svp_rt_watch_lost_cb_t cb,
                                void *arg);

/* Says goodbye to the neighbours, stops the thread, closes everything.
 * NULL is allowed. */
void svp_rt_watch_stop(svp_rt_watch_t *watch);

#endif
