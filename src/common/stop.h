/*
 * Stopping on SIGTERM and SIGINT.
 *
 * Slurm sends SIGTERM on scancel, preemption and at the time limit (and
 * SIGKILL KillWait seconds later); a person at a terminal sends SIGINT.  A
 * rank that gets one must say so, leave no partial output behind and exit
 * non-zero within a second, while every sample it has finished stays intact.
 *
 * How: the handler only records the signal and makes a pipe readable (both
 * async-signal-safe).  Long waits notice: svp_comm's waits poll the pipe
 * beside UCX's event fd, and the pipeline looks at svp_stop_signal() between
 * steps.  They unwind with SVP_ERR_CANCELED, and the worker reports and
 * cleans up.  Where the process is busy elsewhere (loading weights, inside
 * one long UNet step, in a PMIx fence), a watchdog thread calls the
 * params.force callback once params.grace seconds have passed, and exits
 * with 128 + the signal number.
 *
 *   svp_stop_init(&params);          (once, early in main)
 *   ... if (svp_stop_signal()) return SVP_ERR_CANCELED; ...
 *   svp_stop_progress(done, inflight);   (what the report will say)
 */
#ifndef SVP_COMMON_STOP_H
#define SVP_COMMON_STOP_H

#include "common/status.h"

typedef struct {
    /* Seconds from the signal until the watchdog forces the exit. */
    double grace;
    /* Called once by the watchdog before _exit(128 + signal): report and
     * remove temporaries.  May be NULL.  Runs on the watchdog thread while
     * the main thread is still running. */
    void (*force)(int signo, void *arg);
    void *arg;
} svp_stop_params_t;

/*
 * Installs the SIGTERM and SIGINT handlers and starts the watchdog.  Once
 * per process; a second call fails with SVP_ERR_INVALID_PARAM.
 */
svp_status_t svp_stop_init(const svp_stop_params_t *params);

/* The signal that asked us to stop, or 0.  Safe from any thread. */
int svp_stop_signal(void);

/* A descriptor that becomes (and stays) readable once a stop signal came;
 * -1 before svp_stop_init.  For poll() only: never read or close it. */
int svp_stop_fd(void);

/* What this rank has done so far, for the stop report: done counts the
 * samples whose outputs this rank wrote (not the samples that passed
 * through its steps), inflight whether one is on its way here now. */
void svp_stop_progress(int done, int inflight);

/*
 * Logs "stopping on SIGTERM: N samples done, M in flight abandoned" with the
 * last figures given to svp_stop_progress(): N outputs written by this rank.  Once per process: later calls
 * do nothing.
 */
void svp_stop_report(void);

/* 128 + the signal number (the shell's convention), a request's exit code,
 * or 0 without a stop. */
int svp_stop_exit_code(void);

/* When the watchdog ends the process (svp_clock_now() seconds): the stop
 * signal's arrival plus the grace.  0 before a stop.  Lets teardown work use
 * the grace without outliving it. */
double svp_stop_deadline(void);

/*
 * A stop that is no signal: this process must end now, for why (copied,
 * cut at 255 bytes), with exit_code (not 0).  The waits wake up as on a
 * signal (svp_stop_fd becomes readable), the neighbour watch tells the
 * other ranks that this rank is ending for why, and the watchdog ends the
 * process with exit_code after the grace.  The first request wins; a
 * request after a signal is ignored, and so is a signal after a request.
 * Any thread; works before svp_stop_init (without a watchdog).
 */
void svp_stop_request(int exit_code, const char *why);

/* The exit code of the request made, or 0.  Any thread. */
int svp_stop_requested(void);

/* Why the request was made ("" without one).  Any thread. */
const char *svp_stop_request_why(void);

/* 1 when this process is stopping: a signal or a request. */
int svp_stop_pending(void);

/* For tests: behaves as if signo had arrived (no watchdog exit). */
void svp_stop_raise_for_test(int signo);

#endif
