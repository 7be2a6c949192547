/*
 * Losses and stops (rt.h): the launcher's events, the neighbour watch's
 * reports of every rank that leaves, the first loss that ends this rank's
 * waits, the cause when it is another rank's stop, and the reason this
 * rank gives when it leaves.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt_int.h"

#include "common/clock.h"
#include "common/stop.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void svp_rt_record_loss(struct svp_rt *rt, int rank)
{
    int      expected = -1;
    uint64_t one      = 1;

    if (atomic_compare_exchange_strong(&rt->lost_rank, &expected, rank)) {
        /* The descriptor only turns readable; nobody ever reads it, so it
         * stays readable for every later poll(). */
        if (write(rt->event_fd, &one, sizeof(one)) != sizeof(one)) {
            svp_warn("write to the runtime event fd failed: %m");
        }
    }
}

/* The process an event is about: PMIX_EVENT_AFFECTED_PROC, else the first of
 * PMIX_EVENT_AFFECTED_PROCS, else the event's source. */
static const pmix_proc_t *svp_rt_event_proc(const pmix_proc_t *source,
                                            const pmix_info_t info[], size_t ninfo)
{
    size_t i;

    for (i = 0; i < ninfo; ++i) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) &&
            (info[i].value.type == PMIX_PROC)) {
            return info[i].value.data.proc;
        }
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROCS) &&
            (info[i].value.type == PMIX_DATA_ARRAY) &&
            (info[i].value.data.darray != NULL) &&
            (info[i].value.data.darray->type == PMIX_PROC) &&
            (info[i].value.data.darray->size > 0)) {
            return (const pmix_proc_t *)info[i].value.data.darray->array;
        }
    }
    return source;
}

/*
 * Which events mean "a rank of this job is gone".  Observed with PMIx 4.2 on
 * Debian 12, 4 ranks, one killed with SIGKILL mid-run, this handler
 * registered for every code: neither Slurm 22.05 (mpi/pmix_v4) nor Open MPI
 * 4.1.4's mpirun delivered any event to the surviving ranks (details in
 * watch.h, which is what actually catches it there).  The codes below are
 * the ones the PMIx standard defines for the situation, for launchers that
 * do send them (PRRTE, newer Slurm); PMIX_ERR_LOST_CONNECTION is our own
 * PMIx server going away.
 */
static int svp_rt_event_is_loss(pmix_status_t status)
{
    switch (status) {
    case PMIX_ERR_PROC_ABORTED:
    case PMIX_ERR_PROC_ABORTING:
    case PMIX_ERR_PROC_REQUESTED_ABORT:
    case PMIX_ERR_PROC_TERM_WO_SYNC:
    case PMIX_EVENT_PROC_TERMINATED:
    case PMIX_ERR_PROC_KILLED_BY_CMD:
    case PMIX_ERR_PROC_ABORTED_BY_SIG:
    case PMIX_ERR_EXIT_NONZERO_TERM:
    case PMIX_ERR_JOB_ABORTED:
    case PMIX_ERR_JOB_ABORTED_BY_SIG:
    case PMIX_ERR_JOB_TERM_WO_SYNC:
    case PMIX_ERR_JOB_NON_ZERO_TERM:
    case PMIX_EVENT_NODE_DOWN:
    case PMIX_ERR_LOST_CONNECTION:
        return 1;
    default:
        return 0;
    }
}

/*
 * PMIx event handlers carry no user pointer, and PMIx itself is one per
 * process, so the handler finds the runtime through this.
 */
struct svp_rt *svp_rt_instance;

void svp_rt_event_handler(size_t evhdlr_registration_id, pmix_status_t status,
                          const pmix_proc_t *source, pmix_info_t info[],
                          size_t ninfo, pmix_info_t results[], size_t nresults,
                          pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    struct svp_rt     *rt   = svp_rt_instance;
    const pmix_proc_t *proc = svp_rt_event_proc(source, info, ninfo);
    int                lost;

    svp_log(svp_rt_event_is_loss(status) ? SVP_LOG_LEVEL_WARN : SVP_LOG_LEVEL_DEBUG,
            "pmix event %s from %s:%d about %s:%d", PMIx_Error_string(status),
            source != NULL ? source->nspace : "-",
            source != NULL ? (int)source->rank : -1,
            proc != NULL ? proc->nspace : "-", proc != NULL ? (int)proc->rank : -1);

    if ((rt != NULL) && svp_rt_event_is_loss(status)) {
        /* a lost connection (to the server) names no rank */
        if ((status != PMIX_ERR_LOST_CONNECTION) && (proc != NULL) &&
            PMIX_CHECK_NSPACE(proc->nspace, rt->proc.nspace) &&
            (proc->rank < (pmix_rank_t)rt->size)) {
            lost = (int)proc->rank;
        } else {
            lost = SVP_RT_LOST_UNKNOWN;
        }
        if (lost != rt->rank) {
            svp_rt_record_loss(rt, lost);
        }
    }

    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, NULL, 0, NULL, NULL, cbdata);
    }
}

/* Seconds between the first and the last rank's SIGTERM of one scancel that
 * a goodbye waits (runs on the watch thread: well below its 5 s silence). */
#define SVP_RT_STOP_SPREAD 1.0

/* Notes why this rank ends, if no cause is known yet: the first word wins. */
static int svp_rt_note_cause(struct svp_rt *rt, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int svp_rt_note_cause(struct svp_rt *rt, const char *fmt, ...)
{
    va_list ap;

    if (atomic_load(&rt->have_cause) || (svp_rt_lost_rank(rt) != -1)) {
        return 0;
    }
    va_start(ap, fmt);
    vsnprintf(rt->stop_cause, sizeof(rt->stop_cause), fmt, ap);
    va_end(ap);
    atomic_store(&rt->have_cause, 1);
    return 1;
}

/*
 * This rank ends for the cause just noted: its waits on rank end now
 * (the loss), and the ring hears at once that this rank is ending, before
 * its teardown, so that no rank sends to it or waits for it meanwhile.
 */
static void svp_rt_end_for_cause(struct svp_rt *rt, int rank)
{
    svp_rt_record_loss(rt, rank);
    svp_rt_watch_tell_self(rt->watch, SVP_RT_WATCH_BYE_ENDING, rt->stop_cause);
}

/* The cause of an ending rank is a loss (svp_rt_end_for_loss's words). */
static int svp_rt_is_loss_cause(svp_rt_watch_bye_t reason, const char *why)
{
    size_t n = strlen(why);

    return (reason == SVP_RT_WATCH_BYE_ENDING) && (n > 9) &&
           (strcmp(why + n - 9, " was lost") == 0);
}

/*
 * The first departure this rank hears of is a rank lost (killed, crashed,
 * silent, or failed: its goodbye says so): the cause this rank ends for.
 * Said once per job at error level: by the rank after it in the ring, one
 * of the two that see its end-of-file or silence (which of the two hears
 * it first, from its own connection or from the other's notice, is a race;
 * how it was seen and by whom is in why), and for a failed rank by that
 * rank itself (its own error line); every other rank says at warn level
 * that it ends for that cause.
 * Then, as for a stop, the ring hears at once that this rank is ending for
 * it ("rank 4 on n3 was lost"), before its teardown: no rank takes its exit
 * for a second loss, connects to it or waits for it.
 */
static void svp_rt_end_for_loss(struct svp_rt *rt, int rank,
                                svp_rt_watch_bye_t reason, const char *why)
{
    int  s = rt->group_size;
    char node[128], pipeline[64] = "";

    svp_rt_node_of(rt, rank, node, sizeof(node));
    if (s > 0 && s < rt->size) {
        snprintf(pipeline, sizeof(pipeline), " of pipeline %d (ranks %d-%d)",
                 rank / s, rank / s * s, rank / s * s + s - 1);
    }
    if (!atomic_exchange(&rt->have_cause, 1)) {
        snprintf(rt->stop_cause, sizeof(rt->stop_cause), "rank %d on %s was lost",
                 rank, node);
        atomic_store(&rt->cause_is_loss, 1);
    }
    if ((reason != SVP_RT_WATCH_BYE_ERROR) && ((rank + 1) % rt->size == rt->rank)) {
        svp_error("rank %d%s is gone: %s; it ran on %s; the job ends", rank,
                  pipeline, why, node);
    } else {
        svp_warn("ending: rank %d%s is gone: %s; it ran on %s", rank, pipeline, why,
                 node);
    }
    svp_rt_end_for_cause(rt, rank);
}

void svp_rt_watch_lost(void *arg, int rank, svp_rt_watch_bye_t reason,
                       const char *why)
{
    struct svp_rt *rt = arg;
    double         until;

    if ((reason == SVP_RT_WATCH_BYE_SIGNAL) || (reason == SVP_RT_WATCH_BYE_ENDING)) {
        /*
         * scancel, a preemption or a time limit signals every rank, but not
         * at once: on 3 nodes a neighbour's goodbye came up to 0.5 s before
         * this rank's own SIGTERM.  Such a stop is one event, logged once
         * per rank by its own stop report; so the notice waits a moment
         * for this rank's signal.  A rank stopped alone is the cause this
         * rank ends for: named once at warn level, as the consequence it
         * is, and taken as a loss so that the waits on it end now.  A rank
         * ending for that cause (SVP_RT_WATCH_BYE_ENDING) says so in its
         * goodbye; that is no news where the cause is known.  Meanwhile the
         * watch has marked the rank gone: nothing connects to it, sends to
         * it or receives from it (svp_rt_peer_gone).
         */
        /* (a rank ending for a loss: no signal to wait for) */
        until = svp_clock_now() +
                (svp_rt_is_loss_cause(reason, why) ? 0 : SVP_RT_STOP_SPREAD);
        while (!svp_stop_pending() && (svp_clock_now() < until) &&
               !atomic_load(&rt->have_cause) && (svp_rt_lost_rank(rt) == -1)) {
            usleep(10000);
        }
        if (svp_stop_pending()) {
            svp_debug("rank %d was %s too", rank, why);
            return;
        }
        if (reason == SVP_RT_WATCH_BYE_SIGNAL &&
            svp_rt_note_cause(rt, "rank %d was %s", rank, why)) {
            svp_warn("rank %d was %s", rank, why);
            svp_rt_end_for_cause(rt, rank);
            return;
        } else if (reason == SVP_RT_WATCH_BYE_ENDING &&
                   svp_rt_note_cause(rt, "%s", why)) {
            if (svp_rt_is_loss_cause(reason, why)) {
                atomic_store(&rt->cause_is_loss, 1);
            }
            svp_warn("rank %d is ending: %s", rank, why);
            svp_rt_end_for_cause(rt, rank);
            return;
        } else {
            svp_debug("rank %d %s: %s", rank,
                      (reason == SVP_RT_WATCH_BYE_SIGNAL) ? "was stopped"
                                                          : "is ending",
                      why);
        }
    } else if (atomic_load(&rt->have_cause)) {
        /* after a stop or a loss, other departures are its consequences */
        svp_debug("rank %d is gone: %s", rank, why);
    } else {
        svp_rt_end_for_loss(rt, rank, reason, why);
        return;
    }
    svp_rt_record_loss(arg, rank);
}

/* The watch's goodbye codes are the runtime's leave reasons. */
_Static_assert((int)SVP_RT_LEAVE_EARLY == (int)SVP_RT_WATCH_BYE_EARLY &&
                   (int)SVP_RT_LEAVE_DONE == (int)SVP_RT_WATCH_BYE_DONE &&
                   (int)SVP_RT_LEAVE_ERROR == (int)SVP_RT_WATCH_BYE_ERROR &&
                   (int)SVP_RT_LEAVE_SIGNAL == (int)SVP_RT_WATCH_BYE_SIGNAL &&
                   (int)SVP_RT_LEAVE_ENDING == (int)SVP_RT_WATCH_BYE_ENDING,
               "leave reasons and goodbye codes differ");

void svp_rt_set_leave_reason(svp_rt_h rt, svp_rt_leave_t reason)
{
    if (rt != NULL) {
        atomic_store(&rt->leave_reason, (int)reason);
    }
}

void svp_rt_set_leave_signal(svp_rt_h rt, int signo)
{
    if (rt != NULL) {
        atomic_store(&rt->leave_signo, signo);
        atomic_store(&rt->leave_reason, (int)SVP_RT_LEAVE_SIGNAL);
    }
}

void svp_rt_set_leave_error(svp_rt_h rt, const char *text)
{
    if (rt != NULL) {
        snprintf(rt->leave_text, sizeof(rt->leave_text), "%s",
                 text != NULL ? text : "");
        atomic_store(&rt->leave_reason, (int)SVP_RT_LEAVE_ERROR);
    }
}

void svp_rt_set_leave_ending(svp_rt_h rt, const char *cause)
{
    if (rt != NULL) {
        snprintf(rt->leave_text, sizeof(rt->leave_text), "%s",
                 cause != NULL ? cause : "");
        atomic_store(&rt->leave_reason, (int)SVP_RT_LEAVE_ENDING);
    }
}

int svp_rt_cause_is_loss(svp_rt_h rt)
{
    return (rt != NULL) && atomic_load(&rt->have_cause) &&
           atomic_load(&rt->cause_is_loss);
}

int svp_rt_stop_cause(svp_rt_h rt, char *buf, size_t len)
{
    if ((rt == NULL) || !atomic_load(&rt->have_cause)) {
        return 0;
    }
    if (len > 0) {
        snprintf(buf, len, "%s", rt->stop_cause);
    }
    return 1;
}

int svp_rt_peer_gone(svp_rt_h rt, int rank)
{
    int lost = svp_rt_lost_rank(rt);

    return (lost == rank) || (lost == SVP_RT_LOST_UNKNOWN) ||
           svp_rt_watch_gone(rt->watch, rank);
}

int svp_rt_lost_rank(svp_rt_h rt)
{
    return atomic_load(&rt->lost_rank);
}

int svp_rt_event_fd(svp_rt_h rt)
{
    return rt->event_fd;
}
