/*
 * run.json: what a report needs to know about a run, written by rank 0
 * beside the outputs (output.dir/run.json), atomically, when the job is
 * done:
 *
 *   {"svdpipe": {"version", "configure"},  the build
 *    "job", "spec_file", "spec",            the canonical (effective) spec, YAML
 *    "world", "ranks_per_node", "hosts": [rank 0's host, ...],
 *    "layout": {"steps", "samples", "placement", "ranges": [[begin, end], ...]},
 *    "backend", "dtype", "threads",
 *    "trace": log.trace prefix, "cwd": where relative paths start,
 *    "started", "finished": Unix seconds,
 *    "hardware": the table named by $SVP_HARDWARE (text), or absent}
 *
 * Hosts are exchanged through the runtime: every rank publishes its host
 * name before the run (svp_worker_run_publish), and rank 0 reads them after
 * the final fence (svp_worker_run_write).
 */
#ifndef SVP_TOOLS_SVDWORKER_RUN_H
#define SVP_TOOLS_SVDWORKER_RUN_H

#include "common/status.h"
#include "rt/rt.h"
#include "spec/spec.h"

/* Publishes this rank's host name; visible to others after the next fence. */
svp_status_t svp_worker_run_publish(svp_rt_h rt);

/*
 * Rank 0 writes output.dir/run.json; other ranks do nothing.  started and
 * finished are Unix seconds; samples_run is how many samples this run
 * computed (fewer than spec->samples when it resumed a job).  A failure is
 * logged and returned (the outputs are still good).
 */
svp_status_t svp_worker_run_write(const svp_spec_t *spec, svp_rt_h rt,
                                  double started, double finished, int samples_run);

/*
 * With log.profile, writes what the model's ranges collected on this rank
 * to output.dir/profile.rank<R>.json: {"kind": "run", "rank", "profile":
 * {"ranges", "ops"}} (trace/range.h; totals over all calls).
 */
svp_status_t svp_worker_run_profile(const svp_spec_t *spec, int rank);

#endif
