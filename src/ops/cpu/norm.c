/*
 * CPU GroupNorm and LayerNorm.  Statistics are accumulated in double: the
 * reference (torch fp32) is itself within ~1e-6 of fp64, and a double sum
 * keeps this side from adding its own drift on large groups (SVD level 0:
 * 10 channels x 25 frames x 9216 pixels per temporal group).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "ops/cpu/vecmath.h"

#pragma omp declare simd notinbranch
static inline float      svp_silu(float v)
{
    return v / (1.0f + expf(-v));
}

svp_status_t svp_ops_cpu_group_norm(svp_ops_h ops, const svp_ops_group_norm_t *p,
                                    const float *x, const float *gamma,
                                    const float *beta, float *y)
{
    int     cpg   = p->c / p->groups;
    int64_t frame = (int64_t)p->c * p->spatial;
    int64_t count = (int64_t)p->frames * cpg * p->spatial;
    int64_t item;

#pragma omp      parallel for schedule(dynamic)
    for (item = 0; item < (int64_t)p->n * p->groups; item++) {
             int64_t n   = item / p->groups;
             int     g   = (int)(item % p->groups);
             double  sum = 0.0, sq = 0.0, mean, var;
             float   rstd;
             int     f, c;
             int64_t s;

             for (f = 0; f < p->frames; f++) {
                 const float *xs =
                     x + (n * p->frames + f) * frame + (int64_t)g * cpg * p->spatial;
                 double fs = 0.0;
     #pragma omp simd reduction(+ : fs)
            for (s = 0; s < (int64_t)cpg * p->spatial; s++) {
                     fs += xs[s];
            }
            sum += fs;
             }
             mean = sum / (double)count;
             for (f = 0; f < p->frames; f++) {
                 const float *xs =
                     x + (n * p->frames + f) * frame + (int64_t)g * cpg * p->spatial;
     #pragma omp simd reduction(+ : sq)
            for (s = 0; s < (int64_t)cpg * p->spatial; s++) {
                     double d = xs[s] - mean;
                     sq += d * d;
            }
             }
             var  = sq / (double)count;
             rstd = (float)(1.0 / sqrt(var + (double)p->eps));

             for (f = 0; f < p->frames; f++) {
                 for (c = g * cpg; c < (g + 1) * cpg; c++) {
                     int64_t      off = (n * p->frames + f) * frame + c * p->spatial;
                     const float *xs  = x + off;
                     float       *ys  = y + off;
                     float        scale = rstd * gamma[c];
                     float        shift = beta[c] - (float)mean * scale;
                     /* the branches differ (svp_silu): clang-tidy 14 takes two
                 * "omp simd" loops for clones */
                     if (p->silu) { /* NOLINT(bugprone-branch-clone) */
     #pragma omp simd
                    for (s = 0; s < p->spatial; s++) {
                             ys[s] = svp_silu(xs[s] * scale + shift);
                    }
                } else {
#pragma omp simd
                    for (s = 0; s < p->spatial; s++) {
                        ys[s] = xs[s] * scale + shift;
                    }
                }
            }
        }
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_layer_norm(svp_ops_h ops, int64_t rows, int dim, float eps,
                                    const float *x, const float *gamma,
                                    const float *beta, float *y)
{
    int64_t r;

#pragma omp parallel for schedule(static) if (rows * dim > SVP_OPS_CPU_PAR_MIN)
    for (r = 0; r < rows; r++) {
        const float *xr  = x + r * dim;
        float       *yr  = y + r * dim;
        double       sum = 0.0, sq = 0.0, mean;
        float        rstd, m;
        int          i;

#pragma omp simd reduction(+ : sum)
        for (i = 0; i < dim; i++) {
            sum += xr[i];
        }
        mean = sum / dim;
#pragma omp simd reduction(+ : sq)
        for (i = 0; i < dim; i++) {
            double d = xr[i] - mean;
            sq += d * d;
        }
        rstd = (float)(1.0 / sqrt(sq / dim + (double)eps));
        m    = (float)mean;
#pragma omp simd
        for (i = 0; i < dim; i++) {
            yr[i] = (xr[i] - m) * rstd * gamma[i] + beta[i];
        }
    }
    return SVP_OK;
}
