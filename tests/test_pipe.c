/* Tests for src/pipe and the dummy model: determinism and output files. */
#define _GNU_SOURCE
#include "pipe/pipe.h"
#include "stages/stages.h"
#include "model/dummy.h"
#include "noise/rng.h"
#include "tensor/safetensors.h"
#include "common/log.h"
#include "common/file.h"

#include <criterion/criterion.h>
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void quiet(void)
{
    svp_log_set_stream(fopen("/dev/null", "w"));
}

TestSuite(dummy, .init = quiet);
TestSuite(pipe, .init = quiet);
TestSuite(rng);

static svp_tensor_t *make_latent(uint64_t seed, int stream)
{
    int64_t       shape[5] = {1, 5, 4, 6, 7};
    svp_tensor_t *t;

    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 5, shape, &t), SVP_OK);
    svp_rng_normal(seed, stream, 0, svp_tensor_numel(t), t->data);
    return t;
}

Test(dummy, deterministic_and_step_dependent)
{
    svp_dummy_params_t p = {.seed = 7, .channels = 4, .cost = 0, .work = 1};
    svp_dummy_h        m1, m2;
    svp_tensor_t      *a = make_latent(1, 0), *b = make_latent(1, 0),
                 *c = make_latent(1, 0);

    cr_assert_eq(svp_dummy_create(&p, &m1), SVP_OK);
    p.work = 3; /* the cost knob must not change the result */
    cr_assert_eq(svp_dummy_create(&p, &m2), SVP_OK);
    cr_assert_eq(svp_dummy_step(m1, a, 0), SVP_OK);
    cr_assert_eq(svp_dummy_step(m2, b, 0), SVP_OK);
    cr_assert_eq(memcmp(a->data, b->data, svp_tensor_nbytes(a)), 0);
    cr_assert_eq(svp_dummy_step(m1, c, 1), SVP_OK);
    cr_assert_neq(memcmp(a->data, c->data, svp_tensor_nbytes(a)), 0,
                  "the step index must change the result");
    svp_dummy_destroy(m1);
    svp_dummy_destroy(m2);
    svp_tensor_destroy(a);
    svp_tensor_destroy(b);
    svp_tensor_destroy(c);
}

Test(dummy, seed_changes_weights_and_shape_checked)
{
    svp_dummy_params_t p = {.seed = 7, .channels = 4, .cost = 0, .work = 1};
    svp_dummy_h        m1, m2;
    svp_tensor_t      *a = make_latent(1, 0), *b = make_latent(1, 0), *bad;
    int64_t            shape[5] = {1, 2, 3, 4, 4};

    cr_assert_eq(svp_dummy_create(&p, &m1), SVP_OK);
    p.seed = 8;
    cr_assert_eq(svp_dummy_create(&p, &m2), SVP_OK);
    svp_dummy_step(m1, a, 0);
    svp_dummy_step(m2, b, 0);
    cr_assert_neq(memcmp(a->data, b->data, svp_tensor_nbytes(a)), 0);
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 5, shape, &bad), SVP_OK);
    cr_assert_eq(svp_dummy_step(m1, bad, 0), SVP_ERR_SHAPE);
    svp_tensor_destroy(bad);
    svp_dummy_destroy(m1);
    svp_dummy_destroy(m2);
    svp_tensor_destroy(a);
    svp_tensor_destroy(b);
}

Test(dummy, sleep_cost_takes_wall_time)
{
    svp_dummy_params_t p = {.seed     = 7,
                            .channels = 4,
                            .cost     = 1,
                            .work     = 1,
                            .step_ms  = 30};
    svp_dummy_h        m;
    svp_tensor_t      *a = make_latent(1, 0);
    struct timespec    t0, t1;
    double             dt;

    cr_assert_eq(svp_dummy_create(&p, &m), SVP_OK);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    svp_dummy_step(m, a, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    dt = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    cr_assert(dt >= 0.030, "step took %.4fs, expected at least 30 ms", dt);
    svp_dummy_destroy(m);
    svp_tensor_destroy(a);
}

Test(rng, counter_based_and_normal)
{
    enum { N = 200000 };
    float *a = malloc(N * sizeof(float)), *b = malloc(16 * sizeof(float));
    double mean = 0, var = 0;
    int    i;

    svp_rng_normal(42, 3, 0, N, a);
    /* any window of the stream is reproducible on its own */
    svp_rng_normal(42, 3, 1001, 16, b);
    cr_assert_eq(memcmp(a + 1001, b, 16 * sizeof(float)), 0);
    svp_rng_normal(42, 4, 1001, 16, b);
    cr_assert_neq(memcmp(a + 1001, b, 16 * sizeof(float)), 0, "streams must differ");
    for (i = 0; i < N; ++i) {
        cr_assert(isfinite(a[i]));
        mean += a[i];
    }
    mean /= N;
    for (i = 0; i < N; ++i) {
        var += (a[i] - mean) * (a[i] - mean);
    }
    var /= N;
    /* 5 sigma bounds for N = 2e5: mean +-0.011, variance +-0.016 */
    cr_assert(fabs(mean) < 0.011, "mean %g", mean);
    cr_assert(fabs(var - 1.0) < 0.016, "variance %g", var);
    free(a);
    free(b);
}

static void run_job(const char *dir, const char *extra, svp_pipe_stats_t *stats)
{
    char              yaml[512], err[512];
    svp_spec_t       *spec;
    svp_pipe_params_t pp = {0};

    snprintf(yaml, sizeof(yaml),
             "steps: 6\nsamples: 3\nseed: 5\nlatent_shape: [1, 3, 4, 5, 6]\n"
             "output: {dir: '%s'}\n%s",
             dir, extra);
    cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", NULL, 0, err, sizeof(err),
                                      &spec),
                 SVP_OK, "%s", err);
    pp.spec  = spec;
    pp.world = 1;
    cr_assert_eq(svp_stage_dummy_create(spec, &pp.stage), SVP_OK);
    cr_assert_eq(svp_pipe_run(&pp, stats), SVP_OK);
    pp.stage.ops->destroy(pp.stage.self);
    svp_spec_destroy(spec);
}

Test(pipe, single_rank_outputs_round_trip)
{
    char                   dir[] = "/tmp/svp_pipe_XXXXXX", path[512];
    svp_safetensors_h      st;
    svp_safetensors_info_t info;
    svp_pipe_stats_t       stats;
    int                    i;

    cr_assert_not_null(mkdtemp(dir));
    run_job(dir, "", &stats);
    cr_assert_eq(stats.samples_done, 3);
    cr_assert_eq(stats.steps_done, 18);
    for (i = 0; i < 3; ++i) {
        snprintf(path, sizeof(path), "%s/sample_%06d.safetensors", dir, i);
        cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK, "%s", path);
        cr_assert_eq(svp_safetensors_find(st, "latent", &info), SVP_OK);
        cr_assert_eq(info.dtype, SVP_DTYPE_F32);
        cr_assert_eq(info.ndim, 5);
        cr_assert_eq(info.shape[4], 6);
        cr_assert_str_eq(svp_safetensors_metadata(st, "job"), "t");
        cr_assert_eq(atoi(svp_safetensors_metadata(st, "sample")), i);
        cr_assert_str_eq(svp_safetensors_metadata(st, "steps"), "6");
        cr_assert_eq(atoll(svp_safetensors_metadata(st, "seed")), 5 + i,
                     "sample i's seed is the spec's + i");
        svp_safetensors_close(st);
    }
    svp_rmtree(dir);
}

/* The same job twice gives bit-identical latents; another seed does not. */
Test(pipe, reproducible)
{
    char d1[] = "/tmp/svp_pipe_XXXXXX", d2[] = "/tmp/svp_pipe_XXXXXX",
         d3[] = "/tmp/svp_pipe_XXXXXX", p1[512], p2[512], p3[512];
    char            *a, *b, *c;
    size_t           la, lb, lc;
    svp_pipe_stats_t stats;

    cr_assert_not_null(mkdtemp(d1));
    cr_assert_not_null(mkdtemp(d2));
    cr_assert_not_null(mkdtemp(d3));
    run_job(d1, "", &stats);
    run_job(d2, "model: {dummy: {work: 2}}\n", &stats);
    run_job(d3, "", &stats);
    snprintf(p1, sizeof(p1), "%s/sample_000002.safetensors", d1);
    snprintf(p2, sizeof(p2), "%s/sample_000002.safetensors", d2);
    snprintf(p3, sizeof(p3), "%s/sample_000001.safetensors", d3);
    cr_assert_eq(svp_file_read_all(p1, &a, &la), SVP_OK);
    cr_assert_eq(svp_file_read_all(p2, &b, &lb), SVP_OK);
    cr_assert_eq(svp_file_read_all(p3, &c, &lc), SVP_OK);
    cr_assert_eq(la, lb);
    cr_assert_eq(memcmp(a, b, la), 0);
    cr_assert(la != lc || memcmp(a, c, la) != 0, "samples 1 and 2 must differ");
    free(a);
    free(b);
    free(c);
    svp_rmtree(d1);
    svp_rmtree(d2);
    svp_rmtree(d3);
}

/*
 * A sample between host and device memory (svp_stage_sample_copy), with a
 * stand-in for device memory: "device" buffers are host buffers that only
 * the services' copy functions may fill, and the test counts the copies.
 */
typedef struct {
    int    up, down;
    size_t bytes;
} fake_dev_t;

static svp_status_t fake_to_host(void *ctx, void *host, const void *dev, size_t n)
{
    ((fake_dev_t *)ctx)->down++;
    ((fake_dev_t *)ctx)->bytes += n;
    memcpy(host, dev, n);
    return SVP_OK;
}

static svp_status_t fake_to_device(void *ctx, void *dev, const void *host, size_t n)
{
    ((fake_dev_t *)ctx)->up++;
    ((fake_dev_t *)ctx)->bytes += n;
    memcpy(dev, host, n);
    return SVP_OK;
}

Test(pipe, sample_copy_between_host_and_device)
{
    fake_dev_t   d     = {0};
    svp_devmem_t mem   = {.ctx       = &d,
                          .to_host   = fake_to_host,
                          .to_device = fake_to_device};
    svp_stage_t  stage = {0};
    svp_sample_t host = {0}, dev = {0}, back = {0}, odd = {0};
    svp_spec_t  *spec;
    char         err[256];
    size_t       bytes = 0;
    int          k;

    cr_assert_eq(svp_spec_load_string("latent_shape: [1, 3, 4, 5, 6]\n", "t.yaml",
                                      NULL, 0, err, sizeof(err), &spec),
                 SVP_OK);
    cr_assert_eq(svp_stage_dummy_create(spec, &stage), SVP_OK);
    cr_assert_null(stage.devmem, "the dummy stage computes on the host");
    cr_assert_eq(stage.ops->begin(stage.self, 2, &host), SVP_OK);
    cr_assert_eq(stage.ops->alloc(stage.self, 2, &dev), SVP_OK);
    cr_assert_eq(stage.ops->alloc(stage.self, 2, &back), SVP_OK);
    dev.on_device  = 1;
    host.next_step = 3;

    /* a device sample needs the services */
    cr_assert_eq(svp_stage_sample_copy(&stage, &dev, &host), SVP_ERR_INTERNAL);
    stage.devmem = &mem;
    cr_assert_eq(svp_stage_sample_copy(&stage, &dev, &host), SVP_OK);
    cr_assert_eq(d.up, host.ntensors);
    cr_assert_eq(d.down, 0);
    cr_assert_eq(dev.next_step, 3);
    cr_assert_eq(dev.seed, host.seed);
    cr_assert_eq(svp_stage_sample_copy(&stage, &back, &dev), SVP_OK);
    cr_assert_eq(d.down, host.ntensors);
    for (k = 0; k < host.ntensors; ++k) {
        bytes += svp_tensor_nbytes(host.tensors[k]);
        cr_assert_eq(memcmp(back.tensors[k]->data, host.tensors[k]->data,
                            svp_tensor_nbytes(host.tensors[k])),
                     0, "tensor %d", k);
    }
    cr_assert_eq(d.bytes, 2 * bytes);
    cr_assert_eq(back.next_step, 3);

    /* another layout is refused, nothing copied */
    d.up = 0;
    cr_assert_eq(svp_stage_sample_copy(&stage, &odd, &host), SVP_ERR_INTERNAL);
    cr_assert_eq(d.up, 0);

    svp_sample_cleanup(&host);
    svp_sample_cleanup(&dev);
    svp_sample_cleanup(&back);
    stage.ops->destroy(stage.self);
    svp_spec_destroy(spec);
}
