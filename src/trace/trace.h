/*
 * Per-rank event trace, written as Chrome trace JSON (chrome://tracing,
 * Perfetto): one process per rank, complete events ("ph":"X") for steps,
 * encode, decode, receive and send waits.  Timestamps are wall-clock
 * microseconds, so the files of all ranks on a node line up; svdtool
 * trace-merge joins them into one timeline.
 *
 * Recording appends to an in-memory array (no I/O on the hot path);
 * svp_trace_destroy() writes the file atomically.
 */
#ifndef SVP_TRACE_TRACE_H
#define SVP_TRACE_TRACE_H

#include "common/status.h"

typedef struct svp_trace *svp_trace_h;

/*
 * Creates a trace that will be written to "<prefix>.rank<R>.json".
 * A NULL or empty prefix gives a disabled trace: every call is a no-op.
 */
svp_status_t svp_trace_create(const char *prefix, int rank, const char *host,
                              svp_trace_h *trace_p);

/* Writes the file (when enabled) and frees the trace.  NULL is allowed. */
svp_status_t svp_trace_destroy(svp_trace_h trace);

/* Wall-clock microseconds, the trace's time base. */
double svp_trace_now_us(void);

/*
 * Records a complete event [t0_us, t1_us) named name ("step", "recv", ...)
 * with the sample and step it concerns (-1: none).
 */
void svp_trace_event(svp_trace_h trace, const char *name, int sample, int step,
                     double t0_us, double t1_us);

/* Merges per-rank trace files into one timeline, written atomically. */
svp_status_t svp_trace_merge(const char *out, const char *const *inputs, int n);

#endif
