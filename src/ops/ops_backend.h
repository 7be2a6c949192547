/*
 * What a backend implements: the table behind svp_ops_h.  Only ops.c,
 * ops_arena.c and the backends include this.  ops.c checks arguments before
 * dispatching, so a backend may assume shapes are positive and consistent.
 *
 * A backend's init fills ops->vt and ops->impl; ops->vt->cleanup releases
 * what init allocated.  The entries mirror the public functions of ops.h.
 */
#ifndef SVP_OPS_OPS_BACKEND_H
#define SVP_OPS_OPS_BACKEND_H

#include "ops/ops.h"
#include "tensor/tensor.h"
#include "sched/sched_math.h"
#include "ops/ops_arena.h"
#include "ops/ops_plan.h"

typedef struct svp_ops_ops {
    svp_ops_backend_t backend;  /* which backend (ops_types.h) this is */
    int          host_memory;   /* buffers are plain host memory */
    /*
     * The products of a 16-bit handle take 16-bit operands: conv2d,
     * conv_frames and linear get the weight as held (bf16/f16 bits in the
     * buffer passed as w, never widened) and round the activation to the
     * handle's dtype themselves (ops->product_dtype).  0: they get fp32
     * weights and activations.
     */
    int          products16;
    void         (*cleanup)(svp_ops_h ops);

    svp_status_t (*alloc)(svp_ops_h ops, size_t count, float **buf_p);
    void         (*free)(svp_ops_h ops, float *buf);
    svp_status_t (*upload)(svp_ops_h ops, float *dst, const float *src, size_t count);
    svp_status_t (*download)(svp_ops_h ops, float *dst, const float *src, size_t count);

    svp_status_t (*conv2d)(svp_ops_h ops, const svp_ops_conv2d_t *p, const float *x,
                           const float *w, const float *b, float *y);
    svp_status_t (*conv_frames)(svp_ops_h ops, int b, int f, int c_in, int c_out,
                                int64_t hw, const float *x, const float *w,
                                const float *bias, float *y);
    svp_status_t (*group_norm)(svp_ops_h ops, const svp_ops_group_norm_t *p,
                               const float *x, const float *gamma,
                               const float *beta, float *y);
    svp_status_t (*layer_norm)(svp_ops_h ops, int64_t rows, int dim, float eps,
                               const float *x, const float *gamma,
                               const float *beta, float *y);
    svp_status_t (*linear)(svp_ops_h ops, int64_t rows, int in, int out,
                           const float *x, const float *w, const float *b,
                           int accumulate, float *y);
    svp_status_t (*attention)(svp_ops_h ops, const svp_ops_attention_t *p,
                              const float *q, const float *k, const float *v,
                              float *out);
    svp_status_t (*geglu)(svp_ops_h ops, int64_t rows, int inner, const float *x,
                          float *y);
    svp_status_t (*gelu)(svp_ops_h ops, int64_t n, const float *x, float *y);
    svp_status_t (*silu)(svp_ops_h ops, int64_t n, const float *x, float *y);
    svp_status_t (*add)(svp_ops_h ops, int64_t n, const float *a, const float *b,
                        float *y);
    svp_status_t (*add_broadcast)(svp_ops_h ops, int64_t outer, int64_t mid,
                                  int64_t inner, float *x, const float *v);
    svp_status_t (*blend)(svp_ops_h ops, int64_t n, float alpha,
                          const float *spatial, const float *temporal, float *y);
    svp_status_t (*timestep_embedding)(svp_ops_h ops, int n, int dim,
                                       const float *t, float *y);
    svp_status_t (*upsample_nearest)(svp_ops_h ops, int n, int c, int h, int w,
                                     int ho, int wo, const float *x, float *y);
    svp_status_t (*transpose)(svp_ops_h ops, int64_t a, int64_t r, int64_t s,
                              int64_t inner, const float *x, float *y);
    svp_status_t (*concat)(svp_ops_h ops, int64_t n, int64_t ca, int64_t cb,
                           int64_t inner, const float *a, const float *b, float *y);
    svp_status_t (*copy)(svp_ops_h ops, int64_t n, const float *x, float *y);

    /*
     * Widens count 16-bit weights (SVP_DTYPE_BF16 or SVP_DTYPE_F16) of a
     * backend buffer into the fp32 backend buffer dst, exactly.  NULL: the
     * backend holds fp32 weights only, and svp_ops_create() refuses a
     * 16-bit dtype for it.
     */
    svp_status_t (*widen)(svp_ops_h ops, svp_dtype_t dtype, const void *src,
                          size_t count, float *dst);
    /* the scheduler's per-step arithmetic (ops_sched.h); guidance is one
     * frame's worth with its scale g */
    svp_status_t (*sched_scale)(svp_ops_h ops, int64_t n, float c_in,
                                const float *x, float *y);
    svp_status_t (*sched_guidance)(svp_ops_h ops, int64_t n, float g,
                                   const float *uncond, const float *cond,
                                   float *out);
    svp_status_t (*sched_euler)(svp_ops_h ops, int64_t n,
                                const svp_sched_euler_coef_t *coef,
                                const float *v, const float *x, float *y);
} svp_ops_ops_t;

struct svp_ops {
    const svp_ops_ops_t *vt;
    void                *impl;              /* the backend's own state */
    int                  threads;
    const char          *threads_from;      /* static: where threads came from */
    size_t               attn_max_scores;
    int                  device;            /* device backends: which one */
    svp_dtype_t          weight_dtype;      /* F32, F16 or BF16 */

    /* Matrix weights (ops_weights.c): bytes uploaded, and the fp32 buffer
     * a 16-bit weight is widened into before its product, sized by the
     * largest weight uploaded. */
    size_t               weight_bytes;
    float               *widen_buf;
    size_t               widen_count;
    /* The dtype the products' operands are rounded to (ops.h), and the
     * buffer the CPU rounds activations into when that is 16-bit
     * (round_activations), sized by the largest operand so far. */
    svp_dtype_t          product_dtype;
    float               *round_buf;
    size_t               round_count;

    /* The arena (ops_arena.c).  A backend that grows its own workspace counts
     * that in mem.backend_allocs and mem.reserved_bytes too. */
    svp_ops_arena_t      arena;
    svp_ops_mem_stats_t  mem;
};

/* The CPU backend (src/ops/cpu/). */
svp_status_t svp_ops_cpu_init(svp_ops_h ops);
/* The dry backend (src/ops/ops_dry.c): no data, no work; for planning. */
svp_status_t svp_ops_dry_init(svp_ops_h ops);
/* The CUDA backend (src/ops/cuda/, kernels/), in builds with HAVE_CUDA. */
svp_status_t svp_ops_cuda_init(svp_ops_h ops);

/*
 * For the public ops' argument checks (ops.c, ops_sched.c): logs the failed
 * condition under the op's name and returns SVP_ERR_INVALID_PARAM.  The
 * file using it includes common/log.h.
 */
#define SVP_OPS_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            svp_error("%s: invalid arguments (%s)", __func__, #_cond); \
            return SVP_ERR_INVALID_PARAM; \
        } \
    } while (0)

#endif
