/*
 * One UNet call at any size, on any backend, with random inputs: the figure
 * bench/gpu-check.sh reports for SVD-XT (25 frames, 72x128 latents, batch
 * 2), and the arena size the planner's memory model is checked against.
 *
 *   bench_unet_call -m MODEL_DIR [-B backend] [-b batch] [-f frames]
 *                   [-H latent_h] [-W latent_w] [-s seq] [-r runs]
 *                   [-t threads] [-P peak_tflops] [-d dtype]
 *
 * -d names the dtype the matrix weights are held in (f32, bf16, f16).  A
 * backend that cannot hold them refuses (exit 3) with a message saying so,
 * never runs as f32 instead.
 *
 * Prints "key: value" lines (one warm-up call, then the median of runs):
 * backend, shape, load_s (svp_unet_create), median_s, min_s, max_s, tflop
 * (2 x the counted MACs, svp_unet_macs), tflops_achieved, mfu (with -P), the arena's figures
 * (weights, reserved, peak live, backend allocations during the timed
 * calls, which the memory plan keeps at 0).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "bench_util.h"
#include "common/clock.h"
#include "model/unet.h"
#include "ops/ops.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A backend buffer of n values in [-1, 1) from a fixed sequence. */
static float *bench_random(svp_ops_h ops, size_t n, unsigned *seed)
{
    float *host = malloc(n * sizeof(float)), *buf;
    size_t i;

    if (host == NULL || svp_ops_alloc(ops, n, &buf) != SVP_OK) {
        fprintf(stderr, "bench_unet_call: cannot allocate %zu floats\n", n);
        exit(1);
    }
    for (i = 0; i < n; i++) {
        *seed   = *seed * 1664525u + 1013904223u;
        host[i] = (float)(*seed >> 8) / (float)(1u << 23) - 1.0f;
    }
    if (svp_ops_upload(ops, buf, host, n) != SVP_OK) {
        exit(1);
    }
    free(host);
    return buf;
}

int main(int argc, char **argv)
{
    const char              *model = NULL, *dtype = "f32", *backend = "cpu";
    svp_ops_params_t         op = {0};
    int                      b = 2, f = 25, h = 72, w = 128, seq = 1;
    int                      runs        = 5, c, i;
    double                   peak_tflops = 0, *times, median, tflop, load_s;
    unsigned                 seed        = 1;
    svp_ops_h                ops;
    svp_unet_h               unet;
    const svp_unet_config_t *cfg;
    svp_ops_mem_stats_t      m0, m1, m2;
    size_t                   planned = 0;
    float                   *sample, *ehs, *out, t[64], ids[64 * 3];

    /* the BLAS kernels this CPU executes best, before argv is parsed */
    svp_ops_blas_choose(argv);
    while ((c = getopt(argc, argv, "m:B:b:f:H:W:s:r:t:P:d:")) != -1) {
        switch (c) {
        case 'm':
            model = optarg;
            break;
        case 'B':
            backend = optarg;
            break;
        case 'b':
            b = atoi(optarg);
            break;
        case 'f':
            f = atoi(optarg);
            break;
        case 'H':
            h = atoi(optarg);
            break;
        case 'W':
            w = atoi(optarg);
            break;
        case 's':
            seq = atoi(optarg);
            break;
        case 'r':
            runs = atoi(optarg);
            break;
        case 't':
            op.threads = atoi(optarg);
            break;
        case 'P':
            peak_tflops = atof(optarg);
            break;
        case 'd':
            dtype = optarg;
            break;
        default:
            model  = NULL;
            optind = argc;
            break;
        }
    }
    if (model == NULL || b < 1 || b > 64 || f < 1 || h < 1 || w < 1 || seq < 1 ||
        runs < 1) {
        fprintf(stderr, "usage: bench_unet_call -m MODEL_DIR [-B cpu|cuda] "
                        "[-b batch] [-f frames] [-H latent_h] [-W latent_w] "
                        "[-s seq] [-r runs] [-t threads] [-P peak_tflops]\n");
        return 2;
    }
    if (svp_ops_backend_parse(backend, &op.backend) != SVP_OK) {
        return 3;
    }
    /* an unknown name is a dtype no handle holds: svp_ops_create() says so */
    op.dtype = (svp_dtype_parse_short(dtype) >= 0)
                   ? (svp_dtype_t)svp_dtype_parse_short(dtype)
                   : SVP_DTYPE_LAST;
    switch (svp_ops_create(&op, &ops)) {
    case SVP_OK:
        break;
    case SVP_ERR_UNSUPPORTED:
        fprintf(stderr,
                "bench_unet_call: the %s backend cannot hold weights "
                "in %s\n",
                backend, dtype);
        return 3;
    default:
        return 1;
    }
    load_s = svp_clock_now();
    if (svp_unet_create(ops, model, NULL, &unet) != SVP_OK) {
        fprintf(stderr, "bench_unet_call: cannot load %s\n", model);
        return 1;
    }
    load_s = svp_clock_now() - load_s;
    cfg    = svp_unet_config(unet);
    sample = bench_random(ops, (size_t)b * f * cfg->in_channels * h * w, &seed);
    ehs    = bench_random(ops, (size_t)b * seq * cfg->cross_dim[0], &seed);
    if (svp_ops_alloc(ops, (size_t)b * f * cfg->out_channels * h * w, &out) !=
        SVP_OK) {
        return 1;
    }
    for (i = 0; i < b; i++) {
        t[i]           = 0.7f;
        ids[3 * i]     = 6.0f; /* fps - 1, motion bucket, noise aug */
        ids[3 * i + 1] = 127.0f;
        ids[3 * i + 2] = 0.02f;
    }
    svp_ops_mem_stats(ops, &m0); /* weights and inputs */
    times = calloc(runs, sizeof(double));
    for (i = -1; i < runs; i++) {
        double t0 = svp_clock_now();
        float  probe;

        if (svp_unet_forward(unet, b, f, h, w, sample, t, ehs, seq, ids, out) !=
                SVP_OK ||
            svp_ops_download(ops, &probe, out, 1) != SVP_OK) { /* waits */
            fprintf(stderr, "bench_unet_call: forward failed\n");
            return 1;
        }
        if (i < 0) {
            svp_ops_mem_stats(ops, &m1); /* the arena, sized */
        } else {
            times[i] = svp_clock_now() - t0;
        }
    }
    svp_ops_mem_stats(ops, &m2);
    bench_sort_times(times, runs);
    median = times[runs / 2];
    tflop  = 2.0 * svp_unet_macs(cfg, b, f, h, w, seq) / 1e12;

    printf("backend: %s\n", svp_ops_backend(ops));
    printf("dtype: %s\n", dtype);
    bench_print_kernels("kernels: ");
    printf("shape: batch %d, frames %d, latent %dx%d, seq %d\n", b, f, h, w, seq);
    printf("runs: %d\n", runs);
    printf("load_s: %.3f\n", load_s);
    printf("median_s: %.4f\n", median);
    printf("min_s: %.4f\n", times[0]);
    printf("max_s: %.4f\n", times[runs - 1]);
    printf("tflop: %.4f\n", tflop);
    printf("tflops_achieved: %.2f\n", tflop / median);
    if (peak_tflops > 0) {
        printf("mfu: %.3f\n", tflop / median / peak_tflops);
    }
    printf("weights_and_inputs_bytes: %zu\n", m0.live_bytes);
    printf("matrix_weight_bytes: %zu\n", svp_ops_weights_bytes(ops));
    printf("arena_reserved_bytes: %zu\n", m1.reserved_bytes);
    printf("arena_peak_live_bytes: %zu\n", m1.peak_live_bytes);
    /* the activations' slab, and what svdlaunch plan counts for them */
    printf("arena_slab_bytes: %zu\n", m1.slab_bytes);
    printf("arena_workspace_bytes: %zu\n", m1.workspace_bytes);
    if (svp_unet_plan_bytes(cfg, b, f, h, w, seq, &planned) == SVP_OK) {
        printf("planned_activation_bytes: %zu\n", planned);
    }
    printf("backend_allocs_after_warmup: %llu\n",
           (unsigned long long)(m2.backend_allocs - m1.backend_allocs));

    free(times);
    svp_ops_free(ops, sample);
    svp_ops_free(ops, ehs);
    svp_ops_free(ops, out);
    svp_unet_destroy(unet);
    svp_ops_destroy(ops);
    return 0;
}
