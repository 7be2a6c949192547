/* Tests for src/comm in one process: framed messages sent to itself over
 * UCX's loopback, header checks, deadlines.  The multi-rank paths run under
 * srun and mpirun in tests/cluster/test_comm_cluster.sh. */
#include "comm/comm.h"
#include "comm/frame.h"
#include "common/clock.h"
#include "rt/rt.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static svp_rt_h   rt;
static svp_comm_h comm;

static void setup(void)
{
    svp_comm_params_t params = {
        .field_mask = SVP_COMM_PARAM_FIELD_JOB_ID | SVP_COMM_PARAM_FIELD_TRANSPORT,
        .job_id     = 0x5eed,
        /* loopback over UCX's "self" transport; no shared memory segment */
        .transport = "self,posix",
    };

    unsetenv("PMIX_NAMESPACE");
    cr_assert_eq(svp_rt_init(NULL, &rt), SVP_OK);
    cr_assert_eq(svp_comm_create(rt, &params, &comm), SVP_OK);
}

static void teardown(void)
{
    svp_comm_destroy(comm);
    svp_rt_cleanup(rt);
}

/* A latent-like frame: [1,14,4,9,16] floats plus a [1,1024] conditioning. */
static svp_comm_frame_desc_t latent_desc(int64_t h)
{
    svp_comm_frame_desc_t desc = {.num_tensors = 2};

    desc.tensors[0] =
        (svp_comm_tensor_desc_t){.dtype = 1,
                                 .ndim  = 5,
                                 .shape = {1, 14, 4, h, 16},
                                 .bytes = 14 * 4 * h * 16 * sizeof(float)};
    desc.tensors[1] = (svp_comm_tensor_desc_t){.dtype = 1,
                                               .ndim  = 2,
                                               .shape = {1, 1024},
                                               .bytes = 1024 * sizeof(float)};
    return desc;
}

TestSuite(comm, .init = setup, .fini = teardown);

Test(comm, loopback_framed_message)
{
    svp_comm_frame_desc_t desc = latent_desc(9);
    svp_comm_frame_h      out, in;
    svp_comm_req_h        sreq, rreq;
    float                *x, *c;
    size_t                i, n = desc.tensors[0].bytes / sizeof(float);

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &out),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &in),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_length(out), svp_comm_frame_size(&desc));
    x = svp_comm_frame_data(out, 0);
    c = svp_comm_frame_data(out, 1);
    cr_assert_eq((uintptr_t)x % 64, 0);
    cr_assert_eq((uintptr_t)c % 64, 0);
    cr_assert_null(svp_comm_frame_data(out, 2));
    for (i = 0; i < n; ++i) {
        x[i] = (float)i * 0.25f;
    }
    for (i = 0; i < 1024; ++i) {
        c[i] = -(float)i;
    }

    /* the receive is posted first, then the send; and the other way round */
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 3, 7, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 3, 7, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_OK);
    cr_assert_eq(memcmp(svp_comm_frame_data(in, 0), x, desc.tensors[0].bytes), 0);
    cr_assert_eq(memcmp(svp_comm_frame_data(in, 1), c, desc.tensors[1].bytes), 0);

    memset(svp_comm_frame_data(in, 0), 0, desc.tensors[0].bytes);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 4, 0, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 4, 0, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    cr_assert_eq(memcmp(svp_comm_frame_data(in, 0), x, desc.tensors[0].bytes), 0);

    svp_comm_frame_destroy(in);
    svp_comm_frame_destroy(out);
}

Test(comm, caller_buffer)
{
    svp_comm_frame_desc_t desc = latent_desc(2);
    size_t                need = svp_comm_frame_size(&desc);
    void                 *buf;
    svp_comm_frame_h      frame;

    cr_assert_gt(need, desc.tensors[0].bytes + desc.tensors[1].bytes);
    cr_assert_eq(posix_memalign(&buf, 64, need), 0);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, buf, need - 1, SVP_COMM_MEM_HOST,
                                       &frame),
                 SVP_ERR_INVALID_PARAM);
    /* device frames need a comm with device services (test_comm_path) */
    cr_assert_eq(svp_comm_frame_create(comm, &desc, buf, need, SVP_COMM_MEM_CUDA,
                                       &frame),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, buf, need, SVP_COMM_MEM_HOST,
                                       &frame),
                 SVP_OK);
    cr_assert_geq((char *)svp_comm_frame_data(frame, 0), (char *)buf);
    cr_assert_leq((char *)svp_comm_frame_data(frame, 1) + desc.tensors[1].bytes,
                  (char *)buf + need);
    svp_comm_frame_destroy(frame);
    free(buf);
}

/* Same byte size, different shape: the header check names both. */
Test(comm, shape_mismatch_detected)
{
    svp_comm_frame_desc_t sdesc = latent_desc(8), rdesc = latent_desc(8);
    svp_comm_frame_h      out, in;
    svp_comm_req_h        sreq, rreq;

    rdesc.tensors[0].shape[3] = 16;
    rdesc.tensors[0].shape[4] = 8;
    cr_assert_eq(svp_comm_frame_create(comm, &sdesc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &out),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &rdesc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &in),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_length(in), svp_comm_frame_length(out));
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 1, 2, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 1, 2, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_ERR_MESSAGE);
    svp_comm_frame_destroy(in);
    svp_comm_frame_destroy(out);
}

/* A larger message than expected, and a smaller one: both are mismatches. */
Test(comm, size_mismatch_detected)
{
    svp_comm_frame_desc_t big = latent_desc(9), small = latent_desc(4);
    svp_comm_frame_h      fbig, fsmall;
    svp_comm_req_h        sreq, rreq;

    cr_assert_eq(svp_comm_frame_create(comm, &big, NULL, 0, SVP_COMM_MEM_HOST,
                                       &fbig),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &small, NULL, 0, SVP_COMM_MEM_HOST,
                                       &fsmall),
                 SVP_OK);
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 1, 1, fsmall, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 1, 1, fbig, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_ERR_MESSAGE);
    svp_comm_wait(comm, sreq, 5.0);

    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 1, 2, fbig, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 1, 2, fsmall, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_ERR_MESSAGE);
    svp_comm_frame_destroy(fsmall);
    svp_comm_frame_destroy(fbig);
}

/* Nobody sends: the wait gives up at its deadline, not much later. */
Test(comm, recv_deadline)
{
    svp_comm_frame_desc_t desc = latent_desc(2);
    svp_comm_frame_h      in;
    svp_comm_req_h        rreq;
    double                t0, dt;

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &in),
                 SVP_OK);
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 9, 9, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_test(comm, rreq), SVP_INPROGRESS);
    t0 = svp_clock_now();
    cr_assert_eq(svp_comm_wait(comm, rreq, 0.3), SVP_ERR_TIMED_OUT);
    dt = svp_clock_now() - t0;
    /* 0.3 s deadline; the bound leaves room for a loaded 2-core machine */
    cr_assert_geq(dt, 0.3);
    cr_assert_lt(dt, 0.8, "wait returned after %.3f s", dt);
    svp_comm_frame_destroy(in);
}

/* A message for another (sample, step) from the same peer: at the deadline
 * the wait says what was sent instead. */
Test(comm, wrong_sample_named)
{
    svp_comm_frame_desc_t desc = latent_desc(2);
    svp_comm_frame_h      out, in;
    svp_comm_req_h        sreq, rreq;

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &out),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &in),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 6, 3, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 5, 3, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 0.2), SVP_ERR_MESSAGE);
    /* the stray message is still there for whoever expects it */
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 6, 3, in, &rreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, rreq, 5.0), SVP_OK);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);
    svp_comm_frame_destroy(in);
    svp_comm_frame_destroy(out);
}

Test(comm, invalid_arguments)
{
    svp_comm_frame_desc_t desc = latent_desc(2);
    svp_comm_frame_h      frame;
    svp_comm_req_h        req = NULL;

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &frame),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 1, SVP_COMM_KIND_LATENT, 0, 0, frame, &req),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_comm_isend(comm, 0, 0, 0, 0, frame, &req),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT,
                                SVP_COMM_MAX_SAMPLE + 1, 0, frame, &req),
                 SVP_ERR_INVALID_PARAM);
    cr_assert_null(req);
    desc.num_tensors = SVP_COMM_MAX_TENSORS + 1;
    cr_assert_eq(svp_comm_frame_size(&desc), 0);
    svp_comm_frame_destroy(frame);
}

/* The wire format itself: a sealed frame passes its check; a flipped payload
 * byte, a flipped header byte or another job's id does not. */
Test(comm, frame_check_catches_corruption)
{
    svp_comm_frame_desc_t desc  = latent_desc(3);
    svp_comm_frame_id_t   id    = {.job_id   = 0x5eed,
                                   .kind     = SVP_COMM_KIND_LATENT,
                                   .sample   = 2,
                                   .step     = 5,
                                   .src_rank = 0};
    svp_comm_frame_id_t   other = id;
    svp_comm_frame_h      frame;
    unsigned char        *bytes;
    size_t                len;

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &frame),
                 SVP_OK);
    len   = svp_comm_frame_length(frame);
    bytes = svp_comm_frame_data(frame, 0);
    memset(bytes, 0x3c, desc.tensors[0].bytes);

    svp_comm_frame_seal(frame, &id, 1);
    cr_assert_eq(svp_comm_frame_check(frame, len, &id, "test"), SVP_OK);

    bytes[desc.tensors[0].bytes - 1] ^= 0x80; /* the payload's last bit */
    cr_assert_eq(svp_comm_frame_check(frame, len, &id, "test"), SVP_ERR_MESSAGE);
    bytes[desc.tensors[0].bytes - 1] ^= 0x80;
    cr_assert_eq(svp_comm_frame_check(frame, len, &id, "test"), SVP_OK);

    ((unsigned char *)frame->base)[offsetof(svp_comm_header_t, sample)] ^= 1;
    cr_assert_eq(svp_comm_frame_check(frame, len, &id, "test"), SVP_ERR_MESSAGE);

    svp_comm_frame_seal(frame, &id, 1);
    other.job_id = 0xbad;
    cr_assert_eq(svp_comm_frame_check(frame, len, &other, "test"), SVP_ERR_MESSAGE);
    other      = id;
    other.step = 6;
    cr_assert_eq(svp_comm_frame_check(frame, len, &other, "test"), SVP_ERR_MESSAGE);
    cr_assert_eq(svp_comm_frame_check(frame, 100, &id, "test"), SVP_ERR_MESSAGE);
    svp_comm_frame_destroy(frame);
}

/* Several receives posted ahead (samples in flight): wait_any returns the
 * one whose message came, and at the deadline leaves the rest pending. */
Test(comm, wait_any)
{
    svp_comm_frame_desc_t desc = latent_desc(2);
    svp_comm_frame_h      out, in[3];
    svp_comm_req_h        reqs[3], sreq;
    int                   i, index = -1;

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &out),
                 SVP_OK);
    for (i = 0; i < 3; ++i) {
        cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                           &in[i]),
                     SVP_OK);
        cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, i, 1, in[i],
                                    &reqs[i]),
                     SVP_OK);
    }
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 1, 1, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_wait_any(comm, reqs, 3, 5.0, &index), SVP_OK);
    cr_assert_eq(index, 1);
    cr_assert_null(reqs[1]);
    cr_assert_eq(svp_comm_wait(comm, sreq, 5.0), SVP_OK);

    index = -1;
    cr_assert_eq(svp_comm_wait_any(comm, reqs, 3, 0.1, &index), SVP_ERR_TIMED_OUT);
    cr_assert_eq(index, -1);
    cr_assert_not_null(reqs[0]);
    cr_assert_not_null(reqs[2]);
    svp_comm_cancel(comm, reqs[0]);
    svp_comm_cancel(comm, reqs[2]);
    for (i = 0; i < 3; ++i) {
        svp_comm_frame_destroy(in[i]);
    }
    svp_comm_frame_destroy(out);
}

/* A send nobody receives: rendezvous-sized, so UCX cannot cancel it.  The
 * wait gives up, and destroying the frame right away is still safe (it is
 * freed when the comm lets go of it; valgrind shows no invalid access). */
Test(comm, abandoned_send_keeps_frame)
{
    svp_comm_frame_desc_t desc = latent_desc(64); /* ~230 KB */
    svp_comm_frame_h      out;
    svp_comm_req_h        sreq;
    double                t0;

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &out),
                 SVP_OK);
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 8, 8, out, &sreq),
                 SVP_OK);
    t0 = svp_clock_now();
    cr_assert_eq(svp_comm_wait(comm, sreq, 0.1), SVP_ERR_TIMED_OUT);
    /* 0.1 s deadline plus at most 0.2 s trying to cancel */
    cr_assert_lt(svp_clock_now() - t0, 0.6);
    svp_comm_frame_destroy(out);
}

/*
 * Teardown leaves nothing with UCX, so UCX has nothing to warn about when the
 * worker goes: a message nobody received (rendezvous-sized: UCX 1.13 warned
 * "unexpected tag-receive descriptor ... was not matched"), a send that
 * never completed (it warned "... was not returned to mpool ucp_requests")
 * and a receive that never matched.  UCX writes its warnings to this
 * process's stdout or stderr, both captured here.
 */
static void setup_quiet(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
    setup();
}

static int stream_has(FILE *f, const char *what)
{
    char line[1024];

    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, what) != NULL) {
            return 1;
        }
    }
    return 0;
}

Test(comm_teardown, leaves_nothing_with_ucx, .init = setup_quiet, .fini = teardown)
{
    svp_comm_frame_desc_t desc = latent_desc(512); /* ~1.8 MB */
    svp_comm_frame_h      out, in;
    svp_comm_req_h        sreq, rreq;
    double                t0;

    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST,
                                       &out),
                 SVP_OK);
    cr_assert_eq(svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &in),
                 SVP_OK);
    /* sample 3 is sent, sample 4 awaited: neither matches the other */
    cr_assert_eq(svp_comm_isend(comm, 0, SVP_COMM_KIND_LATENT, 3, 8, out, &sreq),
                 SVP_OK);
    cr_assert_eq(svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, 4, 8, in, &rreq),
                 SVP_OK);
    svp_comm_progress(comm);
    cr_assert_eq(svp_comm_test(comm, sreq), SVP_INPROGRESS);
    cr_assert_eq(svp_comm_test(comm, rreq), SVP_INPROGRESS);
    svp_comm_cancel(comm, sreq);
    svp_comm_cancel(comm, rreq);
    svp_comm_frame_destroy(out);
    svp_comm_frame_destroy(in);

    t0 = svp_clock_now();
    svp_comm_destroy(comm);
    comm = NULL;
    /* one rank, nothing to wait for: the drain ends at once */
    cr_assert_lt(svp_clock_now() - t0, 0.25);
    fflush(stdout);
    fflush(stderr);
    cr_assert_not(stream_has(cr_get_redirected_stdout(), "UCX  WARN"),
                  "UCX warned on stdout at teardown");
    cr_assert_not(stream_has(cr_get_redirected_stderr(), "UCX  WARN"),
                  "UCX warned on stderr at teardown");
}
