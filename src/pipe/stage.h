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
#include "common/status.h"
#include "spec/spec.h"
#include "tensor/tensor.h"

#include <stdint.h>
#include <stddef.h>

#define SVP_SAMPLE_MAX_TENSORS 8

/*
 * A sample in flight.  tensors[0] is the latent; the others are the sample's
 * conditioning, carried with it from rank to rank.  The sample owns its
 * tensors (svp_sample_cleanup frees them).
 */
typedef struct {
    int           index;         /* sample index in the job, 0..N-1 */
    uint64_t      seed;          /* the sample's seed */
    int           next_step;     /* first step not yet run */
    int           ntensors;
    svp_tensor_t *tensors[SVP_SAMPLE_MAX_TENSORS];
    double        t_begin;       /* when it entered the pipeline (rank clock) */
    int           on_device;     /* tensors are device memory (views into a
                                    device frame, svp_stage_t.devmem) */
} svp_sample_t;

void svp_sample_cleanup(svp_sample_t *sample);

/*
 * Writes one of a sample's tensors to path atomically, as safetensors with
 * the sample's metadata (job, sample, steps, seed, model, and params when
 * not NULL: the sample's own parameters, svp_pipe_samples_params_json).
 */
svp_status_t svp_sample_write_tensor(const svp_spec_t *spec, const svp_sample_t *sample,
                                     const char *name, const svp_tensor_t *tensor,
                                     const char *model, const char *params,
                                     const char *path);

/*
 * One step as one half of a guidance pair (pipeline.guidance_parallel 2):
 * the stage computes the lane's guidance half of the noise prediction,
 * puts it in send, calls exchange (which sends it to the other rank of the
 * pair and receives that rank's half into recv), and applies the guidance
 * and the update with both halves.  Host buffers of bytes each.
 */
typedef struct {
    int           lane;      /* 0: the unconditioned half, 1: the conditioned */
    void         *send;
    void         *recv;
    size_t        bytes;
    svp_status_t (*exchange)(void *ctx, int sample, int step);
    void         *ctx;
} svp_stage_pair_t;

/*
 * A finish split over a pair (pipeline.guidance_parallel: 2, where both
 * ranks of the finishing pair hold the final latents): each rank decodes
 * its share of the decode chunks (lane c the chunks k with k mod 2 = c);
 * lane 1 puts its share in buffer() and transfer() sends it to lane 0;
 * lane 0 gets buffer() filled by transfer() and writes the outputs.
 */
typedef struct {
    int           lane;
    void       *(*buffer)(void *ctx, size_t bytes);  /* host, NULL: no memory */
    svp_status_t (*transfer)(void *ctx, int sample);
    void         *ctx;
} svp_stage_finish_pair_t;

typedef struct svp_stage_ops {
    const char *name;
    /* Allocates the sample's tensors with their shapes, unfilled: what a
     * receiving rank posts its receive into. */
    svp_status_t (*alloc)(void *self, int index, svp_sample_t *sample);
    /* Makes the sample's initial state (rank where it enters). */
    svp_status_t (*begin)(void *self, int index, svp_sample_t *sample);
    /* Runs global step 'step' on the sample. */
    svp_status_t (*step)(void *self, svp_sample_t *sample, int step);
    /* The same as one half of a pair (svp_stage_pair_t); the latents after
     * it are those step() makes, bit for bit.  NULL: no guidance halves. */
    svp_status_t (*step_pair)(void *self, svp_sample_t *sample, int step,
                              const svp_stage_pair_t *pair);
    /* Decodes and writes the sample's outputs atomically. */
    svp_status_t (*finish)(void *self, svp_sample_t *sample);
    /* The same as one rank of a pair (svp_stage_finish_pair_t): the outputs
     * lane 0 writes are those finish() writes, bit for bit.  NULL: lane 0
     * finishes alone. */
    svp_status_t (*finish_pair)(void *self, svp_sample_t *sample,
                                const svp_stage_finish_pair_t *pair);
    /*
     * Resume (pipe/resume.h): are sample index's outputs in output.dir
     * already, complete and made with this job's parameters?  SVP_OK: yes,
     * skip it; SVP_ERR_NOT_FOUND: absent; SVP_ERR_BAD_FILE: unreadable (run
     * it again); SVP_ERR_SPEC: made with other parameters.  why[] says what
     * is wrong.  NULL: nothing is ever skipped.
     */
    svp_status_t (*check_output)(void *self, int index, char *why, size_t len);
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
    const svp_devmem_t    *devmem;
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
