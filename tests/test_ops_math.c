/*
 * Tests for src/ops/ops_math.h, the arithmetic the CUDA kernels run, on the
 * host: each kernel's per-element or per-tile function is driven over a
 * whole op the way its kernel drives it (same flat index, same tiles) and
 * compared with the CPU backend's op on the same inputs.  So the kernels'
 * index math, tiling and online-softmax rescaling are checked in every
 * build, GPU or not; tests/test_ops_cuda then only has to show that the
 * device runs the same functions.
 *
 * Tolerances: index math and data movement must be exact.  Arithmetic is
 * compared at 2e-6 * max(1, max|ref|) where both sides do the same fp32
 * operations in another order (a few ulp over <= a few hundred terms), and
 * the attention at 1e-5 as in tests/test_ops.c.
 */
#include "ops/ops.h"
#include "ops/ops_math.h"
#include "tensor/tensor.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static svp_ops_h ops;

static void ops_setup(void)
{
    svp_ops_params_t params = {.backend         = SVP_OPS_BACKEND_CPU,
                               .threads         = 2,
                               .attn_max_scores = 1000};

    cr_assert_eq(svp_ops_create(&params, &ops), SVP_OK);
}

static void ops_teardown(void)
{
    svp_ops_destroy(ops);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static float *rand_buf(int64_t n, float scale)
{
    float  *buf = malloc((n ? n : 1) * sizeof(float));
    int64_t i;

    cr_assert_not_null(buf);
    for (i = 0; i < n; i++) {
        rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = ((float)((rng_state >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f) *
                 scale;
    }
    return buf;
}

static float *zbuf(int64_t n)
{
    float *buf = calloc(n ? n : 1, sizeof(float));

    cr_assert_not_null(buf);
    return buf;
}

static void assert_close(const char *what, const float *got, const float *ref,
                         int64_t n, double tol)
{
    double  max_ref = 1.0, max_err = 0.0;
    int64_t i, worst               = 0;

    for (i = 0; i < n; i++) {
        max_ref = fmax(max_ref, fabs(ref[i]));
    }
    for (i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]);

        cr_assert(!isnan(got[i]), "%s: NaN at %ld", what, (long)i);
        if (err > max_err) {
            max_err = err;
            worst   = i;
        }
    }
    cr_assert(max_err <= tol * max_ref,
              "%s: max error %.3g at %ld (got %.9g, want %.9g), tolerance %.3g",
              what, max_err, (long)worst, got[worst], ref[worst], tol * max_ref);
}

TestSuite(ops_math, .init = ops_setup, .fini = ops_teardown);

/* ---- bf16 / f16 rounding ---- */

static float bits_f32(uint32_t u)
{
    float f;

    memcpy(&f, &u, 4);
    return f;
}

/*
 * Every 65521st fp32 bit pattern (all exponents, both signs, ties and
 * near-ties included), plus the exact ties around 1.0: the twin agrees with
 * the tensor layer's conversions bit for bit, and both round to nearest
 * even.
 */
Test(ops_math, bf16_f16_round_to_nearest_even)
{
    uint64_t u;
    uint32_t h;

    for (u = 0; u < (1ull << 32); u += 65521) {
        float f = bits_f32((uint32_t)u);

        cr_assert_eq(svp_math_f32_to_bf16(f), svp_f32_to_bf16(f), "bf16 of 0x%08x",
                     (unsigned)u);
        if (isnan(f)) {
            cr_assert(isnan(svp_f16_to_f32(svp_math_f32_to_f16(f))));
            continue;
        }
        cr_assert_eq(svp_math_f32_to_f16(f), svp_f32_to_f16(f), "f16 of 0x%08x (%g)",
                     (unsigned)u, f);
    }
    for (h = 0; h < 65536; h++) {
        float a = svp_math_f16_to_f32((uint16_t)h);
        float b = svp_f16_to_f32((uint16_t)h);

        cr_assert(memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b)),
                  "f16 0x%04x widens to %g, tensor layer %g", h, a, b);
        a = svp_math_bf16_to_f32((uint16_t)h);
        b = svp_bf16_to_f32((uint16_t)h);
        cr_assert(memcmp(&a, &b, 4) == 0,
                  "bf16 0x%04x widens to %g, "
                  "tensor layer %g",
                  h, a, b);
    }
    /* 1 + 2^-8 is halfway between two bf16 values: to the even one, 1.0 */
    cr_assert_eq(svp_math_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    /* 1 + 3 * 2^-8 is halfway too: up to the even 1 + 2^-6 */
    cr_assert_eq(svp_math_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    /* f16: 1 + 2^-11 ties to 1.0; 1 + 3 * 2^-11 up to 1 + 2^-9 */
    cr_assert_eq(svp_math_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    cr_assert_eq(svp_math_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* overflow and the largest finite, subnormals */
    cr_assert_eq(svp_math_f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(svp_math_f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(svp_math_f32_to_f16(0x1p-24f), 0x0001);
    cr_assert_eq(svp_math_f32_to_f16(0x1p-25f), 0x0000); /* tie to even 0 */
    cr_assert_eq(svp_math_f32_to_f16(-3 * 0x1p-25f), 0x8002);
}

/* ---- attention: the fused kernel's per-row tile loop ---- */

/* The CUDA kernel's key tile (kernels/attention.cu SVP_FLASH_KV). */
#define TILE_KV 32

static void twin_attention(const svp_ops_attention_t *p, const float *q,
                           const float *k, const float *v, float *out)
{
    float   scale = 1.0f / sqrtf((float)p->head_dim);
    int     d     = p->head_dim;
    int64_t bq, i;
    int     h;

    for (bq = 0; bq < p->batch; bq++) {
        for (h = 0; h < p->heads; h++) {
            for (i = 0; i < p->q_len; i++) {
                int64_t      bk     = bq / p->kv_batch_div;
                const float *qr     = q + (bq * p->q_len + i) * p->q_stride + h * d;
                const float *kh     = k + bk * p->kv_len * p->k_stride + h * d;
                const float *vh     = v + bk * p->kv_len * p->v_stride + h * d;
                float        o[128] = {0}, s[TILE_KV], m = -INFINITY, l = 0;
                float        inv;
                int64_t      j0;
                int          dd;

                for (j0 = 0; j0 < p->kv_len; j0 += TILE_KV) {
                    int   n = (int)fmin(TILE_KV, p->kv_len - j0), jj;
                    float corr;

                    for (jj = 0; jj < n; jj++) {
                        float dot = 0.0f;

                        for (dd = 0; dd < d; dd++) {
                            dot += qr[dd] * kh[(j0 + jj) * p->k_stride + dd];
                        }
                        s[jj] = dot * scale;
                    }
                    corr = svp_math_attn_tile_row(s, n, &m, &l);
                    svp_math_attn_acc_row(o, d, corr, s, n, vh + j0 * p->v_stride,
                                          p->v_stride);
                }
                inv = svp_math_attn_finish_row(l);
                for (dd = 0; dd < d; dd++) {
                    out[(bq * p->q_len + i) * p->out_stride + h * d + dd] =
                        o[dd] * inv;
                }
            }
        }
    }
}

/*
 * Long keys (above the short path's 64), key lengths that leave a partial
 * last tile on both sides (32 here, 15 in the CPU backend under
 * attn_max_scores 1000), shared context (kv_batch_div 2), padded strides,
 * and scores scaled up so that the running maximum moves between tiles.
 */
Test(ops_math, attention_tiles_match_cpu)
{
    static const svp_ops_attention_t shapes[] = {
        {.batch        = 2,
         .heads        = 2,
         .head_dim     = 24,
         .q_len        = 70,
         .kv_len       = 101,
         .kv_batch_div = 2,
         .q_stride     = 50,
         .k_stride     = 48,
         .v_stride     = 52,
         .out_stride   = 50},
        {.batch        = 1,
         .heads        = 3,
         .head_dim     = 8,
         .q_len        = 130,
         .kv_len       = 65,
         .kv_batch_div = 1,
         .q_stride     = 24,
         .k_stride     = 24,
         .v_stride     = 24,
         .out_stride   = 24},
    };
    size_t i;

    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const svp_ops_attention_t *p  = &shapes[i];
        int64_t                    nq = (int64_t)p->batch * p->q_len * p->q_stride;
        int64_t                    nkv =
            (int64_t)(p->batch / p->kv_batch_div) * p->kv_len * p->k_stride;
        float *q = rand_buf(nq, 4.0f);
        float *k = rand_buf(nkv, 4.0f);
        float *v =
            rand_buf((int64_t)(p->batch / p->kv_batch_div) * p->kv_len * p->v_stride,
                     1.0f);
        float *got = zbuf(nq), *ref = zbuf(nq);

        twin_attention(p, q, k, v, got);
        cr_assert_eq(svp_ops_attention(ops, p, q, k, v, ref), SVP_OK);
        assert_close("attention twin vs cpu", got, ref, nq, 1e-5);
        free(q);
        free(k);
        free(v);
        free(got);
        free(ref);
    }
}

/* The rescaling alone: two tiles give the one-tile softmax. */
Test(ops_math, attn_tile_rescale)
{
    float s_all[6] = {0.5f, 3.0f, -1.0f, 7.0f, 2.0f, 6.5f};
    float s[6], m = -INFINITY, l = 0.0f, m1 = -INFINITY, l1 = 0.0f, corr;
    float v[6] = {1, 2, 3, 4, 5, 6}, o = 0.0f, o1 = 0.0f;

    memcpy(s, s_all, sizeof(s));
    corr = svp_math_attn_tile_row(s, 6, &m1, &l1);
    cr_assert_eq(corr, 0.0f);
    svp_math_attn_acc_row(&o1, 1, corr, s, 6, v, 1);

    memcpy(s, s_all, sizeof(s));
    corr = svp_math_attn_tile_row(s, 3, &m, &l);
    svp_math_attn_acc_row(&o, 1, corr, s, 3, v, 1);
    corr = svp_math_attn_tile_row(s + 3, 3, &m, &l);
    cr_assert_float_eq(corr, expf(3.0f - 7.0f), 1e-7);
    svp_math_attn_acc_row(&o, 1, corr, s + 3, 3, v + 3, 1);

    cr_assert_eq(m, 7.0f);
    cr_assert_float_eq(l, l1, 1e-6);
    cr_assert_float_eq(o / l, o1 / l1, 1e-6);
}

/* ---- normalisation ---- */

Test(ops_math, group_norm_matches_cpu)
{
    svp_ops_group_norm_t p     = {.n       = 2,
                                  .frames  = 3,
                                  .c       = 6,
                                  .spatial = 10,
                                  .groups  = 3,
                                  .eps     = 1e-5f,
                                  .silu    = 1};
    int64_t              n     = (int64_t)p.n * p.frames * p.c * p.spatial;
    int64_t              count = (int64_t)p.frames * (p.c / p.groups) * p.spatial;
    float               *x = rand_buf(n, 2.0f), *gamma = rand_buf(p.c, 1.0f);
    float               *beta = rand_buf(p.c, 1.0f), *got = zbuf(n), *ref = zbuf(n);
    int                  item, silu;

    for (silu = 0; silu < 2; silu++) {
        p.silu = silu;
        /* as kernels/group_norm.cu: one block per (item, group) */
        for (item = 0; item < p.n * p.groups; item++) {
            int64_t in  = item / p.groups, e;
            int     g   = item % p.groups, ch;
            double  sum = 0.0, sq = 0.0, mean;
            float   rstd, scale, shift;

            for (e = 0; e < count; e++) {
                sum += x[svp_math_group_norm_off(e, in, g, p.frames, p.c, p.spatial,
                                                 p.groups, &ch)];
            }
            mean = sum / (double)count;
            for (e = 0; e < count; e++) {
                double dv = x[svp_math_group_norm_off(e, in, g, p.frames, p.c,
                                                      p.spatial, p.groups, &ch)] -
                            mean;
                sq += dv * dv;
            }
            rstd = svp_math_norm_rstd(sq / (double)count, p.eps);
            for (e = 0; e < count; e++) {
                int64_t off = svp_math_group_norm_off(e, in, g, p.frames, p.c,
                                                      p.spatial, p.groups, &ch);

                svp_math_group_norm_coef((float)mean, rstd, gamma[ch], beta[ch],
                                         &scale, &shift);
                got[off] = svp_math_group_norm_apply(x[off], scale, shift, p.silu);
            }
        }
        cr_assert_eq(svp_ops_group_norm(ops, &p, x, gamma, beta, ref), SVP_OK);
        assert_close("group_norm twin vs cpu", got, ref, n, 2e-6);
    }
    free(x);
    free(gamma);
    free(beta);
    free(got);
    free(ref);
}

Test(ops_math, layer_norm_matches_cpu)
{
    int    rows = 7, dim = 40, r, i;
    float *x = rand_buf(rows * dim, 3.0f), *gamma = rand_buf(dim, 1.0f);
    float *beta = rand_buf(dim, 1.0f);
    float *got = zbuf(rows * dim), *ref = zbuf(rows * dim);

    for (r = 0; r < rows; r++) {
        double sum = 0.0, sq = 0.0, mean;
        float  rstd;

        for (i = 0; i < dim; i++) {
            sum += x[r * dim + i];
        }
        mean = sum / dim;
        for (i = 0; i < dim; i++) {
            sq += (x[r * dim + i] - mean) * (x[r * dim + i] - mean);
        }
        rstd = svp_math_norm_rstd(sq / dim, 1e-5f);
        for (i = 0; i < dim; i++) {
            got[r * dim + i] = svp_math_layer_norm_apply(x[r * dim + i], (float)mean,
                                                         rstd, gamma[i], beta[i]);
        }
    }
    cr_assert_eq(svp_ops_layer_norm(ops, rows, dim, 1e-5f, x, gamma, beta, ref),
                 SVP_OK);
    assert_close("layer_norm twin vs cpu", got, ref, rows * dim, 2e-6);
    free(x);
    free(gamma);
    free(beta);
    free(got);
    free(ref);
}

/* ---- elementwise and embedding ---- */

Test(ops_math, activations_match_cpu)
{
    int64_t n = 4001, i;
    float  *x = rand_buf(n, 8.0f), *got = zbuf(n), *ref = zbuf(n);

    for (i = 0; i < n; i++) {
        got[i] = svp_math_gelu(x[i]);
    }
    cr_assert_eq(svp_ops_gelu(ops, n, x, ref), SVP_OK);
    assert_close("gelu twin vs cpu", got, ref, n, 2e-6);
    for (i = 0; i < n; i++) {
        got[i] = svp_math_silu(x[i]);
    }
    cr_assert_eq(svp_ops_silu(ops, n, x, ref), SVP_OK);
    assert_close("silu twin vs cpu", got, ref, n, 2e-6);
    free(x);
    free(got);
    free(ref);
}

Test(ops_math, timestep_embedding_matches_cpu)
{
    float  t[3] = {0.0f, 17.25f, 999.0f};
    int    dim = 320, half = dim / 2, r, i;
    float *got = zbuf(3 * dim), *ref = zbuf(3 * dim);

    /* as kernels/embedding.cu: one element per frequency, cos and sin */
    for (r = 0; r < 3; r++) {
        for (i = 0; i < half; i++) {
            float arg = svp_math_timestep_arg(t[r], i, half);

            got[r * dim + i]        = cosf(arg);
            got[r * dim + half + i] = sinf(arg);
        }
    }
    cr_assert_eq(svp_ops_timestep_embedding(ops, 3, dim, t, ref), SVP_OK);
    assert_close("timestep embedding twin vs cpu", got, ref, 3 * dim, 0.0);
    free(got);
    free(ref);
}

/* ---- index math ---- */

Test(ops_math, upsample_index_matches_cpu)
{
    int     n = 2, c = 3, h = 5, w = 7, ho = 11, wo = 10;
    int64_t no  = (int64_t)n * c * ho * wo, e;
    float  *x   = rand_buf((int64_t)n * c * h * w, 1.0f);
    float  *got = zbuf(no), *ref = zbuf(no);

    for (e = 0; e < no; e++) {
        got[e] = x[svp_math_upsample_src(e, h, w, ho, wo)];
    }
    cr_assert_eq(svp_ops_upsample_nearest(ops, n, c, h, w, ho, wo, x, ref), SVP_OK);
    cr_assert_eq(memcmp(got, ref, no * sizeof(float)), 0,
                 "upsample twin differs from cpu");
    free(x);
    free(got);
    free(ref);
}

/* conv2d through the kernel's im2col and a plain product. */
Test(ops_math, im2col_index_matches_cpu_conv)
{
    svp_ops_conv2d_t p  = {.n      = 2,
                           .c_in   = 3,
                           .h      = 9,
                           .w      = 6,
                           .c_out  = 4,
                           .kh     = 3,
                           .kw     = 3,
                           .stride = 2,
                           .pad    = 1};
    int              ho = svp_ops_conv2d_out_h(&p), wo = svp_ops_conv2d_out_w(&p);
    int64_t          k = (int64_t)p.c_in * p.kh * p.kw, howo = (int64_t)ho * wo;
    int64_t          ncol = p.n * k * howo, ny = (int64_t)p.n * p.c_out * howo, e;
    float           *x = rand_buf((int64_t)p.n * p.c_in * p.h * p.w, 1.0f);
    float *wt = rand_buf(p.c_out * k, 1.0f), *bias = rand_buf(p.c_out, 1.0f);
    float *col = zbuf(ncol), *got = zbuf(ny), *ref = zbuf(ny);
    int    img, o;

    for (e = 0; e < ncol; e++) {
        int64_t src = svp_math_im2col_src(e, p.c_in, p.h, p.w, p.kh, p.kw, p.stride,
                                          p.pad, ho, wo);
        col[e]      = (src >= 0) ? x[src] : 0.0f;
    }
    for (img = 0; img < p.n; img++) {
        for (o = 0; o < p.c_out; o++) {
            for (e = 0; e < howo; e++) {
                double  acc = bias[o];
                int64_t r;

                for (r = 0; r < k; r++) {
                    acc += (double)wt[o * k + r] * col[(img * k + r) * howo + e];
                }
                got[((int64_t)img * p.c_out + o) * howo + e] = (float)acc;
            }
        }
    }
    cr_assert_eq(svp_ops_conv2d(ops, &p, x, wt, bias, ref), SVP_OK);
    assert_close("im2col twin conv vs cpu", got, ref, ny, 2e-6);
    free(x);
    free(wt);
    free(bias);
    free(col);
    free(got);
    free(ref);
}

/* conv_frames through the kernel's frame columns, two frames per call. */
Test(ops_math, frames_col_index_matches_cpu_conv)
{
    int     b = 2, f = 5, c_in = 3, c_out = 4, hw = 6, bt0, t, o;
    int64_t rows = 3 * (int64_t)c_in, ny = (int64_t)b * f * c_out * hw, e;
    float  *x  = rand_buf((int64_t)b * f * c_in * hw, 1.0f);
    float  *wt = rand_buf(c_out * rows, 1.0f), *bias = rand_buf(c_out, 1.0f);
    float  *col = zbuf(2 * rows * hw), *got = zbuf(ny), *ref = zbuf(ny);

    for (bt0 = 0; bt0 < b * f; bt0 += 2) {
        int count = (bt0 + 2 <= b * f) ? 2 : b * f - bt0;

        for (e = 0; e < count * rows * hw; e++) {
            int64_t src = svp_math_frames_col_src(e, f, c_in, hw, bt0);
            col[e]      = (src >= 0) ? x[src] : 0.0f;
        }
        for (t = 0; t < count; t++) {
            for (o = 0; o < c_out; o++) {
                for (e = 0; e < hw; e++) {
                    double  acc = bias[o];
                    int64_t r;

                    /* weight [c_out, c_in, 3]: row r = ci * 3 + tap */
                    for (r = 0; r < rows; r++) {
                        acc += (double)wt[o * rows + r] *
                               col[((int64_t)t * rows + r) * hw + e];
                    }
                    got[(((int64_t)bt0 + t) * c_out + o) * hw + e] = (float)acc;
                }
            }
        }
    }
    cr_assert_eq(svp_ops_conv_frames(ops, b, f, c_in, c_out, hw, x, wt, bias, ref),
                 SVP_OK);
    assert_close("frames_col twin conv vs cpu", got, ref, ny, 2e-6);
    free(x);
    free(wt);
    free(bias);
    free(col);
    free(got);
    free(ref);
}
