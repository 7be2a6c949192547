/*
 * The ops arena: where the buffers of svp_ops_alloc() come from, and the
 * plans of passes (svp_ops_pass_begin()) that let a repeated forward take
 * all of its buffers from one slab.  Its state lives in the ops handle;
 * backends see none of it: they only allocate and free (ops_backend.h).
 */
#ifndef SVP_OPS_OPS_ARENA_H
#define SVP_OPS_OPS_ARENA_H

#include "ops/ops.h"
#include "ops/ops_plan.h"

#include <stddef.h>
#include <stdint.h>

/* One buffer of the arena outside the slab: a backend allocation, in use
 * or free. */
typedef struct {
    float *buf;
    size_t count;
    int    in_use;
    int    pass_buf; /* taken by a pass: given back when a pass frees it */
    size_t rec;      /* its record in the current pass, or SIZE_MAX */
} svp_ops_block_t;

/* A buffer handed out from the slab: where, and its record in the pass. */
typedef struct {
    size_t offset, count;
    size_t rec;
} svp_ops_slab_use_t;

/* The plan of one kind of pass (a model's forward at one shape). */
typedef struct {
    uint64_t       key;
    uint64_t       used; /* when last begun, to evict the oldest */
    svp_ops_plan_t plan;
} svp_ops_pass_plan_t;

/*
 * The arena.  Outside a pass, a freed buffer is kept and reused
 * for a request of exactly its size.  Inside one, requests follow the
 * pass's plan into the slab; the pass's own sequence is recorded, so a
 * pass with no plan yet, or one that left its plan, leaves a new plan.
 */
typedef struct {
    svp_ops_block_t *blocks;
    size_t           num_blocks;
    size_t           max_blocks;

    float              *slab;
    size_t              slab_count;
    svp_ops_slab_use_t *live; /* slab buffers in use */
    size_t              num_live, max_live;

    svp_ops_pass_plan_t *plans;
    size_t               num_plans;
    uint64_t             clock; /* passes begun */

    int                  depth; /* nested begins; 0: no pass */
    uint64_t             key;
    svp_ops_pass_plan_t *replay;   /* the plan followed, NULL: none */
    int                  deviated; /* the pass left its plan */
    size_t               cursor;   /* requests of the pass so far */
    svp_ops_plan_buf_t  *rec;      /* the pass as it happens */
    size_t               rec_n, rec_max;
    uint32_t             time; /* events of the pass so far */
} svp_ops_arena_t;

/*
 * Everything the arena holds goes back to the backend; svp_ops_destroy()
 * calls it before the backend's own cleanup.
 */
void svp_ops_arena_cleanup(svp_ops_h ops);

#endif
