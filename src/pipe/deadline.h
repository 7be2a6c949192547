/*
 * How long a rank may wait for an input: comm.deadline counted from when the
 * input is due, not from when the wait began.
 *
 * Rank r of a chain of W ranks with k steps each legitimately waits about
 * r * k * t for its first input (the pipeline fill: the sample has to cross
 * ranks 0..r-1 first), then about one upstream stage, k * t, for each later
 * one.  The deadline is added on top of that expected wait, so a healthy job
 * with long steps and a short deadline is not taken for a broken one, while
 * a stall is still named comm.deadline seconds after the input was due.
 *
 * The step time t is the mean of the steps this rank has measured (all ranks
 * run the same model); before the first measurement, the stage's estimate
 * (the planner's figure: exact for the simulator's sleep cost) or, without
 * one, SVP_PIPE_STEP_BOUND_S.  Either is doubled: steps on a shared node
 * vary, and a factor of two still leaves a stall caught within a few stages.
 */
#ifndef SVP_PIPE_DEADLINE_H
#define SVP_PIPE_DEADLINE_H

#include "jobspec/layout.h"
#include "jobspec/spec.h"

/* Seconds per step assumed before any step is measured, when the stage has
 * no estimate: an SVD-XT step at 1024x576 is 1-5 s on current GPUs. */
#define SVP_PIPE_STEP_BOUND_S 60.0

typedef struct {
    double deadline;       /* comm.deadline, seconds */
    int    steps_per_rank; /* k */
    double step_est_s;     /* estimate before any measurement; 0: none */
    double encode_est_s;   /* encode time before the first sample (fill) */
    double step_sum_s;     /* steps measured on this rank so far ... */
    int    step_count;     /* ... and how many */
} svp_pipe_deadline_t;

/* Fills d from the spec (estimates for the simulator's sleep cost) and the
 * layout (k, the steps of one stage). */
void svp_pipe_deadline_init(svp_pipe_deadline_t *d, const svp_spec_t *spec,
                            const svp_layout_t *layout);

/* Records one measured step. */
void svp_pipe_deadline_step(svp_pipe_deadline_t *d, double seconds);

/*
 * The timeout for a wait whose input needs `stages` more upstream stages of
 * k steps before it is due (r for rank r's first input, 1 afterwards), plus
 * the encode when `first` (nothing has been encoded yet).
 */
double svp_pipe_deadline_wait(const svp_pipe_deadline_t *d, int stages, int first);

#endif
