/*
 * Greedy-by-size placement of a pass's buffers in one slab (ops_plan.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "ops/ops_plan.h"

#include <stdlib.h>

typedef struct {
    size_t   size; /* aligned */
    uint32_t first;
    size_t   index;
} svp_ops_plan_key_t;

/* Largest first; equal sizes in the order they were allocated, so a plan
 * does not depend on qsort's tie order. */
static int svp_ops_plan_by_size(const void *a, const void *b)
{
    const svp_ops_plan_key_t *x = a, *y = b;

    if (x->size != y->size) {
        return x->size > y->size ? -1 : 1;
    }
    return (x->first > y->first) - (x->first < y->first);
}

typedef struct {
    uint32_t time;
    int      alloc;
    size_t   count;
} svp_ops_plan_event_t;

static int svp_ops_plan_by_time(const void *a, const void *b)
{
    const svp_ops_plan_event_t *x = a, *y = b;

    return (x->time > y->time) - (x->time < y->time);
}

/* The most (aligned) floats of placed buffers live at once. */
static svp_status_t svp_ops_plan_peak(svp_ops_plan_t *plan, const size_t *idx,
                                      size_t n)
{
    svp_ops_plan_event_t *ev;
    size_t                i, live = 0, peak = 0;

    ev = malloc((2 * n + 1) * sizeof(*ev));
    if (ev == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (i = 0; i < n; i++) {
        const svp_ops_plan_buf_t *b = &plan->bufs[idx[i]];

        ev[2 * i] =
            (svp_ops_plan_event_t){b->first, 1, svp_ops_plan_aligned(b->count)};
        ev[2 * i + 1] =
            (svp_ops_plan_event_t){b->last, 0, svp_ops_plan_aligned(b->count)};
    }
    /* every event of a pass has its own time: no ties to order */
    qsort(ev, 2 * n, sizeof(*ev), svp_ops_plan_by_time);
    for (i = 0; i < 2 * n; i++) {
        if (ev[i].alloc) {
            live += ev[i].count;
            if (live > peak) {
                peak = live;
            }
        } else {
            live -= ev[i].count;
        }
    }
    free(ev);
    plan->peak = peak;
    return SVP_OK;
}

svp_status_t svp_ops_plan_place(svp_ops_plan_t *plan)
{
    svp_ops_plan_key_t *keys;
    size_t             *order, *placed;
    size_t              i, k, n = 0, n_placed = 0, size = 0;
    svp_status_t        status;

    keys   = malloc((plan->n + 1) * sizeof(*keys));
    order  = malloc((plan->n + 1) * sizeof(*order));
    placed = malloc((plan->n + 1) * sizeof(*placed));
    if (keys == NULL || order == NULL || placed == NULL) {
        status = SVP_ERR_NO_MEMORY;
        goto out;
    }
    for (i = 0; i < plan->n; i++) {
        plan->bufs[i].offset = SVP_OPS_PLAN_NONE;
        if (plan->bufs[i].last != UINT32_MAX) {
            keys[n++] =
                (svp_ops_plan_key_t){svp_ops_plan_aligned(plan->bufs[i].count),
                                     plan->bufs[i].first, i};
        }
    }
    qsort(keys, n, sizeof(*keys), svp_ops_plan_by_size);
    for (k = 0; k < n; k++) {
        order[k] = keys[k].index;
    }

    /*
     * placed[] is kept sorted by offset.  For each buffer, walk it: the
     * gaps between the placed buffers alive at the same time are where it
     * may go; take the smallest gap that holds it (best fit leaves the big
     * gaps for the big buffers), else the end of the last one.
     */
    for (k = 0; k < n; k++) {
        svp_ops_plan_buf_t *b    = &plan->bufs[order[k]];
        size_t              need = svp_ops_plan_aligned(b->count);
        size_t              end = 0, best = SVP_OPS_PLAN_NONE;
        size_t              best_gap = SVP_OPS_PLAN_NONE, j, at;

        for (j = 0; j < n_placed; j++) {
            const svp_ops_plan_buf_t *p = &plan->bufs[placed[j]];
            size_t                    p_end;

            if (p->last <= b->first || b->last <= p->first) {
                continue; /* never alive together */
            }
            if (p->offset >= end && p->offset - end >= need &&
                p->offset - end < best_gap) {
                best     = end;
                best_gap = p->offset - end;
            }
            p_end = p->offset + svp_ops_plan_aligned(p->count);
            if (p_end > end) {
                end = p_end;
            }
        }
        b->offset = (best != SVP_OPS_PLAN_NONE) ? best : end;
        if (b->offset + need > size) {
            size = b->offset + need;
        }
        /* insert into placed[], by offset */
        for (at = n_placed; at > 0 && plan->bufs[placed[at - 1]].offset > b->offset;
             at--) {
            placed[at] = placed[at - 1];
        }
        placed[at] = order[k];
        n_placed++;
    }
    plan->size = size;
    status     = svp_ops_plan_peak(plan, order, n);

out:
    free(keys);
    free(order);
    free(placed);
    return status;
}
