/*
 * The ops arena (ops_arena.h): buffers kept for reuse outside a pass, and
 * inside one the pass's plan followed into a single slab.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_arena.h"
#include "ops/ops_backend.h"
#include "common/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
        block        = &a->blocks[a->num_blocks++];
        block->buf   = buf;
        block->count = count;
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
        return NULL; /* recorded as outliving the pass */
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
    a->live[a->num_live++] = (svp_ops_slab_use_t){b->offset, count, SIZE_MAX};
    return a->slab + b->offset;

deviate:
    svp_debug("ops: request %zu of a pass (%zu floats) is not its plan's; "
              "served outside the slab",
              a->cursor, count);
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
    a->rec[a->rec_n] =
        (svp_ops_plan_buf_t){count, SVP_OPS_PLAN_NONE, a->time++, UINT32_MAX};
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
                a->rec_n--; /* never handed out */
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
              (void *)buf);
}

/* FNV-1a of the pass's name and shape. */
static uint64_t svp_ops_pass_key(const char *name, int ndims, const int64_t *dims)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t   i, len = strlen(name);

    for (i = 0; i < len; i++) {
        h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
    }
    for (i = 0; i < (size_t)ndims * sizeof(*dims); i++) {
        h = (h ^ ((const unsigned char *)dims)[i]) * 0x100000001b3ull;
    }
    return h;
}

static svp_ops_pass_plan_t *svp_ops_arena_plan_find(svp_ops_arena_t *a, uint64_t key)
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
                 "served buffer by buffer",
                 count * sizeof(float));
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
    svp_ops_plan_t       plan = {a->rec, a->rec_n, 0, 0};
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
        a->plans     = p;
        p            = &a->plans[a->num_plans++];
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
    p->key     = a->key;
    p->used    = a->clock;
    p->plan    = plan;
    a->rec     = NULL; /* now the plan's */
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
    *stats            = ops->mem;
    stats->slab_bytes = a->slab_count * sizeof(float);
    /* the rest of what the backend gave is its own */
    stats->workspace_bytes = ops->mem.reserved_bytes - held * sizeof(float);
}

void svp_ops_mem_reset_peak(svp_ops_h ops)
{
    ops->mem.peak_live_bytes = ops->mem.live_bytes;
}

void svp_ops_arena_cleanup(svp_ops_h ops)
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
