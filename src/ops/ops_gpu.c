/*
 * GPU selection per rank (ops_gpu.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static svp_ops_gpu_bind_t svp_ops_gpu_bind = {0, 1, 0};

void svp_ops_gpu_bind_set(const svp_ops_gpu_bind_t *bind)
{
    svp_ops_gpu_bind = *bind;
}

void svp_ops_gpu_bind_get(svp_ops_gpu_bind_t *bind_p)
{
    *bind_p = svp_ops_gpu_bind;
}

/* Entries of a CUDA_VISIBLE_DEVICES list ("0,1", "GPU-uuid,..."), and the
 * text of entry idx in buf ("" past the end). */
static int svp_ops_gpu_visible_entry(const char *visible, int idx, char *buf,
                                     size_t len)
{
    const char *p = visible, *end;
    int         n = 0;

    buf[0] = '\0';
    while (*p != '\0') {
        end = strchr(p, ',');
        if (end == NULL) {
            end = p + strlen(p);
        }
        if (end > p) {
            if (n == idx) {
                snprintf(buf, len, "%.*s", (int)(end - p), p);
            }
            ++n;
        }
        p = (*end == ',') ? end + 1 : end;
    }
    return n;
}

svp_status_t svp_ops_gpu_select(const svp_ops_gpu_select_params_t *p,
                                svp_ops_gpu_choice_t *choice_p, char *err,
                                size_t err_len)
{
    svp_ops_gpu_choice_t c;
    char                 entry[64];
    int                  nvis = -1, lr, ls;
    long                 req;
    char                *end;

    memset(&c, 0, sizeof(c));
    lr = (p->local_rank >= 0) ? p->local_rank : 0;
    ls = (p->local_size > lr) ? p->local_size : lr + 1;
    if (p->visible != NULL) {
        nvis = svp_ops_gpu_visible_entry(p->visible, 0, entry, sizeof(entry));
    }
    if (p->device_count <= 0 || nvis == 0) {
        snprintf(err, err_len,
                 "no cuda device is visible to local rank %d "
                 "(CUDA_VISIBLE_DEVICES=%s%s%s)",
                 lr, (p->visible != NULL) ? "'" : "",
                 (p->visible != NULL) ? p->visible : "unset",
                 (p->visible != NULL) ? "'" : "");
        return SVP_ERR_DEVICE;
    }

    if (p->requested != NULL && *p->requested != '\0') {
        req = strtol(p->requested, &end, 10);
        if (*end != '\0' || req < 0 || req >= p->device_count) {
            snprintf(err, err_len,
                     "SVP_CUDA_DEVICE='%s' is not a device index "
                     "in [0, %d)",
                     p->requested, p->device_count);
            return SVP_ERR_DEVICE;
        }
        c.device = (int)req;
        snprintf(c.how, sizeof(c.how), "SVP_CUDA_DEVICE=%ld", req);
    } else if (nvis > 0 && nvis < ls) {
        /* fewer devices than ranks here, each rank its own list: Slurm's
         * --gpus-per-task / --gpu-bind=per_task */
        c.device   = 0;
        c.per_task = 1;
        snprintf(c.how, sizeof(c.how), "bound per task (CUDA_VISIBLE_DEVICES='%s')",
                 p->visible);
    } else {
        c.device = lr % p->device_count;
        c.shared = (ls > p->device_count);
        snprintf(c.how, sizeof(c.how),
                 "local rank %d of %d mod %d visible "
                 "device%s",
                 lr, ls, p->device_count, (p->device_count == 1) ? "" : "s");
        if (c.shared && !p->share_gpu) {
            snprintf(err, err_len,
                     "%d ranks on this node but %d cuda device%s "
                     "visible: ranks would share a gpu (local rank %d on device "
                     "%d); bind one gpu per task (srun --gpus-per-task=1 "
                     "--gpu-bind=per_task:1), run fewer ranks per node, or set "
                     "cluster.share_gpu: true",
                     ls, p->device_count, (p->device_count == 1) ? " is" : "s are",
                     lr, c.device);
            return SVP_ERR_DEVICE;
        }
    }
    if (nvis > 0) {
        svp_ops_gpu_visible_entry(p->visible, c.device, entry, sizeof(entry));
        if (entry[0] != '\0') {
            snprintf(c.how + strlen(c.how), sizeof(c.how) - strlen(c.how),
                     ", physical %s", entry);
        }
    }
    *choice_p = c;
    return SVP_OK;
}
