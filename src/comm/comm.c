/*
 * The comm's UCX lifecycle: context, worker, endpoints made on first use,
 * the comm's own words to its peers (HELLO, BYE), create and destroy.
 * Requests and waits are in comm_req.c, frames in frame.c (comm_int.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm_int.h"

#include "common/clock.h"
#include "common/log.h"
#include "common/stop.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

svp_status_t svp_comm_status_from_ucs(ucs_status_t status)
{
    switch (status) {
    case UCS_OK:
        return SVP_OK;
    case UCS_INPROGRESS:
        return SVP_INPROGRESS;
    case UCS_ERR_NO_MEMORY:
        return SVP_ERR_NO_MEMORY;
    case UCS_ERR_INVALID_PARAM:
        return SVP_ERR_INVALID_PARAM;
    case UCS_ERR_UNSUPPORTED:
        return SVP_ERR_UNSUPPORTED;
    case UCS_ERR_CANCELED:
        return SVP_ERR_CANCELED;
    case UCS_ERR_TIMED_OUT:
        return SVP_ERR_TIMED_OUT;
    case UCS_ERR_MESSAGE_TRUNCATED:
        return SVP_ERR_MESSAGE;
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
        return SVP_ERR_PEER_LOST;
    default:
        return SVP_ERR_TRANSPORT;
    }
}

/* ---- context, worker, endpoints ------------------------------------- */

static svp_status_t svp_comm_init_ucx(struct svp_comm *comm, const char *transport)
{
    ucp_config_t       *config;
    ucp_params_t        ctx_params;
    ucp_worker_params_t wrk_params;
    svp_status_t        status;

    status = SVP_COMM_UCS_FUNC_ERR(ucp_config_read(NULL, NULL, &config));
    if (status != SVP_OK) {
        return status;
    }
    /* The job spec's transport is a default, not an order: a UCX_TLS the user
     * exported wins (ucp_config_read already took it from the environment).
     * Measured here with ucx_perftest, 4 MiB messages: posix,self 26-34 GB/s,
     * UCX's own choice (sysv + cma) 11-14 GB/s, tcp ~5 GB/s. */
    if ((transport != NULL) && (transport[0] != '\0')) {
        if (getenv("UCX_TLS") != NULL) {
            svp_info("UCX_TLS=%s from the environment overrides transport '%s'",
                     getenv("UCX_TLS"), transport);
        } else {
            status =
                SVP_COMM_UCS_FUNC_ERR(ucp_config_modify(config, "TLS", transport));
            if (status != SVP_OK) {
                svp_error("invalid transport list '%s'", transport);
                goto out_release_config;
            }
        }
    } else if (getenv("UCX_TLS") == NULL) {
        /*
         * Nothing chosen: UCX's own choice but cma.  Over cma a rendezvous
         * receiver reads the message from the sender's memory
         * (process_vm_readv), and where the sender was killed after
         * announcing it, UCX 1.13 aborts the receiver inside that read,
         * before any rank can know of the loss (1 run in 4 of a SIGKILL
         * test).  Without it, shared memory carries the rendezvous itself
         * (and faster: above).
         */
        status = SVP_COMM_UCS_FUNC_ERR(ucp_config_modify(config, "TLS", "^cma"));
        if (status != SVP_OK) {
            goto out_release_config;
        }
    }

    memset(&ctx_params, 0, sizeof(ctx_params));
    ctx_params.field_mask = UCP_PARAM_FIELD_FEATURES;
    /* WAKEUP: waits sleep on the worker's event fd.  Busy polling with 4
     * ranks on 2 cores collapsed a ring from ~19 GB/s to 0.1 GB/s. */
    ctx_params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    status = SVP_COMM_UCS_FUNC_ERR(ucp_init(&ctx_params, config, &comm->context));
    if (status != SVP_OK) {
        goto out_release_config;
    }

    memset(&wrk_params, 0, sizeof(wrk_params));
    wrk_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wrk_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    status                 = SVP_COMM_UCS_FUNC_ERR(
                        ucp_worker_create(comm->context, &wrk_params, &comm->worker));
    if (status != SVP_OK) {
        goto err_cleanup_context;
    }
    status =
        SVP_COMM_UCS_FUNC_ERR(ucp_worker_get_efd(comm->worker, &comm->event_fd));
    if (status != SVP_OK) {
        goto err_destroy_worker;
    }
    ucp_config_release(config);
    return SVP_OK;

err_destroy_worker:
    ucp_worker_destroy(comm->worker);
err_cleanup_context:
    ucp_cleanup(comm->context);
out_release_config:
    ucp_config_release(config);
    return status;
}

/* A word or a discarded message is UCX's no more. */
static void svp_comm_drain_send_cb(void *request, ucs_status_t status,
                                   void *user_data)
{
    struct svp_comm *comm = user_data;

    (void)status;
    --comm->drain_ops;
    ucp_request_free(request);
}

void svp_comm_drain_recv_cb(void *request, ucs_status_t status,
                            const ucp_tag_recv_info_t *info, void *user_data)
{
    (void)info;
    svp_comm_drain_send_cb(request, status, user_data);
}

/* Says a word (SVP_COMM_WORD_*) to peer: a 0-byte message. */
void svp_comm_say(struct svp_comm *comm, int peer, unsigned word)
{
    ucp_request_param_t params;
    void               *request;

    if (comm->eps[peer] == NULL) {
        return; /* no endpoint could be made: logged there */
    }
    memset(&params, 0, sizeof(params));
    params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    params.cb.send      = svp_comm_drain_send_cb;
    params.user_data    = comm;
    request             = ucp_tag_send_nbx(comm->eps[peer], comm->scratch, 0,
                                           svp_comm_tag(SVP_COMM_KIND_WORD, comm->rank, 0, word),
                                           &params);
    if (UCS_PTR_IS_ERR(request)) {
        svp_debug("word %u to rank %d: %s", word, peer,
                  ucs_status_string(UCS_PTR_STATUS(request)));
    } else if (request != NULL) {
        ++comm->drain_ops;
    }
}

/*
 * The endpoint to peer, created on first use from the address it published.
 * The peer hears of it (SVP_COMM_WORD_HELLO), so that at teardown each side
 * knows whom to wait for, whichever side made the endpoint (svp_comm_drain).
 */
svp_status_t svp_comm_ep(struct svp_comm *comm, int peer, ucp_ep_h *ep_p)
{
    ucp_ep_params_t params;
    void           *address;
    size_t          len;
    svp_status_t    status;

    if ((peer < 0) || (peer >= comm->size)) {
        svp_error("peer rank %d out of range 0..%d", peer, comm->size - 1);
        return SVP_ERR_INVALID_PARAM;
    }
    if (comm->eps[peer] != NULL) {
        *ep_p = comm->eps[peer];
        return SVP_OK;
    }

    /*
     * A job that is ending (this rank stops, or another rank's stop or loss
     * ends it) makes no new connection: the peer may be tearing down its
     * shared memory as this rank attaches to it (UCX: "shmat failed",
     * "cannot connect"), and nothing is sent or fetched any more.
     */
    if ((peer != comm->rank) &&
        (svp_stop_pending() || svp_rt_stop_cause(comm->rt, NULL, 0))) {
        svp_debug("the job is ending: no connection to rank %d", peer);
        return SVP_ERR_PEER_STOPPED;
    }
    status = svp_rt_get(comm->rt, peer, SVP_COMM_ADDR_KEY, &address, &len);
    if (status != SVP_OK) {
        return status;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask =
        UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = address;
    /* Not UCP_ERR_HANDLING_MODE_PEER: it reports a dead peer within ~10 ms,
     * but only because it rules out the shared-memory transports, which
     * cannot support it, and falls back to TCP (a 4-rank ring went from
     * ~19 GB/s to ~3 GB/s).  Dead peers are learnt from the runtime's
     * process-termination events instead, whatever the transport. */
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    status          = SVP_COMM_UCS_FUNC_ERR(
                 ucp_ep_create(comm->worker, &params, &comm->eps[peer]));
    free(address);
    if (status != SVP_OK) {
        svp_error("cannot connect to rank %d", peer);
        return status;
    }
    if (peer != comm->rank) {
        svp_comm_say(comm, peer, SVP_COMM_WORD_HELLO);
    }
    *ep_p = comm->eps[peer];
    return SVP_OK;
}

/* Waits for a UCX request (an endpoint close) for at most timeout seconds. */
static ucs_status_t svp_comm_wait_plain(struct svp_comm *comm, void *request,
                                        double timeout)
{
    double       until = svp_clock_now() + timeout;
    ucs_status_t status;

    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    for (;;) {
        ucp_worker_progress(comm->worker);
        status = ucp_request_check_status(request);
        if ((status != UCS_INPROGRESS) || (svp_clock_now() >= until)) {
            break;
        }
    }
    ucp_request_free(request);
    return status;
}

static void svp_comm_close_eps(struct svp_comm *comm)
{
    ucp_request_param_t params;
    ucs_status_t        status;
    int                 peer;

    memset(&params, 0, sizeof(params));
    params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    /* A lost peer will never answer a flush, nor will a peer stopping on
     * the same signal as this rank: close without one. */
    params.flags = ((svp_rt_lost_rank(comm->rt) != -1) || svp_stop_pending())
                       ? UCP_EP_CLOSE_FLAG_FORCE
                       : 0;
    for (peer = 0; peer < comm->size; ++peer) {
        if (comm->eps[peer] == NULL) {
            continue;
        }
        status =
            svp_comm_wait_plain(comm, ucp_ep_close_nbx(comm->eps[peer], &params),
                                SVP_COMM_CLOSE_TIMEOUT);
        if (status == UCS_INPROGRESS) {
            svp_warn("endpoint to rank %d did not close within %.1f s", peer,
                     SVP_COMM_CLOSE_TIMEOUT);
        } else if ((status != UCS_OK) && (status != UCS_ERR_CANCELED)) {
            svp_debug("closing the endpoint to rank %d: %s", peer,
                      ucs_status_string(status));
        }
        comm->eps[peer] = NULL;
    }
}

/*
 * Polling before sleeping pays off only when every rank on the node has a
 * core of its own (2 MB hand-offs between 2 ranks on 2 idle cores: 9.5 GB/s
 * sleeping at once, 13.3 GB/s with 50 us of polling, ucx_perftest 13.1).
 * With more ranks than cores they steal each other's time instead.
 */
#define SVP_COMM_DEFAULT_SPIN 50e-6

static double svp_comm_default_spin(svp_rt_h rt)
{
    cpu_set_t cpus;
    int       ncpus;

    if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) {
        return 0;
    }
    ncpus = CPU_COUNT(&cpus);
    return (svp_rt_local_size(rt) <= ncpus) ? SVP_COMM_DEFAULT_SPIN : 0;
}

svp_status_t svp_comm_create(svp_rt_h rt, const svp_comm_params_t *params,
                             svp_comm_h *comm_p)
{
    struct svp_comm      *comm;
    const char           *transport = NULL;
    ucp_address_t        *address;
    size_t                address_len;
    svp_status_t          status;
    int                   neighbours[3], i;
    svp_comm_gpu_direct_t gpu_direct = SVP_COMM_GPU_DIRECT_AUTO;
    char                  path_err[256];

    comm = calloc(1, sizeof(*comm));
    if (comm == NULL) {
        svp_error("out of memory allocating the communicator");
        return SVP_ERR_NO_MEMORY;
    }
    comm->rt       = rt;
    comm->rank     = svp_rt_rank(rt);
    comm->size     = svp_rt_size(rt);
    comm->deadline = SVP_COMM_DEFAULT_DEADLINE;
    comm->checksum = 1;
    comm->spin     = svp_comm_default_spin(rt);
    if (params != NULL) {
        if (params->field_mask & SVP_COMM_PARAM_FIELD_JOB_ID) {
            comm->job_id = params->job_id;
        }
        if (params->field_mask & SVP_COMM_PARAM_FIELD_TRANSPORT) {
            transport = params->transport;
        }
        if (params->field_mask & SVP_COMM_PARAM_FIELD_DEADLINE) {
            comm->deadline = params->deadline;
        }
        if (params->field_mask & SVP_COMM_PARAM_FIELD_CHECKSUM) {
            comm->checksum = params->checksum;
        }
        if (params->field_mask & SVP_COMM_PARAM_FIELD_SPIN) {
            comm->spin = params->spin;
        }
        if ((params->field_mask & SVP_COMM_PARAM_FIELD_DEVICE) &&
            params->device != NULL) {
            comm->have_device = 1;
            comm->device      = *params->device;
            gpu_direct        = params->gpu_direct;
        }
    }
    if (comm->size > SVP_COMM_MAX_RANKS) {
        svp_error("%d ranks, but message tags have room for %d", comm->size,
                  SVP_COMM_MAX_RANKS);
        status = SVP_ERR_UNSUPPORTED;
        goto err_free_comm;
    }
    comm->eps =
        calloc(comm->size,
               sizeof(*comm->eps)); /* NOLINT(bugprone-sizeof-expression): handles */
    comm->path_logged = calloc(comm->size, 1);
    comm->heard       = calloc(comm->size, 1);
    if (comm->eps == NULL || comm->path_logged == NULL || comm->heard == NULL) {
        svp_error("out of memory allocating %d endpoints", comm->size);
        status = SVP_ERR_NO_MEMORY;
        goto err_free_eps;
    }

    status = svp_comm_init_ucx(comm, transport);
    if (status != SVP_OK) {
        goto err_free_eps;
    }
    /* what UCX can move decides the path of device frames, once */
    status = svp_comm_path_select(gpu_direct, comm->have_device,
                                  comm->have_device && svp_comm_ucx_cuda(comm),
                                  &comm->path, path_err, sizeof(path_err));
    if (status != SVP_OK) {
        svp_error("rank %d on %s: %s", comm->rank, svp_rt_hostname(rt), path_err);
        goto err_cleanup_ucx;
    }

    status = SVP_COMM_UCS_FUNC_ERR(
        ucp_worker_get_address(comm->worker, &address, &address_len));
    if (status != SVP_OK) {
        goto err_cleanup_ucx;
    }
    status = svp_rt_put(rt, SVP_COMM_ADDR_KEY, address, address_len);
    ucp_worker_release_address(comm->worker, address);
    if (status != SVP_OK) {
        goto err_cleanup_ucx;
    }
    status = svp_rt_fence(rt);
    if (status != SVP_OK) {
        goto err_cleanup_ucx;
    }

    /* The stage loop talks to its neighbours: connect to them now, so that a
     * bad address fails here and not in the middle of the first sample. */
    neighbours[0] = comm->rank;
    neighbours[1] = (comm->rank + 1) % comm->size;
    neighbours[2] = (comm->rank + comm->size - 1) % comm->size;
    for (i = 0; i < 3; ++i) {
        ucp_ep_h ep;

        status = svp_comm_ep(comm, neighbours[i], &ep);
        if (status != SVP_OK) {
            goto err_close_eps;
        }
    }

    svp_debug("comm up: %d ranks, worker address %zu bytes, polling %.0f us "
              "before sleeping",
              comm->size, address_len, comm->spin * 1e6);
    *comm_p = comm;
    return SVP_OK;

err_close_eps:
    svp_comm_close_eps(comm);
err_cleanup_ucx:
    ucp_worker_destroy(comm->worker);
    ucp_cleanup(comm->context);
err_free_eps:
    free(comm->heard);
    free(comm->path_logged);
    free(comm->eps);
err_free_comm:
    free(comm);
    return status;
}

void svp_comm_destroy(svp_comm_h comm)
{
    struct svp_comm_req *req, *next;
    int                  stuck;

    if (comm == NULL) {
        return;
    }
    svp_comm_drain(comm);
    for (req = comm->reqs; req != NULL; req = next) {
        next = req->next;
        if (!req->done && !req->abandoned) {
            req->abandoned = 1;
            ++req->frame->busy;
            if (!req->withheld) {
                ucp_request_cancel(comm->worker, req->ucx_req);
            }
        }
    }
    svp_comm_progress(comm);
    stuck = svp_comm_stuck(comm);
    if (stuck > 0) {
        /* a send its receiver never took (it exited, or drained and left
         * before the message came) never completes, and destroying the
         * worker only makes UCX warn about it ("not returned to mpool"):
         * the process is about to exit, which reclaims the worker and its
         * shared memory */
        svp_debug("%d send(s) nobody took stay with UCX; its worker is left to "
                  "the process's exit",
                  stuck);
    } else {
        svp_comm_close_eps(comm);
        ucp_worker_destroy(comm->worker);
        ucp_cleanup(comm->context);
    }
    /* whatever UCX never reported back is ours to free now */
    while ((req = comm->reqs) != NULL) {
        if (req->abandoned) {
            svp_comm_req_drop(req);
        } else {
            svp_comm_req_release(req);
        }
    }
    free(comm->heard);
    free(comm->path_logged);
    free(comm->eps);
    free(comm);
}

int svp_comm_ucx_cuda(svp_comm_h comm)
{
    ucp_context_attr_t attr;

    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(comm->context, &attr) != UCS_OK) {
        return 0;
    }
    return (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}
