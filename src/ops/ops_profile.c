/*
 * The profiling backend (ops_profile.h): wraps another backend's ops, times
 * each call (waiting for the device where there is one) and counts its
 * FLOPs, for svdtool unet --profile and log.profile.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_profile.h"
#include "ops/ops_backend.h"
#include "common/clock.h"
#include "trace/range.h"

#include <string.h>

static const svp_ops_ops_t *svp_ops_prof_inner;  /* the wrapped backend */
static svp_ops_ops_t        svp_ops_prof_vt;
static int                  svp_ops_prof_async;  /* not the CPU backend */
static float               *svp_ops_prof_one;    /* device scratch for syncs */

/* The last result must be there before the clock is read. */
static void svp_ops_prof_wait(svp_ops_h ops, const float *y)
{
    float one;

    if (svp_ops_prof_async && y != NULL) {
        svp_ops_prof_inner->download(ops, &one, y, 1);
    }
}

void svp_ops_profile_sync(void *arg)
{
    svp_ops_h ops = arg;
    float     one;

    if (svp_ops_prof_async && svp_ops_prof_one != NULL) {
        svp_ops_prof_inner->download(ops, &one, svp_ops_prof_one, 1);
    }
}

/* Times one call of the wrapped backend; _y is the output to wait for. */
#define SVP_OPS_PROF(_kind, _flops, _y, _call) \
    do { \
        double       _t0 = svp_clock_now(); \
        svp_status_t _st = svp_ops_prof_inner->_call; \
        svp_ops_prof_wait(ops, _y); \
        svp_range_op(_kind, svp_clock_now() - _t0, (double)(_flops)); \
        return _st; \
    } while (0)

static svp_status_t prof_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p, const float *x,
                                const float *w, const float *b, float *y)
{
    double f = 2.0 * p->n * p->c_out * svp_ops_conv2d_out_h(p) * svp_ops_conv2d_out_w(p) *
               p->c_in * p->kh * p->kw;
    SVP_OPS_PROF("conv2d", f, y, conv2d(ops, p, x, w, b, y));
}

static svp_status_t prof_conv_frames(svp_ops_h ops, int b, int f, int c_in, int c_out,
                                     int64_t hw, const float *x, const float *w,
                                     const float *bias, float *y)
{
    /* kernel 3 over frames, padding 1: every output sums 3 frames */
    double fl = 2.0 * b * f * c_out * (double)hw * c_in * 3;
    SVP_OPS_PROF("conv_frames", fl, y, conv_frames(ops, b, f, c_in, c_out, hw, x, w, bias, y));
}

static svp_status_t prof_group_norm(svp_ops_h ops, const svp_ops_group_norm_t *p,
                                    const float *x, const float *g, const float *b,
                                    float *y)
{
    SVP_OPS_PROF("group_norm", 0, y, group_norm(ops, p, x, g, b, y));
}

static svp_status_t prof_layer_norm(svp_ops_h ops, int64_t rows, int dim, float eps,
                                    const float *x, const float *g, const float *b,
                                    float *y)
{
    SVP_OPS_PROF("layer_norm", 0, y, layer_norm(ops, rows, dim, eps, x, g, b, y));
}

static svp_status_t prof_linear(svp_ops_h ops, int64_t rows, int in, int out,
                                const float *x, const float *w, const float *b,
                                int accumulate, float *y)
{
    SVP_OPS_PROF("linear", 2.0 * rows * in * out, y,
                 linear(ops, rows, in, out, x, w, b, accumulate, y));
}

static svp_status_t prof_widen(svp_ops_h ops, svp_dtype_t dtype, const void *src,
                               size_t count, float *dst)
{
    SVP_OPS_PROF("widen", 0, dst, widen(ops, dtype, src, count, dst));
}

static svp_status_t prof_attention(svp_ops_h ops, const svp_ops_attention_t *p,
                                   const float *q, const float *k, const float *v,
                                   float *out)
{
    /* QK^T and AV */
    double f = 4.0 * p->batch * p->heads * (double)p->q_len * p->kv_len * p->head_dim;
    SVP_OPS_PROF("attention", f, out, attention(ops, p, q, k, v, out));
}

static svp_status_t prof_geglu(svp_ops_h ops, int64_t rows, int inner, const float *x,
                               float *y)
{
    SVP_OPS_PROF("geglu", 0, y, geglu(ops, rows, inner, x, y));
}

static svp_status_t prof_gelu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    SVP_OPS_PROF("gelu", 0, y, gelu(ops, n, x, y));
}

static svp_status_t prof_silu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    SVP_OPS_PROF("silu", 0, y, silu(ops, n, x, y));
}

static svp_status_t prof_add(svp_ops_h ops, int64_t n, const float *a, const float *b,
                             float *y)
{
    SVP_OPS_PROF("add", 0, y, add(ops, n, a, b, y));
}

static svp_status_t prof_add_broadcast(svp_ops_h ops, int64_t outer, int64_t mid,
                                       int64_t inner, float *x, const float *v)
{
    SVP_OPS_PROF("add_broadcast", 0, x, add_broadcast(ops, outer, mid, inner, x, v));
}

static svp_status_t prof_blend(svp_ops_h ops, int64_t n, float alpha, const float *s,
                               const float *t, float *y)
{
    SVP_OPS_PROF("blend", 0, y, blend(ops, n, alpha, s, t, y));
}

static svp_status_t prof_timestep_embedding(svp_ops_h ops, int n, int dim, const float *t,
                                            float *y)
{
    SVP_OPS_PROF("timestep_embedding", 0, y, timestep_embedding(ops, n, dim, t, y));
}

static svp_status_t prof_upsample_nearest(svp_ops_h ops, int n, int c, int h, int w,
                                          int ho, int wo, const float *x, float *y)
{
    SVP_OPS_PROF("upsample_nearest", 0, y, upsample_nearest(ops, n, c, h, w, ho, wo, x, y));
}

static svp_status_t prof_transpose(svp_ops_h ops, int64_t a, int64_t r, int64_t s,
                                   int64_t inner, const float *x, float *y)
{
    SVP_OPS_PROF("transpose", 0, y, transpose(ops, a, r, s, inner, x, y));
}

static svp_status_t prof_concat(svp_ops_h ops, int64_t n, int64_t ca, int64_t cb,
                                int64_t inner, const float *a, const float *b, float *y)
{
    SVP_OPS_PROF("concat", 0, y, concat(ops, n, ca, cb, inner, a, b, y));
}

static svp_status_t prof_copy(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    SVP_OPS_PROF("copy", 0, y, copy(ops, n, x, y));
}

static svp_status_t prof_sched_scale(svp_ops_h ops, int64_t n, float c_in,
                                     const float *x, float *y)
{
    SVP_OPS_PROF("sched_scale", 0, y, sched_scale(ops, n, c_in, x, y));
}

static svp_status_t prof_sched_guidance(svp_ops_h ops, int64_t n, float g,
                                        const float *uncond, const float *cond,
                                        float *out)
{
    SVP_OPS_PROF("sched_guidance", 0, out,
                 sched_guidance(ops, n, g, uncond, cond, out));
}

static svp_status_t prof_sched_euler(svp_ops_h ops, int64_t n,
                                     const svp_sched_euler_coef_t *coef,
                                     const float *v, const float *x, float *y)
{
    SVP_OPS_PROF("sched_euler", 0, y, sched_euler(ops, n, coef, v, x, y));
}

svp_status_t svp_ops_profile_enable(svp_ops_h ops)
{
    if (svp_ops_prof_inner != NULL) {
        return (ops->vt == &svp_ops_prof_vt) ? SVP_OK : SVP_ERR_UNSUPPORTED;
    }
    svp_ops_prof_inner = ops->vt;
    svp_ops_prof_async = ops->vt->backend != SVP_OPS_BACKEND_CPU;
    if (svp_ops_prof_async && ops->vt->alloc(ops, 1, &svp_ops_prof_one) != SVP_OK) {
        svp_ops_prof_inner = NULL;
        return SVP_ERR_NO_MEMORY;
    }
    /* memory management, cleanup and the name pass straight through */
    svp_ops_prof_vt                    = *ops->vt;
    svp_ops_prof_vt.conv2d             = prof_conv2d;
    svp_ops_prof_vt.conv_frames        = prof_conv_frames;
    svp_ops_prof_vt.group_norm         = prof_group_norm;
    svp_ops_prof_vt.layer_norm         = prof_layer_norm;
    svp_ops_prof_vt.linear             = prof_linear;
    svp_ops_prof_vt.attention          = prof_attention;
    svp_ops_prof_vt.geglu              = prof_geglu;
    svp_ops_prof_vt.gelu               = prof_gelu;
    svp_ops_prof_vt.silu               = prof_silu;
    svp_ops_prof_vt.add                = prof_add;
    svp_ops_prof_vt.add_broadcast      = prof_add_broadcast;
    svp_ops_prof_vt.blend              = prof_blend;
    svp_ops_prof_vt.timestep_embedding = prof_timestep_embedding;
    svp_ops_prof_vt.upsample_nearest   = prof_upsample_nearest;
    svp_ops_prof_vt.transpose          = prof_transpose;
    svp_ops_prof_vt.concat             = prof_concat;
    svp_ops_prof_vt.copy               = prof_copy;
    svp_ops_prof_vt.sched_scale        = prof_sched_scale;
    svp_ops_prof_vt.sched_guidance     = prof_sched_guidance;
    svp_ops_prof_vt.sched_euler        = prof_sched_euler;
    if (svp_ops_prof_inner->widen != NULL) {
        svp_ops_prof_vt.widen          = prof_widen;  /* 16-bit weights */
    }
    ops->vt = &svp_ops_prof_vt;
    return SVP_OK;
}

void svp_ops_profile_disable(svp_ops_h ops)
{
    if (svp_ops_prof_inner != NULL && ops->vt == &svp_ops_prof_vt) {
        ops->vt = svp_ops_prof_inner;
        if (svp_ops_prof_one != NULL) {
            ops->vt->free(ops, svp_ops_prof_one);
            svp_ops_prof_one = NULL;
        }
        svp_ops_prof_inner = NULL;
    }
}
