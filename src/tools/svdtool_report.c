/*
 * svdtool report: reading the traces and computing the figures (see
 * svdtool_report.h for the definitions).  The writers are in
 * svdtool_report_write.c, the pictures in svdtool_report_svg.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "svdtool_report.h"
#include "common/log.h"
#include "common/util.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char           *name;
    svdtool_report_kind_t kind;
} svdtool_report_names[] = {
    {"step", SVDTOOL_REPORT_STEP},           {"begin", SVDTOOL_REPORT_ENCODE},
    {"finish", SVDTOOL_REPORT_DECODE},       {"wait recv", SVDTOOL_REPORT_WAIT_RECV},
    {"wait send", SVDTOOL_REPORT_WAIT_SEND}, {"run", SVDTOOL_REPORT_RUN},
};

static svdtool_report_rank_t *svdtool_report_rank(svdtool_report_t *r, int rank)
{
    svdtool_report_rank_t *ranks;
    int                    i;

    if (rank < 0 || rank > 65535) {
        return NULL;
    }
    if (rank >= r->world) {
        ranks = realloc(r->ranks, (rank + 1) * sizeof(*ranks));
        if (ranks == NULL) {
            return NULL;
        }
        for (i = r->world; i <= rank; ++i) {
            memset(&ranks[i], 0, sizeof(ranks[i]));
            ranks[i].rank = i;
        }
        r->ranks = ranks;
        r->world = rank + 1;
    }
    return &r->ranks[rank];
}

static int svdtool_report_push(svdtool_report_rank_t     *rk,
                               const svdtool_report_ev_t *ev)
{
    svdtool_report_ev_t *e;
    int                  cap;

    if (rk->nev == rk->cap) {
        cap = rk->cap ? 2 * rk->cap : 256;
        e   = realloc(rk->ev, cap * sizeof(*e));
        if (e == NULL) {
            return -1;
        }
        rk->ev  = e;
        rk->cap = cap;
    }
    rk->ev[rk->nev++] = *ev;
    return 0;
}

static int svdtool_report_int(json_t *args, const char *key)
{
    json_t *v = json_object_get(args, key);

    return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

svp_status_t svdtool_report_load_trace(svdtool_report_t *r, const char *path)
{
    json_t                *doc, *events, *e, *args;
    json_error_t           jerr;
    svdtool_report_rank_t *rk;
    svdtool_report_ev_t    ev;
    const char            *name, *label;
    size_t                 i, k;
    double                 ts, dur;
    svp_status_t           status = SVP_OK;

    doc = json_load_file(path, 0, &jerr);
    if (doc == NULL) {
        svp_error("%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        return SVP_ERR_BAD_FILE;
    }
    events = json_object_get(doc, "traceEvents");
    if (!json_is_array(events)) {
        svp_error("%s: no traceEvents array: not an svdpipe trace", path);
        json_decref(doc);
        return SVP_ERR_BAD_FILE;
    }
    json_array_foreach(events, i, e)
    {
        name = json_string_value(json_object_get(e, "name"));
        rk   = svdtool_report_rank(r,
                                   (int)json_integer_value(json_object_get(e, "pid")));
        args = json_object_get(e, "args");
        if (name == NULL || rk == NULL) {
            svp_error("%s: event %zu has no name or no valid pid", path, i);
            status = SVP_ERR_BAD_FILE;
            break;
        }
        if (!strcmp(name, "process_name")) {
            /* "rank 3 (node1)" */
            label = json_string_value(json_object_get(args, "name"));
            if (label != NULL && strchr(label, '(') != NULL) {
                snprintf(rk->host, sizeof(rk->host), "%s", strchr(label, '(') + 1);
                rk->host[strcspn(rk->host, ")")] = '\0';
            }
            continue;
        }
        for (k = 0;
             k < sizeof(svdtool_report_names) / sizeof(svdtool_report_names[0]);
             ++k) {
            if (!strcmp(name, svdtool_report_names[k].name)) {
                break;
            }
        }
        if (k == sizeof(svdtool_report_names) / sizeof(svdtool_report_names[0])) {
            continue; /* an event this report does not use */
        }
        ts  = json_number_value(json_object_get(e, "ts"));
        dur = json_number_value(json_object_get(e, "dur"));
        if (!(dur >= 0) || !(ts > 0)) {
            svp_error("%s: event %zu (%s): bad ts or dur", path, i, name);
            status = SVP_ERR_BAD_FILE;
            break;
        }
        ev.kind   = svdtool_report_names[k].kind;
        ev.sample = svdtool_report_int(args, "sample");
        ev.step   = svdtool_report_int(args, "step");
        ev.t0     = ts * 1e-6;
        ev.t1     = (ts + dur) * 1e-6;
        if (svdtool_report_push(rk, &ev) != 0) {
            status = SVP_ERR_NO_MEMORY;
            break;
        }
    }
    json_decref(doc);
    return status;
}

static int svdtool_report_ev_cmp(const void *a, const void *b)
{
    const svdtool_report_ev_t *x = a, *y = b;

    return (x->t0 < y->t0) ? -1 : (x->t0 > y->t0) ? 1 : 0;
}

static int svdtool_report_is_work(svdtool_report_kind_t k)
{
    return k == SVDTOOL_REPORT_STEP || k == SVDTOOL_REPORT_ENCODE ||
           k == SVDTOOL_REPORT_DECODE;
}

/* Busy seconds of rk inside [a, b). */
static double svdtool_report_busy_in(const svdtool_report_rank_t *rk, double a,
                                     double b)
{
    double s = 0, lo, hi;
    int    i;

    for (i = 0; i < rk->nev; ++i) {
        if (!svdtool_report_is_work(rk->ev[i].kind)) {
            continue;
        }
        lo = SVP_MAX(a, rk->ev[i].t0);
        hi = SVP_MIN(b, rk->ev[i].t1);
        if (hi > lo) {
            s += hi - lo;
        }
    }
    return s;
}

/* The work event of sample at step (or kind, step -1) anywhere: rank, event. */
typedef struct {
    int                        rank;
    const svdtool_report_ev_t *ev;
} svdtool_report_ref_t;

static int svdtool_report_ref_cmp(const void *a, const void *b)
{
    const svdtool_report_ref_t *x = a, *y = b;

    /* by sample, then encode, steps by number, decode */
    int kx = (x->ev->kind == SVDTOOL_REPORT_ENCODE)   ? -1
             : (x->ev->kind == SVDTOOL_REPORT_DECODE) ? 1 << 30
                                                      : x->ev->step;
    int ky = (y->ev->kind == SVDTOOL_REPORT_ENCODE)   ? -1
             : (y->ev->kind == SVDTOOL_REPORT_DECODE) ? 1 << 30
                                                      : y->ev->step;

    if (x->ev->sample != y->ev->sample) {
        return x->ev->sample - y->ev->sample;
    }
    return (kx > ky) - (kx < ky);
}

/*
 * Hand-offs: along each sample's chain of work (encode, steps, decode),
 * wherever the rank changes.
 */
static svp_status_t svdtool_report_handoffs(svdtool_report_t *r)
{
    svdtool_report_ref_t *refs;
    int                   n = 0, i, q, cap = 0;

    for (q = 0; q < r->world; ++q) {
        cap += r->ranks[q].nev;
    }
    refs        = calloc(cap + 1, sizeof(*refs));
    r->handoffs = calloc(cap + 1, sizeof(*r->handoffs));
    if (refs == NULL || r->handoffs == NULL) {
        free(refs);
        return SVP_ERR_NO_MEMORY;
    }
    for (q = 0; q < r->world; ++q) {
        for (i = 0; i < r->ranks[q].nev; ++i) {
            const svdtool_report_ev_t *ev = &r->ranks[q].ev[i];
            if (svdtool_report_is_work(ev->kind) && ev->sample >= 0) {
                refs[n++] = (svdtool_report_ref_t){q, ev};
            }
        }
    }
    qsort(refs, n, sizeof(*refs), svdtool_report_ref_cmp);
    for (i = 1; i < n; ++i) {
        if (refs[i].ev->sample == refs[i - 1].ev->sample &&
            refs[i].rank != refs[i - 1].rank) {
            r->handoffs[r->nhandoffs++] = (svdtool_report_handoff_t){
                refs[i - 1].rank,
                refs[i].rank,
                refs[i].ev->sample,
                refs[i].ev->kind == SVDTOOL_REPORT_STEP ? refs[i].ev->step : -1,
                refs[i - 1].ev->t1,
                refs[i].ev->t0};
        }
    }
    free(refs);
    return SVP_OK;
}

/*
 * One rank's totals, its events moved to the job's origin and sorted: busy,
 * steps, waits, its own window, and the span of its steps (*first_p,
 * *last_p) and the largest sample it worked on (*max_sample_p).
 */
static void svdtool_report_rank_totals(svdtool_report_rank_t *rk, double origin,
                                       double *first_p, double *last_p,
                                       int *max_sample_p)
{
    int i, have_run = 0;

    *first_p = INFINITY;
    *last_p  = -INFINITY;
    for (i = 0; i < rk->nev; ++i) {
        rk->ev[i].t0 -= origin;
        rk->ev[i].t1 -= origin;
    }
    qsort(rk->ev, rk->nev, sizeof(*rk->ev), svdtool_report_ev_cmp);
    rk->start = INFINITY;
    rk->end   = -INFINITY;
    for (i = 0; i < rk->nev; ++i) {
        const svdtool_report_ev_t *ev = &rk->ev[i];
        double                     d  = ev->t1 - ev->t0;

        switch (ev->kind) {
        case SVDTOOL_REPORT_RUN:
            rk->start = ev->t0;
            rk->end   = ev->t1;
            have_run  = 1;
            break;
        case SVDTOOL_REPORT_STEP:
            rk->step_s += d;
            rk->steps++;
            *first_p = SVP_MIN(*first_p, ev->t0);
            *last_p  = SVP_MAX(*last_p, ev->t1);
            break;
        case SVDTOOL_REPORT_ENCODE:
            rk->encodes++;
            break;
        case SVDTOOL_REPORT_DECODE:
            rk->decodes++;
            break;
        case SVDTOOL_REPORT_WAIT_RECV:
            rk->wait_recv += d;
            break;
        case SVDTOOL_REPORT_WAIT_SEND:
            rk->wait_send += d;
            break;
        default:
            break;
        }
        if (svdtool_report_is_work(ev->kind)) {
            rk->busy += d;
            *max_sample_p = SVP_MAX(*max_sample_p, ev->sample);
        }
        if (!have_run && ev->kind != SVDTOOL_REPORT_RUN) {
            rk->start = SVP_MIN(rk->start, ev->t0);
            rk->end   = SVP_MAX(rk->end, ev->t1);
        }
    }
    rk->wall = rk->end - rk->start;
    rk->idle = rk->wall - rk->busy;
}

/* The bubble split into fill, steady state and drain, and the steady
 * state's utilisation; returns the steady window's length. */
static double svdtool_report_bubbles(svdtool_report_t *r)
{
    double steady_busy = 0, win;
    int    q;

    for (q = 0; q < r->world; ++q) {
        const svdtool_report_rank_t *rk = &r->ranks[q];
        double fill   = r->fill_end - svdtool_report_busy_in(rk, 0, r->fill_end);
        double steady = r->drain_start - r->fill_end -
                        svdtool_report_busy_in(rk, r->fill_end, r->drain_start);
        double drain = r->makespan - r->drain_start -
                       svdtool_report_busy_in(rk, r->drain_start, r->makespan);

        r->bubble_fill += fill;
        r->bubble_steady += steady;
        r->bubble_drain += drain;
        steady_busy += svdtool_report_busy_in(rk, r->fill_end, r->drain_start);
    }
    r->bubble_fill /= r->world * r->makespan;
    r->bubble_steady /= r->world * r->makespan;
    r->bubble_drain /= r->world * r->makespan;
    win            = r->drain_start - r->fill_end;
    r->steady_util = (win > 0) ? steady_busy / (r->world * win) : 0;
    return win;
}

/*
 * The samples the traces show (an array task or a resumed run has only
 * some of the indices), the rates, and the timeline's window: a sample is
 * complete at the end of its decode, else of its last step.
 */
static svp_status_t svdtool_report_samples(svdtool_report_t *r, int max_sample,
                                           double win)
{
    double *done;
    int     q, i, completed = 0;

    done = calloc((size_t)max_sample + 2, sizeof(*done));
    if (done == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    for (q = 0; q < r->world; ++q) {
        for (i = 0; i < r->ranks[q].nev; ++i) {
            const svdtool_report_ev_t *ev = &r->ranks[q].ev[i];
            if (svdtool_report_is_work(ev->kind) && ev->sample >= 0) {
                done[ev->sample] = SVP_MAX(done[ev->sample], ev->t1);
            }
        }
    }
    r->samples = 0;
    for (i = 0; i <= max_sample; ++i) {
        r->samples += (done[i] > 0);
        completed += (win > 0 && done[i] > r->fill_end && done[i] <= r->drain_start);
    }
    r->samples_per_s = (r->makespan > 0) ? r->samples / r->makespan : 0;
    /* the timeline's arrows: the middle three samples */
    r->window_lo = r->window_hi = 0;
    for (i = 0, q = 0; i <= max_sample; ++i) {
        if (done[i] > 0 && q++ == SVP_MAX(0, r->samples / 2 - 1)) {
            r->window_lo = i;
        }
        if (done[i] > 0 && q <= SVP_MAX(0, r->samples / 2 - 1) + 3) {
            r->window_hi = i + 1;
        }
    }
    free(done);
    r->steady_samples_per_s = (win > 0) ? completed / win : 0;
    return SVP_OK;
}

svp_status_t svdtool_report_analyse(svdtool_report_t *r)
{
    double       origin = INFINITY, end = -INFINITY, win;
    double       first_step_max = -INFINITY, last_step_min = INFINITY, first, last;
    int          q, i, max_sample = -1;
    svp_status_t status;

    if (r->world == 0) {
        svp_error("no trace events: nothing to report");
        return SVP_ERR_BAD_FILE;
    }
    for (q = 0; q < r->world; ++q) {
        for (i = 0; i < r->ranks[q].nev; ++i) {
            origin = SVP_MIN(origin, r->ranks[q].ev[i].t0);
        }
    }
    if (!isfinite(origin)) {
        svp_error("the traces hold no events: nothing to report");
        return SVP_ERR_BAD_FILE;
    }
    r->origin_us = origin * 1e6;

    for (q = 0; q < r->world; ++q) {
        svdtool_report_rank_t *rk = &r->ranks[q];

        if (rk->nev == 0) {
            svp_error("rank %d has no events (its trace is missing?)", q);
            return SVP_ERR_BAD_FILE;
        }
        svdtool_report_rank_totals(rk, origin, &first, &last, &max_sample);
        r->busy_total += rk->busy;
        end = SVP_MAX(end, rk->end);
        if (rk->steps > 0) {
            first_step_max = SVP_MAX(first_step_max, first);
            last_step_min  = SVP_MIN(last_step_min, last);
        }
    }
    r->start    = 0;
    r->end      = end;
    r->makespan = end;
    r->bubble   = 1.0 - r->busy_total / (r->world * r->makespan);

    /* fill, steady state, drain */
    r->fill_end    = isfinite(first_step_max) ? first_step_max : 0;
    r->drain_start = isfinite(last_step_min) ? last_step_min : r->makespan;
    if (r->drain_start < r->fill_end) {
        r->drain_start = r->fill_end; /* too few samples: no steady state */
    }
    win    = svdtool_report_bubbles(r);
    status = svdtool_report_samples(r, max_sample, win);
    if (status != SVP_OK) {
        return status;
    }

    /* FLOPs: every step is one model call of flops_per_step */
    for (q = 0; q < r->world; ++q) {
        r->flops_total += r->ranks[q].steps * r->flops_per_step;
    }
    r->achieved_flops = r->flops_total / (r->world * r->makespan);
    r->mfu            = (r->peak_flops > 0) ? r->achieved_flops / r->peak_flops : 0;
    return svdtool_report_handoffs(r);
}

void svdtool_report_cleanup(svdtool_report_t *r)
{
    int q;

    for (q = 0; q < r->world; ++q) {
        free(r->ranks[q].ev);
    }
    free(r->ranks);
    free(r->handoffs);
    memset(r, 0, sizeof(*r));
}
