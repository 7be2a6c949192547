/*
 * Step assignment: with T steps on W ranks, rank r runs [r*T/W, (r+1)*T/W).
 * T not divisible by W is an error that names T, W and the nearest valid step
 * counts; it is checked before anything starts.
 */
#ifndef SVP_SPEC_STEPS_H
#define SVP_SPEC_STEPS_H

#include "common/status.h"

typedef struct {
    int begin;   /* first step this rank runs */
    int end;     /* one past the last */
} svp_step_range_t;

/*
 * Fills *range_p for rank of world.  On T % W != 0 writes a message such as
 * "steps=25 is not divisible by 4 ranks: use steps=24 or steps=28" into
 * errbuf (when not NULL) and returns SVP_ERR_SPEC.
 */
svp_status_t svp_steps_assign(int steps, int world, int rank, char *errbuf,
                              int errlen, svp_step_range_t *range_p);

#endif
