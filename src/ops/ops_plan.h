/*
 * Offsets in one slab for a recorded sequence of buffers (private to the
 * arena in ops.c, and to its tests).
 *
 * Each buffer has a size and a lifetime [first, last): the event (alloc or
 * free, counted from the start of the pass) at which it was allocated and
 * the one at which it was freed.  Two buffers whose lifetimes intersect must
 * not share a byte of the slab; others may.  The least slab that can hold
 * them is at least the most bytes ever live at once (svp_ops_plan_t.peak);
 * finding the least is NP-hard, and the greedy rule below ("greedy by size":
 * the largest buffer first, each at the lowest offset where it fits between
 * the buffers already placed that are alive with it) is the one inference
 * runtimes use for activation arenas.  On the UNet's forward it comes within
 * a few per cent of the peak (tests/test_unet.c measures it).
 */
#ifndef SVP_OPS_OPS_PLAN_H
#define SVP_OPS_OPS_PLAN_H

#include "common/status.h"

#include <stddef.h>
#include <stdint.h>

/* Offsets and sizes are in floats, rounded up to this many (256 bytes, the
 * alignment cudaMalloc gives and vector loads expect). */
#define SVP_OPS_PLAN_ALIGN 64

/* A buffer that is not placed in the slab (it outlives its pass). */
#define SVP_OPS_PLAN_NONE SIZE_MAX

typedef struct {
    size_t   count;  /* floats asked for */
    size_t   offset; /* floats from the slab's start, or SVP_OPS_PLAN_NONE */
    uint32_t first;  /* event of the alloc */
    uint32_t last;   /* event of the free; UINT32_MAX: never freed */
} svp_ops_plan_buf_t;

typedef struct {
    svp_ops_plan_buf_t *bufs;
    size_t              n;
    size_t              size; /* floats the slab needs */
    size_t              peak; /* the most floats (aligned) live at once */
} svp_ops_plan_t;

/*
 * Sets offset of every buffer of plan that is freed (last != UINT32_MAX),
 * SVP_OPS_PLAN_NONE of the others, and plan->size and plan->peak.
 * SVP_ERR_NO_MEMORY when the work arrays cannot be allocated (the plan is
 * then left unplaced).
 */
svp_status_t svp_ops_plan_place(svp_ops_plan_t *plan);

/* count rounded up to SVP_OPS_PLAN_ALIGN. */
static inline size_t svp_ops_plan_aligned(size_t count)
{
    return (count + SVP_OPS_PLAN_ALIGN - 1) / SVP_OPS_PLAN_ALIGN *
           SVP_OPS_PLAN_ALIGN;
}

#endif
