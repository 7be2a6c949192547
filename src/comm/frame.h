/*
 * The frame on the wire: layout, header writing and header checking.
 * Private to src/comm (comm_req.c sends and receives frames; nothing else
 * needs the wire format).
 *
 * The header is written in the sender's byte order and read as is: every
 * rank of a job runs the same binary on the same architecture.  The magic
 * number would not match across byte orders, so a mix is still detected.
 */
#ifndef SVP_COMM_FRAME_H
#define SVP_COMM_FRAME_H

#include "comm/comm.h"

#define SVP_COMM_MAGIC   0x4d505653u /* "SVPM" in memory, little-endian */
#define SVP_COMM_VERSION 1
#define SVP_COMM_ALIGN \
    64 /* tensor offsets: cache line, and
                                           enough for any vector load */

/* Header flags. */
#define SVP_COMM_FLAG_PAYLOAD_CHECKSUM 1u

typedef struct {
    uint32_t dtype;
    uint32_t ndim;
    int64_t  shape[SVP_COMM_MAX_DIMS];
    uint64_t offset; /* from the start of the frame */
    uint64_t bytes;
} svp_comm_wire_tensor_t;

typedef struct {
    uint32_t               magic;
    uint16_t               version;
    uint16_t               header_bytes;
    uint64_t               job_id;
    uint32_t               kind;
    uint32_t               sample;
    uint32_t               step; /* index of the next step to run */
    uint32_t               src_rank;
    uint32_t               num_tensors;
    uint32_t               flags;
    uint64_t               payload_bytes; /* frame length - header */
    uint64_t               payload_checksum;
    svp_comm_wire_tensor_t tensors[SVP_COMM_MAX_TENSORS];
    uint64_t               header_checksum; /* FNV-1a of all fields above */
} svp_comm_header_t;

/* Who a frame is from and for: what the sender writes and the receiver
 * expects. */
typedef struct {
    uint64_t job_id;
    unsigned kind, sample, step;
    int      src_rank;
} svp_comm_frame_id_t;

struct svp_comm_frame {
    void               *base;
    size_t              length;
    int                 owned;     /* base was allocated by the comm */
    int                 busy;      /* abandoned requests still using it */
    int                 destroyed; /* its owner is done with it */
    svp_comm_mem_type_t mem_type;
    /* SVP_COMM_MEM_CUDA: a host copy of the whole frame (header checks,
     * checksums, staging) and the services that move bytes between them */
    void                 *host;
    svp_devmem_t          dev;
    svp_comm_frame_desc_t desc;
    uint64_t              offsets[SVP_COMM_MAX_TENSORS];
};

/* Computes the offsets of desc's tensors and the frame length; SVP_OK or
 * SVP_ERR_INVALID_PARAM (logged) for an invalid layout. */
svp_status_t svp_comm_frame_layout(const svp_comm_frame_desc_t *desc,
                                   uint64_t *offsets, size_t *length_p);

/* Writes the header of frame for id; checksums the payload when asked. */
void svp_comm_frame_seal(struct svp_comm_frame *frame, const svp_comm_frame_id_t *id,
                         int checksum);

/*
 * Checks a received frame (received bytes arrived) against the expected id
 * and the frame's own layout.  On any difference logs one error line that
 * starts with where (who waited for what) and lists every field as
 * "expected X, got Y"; returns SVP_ERR_MESSAGE.
 */
svp_status_t svp_comm_frame_check(const struct svp_comm_frame *frame,
                                  size_t                       received,
                                  const svp_comm_frame_id_t   *expected,
                                  const char                  *where);

#endif
