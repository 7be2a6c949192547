/*
 * The per-element and per-tile arithmetic of the ops, written once for both
 * backends.  Under nvcc every function is __host__ __device__ and the CUDA
 * kernels in kernels/ call it; under the C compiler it is static inline and
 * the CPU backend (src/ops/cpu/) and tests/test_ops_math.c call it, so the
 * index math, the tiling and the online-softmax rescaling of the kernels
 * run in every `make check`, GPU or not.
 *
 * Nothing here allocates; every function works on the caller's registers
 * or memory.  Internal to src/ops and kernels/.
 */
#ifndef SVP_OPS_OPS_MATH_H
#define SVP_OPS_OPS_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SVP_HD static __host__ __device__ __forceinline__
#else
#define SVP_HD static inline
#endif

/* ---- bf16 / f16, round to nearest even (the tensor layer's rules) ---- */

SVP_HD uint32_t svp_math_f32_bits(float f)
{
    union {
        float    f;
        uint32_t u;
    } c;

    c.f = f;
    return c.u;
}

SVP_HD float svp_math_bits_f32(uint32_t u)
{
    union {
        float    f;
        uint32_t u;
    } c;

    c.u = u;
    return c.f;
}

SVP_HD uint16_t svp_math_f32_to_bf16(float f)
{
    uint32_t bits = svp_math_f32_bits(f);

    if ((bits & 0x7fffffffu) > 0x7f800000u) { /* NaN stays quiet */
        return (uint16_t)((bits >> 16) | 0x40u);
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

SVP_HD float svp_math_bf16_to_f32(uint16_t b)
{
    return svp_math_bits_f32((uint32_t)b << 16);
}

/* IEEE binary16, subnormals and overflow to infinity included. */
SVP_HD uint16_t svp_math_f32_to_f16(float f)
{
    uint32_t bits = svp_math_f32_bits(f);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t absb = bits & 0x7fffffffu;
    int32_t  exp;
    uint32_t mant, half, rest, round;

    if (absb > 0x7f800000u) { /* NaN */
        return (uint16_t)(sign | 0x7e00u);
    }
    if (absb >= 0x47800000u) { /* >= 65536: inf */
        /* 65520 and above round to infinity; below, to 65504 */
        return (uint16_t)(sign | ((absb >= 0x477ff000u) ? 0x7c00u : 0x7bffu));
    }
    exp  = (int32_t)(absb >> 23) - 127 + 15;
    mant = (absb & 0x7fffffu) | 0x800000u;
    if (exp <= 0) {           /* subnormal or zero */
        int shift = 14 - exp; /* 24-bit mantissa -> 10 */

        if (shift > 24) {
            return sign;
        }
        half  = mant >> shift;
        rest  = mant & ((1u << shift) - 1u);
        round = 1u << (shift - 1);
        if (rest > round || (rest == round && (half & 1u))) {
            half++;
        }
        return (uint16_t)(sign | half);
    }
    half = ((uint32_t)exp << 10) | ((mant >> 13) & 0x3ffu);
    rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) {
        half++; /* may carry into exp */
    }
    return (uint16_t)(sign | half);
}

SVP_HD float svp_math_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp  = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0x1fu) {
        return svp_math_bits_f32(sign | 0x7f800000u | (mant << 13));
    }
    if (exp == 0) { /* subnormal: m * 2^-24 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return (sign != 0) ? -v : v;
    }
    return svp_math_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* ---- attention: the online-softmax tile update (flash style) ---- */

/*
 * A query row's running state over its key tiles is (m, l, o[d]): the
 * largest score seen, the sum of exp(score - m) and the unnormalised
 * output sum_j exp(s_j - m) v_j.  For a new tile of n scores s (already
 * scaled by 1/sqrt(d)) svp_math_attn_tile_row() raises m to cover the tile,
 * replaces s[j] by exp(s[j] - m) and returns the factor exp(m_old - m) by
 * which the caller scales o before adding the tile's p . V (0 on the first
 * tile, where o is still empty).  After the last tile o / l is the
 * attention output (svp_math_attn_finish_row).  The result equals the
 * softmax over all keys; only the rounding order differs.
 */
SVP_HD float svp_math_attn_tile_row(float *s, int n, float *m_p, float *l_p)
{
    float m_old = *m_p, m = m_old, sum = 0.0f, corr;
    int   j;

    for (j = 0; j < n; j++) {
        m = (s[j] > m) ? s[j] : m;
    }
    for (j = 0; j < n; j++) {
        s[j] = expf(s[j] - m);
        sum += s[j];
    }
    corr = (m_old == -INFINITY) ? 0.0f : expf(m_old - m);
    *m_p = m;
    *l_p = *l_p * corr + sum;
    return corr;
}

/* o[d] = o * corr + sum_j p[j] v[j * v_stride + :d]. */
SVP_HD void svp_math_attn_acc_row(float *o, int d, float corr, const float *p, int n,
                                  const float *v, int64_t v_stride)
{
    int dd, j;

    for (dd = 0; dd < d; dd++) {
        float acc = o[dd] * corr;

        for (j = 0; j < n; j++) {
            acc += p[j] * v[(int64_t)j * v_stride + dd];
        }
        o[dd] = acc;
    }
}

SVP_HD float svp_math_attn_finish_row(float l)
{
    return 1.0f / l;
}

/* ---- normalisation: the affine step once mean and 1/std are known ---- */

SVP_HD float svp_math_silu(float x)
{
    return x / (1.0f + expf(-x));
}

/* GroupNorm: y = x * scale + shift per channel, then SiLU when asked. */
SVP_HD void svp_math_group_norm_coef(float mean, float rstd, float gamma, float beta,
                                     float *scale_p, float *shift_p)
{
    float scale = rstd * gamma;

    *scale_p = scale;
    *shift_p = beta - mean * scale;
}

SVP_HD float svp_math_group_norm_apply(float x, float scale, float shift, int silu)
{
    float y = x * scale + shift;

    return silu ? svp_math_silu(y) : y;
}

/* LayerNorm: (x - mean) * rstd * gamma + beta. */
SVP_HD float svp_math_layer_norm_apply(float x, float mean, float rstd, float gamma,
                                       float beta)
{
    return (x - mean) * rstd * gamma + beta;
}

/* 1/sqrt(var + eps), var the biased variance accumulated in fp64. */
SVP_HD float svp_math_norm_rstd(double var, float eps)
{
    return (float)(1.0 / sqrt(var + (double)eps));
}

/* ---- elementwise ---- */

SVP_HD float svp_math_gelu(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

/* ---- timestep embedding ---- */

/*
 * The angle t * exp(-ln(10000) i / half) of frequency i; each product and
 * quotient rounded on its own (no FMA contraction on the device), so both
 * sides compute the same fp32 value.
 */
SVP_HD float svp_math_timestep_arg(float t, int i, int half)
{
    const float neg_log_period = -9.210340371976184f; /* -ln(10000) */
#ifdef __CUDA_ARCH__
    float exponent = __fdiv_rn(__fmul_rn(neg_log_period, (float)i), (float)half);

    return __fmul_rn(t, expf(exponent));
#else
    float exponent = (neg_log_period * (float)i) / (float)half;

    return t * expf(exponent);
#endif
}

/* ---- index math: flat output index e -> source index (-1: zero) ---- */

/* Nearest resize of planes [h, w] to [ho, wo]: src = floor(dst * in / out). */
SVP_HD int64_t svp_math_upsample_src(int64_t e, int h, int w, int ho, int wo)
{
    int64_t plane = e / ((int64_t)ho * wo);
    int     oy = (int)((e / wo) % ho), ox = (int)(e % wo);
    int64_t iy = (int64_t)oy * h / ho, ix = (int64_t)ox * w / wo;

    return (plane * h + iy) * w + ix;
}

/*
 * im2col of count images: col [count, c_in*kh*kw, ho*wo], row r =
 * (ci, ky, kx); element e reads x [count, c_in, h, w] at the returned index.
 */
SVP_HD int64_t svp_math_im2col_src(int64_t e, int c_in, int h, int w, int kh, int kw,
                                   int stride, int pad, int ho, int wo)
{
    int64_t howo = (int64_t)ho * wo;
    int64_t k    = (int64_t)c_in * kh * kw;
    int64_t img  = e / (k * howo);
    int64_t r    = (e / howo) % k;
    int     oh = (int)((e % howo) / wo), ow = (int)(e % wo);
    int     ci = (int)(r / (kh * kw));
    int     i = (int)((r / kw) % kh), j = (int)(r % kw);
    int     iy = oh * stride - pad + i, ix = ow * stride - pad + j;

    if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
        return -1;
    }
    return ((img * c_in + ci) * h + iy) * w + ix;
}

/*
 * conv_frames' columns for frames bt0 .. bt0+count of x [b*f, c_in, hw]:
 * col [count, c_in*3, hw], row r = (ci, tap), tap k reading frame t+k-1.
 */
SVP_HD int64_t svp_math_frames_col_src(int64_t e, int f, int c_in, int64_t hw,
                                       int64_t bt0)
{
    int64_t rows = 3 * (int64_t)c_in;
    int64_t bt   = bt0 + e / (rows * hw);
    int64_t r    = (e / hw) % rows;
    int64_t s    = e % hw;
    int     t    = (int)(bt % f);
    int     src  = t + (int)(r % 3) - 1;
    int64_t ci   = r / 3;

    if (src < 0 || src >= f) {
        return -1;
    }
    return (((bt - t + src) * c_in) + ci) * hw + s;
}

/*
 * GroupNorm over frames x (c/groups) x spatial: element e of group g of
 * item n is at the returned offset of x [n, frames, c, spatial]; *ch_p is
 * its channel.
 */
SVP_HD int64_t svp_math_group_norm_off(int64_t e, int64_t n, int g, int frames,
                                       int c, int64_t spatial, int groups, int *ch_p)
{
    int     cpg  = c / groups;
    int64_t run  = (int64_t)cpg * spatial;
    int64_t base = n * frames * c * spatial + g * run;

    *ch_p = g * cpg + (int)((e % run) / spatial);
    return base + (e / run) * c * spatial + e % run;
}

#endif
