/*
 * Tests for src/ops: every op of the CPU backend against a naive double
 * precision reference written from the op's definition, over several shapes.
 *
 * Tolerance: max|op - ref| <= 1e-5 * max(1, max|ref|).  The ops accumulate
 * in fp32 over at most a few hundred terms of O(1) values here, so rounding
 * stays near 1e-6 relative; an indexing or formula bug is O(1).
 */
#include "ops/cpu/ops_cpu.h"
#include "ops/ops.h"
#include "ops/ops_profile.h"
#include "ops/ops_sched.h"
#include "tensor/tensor.h"
#include "trace/range.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OPS_TOL 1e-5

static svp_ops_h ops;

static void ops_setup(void)
{
    svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU,
                               .threads = 2,
                               /* tiny, so attention tests cover chunking */
                               .attn_max_scores = 1000};
    cr_assert_eq(svp_ops_create(&params, &ops), SVP_OK);
}

static void ops_teardown(void)
{
    svp_ops_destroy(ops);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1): deterministic, so failures reproduce. */
static float *rand_buf(int64_t n)
{
    float  *buf = malloc((n ? n : 1) * sizeof(float));
    int64_t i;

    cr_assert_not_null(buf);
    for (i = 0; i < n; i++) {
        rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
        buf[i]    = (float)((rng_state >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
    }
    return buf;
}

static double *dbuf(int64_t n)
{
    double *buf = calloc(n ? n : 1, sizeof(double));
    cr_assert_not_null(buf);
    return buf;
}

static void assert_close(const char *what, const float *got, const double *ref,
                         int64_t n)
{
    double  max_ref = 1.0, max_err = 0.0;
    int64_t i, worst               = 0;

    for (i = 0; i < n; i++) {
        max_ref = fmax(max_ref, fabs(ref[i]));
    }
    for (i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]);
        if (!(err <= max_err)) {
            max_err = err;
            worst   = i;
        }
    }
    cr_assert(max_err <= OPS_TOL * max_ref,
              "%s: max |err| %.3g at %ld (got %.8g, want %.8g), tolerance %.3g",
              what, max_err, (long)worst, got[worst], ref[worst], OPS_TOL * max_ref);
}

/* ---- conv2d ---- */

ParameterizedTestParameters(ops, conv2d)
{
    static svp_ops_conv2d_t shapes[] = {
        /* n c_in h  w  c_out kh kw stride pad */
        {2, 3, 5, 7, 4, 3, 3, 1, 1}, /* 3x3 same */
        {1, 4, 8, 6, 5, 3, 3, 2, 1}, /* downsample */
        {3, 2, 7, 5, 3, 3, 3, 2, 1}, /* odd sizes, stride 2 */
        {2, 6, 4, 4, 3, 1, 1, 1, 0}, /* 1x1 (gemm only) */
        {1, 3, 8, 8, 5, 4, 4, 4, 0}, /* patch embedding */
        /* 3x3 same from 8x8 up: Winograd F(2x2,3x3) on the CPU */
        {3, 4, 8, 8, 3, 3, 3, 1, 1},
        {2, 5, 9, 11, 6, 3, 3, 1, 1}, /* odd: partial last tiles */
        /* 60 rows of 32 tiles in passes of 32 rows: a pass spans images */
        {3, 64, 40, 64, 64, 3, 3, 1, 1},
        /* 300 input channels: the kernel's sums in two blocks of 256 */
        {1, 300, 8, 9, 10, 3, 3, 1, 1},
    };
    return cr_make_param_array(svp_ops_conv2d_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(svp_ops_conv2d_t *p, ops, conv2d, .init = ops_setup,
                  .fini = ops_teardown)
{
    int     ho = svp_ops_conv2d_out_h(p), wo = svp_ops_conv2d_out_w(p);
    int64_t nx = (int64_t)p->n * p->c_in * p->h * p->w;
    int64_t ny = (int64_t)p->n * p->c_out * ho * wo;
    float  *x  = rand_buf(nx),
          *w   = rand_buf((int64_t)p->c_out * p->c_in * p->kh * p->kw);
    float  *b = rand_buf(p->c_out), *y = rand_buf(ny);
    double *ref = dbuf(ny);
    int     n, o, c, oy, ox, i, j;

    for (n = 0; n < p->n; n++)
        for (o = 0; o < p->c_out; o++)
            for (oy = 0; oy < ho; oy++)
                for (ox = 0; ox < wo; ox++) {
                    double acc = b[o];
                    for (c = 0; c < p->c_in; c++)
                        for (i = 0; i < p->kh; i++)
                            for (j = 0; j < p->kw; j++) {
                                int iy = oy * p->stride - p->pad + i,
                                    ix = ox * p->stride - p->pad + j;
                                if (iy >= 0 && iy < p->h && ix >= 0 && ix < p->w) {
                                    acc +=
                                        (double)w[((o * p->c_in + c) * p->kh + i) *
                                                      p->kw +
                                                  j] *
                                        x[((n * p->c_in + c) * p->h + iy) * p->w +
                                          ix];
                                }
                            }
                    ref[((n * p->c_out + o) * ho + oy) * wo + ox] = acc;
                }
    cr_assert_eq(svp_ops_conv2d(ops, p, x, w, b, y), SVP_OK);
    assert_close("conv2d", y, ref, ny);
    free(x);
    free(w);
    free(b);
    free(y);
    free(ref);
}

/*
 * The CPU's three ways to a 3x3 stride-1 conv (im2col, Winograd with 16
 * gemms, Winograd fused with the AVX-512 kernel) agree; conv2d above checks
 * the one the dispatch picks against the reference.
 */
Test(ops, cpu_conv2d_paths_agree, .init = ops_setup, .fini = ops_teardown)
{
    svp_ops_conv2d_t p  = {.n      = 2,
                           .c_in   = 5,
                           .h      = 9,
                           .w      = 11,
                           .c_out  = 6,
                           .kh     = 3,
                           .kw     = 3,
                           .stride = 1,
                           .pad    = 1};
    int64_t          ny = (int64_t)p.n * p.c_out * p.h * p.w, i;
    float           *x  = rand_buf((int64_t)p.n * p.c_in * p.h * p.w);
    float  *w = rand_buf((int64_t)p.c_out * p.c_in * 9), *b = rand_buf(p.c_out);
    float  *y0 = rand_buf(ny), *y1 = rand_buf(ny), *y2 = rand_buf(ny);
    double *ref = dbuf(ny);

    cr_assert(svp_ops_cpu_winograd_applies(&p));
    cr_assert_eq(svp_ops_cpu_conv2d_im2col(ops, &p, x, w, b, y0), SVP_OK);
    cr_assert_eq(svp_ops_cpu_conv2d_winograd(ops, &p, x, w, b, y1), SVP_OK);
    for (i = 0; i < ny; i++) {
        ref[i] = y0[i];
    }
    assert_close("winograd, 16 gemms", y1, ref, ny);
    if (svp_ops_cpu_has_kernel()) {
        cr_assert_eq(svp_ops_cpu_conv2d_winograd_fused(ops, &p, x, w, b, y2),
                     SVP_OK);
        assert_close("winograd, fused", y2, ref, ny);
    }
    free(x);
    free(w);
    free(b);
    free(y0);
    free(y1);
    free(y2);
    free(ref);
}

/* ---- temporal conv ---- */

typedef struct {
    int b, f, c_in, c_out, hw;
} frames_shape_t;

ParameterizedTestParameters(ops, conv_frames)
{
    static frames_shape_t shapes[] = {
        {1, 1, 3, 2, 5}, /* one frame: only the centre tap */
        {2, 3, 4, 4, 6},
        {1, 5, 2, 3, 7},
        /* from 1024 pixels: per frame, or F(2,3) along the frames with
         * AVX-512: an odd clip, one frame, blocks of pixels with an edge */
        {1, 5, 3, 9, 1100},
        {2, 1, 4, 8, 1024},
        {2, 4, 20, 16, 1500},
        {1, 3, 300, 10, 1024}, /* sums in two blocks of 256 */
    };
    return cr_make_param_array(frames_shape_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(frames_shape_t *p, ops, conv_frames, .init = ops_setup,
                  .fini = ops_teardown)
{
    int64_t nx = (int64_t)p->b * p->f * p->c_in * p->hw;
    int64_t ny = (int64_t)p->b * p->f * p->c_out * p->hw;
    float  *x = rand_buf(nx), *w = rand_buf(p->c_out * p->c_in * 3);
    float  *bias = rand_buf(p->c_out), *y = rand_buf(ny);
    double *ref = dbuf(ny);
    int     b, t, o, c, k, s;

    for (b = 0; b < p->b; b++)
        for (t = 0; t < p->f; t++)
            for (o = 0; o < p->c_out; o++)
                for (s = 0; s < p->hw; s++) {
                    double acc = bias[o];
                    for (c = 0; c < p->c_in; c++)
                        for (k = 0; k < 3; k++) {
                            int src = t + k - 1;
                            if (src >= 0 && src < p->f) {
                                acc += (double)w[(o * p->c_in + c) * 3 + k] *
                                       x[(((int64_t)b * p->f + src) * p->c_in + c) *
                                             p->hw +
                                         s];
                            }
                        }
                    ref[(((int64_t)b * p->f + t) * p->c_out + o) * p->hw + s] = acc;
                }
    cr_assert_eq(svp_ops_conv_frames(ops, p->b, p->f, p->c_in, p->c_out, p->hw, x, w,
                                     bias, y),
                 SVP_OK);
    assert_close("conv_frames", y, ref, ny);
    free(x);
    free(w);
    free(bias);
    free(y);
    free(ref);
}

/* ---- group norm ---- */

ParameterizedTestParameters(ops, group_norm)
{
    static svp_ops_group_norm_t shapes[] = {
        /* n frames c spatial groups eps silu */
        {2, 1, 64, 6, 32, 1e-6f, 0}, /* per image */
        {2, 3, 64, 5, 32, 1e-5f, 0}, /* temporal: stats span frames */
        {3, 1, 96, 4, 32, 1e-6f, 1}, /* 3 channels per group, + SiLU */
        {1, 4, 32, 7, 32, 1e-5f, 1}, /* 1 channel per group */
    };
    return cr_make_param_array(svp_ops_group_norm_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(svp_ops_group_norm_t *p, ops, group_norm, .init = ops_setup,
                  .fini = ops_teardown)
{
    int64_t total = (int64_t)p->n * p->frames * p->c * p->spatial;
    int     cpg   = p->c / p->groups, n, g, f, c;
    float  *x = rand_buf(total), *gamma = rand_buf(p->c), *beta = rand_buf(p->c);
    float  *y   = rand_buf(total);
    double *ref = dbuf(total);
    int64_t s;

    for (n = 0; n < p->n; n++)
        for (g = 0; g < p->groups; g++) {
            double sum = 0, sq = 0, mean, var,
                   cnt = (double)p->frames * cpg * p->spatial;
#define GN_AT(_f, _c, _s) \
    ((((int64_t)n * p->frames + (_f)) * p->c + (_c)) * p->spatial + (_s))
            for (f = 0; f < p->frames; f++)
                for (c = g * cpg; c < (g + 1) * cpg; c++)
                    for (s = 0; s < p->spatial; s++)
                        sum += x[GN_AT(f, c, s)];
            mean = sum / cnt;
            for (f = 0; f < p->frames; f++)
                for (c = g * cpg; c < (g + 1) * cpg; c++)
                    for (s = 0; s < p->spatial; s++)
                        sq +=
                            (x[GN_AT(f, c, s)] - mean) * (x[GN_AT(f, c, s)] - mean);
            var = sq / cnt;
            for (f = 0; f < p->frames; f++)
                for (c = g * cpg; c < (g + 1) * cpg; c++)
                    for (s = 0; s < p->spatial; s++) {
                        double v = (x[GN_AT(f, c, s)] - mean) / sqrt(var + p->eps) *
                                       gamma[c] +
                                   beta[c];
                        ref[GN_AT(f, c, s)] = p->silu ? v / (1 + exp(-v)) : v;
                    }
#undef GN_AT
        }
    cr_assert_eq(svp_ops_group_norm(ops, p, x, gamma, beta, y), SVP_OK);
    assert_close("group_norm", y, ref, total);
    /* in place gives the same */
    cr_assert_eq(svp_ops_group_norm(ops, p, x, gamma, beta, x), SVP_OK);
    assert_close("group_norm in place", x, ref, total);
    free(x);
    free(gamma);
    free(beta);
    free(y);
    free(ref);
}

/* ---- layer norm ---- */

typedef struct {
    int rows, dim;
} rows_shape_t;

ParameterizedTestParameters(ops, layer_norm)
{
    static rows_shape_t shapes[] = {{1, 8}, {7, 32}, {13, 37}};
    return cr_make_param_array(rows_shape_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(rows_shape_t *p, ops, layer_norm, .init = ops_setup,
                  .fini = ops_teardown)
{
    int64_t total = (int64_t)p->rows * p->dim;
    float  *x = rand_buf(total), *gamma = rand_buf(p->dim), *beta = rand_buf(p->dim);
    float  *y   = rand_buf(total);
    double *ref = dbuf(total);
    int     r, i;

    for (r = 0; r < p->rows; r++) {
        double sum = 0, sq = 0, mean;
        for (i = 0; i < p->dim; i++)
            sum += x[r * p->dim + i];
        mean = sum / p->dim;
        for (i = 0; i < p->dim; i++)
            sq += pow(x[r * p->dim + i] - mean, 2);
        for (i = 0; i < p->dim; i++) {
            ref[r * p->dim + i] =
                (x[r * p->dim + i] - mean) / sqrt(sq / p->dim + 1e-5) * gamma[i] +
                beta[i];
        }
    }
    cr_assert_eq(svp_ops_layer_norm(ops, p->rows, p->dim, 1e-5f, x, gamma, beta, y),
                 SVP_OK);
    assert_close("layer_norm", y, ref, total);
    free(x);
    free(gamma);
    free(beta);
    free(y);
    free(ref);
}

/* ---- linear ---- */

typedef struct {
    int rows, in, out, bias, accumulate;
} linear_shape_t;

ParameterizedTestParameters(ops, linear)
{
    static linear_shape_t shapes[] = {
        {1, 8, 4, 1, 0},  {9, 17, 33, 1, 0}, {5, 6, 7, 0, 0},
        {4, 10, 3, 1, 1}, {3, 5, 6, 0, 1},
    };
    return cr_make_param_array(linear_shape_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(linear_shape_t *p, ops, linear, .init = ops_setup,
                  .fini = ops_teardown)
{
    float  *x = rand_buf((int64_t)p->rows * p->in), *w = rand_buf(p->out * p->in);
    float  *b = rand_buf(p->out), *y = rand_buf((int64_t)p->rows * p->out);
    double *ref = dbuf((int64_t)p->rows * p->out);
    int     r, o, i;

    for (r = 0; r < p->rows; r++)
        for (o = 0; o < p->out; o++) {
            double acc =
                (p->accumulate ? y[r * p->out + o] : 0.0) + (p->bias ? b[o] : 0.0);
            for (i = 0; i < p->in; i++)
                acc += (double)x[r * p->in + i] * w[o * p->in + i];
            ref[r * p->out + o] = acc;
        }
    cr_assert_eq(svp_ops_linear(ops, p->rows, p->in, p->out, x, w,
                                p->bias ? b : NULL, p->accumulate, y),
                 SVP_OK);
    assert_close("linear", y, ref, (int64_t)p->rows * p->out);
    free(x);
    free(w);
    free(b);
    free(y);
    free(ref);
}

/* ---- attention ---- */

ParameterizedTestParameters(ops, attention)
{
    static svp_ops_attention_t shapes[] = {
        /* batch heads d q_len kv_len kv_div; strides filled in by the test */
        {2, 2, 4, 5, 5, 1, 0, 0, 0, 0},   /* self, short path */
        {4, 1, 8, 3, 1, 2, 0, 0, 0, 0},   /* one key: softmax is 1 */
        {6, 3, 4, 4, 3, 3, 0, 0, 0, 0},   /* shared context */
        {2, 2, 8, 70, 70, 1, 0, 0, 0, 0}, /* gemm path, 14 q-chunks */
        {3, 1, 5, 33, 90, 3, 0, 0, 0, 0}, /* gemm path, shared kv */
    };
    return cr_make_param_array(svp_ops_attention_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(svp_ops_attention_t *p, ops, attention, .init = ops_setup,
                  .fini = ops_teardown)
{
    int width = p->heads * p->head_dim, kvb = p->batch / p->kv_batch_div;
    /* q and out padded to exercise the strides; k, v packed side by side */
    int64_t             qs = width + 3, kvs = 2 * width;
    float              *q   = rand_buf((int64_t)p->batch * p->q_len * qs);
    float              *kv  = rand_buf((int64_t)kvb * p->kv_len * kvs);
    float              *out = rand_buf((int64_t)p->batch * p->q_len * qs);
    int64_t             n   = (int64_t)p->batch * p->q_len * qs;
    double             *ref = dbuf(n), *s = dbuf(p->kv_len);
    int                 b, h, i, j, d;
    svp_ops_attention_t a = *p;

    for (i = 0; i < n; i++)
        ref[i] = out[i]; /* padding must stay untouched */
    for (b = 0; b < p->batch; b++)
        for (h = 0; h < p->heads; h++)
            for (i = 0; i < p->q_len; i++) {
                double max = -INFINITY, sum = 0;
                int    bk = b / p->kv_batch_div;
                for (j = 0; j < p->kv_len; j++) {
                    double dot = 0;
                    for (d = 0; d < p->head_dim; d++)
                        dot += (double)q[((int64_t)b * p->q_len + i) * qs +
                                         h * p->head_dim + d] *
                               kv[((int64_t)bk * p->kv_len + j) * kvs +
                                  h * p->head_dim + d];
                    s[j] = dot / sqrt(p->head_dim);
                    max  = fmax(max, s[j]);
                }
                for (j = 0; j < p->kv_len; j++) {
                    s[j] = exp(s[j] - max);
                    sum += s[j];
                }
                for (d = 0; d < p->head_dim; d++) {
                    double acc = 0;
                    for (j = 0; j < p->kv_len; j++)
                        acc += s[j] / sum *
                               kv[((int64_t)bk * p->kv_len + j) * kvs + width +
                                  h * p->head_dim + d];
                    ref[((int64_t)b * p->q_len + i) * qs + h * p->head_dim + d] =
                        acc;
                }
            }
    a.q_stride = a.out_stride = qs;
    a.k_stride = a.v_stride = kvs;
    cr_assert_eq(svp_ops_attention(ops, &a, q, kv, kv + width, out), SVP_OK);
    assert_close("attention", out, ref, n);
    /* out may be q itself (ops.h); padding columns of q stay as they were */
    for (i = 0; i < n; i++) {
        if (i % qs >= width) {
            ref[i] = q[i];
        }
    }
    cr_assert_eq(svp_ops_attention(ops, &a, q, kv, kv + width, q), SVP_OK);
    assert_close("attention in place", q, ref, n);
    free(q);
    free(kv);
    free(out);
    free(ref);
    free(s);
}

/* ---- activations and elementwise ---- */

Test(ops, activations, .init = ops_setup, .fini = ops_teardown)
{
    const int64_t n = 1000;
    float        *x = rand_buf(n), *y = rand_buf(n), *gg = rand_buf(2 * n);
    double       *ref = dbuf(n);
    int64_t       i;

    for (i = 0; i < n; i++)
        x[i] *= 6.0f; /* cover the tails */
    for (i = 0; i < n; i++)
        ref[i] = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
    cr_assert_eq(svp_ops_gelu(ops, n, x, y), SVP_OK);
    assert_close("gelu", y, ref, n);

    for (i = 0; i < n; i++)
        ref[i] = x[i] / (1.0 + exp(-(double)x[i]));
    cr_assert_eq(svp_ops_silu(ops, n, x, y), SVP_OK);
    assert_close("silu", y, ref, n);

    /* rows of 20: value = the first 10, gate = the last 10 */
    for (i = 0; i < n; i++) {
        double g = gg[(i / 10) * 20 + 10 + i % 10];
        ref[i]   = gg[(i / 10) * 20 + i % 10] * 0.5 * g * (1.0 + erf(g / sqrt(2.0)));
    }
    cr_assert_eq(svp_ops_geglu(ops, n / 10, 10, gg, y), SVP_OK);
    assert_close("geglu", y, ref, n);
    free(x);
    free(y);
    free(gg);
    free(ref);
}

Test(ops, elementwise, .init = ops_setup, .fini = ops_teardown)
{
    const int64_t n = 600;
    float  *a = rand_buf(n), *b = rand_buf(n), *y = rand_buf(n), *v = rand_buf(30);
    double *ref = dbuf(n);
    int64_t i;

    for (i = 0; i < n; i++)
        ref[i] = (double)a[i] + b[i];
    cr_assert_eq(svp_ops_add(ops, n, a, b, y), SVP_OK);
    assert_close("add", y, ref, n);
    for (i = 0; i < n; i++)
        ref[i] = 0.3 * a[i] + 0.7 * b[i];
    cr_assert_eq(svp_ops_blend(ops, n, 0.3f, a, b, y), SVP_OK);
    assert_close("blend", y, ref, n);

    /* [outer 3, mid 20, inner 10] += v[3, 10] */
    for (i = 0; i < n; i++)
        ref[i] = (double)a[i] + v[(i / 200) * 10 + i % 10];
    memcpy(y, a, n * sizeof(float));
    cr_assert_eq(svp_ops_add_broadcast(ops, 3, 20, 10, y, v), SVP_OK);
    assert_close("add_broadcast", y, ref, n);
    /* a per-channel bias over pixels: [n*c = 30, hw = 20, 1] */
    for (i = 0; i < n; i++)
        ref[i] = (double)a[i] + v[i / 20];
    memcpy(y, a, n * sizeof(float));
    cr_assert_eq(svp_ops_add_broadcast(ops, 30, 20, 1, y, v), SVP_OK);
    assert_close("add_broadcast channels", y, ref, n);
    free(a);
    free(b);
    free(y);
    free(v);
    free(ref);
}

Test(ops, timestep_embedding, .init = ops_setup, .fini = ops_teardown)
{
    /* SVD's inputs: t = 0.25 ln(sigma) and the added time ids */
    float   t[4] = {0.25f * logf(700.0f), 6.0f, 127.0f, 0.02f};
    int     dim = 320, half = 160, r, i;
    float  *y   = rand_buf(4 * dim);
    double *ref = dbuf(4 * dim);

    for (r = 0; r < 4; r++)
        for (i = 0; i < half; i++) {
            double w                = exp(-log(10000.0) * i / half);
            ref[r * dim + i]        = cos(t[r] * w); /* cos first */
            ref[r * dim + half + i] = sin(t[r] * w);
        }
    cr_assert_eq(svp_ops_timestep_embedding(ops, 4, dim, t, y), SVP_OK);
    /* fp32 frequencies: arguments up to 127 carry ~127 * 2^-24 of rounding */
    assert_close("timestep_embedding", y, ref, 4 * dim);
    free(y);
    free(ref);
}

typedef struct {
    int n, c, h, w, ho, wo;
} resize_shape_t;

ParameterizedTestParameters(ops, upsample_nearest)
{
    static resize_shape_t shapes[] = {
        {2, 3, 4, 6, 8, 12}, /* x2 */
        {1, 2, 3, 5, 5, 9},  /* to an odd skip size */
        {1, 1, 4, 4, 7, 3},  /* arbitrary */
    };
    return cr_make_param_array(resize_shape_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

ParameterizedTest(resize_shape_t *p, ops, upsample_nearest, .init = ops_setup,
                  .fini = ops_teardown)
{
    int64_t nx = (int64_t)p->n * p->c * p->h * p->w,
            ny = (int64_t)p->n * p->c * p->ho * p->wo;
    float  *x = rand_buf(nx), *y = rand_buf(ny);
    double *ref = dbuf(ny);
    int     pl, oy, ox;

    for (pl = 0; pl < p->n * p->c; pl++)
        for (oy = 0; oy < p->ho; oy++)
            for (ox = 0; ox < p->wo; ox++)
                ref[((int64_t)pl * p->ho + oy) * p->wo + ox] =
                    x[((int64_t)pl * p->h + (int)floor((double)oy * p->h / p->ho)) *
                          p->w +
                      (int)floor((double)ox * p->w / p->wo)];
    cr_assert_eq(svp_ops_upsample_nearest(ops, p->n, p->c, p->h, p->w, p->ho, p->wo,
                                          x, y),
                 SVP_OK);
    assert_close("upsample_nearest", y, ref, ny);
    free(x);
    free(y);
    free(ref);
}

Test(ops, transpose_concat_copy, .init = ops_setup, .fini = ops_teardown)
{
    int     A = 2, R = 3, S = 5, I = 4, i;
    int64_t n = (int64_t)A * R * S * I;
    float  *x = rand_buf(n), *y = rand_buf(n), *z = rand_buf(n);
    double *ref = dbuf(2 * n);
    int     a, r, s, k;

    for (a = 0; a < A; a++)
        for (r = 0; r < R; r++)
            for (s = 0; s < S; s++)
                for (k = 0; k < I; k++)
                    ref[((a * S + s) * R + r) * I + k] =
                        x[((a * R + r) * S + s) * I + k];
    cr_assert_eq(svp_ops_transpose(ops, A, R, S, I, x, y), SVP_OK);
    assert_close("transpose", y, ref, n);
    /* inner 1: a plain batched matrix transpose */
    for (a = 0; a < A; a++)
        for (r = 0; r < R; r++)
            for (s = 0; s < S * I; s++)
                ref[(a * S * I + s) * R + r] = x[(a * R + r) * S * I + s];
    cr_assert_eq(svp_ops_transpose(ops, A, R, S * I, 1, x, y), SVP_OK);
    assert_close("transpose inner 1", y, ref, n);

    {
        float *cat = rand_buf(2 * n);
        /* n = 2 items: [2, 30] ++ [2, 30] along channels of 3 x 10 */
        for (a = 0; a < 2; a++)
            for (i = 0; i < (int)(n / 2); i++) {
                ref[a * n + i]         = x[a * n / 2 + i];
                ref[a * n + n / 2 + i] = z[a * n / 2 + i];
            }
        cr_assert_eq(svp_ops_concat(ops, 2, 3, 3, n / 6, x, z, cat), SVP_OK);
        assert_close("concat", cat, ref, 2 * n);
        free(cat);
    }
    for (i = 0; i < n; i++)
        ref[i] = x[i];
    cr_assert_eq(svp_ops_copy(ops, n, x, y), SVP_OK);
    assert_close("copy", y, ref, n);
    free(x);
    free(y);
    free(z);
    free(ref);
}

Test(ops, rejects_bad_shapes, .init = ops_setup, .fini = ops_teardown)
{
    svp_ops_group_norm_t gn      = {1, 1, 30, 4, 32, 1e-5f, 0};
    float                buf[8]  = {0};
    svp_ops_params_t     params  = {.backend = SVP_OPS_BACKEND_LAST};
    svp_ops_backend_t    backend = SVP_OPS_BACKEND_CUDA;
    svp_ops_h            other   = NULL;

    cr_assert_eq(svp_ops_group_norm(ops, &gn, buf, buf, buf, buf),
                 SVP_ERR_INVALID_PARAM, "30 channels cannot form 32 groups");
    cr_assert_eq(svp_ops_backend_parse("tpu", &backend), SVP_ERR_UNSUPPORTED);
    cr_assert_eq(backend, SVP_OPS_BACKEND_CUDA, "a failed parse writes nothing");
    cr_assert_eq(svp_ops_backend_parse("cpu", &backend), SVP_OK);
    cr_assert_eq(backend, SVP_OPS_BACKEND_CPU);
    cr_assert_eq(svp_ops_create(&params, &other), SVP_ERR_UNSUPPORTED);
    cr_assert_null(other, "a failed create must not write the handle");
    cr_assert_str_eq(svp_ops_backend(ops), "cpu");
    cr_assert_eq(svp_ops_threads(ops), 2);
}

/* The dtype names: f32 by default, bf16 and f16 held, anything else refused. */
Test(ops, dtype_is_honoured_or_refused, .init = ops_setup, .fini = ops_teardown)
{
    static const char *const held[] = {"f32", "bf16", "f16"};
    svp_ops_params_t         params = {.backend = SVP_OPS_BACKEND_CPU, .threads = 1};
    svp_ops_h                other  = NULL;
    size_t                   i;

    cr_assert_str_eq(svp_ops_dtype(ops), "f32", "the default is f32");
    for (i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
        params.dtype = (svp_dtype_t)svp_dtype_parse_short(held[i]);
        cr_assert_eq(svp_ops_create(&params, &other), SVP_OK, "cpu holds %s",
                     held[i]);
        cr_assert_str_eq(svp_ops_dtype(other), held[i]);
        svp_ops_destroy(other);
        other = NULL;
    }
    cr_assert_eq(svp_dtype_parse_short("f8"), -1, "no such dtype");
    params.dtype = SVP_DTYPE_F64;
    cr_assert_eq(svp_ops_create(&params, &other), SVP_ERR_INVALID_PARAM,
                 "a dtype that holds no weights");
    cr_assert_null(other);
}

/* One value rounded to a 16-bit dtype and widened back. */
static float round_to(const char *dtype, float v)
{
    if (strcmp(dtype, "bf16") == 0) {
        return svp_bf16_to_f32(svp_f32_to_bf16(v));
    }
    return svp_f16_to_f32(svp_f32_to_f16(v));
}

/*
 * A 16-bit handle computes exactly what an f32 handle computes with the
 * rounded weights: linear, conv2d and conv_frames, bit for bit, with the
 * weights held in half the bytes and no backend allocation per product.
 */
static void weights_case(const char *dtype)
{
    svp_ops_params_t    params = {.backend = SVP_OPS_BACKEND_CPU,
                                  .threads = 2,
                                  .dtype = (svp_dtype_t)svp_dtype_parse_short(dtype),
                                  .f32_products = 1};
    svp_ops_conv2d_t    cp     = {.n      = 2,
                                  .c_in   = 5,
                                  .h      = 7,
                                  .w      = 6,
                                  .c_out  = 4,
                                  .kh     = 3,
                                  .kw     = 3,
                                  .stride = 1,
                                  .pad    = 1};
    svp_ops_mem_stats_t st0, st1;
    svp_ops_h           half;
    const int64_t       n_lin = 13 * 11, n_conv = 4 * 5 * 9, n_fr = 6 * 5 * 3;
    float              *w = rand_buf(n_conv), *wr = malloc(n_conv * sizeof(float));
    float              *x = rand_buf(2 * 5 * 7 * 6), *bias = rand_buf(13);
    float              *y_half = malloc(2 * 6 * 7 * 6 * sizeof(float));
    float              *y_ref  = malloc(2 * 6 * 7 * 6 * sizeof(float));
    void               *lin_w, *conv_w, *fr_w;
    int64_t             i;
    int                 round;

    cr_assert_eq(svp_ops_create(&params, &half), SVP_OK);
    w[3] = 1.0f + 0x1p-12f + 0x1p-20f; /* rounds in both dtypes */
    for (i = 0; i < n_conv; i++) {
        wr[i] = round_to(dtype, w[i]);
    }
    cr_assert_neq(wr[3], w[3], "the test weights must need rounding");
    cr_assert_eq(svp_ops_weights_upload(half, w, n_lin, &lin_w), SVP_OK);
    cr_assert_eq(svp_ops_weights_upload(half, w, n_conv, &conv_w), SVP_OK);
    cr_assert_eq(svp_ops_weights_upload(half, w, n_fr, &fr_w), SVP_OK);
    cr_assert_eq(svp_ops_weights_bytes(half), (n_lin + n_conv + n_fr) * 2,
                 "%s weights are held in two bytes each", dtype);
    /* twice: the second round allocates nothing, the first only workspace */
    for (round = 0; round < 2; round++) {
        svp_ops_mem_stats(half, &st0);
        /* linear: [7, 11] x [13, 11]^T + bias */
        cr_assert_eq(svp_ops_linear(half, 7, 11, 13, x, lin_w, bias, 0, y_half),
                     SVP_OK);
        cr_assert_eq(svp_ops_linear(ops, 7, 11, 13, x, wr, bias, 0, y_ref), SVP_OK);
        cr_assert(memcmp(y_half, y_ref, 7 * 13 * sizeof(float)) == 0,
                  "%s linear differs from f32 with rounded weights", dtype);
        /* conv2d 3x3 */
        cr_assert_eq(svp_ops_conv2d(half, &cp, x, conv_w, bias, y_half), SVP_OK);
        cr_assert_eq(svp_ops_conv2d(ops, &cp, x, wr, bias, y_ref), SVP_OK);
        cr_assert(memcmp(y_half, y_ref, 2 * 4 * 7 * 6 * sizeof(float)) == 0,
                  "%s conv2d differs from f32 with rounded weights", dtype);
        /* the temporal conv: 2 frames of 5 channels x 42 positions to 6 */
        cr_assert_eq(svp_ops_conv_frames(half, 1, 2, 5, 6, 42, x, fr_w, bias,
                                         y_half),
                     SVP_OK);
        cr_assert_eq(svp_ops_conv_frames(ops, 1, 2, 5, 6, 42, x, wr, bias, y_ref),
                     SVP_OK);
        cr_assert(memcmp(y_half, y_ref, 2 * 6 * 42 * sizeof(float)) == 0,
                  "%s conv_frames differs from f32 with rounded weights", dtype);

        svp_ops_mem_stats(half, &st1);
    }
    cr_assert_eq(st1.backend_allocs, st0.backend_allocs,
                 "widening must not allocate: the upload sized its buffer");
    cr_assert_eq(svp_ops_weights_bytes(ops), 0, "nothing uploaded to ops");
    svp_ops_free(half, lin_w);
    svp_ops_free(half, conv_w);
    svp_ops_free(half, fr_w);
    svp_ops_destroy(half);
    free(w);
    free(wr);
    free(x);
    free(bias);
    free(y_half);
    free(y_ref);
}

Test(ops, bf16_weights_compute_the_rounded_product, .init = ops_setup,
     .fini = ops_teardown)
{
    weights_case("bf16");
}

Test(ops, f16_weights_compute_the_rounded_product, .init = ops_setup,
     .fini = ops_teardown)
{
    weights_case("f16");
}

/*
 * The CPU twin of the CUDA backend's 16-bit products (round_activations):
 * linear, conv2d and conv_frames compute exactly what an f32 handle
 * computes with both the weights and the activation rounded to the dtype,
 * and not what the plain 16-bit handle computes (weights only).
 */
static void products16_case(const char *dtype)
{
    svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU,
                               .threads = 2,
                               .dtype   = (svp_dtype_t)svp_dtype_parse_short(dtype),
                               .round_activations = 1,
                               .f32_products      = 1};
    svp_ops_conv2d_t cp     = {.n      = 2,
                               .c_in   = 5,
                               .h      = 7,
                               .w      = 6,
                               .c_out  = 4,
                               .kh     = 3,
                               .kw     = 3,
                               .stride = 1,
                               .pad    = 1};
    const int64_t    n_x = 2 * 5 * 7 * 6, n_w = 4 * 5 * 9, n_y = 2 * 6 * 7 * 6;
    float           *x = rand_buf(n_x), *w = rand_buf(n_w), *bias = rand_buf(13);
    float    *xr = malloc(n_x * sizeof(float)), *wr = malloc(n_w * sizeof(float));
    float    *y_twin = malloc(n_y * sizeof(float));
    float    *y_ref  = malloc(n_y * sizeof(float));
    float    *y_held = malloc(n_y * sizeof(float));
    svp_ops_h twin, held;
    void     *w_twin, *w_held;
    int64_t   i;
    int       op;

    cr_assert_eq(svp_ops_create(&params, &twin), SVP_OK);
    params.round_activations = 0;
    cr_assert_eq(svp_ops_create(&params, &held), SVP_OK);
    cr_assert_eq(svp_ops_product_dtype(twin), svp_ops_weights_dtype(twin));
    cr_assert_eq(svp_ops_product_dtype(held), SVP_DTYPE_F32);
    cr_assert_eq(svp_ops_product_dtype(ops), SVP_DTYPE_F32);
    for (i = 0; i < n_x; i++) {
        xr[i] = round_to(dtype, x[i]);
    }
    for (i = 0; i < n_w; i++) {
        wr[i] = round_to(dtype, w[i]);
    }
    cr_assert_eq(svp_ops_weights_upload(twin, w, n_w, &w_twin), SVP_OK);
    cr_assert_eq(svp_ops_weights_upload(held, w, n_w, &w_held), SVP_OK);
    for (op = 0; op < 3; op++) {
        static const char *const names[] = {"linear", "conv2d", "conv_frames"};
        int64_t n = (op == 0) ? 7 * 13 : (op == 1) ? 2 * 4 * 42 : 2 * 6 * 42;

        if (op == 0) {
            cr_assert_eq(svp_ops_linear(twin, 7, 11, 13, x, w_twin, bias, 0, y_twin),
                         SVP_OK);
            cr_assert_eq(svp_ops_linear(held, 7, 11, 13, x, w_held, bias, 0, y_held),
                         SVP_OK);
            cr_assert_eq(svp_ops_linear(ops, 7, 11, 13, xr, wr, bias, 0, y_ref),
                         SVP_OK);
        } else if (op == 1) {
            cr_assert_eq(svp_ops_conv2d(twin, &cp, x, w_twin, bias, y_twin), SVP_OK);
            cr_assert_eq(svp_ops_conv2d(held, &cp, x, w_held, bias, y_held), SVP_OK);
            cr_assert_eq(svp_ops_conv2d(ops, &cp, xr, wr, bias, y_ref), SVP_OK);
        } else {
            cr_assert_eq(svp_ops_conv_frames(twin, 1, 2, 5, 6, 42, x, w_twin, bias,
                                             y_twin),
                         SVP_OK);
            cr_assert_eq(svp_ops_conv_frames(held, 1, 2, 5, 6, 42, x, w_held, bias,
                                             y_held),
                         SVP_OK);
            cr_assert_eq(svp_ops_conv_frames(ops, 1, 2, 5, 6, 42, xr, wr, bias,
                                             y_ref),
                         SVP_OK);
        }
        cr_assert(memcmp(y_twin, y_ref, n * sizeof(float)) == 0,
                  "%s %s: "
                  "not the product of the rounded operands",
                  dtype, names[op]);
        cr_assert(memcmp(y_held, y_ref, n * sizeof(float)) != 0,
                  "%s %s: the "
                  "activations must need rounding",
                  dtype, names[op]);
    }
    svp_ops_free(twin, w_twin);
    svp_ops_free(held, w_held);
    svp_ops_destroy(twin);
    svp_ops_destroy(held);
    free(x);
    free(w);
    free(bias);
    free(xr);
    free(wr);
    free(y_twin);
    free(y_ref);
    free(y_held);
}

Test(ops, bf16_products_round_both_operands, .init = ops_setup, .fini = ops_teardown)
{
    products16_case("bf16");
}

Test(ops, f16_products_round_both_operands, .init = ops_setup, .fini = ops_teardown)
{
    products16_case("f16");
}

/*
 * The bf16 products on the CPU's BF16 units (ops->native16, bf16.c).  A
 * bf16 handle whose products are bf16 without round_activations runs them
 * there; the CPU twin (round_activations, f32_products) computes the fp32
 * product of the same rounded operands, so the two differ only in the
 * order of fp32 sums.  Shapes cover what the kernel cuts: odd k (a padded
 * pair), rows past a tile of 6 and a block of 48, columns past a panel of
 * 64, every conv path (3x3, 1x1, strided, a batch of images) and frames.
 */
typedef struct {
    svp_ops_h units, twin, held;
} units_t;

static int units_open(units_t *u, int threads)
{
    svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU,
                               .threads = threads,
                               .dtype   = SVP_DTYPE_BF16};

    cr_assert_eq(svp_ops_create(&params, &u->units), SVP_OK);
    if (svp_ops_product_dtype(u->units) != SVP_DTYPE_BF16) {
        svp_ops_destroy(u->units);
        return 0;
    }
    cr_assert_not_null(strstr(svp_ops_product_units(u->units), "AVX512-BF16"));
    params.round_activations = 1;
    params.f32_products      = 1;
    cr_assert_eq(svp_ops_create(&params, &u->twin), SVP_OK);
    params.round_activations = 0;
    cr_assert_eq(svp_ops_create(&params, &u->held), SVP_OK);
    cr_assert_eq(svp_ops_product_dtype(u->held), SVP_DTYPE_F32);
    return 1;
}

static void units_close(units_t *u)
{
    svp_ops_destroy(u->units);
    svp_ops_destroy(u->twin);
    svp_ops_destroy(u->held);
}

#define UNITS_OR_SKIP(_u, _threads) \
    do { \
        if (!units_open((_u), (_threads))) { \
            cr_skip_test("this CPU has no AVX512-BF16 units: bf16 products " \
                         "run in f32 on it"); \
        } \
    } while (0)

/* max |a - b| / max |b| */
static double rel_diff(const float *a, const float *b, int64_t n)
{
    double  d = 0.0, m = 0.0;
    int64_t i;

    for (i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

/* One op on each handle: 0 linear, 1 conv2d (cp), 2 conv_frames. */
static void units_run(svp_ops_h h, int op, const svp_ops_conv2d_t *cp, int64_t rows,
                      int in, int out, const float *x, const void *w,
                      const float *bias, float *y)
{
    if (op == 0) {
        cr_assert_eq(svp_ops_linear(h, rows, in, out, x, w, bias, 0, y), SVP_OK);
    } else if (op == 1) {
        cr_assert_eq(svp_ops_conv2d(h, cp, x, w, bias, y), SVP_OK);
    } else {
        /* rows frames in clips of 3 (so 2 clips when rows = 6), in -> out
         * channels over 37 positions */
        cr_assert_eq(svp_ops_conv_frames(h, (int)(rows / 3), 3, in, out, 37, x, w,
                                         bias, y),
                     SVP_OK);
    }
}

Test(ops, bf16_units_products_match_the_twin, .init = ops_setup,
     .fini = ops_teardown)
{
    static const svp_ops_conv2d_t convs[] = {
        {.n      = 2,
         .c_in   = 5,
         .h      = 9,
         .w      = 11,
         .c_out  = 70,
         .kh     = 3,
         .kw     = 3,
         .stride = 1,
         .pad    = 1},
        {.n      = 1,
         .c_in   = 33,
         .h      = 8,
         .w      = 9,
         .c_out  = 7,
         .kh     = 1,
         .kw     = 1,
         .stride = 1,
         .pad    = 0},
        {.n      = 3,
         .c_in   = 4,
         .h      = 10,
         .w      = 10,
         .c_out  = 9,
         .kh     = 3,
         .kw     = 3,
         .stride = 2,
         .pad    = 1},
        {.n      = 1,
         .c_in   = 3,
         .h      = 12,
         .w      = 13,
         .c_out  = 131,
         .kh     = 3,
         .kw     = 3,
         .stride = 1,
         .pad    = 1},
    };
    static const int lin[][3] = {{101, 67, 131},
                                 {2, 320, 64},
                                 {7, 11, 13},
                                 {50, 128, 1}};
    units_t          u;
    int              c, l;

    UNITS_OR_SKIP(&u, 2);
    for (c = 0; c < 4 + 4 + 2; c++) {
        int                     op   = (c < 4) ? 1 : (c < 8) ? 0 : 2;
        const svp_ops_conv2d_t *cp   = (op == 1) ? &convs[c] : NULL;
        int64_t                 rows = 0, n_x, n_w, n_y;
        int                     in = 0, out = 0;
        float                  *x, *w, *bias, *y_u, *y_t, *y_h;
        void                   *w_u, *w_t, *w_h;
        double                  d_twin, d_held;

        if (op == 1) {
            n_x = (int64_t)cp->n * cp->c_in * cp->h * cp->w;
            n_w = (int64_t)cp->c_out * cp->c_in * cp->kh * cp->kw;
            n_y = (int64_t)cp->n * cp->c_out * svp_ops_conv2d_out_h(cp) *
                  svp_ops_conv2d_out_w(cp);
            out = cp->c_out;
        } else if (op == 0) {
            l    = c - 4;
            rows = lin[l][0], in = lin[l][1], out = lin[l][2];
            n_x = rows * in, n_w = (int64_t)in * out, n_y = rows * out;
        } else {
            rows = (c == 8) ? 6 : 3, in = (c == 8) ? 5 : 40, out = (c == 8) ? 70 : 9;
            n_x = rows * in * 37, n_w = (int64_t)out * in * 3, n_y = rows * out * 37;
        }
        x = rand_buf(n_x), w = rand_buf(n_w), bias = rand_buf(out);
        y_u = malloc(n_y * sizeof(float)), y_t = malloc(n_y * sizeof(float));
        y_h = malloc(n_y * sizeof(float));
        cr_assert_eq(svp_ops_weights_upload(u.units, w, n_w, &w_u), SVP_OK);
        cr_assert_eq(svp_ops_weights_upload(u.twin, w, n_w, &w_t), SVP_OK);
        cr_assert_eq(svp_ops_weights_upload(u.held, w, n_w, &w_h), SVP_OK);
        units_run(u.units, op, cp, rows, in, out, x, w_u, bias, y_u);
        units_run(u.twin, op, cp, rows, in, out, x, w_t, bias, y_t);
        units_run(u.held, op, cp, rows, in, out, x, w_h, bias, y_h);
        d_twin = rel_diff(y_u, y_t, n_y);
        d_held = rel_diff(y_u, y_h, n_y);
        cr_log_info("case %d: units vs twin %.3g, vs weights-only %.3g", c, d_twin,
                    d_held);
        /* fp32 sums in another order: a few ulps of the largest terms */
        cr_assert(d_twin <= 1e-5,
                  "case %d (op %d): the units' product is "
                  "%.3g from the product of the rounded operands",
                  c, op, d_twin);
        /* the activations were rounded: bf16's u = 2^-8 shows */
        cr_assert(d_held >= 1e-4,
                  "case %d (op %d): the activation was not "
                  "rounded (%.3g from the weights-only product)",
                  c, op, d_held);
        svp_ops_free(u.units, w_u);
        svp_ops_free(u.twin, w_t);
        svp_ops_free(u.held, w_h);
        free(x), free(w), free(bias), free(y_u), free(y_t), free(y_h);
    }
    units_close(&u);
}

/*
 * Every element's sum runs in one fixed order whatever the thread count
 * and however many rows share the call: 1, 2 and 3 threads give the same
 * bits, and rows computed alone give the bits they get among others.
 */
Test(ops, bf16_units_bit_identical_across_threads_and_rows, .init = ops_setup,
     .fini = ops_teardown)
{
    const int64_t    rows = 203;
    const int        in = 96, out = 150;
    svp_ops_conv2d_t cp   = {.n      = 3,
                             .c_in   = 16,
                             .h      = 9,
                             .w      = 10,
                             .c_out  = 70,
                             .kh     = 3,
                             .kw     = 3,
                             .stride = 1,
                             .pad    = 1};
    const int64_t    n_cx = 3 * 16 * 90, n_cy = 3 * 70 * 90;
    float           *x = rand_buf(rows * in), *w = rand_buf((int64_t)in * out);
    float           *bias = rand_buf(out), *cx = rand_buf(n_cx);
    float           *ref  = malloc(rows * out * sizeof(float));
    float           *got  = malloc(rows * out * sizeof(float));
    float           *cref = malloc(n_cy * sizeof(float));
    float           *cgot = malloc(n_cy * sizeof(float));
    int              threads;

    for (threads = 1; threads <= 3; threads++) {
        units_t u;
        void   *wl, *wc;
        int64_t r0;
        int     i;

        UNITS_OR_SKIP(&u, threads);
        cr_assert_eq(svp_ops_weights_upload(u.units, w, (int64_t)in * out, &wl),
                     SVP_OK);
        cr_assert_eq(svp_ops_weights_upload(u.units, w, 70 * 16 * 9, &wc), SVP_OK);
        cr_assert_eq(svp_ops_linear(u.units, rows, in, out, x, wl, bias, 0,
                                    threads == 1 ? ref : got),
                     SVP_OK);
        cr_assert_eq(svp_ops_conv2d(u.units, &cp, cx, wc, bias,
                                    threads == 1 ? cref : cgot),
                     SVP_OK);
        if (threads > 1) {
            cr_assert(memcmp(ref, got, rows * out * sizeof(float)) == 0,
                      "linear: %d threads give other bits than 1", threads);
            cr_assert(memcmp(cref, cgot, n_cy * sizeof(float)) == 0,
                      "conv2d: %d threads give other bits than 1", threads);
        }
        /* rows in uneven groups, images one at a time */
        for (r0 = 0; r0 < rows; r0 += 1 + r0 % 50) {
            int64_t m = (rows - r0 < 1 + r0 % 50) ? rows - r0 : 1 + r0 % 50;

            cr_assert_eq(svp_ops_linear(u.units, m, in, out, x + r0 * in, wl, bias,
                                        0, got + r0 * out),
                         SVP_OK);
        }
        cr_assert(memcmp(ref, got, rows * out * sizeof(float)) == 0,
                  "linear: rows in smaller calls give other bits (%d threads)",
                  threads);
        for (i = 0; i < 3; i++) {
            svp_ops_conv2d_t one = cp;

            one.n = 1;
            cr_assert_eq(svp_ops_conv2d(u.units, &one, cx + i * 16 * 90, wc, bias,
                                        cgot + i * 70 * 90),
                         SVP_OK);
        }
        cr_assert(memcmp(cref, cgot, n_cy * sizeof(float)) == 0,
                  "conv2d: images one at a time give other bits (%d threads)",
                  threads);
        svp_ops_free(u.units, wl);
        svp_ops_free(u.units, wc);
        units_close(&u);
    }
    free(x), free(w), free(bias), free(cx), free(ref), free(got), free(cref),
        free(cgot);
}

/*
 * Borrowed weights (a mapped checkpoint): used in place by the cpu backend,
 * with the same products as uploaded ones; a misaligned pointer is refused.
 */
Test(ops, weights_borrowed_in_place, .init = ops_setup, .fini = ops_teardown)
{
    svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU,
                               .threads = 2,
                               .dtype   = SVP_DTYPE_BF16};
    svp_ops_h        half;
    float           *w = rand_buf(13 * 11), *x = rand_buf(7 * 11);
    float            y_up[7 * 13], y_borrow[7 * 13];
    uint16_t        *bits = malloc((13 * 11 + 1) * sizeof(uint16_t));
    void            *up, *borrowed;
    int              i;

    cr_assert_eq(svp_ops_create(&params, &half), SVP_OK);
    for (i = 0; i < 13 * 11; i++) {
        bits[i] = svp_f32_to_bf16(w[i]);
    }
    cr_assert_eq(svp_ops_weights_upload(half, w, 13 * 11, &up), SVP_OK);
    cr_assert_eq(svp_ops_weights_borrow(half, bits, 13 * 11, &borrowed), SVP_OK);
    cr_assert_eq((const void *)borrowed, (const void *)bits, "used in place");
    cr_assert_eq(svp_ops_weights_bytes(half), 2 * 13 * 11 * 2);
    cr_assert_eq(svp_ops_linear(half, 7, 11, 13, x, up, NULL, 0, y_up), SVP_OK);
    cr_assert_eq(svp_ops_linear(half, 7, 11, 13, x, borrowed, NULL, 0, y_borrow),
                 SVP_OK);
    cr_assert(memcmp(y_up, y_borrow, sizeof(y_up)) == 0);
    cr_assert_eq(svp_ops_weights_borrow(half, (const char *)bits + 1, 13, &borrowed),
                 SVP_ERR_INVALID_PARAM, "a misaligned pointer is refused");
    svp_ops_free(half, up);
    svp_ops_destroy(half);
    free(w);
    free(x);
    free(bits);
}

/* A weight beyond the dtype's range is an error, never an infinity. */
Test(ops, weights_out_of_range_refused, .init = ops_setup, .fini = ops_teardown)
{
    svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU,
                               .threads = 1,
                               .dtype   = SVP_DTYPE_F16};
    float            w[3]   = {1.0f, 7.0e4f, -2.0f};
    svp_ops_h        half;
    void            *buf = NULL;

    cr_assert_eq(svp_ops_create(&params, &half), SVP_OK);
    cr_assert_eq(svp_ops_weights_upload(half, w, 3, &buf), SVP_ERR_INVALID_PARAM,
                 "7e4 is beyond f16's 65504");
    cr_assert_null(buf);
    w[1] = 65504.0f;
    cr_assert_eq(svp_ops_weights_upload(half, w, 3, &buf), SVP_OK);
    svp_ops_free(half, buf);
    svp_ops_destroy(half);

    /* bf16 has fp32's exponent range */
    params.dtype = SVP_DTYPE_BF16;
    w[1]         = 7.0e4f;
    cr_assert_eq(svp_ops_create(&params, &half), SVP_OK);
    cr_assert_eq(svp_ops_weights_upload(half, w, 3, &buf), SVP_OK);
    svp_ops_free(half, buf);
    svp_ops_destroy(half);
}

/*
 * The arena: a freed buffer goes back to the handle, and a request of the
 * same size is served from there; a new size asks the backend once.
 */
Test(ops, arena_reuses_buffers, .init = ops_setup, .fini = ops_teardown)
{
    svp_ops_mem_stats_t st;
    float              *a, *b, *c, *a2, *b2, *c2;
    uint64_t            allocs0;
    int                 pass;

    svp_ops_mem_stats(ops, &st);
    allocs0 = st.backend_allocs;
    for (pass = 0; pass < 3; pass++) {
        cr_assert_eq(svp_ops_alloc(ops, 1000, &a), SVP_OK);
        cr_assert_eq(svp_ops_alloc(ops, 1000, &b), SVP_OK);
        cr_assert_neq(a, b);
        a[999] = 1.0f; /* writable, whole */
        b[999] = 2.0f;
        svp_ops_free(ops, a);
        cr_assert_eq(svp_ops_alloc(ops, 300, &c), SVP_OK);
        svp_ops_free(ops, b);
        cr_assert_eq(svp_ops_alloc(ops, 1000, &a2), SVP_OK);
        cr_assert_eq(svp_ops_alloc(ops, 1000, &b2), SVP_OK);
        cr_assert_eq(svp_ops_alloc(ops, 300, &c2), SVP_OK);
        cr_assert_neq(c2, c);
        svp_ops_mem_stats(ops, &st);
        cr_assert_eq(st.live_bytes, (2 * 1000 + 2 * 300) * sizeof(float));
        cr_assert_eq(st.peak_live_bytes, st.live_bytes);
        svp_ops_free(ops, a2);
        svp_ops_free(ops, b2);
        svp_ops_free(ops, c);
        svp_ops_free(ops, c2);
        svp_ops_free(ops, NULL);
        svp_ops_mem_stats(ops, &st);
        /* two 1000s and two 300s, on the first pass only */
        cr_assert_eq(st.backend_allocs - allocs0, 4, "pass %d: %llu allocations",
                     pass, (unsigned long long)(st.backend_allocs - allocs0));
        cr_assert_eq(st.reserved_bytes, (2 * 1000 + 2 * 300) * sizeof(float));
        cr_assert_eq(st.live_bytes, 0);
    }
    svp_ops_mem_reset_peak(ops);
    svp_ops_mem_stats(ops, &st);
    cr_assert_eq(st.peak_live_bytes, 0);
}

/* ---- profile ---- */

/* The per-op profile times the scheduler's ops, each under its own kind. */
Test(ops, profile_times_scheduler_ops, .init = ops_setup, .fini = ops_teardown)
{
    svp_sched_euler_coef_t coef = {.sigma = 2.0f,
                                   .s2    = 5.0f,
                                   .c_out = -0.9f,
                                   .dt    = -0.5f};
    float                 *x = rand_buf(64), *v = rand_buf(64), *y = rand_buf(64);
    float                  scales[2] = {1.0f, 2.0f};
    char                  *text      = NULL;
    size_t                 len       = 0;
    FILE                  *out;

    cr_assert_eq(svp_ops_profile_enable(ops), SVP_OK);
    svp_range_profile_reset();
    svp_range_profile_enable(1, NULL, NULL);
    cr_assert_eq(svp_ops_sched_scale(ops, 64, 3.0f, x, y), SVP_OK);
    cr_assert_eq(svp_ops_sched_guidance(ops, 2, 32, scales, x, v, y), SVP_OK);
    cr_assert_eq(svp_ops_sched_euler(ops, 64, &coef, v, x, y), SVP_OK);
    svp_range_profile_enable(0, NULL, NULL);
    svp_ops_profile_disable(ops);

    out = open_memstream(&text, &len);
    cr_assert_not_null(out);
    cr_assert_eq(svp_range_profile_write(out), SVP_OK);
    fclose(out);
    cr_assert(strstr(text, "\"kind\":\"sched_scale\",\"count\":1") != NULL, "%s",
              text);
    cr_assert(strstr(text, "\"kind\":\"sched_guidance\",\"count\":2") != NULL, "%s",
              text);
    cr_assert(strstr(text, "\"kind\":\"sched_euler\",\"count\":1") != NULL, "%s",
              text);
    svp_range_profile_reset();
    free(text);
    free(x);
    free(v);
    free(y);
}

/* ---- the CPU backend's gemm ---- */

typedef struct {
    int trans_b, m, n, k, accumulate;
} gemm_shape_t;

ParameterizedTestParameters(ops, cpu_gemm)
{
    static gemm_shape_t shapes[] = {
        /* edges in every direction; k over two blocks of 256; n over two
         * blocks of 1024 */
        {1, 13, 45, 300, 1},
        {0, 13, 45, 300, 0},
        {1, 40, 1100, 17, 0},
        {0, 9, 1100, 520, 1},
        {1, 1, 1, 1, 1},
        /* split along m into 2 blocks and along n into 6, each time with
         * a partial last block: widths no kernel divides */
        {0, 1000, 70, 64, 0},
        {1, 1000, 70, 64, 1},
        {0, 37, 1999, 45, 1},
        {1, 37, 1999, 45, 0},
        {0, 77, 61, 91, 0},
    };
    return cr_make_param_array(gemm_shape_t, shapes,
                               sizeof(shapes) / sizeof(shapes[0]));
}

/*
 * svp_ops_cpu_sgemm against a double reference, and the same bits on one,
 * two and three threads.  Under OpenBLAS's Haswell kernels a split that
 * followed the thread count gave other bits (contrib/run-tests.sh runs
 * this test under them too).
 */
ParameterizedTest(gemm_shape_t *p, ops, cpu_gemm, .init = ops_setup,
                  .fini = ops_teardown)
{
    int64_t mn = (int64_t)p->m * p->n;
    float  *a  = rand_buf((int64_t)p->m * p->k);
    float  *b  = rand_buf((int64_t)p->n * p->k);
    float  *c  = rand_buf(mn);
    float  *c0 = malloc(mn * sizeof(float)), *c1 = malloc(mn * sizeof(float));
    double *ref = dbuf(mn);
    int     i, j, kk, threads;

    cr_assert(c0 != NULL && c1 != NULL);
    for (i = 0; i < p->m; i++)
        for (j = 0; j < p->n; j++) {
            double acc = p->accumulate ? c[(int64_t)i * p->n + j] : 0.0;
            for (kk = 0; kk < p->k; kk++) {
                double bv = p->trans_b ? b[(int64_t)j * p->k + kk]
                                       : b[(int64_t)kk * p->n + j];
                acc += (double)a[(int64_t)i * p->k + kk] * bv;
            }
            ref[(int64_t)i * p->n + j] = acc;
        }
    memcpy(c0, c, mn * sizeof(float));
    cr_assert_eq(svp_ops_cpu_sgemm(ops, p->trans_b, p->m, p->n, p->k, a, p->k, b,
                                   p->trans_b ? p->k : p->n, p->accumulate, c0,
                                   p->n),
                 SVP_OK);
    assert_close("gemm", c0, ref, mn);

    for (threads = 1; threads <= 3; threads += 2) {
        svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU,
                                   .threads = threads};
        svp_ops_h        h;

        memcpy(c1, c, mn * sizeof(float));
        cr_assert_eq(svp_ops_create(&params, &h), SVP_OK);
        cr_assert_eq(svp_ops_cpu_sgemm(h, p->trans_b, p->m, p->n, p->k, a, p->k, b,
                                       p->trans_b ? p->k : p->n, p->accumulate, c1,
                                       p->n),
                     SVP_OK);
        svp_ops_destroy(h);
        cr_assert_eq(memcmp(c0, c1, mn * sizeof(float)), 0,
                     "%d threads and 2 differ", threads);
    }
    free(a);
    free(b);
    free(c);
    free(c0);
    free(c1);
    free(ref);
}

/*
 * The element ops whose vector and scalar code differ (libmvec's expf and
 * erff against glibc's) give the same bits on one, two and three threads:
 * a length whose thread shares end off a vector's width, and which is no
 * multiple of a block.
 */
Test(ops, elementwise_threads)
{
    const int64_t n = 3 * SVP_OPS_CPU_BLOCK * 5 + 7;
    float        *x = rand_buf(n), *y[3][2];
    int           threads, i;

    for (i = 0; i < n; i++) {
        x[i] *= 6.0f; /* erff and expf over their curved range */
    }
    for (threads = 1; threads <= 3; threads++) {
        svp_ops_params_t params = {.backend = SVP_OPS_BACKEND_CPU,
                                   .threads = threads};
        svp_ops_h        h;

        y[threads - 1][0] = malloc(n * sizeof(float));
        y[threads - 1][1] = malloc(n * sizeof(float));
        cr_assert(y[threads - 1][0] != NULL && y[threads - 1][1] != NULL);
        cr_assert_eq(svp_ops_create(&params, &h), SVP_OK);
        cr_assert_eq(svp_ops_gelu(h, n, x, y[threads - 1][0]), SVP_OK);
        cr_assert_eq(svp_ops_silu(h, n, x, y[threads - 1][1]), SVP_OK);
        svp_ops_destroy(h);
    }
    for (threads = 2; threads <= 3; threads++) {
        cr_assert_eq(memcmp(y[0][0], y[threads - 1][0], n * sizeof(float)), 0,
                     "gelu: 1 and %d threads differ", threads);
        cr_assert_eq(memcmp(y[0][1], y[threads - 1][1], n * sizeof(float)), 0,
                     "silu: 1 and %d threads differ", threads);
    }
    for (threads = 0; threads < 3; threads++) {
        free(y[threads][0]);
        free(y[threads][1]);
    }
    free(x);
}

/*
 * The kernel family svdpipe runs in place of OpenBLAS's own choice: by the
 * instruction sets the CPU executes, whatever its model.  A CPU newer than
 * the library's table (Emerald Rapids, family 6 model 207, for Debian 12's
 * 0.3.21) gets Prescott from it.
 */
Test(ops_blas, choice_by_instruction_set)
{
    const unsigned avx    = SVP_OPS_CPUID_AVX;
    const unsigned avx2   = avx | SVP_OPS_CPUID_AVX2 | SVP_OPS_CPUID_FMA;
    const unsigned avx512 = avx2 | SVP_OPS_CPUID_AVX512F | SVP_OPS_CPUID_AVX512BW |
                            SVP_OPS_CPUID_AVX512VL | SVP_OPS_CPUID_AVX512DQ;
    static const struct {
        const char *vendor;
        int         family, model;
        unsigned    features;
        const char *library;  /* OpenBLAS's own choice */
        const char *expected; /* svdpipe's, NULL: keep the library's */
    } cases[] = {
        /* Emerald Rapids, unknown to the table: with its vector features
         * hidden (a virtual machine's CPU model), then as it is */
        {"GenuineIntel", 6, 207, 0, "Prescott", NULL},
        {"GenuineIntel", 6, 207, 0, "Prescott", "SkylakeX"},
        {"GenuineIntel", 6, 207, 0, "Haswell", "SkylakeX"},
        {"GenuineIntel", 6, 207, 0, "Sandybridge", "SkylakeX"},
        {"GenuineIntel", 6, 207, 0, "Cooperlake", NULL},
        {"GenuineIntel", 6, 207, 0, "SapphireRapids", NULL},
        {"GenuineIntel", 6, 207, 0, "skylakex", NULL},
        /* Zen 2 (AVX2 and FMA, no AVX-512), and a Zen 4 the table knows */
        {"AuthenticAMD", 23, 49, 0, "Prescott", "Zen"},
        {"AuthenticAMD", 23, 49, 0, "Zen", NULL},
        {"AuthenticAMD", 23, 49, 0, "Haswell", NULL},
        {"HygonGenuine", 24, 0, 0, "Prescott", "Zen"},
        {"AuthenticAMD", 25, 17, 0, "Zen", "SkylakeX"},
        {"AuthenticAMD", 25, 17, 0, "Cooperlake", NULL},
        /* an AVX2 Intel: Haswell */
        {"GenuineIntel", 6, 63, 0, "Nehalem", "Haswell"},
        /* AVX without FMA */
        {"GenuineIntel", 6, 42, 0, "Prescott", "Sandybridge"},
        {"GenuineIntel", 6, 42, 0, "Sandybridge", NULL},
        {"AuthenticAMD", 21, 2, 0, "Piledriver", NULL},
        /* SSE only: nothing wider to run */
        {"GenuineIntel", 6, 23, 0, "Prescott", NULL},
        {"GenuineIntel", 6, 23, 0, "Penryn", NULL},
        /* a family the table does not know: the library's call */
        {"GenuineIntel", 6, 207, 0, "Loongson3R4", NULL},
        {"GenuineIntel", 6, 207, 0, NULL, NULL},
    };
    /* the features of each case above, in order */
    const unsigned features[] = {
        0,    avx512, avx512, avx512, avx512, avx512, avx512,
        avx2, avx2,   avx2,   avx2,   avx512, avx512, avx2,
        avx,  avx,    avx,    0,      0,      avx512, avx512,
    };
    size_t i;

    cr_assert_eq(sizeof(features) / sizeof(features[0]),
                 sizeof(cases) / sizeof(cases[0]));
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        svp_ops_cpuid_t cpu = {.family   = cases[i].family,
                               .model    = cases[i].model,
                               .features = features[i]};
        const char     *got;

        snprintf(cpu.vendor, sizeof(cpu.vendor), "%s", cases[i].vendor);
        got = svp_ops_blas_better(&cpu, cases[i].library);
        if (cases[i].expected == NULL) {
            cr_expect_null(got, "case %zu (%s %d/%d, %s): %s", i, cases[i].vendor,
                           cases[i].family, cases[i].model,
                           cases[i].library ? cases[i].library : "(null)", got);
        } else {
            cr_expect(got != NULL && !strcmp(got, cases[i].expected),
                      "case %zu (%s %d/%d, %s): %s, expected %s", i, cases[i].vendor,
                      cases[i].family, cases[i].model, cases[i].library,
                      got ? got : "(null)", cases[i].expected);
        }
    }
}

/* Only some of AVX-512's parts (no BW/VL/DQ, as on Knights Landing) do not
 * run SkylakeX's kernels: the AVX2 tier. */
Test(ops_blas, avx512_needs_all_four_parts)
{
    svp_ops_cpuid_t cpu = {.vendor   = "GenuineIntel",
                           .family   = 6,
                           .model    = 87,
                           .features = SVP_OPS_CPUID_AVX | SVP_OPS_CPUID_AVX2 |
                                       SVP_OPS_CPUID_FMA | SVP_OPS_CPUID_AVX512F};
    char            buf[128];

    cr_expect_str_eq(svp_ops_blas_better(&cpu, "Prescott"), "Haswell");
    cr_expect_null(svp_ops_blas_better(&cpu, "Haswell"));
    svp_ops_cpuid_features(&cpu, buf, sizeof(buf));
    cr_expect_str_eq(buf, "avx512f avx2 fma avx");
    cpu.features = 0;
    svp_ops_cpuid_features(&cpu, buf, sizeof(buf));
    cr_expect_str_eq(buf, "none of avx, avx2, fma, avx512");
}
