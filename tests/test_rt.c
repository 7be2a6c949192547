/* Tests for src/rt in a plain start (no launcher); the PMIx paths are
 * exercised under srun and mpirun by tests/cluster/test_comm_cluster.sh. */
#include "rt/rt.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static svp_rt_h plain_rt(void)
{
    svp_rt_h rt = NULL;

    /* the harness itself may run under a launcher: force a plain start */
    unsetenv("PMIX_NAMESPACE");
    cr_assert_eq(svp_rt_init(NULL, &rt), SVP_OK);
    cr_assert_not_null(rt);
    return rt;
}

Test(rt, plain_start_is_rank_0_of_1)
{
    svp_rt_h rt = plain_rt();

    cr_assert_eq(svp_rt_is_plain(rt), 1);
    cr_assert_eq(svp_rt_rank(rt), 0);
    cr_assert_eq(svp_rt_size(rt), 1);
    cr_assert_eq(svp_rt_local_rank(rt), 0);
    cr_assert_str_eq(svp_rt_nspace(rt), "");
    cr_assert_gt(strlen(svp_rt_hostname(rt)), 0);
    cr_assert_eq(svp_rt_lost_rank(rt), -1);
    cr_assert_eq(svp_rt_event_fd(rt), -1);
    cr_assert_eq(svp_rt_fence(rt), SVP_OK);
    svp_rt_cleanup(rt);
}

Test(rt, plain_put_get)
{
    svp_rt_h rt   = plain_rt();
    void    *data = (void *)0x1;
    size_t   len  = 7;

    cr_assert_eq(svp_rt_put(rt, "svp.test.a", "hello", 5), SVP_OK);
    cr_assert_eq(svp_rt_put(rt, "svp.test.b", "\0\1\2", 3), SVP_OK);
    /* a second put replaces the first */
    cr_assert_eq(svp_rt_put(rt, "svp.test.a", "world!", 6), SVP_OK);
    cr_assert_eq(svp_rt_fence(rt), SVP_OK);

    cr_assert_eq(svp_rt_get(rt, 0, "svp.test.a", &data, &len), SVP_OK);
    cr_assert_eq(len, 6);
    cr_assert_eq(memcmp(data, "world!", 6), 0);
    free(data);
    cr_assert_eq(svp_rt_get(rt, 0, "svp.test.b", &data, &len), SVP_OK);
    cr_assert_eq(len, 3);
    cr_assert_eq(memcmp(data, "\0\1\2", 3), 0);
    free(data);

    /* failures leave the outputs alone */
    data = (void *)0x1;
    len  = 7;
    cr_assert_eq(svp_rt_get(rt, 0, "svp.test.missing", &data, &len),
                 SVP_ERR_NOT_FOUND);
    cr_assert_eq(svp_rt_get(rt, 1, "svp.test.a", &data, &len),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_rt_put(rt, "", "x", 1), SVP_ERR_INVALID_PARAM);
    cr_assert_eq(data, (void *)0x1);
    cr_assert_eq(len, 7);
    svp_rt_cleanup(rt);
}
