/*
 * The CLIP vision encoder with projection (transformers'
 * CLIPVisionModelWithProjection): config, weights and the forward pass.
 *
 *   patches (conv p x p, stride p, no bias) -> [CLS, patches] + positions
 *   -> pre_layrnorm -> L pre-LN encoder layers
 *   -> post_layernorm of the CLS token only -> visual_projection (no bias)
 *
 * Tokens are rows of D channels, [B, T, D] with T = 1 + (S/p)^2.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "model/clip.h"
#include "trace/range.h"
#include "common/log.h"
#include "tensor/config_json.h"
#include "model/random_weights.h"
#include "model/walker.h"
#include "model/weights.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIP_NAME_MAX 256

/* quick_gelu(x) = x * sigmoid(1.702 x) (OpenAI CLIP's approximation) */
#define CLIP_QUICK_GELU_SCALE 1.702f

typedef struct {
    void  *w;
    float *b;
} clip_linear_t; /* w in the ops dtype, b may be NULL */
typedef struct {
    float *g, *b;
} clip_norm_t;

typedef struct {
    clip_norm_t   layer_norm1, layer_norm2;
    clip_linear_t q_proj, k_proj, v_proj, out_proj;
    clip_linear_t fc1, fc2;
} clip_layer_t;

struct svp_clip {
    svp_ops_h         ops; /* borrowed */
    svp_clip_config_t cfg;
    int               tokens; /* 1 + patches */

    float        *class_embedding;    /* [D] */
    void         *patch_embedding;    /* [D, C, p, p], ops dtype */
    float        *position_embedding; /* [T, D] */
    clip_norm_t   pre_layrnorm, post_layernorm;
    clip_layer_t *layers;
    void         *visual_projection; /* [proj, D], ops dtype */

    svp_weight_bufs_t weights; /* every backend buffer, to free */

    svp_clip_capture_cb_t capture_cb;
    void                 *capture_arg;
};

/* ---- config.json ---- */

svp_status_t svp_clip_config_load(const char *path, svp_clip_config_t *cfg_p)
{
    svp_clip_config_t cfg;
    svp_config_h      cj;
    const char       *act;
    svp_status_t      status;

    memset(&cfg, 0, sizeof(cfg));
    status = svp_config_load(path, &cj);
    if (status != SVP_OK) {
        return status;
    }
    /* CLIPVisionConfig's defaults */
    SVP_TRY_OUT(
        svp_config_get_count(cj, "hidden_size", 768, 1 << 20, &cfg.hidden_size));
    SVP_TRY_OUT(svp_config_get_count(cj, "intermediate_size", 3072, 1 << 20,
                                     &cfg.intermediate_size));
    SVP_TRY_OUT(
        svp_config_get_count(cj, "num_hidden_layers", 12, 1 << 20, &cfg.num_layers));
    SVP_TRY_OUT(svp_config_get_count(cj, "num_attention_heads", 12, 1 << 20,
                                     &cfg.num_heads));
    SVP_TRY_OUT(
        svp_config_get_count(cj, "num_channels", 3, 1 << 20, &cfg.num_channels));
    SVP_TRY_OUT(
        svp_config_get_count(cj, "image_size", 224, 1 << 20, &cfg.image_size));
    SVP_TRY_OUT(
        svp_config_get_count(cj, "patch_size", 32, 1 << 20, &cfg.patch_size));
    SVP_TRY_OUT(svp_config_get_count(cj, "projection_dim", 512, 1 << 20,
                                     &cfg.projection_dim));
    status = svp_config_get_double(cj, "layer_norm_eps", 1e-5, &cfg.layer_norm_eps);
    if (status != SVP_OK) {
        goto out;
    }
    if (!(cfg.layer_norm_eps > 0.0)) {
        svp_error("%s: 'layer_norm_eps' must be positive, found %g", path,
                  cfg.layer_norm_eps);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    status = svp_config_get_string(cj, "hidden_act", "quick_gelu", &act);
    if (status != SVP_OK) {
        goto out;
    }
    if (strcmp(act, "gelu") == 0) {
        cfg.hidden_act = SVP_CLIP_ACT_GELU;
    } else if (strcmp(act, "quick_gelu") == 0) {
        cfg.hidden_act = SVP_CLIP_ACT_QUICK_GELU;
    } else {
        svp_error("%s: 'hidden_act' is '%s', expected 'gelu' or 'quick_gelu'", path,
                  act);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    if (cfg.hidden_size % cfg.num_heads != 0) {
        svp_error("%s: 'hidden_size' %d is not divisible by "
                  "'num_attention_heads' %d",
                  path, cfg.hidden_size, cfg.num_heads);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    if (cfg.image_size % cfg.patch_size != 0) {
        svp_error("%s: 'image_size' %d is not a multiple of 'patch_size' %d", path,
                  cfg.image_size, cfg.patch_size);
        status = SVP_ERR_BAD_FILE;
        goto out;
    }
    *cfg_p = cfg;
out:
    svp_config_destroy(cj);
    return status;
}

/* ---- weights ---- */

/*
 * A random tensor for the writer (the random walker's tensor()), with the
 * golden data's scheme: random_weights.h's default, but N(0, 0.5^2) for
 * the class and position embeddings.
 */
static svp_status_t clip_random_tensor(svp_random_weights_h rw, const char *name,
                                       int ndim, const int64_t *shape)
{
    if (strstr(name, "class_embedding") || strstr(name, "position_embedding")) {
        return svp_random_weights_add(rw, name, ndim, shape, 0.0, 0.5, NULL);
    }
    return svp_random_weights_add_default(rw, name, ndim, shape);
}

static svp_status_t clip_load_linear(svp_model_walker_t *wk, clip_linear_t *l,
                                     int in, int out, int bias, float wscale,
                                     float bscale, const char *prefix)
{
    int64_t      wshape[2] = {out, in}, bshape[1] = {out};
    svp_status_t status;

    status =
        svp_model_walk_matrix(wk, &l->w, wscale, 2, wshape, "%s.weight", prefix);
    if (status == SVP_OK && bias) {
        status =
            svp_model_walk_param(wk, &l->b, bscale, 1, bshape, "%s.bias", prefix);
    }
    return status;
}

static svp_status_t clip_load_norm(svp_model_walker_t *wk, clip_norm_t *n, int c,
                                   const char *prefix)
{
    int64_t      shape[1] = {c};
    svp_status_t status;

    status = svp_model_walk_param(wk, &n->g, 1.0f, 1, shape, "%s.weight", prefix);
    if (status == SVP_OK) {
        status = svp_model_walk_param(wk, &n->b, 1.0f, 1, shape, "%s.bias", prefix);
    }
    return status;
}

/*
 * Every tensor of the model.  With quick_gelu the 1.702 of
 * x * sigmoid(1.702 x) is folded into the weights: fc1 (weight and bias)
 * is multiplied by 1.702 and fc2's weight divided by it, so that
 * fc2(quick_gelu(fc1 x)) = fc2'(silu(fc1' x)) and the forward needs only
 * the SiLU op.
 */
static svp_status_t clip_load_all(struct svp_clip *c, svp_model_walker_t *wk)
{
    const svp_clip_config_t *cfg = &c->cfg;
    int                      D = cfg->hidden_size, I = cfg->intermediate_size;
    int                      p = cfg->patch_size, g = cfg->image_size / p;
    int                      quick = (cfg->hidden_act == SVP_CLIP_ACT_QUICK_GELU);
    float                    up    = quick ? CLIP_QUICK_GELU_SCALE : 1.0f;
    float                    down  = quick ? 1.0f / CLIP_QUICK_GELU_SCALE : 1.0f;
    int64_t                  s_class[1] = {D};
    int64_t                  s_patch[4] = {D, cfg->num_channels, p, p};
    int64_t                  s_pos[2]   = {1 + g * g, D};
    char                     pre[CLIP_NAME_MAX];
    int                      i;

    c->tokens = 1 + g * g;
    SVP_TRY(svp_model_walk_param(wk, &c->class_embedding, 1.0f, 1, s_class,
                                 "vision_model.embeddings.class_embedding"));
    SVP_TRY(svp_model_walk_matrix(wk, &c->patch_embedding, 1.0f, 4, s_patch,
                                  "vision_model.embeddings.patch_embedding.weight"));
    SVP_TRY(
        svp_model_walk_param(wk, &c->position_embedding, 1.0f, 2, s_pos,
                             "vision_model.embeddings.position_embedding.weight"));
    SVP_TRY(clip_load_norm(wk, &c->pre_layrnorm, D, "vision_model.pre_layrnorm"));
    for (i = 0; i < cfg->num_layers; i++) {
        clip_layer_t *l = &c->layers[i];

#define P(_what) \
    (snprintf(pre, sizeof(pre), "vision_model.encoder.layers.%d." _what, i), pre)
        SVP_TRY(clip_load_norm(wk, &l->layer_norm1, D, P("layer_norm1")));
        SVP_TRY(clip_load_linear(wk, &l->q_proj, D, D, 1, 1.0f, 1.0f,
                                 P("self_attn.q_proj")));
        SVP_TRY(clip_load_linear(wk, &l->k_proj, D, D, 1, 1.0f, 1.0f,
                                 P("self_attn.k_proj")));
        SVP_TRY(clip_load_linear(wk, &l->v_proj, D, D, 1, 1.0f, 1.0f,
                                 P("self_attn.v_proj")));
        SVP_TRY(clip_load_linear(wk, &l->out_proj, D, D, 1, 1.0f, 1.0f,
                                 P("self_attn.out_proj")));
        SVP_TRY(clip_load_norm(wk, &l->layer_norm2, D, P("layer_norm2")));
        SVP_TRY(clip_load_linear(wk, &l->fc1, D, I, 1, up, up, P("mlp.fc1")));
        SVP_TRY(clip_load_linear(wk, &l->fc2, I, D, 1, down, 1.0f, P("mlp.fc2")));
#undef P
    }
    SVP_TRY(
        clip_load_norm(wk, &c->post_layernorm, D, "vision_model.post_layernorm"));
    {
        clip_linear_t proj = {NULL, NULL};
        SVP_TRY(clip_load_linear(wk, &proj, D, cfg->projection_dim, 0, 1.0f, 1.0f,
                                 "visual_projection"));
        c->visual_projection = proj.w;
    }
    return SVP_OK;
}

static void clip_free(struct svp_clip *c)
{
    svp_weight_bufs_free(c->ops, &c->weights);
    free(c->layers);
    free(c);
}

/* Config, weights file and layer array; load or only check the tensors. */
static svp_status_t clip_open(svp_ops_h ops, const char *model_dir,
                              const svp_clip_params_t *params, int check_only,
                              struct svp_clip **clip_p, int *mapped_p)
{
    svp_model_file_walker_t fwk;
    struct svp_clip        *c;
    char                    path[4096];
    svp_status_t            status;

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    c->ops = ops;
    if (params) {
        c->capture_cb  = params->capture_cb;
        c->capture_arg = params->capture_arg;
    }
    snprintf(path, sizeof(path), "%s/config.json", model_dir);
    status = svp_clip_config_load(path, &c->cfg);
    if (status != SVP_OK) {
        goto err_free_clip;
    }
    c->layers = calloc(c->cfg.num_layers, sizeof(*c->layers));
    if (c->layers == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto err_free_clip;
    }
    svp_model_file_walker_init(&fwk);
    status = svp_weights_open(model_dir, params ? params->weights_file : NULL,
                              "model", ops, check_only ? NULL : &c->weights, &fwk.w);
    if (status != SVP_OK) {
        goto err_free_clip;
    }
    status = clip_load_all(c, &fwk.base);
    if (status != SVP_OK) {
        goto err_close_weights;
    }
    /* position_ids is a non-persistent buffer some files still carry */
    svp_weights_log_unused(&fwk.w, "the image encoder");
    svp_debug("clip: %d layers, %d tensors from %s", c->cfg.num_layers, fwk.w.used,
              svp_weights_path(&fwk.w));
    svp_weights_close(&fwk.w);
    if (mapped_p != NULL) {
        *mapped_p = fwk.w.used;
    }
    *clip_p = c;
    return SVP_OK;

err_close_weights:
    svp_weights_close(&fwk.w);
err_free_clip:
    clip_free(c);
    return status;
}

svp_status_t svp_clip_create(svp_ops_h ops, const char *model_dir,
                             const svp_clip_params_t *params, svp_clip_h *clip_p)
{
    return clip_open(ops, model_dir, params, 0, clip_p, NULL);
}

svp_status_t svp_clip_check_weights(const char              *model_dir,
                                    const svp_clip_params_t *params, int *mapped_p)
{
    struct svp_clip *c;
    svp_status_t     status;

    status = clip_open(NULL, model_dir, params, 1, &c, mapped_p);
    if (status == SVP_OK) {
        clip_free(c);
    }
    return status;
}

void svp_clip_destroy(svp_clip_h clip)
{
    if (clip != NULL) {
        clip_free(clip);
    }
}

const svp_clip_config_t *svp_clip_config(svp_clip_h clip)
{
    return &clip->cfg;
}

svp_status_t svp_clip_write_random(const char *config_path, uint64_t seed,
                                   const char *out_dir)
{
    svp_model_random_walker_t rwk;
    svp_random_weights_h      rw;
    struct svp_clip           c;
    svp_status_t              status;

    memset(&c, 0, sizeof(c));
    status = svp_clip_config_load(config_path, &c.cfg);
    if (status != SVP_OK) {
        return status;
    }
    c.layers = calloc(c.cfg.num_layers, sizeof(*c.layers));
    if (c.layers == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_random_weights_create(seed, 0, &rw);
    if (status != SVP_OK) {
        goto out_free_layers;
    }
    svp_model_random_walker_init(&rwk, rw);
    rwk.tensor = clip_random_tensor;
    status     = clip_load_all(&c, &rwk.base);
    if (status == SVP_OK) {
        status =
            svp_random_weights_commit(rw, config_path, out_dir, "model.safetensors");
    }
    svp_random_weights_destroy(rw);
out_free_layers:
    free(c.layers);
    return status;
}

/* ---- forward ---- */

static void clip_capture(struct svp_clip *c, const char *name, const float *x,
                         int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2};
    int64_t count    = d0 * d1 * (ndim == 3 ? d2 : 1);
    float  *host;

    if (c->capture_cb == NULL) {
        return;
    }
    host = malloc(count * sizeof(float));
    if (host == NULL || svp_ops_download(c->ops, host, x, count) != SVP_OK) {
        svp_warn("clip: cannot capture '%s'", name);
        free(host);
        return;
    }
    c->capture_cb(name, host, ndim, shape, c->capture_arg);
    free(host);
}

/* Layer captures are reported for layer 0 only, like the golden data. */
#define CLIP_CAPTURE_LAYER(_c, _i, _what, _x, _d2) \
    do { \
        if ((_c)->capture_cb != NULL && (_i) == 0) { \
            clip_capture((_c), "out.vision_model.encoder.layers.0." _what, (_x), 3, \
                         batch, T, (_d2)); \
        } \
    } while (0)

/*
 * One pre-LN encoder layer on h [batch * T, D], in place:
 * h += out_proj(attn(ln1(h))), then h += fc2(act(fc1(ln2(h)))).
 * Scratch: a, q, k, v [rows, D] and f [rows, I].
 */
static svp_status_t clip_layer_forward(struct svp_clip *c, int li, int batch,
                                       float *h, float *a, float *q, float *k,
                                       float *v, float *f)
{
    const svp_clip_config_t *cfg = &c->cfg;
    const clip_layer_t      *l   = &c->layers[li];
    svp_ops_h                ops = c->ops;
    int                      D = cfg->hidden_size, I = cfg->intermediate_size;
    int                      T     = c->tokens;
    int64_t                  rows  = (int64_t)batch * T;
    float                    eps   = (float)cfg->layer_norm_eps;
    svp_ops_attention_t      p     = {.batch        = batch,
                                      .heads        = cfg->num_heads,
                                      .head_dim     = D / cfg->num_heads,
                                      .q_len        = T,
                                      .kv_len       = T,
                                      .kv_batch_div = 1,
                                      .q_stride     = D,
                                      .k_stride     = D,
                                      .v_stride     = D,
                                      .out_stride   = D};
    int                      quick = (cfg->hidden_act == SVP_CLIP_ACT_QUICK_GELU);
    svp_status_t             status;

    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, D, eps, h, l->layer_norm1.g,
                                   l->layer_norm1.b, a));
    CLIP_CAPTURE_LAYER(c, li, "layer_norm1", a, D);
    SVP_TRY_OUT(svp_ops_linear(ops, rows, D, D, a, l->q_proj.w, l->q_proj.b, 0, q));
    SVP_TRY_OUT(svp_ops_linear(ops, rows, D, D, a, l->k_proj.w, l->k_proj.b, 0, k));
    SVP_TRY_OUT(svp_ops_linear(ops, rows, D, D, a, l->v_proj.w, l->v_proj.b, 0, v));
    CLIP_CAPTURE_LAYER(c, li, "self_attn.q_proj", q, D);
    CLIP_CAPTURE_LAYER(c, li, "self_attn.k_proj", k, D);
    CLIP_CAPTURE_LAYER(c, li, "self_attn.v_proj", v, D);
    /* heads are contiguous channel blocks; the output overwrites q */
    SVP_TRY_OUT(svp_ops_attention(ops, &p, q, k, v, q));
    SVP_TRY_OUT(
        svp_ops_linear(ops, rows, D, D, q, l->out_proj.w, l->out_proj.b, 0, a));
    CLIP_CAPTURE_LAYER(c, li, "self_attn", a, D);
    SVP_TRY_OUT(svp_ops_add(ops, rows * D, h, a, h));

    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, D, eps, h, l->layer_norm2.g,
                                   l->layer_norm2.b, a));
    CLIP_CAPTURE_LAYER(c, li, "layer_norm2", a, D);
    SVP_TRY_OUT(svp_ops_linear(ops, rows, D, I, a, l->fc1.w, l->fc1.b, 0, f));
    if (quick) {
        /* fc1 carries the 1.702 (see clip_load_all): its output is scaled */
        SVP_TRY_OUT(svp_ops_silu(ops, rows * I, f, f));
    } else {
        CLIP_CAPTURE_LAYER(c, li, "mlp.fc1", f, I);
        SVP_TRY_OUT(svp_ops_gelu(ops, rows * I, f, f));
        if (c->capture_cb != NULL && li == 0) {
            clip_capture(c, "in.vision_model.encoder.layers.0.mlp.fc2", f, 3, batch,
                         T, I);
        }
    }
    SVP_TRY_OUT(svp_ops_linear(ops, rows, I, D, f, l->fc2.w, l->fc2.b, 0, a));
    CLIP_CAPTURE_LAYER(c, li, "mlp", a, D);
    SVP_TRY_OUT(svp_ops_add(ops, rows * D, h, a, h));
out:
    return status;
}

/* pixel_values -> h [batch, T, D]: [CLS, patches] + positions. */
static svp_status_t clip_embeddings(struct svp_clip *c, int batch,
                                    const float *pixels, float *h, float *a,
                                    float *b)
{
    const svp_clip_config_t *cfg = &c->cfg;
    svp_ops_h                ops = c->ops;
    int                      D = cfg->hidden_size, T = c->tokens, i;
    svp_ops_conv2d_t         conv = {.n      = batch,
                                     .c_in   = cfg->num_channels,
                                     .h      = cfg->image_size,
                                     .w      = cfg->image_size,
                                     .c_out  = D,
                                     .kh     = cfg->patch_size,
                                     .kw     = cfg->patch_size,
                                     .stride = cfg->patch_size,
                                     .pad    = 0};
    svp_status_t             status;

    /* a = conv [batch, D, T-1] -> b = patch tokens [batch, T-1, D] */
    SVP_TRY_OUT(svp_ops_conv2d(ops, &conv, pixels, c->patch_embedding, NULL, a));
    SVP_TRY_OUT(svp_ops_transpose(ops, batch, D, T - 1, 1, a, b));
    for (i = 0; i < batch; i++) {
        SVP_TRY_OUT(svp_ops_copy(ops, D, c->class_embedding, a + (int64_t)i * D));
    }
    SVP_TRY_OUT(svp_ops_concat(ops, batch, 1, T - 1, D, a, b, h));
    SVP_TRY_OUT(svp_ops_add_broadcast(ops, 1, batch, (int64_t)T * D, h,
                                      c->position_embedding));
out:
    return status;
}

svp_status_t svp_clip_encode(svp_clip_h c, int batch, const float *pixels,
                             float *image_embeds)
{
    const svp_clip_config_t *cfg = &c->cfg;
    svp_ops_h                ops = c->ops;
    int                      D = cfg->hidden_size, T = c->tokens, i;
    int64_t                  rows = (int64_t)batch * T;
    float                    eps  = (float)cfg->layer_norm_eps;
    float                   *h = NULL, *a = NULL, *q = NULL, *k = NULL;
    float                   *v = NULL, *f = NULL;
    svp_status_t             status;
    int                      rdepth;
    int64_t                  pass[2];

    if (batch < 1) {
        svp_error("clip: invalid batch %d", batch);
        return SVP_ERR_INVALID_PARAM;
    }
    pass[0] = (int64_t)(intptr_t)c;
    pass[1] = batch;
    svp_ops_pass_begin(ops, "clip", 2, pass);
    rdepth = svp_range_push("clip b%d", batch);
#define CLIP_BUF(_p, _n) SVP_TRY_OUT(svp_ops_alloc(ops, (size_t)(_n), &(_p)))
    CLIP_BUF(h, rows * D);
    CLIP_BUF(a, rows * D);
    CLIP_BUF(q, rows * D);
    CLIP_BUF(k, rows * D);
    CLIP_BUF(v, rows * D);
    CLIP_BUF(f, rows * cfg->intermediate_size);
#undef CLIP_BUF

    SVP_TRY_OUT(clip_embeddings(c, batch, pixels, h, a, q));
    clip_capture(c, "out.vision_model.embeddings", h, 3, batch, T, D);
    SVP_TRY_OUT(svp_ops_layer_norm(ops, rows, D, eps, h, c->pre_layrnorm.g,
                                   c->pre_layrnorm.b, h));
    clip_capture(c, "out.vision_model.pre_layrnorm", h, 3, batch, T, D);

    for (i = 0; i < cfg->num_layers; i++) {
        SVP_TRY_OUT(clip_layer_forward(c, i, batch, h, a, q, k, v, f));
        if (c->capture_cb != NULL) {
            char name[64];
            snprintf(name, sizeof(name), "out.vision_model.encoder.layers.%d", i);
            clip_capture(c, name, h, 3, batch, T, D);
        }
    }

    /* pooler_output: post_layernorm of the CLS tokens only */
    for (i = 0; i < batch; i++) {
        SVP_TRY_OUT(
            svp_ops_copy(ops, D, h + (int64_t)i * T * D, a + (int64_t)i * D));
    }
    SVP_TRY_OUT(svp_ops_layer_norm(ops, batch, D, eps, a, c->post_layernorm.g,
                                   c->post_layernorm.b, a));
    clip_capture(c, "out.vision_model.post_layernorm", a, 2, batch, D, 1);
    SVP_TRY_OUT(svp_ops_linear(ops, batch, D, cfg->projection_dim, a,
                               c->visual_projection, NULL, 0, image_embeds));
    clip_capture(c, "out.visual_projection", image_embeds, 2, batch,
                 cfg->projection_dim, 1);
out:
    svp_range_pop_to(rdepth);
    svp_ops_free(ops, h);
    svp_ops_free(ops, a);
    svp_ops_free(ops, q);
    svp_ops_free(ops, k);
    svp_ops_free(ops, v);
    svp_ops_free(ops, f);
    svp_ops_pass_end(ops);
    return status;
}
