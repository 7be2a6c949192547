/*
 * Per-rank Chrome traces (trace.h): events with sample and step, written as
 * JSON at the end of a run, and merged into one timeline.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "trace/trace.h"
#include "common/log.h"
#include "common/file.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *name; /* static strings only */
    int         sample, step;
    double      t0, t1;
} svp_trace_ev_t;

struct svp_trace {
    char            path[4096];
    char            host[64];
    int             rank;
    svp_trace_ev_t *ev;
    size_t          count, cap;
};

double svp_trace_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

svp_status_t svp_trace_create(const char *prefix, int rank, const char *host,
                              svp_trace_h *trace_p)
{
    struct svp_trace *t;

    if (prefix == NULL || prefix[0] == '\0') {
        *trace_p = NULL;
        return SVP_OK;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    snprintf(t->path, sizeof(t->path), "%s.rank%d.json", prefix, rank);
    snprintf(t->host, sizeof(t->host), "%s", host);
    t->rank  = rank;
    *trace_p = t;
    return SVP_OK;
}

void svp_trace_event(svp_trace_h t, const char *name, int sample, int step,
                     double t0_us, double t1_us)
{
    svp_trace_ev_t *ev;
    size_t          cap;

    if (t == NULL) {
        return;
    }
    if (t->count == t->cap) {
        cap = (t->cap == 0) ? 1024 : 2 * t->cap;
        ev  = realloc(t->ev, cap * sizeof(*ev));
        if (ev == NULL) {
            return; /* tracing is best effort: drop the event, keep running */
        }
        t->ev  = ev;
        t->cap = cap;
    }
    t->ev[t->count++] = (svp_trace_ev_t){name, sample, step, t0_us, t1_us};
}

static json_t *svp_trace_json(const struct svp_trace *t)
{
    json_t *events = json_array(), *args, *e;
    char    label[128];
    size_t  i;

    snprintf(label, sizeof(label), "rank %d (%s)", t->rank, t->host);
    json_array_append_new(events,
                          json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name",
                                    "process_name", "ph", "M", "pid", t->rank, "tid",
                                    0, "args", "name", label));
    for (i = 0; i < t->count; ++i) {
        const svp_trace_ev_t *ev = &t->ev[i];
        args                     = json_object();
        if (ev->sample >= 0) {
            json_object_set_new(args, "sample", json_integer(ev->sample));
        }
        if (ev->step >= 0) {
            json_object_set_new(args, "step", json_integer(ev->step));
        }
        e = json_pack("{s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", ev->name, "ph",
                      "X", "ts", ev->t0, "dur", ev->t1 - ev->t0, "pid", t->rank,
                      "tid", 0, "args", args);
        json_array_append_new(events, e);
    }
    return json_pack("{s:o, s:s}", "traceEvents", events, "displayTimeUnit", "ms");
}

svp_status_t svp_trace_destroy(svp_trace_h t)
{
    json_t      *doc;
    char        *text;
    svp_status_t status = SVP_OK;

    if (t == NULL) {
        return SVP_OK;
    }
    doc  = svp_trace_json(t);
    text = (doc != NULL) ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text == NULL) {
        status = SVP_ERR_NO_MEMORY;
    } else {
        status = svp_file_write_atomic(t->path, text, strlen(text));
        if (status == SVP_OK) {
            svp_info("trace written to %s (%zu events)", t->path, t->count);
        }
    }
    free(text);
    json_decref(doc);
    free(t->ev);
    free(t);
    return status;
}

svp_status_t svp_trace_merge(const char *out, const char *const *inputs, int n)
{
    json_t      *all = json_array(), *doc, *events;
    json_error_t jerr;
    char        *text;
    svp_status_t status;
    int          i;

    for (i = 0; i < n; ++i) {
        doc = json_load_file(inputs[i], 0, &jerr);
        if (doc == NULL) {
            svp_error("%s:%d:%d: %s", inputs[i], jerr.line, jerr.column, jerr.text);
            json_decref(all);
            return SVP_ERR_BAD_FILE;
        }
        events = json_object_get(doc, "traceEvents");
        if (!json_is_array(events)) {
            svp_error("%s: no traceEvents array: not an svdpipe trace", inputs[i]);
            json_decref(doc);
            json_decref(all);
            return SVP_ERR_BAD_FILE;
        }
        json_array_extend(all, events);
        json_decref(doc);
    }
    doc  = json_pack("{s:o, s:s}", "traceEvents", all, "displayTimeUnit", "ms");
    text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (text == NULL) {
        return SVP_ERR_NO_MEMORY;
    }
    status = svp_file_write_atomic(out, text, strlen(text));
    free(text);
    return status;
}
