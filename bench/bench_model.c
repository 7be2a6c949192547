/*
 * A VAE decode or an image encode, timed on the inputs a peer wrote, with
 * the difference from the peer's output: the other two models of make
 * bench-models (bench/bench-models.sh, bench/peer_models.py).
 *
 *   bench_model vae|clip -m MODEL_DIR -i IO.safetensors [-r runs] [-t threads]
 *               [-p PROFILE.json]
 *
 * IO holds "in" (vae: latents [frames, C, h, w], already divided by the
 * scaling factor; clip: pixel_values [batch, 3, size, size]) and the peer's
 * "out".  Prints "key: value" lines: model, shape, load_s, median_s (after
 * one warm-up call), min_s, max_s, error_vs_peer (max|ours - peer| /
 * max|peer|).  -p profiles one more call after the timed ones and writes
 * its per-op times (the JSON of svp_range_profile_write()) to PROFILE.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "bench_util.h"
#include "common/clock.h"
#include "model/clip.h"
#include "model/vae.h"
#include "ops/ops_profile.h"
#include "tensor/safetensors.h"
#include "trace/range.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    svp_vae_h     vae;
    svp_clip_h    clip;
    svp_tensor_t *in;
    float        *out;
} bench_model_t;

static svp_status_t bench_model_call(bench_model_t *bm)
{
    const int64_t *s = bm->in->shape;

    if (bm->vae != NULL) {
        return svp_vae_decode(bm->vae, (int)s[0], (int)s[2], (int)s[3], 0,
                              bm->in->data, bm->out);
    }
    return svp_clip_encode(bm->clip, (int)s[0], bm->in->data, bm->out);
}

int main(int argc, char **argv)
{
    svp_ops_params_t  op    = {.backend = SVP_OPS_BACKEND_CPU};
    const char       *model = NULL, *io = NULL, *kind, *profile = NULL;
    bench_model_t     bm = {0};
    svp_safetensors_h st;
    svp_tensor_t     *ref;
    svp_ops_h         ops;
    double           *times, load_s, max_ref = 0, max_err = 0;
    int64_t           i, n;
    int               c, runs = 3, r;

    /* the BLAS kernels this CPU executes best, before argv is parsed */
    svp_ops_blas_choose(argv);
    while ((c = getopt(argc, argv, "m:i:r:t:p:")) != -1) {
        switch (c) {
        case 'm':
            model = optarg;
            break;
        case 'i':
            io = optarg;
            break;
        case 'r':
            runs = atoi(optarg);
            break;
        case 't':
            op.threads = atoi(optarg);
            break;
        case 'p':
            profile = optarg;
            break;
        default:
            model = NULL;
            break;
        }
    }
    kind = (optind < argc) ? argv[optind] : "";
    if (model == NULL || io == NULL || runs < 1 ||
        (strcmp(kind, "vae") != 0 && strcmp(kind, "clip") != 0)) {
        fprintf(stderr, "usage: bench_model vae|clip -m MODEL_DIR -i IO.safetensors "
                        "[-r runs] [-t threads] [-p PROFILE.json]\n");
        return 2;
    }
    if (svp_safetensors_open(io, &st) != SVP_OK ||
        svp_safetensors_load(st, "in", SVP_DTYPE_F32, &bm.in) != SVP_OK ||
        svp_safetensors_load(st, "out", SVP_DTYPE_F32, &ref) != SVP_OK) {
        fprintf(stderr, "bench_model: cannot read in and out from %s\n", io);
        return 1;
    }
    svp_safetensors_close(st);
    if (svp_ops_create(&op, &ops) != SVP_OK) {
        return 1;
    }
    load_s = svp_clock_now();
    if ((strcmp(kind, "vae") == 0)
            ? svp_vae_create(ops, model, NULL, &bm.vae) != SVP_OK
            : svp_clip_create(ops, model, NULL, &bm.clip) != SVP_OK) {
        fprintf(stderr, "bench_model: cannot load %s\n", model);
        return 1;
    }
    load_s = svp_clock_now() - load_s;
    n      = svp_tensor_numel(ref);
    bm.out = malloc(n * sizeof(float));
    times  = calloc(runs, sizeof(double));
    if (bm.out == NULL || times == NULL) {
        return 1;
    }
    for (r = -1; r < runs; r++) {
        double t0 = svp_clock_now();

        if (bench_model_call(&bm) != SVP_OK) {
            fprintf(stderr, "bench_model: the %s call failed\n", kind);
            return 1;
        }
        if (r >= 0) {
            times[r] = svp_clock_now() - t0;
        }
    }
    if (profile != NULL) {
        svp_status_t status = svp_ops_profile_enable(ops);

        if (status == SVP_OK) {
            svp_range_profile_reset();
            svp_range_profile_enable(1, svp_ops_profile_sync, ops);
            status = bench_model_call(&bm);
            svp_range_profile_enable(0, NULL, NULL);
            svp_ops_profile_disable(ops);
        }
        if (status != SVP_OK ||
            svp_range_profile_save(profile, json_pack("{s:s}", "kind",
                                                      "bench_model")) != SVP_OK) {
            fprintf(stderr, "bench_model: cannot profile the %s call\n", kind);
            return 1;
        }
    }
    bench_sort_times(times, runs);
    for (i = 0; i < n; i++) {
        const float *p = ref->data;

        max_ref = fmax(max_ref, fabs(p[i]));
        if (!(fabs((double)bm.out[i] - p[i]) <= max_err)) {
            max_err = isnan(bm.out[i]) ? INFINITY : fabs((double)bm.out[i] - p[i]);
        }
    }
    printf("model: %s (%s), %d threads\n", kind, model, svp_ops_threads(ops));
    printf("shape: [%lld, %lld, %lld, %lld]\n", (long long)bm.in->shape[0],
           (long long)bm.in->shape[1], (long long)bm.in->shape[2],
           (long long)bm.in->shape[3]);
    bench_print_kernels("kernels: ");
    printf("load_s: %.3f\n", load_s);
    printf("median_s: %.4f\n", times[runs / 2]);
    printf("min_s: %.4f\n", times[0]);
    printf("max_s: %.4f\n", times[runs - 1]);
    printf("error_vs_peer: %.3g\n", max_ref > 0 ? max_err / max_ref : INFINITY);

    free(times);
    free(bm.out);
    svp_vae_destroy(bm.vae);
    svp_clip_destroy(bm.clip);
    svp_ops_destroy(ops);
    svp_tensor_destroy(bm.in);
    svp_tensor_destroy(ref);
    return 0;
}
