/*
 * bench_comm: hand-off throughput of framed messages between two ranks.
 *
 *   srun --mpi=pmix -n 2 bench_comm [--bytes B] [--iters N] [--warmup W]
 *                                   [--window K] [--checksum 0|1]
 *                                   [--transport TLS] [--spin SEC]
 *                                   [--device cuda --gpu-direct auto|on|off]
 *
 * Rank 0 sends N frames of one B-byte tensor to rank 1, at most K in flight;
 * rank 1 keeps K receives posted.  The same pattern as `ucx_perftest -t
 * tag_bw -O K`, so bench_comm.sh can put the two side by side: the
 * difference is what framing, header checks, tag discipline and sleeping
 * waits cost.  Rank 1 prints one line:
 *
 *   bench_comm bytes=B iters=N window=K checksum=C spin=P seconds=S GBps=X
 *
 * (GB = 1e9 bytes of tensor payload; the 640-byte header is not counted.)
 *
 * --device cuda: the frames are device memory (the CUDA module's), sent on
 * the path comm.gpu_direct picks (src/comm/comm_path.h); the sender fills
 * its frames with a known pattern and the receiver checks, after the last
 * frame, that its device frame holds exactly those bytes, adding
 * "path=P identical=0|1" to its line.
 */
#include "comm/comm.h"
#include "ops/ops.h"
#include "ops/ops_module.h"
#include "common/clock.h"
#include "common/log.h"
#include "rt/rt.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_WINDOW 16

typedef struct {
    size_t                bytes;
    int                   iters, warmup, window, checksum;
    double                spin;
    const char           *transport;
    const char           *device; /* NULL: host frames; "cuda" */
    svp_comm_gpu_direct_t gpu_direct;
} bench_opts_t;

/* The byte at offset i of every frame the sender fills. */
static unsigned char bench_pattern(size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

static svp_status_t bench_sender(svp_comm_h comm, svp_comm_frame_h *frames,
                                 const bench_opts_t *opts, int total)
{
    svp_comm_req_h reqs[BENCH_MAX_WINDOW] = {NULL};
    svp_status_t   status                 = SVP_OK;
    int            i, slot;

    for (i = 0; (i < total) && (status == SVP_OK); ++i) {
        slot = i % opts->window;
        if (reqs[slot] != NULL) {
            status     = svp_comm_wait(comm, reqs[slot], -1);
            reqs[slot] = NULL;
            if (status != SVP_OK) {
                break;
            }
        }
        status =
            svp_comm_isend(comm, 1, SVP_COMM_KIND_LATENT, i % SVP_COMM_MAX_SAMPLE, 1,
                           frames[slot], &reqs[slot]);
    }
    for (slot = 0; slot < opts->window; ++slot) {
        if (reqs[slot] != NULL) {
            svp_status_t st = svp_comm_wait(comm, reqs[slot], -1);

            status = (status == SVP_OK) ? st : status;
        }
    }
    return status;
}

static svp_status_t bench_receiver(svp_comm_h comm, svp_comm_frame_h *frames,
                                   const bench_opts_t *opts, int total,
                                   double *t_start_p)
{
    svp_comm_req_h reqs[BENCH_MAX_WINDOW] = {NULL};
    svp_status_t   status                 = SVP_OK;
    int            i, slot;

    for (i = 0; (i < opts->window) && (i < total) && (status == SVP_OK); ++i) {
        status =
            svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT, i, 1, frames[i], &reqs[i]);
    }
    for (i = 0; (i < total) && (status == SVP_OK); ++i) {
        slot       = i % opts->window;
        status     = svp_comm_wait(comm, reqs[slot], -1);
        reqs[slot] = NULL;
        if (i + 1 == opts->warmup) {
            *t_start_p = svp_clock_now();
        }
        if ((status == SVP_OK) && (i + opts->window < total)) {
            status = svp_comm_irecv(comm, 0, SVP_COMM_KIND_LATENT,
                                    (i + opts->window) % SVP_COMM_MAX_SAMPLE, 1,
                                    frames[slot], &reqs[slot]);
        }
    }
    for (slot = 0; slot < opts->window; ++slot) {
        if (reqs[slot] != NULL) {
            svp_comm_cancel(comm, reqs[slot]);
        }
    }
    return status;
}

static int bench_parse(int argc, char **argv, bench_opts_t *opts)
{
    static const struct option longopts[] =
        {{"bytes", required_argument, NULL, 'b'},
         {"iters", required_argument, NULL, 'n'},
         {"warmup", required_argument, NULL, 'w'},
         {"window", required_argument, NULL, 'k'},
         {"checksum", required_argument, NULL, 'c'},
         {"transport", required_argument, NULL, 't'},
         {"spin", required_argument, NULL, 's'},
         {"device", required_argument, NULL, 'd'},
         {"gpu-direct", required_argument, NULL, 'g'},
         {NULL, 0, NULL, 0}};
    int c;

    *opts = (bench_opts_t){.bytes     = 2u << 20,
                           .iters     = 200,
                           .warmup    = 20,
                           .window    = 1,
                           .checksum  = 0,
                           .transport = ""};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            opts->bytes = strtoull(optarg, NULL, 0);
            break;
        case 'n':
            opts->iters = atoi(optarg);
            break;
        case 'w':
            opts->warmup = atoi(optarg);
            break;
        case 'k':
            opts->window = atoi(optarg);
            break;
        case 'c':
            opts->checksum = atoi(optarg);
            break;
        case 't':
            opts->transport = optarg;
            break;
        case 's':
            opts->spin = atof(optarg);
            break;
        case 'd':
            opts->device = optarg;
            break;
        case 'g':
            if (strcmp(optarg, "auto") == 0) {
                opts->gpu_direct = SVP_COMM_GPU_DIRECT_AUTO;
            } else if (strcmp(optarg, "on") == 0) {
                opts->gpu_direct = SVP_COMM_GPU_DIRECT_ON;
            } else if (strcmp(optarg, "off") == 0) {
                opts->gpu_direct = SVP_COMM_GPU_DIRECT_OFF;
            } else {
                return -1;
            }
            break;
        default:
            return -1;
        }
    }
    if ((opts->device != NULL) && (strcmp(opts->device, "cuda") != 0)) {
        fprintf(stderr, "bench_comm: --device takes cuda\n");
        return -1;
    }
    if ((opts->window < 1) || (opts->window > BENCH_MAX_WINDOW) ||
        (opts->iters < 1) || (opts->warmup < 1)) {
        fprintf(stderr,
                "bench_comm: need 1 <= window <= %d, iters >= 1, "
                "warmup >= 1\n",
                BENCH_MAX_WINDOW);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    svp_comm_frame_h        frames[BENCH_MAX_WINDOW] = {NULL};
    svp_comm_frame_desc_t   desc                     = {.num_tensors = 1};
    svp_comm_params_t       params;
    bench_opts_t            opts;
    svp_rt_h                rt;
    svp_comm_h              comm;
    svp_status_t            status;
    double                  t_start = 0, t_end;
    int                     i, total, identical = -1;
    svp_ops_params_t        op  = {.backend = SVP_OPS_BACKEND_CUDA};
    svp_ops_h               ops = NULL;
    const svp_ops_module_t *module;
    svp_devmem_t            devmem;
    svp_comm_path_t         path = SVP_COMM_PATH_HOST;
    unsigned char          *host = NULL;
    char                    perr[256];
    size_t                  b;

    if (bench_parse(argc, argv, &opts) != 0) {
        return SVP_EXIT_BAD_INPUT;
    }
    status = svp_rt_init(NULL, &rt);
    if (status != SVP_OK) {
        return svp_status_exit_code(status);
    }
    if (svp_rt_size(rt) != 2) {
        svp_error("bench_comm runs on exactly 2 ranks, not %d", svp_rt_size(rt));
        status = SVP_ERR_USAGE;
        goto out_cleanup_rt;
    }
    params = (svp_comm_params_t){
        .field_mask = SVP_COMM_PARAM_FIELD_TRANSPORT |
                      SVP_COMM_PARAM_FIELD_CHECKSUM | SVP_COMM_PARAM_FIELD_DEADLINE |
                      SVP_COMM_PARAM_FIELD_SPIN,
        .transport = opts.transport,
        .checksum  = opts.checksum,
        .deadline  = 60.0,
        .spin      = opts.spin,
    };
    if (opts.device != NULL) {
        /* the backend makes its device current; the module lends its memory */
        status = svp_ops_create(&op, &ops);
        if (status == SVP_OK) {
            status = svp_ops_module_load("cuda", &module);
        }
        if (status != SVP_OK) {
            goto out_abort;
        }
        devmem = *module->devmem;
        params.field_mask |= SVP_COMM_PARAM_FIELD_DEVICE;
        params.device     = &devmem;
        params.gpu_direct = opts.gpu_direct;
    }
    status = svp_comm_create(rt, &params, &comm);
    if (status != SVP_OK) {
        goto out_abort;
    }
    if (opts.device != NULL) {
        (void)svp_comm_path_select(opts.gpu_direct, 1, svp_comm_ucx_cuda(comm),
                                   &path, perr, sizeof(perr));
    }

    desc.tensors[0] = (svp_comm_tensor_desc_t){.dtype = 1,
                                               .ndim  = 1,
                                               .shape = {(int64_t)(opts.bytes / 4)},
                                               .bytes = opts.bytes};
    for (i = 0; (i < opts.window) && (status == SVP_OK); ++i) {
        status = svp_comm_frame_create(comm, &desc, NULL, 0,
                                       (opts.device != NULL) ? SVP_COMM_MEM_CUDA
                                                             : SVP_COMM_MEM_HOST,
                                       &frames[i]);
    }
    if ((status == SVP_OK) && (opts.device != NULL)) {
        host = malloc(opts.bytes);
        if (host == NULL) {
            status = SVP_ERR_NO_MEMORY;
        }
        for (b = 0; (host != NULL) && (b < opts.bytes); ++b) {
            host[b] = (svp_rt_rank(rt) == 0) ? bench_pattern(b) : 0;
        }
        for (i = 0; (i < opts.window) && (status == SVP_OK); ++i) {
            status = devmem.to_device(NULL, svp_comm_frame_data(frames[i], 0), host,
                                      opts.bytes);
        }
    }
    if (status == SVP_OK) {
        status = svp_rt_fence(rt);
    }

    total = opts.warmup + opts.iters;
    if (status == SVP_OK) {
        if (svp_rt_rank(rt) == 0) {
            status = bench_sender(comm, frames, &opts, total);
        } else {
            status = bench_receiver(comm, frames, &opts, total, &t_start);
            t_end  = svp_clock_now();
            if ((status == SVP_OK) && (opts.device != NULL)) {
                /* the last frame received, read back from the device */
                status    = devmem.to_host(NULL, host,
                                           svp_comm_frame_data(frames[(total - 1) %
                                                                   opts.window],
                                                               0),
                                           opts.bytes);
                identical = 1;
                for (b = 0; (status == SVP_OK) && (b < opts.bytes); ++b) {
                    if (host[b] != bench_pattern(b)) {
                        identical = 0;
                        break;
                    }
                }
            }
            if (status == SVP_OK) {
                printf("bench_comm bytes=%zu iters=%d window=%d checksum=%d "
                       "spin=%g seconds=%.4f GBps=%.3f",
                       opts.bytes, opts.iters, opts.window, opts.checksum, opts.spin,
                       t_end - t_start,
                       (double)opts.bytes * opts.iters / (t_end - t_start) / 1e9);
                if (opts.device != NULL) {
                    printf(" path=%s identical=%d", svp_comm_path_name(path),
                           identical);
                }
                printf("\n");
                fflush(stdout);
            }
        }
    }
    if (status == SVP_OK) {
        status = svp_rt_fence_final(rt);
    }
    svp_comm_destroy(comm);
    for (i = 0; i < opts.window; ++i) {
        svp_comm_frame_destroy(frames[i]);
    }
    free(host);
    if ((status == SVP_OK) && (identical == 0)) {
        svp_error("the received device frame differs from what was sent");
        status = SVP_ERR_MESSAGE;
    }

out_abort:
    if (status != SVP_OK) {
        svp_rt_abort(rt, svp_status_exit_code(status), "bench_comm failed");
    }
out_cleanup_rt:
    svp_ops_destroy(ops);
    svp_rt_cleanup(rt);
    return svp_status_exit_code(status);
}
