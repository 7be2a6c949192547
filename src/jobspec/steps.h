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

/*
 * A layout: the W ranks form G = W / S groups of S contiguous ranks, each an
 * independent pipeline of S stages (S = 1: every rank runs whole samples).
 * Sample i (in the order of the job's sample list) goes to group i mod G, so
 * groups differ by at most one sample.
 */
typedef struct {
    int stages;          /* S: ranks per group */
    int groups;          /* G = W / S */
    int group;           /* this rank's group */
    int first;           /* the group's first rank */
    int stage;           /* this rank's position in its group */
    svp_step_range_t range;
    int pairs;           /* C: ranks per stage (pipeline.guidance_parallel) */
    int lane;            /* this rank's guidance half: 0 unconditioned, 1
                            conditioned (0 when C = 1) */
} svp_steps_layout_t;

/*
 * Fills *layout_p for rank of world with `stages` stages per group
 * (0: world, one pipeline).  S must divide W and T must divide by S; else
 * writes a message naming W, S, G, T and the nearest valid stage counts into
 * errbuf (when not NULL) and returns SVP_ERR_SPEC.
 */
svp_status_t svp_steps_layout(int steps, int world, int stages, int rank,
                              char *errbuf, int errlen, svp_steps_layout_t *layout_p);

/* Whether S stages per group is valid for T steps on W ranks. */
int svp_steps_layout_valid(int steps, int world, int stages);

/*
 * The same with C ranks per stage (pipeline.guidance_parallel): W = G x S x C.
 * A group is S x C contiguous ranks; the C ranks of a stage are adjacent
 * (stage s, lane c is the group's rank s * C + c), so the two halves of a
 * pair are ring neighbours of the liveness watch.  stages 0: S = W / C.
 * The error lists the valid (G, S, C).  C = 1 is svp_steps_layout().
 */
svp_status_t svp_steps_layout_pairs(int steps, int world, int stages, int pairs,
                                    int rank, char *errbuf, int errlen,
                                    svp_steps_layout_t *layout_p);

/* Writes the valid "(G, S, C)" layouts of T steps on W ranks, C <= max_pairs. */
void svp_steps_layout_list(int steps, int world, int max_pairs, char *buf, int len);

#endif
