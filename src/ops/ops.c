/*
 * The backend-independent half of the op interface: handle lifecycle,
 * argument checks (once, here, so every backend sees sane shapes), dispatch.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_backend.h"
#include "ops/ops_module.h"
#include "ops/ops_gpu.h"
#include "ops/ops_weights.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The per-thread score tile cap by default: large enough that the CPU
 * backend's own tile (64 x 256 = 16K scores, src/ops/cpu/attention.c)
 * decides; tests set it small to force many partial key tiles. */
#define SVP_OPS_ATTN_MAX_SCORES_DEFAULT ((size_t)4 << 20)

#ifdef HAVE_CUDA
#define SVP_OPS_BACKENDS "cpu, cuda (module svdpipe_cuda.so)"
#else
#define SVP_OPS_BACKENDS "cpu"
#endif

/* A device backend is a module, opened here only when asked for: a CPU run
 * maps no device library.  No fallback to the CPU: a job that asked for a
 * device and gets none fails, saying what is missing. */
static svp_status_t svp_ops_module_init(const char *name, svp_ops_h ops)
{
    const svp_ops_module_t     *module;
    svp_ops_gpu_bind_t          bind;
    svp_ops_gpu_select_params_t sel;
    svp_ops_gpu_choice_t        choice;
    char                        err[512];
    svp_status_t                status;

    status = svp_ops_module_load(name, &module);
    if (status != SVP_OK) {
        return status;
    }
    svp_ops_gpu_bind_get(&bind);
    sel.visible    = getenv("CUDA_VISIBLE_DEVICES");
    sel.requested  = getenv("SVP_CUDA_DEVICE");
    sel.local_rank = bind.local_rank;
    sel.local_size = bind.local_size;
    sel.share_gpu  = bind.share_gpu;
    status = module->device_count(&sel.device_count);
    if (status == SVP_OK) {
        status = svp_ops_gpu_select(&sel, &choice, err, sizeof(err));
        if (status != SVP_OK) {
            svp_error("%s backend: %s", name, err);
            return status;
        }
        svp_info("%s backend: device %d, %s%s", name, choice.device, choice.how,
                 choice.shared ? " (shared with another rank: cluster.share_gpu)"
                               : "");
        ops->device = choice.device;
        status      = module->init(ops);
    }
    if (status == SVP_ERR_DEVICE) {
        svp_error("%s backend: no usable %s driver or device on this node "
                  "(see above)", name, name);
    }
    return status;
}

static void svp_ops_arena_cleanup(svp_ops_h ops);

static int svp_ops_default_threads(void)
{
    const char *env = getenv("SVP_THREADS");
    long        n;

    if (env != NULL && *env != '\0') {
        n = strtol(env, NULL, 10);
        if (n > 0 && n < 4096) {
            return (int)n;
        }
        svp_warn("ignoring SVP_THREADS='%s': not a positive thread count", env);
    }
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return (n > 0) ? (int)n : 1;
}

/*
 * The dtype matrix weights are held in: f32 on every backend; bf16 and f16
 * where the backend can widen them (ops_weights.c), never an f32 run that
 * claims to be something else.
 */
static svp_status_t svp_ops_check_dtype(svp_ops_h ops)
{
    if (ops->weight_dtype == SVP_DTYPE_F32 || ops->vt->widen != NULL) {
        return SVP_OK;
    }
    svp_error("ops backend '%s' cannot hold weights in %s (it holds f32 "
              "weights only): set dtype: f32", svp_ops_backend(ops),
              svp_dtype_short_name(ops->weight_dtype));
    return SVP_ERR_UNSUPPORTED;
}

static const char *const svp_ops_backend_names[] = {
    SVP_OPS_BACKEND_TABLE(SVP_OPS_BACKEND_NAME_)
};

_Static_assert(sizeof(svp_ops_backend_names) / sizeof(svp_ops_backend_names[0]) ==
               SVP_OPS_BACKEND_LAST, "one name per backend");

const char *svp_ops_backend_name(svp_ops_backend_t backend)
{
    return ((unsigned)backend < SVP_OPS_BACKEND_LAST) ? svp_ops_backend_names[backend]
                                                      : "?";
}

svp_status_t svp_ops_backend_parse(const char *name, svp_ops_backend_t *backend_p)
{
    int i;

    for (i = 0; name != NULL && i < SVP_OPS_BACKEND_LAST; ++i) {
        if (strcmp(name, svp_ops_backend_names[i]) == 0) {
            *backend_p = (svp_ops_backend_t)i;
            return SVP_OK;
        }
    }
    svp_error("ops backend '%s' is not available in this build (have: %s)",
              name ? name : "(none)", SVP_OPS_BACKENDS);
    return SVP_ERR_UNSUPPORTED;
}

svp_status_t svp_ops_create(const svp_ops_params_t *params, svp_ops_h *ops_p)
{
    svp_ops_backend_t backend = params ? params->backend : SVP_OPS_BACKEND_CPU;
    svp_dtype_t       dtype   = params ? params->dtype : SVP_DTYPE_F32;
    svp_ops_h         ops;
    svp_status_t      status;

    if (!svp_dtype_is_weight(dtype)) {
        svp_error("ops dtype %s cannot hold matrix weights (have: f32, bf16, f16)",
                  svp_dtype_short_name(dtype));
        return SVP_ERR_INVALID_PARAM;
    }
    ops = calloc(1, sizeof(*ops));
    if (ops == NULL) {
        svp_error("cannot allocate the ops handle");
        return SVP_ERR_NO_MEMORY;
    }
    ops->threads = (params && params->threads > 0) ? params->threads
                                                   : svp_ops_default_threads();
    ops->attn_max_scores = (params && params->attn_max_scores > 0)
                           ? params->attn_max_scores
                           : SVP_OPS_ATTN_MAX_SCORES_DEFAULT;
    ops->weight_dtype = dtype;

    switch (backend) {
    case SVP_OPS_BACKEND_CPU:
        status = svp_ops_cpu_init(ops);
        break;
    case SVP_OPS_BACKEND_DRY:
        status = svp_ops_dry_init(ops);
        break;
#ifdef HAVE_CUDA
    case SVP_OPS_BACKEND_CUDA:
        status = svp_ops_module_init(svp_ops_backend_name(backend), ops);
        break;
#endif
    default:
        svp_error("ops backend '%s' is not available in this build (have: %s)",
                  svp_ops_backend_name(backend), SVP_OPS_BACKENDS);
        status = SVP_ERR_UNSUPPORTED;
        break;
    }
    if (status != SVP_OK) {
        goto err_free_ops;
    }
    status = svp_ops_check_dtype(ops);
    if (status != SVP_OK) {
        ops->vt->cleanup(ops);
        goto err_free_ops;
    }
    /* 16-bit products: the backend's own (tensor cores), or the CPU's
     * twin of them for tests */
    ops->product_dtype = SVP_DTYPE_F32;
    if (ops->weight_dtype != SVP_DTYPE_F32 &&
        (ops->vt->products16 ||
         (params != NULL && params->round_activations &&
          ops->vt->host_memory))) {
        ops->product_dtype = ops->weight_dtype;
    }

    *ops_p = ops;
    return SVP_OK;

err_free_ops:
    free(ops);
    return status;
}

void svp_ops_destroy(svp_ops_h ops)
{
    if (ops == NULL) {
        return;
    }
    svp_ops_arena_cleanup(ops);
    svp_ops_weights_cleanup(ops);
    ops->vt->cleanup(ops);
    free(ops);
}

const char *svp_ops_backend(svp_ops_h ops)
{
    return svp_ops_backend_name(ops->vt->backend);
}

const char *svp_ops_dtype(svp_ops_h ops)
{
    return svp_dtype_short_name(ops->weight_dtype);
}

svp_dtype_t svp_ops_product_dtype(svp_ops_h ops)
{
    return ops->product_dtype;
}

int svp_ops_threads(svp_ops_h ops)
{
    return ops->threads;
}

/* ---- the arena ---- */

/*
 * Outside a pass only an exact size match is reused: with a sequence of
 * requests that repeats, the arena ends up holding, for each size, as many
 * buffers as were ever live at once, and the sequence finds a free one
 * every time.  A looser fit could hand a large buffer to a small request and
 * make a later large one miss.  A pass with no plan to follow takes its
 * buffers the same way and gives them back to the backend as it frees them.
 */
static svp_ops_block_t *svp_ops_arena_find_free(svp_ops_h ops, size_t count)
{
    svp_ops_arena_t *a = &ops->arena;
    size_t           i;

    /* newest first: the buffers of the current pass sit at the end */
    for (i = a->num_blocks; i-- > 0;) {
        if (!a->blocks[i].in_use && a->blocks[i].count == count) {
            return &a->blocks[i];
        }
    }
    return NULL;
}

static svp_status_t svp_ops_arena_block(svp_ops_h ops, size_t count,
                                        svp_ops_block_t **block_p)
{
    svp_ops_arena_t *a = &ops->arena;
    svp_ops_block_t *block;
    svp_status_t     status;
    size_t           max;
    float           *buf;

    block = svp_ops_arena_find_free(ops, count);
    if (block == NULL) {
        if (a->num_blocks == a->max_blocks) {
            max   = a->max_blocks ? 2 * a->max_blocks : 256;
            block = realloc(a->blocks, max * sizeof(*block));
            if (block == NULL) {
                svp_error("cannot grow the ops arena to %zu buffers", max);
                return SVP_ERR_NO_MEMORY;
            }
            a->blocks     = block;
            a->max_blocks = max;
        }
        status = ops->vt->alloc(ops, count, &buf);
        if (status != SVP_OK) {
            return status;
        }
        ops->mem.backend_allocs++;
        ops->mem.reserved_bytes += count * sizeof(float);
        block           = &a->blocks[a->num_blocks++];
        block->buf      = buf;
        block->count    = count;
        /* a buffer kept from outside a pass stays kept */
        block->pass_buf = (a->depth > 0);
    }
    block->in_use = 1;
    block->rec    = SIZE_MAX;
    *block_p      = block;
    return SVP_OK;
}

/* Whether [offset, offset + count) meets a slab buffer in use. */
static int svp_ops_arena_slab_busy(const svp_ops_arena_t *a, size_t offset,
                                   size_t count)
{
    size_t i;

    for (i = 0; i < a->num_live; i++) {
        if (a->live[i].offset < offset + count &&
            offset < a->live[i].offset + a->live[i].count) {
            return 1;
        }
    }
    return 0;
}

/*
 * The slab buffer for the pass's next request, or NULL when the pass has
 * left (or now leaves) its plan.  The plan is followed only while the
 * request is the recorded one and its place is free: a pass whose frees
 * come in another order than the recording's could otherwise get a place
 * that is still in use.
 */
static float *svp_ops_arena_from_slab(svp_ops_h ops, size_t count)
{
    svp_ops_arena_t          *a = &ops->arena;
    const svp_ops_plan_buf_t *b;
    svp_ops_slab_use_t       *live;
    size_t                    max;

    if (a->replay == NULL || a->deviated || count == 0) {
        return NULL;
    }
    if (a->cursor >= a->replay->plan.n) {
        goto deviate;
    }
    b = &a->replay->plan.bufs[a->cursor];
    if (b->count != count) {
        goto deviate;
    }
    if (b->offset == SVP_OPS_PLAN_NONE) {
        return NULL;                    /* recorded as outliving the pass */
    }
    if (b->offset + count > a->slab_count ||
        svp_ops_arena_slab_busy(a, b->offset, count)) {
        goto deviate;
    }
    if (a->num_live == a->max_live) {
        max  = a->max_live ? 2 * a->max_live : 64;
        live = realloc(a->live, max * sizeof(*live));
        if (live == NULL) {
            goto deviate;
        }
        a->live     = live;
        a->max_live = max;
    }
    a->live[a->num_live++] = (svp_ops_slab_use_t){ b->offset, count,
                                                   SIZE_MAX };
    return a->slab + b->offset;

deviate:
    svp_debug("ops: request %zu of a pass (%zu floats) is not its plan's; "
              "served outside the slab", a->cursor, count);
    a->deviated = 1;
    return NULL;
}

/* Appends the request to the pass's record; SIZE_MAX when it cannot. */
static size_t svp_ops_arena_record(svp_ops_arena_t *a, size_t count)
{
    svp_ops_plan_buf_t *rec;
    size_t              max;

    if (a->rec_n == a->rec_max) {
        max = a->rec_max ? 2 * a->rec_max : 256;
        rec = realloc(a->rec, max * sizeof(*rec));
        if (rec == NULL) {
            return SIZE_MAX;
        }
        a->rec     = rec;
        a->rec_max = max;
    }
    a->rec[a->rec_n] = (svp_ops_plan_buf_t){ count, SVP_OPS_PLAN_NONE,
                                             a->time++, UINT32_MAX };
    return a->rec_n++;
}

svp_status_t svp_ops_alloc(svp_ops_h ops, size_t count, float **buf_p)
{
    svp_ops_arena_t *a = &ops->arena;
    svp_ops_block_t *block;
    svp_status_t     status;
    size_t           rec = SIZE_MAX;
    float           *buf;

    if (a->depth > 0) {
        rec = svp_ops_arena_record(a, count);
    }
    buf = (a->depth > 0) ? svp_ops_arena_from_slab(ops, count) : NULL;
    if (buf != NULL) {
        a->live[a->num_live - 1].rec = rec;
    } else {
        status = svp_ops_arena_block(ops, count, &block);
        if (status != SVP_OK) {
            if (rec != SIZE_MAX) {
                a->rec_n--;             /* never handed out */
            }
            return status;
        }
        block->rec = rec;
        buf        = block->buf;
    }
    if (a->depth > 0) {
        a->cursor++;
    }
    ops->mem.live_bytes += count * sizeof(float);
    if (ops->mem.live_bytes > ops->mem.peak_live_bytes) {
        ops->mem.peak_live_bytes = ops->mem.live_bytes;
    }
    *buf_p = buf;
    return SVP_OK;
}

static void svp_ops_arena_freed(svp_ops_h ops, size_t rec, size_t count)
{
    svp_ops_arena_t *a = &ops->arena;

    if (rec != SIZE_MAX) {
        a->rec[rec].last = a->time++;
    }
    ops->mem.live_bytes -= count * sizeof(float);
}

void svp_ops_free(svp_ops_h ops, float *buf)
{
    svp_ops_arena_t *a = &ops->arena;
    size_t           i;

    if (buf == NULL) {
        return;
    }
    if (a->slab != NULL && buf >= a->slab && buf < a->slab + a->slab_count) {
        for (i = a->num_live; i-- > 0;) {
            if (a->slab + a->live[i].offset == buf) {
                svp_ops_arena_freed(ops, a->live[i].rec, a->live[i].count);
                a->live[i] = a->live[--a->num_live];
                return;
            }
        }
    } else {
        for (i = a->num_blocks; i-- > 0;) {
            svp_ops_block_t *b = &a->blocks[i];

            if (b->buf == buf && b->in_use) {
                b->in_use = 0;
                svp_ops_arena_freed(ops, b->rec, b->count);
                b->rec = SIZE_MAX;
                /*
                 * Taken by a pass outside the slab (a recording, or a pass
                 * that left its plan): back to the backend at once, so
                 * that a recording holds no more than it has in use, the
                 * least the device can do with before there is a plan.
                 */
                if (b->pass_buf && a->depth > 0) {
                    ops->vt->free(ops, b->buf);
                    ops->mem.reserved_bytes -= b->count * sizeof(float);
                    *b = a->blocks[--a->num_blocks];
                }
                return;
            }
        }
    }
    svp_error("ops: freeing %p, which is not a live buffer of this handle",
              (void*)buf);
}

/* FNV-1a of the pass's name and shape. */
static uint64_t svp_ops_pass_key(const char *name, int ndims,
                                 const int64_t *dims)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t   i, len = strlen(name);

    for (i = 0; i < len; i++) {
        h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
    }
    for (i = 0; i < (size_t)ndims * sizeof(*dims); i++) {
        h = (h ^ ((const unsigned char*)dims)[i]) * 0x100000001b3ull;
    }
    return h;
}

static svp_ops_pass_plan_t *svp_ops_arena_plan_find(svp_ops_arena_t *a,
                                                    uint64_t key)
{
    size_t i;

    for (i = 0; i < a->num_plans; i++) {
        if (a->plans[i].key == key) {
            return &a->plans[i];
        }
    }
    return NULL;
}

static void svp_ops_arena_slab_release(svp_ops_h ops)
{
    svp_ops_arena_t *a = &ops->arena;

    if (a->slab != NULL && a->num_live == 0) {
        ops->vt->free(ops, a->slab);
        ops->mem.reserved_bytes -= a->slab_count * sizeof(float);
        a->slab       = NULL;
        a->slab_count = 0;
    }
}

/*
 * Makes the slab hold the largest plan: one backend allocation, replacing a
 * smaller slab, when no slab buffer is in use (one that outlived its pass
 * keeps the old slab until it is freed; plans too large wait till then).
 */
static void svp_ops_arena_slab_fit(svp_ops_h ops)
{
    svp_ops_arena_t *a = &ops->arena;
    size_t           i, count = 0;
    float           *slab;

    for (i = 0; i < a->num_plans; i++) {
        if (a->plans[i].plan.size > count) {
            count = a->plans[i].plan.size;
        }
    }
    if (count <= a->slab_count || a->num_live > 0) {
        return;
    }
    svp_ops_arena_slab_release(ops);
    if (ops->vt->alloc(ops, count, &slab) != SVP_OK) {
        svp_warn("ops: no slab of %zu bytes for the memory plan; passes are "
                 "served buffer by buffer", count * sizeof(float));
        return;
    }
    ops->mem.backend_allocs++;
    ops->mem.reserved_bytes += count * sizeof(float);
    a->slab       = slab;
    a->slab_count = count;
}

/* Keeps the pass's record as the plan of its kind, evicting the kind least
 * recently run when the table is full. */
#define SVP_OPS_ARENA_MAX_PLANS 16

static void svp_ops_arena_plan_store(svp_ops_h ops)
{
    svp_ops_arena_t     *a = &ops->arena;
    svp_ops_pass_plan_t *p;
    svp_ops_plan_t       plan = { a->rec, a->rec_n, 0, 0 };
    size_t               i;

    if (svp_ops_plan_place(&plan) != SVP_OK) {
        return;
    }
    p = svp_ops_arena_plan_find(a, a->key);
    if (p == NULL && a->num_plans < SVP_OPS_ARENA_MAX_PLANS) {
        p = realloc(a->plans, (a->num_plans + 1) * sizeof(*p));
        if (p == NULL) {
            return;
        }
        a->plans = p;
        p        = &a->plans[a->num_plans++];
        p->plan.bufs = NULL;
    } else if (p == NULL) {
        p = &a->plans[0];
        for (i = 1; i < a->num_plans; i++) {
            if (a->plans[i].used < p->used) {
                p = &a->plans[i];
            }
        }
    }
    free(p->plan.bufs);
    p->key   = a->key;
    p->used  = a->clock;
    p->plan  = plan;
    a->rec     = NULL;               /* now the plan's */
    a->rec_max = 0;
    svp_debug("ops: a pass of %zu buffers planned in %zu bytes (peak %zu live)",
              plan.n, plan.size * sizeof(float), plan.peak * sizeof(float));
    svp_ops_arena_slab_fit(ops);
    if (plan.peak * sizeof(float) > ops->mem.pass_peak_bytes) {
        ops->mem.pass_peak_bytes = plan.peak * sizeof(float);
    }
}

void svp_ops_pass_begin(svp_ops_h ops, const char *name, int ndims,
                        const int64_t *dims)
{
    svp_ops_arena_t *a = &ops->arena;

    if (a->depth++ > 0) {
        return;
    }
    a->key      = svp_ops_pass_key(name, ndims, dims);
    a->replay   = svp_ops_arena_plan_find(a, a->key);
    a->deviated = 0;
    a->cursor   = 0;
    a->rec_n    = 0;
    a->time     = 0;
    a->clock++;
    if (a->replay != NULL) {
        a->replay->used = a->clock;
        svp_ops_arena_slab_fit(ops);
    } else {
        /* a recording: the idle slab goes back while it runs, so the
         * device never holds both (it is made again, large enough for
         * every plan, at the end) */
        svp_ops_arena_slab_release(ops);
    }
}

void svp_ops_pass_end(svp_ops_h ops)
{
    svp_ops_arena_t *a = &ops->arena;
    size_t           i, kept = 0;

    if (a->depth == 0) {
        svp_error("ops: a pass ends that has not begun");
        return;
    }
    if (--a->depth > 0) {
        return;
    }
    /* a request the record missed (no memory) makes it no plan */
    if ((a->replay == NULL || a->deviated || a->cursor != a->replay->plan.n) &&
        a->rec_n == a->cursor) {
        svp_ops_arena_plan_store(ops);
    }
    /*
     * What the pass took outside the slab went back as it was freed; what
     * is still in use outlives the pass: it stops being recorded, and is
     * kept for reuse when freed, so that the next pass of the kind finds
     * it without asking the backend.
     */
    for (i = 0; i < a->num_blocks; i++) {
        svp_ops_block_t *b = &a->blocks[i];

        b->rec = SIZE_MAX;
        if (b->pass_buf && !b->in_use) {
            ops->vt->free(ops, b->buf);
            ops->mem.reserved_bytes -= b->count * sizeof(float);
            continue;
        }
        b->pass_buf       = 0;
        a->blocks[kept++] = *b;
    }
    a->num_blocks = kept;
    for (i = 0; i < a->num_live; i++) {
        a->live[i].rec = SIZE_MAX;
    }
    a->replay = NULL;
}

void svp_ops_mem_stats(svp_ops_h ops, svp_ops_mem_stats_t *stats)
{
    const svp_ops_arena_t *a = &ops->arena;
    size_t                 i, held = a->slab_count;

    for (i = 0; i < a->num_blocks; i++) {
        held += a->blocks[i].count;
    }
    *stats                 = ops->mem;
    stats->slab_bytes      = a->slab_count * sizeof(float);
    /* the rest of what the backend gave is its own */
    stats->workspace_bytes = ops->mem.reserved_bytes - held * sizeof(float);
}

void svp_ops_mem_reset_peak(svp_ops_h ops)
{
    ops->mem.peak_live_bytes = ops->mem.live_bytes;
}

/* Everything the arena holds goes back to the backend. */
static void svp_ops_arena_cleanup(svp_ops_h ops)
{
    svp_ops_arena_t *a = &ops->arena;
    size_t           i, leaked = a->num_live;

    for (i = 0; i < a->num_blocks; i++) {
        leaked += a->blocks[i].in_use;
        ops->vt->free(ops, a->blocks[i].buf);
    }
    if (leaked > 0) {
        svp_debug("ops: %zu buffer(s) still in use at destroy, released", leaked);
    }
    if (a->slab != NULL) {
        ops->vt->free(ops, a->slab);
    }
    for (i = 0; i < a->num_plans; i++) {
        free(a->plans[i].plan.bufs);
    }
    free(a->plans);
    free(a->rec);
    free(a->live);
    free(a->blocks);
}

svp_status_t svp_ops_upload(svp_ops_h ops, float *dst, const float *host_src,
                            size_t count)
{
    return ops->vt->upload(ops, dst, host_src, count);
}

svp_status_t svp_ops_download(svp_ops_h ops, float *host_dst, const float *src,
                              size_t count)
{
    return ops->vt->download(ops, host_dst, src, count);
}

svp_status_t svp_ops_conv2d(svp_ops_h ops, const svp_ops_conv2d_t *p,
                            const float *x, const void *weight,
                            const float *bias, float *y)
{
    const float *w;
    svp_status_t status;

    SVP_OPS_CHECK(p->n > 0 && p->c_in > 0 && p->h > 0 && p->w > 0);
    SVP_OPS_CHECK(p->c_out > 0 && p->kh > 0 && p->kw > 0);
    SVP_OPS_CHECK(p->stride > 0 && p->pad >= 0);
    SVP_OPS_CHECK(svp_ops_conv2d_out_h(p) > 0 && svp_ops_conv2d_out_w(p) > 0);
    status = svp_ops_weights_f32(ops, weight,
                                 (size_t)p->c_out * p->c_in * p->kh * p->kw, &w);
    if (status == SVP_OK) {
        status = svp_ops_weights_operand(ops, x, (size_t)p->n * p->c_in *
                                                 p->h * p->w, &x);
    }
    if (status != SVP_OK) {
        return status;
    }
    return ops->vt->conv2d(ops, p, x, w, bias, y);
}

svp_status_t svp_ops_conv_frames(svp_ops_h ops, int b, int f, int c_in,
                                 int c_out, int64_t hw, const float *x,
                                 const void *weight, const float *bias,
                                 float *y)
{
    const float *w;
    svp_status_t status;

    SVP_OPS_CHECK(b > 0 && f > 0 && c_in > 0 && c_out > 0 && hw > 0);
    SVP_OPS_CHECK(x != y);
    status = svp_ops_weights_f32(ops, weight, (size_t)c_out * c_in * 3, &w);
    if (status == SVP_OK) {
        status = svp_ops_weights_operand(ops, x, (size_t)b * f * c_in * hw,
                                         &x);
    }
    if (status != SVP_OK) {
        return status;
    }
    return ops->vt->conv_frames(ops, b, f, c_in, c_out, hw, x, w, bias, y);
}

svp_status_t svp_ops_group_norm(svp_ops_h ops, const svp_ops_group_norm_t *p,
                                const float *x, const float *gamma,
                                const float *beta, float *y)
{
    SVP_OPS_CHECK(p->n > 0 && p->frames > 0 && p->c > 0 && p->spatial > 0);
    SVP_OPS_CHECK(p->groups > 0 && p->c % p->groups == 0 && p->eps > 0);
    return ops->vt->group_norm(ops, p, x, gamma, beta, y);
}

svp_status_t svp_ops_layer_norm(svp_ops_h ops, int64_t rows, int dim,
                                float eps, const float *x, const float *gamma,
                                const float *beta, float *y)
{
    SVP_OPS_CHECK(rows > 0 && dim > 0 && eps > 0);
    return ops->vt->layer_norm(ops, rows, dim, eps, x, gamma, beta, y);
}

svp_status_t svp_ops_linear(svp_ops_h ops, int64_t rows, int in, int out,
                            const float *x, const void *weight,
                            const float *bias, int accumulate, float *y)
{
    const float *w;
    svp_status_t status;

    SVP_OPS_CHECK(rows > 0 && in > 0 && out > 0 && x != y);
    status = svp_ops_weights_f32(ops, weight, (size_t)in * out, &w);
    if (status == SVP_OK) {
        status = svp_ops_weights_operand(ops, x, (size_t)rows * in, &x);
    }
    if (status != SVP_OK) {
        return status;
    }
    return ops->vt->linear(ops, rows, in, out, x, w, bias, accumulate, y);
}

svp_status_t svp_ops_attention(svp_ops_h ops, const svp_ops_attention_t *p,
                               const float *q, const float *k, const float *v,
                               float *out)
{
    int64_t width = (int64_t)p->heads * p->head_dim;

    SVP_OPS_CHECK(p->batch > 0 && p->heads > 0 && p->head_dim > 0);
    SVP_OPS_CHECK(p->q_len > 0 && p->kv_len > 0);
    SVP_OPS_CHECK(p->kv_batch_div > 0 && p->batch % p->kv_batch_div == 0);
    SVP_OPS_CHECK(p->q_stride >= width && p->k_stride >= width &&
                  p->v_stride >= width && p->out_stride >= width);
    return ops->vt->attention(ops, p, q, k, v, out);
}

svp_status_t svp_ops_geglu(svp_ops_h ops, int64_t rows, int inner,
                           const float *x, float *y)
{
    SVP_OPS_CHECK(rows > 0 && inner > 0 && x != y);
    return ops->vt->geglu(ops, rows, inner, x, y);
}

svp_status_t svp_ops_gelu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    SVP_OPS_CHECK(n > 0);
    return ops->vt->gelu(ops, n, x, y);
}

svp_status_t svp_ops_silu(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    SVP_OPS_CHECK(n > 0);
    return ops->vt->silu(ops, n, x, y);
}

svp_status_t svp_ops_add(svp_ops_h ops, int64_t n, const float *a,
                         const float *b, float *y)
{
    SVP_OPS_CHECK(n > 0);
    return ops->vt->add(ops, n, a, b, y);
}

svp_status_t svp_ops_mul(svp_ops_h ops, int64_t n, const float *a,
                         const float *b, float *y)
{
    SVP_OPS_CHECK(n > 0);
    return ops->vt->mul(ops, n, a, b, y);
}

svp_status_t svp_ops_add_broadcast(svp_ops_h ops, int64_t outer, int64_t mid,
                                   int64_t inner, float *x, const float *v)
{
    SVP_OPS_CHECK(outer > 0 && mid > 0 && inner > 0);
    return ops->vt->add_broadcast(ops, outer, mid, inner, x, v);
}

svp_status_t svp_ops_blend(svp_ops_h ops, int64_t n, float alpha,
                           const float *spatial, const float *temporal,
                           float *y)
{
    SVP_OPS_CHECK(n > 0);
    return ops->vt->blend(ops, n, alpha, spatial, temporal, y);
}

svp_status_t svp_ops_timestep_embedding(svp_ops_h ops, int n, int dim,
                                        const float *t, float *y)
{
    SVP_OPS_CHECK(n > 0 && dim > 0 && dim % 2 == 0);
    return ops->vt->timestep_embedding(ops, n, dim, t, y);
}

svp_status_t svp_ops_upsample_nearest(svp_ops_h ops, int n, int c, int h,
                                      int w, int ho, int wo, const float *x,
                                      float *y)
{
    SVP_OPS_CHECK(n > 0 && c > 0 && h > 0 && w > 0 && ho > 0 && wo > 0);
    SVP_OPS_CHECK(x != y);
    return ops->vt->upsample_nearest(ops, n, c, h, w, ho, wo, x, y);
}

svp_status_t svp_ops_transpose(svp_ops_h ops, int64_t a, int64_t r, int64_t s,
                               int64_t inner, const float *x, float *y)
{
    SVP_OPS_CHECK(a > 0 && r > 0 && s > 0 && inner > 0 && x != y);
    return ops->vt->transpose(ops, a, r, s, inner, x, y);
}

svp_status_t svp_ops_concat(svp_ops_h ops, int64_t n, int64_t ca, int64_t cb,
                            int64_t inner, const float *a, const float *b,
                            float *y)
{
    SVP_OPS_CHECK(n > 0 && ca > 0 && cb > 0 && inner > 0);
    SVP_OPS_CHECK(y != a && y != b);
    return ops->vt->concat(ops, n, ca, cb, inner, a, b, y);
}

svp_status_t svp_ops_copy(svp_ops_h ops, int64_t n, const float *x, float *y)
{
    SVP_OPS_CHECK(n > 0);
    return ops->vt->copy(ops, n, x, y);
}
