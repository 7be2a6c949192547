/*
 * GPU selection per rank (src/ops/ops_gpu.h), with the visible devices,
 * local rank and device count as input: no GPU needed.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_gpu.h"

#include <criterion/criterion.h>
#include <string.h>

static svp_status_t select_gpu(const char *visible, const char *requested, int lr,
                               int ls, int count, int share, svp_ops_gpu_choice_t *c,
                               char *err)
{
    svp_ops_gpu_select_params_t p = {
        .visible      = visible,
        .requested    = requested,
        .local_rank   = lr,
        .local_size   = ls,
        .device_count = count,
        .share_gpu    = share,
    };

    memset(c, 0xff, sizeof(*c));
    err[0] = '\0';
    return svp_ops_gpu_select(&p, c, err, 512);
}

Test(ops_gpu, local_rank_modulo_visible_devices)
{
    svp_ops_gpu_choice_t c;
    char                 err[512];
    int                  lr;

    /* 4 ranks on a node with 4 GPUs, no binding: rank r takes device r */
    for (lr = 0; lr < 4; ++lr) {
        cr_assert_eq(select_gpu(NULL, NULL, lr, 4, 4, 0, &c, err), SVP_OK, "%s",
                     err);
        cr_assert_eq(c.device, lr);
        cr_assert_eq(c.per_task, 0);
        cr_assert_eq(c.shared, 0);
    }
    /* 2 ranks, 8 GPUs listed for the whole step: devices 0 and 1, and the
     * log names the physical GPU behind the index */
    cr_assert_eq(select_gpu("4,5,6,7,0,1,2,3", NULL, 1, 2, 8, 0, &c, err), SVP_OK);
    cr_assert_eq(c.device, 1);
    cr_assert(strstr(c.how, "physical 5") != NULL, "%s", c.how);
}

Test(ops_gpu, slurm_per_task_binding)
{
    svp_ops_gpu_choice_t c;
    char                 err[512];

    /* --gpus-per-task=1 --gpu-bind=per_task:1: rank 5 of 7 sees only GPU 5 */
    cr_assert_eq(select_gpu("5", NULL, 5, 7, 1, 0, &c, err), SVP_OK, "%s", err);
    cr_assert_eq(c.device, 0);
    cr_assert_eq(c.per_task, 1);
    cr_assert_eq(c.shared, 0);
    cr_assert(strstr(c.how, "physical 5") != NULL, "%s", c.how);
    /* --gpus-per-task=2 on 4 ranks: each sees its own 2, uses the first */
    cr_assert_eq(select_gpu("GPU-aa,GPU-bb", NULL, 3, 4, 2, 0, &c, err), SVP_OK);
    cr_assert_eq(c.device, 0);
    cr_assert_eq(c.per_task, 1);
    cr_assert(strstr(c.how, "GPU-aa") != NULL, "%s", c.how);
}

Test(ops_gpu, sharing_refused_unless_allowed)
{
    svp_ops_gpu_choice_t c;
    char                 err[512];

    /* 4 ranks, 2 GPUs, nothing bound per task: ranks 0 and 2 would share */
    cr_assert_eq(select_gpu(NULL, NULL, 2, 4, 2, 0, &c, err), SVP_ERR_DEVICE);
    cr_assert(strstr(err, "4 ranks on this node but 2 cuda devices") != NULL, "%s",
              err);
    cr_assert(strstr(err, "cluster.share_gpu") != NULL, "%s", err);
    cr_assert_eq(c.device, -1, "choice written on failure");
    /* the same with every rank seeing both GPUs listed */
    cr_assert_eq(select_gpu("0,1,2,3", NULL, 1, 4, 2, 0, &c, err), SVP_ERR_DEVICE);
    /* allowed: rank 2 shares device 0, and says so */
    cr_assert_eq(select_gpu(NULL, NULL, 2, 4, 2, 1, &c, err), SVP_OK, "%s", err);
    cr_assert_eq(c.device, 0);
    cr_assert_eq(c.shared, 1);
}

Test(ops_gpu, no_device)
{
    svp_ops_gpu_choice_t c;
    char                 err[512];

    cr_assert_eq(select_gpu(NULL, NULL, 0, 1, 0, 0, &c, err), SVP_ERR_DEVICE);
    cr_assert(strstr(err, "no cuda device is visible to local rank 0") != NULL, "%s",
              err);
    cr_assert(strstr(err, "unset") != NULL, "%s", err);
    /* CUDA_VISIBLE_DEVICES="" hides every device */
    cr_assert_eq(select_gpu("", NULL, 0, 1, 1, 0, &c, err), SVP_ERR_DEVICE);
    cr_assert(strstr(err, "CUDA_VISIBLE_DEVICES=''") != NULL, "%s", err);
}

Test(ops_gpu, explicit_device)
{
    svp_ops_gpu_choice_t c;
    char                 err[512];

    cr_assert_eq(select_gpu(NULL, "3", 0, 1, 4, 0, &c, err), SVP_OK, "%s", err);
    cr_assert_eq(c.device, 3);
    cr_assert_eq(select_gpu(NULL, "4", 0, 1, 4, 0, &c, err), SVP_ERR_DEVICE);
    cr_assert(strstr(err, "SVP_CUDA_DEVICE='4' is not a device index in [0, 4)") !=
                  NULL,
              "%s", err);
    cr_assert_eq(select_gpu(NULL, "x1", 0, 1, 4, 0, &c, err), SVP_ERR_DEVICE);
}

Test(ops_gpu, bind_roundtrip)
{
    svp_ops_gpu_bind_t b = {.local_rank = 3, .local_size = 8, .share_gpu = 1}, g;

    svp_ops_gpu_bind_get(&g);
    cr_assert_eq(g.local_rank, 0);
    cr_assert_eq(g.local_size, 1);
    svp_ops_gpu_bind_set(&b);
    svp_ops_gpu_bind_get(&g);
    cr_assert_eq(g.local_rank, 3);
    cr_assert_eq(g.local_size, 8);
    cr_assert_eq(g.share_gpu, 1);
}
