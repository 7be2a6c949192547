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
    void  *addr;
    size_t len;
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
static svp_status_t svp_ops_dry_alloc(svp_ops_h ops, size_t count, float **buf_p)
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
    addr = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
    if (addr == MAP_FAILED) {
        svp_error("dry backend: cannot reserve %zu bytes of address space: %m", len);
        return SVP_ERR_NO_MEMORY;
    }
    dry->maps[dry->n++] = (svp_ops_dry_map_t){addr, len};
    *buf_p              = addr;
    return SVP_OK;
}

static void svp_ops_dry_free(svp_ops_h ops, float *buf)
{
    svp_ops_dry_t *dry = ops->impl;
    size_t         i;

    for (i = dry->n; i-- > 0;) {
        if (dry->maps[i].addr == (void *)buf) {
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
static svp_status_t svp_ops_dry_download(svp_ops_h ops, float *dst, const float *src,
                                         size_t count)
{
    memset(dst, 0, count * sizeof(*dst));
    return SVP_OK;
}

/* The model's ops (ops_list.h), svp_ops_dry_<name>: nothing to do.  The
 * scheduler's ops and the widening of 16-bit weights are absent: a dry
 * handle runs forwards only, with fp32 weights. */
#define SVP_OPS_DRY_OP_(_name, _out, _flops, _checks, ...) \
    static svp_status_t svp_ops_dry_##_name(SVP_OPS_PARAMS(__VA_ARGS__)) \
    { \
        return SVP_OK; \
    }
SVP_OPS_MODEL_LIST(SVP_OPS_DRY_OP_, const float *)

#define SVP_OPS_DRY_SLOT_(_name, _out, _flops, _checks, ...) \
    ._name = svp_ops_dry_##_name,

static const svp_ops_ops_t svp_ops_dry_ops = {.backend  = SVP_OPS_BACKEND_DRY,
                                              .cleanup  = svp_ops_dry_cleanup,
                                              .alloc    = svp_ops_dry_alloc,
                                              .free     = svp_ops_dry_free,
                                              .upload   = svp_ops_dry_copy_in_out,
                                              .download = svp_ops_dry_download,
                                              SVP_OPS_MODEL_LIST(SVP_OPS_DRY_SLOT_,
                                                                 const float *)};

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
