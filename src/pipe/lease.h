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
 *   - it ran on another host and did not renew it for SVP_JOB_LEASE_BEATS
 *     beats (a killed process cannot remove it; a lost node cannot renew).
 * A lease whose holder is gone is taken over, with a warning naming it;
 * otherwise the new job is refused (exit 2) with the holder and how to take
 * over.  Leases of another task count: a live one of another layout
 * (another N, or the whole job against a shard) or of another spec (its
 * spec_key) refuses this job too.  The lease lives
 * inside the directory, so a symlink or another spelling of it finds the
 * same file.
 *
 * Fencing: a holder that was suspended (SIGSTOP, Slurm's PreemptMode=SUSPEND,
 * a node stalled on its file system) for longer than the takeover threshold
 * may find on resuming that another job took the directory over.  So the
 * holder is not trusted to be the holder: each renewal reads the lease
 * first, and a rank that last found the lease its own longer ago than the
 * threshold reads it again before it publishes anything (a sample, run.json,
 * task.json).  A lease that is another job's now stops this job at once:
 * nothing more is written, the error names the new holder and the gap, the
 * other ranks learn it through the stop notice (rt/watch.h), and the job
 * exits 2.  The lease is left to its new holder.
 */
#ifndef SVP_JOB_LEASE_H
#define SVP_JOB_LEASE_H

#include "common/status.h"
#include "job/samples.h"

#include <stddef.h>

/* Beats without renewal after which another host's lease is stale. */
#define SVP_JOB_LEASE_BEATS 4

/* The cause a job that lost its lease stops for (svp_stop_request), which
 * the other ranks hear in the stop notice and end for. */
#define SVP_JOB_LEASE_LOST_CAUSE "the job lost output.dir's lease to another job"

typedef struct svp_job_lease svp_job_lease_t;

/*
 * Takes the lease of shard in dir (created if missing) for this process,
 * renewed every beat_s seconds.  SVP_ERR_SPEC when a live holder has it
 * (why says who, and how to take over), SVP_ERR_IO when the directory
 * takes no file.
 */
svp_status_t svp_job_lease_take(const char *dir, const svp_job_shard_t *shard,
                                const char *job, const char *spec_file,
                                const char *spec_key, double beat_s, char *why,
                                size_t len, svp_job_lease_t **lease_p);

/*
 * Reads the lease first: while it is still this job's, writes the renewal
 * time (atomically; a failure is logged).  When another job holds it now
 * (it took the directory over while this job was suspended: see "Fencing"
 * above), or the file is gone, writes nothing, logs the error once and asks
 * this process to stop (svp_stop_request, exit 2); SVP_ERR_SPEC then, and
 * on every later call.  On a view (svp_job_lease_view) only the reading.
 * NULL is allowed.
 */
svp_status_t svp_job_lease_renew(svp_job_lease_t *lease);

/*
 * Before anything is published in the directory: SVP_OK while the lease
 * is this job's.  When it was last found this job's longer ago than
 * SVP_JOB_LEASE_BEATS beats (a suspended process, a clock that jumped),
 * reads it again first.  A lost lease is handled as by renew.  Any thread;
 * NULL is allowed.
 */
svp_status_t svp_job_lease_guard(svp_job_lease_t *lease);

/* 1 when the lease (read now) is no longer this job's (another job's, or
 * gone); why (may be NULL with len 0) says how.  The holder logs it, once,
 * if renew or guard did not.  NULL is allowed (0). */
int svp_job_lease_lost(svp_job_lease_t *lease, char *why, size_t len);

/* Who holds it (the record's JSON text, malloc'ed), for the other ranks'
 * svp_job_lease_view.  NULL on NULL or out of memory. */
char *svp_job_lease_identity(const svp_job_lease_t *lease);

/*
 * The lease of shard in dir as held by identity (svp_job_lease_identity
 * of its holder, rank 0), for a rank that does not hold it but publishes
 * there: guard and lost check it; release only frees it.
 * SVP_ERR_MESSAGE when identity is no lease record.
 */
svp_status_t svp_job_lease_view(const char *dir, const svp_job_shard_t *shard,
                                const char *identity, svp_job_lease_t **lease_p);

/* Removes the lease if it is still this process's, and frees it.  NULL is
 * allowed. */
void svp_job_lease_release(svp_job_lease_t *lease);

#endif
