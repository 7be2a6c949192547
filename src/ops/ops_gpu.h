/*
 * Which GPU a rank uses: one per rank, the way Slurm binds them.
 *
 * Under `srun --gpus-per-task=N --gpu-bind=per_task:N` (what svdlaunch
 * renders) Slurm gives each task its own CUDA_VISIBLE_DEVICES, so a rank
 * that sees fewer devices than there are ranks on its node was bound per
 * task and uses its first visible device.  Otherwise every local rank sees
 * the same devices and rank r takes device (local rank mod visible count).
 * Two ranks on one device (more local ranks than devices, without per-task
 * binding) is refused unless cluster.share_gpu allows it.
 *
 * Sharing is judged from what this rank sees: a CUDA_VISIBLE_DEVICES set by
 * hand to the same single GPU for every task looks like per-task binding.
 *
 * The selection is a pure function of its inputs, so it is tested without a
 * GPU; svp_ops_create() of SVP_OPS_BACKEND_CUDA calls it with the module's
 * device count.
 */
#ifndef SVP_OPS_OPS_GPU_H
#define SVP_OPS_OPS_GPU_H

#include "common/status.h"

#include <stddef.h>

/* Where this process sits on its node; set once by the worker (PMIx). */
typedef struct {
    int local_rank; /* 0-based rank among the ranks on this node */
    int local_size; /* ranks on this node */
    int share_gpu;  /* cluster.share_gpu: ranks may share a device */
} svp_ops_gpu_bind_t;

typedef struct {
    const char *visible;   /* CUDA_VISIBLE_DEVICES, NULL when unset */
    const char *requested; /* SVP_CUDA_DEVICE (an index), NULL when unset */
    int         local_rank;
    int         local_size;
    int         device_count; /* what the runtime reports */
    int         share_gpu;
} svp_ops_gpu_select_params_t;

typedef struct {
    int  device;   /* index for cudaSetDevice */
    int  per_task; /* bound per task by the launcher */
    int  shared;   /* another local rank uses the same device */
    char how[160]; /* why this device, for the log */
} svp_ops_gpu_choice_t;

/*
 * Picks the device.  On failure returns SVP_ERR_DEVICE (no device, a bad
 * SVP_CUDA_DEVICE, or sharing not allowed: all of them this node's own
 * trouble, so the worker aborts the job rather than leaving peers waiting)
 * and writes the reason to err (a person can act on it); *choice_p is
 * written only on success.
 */
svp_status_t svp_ops_gpu_select(const svp_ops_gpu_select_params_t *p,
                                svp_ops_gpu_choice_t *choice_p, char *err,
                                size_t err_len);

/* The process's place on its node (default: rank 0 of 1, no sharing). */
void svp_ops_gpu_bind_set(const svp_ops_gpu_bind_t *bind);
void svp_ops_gpu_bind_get(svp_ops_gpu_bind_t *bind_p);

#endif
