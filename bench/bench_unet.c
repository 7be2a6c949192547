/*
 * UNet forward throughput on the unet_small golden case (the real 4-level
 * SVD topology at reduced width: B=2, F=4, 16x24 latents).
 *
 *   bench_unet [-r N] [-t N] [-d f32|bf16|f16] [MODEL_DIR IO.safetensors]
 *
 * Prints the median wall time of N forwards (after one warm-up), peak RSS,
 * achieved GFLOP/s (2 x the reference's MAC count, svp_unet_macs) against a
 * measured OpenBLAS sgemm peak on this machine, the output's error against
 * the golden output (so a speed-up that breaks the numbers shows), and the
 * comparison to the target: diffusers 0.42 on PyTorch 2.15 CPU with 2
 * threads takes about 0.12-0.17 s for this call.  bench/bench-unet.sh (make
 * bench-unet) runs the peer itself on the same model and inputs when given
 * PEER_PYTHON, and prints the ratio.
 *
 *   -k DIR   write the seeded random weights into DIR and keep them (for the
 *            peer to load the same model); without golden weights only
 *
 * The golden unet_small weights of this topology are in the larger
 * reference set only: the compact set's unet_small is a narrower model
 * (tests/data/README.md).  Without them the benchmark runs the same
 * topology and inputs (the compact set's bench_unet_small: config and
 * inputs) with seeded random weights: the timing holds, the error against
 * diffusers is not measured.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "bench_util.h"
#include "common/clock.h"
#include "common/file.h"
#include "model/svd_init.h"
#include "model/unet.h"
#include "tensor/safetensors.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define BENCH_TARGET_LO 0.12
#define BENCH_TARGET_HI 0.17

/*
 * Best of 10 square products of size n through the backend's linear op (the
 * same gemm path and thread count as the UNet), in GFLOP/s.
 */
static double bench_sgemm_peak(svp_ops_h ops, int n)
{
    float *a, *b, *c;
    double best = 0.0, t;
    int    i;

    if (svp_ops_alloc(ops, (size_t)n * n, &a) != SVP_OK ||
        svp_ops_alloc(ops, (size_t)n * n, &b) != SVP_OK ||
        svp_ops_alloc(ops, (size_t)n * n, &c) != SVP_OK) {
        exit(1);
    }
    for (i = 0; i < n * n; i++) {
        a[i] = (float)(i % 7) * 0.1f;
        b[i] = (float)(i % 5) * 0.1f;
    }
    for (i = 0; i < 11; i++) {
        t = svp_clock_now();
        if (svp_ops_linear(ops, n, n, n, a, b, NULL, 0, c) != SVP_OK) {
            exit(1);
        }
        t = svp_clock_now() - t;
        if (i > 0) { /* the first call pays thread and page setup */
            best = fmax(best, 2.0 * n * n * (double)n / t / 1e9);
        }
    }
    svp_ops_free(ops, a);
    svp_ops_free(ops, b);
    svp_ops_free(ops, c);
    return best;
}

/*
 * Whether golden/unet_small holds the benchmark's model: its weights, and
 * the config of bench_unet_small where the set has one (the compact set's
 * unet_small is narrower than the benchmark's topology).
 */
static int bench_golden_is_model(const char *golden)
{
    char        path[4096];
    struct stat sb;
    json_t     *a, *b;
    int         same;

    snprintf(path, sizeof(path), "%s/unet_small/diffusion_pytorch_model.safetensors",
             golden);
    if (stat(path, &sb) != 0) {
        return 0;
    }
    snprintf(path, sizeof(path), "%s/bench_unet_small/config.json", golden);
    if (stat(path, &sb) != 0) {
        return 1;
    }
    b = json_load_file(path, 0, NULL);
    snprintf(path, sizeof(path), "%s/unet_small/config.json", golden);
    a    = json_load_file(path, 0, NULL);
    same = a != NULL && b != NULL && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return same;
}

static svp_tensor_t *bench_load(svp_safetensors_h st, const char *name)
{
    svp_tensor_t *t;

    if (svp_safetensors_load(st, name, SVP_DTYPE_F32, &t) != SVP_OK) {
        exit(1);
    }
    return t;
}

int main(int argc, char **argv)
{
    const char       *golden = getenv("SVP_GOLDEN_DIR");
    char              model[2048], io_path[4096], path[4096], tmp[2048] = "";
    const char       *keep = NULL;
    char              label[4200];
    int               runs = 7, threads = 0, dtype = SVP_DTYPE_F32, c, i;
    svp_ops_params_t  op;
    svp_ops_h         ops;
    svp_unet_h        unet;
    svp_safetensors_h st;
    svp_tensor_t     *sample, *ts, *ehs, *ids, *ref;
    float            *out;
    double           *times, median, gflops, peak, max_err = 0, max_ref = 0;
    int64_t           n, macs;
    struct rusage     ru;

    /* the BLAS kernels this CPU executes best, before argv is parsed */
    svp_ops_blas_choose(argv);
    while ((c = getopt(argc, argv, "r:t:k:d:")) != -1) {
        switch (c) {
        case 'r':
            runs = atoi(optarg);
            break;
        case 't':
            threads = atoi(optarg);
            break;
        case 'k':
            keep = optarg;
            break;
        case 'd':
            dtype = svp_dtype_parse_short(optarg);
            if (dtype < 0 || !svp_dtype_is_weight((svp_dtype_t)dtype)) {
                fprintf(stderr, "bench_unet: -d %s: not f32, bf16 or f16\n", optarg);
                return 2;
            }
            break;
        default:
            fprintf(stderr, "usage: bench_unet [-r runs] [-t threads] [-d dtype] "
                            "[-k DIR] [MODEL_DIR IO.safetensors]\n");
            return 2;
        }
    }
    if (argc - optind == 2) {
        snprintf(model, sizeof(model), "%s", argv[optind]);
        snprintf(io_path, sizeof(io_path), "%s", argv[optind + 1]);
    } else {
        if (golden == NULL) {
            golden = "../shared/golden";
        }
        snprintf(model, sizeof(model), "%s/unet_small", golden);
        snprintf(io_path, sizeof(io_path), "%s/io.safetensors", model);
        if (!bench_golden_is_model(golden)) {
            /* the compact set: same config and inputs, random weights */
            snprintf(path, sizeof(path), "%s/bench_unet_small/config.json", golden);
            snprintf(io_path, sizeof(io_path), "%s/bench_unet_small/io.safetensors",
                     golden);
            if (keep != NULL) {
                snprintf(tmp, sizeof(tmp), "%s", keep);
            } else {
                snprintf(tmp, sizeof(tmp), "/tmp/svp_bench_unet_XXXXXX");
            }
            if ((keep != NULL ? mkdir(tmp, 0755) != 0 && errno != EEXIST
                              : mkdtemp(tmp) == NULL) ||
                svp_model_write_random(path, 1, tmp) != SVP_OK) {
                fprintf(stderr,
                        "bench_unet: cannot write random weights for "
                        "%s\n",
                        path);
                return 1;
            }
            snprintf(model, sizeof(model), "%s", tmp);
        }
    }
    snprintf(label, sizeof(label), "%s%s", tmp[0] ? path : model,
             tmp[0] ? " with seeded random weights" : "");
    if (runs < 1) {
        runs = 1;
    }

    op = (svp_ops_params_t){.threads = threads, .dtype = (svp_dtype_t)dtype};
    if (svp_ops_create(&op, &ops) != SVP_OK ||
        svp_unet_create(ops, model, NULL, &unet) != SVP_OK ||
        svp_safetensors_open(io_path, &st) != SVP_OK) {
        fprintf(stderr, "bench_unet: cannot load %s / %s\n", model, io_path);
        return 1;
    }
    sample = bench_load(st, "sample");
    ts     = bench_load(st, "timestep");
    ehs    = bench_load(st, "encoder_hidden_states");
    ids    = bench_load(st, "added_time_ids");
    ref    = (tmp[0] == '\0') ? bench_load(st, "out") : NULL;
    n      = svp_tensor_numel(sample) / sample->shape[2] *
        svp_unet_config(unet)->out_channels;
    out   = malloc(n * sizeof(float));
    times = calloc(runs, sizeof(double));

    for (i = -1; i < runs; i++) {
        double t = svp_clock_now();
        if (svp_unet_forward(unet, (int)sample->shape[0], (int)sample->shape[1],
                             (int)sample->shape[3], (int)sample->shape[4],
                             sample->data, ts->data, ehs->data, (int)ehs->shape[1],
                             ids->data, out) != SVP_OK) {
            fprintf(stderr, "bench_unet: forward failed\n");
            return 1;
        }
        if (i >= 0) { /* run -1 warms caches and thread pools */
            times[i] = svp_clock_now() - t;
        }
    }
    bench_sort_times(times, runs);
    median = times[runs / 2];
    for (i = 0; ref != NULL && i < n; i++) {
        max_ref = fmax(max_ref, fabs(((float *)ref->data)[i]));
        max_err = fmax(max_err, fabs(out[i] - ((float *)ref->data)[i]));
    }
    macs   = svp_unet_macs(svp_unet_config(unet), (int)sample->shape[0],
                           (int)sample->shape[1], (int)sample->shape[3],
                           (int)sample->shape[4], (int)ehs->shape[1]);
    gflops = 2.0 * macs / median / 1e9;
    peak   = bench_sgemm_peak(ops, 1024);
    getrusage(RUSAGE_SELF, &ru);

    printf("model          : %s\ninputs         : %s\n", model, io_path);
    printf("unet forward   : %s, input [%ld,%ld,%ld,%ld,%ld], %d threads\n", label,
           (long)sample->shape[0], (long)sample->shape[1], (long)sample->shape[2],
           (long)sample->shape[3], (long)sample->shape[4], svp_ops_threads(ops));
    bench_print_kernels("kernels        : ");
    printf("products       : %s weights, products %s%s\n", svp_ops_dtype(ops),
           svp_ops_product_units(ops) != NULL ? "in bf16 on " : "in f32",
           svp_ops_product_units(ops) != NULL ? svp_ops_product_units(ops) : "");
    printf("time           : median %.4f s of %d runs (min %.4f, max %.4f)\n",
           median, runs, times[0], times[runs - 1]);
    printf("work           : %.3f GMAC (reference count)\n", macs / 1e9);
    printf("throughput     : %.1f GFLOP/s = %.0f%% of sgemm peak %.1f GFLOP/s "
           "(1024^3, same threads)\n",
           gflops, 100.0 * gflops / peak, peak);
    printf("peak RSS       : %.1f MiB\n", ru.ru_maxrss / 1024.0);
    if (ref != NULL) {
        printf("error vs golden: %.3g relative (tolerance %s)\n", max_err / max_ref,
               dtype == SVP_DTYPE_F32 ? "1e-5"
                                      : "of the dtype's rounding: doc/DTYPES.md");
    } else {
        printf("error vs golden: not measured: seeded random weights (golden "
               "weights of this topology are in the larger reference set)\n");
    }
    printf("target         : diffusers on PyTorch CPU, 2 threads: %.2f-%.2f s; "
           "this run is %s\n",
           BENCH_TARGET_LO, BENCH_TARGET_HI,
           median < BENCH_TARGET_LO    ? "faster"
           : median <= BENCH_TARGET_HI ? "within the range"
                                       : "slower");

    free(out);
    free(times);
    svp_tensor_destroy(sample);
    svp_tensor_destroy(ts);
    svp_tensor_destroy(ehs);
    svp_tensor_destroy(ids);
    svp_tensor_destroy(ref);
    svp_safetensors_close(st);
    svp_unet_destroy(unet);
    svp_ops_destroy(ops);
    if (tmp[0] != '\0' && keep == NULL) {
        svp_rmtree(tmp);
    }
    return 0;
}
