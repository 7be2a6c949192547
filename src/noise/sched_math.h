/*
 * The scheduler's per-element arithmetic, written once for the host and the
 * device: the Euler v-prediction update, the model-input scaling and the
 * classifier-free guidance combine.  Under nvcc every function is
 * __host__ __device__ and kernels/sched.cu calls it; under the C compiler it
 * is static inline and euler.c / guidance.c call it, so the CPU scheduler
 * and the CUDA kernel evaluate the same formula in the same order.
 *
 * Bit for bit on both: every operation is one IEEE fp32 operation rounded
 * to nearest.  On the device that is spelt with the _rn intrinsics, which
 * nvcc never contracts into a fused multiply-add (its default, -fmad=true,
 * would fuse `v * c_out + x / s2` and move the latents by an ulp a step);
 * on the host the baseline x86-64 target has no FMA to contract into.  The
 * per-step constants (sqrtf of sigma^2 + 1, ...) are computed once on the
 * host (svp_sched_euler_coef) and passed to the kernel as they are.
 *
 * The latents and the scheduler stay fp32 whatever dtype the model computes
 * in, so a sample is the same bits however many ranks it crossed.
 * Internal to src/noise, src/ops and kernels/.
 */
#ifndef SVP_NOISE_SCHED_MATH_H
#define SVP_NOISE_SCHED_MATH_H

#ifdef __CUDACC__
#define SVP_SCHED_HD static __host__ __device__ __forceinline__
#else
#define SVP_SCHED_HD static inline
#endif

#ifdef __CUDA_ARCH__
#define SVP_SCHED_ADD(_a, _b) __fadd_rn((_a), (_b))
#define SVP_SCHED_SUB(_a, _b) __fsub_rn((_a), (_b))
#define SVP_SCHED_MUL(_a, _b) __fmul_rn((_a), (_b))
#define SVP_SCHED_DIV(_a, _b) __fdiv_rn((_a), (_b))
#else
#define SVP_SCHED_ADD(_a, _b) ((_a) + (_b))
#define SVP_SCHED_SUB(_a, _b) ((_a) - (_b))
#define SVP_SCHED_MUL(_a, _b) ((_a) * (_b))
#define SVP_SCHED_DIV(_a, _b) ((_a) / (_b))
#endif

/*
 * The constants of one Euler step from sigma to sigma_next (v-prediction,
 * diffusers' EulerDiscreteScheduler with s_churn = 0):
 *   s2    = sigma^2 + 1          (c_skip = 1 / s2)
 *   c_out = -sigma / sqrt(s2)
 *   dt    = sigma_next - sigma
 */
typedef struct {
    float sigma;
    float s2;
    float c_out;
    float dt;
} svp_sched_euler_coef_t;

/*
 * One element of the Euler step: the denoised estimate
 *   denoised = v * c_out + x / s2
 * then the update along (x - denoised) / sigma:
 *   prev = x + deriv * dt
 * each operation in diffusers' order so the float rounding matches.
 * *denoised_p may be NULL.
 */
SVP_SCHED_HD float svp_sched_math_euler(const svp_sched_euler_coef_t *c, float v,
                                        float x, float *denoised_p)
{
    float denoised =
        SVP_SCHED_ADD(SVP_SCHED_MUL(v, c->c_out), SVP_SCHED_DIV(x, c->s2));
    float deriv = SVP_SCHED_DIV(SVP_SCHED_SUB(x, denoised), c->sigma);

    if (denoised_p != 0) {
        *denoised_p = denoised;
    }
    return SVP_SCHED_ADD(x, SVP_SCHED_MUL(deriv, c->dt));
}

/* The model input: x / c_in, c_in = sqrt(sigma^2 + 1).  A division, not a
 * multiplication by 1/c_in: diffusers divides. */
SVP_SCHED_HD float svp_sched_math_scale(float x, float c_in)
{
    return SVP_SCHED_DIV(x, c_in);
}

/* Classifier-free guidance of one element: u + g (c - u). */
SVP_SCHED_HD float svp_sched_math_guidance(float u, float c, float g)
{
    return SVP_SCHED_ADD(u, SVP_SCHED_MUL(g, SVP_SCHED_SUB(c, u)));
}

#endif
