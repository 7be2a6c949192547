/*
 * The dry backend: computes nothing.  Its buffers are address space with no
 * access (an op that touched one would fault), its ops return at once.  A
 * model's forward run on it makes the same requests of the arena as on any
 * backend, so the arena records and plans the pass exactly as it would for
 * real: that is how the launch planner sizes the activations of a model at
 * a shape it will never run here (src/model/unet_plan.c), in milliseconds
 * and with no weights.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_backend.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The mappings handed out, to unmap them with their size. */
typedef struct {
    void   *addr;
    size_t  len;
} svp_ops_dry_map_t;

typedef struct {
    svp_ops_dry_map_t *maps;
    size_t             n, max;
} svp_ops_dry_t;

static void svp_ops_dry_cleanup(svp_ops_h ops)
{
    svp_ops_dry_t *dry = ops->impl;
    size_t         i;

    for (i = 0; i < dry->n; i++) {
        munmap(dry->maps[i].addr, dry->maps[i].len);
    }
    free(dry->maps);
    free(dry);
}

/* Reserves addresses only: PROT_NONE and no swap reservation, so a slab the
 * size of SVD-XT's activations costs nothing. */
static svp_status_t svp_ops_dry_alloc(svp_ops_h ops, size_t count,
                                      float **buf_p)
{
    svp_ops_dry_t     *dry = ops->impl;
    svp_ops_dry_map_t *maps;
    size_t             len = (count ? count : 1) * sizeof(float);
    size_t             max;
    void              *addr;

    if (dry->n == dry->max) {
        max  = dry->max ? 2 * dry->max : 64;
        maps = realloc(dry->maps, max * sizeof(*maps));
        if (maps == NULL) {
            return SVP_ERR_NO_MEMORY;
        }
        dry->maps = maps;
        dry->max  = max;
    }
    addr = mmap(NULL, len, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (addr == MAP_FAILED) {
        svp_error("dry backend: cannot reserve %zu bytes of address space: %m",
                  len);
        return SVP_ERR_NO_MEMORY;
    }
    dry->maps[dry->n++] = (svp_ops_dry_map_t){ addr, len };
    *buf_p = addr;
    return SVP_OK;
}

static void svp_ops_dry_free(svp_ops_h ops, float *buf)
{
    svp_ops_dry_t *dry = ops->impl;
    size_t         i;

    for (i = dry->n; i-- > 0;) {
        if (dry->maps[i].addr == (void*)buf) {
            munmap(dry->maps[i].addr, dry->maps[i].len);
            dry->maps[i] = dry->maps[--dry->n];
            return;
        }
    }
}

static svp_status_t svp_ops_dry_copy_in_out(svp_ops_h ops, float *dst,
                                            const float *src, size_t count)
{
    return SVP_OK;
}

/* Nothing was computed, but a host reader of the result (the VAE's
 * posterior) must not read uninitialised memory: zeros. */
static svp_status_t svp_ops_dry_download(svp_ops_h ops, float *dst,
                                         const float *src, size_t count)
{
    memset(dst, 0, count * sizeof(*dst));
    return SVP_OK;
}

static svp_status_t svp_ops_dry_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p,
                                       const float *x, const float *w,
                                       const float *b, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_conv_frames(svp_ops_h ops, int b, int f,
                                            int c_in, int c_out, int64_t hw,
                                            const float *x, const float *w,
                                            const float *bias, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_group_norm(svp_ops_h ops,
                                           const svp_ops_group_norm_t *p,
                                           const float *x, const float *gamma,
                                           const float *beta, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_layer_norm(svp_ops_h ops, int64_t rows,
                                           int dim, float eps, const float *x,
                                           const float *gamma,
                                           const float *beta, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_linear(svp_ops_h ops, int64_t rows, int in,
                                       int out, const float *x, const float *w,
                                       const float *b, int accumulate, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_attention(svp_ops_h ops,
                                          const svp_ops_attention_t *p,
                                          const float *q, const float *k,
                                          const float *v, float *out)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_rows(svp_ops_h ops, int64_t rows, int inner,
                                     const float *x, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_unary(svp_ops_h ops, int64_t n, const float *x,
                                      float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_binary(svp_ops_h ops, int64_t n, const float *a,
                                       const float *b, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_add_broadcast(svp_ops_h ops, int64_t outer,
                                              int64_t mid, int64_t inner,
                                              float *x, const float *v)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_blend(svp_ops_h ops, int64_t n, float alpha,
                                      const float *spatial,
                                      const float *temporal, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_timestep_embedding(svp_ops_h ops, int n,
                                                   int dim, const float *t,
                                                   float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_upsample_nearest(svp_ops_h ops, int n, int c,
                                                 int h, int w, int ho, int wo,
                                                 const float *x, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_transpose(svp_ops_h ops, int64_t a, int64_t r,
                                          int64_t s, int64_t inner,
                                          const float *x, float *y)
{
    return SVP_OK;
}

static svp_status_t svp_ops_dry_concat(svp_ops_h ops, int64_t n, int64_t ca,
                                       int64_t cb, int64_t inner,
                                       const float *a, const float *b, float *y)
{
    return SVP_OK;
}

static const svp_ops_ops_t svp_ops_dry_ops = {
    .backend            = SVP_OPS_BACKEND_DRY,
    .cleanup            = svp_ops_dry_cleanup,
    .alloc              = svp_ops_dry_alloc,
    .free               = svp_ops_dry_free,
    .upload             = svp_ops_dry_copy_in_out,
    .download           = svp_ops_dry_download,
    .conv2d             = svp_ops_dry_conv2d,
    .conv_frames        = svp_ops_dry_conv_frames,
    .group_norm         = svp_ops_dry_group_norm,
    .layer_norm         = svp_ops_dry_layer_norm,
    .linear             = svp_ops_dry_linear,
    .attention          = svp_ops_dry_attention,
    .geglu              = svp_ops_dry_rows,
    .gelu               = svp_ops_dry_unary,
    .silu               = svp_ops_dry_unary,
    .add                = svp_ops_dry_binary,
    .add_broadcast      = svp_ops_dry_add_broadcast,
    .blend              = svp_ops_dry_blend,
    .timestep_embedding = svp_ops_dry_timestep_embedding,
    .upsample_nearest   = svp_ops_dry_upsample_nearest,
    .transpose          = svp_ops_dry_transpose,
    .concat             = svp_ops_dry_concat,
    .copy               = svp_ops_dry_unary,
};

svp_status_t svp_ops_dry_init(svp_ops_h ops)
{
    svp_ops_dry_t *dry = calloc(1, sizeof(*dry));

    if (dry == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    ops->vt   = &svp_ops_dry_ops;
    ops->impl = dry;
    return SVP_OK;
}
