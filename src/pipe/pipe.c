#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "pipe/pipe.h"
#include "spec/steps.h"
#include "common/clock.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

void svp_sample_cleanup(svp_sample_t *sample)
{
    int i;

    for (i = 0; i < sample->ntensors; ++i) {
        svp_tensor_destroy(sample->tensors[i]);
        sample->tensors[i] = NULL;
    }
    sample->ntensors = 0;
}

typedef struct {
    const svp_pipe_params_t *params;
    svp_step_range_t         range;
    svp_pipe_stats_t         stats;
    double                   t_start;
} svp_pipe_t;

static svp_status_t svp_pipe_steps(svp_pipe_t *p, svp_sample_t *s)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_status_t       status;
    double             t0;
    int                step;

    if (s->next_step != p->range.begin) {
        svp_error("sample %d arrived at step %d, this rank runs [%d, %d)", s->index,
                  s->next_step, p->range.begin, p->range.end);
        return SVP_ERR_MESSAGE;
    }
    for (step = p->range.begin; step < p->range.end; ++step) {
        t0     = svp_clock_now();
        status = stage->ops->step(stage->self, s, step);
        if (status != SVP_OK) {
            svp_error("sample %d step %d failed: %s", s->index, step,
                      svp_status_string(status));
            return status;
        }
        p->stats.busy += svp_clock_now() - t0;
        p->stats.steps_done++;
        s->next_step = step + 1;
        svp_debug("sample %d step %d/%d %.1f ms", s->index, step + 1,
                  p->params->spec->steps, (svp_clock_now() - t0) * 1e3);
    }
    return SVP_OK;
}

static void svp_pipe_progress(svp_pipe_t *p, const svp_sample_t *s)
{
    int    n   = p->params->spec->samples, done = p->stats.samples_done;
    double now = svp_clock_now(), el = now - p->t_start, eta;
    char   b1[32], b2[32];

    eta = (done > 0) ? el / done * (n - done) : 0;
    svp_info("sample %d done in %.2fs (%d/%d, %.0f%%), elapsed %s, eta %s", s->index,
             now - s->t_begin, done, n, 100.0 * done / n,
             svp_clock_format_duration(el, b1, sizeof(b1)),
             svp_clock_format_duration(eta, b2, sizeof(b2)));
}

/* One rank does everything: begin, all steps, finish, sample after sample. */
static svp_status_t svp_pipe_run_single(svp_pipe_t *p)
{
    const svp_stage_t *stage = &p->params->stage;
    svp_sample_t       s;
    svp_status_t       status;
    double             t0;
    int                i;

    for (i = 0; i < p->params->spec->samples; ++i) {
        memset(&s, 0, sizeof(s));
        t0        = svp_clock_now();
        s.t_begin = t0;
        status    = stage->ops->begin(stage->self, i, &s);
        if (status != SVP_OK) {
            goto err_cleanup;
        }
        p->stats.busy += svp_clock_now() - t0;
        status = svp_pipe_steps(p, &s);
        if (status != SVP_OK) {
            goto err_cleanup;
        }
        t0     = svp_clock_now();
        status = stage->ops->finish(stage->self, &s);
        if (status != SVP_OK) {
            goto err_cleanup;
        }
        p->stats.busy += svp_clock_now() - t0;
        p->stats.samples_done++;
        svp_pipe_progress(p, &s);
        svp_sample_cleanup(&s);
    }
    return SVP_OK;

err_cleanup:
    svp_sample_cleanup(&s);
    return status;
}

svp_status_t svp_pipe_run(const svp_pipe_params_t *params, svp_pipe_stats_t *stats_p)
{
    const svp_spec_t *spec = params->spec;
    svp_pipe_t        p;
    char              err[512];
    svp_status_t      status;

    memset(&p, 0, sizeof(p));
    p.params      = params;
    p.stats.rank  = params->rank;
    p.stats.world = params->world;

    status = svp_steps_assign(spec->steps, params->world, params->rank, err,
                              sizeof(err), &p.range);
    if (status != SVP_OK) {
        svp_error("%s", err);
        return status;
    }
    svp_info("rank %d of %d runs steps [%d, %d) of %d for %d samples (%s model, "
             "placement %s)", params->rank, params->world, p.range.begin, p.range.end,
             spec->steps, spec->samples, params->stage.ops->name,
             svp_spec_placement_name(spec->pipeline.placement));

    p.t_start = svp_clock_now();
    if (params->world == 1) {
        status = svp_pipe_run_single(&p);
    } else {
        svp_error("a %d-rank pipeline needs the communication layer", params->world);
        status = SVP_ERR_UNSUPPORTED;
    }
    p.stats.wall = svp_clock_now() - p.t_start;
    if (status != SVP_OK) {
        return status;
    }

    svp_info("summary: %d samples, %d steps in %.3fs: busy %.3fs (%.0f%%), waiting for "
             "input %.3fs, waiting for sends %.3fs, %.3f samples/s",
             p.stats.samples_done, p.stats.steps_done, p.stats.wall, p.stats.busy,
             (p.stats.wall > 0) ? 100.0 * p.stats.busy / p.stats.wall : 0.0,
             p.stats.wait_recv, p.stats.wait_send,
             (p.stats.wall > 0) ? spec->samples / p.stats.wall : 0.0);
    if (stats_p != NULL) {
        *stats_p = p.stats;
    }
    return SVP_OK;
}
