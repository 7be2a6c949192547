/*
 * The hand-off path of device frames (comm_path.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm_path.h"

#include <stdio.h>

svp_status_t svp_comm_path_select(svp_comm_gpu_direct_t mode, int device_frames,
                                  int ucx_cuda, svp_comm_path_t *path_p, char *err,
                                  size_t err_len)
{
    svp_comm_path_t path;

    if (!device_frames) {
        /* the CPU backend: nothing to choose, whatever the key says */
        path = SVP_COMM_PATH_HOST;
    } else if (ucx_cuda && mode != SVP_COMM_GPU_DIRECT_OFF) {
        path = SVP_COMM_PATH_DEVICE;
    } else if (mode == SVP_COMM_GPU_DIRECT_ON) {
        snprintf(err, err_len,
                 "comm.gpu_direct is on but this UCX cannot move "
                 "cuda memory (no cuda among its memory types: built without "
                 "CUDA, or UCX_TLS leaves out cuda_copy/cuda_ipc); use "
                 "gpu_direct: auto or off to stage through pinned host memory");
        return SVP_ERR_UNSUPPORTED;
    } else {
        /* gpu_direct: off, or auto where UCX cannot move cuda memory */
        path = SVP_COMM_PATH_STAGED;
    }
    *path_p = path;
    return SVP_OK;
}

const char *svp_comm_path_name(svp_comm_path_t path)
{
    switch (path) {
    case SVP_COMM_PATH_HOST:
        return "host";
    case SVP_COMM_PATH_DEVICE:
        return "device";
    case SVP_COMM_PATH_STAGED:
        return "staged";
    }
    return "?";
}
