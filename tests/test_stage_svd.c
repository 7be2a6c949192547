/*
 * The SVD stage against diffusers' own pipeline run (golden pipeline_tiny):
 * the same conditioning and initial latents, then every denoising step's
 * latents compared with diffusers' step{k}.latents_after.
 *
 * Tolerance: the golden README's free-running pipeline bound,
 * max|C - ref| <= 5e-5 * max|ref| (float32 vs float64 drift up to 7e-6).
 */
#include "stages/stages.h"
#include "stages/stage_svd_int.h"
#include "tensor/safetensors.h"
#include "media/image.h"
#include "media/resize.h"
#include "model/vae.h"
#include "ops/ops.h"
#include "common/log.h"
#include "common/file.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PIPE_TOL 5e-5

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

TestSuite(stage_svd, .init = setup);

static double rel_err(const float *c, const svp_tensor_t *ref)
{
    int64_t i, n = svp_tensor_numel(ref);
    double  d = 0, m = 0;

    for (i = 0; i < n; ++i) {
        d = fmax(d, fabs((double)c[i] - ((float *)ref->data)[i]));
        m = fmax(m, fabs(((float *)ref->data)[i]));
    }
    return d / m;
}

/* Writes the conditioning file the worker reads, from the golden run. */
static void write_conditioning(svp_safetensors_h g, const char *path)
{
    static const char *from[] = {"image_latents", "image_embeds_stub",
                                 "added_time_ids", "latents_initial"};
    static const char *to[]   = {"image_latents", "image_embeds", "added_time_ids",
                                 "latents"};
    svp_safetensors_writer_h w;
    svp_tensor_t            *t[4];
    int                      i;

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
}

Test(stage_svd, reproduces_diffusers_step_by_step)
{
    char dir[] = "/tmp/svp_svd_XXXXXX", cond[2048], yaml[4096], name[64], err[512];
    svp_safetensors_h g;
    svp_spec_t       *spec;
    svp_stage_t       stage;
    svp_sample_t      s;
    svp_tensor_t     *ref;
    double            e;
    int               k;

    if (golden[0] == '\0') {
        cr_skip_test("golden data not found (set SVP_GOLDEN_DIR)");
    }
    cr_assert_not_null(mkdtemp(dir));
    snprintf(name, sizeof(name), "pipeline.safetensors");
    snprintf(cond, sizeof(cond), "%s/%s", golden, name);
    cr_assert_eq(svp_safetensors_open(cond, &g), SVP_OK);
    snprintf(cond, sizeof(cond), "%s/cond.safetensors", dir);
    write_conditioning(g, cond);

    snprintf(yaml, sizeof(yaml),
             "model: {kind: svd, path: '%s', conditioning: '%s'}\nsteps: 4\n"
             "video: {width: 48, height: 32, num_frames: 3, fps: 7, "
             "motion_bucket_id: 127, noise_aug_strength: 0.02, min_guidance: 1.0, "
             "max_guidance: 3.0, decode_chunk_size: 2}\n"
             "output: {dir: '%s/out', mp4: false}\n",
             golden, cond, dir);
    cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", NULL, 0, err, sizeof(err),
                                      &spec),
                 SVP_OK, "%s", err);
    cr_assert_eq(svp_stage_svd_create(spec, &stage), SVP_OK);

    memset(&s, 0, sizeof(s));
    cr_assert_eq(stage.ops->begin(stage.self, 0, &s), SVP_OK);
    cr_assert_eq(svp_safetensors_load(g, "latents_initial_scaled", SVP_DTYPE_F32,
                                      &ref),
                 SVP_OK);
    e = rel_err(s.tensors[0]->data, ref);
    cr_expect(e <= 1e-6, "initial latents: rel err %g", e);
    svp_tensor_destroy(ref);

    for (k = 0; k < 4; ++k) {
        cr_assert_eq(stage.ops->step(stage.self, &s, k), SVP_OK);
        snprintf(name, sizeof(name), "step%d.latents_after", k);
        cr_assert_eq(svp_safetensors_load(g, name, SVP_DTYPE_F32, &ref), SVP_OK);
        e = rel_err(s.tensors[0]->data, ref);
        cr_expect(e <= PIPE_TOL, "%s: max|C-ref|/max|ref| = %g > %g", name, e,
                  PIPE_TOL);
        svp_tensor_destroy(ref);
    }
    cr_assert_eq(svp_safetensors_load(g, "latents_final", SVP_DTYPE_F32, &ref),
                 SVP_OK);
    e = rel_err(s.tensors[0]->data, ref);
    cr_expect(e <= PIPE_TOL, "final latents: rel err %g", e);
    svp_tensor_destroy(ref);

    /* decode (chunks of 2 + 1 frames, as the golden run) and the frames as
     * PNG: within one 8-bit level of diffusers' float frames * 255 */
    cr_assert_eq(stage.ops->finish(stage.self, &s), SVP_OK);
    snprintf(cond, sizeof(cond), "%s/out/sample_000000/latents.safetensors", dir);
    cr_assert_eq(access(cond, R_OK), 0, "no output at %s", cond);
    snprintf(cond, sizeof(cond), "%s/out/sample_000000/sample.json", dir);
    cr_assert_eq(access(cond, R_OK), 0, "no output at %s", cond);
    cr_assert_eq(svp_safetensors_load(g, "frames", SVP_DTYPE_F32, &ref), SVP_OK);
    for (k = 0; k < 3; ++k) {
        svp_media_image_t *img;
        int64_t            c, y, x, plane = 32 * 48;
        double             worst = 0;
        snprintf(cond, sizeof(cond), "%s/out/sample_000000/frame_%04d.png", dir, k);
        cr_assert_eq(svp_media_image_load(cond, &img), SVP_OK, "%s", cond);
        cr_assert_eq(img->width, 48);
        cr_assert_eq(img->height, 32);
        for (c = 0; c < 3; ++c) {
            for (y = 0; y < 32; ++y) {
                for (x = 0; x < 48; ++x) {
                    double want =
                        255.0 *
                        ((float *)ref->data)[(k * 3 + c) * plane + y * 48 + x];
                    double got = img->pixels[(y * 48 + x) * 3 + c];
                    worst      = fmax(worst, fabs(want - got));
                }
            }
        }
        cr_expect(worst <= 1.0, "frame %d: %.2f levels from diffusers' frames", k,
                  worst);
        svp_media_image_destroy(img);
    }
    svp_tensor_destroy(ref);

    /* resume: the sample directory validates for this job only */
    {
        char why[1024] = "";

        cr_expect_eq(stage.ops->check_output(stage.self, 0, why, sizeof(why)),
                     SVP_OK, "%s", why);
        cr_expect_eq(stage.ops->check_output(stage.self, 1, why, sizeof(why)),
                     SVP_ERR_NOT_FOUND);
        /* a job of another motion bucket: the stage's sample list holds
         * each sample's parameters from when it was made */
        {
            const char *set[] = {"video.motion_bucket_id=100"};
            svp_spec_t *other;
            svp_stage_t ostage;

            cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", set, 1, err,
                                              sizeof(err), &other),
                         SVP_OK, "%s", err);
            cr_assert_eq(svp_stage_svd_create(other, &ostage), SVP_OK);
            cr_expect_eq(ostage.ops->check_output(ostage.self, 0, why, sizeof(why)),
                         SVP_ERR_SPEC);
            cr_expect_not_null(strstr(why,
                                      "was made with other parameters: "
                                      "motion_bucket_id: 127, this job has 100"),
                               "%s", why);
            ostage.ops->destroy(ostage.self);
            svp_spec_destroy(other);
        }
        spec->steps = 5;
        cr_expect_eq(stage.ops->check_output(stage.self, 0, why, sizeof(why)),
                     SVP_ERR_SPEC, "%s", why);
        spec->steps = 4;
        snprintf(cond, sizeof(cond), "%s/out/sample_000000/frame_0002.png", dir);
        cr_assert_eq(unlink(cond), 0);
        cr_expect_eq(stage.ops->check_output(stage.self, 0, why, sizeof(why)),
                     SVP_ERR_BAD_FILE, "a frame is missing");
    }

    svp_sample_cleanup(&s);
    stage.ops->destroy(stage.self);
    svp_spec_destroy(spec);
    svp_safetensors_close(g);
    svp_rmtree(dir);
}

/* 1 when the two files hold the same bytes. */
static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int   ca, cb, same = (fa != NULL && fb != NULL);

    while (same) {
        ca   = fgetc(fa);
        cb   = fgetc(fb);
        same = (ca == cb);
        if (ca == EOF || cb == EOF) {
            break;
        }
    }
    if (fa != NULL) {
        fclose(fa);
    }
    if (fb != NULL) {
        fclose(fb);
    }
    return same;
}

/*
 * The one step path (the step's model input, guidance and Euler update as
 * ops on the handle's buffers, a device frame's tensors used in place;
 * encode and decode through ops buffers), the cuda backend's, run on the
 * cpu backend, whose buffers are host memory: two stages of one spec give
 * the same bits after every step, for a host sample (uploaded and
 * downloaded around each step) and for a sample marked on_device, and so
 * are the decoded frames.  (That this path gives the bits of the scheduler's
 * host arithmetic, svp_sched_*, is test_sched's
 * sched_math.cpu_ops_give_the_scheduler_bits.)
 */
Test(stage_svd, ops_path_gives_the_host_path_bits)
{
    char dir[] = "/tmp/svp_svd_XXXXXX", cond[2048], yaml[4096], err[512], a[2300],
         b[2300];
    svp_safetensors_h g;
    svp_spec_t       *spec[2];
    svp_stage_t       host, ops;
    svp_sample_t      sh, so, sd;
    size_t            bytes;
    int               i, k;

    if (golden[0] == '\0') {
        cr_skip_test("golden data not found (set SVP_GOLDEN_DIR)");
    }
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cond, sizeof(cond), "%s/pipeline.safetensors", golden);
    cr_assert_eq(svp_safetensors_open(cond, &g), SVP_OK);
    snprintf(cond, sizeof(cond), "%s/cond.safetensors", dir);
    write_conditioning(g, cond);
    svp_safetensors_close(g);
    for (i = 0; i < 2; ++i) {
        snprintf(
            yaml, sizeof(yaml),
            "model: {kind: svd, path: '%s', conditioning: '%s'}\nsteps: 4\n"
            "video: {width: 48, height: 32, num_frames: 3, fps: 7, "
            "motion_bucket_id: 127, noise_aug_strength: 0.02, min_guidance: 1.0, "
            "max_guidance: 3.0, decode_chunk_size: 2}\n"
            "output: {dir: '%s/out%d', mp4: false}\n",
            golden, cond, dir, i);
        cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", NULL, 0, err, sizeof(err),
                                          &spec[i]),
                     SVP_OK, "%s", err);
    }
    cr_assert_eq(svp_stage_svd_create(spec[0], &host), SVP_OK);
    cr_assert_eq(svp_stage_svd_create(spec[1], &ops), SVP_OK);

    memset(&sh, 0, sizeof(sh));
    memset(&so, 0, sizeof(so));
    memset(&sd, 0, sizeof(sd));
    cr_assert_eq(host.ops->begin(host.self, 0, &sh), SVP_OK);
    cr_assert_eq(ops.ops->begin(ops.self, 0, &so), SVP_OK);
    cr_assert_eq(ops.ops->alloc(ops.self, 0, &sd), SVP_OK);
    for (i = 0; i < sh.ntensors; ++i) {
        bytes = svp_tensor_nbytes(sh.tensors[i]);
        /* all but the last, the wall-clock timing */
        cr_assert(i == sh.ntensors - 1 ||
                      memcmp(sh.tensors[i]->data, so.tensors[i]->data, bytes) == 0,
                  "tensor %d after begin", i);
        memcpy(sd.tensors[i]->data, so.tensors[i]->data, bytes);
    }
    sd.on_device = 1; /* on this backend "device" memory is host memory */
    bytes        = svp_tensor_nbytes(sh.tensors[0]);
    for (k = 0; k < 4; ++k) {
        cr_assert_eq(host.ops->step(host.self, &sh, k), SVP_OK);
        cr_assert_eq(ops.ops->step(ops.self, &so, k), SVP_OK);
        cr_assert_eq(ops.ops->step(ops.self, &sd, k), SVP_OK);
        cr_assert_eq(memcmp(sh.tensors[0]->data, so.tensors[0]->data, bytes), 0,
                     "step %d: a host sample on the ops path differs", k);
        cr_assert_eq(memcmp(sh.tensors[0]->data, sd.tensors[0]->data, bytes), 0,
                     "step %d: a sample in place on the ops path differs", k);
    }
    /* the conditioning is read, never written */
    for (i = 1; i < sh.ntensors - 1; ++i) {
        cr_assert_eq(memcmp(sh.tensors[i]->data, sd.tensors[i]->data,
                            svp_tensor_nbytes(sh.tensors[i])),
                     0, "tensor %d", i);
    }

    cr_assert_eq(host.ops->finish(host.self, &sh), SVP_OK);
    cr_assert_eq(ops.ops->finish(ops.self, &so), SVP_OK);
    for (k = 0; k < 3; ++k) {
        snprintf(a, sizeof(a), "%s/out0/sample_000000/frame_%04d.png", dir, k);
        snprintf(b, sizeof(b), "%s/out1/sample_000000/frame_%04d.png", dir, k);
        cr_assert(same_file(a, b), "frame %d decoded on the ops path differs", k);
    }
    snprintf(a, sizeof(a), "%s/out0/sample_000000/latents.safetensors", dir);
    snprintf(b, sizeof(b), "%s/out1/sample_000000/latents.safetensors", dir);
    cr_assert(same_file(a, b), "latents written on the ops path differ");

    svp_sample_cleanup(&sh);
    svp_sample_cleanup(&so);
    svp_sample_cleanup(&sd);
    host.ops->destroy(host.self);
    ops.ops->destroy(ops.self);
    svp_spec_destroy(spec[0]);
    svp_spec_destroy(spec[1]);
    svp_rmtree(dir);
}

Test(stage_svd, bad_conditioning_is_named)
{
    char dir[] = "/tmp/svp_svd_XXXXXX", cond[512], yaml[1024], err[512];
    svp_safetensors_writer_h w;
    svp_tensor_t            *t;
    int64_t                  shape[4] = {1, 4, 2, 3};
    svp_spec_t              *spec;
    svp_stage_t              stage;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(cond, sizeof(cond), "%s/cond.safetensors", dir);
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_F32, 4, shape, &t), SVP_OK);
    svp_safetensors_writer_create(&w);
    svp_safetensors_writer_add(w, "image_latents", t);
    cr_assert_eq(svp_safetensors_writer_commit(w, cond), SVP_OK);
    svp_safetensors_writer_destroy(w);
    svp_tensor_destroy(t);

    snprintf(yaml, sizeof(yaml),
             "model: {kind: svd, path: '%s', conditioning: '%s'}\n", dir, cond);
    cr_assert_eq(svp_spec_load_string(yaml, "t.yaml", NULL, 0, err, sizeof(err),
                                      &spec),
                 SVP_OK, "%s", err);
    cr_assert_eq(svp_stage_svd_create(spec, &stage), SVP_ERR_BAD_FILE,
                 "a conditioning file without image_embeds must be refused");
    svp_spec_destroy(spec);
    svp_rmtree(dir);
}

/*
 * The encode half as the stage does it (resize, x/127.5 - 1, + strength *
 * noise, VAE mode), fed diffusers' stored noise: the image latents the
 * golden run conditioned on.  UNet-class tolerance (single forward): 1e-5.
 */
Test(stage_svd, conditioning_image_encodes_like_diffusers)
{
    char               path[2048];
    svp_safetensors_h  g;
    svp_media_image_t *img;
    svp_tensor_t      *px, *noise, *ref;
    svp_ops_h          ops;
    svp_vae_h          vae;
    float              lat[4 * 16 * 24];
    int64_t            i;
    double             e;

    if (golden[0] == '\0') {
        cr_skip_test("golden data not found (set SVP_GOLDEN_DIR)");
    }
    snprintf(path, sizeof(path), "%s/pipeline.safetensors", golden);
    cr_assert_eq(svp_safetensors_open(path, &g), SVP_OK);
    snprintf(path, sizeof(path), "%s/input.png", golden);
    cr_assert_eq(svp_media_image_load(path, &img), SVP_OK);
    cr_assert_eq(svp_media_vae_preprocess(img, 48, 32, &px), SVP_OK);
    cr_assert_eq(svp_safetensors_load(g, "noise", SVP_DTYPE_F32, &noise), SVP_OK);
    for (i = 0; i < svp_tensor_numel(px); ++i) {
        ((float *)px->data)[i] += 0.02f * ((float *)noise->data)[i];
    }
    cr_assert_eq(svp_safetensors_load(g, "vae_encode_input", SVP_DTYPE_F32, &ref),
                 SVP_OK);
    e = rel_err(px->data, ref);
    cr_expect(e <= 1e-6, "VAE input: rel err %g", e);
    svp_tensor_destroy(ref);

    cr_assert_eq(svp_ops_create(NULL, &ops), SVP_OK);
    snprintf(path, sizeof(path), "%s/vae", golden);
    cr_assert_eq(svp_vae_create(ops, path, NULL, &vae), SVP_OK);
    cr_assert_eq(svp_vae_encode(vae, 1, 32, 48, px->data, lat, NULL, NULL), SVP_OK);
    cr_assert_eq(svp_safetensors_load(g, "image_latents", SVP_DTYPE_F32, &ref),
                 SVP_OK);
    e = rel_err(lat, ref);
    cr_expect(e <= 1e-5, "image latents: rel err %g", e);

    svp_tensor_destroy(ref);
    svp_vae_destroy(vae);
    svp_ops_destroy(ops);
    svp_tensor_destroy(noise);
    svp_tensor_destroy(px);
    svp_media_image_destroy(img);
    svp_safetensors_close(g);
}
