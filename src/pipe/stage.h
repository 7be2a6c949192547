/*
 * What a rank does to a sample, independent of how samples move between
 * ranks.  The pipeline (pipe.c) calls a stage's begin() where a sample
 * enters (encode: initial latents and conditioning), step() for each of the
 * rank's denoising steps, and finish() where it leaves (decode, write
 * outputs).  The dummy simulator and the SVD model are two stages.
 */
#ifndef SVP_PIPE_STAGE_H
#define SVP_PIPE_STAGE_H

#include "common/devmem.h"
#include "pipe/sample.h"
#include "common/status.h"
#include "jobspec/spec.h"
#include "tensor/tensor.h"

#include <stdint.h>
#include <stddef.h>

typedef struct svp_stage_ops {
    const char *name;
    /* Allocates the sample's tensors with their shapes, unfilled: what a
     * receiving rank posts its receive into. */
    svp_status_t (*alloc)(void *self, int index, svp_sample_t *sample);
    /* Makes the sample's initial state (rank where it enters). */
    svp_status_t (*begin)(void *self, int index, svp_sample_t *sample);
    /* Runs global step 'step' on the sample. */
    svp_status_t (*step)(void *self, svp_sample_t *sample, int step);
    /* Decodes and writes the sample's outputs atomically. */
    svp_status_t (*finish)(void *self, svp_sample_t *sample);
    /*
     * Guidance pairs (pipeline.guidance_parallel: 2).  A step in two calls
     * around the exchange the schedule makes (schedule.h HALF and MERGE):
     * half() computes lane's guidance half of step's noise prediction into
     * out (host memory, bytes: the latents' size; without guidance both
     * lanes compute the one prediction); merge() completes the step with
     * the other lane's half, theirs (mine: what half() put out).  Nothing
     * else runs on the stage between the two.  The latents after merge()
     * are step()'s up to fp32 round-off (a batch-1 call per half where
     * step() runs the guidance batch in one call), and bit for bit the same
     * on every pair.  NULL: the stage has no guidance halves.
     */
    svp_status_t (*half)(void *self, svp_sample_t *sample, int step, int lane,
                         void *out, size_t bytes);
    svp_status_t (*merge)(void *self, svp_sample_t *sample, int step, int lane,
                          const void *mine, const void *theirs, size_t bytes);
    /*
     * A finish shared by a pair (schedule.h SHARE): share() decodes lane's
     * share of the decode, lane 1 into out (its message to lane 0,
     * share_bytes() long), lane 0 into the stage's own memory (out NULL);
     * finish_shared() writes the outputs on lane 0 with lane 1's share,
     * theirs, and they are finish()'s bit for bit.
     */
    size_t (*share_bytes)(void *self);
    svp_status_t (*share)(void *self, svp_sample_t *sample, int lane, void *out,
                          size_t bytes);
    svp_status_t (*finish_shared)(void *self, svp_sample_t *sample,
                                  const void *theirs, size_t bytes);
    /*
     * Resume (pipe/resume.h): are sample index's outputs in output.dir
     * already, complete and made with this job's parameters?  SVP_OK: yes,
     * skip it; SVP_ERR_NOT_FOUND: absent; SVP_ERR_BAD_FILE: unreadable (run
     * it again); SVP_ERR_SPEC: made with other parameters.  why[] says what
     * is wrong.  NULL: nothing is ever skipped.
     */
    svp_status_t (*check_output)(void *self, int index, char *why, size_t len);
    /*
     * output.format webdataset (job/wds.h).  set_task() tells the stage
     * which task of how many this run is (its shards follow it); pack()
     * packs each shard whose samples are all finished and whose last
     * sample mine() says is this rank's (after resume: a run killed
     * between a shard's last sample and its packing).  NULL: the stage
     * writes files only.
     */
    void (*set_task)(void *self, int index, int count);
    svp_status_t (*pack)(void *self, int (*mine)(int sample, void *arg), void *arg);
    /* Bytes one sample's outputs take on disk, an upper bound (0: unknown). */
    uint64_t (*output_bytes)(void *self);
    void (*destroy)(void *self);
} svp_stage_ops_t;

typedef struct {
    const svp_stage_ops_t *ops;
    void                  *self;
    /*
     * NULL: the stage works on host memory only.  Else it computes on a
     * device whose memory these services reach, and its step() also takes
     * a sample whose tensors are device memory (on_device set), so a
     * pipeline can keep a sample's frame on the device from rank to rank
     * (pipe.c, comm.gpu_direct).  alloc(), begin() and finish() always deal
     * in host tensors: svp_stage_sample_copy() moves a sample across.
     */
    const svp_devmem_t *devmem;
} svp_stage_t;

/*
 * Copies the tensors of src into dst, which has the same layout (alloc()'s),
 * each side host or device memory as its on_device says (device copies with
 * stage->devmem, synchronous), and seed and next_step with them.
 */
svp_status_t svp_stage_sample_copy(const svp_stage_t *stage, svp_sample_t *dst,
                                   const svp_sample_t *src);

/* The simulator stage (model.kind: dummy). */
svp_status_t svp_stage_dummy_create(const svp_spec_t *spec, svp_stage_t *stage_p);

/* Real SVD denoising (model.kind: svd); see stage_svd.c for the inputs. */
svp_status_t svp_stage_svd_create(const svp_spec_t *spec, svp_stage_t *stage_p);

#endif
