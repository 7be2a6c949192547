/*
 * The same bits on any thread count: the tiny SVD pipeline (golden
 * pipeline_tiny: its UNet, VAE and scheduler; 4 steps, 3 frames of 48x32)
 * run in this process with SVP_THREADS=1, 2 and 3 gives the same final
 * latents and the same decoded frames, byte for byte.  This is what lets a
 * job split over ranks of 1 thread match one process of 2 (the layout
 * cluster test checks that end to end).  contrib/run-tests.sh runs it under
 * OpenBLAS's Haswell kernels too, which once gave other bits for 1 and 2
 * threads.  No tolerance: any difference is a failure.
 */
#include "stages/stages.h"
#include "stages/stage_svd_int.h"
#include "tensor/safetensors.h"
#include "ops/ops.h"
#include "common/log.h"
#include "common/file.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DET_STEPS  4
#define DET_FRAMES 3

static char golden[1024];

static void setup(void)
{
    const char *g = getenv("SVP_GOLDEN_DIR");

    svp_log_set_stream(fopen("/dev/null", "w"));
    snprintf(golden, sizeof(golden), "%s/pipeline_tiny", g ? g : "");
    if (g == NULL || access(golden, R_OK) != 0) {
        golden[0] = '\0';
    }
}

TestSuite(determinism, .init = setup);

/* The conditioning file the stage reads, from the golden run's tensors. */
static void write_conditioning(const char *path)
{
    static const char *from[] = {"image_latents", "image_embeds_stub",
                                 "added_time_ids", "latents_initial"};
    static const char *to[]   = {"image_latents", "image_embeds", "added_time_ids",
                                 "latents"};
    char               file[2048];
    svp_safetensors_h  g;
    svp_safetensors_writer_h w;
    svp_tensor_t            *t[4];
    int                      i;

    snprintf(file, sizeof(file), "%s/pipeline.safetensors", golden);
    cr_assert_eq(svp_safetensors_open(file, &g), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_create(&w), SVP_OK);
    for (i = 0; i < 4; ++i) {
        cr_assert_eq(svp_safetensors_load(g, from[i], SVP_DTYPE_F32, &t[i]), SVP_OK);
        if (i == 2) {
            t[i]->shape[0] = 1; /* both CFG rows carry the same ids */
        }
        cr_assert_eq(svp_safetensors_writer_add(w, to[i], t[i]), SVP_OK);
    }
    cr_assert_eq(svp_safetensors_writer_commit(w, path), SVP_OK);
    svp_safetensors_writer_destroy(w);
    for (i = 0; i < 4; ++i) {
        svp_tensor_destroy(t[i]);
    }
    svp_safetensors_close(g);
}

/*
 * One sample on `threads` threads (through SVP_THREADS, as a worker gets
 * them): its final latents into *lat_p (malloc'ed), its frames and
 * sample.json under dir/t<threads>.
 */
static void run_sample(const char *dir, const char *cond, int threads, float **lat_p,
                       int64_t *n_p)
{
    char         yaml[4096], err[512], num[16];
    svp_spec_t  *spec;
    svp_stage_t  stage;
    svp_sample_t s;
    int64_t      n;
    int          k;

    snprintf(num, sizeof(num), "%d", threads);
    cr_assert_eq(setenv("SVP_THREADS", num, 1), 0);
    snprintf(yaml, sizeof(yaml),
             "model: {kind: svd, path: '%s', conditioning: '%s'}\nsteps: %d\n"
             "video: {width: 48, height: 32, num_frames: %d, fps: 7, "
             "motion_bucket_id: 127, noise_aug_strength: 0.02, min_guidance: 1.0, "
             "max_guidance: 3.0, decode_chunk_size: 2}\n"
             "output: {dir: '%s/t%d', mp4: false}\n",
             golden, cond, DET_STEPS, DET_FRAMES, dir, threads);
    cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", NULL, 0, err, sizeof(err),
                                      &spec),
                 SVP_OK, "%s", err);
    cr_assert_eq(svp_stage_svd_create(spec, &stage), SVP_OK);
    memset(&s, 0, sizeof(s));
    cr_assert_eq(stage.ops->begin(stage.self, 0, &s), SVP_OK);
    for (k = 0; k < DET_STEPS; ++k) {
        cr_assert_eq(stage.ops->step(stage.self, &s, k), SVP_OK);
    }
    n      = svp_tensor_numel(s.tensors[0]);
    *lat_p = malloc(n * sizeof(float));
    cr_assert_not_null(*lat_p);
    memcpy(*lat_p, s.tensors[0]->data, n * sizeof(float));
    *n_p = n;
    cr_assert_eq(stage.ops->finish(stage.self, &s), SVP_OK);
    svp_sample_cleanup(&s);
    stage.ops->destroy(stage.self);
    svp_spec_destroy(spec);
    unsetenv("SVP_THREADS");
}

/* 1 when the two files hold the same bytes. */
static int same_file(const char *a, const char *b)
{
    char  *da = NULL, *db = NULL;
    size_t la = 0, lb = 0;
    int    same;

    if (svp_file_read_all(a, &da, &la) != SVP_OK ||
        svp_file_read_all(b, &db, &lb) != SVP_OK) {
        free(da);
        return 0;
    }
    same = (la == lb && memcmp(da, db, la) == 0);
    free(da);
    free(db);
    return same;
}

Test(determinism, pipeline_tiny_1_2_3_threads, .timeout = 300)
{
    char    dir[] = "/tmp/svp_det_XXXXXX", cond[2048], a[2200], b[2200];
    char   *json  = NULL;
    json_t *doc, *cpu;
    size_t  len;
    float  *lat[3];
    int64_t n[3];
    int     t, k;

    if (golden[0] == '\0') {
        cr_skip_test("golden data not found (set SVP_GOLDEN_DIR)");
    }
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cond, sizeof(cond), "%s/cond.safetensors", dir);
    write_conditioning(cond);

    for (t = 1; t <= 3; ++t) {
        run_sample(dir, cond, t, &lat[t - 1], &n[t - 1]);
        /* sample.json names the threads and the BLAS kernels that ran */
        snprintf(a, sizeof(a), "%s/t%d/sample_000000/sample.json", dir, t);
        cr_assert_eq(svp_file_read_all(a, &json, &len), SVP_OK, "%s", a);
        doc = json_loadb(json, len, 0, NULL);
        cpu = json_object_get(doc, "cpu");
        cr_expect_eq(json_integer_value(json_object_get(cpu, "threads")), t,
                     "%s: not %d threads in\n%s", a, t, json);
        cr_expect(json_is_string(json_object_get(cpu, "kernels")), "%s", json);
        json_decref(doc);
        free(json);
        json = NULL;
    }
    for (t = 2; t <= 3; ++t) {
        cr_assert_eq(n[t - 1], n[0]);
        cr_expect_eq(memcmp(lat[0], lat[t - 1], n[0] * sizeof(float)), 0,
                     "final latents: 1 and %d threads differ", t);
        for (k = 0; k < DET_FRAMES; ++k) {
            snprintf(a, sizeof(a), "%s/t1/sample_000000/frame_%04d.png", dir, k);
            snprintf(b, sizeof(b), "%s/t%d/sample_000000/frame_%04d.png", dir, t, k);
            cr_expect(same_file(a, b), "frame %d: 1 and %d threads differ", k, t);
        }
    }
    for (t = 0; t < 3; ++t) {
        free(lat[t]);
    }
    svp_rmtree(dir);
}
