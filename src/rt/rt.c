/*
 * The runtime (rt.h): PMIx start-up and finalize under a watchdog, the
 * plain single-rank mode, identity, and the launcher's abort.  Keys,
 * fences, the start-up watch and losses live beside it (rt_int.h lists
 * them).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt_int.h"

#include "common/stop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
    if (svp_rt_get_value(rt, rt->proc.rank, PMIX_LOCAL_RANK, SVP_LOG_LEVEL_DEBUG,
                         rt->timeout, &val) == SVP_OK) {
        rt->local_rank = (int)val->data.uint16;
        PMIX_VALUE_RELEASE(val);
    }

    /* Slurm names the node here (several slurmd on one machine get
     * different names); fall back to the machine's own name. */
    if ((svp_rt_get_value(rt, rt->proc.rank, PMIX_HOSTNAME, SVP_LOG_LEVEL_DEBUG,
                          rt->timeout, &val) == SVP_OK) &&
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
    rc = PMIx_Register_event_handler(NULL, 0, NULL, 0, svp_rt_event_handler, NULL,
                                     NULL);
    if (rc < 0) {
        svp_error("PMIx_Register_event_handler failed: %s", PMIx_Error_string(rc));
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
    rt->timeout    = SVP_RT_DEFAULT_TIMEOUT;
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
    svp_debug("runtime up: rank %d of %d, local rank %d of %d on %s%s", rt->rank,
              rt->size, rt->local_rank, rt->local_size, rt->hostname,
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
                                  (reason == SVP_RT_LEAVE_SIGNAL)
                                         ? 128 + atomic_load(&rt->leave_signo)
                                         : SVP_EXIT_JOB_FATAL);
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

void svp_rt_abort(svp_rt_h rt, int exit_status, const char *message)
{
    unsigned gen;

    if (rt->plain) {
        svp_error("abort (exit status %d): %s", exit_status, message);
        return;
    }
    /* Slurm kills the rest of the step about 10 ms after this. */
    gen = svp_rt_watchdog_arm(SVP_RT_LOCAL_BOUND, "PMIx_Abort", exit_status);
    SVP_RT_PMIX_FUNC(PMIx_Abort(exit_status, message, NULL, 0), SVP_LOG_LEVEL_WARN);
    svp_rt_watchdog_disarm(gen);
}
