/*
 * comm_ring: framed messages around a ring of ranks, for the cluster tests.
 *
 *   srun --mpi=pmix -n 4 comm_ring [--samples N] [--bytes B] [--deadline S]
 *                                  [--fail kill|kill-at-start|silent|
 *                                          wrong-sample]
 *                                  [--fail-rank R] [--fail-sample S]
 *
 * Sample s starts on rank 0 as step 0, goes rank 0 -> 1 -> ... -> W-1 -> 0,
 * each rank checking the payload it got and adding its step before passing
 * it on.  --fail makes rank R misbehave at sample S (default 1): die by
 * SIGKILL (or before the comm is up: its fence fails), never send, or send
 * the wrong sample.  Every rank prints
 * "comm_ring: rank R ok" on success and exits with the status's exit code
 * otherwise (after telling the launcher to abort the job).
 */
#include "comm/comm.h"
#include "common/clock.h"
#include "common/log.h"
#include "rt/rt.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum {
    RING_FAIL_NONE = 0,
    RING_FAIL_KILL,
    RING_FAIL_KILL_AT_START,
    RING_FAIL_SILENT,
    RING_FAIL_WRONG_SAMPLE
} ring_fail_t;

typedef struct {
    int         samples;
    size_t      bytes;
    double      deadline;
    ring_fail_t fail;
    int         fail_rank;
    int         fail_sample;
    int         no_abort;
} ring_opts_t;

static float ring_value(int sample, int step, size_t i)
{
    return (float)(sample * 1000 + step) + (float)(i & 1023) * 0.5f;
}

static svp_status_t ring_check(svp_comm_frame_h frame, int sample, int step,
                               size_t n)
{
    const float *x = svp_comm_frame_data(frame, 0);
    size_t       i;

    for (i = 0; i < n; ++i) {
        if (x[i] != ring_value(sample, step, i)) {
            svp_error("sample %d step %d: element %zu is %g, expected %g", sample,
                      step, i, x[i], ring_value(sample, step, i));
            return SVP_ERR_MESSAGE;
        }
    }
    return SVP_OK;
}

static void ring_fill(svp_comm_frame_h frame, int sample, int step, size_t n)
{
    float *x = svp_comm_frame_data(frame, 0);
    size_t i;

    for (i = 0; i < n; ++i) {
        x[i] = ring_value(sample, step, i);
    }
}

/* One hop: receive (sample, step) from prev unless this rank starts the
 * sample, then send (sample, step + 1) to next.  Rank 0 posts the receive of
 * the returning sample before it sends, so that one rank alone (sending to
 * itself) works too. */
static svp_status_t ring_run(svp_rt_h rt, svp_comm_h comm, const ring_opts_t *opts,
                             svp_comm_frame_h in, svp_comm_frame_h out)
{
    svp_comm_req_h rreq   = NULL, sreq;
    svp_status_t   status = SVP_OK;
    size_t         n      = opts->bytes / sizeof(float);
    int            rank = svp_rt_rank(rt), size = svp_rt_size(rt);
    int            prev = (rank + size - 1) % size, next = (rank + 1) % size;
    int            s;
    unsigned       send_sample;

    for (s = 0; (s < opts->samples) && (status == SVP_OK); ++s) {
        /* rank 0 waits for step `size` (the sample back from the last rank),
         * the others for step `rank` */
        status = svp_comm_irecv(comm, prev, SVP_COMM_KIND_LATENT, s,
                                (rank == 0) ? size : rank, in, &rreq);
        if (status != SVP_OK) {
            break;
        }
        if (rank > 0) {
            status = svp_comm_wait(comm, rreq, opts->deadline);
            rreq   = NULL;
            if (status == SVP_OK) {
                status = ring_check(in, s, rank - 1, n);
            }
            if (status != SVP_OK) {
                break;
            }
        }
        ring_fill(out, s, rank, n);

        send_sample = s;
        if ((rank == opts->fail_rank) && (s == opts->fail_sample)) {
            switch (opts->fail) {
            case RING_FAIL_KILL:
                svp_info("failure injection: killing myself at sample %d", s);
                raise(SIGKILL);
                break;
            case RING_FAIL_SILENT:
                svp_info("failure injection: not sending sample %d", s);
                svp_clock_sleep(opts->deadline + 2.0);
                continue;
            case RING_FAIL_WRONG_SAMPLE:
                svp_info("failure injection: sending sample %d as %d", s, s + 1);
                send_sample = s + 1;
                break;
            default:
                break;
            }
        }

        status = svp_comm_isend(comm, next, SVP_COMM_KIND_LATENT, send_sample,
                                rank + 1, out, &sreq);
        if (status == SVP_OK) {
            status = svp_comm_wait(comm, sreq, opts->deadline);
        }
        if ((status == SVP_OK) && (rank == 0)) {
            status = svp_comm_wait(comm, rreq, opts->deadline);
            rreq   = NULL;
            if (status == SVP_OK) {
                status = ring_check(in, s, size - 1, n);
            }
        }
    }

    if (rreq != NULL) {
        svp_comm_cancel(comm, rreq);
    }
    return status;
}

static int ring_parse(int argc, char **argv, ring_opts_t *opts)
{
    static const struct option longopts[] =
        {{"samples", required_argument, NULL, 'n'},
         {"bytes", required_argument, NULL, 'b'},
         {"deadline", required_argument, NULL, 'd'},
         {"fail", required_argument, NULL, 'f'},
         {"fail-rank", required_argument, NULL, 'r'},
         {"fail-sample", required_argument, NULL, 's'},
         {"no-abort", no_argument, NULL, 'A'},
         {NULL, 0, NULL, 0}};
    int c;

    *opts = (ring_opts_t){.samples     = 8,
                          .bytes       = 1 << 16,
                          .deadline    = 10.0,
                          .fail_rank   = 1,
                          .fail_sample = 1};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            opts->samples = atoi(optarg);
            break;
        case 'b':
            opts->bytes = strtoull(optarg, NULL, 0);
            break;
        case 'd':
            opts->deadline = atof(optarg);
            break;
        case 'r':
            opts->fail_rank = atoi(optarg);
            break;
        case 's':
            opts->fail_sample = atoi(optarg);
            break;
        case 'A':
            opts->no_abort = 1;
            break;
        case 'f':
            if (strcmp(optarg, "kill") == 0) {
                opts->fail = RING_FAIL_KILL;
            } else if (strcmp(optarg, "kill-at-start") == 0) {
                opts->fail = RING_FAIL_KILL_AT_START;
            } else if (strcmp(optarg, "silent") == 0) {
                opts->fail = RING_FAIL_SILENT;
            } else if (strcmp(optarg, "wrong-sample") == 0) {
                opts->fail = RING_FAIL_WRONG_SAMPLE;
            } else {
                fprintf(stderr, "comm_ring: unknown failure '%s'\n", optarg);
                return -1;
            }
            break;
        default:
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    svp_comm_frame_desc_t desc = {.num_tensors = 1};
    svp_comm_frame_h      in = NULL, out = NULL;
    svp_comm_params_t     params = {0};
    ring_opts_t           opts;
    svp_rt_h              rt;
    svp_comm_h            comm;
    svp_status_t          status;
    double                t0;
    char                  msg[128];

    if (ring_parse(argc, argv, &opts) != 0) {
        return SVP_EXIT_BAD_INPUT;
    }
    if (getenv("SVP_LOG_LEVEL") != NULL) {
        svp_log_set_level(svp_log_level_parse(getenv("SVP_LOG_LEVEL")));
    }
    status = svp_rt_init(NULL, &rt);
    if (status != SVP_OK) {
        return svp_status_exit_code(status);
    }
    if ((opts.fail == RING_FAIL_KILL_AT_START) &&
        (svp_rt_rank(rt) == opts.fail_rank)) {
        svp_info("failure injection: killing myself before the comm is up");
        raise(SIGKILL);
    }
    params.field_mask = SVP_COMM_PARAM_FIELD_JOB_ID | SVP_COMM_PARAM_FIELD_TRANSPORT;
    params.job_id     = 42;
    params.transport  = "posix,self";
    status            = svp_comm_create(rt, &params, &comm);
    if (status != SVP_OK) {
        goto out_abort;
    }

    desc.tensors[0] =
        (svp_comm_tensor_desc_t){.dtype = 1,
                                 .ndim  = 1,
                                 .shape = {(int64_t)(opts.bytes / sizeof(float))},
                                 .bytes =
                                     opts.bytes / sizeof(float) * sizeof(float)};
    status = svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &in);
    if (status == SVP_OK) {
        status =
            svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &out);
    }
    t0 = svp_clock_now();
    if (status == SVP_OK) {
        status = ring_run(rt, comm, &opts, in, out);
    }
    if (status == SVP_OK) {
        /* nobody closes endpoints while a neighbour may still be sending */
        status = svp_rt_fence_final(rt);
    }
    if (status == SVP_OK) {
        /* the hops of a sample follow each other: samples * ranks hops */
        printf("comm_ring: rank %d ok (%d samples of %zu bytes in %.3f s, "
               "%.2f GB/s per hop)\n",
               svp_rt_rank(rt), opts.samples, opts.bytes, svp_clock_now() - t0,
               (double)opts.samples * svp_rt_size(rt) * opts.bytes /
                   (svp_clock_now() - t0) / 1e9);
        fflush(stdout);
    }
    svp_comm_destroy(comm);
    svp_comm_frame_destroy(out);
    svp_comm_frame_destroy(in);

out_abort:
    if ((status != SVP_OK) && !opts.no_abort) {
        snprintf(msg, sizeof(msg), "comm_ring rank %d failed: %s", svp_rt_rank(rt),
                 svp_status_string(status));
        svp_rt_abort(rt, svp_status_exit_code(status), msg);
    }
    svp_rt_cleanup(rt);
    return svp_status_exit_code(status);
}
