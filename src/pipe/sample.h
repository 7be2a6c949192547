/*
 * A sample in flight, the object every stage and the executor pass around,
 * and the two things done to one that are no stage's own: freeing its
 * tensors and writing one of them with the sample's metadata (sample.c).
 */
#ifndef SVP_PIPE_SAMPLE_H
#define SVP_PIPE_SAMPLE_H

#include "common/status.h"
#include "jobspec/spec.h"
#include "tensor/tensor.h"

#include <stdint.h>

#define SVP_SAMPLE_MAX_TENSORS 8

/*
 * A sample in flight.  tensors[0] is the latent; the others are the sample's
 * conditioning, carried with it from rank to rank.  The sample owns its
 * tensors (svp_sample_cleanup frees them).
 */
typedef struct {
    int           index;     /* sample index in the job, 0..N-1 */
    uint64_t      seed;      /* the sample's seed */
    int           next_step; /* first step not yet run */
    int           ntensors;
    svp_tensor_t *tensors[SVP_SAMPLE_MAX_TENSORS];
    double        t_begin;   /* when it entered the pipeline (rank clock) */
    int           on_device; /* tensors are device memory (views into a
                                    device frame, svp_stage_t.devmem) */
} svp_sample_t;

void svp_sample_cleanup(svp_sample_t *sample);

/*
 * Writes one of a sample's tensors to path atomically, as safetensors with
 * the sample's metadata (job, sample, steps, seed, model, and params when
 * not NULL: the sample's own parameters, svp_job_samples_params_json).
 */
svp_status_t svp_sample_write_tensor(const svp_spec_t   *spec,
                                     const svp_sample_t *sample, const char *name,
                                     const svp_tensor_t *tensor, const char *model,
                                     const char *params, const char *path);

/* The same file in memory (*buf_p malloc'd, *len_p bytes). */
svp_status_t svp_sample_tensor_bytes(const svp_spec_t   *spec,
                                     const svp_sample_t *sample, const char *name,
                                     const svp_tensor_t *tensor, const char *model,
                                     const char *params, void **buf_p,
                                     size_t *len_p);

#endif
