/*
 * PMIx's status codes as ours (rt_int.h, SVP_RT_PMIX_FUNC): the runtime's
 * one conversion at the PMIx boundary.  A file of its own because every
 * file of the runtime uses it: where it sat in rt.c, the keys and fences
 * that rt.c calls (rt_kv.c, rt_fence.c) called back into rt.c for it.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt_int.h"

svp_status_t svp_rt_status_from_pmix(pmix_status_t rc)
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
