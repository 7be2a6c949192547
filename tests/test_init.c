/*
 * Tests for the random-weight initialisers (VAE, image encoder), svdtool's
 * model-folder init and check-model.
 *
 * Layouts are compared exactly (names and shapes) with what diffusers and
 * transformers produce: the golden vae_tiny / clip_tiny weight files and
 * the svd_xt_layout tensor lists (golden README).  Forward passes through
 * random models are only checked for finite, non-constant output: there is
 * no reference for random weights, so no tolerance applies.
 */
#include "model/checkpoint.h"
#include "model/clip.h"
#include "model/random_weights.h"
#include "model/svd_init.h"
#include "model/unet.h"
#include "model/vae.h"
#include "media/preprocessor.h"
#include "tools/svdtool_check.h"
#include "golden.h"
#include "common/log.h"
#include "common/file.h"
#include "common/util.h"
#include "tensor/safetensors.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int same_shape(int ndim_a, const int64_t *a, int ndim_b, const int64_t *b)
{
    int i;

    if (ndim_a != ndim_b) {
        return 0;
    }
    for (i = 0; i < ndim_a; i++) {
        if (a[i] != b[i]) {
            return 0;
        }
    }
    return 1;
}

/* Every tensor of 'got' is in 'ref' with the same shape, and vice versa. */
static void assert_same_layout(const char *got_path, const char *ref_path)
{
    svp_safetensors_h      got, ref;
    svp_safetensors_info_t a, b;
    int                    i;

    cr_assert_eq(svp_safetensors_open(got_path, &got), SVP_OK);
    cr_assert_eq(svp_safetensors_open(ref_path, &ref), SVP_OK);
    cr_assert_eq(svp_safetensors_count(got), svp_safetensors_count(ref),
                 "%s has %d tensors, %s has %d", got_path,
                 svp_safetensors_count(got), ref_path, svp_safetensors_count(ref));
    for (i = 0; i < svp_safetensors_count(got); i++) {
        cr_assert_eq(svp_safetensors_info(got, i, &a), SVP_OK);
        cr_assert_eq(svp_safetensors_find(ref, a.name, &b), SVP_OK,
                     "'%s' is not in %s", a.name, ref_path);
        cr_assert(same_shape(a.ndim, a.shape, b.ndim, b.shape),
                  "'%s': shapes differ", a.name);
        cr_assert_eq(a.dtype, SVP_DTYPE_F32);
    }
    svp_safetensors_close(got);
    svp_safetensors_close(ref);
}

/* The layout listed for config_path equals the golden tensors.json. */
static void assert_layout_matches_json(svp_status_t (*add_all)(const char *,
                                                               svp_random_weights_h),
                                       const char *config_path,
                                       const char *json_path)
{
    svp_random_weights_h rw;
    json_error_t         jerr;
    json_t              *root, *tensors, *shape;
    const char          *name;
    const int64_t       *dims;
    int                  i, j, ndim;

    root = json_load_file(json_path, 0, &jerr);
    cr_assert_not_null(root, "%s: %s", json_path, jerr.text);
    tensors = json_object_get(root, "tensors");
    cr_assert(json_is_object(tensors));
    cr_assert_eq(svp_random_weights_create(0, 1, &rw), SVP_OK);
    cr_assert_eq(add_all(config_path, rw), SVP_OK);
    cr_assert_eq((size_t)svp_random_weights_count(rw), json_object_size(tensors),
                 "%d tensors listed, %s has %zu", svp_random_weights_count(rw),
                 json_path, json_object_size(tensors));
    for (i = 0; i < svp_random_weights_count(rw); i++) {
        svp_random_weights_entry(rw, i, &name, &ndim, &dims);
        shape = json_object_get(tensors, name);
        cr_assert_not_null(shape, "'%s' is not in %s", name, json_path);
        cr_assert_eq((int)json_array_size(shape), ndim, "'%s': rank differs", name);
        for (j = 0; j < ndim; j++) {
            cr_assert_eq(json_integer_value(json_array_get(shape, j)), dims[j],
                         "'%s': dimension %d differs", name, j);
        }
    }
    svp_random_weights_destroy(rw);
    json_decref(root);
}

static void assert_finite_varied(const char *what, const float *x, int64_t n)
{
    int64_t i;
    float   lo = x[0], hi = x[0];

    for (i = 0; i < n; i++) {
        cr_assert(isfinite(x[i]), "%s[%lld] = %g", what, (long long)i, x[i]);
        lo = fminf(lo, x[i]);
        hi = fmaxf(hi, x[i]);
    }
    cr_assert_gt(hi - lo, 1e-3f, "%s is constant (%g .. %g)", what, lo, hi);
    cr_assert_lt(fmaxf(fabsf(lo), fabsf(hi)), 1e4f, "%s blows up (%g .. %g)", what,
                 lo, hi);
}

static int files_equal(const char *a, const char *b)
{
    char  *ta, *tb;
    size_t la, lb;
    int    same;

    cr_assert_eq(svp_file_read_all(a, &ta, &la), SVP_OK);
    cr_assert_eq(svp_file_read_all(b, &tb, &lb), SVP_OK);
    same = (la == lb && memcmp(ta, tb, la) == 0);
    free(ta);
    free(tb);
    return same;
}

Test(random, vae_tiny_layout_is_diffusers)
{
    char dir[4096], tmp[64], got[4200], ref[4200], cfg[4200];

    golden_dir("vae_tiny", dir, sizeof(dir));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    cr_assert_eq(svp_vae_write_random(cfg, 7, tmp), SVP_OK);
    snprintf(got, sizeof(got), "%s/diffusion_pytorch_model.safetensors", tmp);
    snprintf(ref, sizeof(ref), "%s/diffusion_pytorch_model.safetensors", dir);
    assert_same_layout(got, ref);
    snprintf(got, sizeof(got), "%s/config.json", tmp);
    cr_assert(files_equal(got, cfg), "config.json is not a copy");
    svp_rmtree(tmp);
}

Test(random, clip_tiny_layout_is_transformers)
{
    char dir[4096], tmp[64], got[4200], ref[4200], cfg[4200];

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    cr_assert_eq(svp_clip_write_random(cfg, 7, tmp), SVP_OK);
    snprintf(got, sizeof(got), "%s/model.safetensors", tmp);
    snprintf(ref, sizeof(ref), "%s/model.safetensors", dir);
    assert_same_layout(got, ref);
    svp_rmtree(tmp);
}

/*
 * SVD-XT sizes are listed, not written: 2.9 GB of weights.  (The image
 * encoder's writer walks the loader's own tensor list, which test_clip's
 * svd_xt_layout_accepted checks against the real layout.)
 */
Test(random, svd_xt_layouts_are_the_real_ones)
{
    char dir[4096], cfg[4200], list[4200];

    golden_dir("svd_xt_layout", dir, sizeof(dir));
    snprintf(cfg, sizeof(cfg), "%s/vae/config.json", dir);
    snprintf(list, sizeof(list), "%s/vae/tensors.json", dir);
    assert_layout_matches_json(svp_vae_random_add_all, cfg, list);
}

Test(random, same_seed_same_bytes)
{
    char dir[4096], a[64], b[64], c[64], cfg[4200], fa[4200], fb[4200], fc[4200];

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("init", a, sizeof(a));
    golden_make_tmp("init", b, sizeof(b));
    golden_make_tmp("init", c, sizeof(c));
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    cr_assert_eq(svp_clip_write_random(cfg, 11, a), SVP_OK);
    cr_assert_eq(svp_clip_write_random(cfg, 11, b), SVP_OK);
    cr_assert_eq(svp_clip_write_random(cfg, 12, c), SVP_OK);
    snprintf(fa, sizeof(fa), "%s/model.safetensors", a);
    snprintf(fb, sizeof(fb), "%s/model.safetensors", b);
    snprintf(fc, sizeof(fc), "%s/model.safetensors", c);
    cr_assert(files_equal(fa, fb), "same seed, different files");
    cr_assert(!files_equal(fa, fc), "different seeds, same file");
    svp_rmtree(a);
    svp_rmtree(b);
    svp_rmtree(c);
}

Test(random, vae_loads_and_runs)
{
    svp_ops_params_t params = {.threads = 1};
    svp_ops_h        ops;
    svp_vae_h        vae;
    char             dir[4096], tmp[64], cfg[4200];
    int              n = 2, h = 16, w = 24, lh, lw, i, frames = 3;
    float           *image, *mean, *out;

    golden_dir("vae_tiny", dir, sizeof(dir));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    cr_assert_eq(svp_vae_write_random(cfg, 3, tmp), SVP_OK);
    cr_assert_eq(svp_ops_create(&params, &ops), SVP_OK);
    cr_assert_eq(svp_vae_create(ops, tmp, NULL, &vae), SVP_OK);
    svp_vae_latent_size(svp_vae_config(vae), h, w, &lh, &lw);
    image = malloc(sizeof(float) * n * 3 * h * w);
    mean  = malloc(sizeof(float) * n * 4 * lh * lw);
    out   = malloc(sizeof(float) * frames * 3 * h * w);
    for (i = 0; i < n * 3 * h * w; i++) {
        image[i] = sinf(0.37f * i);
    }
    cr_assert_eq(svp_vae_encode(vae, n, h, w, image, mean, NULL, NULL), SVP_OK);
    assert_finite_varied("latent mean", mean, (int64_t)n * 4 * lh * lw);
    /* latents for the decoder: any O(1) pattern (image holds enough values) */
    cr_assert_eq(svp_vae_decode(vae, frames, lh, lw, 0, image, out), SVP_OK);
    assert_finite_varied("decoded frames", out, (int64_t)frames * 3 * h * w);
    svp_vae_destroy(vae);
    svp_ops_destroy(ops);
    free(image);
    free(mean);
    free(out);
    svp_rmtree(tmp);
}

Test(random, clip_loads_and_runs)
{
    svp_ops_params_t         params = {.threads = 1};
    svp_ops_h                ops;
    svp_clip_h               clip;
    const svp_clip_config_t *c;
    char                     dir[4096], tmp[64], cfg[4200];
    float                   *pixels, *embeds;
    int                      i, n;

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    cr_assert_eq(svp_clip_write_random(cfg, 3, tmp), SVP_OK);
    cr_assert_eq(svp_ops_create(&params, &ops), SVP_OK);
    cr_assert_eq(svp_clip_create(ops, tmp, NULL, &clip), SVP_OK);
    c      = svp_clip_config(clip);
    n      = 2 * c->num_channels * c->image_size * c->image_size;
    pixels = malloc(sizeof(float) * n);
    embeds = malloc(sizeof(float) * 2 * c->projection_dim);
    for (i = 0; i < n; i++) {
        pixels[i] = cosf(0.11f * i);
    }
    cr_assert_eq(svp_clip_encode(clip, 2, pixels, embeds), SVP_OK);
    assert_finite_varied("image_embeds", embeds, 2 * c->projection_dim);
    svp_clip_destroy(clip);
    svp_ops_destroy(ops);
    free(pixels);
    free(embeds);
    svp_rmtree(tmp);
}

/* The shipped svd-mini configs, from the source tree. */
static void svd_mini_dir(char *buf, size_t len)
{
    const char *src = getenv("SVP_TOP_SRCDIR");
    struct stat sb;

    snprintf(buf, len, "%s/etc/models/svd-mini", src ? src : "..");
    cr_assert_eq(stat(buf, &sb), 0,
                 "svd-mini configs not found at %s "
                 "(set SVP_TOP_SRCDIR)",
                 buf);
}

Test(svd_init, model_config_dir_gives_a_loadable_folder)
{
    svp_ops_params_t params = {.threads = 1};
    svp_ops_h        ops;
    svp_unet_h       unet;
    svp_vae_h        vae;
    svp_clip_h       clip;
    char             src[4096], tmp[64], out[128], a[4300], b[4300];
    struct stat      sb;

    svd_mini_dir(src, sizeof(src));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(out, sizeof(out), "%s/model", tmp);
    cr_assert_eq(svp_svd_write_random(src, 5, out), SVP_OK);
    cr_assert_eq(svp_ops_create(&params, &ops), SVP_OK);
    snprintf(a, sizeof(a), "%s/unet", out);
    cr_assert_eq(svp_unet_create(ops, a, NULL, &unet), SVP_OK);
    svp_unet_destroy(unet);
    snprintf(a, sizeof(a), "%s/vae", out);
    cr_assert_eq(svp_vae_create(ops, a, NULL, &vae), SVP_OK);
    svp_vae_destroy(vae);
    snprintf(a, sizeof(a), "%s/image_encoder", out);
    cr_assert_eq(svp_clip_create(ops, a, NULL, &clip), SVP_OK);
    cr_assert_eq(svp_clip_config(clip)->projection_dim, 64,
                 "image embeddings must match the UNet's cross_attention_dim");
    svp_clip_destroy(clip);
    svp_ops_destroy(ops);
    snprintf(a, sizeof(a), "%s/scheduler/scheduler_config.json", out);
    snprintf(b, sizeof(b), "%s/scheduler/scheduler_config.json", src);
    cr_assert(files_equal(a, b));
    snprintf(a, sizeof(a), "%s/feature_extractor/preprocessor_config.json", out);
    cr_assert_eq(stat(a, &sb), 0);
    snprintf(a, sizeof(a), "%s/model_index.json", out);
    cr_assert_eq(stat(a, &sb), 0);
    svp_rmtree(tmp);
}

Test(svd_init, model_config_dir_is_idempotent_and_whole)
{
    char        src[4096], tmp[64], out[128], a[4300], b[256], cmd[16384];
    struct stat sb;

    svd_mini_dir(src, sizeof(src));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(out, sizeof(out), "%s/model", tmp);
    cr_assert_eq(svp_svd_write_random(src, 9, out), SVP_OK);
    snprintf(a, sizeof(a), "%s/copy", tmp);
    snprintf(cmd, sizeof(cmd), "cp -r %s %s", out, a);
    cr_assert_eq(system(cmd), 0);
    /* a second run over the existing folder gives the same bytes */
    cr_assert_eq(svp_svd_write_random(src, 9, out), SVP_OK);
    snprintf(a, sizeof(a), "%s/unet/diffusion_pytorch_model.safetensors", out);
    snprintf(b, sizeof(b), "%s/copy/unet/diffusion_pytorch_model.safetensors", tmp);
    cr_assert(files_equal(a, b));
    snprintf(a, sizeof(a), "%s/image_encoder/model.safetensors", out);
    snprintf(b, sizeof(b), "%s/copy/image_encoder/model.safetensors", tmp);
    cr_assert(files_equal(a, b));
    /* no temporaries left beside it */
    snprintf(a, sizeof(a), "%s.tmp.%ld", out, (long)getpid());
    cr_assert_neq(stat(a, &sb), 0, "%s left behind", a);
    snprintf(a, sizeof(a), "%s.old.%ld", out, (long)getpid());
    cr_assert_neq(stat(a, &sb), 0, "%s left behind", a);

    /* a broken config: no output folder at all, no temporary */
    snprintf(a, sizeof(a), "%s/broken", tmp);
    snprintf(cmd, sizeof(cmd), "cp -r %s %s && echo '{' > %s/vae/config.json", src,
             a, a);
    cr_assert_eq(system(cmd), 0);
    snprintf(b, sizeof(b), "%s/out2", tmp);
    cr_assert_neq(svp_svd_write_random(a, 9, b), SVP_OK);
    cr_assert_neq(stat(b, &sb), 0, "a failed run left %s", b);
    snprintf(a, sizeof(a), "%s.tmp.%ld", b, (long)getpid());
    cr_assert_neq(stat(a, &sb), 0, "%s left behind", a);
    svp_rmtree(tmp);
}

Test(svd_init, config_kind_dispatch)
{
    char             dir[4096], cfg[4200];
    svp_model_arch_t kind;

    golden_dir("svd_xt_layout", dir, sizeof(dir));
    snprintf(cfg, sizeof(cfg), "%s/unet/config.json", dir);
    cr_assert_eq(svp_model_config_kind(cfg, &kind), SVP_OK);
    cr_assert_eq(kind, SVP_MODEL_ARCH_UNET);
    snprintf(cfg, sizeof(cfg), "%s/vae/config.json", dir);
    cr_assert_eq(svp_model_config_kind(cfg, &kind), SVP_OK);
    cr_assert_eq(kind, SVP_MODEL_ARCH_VAE);
    snprintf(cfg, sizeof(cfg), "%s/image_encoder/config.json", dir);
    cr_assert_eq(svp_model_config_kind(cfg, &kind), SVP_OK);
    cr_assert_eq(kind, SVP_MODEL_ARCH_CLIP);
    snprintf(cfg, sizeof(cfg), "%s/scheduler/scheduler_config.json", dir);
    cr_assert_eq(svp_model_config_kind(cfg, &kind), SVP_ERR_UNSUPPORTED);
}

/* The values are copied, not computed: compared exactly to what the file
 * says (and to SVD's built-in defaults, which are the same numbers). */
Test(preprocessor, svd_xt_config)
{
    svp_media_clip_params_t got, svd;
    char                    dir[4096], path[4200];
    int                     i;

    golden_dir("svd_xt_layout", dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/feature_extractor/preprocessor_config.json",
             dir);
    cr_assert_eq(svp_media_clip_params_load(path, &got), SVP_OK);
    svp_media_clip_params_init(&svd);
    cr_assert_eq(got.height, 224);
    cr_assert_eq(got.width, 224);
    cr_assert_eq(got.height, svd.height);
    for (i = 0; i < 3; i++) {
        cr_assert_eq(got.mean[i], svd.mean[i], "mean[%d] %.9g vs %.9g", i,
                     got.mean[i], svd.mean[i]);
        cr_assert_eq(got.std[i], svd.std[i], "std[%d]", i);
    }
    cr_assert_eq(got.mean[0], 0.48145466f);
    cr_assert_eq(got.std[2], 0.27577711f);
}

Test(preprocessor, svd_mini_size_and_errors)
{
    svp_media_clip_params_t got;
    char                    src[4096], path[4200], tmp[64], *log = NULL;
    size_t                  len = 0;
    FILE                   *mem;

    svd_mini_dir(src, sizeof(src));
    snprintf(path, sizeof(path), "%s/feature_extractor/preprocessor_config.json",
             src);
    cr_assert_eq(svp_media_clip_params_load(path, &got), SVP_OK);
    cr_assert_eq(got.height, 56);
    cr_assert_eq(got.width, 56);

    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(path, sizeof(path), "%s/preprocessor_config.json", tmp);
    cr_assert_eq(svp_file_write_atomic(path,
                                       "{\"image_mean\": [0.5, 0.5], "
                                       "\"image_std\": [1, 1, 1], \"size\": 8}",
                                       61),
                 SVP_OK);
    mem = open_memstream(&log, &len);
    svp_log_set_stream(mem);
    cr_assert_eq(svp_media_clip_params_load(path, &got), SVP_ERR_BAD_FILE);
    svp_log_set_stream(NULL);
    fclose(mem);
    cr_assert_not_null(strstr(log, path), "%s", log);
    cr_assert_not_null(strstr(log, "'image_mean'"), "%s", log);
    free(log);
    svp_rmtree(tmp);
}

/*
 * A sparse SVD-XT checkpoint from svd_xt_layout: the real configs, and
 * fp16 weight files whose headers list every tensor of tensors.json (all
 * but 'skip') and whose data is a hole.  A few kilobytes on disk.
 */
static void write_sparse_component(const char *golden, const char *out,
                                   const char *sub, const char *file,
                                   const char *skip)
{
    char         path[4400], *text;
    size_t       len, i;
    json_error_t jerr;
    json_t      *root, *tensors, *shape, *hdr, *entry, *dims;
    const char  *name;
    uint64_t     offset = 0, nbytes;

    snprintf(path, sizeof(path), "%s/%s/config.json", golden, sub);
    cr_assert_eq(svp_file_read_all(path, &text, &len), SVP_OK);
    snprintf(path, sizeof(path), "%s/%s", out, sub);
    cr_assert_eq(svp_mkdir_p(path, 0755), SVP_OK);
    snprintf(path, sizeof(path), "%s/%s/config.json", out, sub);
    cr_assert_eq(svp_file_write_atomic(path, text, len), SVP_OK);
    free(text);

    snprintf(path, sizeof(path), "%s/%s/tensors.json", golden, sub);
    root = json_load_file(path, 0, &jerr);
    cr_assert_not_null(root, "%s: %s", path, jerr.text);
    tensors = json_object_get(root, "tensors");
    hdr     = json_object();
    json_object_foreach(tensors, name, shape)
    {
        if (skip != NULL && strcmp(name, skip) == 0) {
            continue;
        }
        nbytes = 2;
        dims   = json_array();
        for (i = 0; i < json_array_size(shape); i++) {
            nbytes *= (uint64_t)json_integer_value(json_array_get(shape, i));
            json_array_append_new(dims, json_integer(json_integer_value(
                                            json_array_get(shape, i))));
        }
        entry = json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F16", "shape", dims,
                          "data_offsets", (json_int_t)offset,
                          (json_int_t)(offset + nbytes));
        json_object_set_new(hdr, name, entry);
        offset += nbytes;
    }
    snprintf(path, sizeof(path), "%s/%s/%s", out, sub, file);
    golden_write_hollow(path, hdr, offset);
    json_decref(hdr);
    json_decref(root);
}

static void write_sparse_svd_xt(const char *golden, const char *out,
                                const char *skip_vae)
{
    char        src[4400], dst[4400], *text;
    size_t      len;
    const char *copies[][2] = {
        {"", "model_index.json"},
        {"scheduler", "scheduler_config.json"},
        {"feature_extractor", "preprocessor_config.json"},
    };
    size_t i;

    for (i = 0; i < SVP_ARRAY_SIZE(copies); i++) {
        snprintf(src, sizeof(src), "%s/%s/%s", golden, copies[i][0], copies[i][1]);
        snprintf(dst, sizeof(dst), "%s/%s", out, copies[i][0]);
        cr_assert_eq(svp_mkdir_p(dst, 0755), SVP_OK);
        snprintf(dst, sizeof(dst), "%s/%s/%s", out, copies[i][0], copies[i][1]);
        cr_assert_eq(svp_file_read_all(src, &text, &len), SVP_OK);
        cr_assert_eq(svp_file_write_atomic(dst, text, len), SVP_OK);
        free(text);
    }
    write_sparse_component(golden, out, "unet",
                           "diffusion_pytorch_model.fp16.safetensors", NULL);
    write_sparse_component(golden, out, "vae",
                           "diffusion_pytorch_model.fp16.safetensors", skip_vae);
    write_sparse_component(golden, out, "image_encoder", "model.fp16.safetensors",
                           NULL);
}

/* Runs check-model on dir; returns its exit code and what it logged. */
static int run_check_model(const char *dir, char **log_p)
{
    char  *argv[] = {"check-model", (char *)dir, NULL};
    size_t len    = 0;
    FILE  *mem    = open_memstream(log_p, &len);
    int    rc;

    svp_log_set_stream(mem);
    rc = svdtool_check_model_main(2, argv);
    svp_log_set_stream(NULL);
    fclose(mem);
    return rc;
}

Test(check_model, sparse_svd_xt_fp16_is_valid)
{
    char golden[4096], tmp[64], *log;
    int  rc;

    golden_dir("svd_xt_layout", golden, sizeof(golden));
    golden_make_tmp("init", tmp, sizeof(tmp));
    write_sparse_svd_xt(golden, tmp, NULL);
    rc = run_check_model(tmp, &log);
    cr_assert_eq(rc, SVP_EXIT_OK, "check-model failed:\n%s", log);
    free(log);
    svp_rmtree(tmp);
}

Test(check_model, missing_tensor_is_named)
{
    const char *gone = "decoder.up_blocks.2.resnets.1.time_mixer.mix_factor";
    char        golden[4096], tmp[64], *log;
    int         rc;

    golden_dir("svd_xt_layout", golden, sizeof(golden));
    golden_make_tmp("init", tmp, sizeof(tmp));
    write_sparse_svd_xt(golden, tmp, gone);
    rc = run_check_model(tmp, &log);
    cr_assert_neq(rc, SVP_EXIT_OK);
    cr_assert_not_null(strstr(log, gone), "the log does not name %s:\n%s", gone,
                       log);
    free(log);
    svp_rmtree(tmp);
}

Test(check_model, svd_mini_random_folder_is_valid)
{
    char src[4096], tmp[64], out[128], *log;
    int  rc;

    svd_mini_dir(src, sizeof(src));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(out, sizeof(out), "%s/model", tmp);
    cr_assert_eq(svp_svd_write_random(src, 1, out), SVP_OK);
    rc = run_check_model(out, &log);
    cr_assert_eq(rc, SVP_EXIT_OK, "check-model failed:\n%s", log);
    free(log);
    svp_rmtree(tmp);
}

/* What a job asks of the folder (svdlaunch's checks before queueing): a
 * job with a conditioning file reads unet/ alone, and vae/ when it is
 * there; a job that encodes images reads the image parts too. */
Test(check_model, a_job_checks_the_parts_it_reads)
{
    const char *gone = "decoder.up_blocks.2.resnets.1.time_mixer.mix_factor";
    char        golden[4096], tmp[64], path[128];

    golden_dir("svd_xt_layout", golden, sizeof(golden));
    golden_make_tmp("init", tmp, sizeof(tmp));
    write_sparse_svd_xt(golden, tmp, NULL);
    snprintf(path, sizeof(path), "%s/image_encoder", tmp);
    cr_assert_eq(svp_rmtree(path), SVP_OK);
    snprintf(path, sizeof(path), "%s/feature_extractor", tmp);
    cr_assert_eq(svp_rmtree(path), SVP_OK);
    cr_assert_eq(svp_checkpoint_check(tmp, SVP_CHECKPOINT_FOR_JOB, NULL), SVP_OK);
    cr_assert_neq(svp_checkpoint_check(tmp,
                                       SVP_CHECKPOINT_FOR_JOB |
                                           SVP_CHECKPOINT_IMAGES,
                                       NULL),
                  SVP_OK);
    cr_assert_neq(svp_checkpoint_check(tmp, 0, NULL), SVP_OK);
    snprintf(path, sizeof(path), "%s/vae", tmp);
    cr_assert_eq(svp_rmtree(path), SVP_OK);
    cr_assert_eq(svp_checkpoint_check(tmp, SVP_CHECKPOINT_FOR_JOB, NULL), SVP_OK);
    svp_rmtree(tmp);

    /* a vae/ that is there is checked, even where the job could do without */
    golden_make_tmp("init", tmp, sizeof(tmp));
    write_sparse_svd_xt(golden, tmp, gone);
    snprintf(path, sizeof(path), "%s/image_encoder", tmp);
    cr_assert_eq(svp_rmtree(path), SVP_OK);
    cr_assert_neq(svp_checkpoint_check(tmp, SVP_CHECKPOINT_FOR_JOB, NULL), SVP_OK);
    svp_rmtree(tmp);
}

/* svdtool init writes every part of the table, each where the check looks. */
Test(check_model, init_writes_every_part_of_the_table)
{
    const svp_checkpoint_part_t *parts;
    char                         src[4096], tmp[64], out[128], path[512];
    struct stat                  sb;
    int                          count, i;

    svd_mini_dir(src, sizeof(src));
    golden_make_tmp("init", tmp, sizeof(tmp));
    snprintf(out, sizeof(out), "%s/model", tmp);
    cr_assert_eq(svp_svd_write_random(src, 1, out), SVP_OK);
    parts = svp_checkpoint_parts(&count);
    cr_assert_eq(count, 6);
    for (i = 0; i < count; i++) {
        snprintf(path, sizeof(path), "%s/%s%s%s", out, parts[i].dir,
                 parts[i].dir[0] ? "/" : "", parts[i].config);
        cr_assert_eq(stat(path, &sb), 0, "%s: no %s", parts[i].name, path);
        if (parts[i].weights != NULL) {
            snprintf(path, sizeof(path), "%s/%s/%s.safetensors", out, parts[i].dir,
                     parts[i].weights);
            cr_assert_eq(stat(path, &sb), 0, "%s: no %s", parts[i].name, path);
        }
    }
    svp_rmtree(tmp);
}
