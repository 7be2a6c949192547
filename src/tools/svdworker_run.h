/*
 * run.json: what a report needs to know about a run, written by rank 0
 * beside the outputs (output.dir/run.json), atomically, when the job is
 * done:
 *
 *   {"svdpipe": {"version", "configure"},  the build
 *    "job", "spec_file", "spec",            the canonical (effective) spec, YAML
 *    "world", "ranks_per_node", "hosts": [rank 0's host, ...],
 *    "layout": {"steps", "samples", "placement", "ranges": [[begin, end], ...]},
 *    "shard": {"index", "count", "samples", "skipped", "run"}: this task's
 *             share of the job's samples (count 1: the whole job),
 *    "backend", "dtype", "threads": "N on rank 0 (from WHERE)",
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
#include "job/samples.h"
#include "rt/rt.h"
#include "jobspec/spec.h"

/* What this run made of the job (for run.json and the task file). */
typedef struct {
    svp_job_shard_t shard;
    int             samples_total; /* the job's samples, all shards */
    int             samples_shard; /* this shard's */
    int             skipped;       /* of those, finished by an earlier run */
    int             to_run;        /* of those, this run's */
    const char     *trace;         /* trace prefix this run used, "" = none */
    /* a rerun with nothing to run, where the task's record says done: the
     * records describe the run that made the samples and stay (its attempt
     * is added to run.json's "attempts") */
    int keep_records;
    /* output.dir's lease (rank 0), renewed with every beat */
    struct svp_job_lease *lease;
} svp_worker_run_info_t;

/* Seconds between the task file's rewrites: SVP_TASK_BEAT, else
 * SVP_WORKER_TASK_BEAT_S (a bad value is named once). */
double svp_worker_beat_seconds(void);

/* Publishes this rank's host name; visible to others after the next fence. */
svp_status_t svp_worker_run_publish(svp_rt_h rt);

/*
 * Rank 0 writes output.dir/run.json (run.shard-I-of-N.json for an array
 * task, svp_job_shard_file); other ranks do nothing.  started and finished
 * are Unix seconds; samples_run is how many samples this run computed
 * (fewer than its shard's when it resumed a job).  Every run is one entry
 * of the record's "attempts" list (started, finished, samples_run,
 * slurm_job), which a new record carries over; a run that computed nothing
 * adds its attempt to the record there and leaves the rest, which
 * describes the run that did the work.  A failure is logged and returned
 * (the outputs are still good).
 */
svp_status_t svp_worker_run_write(const svp_spec_t *spec, svp_rt_h rt,
                                  const svp_worker_run_info_t *info, double started,
                                  double finished, int samples_run);

/*
 * The task file, output.dir/task.json (task.shard-I-of-N.json): rank 0
 * writes it when the run starts (state "running") and again when it ends
 * ("done", "failed" or "stopped"), so `svdlaunch status` can say what every
 * array task of a job is doing from the output directory alone:
 *   {"job", "shard": [I, N], "samples_total", "samples_shard", "skipped",
 *    "to_run", "started", "ended" (Unix seconds, 0 while running), "state",
 *    "slurm_job": SLURM_JOB_ID or "", "array_job", "array_task": the
 *    array's job id and the task's (SLURM_ARRAY_*; "" outside an array,
 *    svdlaunch status names the task JOB_TASK), "updated": when written (Unix
 *    seconds), "beat_s": the seconds between rewrites while running}
 * Other ranks do nothing; a failure to write it is logged, not fatal.
 * Nothing is written with info->keep_records (svp_worker_task_keep).
 */
/* Whether an existing task record of this shard says "done" (a rerun with
 * nothing to run keeps it). */
int svp_worker_task_done(const svp_spec_t *spec, const svp_job_shard_t *shard);

void svp_worker_task_write(const svp_spec_t *spec, svp_rt_h rt,
                           const svp_worker_run_info_t *info, double started,
                           double ended, const char *state);

/*
 * The task file's heartbeat: while the task runs, rank 0 rewrites it
 * ("running", "updated" now) every SVP_WORKER_TASK_BEAT_S seconds from a
 * thread of its own (SVP_TASK_BEAT in the environment sets other seconds,
 * 0.1 to 3600).  A task killed outright (SIGKILL, the out-of-memory killer,
 * a node lost) can write no "failed": `svdlaunch status` tells it by its
 * silence.  Start on rank 0 after the "running" write; stop (NULL is fine)
 * before the last write.  spec, rt and info must outlive the beat.
 */
#define SVP_WORKER_TASK_BEAT_S 30.0

typedef struct svp_worker_beat svp_worker_beat_t;

svp_worker_beat_t *svp_worker_beat_start(const svp_spec_t *spec, svp_rt_h rt,
                                         const svp_worker_run_info_t *info,
                                         double                       started);
void               svp_worker_beat_stop(svp_worker_beat_t *beat);

/*
 * With log.profile, writes what the model's ranges collected on this rank
 * to output.dir/profile.rank<R>.json (profile.rank<R>.shard-I-of-N.json for
 * an array task): {"kind": "run", "rank", "profile":
 * {"ranges", "ops"}} (trace/range.h; totals over all calls).
 */
svp_status_t svp_worker_run_profile(const svp_spec_t      *spec,
                                    const svp_job_shard_t *shard, int rank);

#endif
