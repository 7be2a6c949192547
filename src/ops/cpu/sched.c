/*
 * The scheduler's ops on the CPU backend: sched_math.h's functions over
 * host buffers, in parallel where it pays (the result does not depend on
 * the thread count: every element is computed alone).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/cpu/ops_cpu.h"
#include "noise/sched_math.h"

svp_status_t svp_ops_cpu_sched_scale(svp_ops_h ops, int64_t n, float c_in,
                                     const float *x, float *y)
{
    int64_t i;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i = 0; i < n; i++) {
        y[i] = svp_sched_math_scale(x[i], c_in);
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_sched_guidance(svp_ops_h ops, int64_t n, float g,
                                        const float *uncond, const float *cond,
                                        float *out)
{
    int64_t i;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i = 0; i < n; i++) {
        out[i] = svp_sched_math_guidance(uncond[i], cond[i], g);
    }
    return SVP_OK;
}

svp_status_t svp_ops_cpu_sched_euler(svp_ops_h ops, int64_t n,
                                     const svp_sched_euler_coef_t *coef,
                                     const float *v, const float *x, float *y)
{
    svp_sched_euler_coef_t c = *coef;
    int64_t                i;

#pragma omp parallel for schedule(static) if (n > SVP_OPS_CPU_PAR_MIN)
    for (i = 0; i < n; i++) {
        y[i] = svp_sched_math_euler(&c, v[i], x[i], NULL);
    }
    return SVP_OK;
}
