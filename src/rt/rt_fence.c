/*
 * Fences (rt.h): PMIx's non-blocking fence with data collection, waited for
 * against the runtime's timeout and a lost peer, with a moment's grace for
 * a fence that completed while a peer left.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt_int.h"

#include "common/clock.h"
#include "common/util.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Seconds a fence may still complete after a rank was reported lost (see
 * svp_rt_fence_wait). */
#define SVP_RT_FENCE_GRACE 0.5

/*
 * A fence in flight.  PMIx_Fence blocks inside PMIx and nothing interrupts
 * it: with a rank killed alone on its node, Slurm kills nothing and the
 * others sat in the fence until its timeout, although the neighbour watch
 * had reported the loss within milliseconds.  So the fence is started with
 * PMIx_Fence_nb and waited for in poll() beside the peer-loss fd.  PMIx may
 * call back after we gave up: the record then stays with the runtime until
 * PMIx_Finalize.
 */
struct svp_rt_fence {
    int           fd; /* eventfd written by the callback */
    atomic_int    done;
    pmix_status_t status;
};

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

void svp_rt_fence_free(struct svp_rt_fence *fence)
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
    struct pollfd fds[2] = {{.fd = fence->fd, .events = POLLIN},
                            {.fd = rt->event_fd, .events = POLLIN}};
    double        until  = svp_clock_now() + timeout;
    double        left;
    int           nfds = 2;

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
    status = SVP_RT_PMIX_FUNC_ERR(
        PMIx_Fence_nb(NULL, 0, info, 2, svp_rt_fence_cb, fence));
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
