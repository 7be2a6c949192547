/* CPU activations, elementwise arithmetic, embeddings and data movement. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/vecmath.h"
#include "common/util.h"

#include <string.h>

#pragma omp declare simd notinbranch
static inline float      svp_gelu_erf(float v)
{
    return 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
}

svp_status_t svp_ops_cpu_geglu(svp_ops_h ops, int64_t rows, int inner,
                               const float *x, float *y)
{
    int64_t r;

#pragma omp parallel for schedule(static) if (rows * inner > SVP_OPS_CPU_PAR_MIN)
    for (r = 0; r < rows; r++) {
        const float *value = x + r * 2 * inner, *gate = value + inner;
        float       *yr = y + r * inner;
        int          i;
#pragma omp simd
        for (i = 0; i < inner; i++) {
            yr[i] = value[i] * svp_gelu_erf(gate[i]);
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_gelu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    int64_t i0;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i0 = 0; i0 < n; i0 += SVP_OPS_CPU_BLOCK) {
        int64_t end = SVP_MIN(n, i0 + SVP_OPS_CPU_BLOCK), i;
#pragma omp simd
        for (i = i0; i < end; i++) {
            y[i] = svp_gelu_erf(x[i]);
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_silu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    int64_t i0;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i0 = 0; i0 < n; i0 += SVP_OPS_CPU_BLOCK) {
        int64_t end = SVP_MIN(n, i0 + SVP_OPS_CPU_BLOCK), i;
#pragma omp simd
        for (i = i0; i < end; i++) {
            y[i] = x[i] / (1.0f + expf(-x[i]));
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_add(svp_ops_h ops, int64_t n, const float *a,
                             const float *b, float *y)
{
    int64_t i0;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i0 = 0; i0 < n; i0 += SVP_OPS_CPU_BLOCK) {
        int64_t end = SVP_MIN(n, i0 + SVP_OPS_CPU_BLOCK), i;
#pragma omp simd
        for (i = i0; i < end; i++) {
            y[i] = a[i] + b[i];
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_add_broadcast(svp_ops_h ops, int64_t outer, int64_t mid,
                                       int64_t inner, float *x, const float *v)
{
    int64_t o, om;

    if (inner == 1) {
        /* a per-channel value over pixels: one scalar per row of mid */
#pragma omp parallel for schedule(static) if (outer * mid > SVP_OPS_CPU_PAR_MIN)
        for (o = 0; o < outer; o++) {
            float  *xr = x + o * mid;
            float   vo = v[o];
            int64_t m;
#pragma omp simd
            for (m = 0; m < mid; m++) {
                xr[m] += vo;
            }
        }
        return SVP_OK;
    }

#pragma omp parallel for schedule(static) if (outer * mid * inner > \
                                              SVP_OPS_CPU_PAR_MIN)
    for (om = 0; om < outer * mid; om++) {
        float       *xr = x + om * inner;
        const float *vr = v + (om / mid) * inner;
        int64_t      i;
#pragma omp simd
        for (i = 0; i < inner; i++) {
            xr[i] += vr[i];
        }
    }
    return SVP_OK;
}

/* Written as diffusers' AlphaBlender does: s * alpha + t * (1 - alpha). */
svp_status_t svp_ops_cpu_blend(svp_ops_h ops, int64_t n, float alpha,
                               const float *spatial, const float *temporal, float *y)
{
    float   beta = 1.0f - alpha;
    int64_t i0;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i0 = 0; i0 < n; i0 += SVP_OPS_CPU_BLOCK) {
        int64_t end = SVP_MIN(n, i0 + SVP_OPS_CPU_BLOCK), i;
#pragma omp simd
        for (i = i0; i < end; i++) {
            y[i] = spatial[i] * alpha + temporal[i] * beta;
        }
    }
    return SVP_OK;
}

/*
 * Every step in fp32 and in torch's order: exponent = (-ln 10000 as fp32) * i,
 * divided by half, exp; argument = t * freq; diffusers does this in fp32 even
 * for an fp64 model, so fp32 here is the reference, not an approximation.
 */
svp_status_t svp_ops_cpu_timestep_embedding(svp_ops_h ops, int n, int dim,
                                            const float *t, float *y)
{
    const float neg_log_period = (float)-9.210340371976184; /* -ln(10000) */
    int         half           = dim / 2;
    int         r, i;

    for (r = 0; r < n; r++) {
        float *yr = y + (int64_t)r * dim;
        for (i = 0; i < half; i++) {
            float exponent = (neg_log_period * (float)i) / (float)half;
            float arg      = t[r] * expf(exponent);
            yr[i]          = cosf(arg);
            yr[half + i]   = sinf(arg);
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_upsample_nearest(svp_ops_h ops, int n, int c, int h, int w,
                                          int ho, int wo, const float *x, float *y)
{
    int64_t plane;

#pragma omp parallel for schedule(static) if ((int64_t)n * c * ho * wo > \
                                              SVP_OPS_CPU_PAR_MIN)
    for (plane = 0; plane < (int64_t)n * c; plane++) {
        const float *src = x + plane * h * w;
        float       *dst = y + plane * ho * wo;
        int          oy, ox;
        for (oy = 0; oy < ho; oy++) {
            const float *srow = src + (int64_t)((int64_t)oy * h / ho) * w;
            for (ox = 0; ox < wo; ox++) {
                dst[(int64_t)oy * wo + ox] = srow[(int64_t)ox * w / wo];
            }
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_transpose(svp_ops_h ops, int64_t a, int64_t r, int64_t s,
                                   int64_t inner, const float *x, float *y)
{
    int64_t as;

#pragma omp parallel for schedule(static) if (a * r * s * inner > \
                                              SVP_OPS_CPU_PAR_MIN)
    for (as = 0; as < a * s; as++) {
        int64_t      ai = as / s, si = as % s, ri;
        const float *src = x + (ai * r * s + si) * inner;
        float       *dst = y + (ai * s + si) * r * inner;
        if (inner == 1) {
            for (ri = 0; ri < r; ri++) {
                dst[ri] = src[ri * s];
            }
        } else {
            for (ri = 0; ri < r; ri++) {
                memcpy(dst + ri * inner, src + ri * s * inner,
                       inner * sizeof(float));
            }
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_concat(svp_ops_h ops, int64_t n, int64_t ca, int64_t cb,
                                int64_t inner, const float *a, const float *b,
                                float *y)
{
    int64_t i;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i = 0; i < n; i++) {
        float *yi = y + i * (ca + cb) * inner;
        memcpy(yi, a + i * ca * inner, ca * inner * sizeof(float));
        memcpy(yi + ca * inner, b + i * cb * inner, cb * inner * sizeof(float));
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_copy(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    memcpy(y, x, n * sizeof(float));
    return SVP_OK;
}
