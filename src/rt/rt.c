/*
 * The runtime (rt.h): PMIx start-up and finalize under a watchdog, the
 * plain single-rank mode, keys published and fetched without blocking,
 * fences against a deadline, the neighbour watch's start (watch.h) and the
 * naming of ranks absent at start, losses and stops as every rank learns
 * them, and the launcher's abort.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt.h"

#include "common/log.h"
#include "rt/watch.h"
#include "common/stop.h"
#include "common/util.h"

#include <pmix.h>

#include "common/clock.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The rank recorded when a loss names nobody (our own PMIx server is gone). */
#define SVP_RT_LOST_UNKNOWN (-2)

/* A key published in a plain start (no launcher: this process is everyone). */
typedef struct svp_rt_kv {
    struct svp_rt_kv *next;
    char             *key;
    void             *data;
    size_t            len;
} svp_rt_kv_t;

struct svp_rt {
    int          plain;
    int          rank, size, local_rank, local_size;
    double       timeout;
    char         hostname[PMIX_MAX_NSLEN + 1];
    pmix_proc_t  proc;              /* PMIx identity (unused when plain) */
    size_t       evhdlr_id;
    int          evhdlr_registered;
    int          event_fd;
    atomic_int   lost_rank;
    atomic_int   leave_reason;      /* svp_rt_leave_t */
    atomic_int   leave_signo;       /* with SVP_RT_LEAVE_SIGNAL */
    char         leave_text[SVP_RT_WATCH_BYE_TEXT_MAX + 1];  /* with _ERROR, _ENDING */
    /* "rank 2 was stopped by SIGTERM": set once, before the loss it
     * explains is recorded, when the first loss is another rank's stop */
    char         stop_cause[SVP_RT_WATCH_BYE_TEXT_MAX + 1];
    atomic_int   have_cause;
    int          get_fd;            /* eventfd written by PMIx_Get_nb answers */
    struct svp_rt_get *orphans;     /* gets PMIx still owes an answer */
    svp_rt_watch_t *watch;          /* NULL when plain or alone */
    int             group_size;     /* ranks per pipeline, 0: all */
    struct svp_rt_fence *fence;     /* a fence PMIx still owes an answer */
    svp_rt_kv_t *kv;                /* plain start only */
};

/*
 * The bound on PMIx calls that wait on the launcher and cannot be made
 * non-blocking: PMIx_Abort and PMIx_Finalize.  With one rank of 4 exited
 * before PMIx_Init on a 3-node Slurm 22.05 cluster, both ranks of another
 * node sat in PMIx_Abort (their slurmstepd failed to forward it) until
 * srun -W killed them 25 s later.  A watchdog thread, armed around such a
 * call, ends the process with the exit status it was given once the bound
 * has passed, naming the call.
 */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t  cond;
    pthread_t       thread;
    int             started;
    unsigned        armed;        /* generation armed, 0: none */
    unsigned        generation;
    double          until;
    int             exit_status;
    const char     *what;
} svp_rt_watchdog_t;

static svp_rt_watchdog_t svp_rt_watchdog = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

static void *svp_rt_watchdog_thread(void *arg)
{
    svp_rt_watchdog_t *wd = arg;
    struct timespec    ts;
    double             now;

    pthread_mutex_lock(&wd->lock);
    for (;;) {
        while (wd->armed == 0) {
            pthread_cond_wait(&wd->cond, &wd->lock);
        }
        now = svp_clock_now();
        if (now >= wd->until) {
            svp_error("%s did not return within its bound: exiting with "
                      "status %d", wd->what, wd->exit_status);
            _exit(wd->exit_status);
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        now          = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + (wd->until - now);
        ts.tv_sec    = (time_t)now;
        ts.tv_nsec   = (long)((now - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&wd->cond, &wd->lock, &ts);
    }
    return NULL;
}

/* Arms the watchdog for `seconds`; returns the generation to disarm. */
static unsigned svp_rt_watchdog_arm(double seconds, const char *what,
                                    int exit_status)
{
    svp_rt_watchdog_t *wd = &svp_rt_watchdog;
    pthread_condattr_t attr;
    unsigned           gen;

    pthread_mutex_lock(&wd->lock);
    if (!wd->started) {
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&wd->cond, &attr);
        pthread_condattr_destroy(&attr);
        if (pthread_create(&wd->thread, NULL, svp_rt_watchdog_thread, wd) != 0) {
            pthread_mutex_unlock(&wd->lock);
            svp_warn("cannot start the runtime watchdog: %s is not bounded", what);
            return 0;
        }
        pthread_detach(wd->thread);
        wd->started = 1;
    }
    gen = ++wd->generation;
    if (gen == 0) {
        gen = ++wd->generation;
    }
    wd->armed       = gen;
    wd->until       = svp_clock_now() + seconds;
    wd->what        = what;
    wd->exit_status = exit_status;
    pthread_cond_signal(&wd->cond);
    pthread_mutex_unlock(&wd->lock);
    return gen;
}

static void svp_rt_watchdog_disarm(unsigned gen)
{
    svp_rt_watchdog_t *wd = &svp_rt_watchdog;

    pthread_mutex_lock(&wd->lock);
    if ((gen != 0) && (wd->armed == gen)) {
        wd->armed = 0;
    }
    pthread_mutex_unlock(&wd->lock);
}

/* Seconds PMIx_Abort and PMIx_Finalize may take: both talk only to this
 * node's slurmstepd, which answered within 20 ms when it answered at all. */
#define SVP_RT_LOCAL_BOUND 1.5

static void svp_rt_fence_free(struct svp_rt_fence *fence);
static void svp_rt_get_free_orphans(struct svp_rt *rt);

static svp_status_t svp_rt_status_from_pmix(pmix_status_t rc)
{
    switch (rc) {
    case PMIX_SUCCESS:
        return SVP_OK;
    case PMIX_ERR_TIMEOUT:
        return SVP_ERR_TIMED_OUT;
    case PMIX_ERR_NOT_FOUND:
        return SVP_ERR_NOT_FOUND;
    case PMIX_ERR_BAD_PARAM:
        return SVP_ERR_INVALID_PARAM;
    case PMIX_ERR_NOMEM:
    case PMIX_ERR_OUT_OF_RESOURCE:
        return SVP_ERR_NO_MEMORY;
    /* A fence that some rank cannot join any more: PMIx says "partial
     * success" at once when a participant died before it.  For us a fence is
     * all or nothing, so this is a lost peer. */
    case PMIX_ERR_PARTIAL_SUCCESS:
    case PMIX_ERR_LOST_CONNECTION:
    case PMIX_ERR_UNREACH:
    case PMIX_ERR_PROC_ABORTED:
    case PMIX_ERR_PROC_TERM_WO_SYNC:
    case PMIX_EVENT_PROC_TERMINATED:
        return SVP_ERR_PEER_LOST;
    default:
        return SVP_ERR_RUNTIME;
    }
}

/*
 * Calls a PMIx function and converts its status, once, logging the call and
 * PMIx's own error string at _level when it fails (UCX's UCT_CUDADRV_FUNC).
 */
#define SVP_RT_PMIX_FUNC(_func, _level) \
    ({ \
        pmix_status_t _pmix_rc = (_func); \
        svp_status_t  _svp_st  = svp_rt_status_from_pmix(_pmix_rc); \
        if (_pmix_rc != PMIX_SUCCESS) { \
            svp_log(_level, "%s failed: %s", #_func, PMIx_Error_string(_pmix_rc)); \
        } \
        _svp_st; \
    })

#define SVP_RT_PMIX_FUNC_ERR(_func) SVP_RT_PMIX_FUNC(_func, SVP_LOG_LEVEL_ERROR)

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
                                            const pmix_info_t info[],
                                            size_t ninfo)
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
static struct svp_rt *svp_rt_instance;

static void svp_rt_event_handler(size_t evhdlr_registration_id,
                                 pmix_status_t status,
                                 const pmix_proc_t *source,
                                 pmix_info_t info[], size_t ninfo,
                                 pmix_info_t results[], size_t nresults,
                                 pmix_event_notification_cbfunc_fn_t cbfunc,
                                 void *cbdata)
{
    struct svp_rt     *rt   = svp_rt_instance;
    const pmix_proc_t *proc = svp_rt_event_proc(source, info, ninfo);
    int                lost;

    svp_log(svp_rt_event_is_loss(status) ? SVP_LOG_LEVEL_WARN : SVP_LOG_LEVEL_DEBUG,
            "pmix event %s from %s:%d about %s:%d",
            PMIx_Error_string(status),
            source != NULL ? source->nspace : "-",
            source != NULL ? (int)source->rank : -1,
            proc != NULL ? proc->nspace : "-",
            proc != NULL ? (int)proc->rank : -1);

    if ((rt != NULL) && svp_rt_event_is_loss(status)) {
        if (status == PMIX_ERR_LOST_CONNECTION) {
            lost = SVP_RT_LOST_UNKNOWN;
        } else if ((proc != NULL) && PMIX_CHECK_NSPACE(proc->nspace, rt->proc.nspace) &&
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

/*
 * A PMIx_Get_nb in flight.  PMIx_Get blocks inside PMIx, and under Slurm's
 * mpi/pmix_v4 (22.05) a key of a rank on another node is fetched from that
 * node (direct modex) without regard to PMIX_TIMEOUT: with that rank
 * stopped 0.1 s after launch, PMIx_Get(PMIX_TIMEOUT=2) returned only when
 * Slurm's own PMIxTimeout (300 s) ran out.  So every get is started with
 * PMIx_Get_nb and waited for against our own bound; one PMIx has not
 * answered by then stays with the runtime (rt->orphans) until PMIx_Finalize,
 * as its callback may still come.
 */
typedef struct svp_rt_get {
    struct svp_rt_get *next;
    int                fd;          /* the runtime's get_fd */
    atomic_int         done;
    pmix_status_t      status;
    pmix_value_t      *val;         /* a copy of the answer, on success */
} svp_rt_get_t;

static void svp_rt_get_cb(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    svp_rt_get_t *get = cbdata;
    uint64_t      one = 1;

    /* kv belongs to PMIx and is gone after we return: keep a copy */
    if ((status == PMIX_SUCCESS) && (kv != NULL)) {
        PMIX_VALUE_CREATE(get->val, 1);
        if (get->val == NULL) {
            status = PMIX_ERR_NOMEM;
        } else if ((status = PMIx_Value_xfer(get->val, kv)) != PMIX_SUCCESS) {
            PMIX_VALUE_RELEASE(get->val);
        }
    } else if (status == PMIX_SUCCESS) {
        status = PMIX_ERR_NOT_FOUND;
    }
    get->status = status;
    atomic_store(&get->done, 1);
    if (write(get->fd, &one, sizeof(one)) != sizeof(one)) {
        svp_warn("write to the runtime get fd failed: %m");
    }
}

static svp_status_t svp_rt_get_start(struct svp_rt *rt, pmix_rank_t rank,
                                     const char *key, svp_rt_get_t **get_p)
{
    svp_rt_get_t *get;
    pmix_proc_t   proc;
    pmix_status_t rc;

    get = calloc(1, sizeof(*get));
    if (get == NULL) {
        svp_error("out of memory asking for key '%s'", key);
        return SVP_ERR_NO_MEMORY;
    }
    get->fd = rt->get_fd;
    atomic_init(&get->done, 0);
    PMIX_LOAD_PROCID(&proc, rt->proc.nspace, rank);
    rc = PMIx_Get_nb(&proc, key, NULL, 0, svp_rt_get_cb, get);
    if (rc != PMIX_SUCCESS) {
        free(get);
        return svp_rt_status_from_pmix(rc);
    }
    *get_p = get;
    return SVP_OK;
}

/*
 * Waits until every one of the n gets has its answer, or until `until`;
 * the gets still unanswered then go to the orphans (gets[i] set to NULL).
 * Returns how many were answered.
 */
static int svp_rt_get_wait(struct svp_rt *rt, svp_rt_get_t **gets, int n,
                           double until)
{
    struct pollfd pfd = { .fd = rt->get_fd, .events = POLLIN };
    uint64_t      count;
    double        left;
    int           i, answered;

    for (;;) {
        for (i = 0, answered = 0; i < n; ++i) {
            answered += (gets[i] == NULL) || atomic_load(&gets[i]->done);
        }
        left = until - svp_clock_now();
        if ((answered == n) || (left <= 0)) {
            break;
        }
        if ((poll(&pfd, 1, (int)(left * 1e3) + 1) < 0) && (errno != EINTR)) {
            svp_error("poll while waiting for PMIx failed: %m");
            break;
        }
        /* answers may race with this read: the flags are read again after */
        if (read(rt->get_fd, &count, sizeof(count)) < 0 && errno != EAGAIN) {
            svp_warn("read of the runtime get fd failed: %m");
        }
    }
    for (i = 0, answered = 0; i < n; ++i) {
        if (gets[i] == NULL) {
            continue;
        }
        if (atomic_load(&gets[i]->done)) {
            ++answered;
        } else {
            gets[i]->next = rt->orphans;
            rt->orphans   = gets[i];
            gets[i]       = NULL;
        }
    }
    return answered;
}

/* Frees an answered get and whatever it holds. */
static void svp_rt_get_free(svp_rt_get_t *get)
{
    if (get != NULL) {
        if (get->val != NULL) {
            PMIX_VALUE_RELEASE(get->val);
        }
        free(get);
    }
}

/* Only once PMIx can call back no more (after PMIx_Finalize). */
static void svp_rt_get_free_orphans(struct svp_rt *rt)
{
    svp_rt_get_t *get;

    while ((get = rt->orphans) != NULL) {
        rt->orphans = get->next;
        svp_rt_get_free(get);
    }
}

/* PMIx_Get, bounded by timeout seconds (see svp_rt_get_t). */
static svp_status_t svp_rt_get_value(struct svp_rt *rt, pmix_rank_t rank,
                                     const char *key, svp_log_level_t level,
                                     double timeout, pmix_value_t **val_p)
{
    svp_rt_get_t *get;
    svp_status_t  status;

    status = svp_rt_get_start(rt, rank, key, &get);
    if (status != SVP_OK) {
        svp_log(level, "PMIx_Get_nb of '%s' failed: %s", key,
                svp_status_string(status));
        return status;
    }
    if (svp_rt_get_wait(rt, &get, 1, svp_clock_now() + timeout) == 0) {
        svp_log(level, "PMIx_Get of '%s' of rank %d: no answer within %.0f s",
                key, (int)rank, timeout);
        return SVP_ERR_TIMED_OUT;
    }
    if (get->status != PMIX_SUCCESS) {
        svp_log(level, "PMIx_Get of '%s' of rank %d failed: %s", key, (int)rank,
                PMIx_Error_string(get->status));
        status = svp_rt_status_from_pmix(get->status);
        svp_rt_get_free(get);
        return status;
    }
    *val_p   = get->val;
    get->val = NULL;
    svp_rt_get_free(get);
    return SVP_OK;
}

#define SVP_RT_WATCH_KEY "svp.rt.watch_address"

/* Seconds between the first and the last rank's SIGTERM of one scancel that
 * a goodbye waits (runs on the watch thread: well below its 5 s silence). */
#define SVP_RT_STOP_SPREAD 1.0

/* Seconds a fence may still complete after a rank was reported lost (see
 * svp_rt_fence_wait). */
#define SVP_RT_FENCE_GRACE 0.5

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

static void svp_rt_watch_lost(void *arg, int rank, svp_rt_watch_bye_t reason,
                              const char *why)
{
    struct svp_rt *rt = arg;
    int            s  = rt->group_size;
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
        until = svp_clock_now() + SVP_RT_STOP_SPREAD;
        while ((svp_stop_signal() == 0) && (svp_clock_now() < until) &&
               !atomic_load(&rt->have_cause) && (svp_rt_lost_rank(rt) == -1)) {
            usleep(10000);
        }
        if (svp_stop_signal() != 0) {
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
            svp_warn("rank %d is ending: %s", rank, why);
            svp_rt_end_for_cause(rt, rank);
            return;
        } else {
            svp_debug("rank %d %s: %s", rank,
                      (reason == SVP_RT_WATCH_BYE_SIGNAL) ? "was stopped" : "is ending",
                      why);
        }
    } else if (atomic_load(&rt->have_cause)) {
        /* after a stop, other departures are its consequences */
        svp_debug("rank %d is gone: %s", rank, why);
    } else if (s > 0 && s < rt->size) {
        svp_error("rank %d of pipeline %d (ranks %d-%d) is gone: %s; the job "
                  "ends", rank, rank / s, rank / s * s, rank / s * s + s - 1, why);
    } else {
        svp_error("rank %d is gone: %s", rank, why);
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

/* Ranks probed for by svp_rt_name_absent, and named at most. */
#define SVP_RT_ABSENT_PROBE 256
#define SVP_RT_ABSENT_NAMED 8

/*
 * Seconds the probe waits for the ranks that did arrive to answer: for
 * their address (a rank of this node answers at once, and under mpirun or a
 * healthy Slurm a rank of another node answers through the direct modex in
 * a few ms), then for their presence port.  An absent one never does, so
 * this is all the time the probe adds to a failed start.
 */
#define SVP_RT_ABSENT_WAIT    1.0
#define SVP_RT_PRESENCE_WAIT  0.5

/*
 * Seconds a rank that named the absent ones waits before it ends the job
 * (PMIx_Abort), so that the ranks of the other nodes, whose fences failed
 * up to a launch's skew later (1 s seen on 3 nodes), name them too instead
 * of being killed in their own probe.
 */
#define SVP_RT_ABORT_SPREAD   1.2

/*
 * The node of rank, from PMIx's job info: this node's server holds the map
 * of the whole job (Slurm and mpirun both register PMIX_NODE_MAP and
 * PMIX_PROC_MAP), so neither call asks another node.  "?" when unknown.
 */
static void svp_rt_node_of(struct svp_rt *rt, int rank, char *buf, size_t len)
{
    char       *nodes = NULL, *save = NULL, *node;
    pmix_proc_t *procs;
    size_t      nprocs, i;
    int         found = 0;

    snprintf(buf, len, "?");
    if (PMIx_Resolve_nodes(rt->proc.nspace, &nodes) != PMIX_SUCCESS ||
        nodes == NULL) {
        return;
    }
    for (node = strtok_r(nodes, ",", &save); (node != NULL) && !found;
         node = strtok_r(NULL, ",", &save)) {
        if (PMIx_Resolve_peers(node, rt->proc.nspace, &procs, &nprocs) !=
            PMIX_SUCCESS) {
            continue;
        }
        for (i = 0; i < nprocs; ++i) {
            if ((int)procs[i].rank == rank) {
                snprintf(buf, len, "%s", node);
                found = 1;
            }
        }
        PMIX_PROC_FREE(procs, nprocs);
    }
    free(nodes);
}

/* The watch address a get brought, NUL-terminated in place; NULL if none. */
static char *svp_rt_get_addr(svp_rt_get_t *get)
{
    pmix_byte_object_t *bo;

    if ((get == NULL) || (get->status != PMIX_SUCCESS) || (get->val == NULL) ||
        (get->val->type != PMIX_BYTE_OBJECT)) {
        return NULL;
    }
    bo = &get->val->data.bo;
    if ((bo->size == 0) || (bo->bytes[bo->size - 1] != '\0')) {
        return NULL;
    }
    return bo->bytes;
}

/*
 * After the first fence failed: which ranks are missing, and in which
 * window of the start-up were they last seen?  Every rank asks, so that
 * the error is in every node's log.
 *  1. The address (key) of every other rank is asked for at once, without
 *     blocking.  A rank of this node that did not answer never started (or
 *     never published): this node's PMIx server holds whatever its own
 *     ranks committed.  A rank of another node is asked of that node's
 *     server, which may itself not answer: such a rank is named as not
 *     answering, with both readings.
 *  2. The ranks that published are asked, on their presence port, where
 *     they are (watch.h): 'F' entered the fence; 'P' published its address
 *     and stalled before the fence; no answer: published, then stopped or
 *     hung before the fence (its kernel still accepts).
 * At most SVP_RT_ABSENT_NAMED ranks are named, so a launch that failed
 * whole does not flood the log.  A short list goes to list (for the
 * abort).
 */
static void svp_rt_name_absent(struct svp_rt *rt, const char *key,
                               const char *what, const char *seen,
                               char *list, size_t len)
{
    svp_rt_get_t *gets[SVP_RT_ABSENT_PROBE];
    char         *addrs[SVP_RT_ABSENT_PROBE];
    int           ranks[SVP_RT_ABSENT_PROBE], answers[SVP_RT_ABSENT_PROBE];
    char          node[PMIX_MAX_NSLEN + 1], here[PMIX_MAX_NSLEN + 1];
    const char   *window;
    size_t        used = 0;
    int           r, n = 0, i, absent = 0;
    double        until = svp_clock_now() + SVP_RT_ABSENT_WAIT;

    list[0] = '\0';
    for (r = 0; (r < rt->size) && (n < SVP_RT_ABSENT_PROBE); ++r) {
        if (r == rt->rank) {
            continue;
        }
        ranks[n] = r;
        if (svp_rt_get_start(rt, (pmix_rank_t)r, key, &gets[n]) != SVP_OK) {
            gets[n] = NULL;     /* counted absent below */
        }
        ++n;
    }
    svp_rt_get_wait(rt, gets, n, until);
    for (i = 0; i < n; ++i) {
        addrs[i] = svp_rt_get_addr(gets[i]);
    }
    svp_rt_watch_probe(addrs, n, svp_clock_now() + SVP_RT_PRESENCE_WAIT, answers);
    svp_rt_node_of(rt, rt->rank, here, sizeof(here));
    for (i = 0; i < n; ++i) {
        if ((addrs[i] != NULL) && (answers[i] == SVP_RT_PRESENCE_FENCE)) {
            svp_rt_get_free(gets[i]);
            continue;
        }
        svp_rt_node_of(rt, ranks[i], node, sizeof(node));
        if (addrs[i] == NULL) {
            window = (strcmp(node, here) == 0) ? "never started" :
                     "never started or its node did not answer";
        } else if (answers[i] == SVP_RT_PRESENCE_PUBLISHED) {
            window = "published its address but never reached the fence";
            seen   = "last seen between its address and the fence";
        } else {
            window = "published its address, then stopped answering before "
                     "the fence (stopped or hung)";
            seen   = "last seen publishing its address";
        }
        svp_rt_get_free(gets[i]);
        if (++absent > SVP_RT_ABSENT_NAMED) {
            continue;
        }
        svp_error("rank %d on %s %s: %s (%s)", ranks[i], node, window, what, seen);
        if (used < len) {
            used += snprintf(list + used, len - used, "%s%d on %s",
                             used > 0 ? ", " : "", ranks[i], node);
        }
    }
    if (absent > SVP_RT_ABSENT_NAMED) {
        svp_error("and %d more rank(s) never started", absent - SVP_RT_ABSENT_NAMED);
    }
}

/*
 * A start that failed for want of a peer ends the whole job now: the
 * missing rank may be stopped or sleeping, and the launcher would wait for
 * it until its own limit (srun -W, or forever).  PMIx_Abort only talks to
 * this node's server; Slurm then kills the step within ~10 ms.
 */
static void svp_rt_abort_start(struct svp_rt *rt, svp_status_t status,
                               const char *list)
{
    char     msg[768];
    unsigned gen;

    if (list[0] != '\0') {
        /* the other nodes' ranks name the absent ones themselves first */
        usleep((useconds_t)(SVP_RT_ABORT_SPREAD * 1e6));
        snprintf(msg, sizeof(msg), "svdworker rank %d: the job did not start "
                 "within %.0f s; missing: rank(s) %s", rt->rank, rt->timeout, list);
    } else {
        snprintf(msg, sizeof(msg), "svdworker rank %d: the job did not start: %s",
                 rt->rank, svp_status_string(status));
    }
    gen = svp_rt_watchdog_arm(SVP_RT_LOCAL_BOUND, "PMIx_Abort",
                              svp_status_exit_code(status));
    SVP_RT_PMIX_FUNC(PMIx_Abort(svp_status_exit_code(status), msg, NULL, 0),
                     SVP_LOG_LEVEL_WARN);
    svp_rt_watchdog_disarm(gen);
}

/* Connects the neighbour watch (see watch.h): publish, fence, connect. */
static svp_status_t svp_rt_init_watch(struct svp_rt *rt)
{
    const char  *addr;
    void        *next_addr;
    size_t       len;
    svp_status_t status;
    char         list[256], what[96], node[PMIX_MAX_NSLEN + 1];
    int          next = (rt->rank + 1) % rt->size;
    int          prev = (rt->rank + rt->size - 1) % rt->size;

    status = svp_rt_watch_listen(&rt->watch, &addr);
    if (status != SVP_OK) {
        return status;
    }
    list[0] = '\0';
    snprintf(what, sizeof(what), "no neighbour-watch address after %.0f s",
             rt->timeout);
    status = svp_rt_put(rt, SVP_RT_WATCH_KEY, addr, strlen(addr) + 1);
    if (status == SVP_OK) {
        status = svp_rt_fence(rt);
        if ((status == SVP_ERR_TIMED_OUT) || (status == SVP_ERR_PEER_LOST)) {
            svp_rt_name_absent(rt, SVP_RT_WATCH_KEY, what,
                               "not seen since launch", list, sizeof(list));
        }
    }
    if (status == SVP_OK) {
        status = svp_rt_get(rt, next, SVP_RT_WATCH_KEY, &next_addr, &len);
    }
    if (status != SVP_OK) {
        /* the watch's presence port answers the other ranks' probes until
         * the job is torn down */
        svp_rt_abort_start(rt, status, list);
        svp_rt_watch_stop(rt->watch, SVP_RT_WATCH_BYE_ERROR, 0,
                          svp_status_string(status));
        rt->watch = NULL;
        return status;
    }
    ((char *)next_addr)[len > 0 ? len - 1 : 0] = '\0';
    status = svp_rt_watch_start(rt->watch, rt->rank, rt->size, prev, next, next_addr,
                                rt->timeout, svp_rt_watch_lost, rt);
    free(next_addr);
    if (status == SVP_ERR_TIMED_OUT) {
        svp_rt_node_of(rt, prev, node, sizeof(node));
        svp_error("rank %d on %s never connected its neighbour watch within "
                  "%.0f s (last seen publishing its address)", prev, node,
                  rt->timeout);
        snprintf(list, sizeof(list), "%d on %.200s", prev, node);
    }
    if (status != SVP_OK) {
        rt->watch = NULL;   /* svp_rt_watch_start destroyed it */
        svp_rt_abort_start(rt, status, list);
    }
    return status;
}

static svp_status_t svp_rt_init_pmix(struct svp_rt *rt)
{
    pmix_value_t *val;
    svp_status_t  status;
    pmix_status_t rc;
    unsigned      gen;

    status = SVP_RT_PMIX_FUNC_ERR(PMIx_Init(&rt->proc, NULL, 0));
    if (status != SVP_OK) {
        return status;
    }
    rt->get_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (rt->get_fd < 0) {
        svp_error("eventfd failed: %m");
        status = SVP_ERR_NO_MEMORY;
        goto err_finalize;
    }

    /* PMIx_Get(PMIX_RANK) answers "not found" under both srun and mpirun:
     * the rank is the one PMIx_Init filled in. */
    rt->rank = (int)rt->proc.rank;

    status = svp_rt_get_value(rt, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE,
                              SVP_LOG_LEVEL_ERROR, rt->timeout, &val);
    if (status != SVP_OK) {
        goto err_finalize;
    }
    rt->size = (int)val->data.uint32;
    PMIX_VALUE_RELEASE(val);

    /* PMIX_LOCAL_SIZE is a job-level key: asked of the wildcard rank. */
    if (svp_rt_get_value(rt, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE,
                         SVP_LOG_LEVEL_DEBUG, rt->timeout, &val) == SVP_OK) {
        rt->local_size = (int)val->data.uint32;
        PMIX_VALUE_RELEASE(val);
    }
    if (svp_rt_get_value(rt, rt->proc.rank, PMIX_LOCAL_RANK,
                         SVP_LOG_LEVEL_DEBUG, rt->timeout, &val) == SVP_OK) {
        rt->local_rank = (int)val->data.uint16;
        PMIX_VALUE_RELEASE(val);
    }

    /* Slurm names the node here (several slurmd on one machine get
     * different names); fall back to the machine's own name. */
    if ((svp_rt_get_value(rt, rt->proc.rank, PMIX_HOSTNAME,
                          SVP_LOG_LEVEL_DEBUG, rt->timeout, &val) == SVP_OK) &&
        (val->type == PMIX_STRING) && (val->data.string != NULL)) {
        snprintf(rt->hostname, sizeof(rt->hostname), "%s", val->data.string);
        PMIX_VALUE_RELEASE(val);
    }

    rt->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (rt->event_fd < 0) {
        svp_error("eventfd failed: %m");
        status = SVP_ERR_NO_MEMORY;
        goto err_finalize;
    }

    /* A default handler (no codes): it sees every event, and having one
     * also keeps PMIx from acting on a lost server connection by itself. */
    svp_rt_instance = rt;
    rc = PMIx_Register_event_handler(NULL, 0, NULL, 0, svp_rt_event_handler,
                                     NULL, NULL);
    if (rc < 0) {
        svp_error("PMIx_Register_event_handler failed: %s",
                  PMIx_Error_string(rc));
        status = svp_rt_status_from_pmix(rc);
        goto err_close_fd;
    }
    /* Called without a callback, PMIx 4 returns the registration id. */
    rt->evhdlr_id         = (size_t)rc;
    rt->evhdlr_registered = 1;

    if (rt->size > 1) {
        status = svp_rt_init_watch(rt);
        if (status != SVP_OK) {
            goto err_deregister;
        }
    }
    return SVP_OK;

err_deregister:
    PMIx_Deregister_event_handler(rt->evhdlr_id, NULL, NULL);
err_close_fd:
    svp_rt_instance = NULL;
    close(rt->event_fd);
err_finalize:
    gen = svp_rt_watchdog_arm(SVP_RT_LOCAL_BOUND, "PMIx_Finalize",
                              svp_status_exit_code(status));
    PMIx_Finalize(NULL, 0);
    svp_rt_watchdog_disarm(gen);
    svp_rt_get_free_orphans(rt);
    if (rt->get_fd >= 0) {
        close(rt->get_fd);
    }
    return status;
}

svp_status_t svp_rt_init(const svp_rt_params_t *params, svp_rt_h *rt_p)
{
    struct svp_rt *rt;
    svp_status_t   status;

    rt = calloc(1, sizeof(*rt));
    if (rt == NULL) {
        svp_error("out of memory allocating the runtime");
        return SVP_ERR_NO_MEMORY;
    }
    rt->size       = 1;
    rt->local_size = 1;
    rt->event_fd   = -1;
    rt->get_fd     = -1;
    rt->timeout  = SVP_RT_DEFAULT_TIMEOUT;
    atomic_init(&rt->lost_rank, -1);
    atomic_init(&rt->have_cause, 0);
    if ((params != NULL) && (params->field_mask & SVP_RT_PARAM_FIELD_GROUP)) {
        rt->group_size = params->group_size;
    }
    atomic_init(&rt->leave_reason, SVP_RT_LEAVE_EARLY);
    atomic_init(&rt->leave_signo, 0);
    if ((params != NULL) && (params->field_mask & SVP_RT_PARAM_FIELD_TIMEOUT)) {
        rt->timeout = params->timeout;
    }
    snprintf(rt->hostname, sizeof(rt->hostname), "%s", svp_log_hostname());

    /* Without a launcher PMIx_Init fails with "unreachable", but only after
     * about 12 ms of trying; the launcher always sets PMIX_NAMESPACE, so its
     * absence is the cheaper and exact test for a plain start. */
    if (getenv("PMIX_NAMESPACE") == NULL) {
        rt->plain = 1;
    } else {
        status = svp_rt_init_pmix(rt);
        if (status != SVP_OK) {
            free(rt);
            return status;
        }
    }

    svp_log_set_rank(rt->rank);
    svp_debug("runtime up: rank %d of %d, local rank %d of %d on %s%s",
              rt->rank, rt->size, rt->local_rank, rt->local_size, rt->hostname,
              rt->plain ? " (plain start)" : "");
    *rt_p = rt;
    return SVP_OK;
}

void svp_rt_cleanup(svp_rt_h rt)
{
    svp_rt_kv_t *kv;
    unsigned     gen;
    int          reason;

    if (rt == NULL) {
        return;
    }
    if (!rt->plain) {
        svp_rt_watch_stop(rt->watch, atomic_load(&rt->leave_reason),
                          atomic_load(&rt->leave_signo), rt->leave_text);
        rt->watch = NULL;
        if (rt->evhdlr_registered) {
            PMIx_Deregister_event_handler(rt->evhdlr_id, NULL, NULL);
        }
        reason = atomic_load(&rt->leave_reason);
        gen    = svp_rt_watchdog_arm(SVP_RT_LOCAL_BOUND, "PMIx_Finalize",
                                     (reason == SVP_RT_LEAVE_SIGNAL) ?
                                     128 + atomic_load(&rt->leave_signo) :
                                     SVP_EXIT_JOB_FATAL);
        SVP_RT_PMIX_FUNC(PMIx_Finalize(NULL, 0), SVP_LOG_LEVEL_WARN);
        svp_rt_watchdog_disarm(gen);
        svp_rt_fence_free(rt->fence);
        svp_rt_get_free_orphans(rt);
        svp_rt_instance = NULL;
        close(rt->event_fd);
        close(rt->get_fd);
    }
    while ((kv = rt->kv) != NULL) {
        rt->kv = kv->next;
        free(kv->key);
        free(kv->data);
        free(kv);
    }
    free(rt);
}

int svp_rt_rank(svp_rt_h rt)
{
    return rt->rank;
}

int svp_rt_size(svp_rt_h rt)
{
    return rt->size;
}

int svp_rt_local_rank(svp_rt_h rt)
{
    return rt->local_rank;
}

int svp_rt_local_size(svp_rt_h rt)
{
    return rt->local_size;
}

const char *svp_rt_hostname(svp_rt_h rt)
{
    return rt->hostname;
}

const char *svp_rt_nspace(svp_rt_h rt)
{
    return rt->plain ? "" : rt->proc.nspace;
}

int svp_rt_is_plain(svp_rt_h rt)
{
    return rt->plain;
}

static svp_status_t svp_rt_check_key(const char *key)
{
    if ((key == NULL) || (key[0] == '\0') || (strlen(key) > SVP_RT_MAX_KEY)) {
        svp_error("invalid runtime key '%s' (1 to %d characters)",
                  key != NULL ? key : "(null)", SVP_RT_MAX_KEY);
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_OK;
}

static svp_rt_kv_t *svp_rt_kv_find(struct svp_rt *rt, const char *key)
{
    svp_rt_kv_t *kv;

    for (kv = rt->kv; kv != NULL; kv = kv->next) {
        if (strcmp(kv->key, key) == 0) {
            return kv;
        }
    }
    return NULL;
}

static svp_status_t svp_rt_kv_put(struct svp_rt *rt, const char *key,
                                  const void *data, size_t len)
{
    svp_rt_kv_t *kv   = svp_rt_kv_find(rt, key);
    void        *copy = malloc(len > 0 ? len : 1);

    if (copy == NULL) {
        goto err_nomem;
    }
    memcpy(copy, data, len);
    if (kv == NULL) {
        kv = calloc(1, sizeof(*kv));
        if (kv == NULL) {
            goto err_free_copy;
        }
        kv->key = svp_strdup(key);
        if (kv->key == NULL) {
            free(kv);
            goto err_free_copy;
        }
        kv->next = rt->kv;
        rt->kv   = kv;
    } else {
        free(kv->data);
    }
    kv->data = copy;
    kv->len  = len;
    return SVP_OK;

err_free_copy:
    free(copy);
err_nomem:
    svp_error("out of memory storing key '%s' (%zu bytes)", key, len);
    return SVP_ERR_NO_MEMORY;
}

svp_status_t svp_rt_put(svp_rt_h rt, const char *key, const void *data,
                        size_t len)
{
    pmix_value_t val;
    svp_status_t status;

    status = svp_rt_check_key(key);
    if (status != SVP_OK) {
        return status;
    }
    if (rt->plain) {
        return svp_rt_kv_put(rt, key, data, len);
    }

    /* PMIx_Put copies the value: the byte object may point at caller data. */
    PMIX_VALUE_CONSTRUCT(&val);
    val.type               = PMIX_BYTE_OBJECT;
    val.data.bo.bytes      = (char *)data;
    val.data.bo.size       = len;
    status = SVP_RT_PMIX_FUNC_ERR(PMIx_Put(PMIX_GLOBAL, key, &val));
    return status;
}

/*
 * A fence in flight.  PMIx_Fence blocks inside PMIx and nothing interrupts
 * it: with a rank killed alone on its node, Slurm kills nothing and the
 * others sat in the fence until its timeout, although the neighbour watch
 * had reported the loss within milliseconds.  So the fence is started with
 * PMIx_Fence_nb and waited for in poll() beside the peer-loss fd.  PMIx may
 * call back after we gave up: the record then stays with the runtime until
 * PMIx_Finalize.
 */
typedef struct svp_rt_fence {
    int           fd;          /* eventfd written by the callback */
    atomic_int    done;
    pmix_status_t status;
} svp_rt_fence_t;

static void svp_rt_fence_cb(pmix_status_t status, void *cbdata)
{
    svp_rt_fence_t *fence = cbdata;
    uint64_t        one   = 1;

    fence->status = status;
    atomic_store(&fence->done, 1);
    if (write(fence->fd, &one, sizeof(one)) != sizeof(one)) {
        svp_warn("write to the fence event fd failed: %m");
    }
}

static void svp_rt_fence_free(struct svp_rt_fence *fence)
{
    if (fence != NULL) {
        close(fence->fd);
        free(fence);
    }
}

/* Waits for the fence, the loss of a peer or the timeout, whichever first. */
static svp_status_t svp_rt_fence_wait(struct svp_rt *rt, svp_rt_fence_t *fence,
                                      double timeout)
{
    struct pollfd fds[2] = { { .fd = fence->fd, .events = POLLIN },
                             { .fd = rt->event_fd, .events = POLLIN } };
    double        until = svp_clock_now() + timeout;
    double        left;
    int           nfds  = 2;

    while (!atomic_load(&fence->done)) {
        if ((svp_rt_lost_rank(rt) != -1) && (nfds == 2)) {
            /*
             * A rank may pass the fence, fail on its own and say goodbye
             * before this rank's own fence callback runs (seen on a loaded
             * 2-core node): the fence did complete then, and the failure is
             * that rank's to report, not a loss during the fence.  So the
             * fence gets a moment more, watching its own descriptor only.
             */
            until = SVP_MIN(until, svp_clock_now() + SVP_RT_FENCE_GRACE);
            nfds  = 1;
        }
        left = until - svp_clock_now();
        if (left <= 0) {
            return (nfds == 1) ? SVP_ERR_PEER_LOST : SVP_ERR_TIMED_OUT;
        }
        if ((poll(fds, nfds, (int)(left * 1e3) + 1) < 0) && (errno != EINTR)) {
            svp_error("poll while waiting for a fence failed: %m");
            return SVP_ERR_RUNTIME;
        }
    }
    return svp_rt_status_from_pmix(fence->status);
}

void svp_rt_set_fence_timeout(svp_rt_h rt, double seconds)
{
    if (seconds > 0) {
        rt->timeout = seconds;
    }
}

svp_status_t svp_rt_fence(svp_rt_h rt)
{
    pmix_info_t     info[2];
    bool            collect = true;
    int             timeout = (int)(rt->timeout + 0.999);
    svp_rt_fence_t *fence;
    svp_status_t    status;

    if (rt->plain) {
        return SVP_OK;
    }
    if (rt->fence != NULL) {
        svp_error("a fence is still in flight after an earlier failure");
        return SVP_ERR_RUNTIME;
    }

    status = SVP_RT_PMIX_FUNC_ERR(PMIx_Commit());
    if (status != SVP_OK) {
        return status;
    }

    fence = calloc(1, sizeof(*fence));
    if (fence == NULL) {
        svp_error("out of memory starting a fence");
        return SVP_ERR_NO_MEMORY;
    }
    fence->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fence->fd < 0) {
        svp_error("eventfd failed: %m");
        free(fence);
        return SVP_ERR_RUNTIME;
    }
    atomic_init(&fence->done, 0);

    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    /* NULL procs: every rank of our namespace. */
    status = SVP_RT_PMIX_FUNC_ERR(PMIx_Fence_nb(NULL, 0, info, 2,
                                                svp_rt_fence_cb, fence));
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (status != SVP_OK) {
        svp_rt_fence_free(fence);
        return status;
    }
    /* the presence probe (svp_rt_name_absent) now finds this rank in it */
    svp_rt_watch_set_presence(rt->watch, SVP_RT_PRESENCE_FENCE);

    /* one second more than PMIx's own timeout, so that PMIx says it first */
    status = svp_rt_fence_wait(rt, fence, timeout + 1.0);
    if (atomic_load(&fence->done)) {
        svp_rt_fence_free(fence);
    } else {
        rt->fence = fence;
    }
    if (status == SVP_OK) {
        return SVP_OK;
    }
    if ((svp_rt_lost_rank(rt) >= 0) && svp_rt_stop_cause(rt, NULL, 0)) {
        svp_debug("fence of %d ranks ended: rank %d left", rt->size,
                  svp_rt_lost_rank(rt));
        return SVP_ERR_PEER_STOPPED;
    }
    if (svp_rt_lost_rank(rt) >= 0) {
        svp_error("fence of %d ranks failed: rank %d was lost", rt->size,
                  svp_rt_lost_rank(rt));
        return SVP_ERR_PEER_LOST;
    }
    svp_error("fence of %d ranks failed within %d s: %s", rt->size, timeout,
              svp_status_string(status));
    return status;
}

svp_status_t svp_rt_fence_final(svp_rt_h rt)
{
    svp_status_t status = svp_rt_fence(rt);

    if (status == SVP_OK) {
        svp_rt_set_leave_reason(rt, SVP_RT_LEAVE_DONE);
    }
    return status;
}

svp_status_t svp_rt_get(svp_rt_h rt, int rank, const char *key,
                        void **data_p, size_t *len_p)
{
    pmix_value_t *val;
    svp_rt_kv_t  *kv;
    svp_status_t  status;
    void         *copy;
    const void   *src;
    size_t        len;

    status = svp_rt_check_key(key);
    if (status != SVP_OK) {
        return status;
    }
    if ((rank < 0) || (rank >= rt->size)) {
        svp_error("key '%s' asked of rank %d, but ranks are 0..%d", key, rank,
                  rt->size - 1);
        return SVP_ERR_INVALID_PARAM;
    }

    if (rt->plain) {
        kv = svp_rt_kv_find(rt, key);
        if (kv == NULL) {
            svp_debug("key '%s' not published", key);
            return SVP_ERR_NOT_FOUND;
        }
        src = kv->data;
        len = kv->len;
        val = NULL;
    } else {
        status = svp_rt_get_value(rt, (pmix_rank_t)rank, key,
                                  SVP_LOG_LEVEL_DEBUG, rt->timeout, &val);
        if (status != SVP_OK) {
            svp_error("key '%s' of rank %d: %s", key, rank,
                      svp_status_string(status));
            return status;
        }
        if (val->type != PMIX_BYTE_OBJECT) {
            svp_error("key '%s' of rank %d holds PMIx type %d, not bytes", key,
                      rank, (int)val->type);
            PMIX_VALUE_RELEASE(val);
            return SVP_ERR_RUNTIME;
        }
        src = val->data.bo.bytes;
        len = val->data.bo.size;
    }

    copy = malloc(len > 0 ? len : 1);
    if (copy == NULL) {
        svp_error("out of memory copying key '%s' (%zu bytes)", key, len);
        status = SVP_ERR_NO_MEMORY;
    } else {
        memcpy(copy, src, len);
        *data_p = copy;
        *len_p  = len;
        status  = SVP_OK;
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }
    return status;
}

void svp_rt_abort(svp_rt_h rt, int exit_status, const char *message)
{
    unsigned gen;

    if (rt->plain) {
        svp_error("abort (exit status %d): %s", exit_status, message);
        return;
    }
    /* Slurm kills the rest of the step about 10 ms after this. */
    gen = svp_rt_watchdog_arm(SVP_RT_LOCAL_BOUND, "PMIx_Abort", exit_status);
    SVP_RT_PMIX_FUNC(PMIx_Abort(exit_status, message, NULL, 0),
                     SVP_LOG_LEVEL_WARN);
    svp_rt_watchdog_disarm(gen);
}

int svp_rt_lost_rank(svp_rt_h rt)
{
    return atomic_load(&rt->lost_rank);
}

int svp_rt_event_fd(svp_rt_h rt)
{
    return rt->event_fd;
}
