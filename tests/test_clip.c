/*
 * Tests for the CLIP image encoder (transformers'
 * CLIPVisionModelWithProjection) against transformers' golden outputs:
 * $SVP_GOLDEN_DIR/clip_tiny (image_embeds, last_hidden_state, pooler_output
 * and layer 0 in detail) and clip_preprocess (patch 14 at SVD's 224, 56 in
 * the compact set, from the golden pixel_values); plus quick_gelu against
 * a plain fp64 statement of the model, loader errors and the real SVD-XT
 * image_encoder layout.
 *
 * Tolerance (golden README, "CLIP tolerances"): pass if
 * max|C - golden| <= 3e-6 * max|golden|.  transformers' fp32 vs fp64 gap is
 * <= 7.5e-7 relative; layer_norm_eps 1e-6 instead of 1e-5 moves image_embeds
 * by 5.8e-6, so the bound must not be loosened.
 */
#include "model/clip.h"
#include "common/log.h"
#include "common/file.h"
#include "tensor/safetensors.h"
#include "golden.h"
#include "tools/svdtool_cmds_vae.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLIP_REL_TOL 3e-6

static svp_ops_h ops;

static void setup(void)
{
    svp_ops_params_t params = {.threads = 2};
    cr_assert_eq(svp_ops_create(&params, &ops), SVP_OK);
}

static void teardown(void)
{
    svp_ops_destroy(ops);
}

static void assert_close(const char *what, const float *got, const float *ref,
                         int64_t n)
{
    golden_assert_close(what, got, ref, n, CLIP_REL_TOL);
}

/*
 * The memory plan: a second encode of the same shape is served from the
 * arena the first one sized (no backend allocation) and gives the same bits.
 */
static void encode_again_from_arena(svp_clip_h clip, const svp_tensor_t *pixels,
                                    const float *first)
{
    size_t              n = pixels->shape[0] * svp_clip_config(clip)->projection_dim;
    svp_ops_mem_stats_t warm, again;
    float              *second = malloc(n * sizeof(float));

    cr_assert_not_null(second);
    svp_ops_mem_stats(ops, &warm);
    cr_assert_eq(svp_clip_encode(clip, (int)pixels->shape[0], pixels->data, second),
                 SVP_OK);
    svp_ops_mem_stats(ops, &again);
    cr_assert_eq(again.backend_allocs, warm.backend_allocs,
                 "clip: %llu backend allocations after warm-up",
                 (unsigned long long)(again.backend_allocs - warm.backend_allocs));
    cr_assert_eq(again.reserved_bytes, warm.reserved_bytes);
    cr_assert_eq(memcmp(second, first, n * sizeof(float)), 0,
                 "clip: the second encode differs from the first");
    free(second);
}

/* Runs the encoder of dir on pixel_values; returns image_embeds. */
static float *encode(const char *dir, const svp_clip_params_t *params,
                     const svp_tensor_t *pixels)
{
    svp_clip_h clip;
    float     *embeds;

    cr_assert_eq(svp_clip_create(ops, dir, params, &clip), SVP_OK);
    embeds = malloc(pixels->shape[0] * svp_clip_config(clip)->projection_dim *
                    sizeof(float));
    cr_assert_eq(svp_clip_encode(clip, (int)pixels->shape[0], pixels->data, embeds),
                 SVP_OK);
    if (params == NULL || params->capture_cb == NULL) {
        /* (a capture callback would see every tensor twice) */
        encode_again_from_arena(clip, pixels, embeds);
    }
    svp_clip_destroy(clip);
    return embeds;
}

/*
 * Matrix weights held in bf16 / f16 (doc/DTYPES.md): the image embeddings'
 * error against transformers' fp32 output is C * u, u the dtype's unit
 * round-off (2^-8, 2^-11) and C a property of the model and input.
 * transformers itself, fed the same rounded linear/conv weights in fp32,
 * errs by CLIP_ROUNDOFF_BF16 u and CLIP_ROUNDOFF_F16 u on this case; the
 * rounding is deterministic, so ours must match within 10%.
 */
#define CLIP_ROUNDOFF_BF16 0.825
#define CLIP_ROUNDOFF_F16  0.969

static void roundoff_case(const char *dtype, double u, double c_ref)
{
    svp_ops_params_t  pp = {.threads = 2,
                            .dtype   = (svp_dtype_t)svp_dtype_parse_short(dtype),
                            .f32_products = 1};
    char              dir[1024];
    svp_ops_h         h;
    svp_clip_h        clip;
    svp_safetensors_h st;
    svp_tensor_t     *pixels, *embeds;
    float            *got;
    int64_t           worst;
    double            err;

    golden_dir("clip_tiny", dir, sizeof(dir));
    st     = golden_open(dir, "io.safetensors");
    pixels = golden_load(st, "pixel_values");
    embeds = golden_load(st, "image_embeds");
    svp_safetensors_close(st);

    cr_assert_eq(svp_ops_create(&pp, &h), SVP_OK);
    cr_assert_eq(svp_clip_create(h, dir, NULL, &clip), SVP_OK);
    got = malloc(svp_tensor_nbytes(embeds));
    cr_assert_eq(svp_clip_encode(clip, (int)pixels->shape[0], pixels->data, got),
                 SVP_OK);
    err = golden_rel_err(got, embeds->data, svp_tensor_numel(embeds), &worst);
    cr_log_info("clip_tiny, weights in %s: %.4g = %.3f u", dtype, err, err / u);
    cr_assert(fabs(err / u - c_ref) <= 0.1 * c_ref,
              "image embeds with %s "
              "weights: error %.3f u, transformers with the same rounding "
              "%.3f u",
              dtype, err / u, c_ref);
    free(got);
    svp_clip_destroy(clip);
    svp_ops_destroy(h);
    svp_tensor_destroy(pixels);
    svp_tensor_destroy(embeds);
}

Test(clip, weights_in_bf16_within_roundoff, .init = setup, .fini = teardown)
{
    roundoff_case("bf16", 0x1p-8, CLIP_ROUNDOFF_BF16);
}

Test(clip, weights_in_f16_within_roundoff, .init = setup, .fini = teardown)
{
    roundoff_case("f16", 0x1p-11, CLIP_ROUNDOFF_F16);
}

/* ---- captured intermediates ---- */

static void compare_capture(const golden_captures_t *caps, const char *name,
                            const svp_tensor_t *ref, const char *what)
{
    const golden_capture_t *c = golden_captures_find(caps, name);

    cr_assert_not_null(c, "%s was not captured", name);
    cr_assert_eq(c->count, svp_tensor_numel(ref), "%s: element count", name);
    assert_close(what, c->data, ref->data, c->count);
}

/* ---- clip_tiny ---- */

Test(clip, tiny_golden, .init = setup, .fini = teardown)
{
    char               dir[1024];
    golden_captures_t *caps   = golden_captures_new();
    svp_clip_params_t  params = {.capture_cb  = golden_capture_cb,
                                 .capture_arg = caps};
    svp_safetensors_h  st;
    svp_tensor_t      *pixels, *embeds, *lhs, *pooled;
    float             *got;
    int                i, compared = 0;

    golden_dir("clip_tiny", dir, sizeof(dir));
    st     = golden_open(dir, "io.safetensors");
    pixels = golden_load(st, "pixel_values");
    embeds = golden_load(st, "image_embeds");
    lhs    = golden_load(st, "last_hidden_state");
    pooled = golden_load(st, "pooler_output");
    svp_safetensors_close(st);

    got = encode(dir, &params, pixels);

    /* every golden intermediate, in the model's order, except attn_probs
     * (the fused attention op never materialises the probabilities) */
    st = golden_open(dir, "intermediates.safetensors");
    for (i = 0; i < caps->n; i++) {
        svp_safetensors_info_t info;
        svp_tensor_t          *ref;

        if (svp_safetensors_find(st, caps->items[i].name, &info) != SVP_OK) {
            continue;
        }
        ref = golden_load(st, caps->items[i].name);
        compare_capture(caps, caps->items[i].name, ref, caps->items[i].name);
        svp_tensor_destroy(ref);
        compared++;
    }
    cr_assert_eq(compared, svp_safetensors_count(st) - 1,
                 "%d of %d golden intermediates compared", compared,
                 svp_safetensors_count(st));
    svp_safetensors_close(st);

    /* last_hidden_state is the raw output of the last of clip_tiny's 3
     * layers (no post_layernorm) */
    compare_capture(caps, "out.vision_model.encoder.layers.2", lhs,
                    "last_hidden_state");
    compare_capture(caps, "out.vision_model.post_layernorm", pooled,
                    "pooler_output");
    assert_close("image_embeds", got, embeds->data, svp_tensor_numel(embeds));

    free(got);
    svp_tensor_destroy(pixels);
    svp_tensor_destroy(embeds);
    svp_tensor_destroy(lhs);
    svp_tensor_destroy(pooled);
    golden_captures_free(caps);
}

/*
 * Patch 14 on the case's input size, from the golden pixel_values: SVD's
 * 224 (257 tokens) in the larger set, 56 (17 tokens) in the compact one.
 */
Test(clip, preprocess_encoder_golden, .init = setup, .fini = teardown)
{
    char              dir[1024], enc[1100];
    svp_safetensors_h st;
    svp_tensor_t     *pixels, *embeds;
    float            *got;

    golden_dir("clip_preprocess", dir, sizeof(dir));
    st     = golden_open(dir, "io.safetensors");
    pixels = golden_load(st, "pixel_values");
    embeds = golden_load(st, "image_embeds");
    svp_safetensors_close(st);
    snprintf(enc, sizeof(enc), "%s/image_encoder", dir);

    got = encode(enc, NULL, pixels);
    assert_close("image_embeds", got, embeds->data, svp_tensor_numel(embeds));
    free(got);
    svp_tensor_destroy(pixels);
    svp_tensor_destroy(embeds);
}

/* ---- rewritten model directories ---- */

/*
 * Copies dir's model.safetensors into tmp/file converted to dtype, leaving
 * out the tensor named skip (if any) and adding a position_ids buffer as
 * old checkpoints carry it; writes config_text (or dir's config) as
 * config.json.
 */
static void rewrite_model(const char *dir, const char *tmp, const char *file,
                          svp_dtype_t dtype, const char *skip,
                          const char *config_text)
{
    char                     path[4096], *text;
    size_t                   len;
    svp_safetensors_h        st = golden_open(dir, "model.safetensors");
    svp_safetensors_writer_h wr;
    svp_tensor_t           **keep, *ids;
    int64_t                  ids_shape[2] = {1, 17};
    int                      i, n, kept = 0;

    n    = svp_safetensors_count(st);
    keep = calloc(n, sizeof(*keep));
    cr_assert_eq(svp_safetensors_writer_create(&wr), SVP_OK);
    for (i = 0; i < n; i++) {
        svp_safetensors_info_t info;

        cr_assert_eq(svp_safetensors_info(st, i, &info), SVP_OK);
        if (skip && strcmp(info.name, skip) == 0) {
            continue;
        }
        cr_assert_eq(svp_safetensors_load(st, info.name, dtype, &keep[kept]),
                     SVP_OK);
        cr_assert_eq(svp_safetensors_writer_add(wr, info.name, keep[kept]), SVP_OK);
        kept++;
    }
    cr_assert_eq(svp_tensor_create(SVP_DTYPE_I64, 2, ids_shape, &ids), SVP_OK);
    cr_assert_eq(svp_safetensors_writer_add(wr,
                                            "vision_model.embeddings.position_ids",
                                            ids),
                 SVP_OK);
    snprintf(path, sizeof(path), "%s/%s", tmp, file);
    cr_assert_eq(svp_safetensors_writer_commit(wr, path), SVP_OK);
    svp_safetensors_writer_destroy(wr);
    svp_tensor_destroy(ids);
    for (i = 0; i < kept; i++) {
        svp_tensor_destroy(keep[i]);
    }
    free(keep);
    svp_safetensors_close(st);

    snprintf(path, sizeof(path), "%s/config.json", tmp);
    if (config_text != NULL) {
        cr_assert_eq(svp_file_write_atomic(path, config_text, strlen(config_text)),
                     SVP_OK);
    } else {
        snprintf(path, sizeof(path), "%s/config.json", dir);
        cr_assert_eq(svp_file_read_all(path, &text, &len), SVP_OK);
        snprintf(path, sizeof(path), "%s/config.json", tmp);
        cr_assert_eq(svp_file_write_atomic(path, text, len), SVP_OK);
        free(text);
    }
}

/* dir's config.json with hidden_act replaced. */
static char *config_with_act(const char *dir, const char *act)
{
    char         path[4096], *text;
    json_error_t err;
    json_t      *root;

    snprintf(path, sizeof(path), "%s/config.json", dir);
    root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "%s: %s", path, err.text);
    json_object_set_new(root, "hidden_act", json_string(act));
    text = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    return text;
}

/* Runs create on tmp expecting failure; returns what was logged. */
static char *create_fails(const char *tmp)
{
    char      *log  = NULL;
    size_t     len  = 0;
    FILE      *mem  = open_memstream(&log, &len);
    svp_clip_h clip = NULL;

    svp_log_set_stream(mem);
    cr_assert_eq(svp_clip_create(ops, tmp, NULL, &clip), SVP_ERR_BAD_FILE);
    svp_log_set_stream(stderr);
    fclose(mem);
    cr_assert_null(clip, "a failed create must not write the handle");
    return log;
}

/*
 * The .fp16 variant name, a stray position_ids buffer: loads, and gives
 * the F32 model's output up to the fp16 rounding of the weights.
 */
Test(clip, loads_fp16_variant_with_position_ids, .init = setup, .fini = teardown)
{
    char              dir[1024], tmp[64];
    svp_safetensors_h st;
    svp_tensor_t     *pixels, *embeds;
    float            *got;
    int64_t           worst;
    double            rel;

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("clip", tmp, sizeof(tmp));
    rewrite_model(dir, tmp, "model.fp16.safetensors", SVP_DTYPE_F16, NULL, NULL);
    st     = golden_open(dir, "io.safetensors");
    pixels = golden_load(st, "pixel_values");
    embeds = golden_load(st, "image_embeds");
    svp_safetensors_close(st);

    got = encode(tmp, NULL, pixels);
    rel = golden_rel_err(got, embeds->data, svp_tensor_numel(embeds), &worst);
    cr_assert(rel > 0.0 && rel < 1e-2, "fp16 weights: %.3g relative", rel);
    free(got);
    svp_tensor_destroy(pixels);
    svp_tensor_destroy(embeds);
    svp_rmtree(tmp);
}

Test(clip, missing_tensor_is_named, .init = setup, .fini = teardown)
{
    const char *victim = "vision_model.encoder.layers.1.self_attn.v_proj.bias";
    char        dir[1024], tmp[64], *log;

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("clip", tmp, sizeof(tmp));
    rewrite_model(dir, tmp, "model.safetensors", SVP_DTYPE_F32, victim, NULL);
    log = create_fails(tmp);
    cr_assert_not_null(strstr(log, victim), "the error does not name the tensor: %s",
                       log);
    free(log);
    svp_rmtree(tmp);
}

Test(clip, unknown_activation_is_rejected, .init = setup, .fini = teardown)
{
    char dir[1024], tmp[64], *cfg, *log;

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("clip", tmp, sizeof(tmp));
    cfg = config_with_act(dir, "gelu_new");
    rewrite_model(dir, tmp, "model.safetensors", SVP_DTYPE_F32, NULL, cfg);
    free(cfg);
    log = create_fails(tmp);
    cr_assert_not_null(strstr(log, "gelu_new"), "%s", log);
    cr_assert_not_null(strstr(log, "hidden_act"), "%s", log);
    free(log);
    svp_rmtree(tmp);
}

/* ---- quick_gelu against a plain fp64 statement of the model ---- */

static double *ref_w(svp_safetensors_h st, const char *fmt, int layer)
{
    char          name[256];
    svp_tensor_t *t;
    double       *d;
    int64_t       i, n;

    snprintf(name, sizeof(name), fmt, layer);
    t = golden_load(st, name);
    n = svp_tensor_numel(t);
    d = malloc(n * sizeof(double));
    for (i = 0; i < n; i++) {
        d[i] = ((const float *)t->data)[i];
    }
    svp_tensor_destroy(t);
    return d;
}

static void ref_layer_norm(double *x, int rows, int d, const double *g,
                           const double *b, double eps)
{
    int r, i;

    for (r = 0; r < rows; r++) {
        double *v = x + (int64_t)r * d, mean = 0.0, var = 0.0;
        for (i = 0; i < d; i++) {
            mean += v[i];
        }
        mean /= d;
        for (i = 0; i < d; i++) {
            var += (v[i] - mean) * (v[i] - mean);
        }
        var /= d;
        for (i = 0; i < d; i++) {
            v[i] = (v[i] - mean) / sqrt(var + eps) * g[i] + b[i];
        }
    }
}

/* y[rows, out] = x[rows, in] W^T + b (b may be NULL) */
static void ref_linear(const double *x, int rows, int in, int out, const double *w,
                       const double *b, double *y)
{
    int r, o, i;

    for (r = 0; r < rows; r++) {
        for (o = 0; o < out; o++) {
            double s = b ? b[o] : 0.0;
            for (i = 0; i < in; i++) {
                s += x[(int64_t)r * in + i] * w[(int64_t)o * in + i];
            }
            y[(int64_t)r * out + o] = s;
        }
    }
}

/*
 * image_embeds of one image, in fp64, straight from the formulas of the
 * golden README's CLIP section, with quick_gelu as the activation.
 */
static void ref_clip_quick_gelu(const char *dir, const svp_clip_config_t *cfg,
                                const float *pixels, double *embeds)
{
    svp_safetensors_h st = golden_open(dir, "model.safetensors");
    int               D = cfg->hidden_size, I = cfg->intermediate_size;
    int               p = cfg->patch_size, g = cfg->image_size / p, T = 1 + g * g;
    int               H = cfg->num_heads, hd = D / H, S = cfg->image_size;
    int               l, t, s, c, y, x, o, hh, i;
    double           *h   = calloc((size_t)T * D, sizeof(double));
    double           *a   = calloc((size_t)T * D, sizeof(double));
    double           *q   = calloc((size_t)T * D, sizeof(double));
    double           *k   = calloc((size_t)T * D, sizeof(double));
    double           *v   = calloc((size_t)T * D, sizeof(double));
    double           *att = calloc((size_t)T * D, sizeof(double));
    double           *f   = calloc((size_t)T * I, sizeof(double));
    double           *sc  = calloc(T, sizeof(double));
    double           *w, *w2, *b, *b2;

    w  = ref_w(st, "vision_model.embeddings.patch_embedding.weight", 0);
    b  = ref_w(st, "vision_model.embeddings.class_embedding", 0);
    w2 = ref_w(st, "vision_model.embeddings.position_embedding.weight", 0);
    for (o = 0; o < D; o++) {
        h[o] = b[o] + w2[o];
    }
    for (t = 1; t < T; t++) {
        int gy = (t - 1) / g, gx = (t - 1) % g;
        for (o = 0; o < D; o++) {
            double sum = 0.0;
            for (c = 0; c < cfg->num_channels; c++) {
                for (y = 0; y < p; y++) {
                    for (x = 0; x < p; x++) {
                        sum += w[((o * cfg->num_channels + c) * p + y) * p + x] *
                               pixels[(c * S + gy * p + y) * S + gx * p + x];
                    }
                }
            }
            h[t * D + o] = sum + w2[t * D + o];
        }
    }
    free(w);
    free(b);
    free(w2);
    w = ref_w(st, "vision_model.pre_layrnorm.weight", 0);
    b = ref_w(st, "vision_model.pre_layrnorm.bias", 0);
    ref_layer_norm(h, T, D, w, b, cfg->layer_norm_eps);
    free(w);
    free(b);

    for (l = 0; l < cfg->num_layers; l++) {
#define LW(_n) ref_w(st, "vision_model.encoder.layers.%d." _n, l)
        memcpy(a, h, (size_t)T * D * sizeof(double));
        w = LW("layer_norm1.weight");
        b = LW("layer_norm1.bias");
        ref_layer_norm(a, T, D, w, b, cfg->layer_norm_eps);
        free(w);
        free(b);
        w = LW("self_attn.q_proj.weight");
        b = LW("self_attn.q_proj.bias");
        ref_linear(a, T, D, D, w, b, q);
        free(w);
        free(b);
        w = LW("self_attn.k_proj.weight");
        b = LW("self_attn.k_proj.bias");
        ref_linear(a, T, D, D, w, b, k);
        free(w);
        free(b);
        w = LW("self_attn.v_proj.weight");
        b = LW("self_attn.v_proj.bias");
        ref_linear(a, T, D, D, w, b, v);
        free(w);
        free(b);
        for (hh = 0; hh < H; hh++) {
            for (t = 0; t < T; t++) {
                double mx = -INFINITY, sum = 0.0;
                for (s = 0; s < T; s++) {
                    double dot = 0.0;
                    for (i = 0; i < hd; i++) {
                        dot += q[t * D + hh * hd + i] * k[s * D + hh * hd + i];
                    }
                    sc[s] = dot / sqrt((double)hd);
                    mx    = fmax(mx, sc[s]);
                }
                for (s = 0; s < T; s++) {
                    sc[s] = exp(sc[s] - mx);
                    sum += sc[s];
                }
                for (i = 0; i < hd; i++) {
                    double acc = 0.0;
                    for (s = 0; s < T; s++) {
                        acc += sc[s] / sum * v[s * D + hh * hd + i];
                    }
                    att[t * D + hh * hd + i] = acc;
                }
            }
        }
        w = LW("self_attn.out_proj.weight");
        b = LW("self_attn.out_proj.bias");
        ref_linear(att, T, D, D, w, b, a);
        free(w);
        free(b);
        for (i = 0; i < T * D; i++) {
            h[i] += a[i];
        }
        memcpy(a, h, (size_t)T * D * sizeof(double));
        w = LW("layer_norm2.weight");
        b = LW("layer_norm2.bias");
        ref_layer_norm(a, T, D, w, b, cfg->layer_norm_eps);
        free(w);
        free(b);
        w  = LW("mlp.fc1.weight");
        b  = LW("mlp.fc1.bias");
        w2 = LW("mlp.fc2.weight");
        b2 = LW("mlp.fc2.bias");
#undef LW
        ref_linear(a, T, D, I, w, b, f);
        for (i = 0; i < T * I; i++) {
            f[i] = f[i] / (1.0 + exp(-1.702 * f[i]));
        }
        ref_linear(f, T, I, D, w2, b2, a);
        free(w);
        free(b);
        free(w2);
        free(b2);
        for (i = 0; i < T * D; i++) {
            h[i] += a[i];
        }
    }
    w = ref_w(st, "vision_model.post_layernorm.weight", 0);
    b = ref_w(st, "vision_model.post_layernorm.bias", 0);
    ref_layer_norm(h, 1, D, w, b, cfg->layer_norm_eps);
    free(w);
    free(b);
    w = ref_w(st, "visual_projection.weight", 0);
    ref_linear(h, 1, D, cfg->projection_dim, w, NULL, embeds);
    free(w);
    free(h);
    free(a);
    free(q);
    free(k);
    free(v);
    free(att);
    free(f);
    free(sc);
    svp_safetensors_close(st);
}

/*
 * quick_gelu (folded into the fc weights at load) agrees with the fp64
 * formulas within the golden CLIP tolerance, and differs from the gelu
 * model by the order formula_check.json reports (7e-3 relative).
 */
Test(clip, quick_gelu_matches_reference, .init = setup, .fini = teardown)
{
    char              dir[1024], tmp[64], *cfg_text;
    svp_safetensors_h st;
    svp_tensor_t     *pixels, *embeds;
    svp_clip_config_t cfg;
    float            *got, *want;
    double           *ref;
    int64_t           worst, per_image, i, b;
    double            rel;
    char              path[4096];

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("clip", tmp, sizeof(tmp));
    cfg_text = config_with_act(dir, "quick_gelu");
    rewrite_model(dir, tmp, "model.safetensors", SVP_DTYPE_F32, NULL, cfg_text);
    free(cfg_text);
    snprintf(path, sizeof(path), "%s/config.json", tmp);
    cr_assert_eq(svp_clip_config_load(path, &cfg), SVP_OK);
    cr_assert_eq(cfg.hidden_act, SVP_CLIP_ACT_QUICK_GELU);

    st     = golden_open(dir, "io.safetensors");
    pixels = golden_load(st, "pixel_values");
    embeds = golden_load(st, "image_embeds");
    svp_safetensors_close(st);

    got       = encode(tmp, NULL, pixels);
    per_image = (int64_t)cfg.num_channels * cfg.image_size * cfg.image_size;
    ref       = malloc(svp_tensor_numel(embeds) * sizeof(double));
    want      = malloc(svp_tensor_numel(embeds) * sizeof(float));
    for (b = 0; b < pixels->shape[0]; b++) {
        ref_clip_quick_gelu(dir, &cfg, (const float *)pixels->data + b * per_image,
                            ref + b * cfg.projection_dim);
    }
    for (i = 0; i < svp_tensor_numel(embeds); i++) {
        want[i] = (float)ref[i];
    }
    assert_close("quick_gelu image_embeds", got, want, svp_tensor_numel(embeds));
    rel = golden_rel_err(got, embeds->data, svp_tensor_numel(embeds), &worst);
    cr_assert(rel > 1e-3 && rel < 1e-1, "quick_gelu vs gelu differ by %.3g relative",
              rel);

    free(got);
    free(want);
    free(ref);
    svp_tensor_destroy(pixels);
    svp_tensor_destroy(embeds);
    svp_rmtree(tmp);
}

/* ---- the real SVD-XT image_encoder layout ---- */

/*
 * Writes tensors.json's names and shapes as an F16 safetensors file whose
 * data region is a hole, with a position_ids buffer added (some files carry
 * it; it must be ignored).  Returns the number of tensors of tensors.json.
 */
static int write_sparse_layout(const char *tensors_json, const char *path)
{
    json_error_t err;
    json_t      *root = json_load_file(tensors_json, 0, &err), *tensors, *hdr;
    const char  *key;
    json_t      *shape;
    size_t       k;
    uint64_t     offset = 0;
    int          count;

    cr_assert_not_null(root, "%s: %s", tensors_json, err.text);
    tensors = json_object_get(root, "tensors");
    cr_assert(json_is_object(tensors));
    count = (int)json_object_size(tensors);
    hdr   = json_object();
    json_object_foreach(tensors, key, shape)
    {
        json_t  *t     = json_object();
        uint64_t numel = 1;

        for (k = 0; k < json_array_size(shape); k++) {
            numel *= (uint64_t)json_integer_value(json_array_get(shape, k));
        }
        json_object_set_new(t, "dtype", json_string("F16"));
        json_object_set_new(t, "shape", json_incref(shape));
        json_object_set_new(t, "data_offsets",
                            json_pack("[I,I]", (json_int_t)offset,
                                      (json_int_t)(offset + 2 * numel)));
        json_object_set_new(hdr, key, t);
        offset += 2 * numel;
    }
    json_object_set_new(hdr, "vision_model.embeddings.position_ids",
                        json_pack("{s:s,s:[i,i],s:[I,I]}", "dtype", "I64", "shape",
                                  1, 257, "data_offsets", (json_int_t)offset,
                                  (json_int_t)(offset + 8 * 257)));
    offset += 8 * 257;
    golden_write_hollow(path, hdr, offset);
    json_decref(hdr);
    json_decref(root);
    return count;
}

/*
 * SVD-XT's image_encoder/ folder: its config (ViT-H/14) and every name and
 * shape of the real checkpoint, checked from the header (loading would take
 * 2.5 GB of fp32).
 */
Test(clip, svd_xt_layout_accepted, .init = setup, .fini = teardown)
{
    char              dir[1024], src[4096], tmp[64], path[4096], *text;
    size_t            len;
    svp_clip_config_t cfg;
    int               count, mapped = -1;

    golden_dir("svd_xt_layout/image_encoder", dir, sizeof(dir));
    snprintf(src, sizeof(src), "%s/config.json", dir);
    cr_assert_eq(svp_clip_config_load(src, &cfg), SVP_OK);
    cr_assert_eq(cfg.hidden_size, 1280);
    cr_assert_eq(cfg.num_layers, 32);
    cr_assert_eq(cfg.num_heads, 16);
    cr_assert_eq(cfg.patch_size, 14);
    cr_assert_eq(cfg.projection_dim, 1024);
    cr_assert_eq(cfg.intermediate_size, 5120);
    cr_assert_eq(cfg.hidden_act, SVP_CLIP_ACT_GELU);

    golden_make_tmp("clip", tmp, sizeof(tmp));
    cr_assert_eq(svp_file_read_all(src, &text, &len), SVP_OK);
    snprintf(path, sizeof(path), "%s/config.json", tmp);
    cr_assert_eq(svp_file_write_atomic(path, text, len), SVP_OK);
    free(text);
    snprintf(src, sizeof(src), "%s/tensors.json", dir);
    snprintf(path, sizeof(path), "%s/model.fp16.safetensors", tmp);
    count = write_sparse_layout(src, path);
    cr_assert_eq(count, 520);
    cr_assert_eq(svp_clip_check_weights(tmp, NULL, &mapped), SVP_OK);
    cr_assert_eq(mapped, count, "%d of %d tensors mapped", mapped, count);
    svp_rmtree(tmp);
}

/* ---- svdtool clip ---- */

Test(clip, svdtool_clip, .init = setup, .fini = teardown)
{
    char              dir[1024], tmp[64], in[4096], outp[4096];
    svp_safetensors_h st;
    svp_tensor_t     *embeds, *got;

    golden_dir("clip_tiny", dir, sizeof(dir));
    golden_make_tmp("clip", tmp, sizeof(tmp));
    st     = golden_open(dir, "io.safetensors");
    embeds = golden_load(st, "image_embeds");
    svp_safetensors_close(st);
    snprintf(in, sizeof(in), "%s/io.safetensors", dir);
    snprintf(outp, sizeof(outp), "%s/out.safetensors", tmp);
    {
        char *argv[] = {"clip",     "--model", dir,         "--input", in,
                        "--output", outp,      "--threads", "2",       NULL};
        cr_assert_eq(svdtool_clip_main(9, argv), 0);
    }
    st  = golden_open(tmp, "out.safetensors");
    got = golden_load(st, "image_embeds");
    cr_assert_eq(got->ndim, 2);
    assert_close("svdtool clip image_embeds", got->data, embeds->data,
                 svp_tensor_numel(embeds));
    svp_tensor_destroy(got);
    svp_safetensors_close(st);

    /* pixel_values of another geometry than the model's is bad input */
    {
        char  enc[1100];
        char *argv[] = {"clip", "--model",  enc,  "--input",
                        in,     "--output", outp, NULL};
        golden_dir("clip_preprocess/image_encoder", enc, sizeof(enc));
        cr_assert_eq(svdtool_clip_main(7, argv), SVP_EXIT_BAD_INPUT);
    }
    {
        char *argv[] = {"clip", "--model", dir, NULL};
        cr_assert_eq(svdtool_clip_main(3, argv), SVP_EXIT_BAD_INPUT);
    }
    svp_tensor_destroy(embeds);
    svp_rmtree(tmp);
}

/* ---- random weights ---- */

/*
 * svp_clip_write_random: the same seed gives the same file, which has the
 * golden model's tensor count, loads, and encodes to finite values.
 */
Test(clip, random_init_loads_and_is_deterministic, .init = setup, .fini = teardown)
{
    char              dir[1024], cfg[4096], a[64], b[64], pa[4096], pb[4096];
    char             *da, *db;
    size_t            la, lb;
    svp_safetensors_h g, r, st;
    svp_tensor_t     *pixels;
    float            *got;
    int64_t           i;

    golden_dir("clip_tiny", dir, sizeof(dir));
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    golden_make_tmp("clip", a, sizeof(a));
    golden_make_tmp("clip", b, sizeof(b));
    cr_assert_eq(svp_clip_write_random(cfg, 5, a), SVP_OK);
    cr_assert_eq(svp_clip_write_random(cfg, 5, b), SVP_OK);
    snprintf(pa, sizeof(pa), "%s/model.safetensors", a);
    snprintf(pb, sizeof(pb), "%s/model.safetensors", b);
    cr_assert_eq(svp_file_read_all(pa, &da, &la), SVP_OK);
    cr_assert_eq(svp_file_read_all(pb, &db, &lb), SVP_OK);
    cr_assert(la == lb && memcmp(da, db, la) == 0, "same seed, different files");
    free(da);
    free(db);

    g = golden_open(dir, "model.safetensors");
    r = golden_open(a, "model.safetensors");
    cr_assert_eq(svp_safetensors_count(r), svp_safetensors_count(g));
    svp_safetensors_close(g);
    svp_safetensors_close(r);

    st     = golden_open(dir, "io.safetensors");
    pixels = golden_load(st, "pixel_values");
    svp_safetensors_close(st);
    got = encode(a, NULL, pixels);
    for (i = 0; i < pixels->shape[0] * 24; i++) {
        cr_assert(isfinite(got[i]));
    }
    free(got);
    svp_tensor_destroy(pixels);
    svp_rmtree(a);
    svp_rmtree(b);
}
