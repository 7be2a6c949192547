/*
 * Fill-aware receive deadlines (see deadline.h).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/deadline.h"

#include <string.h>

/* Headroom on the expected wait: steps on a shared node vary. */
#define SVP_PIPE_DEADLINE_SLACK 2.0

void svp_pipe_deadline_init(svp_pipe_deadline_t *d, const svp_spec_t *spec,
                            const svp_layout_t *layout)
{
    memset(d, 0, sizeof(*d));
    d->deadline       = spec->comm.deadline;
    d->steps_per_rank = layout->k;
    if (spec->model.kind == SVP_MODEL_DUMMY &&
        spec->model.dummy.cost == SVP_DUMMY_COST_SLEEP) {
        d->step_est_s   = spec->model.dummy.step_ms * 1e-3;
        d->encode_est_s = spec->model.dummy.encode_ms * 1e-3;
    }
}

void svp_pipe_deadline_step(svp_pipe_deadline_t *d, double seconds)
{
    d->step_sum_s += seconds;
    d->step_count++;
}

double svp_pipe_deadline_wait(const svp_pipe_deadline_t *d, int stages, int first)
{
    double t, encode;

    if (d->step_count > 0) {
        t = d->step_sum_s / d->step_count;
    } else if (d->step_est_s > 0) {
        t = d->step_est_s;
    } else {
        t = SVP_PIPE_STEP_BOUND_S;
    }
    /* an encode is about as long as a few steps when no figure says */
    encode = !first                                     ? 0
             : (d->encode_est_s > 0)                    ? d->encode_est_s
             : (d->step_est_s > 0 || d->step_count > 0) ? 0
                                                        : t;
    if (stages < 0) {
        stages = 0;
    }
    return d->deadline +
           SVP_PIPE_DEADLINE_SLACK * (stages * d->steps_per_rank * t + encode);
}
