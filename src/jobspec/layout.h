/*
 * The job's layout, the one place it is decided: W ranks form G groups
 * (pipelines) of S positions (stages) of C lanes (guidance halves),
 * W = G x S x C, and each position runs k = T / S of the T steps.
 *
 * Everything else asks this object: the rank of (group, position, lane)
 * and back, the steps a position runs, how the job's samples are dealt to
 * the groups, which position encodes and which finishes a sample
 * (pipeline.placement), and so which rank writes sample k.  The worker,
 * the schedule, resume, the deadlines, the planner and the log lines take
 * it; no other file writes these formulas.
 */
#ifndef SVP_JOBSPEC_LAYOUT_H
#define SVP_JOBSPEC_LAYOUT_H

#include "common/status.h"
#include "jobspec/spec.h"

typedef struct {
    int begin; /* first step this rank runs */
    int end;   /* one past the last */
} svp_step_range_t;

typedef struct {
    int             world;     /* W = G x S x C ranks */
    int             groups;    /* G pipelines */
    int             stages;    /* S positions per pipeline */
    int             pairs;     /* C ranks per position: 1, or 2 with
                                    pipeline.guidance_parallel */
    int             steps;     /* T */
    int             k;         /* T / S: the steps each position runs */
    svp_placement_t placement; /* who encodes and finishes a sample */
} svp_layout_t;

/* Where a rank stands in the layout. */
typedef struct {
    int group;    /* its pipeline, 0 .. G-1 */
    int position; /* its stage in the pipeline, 0 .. S-1 */
    int lane;     /* its guidance half: 0 unconditioned, 1 conditioned */
} svp_layout_place_t;

/* What svp_layout_place() is asked for. */
typedef enum { SVP_LAYOUT_ENCODES, SVP_LAYOUT_FINISHES } svp_layout_end_t;

/*
 * Makes the layout of T steps on W ranks with S stages per pipeline (0: one
 * pipeline of W / C stages) and C ranks per stage (1 or 2).  S must divide
 * W / C and T must divide by S; else writes a message naming W, S, G, T (and
 * C) and the valid layouts into errbuf (when not NULL) and returns
 * SVP_ERR_SPEC.  stages < 0 (auto) is the launcher's to resolve: an error.
 */
svp_status_t svp_layout_make(int steps, int world, int stages, int pairs,
                             svp_placement_t placement, char *errbuf, int errlen,
                             svp_layout_t *layout_p);

/* The layout the spec asks for on W ranks (steps, pipeline.stages,
 * pipeline.guidance_parallel, pipeline.placement). */
svp_status_t svp_layout_of_spec(const svp_spec_t *spec, int world, char *errbuf,
                                int errlen, svp_layout_t *layout_p);

/* The world the spec's cluster section asks for: nodes x ranks_per_node
 * (at least 1). */
int svp_layout_spec_world(const svp_spec_t *spec);

/* Whether S stages per pipeline is valid for T steps on W ranks (C = 1). */
int svp_layout_valid(int steps, int world, int stages);

/* Writes the valid "(G, S, C)" layouts of T steps on W ranks, C <= max_pairs. */
void svp_layout_list(int steps, int world, int max_pairs, char *buf, int len);

/* The rank at (group, position, lane): the C ranks of a position are
 * adjacent, the S x C ranks of a pipeline contiguous. */
static inline int svp_layout_rank(const svp_layout_t *l, int group, int position,
                                  int lane)
{
    return (group * l->stages + position) * l->pairs + lane;
}

/* Where rank stands. */
static inline svp_layout_place_t svp_layout_where(const svp_layout_t *l, int rank)
{
    svp_layout_place_t at;

    at.lane     = rank % l->pairs;
    at.position = (rank / l->pairs) % l->stages;
    at.group    = rank / (l->pairs * l->stages);
    return at;
}

/* The steps position runs: [position x k, (position + 1) x k). */
static inline svp_step_range_t svp_layout_range(const svp_layout_t *l, int position)
{
    svp_step_range_t r;

    r.begin = position * l->k;
    r.end   = (position + 1) * l->k;
    return r;
}

/*
 * The dealing rule: the k-th sample of the samples a job runs (in order,
 * after its shard and resume) goes to group k mod G, as that group's sample
 * k div G.
 */
static inline void svp_layout_deal(const svp_layout_t *l, int k, int *group_p,
                                   int *j_p)
{
    *group_p = k % l->groups;
    *j_p     = k / l->groups;
}

/* How many of n samples the dealing gives group g. */
static inline int svp_layout_group_samples(const svp_layout_t *l, int n, int g)
{
    return (n > g) ? (n - g + l->groups - 1) / l->groups : 0;
}

/*
 * The placement rule: the position of its group that encodes (begin) or
 * finishes (decode, outputs) the group's sample j, in a group of S stages
 * (the schedule asks it with a group's own placement and S).  ends: position 0
 * encodes, S-1 finishes; spread: position j mod S does both.
 */
int svp_layout_place_of(svp_placement_t placement, int stages, int j,
                        svp_layout_end_t end);

static inline int svp_layout_place(const svp_layout_t *l, int j,
                                   svp_layout_end_t end)
{
    return svp_layout_place_of(l->placement, l->stages, j, end);
}

/*
 * Which rank finishes (decodes, writes the outputs of) the k-th sample the
 * job runs: its group's finishing position, lane 0.  The one answer to "who
 * writes sample k"; the executor's FINISH actions agree with it
 * (tests/test_schedule.c walks the layouts).
 */
int svp_layout_owner(const svp_layout_t *l, int k);

/*
 * Rank r's steps when each of W ranks runs T / W of them (one pipeline of W
 * stages).  On T % W != 0 writes a message such as "steps=25 is not
 * divisible by 4 ranks: use steps=24 or steps=28" into errbuf (when not
 * NULL) and returns SVP_ERR_SPEC.
 */
svp_status_t svp_layout_assign(int steps, int world, int rank, char *errbuf,
                               int errlen, svp_step_range_t *range_p);

#endif
