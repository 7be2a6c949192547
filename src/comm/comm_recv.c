/*
 * The receive path (comm.h, svp_comm_irecv): a receive posted to UCX under
 * its tag, or withheld on a stop or from a sender that is leaving, and
 * progressed at once.  What it shares with the send path (comm_send.c) is
 * in comm_req.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm_int.h"

#include "common/stop.h"

#include <stdlib.h>

static void svp_comm_recv_cb(void *request, ucs_status_t status,
                             const ucp_tag_recv_info_t *info, void *user_data)
{
    svp_comm_req_complete(user_data, request, status,
                          (status == UCS_OK) ? info->length : 0);
}

/*
 * Whether peer said BYE (its teardown began, svp_comm_drain).  A message it
 * sent earlier may wait here in rendezvous, and fetching it is fatal once
 * the sender has exited (UCX 1.13, cma): on 3 nodes a scancel reached a
 * rank 0.6 s after its neighbours, which had drained and gone by the time
 * it posted the receive for a sample they had sent early.  Such a receive
 * is withheld instead: it never completes, like a message that never came,
 * and the drain discards the message without fetching it.
 */
static int svp_comm_peer_leaving(struct svp_comm *comm, int peer)
{
    if (peer == comm->rank) {
        return 0;
    }
    svp_comm_progress(comm); /* hears the words that came */
    return (comm->heard[peer] & SVP_COMM_HEARD_BYE) != 0;
}

/* The receive path: posted to UCX, unless a stop or the sender's departure
 * withholds it (svp_comm_peer_leaving), then progressed once. */
static svp_status_t svp_comm_recv_post(struct svp_comm *comm, int peer,
                                       unsigned kind, unsigned sample, unsigned step,
                                       svp_comm_frame_h frame, svp_comm_req_h *req_p)
{
    struct svp_comm_req *req;
    ucp_request_param_t  params;
    ucp_ep_h             ep;
    svp_status_t         status;
    void                *request, *wire;

    status = svp_comm_req_create(comm, 0, peer, kind, sample, step, frame, &req);
    if (status != SVP_OK) {
        return status;
    }
    if (svp_comm_req_peer_gone(req)) {
        svp_debug(
            "rank %d is leaving: receive of sample %u step %u from it withheld",
            peer, sample, step);
        req->withheld = 1;
        goto posted;
    }
    status = svp_comm_req_prepare(req, &ep, &params, &wire);
    if (status != SVP_OK) {
        goto err_free_req;
    }
    /*
     * UCX 1.13 (Debian 12) does not fill recv_info when a receive completes
     * at once (the message was already here): the length read back was
     * stack garbage ("expected 3712 bytes, got 139850931861426") in about
     * one run in three of a 4-rank ring.  Asking for the callback always
     * makes the length come from UCX itself.
     */
    params.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    params.cb.recv = svp_comm_recv_cb;
    if (svp_stop_pending() || svp_comm_peer_leaving(comm, peer) ||
        svp_rt_peer_gone(comm->rt, peer)) {
        svp_debug("%s: sample %u step %u from rank %d is not fetched",
                  svp_stop_pending() ? "stopping" : "its sender is leaving", sample,
                  step, peer);
        req->withheld = 1;
        goto posted;
    }
    request = ucp_tag_recv_nbx(comm->worker, wire, frame->length,
                               svp_comm_tag(kind, peer, sample, step), UINT64_MAX,
                               &params);
    if (UCS_PTR_IS_ERR(request)) {
        svp_error("cannot receive sample %u step %u from rank %d: %s", sample, step,
                  peer, ucs_status_string(UCS_PTR_STATUS(request)));
        status = svp_comm_status_from_ucs(UCS_PTR_STATUS(request));
        goto err_free_req;
    }
    if (request == NULL) {
        req->done = 1;
    } else {
        req->ucx_req = request;
    }
    /*
     * A receive that matched a rendezvous message already here has started
     * fetching it: finish that now, not after the caller's next compute.  A
     * fetch left pending through a stage's steps (0.4 s) was still pending
     * when the sender, stopped by a scancel that reached this rank 0.4 s
     * later, gave up waiting for it and exited: the fetch then killed this
     * rank (UCX 1.13, cma).
     */
    svp_comm_progress(comm);
posted:
    svp_comm_req_link(req, req_p);
    return SVP_OK;

err_free_req:
    free(req);
    return status;
}

svp_status_t svp_comm_irecv(svp_comm_h comm, int peer, unsigned kind,
                            unsigned sample, unsigned step, svp_comm_frame_h frame,
                            svp_comm_req_h *req_p)
{
    return svp_comm_recv_post(comm, peer, kind, sample, step, frame, req_p);
}
