/*
 * svdpipe latent hand-off: framed messages between ranks over UCX tags.
 *
 * A frame is one contiguous buffer: a fixed header, then the tensors, each
 * at a 64-byte aligned offset.  The sender writes its tensors straight into
 * the frame (svp_comm_frame_data) so nothing is copied on the way out; the
 * receiver posts a receive into a frame of the layout it expects.
 *
 *   offset 0        svp_comm_header_t (magic, version, job id, kind, sample,
 *                   next step, source rank, tensor count, per tensor dtype,
 *                   ndim, shape, offset, bytes; payload bytes and checksum;
 *                   header checksum)
 *   offset H        tensor 0
 *   ...             tensor i at its aligned offset
 *
 * The UCX tag carries (kind, source rank, sample, step), so a receive matches
 * exactly the message it waits for and nothing else.  On arrival the header
 * is checked against what the receiver expected; any difference (job id,
 * sample, step, tensor count, dtype, shape, size, checksum) fails with
 * SVP_ERR_MESSAGE and a log line naming both sides.
 *
 * Every wait has a deadline.  When it passes, the receive is cancelled and
 * the wait fails with SVP_ERR_TIMED_OUT, naming rank, host, sample, step and
 * peer, and, when a message from that peer with another (sample, step) is
 * waiting unmatched, what it sent instead (SVP_ERR_MESSAGE then).  When the
 * runtime reports a lost rank, waits fail at once with SVP_ERR_PEER_LOST.
 * After SIGTERM or SIGINT (common/stop.h) they return SVP_ERR_CANCELED at
 * once, logging nothing: the worker reports the stop.
 *
 * Waits do not spin for long: when UCX has had nothing to progress for a
 * moment (params.spin), they sleep in poll() on the worker's event fd,
 * the runtime's peer-loss fd and the stop signal's pipe.
 *
 * Threads: one thread per svp_comm_h.  The runtime must outlive the comm.
 *
 * A stage that runs steps [k0, k1) of every sample, in outline:
 *
 *   svp_comm_create(rt, &params, &comm);             (collective)
 *   svp_comm_frame_create(comm, &layout, NULL, 0, SVP_COMM_MEM_HOST, &in);
 *   for each sample s:
 *       svp_comm_irecv(comm, rank - 1, SVP_COMM_KIND_LATENT, s, k0, in, &r);
 *       svp_comm_wait(comm, r, -1);                  (checked on arrival)
 *       ... run steps k0..k1-1 on svp_comm_frame_data(in, 0), writing the
 *           result into an output frame's svp_comm_frame_data(out, 0) ...
 *       svp_comm_isend(comm, rank + 1, SVP_COMM_KIND_LATENT, s, k1, out, &q);
 *       (wait for q before out is written again)
 *   svp_rt_fence(rt);  svp_comm_destroy(comm);  destroy the frames.
 *
 * With several samples in flight, post their receives ahead and take them
 * in arrival order with svp_comm_wait_any.  Any failure is job-fatal: log
 * (done here), svp_rt_abort, exit with svp_status_exit_code().
 */
#ifndef SVP_COMM_COMM_H
#define SVP_COMM_COMM_H

#include "common/devmem.h"
#include "common/status.h"
#include "comm/comm_path.h"
#include "rt/rt.h"

#include <stddef.h>
#include <stdint.h>

#define SVP_COMM_MAX_TENSORS 8
#define SVP_COMM_MAX_DIMS    6

/* Limits of the tag fields (see comm_int.h for the tag layout). */
#define SVP_COMM_MAX_KIND   15
#define SVP_COMM_MAX_SAMPLE ((1u << 24) - 1)
#define SVP_COMM_MAX_STEP   ((1u << 20) - 1)
#define SVP_COMM_MAX_RANKS  (1 << 16)

/* What a message is; the tag keeps kinds apart.  1..SVP_COMM_MAX_KIND. */
typedef enum {
    SVP_COMM_KIND_LATENT = 1 /* a sample's latent and conditioning */
} svp_comm_kind_t;

/* Where a frame's memory lives. */
typedef enum {
    SVP_COMM_MEM_HOST = 0,
    SVP_COMM_MEM_CUDA /* device memory: needs params->device */
} svp_comm_mem_type_t;


/* One tensor of a frame.  dtype is the caller's code, compared as is. */
typedef struct {
    uint32_t dtype;
    uint32_t ndim;
    int64_t  shape[SVP_COMM_MAX_DIMS];
    uint64_t bytes; /* payload bytes of this tensor */
} svp_comm_tensor_desc_t;

/* The layout of a frame: which tensors, in order. */
typedef struct {
    uint32_t               num_tensors;
    svp_comm_tensor_desc_t tensors[SVP_COMM_MAX_TENSORS];
} svp_comm_frame_desc_t;

typedef struct svp_comm       *svp_comm_h;
typedef struct svp_comm_frame *svp_comm_frame_h;
typedef struct svp_comm_req   *svp_comm_req_h;

/* Which fields of svp_comm_params_t are set. */
enum {
    SVP_COMM_PARAM_FIELD_JOB_ID    = 1u << 0,
    SVP_COMM_PARAM_FIELD_TRANSPORT = 1u << 1,
    SVP_COMM_PARAM_FIELD_DEADLINE  = 1u << 2,
    SVP_COMM_PARAM_FIELD_CHECKSUM  = 1u << 3,
    SVP_COMM_PARAM_FIELD_SPIN      = 1u << 4,
    SVP_COMM_PARAM_FIELD_DEVICE    = 1u << 5
};

typedef struct {
    unsigned field_mask;
    /* Every frame carries it; a frame of another job is a mismatch. */
    uint64_t job_id;
    /* UCX_TLS to use ("posix,self", "tcp", ...) when the environment does not
     * set UCX_TLS itself; NULL or "" leaves the choice to UCX. */
    const char *transport;
    /* Seconds svp_comm_wait() gives an operation when the caller passes a
     * negative timeout (default SVP_COMM_DEFAULT_DEADLINE). */
    double deadline;
    /* 1 (default): the payload is checksummed by the sender and checked by
     * the receiver (a word-wise FNV-1a, see frame.c); 0: only the header is.
     * Costs one read of the payload on each side. */
    int checksum;
    /* Seconds a wait keeps polling UCX after the last wake-up before it
     * sleeps on the event fd.  Default: 50e-6 when this node's ranks do not
     * outnumber the cores this process may run on, else 0 (sleep at once):
     * polling saves wake-up latency, but ranks that share cores steal each
     * other's time with it (500 us on a busy 2-core machine collapsed a
     * 2 MB hand-off to 0.07 GB/s). */
    double spin;
    /*
     * Frames in device memory (SVP_COMM_PARAM_FIELD_DEVICE): the services
     * (copied; ctx must outlive the comm and its frames) and how they cross
     * (comm_path.h).  The header is checked, and the payload checksummed,
     * in host memory on every path: the device path copies the header (and,
     * with checksum on, the payload) to host memory on each side.
     */
    const svp_devmem_t   *device;
    svp_comm_gpu_direct_t gpu_direct;
} svp_comm_params_t;

#define SVP_COMM_DEFAULT_DEADLINE 60.0

/*
 * Creates the UCX context and worker, publishes this rank's worker address
 * through the runtime and fences (collective: every rank of rt calls it), then
 * connects to the ring neighbours (rank-1, rank+1, and itself); endpoints to
 * other ranks are made on first use.  params may be NULL.  On failure
 * nothing is left behind and *comm_p is not written.
 */
svp_status_t svp_comm_create(svp_rt_h rt, const svp_comm_params_t *params,
                             svp_comm_h *comm_p);

/*
 * Drains, closes the endpoints and frees everything.  The drain leaves UCX
 * nothing to warn about when the worker goes: pending receives are
 * cancelled, messages that came unmatched are discarded without being
 * fetched, this rank's sends are waited for until their receivers take or
 * discard them, and each connected rank's word that nothing more comes from
 * it is awaited (it keeps the neighbours of a scancel in step).  Bounded:
 * 0.5 s, after a stop signal until 0.1 s before the stop's watchdog
 * (svp_stop_deadline), and skipped when the runtime reports a lost rank.
 * Frames may be destroyed after this.  NULL is allowed.
 */
void svp_comm_destroy(svp_comm_h comm);

/* Bytes a frame of this layout needs (header + aligned tensors); 0 if the
 * layout is invalid. */
size_t svp_comm_frame_size(const svp_comm_frame_desc_t *desc);

/*
 * Makes a frame of the given layout.  buffer == NULL: the comm allocates
 * (host memory, zeroed) and svp_comm_frame_destroy frees it.  Otherwise the
 * caller's buffer of length >= svp_comm_frame_size(desc) is used and stays
 * the caller's (it must outlive the frame).  SVP_COMM_MEM_CUDA: the buffer
 * is device memory (allocated with params->device when NULL) and the frame
 * also holds a host copy for the header and staging; a comm created without
 * device services refuses it.
 */
svp_status_t svp_comm_frame_create(svp_comm_h                   comm,
                                   const svp_comm_frame_desc_t *desc, void *buffer,
                                   size_t length, svp_comm_mem_type_t mem_type,
                                   svp_comm_frame_h *frame_p);

/*
 * Frees the frame (and its buffer when the comm allocated it).  Safe at any
 * time: a frame that a given-up request still lends to UCX (a send UCX could
 * not cancel) is freed when UCX lets go of it, at the latest by
 * svp_comm_destroy.  A caller's buffer must stay valid until then.
 */
void svp_comm_frame_destroy(svp_comm_frame_h frame);

/* Tensor i's bytes inside the frame (64-byte aligned), NULL if out of range. */
void *svp_comm_frame_data(svp_comm_frame_h frame, unsigned i);

/* The frame's total size. */
size_t svp_comm_frame_length(svp_comm_frame_h frame);

/*
 * Starts sending frame to peer as (kind, sample, step): the header is written
 * into the frame now, then the frame is handed to UCX.  The frame must not be
 * touched until the request completes.  *req_p is released by the
 * svp_comm_test()/svp_comm_wait() that returns its final status.
 */
svp_status_t svp_comm_isend(svp_comm_h comm, int peer, unsigned kind,
                            unsigned sample, unsigned step, svp_comm_frame_h frame,
                            svp_comm_req_h *req_p);

/*
 * Posts a receive for exactly (kind, sample, step) from peer into frame,
 * whose layout is what is expected.  Same request rules as svp_comm_isend.
 * After a stop signal, or once peer has begun its teardown, the receive is
 * not given to UCX (fetching from a rank that may have exited is fatal in
 * UCX 1.13): it never completes, as if the message never came.
 */
svp_status_t svp_comm_irecv(svp_comm_h comm, int peer, unsigned kind,
                            unsigned sample, unsigned step, svp_comm_frame_h frame,
                            svp_comm_req_h *req_p);

/*
 * Progresses once and reports: SVP_INPROGRESS (req stays valid), or the final
 * status (SVP_OK, SVP_ERR_MESSAGE on a header mismatch, SVP_ERR_TRANSPORT,
 * ...) after which req is released.
 */
svp_status_t svp_comm_test(svp_comm_h comm, svp_comm_req_h req);

/*
 * Waits until req completes, for at most timeout seconds (negative: the
 * comm's deadline).  Always releases req.  SVP_ERR_TIMED_OUT (the operation
 * was cancelled), SVP_ERR_PEER_LOST (the runtime reported a lost rank), or
 * any final status of svp_comm_test.
 */
svp_status_t svp_comm_wait(svp_comm_h comm, svp_comm_req_h req, double timeout);

/*
 * Waits until one of reqs[0..n) completes (NULL entries are skipped), for at
 * most timeout seconds (negative: the comm's deadline).  Then writes its
 * index to *index_p, releases it, sets reqs[index] to NULL and returns its
 * final status, as svp_comm_wait would.  On the deadline or a lost rank it
 * logs every pending request and returns SVP_ERR_TIMED_OUT,
 * SVP_ERR_PEER_LOST or SVP_ERR_MESSAGE with all requests still pending (give
 * them up with svp_comm_cancel), *index_p not written.
 */
svp_status_t svp_comm_wait_any(svp_comm_h comm, svp_comm_req_h *reqs, int n,
                               double timeout, int *index_p);

/*
 * Gives up on req without waiting (shutdown, or a receive posted ahead that
 * is not wanted any more): cancels it and releases it.
 */
void svp_comm_cancel(svp_comm_h comm, svp_comm_req_h req);

/* Runs UCX progress until nothing is left to do (for compute loops), and
 * gives back, unfetched, what a peer that has begun its teardown sent here
 * unmatched, so that it may exit. */
void svp_comm_progress(svp_comm_h comm);

/*
 * 1 when the UCX context can send and receive CUDA memory (CUDA among the
 * memory types it reports: cuda_copy/cuda_ipc loaded), else 0.  The input
 * of svp_comm_path_select (comm_path.h).
 */
int svp_comm_ucx_cuda(svp_comm_h comm);

#endif
