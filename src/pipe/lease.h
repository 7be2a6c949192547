/*
 * An output directory is one job's at a time: the lease.
 *
 * Two jobs writing one output.dir replace each other's videos, compute
 * every sample twice, and the second one's start-up would remove the
 * first one's temporaries mid-write.  So rank 0 of a job (of each array
 * task) takes a lease in output.dir before anything there is touched, and
 * renews it while the job runs:
 *
 *   output.dir/lease.json                  a job of one task
 *   output.dir/lease.shard-I-of-N.json     array task I of N (its shard)
 *
 * holding who: {"job", "spec_file", "spec_key" (a digest of the spec's
 * shared keys: svp_spec_dump_shared), "shard", "slurm_job", "array_job",
 * "array_task", "host", "pid", "started", "renewed", "beat_s"}.  The tasks
 * of one array hold different shards at once; a task resubmitted alone (a
 * new Slurm job id) takes its shard's lease over once its holder is gone.
 *
 * How, and why not flock: NFS and Lustre do not always offer flock, and
 * fcntl locks need a lock manager that a site may not run.  A lease is
 * created with O_CREAT | O_EXCL, atomic on every file system a cluster
 * shares (NFS since v3), and renewed by rewriting its "renewed" time every
 * beat (task.json's, SVP_WORKER_TASK_BEAT_S).  A holder is gone when:
 *   - it is this Slurm job (SLURM_JOB_ID and array task the same): a
 *     requeued job's earlier attempt, which Slurm ended before this one;
 *   - it ran on this host and its pid no longer exists;
 *   - it ran on another host and did not renew it for SVP_PIPE_LEASE_BEATS
 *     beats (a killed process cannot remove it; a lost node cannot renew).
 * A lease whose holder is gone is taken over, with a warning naming it;
 * otherwise the new job is refused (exit 2) with the holder and how to take
 * over.  Leases of another task count: a live one of another layout
 * (another N, or the whole job against a shard) or of another spec (its
 * spec_key) refuses this job too.  The lease lives
 * inside the directory, so a symlink or another spelling of it finds the
 * same file.
 */
#ifndef SVP_PIPE_LEASE_H
#define SVP_PIPE_LEASE_H

#include "common/status.h"
#include "pipe/samples.h"

#include <stddef.h>

/* Beats without renewal after which another host's lease is stale. */
#define SVP_PIPE_LEASE_BEATS 4

typedef struct svp_pipe_lease svp_pipe_lease_t;

/*
 * Takes the lease of shard in dir (created if missing) for this process,
 * renewed every beat_s seconds.  SVP_ERR_SPEC when a live holder has it
 * (why says who, and how to take over), SVP_ERR_IO when the directory
 * takes no file.
 */
svp_status_t svp_pipe_lease_take(const char *dir, const svp_pipe_shard_t *shard,
                                 const char *job, const char *spec_file,
                                 const char *spec_key, double beat_s, char *why,
                                 size_t len, svp_pipe_lease_t **lease_p);

/* Writes the renewal time (atomically); logs a failure. */
svp_status_t svp_pipe_lease_renew(svp_pipe_lease_t *lease);

/* Removes the lease if it is still this process's, and frees it.  NULL is
 * allowed. */
void svp_pipe_lease_release(svp_pipe_lease_t *lease);

#endif
