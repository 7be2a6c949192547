/*
 * Resume: a job run again on the same output directory (resubmitted after a
 * scancel, requeued after preemption) runs only the samples that are not
 * finished, and cleans up what an interrupted run left behind.
 *
 * Finished means the sample's final output exists and validates: the
 * simulator's sample_NNNNNN.safetensors opens and its metadata (job, sample,
 * steps, seed, model) and shape are this job's; an SVD sample directory is
 * complete, its sample.json matches this job's parameters and its latents
 * file opens.  Outputs are committed atomically (a temporary, then one
 * rename), so an output that exists is whole.  A sample whose output was made
 * with other parameters is an error (SVP_ERR_SPEC: exit 2, nothing runs)
 * unless output.overwrite is set; then it is run again and replaced.
 *
 * Agreement: each rank looks at the samples it would finish (the last rank,
 * or rank i mod W under placement spread), publishes its verdicts through
 * the runtime and fences; every rank then reads every rank's verdicts and
 * builds the same list.  So the ranks agree before any work, also where the
 * output directory is visible only to the ranks that write it.
 */
#ifndef SVP_PIPE_RESUME_H
#define SVP_PIPE_RESUME_H

#include "common/status.h"
#include "job/samples.h"
#include "pipe/schedule.h"
#include "pipe/stage.h"
#include "rt/rt.h"
#include "jobspec/spec.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int *todo; /* sample indices still to run, ascending (owned) */
    int  ntodo;
    int  skipped; /* samples found finished */
    /* 1 when the agreement itself failed the job (samples made with other
     * parameters): every rank reached that verdict from the same data, so
     * none of them is a lost peer to the others */
    int agreed_failure;
} svp_pipe_resume_t;

/*
 * The rank that would write sample i (of the job's list; a sample of
 * shard) were none of the shard's samples finished yet: its position in
 * the shard's list, dealt by the layout (svp_layout_owner).  The rank
 * that checks whether it is finished.  -1 for a sample of another shard.
 */
int svp_pipe_resume_finisher(const svp_layout_t    *layout,
                             const svp_job_shard_t *shard, int i);

/*
 * Decides, with the other ranks of rt (collective: every rank calls it), which
 * of the job's n samples that shard makes still need running, and logs the
 * skipped ones as ranges ("skipped 0-99, 120 (finished by an earlier run)")
 * and a summary.  Only the shard's samples are looked at: the other array
 * tasks' may be in the making.  On success *r_p holds the list (free it with
 * svp_pipe_resume_cleanup).  SVP_ERR_SPEC when a rank found a sample made
 * with other parameters (that rank logs which and why; output.overwrite
 * lifts it); a failed fence's status otherwise.
 */
svp_status_t svp_pipe_resume_agree(svp_rt_h rt, const svp_spec_t *spec,
                                   const svp_stage_t *stage, int n,
                                   const svp_job_shard_t *shard,
                                   svp_pipe_resume_t     *r_p);

void svp_pipe_resume_cleanup(svp_pipe_resume_t *r);

/*
 * For a stage's check_output: does the safetensors file at path hold a
 * tensor `name` of the given shape (f32) with this job's metadata for sample
 * index with seed?  SVP_OK, SVP_ERR_NOT_FOUND (no file), SVP_ERR_BAD_FILE
 * (does not open) or SVP_ERR_SPEC (why[] names the first difference).
 */
svp_status_t svp_job_outputs_check_tensor(const svp_spec_t *spec, const char *path,
                                          const char *name, const char *model,
                                          int index, uint64_t seed, int ndim,
                                          const int64_t *shape, char *why,
                                          size_t len);

#endif
