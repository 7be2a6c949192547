/*
 * The CUDA backend against the CPU backend: every op on the same random
 * inputs, over a few shapes each (odd sizes, chunked attention, aliasing),
 * and one UNet forward on the golden unet_tiny; the same in bf16 and f16,
 * whose products run on tensor cores.  Every test skips, with the reason,
 * when no CUDA device is visible.
 *
 * Tolerances.  Both backends compute in fp32 with the same formulas; what
 * differs is the summation order (cuBLAS vs OpenBLAS blocking, block vs simd
 * reductions), FMA contraction in the kernels, and the libm (CUDA's expf,
 * erff, cosf are within 2 ulp, glibc's within 1):
 *   - products and reductions (linear, conv, norms, attention):
 *     max|cuda - cpu| <= 1e-5 * max|cpu| (REL_GEMM), the bound the golden
 *     README sets for a whole forward pass, so it is generous for one op
 *     and still far below a wrong index or a missing term;
 *   - elementwise: |cuda - cpu| <= 1e-6 * max(1, |cpu|) per element
 *     (TOL_ELEM): a few ulp, with an absolute floor because 1 + erff(x)
 *     cancels for very negative x (GELU's tail);
 *   - data movement: bit exact.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops.h"
#include "ops/ops_sched.h"
#include "noise/euler.h"
#include "noise/guidance.h"
#include "model/unet.h"
#include "tensor/safetensors.h"

#include <criterion/criterion.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define REL_GEMM     1e-5
#define TOL_ELEM     1e-6
#define UNET_REL_TOL 1e-5

static svp_ops_h cpu, gpu;

/* Skips the test unless a device is visible; creates both handles. */
static void need_device(size_t attn_max_scores)
{
    svp_ops_params_t cpu_params = {.backend = SVP_OPS_BACKEND_CPU, .threads = 2};
    svp_ops_params_t gpu_params = {.backend         = SVP_OPS_BACKEND_CUDA,
                                   .attn_max_scores = attn_max_scores};
    int              count      = 0;
    cudaError_t      err        = cudaGetDeviceCount(&count);

    if (err != cudaSuccess || count == 0) {
        cr_skip_test("no cuda device: cudaGetDeviceCount gives %d (%s)", count,
                     cudaGetErrorString(err));
    }
    cr_assert_eq(svp_ops_create(&cpu_params, &cpu), SVP_OK);
    cr_assert_eq(svp_ops_create(&gpu_params, &gpu), SVP_OK);
    cr_assert_str_eq(svp_ops_backend(gpu), "cuda");
}

static void teardown(void)
{
    svp_ops_destroy(gpu);
    svp_ops_destroy(cpu);
    gpu = cpu = NULL;
}

/* ---- buffers ---- */

/* Uniform in [-scale, scale), a fixed LCG per seed. */
static float *rand_host(size_t n, unsigned seed, float scale)
{
    float   *buf = malloc((n ? n : 1) * sizeof(float));
    uint64_t s   = 0x9e3779b97f4a7c15ull * (seed + 1);
    size_t   i;

    cr_assert_not_null(buf);
    for (i = 0; i < n; i++) {
        s      = s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = scale * (2.0f * (float)((s >> 40) & 0xffffff) / 16777216.0f - 1.0f);
    }
    return buf;
}

/* A buffer of ops holding a copy of host[0, n). */
static float *to(svp_ops_h ops, const float *host, size_t n)
{
    float *buf;

    cr_assert_eq(svp_ops_alloc(ops, n, &buf), SVP_OK);
    cr_assert_eq(svp_ops_upload(ops, buf, host, n), SVP_OK);
    return buf;
}

/* A malloc'ed host copy of the ops buffer buf[0, n). */
static float *from(svp_ops_h ops, const float *buf, size_t n)
{
    float *host = malloc(n * sizeof(float));

    cr_assert_not_null(host);
    cr_assert_eq(svp_ops_download(ops, host, buf, n), SVP_OK);
    return host;
}

/* A pair of buffers, one per backend, with the same random contents. */
typedef struct {
    float *host, *c, *g;
    size_t n;
} pair_t;

static pair_t pair(size_t n, unsigned seed, float scale)
{
    pair_t p = {.n = n};

    p.host = rand_host(n, seed, scale);
    p.c    = to(cpu, p.host, n);
    p.g    = to(gpu, p.host, n);
    return p;
}

static void pair_free(pair_t *p)
{
    svp_ops_free(cpu, p->c);
    svp_ops_free(gpu, p->g);
    free(p->host);
}

/* ---- comparisons ---- */

enum { CMP_REL_MAX, CMP_ELEM, CMP_EXACT };

/* Compares the two backends' copies of p (see the tolerances above). */
static void check(const char *what, const pair_t *p, int mode)
{
    float *c = from(cpu, p->c, p->n), *g = from(gpu, p->g, p->n);
    double max_ref = 0.0, worst = 0.0;
    size_t i, at                = 0;

    for (i = 0; i < p->n; i++) {
        max_ref = fmax(max_ref, fabs(c[i]));
    }
    for (i = 0; i < p->n; i++) {
        double err     = fabs((double)g[i] - c[i]);
        double allowed = (mode == CMP_REL_MAX) ? REL_GEMM * max_ref
                         : (mode == CMP_ELEM)  ? TOL_ELEM * fmax(1.0, fabs(c[i]))
                                               : 0.0;
        /* err / allowed, 0 within the bound; NaN counts as infinitely off */
        double over = (err <= allowed)               ? 0.0
                      : (err > 0.0 && allowed > 0.0) ? err / allowed
                                                     : INFINITY;
        if (over > worst) {
            worst = over;
            at    = i;
        }
    }
    cr_assert(worst == 0.0,
              "%s: element %zu of %zu: cuda %.9g, cpu %.9g (|diff| %.3g; "
              "max|cpu| %.3g; mode %d)",
              what, at, p->n, g[at], c[at], fabs((double)g[at] - c[at]), max_ref,
              mode);
    cr_assert(max_ref > 0.0, "%s: all-zero output compares nothing", what);
    free(c);
    free(g);
}

TestSuite(ops_cuda, .fini = teardown);

/* ---- products ---- */

Test(ops_cuda, linear)
{
    static const int shapes[][3] = {{1, 8, 4}, {37, 64, 96}, {300, 320, 40}};
    int              s, variant;

    need_device(0);
    for (s = 0; s < 3; s++) {
        int    rows = shapes[s][0], in = shapes[s][1], out = shapes[s][2];
        pair_t x = pair((size_t)rows * in, 1, 1.0f);
        pair_t w = pair((size_t)out * in, 2, 0.2f);
        pair_t b = pair((size_t)out, 3, 0.5f);

        /* 0: bias, 1: no bias, 2: accumulate with bias, 3: accumulate */
        for (variant = 0; variant < 4; variant++) {
            pair_t y = pair((size_t)rows * out, 4, 1.0f);
            char   what[64];
            int    acc = variant >= 2, bias = variant % 2 == 0;

            cr_assert_eq(svp_ops_linear(cpu, rows, in, out, x.c, w.c,
                                        bias ? b.c : NULL, acc, y.c),
                         SVP_OK);
            cr_assert_eq(svp_ops_linear(gpu, rows, in, out, x.g, w.g,
                                        bias ? b.g : NULL, acc, y.g),
                         SVP_OK);
            snprintf(what, sizeof(what), "linear %dx%d->%d variant %d", rows, in,
                     out, variant);
            check(what, &y, CMP_REL_MAX);
            pair_free(&y);
        }
        pair_free(&x);
        pair_free(&w);
        pair_free(&b);
    }
}

Test(ops_cuda, conv2d)
{
    static const svp_ops_conv2d_t shapes[] = {
        {.n      = 2,
         .c_in   = 3,
         .h      = 8,
         .w      = 8,
         .c_out  = 5,
         .kh     = 3,
         .kw     = 3,
         .stride = 1,
         .pad    = 1},
        {.n      = 1,
         .c_in   = 4,
         .h      = 9,
         .w      = 7,
         .c_out  = 6,
         .kh     = 3,
         .kw     = 3,
         .stride = 2,
         .pad    = 1},
        {.n      = 3,
         .c_in   = 8,
         .h      = 5,
         .w      = 5,
         .c_out  = 16,
         .kh     = 1,
         .kw     = 1,
         .stride = 1,
         .pad    = 0},
        {.n      = 2,
         .c_in   = 2,
         .h      = 4,
         .w      = 6,
         .c_out  = 3,
         .kh     = 2,
         .kw     = 3,
         .stride = 2,
         .pad    = 0},
    };
    int s;

    need_device(0);
    for (s = 0; s < 4; s++) {
        const svp_ops_conv2d_t *p = &shapes[s];
        size_t out = (size_t)p->n * p->c_out * svp_ops_conv2d_out_h(p) *
                     svp_ops_conv2d_out_w(p);
        pair_t x = pair((size_t)p->n * p->c_in * p->h * p->w, 5, 1.0f);
        pair_t w = pair((size_t)p->c_out * p->c_in * p->kh * p->kw, 6, 0.3f);
        pair_t b = pair((size_t)p->c_out, 7, 0.5f);
        pair_t y = pair(out, 8, 1.0f);
        char   what[64];
        int    bias = s != 1;

        cr_assert_eq(svp_ops_conv2d(cpu, p, x.c, w.c, bias ? b.c : NULL, y.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_conv2d(gpu, p, x.g, w.g, bias ? b.g : NULL, y.g),
                     SVP_OK);
        snprintf(what, sizeof(what), "conv2d shape %d", s);
        check(what, &y, CMP_REL_MAX);
        pair_free(&x);
        pair_free(&w);
        pair_free(&b);
        pair_free(&y);
    }
}

Test(ops_cuda, conv_frames)
{
    static const int shapes[][5] = {
        /* b, f, c_in, c_out, hw */
        {1, 1, 3, 4, 5},
        {2, 5, 4, 6, 9},
        {1, 14, 8, 8, 16},
    };
    int s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        int    b = shapes[s][0], f = shapes[s][1], ci = shapes[s][2];
        int    co = shapes[s][3], hw = shapes[s][4];
        pair_t x    = pair((size_t)b * f * ci * hw, 9, 1.0f);
        pair_t w    = pair((size_t)co * ci * 3, 10, 0.3f);
        pair_t bias = pair((size_t)co, 11, 0.5f);
        pair_t y    = pair((size_t)b * f * co * hw, 12, 1.0f);
        char   what[64];

        cr_assert_eq(svp_ops_conv_frames(cpu, b, f, ci, co, hw, x.c, w.c, bias.c,
                                         y.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_conv_frames(gpu, b, f, ci, co, hw, x.g, w.g, bias.g,
                                         y.g),
                     SVP_OK);
        snprintf(what, sizeof(what), "conv_frames shape %d", s);
        check(what, &y, CMP_REL_MAX);
        pair_free(&x);
        pair_free(&w);
        pair_free(&bias);
        pair_free(&y);
    }
}

/* ---- normalisation ---- */

Test(ops_cuda, group_norm)
{
    static const svp_ops_group_norm_t shapes[] = {
        {.n       = 2,
         .frames  = 1,
         .c       = 8,
         .spatial = 16,
         .groups  = 4,
         .eps     = 1e-6f,
         .silu    = 0},
        {.n       = 1,
         .frames  = 5,
         .c       = 12,
         .spatial = 9,
         .groups  = 3,
         .eps     = 1e-5f,
         .silu    = 1},
        {.n       = 2,
         .frames  = 3,
         .c       = 32,
         .spatial = 64,
         .groups  = 32,
         .eps     = 1e-6f,
         .silu    = 1},
    };
    int s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        const svp_ops_group_norm_t *p = &shapes[s];
        size_t                      n = (size_t)p->n * p->frames * p->c * p->spatial;
        /* an offset mean, as activations have, exercises the two passes */
        pair_t x     = pair(n, 13, 2.0f);
        pair_t gamma = pair((size_t)p->c, 14, 1.0f);
        pair_t beta  = pair((size_t)p->c, 15, 0.5f);
        pair_t y     = pair(n, 16, 1.0f);
        char   what[64];

        cr_assert_eq(svp_ops_group_norm(cpu, p, x.c, gamma.c, beta.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_group_norm(gpu, p, x.g, gamma.g, beta.g, y.g), SVP_OK);
        snprintf(what, sizeof(what), "group_norm shape %d", s);
        check(what, &y, CMP_REL_MAX);
        /* in place (y aliases x) */
        cr_assert_eq(svp_ops_group_norm(cpu, p, x.c, gamma.c, beta.c, x.c), SVP_OK);
        cr_assert_eq(svp_ops_group_norm(gpu, p, x.g, gamma.g, beta.g, x.g), SVP_OK);
        snprintf(what, sizeof(what), "group_norm shape %d in place", s);
        check(what, &x, CMP_REL_MAX);
        pair_free(&x);
        pair_free(&gamma);
        pair_free(&beta);
        pair_free(&y);
    }
}

Test(ops_cuda, layer_norm)
{
    static const int shapes[][2] = {{1, 7}, {33, 320}, {5, 1280}};
    int              s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        int    rows = shapes[s][0], dim = shapes[s][1];
        pair_t x     = pair((size_t)rows * dim, 17, 3.0f);
        pair_t gamma = pair((size_t)dim, 18, 1.0f);
        pair_t beta  = pair((size_t)dim, 19, 0.5f);
        pair_t y     = pair((size_t)rows * dim, 20, 1.0f);
        char   what[64];

        cr_assert_eq(svp_ops_layer_norm(cpu, rows, dim, 1e-5f, x.c, gamma.c, beta.c,
                                        y.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_layer_norm(gpu, rows, dim, 1e-5f, x.g, gamma.g, beta.g,
                                        y.g),
                     SVP_OK);
        snprintf(what, sizeof(what), "layer_norm %dx%d", rows, dim);
        check(what, &y, CMP_REL_MAX);
        pair_free(&x);
        pair_free(&gamma);
        pair_free(&beta);
        pair_free(&y);
    }
}

/* ---- attention ---- */

typedef struct {
    svp_ops_attention_t p;
    int                 in_place; /* out is q */
} attn_case_t;

static void attention_case(const attn_case_t *ac, int idx)
{
    const svp_ops_attention_t *p   = &ac->p;
    size_t                     q_n = (size_t)p->batch * p->q_len * p->q_stride;
    size_t kv_b = (size_t)(p->batch / p->kv_batch_div) * p->kv_len;
    pair_t q    = pair(q_n, 21, 1.0f);
    pair_t k    = pair(kv_b * p->k_stride, 22, 1.0f);
    pair_t v    = pair(kv_b * p->v_stride, 23, 1.0f);
    pair_t o    = pair((size_t)p->batch * p->q_len * p->out_stride, 24, 1.0f);
    char   what[96];

    cr_assert_eq(svp_ops_attention(cpu, p, q.c, k.c, v.c, ac->in_place ? q.c : o.c),
                 SVP_OK);
    cr_assert_eq(svp_ops_attention(gpu, p, q.g, k.g, v.g, ac->in_place ? q.g : o.g),
                 SVP_OK);
    snprintf(what, sizeof(what), "attention case %d (q %d, kv %d, div %d%s)", idx,
             p->q_len, p->kv_len, p->kv_batch_div, ac->in_place ? ", in place" : "");
    /* the whole buffer: padding columns beyond heads*d must be untouched */
    check(what, ac->in_place ? &q : &o, CMP_REL_MAX);
    pair_free(&q);
    pair_free(&k);
    pair_free(&v);
    pair_free(&o);
}

/*
 * Short keys (the warp path: temporal, cross-attention with one token) and
 * long ones (the gemm path), a shared context (kv_batch_div), rows wider
 * than heads*d, and out aliasing q.  attn_max_scores 1000 cuts the long
 * cases into several query chunks on the device.
 */
Test(ops_cuda, attention)
{
    static const attn_case_t cases[] = {
        {{.batch        = 2,
          .heads        = 2,
          .head_dim     = 8,
          .q_len        = 5,
          .kv_len       = 5,
          .kv_batch_div = 1,
          .q_stride     = 16,
          .k_stride     = 16,
          .v_stride     = 16,
          .out_stride   = 16},
         0},
        {{.batch        = 4,
          .heads        = 3,
          .head_dim     = 16,
          .q_len        = 7,
          .kv_len       = 1,
          .kv_batch_div = 2,
          .q_stride     = 48,
          .k_stride     = 50,
          .v_stride     = 48,
          .out_stride   = 52},
         0},
        {{.batch        = 3,
          .heads        = 1,
          .head_dim     = 40,
          .q_len        = 25,
          .kv_len       = 64,
          .kv_batch_div = 3,
          .q_stride     = 40,
          .k_stride     = 40,
          .v_stride     = 40,
          .out_stride   = 40},
         1},
        {{.batch        = 2,
          .heads        = 2,
          .head_dim     = 32,
          .q_len        = 100,
          .kv_len       = 100,
          .kv_batch_div = 1,
          .q_stride     = 64,
          .k_stride     = 64,
          .v_stride     = 64,
          .out_stride   = 64},
         0},
        {{.batch        = 4,
          .heads        = 2,
          .head_dim     = 24,
          .q_len        = 33,
          .kv_len       = 81,
          .kv_batch_div = 2,
          .q_stride     = 48,
          .k_stride     = 96,
          .v_stride     = 50,
          .out_stride   = 48},
         1},
    };
    int i;

    need_device(1000);
    for (i = 0; i < 5; i++) {
        attention_case(&cases[i], i);
    }
}

/* ---- elementwise ---- */

Test(ops_cuda, activations)
{
    static const int sizes[] = {1, 1000, 70001};
    int              s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        int    n = sizes[s];
        pair_t x = pair((size_t)2 * n, 25, 6.0f);
        pair_t y = pair((size_t)n, 26, 1.0f);

        cr_assert_eq(svp_ops_gelu(cpu, n, x.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_gelu(gpu, n, x.g, y.g), SVP_OK);
        check("gelu", &y, CMP_ELEM);
        cr_assert_eq(svp_ops_silu(cpu, n, x.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_silu(gpu, n, x.g, y.g), SVP_OK);
        check("silu", &y, CMP_ELEM);
        /* geglu: rows of [value | gate], here 1 row of inner n, and n/8
         * rows of inner 16 when n allows */
        cr_assert_eq(svp_ops_geglu(cpu, 1, n, x.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_geglu(gpu, 1, n, x.g, y.g), SVP_OK);
        check("geglu one row", &y, CMP_ELEM);
        if (n >= 16) {
            cr_assert_eq(svp_ops_geglu(cpu, n / 16, 16, x.c, y.c), SVP_OK);
            cr_assert_eq(svp_ops_geglu(gpu, n / 16, 16, x.g, y.g), SVP_OK);
            check("geglu rows", &y, CMP_ELEM);
        }
        /* in place */
        cr_assert_eq(svp_ops_gelu(cpu, 2 * n, x.c, x.c), SVP_OK);
        cr_assert_eq(svp_ops_gelu(gpu, 2 * n, x.g, x.g), SVP_OK);
        check("gelu in place", &x, CMP_ELEM);
        pair_free(&x);
        pair_free(&y);
    }
}

Test(ops_cuda, arithmetic)
{
    static const int sizes[] = {1, 999, 65537};
    int              s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        int    n = sizes[s];
        pair_t a = pair((size_t)n, 27, 2.0f), b = pair((size_t)n, 28, 2.0f);
        pair_t y = pair((size_t)n, 29, 1.0f);

        cr_assert_eq(svp_ops_add(cpu, n, a.c, b.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_add(gpu, n, a.g, b.g, y.g), SVP_OK);
        check("add", &y, CMP_ELEM);
        cr_assert_eq(svp_ops_blend(cpu, n, 0.3f, a.c, b.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_blend(gpu, n, 0.3f, a.g, b.g, y.g), SVP_OK);
        check("blend", &y, CMP_ELEM);
        /* aliasing the first input */
        cr_assert_eq(svp_ops_add(cpu, n, a.c, b.c, a.c), SVP_OK);
        cr_assert_eq(svp_ops_add(gpu, n, a.g, b.g, a.g), SVP_OK);
        check("add in place", &a, CMP_ELEM);
        pair_free(&a);
        pair_free(&b);
        pair_free(&y);
    }
}

Test(ops_cuda, add_broadcast)
{
    static const int shapes[][3] = {{6, 100, 1}, {3, 7, 33}, {1, 50, 320}};
    int              s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        int    outer = shapes[s][0], mid = shapes[s][1], inner = shapes[s][2];
        pair_t x = pair((size_t)outer * mid * inner, 30, 1.0f);
        pair_t v = pair((size_t)outer * inner, 31, 1.0f);
        char   what[64];

        cr_assert_eq(svp_ops_add_broadcast(cpu, outer, mid, inner, x.c, v.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_add_broadcast(gpu, outer, mid, inner, x.g, v.g),
                     SVP_OK);
        snprintf(what, sizeof(what), "add_broadcast %dx%dx%d", outer, mid, inner);
        check(what, &x, CMP_ELEM);
        pair_free(&x);
        pair_free(&v);
    }
}

/*
 * Timesteps up to 1000: the argument t * freq inherits the libms' expf
 * difference (<= 2 ulp of freq <= 1, times t), so the bound here is
 * TOL_ELEM plus 1000 * 2^-22 absolute = 2.5e-4; SVD's own c_noise timesteps
 * (|t| < 2) stay within TOL_ELEM.
 */
Test(ops_cuda, timestep_embedding)
{
    static const float ts_big[] = {0.0f, 1.0f, 17.5f, 999.0f};
    static const float ts_svd[] = {-1.2f, 0.25f, 0.7f, 1.6f};
    int                dim;

    need_device(0);
    for (dim = 2; dim <= 320; dim *= 4) {
        float *tc = to(cpu, ts_svd, 4), *tg = to(gpu, ts_svd, 4);
        pair_t y = pair((size_t)4 * dim, 32, 1.0f);
        float *yc, *yg;
        int    i;

        cr_assert_eq(svp_ops_timestep_embedding(cpu, 4, dim, tc, y.c), SVP_OK);
        cr_assert_eq(svp_ops_timestep_embedding(gpu, 4, dim, tg, y.g), SVP_OK);
        check("timestep_embedding (svd timesteps)", &y, CMP_ELEM);
        svp_ops_free(cpu, tc);
        svp_ops_free(gpu, tg);

        tc = to(cpu, ts_big, 4);
        tg = to(gpu, ts_big, 4);
        cr_assert_eq(svp_ops_timestep_embedding(cpu, 4, dim, tc, y.c), SVP_OK);
        cr_assert_eq(svp_ops_timestep_embedding(gpu, 4, dim, tg, y.g), SVP_OK);
        yc = from(cpu, y.c, y.n);
        yg = from(gpu, y.g, y.n);
        for (i = 0; i < 4 * dim; i++) {
            cr_assert(
                fabsf(yc[i] - yg[i]) <= TOL_ELEM + 1000.0 / (1 << 22),
                "timestep_embedding t=%g dim %d element %d: cuda %.9g, cpu %.9g",
                ts_big[i / dim], dim, i % dim, yg[i], yc[i]);
        }
        /* cos first: t = 0 gives cos 0 = 1 in the first half */
        cr_assert_eq(yg[0], 1.0f);
        free(yc);
        free(yg);
        svp_ops_free(cpu, tc);
        svp_ops_free(gpu, tg);
        pair_free(&y);
    }
}

/* ---- data movement ---- */

Test(ops_cuda, upsample_nearest)
{
    static const int shapes[][6] = {
        /* n, c, h, w, ho, wo */
        {2, 3, 4, 5, 8, 10},
        {1, 2, 3, 3, 5, 7},
        {1, 1, 7, 6, 3, 2},
    };
    int s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        const int *d = shapes[s];
        pair_t     x = pair((size_t)d[0] * d[1] * d[2] * d[3], 33, 1.0f);
        pair_t     y = pair((size_t)d[0] * d[1] * d[4] * d[5], 34, 1.0f);

        cr_assert_eq(svp_ops_upsample_nearest(cpu, d[0], d[1], d[2], d[3], d[4],
                                              d[5], x.c, y.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_upsample_nearest(gpu, d[0], d[1], d[2], d[3], d[4],
                                              d[5], x.g, y.g),
                     SVP_OK);
        check("upsample_nearest", &y, CMP_EXACT);
        pair_free(&x);
        pair_free(&y);
    }
}

Test(ops_cuda, transpose_concat_copy)
{
    static const int shapes[][4] = {{1, 3, 5, 1}, {2, 4, 7, 3}, {3, 25, 6, 16}};
    int              s;

    need_device(0);
    for (s = 0; s < 3; s++) {
        int    a = shapes[s][0], r = shapes[s][1], sd = shapes[s][2];
        int    in = shapes[s][3];
        size_t n  = (size_t)a * r * sd * in;
        pair_t x = pair(n, 35, 1.0f), x2 = pair(n, 36, 1.0f);
        pair_t y = pair(n, 37, 1.0f), cat = pair(2 * n, 38, 1.0f);

        cr_assert_eq(svp_ops_transpose(cpu, a, r, sd, in, x.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_transpose(gpu, a, r, sd, in, x.g, y.g), SVP_OK);
        check("transpose", &y, CMP_EXACT);
        /* concat along axis 1 of [a, r*sd, in] and [a, r*sd, in] */
        cr_assert_eq(svp_ops_concat(cpu, a, (int64_t)r * sd, (int64_t)r * sd, in,
                                    x.c, x2.c, cat.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_concat(gpu, a, (int64_t)r * sd, (int64_t)r * sd, in,
                                    x.g, x2.g, cat.g),
                     SVP_OK);
        check("concat", &cat, CMP_EXACT);
        /* uneven halves: [a*r, sd, in] with [a*r, 1, in] */
        cr_assert_eq(svp_ops_concat(cpu, (int64_t)a * r, sd, 1, in, x.c, x2.c,
                                    cat.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_concat(gpu, (int64_t)a * r, sd, 1, in, x.g, x2.g,
                                    cat.g),
                     SVP_OK);
        check("concat uneven", &cat, CMP_EXACT);
        cr_assert_eq(svp_ops_copy(cpu, (int64_t)n, x2.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_copy(gpu, (int64_t)n, x2.g, y.g), SVP_OK);
        check("copy", &y, CMP_EXACT);
        pair_free(&x);
        pair_free(&x2);
        pair_free(&y);
        pair_free(&cat);
    }
}

/* ---- the scheduler's per-step arithmetic (ops_sched.h) ---- */

/*
 * Bit exact, not within a tolerance: both backends evaluate sched_math.h's
 * functions with one rounding per operation (no FMA on the device), so a
 * latent updated on the GPU is the CPU scheduler's bits.  SVD-XT's schedule
 * (25 steps), latents at each step's sigma.
 */
Test(ops_cuda, sched_bit_exact)
{
    svp_sched_config_t     config;
    svp_sched_h            sched;
    svp_sched_euler_coef_t coef;
    const size_t           n = 25 * 4 * 9 * 13; /* [F, 4, h, w], odd sizes */
    float                  g[25];
    int                    step;

    need_device(0);
    svp_sched_config_default(&config);
    cr_assert_eq(svp_sched_create(&config, 25, &sched), SVP_OK);
    svp_sched_guidance_scales(1.0, 3.0, 25, g);
    for (step = 0; step < 25; step += 4) {
        float  sigma = svp_sched_sigmas(sched)[step];
        pair_t x = pair(n, 60 + step, 3.0f * sigma), v = pair(n, 61 + step, 1.0f);
        pair_t c = pair(n, 62 + step, 1.0f), y = pair(n, 63, 1.0f);

        cr_assert_eq(svp_ops_sched_scale(cpu, n, svp_sched_c_in(sched, step), x.c,
                                         y.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_sched_scale(gpu, n, svp_sched_c_in(sched, step), x.g,
                                         y.g),
                     SVP_OK);
        check("sched_scale", &y, CMP_EXACT);
        cr_assert_eq(svp_ops_sched_guidance(cpu, 25, n / 25, g, v.c, c.c, y.c),
                     SVP_OK);
        cr_assert_eq(svp_ops_sched_guidance(gpu, 25, n / 25, g, v.g, c.g, y.g),
                     SVP_OK);
        check("sched_guidance", &y, CMP_EXACT);
        svp_sched_euler_coef(sched, step, &coef);
        cr_assert_eq(svp_ops_sched_euler(cpu, n, &coef, v.c, x.c, x.c), SVP_OK);
        cr_assert_eq(svp_ops_sched_euler(gpu, n, &coef, v.g, x.g, x.g), SVP_OK);
        check("sched_euler in place", &x, CMP_EXACT);
        pair_free(&x);
        pair_free(&v);
        pair_free(&c);
        pair_free(&y);
    }
    svp_sched_destroy(sched);
}

/* ---- errors ---- */

/*
 * A failed device call is a status, not an abort, and leaves the handle
 * usable: an allocation no GPU can satisfy, then an op.
 */
Test(ops_cuda, failed_alloc_is_a_status)
{
    float *buf = NULL;
    pair_t x;

    need_device(0);
    cr_assert_eq(svp_ops_alloc(gpu, (size_t)1 << 58, &buf), SVP_ERR_NO_MEMORY);
    cr_assert_null(buf, "buf_p must be untouched on failure");
    x = pair(100, 39, 1.0f);
    cr_assert_eq(svp_ops_silu(cpu, 100, x.c, x.c), SVP_OK);
    cr_assert_eq(svp_ops_silu(gpu, 100, x.g, x.g), SVP_OK);
    check("silu after a failed alloc", &x, CMP_ELEM);
    pair_free(&x);
}

/*
 * The one test that runs where there is no device: creating the backend
 * must fail with SVP_ERR_DEVICE, not abort, and leave nothing behind.
 */
Test(ops_cuda, create_without_device_fails)
{
    svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CUDA};
    svp_ops_h        ops    = NULL;
    int              count  = 0;

    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
        cr_skip_test("a cuda device is present (%d): nothing to check", count);
    }
    cr_assert_eq(svp_ops_create(&params, &ops), SVP_ERR_DEVICE);
    cr_assert_null(ops, "ops_p must be untouched on failure");
}

/* ---- a whole UNet forward ---- */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/*
 * A golden UNet case with the cuda backend against diffusers: the golden
 * README's bound for one forward pass, max|C - golden| <= 1e-5 *
 * max|golden|.  Two forwards: the second must agree with the first bit for
 * bit (same stream, same kernels), and both times are logged.
 */
static void unet_golden(const char *name)
{
    const char         *root = getenv("SVP_GOLDEN_DIR");
    char                dir[1024], path[1200];
    struct stat         sb;
    svp_safetensors_h   st;
    svp_tensor_t       *sample, *timestep, *ehs, *ids, *ref;
    svp_unet_h          unet;
    float              *d_sample, *d_ehs, *d_out, *out = NULL, *again = NULL;
    const int64_t      *s;
    const float        *r;
    int64_t             n, i;
    double              max_ref = 0.0, max_err = 0.0, t[3];
    int                 run;
    svp_ops_mem_stats_t warm, again_mem;

    need_device(0);
    snprintf(dir, sizeof(dir), "%s/%s", root ? root : "../shared/golden", name);
    if (stat(dir, &sb) != 0) {
        cr_skip_test("golden data not found at %s (set SVP_GOLDEN_DIR)", dir);
    }
    snprintf(path, sizeof(path), "%s/io.safetensors", dir);
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK, "cannot open %s", path);
    cr_assert_eq(svp_safetensors_load(st, "sample", SVP_DTYPE_F32, &sample), SVP_OK);
    cr_assert_eq(svp_safetensors_load(st, "timestep", SVP_DTYPE_F32, &timestep),
                 SVP_OK);
    cr_assert_eq(svp_safetensors_load(st, "encoder_hidden_states", SVP_DTYPE_F32,
                                      &ehs),
                 SVP_OK);
    cr_assert_eq(svp_safetensors_load(st, "added_time_ids", SVP_DTYPE_F32, &ids),
                 SVP_OK);
    cr_assert_eq(svp_safetensors_load(st, "out", SVP_DTYPE_F32, &ref), SVP_OK);
    svp_safetensors_close(st);

    cr_assert_eq(svp_unet_create(gpu, dir, NULL, &unet), SVP_OK);
    s        = sample->shape;
    n        = svp_tensor_numel(ref);
    d_sample = to(gpu, sample->data, svp_tensor_numel(sample));
    d_ehs    = to(gpu, ehs->data, svp_tensor_numel(ehs));
    cr_assert_eq(svp_ops_alloc(gpu, n, &d_out), SVP_OK);
    for (run = 0; run < 2; run++) {
        if (run == 1) {
            svp_ops_mem_stats(gpu, &warm);
        }
        t[run] = now_s();
        cr_assert_eq(svp_unet_forward(unet, (int)s[0], (int)s[1], (int)s[3],
                                      (int)s[4], d_sample, timestep->data, d_ehs,
                                      (int)ehs->shape[1], ids->data, d_out),
                     SVP_OK);
        if (run == 0) {
            out = from(gpu, d_out, n); /* the download waits for the stream */
        } else {
            again = from(gpu, d_out, n);
        }
        t[run] = now_s() - t[run];
    }
    cr_log_info("%s forward on cuda: %.4f s first, %.4f s second (with the "
                "download)",
                name, t[0], t[1]);
    /* the memory plan: the first forward sized the arena, the second makes
     * no cudaMalloc (buffers or workspace) */
    svp_ops_mem_stats(gpu, &again_mem);
    cr_assert_eq(again_mem.backend_allocs, warm.backend_allocs,
                 "%s on cuda: %llu device allocations after warm-up", name,
                 (unsigned long long)(again_mem.backend_allocs -
                                      warm.backend_allocs));
    cr_assert_eq(again_mem.reserved_bytes, warm.reserved_bytes);

    r = ref->data;
    for (i = 0; i < n; i++) {
        max_ref = fmax(max_ref, fabs(r[i]));
        /* !(<=) keeps a NaN as the worst error */
        if (!(fabs((double)out[i] - r[i]) <= max_err)) {
            max_err = isnan(out[i]) ? INFINITY : fabs((double)out[i] - r[i]);
        }
    }
    cr_assert(max_err <= UNET_REL_TOL * max_ref,
              "%s on cuda: max |err| %.3g (%.3g relative, tolerance %.0e)", name,
              max_err, max_err / max_ref, UNET_REL_TOL);
    cr_assert(memcmp(out, again, n * sizeof(float)) == 0,
              "%s on cuda: a second forward differs from the first", name);

    free(out);
    free(again);
    svp_ops_free(gpu, d_out);
    svp_ops_free(gpu, d_ehs);
    svp_ops_free(gpu, d_sample);
    svp_unet_destroy(unet);
    svp_tensor_destroy(sample);
    svp_tensor_destroy(timestep);
    svp_tensor_destroy(ehs);
    svp_tensor_destroy(ids);
    svp_tensor_destroy(ref);
}

Test(ops_cuda, unet_tiny_golden, .timeout = 120)
{
    unet_golden("unet_tiny");
}

/* The real four-level SVD topology at reduced width (B=2, F=4, 16x24). */
Test(ops_cuda, unet_small_golden, .timeout = 120)
{
    unet_golden("unet_small");
}

/*
 * 16-bit products (doc/DTYPES.md): a bf16/f16 cuda handle runs linear,
 * conv2d and conv_frames on tensor cores with the weight as held and the
 * activation rounded to the dtype by a kernel, summing in fp32; the cpu
 * handle with round_activations rounds both operands with the same
 * functions.  The operands are then the same bits and every product of two
 * bf16 or two f16 values is exact in fp32, so only the order of the fp32
 * sums differs, as between the f32 products: the same bound (REL_GEMM).
 * An activation left unrounded on either side moves the result by ~u
 * (2^-8, 2^-11) relative, far beyond it.  The weights take two bytes each
 * and no fp32 copy of them is made on the device.
 */
static void products16_case(const char *dtype)
{
    static const svp_ops_conv2d_t convs[] = {
        {.n      = 2,
         .c_in   = 8,
         .h      = 9,
         .w      = 7,
         .c_out  = 16,
         .kh     = 3,
         .kw     = 3,
         .stride = 1,
         .pad    = 1},
        {.n      = 3,
         .c_in   = 8,
         .h      = 5,
         .w      = 5,
         .c_out  = 16,
         .kh     = 1,
         .kw     = 1,
         .stride = 1,
         .pad    = 0},
        {.n      = 1,
         .c_in   = 5,
         .h      = 9,
         .w      = 7,
         .c_out  = 6,
         .kh     = 3,
         .kw     = 3,
         .stride = 2,
         .pad    = 1},
    };
    svp_ops_params_t cp = {.backend = SVP_OPS_BACKEND_CPU,
                           .threads = 2,
                           .dtype   = (svp_dtype_t)svp_dtype_parse_short(dtype),
                           .round_activations = 1};
    svp_ops_params_t gp = {.backend = SVP_OPS_BACKEND_CUDA,
                           .dtype   = (svp_dtype_t)svp_dtype_parse_short(dtype)};
    svp_ops_h        c16, g16;
    const int        rows = 300, in = 320, out = 40;
    const size_t     n_w = (size_t)out * in; /* the largest weight */
    float           *wh  = rand_host(n_w, 2, 0.2f);
    void            *wc, *wg;
    pair_t           x, y, b;
    int              s;

    need_device(0);
    cr_assert_eq(svp_ops_create(&cp, &c16), SVP_OK);
    cr_assert_eq(svp_ops_create(&gp, &g16), SVP_OK);
    cr_assert_str_eq(svp_ops_dtype(g16), dtype);
    cr_assert_eq(svp_ops_product_dtype(g16), svp_ops_weights_dtype(g16),
                 "a %s cuda handle multiplies in %s", dtype, dtype);
    cr_assert_eq(svp_ops_product_dtype(c16), svp_ops_weights_dtype(c16));
    /* the pair helpers work on the fixture's handles: borrow them */
    svp_ops_destroy(cpu);
    svp_ops_destroy(gpu);
    cpu = c16;
    gpu = g16;
    cr_assert_eq(svp_ops_weights_upload(cpu, wh, n_w, &wc), SVP_OK);
    cr_assert_eq(svp_ops_weights_upload(gpu, wh, n_w, &wg), SVP_OK);
    cr_assert_eq(svp_ops_weights_bytes(gpu), n_w * 2);

    x = pair((size_t)rows * in, 1, 1.0f);
    b = pair((size_t)out, 3, 0.5f);
    y = pair((size_t)rows * out, 4, 1.0f);
    cr_assert_eq(svp_ops_linear(cpu, rows, in, out, x.c, wc, b.c, 0, y.c), SVP_OK);
    cr_assert_eq(svp_ops_linear(gpu, rows, in, out, x.g, wg, b.g, 0, y.g), SVP_OK);
    check("linear", &y, CMP_REL_MAX);
    /* accumulate, no bias, an odd inner size */
    cr_assert_eq(svp_ops_linear(cpu, 37, 63, 17, x.c, wc, NULL, 1, y.c), SVP_OK);
    cr_assert_eq(svp_ops_linear(gpu, 37, 63, 17, x.g, wg, NULL, 1, y.g), SVP_OK);
    check("linear accumulate", &y, CMP_REL_MAX);
    pair_free(&y);

    for (s = 0; s < 3; s++) {
        const svp_ops_conv2d_t *p = &convs[s];
        char                    what[64];

        y = pair((size_t)p->n * p->c_out * svp_ops_conv2d_out_h(p) *
                     svp_ops_conv2d_out_w(p),
                 8, 1.0f);
        cr_assert_eq(svp_ops_conv2d(cpu, p, x.c, wc, b.c, y.c), SVP_OK);
        cr_assert_eq(svp_ops_conv2d(gpu, p, x.g, wg, b.g, y.g), SVP_OK);
        snprintf(what, sizeof(what), "%s conv2d shape %d", dtype, s);
        check(what, &y, CMP_REL_MAX);
        pair_free(&y);
    }

    /* the temporal conv: 2 clips of 5 frames, 8 channels of 9 positions */
    y = pair((size_t)2 * 5 * 6 * 9, 12, 1.0f);
    cr_assert_eq(svp_ops_conv_frames(cpu, 2, 5, 8, 6, 9, x.c, wc, b.c, y.c), SVP_OK);
    cr_assert_eq(svp_ops_conv_frames(gpu, 2, 5, 8, 6, 9, x.g, wg, b.g, y.g), SVP_OK);
    check("conv_frames", &y, CMP_REL_MAX);
    pair_free(&y);

    pair_free(&x);
    pair_free(&b);
    svp_ops_free(cpu, wc);
    svp_ops_free(gpu, wg);
    free(wh);
}

Test(ops_cuda, products_in_bf16)
{
    products16_case("bf16");
}

Test(ops_cuda, products_in_f16)
{
    products16_case("f16");
}

/*
 * The golden unet_tiny forward with 16-bit products on the device, against
 * the fp64 output: max|err| / max|ref| in units of u must lie where the
 * reference implementation's does (UNET_PRODUCTS16_*, the same figures and
 * reasoning as tests/test_unet.c's products_in_*_within_roundoff, which
 * check the cpu twin).
 */
#define UNET_PRODUCTS16_RMS_BF16    3.154
#define UNET_PRODUCTS16_MAX_BF16_LO 3.081
#define UNET_PRODUCTS16_MAX_BF16_HI 4.929
#define UNET_PRODUCTS16_RMS_F16     3.114
#define UNET_PRODUCTS16_MAX_F16_LO  2.856
#define UNET_PRODUCTS16_MAX_F16_HI  4.254

static void unet_products16(const char *dtype, double u, double rms_ref,
                            double max_lo, double max_hi)
{
    const char       *root = getenv("SVP_GOLDEN_DIR");
    svp_ops_params_t  gp   = {.backend = SVP_OPS_BACKEND_CUDA,
                              .dtype   = (svp_dtype_t)svp_dtype_parse_short(dtype)};
    char              dir[1024], path[1200];
    struct stat       sb;
    svp_safetensors_h st;
    svp_tensor_t     *sample, *timestep, *ehs, *ids, *ref;
    svp_ops_h         g16;
    svp_unet_h        unet;
    float            *d_sample, *d_ehs, *d_out, *out;
    const int64_t    *s;
    const float      *r;
    int64_t           n, i;
    double            max_ref = 0.0, max_err = 0.0, err2 = 0.0, ref2 = 0.0;
    double            err, rms;

    need_device(0);
    snprintf(dir, sizeof(dir), "%s/unet_tiny", root ? root : "../shared/golden");
    if (stat(dir, &sb) != 0) {
        cr_skip_test("golden data not found at %s (set SVP_GOLDEN_DIR)", dir);
    }
    snprintf(path, sizeof(path), "%s/io.safetensors", dir);
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK, "cannot open %s", path);
    cr_assert_eq(svp_safetensors_load(st, "sample", SVP_DTYPE_F32, &sample), SVP_OK);
    cr_assert_eq(svp_safetensors_load(st, "timestep", SVP_DTYPE_F32, &timestep),
                 SVP_OK);
    cr_assert_eq(svp_safetensors_load(st, "encoder_hidden_states", SVP_DTYPE_F32,
                                      &ehs),
                 SVP_OK);
    cr_assert_eq(svp_safetensors_load(st, "added_time_ids", SVP_DTYPE_F32, &ids),
                 SVP_OK);
    svp_safetensors_close(st);
    snprintf(path, sizeof(path), "%s/reference_f64.safetensors", dir);
    cr_assert_eq(svp_safetensors_open(path, &st), SVP_OK, "cannot open %s", path);
    cr_assert_eq(svp_safetensors_load(st, "out", SVP_DTYPE_F32, &ref), SVP_OK);
    svp_safetensors_close(st);

    /* the fixture's gpu handle is f32: this case has its own */
    cr_assert_eq(svp_ops_create(&gp, &g16), SVP_OK);
    cr_assert_eq(svp_ops_product_dtype(g16), svp_ops_weights_dtype(g16));
    cr_assert_eq(svp_unet_create(g16, dir, NULL, &unet), SVP_OK);
    s        = sample->shape;
    n        = svp_tensor_numel(ref);
    d_sample = to(g16, sample->data, svp_tensor_numel(sample));
    d_ehs    = to(g16, ehs->data, svp_tensor_numel(ehs));
    cr_assert_eq(svp_ops_alloc(g16, n, &d_out), SVP_OK);
    cr_assert_eq(svp_unet_forward(unet, (int)s[0], (int)s[1], (int)s[3], (int)s[4],
                                  d_sample, timestep->data, d_ehs,
                                  (int)ehs->shape[1], ids->data, d_out),
                 SVP_OK);
    out = from(g16, d_out, n);

    r = ref->data;
    for (i = 0; i < n; i++) {
        double d = (double)out[i] - r[i];

        max_ref = fmax(max_ref, fabs(r[i]));
        if (!(fabs(d) <= max_err)) {
            max_err = isnan(d) ? INFINITY : fabs(d);
        }
        err2 += d * d;
        ref2 += (double)r[i] * r[i];
    }
    err = max_err / max_ref / u;
    rms = sqrt(err2 / ref2) / u;
    cr_log_info("unet_tiny on cuda, %s products: rms %.3f u, max %.3f u", dtype, rms,
                err);
    cr_assert(fabs(rms - rms_ref) <= 0.1 * rms_ref,
              "%s products on cuda: "
              "relative rms error %.3f u, diffusers with the same roundings "
              "%.3f u",
              dtype, rms, rms_ref);
    cr_assert(err >= 0.9 * max_lo && err <= 1.1 * max_hi,
              "%s products on "
              "cuda: max|err|/max|ref| %.3f u, diffusers %.3f to %.3f u",
              dtype, err, max_lo, max_hi);

    free(out);
    svp_ops_free(g16, d_out);
    svp_ops_free(g16, d_ehs);
    svp_ops_free(g16, d_sample);
    svp_unet_destroy(unet);
    svp_ops_destroy(g16);
    svp_tensor_destroy(sample);
    svp_tensor_destroy(timestep);
    svp_tensor_destroy(ehs);
    svp_tensor_destroy(ids);
    svp_tensor_destroy(ref);
}

Test(ops_cuda, unet_tiny_products_in_bf16, .timeout = 120)
{
    unet_products16("bf16", 0x1p-8, UNET_PRODUCTS16_RMS_BF16,
                    UNET_PRODUCTS16_MAX_BF16_LO, UNET_PRODUCTS16_MAX_BF16_HI);
}

Test(ops_cuda, unet_tiny_products_in_f16, .timeout = 120)
{
    unet_products16("f16", 0x1p-11, UNET_PRODUCTS16_RMS_F16,
                    UNET_PRODUCTS16_MAX_F16_LO, UNET_PRODUCTS16_MAX_F16_HI);
}
