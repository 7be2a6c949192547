/*
 * The send path (comm.h, svp_comm_isend): the frame sealed, or staged out
 * of the device, with its id, and given to UCX under its tag.  What it
 * shares with the receive path (comm_recv.c) is in comm_req.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm_int.h"
#include "trace/range.h"

#include <stdlib.h>

static void svp_comm_send_cb(void *request, ucs_status_t status, void *user_data)
{
    svp_comm_req_complete(user_data, request, status, 0);
}

/* The send path: the frame sealed (or staged out of the device) with its
 * id, then given to UCX. */
static svp_status_t svp_comm_send_post(struct svp_comm *comm, int peer,
                                       unsigned kind, unsigned sample, unsigned step,
                                       svp_comm_frame_h frame, svp_comm_req_h *req_p)
{
    struct svp_comm_req *req;
    ucp_request_param_t  params;
    svp_comm_frame_id_t  id;
    ucp_ep_h             ep;
    svp_status_t         status;
    void                *request, *wire;

    status = svp_comm_req_create(comm, 1, peer, kind, sample, step, frame, &req);
    if (status != SVP_OK) {
        return status;
    }
    if (svp_comm_req_peer_gone(req)) {
        svp_debug("rank %d is leaving: send of sample %u step %u to it withheld",
                  peer, sample, step);
        req->withheld = 1;
        goto posted;
    }
    status = svp_comm_req_prepare(req, &ep, &params, &wire);
    if (status != SVP_OK) {
        goto err_free_req;
    }
    id.job_id   = comm->job_id;
    id.kind     = kind;
    id.sample   = sample;
    id.step     = step;
    id.src_rank = comm->rank;
    if (frame->mem_type == SVP_COMM_MEM_CUDA) {
        status = svp_comm_frame_stage_out(comm, frame, &id);
        if (status != SVP_OK) {
            goto err_free_req;
        }
    } else {
        svp_comm_frame_seal(frame, &id, comm->checksum);
    }
    params.cb.send = svp_comm_send_cb;
    request =
        ucp_tag_send_nbx(ep, wire, frame->length,
                         svp_comm_tag(kind, comm->rank, sample, step), &params);
    if (UCS_PTR_IS_ERR(request)) {
        svp_error("cannot send sample %u step %u to rank %d: %s", sample, step, peer,
                  ucs_status_string(UCS_PTR_STATUS(request)));
        status = svp_comm_status_from_ucs(UCS_PTR_STATUS(request));
        goto err_free_req;
    }
    if (request == NULL) {
        /* completed at once: its callback will not be called */
        req->done = 1;
    } else {
        req->ucx_req = request;
    }
posted:
    svp_comm_req_link(req, req_p);
    return SVP_OK;

err_free_req:
    free(req);
    return status;
}

svp_status_t svp_comm_isend(svp_comm_h comm, int peer, unsigned kind,
                            unsigned sample, unsigned step, svp_comm_frame_h frame,
                            svp_comm_req_h *req_p)
{
    svp_status_t status;

    svp_range_push_ctx("send sample %u step %u to %d", sample, step, peer);
    status = svp_comm_send_post(comm, peer, kind, sample, step, frame, req_p);
    svp_range_pop();
    return status;
}
