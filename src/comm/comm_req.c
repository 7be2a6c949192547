/*
 * Requests and waits: what a send and a receive share (the request, its
 * endpoint and UCX parameters, its completion; the paths themselves are
 * comm_send.c and comm_recv.c), the checks of what came, cancellation, the
 * waits with their deadlines, and teardown's drain of what is still in
 * flight.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm_int.h"
#include "trace/range.h"

#include "common/clock.h"
#include "common/stop.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

/* ---- requests -------------------------------------------------------- */

static void svp_comm_req_unlink(struct svp_comm_req *req)
{
    if (req->prev != NULL) {
        req->prev->next = req->next;
    } else {
        req->comm->reqs = req->next;
    }
    if (req->next != NULL) {
        req->next->prev = req->prev;
    }
}

void svp_comm_req_release(struct svp_comm_req *req)
{
    svp_comm_req_unlink(req);
    free(req);
}

/* Frees an abandoned request, and its frame when that was destroyed while
 * UCX still had it. */
void svp_comm_req_drop(struct svp_comm_req *req)
{
    struct svp_comm_frame *frame = req->frame;

    svp_comm_req_release(req);
    if ((--frame->busy == 0) && frame->destroyed) {
        svp_comm_frame_free(frame);
    }
}

/* Runs in ucp_worker_progress when UCX finishes with a request. */
void svp_comm_req_complete(struct svp_comm_req *req, void *request,
                           ucs_status_t status, size_t length)
{
    req->ucs_status = status;
    req->length     = length;
    req->done       = 1;
    req->ucx_req    = NULL;
    ucp_request_free(request);
    if (req->abandoned) {
        svp_comm_req_drop(req);
    }
}

/*
 * Receives the messages that arrived unmatched and whose tag matches (tag,
 * mask), into a 64-byte scratch buffer: UCX keeps only the first bytes of
 * an eager message, and answers the rendezvous request of a larger one at
 * once, without fetching a byte (1.13's truncated rendezvous receive), which
 * completes the sender's send.  Words are taken note of (svp_comm.heard); a
 * BYE also discards what its sender left here (svp_comm_peer_leaving).
 * Returns how many messages were found.
 */
static int svp_comm_discard(struct svp_comm *comm, uint64_t tag, uint64_t mask)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h   msg;
    ucp_request_param_t params;
    ucp_ep_h            ep;
    unsigned            kind, sample, step;
    void               *request;
    int                 src, found = 0;

    memset(&params, 0, sizeof(params));
    params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                          UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    params.cb.recv   = svp_comm_drain_recv_cb;
    params.user_data = comm;
    while ((msg = ucp_tag_probe_nb(comm->worker, tag, mask, 1, &info)) != NULL) {
        ++found;
        svp_comm_tag_decode(info.sender_tag, &kind, &src, &sample, &step);
        request = ucp_tag_msg_recv_nbx(comm->worker, comm->scratch,
                                       sizeof(comm->scratch), msg, &params);
        if (UCS_PTR_IS_ERR(request)) {
            svp_debug("discarding a message of rank %d: %s", src,
                      ucs_status_string(UCS_PTR_STATUS(request)));
        } else if (request != NULL) {
            ++comm->drain_ops;
        }
        if (src == comm->rank || src >= comm->size) {
            continue;
        }
        if (kind != SVP_COMM_KIND_WORD) {
            svp_debug("discarded sample %u step %u from rank %d (%zu bytes)", sample,
                      step, src, info.length);
        } else if (step == SVP_COMM_WORD_BYE) {
            comm->heard[src] |= SVP_COMM_HEARD_BYE;
            svp_comm_discard(comm, svp_comm_tag(0, src, 0, 0),
                             SVP_COMM_TAG_SRC_MASK);
        } else {
            comm->heard[src] |= SVP_COMM_HEARD_HELLO;
        }
        /* in a drain, a rank connected to this one waits for its word:
         * answer it on an endpoint of our own */
        if (comm->draining && comm->eps[src] == NULL &&
            svp_comm_ep(comm, src, &ep) == SVP_OK) {
            svp_comm_say(comm, src, SVP_COMM_WORD_BYE);
        }
    }
    return found;
}

/* Takes note of the words that came (and what a BYE's sender left). */
static void svp_comm_hear(struct svp_comm *comm)
{
    svp_comm_discard(comm, svp_comm_tag(SVP_COMM_KIND_WORD, 0, 0, 0),
                     SVP_COMM_TAG_KIND_MASK);
}

static svp_status_t svp_comm_check_op(struct svp_comm *comm, int peer, unsigned kind,
                                      unsigned sample, unsigned step,
                                      svp_comm_frame_h frame)
{
    if ((kind < 1) || (kind > SVP_COMM_MAX_KIND) || (sample > SVP_COMM_MAX_SAMPLE) ||
        (step > SVP_COMM_MAX_STEP)) {
        svp_error("message kind %u sample %u step %u out of range (kind 1..%d, "
                  "sample <= %u, step <= %u)",
                  kind, sample, step, SVP_COMM_MAX_KIND, SVP_COMM_MAX_SAMPLE,
                  SVP_COMM_MAX_STEP);
        return SVP_ERR_INVALID_PARAM;
    }
    if ((peer < 0) || (peer >= comm->size) || (frame == NULL)) {
        svp_error("invalid peer %d (ranks 0..%d) or no frame", peer, comm->size - 1);
        return SVP_ERR_INVALID_PARAM;
    }
    return SVP_OK;
}

/*
 * What a send and a receive share, before each goes its own way
 * (svp_comm_send_post, svp_comm_recv_post): the operation checked and its
 * request allocated, not yet linked (the caller frees it until then).
 */
svp_status_t svp_comm_req_create(struct svp_comm *comm, int is_send, int peer,
                                 unsigned kind, unsigned sample, unsigned step,
                                 svp_comm_frame_h frame, struct svp_comm_req **req_p)
{
    struct svp_comm_req *req;
    svp_status_t         status;

    status = svp_comm_check_op(comm, peer, kind, sample, step, frame);
    if (status != SVP_OK) {
        return status;
    }
    req = calloc(1, sizeof(*req));
    if (req == NULL) {
        svp_error("out of memory allocating a request");
        return SVP_ERR_NO_MEMORY;
    }
    req->comm    = comm;
    req->is_send = is_send;
    req->peer    = peer;
    req->kind    = kind;
    req->sample  = sample;
    req->step    = step;
    req->frame   = frame;
    *req_p       = req;
    return SVP_OK;
}

/*
 * A peer known to be leaving or gone (svp_rt_peer_gone: its stop notice,
 * its goodbye or its loss, heard from any rank) is not connected to, sent
 * to or received from: it may exit at any moment, a connect to it then
 * fails, and fetching a message it announced kills this rank (UCX 1.13,
 * cma).  The request is withheld: it never completes, and the wait on it
 * ends with the departure (svp_comm_wait).
 */
int svp_comm_req_peer_gone(const struct svp_comm_req *req)
{
    return (req->peer != req->comm->rank) &&
           svp_rt_peer_gone(req->comm->rt, req->peer);
}

/*
 * The endpoint to req's peer, and the parameters of its UCX call: which
 * buffer goes on the wire (*wire_p: the frame, or its host copy when the
 * path to that peer stages device frames through the host) and in which
 * memory.  A receive connects too: at teardown a rank says BYE to the ranks
 * connected to it, and waits for theirs (svp_comm_drain).
 */
svp_status_t svp_comm_req_prepare(struct svp_comm_req *req, ucp_ep_h *ep_p,
                                  ucp_request_param_t *params, void **wire_p)
{
    struct svp_comm       *comm  = req->comm;
    struct svp_comm_frame *frame = req->frame;
    svp_status_t           status;

    status = svp_comm_ep(comm, req->peer, ep_p);
    if (status != SVP_OK) {
        return status;
    }
    memset(params, 0, sizeof(*params));
    params->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                           UCP_OP_ATTR_FIELD_DATATYPE |
                           UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    params->datatype    = ucp_dt_make_contig(1);
    params->user_data   = req;
    params->memory_type = UCS_MEMORY_TYPE_HOST;
    *wire_p             = frame->base;
    if (frame->mem_type == SVP_COMM_MEM_CUDA) {
        svp_comm_path_log(comm, req->peer);
        if (comm->path == SVP_COMM_PATH_DEVICE) {
            params->memory_type = UCS_MEMORY_TYPE_CUDA;
        } else {
            *wire_p = frame->host;
        }
    }
    return SVP_OK;
}

/* Puts a posted request on comm->reqs and hands it out. */
void svp_comm_req_link(struct svp_comm_req *req, svp_comm_req_h *req_p)
{
    struct svp_comm *comm = req->comm;

    req->next = comm->reqs;
    if (comm->reqs != NULL) {
        comm->reqs->prev = req;
    }
    comm->reqs = req;
    *req_p     = req;
}

/* "rank 2 on n1 receiving sample 4 step 12 from rank 1" */
static void svp_comm_req_where(const struct svp_comm_req *req, char *buf, size_t len)
{
    snprintf(buf, len, "rank %d on %s %s sample %u step %u %s rank %d",
             req->comm->rank, svp_rt_hostname(req->comm->rt),
             req->is_send ? "sending" : "receiving", req->sample, req->step,
             req->is_send ? "to" : "from", req->peer);
}

/* The final status of a completed request; releases it. */
static svp_status_t svp_comm_req_finish(struct svp_comm_req *req)
{
    svp_comm_frame_id_t expected;
    svp_status_t        status;
    char                where[160];

    svp_comm_req_where(req, where, sizeof(where));
    if (req->ucs_status == UCS_ERR_MESSAGE_TRUNCATED) {
        svp_error("%s: message larger than the expected %zu bytes (sender's "
                  "frame layout differs)",
                  where, req->frame->length);
        status = SVP_ERR_MESSAGE;
    } else if (req->ucs_status != UCS_OK) {
        svp_error("%s: %s", where, ucs_status_string(req->ucs_status));
        status = svp_comm_status_from_ucs(req->ucs_status);
    } else if (req->is_send) {
        status = SVP_OK;
    } else {
        expected.job_id   = req->comm->job_id;
        expected.kind     = req->kind;
        expected.sample   = req->sample;
        expected.step     = req->step;
        expected.src_rank = req->peer;
        if (req->frame->mem_type == SVP_COMM_MEM_CUDA) {
            status = svp_comm_frame_stage_in(req->comm, req->frame, req->length,
                                             &expected, where);
        } else {
            status = svp_comm_frame_check(req->frame, req->length, &expected, where);
        }
    }
    svp_comm_req_release(req);
    return status;
}

/*
 * Gives up on a request that has not completed: cancels it and waits briefly
 * for UCX to report back.  UCX 1.13 cancels receives, but not a send whose
 * receiver never matched it (rendezvous), and a forced endpoint close does
 * not complete it either without UCX's peer error handling (see
 * svp_comm_ep).  Such a request stays with UCX, marked abandoned, and keeps
 * its frame alive (busy): the request is freed by its callback or by
 * svp_comm_destroy, the frame with it if its owner destroyed it meanwhile.
 */
static void svp_comm_req_abandon(struct svp_comm_req *req)
{
    struct svp_comm *comm  = req->comm;
    double           until = svp_clock_now() + SVP_COMM_CANCEL_TIMEOUT;

    if (req->withheld) {
        svp_comm_req_release(req);
        return;
    }
    if (!req->done) {
        ucp_request_cancel(comm->worker, req->ucx_req);
        /*
         * After a stop nothing progresses before svp_comm_destroy's drain
         * has cancelled every receive: progress here matched another
         * pending receive to a rendezvous message whose sender had exited,
         * and fetching it killed the rank (UCX 1.13, cma).  A cancelled
         * receive completes at once; a send is drained by its receiver
         * (waiting here for each one also ate the stop's grace, 0.2 s a
         * slot).
         */
        if (svp_stop_pending()) {
            until = 0;
        }
        while (!req->done && (svp_clock_now() < until)) {
            ucp_worker_progress(comm->worker);
        }
    }
    if (req->done) {
        svp_comm_req_release(req);
    } else {
        svp_debug("%s of sample %u step %u %s rank %d stays with UCX until it "
                  "completes or the comm is destroyed",
                  req->is_send ? "send" : "receive", req->sample, req->step,
                  req->is_send ? "to" : "from", req->peer);
        req->abandoned = 1;
        ++req->frame->busy;
    }
}

void svp_comm_cancel(svp_comm_h comm, svp_comm_req_h req)
{
    svp_comm_req_abandon(req);
}

/*
 * Cancels the pending receives from peers that left (svp_rt_peer_gone)
 * before anything is progressed: a rendezvous message a killed peer had
 * announced would otherwise be fetched from a process that no longer
 * exists, which UCX 1.13 (cma) answers by aborting this rank.  Such a
 * receive counts as pending until the wait ends on the departure.
 */
static void svp_comm_forget_gone(struct svp_comm *comm)
{
    struct svp_comm_req *req;

    for (req = comm->reqs; req != NULL; req = req->next) {
        if (!req->is_send && !req->done && !req->withheld && !req->forgotten &&
            (req->ucx_req != NULL) && (req->peer != comm->rank) &&
            svp_rt_peer_gone(comm->rt, req->peer)) {
            svp_debug("rank %d left: the receive of sample %u step %u from it "
                      "is cancelled",
                      req->peer, req->sample, req->step);
            req->forgotten = 1;
            ucp_request_cancel(comm->worker, req->ucx_req);
        }
    }
}

void svp_comm_progress(svp_comm_h comm)
{
    svp_comm_forget_gone(comm);
    while (ucp_worker_progress(comm->worker) != 0) {
    }
    svp_comm_hear(comm);
}

svp_status_t svp_comm_test(svp_comm_h comm, svp_comm_req_h req)
{
    svp_comm_progress(comm);
    return (req->done && !req->forgotten) ? svp_comm_req_finish(req)
                                          : SVP_INPROGRESS;
}

/*
 * Sleeps until UCX or the runtime has something for us, or until `until`.
 * ucp_worker_arm says BUSY when events arrived since the last progress: then
 * there is no sleeping, the caller progresses again.  stop_wakes: a stop
 * signal ends the sleep (its pipe stays readable, so teardown's drain, which
 * runs after the stop, passes 0 lest it spin).
 */
static void svp_comm_sleep(struct svp_comm *comm, double until, int stop_wakes)
{
    struct pollfd fds[3];
    ucs_status_t  status;
    double        left;
    int           nfds = 0;

    status = ucp_worker_arm(comm->worker);
    if (status == UCS_ERR_BUSY) {
        return;
    }
    if (status != UCS_OK) {
        svp_warn("ucp_worker_arm failed: %s", ucs_status_string(status));
        return;
    }
    fds[nfds].fd       = comm->event_fd;
    fds[nfds++].events = POLLIN;
    if (svp_rt_event_fd(comm->rt) >= 0) {
        fds[nfds].fd       = svp_rt_event_fd(comm->rt);
        fds[nfds++].events = POLLIN;
    }
    if (stop_wakes && svp_stop_fd() >= 0) {
        fds[nfds].fd       = svp_stop_fd();
        fds[nfds++].events = POLLIN;
    }
    left = until - svp_clock_now();
    if (left <= 0) {
        return;
    }
    if ((poll(fds, nfds, (int)ceil(left * 1e3)) < 0) && (errno != EINTR)) {
        svp_warn("poll on the UCX event fd failed: %m");
    }
}

/*
 * A receive timed out: is its peer's message here under another (sample,
 * step), or did another rank send what we wait for?  Either way the bug is
 * a mismatch, not a slow peer, and the log says who sent what.
 */
static int svp_comm_probe_mismatch(struct svp_comm           *comm,
                                   const struct svp_comm_req *req, const char *where)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h   msg;
    unsigned            kind, sample, step;
    int                 src;
    char                diff[128];

    msg = ucp_tag_probe_nb(comm->worker, svp_comm_tag(req->kind, req->peer, 0, 0),
                           SVP_COMM_TAG_KIND_MASK | SVP_COMM_TAG_SRC_MASK, 0, &info);
    if (msg != NULL) {
        svp_comm_tag_decode(info.sender_tag, &kind, &src, &sample, &step);
        if (sample == req->sample) {
            snprintf(diff, sizeof(diff), "step: expected %u, got %u", req->step,
                     step);
        } else if (step == req->step) {
            snprintf(diff, sizeof(diff), "sample: expected %u, got %u", req->sample,
                     sample);
        } else {
            snprintf(diff, sizeof(diff),
                     "sample: expected %u, got %u; step: "
                     "expected %u, got %u",
                     req->sample, sample, req->step, step);
        }
        svp_error("%s: message does not match: %s (rank %d sent a %zu-byte "
                  "message that nobody expects)",
                  where, diff, src, info.length);
        return 1;
    }
    msg = ucp_tag_probe_nb(comm->worker,
                           svp_comm_tag(req->kind, 0, req->sample, req->step),
                           SVP_COMM_TAG_KIND_MASK | SVP_COMM_TAG_SAMPLE_MASK |
                               SVP_COMM_TAG_STEP_MASK,
                           0, &info);
    if (msg != NULL) {
        svp_comm_tag_decode(info.sender_tag, &kind, &src, &sample, &step);
        svp_error("%s: message does not match: source rank: expected %d, got "
                  "%d",
                  where, req->peer, src);
        return 1;
    }
    return 0;
}

/* Logs why reqs[i] cannot complete: a lost rank, a mismatched message or
 * plain silence; returns the status that goes with it. */
static svp_status_t svp_comm_req_fail(struct svp_comm           *comm,
                                      const struct svp_comm_req *req, int lost,
                                      double waited)
{
    char where[160];

    svp_comm_req_where(req, where, sizeof(where));
    if ((lost >= 0) && svp_rt_stop_cause(comm->rt, NULL, 0)) {
        /* the consequence of a stop: the worker names its cause */
        svp_debug("%s: rank %d left (after %.2f s)", where, lost, waited);
        return SVP_ERR_PEER_STOPPED;
    }
    if (lost >= 0) {
        svp_error("%s: rank %d was lost (after %.2f s)", where, lost, waited);
        return SVP_ERR_PEER_LOST;
    } else if (lost != -1) {
        svp_error("%s: the launcher connection was lost (after %.2f s)", where,
                  waited);
        return SVP_ERR_PEER_LOST;
    } else if (!req->is_send && svp_comm_probe_mismatch(comm, req, where)) {
        return SVP_ERR_MESSAGE;
    }
    svp_error("%s: timed out after %.2f s", where, waited);
    return SVP_ERR_TIMED_OUT;
}

/*
 * The one waiting loop: progress, look for a completed request, else check
 * for a lost rank and the deadline, else sleep.  SVP_OK with *index_p when
 * reqs[*index_p] is done; otherwise every pending request is logged and the
 * first failure's status returned, all requests left as they are.
 */
static svp_status_t svp_comm_wait_loop(struct svp_comm *comm, svp_comm_req_h *reqs,
                                       int n, double timeout, int *index_p)
{
    double       t0         = svp_clock_now();
    double       until      = t0 + ((timeout < 0) ? comm->deadline : timeout);
    double       last_event = t0;
    svp_status_t status, first;
    int          lost, i, pending;

    for (;;) {
        /* SIGTERM/SIGINT: unwind at once, the worker reports it.  Checked
         * before progress: a rendezvous message that arrives now is left to
         * the drain, which does not fetch it (svp_comm_drain). */
        if (svp_stop_pending()) {
            svp_debug("wait abandoned on a stop (signal %d)", svp_stop_signal());
            return SVP_ERR_CANCELED;
        }
        /* a rank lost: no more progress either, which would go on with the
         * transfers of the dead rank (UCX 1.13 aborts a rank whose cma
         * transfer meets a process that no longer exists) */
        if (svp_rt_lost_rank(comm->rt) == -1) {
            svp_comm_progress(comm);
        }
        /* a peer whose teardown began gets back what it sent here unmatched
         * at once: it may exit, which it must not do while its message can
         * still be fetched (svp_comm_peer_leaving) */
        svp_comm_hear(comm);
        pending = 0;
        for (i = 0; i < n; ++i) {
            if (reqs[i] == NULL) {
                continue;
            }
            if (reqs[i]->done && !reqs[i]->forgotten) {
                *index_p = i;
                return SVP_OK;
            }
            ++pending;
        }
        if (pending == 0) {
            svp_error("wait on no pending request");
            return SVP_ERR_INVALID_PARAM;
        }

        lost = svp_rt_lost_rank(comm->rt);
        if ((lost != -1) || (svp_clock_now() >= until)) {
            first = SVP_OK;
            for (i = 0; i < n; ++i) {
                if (reqs[i] != NULL) {
                    status =
                        svp_comm_req_fail(comm, reqs[i], lost, svp_clock_now() - t0);
                    first = (first == SVP_OK) ? status : first;
                }
            }
            /* never SVP_OK here (pending > 0): success is a done request's */
            return (first != SVP_OK) ? first : SVP_ERR_TIMED_OUT;
        }

        /* Poll a little longer before sleeping: saves the wake-up latency
         * of each rendezvous round trip (see svp_comm_default_spin). */
        if (svp_clock_now() - last_event < comm->spin) {
            continue;
        }
        svp_comm_sleep(comm, until, 1);
        last_event = svp_clock_now();
    }
}

svp_status_t svp_comm_wait(svp_comm_h comm, svp_comm_req_h req, double timeout)
{
    svp_status_t status;
    int          index;

    svp_range_push_ctx("wait %s sample %u step %u %s %d",
                       req->is_send ? "send" : "recv", req->sample, req->step,
                       req->is_send ? "to" : "from", req->peer);
    status = svp_comm_wait_loop(comm, &req, 1, timeout, &index);
    svp_range_pop();
    if (status != SVP_OK) {
        svp_comm_req_abandon(req);
        return status;
    }
    return svp_comm_req_finish(req);
}

svp_status_t svp_comm_wait_any(svp_comm_h comm, svp_comm_req_h *reqs, int n,
                               double timeout, int *index_p)
{
    svp_comm_req_h req;
    svp_status_t   status;
    int            index;

    status = svp_comm_wait_loop(comm, reqs, n, timeout, &index);
    if (status != SVP_OK) {
        return status;
    }
    req         = reqs[index];
    reqs[index] = NULL;
    *index_p    = index;
    return svp_comm_req_finish(req);
}

/* ---- teardown's drain ------------------------------------------------ */

/*
 * Teardown's drain (svp_comm_drain) ends at the latest this long after it
 * began, or, after a stop, SVP_COMM_DRAIN_MARGIN before the stop's watchdog
 * ends the process (common/stop.h: 0.7 s after the signal in svdworker):
 * the runtime's goodbye must be said after the drain and before that (else
 * the neighbours log a loss).  On 3 nodes the last rank of one scancel got
 * its SIGTERM 0.07 to 0.6 s after the first (18 runs), and a rank that
 * drained must stay until a late neighbour has heard its BYE.
 */
#define SVP_COMM_DRAIN_TIMEOUT 0.5
#define SVP_COMM_DRAIN_MARGIN  0.1

/*
 * Whether peer left for good as far as a drain goes: a rank that ends
 * because another was stopped (no signal of its own) drains with the ranks
 * still there, and expects nothing of a stopped one, which exited within
 * its own grace.  In a stop every rank got (a scancel), the others are
 * draining too and are waited for.
 */
static int svp_comm_drain_gone(const struct svp_comm *comm, int peer)
{
    return !svp_stop_pending() && svp_rt_peer_gone(comm->rt, peer);
}

/* The ranks a drain talks to: those connected either way, still there. */
static int svp_comm_drain_peer(const struct svp_comm *comm, int peer)
{
    return (peer != comm->rank) &&
           ((comm->eps[peer] != NULL) ||
            (comm->heard[peer] & SVP_COMM_HEARD_HELLO)) &&
           !svp_comm_drain_gone(comm, peer);
}

/* A loss that ends the drain: any loss, unless it is the consequence of
 * another rank's stop (then the ranks still there drain as in a scancel). */
static int svp_comm_drain_lost(const struct svp_comm *comm)
{
    return (svp_rt_lost_rank(comm->rt) != -1) &&
           !svp_rt_stop_cause(comm->rt, NULL, 0);
}

int svp_comm_stuck(const struct svp_comm *comm)
{
    const struct svp_comm_req *req;
    int                        n = 0;

    for (req = comm->reqs; req != NULL; req = req->next) {
        n += req->is_send && !req->done && !req->withheld;
    }
    return n;
}

/*
 * Before the worker goes: leave nothing with UCX, so that it has nothing to
 * warn about (after a scancel, UCX 1.13 warned of "unexpected tag-receive
 * descriptor ... was not matched" for a message that came for a step never
 * run, and of a request "not returned to mpool" for a rendezvous send whose
 * receiver had gone).
 *
 * What was observed, and why the drain is done this way:
 *  - Pre-posted receives cancel at once.  A send in rendezvous does not
 *    cancel, and a forced endpoint close does not return it either without
 *    UCX's peer error handling, which rules out shared memory (svp_comm_ep).
 *    It completes only when its receiver takes the message.
 *  - Receiving such a message into its frame crashed the receiver when the
 *    sender had already exited: the rendezvous fetch (cma,
 *    process_vm_readv) from a dead process is fatal in UCX 1.13.  A receive
 *    into a buffer too small for it fetches nothing: UCX answers the sender
 *    and reports the truncation, so unwanted messages are discarded that
 *    way, from a live sender or a gone one alike.
 *  - Ranks of one scancel got their SIGTERM up to 0.7 s apart (3 nodes), so
 *    a neighbour may still be running, and sending.  A draining rank says
 *    BYE to every rank connected to it, either way (svp_comm_ep's HELLO),
 *    then discards what comes, waits for its own sends to be taken, and
 *    for a BYE from each of those ranks: a BYE comes after its sender's
 *    last message (one endpoint, in order), so nothing is left unmatched
 *    behind it.  A rank still running hears a BYE in its next progress
 *    (the pipeline's waits and steps) and gives back at once, unfetched,
 *    what that peer sent it (svp_comm_discard), so the peer may go.
 *  - After the stop, nothing is progressed before the receives are
 *    cancelled (svp_comm_req_abandon), and a receive is not posted to a
 *    peer that said BYE (svp_comm_peer_leaving): no new fetch starts from a
 *    rank that may be gone.
 *  - Every wait is bounded: by SVP_COMM_DRAIN_TIMEOUT, after a stop by the
 *    stop's own deadline; with a lost rank (killed, crashed) there is no
 *    drain at all: it would never answer.  What a peer still running past
 *    that bound sent stays with UCX, which then warns: 1 of 13 scancels on
 *    a loaded 2-core machine, where one node's SIGTERM came 0.7 s after the
 *    others' and a step took 0.45 s instead of 0.1 s.
 */
void svp_comm_drain(struct svp_comm *comm)
{
    struct svp_comm_req *req;
    double               t0 = svp_clock_now(), until = t0 + SVP_COMM_DRAIN_TIMEOUT;
    int                  busy, waiting, peer;

    if (svp_stop_deadline() > 0) {
        until = svp_stop_deadline() - SVP_COMM_DRAIN_MARGIN;
    }
    if (svp_comm_drain_lost(comm)) {
        svp_debug("no drain at teardown: rank %d was lost",
                  svp_rt_lost_rank(comm->rt));
        return;
    }
    comm->draining = 1;
    /* receives first, before any progress: no message may land in a frame
     * from now on, and none is fetched */
    for (req = comm->reqs; req != NULL; req = req->next) {
        if (!req->done && !req->is_send && !req->withheld) {
            ucp_request_cancel(comm->worker, req->ucx_req);
        }
    }
    for (peer = 0; peer < comm->size; ++peer) {
        if (svp_comm_drain_peer(comm, peer)) {
            svp_comm_say(comm, peer, SVP_COMM_WORD_BYE);
        }
    }
    for (;;) {
        svp_comm_progress(comm);
        while (svp_comm_discard(comm, 0, 0) > 0) {
            svp_comm_progress(comm);
        }
        busy = 0;
        for (req = comm->reqs; req != NULL; req = req->next) {
            busy += !req->done && !req->withheld &&
                    !svp_comm_drain_gone(comm, req->peer);
        }
        waiting = 0;
        for (peer = 0; peer < comm->size; ++peer) {
            waiting += (svp_comm_drain_peer(comm, peer) &&
                        !(comm->heard[peer] & SVP_COMM_HEARD_BYE));
        }
        if (busy == 0 && comm->drain_ops == 0 && waiting == 0) {
            svp_debug("drained in %.3f s", svp_clock_now() - t0);
            return;
        }
        if (svp_comm_drain_lost(comm) || svp_clock_now() >= until) {
            svp_debug("drain ended after %.3f s: %d request(s) and %d discard(s) "
                      "with UCX, no BYE from %d rank(s)",
                      svp_clock_now() - t0, busy, comm->drain_ops, waiting);
            return;
        }
        svp_comm_sleep(comm, until, 0);
    }
}
