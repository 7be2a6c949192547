/*
 * One denoising step of one sample on a guidance pair against one rank, on
 * the CPU: the wall time the pair (pipeline.guidance_parallel: 2) saves.
 *
 *   mpirun -n 2 bench_pair [-m MODEL_DIR] [-f frames] [-H h] [-W w] [-r runs]
 *
 * Runs on exactly 2 ranks, each with the backend's threads (SVP_THREADS; 1
 * for the figure of one thread per rank).  Default model: the golden
 * unet_small (the SVD UNet's 4-level topology at reduced width) at its own
 * latent, 4 frames of 16x24.  Three figures, each the median of runs after
 * a warm-up:
 *   batch2  a step on one rank as the SVD stage runs it: one UNet call of
 *           the guidance batch of 2, then the guidance combine (rank 0
 *           alone);
 *   one     the same as two batch-1 calls, one per guidance half (what the
 *           stage ran before 0.4: the cost of bit-identical pairs);
 *   pair    the same step on the pair: each rank its half, the halves
 *           exchanged through the comm layer (one tagged message each way,
 *           as pipe.c does), the combine on both.
 * The last line is the ratio pair / one rank's step (the target is <= 0.6);
 * the two batch-1 calls are set against the batch (what computing per half,
 * for pairs bit-identical to one rank, would cost every one-rank step).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "bench_util.h"
#include "comm/comm.h"
#include "common/clock.h"
#include "common/log.h"
#include "model/unet.h"
#include "ops/ops.h"
#include "rt/rt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_KIND_HALF 4 /* the pipeline's HALF message kind */

typedef struct {
    svp_unet_h unet;
    int        f, h, w;
    float     *in, *ehs, *out, t[2], ids[6];
    int64_t    n; /* values of one half's prediction */
} bench_model_t;

static svp_status_t bench_call(bench_model_t *m, int batch, int half)
{
    const svp_unet_config_t *cfg = svp_unet_config(m->unet);
    int64_t                  in1 = (int64_t)m->f * cfg->in_channels * m->h * m->w;

    return svp_unet_forward(m->unet, batch, m->f, m->h, m->w, m->in + half * in1,
                            m->t + half, m->ehs + (int64_t)half * cfg->cross_dim[0],
                            1, m->ids + 3 * half, m->out + half * m->n);
}

/* The guidance combine of the two halves, as a step does it (its cost). */
static void bench_combine(bench_model_t *m)
{
    for (int64_t i = 0; i < m->n; ++i) {
        m->out[i] = m->out[i] + 2.5f * (m->out[m->n + i] - m->out[i]);
    }
}

static double bench_median(double *t, int runs)
{
    bench_sort_times(t, runs);
    return t[runs / 2];
}

int main(int argc, char **argv)
{
    const char           *golden = getenv("SVP_GOLDEN_DIR");
    char                  model[2048];
    svp_ops_params_t      op  = {0};
    svp_ops_h             ops = NULL;
    svp_rt_h              rt;
    svp_comm_h            comm  = NULL;
    svp_comm_params_t     cp    = {0};
    svp_comm_frame_desc_t desc  = {.num_tensors = 1};
    svp_comm_frame_h      fsend = NULL, frecv = NULL;
    bench_model_t         m = {.f = 4, .h = 16, .w = 24};
    svp_status_t          status;
    double               *times, t_b2 = 0, t_one = 0, t_pair = 0, t_x = 0;
    int                   runs = 7, c, i, rank, k;

    /* the BLAS kernels this CPU executes best, before argv is parsed */
    svp_ops_blas_choose(argv);
    snprintf(model, sizeof(model), "%s/unet_small",
             golden ? golden : "../shared/golden");
    while ((c = getopt(argc, argv, "m:f:H:W:r:")) != -1) {
        switch (c) {
        case 'm':
            snprintf(model, sizeof(model), "%s", optarg);
            break;
        case 'f':
            m.f = atoi(optarg);
            break;
        case 'H':
            m.h = atoi(optarg);
            break;
        case 'W':
            m.w = atoi(optarg);
            break;
        case 'r':
            runs = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: bench_pair [-m MODEL_DIR] [-f frames] [-H h] "
                            "[-W w] [-r runs]\n");
            return 2;
        }
    }
    runs   = (runs < 1) ? 1 : runs;
    status = svp_rt_init(NULL, &rt);
    if (status != SVP_OK) {
        return svp_status_exit_code(status);
    }
    rank = svp_rt_rank(rt);
    if (svp_rt_size(rt) != 2) {
        svp_error("bench_pair runs on exactly 2 ranks, not %d", svp_rt_size(rt));
        status = SVP_ERR_USAGE;
        goto out;
    }
    times  = calloc((size_t)runs, sizeof(double));
    status = (times == NULL) ? SVP_ERR_NO_MEMORY : svp_ops_create(&op, &ops);
    if (status == SVP_OK) {
        status = svp_unet_create(ops, model, NULL, &m.unet);
    }
    if (status == SVP_OK) {
        const svp_unet_config_t *cfg = svp_unet_config(m.unet);
        int64_t                  nin = 2LL * m.f * cfg->in_channels * m.h * m.w;

        m.n    = (int64_t)m.f * cfg->out_channels * m.h * m.w;
        m.in   = calloc((size_t)nin, sizeof(float));
        m.ehs  = calloc(2 * (size_t)cfg->cross_dim[0], sizeof(float));
        m.out  = calloc(2 * (size_t)m.n, sizeof(float));
        status = (m.in && m.ehs && m.out) ? SVP_OK : SVP_ERR_NO_MEMORY;
        for (i = 0; status == SVP_OK && i < nin; ++i) {
            m.in[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
        }
        for (i = 0; status == SVP_OK && i < cfg->cross_dim[0]; ++i) {
            m.ehs[cfg->cross_dim[0] + i] = (float)(i % 7) / 7.0f;
        }
        for (i = 0; i < 2; ++i) {
            m.t[i]           = 0.7f;
            m.ids[3 * i]     = 6.0f;
            m.ids[3 * i + 1] = 127.0f;
            m.ids[3 * i + 2] = 0.02f;
        }
    }
    if (status == SVP_OK) {
        cp.field_mask = SVP_COMM_PARAM_FIELD_DEADLINE;
        cp.deadline   = 600.0;
        status        = svp_comm_create(rt, &cp, &comm);
    }
    desc.tensors[0] = (svp_comm_tensor_desc_t){.dtype = 1,
                                               .ndim  = 1,
                                               .shape = {m.n},
                                               .bytes = (size_t)m.n * sizeof(float)};
    if (status == SVP_OK) {
        status =
            svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &fsend);
    }
    if (status == SVP_OK) {
        status =
            svp_comm_frame_create(comm, &desc, NULL, 0, SVP_COMM_MEM_HOST, &frecv);
    }
    if (status == SVP_OK) {
        status = svp_rt_fence(rt);
    }
    /* rank 0 alone (rank 1 waits at the fence): the batch of 2, one rank */
    for (k = 0; rank == 0 && k < 2 && status == SVP_OK; ++k) {
        for (i = -1; i < runs && status == SVP_OK; ++i) {
            double t0 = svp_clock_now();

            if (k == 0) {
                status = bench_call(&m, 2, 0);
                bench_combine(&m);
            } else {
                status = bench_call(&m, 1, 0);
                if (status == SVP_OK) {
                    status = bench_call(&m, 1, 1);
                }
                bench_combine(&m);
            }
            if (i >= 0) {
                times[i] = svp_clock_now() - t0;
            }
        }
        if (k == 0) {
            t_b2 = bench_median(times, runs);
        } else {
            t_one = bench_median(times, runs);
        }
    }
    /* rank 1 waits for rank 0's word through the comm, whose deadline (600
     * s) covers rank 0's timings at SVD-XT's 14 frames; the runtime's fence
     * is bounded by its start-up deadline */
    if (status == SVP_OK) {
        svp_comm_req_h go = NULL;

        status = (rank == 0)
                     ? svp_comm_isend(comm, 1, BENCH_KIND_HALF, 1, 0, fsend, &go)
                     : svp_comm_irecv(comm, 0, BENCH_KIND_HALF, 1, 0, frecv, &go);
        if (status == SVP_OK) {
            status = svp_comm_wait(comm, go, -1.0);
        }
    }
    /* the pair: each rank its half, one message each way */
    for (i = -1; i < runs && status == SVP_OK; ++i) {
        double         t0 = svp_clock_now(), tx;
        svp_comm_req_h rr = NULL, sr = NULL;

        status = bench_call(&m, 1, rank);
        tx     = svp_clock_now();
        if (status == SVP_OK) {
            memcpy(svp_comm_frame_data(fsend, 0), m.out + rank * m.n,
                   (size_t)m.n * sizeof(float));
            status = svp_comm_irecv(comm, 1 - rank, BENCH_KIND_HALF, 0,
                                    (unsigned)(i + 1), frecv, &rr);
        }
        if (status == SVP_OK) {
            status = svp_comm_isend(comm, 1 - rank, BENCH_KIND_HALF, 0,
                                    (unsigned)(i + 1), fsend, &sr);
        }
        if (status == SVP_OK) {
            status = svp_comm_wait(comm, rr, -1.0);
        }
        if (status == SVP_OK) {
            status = svp_comm_wait(comm, sr, -1.0);
        }
        if (status == SVP_OK) {
            memcpy(m.out + (1 - rank) * m.n, svp_comm_frame_data(frecv, 0),
                   (size_t)m.n * sizeof(float));
            bench_combine(&m);
        }
        if (i >= 0) {
            times[i] = svp_clock_now() - t0;
            t_x += svp_clock_now() - tx;
        }
    }
    if (status == SVP_OK) {
        t_pair = bench_median(times, runs);
    }
    if (status == SVP_OK && rank == 0) {
        printf("bench_pair: %s, latent [%d, 4, %d, %d], %d thread%s per rank, "
               "median of %d\n",
               model, m.f, m.h, m.w, svp_ops_threads(ops),
               svp_ops_threads(ops) > 1 ? "s" : "", runs);
        printf("one rank step    %.4f s (the guidance batch in one call)\n", t_b2);
        printf("two batch-1      %.4f s (%.2fx the batch: a call per half, as pairs "
               "compute)\n",
               t_one, t_b2 > 0 ? t_one / t_b2 : 0);
        printf("pair step        %.4f s (exchange and combine %.4f s, mean)\n",
               t_pair, t_x / runs);
        printf("pair / one rank  %.2f (target <= 0.6)\n",
               t_b2 > 0 ? t_pair / t_b2 : 0);
        fflush(stdout);
    }
    if (status == SVP_OK) {
        status = svp_rt_fence_final(rt);
    }
    svp_comm_destroy(comm);
    svp_comm_frame_destroy(fsend);
    svp_comm_frame_destroy(frecv);
    free(m.in);
    free(m.ehs);
    free(m.out);
    free(times);
    if (m.unet != NULL) {
        svp_unet_destroy(m.unet);
    }
    svp_ops_destroy(ops);
out:
    if (status != SVP_OK) {
        svp_rt_abort(rt, svp_status_exit_code(status), "bench_pair failed");
    }
    svp_rt_cleanup(rt);
    return svp_status_exit_code(status);
}
