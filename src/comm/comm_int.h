/*
 * What the files of src/comm share, private to them: the UCX tag, the comm
 * and request objects, and the functions one file calls in another.
 *
 *   comm.c      the UCX lifecycle: context, worker, endpoints, the comm's
 *               own words (HELLO, BYE), create and destroy
 *   comm_req.c  requests and waits: posting, completion, cancellation,
 *               waiting with deadlines, and teardown's drain
 *   frame.c     the frame object, its wire format, and the staging of a
 *               device frame through its host copy
 */
#ifndef SVP_COMM_INT_H
#define SVP_COMM_INT_H

#include "comm/comm.h"
#include "comm/frame.h"
#include "common/log.h"

#include <ucp/api/ucp.h>

/*
 * The 64-bit UCX tag:
 *
 *   63    60 59          44 43                 20 19              0
 *   | kind  |  source rank |       sample        |       step       |
 *
 * A receive matches all 64 bits, so it takes exactly one (kind, sample,
 * step) from exactly one peer; UCX tag matching is per worker, not per
 * endpoint, so the source rank has to be in the tag.
 */
#define SVP_COMM_TAG_KIND_SHIFT   60
#define SVP_COMM_TAG_SRC_SHIFT    44
#define SVP_COMM_TAG_SAMPLE_SHIFT 20
#define SVP_COMM_TAG_KIND_MASK    (0xfull << SVP_COMM_TAG_KIND_SHIFT)
#define SVP_COMM_TAG_SRC_MASK     (0xffffull << SVP_COMM_TAG_SRC_SHIFT)
#define SVP_COMM_TAG_SAMPLE_MASK \
    ((uint64_t)SVP_COMM_MAX_SAMPLE << SVP_COMM_TAG_SAMPLE_SHIFT)
#define SVP_COMM_TAG_STEP_MASK ((uint64_t)SVP_COMM_MAX_STEP)

#define SVP_COMM_ADDR_KEY "svp.comm.worker_address"

/* How long destroy waits for an endpoint to close, and for a cancelled
 * request to report back, before giving up on it. */
#define SVP_COMM_CLOSE_TIMEOUT  1.0
#define SVP_COMM_CANCEL_TIMEOUT 0.2

/*
 * Kind 0 is no message kind (those are 1..SVP_COMM_MAX_KIND): it carries the
 * comm's own 0-byte words, the word in the step field.  HELLO goes to a peer
 * when the endpoint to it is made; BYE, when teardown begins, says that
 * nothing new comes from this rank (svp_comm_drain).
 */
#define SVP_COMM_KIND_WORD  0
#define SVP_COMM_WORD_BYE   0
#define SVP_COMM_WORD_HELLO 1

/* What a rank heard from a peer (svp_comm.heard, by rank). */
#define SVP_COMM_HEARD_HELLO 1
#define SVP_COMM_HEARD_BYE   2

struct svp_comm_req {
    struct svp_comm       *comm;
    struct svp_comm_req   *prev, *next; /* comm->reqs: every live request */
    int                    is_send;
    int                    peer;
    unsigned               kind, sample, step;
    struct svp_comm_frame *frame;
    void                  *ucx_req;   /* NULL once UCX is done with it */
    int                    withheld;  /* never given to UCX (svp_comm_*_post) */
    int                    forgotten; /* a receive cancelled: its peer left */
    int                    done;
    int                    abandoned; /* the caller gave up; UCX still has it */
    ucs_status_t           ucs_status;
    size_t                 length; /* bytes received */
};

struct svp_comm {
    svp_rt_h             rt;
    int                  rank, size;
    uint64_t             job_id;
    double               deadline;
    double               spin;
    int                  checksum;
    ucp_context_h        context;
    ucp_worker_h         worker;
    int                  event_fd; /* the worker's, for poll() */
    ucp_ep_h            *eps;      /* by rank, NULL until first use */
    struct svp_comm_req *reqs;
    /* device frames (comm_path.h) */
    int             have_device;
    svp_devmem_t    device;
    svp_comm_path_t path;
    char           *path_logged; /* by rank: path stated in the log */
    /* teardown's drain (svp_comm_drain) */
    char *heard;       /* by rank: SVP_COMM_HEARD_* */
    int   drain_ops;   /* words and discards UCX still has */
    int   draining;    /* in svp_comm_drain */
    char  scratch[64]; /* what discarded messages land in */
};

/*
 * Calls a UCX function returning ucs_status_t and converts the status, once,
 * logging the call and UCX's own string at _level when it fails (UCX's
 * UCT_CUDADRV_FUNC).
 */
#define SVP_COMM_UCS_FUNC(_func, _level) \
    ({ \
        ucs_status_t _ucs_st = (_func); \
        svp_status_t _svp_st = svp_comm_status_from_ucs(_ucs_st); \
        if ((_ucs_st != UCS_OK) && (_ucs_st != UCS_INPROGRESS)) { \
            svp_log(_level, "%s failed: %s", #_func, ucs_status_string(_ucs_st)); \
        } \
        _svp_st; \
    })

#define SVP_COMM_UCS_FUNC_ERR(_func) SVP_COMM_UCS_FUNC(_func, SVP_LOG_LEVEL_ERROR)

static inline uint64_t svp_comm_tag(unsigned kind, int src, unsigned sample,
                                    unsigned step)
{
    return ((uint64_t)kind << SVP_COMM_TAG_KIND_SHIFT) |
           ((uint64_t)src << SVP_COMM_TAG_SRC_SHIFT) |
           ((uint64_t)sample << SVP_COMM_TAG_SAMPLE_SHIFT) | (uint64_t)step;
}

static inline void svp_comm_tag_decode(uint64_t tag, unsigned *kind_p, int *src_p,
                                       unsigned *sample_p, unsigned *step_p)
{
    *kind_p = (unsigned)((tag & SVP_COMM_TAG_KIND_MASK) >> SVP_COMM_TAG_KIND_SHIFT);
    *src_p  = (int)((tag & SVP_COMM_TAG_SRC_MASK) >> SVP_COMM_TAG_SRC_SHIFT);
    *sample_p =
        (unsigned)((tag & SVP_COMM_TAG_SAMPLE_MASK) >> SVP_COMM_TAG_SAMPLE_SHIFT);
    *step_p = (unsigned)(tag & SVP_COMM_TAG_STEP_MASK);
}

/* comm.c */
svp_status_t svp_comm_status_from_ucs(ucs_status_t status);
svp_status_t svp_comm_ep(struct svp_comm *comm, int peer, ucp_ep_h *ep_p);
void         svp_comm_say(struct svp_comm *comm, int peer, unsigned word);
void         svp_comm_drain_recv_cb(void *request, ucs_status_t status,
                                    const ucp_tag_recv_info_t *info, void *user_data);

/* comm_req.c */
void svp_comm_req_release(struct svp_comm_req *req);
void svp_comm_req_drop(struct svp_comm_req *req);
void svp_comm_drain(struct svp_comm *comm);

/* comm_req.c: what the send and receive paths share (comm_send.c,
 * comm_recv.c) */

/* Records UCX's completion of req (from its callback); frees req when
 * its caller abandoned it. */
void svp_comm_req_complete(struct svp_comm_req *req, void *request,
                           ucs_status_t status, size_t length);

/* Checks the operation and allocates its request, not yet linked: the
 * caller frees it (free()) until svp_comm_req_link. */
svp_status_t svp_comm_req_create(struct svp_comm *comm, int is_send, int peer,
                                 unsigned kind, unsigned sample, unsigned step,
                                 svp_comm_frame_h      frame,
                                 struct svp_comm_req **req_p);

/* Whether req's peer is known to be leaving or gone: then req is withheld. */
int svp_comm_req_peer_gone(const struct svp_comm_req *req);

/* The endpoint to req's peer and the parameters of its UCX call, with the
 * buffer that goes on the wire. */
svp_status_t svp_comm_req_prepare(struct svp_comm_req *req, ucp_ep_h *ep_p,
                                  ucp_request_param_t *params, void **wire_p);

/* Puts a posted request on comm->reqs and hands it out (*req_p). */
void svp_comm_req_link(struct svp_comm_req *req, svp_comm_req_h *req_p);

/* frame.c */
void         svp_comm_frame_free(struct svp_comm_frame *frame);
void         svp_comm_path_log(struct svp_comm *comm, int peer);
svp_status_t svp_comm_frame_stage_out(struct svp_comm           *comm,
                                      struct svp_comm_frame     *frame,
                                      const svp_comm_frame_id_t *id);
svp_status_t svp_comm_frame_stage_in(struct svp_comm       *comm,
                                     struct svp_comm_frame *frame, size_t length,
                                     const svp_comm_frame_id_t *expected,
                                     const char                *where);

/* Sends UCX still holds after the drain: in rendezvous to a rank that left,
 * or that did not take them within the drain's bound.  UCX cannot cancel
 * them. */
int svp_comm_stuck(const struct svp_comm *comm);

#endif
