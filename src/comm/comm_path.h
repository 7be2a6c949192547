/*
 * How a frame in device memory crosses to a peer: the choice behind
 * comm.gpu_direct, kept apart from UCX so it is tested without a GPU.
 *
 *   host    - the frame is host memory (CPU backend): sent as it is;
 *   device  - the frame is device memory and UCX moves it as such
 *             (UCS_MEMORY_TYPE_CUDA: cuda_ipc within a node, GPUDirect RDMA
 *             across nodes where the fabric has it);
 *   staged  - the frame is device memory copied through pinned host memory
 *             on each side (UCX sees host memory only).
 *
 * comm.gpu_direct: auto takes `device` when UCX reports CUDA among the memory
 * types its context supports (ucp_context_query, UCP_ATTR_FIELD_MEMORY_TYPES)
 * and `staged` otherwise; on requires that support and fails without it;
 * off always stages.
 */
#ifndef SVP_COMM_COMM_PATH_H
#define SVP_COMM_COMM_PATH_H

#include "common/status.h"

#include <stddef.h>

typedef enum {
    SVP_COMM_GPU_DIRECT_AUTO = 0,
    SVP_COMM_GPU_DIRECT_ON,
    SVP_COMM_GPU_DIRECT_OFF
} svp_comm_gpu_direct_t;

typedef enum {
    SVP_COMM_PATH_HOST = 0,
    SVP_COMM_PATH_DEVICE,
    SVP_COMM_PATH_STAGED
} svp_comm_path_t;

/*
 * The path for frames of the given memory (device_frames: 0 host, 1 device)
 * when UCX can (ucx_cuda: 1) or cannot (0) move CUDA memory.  Fails with
 * SVP_ERR_UNSUPPORTED and the reason in err when `on` cannot be honoured;
 * *path_p is written only on success.
 */
svp_status_t svp_comm_path_select(svp_comm_gpu_direct_t mode, int device_frames,
                                  int ucx_cuda, svp_comm_path_t *path_p, char *err,
                                  size_t err_len);

/* "host", "device" or "staged". */
const char *svp_comm_path_name(svp_comm_path_t path);

#endif
