/*
 * comm.gpu_direct: which path a device frame takes (src/comm/comm_path.h),
 * and what the UCX context here reports it can move.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "comm/comm.h"
#include "comm/comm_path.h"
#include "rt/rt.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(comm_path, host_frames_ignore_the_key)
{
    svp_comm_gpu_direct_t modes[] = {SVP_COMM_GPU_DIRECT_AUTO,
                                     SVP_COMM_GPU_DIRECT_ON,
                                     SVP_COMM_GPU_DIRECT_OFF};
    svp_comm_path_t       path;
    char                  err[256];
    int                   m, cuda;

    /* the CPU backend is unchanged: host, whatever UCX can do */
    for (m = 0; m < 3; ++m) {
        for (cuda = 0; cuda < 2; ++cuda) {
            path = SVP_COMM_PATH_STAGED;
            cr_assert_eq(svp_comm_path_select(modes[m], 0, cuda, &path, err,
                                              sizeof(err)), SVP_OK);
            cr_assert_eq(path, SVP_COMM_PATH_HOST);
        }
    }
}

Test(comm_path, device_frames)
{
    svp_comm_path_t path;
    char            err[256] = "";

    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_AUTO, 1, 1, &path, err,
                                      sizeof(err)), SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_DEVICE);
    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_AUTO, 1, 0, &path, err,
                                      sizeof(err)), SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_STAGED);
    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_ON, 1, 1, &path, err,
                                      sizeof(err)), SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_DEVICE);
    /* off stages even where UCX could move device memory */
    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_OFF, 1, 1, &path, err,
                                      sizeof(err)), SVP_OK);
    cr_assert_eq(path, SVP_COMM_PATH_STAGED);
    cr_assert_str_eq(svp_comm_path_name(SVP_COMM_PATH_STAGED), "staged");
    cr_assert_str_eq(svp_comm_path_name(SVP_COMM_PATH_DEVICE), "device");
}

Test(comm_path, on_without_ucx_cuda_is_an_error)
{
    svp_comm_path_t path = SVP_COMM_PATH_HOST;
    char            err[256] = "";

    cr_assert_eq(svp_comm_path_select(SVP_COMM_GPU_DIRECT_ON, 1, 0, &path, err,
                                      sizeof(err)), SVP_ERR_UNSUPPORTED);
    cr_assert(strstr(err, "comm.gpu_direct is on but this UCX cannot move cuda memory")
              != NULL, "%s", err);
    cr_assert_eq(path, SVP_COMM_PATH_HOST, "path written on failure");
}

/* The context's own answer agrees with what ucx_info lists: a cuda memory
 * domain or not. */
Test(comm_path, ucx_reports_its_memory_types)
{
    svp_comm_params_t params = {.field_mask = SVP_COMM_PARAM_FIELD_JOB_ID,
                                .job_id = 1};
    svp_rt_h          rt;
    svp_comm_h        comm;
    FILE             *f;
    char              line[512];
    int               cuda_md = 0;

    f = popen("ucx_info -d 2>/dev/null", "r");
    if (f == NULL) {
        cr_skip_test("cannot run ucx_info");
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, "Memory domain:") != NULL && strstr(line, "cuda") != NULL) {
            cuda_md = 1;
        }
    }
    if (pclose(f) != 0) {
        cr_skip_test("ucx_info -d failed");
    }
    unsetenv("PMIX_NAMESPACE");
    unsetenv("UCX_TLS");
    cr_assert_eq(svp_rt_init(NULL, &rt), SVP_OK);
    cr_assert_eq(svp_comm_create(rt, &params, &comm), SVP_OK);
    cr_assert_eq(svp_comm_ucx_cuda(comm), cuda_md,
                 "ucx_info %s a cuda memory domain", cuda_md ? "lists" : "lists no");
    svp_comm_destroy(comm);
    svp_rt_cleanup(rt);
}
