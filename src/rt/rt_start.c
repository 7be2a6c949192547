/*
 * Start-up across nodes (rt_int.h): the neighbour watch's addresses and
 * connections, and when the first fence fails, every rank's naming of the
 * ranks that did not arrive (never started, stalled before the fence, or
 * stopped answering) before the job is torn down.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/rt_int.h"

#include "common/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
#define SVP_RT_ABSENT_WAIT   1.0
#define SVP_RT_PRESENCE_WAIT 0.5

/*
 * Seconds a rank that named the absent ones waits before it ends the job
 * (PMIx_Abort), so that the ranks of the other nodes, whose fences failed
 * up to a launch's skew later (1 s seen on 3 nodes), name them too instead
 * of being killed in their own probe.
 */
#define SVP_RT_ABORT_SPREAD 1.2

/*
 * The node of rank, from PMIx's job info: this node's server holds the map
 * of the whole job (Slurm and mpirun both register PMIX_NODE_MAP and
 * PMIX_PROC_MAP), so neither call asks another node.  "?" when unknown.
 */
void svp_rt_node_of(struct svp_rt *rt, int rank, char *buf, size_t len)
{
    char        *nodes = NULL, *save = NULL, *node;
    pmix_proc_t *procs;
    size_t       nprocs, i;
    int          found = 0;

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
static void svp_rt_name_absent(struct svp_rt *rt, const char *key, const char *what,
                               const char *seen, char *list, size_t len)
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
            gets[n] = NULL; /* counted absent below */
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
            window = (strcmp(node, here) == 0)
                         ? "never started"
                         : "never started or its node did not answer";
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
        snprintf(msg, sizeof(msg),
                 "svdworker rank %d: the job did not start "
                 "within %.0f s; missing: rank(s) %s",
                 rt->rank, rt->timeout, list);
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
svp_status_t svp_rt_init_watch(struct svp_rt *rt)
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
            svp_rt_name_absent(rt, SVP_RT_WATCH_KEY, what, "not seen since launch",
                               list, sizeof(list));
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
                  "%.0f s (last seen publishing its address)",
                  prev, node, rt->timeout);
        snprintf(list, sizeof(list), "%d on %.200s", prev, node);
    }
    if (status != SVP_OK) {
        rt->watch = NULL; /* svp_rt_watch_start destroyed it */
        svp_rt_abort_start(rt, status, list);
    }
    return status;
}
