/*
 * The runtime's private parts (src/rt only): the handle's layout, the PMIx
 * call wrapper, and what the runtime's files call of one another:
 *
 *   rt.c           start-up and finalize, identity, abort
 *   rt_watchdog.c  the bound on PMIx calls that cannot be made non-blocking
 *   rt_kv.c        keys: put, and gets that never block (PMIx or plain)
 *   rt_fence.c     fences against the runtime's timeout
 *   rt_start.c     the neighbour watch's start and the naming of absent ranks
 *   rt_events.c    losses and stops: PMIx events, the watch's reports, causes
 */
#ifndef SVP_RT_RT_INT_H
#define SVP_RT_RT_INT_H

#include "rt/rt.h"
#include "rt/watch.h"
#include "common/log.h"

#include <pmix.h>
#include <stdatomic.h>
#include <stddef.h>

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
    int         plain;
    int         rank, size, local_rank, local_size;
    double      timeout;
    char        hostname[PMIX_MAX_NSLEN + 1];
    pmix_proc_t proc; /* PMIx identity (unused when plain) */
    size_t      evhdlr_id;
    int         evhdlr_registered;
    int         event_fd;
    atomic_int  lost_rank;
    atomic_int  leave_reason; /* svp_rt_leave_t */
    atomic_int  leave_signo;  /* with SVP_RT_LEAVE_SIGNAL */
    char        leave_text[SVP_RT_WATCH_BYE_TEXT_MAX + 1]; /* with _ERROR, _ENDING */
    /* "rank 2 was stopped by SIGTERM": set once, before the loss it
     * explains is recorded, when the first loss is another rank's stop */
    char                 stop_cause[SVP_RT_WATCH_BYE_TEXT_MAX + 1];
    atomic_int           have_cause;
    atomic_int           cause_is_loss; /* the cause is a rank lost, not stopped */
    int                  get_fd;        /* eventfd written by PMIx_Get_nb answers */
    struct svp_rt_get   *orphans;       /* gets PMIx still owes an answer */
    svp_rt_watch_t      *watch;         /* NULL when plain or alone */
    int                  group_size;    /* ranks per pipeline, 0: all */
    struct svp_rt_fence *fence;         /* a fence PMIx still owes an answer */
    svp_rt_kv_t         *kv;            /* plain start only */
};

/* Seconds PMIx_Abort and PMIx_Finalize may take: both talk only to this
 * node's slurmstepd, which answered within 20 ms when it answered at all. */
#define SVP_RT_LOCAL_BOUND 1.5

#define SVP_RT_WATCH_KEY "svp.rt.watch_address"

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
    int                fd; /* the runtime's get_fd */
    atomic_int         done;
    pmix_status_t      status;
    pmix_value_t      *val; /* a copy of the answer, on success */
} svp_rt_get_t;

typedef struct svp_rt_fence svp_rt_fence_t;

/* rt_status.c */
svp_status_t svp_rt_status_from_pmix(pmix_status_t rc);

/* rt_watchdog.c: arms the watchdog for a call of at most seconds (what
 * names it); the generation to disarm it with */
unsigned svp_rt_watchdog_arm(double seconds, const char *what, int exit_status);
void     svp_rt_watchdog_disarm(unsigned gen);

/* rt_kv.c */
svp_status_t svp_rt_get_start(struct svp_rt *rt, pmix_rank_t rank, const char *key,
                              svp_rt_get_t **get_p);
int  svp_rt_get_wait(struct svp_rt *rt, svp_rt_get_t **gets, int n, double until);
void svp_rt_get_free(svp_rt_get_t *get);
void svp_rt_get_free_orphans(struct svp_rt *rt);
svp_status_t svp_rt_get_value(struct svp_rt *rt, pmix_rank_t rank, const char *key,
                              svp_log_level_t level, double timeout,
                              pmix_value_t **val_p);

/* rt_fence.c */
void svp_rt_fence_free(struct svp_rt_fence *fence);

/* rt_start.c */
svp_status_t svp_rt_init_watch(struct svp_rt *rt);

/* rt_events.c: the runtime PMIx's event handler finds (one per process) */
extern struct svp_rt *svp_rt_instance;
void svp_rt_event_handler(size_t evhdlr_registration_id, pmix_status_t status,
                          const pmix_proc_t *source, pmix_info_t info[],
                          size_t ninfo, pmix_info_t results[], size_t nresults,
                          pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata);
void svp_rt_watch_lost(void *arg, int rank, svp_rt_watch_bye_t reason,
                       const char *why);

/* rt_start.c: the node of rank, from PMIx's job map ("?" when unknown) */
void svp_rt_node_of(struct svp_rt *rt, int rank, char *buf, size_t len);

#endif
