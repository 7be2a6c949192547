/*
 * The wire format of a frame (comm.h): its layout (header, then the tensors
 * at 64-byte aligned offsets), sealing a header and checksums on the way
 * out, the field-by-field check of what arrived, and the staging of device
 * frames through host memory.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm_int.h"

#include "common/log.h"
#include "common/hash.h"
#include "common/util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(svp_comm_header_t) % SVP_COMM_ALIGN == 0,
               "the header keeps the first tensor aligned");

#define SVP_COMM_HEADER_HASHED offsetof(svp_comm_header_t, header_checksum)

/* Seeds keep the header and payload hashes apart from other FNV-1a uses. */
#define SVP_COMM_HEADER_SEED  0x6865616465720000ull
#define SVP_COMM_PAYLOAD_SEED 0x7061796c6f616400ull

/*
 * The payload checksum: FNV-1a's xor-multiply, but on 64-bit words in four
 * independent lanes (word i feeds lane i % 4) with an xor-shift after each
 * multiply so high bits reach low ones; the lanes and the byte tail are then
 * folded with plain FNV-1a.  Byte-wise FNV-1a (svp_hash_fnv1a) runs at ~1.5
 * GB/s here, which made a checksummed 2 MB hand-off 10x slower than the
 * transport; this runs at memory speed.  It detects corruption; it is not a
 * cryptographic hash.
 */
static uint64_t svp_comm_payload_hash(const void *data, size_t len)
{
    const uint64_t       prime = 1099511628211ull;
    const unsigned char *p     = data;
    uint64_t             h[4], w[4];
    size_t               i = 0;
    int                  l;

    for (l = 0; l < 4; ++l) {
        h[l] = 1469598103934665603ull ^ (SVP_COMM_PAYLOAD_SEED + l);
    }
    for (; i + sizeof(w) <= len; i += sizeof(w)) {
        memcpy(w, p + i, sizeof(w));
        for (l = 0; l < 4; ++l) {
            h[l] = (h[l] ^ w[l]) * prime;
            h[l] ^= h[l] >> 29;
        }
    }
    return svp_hash_fnv1a(p + i, len - i, svp_hash_fnv1a(h, sizeof(h), len));
}

static size_t svp_comm_align_up(size_t n)
{
    return (n + SVP_COMM_ALIGN - 1) & ~(size_t)(SVP_COMM_ALIGN - 1);
}

svp_status_t svp_comm_frame_layout(const svp_comm_frame_desc_t *desc,
                                   uint64_t *offsets, size_t *length_p)
{
    const svp_comm_tensor_desc_t *t;
    size_t                        end = sizeof(svp_comm_header_t);
    unsigned                      i, d;

    if ((desc == NULL) || (desc->num_tensors > SVP_COMM_MAX_TENSORS)) {
        svp_error("a frame holds 0 to %d tensors, not %u", SVP_COMM_MAX_TENSORS,
                  desc != NULL ? desc->num_tensors : 0);
        return SVP_ERR_INVALID_PARAM;
    }
    for (i = 0; i < desc->num_tensors; ++i) {
        t = &desc->tensors[i];
        if (t->ndim > SVP_COMM_MAX_DIMS) {
            svp_error("tensor %u of a frame has %u dimensions (at most %d)", i,
                      t->ndim, SVP_COMM_MAX_DIMS);
            return SVP_ERR_INVALID_PARAM;
        }
        for (d = 0; d < t->ndim; ++d) {
            if (t->shape[d] < 0) {
                svp_error("tensor %u of a frame has a negative extent %" PRId64
                          " in dimension %u",
                          i, t->shape[d], d);
                return SVP_ERR_INVALID_PARAM;
            }
        }
        end        = svp_comm_align_up(end);
        offsets[i] = end;
        end += t->bytes;
    }
    *length_p = end;
    return SVP_OK;
}

void svp_comm_frame_seal(struct svp_comm_frame *frame, const svp_comm_frame_id_t *id,
                         int checksum)
{
    svp_comm_header_t *hdr = frame->base;
    unsigned           i;

    memset(hdr, 0, sizeof(*hdr));
    hdr->magic         = SVP_COMM_MAGIC;
    hdr->version       = SVP_COMM_VERSION;
    hdr->header_bytes  = sizeof(*hdr);
    hdr->job_id        = id->job_id;
    hdr->kind          = id->kind;
    hdr->sample        = id->sample;
    hdr->step          = id->step;
    hdr->src_rank      = (uint32_t)id->src_rank;
    hdr->num_tensors   = frame->desc.num_tensors;
    hdr->payload_bytes = frame->length - sizeof(*hdr);
    for (i = 0; i < frame->desc.num_tensors; ++i) {
        hdr->tensors[i].dtype = frame->desc.tensors[i].dtype;
        hdr->tensors[i].ndim  = frame->desc.tensors[i].ndim;
        memcpy(hdr->tensors[i].shape, frame->desc.tensors[i].shape,
               sizeof(hdr->tensors[i].shape));
        hdr->tensors[i].offset = frame->offsets[i];
        hdr->tensors[i].bytes  = frame->desc.tensors[i].bytes;
    }
    if (checksum) {
        hdr->flags |= SVP_COMM_FLAG_PAYLOAD_CHECKSUM;
        hdr->payload_checksum =
            svp_comm_payload_hash((char *)frame->base + sizeof(*hdr),
                                  hdr->payload_bytes);
    }
    hdr->header_checksum =
        svp_hash_fnv1a(hdr, SVP_COMM_HEADER_HASHED, SVP_COMM_HEADER_SEED);
}

/* The list of differences found by svp_comm_frame_check, one line. */
typedef struct {
    char buf[1536];
    int  len;
    int  count;
} svp_comm_diff_t;

static void svp_comm_diff_add(svp_comm_diff_t *diff, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void svp_comm_diff_add(svp_comm_diff_t *diff, const char *fmt, ...)
{
    va_list ap;
    int     n;

    if (diff->len >= (int)sizeof(diff->buf) - 1) {
        return;
    }
    if (diff->count++ > 0) {
        diff->len +=
            snprintf(diff->buf + diff->len, sizeof(diff->buf) - diff->len, "; ");
        if (diff->len >= (int)sizeof(diff->buf) - 1) {
            return;
        }
    }
    va_start(ap, fmt);
    n = vsnprintf(diff->buf + diff->len, sizeof(diff->buf) - diff->len, fmt, ap);
    va_end(ap);
    diff->len = SVP_MIN(diff->len + n, (int)sizeof(diff->buf) - 1);
}

#define SVP_COMM_DIFF_U64(_diff, _name, _expected, _got) \
    do { \
        if ((uint64_t)(_expected) != (uint64_t)(_got)) { \
            svp_comm_diff_add(_diff, "%s: expected %" PRIu64 ", got %" PRIu64, \
                              _name, (uint64_t)(_expected), (uint64_t)(_got)); \
        } \
    } while (0)

static void svp_comm_format_shape(char *buf, size_t len, uint32_t ndim,
                                  const int64_t *shape)
{
    size_t   n = 0;
    uint32_t d;

    n += snprintf(buf + n, len - n, "[");
    for (d = 0; (d < ndim) && (d < SVP_COMM_MAX_DIMS) && (n < len); ++d) {
        n += snprintf(buf + n, len - n, "%s%" PRId64, d > 0 ? "," : "", shape[d]);
    }
    if (n < len) {
        snprintf(buf + n, len - n, "]");
    }
}

static void svp_comm_check_tensor(svp_comm_diff_t *diff, unsigned i,
                                  const svp_comm_tensor_desc_t *want,
                                  uint64_t                      want_offset,
                                  const svp_comm_wire_tensor_t *got)
{
    char     name[48], a[128], b[128];
    int      shape_differs = (want->ndim != got->ndim);
    unsigned d;

    for (d = 0; !shape_differs && (d < want->ndim); ++d) {
        shape_differs = (want->shape[d] != got->shape[d]);
    }
    snprintf(name, sizeof(name), "tensor %u dtype", i);
    SVP_COMM_DIFF_U64(diff, name, want->dtype, got->dtype);
    if (shape_differs) {
        svp_comm_format_shape(a, sizeof(a), want->ndim, want->shape);
        svp_comm_format_shape(b, sizeof(b), got->ndim, got->shape);
        svp_comm_diff_add(diff, "tensor %u shape: expected %s, got %s", i, a, b);
    }
    snprintf(name, sizeof(name), "tensor %u bytes", i);
    SVP_COMM_DIFF_U64(diff, name, want->bytes, got->bytes);
    snprintf(name, sizeof(name), "tensor %u offset", i);
    SVP_COMM_DIFF_U64(diff, name, want_offset, got->offset);
}

svp_status_t svp_comm_frame_check(const struct svp_comm_frame *frame,
                                  size_t                       received,
                                  const svp_comm_frame_id_t   *expected,
                                  const char                  *where)
{
    const svp_comm_header_t *hdr  = frame->base;
    svp_comm_diff_t          diff = {.len = 0, .count = 0};
    uint64_t                 sum;
    unsigned                 i;

    diff.buf[0] = '\0';
    if (received < sizeof(*hdr)) {
        svp_error("%s: message of %zu bytes is shorter than a frame header "
                  "(%zu bytes)",
                  where, received, sizeof(*hdr));
        return SVP_ERR_MESSAGE;
    }
    if ((hdr->magic != SVP_COMM_MAGIC) || (hdr->version != SVP_COMM_VERSION) ||
        (hdr->header_bytes != sizeof(*hdr))) {
        svp_error("%s: not an svdpipe frame: magic 0x%08x version %u header "
                  "%u bytes (expected 0x%08x version %u header %zu bytes)",
                  where, hdr->magic, hdr->version, hdr->header_bytes, SVP_COMM_MAGIC,
                  SVP_COMM_VERSION, sizeof(*hdr));
        return SVP_ERR_MESSAGE;
    }
    sum = svp_hash_fnv1a(hdr, SVP_COMM_HEADER_HASHED, SVP_COMM_HEADER_SEED);
    if (sum != hdr->header_checksum) {
        svp_error("%s: header checksum: expected 0x%016" PRIx64 ", got 0x%016" PRIx64
                  " (header corrupted)",
                  where, hdr->header_checksum, sum);
        return SVP_ERR_MESSAGE;
    }

    SVP_COMM_DIFF_U64(&diff, "job id", expected->job_id, hdr->job_id);
    SVP_COMM_DIFF_U64(&diff, "kind", expected->kind, hdr->kind);
    SVP_COMM_DIFF_U64(&diff, "sample", expected->sample, hdr->sample);
    SVP_COMM_DIFF_U64(&diff, "step", expected->step, hdr->step);
    SVP_COMM_DIFF_U64(&diff, "source rank", expected->src_rank, hdr->src_rank);
    SVP_COMM_DIFF_U64(&diff, "tensor count", frame->desc.num_tensors,
                      hdr->num_tensors);
    for (i = 0; i < SVP_MIN(frame->desc.num_tensors, hdr->num_tensors) &&
                (i < SVP_COMM_MAX_TENSORS);
         ++i) {
        svp_comm_check_tensor(&diff, i, &frame->desc.tensors[i], frame->offsets[i],
                              &hdr->tensors[i]);
    }
    SVP_COMM_DIFF_U64(&diff, "payload bytes", frame->length - sizeof(*hdr),
                      hdr->payload_bytes);
    SVP_COMM_DIFF_U64(&diff, "message bytes", frame->length, received);

    /* The payload is worth hashing only when everything else agrees. */
    if ((diff.count == 0) && (hdr->flags & SVP_COMM_FLAG_PAYLOAD_CHECKSUM)) {
        sum = svp_comm_payload_hash((const char *)frame->base + sizeof(*hdr),
                                    hdr->payload_bytes);
        if (sum != hdr->payload_checksum) {
            svp_comm_diff_add(&diff,
                              "payload checksum: expected 0x%016" PRIx64
                              ", got 0x%016" PRIx64 " (payload corrupted)",
                              hdr->payload_checksum, sum);
        }
    }

    if (diff.count > 0) {
        svp_error("%s: message does not match (%d difference%s): %s", where,
                  diff.count, diff.count > 1 ? "s" : "", diff.buf);
        return SVP_ERR_MESSAGE;
    }
    return SVP_OK;
}

/* ---- device frames -------------------------------------------------- */

/* The path to a peer, stated once per peer. */
void svp_comm_path_log(struct svp_comm *comm, int peer)
{
    if (comm->path_logged == NULL || comm->path_logged[peer]) {
        return;
    }
    comm->path_logged[peer] = 1;
    svp_info("hand-off with rank %d: device frames, %s path%s", peer,
             svp_comm_path_name(comm->path),
             (comm->path == SVP_COMM_PATH_DEVICE)
                 ? " (UCX moves cuda memory: cuda_ipc / GPUDirect RDMA)"
             : (comm->device.host_alloc != NULL) ? " (through pinned host memory)"
                                                 : " (through host memory)");
}

/* The frame seen through its host copy, for the header code of frame.c. */
static struct svp_comm_frame
svp_comm_frame_host_view(const struct svp_comm_frame *frame)
{
    struct svp_comm_frame view = *frame;

    view.base     = frame->host;
    view.mem_type = SVP_COMM_MEM_HOST;
    return view;
}

/*
 * Before a device frame is sent: its header is written in the host copy
 * (the payload is copied there too when staged, or to checksum it); on the
 * device path the header then goes back to the device frame, which UCX
 * sends as it is.
 */
svp_status_t svp_comm_frame_stage_out(struct svp_comm           *comm,
                                      struct svp_comm_frame     *frame,
                                      const svp_comm_frame_id_t *id)
{
    struct svp_comm_frame view = svp_comm_frame_host_view(frame);
    size_t                hdr  = sizeof(svp_comm_header_t);
    svp_status_t          status;

    if (comm->path == SVP_COMM_PATH_STAGED || comm->checksum) {
        status =
            frame->dev.to_host(frame->dev.ctx, (char *)frame->host + hdr,
                               (const char *)frame->base + hdr, frame->length - hdr);
        if (status != SVP_OK) {
            return status;
        }
    }
    svp_comm_frame_seal(&view, id, comm->checksum);
    if (comm->path == SVP_COMM_PATH_DEVICE) {
        return frame->dev.to_device(frame->dev.ctx, frame->base, frame->host, hdr);
    }
    return SVP_OK;
}

/*
 * After a device frame was received: the header (and with checksums the
 * payload) is checked in the host copy; a staged payload then goes to the
 * device.  A frame that fails its checks is not copied.
 */
svp_status_t svp_comm_frame_stage_in(struct svp_comm       *comm,
                                     struct svp_comm_frame *frame, size_t length,
                                     const svp_comm_frame_id_t *expected,
                                     const char                *where)
{
    struct svp_comm_frame view = svp_comm_frame_host_view(frame);
    size_t                hdr  = sizeof(svp_comm_header_t);
    svp_status_t          status;

    if (comm->path == SVP_COMM_PATH_DEVICE) {
        status = frame->dev.to_host(frame->dev.ctx, frame->host, frame->base,
                                    comm->checksum ? frame->length : hdr);
        if (status != SVP_OK) {
            return status;
        }
    }
    status = svp_comm_frame_check(&view, length, expected, where);
    if (status != SVP_OK || comm->path == SVP_COMM_PATH_DEVICE) {
        return status;
    }
    return frame->dev.to_device(frame->dev.ctx, (char *)frame->base + hdr,
                                (const char *)frame->host + hdr,
                                frame->length - hdr);
}

/* ---- frames ---------------------------------------------------------- */

size_t svp_comm_frame_size(const svp_comm_frame_desc_t *desc)
{
    uint64_t offsets[SVP_COMM_MAX_TENSORS];
    size_t   length;

    return (svp_comm_frame_layout(desc, offsets, &length) == SVP_OK) ? length : 0;
}

/* Frees a device frame's host copy (pinned when the services pin). */
static void svp_comm_frame_free_host_copy(struct svp_comm_frame *frame)
{
    if (frame->dev.host_free != NULL) {
        frame->dev.host_free(frame->dev.ctx, frame->host);
    } else {
        free(frame->host);
    }
}

/* The memory of a device frame laid out by svp_comm_frame_create(): its host
 * copy and, unless the caller gives one, the device buffer. */
static svp_status_t svp_comm_frame_init_device(svp_comm_h             comm,
                                               struct svp_comm_frame *frame,
                                               void *buffer, size_t length)
{
    size_t       need = frame->length;
    svp_status_t status;

    if (buffer != NULL && length < need) {
        svp_error("device frame buffer of %zu bytes is smaller than the %zu "
                  "bytes the layout needs",
                  length, need);
        return SVP_ERR_INVALID_PARAM;
    }
    frame->dev = comm->device;
    if (frame->dev.host_alloc != NULL) {
        status = frame->dev.host_alloc(frame->dev.ctx, need, &frame->host);
    } else {
        status = (posix_memalign(&frame->host, SVP_COMM_ALIGN, need) == 0)
                     ? SVP_OK
                     : SVP_ERR_NO_MEMORY;
    }
    if (status != SVP_OK) {
        svp_error("cannot allocate the %zu-byte host copy of a device frame", need);
        return status;
    }
    memset(frame->host, 0, need);
    if (buffer != NULL) {
        frame->base = buffer;
        return SVP_OK;
    }
    status = frame->dev.alloc(frame->dev.ctx, need, &frame->base);
    if (status != SVP_OK) {
        svp_error("cannot allocate a %zu-byte device frame", need);
        goto err_free_host;
    }
    frame->owned = 1;
    status = frame->dev.to_device(frame->dev.ctx, frame->base, frame->host, need);
    if (status != SVP_OK) {
        frame->dev.free(frame->dev.ctx, frame->base);
        goto err_free_host;
    }
    return SVP_OK;

err_free_host:
    svp_comm_frame_free_host_copy(frame);
    return status;
}

/* The memory of a host frame laid out by svp_comm_frame_create(). */
static svp_status_t svp_comm_frame_init_host(struct svp_comm_frame *frame,
                                             void *buffer, size_t length)
{
    size_t need = frame->length;

    if (buffer == NULL) {
        if (posix_memalign(&frame->base, SVP_COMM_ALIGN, need) != 0) {
            svp_error("out of memory allocating a %zu-byte frame", need);
            return SVP_ERR_NO_MEMORY;
        }
        memset(frame->base, 0, need);
        frame->owned = 1;
    } else if (length < need) {
        svp_error("frame buffer of %zu bytes is smaller than the %zu bytes the "
                  "layout needs",
                  length, need);
        return SVP_ERR_INVALID_PARAM;
    } else if (((uintptr_t)buffer % SVP_COMM_ALIGN) != 0) {
        svp_error("frame buffer %p is not %d-byte aligned", buffer, SVP_COMM_ALIGN);
        return SVP_ERR_INVALID_PARAM;
    } else {
        frame->base = buffer;
    }
    return SVP_OK;
}

svp_status_t svp_comm_frame_create(svp_comm_h                   comm,
                                   const svp_comm_frame_desc_t *desc, void *buffer,
                                   size_t length, svp_comm_mem_type_t mem_type,
                                   svp_comm_frame_h *frame_p)
{
    struct svp_comm_frame *frame;
    svp_status_t           status;
    size_t                 need;

    if (mem_type == SVP_COMM_MEM_CUDA && !comm->have_device) {
        svp_error("a frame in device memory needs a comm created with device "
                  "services");
        return SVP_ERR_INVALID_PARAM;
    }
    frame = calloc(1, sizeof(*frame));
    if (frame == NULL) {
        svp_error("out of memory allocating a frame");
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_comm_frame_layout(desc, frame->offsets, &need);
    if (status == SVP_OK) {
        frame->desc     = *desc;
        frame->length   = need;
        frame->mem_type = mem_type;
        status          = (mem_type == SVP_COMM_MEM_CUDA)
                              ? svp_comm_frame_init_device(comm, frame, buffer, length)
                              : svp_comm_frame_init_host(frame, buffer, length);
    }
    if (status != SVP_OK) {
        free(frame);
        return status;
    }
    *frame_p = frame;
    return SVP_OK;
}

void svp_comm_frame_free(struct svp_comm_frame *frame)
{
    if (frame->mem_type == SVP_COMM_MEM_CUDA) {
        if (frame->owned) {
            frame->dev.free(frame->dev.ctx, frame->base);
        }
        svp_comm_frame_free_host_copy(frame);
    } else if (frame->owned) {
        free(frame->base);
    }
    free(frame);
}

void svp_comm_frame_destroy(svp_comm_frame_h frame)
{
    if (frame == NULL) {
        return;
    }
    if (frame->busy > 0) {
        /* an abandoned request still lends it to UCX: freed with it */
        frame->destroyed = 1;
        return;
    }
    svp_comm_frame_free(frame);
}

void *svp_comm_frame_data(svp_comm_frame_h frame, unsigned i)
{
    return (i < frame->desc.num_tensors) ? (char *)frame->base + frame->offsets[i]
                                         : NULL;
}

size_t svp_comm_frame_length(svp_comm_frame_h frame)
{
    return frame->length;
}
